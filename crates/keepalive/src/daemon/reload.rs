//! SIGHUP: the new file is validated whole (an invalid one changes nothing),
//! then diffed against the running instances. An instance whose identity
//! (name, interface, VRID, family, source) is unchanged keeps its machine
//! and role and takes the new parameters in place; others stop or start.

use std::collections::BTreeSet;
use std::net::IpAddr;

use tracing::{error, info};

use super::instance::{params, Inst};
use super::Daemon;
use crate::config::{Cidr, Config, Instance};
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
        && a.source_ip == b.source_ip
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
        self.stats().reloads += 1;
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
        self.cfg = Config {
            vrrp: vec![],
            ..new.clone()
        };
        for k in kept {
            if let Some(ic) = new.vrrp.iter().find(|c| c.name == k.cfg.name) {
                self.reconfigure(k, ic.clone());
            }
        }
        for ic in to_start {
            match self.make_inst(&ic).and_then(|inst| {
                self.sockets
                    .ensure(&mut self.rtnl, &inst.key(), inst.multicast())?;
                Ok(inst)
            }) {
                Ok(inst) => {
                    self.start_inst(inst);
                    info!(instance = %ic.name, "instance started");
                }
                Err(e) => {
                    error!(instance = %ic.name, error = format!("{e:#}"), "cannot start instance")
                }
            }
        }
        // Keep the config order.
        self.insts
            .sort_by_key(|i| new.vrrp.iter().position(|c| c.name == i.cfg.name));
        self.cfg = new.clone();
        self.prune_sockets();
        {
            let names: BTreeSet<String> = self.insts.iter().map(|i| i.cfg.name.clone()).collect();
            self.stats().instances.retain(|n, _| names.contains(n));
        }
        self.start_checks(&new);
        self.source.configure(&new);
        while let Ok(d) = self.desired_rx.try_recv() {
            self.desired = d;
        }
        self.apply_ipvs();
        sdnotify::notify("READY=1");
    }

    /// Shut a removed instance down (a master hands over).
    fn stop_removed(&mut self, mut o: Inst) {
        let acts = o.machine.handle(self.now(), Input::Shutdown);
        self.insts.push(o);
        let i = self.insts.len() - 1;
        self.exec(i, acts);
        self.insts.pop();
    }

    /// New parameters for a kept instance, in its current role.
    fn reconfigure(&mut self, mut k: Inst, ic: Instance) {
        let now = self.now();
        let was_master = k.machine.state() == State::Master;
        let old_vips: BTreeSet<(IpAddr, u8)> = k.cfg.virtual_ips.iter().map(vip_key).collect();
        let new_vips: BTreeSet<(IpAddr, u8)> = ic.virtual_ips.iter().map(vip_key).collect();
        let vips_changed = old_vips != new_vips;
        if was_master && vips_changed {
            for c in k
                .cfg
                .virtual_ips
                .iter()
                .filter(|c| !new_vips.contains(&vip_key(c)))
            {
                let _ = self.rtnl.del_addr(k.link.index, c);
            }
        }
        let p = params(&ic, k.src);
        k.checksum = ic.checksum.unwrap_or(self.cfg.global.checksum);
        k.cfg = ic;
        let acts = k.machine.reconfigure(now, p);
        self.insts.push(k);
        let i = self.insts.len() - 1;
        if was_master && vips_changed {
            self.exec(i, vec![Action::AddVips, Action::Announce]);
        }
        self.exec(i, acts);
        info!(instance = %self.insts[i].cfg.name, state = self.insts[i].machine.state().as_str(), "instance kept its role");
    }
}
