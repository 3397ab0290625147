//! The experiment grid (the study's scenarios, placements, sensitivity
//! variants, seeds), run in parallel, and its outputs: a terminal table, a
//! CSV of every run and the markdown report `docs/simulation.md`.
//!
//! Every run is independent and seeded, and outputs are assembled in grid
//! order, so the outputs do not depend on the number of threads.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use crate::engine::{simulate, Summary};
use crate::model::{Calibration, Placement, Scenario};
use crate::sched::Policy;

/// A calibration variant (the base model and the sensitivity checks).
#[derive(Clone, Debug)]
pub struct Variant {
    /// Short key (CSV).
    pub key: &'static str,
    /// What differs from the base model.
    pub label: &'static str,
    /// The calibration.
    pub cal: Calibration,
}

/// The base model and the sensitivity variants.
#[must_use]
pub fn variants() -> Vec<Variant> {
    let base = Calibration::default();
    vec![
        Variant {
            key: "base",
            label: "base model",
            cal: base.clone(),
        },
        Variant {
            key: "linger1",
            label: "inactive linger 1 s instead of 120 s",
            cal: Calibration {
                linger: 1.0,
                ..base.clone()
            },
        },
        Variant {
            key: "vcpu2",
            label: "2 vCPUs per VM instead of 4",
            cal: Calibration {
                vcpus: 2,
                ..base.clone()
            },
        },
        Variant {
            key: "sync",
            label: "sensors started together (phases within 0.5 s)",
            cal: Calibration {
                phase_spread: 0.5,
                ..base
            },
        },
    ]
}

/// What to run.
#[derive(Clone, Debug)]
pub struct Plan {
    /// Seeds of the main grid.
    pub seeds: u64,
    /// Seeds of the sensitivity variants.
    pub sens_seeds: u64,
    /// Sensor counts (sensor-only and hybrid scenarios).
    pub sensors: Vec<u32>,
    /// Web loads of the web-only scenario (fraction of cluster capacity).
    pub web_levels: Vec<f64>,
    /// Sensor counts of the hybrid scenario in the sensitivity variants.
    pub sens_sensors: Vec<u32>,
    /// Measured seconds per run (None: the calibration's 300 s).
    pub duration: Option<f64>,
    /// Placements.
    pub placements: Vec<Placement>,
}

impl Plan {
    /// The full report.
    #[must_use]
    pub fn full() -> Self {
        Self {
            seeds: 5,
            sens_seeds: 3,
            sensors: vec![150, 225, 300, 375, 450],
            web_levels: vec![0.2, 0.3, 0.4],
            sens_sensors: vec![225, 450],
            duration: None,
            placements: Placement::ALL.to_vec(),
        }
    }

    /// A small grid for a quick look (and the tests).
    #[must_use]
    pub fn quick() -> Self {
        Self {
            seeds: 2,
            sens_seeds: 1,
            sensors: vec![150, 450],
            web_levels: vec![0.3],
            sens_sensors: vec![450],
            duration: Some(60.0),
            placements: Placement::ALL.to_vec(),
        }
    }
}

/// One run of the grid.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RunSpec {
    /// Index into [`variants`].
    pub variant: usize,
    /// VM placement.
    pub placement: Placement,
    /// Scenario.
    pub scenario: Scenario,
    /// Scheduler.
    pub policy: Policy,
    /// Seed index (1-based); the seed does not depend on the policy.
    pub seed: u64,
}

/// All runs of a plan, in report order.
#[must_use]
pub fn specs(plan: &Plan) -> Vec<RunSpec> {
    let mut out = Vec::new();
    let mut push = |variant, placement, scenario, seeds: u64, policies: &[Policy]| {
        for seed in 1..=seeds {
            for &policy in policies {
                out.push(RunSpec {
                    variant,
                    placement,
                    scenario,
                    policy,
                    seed,
                });
            }
        }
    };
    let main_and_ipvs = [
        Policy::Wlc,
        Policy::Vmwlc,
        Policy::Vmwlch,
        Policy::VmwlchStudy,
        Policy::WlcIpvs,
    ];
    for &p in &plan.placements {
        for &n in &plan.sensors {
            push(0, p, Scenario::Sensor(n), plan.seeds, &Policy::MAIN);
        }
        // The packed placement has the skewed placement's web VM layout.
        if p != Placement::Packed {
            for &l in &plan.web_levels {
                push(0, p, Scenario::Web(l), plan.seeds, &Policy::MAIN);
            }
        }
        for &n in &plan.sensors {
            push(0, p, Scenario::Hybrid(n), plan.seeds, &main_and_ipvs);
        }
    }
    for v in 1..variants().len() {
        for &p in &plan.placements {
            for &n in &plan.sens_sensors {
                push(v, p, Scenario::Hybrid(n), plan.sens_seeds, &Policy::MAIN);
            }
        }
    }
    out
}

/// The configuration of a run.
#[must_use]
pub fn config_of(spec: &RunSpec, plan: &Plan) -> crate::model::Config {
    let vs = variants();
    let cal = vs
        .get(spec.variant)
        .map_or_else(Calibration::default, |v| v.cal.clone());
    let mut cfg = cal.config(spec.scenario, spec.placement, spec.policy, 1000 + spec.seed);
    if let Some(d) = plan.duration {
        cfg.duration = d;
    }
    cfg
}

/// Runs every spec on `threads` threads; results in spec order.
#[must_use]
pub fn run_all(specs: &[RunSpec], plan: &Plan, threads: usize) -> Vec<Summary> {
    let next = AtomicUsize::new(0);
    let done: Mutex<Vec<(usize, Summary)>> = Mutex::new(Vec::with_capacity(specs.len()));
    std::thread::scope(|s| {
        for _ in 0..threads.max(1) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(spec) = specs.get(i) else {
                    break;
                };
                let summary = simulate(config_of(spec, plan));
                if let Ok(mut d) = done.lock() {
                    d.push((i, summary));
                }
            });
        }
    });
    let mut done = done.into_inner().unwrap_or_default();
    done.sort_by_key(|(i, _)| *i);
    done.into_iter().map(|(_, s)| s).collect()
}

/// Key of an aggregate: (variant, placement, kind, level, policy).
type Key = (usize, Placement, &'static str, String, Policy);

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

fn ms(x: f64) -> String {
    format!("{:.0}", x * 1000.0)
}

fn pct(x: f64) -> String {
    format!("{x:+.1}%")
}

/// Levels of a scenario kind present in the aggregates, in plan order.
fn levels(plan: &Plan, kind: &str) -> Vec<String> {
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
fn scenario_table(
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
fn improvement_table(
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

fn range_text(r: (f64, f64)) -> String {
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

/// The markdown report.
#[must_use]
pub fn markdown(plan: &Plan, agg: &BTreeMap<Key, Agg>, runs: usize) -> String {
    let vs = variants();
    let base = &vs[0].cal;
    let mut out = String::new();
    let hybrid_lv = levels(plan, "hybrid");
    let mut headline = Vec::new();
    for &p in &plan.placements {
        headline.push((p, improvement_table(agg, 0, p, &hybrid_lv).1));
    }

    out.push_str(crate::text::TITLE);
    let _ = writeln!(
        out,
        "\n{runs} simulation runs: {} seeds per point of the main grid, {} per sensitivity point; {} s measured per run after a warm-up of {} s.\n",
        plan.seeds,
        plan.sens_seeds,
        plan.duration.unwrap_or(300.0),
        30.0 + base.linger,
    );

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
    out.push_str("## Headline: the hybrid workload against the study\n\n");
    out.push_str("Relative reduction of the mean response time of all connections by VMWLC/H, over the sensor counts swept (150-450), seed-averaged:\n\n");
    out.push_str("| VM placement | VMWLC/H over VMWLC | VMWLC/H over WLC |\n|---|---|---|\n");
    for (p, r) in &headline {
        let _ = writeln!(
            out,
            "| {} | {} | {} |",
            crate::text::placement_label(*p),
            range_text(r[0]),
            range_text(r[1])
        );
    }
    out.push_str("| **study (measured, 225 sensors, 5/10/15 min)** | **3.6 to 9.1%** | **8.2 to 26.3%** |\n\n");
    out.push_str(crate::text::HEADLINE_NOTES);

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

    out.push_str(crate::text::READING);
    for (title, kind) in [
        ("Hybrid (sensor + web)", "hybrid"),
        ("Sensor service only", "sensor"),
        ("Web service only", "web"),
    ] {
        let _ = writeln!(out, "\n## {title}\n");
        let pols: &[Policy] = if kind == "hybrid" {
            &Policy::MAIN
        } else {
            &[Policy::Wlc, Policy::Vmwlc, Policy::Vmwlch]
        };
        if kind != "hybrid" {
            out.push_str(crate::text::SINGLE_SERVICE_NOTE);
        }
        for &p in &plan.placements {
            if kind == "web" && p == Placement::Packed {
                continue;
            }
            let _ = writeln!(
                out,
                "\n### Placement: {}\n",
                crate::text::placement_label(p)
            );
            out.push_str(&scenario_table(agg, 0, p, kind, &levels(plan, kind), pols));
            if kind == "hybrid" {
                out.push_str("\nImprovement of VMWLC/H (positive = VMWLC/H better; response times and window imbalance):\n\n");
                out.push_str(&improvement_table(agg, 0, p, &hybrid_lv).0);
            }
        }
    }

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

    out.push_str("\n## WLC through the core and IPVS's own wlc\n\n");
    out.push_str(crate::text::WLC_CHECK);
    out.push_str("| placement | sensors | all mean ms: WLC (core, implicit hosts) / WLC-ipvs | imbalance (win) |\n|---|---|---|---|\n");
    for &p in &plan.placements {
        for l in &hybrid_lv {
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

    out.push_str(crate::text::DISCUSSION);
    out
}
