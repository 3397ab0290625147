//! The daemon's metrics, kept in a `prometheus-client` registry and served
//! in the Prometheus text format by [`crate::http`].
//!
//! Series are labelled by instance (or interface, check, group); those of
//! an instance, check or group that a reload removes are removed with it.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};

use prometheus_client::encoding::prometheus_text;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

/// A label set: `[("instance", "VI_1"), ("reason", "bad_ttl")]`.
pub type Labels = Vec<(&'static str, String)>;

/// Counters, by family.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum C {
    Transitions,
    AdvertsSent,
    AdvertsReceived,
    AdvertsInvalid,
    ChecksumForm,
    Faults,
    VipReadds,
    CheckFailures,
    CheckTransitions,
    Reloads,
    IpvsApplyFailures,
    IpvsApplyRetries,
    SourceInvalid,
    FeedbackPolls,
    FeedbackWrites,
    FeedbackFactorWrites,
}

/// Gauges, by family.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum G {
    State,
    Priority,
    TrackUp,
    GroupState,
    CheckUp,
    IpvsApplied,
    SourceConnected,
    SourceRevision,
    BgpAnnounced,
    BgpNeighborUp,
    BgpDrained,
    IpvsSyncMesh,
    FeedbackWeight,
    FeedbackMoved,
    FeedbackFactor,
}

const COUNTERS: &[(C, &str, &str)] = &[
    (
        C::Transitions,
        "keepalive_vrrp_transitions",
        "State transitions.",
    ),
    (
        C::AdvertsSent,
        "keepalive_vrrp_adverts_sent",
        "Advertisements sent.",
    ),
    (
        C::AdvertsReceived,
        "keepalive_vrrp_adverts_received",
        "Valid advertisements received.",
    ),
    (
        C::AdvertsInvalid,
        "keepalive_vrrp_adverts_invalid",
        "Advertisements dropped or mismatched, by reason.",
    ),
    (
        C::ChecksumForm,
        "keepalive_vrrp_adverts_checksum_form",
        "Valid IPv4 VRRPv3 adverts by the checksum form the peer used.",
    ),
    (
        C::Faults,
        "keepalive_vrrp_faults",
        "Transitions into FAULT.",
    ),
    (
        C::VipReadds,
        "keepalive_vrrp_vip_readds",
        "Virtual addresses removed behind the daemon's back and put back.",
    ),
    (
        C::CheckFailures,
        "keepalive_check_failures",
        "Failed health check probes.",
    ),
    (
        C::CheckTransitions,
        "keepalive_check_transitions",
        "Up/down changes of the real server.",
    ),
    (C::Reloads, "keepalive_reloads", "Configuration reloads."),
    (
        C::IpvsApplyFailures,
        "keepalive_ipvs_apply_failures",
        "Failed applies of the desired IPVS state.",
    ),
    (
        C::IpvsApplyRetries,
        "keepalive_ipvs_apply_retries",
        "Applies of the desired IPVS state retried after a failure.",
    ),
    (
        C::SourceInvalid,
        "keepalive_cluster_source_invalid",
        "Revisions from the cluster source (etcd) that failed validation and were skipped.",
    ),
    (
        C::FeedbackPolls,
        "keepalive_feedback_polls",
        "Polls of a host agent (load_feedback), by host and result (good, bad: refused \
         as garbage or out of range, unreachable, no_figures).",
    ),
    (
        C::FeedbackWrites,
        "keepalive_feedback_weight_writes",
        "Weights the load-feedback controller wrote for a host.",
    ),
    (
        C::FeedbackFactorWrites,
        "keepalive_feedback_factor_writes",
        "Connection-balance factors written for a host (dest_weights mode).",
    ),
];

const GAUGES: &[(G, &str, &str)] = &[
    (
        G::State,
        "keepalive_vrrp_state",
        "VRRP state of the instance (1 for the current state).",
    ),
    (
        G::Priority,
        "keepalive_vrrp_priority",
        "Current (effective) priority.",
    ),
    (
        G::TrackUp,
        "keepalive_track_up",
        "Tracked interface or script of an instance (1 healthy, 0 failing).",
    ),
    (
        G::GroupState,
        "keepalive_sync_group_state",
        "State of the sync group (1 for the current state).",
    ),
    (
        G::CheckUp,
        "keepalive_check_up",
        "Health check state of the real server (1 up, 0 down).",
    ),
    (
        G::IpvsApplied,
        "keepalive_ipvs_applied",
        "1 when the desired IPVS state is applied, 0 while it fails.",
    ),
    (
        G::SourceConnected,
        "keepalive_cluster_source_connected",
        "1 while the cluster source (etcd) answers, 0 while it is lost (the last state stays applied).",
    ),
    (
        G::SourceRevision,
        "keepalive_cluster_source_revision",
        "Revision of the last valid cluster state received from the source (etcd).",
    ),
    (
        G::BgpAnnounced,
        "keepalive_bgp_announced",
        "1 while the group's VIPs are in BIRD's configuration as loaded by a running BIRD.",
    ),
    (
        G::BgpNeighborUp,
        "keepalive_bgp_neighbor_up",
        "1 while the BGP session with the neighbor is established (birdc show protocols).",
    ),
    (
        G::BgpDrained,
        "keepalive_bgp_drained",
        "1 while BGP announcements are drained (SIGUSR1; SIGUSR2 resumes).",
    ),
    (
        G::IpvsSyncMesh,
        "keepalive_ipvs_sync_mesh",
        "1 while the full-mesh IPVS sync daemon of this role (bgp.ipvs_sync) is started, 0 while \
         starting it fails (retried with back-off).",
    ),
    (
        G::FeedbackWeight,
        "keepalive_feedback_weight",
        "The host's weight as load feedback last wrote it (its static weight until then).",
    ),
    (
        G::FeedbackMoved,
        "keepalive_feedback_vms_moved",
        "VMs the host's agent reports that the host map places on another host (moved here).",
    ),
    (
        G::FeedbackFactor,
        "keepalive_feedback_conn_factor",
        "dest_weights mode: the factor, in thousandths, on the host's destination weights that \
         balances the director's connections per host weight over all services (1000 until written).",
    ),
];

/// The states a state gauge has a series for.
pub const STATES: [&str; 4] = ["init", "backup", "master", "fault"];

/// (0 counter or 1 gauge, family, labels).
type Series = (u8, u8, Labels);

struct Inner {
    registry: Registry,
    counters: BTreeMap<C, Family<Labels, Counter>>,
    gauges: BTreeMap<G, Family<Labels, Gauge>>,
    /// Series by owner (the value of their first label), for removal.
    owned: Mutex<BTreeMap<String, BTreeSet<Series>>>,
}

/// Shared handle on the metrics (cheap to clone).
#[derive(Clone)]
pub struct Metrics(Arc<Inner>);

impl Default for Metrics {
    fn default() -> Self {
        Metrics::new()
    }
}

impl Metrics {
    pub fn new() -> Metrics {
        let mut registry = Registry::default();
        let mut counters = BTreeMap::new();
        for &(c, name, help) in COUNTERS {
            let f = Family::<Labels, Counter>::default();
            registry.register(name, help, f.clone());
            counters.insert(c, f);
        }
        let mut gauges = BTreeMap::new();
        for &(g, name, help) in GAUGES {
            let f = Family::<Labels, Gauge>::default();
            registry.register(name, help, f.clone());
            gauges.insert(g, f);
        }
        Metrics(Arc::new(Inner {
            registry,
            counters,
            gauges,
            owned: Mutex::new(BTreeMap::new()),
        }))
    }

    fn own(&self, kind: u8, id: u8, l: &Labels) {
        if let Some((_, owner)) = l.first() {
            let mut o = self.0.owned.lock().unwrap_or_else(|e| e.into_inner());
            o.entry(owner.clone())
                .or_default()
                .insert((kind, id, l.clone()));
        }
    }

    /// Add `n` to a counter.
    pub fn add(&self, c: C, l: Labels, n: u64) {
        self.own(0, c as u8, &l);
        self.0.counters[&c].get_or_create(&l).inc_by(n);
    }

    pub fn inc(&self, c: C, l: Labels) {
        self.add(c, l, 1);
    }

    pub fn set(&self, g: G, l: Labels, v: i64) {
        self.own(1, g as u8, &l);
        self.0.gauges[&g].get_or_create(&l).set(v);
    }

    /// A state gauge: 1 for `state`, 0 for the others.
    pub fn set_state(&self, g: G, mut l: Labels, state: &str) {
        for s in STATES {
            l.push(("state", s.to_string()));
            self.set(g, l.clone(), i64::from(s == state));
            l.pop();
        }
    }

    /// Remove every series whose first label value is `owner`.
    pub fn forget(&self, owner: &str) {
        let gone = {
            let mut o = self.0.owned.lock().unwrap_or_else(|e| e.into_inner());
            o.remove(owner).unwrap_or_default()
        };
        for (kind, id, l) in gone {
            if kind == 0 {
                if let Some((c, _, _)) = COUNTERS.iter().find(|x| x.0 as u8 == id) {
                    self.0.counters[c].remove(&l);
                }
            } else if let Some((g, _, _)) = GAUGES.iter().find(|x| x.0 as u8 == id) {
                self.0.gauges[g].remove(&l);
            }
        }
    }

    /// Owners (first label values) that have series, e.g. to find the
    /// instances a reload removed.
    pub fn owners(&self) -> Vec<String> {
        let o = self.0.owned.lock().unwrap_or_else(|e| e.into_inner());
        o.keys().cloned().collect()
    }

    /// A counter's value (tests, logs).
    pub fn counter(&self, c: C, l: &Labels) -> u64 {
        self.0.counters[&c].get_or_create(l).get()
    }

    /// A gauge's value (tests, logs).
    pub fn gauge(&self, g: G, l: &Labels) -> i64 {
        self.0.gauges[&g].get_or_create(l).get()
    }

    /// The Prometheus text exposition (format 0.0.4).
    pub fn render(&self) -> String {
        let mut s = String::new();
        // Writing into a String cannot fail.
        let _ = prometheus_text::encode(&mut s, &self.0.registry);
        s
    }
}

/// Labels of one instance.
pub fn inst(name: &str) -> Labels {
    vec![("instance", name.to_string())]
}

/// Labels of one instance and a reason.
pub fn inst_reason(name: &str, reason: &str) -> Labels {
    vec![
        ("instance", name.to_string()),
        ("reason", reason.to_string()),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_prometheus_text() {
        let m = Metrics::new();
        m.set_state(G::State, inst("VI_1"), "master");
        m.set(G::Priority, inst("VI_1"), 150);
        m.add(C::AdvertsSent, inst("VI_1"), 10);
        m.add(C::AdvertsInvalid, inst_reason("VI_1", "bad_ttl"), 3);
        m.inc(
            C::AdvertsInvalid,
            vec![("interface", "eth0".into()), ("reason", "too_short".into())],
        );
        m.set(G::CheckUp, vec![("check", "tcp:10.0.0.1:80".into())], 1);
        m.inc(C::Reloads, vec![]);
        let t = m.render();
        assert!(
            t.contains("keepalive_vrrp_state{instance=\"VI_1\",state=\"master\"} 1"),
            "{t}"
        );
        assert!(t.contains("keepalive_vrrp_state{instance=\"VI_1\",state=\"backup\"} 0"));
        assert!(t.contains("keepalive_vrrp_adverts_sent_total{instance=\"VI_1\"} 10"));
        assert!(t.contains(
            "keepalive_vrrp_adverts_invalid_total{instance=\"VI_1\",reason=\"bad_ttl\"} 3"
        ));
        assert!(t.contains(
            "keepalive_vrrp_adverts_invalid_total{interface=\"eth0\",reason=\"too_short\"} 1"
        ));
        assert!(t.contains("keepalive_check_up{check=\"tcp:10.0.0.1:80\"} 1"));
        assert!(t.contains("keepalive_reloads_total 1"), "{t}");
        // every sample line is "name{labels} value" or a comment
        for l in t.lines() {
            assert!(
                l.starts_with('#')
                    || l.rsplit_once(' ')
                        .is_some_and(|(_, v)| v.parse::<f64>().is_ok()),
                "{l}"
            );
        }
        m.forget("VI_1");
        let t = m.render();
        assert!(!t.contains("VI_1"), "{t}");
        assert!(t.contains("interface=\"eth0\""));
    }
}
