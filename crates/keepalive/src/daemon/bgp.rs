//! The `bgp:` groups: which are healthy (IPVS applied, tracked interfaces
//! up, tracked scripts passing, not drained), handed to the BIRD
//! supervisor ([`crate::bird`]) to announce. The VIPs stay on
//! `vip_interface` from start to shutdown: a withdrawn director keeps
//! serving the flows that routers still send it while they converge.

use std::collections::BTreeSet;

use tracing::{error, info, warn};

use super::track::{feed_script, Owner, ScriptResult, ScriptRt};
use super::Daemon;
use crate::bird::Bird;
use crate::config::{Bgp, Config};
use crate::metrics::G;

impl Daemon {
    pub(super) fn start_bgp(&mut self, cfg: &Config) {
        let Some(b) = &cfg.bgp else { return };
        self.bgp_vip_addresses(b, true);
        for g in &b.groups {
            for (index, def) in g.track_scripts.iter().enumerate() {
                let s = ScriptRt::spawn(&g.name, index, def, &self.bgp_script_tx);
                self.bgp_scripts.push(s);
            }
        }
        self.metrics.set(G::BgpDrained, vec![], 0);
        self.bird = Some(Bird::spawn(b.clone(), self.metrics.clone()));
        info!(
            groups = b.groups.len(),
            neighbors = b.neighbors.len(),
            "BGP announcer started"
        );
        self.update_bgp();
    }

    /// Add (or remove) every group's VIPs on the VIP interface.
    fn bgp_vip_addresses(&mut self, b: &Bgp, add: bool) {
        let Some(index) = self.links.get(&b.vip_interface.0).map(|l| l.index) else {
            error!(interface = %b.vip_interface, "bgp.vip_interface not found; VIPs not added");
            return;
        };
        for v in b.groups.iter().flat_map(|g| &g.vips) {
            let c = v.cidr();
            let r = if add {
                self.rtnl.add_addr(index, &c)
            } else {
                self.rtnl.del_addr(index, &c)
            };
            if let Err(e) = r {
                error!(vip = %c, error = %e, add, "changing a BGP VIP address failed");
            }
        }
    }

    /// The groups' health is re-read after every event (`update_bgp`).
    pub(super) fn on_bgp_script(&mut self, r: ScriptResult) {
        feed_script(&mut self.bgp_scripts, &r, Owner::Group);
    }

    /// SIGUSR1 drains (withdraws every group), SIGUSR2 resumes.
    pub(super) fn set_drained(&mut self, on: bool) {
        if self.bird.is_none() {
            warn!("drain/resume signal without a bgp section: ignored");
            return;
        }
        if self.bgp_drained != on {
            info!(drained = on, "BGP drain");
        }
        self.bgp_drained = on;
        self.metrics.set(G::BgpDrained, vec![], i64::from(on));
    }

    /// Why the group cannot be announced now (empty: healthy).
    fn group_faults(&self, b: &Bgp, name: &str) -> Vec<String> {
        let mut why = Vec::new();
        if self.bgp_drained {
            why.push("drained".to_string());
        }
        if self.bgp_hold_deadline().is_some() {
            why.push(format!(
                "holding the announcement for {} ms after start (announce_hold_ms)",
                b.announce_hold_ms.0
            ));
        }
        if !self.ipvs_ok {
            why.push("IPVS state not applied".into());
        }
        if !self.links.contains_key(&b.vip_interface.0) {
            why.push(format!("{} missing", b.vip_interface));
        }
        let Some(g) = b.groups.iter().find(|g| g.name == name) else {
            return why;
        };
        for i in &g.track_interfaces {
            if !self.links.get(&i.0).is_some_and(|l| l.up) {
                why.push(format!("interface {i} down"));
            }
        }
        for s in self.bgp_scripts.iter().filter(|s| s.owner == name) {
            if !s.debounce.up {
                why.push(format!("script {} failing", s.def.label()));
            }
        }
        why
    }

    /// While `announce_hold_ms` runs: its end (time since the daemon's epoch).
    pub(super) fn bgp_hold_deadline(&self) -> Option<std::time::Duration> {
        let hold =
            std::time::Duration::from_millis(self.bird.as_ref()?.config().announce_hold_ms.0);
        (self.now() < hold).then_some(hold)
    }

    /// Hand the set of healthy groups to BIRD (a no-op when unchanged).
    pub(super) fn update_bgp(&mut self) {
        let Some(bird) = &self.bird else { return };
        let b = bird.config();
        let mut healthy = BTreeSet::new();
        for g in &b.groups {
            let why = self.group_faults(b, &g.name);
            for (label, up) in self.group_objects(b, &g.name) {
                let l = vec![("instance", format!("bgp:{}", g.name)), ("object", label)];
                self.metrics.set(G::TrackUp, l, i64::from(up));
            }
            if why.is_empty() {
                healthy.insert(g.name.clone());
            }
        }
        if healthy != self.bgp_healthy {
            for g in &b.groups {
                let was = self.bgp_healthy.contains(&g.name);
                if was != healthy.contains(&g.name) {
                    let why = self.group_faults(b, &g.name);
                    if was {
                        warn!(group = %g.name, reasons = %why.join("; "), "BGP group withdrawn");
                    } else {
                        info!(group = %g.name, "BGP group healthy: announcing");
                    }
                }
            }
            self.bgp_healthy = healthy.clone();
        }
        bird.set(healthy);
    }

    /// The group's tracked objects: (label, healthy), for `keepalive_track_up`.
    fn group_objects(&self, b: &Bgp, name: &str) -> Vec<(String, bool)> {
        let Some(g) = b.groups.iter().find(|g| g.name == name) else {
            return vec![];
        };
        let ifaces = g.track_interfaces.iter().map(|i| {
            let up = self.links.get(&i.0).is_some_and(|l| l.up);
            (format!("interface:{i}"), up)
        });
        let scripts = self
            .bgp_scripts
            .iter()
            .filter(|s| s.owner == name)
            .map(|s| (format!("script:{}", s.def.label()), s.debounce.up));
        ifaces.chain(scripts).collect()
    }

    /// The running `bgp:` section is kept across SIGHUP (restarting BIRD
    /// would drop every session); only its `ipvs_sync` follows a reload
    /// ([`super::mesh`]).
    pub(super) fn bgp_reload_check(&self, new: &Config) {
        let bird_part = |b: &Bgp| Bgp {
            ipvs_sync: None,
            ..b.clone()
        };
        let running = self.bird.as_ref().map(|b| bird_part(b.config()));
        if running != new.bgp.as_ref().map(bird_part) {
            warn!(
                "reload: the bgp section changed; except for ipvs_sync, it takes effect at the \
                 next restart"
            );
        }
    }

    /// Series of the running BGP groups and neighbors (kept on reload).
    pub(super) fn bgp_owns(&self, owner: &str) -> bool {
        let Some(b) = self.bird.as_ref().map(|b| b.config()) else {
            return false;
        };
        b.groups
            .iter()
            .any(|g| owner == g.name || owner.strip_prefix("bgp:") == Some(g.name.as_str()))
            || b.neighbors.iter().any(|n| n.address.to_string() == owner)
    }

    /// SIGTERM: withdraw, let BGP send it, stop BIRD, then remove the VIPs.
    pub(super) async fn stop_bgp(&mut self) {
        for s in self.bgp_scripts.drain(..) {
            s.task.abort();
        }
        let Some(bird) = self.bird.take() else { return };
        let b = bird.config().clone();
        bird.stop().await;
        self.bgp_vip_addresses(&b, false);
    }
}
