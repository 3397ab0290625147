//! Load feedback (`load_feedback:`): the agents' rounds of reports fed to
//! the [`Controller`], whose weights (and the VM moves the reports show) go
//! to the IPVS worker as overrides of the desired state.

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use load_feedback::{BalanceDest, BalanceParams, ConnBalance, Controller, FetchError, Params};
use tracing::{info, warn};

use super::Daemon;
use crate::config::{Config, FeedbackMode, LoadFeedback};
use crate::feedback::{Conns, Poll, Round};
use crate::ipvs::{resolved_mode, Feedback, FACTOR_SCALE, RESOLUTION};
use crate::metrics::{C, G};
use crate::source::Desired;

pub(super) struct FeedbackRt {
    cfg: Arc<LoadFeedback>,
    ctl: Controller,
    /// dest_weights: the host factors from the director's connections.
    balance: ConnBalance,
    task: tokio::task::JoinHandle<()>,
    /// The VM addresses of each host's last good report, and when.
    placed: BTreeMap<String, (Instant, Vec<IpAddr>)>,
    /// The last result kind per host, to log changes only.
    last_kind: BTreeMap<String, &'static str>,
    /// What the IPVS worker was last given.
    current: Feedback,
    /// Whether the last round found the VMWLCH family (`mode: auto`).
    module: Option<bool>,
}

impl FeedbackRt {
    /// The overrides to apply now.
    pub fn overrides(&self) -> Feedback {
        self.current.clone()
    }

    /// One agent's answer into the controller and the placement; a change
    /// of the result's kind is logged (not every failed poll).
    fn take(&mut self, p: &Poll, now: Instant) {
        let kind = p.kind();
        if self.last_kind.insert(p.host.clone(), kind) != Some(kind) {
            match &p.result {
                Ok(_) => info!(host = %p.host, "load feedback: agent reporting"),
                Err(e) => {
                    warn!(host = %p.host, error = %e, "load feedback: no usable report (weight frozen, then back to static)")
                }
            }
        }
        match &p.result {
            Ok(r) if r.host != p.host => {
                self.ctl.refused(&p.host);
                warn!(host = %p.host, reported = %r.host, "load feedback: the agent reports another host (check load_feedback.agents)");
            }
            Ok(r) => {
                self.ctl.observe(&p.host, now, Ok(r));
                let addrs = r.vms.iter().flat_map(|v| v.addrs.iter().copied()).collect();
                self.placed.insert(p.host.clone(), (now, addrs));
            }
            Err(FetchError::Bad(_)) => self.ctl.refused(&p.host),
            Err(_) => self.ctl.observe(&p.host, now, Err(())),
        }
    }

    /// Without the module (dest_weights): the director's own connection
    /// counts per service and destination, with the hosts the map and the
    /// agents place them on, into the connection balance against the host
    /// weights the controller wrote; true if a factor was written.
    fn balance(&mut self, conns: Option<&Conns>, desired: Option<&ipvs_cluster::Desired>) -> bool {
        let module = self.module == Some(true);
        let (Some(conns), Some(d)) = (conns, desired) else {
            return false;
        };
        let (Some(hosts), Some(services)) = (d.hosts.as_ref(), d.services.as_ref()) else {
            return false;
        };
        if resolved_mode(self.cfg.mode, module) != FeedbackMode::DestWeights {
            // The module balances hosts itself: start again from 1 if it goes.
            self.balance = ConnBalance::new(BalanceParams::default());
            return std::mem::take(&mut self.current.factors) != BTreeMap::new();
        }
        // Host weights in RESOLUTIONths, and the factor each host's
        // destinations already get from them (static * scale).
        let mut weight = BTreeMap::new();
        let mut scale = BTreeMap::new();
        let mut at: BTreeMap<IpAddr, &str> = BTreeMap::new();
        for h in hosts {
            let s = f64::from(h.weight) * f64::from(RESOLUTION);
            let w = self
                .current
                .weights
                .get(&h.name)
                .map_or(s, |w| f64::from(*w));
            weight.insert(h.name.clone(), w);
            scale.insert(h.name.as_str(), if s > 0.0 { w / s } else { 0.0 });
            at.extend(h.members.iter().map(|a| (*a, h.name.as_str())));
        }
        at.extend(self.current.placement.iter().map(|(a, h)| (*a, h.as_str())));
        let svcs: Vec<Vec<BalanceDest>> = services
            .iter()
            .map(|(svc, dests)| {
                dests
                    .iter()
                    .map(|d| {
                        let host = at.get(&d.addr).copied();
                        BalanceDest {
                            host: host.map(str::to_string),
                            weight: f64::from(d.weight) * host.map_or(1.0, |h| scale[h]),
                            overhead: conns.get(&(svc.key, d.addr)).copied().unwrap_or(0),
                        }
                    })
                    .collect()
            })
            .collect();
        for (host, f) in self.balance.tick(&weight, &svcs) {
            info!(host = %host, factor = f, "load feedback: connection balance factor");
        }
        let factors: BTreeMap<String, u32> = self
            .balance
            .factors()
            .map(|(h, f)| {
                (
                    h.to_string(),
                    (f * f64::from(FACTOR_SCALE)).round().max(1.0) as u32,
                )
            })
            .collect();
        let changed = factors != self.current.factors;
        self.current.factors = factors;
        changed
    }

    fn placement(&self, now: Instant) -> BTreeMap<IpAddr, String> {
        if !self.cfg.follow_placement {
            return BTreeMap::new();
        }
        let stale = self.ctl.params().stale_after;
        let mut out = BTreeMap::new();
        let mut claimed_twice = BTreeSet::new();
        for (host, (t, addrs)) in &self.placed {
            if now.saturating_duration_since(*t) > stale {
                continue;
            }
            for a in addrs {
                if out.insert(*a, host.clone()).is_some() {
                    claimed_twice.insert(*a);
                }
            }
        }
        // Two agents claim one address (a move in progress, or a lie):
        // the cluster file's placement stands.
        for a in claimed_twice {
            out.remove(&a);
        }
        out
    }
}

/// The controller's timing for a poll period: a report is stale after three
/// missed polls, and decays to the static weight after ten.
fn params(interval: Duration) -> Params {
    Params {
        stale_after: interval * 3,
        decay_after: interval * 10,
        ..Params::default()
    }
}

/// The hosts of the desired state with their static weights, in the
/// controller's [`RESOLUTION`].
fn static_hosts(desired: &Desired) -> Vec<(String, u32)> {
    desired
        .as_ref()
        .and_then(|d| d.hosts.as_ref())
        .map(|hs| {
            hs.iter()
                .map(|h| (h.name.clone(), h.weight.saturating_mul(RESOLUTION)))
                .collect()
        })
        .unwrap_or_default()
}

impl Daemon {
    /// (Re)start polling for `cfg` (start and reload); an unchanged
    /// section keeps its controller and task.
    pub(super) fn start_feedback(&mut self, cfg: &Config) {
        let want = cfg.load_feedback.as_ref();
        if self.feedback.as_ref().map(|f| &*f.cfg) == want {
            return;
        }
        if let Some(old) = self.feedback.take() {
            old.task.abort();
            for h in old.cfg.agents.keys() {
                self.metrics.forget(h);
            }
        }
        let Some(want) = want else {
            return;
        };
        let cfg = Arc::new(want.clone());
        let ctl = Controller::new(params(cfg.interval()), static_hosts(&self.desired));
        let task = tokio::spawn(crate::feedback::run(cfg.clone(), self.feedback_tx.clone()));
        let current = Feedback {
            mode: cfg.mode,
            ..Feedback::default()
        };
        info!(agents = cfg.agents.len(), mode = ?cfg.mode, "load feedback started");
        self.feedback = Some(FeedbackRt {
            cfg,
            ctl,
            balance: ConnBalance::new(BalanceParams::default()),
            task,
            placed: BTreeMap::new(),
            last_kind: BTreeMap::new(),
            current,
            module: None,
        });
    }

    pub(super) fn stop_feedback(&mut self) {
        if let Some(f) = &self.feedback {
            f.task.abort();
        }
    }

    /// The desired state changed: the controller follows its hosts.
    pub(super) fn feedback_hosts(&mut self) {
        let hosts = static_hosts(&self.desired);
        if let Some(f) = self.feedback.as_mut() {
            f.ctl.set_hosts(hosts);
            let known: BTreeSet<&str> = f.ctl.hosts().map(|(h, _)| h).collect();
            f.current.weights.retain(|h, _| known.contains(h.as_str()));
        }
    }

    /// One round of polls: reports in, weights and placement out; the
    /// desired state is applied again if they changed (or the module came
    /// or went, in `mode: auto`).
    pub(super) fn on_feedback(&mut self, round: Round) {
        let Some(f) = self.feedback.as_mut() else {
            return;
        };
        let now = Instant::now();
        for p in &round.polls {
            let kind = p.kind();
            let l = vec![("host", p.host.clone()), ("result", kind.to_string())];
            self.metrics.inc(C::FeedbackPolls, l);
            f.take(p, now);
        }
        let writes = f.ctl.tick(now);
        let wrote = !writes.is_empty();
        for (host, w) in writes {
            self.metrics
                .inc(C::FeedbackWrites, vec![("host", host.clone())]);
            let weight = f64::from(w) / f64::from(RESOLUTION);
            info!(host = %host, weight, "load feedback: host weight");
            f.current.weights.insert(host, w);
        }
        // Only the moves count: an agent whose report went stale takes its
        // addresses out of the reported placement, but they stay where the
        // cluster file puts them, so nothing is applied for it.
        let desired = self.desired.as_deref();
        let placement: BTreeMap<IpAddr, String> = f
            .placement(now)
            .into_iter()
            .filter(|(a, h)| !maps_to(desired, a, h))
            .collect();
        let moved = placement != f.current.placement;
        if moved {
            info!(
                moved = placement.len(),
                "load feedback: VM placement changed (addresses away from the cluster file's host)"
            );
            f.current.placement = placement;
        }
        let module = round.module.is_some() && round.module != f.module;
        if module {
            info!(
                loaded = round.module,
                "load feedback: the vmwlch module's presence changed"
            );
            f.module = round.module;
        }
        let before = f.current.factors.clone();
        let balanced = f.balance(round.conns.as_ref(), desired);
        if balanced {
            // Only the hosts whose factor was written count.
            let written = f
                .current
                .factors
                .iter()
                .filter(|(h, v)| before.get(*h) != Some(*v));
            for (h, _) in written {
                self.metrics
                    .inc(C::FeedbackFactorWrites, vec![("host", h.clone())]);
            }
        }
        self.feedback_gauges();
        if moved || wrote || module || balanced {
            self.apply_ipvs();
        }
    }

    /// The weight and VMs-moved gauges of every host.
    fn feedback_gauges(&mut self) {
        let Some(f) = self.feedback.as_ref() else {
            return;
        };
        for (host, st) in f.ctl.hosts() {
            let w = f
                .current
                .weights
                .get(host)
                .copied()
                .unwrap_or(st.static_weight);
            self.metrics.set(
                G::FeedbackWeight,
                vec![("host", host.to_string())],
                i64::from(w),
            );
            let c = f.current.factors.get(host).copied().unwrap_or(FACTOR_SCALE);
            self.metrics.set(
                G::FeedbackFactor,
                vec![("host", host.to_string())],
                i64::from(c),
            );
        }
        for host in f.cfg.agents.keys() {
            // current.placement holds the moves only (on_feedback)
            let moved = f.current.placement.values().filter(|h| *h == host).count();
            self.metrics
                .set(G::FeedbackMoved, vec![("host", host.clone())], moved as i64);
        }
    }
}

/// Does the desired host map place `addr` on `host`?
fn maps_to(desired: Option<&ipvs_cluster::Desired>, addr: &IpAddr, host: &str) -> bool {
    desired.and_then(|d| d.hosts.as_ref()).is_some_and(|hs| {
        hs.iter()
            .any(|h| h.name == host && h.members.contains(addr))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Millis;

    const FILE: &str = "services:
  - {protocol: tcp, address: 192.0.2.10, port: 80, scheduler: wlc,
     dests: [{address: 10.1.1.1, weight: 10}, {address: 10.1.1.2, weight: 10},
             {address: 10.1.2.1, weight: 10}]}
hosts:
  - {name: h1, weight: 2, vms: [10.1.1.1, 10.1.1.2]}
  - {name: h2, weight: 2, vms: [10.1.2.1]}
";

    fn rt(mode: FeedbackMode, desired: &Desired) -> FeedbackRt {
        let cfg = LoadFeedback {
            agents: BTreeMap::new(),
            interval_ms: Millis(1000),
            timeout_ms: Millis(500),
            mode,
            follow_placement: true,
        };
        FeedbackRt {
            ctl: Controller::new(params(cfg.interval()), static_hosts(desired)),
            cfg: Arc::new(cfg),
            balance: ConnBalance::new(BalanceParams::default()),
            task: tokio::spawn(async {}),
            placed: BTreeMap::new(),
            last_kind: BTreeMap::new(),
            current: Feedback {
                mode,
                ..Feedback::default()
            },
            module: None,
        }
    }

    /// 10 000 of overhead (about 40 connections) on every destination.
    fn conns(d: &ipvs_cluster::Desired) -> Conns {
        let (svc, dests) = &d.services.as_ref().unwrap()[0];
        dests.iter().map(|x| ((svc.key, x.addr), 10_000)).collect()
    }

    #[tokio::test]
    async fn dest_weights_balance_the_directors_connections_per_host() {
        let desired: Desired = Some(Arc::new(ipvs_cluster::parse(FILE).unwrap().1));
        let d = desired.as_deref().unwrap();
        let mut f = rt(FeedbackMode::DestWeights, &desired);
        // wlc alone: h1's two VMs take twice h2's one at equal weights.
        let mut wrote = 0;
        for _ in 0..20 {
            wrote += usize::from(f.balance(Some(&conns(d)), Some(d)));
        }
        let (f1, f2) = (f.current.factors["h1"], f.current.factors["h2"]);
        assert!((1..=8).contains(&wrote), "{wrote} writes");
        let r = f64::from(f1) / f64::from(f2);
        assert!((r - 0.5).abs() < 0.06, "h1/h2 {f1}/{f2}");
        // The agents put 10.1.2.1 on h1 too: nothing left to balance on h2.
        f.current
            .placement
            .insert("10.1.2.1".parse().unwrap(), "h1".into());
        assert!(!f.balance(Some(&conns(d)), Some(d)), "held");
        // The module in auto mode: the factors go (the kernel balances).
        let mut f = rt(FeedbackMode::Auto, &desired);
        f.balance(Some(&conns(d)), Some(d));
        assert!(!f.current.factors.is_empty());
        f.module = Some(true);
        assert!(f.balance(Some(&conns(d)), Some(d)));
        assert!(f.current.factors.is_empty());
        // No IPVS counts (unreadable): nothing changes.
        assert!(!f.balance(None, Some(d)));
    }
}
