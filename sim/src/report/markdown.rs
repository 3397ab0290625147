//! The markdown report (`docs/simulation.md`), one function per section:
//! the generated numbers around the fixed prose of [`crate::text`].

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::aggregate::{improvement, Agg, Key};
use super::tables::{improvement_table, levels, ms, pct, range_text, scenario_table};
use super::{variants, Plan, Variant};
use crate::model::{Calibration, Placement};
use crate::sched::Policy;

/// The markdown report.
#[must_use]
pub fn markdown(plan: &Plan, agg: &BTreeMap<Key, Agg>, runs: usize) -> String {
    let vs = variants();
    let base = &vs[0].cal;
    let mut out = String::new();
    intro(&mut out, plan, base, runs);
    censored_note(&mut out, agg, &vs);
    headline(&mut out, plan, agg);
    model(&mut out, plan, base);
    out.push_str(crate::text::READING);
    for (title, kind) in [
        ("Hybrid (sensor + web)", "hybrid"),
        ("Sensor service only", "sensor"),
        ("Web service only", "web"),
    ] {
        scenario_results(&mut out, plan, agg, title, kind);
    }
    sensitivity(&mut out, plan, agg, &vs);
    wlc_check(&mut out, plan, agg);
    out.push_str(crate::text::DISCUSSION);
    out
}

/// Title, what it is and how much was run.
fn intro(out: &mut String, plan: &Plan, base: &Calibration, runs: usize) {
    out.push_str(crate::text::TITLE);
    let _ = writeln!(
        out,
        "\n{runs} simulation runs: {} seeds per point of the main grid, {} per sensitivity point; {} s measured per run after a warm-up of {} s.\n",
        plan.seeds,
        plan.sens_seeds,
        plan.duration.unwrap_or(300.0),
        30.0 + base.linger,
    );
}

/// Which runs stopped with measured connections unfinished (their response
/// times are then lower bounds).
fn censored_note(out: &mut String, agg: &BTreeMap<Key, Agg>, vs: &[Variant]) {
    let censored: Vec<String> = agg
        .iter()
        .filter(|(_, a)| a.censored > 0)
        .map(|((v, p, kind, level, pol), a)| {
            format!(
                "{} in {} {} {} {} {}",
                a.censored,
                vs.get(*v).map_or("?", |x| x.key),
                p.name(),
                kind,
                level,
                pol.name()
            )
        })
        .collect();
    if censored.is_empty() {
        out.push_str("No measured connection was left unfinished (censored).\n\n");
    } else {
        let _ = writeln!(
            out,
            "Measured connections still unfinished 300 s after the measured period (counted with their wait so far): {}; all other runs finished every connection.\n",
            censored.join(", ")
        );
    }
}

/// The hybrid improvement ranges per placement next to the study's.
fn headline(out: &mut String, plan: &Plan, agg: &BTreeMap<Key, Agg>) {
    let hybrid_lv = levels(plan, "hybrid");
    out.push_str("## Headline: the hybrid workload against the study\n\n");
    out.push_str("Relative reduction of the mean response time of all connections by VMWLC/H, over the sensor counts swept (150-450), seed-averaged:\n\n");
    out.push_str("| VM placement | VMWLC/H over VMWLC | VMWLC/H over WLC |\n|---|---|---|\n");
    for &p in &plan.placements {
        let r = improvement_table(agg, 0, p, &hybrid_lv).1;
        let _ = writeln!(
            out,
            "| {} | {} | {} |",
            crate::text::placement_label(p),
            range_text(r[0]),
            range_text(r[1])
        );
    }
    out.push_str("| **study (measured, 225 sensors, 5/10/15 min)** | **3.6 to 9.1%** | **8.2 to 26.3%** |\n\n");
    out.push_str(crate::text::HEADLINE_NOTES);
}

/// The model's description and its parameter table (from the base calibration).
fn model(out: &mut String, plan: &Plan, base: &Calibration) {
    out.push_str(crate::text::MODEL);
    let capacity: f64 = crate::model::study_hosts()
        .iter()
        .map(crate::model::HostSpec::capacity)
        .sum();
    // Share of cluster capacity one sensor uses (one reading per 5 s).
    let per_sensor = base.sensor_demand / 5.0 / capacity;
    let _ = writeln!(
        out,
        "\n| parameter | value |\n|---|---|\n| hosts | 5: h1, h2 4 cores x 1.032 (3.2 GHz), weight 32; h3-h5 4 cores x 1.0 (3.1 GHz), weight 31 |\n| VMs | 20 (15 sensor, 5 web), weight 1, {} vCPUs each |\n| sensor reading | every 5 s per sensor, phase uniform over {} s, jitter uniform 0-0.2 s; work {} ms mean (shifted exponential, min half the mean) |\n| web | page views: Poisson, ON (mean 4 s) / OFF (mean 8 s), ON rate 8x OFF rate; 3 connections per page view on average (geometric); work {} ms mean (hyperexponential, SCV 4) |\n| load | sensors: {:.3}% of cluster capacity per sensor ({:.0}% at 150, {:.0}% at 450); hybrid web: {:.0}% mean ({:.0}% during ON); web-only: {} |\n| inactive linger | {} s (IPVS FIN_WAIT timeout for direct routing) |\n| measurement | {} s after {} s warm-up; utilisation windows 1 s |\n",
        base.vcpus,
        base.phase_spread,
        ms(base.sensor_demand),
        ms(base.web_demand),
        per_sensor * 100.0,
        per_sensor * 15000.0,
        per_sensor * 45000.0,
        base.hybrid_web_load * 100.0,
        base.hybrid_web_load * 100.0 * 2.4,
        plan.web_levels.iter().map(|l| format!("{:.0}%", l * 100.0)).collect::<Vec<_>>().join(", "),
        base.linger,
        plan.duration.unwrap_or(300.0),
        30.0 + base.linger,
    );
}

/// One workload's results (base model), a table per placement; for the
/// hybrid workload also VMWLC/H's improvement.
fn scenario_results(
    out: &mut String,
    plan: &Plan,
    agg: &BTreeMap<Key, Agg>,
    title: &str,
    kind: &'static str,
) {
    let _ = writeln!(out, "\n## {title}\n");
    let pols: &[Policy] = if kind == "hybrid" {
        &Policy::MAIN
    } else {
        &[Policy::Wlc, Policy::Vmwlc, Policy::Vmwlch]
    };
    if kind != "hybrid" {
        out.push_str(crate::text::SINGLE_SERVICE_NOTE);
    }
    let lvls = levels(plan, kind);
    for &p in &plan.placements {
        // The packed placement has no web-only runs (same web VMs as skewed).
        if kind == "web" && p == Placement::Packed {
            continue;
        }
        let _ = writeln!(
            out,
            "\n### Placement: {}\n",
            crate::text::placement_label(p)
        );
        out.push_str(&scenario_table(agg, 0, p, kind, &lvls, pols));
        if kind == "hybrid" {
            out.push_str("\nImprovement of VMWLC/H (positive = VMWLC/H better; response times and window imbalance):\n\n");
            out.push_str(&improvement_table(agg, 0, p, &lvls).0);
        }
    }
}

/// The hybrid workload under each calibration variant.
fn sensitivity(out: &mut String, plan: &Plan, agg: &BTreeMap<Key, Agg>, vs: &[Variant]) {
    out.push_str("\n## Sensitivity\n\n");
    out.push_str(crate::text::SENSITIVITY);
    out.push_str("| variant | placement | sensors | imbalance (win): WLC / VMWLC / VMWLC/H | all mean ms: WLC / VMWLC / VMWLC/H / VMWLC/H* | VMWLC/H over VMWLC | over WLC |\n|---|---|---|---|---|---|---|\n");
    for (vi, v) in vs.iter().enumerate() {
        for &p in &plan.placements {
            for l in plan.sens_sensors.iter().map(|n| n.to_string()) {
                let get = |pol| agg.get(&(vi, p, "hybrid", l.clone(), pol));
                let (Some(w), Some(vm), Some(h), Some(hs)) = (
                    get(Policy::Wlc),
                    get(Policy::Vmwlc),
                    get(Policy::Vmwlch),
                    get(Policy::VmwlchStudy),
                ) else {
                    continue;
                };
                let _ = writeln!(
                    out,
                    "| {} | {} | {l} | {:.3} / {:.3} / {:.3} | {} / {} / {} / {} | {} | {} |",
                    v.label,
                    p.name(),
                    w.imb_util,
                    vm.imb_util,
                    h.imb_util,
                    ms(w.all_mean),
                    ms(vm.all_mean),
                    ms(h.all_mean),
                    ms(hs.all_mean),
                    pct(improvement(h.all_mean, vm.all_mean)),
                    pct(improvement(h.all_mean, w.all_mean)),
                );
            }
        }
    }
}

/// WLC through the core (implicit hosts) next to IPVS's own wlc.
fn wlc_check(out: &mut String, plan: &Plan, agg: &BTreeMap<Key, Agg>) {
    out.push_str("\n## WLC through the core and IPVS's own wlc\n\n");
    out.push_str(crate::text::WLC_CHECK);
    out.push_str("| placement | sensors | all mean ms: WLC (core, implicit hosts) / WLC-ipvs | imbalance (win) |\n|---|---|---|---|\n");
    for &p in &plan.placements {
        for l in &levels(plan, "hybrid") {
            let get = |pol| agg.get(&(0, p, "hybrid", l.clone(), pol));
            if let (Some(a), Some(b)) = (get(Policy::Wlc), get(Policy::WlcIpvs)) {
                let _ = writeln!(
                    out,
                    "| {} | {l} | {} / {} | {:.3} / {:.3} |",
                    p.name(),
                    ms(a.all_mean),
                    ms(b.all_mean),
                    a.imb_util,
                    b.imb_util
                );
            }
        }
    }
}
