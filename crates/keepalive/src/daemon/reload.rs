//! SIGHUP: the new file is validated whole (an invalid one changes nothing),
//! then diffed against the running instances. An instance whose identity
//! (name, interface, VRID, family, version, source, unicast peers) is
//! unchanged keeps its machine and role and takes the new parameters in
//! place; others stop or start. The IPVS sync daemons follow a changed
//! `vrrp[].ipvs_sync` or `bgp.ipvs_sync` at once.

use std::collections::BTreeSet;
use std::net::IpAddr;

use tracing::{error, info};

use super::instance::{params, Inst};
use super::Daemon;
use crate::config::{Cidr, Config, Instance};
use crate::metrics::C;
use crate::sdnotify;
use vrrp::machine::{Action, Input, State};

fn vip_key(c: &Cidr) -> (IpAddr, u8) {
    (c.addr, c.prefix)
}

fn same_identity(a: &Instance, b: &Instance) -> bool {
    a.name == b.name
        && a.interface == b.interface
        && a.vrid == b.vrid
        && a.is_ipv6() == b.is_ipv6()
        && a.version == b.version
        && a.source_ip == b.source_ip
        && a.unicast_peers == b.unicast_peers
}

impl Daemon {
    pub(super) fn reload(&mut self) {
        sdnotify::notify("RELOADING=1");
        let new = match Config::load(&self.path) {
            Ok(c) => c,
            Err(e) => {
                error!(error = %e, "reload failed; keeping the running configuration");
                sdnotify::notify("READY=1");
                return;
            }
        };
        info!(file = %self.path.display(), "reloading configuration");
        self.metrics.inc(C::Reloads, vec![]);
        self.mesh_reload_stop(&new);
        let mut old: Vec<Inst> = std::mem::take(&mut self.insts);
        let mut kept: Vec<Inst> = Vec::new();
        let mut to_start: Vec<Instance> = Vec::new();
        for ic in &new.vrrp {
            match old.iter().position(|o| same_identity(&o.cfg, ic)) {
                Some(p) => kept.push(old.swap_remove(p)),
                None => to_start.push(ic.clone()),
            }
        }
        for o in old {
            info!(instance = %o.cfg.name, "instance removed or changed identity: stopping");
            self.stop_removed(o);
        }
        self.groups.clear();
        self.bgp_reload_check(&new);
        self.cfg = new.clone();
        // New scripts start healthy; kept ones keep their state.
        self.start_scripts(&new);
        let mut changes = Vec::new();
        for k in kept {
            if let Some(ic) = new.vrrp.iter().find(|c| c.name == k.cfg.name) {
                changes.push(self.keep(k, ic.clone()));
            }
        }
        let first_new = self.insts.len();
        for ic in &to_start {
            let inst = self.make_inst(ic);
            self.insts.push(inst);
        }
        // Groups first: the tracked priority of a member depends on its group.
        self.rebuild_groups();
        self.sync_sockets();
        for c in changes {
            self.reconfigure(c);
        }
        for i in first_new..self.insts.len() {
            self.start_inst(i);
            info!(instance = %self.insts[i].cfg.name, "instance started");
        }
        self.evaluate_all();
        for i in 0..self.insts.len() {
            self.coordinate(i);
        }
        self.mesh_reload_start(&new);
        let names: BTreeSet<String> = self.insts.iter().map(|i| i.cfg.name.clone()).collect();
        for owner in self.metrics.owners() {
            let is_check = self.checks.iter().any(|c| c.label() == owner);
            let is_group = new.sync_groups.iter().any(|g| g.name == owner);
            let is_agent = new
                .load_feedback
                .as_ref()
                .is_some_and(|f| f.agents.contains_key(&owner));
            let kept =
                is_check || is_group || is_agent || self.bgp_owns(&owner) || self.mesh_owns(&owner);
            if !names.contains(&owner) && !kept {
                self.metrics.forget(&owner);
            }
        }
        self.start_checks(&new);
        self.source.configure(&new);
        self.take_desired();
        self.start_feedback(&new);
        self.feedback_hosts();
        self.apply_ipvs();
        sdnotify::notify("READY=1");
    }

    /// Shut a removed instance down (a master hands over).
    fn stop_removed(&mut self, mut o: Inst) {
        let acts = o.machine.handle(self.now(), Input::Shutdown);
        o.group = None;
        self.insts.push(o);
        let i = self.insts.len() - 1;
        self.run_actions(i, acts);
        self.insts.pop();
    }

    /// A kept instance takes its new configuration (the VIPs it no longer
    /// has are removed); its machine follows in [`Daemon::reconfigure`].
    fn keep(&mut self, mut k: Inst, ic: Instance) -> Kept {
        let was_master = k.machine.state() == State::Master;
        let old_vips: BTreeSet<(IpAddr, u8)> = k.cfg.virtual_ips.iter().map(vip_key).collect();
        let new_vips: BTreeSet<(IpAddr, u8)> = ic.virtual_ips.iter().map(vip_key).collect();
        let vips_changed = old_vips != new_vips;
        if let (true, true, Some(index)) = (was_master, vips_changed, k.ifindex()) {
            for c in k
                .cfg
                .virtual_ips
                .iter()
                .filter(|c| !new_vips.contains(&vip_key(c)))
            {
                let _ = self.rtnl.del_addr(index, c);
            }
        }
        let kept = Kept {
            i: self.insts.len(),
            readd: was_master && vips_changed,
            sync_changed: k.cfg.ipvs_sync != ic.ipvs_sync,
            sync_gone: k.cfg.ipvs_sync.is_some() && ic.ipvs_sync.is_none(),
        };
        k.checksum = ic.checksum.unwrap_or(self.cfg.global.checksum);
        k.cfg = ic;
        k.group = None;
        self.insts.push(k);
        kept
    }

    /// New parameters for a kept instance's machine, in its current role.
    fn reconfigure(&mut self, k: Kept) {
        let i = k.i;
        // The tracked priority, not the base one, so that the adverts never
        // carry the base priority in between.
        let p = params(
            &self.insts[i].cfg,
            self.insts[i].src,
            self.effective_priority(i),
        );
        let now = self.now();
        let acts = self.insts[i].machine.reconfigure(now, p);
        if k.readd {
            self.run_actions(i, vec![Action::AddVips, Action::Announce]);
        }
        self.run_actions(i, acts);
        if k.sync_gone {
            self.ipvs.sync_stop();
        } else if k.sync_changed {
            self.sync_daemon_role(i);
        }
        info!(instance = %self.insts[i].cfg.name, state = self.insts[i].machine.state().as_str(), "instance kept its role");
    }
}

/// What a kept instance's reload must still do.
struct Kept {
    i: usize,
    readd: bool,
    sync_changed: bool,
    sync_gone: bool,
}
