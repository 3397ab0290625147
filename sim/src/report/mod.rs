//! The experiment grid (the study's scenarios, placements, sensitivity
//! variants, seeds), run in parallel, and its outputs: a terminal table, a
//! CSV of every run and the markdown report `docs/simulation.md`.
//!
//! Every run is independent and seeded, and outputs are assembled in grid
//! order, so the outputs do not depend on the number of threads.
//!
//! This file holds the grid and runs it; the parts:
//!
//! * `aggregate`: seed averages per grid point and the comparisons;
//! * `csv`: one CSV row per run;
//! * `tables`: the results and improvement tables, and the terminal output;
//! * `markdown`: the markdown report, one function per section.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use crate::engine::{simulate, Summary};
use crate::model::{Calibration, Placement, Scenario};
use crate::sched::Policy;

mod aggregate;
mod csv;
mod markdown;
mod tables;

pub use aggregate::{aggregate, improvement, wins, Agg};
pub use csv::csv;
pub use markdown::markdown;
pub use tables::terminal;

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
