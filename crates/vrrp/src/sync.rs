//! Sync groups: virtual routers that must have one owner together (the VIP
//! and the real servers' gateway of one front end). keepalived's semantics,
//! expressed with the machine's hold ([`crate::machine::Input::SetHold`]):
//!
//! * a member is held in BACKUP while another member neither is MASTER nor
//!   wants to be: one member in FAULT or BACKUP (hearing a better master)
//!   takes the others to BACKUP, each handing over with priority 0;
//! * so the members become MASTER together: the last one whose down timer
//!   expires releases the others, which were waiting for it.
//!
//! A member held while it wants to be MASTER stays BACKUP: a priority
//! raised on one member alone cannot take its group over while another
//! member still hears a good master. So tracking weights must move the
//! whole group: the daemon applies the weights of every member's tracked
//! objects to all members (keepalived's `sync_group_tracking_weight`).
//!
//! The caller feeds [`holds`]' answer to every member whose hold differs
//! and repeats until nothing changes (each round only releases or holds,
//! so it settles within two rounds per member).

use crate::machine::{Machine, State};

/// Whether each member must be held.
pub fn holds(members: &[&Machine]) -> Vec<bool> {
    (0..members.len())
        .map(|i| {
            members
                .iter()
                .enumerate()
                .any(|(j, m)| j != i && !m.wants_master())
        })
        .collect()
}

/// The group's state for its notifications: FAULT if a member is in
/// FAULT, MASTER if all are, INIT if all are stopped, BACKUP otherwise.
pub fn group_state(members: &[&Machine]) -> State {
    if members.iter().any(|m| m.state() == State::Fault) {
        State::Fault
    } else if members.iter().all(|m| m.state() == State::Master) {
        State::Master
    } else if members.iter().all(|m| m.state() == State::Initialize) {
        State::Initialize
    } else {
        State::Backup
    }
}
