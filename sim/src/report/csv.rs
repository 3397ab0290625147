//! The CSV of every run (`target/sim/results.csv`).

use std::fmt::Write as _;

use super::{variants, RunSpec};
use crate::engine::Summary;

/// CSV of every run.
#[must_use]
pub fn csv(specs: &[RunSpec], results: &[Summary]) -> String {
    let vs = variants();
    let mut out = String::from(
        "variant,placement,scenario,level,policy,seed,sensor_n,sensor_mean_s,sensor_p95_s,web_n,web_mean_s,web_p95_s,all_mean_s,all_p95_s,censored,dropped,imb_util,imb_queue,imb_longrun,util_h1,util_h2,util_h3,util_h4,util_h5\n",
    );
    for (spec, s) in specs.iter().zip(results) {
        let _ = write!(
            out,
            "{},{},{},{},{},{},{},{:.6},{:.6},{},{:.6},{:.6},{:.6},{:.6},{},{},{:.6},{:.6},{:.6}",
            vs.get(spec.variant).map_or("?", |v| v.key),
            spec.placement.name(),
            spec.scenario.kind(),
            spec.scenario.level(),
            spec.policy.name(),
            spec.seed,
            s.sensor.count,
            s.sensor.mean,
            s.sensor.p95,
            s.web.count,
            s.web.mean,
            s.web.p95,
            s.all.mean,
            s.all.p95,
            s.all.censored,
            s.dropped,
            s.imb_util,
            s.imb_queue,
            s.imb_longrun,
        );
        for h in 0..5 {
            let _ = write!(out, ",{:.6}", s.host_util.get(h).copied().unwrap_or(0.0));
        }
        out.push('\n');
    }
    out
}
