//! Real-server health checks and the IPVS desired state they modify: the
//! source's desired state with the failed destinations quiesced or removed
//! is what the IPVS worker applies; its results come back here.

use std::collections::BTreeMap;
use std::sync::Arc;

use tracing::{debug, info, warn};

use crate::config::ApplyFailure;
use crate::ipvs::IpvsEvent;
use crate::metrics::{C, G};

use super::Daemon;
use crate::config::{Config, HealthCheck};
use crate::health::{self, Debounce, Probe};
use crate::ipvs::{DownDest, Overrides};
use crate::source::Desired;

pub(super) struct CheckRt {
    hc: Arc<HealthCheck>,
    debounce: Debounce,
    task: tokio::task::JoinHandle<()>,
}

impl CheckRt {
    pub fn label(&self) -> String {
        self.hc.label()
    }
}

impl Daemon {
    fn down_dests(&self) -> Vec<DownDest> {
        self.checks
            .iter()
            .filter(|c| !c.debounce.up)
            .map(|c| DownDest {
                dest: c.hc.real_server,
                service: c.hc.service,
                action: c.hc.on_failure,
            })
            .collect()
    }

    /// Hand the desired state, with the health and load-feedback
    /// overrides, to the IPVS worker.
    pub(super) fn apply_ipvs(&mut self) {
        let ov = Overrides {
            down: self.down_dests(),
            feedback: self.feedback.as_ref().map(|f| f.overrides()),
        };
        self.ipvs.apply(self.desired.clone(), ov);
    }

    /// A new desired state from the source.
    pub(super) fn on_desired(&mut self, d: Desired) {
        self.desired = d;
        self.feedback_hosts();
        self.apply_ipvs();
    }

    /// (Re)start the checks of `cfg`, keeping the up/down state of those
    /// whose definition did not change (reload).
    pub(super) fn start_checks(&mut self, cfg: &Config) {
        let old_labels: std::collections::BTreeSet<String> =
            self.checks.iter().map(|c| c.hc.label()).collect();
        let mut old: BTreeMap<String, Vec<CheckRt>> = BTreeMap::new();
        for c in self.checks.drain(..) {
            old.entry(format!("{:?}", c.hc)).or_default().push(c);
        }
        for (index, hc) in cfg.health_checks.iter().enumerate() {
            let prev = old.get_mut(&format!("{hc:?}")).and_then(|v| v.pop());
            let debounce = match prev {
                Some(p) => {
                    p.task.abort();
                    p.debounce
                }
                None => Debounce::new(hc.rise.0, hc.fall.0),
            };
            let hc = Arc::new(hc.clone());
            let task = tokio::spawn(health::run(index, hc.clone(), self.probe_tx.clone()));
            self.checks.push(CheckRt { hc, debounce, task });
        }
        for v in old.into_values() {
            for c in v {
                c.task.abort();
            }
        }
        let labels: std::collections::BTreeSet<String> =
            self.checks.iter().map(|c| c.hc.label()).collect();
        for gone in old_labels.difference(&labels) {
            self.metrics.forget(gone);
        }
        for c in &self.checks {
            let l = vec![("check", c.hc.label())];
            self.metrics
                .set(G::CheckUp, l.clone(), i64::from(c.debounce.up));
            self.metrics.add(C::CheckFailures, l.clone(), 0);
            self.metrics.add(C::CheckTransitions, l, 0);
        }
    }

    pub(super) fn stop_checks(&mut self) {
        for c in &self.checks {
            c.task.abort();
        }
    }

    pub(super) fn on_probe(&mut self, p: Probe) {
        let Some(c) = self.checks.get_mut(p.index) else {
            return;
        };
        let label = c.hc.label();
        let change = c.debounce.feed(p.ok);
        let up = c.debounce.up;
        let action = c.hc.on_failure;
        let l = vec![("check", label.clone())];
        if !p.ok {
            self.metrics.inc(C::CheckFailures, l.clone());
        }
        self.metrics.set(G::CheckUp, l.clone(), i64::from(up));
        if change.is_some() {
            self.metrics.inc(C::CheckTransitions, l);
        }
        if !p.ok {
            debug!(check = %label, detail = %p.detail, "probe failed");
        }
        if let Some(up) = change {
            if up {
                info!(check = %label, "real server up: restoring");
            } else {
                warn!(check = %label, detail = %p.detail, ?action, "real server down");
            }
            self.apply_ipvs();
        }
    }

    /// An apply (or a mesh sync daemon's start) finished on the IPVS worker.
    pub(super) fn on_ipvs(&mut self, e: IpvsEvent) {
        let (ok, retry, desired, error) = match e {
            IpvsEvent::Applied {
                ok,
                retry,
                desired,
                error,
            } => (ok, retry, desired, error),
            IpvsEvent::SyncMesh { role, ok, .. } => return self.on_mesh(role, ok),
        };
        self.source.applied(&desired, error.as_deref());
        if retry {
            self.metrics.inc(C::IpvsApplyRetries, vec![]);
        }
        if !ok {
            self.metrics.inc(C::IpvsApplyFailures, vec![]);
        }
        self.metrics.set(G::IpvsApplied, vec![], i64::from(ok));
        let demote = self.cfg.global.ipvs_apply_failure == ApplyFailure::Demote;
        if !ok && !retry && demote {
            warn!("IPVS configuration not applied: instances held in BACKUP until it is (ipvs_apply_failure: demote)");
        }
        if ok == self.ipvs_ok {
            return;
        }
        self.ipvs_ok = ok;
        if ok {
            info!("IPVS configuration applied");
        }
        if demote {
            for i in 0..self.insts.len() {
                self.coordinate(i);
            }
        }
    }
}
