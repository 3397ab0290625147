//! Load feedback (`load_feedback:`): the agents' rounds of reports fed to
//! the [`Controller`], whose weights (and the VM moves the reports show) go
//! to the IPVS worker as overrides of the desired state.

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use load_feedback::{Controller, FetchError, Params};
use tracing::{info, warn};

use super::Daemon;
use crate::config::{Config, LoadFeedback};
use crate::feedback::{Poll, Round};
use crate::ipvs::{Feedback, RESOLUTION};
use crate::metrics::{C, G};
use crate::source::Desired;

pub(super) struct FeedbackRt {
    cfg: Arc<LoadFeedback>,
    ctl: Controller,
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
        self.feedback_gauges();
        if moved || wrote || module {
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
