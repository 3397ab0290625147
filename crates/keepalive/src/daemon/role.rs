//! The machine's actions executed in order, and what a role change does
//! besides the VIPs: the IPVS sync daemon's role, the notify hooks and the
//! state metrics.

use tracing::info;

use super::{hooks, Daemon};
use crate::ipvs::SyncRole;
use crate::metrics::{self, C, G};
use vrrp::machine::{Action, State};

/// The state's name in notify hooks (keepalived's words).
pub(super) fn hook_state(s: State) -> &'static str {
    match s {
        State::Master => "MASTER",
        State::Backup => "BACKUP",
        State::Fault => "FAULT",
        State::Initialize => "STOP",
    }
}

impl Daemon {
    /// Execute the actions of instance `i`'s machine, then let its sync
    /// group (or hold) follow.
    pub(super) fn exec(&mut self, i: usize, acts: Vec<Action>) {
        self.run_actions(i, acts);
        self.coordinate(i);
    }

    pub(super) fn run_actions(&mut self, i: usize, acts: Vec<Action>) {
        for a in acts {
            match a {
                Action::SendAdvert { priority } => self.send_advert(i, priority),
                Action::AddVips => self.add_vips(i),
                Action::RemoveVips => self.remove_vips(i),
                Action::Announce => self.announce(i),
                Action::Transition { from, to } => self.on_transition(i, from, to),
            }
        }
        self.update_stats(i);
    }

    pub(super) fn update_stats(&self, i: usize) {
        let inst = &self.insts[i];
        let l = metrics::inst(&inst.cfg.name);
        self.metrics
            .set_state(G::State, l.clone(), inst.machine.state().as_str());
        self.metrics
            .set(G::Priority, l, i64::from(inst.machine.params().priority));
    }

    /// The IPVS sync daemon follows the role of the instance that owns it.
    pub(super) fn sync_daemon_role(&mut self, i: usize) {
        let inst = &self.insts[i];
        let Some(s) = &inst.cfg.ipvs_sync else { return };
        let syncid = s.syncid.map_or(inst.cfg.vrid.0, |x| x.0);
        match inst.machine.state() {
            State::Master => self
                .ipvs
                .sync_role(SyncRole::Master, &s.interface.0, syncid),
            // FAULT stops the master role: the peer's connections come in.
            State::Backup | State::Fault => {
                self.ipvs
                    .sync_role(SyncRole::Backup, &s.interface.0, syncid)
            }
            State::Initialize => self.ipvs.sync_stop(),
        }
    }

    fn on_transition(&mut self, i: usize, from: State, to: State) {
        let inst = &self.insts[i];
        info!(
            instance = %inst.cfg.name,
            from = from.as_str(),
            to = to.as_str(),
            priority = inst.machine.params().priority,
            "VRRP transition"
        );
        let name = inst.cfg.name.clone();
        self.metrics.inc(C::Transitions, metrics::inst(&name));
        if to == State::Fault {
            self.metrics.inc(C::Faults, metrics::inst(&name));
        }
        self.sync_daemon_role(i);
        let inst = &self.insts[i];
        let prio = inst.machine.params().priority.to_string();
        hooks::notify(&inst.cfg.notify, "INSTANCE", &name, to, &prio);
    }
}
