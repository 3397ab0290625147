//! The machine's actions executed in order, and what a role change does
//! besides the VIPs: the IPVS sync daemon's role and the notify hooks.

use tracing::info;

use super::{hooks, Daemon};
use crate::ipvs::SyncRole;
use vrrp::machine::{Action, State};

/// The state's name in notify hooks (keepalived's words).
pub(super) fn hook_state(s: State) -> &'static str {
    match s {
        State::Master => "MASTER",
        State::Backup => "BACKUP",
        State::Initialize => "STOP",
    }
}

impl Daemon {
    pub(super) fn exec(&mut self, i: usize, acts: Vec<Action>) {
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

    fn on_transition(&mut self, i: usize, from: State, to: State) {
        let inst = &self.insts[i];
        info!(
            instance = %inst.cfg.name,
            from = from.as_str(),
            to = to.as_str(),
            priority = inst.machine.params().priority,
            "VRRP transition"
        );
        if let Some(s) = &inst.cfg.ipvs_sync {
            let syncid = s.syncid.map_or(inst.cfg.vrid.0, |x| x.0);
            match to {
                State::Master => self
                    .ipvs
                    .sync_role(SyncRole::Master, &s.interface.0, syncid),
                State::Backup => self
                    .ipvs
                    .sync_role(SyncRole::Backup, &s.interface.0, syncid),
                State::Initialize => self.ipvs.sync_stop(),
            }
        }
        let n = &inst.cfg.notify;
        let specific = match to {
            State::Master => &n.master,
            State::Backup => &n.backup,
            State::Initialize => &n.stop,
        };
        let state = hook_state(to);
        let prio = inst.machine.params().priority.to_string();
        if let Some(c) = specific {
            hooks::run(c, &[], &inst.cfg.name, state, &prio);
        }
        if let Some(c) = &n.any {
            hooks::run(
                c,
                &["INSTANCE", &inst.cfg.name, state, &prio],
                &inst.cfg.name,
                state,
                &prio,
            );
        }
    }
}
