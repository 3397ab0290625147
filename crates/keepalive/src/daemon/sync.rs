//! Sync groups and holds: which instances must stay in BACKUP. A member of
//! a sync group is held while another member neither is MASTER nor wants
//! to be ([`vrrp::sync::holds`]); with `ipvs_apply_failure: demote` every
//! instance is held while the desired IPVS state is not applied. One
//! notify per group transition, besides the members' own.

use tracing::info;

use super::{hooks, Daemon};
use crate::config::{ApplyFailure, SyncGroup};
use crate::metrics::G;
use vrrp::machine::{Input, Machine, State};

pub(super) struct GroupRt {
    pub cfg: SyncGroup,
    /// Indices into the daemon's instances.
    pub members: Vec<usize>,
    pub state: State,
}

impl Daemon {
    /// Groups and their members' indices from the configuration (at start
    /// and after a reload, whose instances have new indices).
    pub(super) fn rebuild_groups(&mut self) {
        let old = std::mem::take(&mut self.groups);
        for inst in &mut self.insts {
            inst.group = None;
        }
        for g in &self.cfg.sync_groups {
            let members: Vec<usize> = g
                .instances
                .iter()
                .filter_map(|n| self.insts.iter().position(|i| i.cfg.name == *n))
                .collect();
            let state = old
                .iter()
                .find(|o| o.cfg.name == g.name)
                .map_or(State::Initialize, |o| o.state);
            for &m in &members {
                self.insts[m].group = Some(self.groups.len());
            }
            self.groups.push(GroupRt {
                cfg: g.clone(),
                members,
                state,
            });
        }
        for o in old {
            if !self.groups.iter().any(|g| g.cfg.name == o.cfg.name) {
                self.metrics.forget(&o.cfg.name);
            }
        }
    }

    fn wants_hold(&self, i: usize) -> bool {
        let ipvs = self.cfg.global.ipvs_apply_failure == ApplyFailure::Demote && !self.ipvs_ok;
        let group = self.insts[i].group.is_some_and(|g| {
            let members = &self.groups[g].members;
            let ms: Vec<&Machine> = members.iter().map(|&m| &self.insts[m].machine).collect();
            let pos = members.iter().position(|&m| m == i);
            pos.is_some_and(|p| vrrp::sync::holds(&ms)[p])
        });
        ipvs || group
    }

    /// Hold or release instance `i` (and its group's members) as needed,
    /// until nothing changes; then the group's own transition.
    pub(super) fn coordinate(&mut self, i: usize) {
        let group = self.insts[i].group;
        let targets = match group {
            Some(g) => self.groups[g].members.clone(),
            None => vec![i],
        };
        // Each round only holds or releases: it settles within two per member.
        for _ in 0..=2 * targets.len() {
            let mut changed = false;
            for &m in &targets {
                let h = self.wants_hold(m);
                if self.insts[m].machine.held() != h {
                    let now = self.now();
                    let acts = self.insts[m].machine.handle(now, Input::SetHold(h));
                    self.run_actions(m, acts);
                    changed = true;
                }
            }
            if !changed {
                break;
            }
        }
        if let Some(g) = group {
            self.group_transition(g);
        }
    }

    fn group_transition(&mut self, g: usize) {
        let ms: Vec<&Machine> = self.groups[g]
            .members
            .iter()
            .map(|&m| &self.insts[m].machine)
            .collect();
        let state = vrrp::sync::group_state(&ms);
        let grp = &mut self.groups[g];
        if state == grp.state {
            return;
        }
        info!(group = %grp.cfg.name, from = grp.state.as_str(), to = state.as_str(), "sync group transition");
        grp.state = state;
        let name = grp.cfg.name.clone();
        self.metrics
            .set_state(G::GroupState, vec![("group", name.clone())], state.as_str());
        hooks::notify(&self.groups[g].cfg.notify, "GROUP", &name, state, "0");
    }
}
