//! The tables shared by the terminal output and the markdown report, and
//! the terminal output itself.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::aggregate::{improvement, wins, Agg, Key};
use super::Plan;
use crate::model::{Placement, Scenario};
use crate::sched::Policy;

/// Seconds as whole milliseconds.
pub(super) fn ms(x: f64) -> String {
    format!("{:.0}", x * 1000.0)
}

/// A signed percentage with one decimal.
pub(super) fn pct(x: f64) -> String {
    format!("{x:+.1}%")
}

/// Levels of a scenario kind present in the aggregates, in plan order.
pub(super) fn levels(plan: &Plan, kind: &str) -> Vec<String> {
    match kind {
        "web" => plan
            .web_levels
            .iter()
            .map(|l| Scenario::Web(*l).level())
            .collect(),
        _ => plan.sensors.iter().map(|n| n.to_string()).collect(),
    }
}

/// A results table (markdown, also readable in a terminal).
pub(super) fn scenario_table(
    agg: &BTreeMap<Key, Agg>,
    variant: usize,
    placement: Placement,
    kind: &'static str,
    lvls: &[String],
    policies: &[Policy],
) -> String {
    let mut out = String::new();
    let level_name = if kind == "web" { "web load" } else { "sensors" };
    let _ = writeln!(
        out,
        "| {level_name} | scheduler | imbalance util (win / run) | imbalance queue | host utilisation % (h1..h5) | sensor mean / p95 ms | web mean / p95 ms | all mean ms |"
    );
    out.push_str("|---|---|---|---|---|---|---|---|\n");
    for l in lvls {
        for &p in policies {
            let Some(a) = agg.get(&(variant, placement, kind, l.clone(), p)) else {
                continue;
            };
            let util: Vec<String> = a
                .host_util
                .iter()
                .map(|u| format!("{:.0}", u * 100.0))
                .collect();
            let svc = |m: f64, q: f64, has: bool| {
                if has {
                    format!("{} / {}", ms(m), ms(q))
                } else {
                    "-".to_string()
                }
            };
            let _ = writeln!(
                out,
                "| {l} | {} | {:.3} / {:.3} | {:.3} | {} | {} | {} | {} |",
                p.name(),
                a.imb_util,
                a.imb_longrun,
                a.imb_queue,
                util.join(" "),
                svc(a.sensor_mean, a.sensor_p95, kind != "web"),
                svc(a.web_mean, a.web_p95, kind != "sensor"),
                ms(a.all_mean),
            );
        }
    }
    out
}

/// Improvement of VMWLC/H over VMWLC and WLC for each hybrid level.
/// Returns the table and, per comparison, the (min, max) over levels of the
/// all-connection mean improvement.
pub(super) fn improvement_table(
    agg: &BTreeMap<Key, Agg>,
    variant: usize,
    placement: Placement,
    lvls: &[String],
) -> (String, [(f64, f64); 2]) {
    let mut out = String::new();
    out.push_str("| sensors | vs VMWLC: all mean | sensor mean | web mean | p95 (all) | imbalance (win) | seeds won | vs WLC: all mean | sensor mean | web mean | p95 (all) | imbalance (win) | seeds won |\n");
    out.push_str("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    let mut ranges = [(f64::INFINITY, f64::NEG_INFINITY); 2];
    for l in lvls {
        let get = |p| agg.get(&(variant, placement, "hybrid", l.clone(), p));
        let (Some(h), Some(v), Some(w)) =
            (get(Policy::Vmwlch), get(Policy::Vmwlc), get(Policy::Wlc))
        else {
            continue;
        };
        let _ = write!(out, "| {l} ");
        for (i, o) in [v, w].into_iter().enumerate() {
            let all = improvement(h.all_mean, o.all_mean);
            ranges[i].0 = ranges[i].0.min(all);
            ranges[i].1 = ranges[i].1.max(all);
            let (won, n) = wins(h, o);
            let _ = write!(
                out,
                "| {} | {} | {} | {} | {} | {won}/{n} ",
                pct(all),
                pct(improvement(h.sensor_mean, o.sensor_mean)),
                pct(improvement(h.web_mean, o.web_mean)),
                pct(improvement(h.all_p95, o.all_p95)),
                pct(improvement(h.imb_util, o.imb_util)),
            );
        }
        out.push_str("|\n");
    }
    (out, ranges)
}

/// A (min, max) range of percentages, or `n/a` when there was nothing to compare.
pub(super) fn range_text(r: (f64, f64)) -> String {
    if r.0.is_finite() && r.1.is_finite() {
        format!("{:.1} to {:.1}%", r.0, r.1)
    } else {
        "n/a".to_string()
    }
}

/// The terminal table: the base model's hybrid results and headline.
#[must_use]
pub fn terminal(plan: &Plan, agg: &BTreeMap<Key, Agg>) -> String {
    let mut out = String::new();
    let lv = levels(plan, "hybrid");
    for &p in &plan.placements {
        let _ = writeln!(out, "\n== hybrid workload, placement {} ==", p.name());
        out.push_str(&scenario_table(agg, 0, p, "hybrid", &lv, &Policy::MAIN));
    }
    out.push_str("\n== VMWLC/H improvement in mean response time (all connections), hybrid ==\n");
    let _ = writeln!(
        out,
        "{:<8} {:>22} {:>22}",
        "placement", "over VMWLC", "over WLC"
    );
    for &p in &plan.placements {
        let (_, r) = improvement_table(agg, 0, p, &lv);
        let _ = writeln!(
            out,
            "{:<8} {:>22} {:>22}",
            p.name(),
            range_text(r[0]),
            range_text(r[1])
        );
    }
    let _ = writeln!(
        out,
        "{:<8} {:>22} {:>22}",
        "study", "3.6 to 9.1%", "8.2 to 26.3%"
    );
    out
}
