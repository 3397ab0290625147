//! Real-server health checks and the IPVS desired state they modify: the
//! source's desired state with the failed destinations quiesced or removed
//! is what the IPVS worker applies.

use std::collections::BTreeMap;
use std::sync::Arc;

use tracing::{debug, info, warn};

use super::Daemon;
use crate::config::{Config, HealthCheck};
use crate::health::{self, Debounce, Probe};
use crate::ipvs::DownDest;
use crate::source::Desired;

pub(super) struct CheckRt {
    hc: Arc<HealthCheck>,
    debounce: Debounce,
    task: tokio::task::JoinHandle<()>,
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

    /// Hand the desired state, with the health overrides, to the IPVS worker.
    pub(super) fn apply_ipvs(&mut self) {
        let down = self.down_dests();
        self.ipvs.apply(self.desired.clone(), down);
    }

    /// A new desired state from the source.
    pub(super) fn on_desired(&mut self, d: Desired) {
        self.desired = d;
        self.apply_ipvs();
    }

    /// (Re)start the checks of `cfg`, keeping the up/down state of those
    /// whose definition did not change (reload).
    pub(super) fn start_checks(&mut self, cfg: &Config) {
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
        let mut st = self.stats();
        st.checks.clear();
        for c in &self.checks {
            st.checks.entry(c.hc.label()).or_default().up = c.debounce.up;
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
        {
            let mut st = self.stats.lock().unwrap_or_else(|e| e.into_inner());
            let s = st.checks.entry(label.clone()).or_default();
            if !p.ok {
                s.failures += 1;
            }
            s.up = up;
            if change.is_some() {
                s.transitions += 1;
            }
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
}
