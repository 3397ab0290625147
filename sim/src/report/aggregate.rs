//! Seed averages of the runs per grid point, and how two policies compare.

use std::collections::BTreeMap;

use super::RunSpec;
use crate::engine::Summary;
use crate::model::Placement;
use crate::sched::Policy;

/// Key of an aggregate: (variant, placement, kind, level, policy).
pub(super) type Key = (usize, Placement, &'static str, String, Policy);

/// Seed-averaged results of one (variant, placement, scenario, policy).
#[derive(Clone, Debug, Default)]
pub struct Agg {
    /// Runs averaged.
    pub n: u64,
    /// Mean over seeds of the sensor mean response time.
    pub sensor_mean: f64,
    /// Mean over seeds of the sensor p95.
    pub sensor_p95: f64,
    /// Web mean.
    pub web_mean: f64,
    /// Web p95.
    pub web_p95: f64,
    /// All connections' mean.
    pub all_mean: f64,
    /// All connections' p95.
    pub all_p95: f64,
    /// Windowed utilisation imbalance.
    pub imb_util: f64,
    /// Windowed queue imbalance.
    pub imb_queue: f64,
    /// Long-run utilisation imbalance.
    pub imb_longrun: f64,
    /// Per-host mean utilisation.
    pub host_util: Vec<f64>,
    /// Censored connections (sum).
    pub censored: u64,
    /// Per-seed all-connection mean response times, by seed.
    pub per_seed: BTreeMap<u64, f64>,
}

/// Aggregates runs by (variant, placement, scenario, policy).
#[must_use]
pub fn aggregate(specs: &[RunSpec], results: &[Summary]) -> BTreeMap<Key, Agg> {
    let mut m: BTreeMap<Key, Agg> = BTreeMap::new();
    for (spec, s) in specs.iter().zip(results) {
        let key = (
            spec.variant,
            spec.placement,
            spec.scenario.kind(),
            spec.scenario.level(),
            spec.policy,
        );
        let a = m.entry(key).or_default();
        a.n += 1;
        a.sensor_mean += s.sensor.mean;
        a.sensor_p95 += s.sensor.p95;
        a.web_mean += s.web.mean;
        a.web_p95 += s.web.p95;
        a.all_mean += s.all.mean;
        a.all_p95 += s.all.p95;
        a.imb_util += s.imb_util;
        a.imb_queue += s.imb_queue;
        a.imb_longrun += s.imb_longrun;
        if a.host_util.len() < s.host_util.len() {
            a.host_util.resize(s.host_util.len(), 0.0);
        }
        for (x, u) in a.host_util.iter_mut().zip(&s.host_util) {
            *x += u;
        }
        a.censored += s.all.censored;
        a.per_seed.insert(spec.seed, s.all.mean);
    }
    for a in m.values_mut() {
        let n = a.n.max(1) as f64;
        for x in [
            &mut a.sensor_mean,
            &mut a.sensor_p95,
            &mut a.web_mean,
            &mut a.web_p95,
            &mut a.all_mean,
            &mut a.all_p95,
            &mut a.imb_util,
            &mut a.imb_queue,
            &mut a.imb_longrun,
        ] {
            *x /= n;
        }
        for x in &mut a.host_util {
            *x /= n;
        }
    }
    m
}

/// Relative improvement of `new` over `old` (lower is better), percent.
#[must_use]
pub fn improvement(new: f64, old: f64) -> f64 {
    if old > 0.0 {
        (old - new) / old * 100.0
    } else {
        0.0
    }
}

/// Seeds where `a` had a lower all-connection mean than `b`, and seeds compared.
#[must_use]
pub fn wins(a: &Agg, b: &Agg) -> (usize, usize) {
    let mut w = 0;
    let mut n = 0;
    for (seed, x) in &a.per_seed {
        if let Some(y) = b.per_seed.get(seed) {
            n += 1;
            if x < y {
                w += 1;
            }
        }
    }
    (w, n)
}
