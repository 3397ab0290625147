//! The engine's unit tests: the processor-sharing model against hand-worked
//! cases, the workload generators, the wiring to the schedulers, the metrics.

use super::{max_over_mean, ps_rates, simulate, Sim, SvcStats};
use crate::model::{
    Calibration, Config, HostSpec, Placement, Scenario, SensorSpec, VmSpec, WebSpec,
};
use crate::rng::{Demand, Rng};
use crate::sched::{Policy, SENSOR, WEB};

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

/// One host of `cores` cores at `speed`, VMs with the given (service,
/// vcpus), connections from `trace`.
fn tiny(cores: f64, speed: f64, vms: &[(usize, u32)], trace: Vec<(f64, usize, f64)>) -> Config {
    Config {
        hosts: vec![HostSpec {
            cores,
            speed,
            weight: 1,
        }],
        vms: vms
            .iter()
            .map(|&(service, vcpus)| VmSpec {
                host: 0,
                service,
                weight: 1,
                vcpus,
            })
            .collect(),
        sensor: None,
        web: None,
        trace,
        linger: 0.0,
        warmup: 0.0,
        duration: 10.0,
        drain: 100.0,
        window: 1.0,
        policy: Policy::Wlc,
        seed: 1,
    }
}

/// (mean, p95, count) of all connections.
fn rts(cfg: Config) -> Vec<f64> {
    let s = simulate(cfg);
    vec![s.all.mean, s.all.p95, s.all.count as f64]
}

#[test]
fn ps_rate_formula() {
    let k4 = [4, 4, 4, 4];
    let (r, used) = ps_rates(4.0, 1.0, &[1, 0, 0, 0], &k4);
    assert!(close(r[0], 1.0) && close(used, 1.0) && r[1] == 0.0);
    // 8 connections on one VM with 4 vCPUs: 4 cores shared by 8.
    let (r, used) = ps_rates(4.0, 1.0, &[8, 0, 0, 0], &k4);
    assert!(close(r[0], 0.5) && close(used, 4.0));
    // 6 runnable threads on 4 cores: each thread 2/3 of a core.
    let (r, used) = ps_rates(4.0, 1.0, &[3, 3, 0, 0], &k4);
    assert!(close(r[0], 2.0 / 3.0) && close(r[1], 2.0 / 3.0) && close(used, 4.0));
    // vCPU cap: 5 connections on a 2-vCPU VM share 2 cores.
    let (r, used) = ps_rates(4.0, 1.0, &[1, 5], &[2, 2]);
    assert!(close(r[0], 1.0) && close(r[1], 0.4) && close(used, 3.0));
    // Speed scales everything.
    let (r, used) = ps_rates(2.0, 1.5, &[1], &[8]);
    assert!(close(r[0], 1.5) && close(used, 1.5));
    let (r, used) = ps_rates(2.0, 1.0, &[0, 0], &[1, 1]);
    assert_eq!((r, used), (vec![0.0, 0.0], 0.0));
}

#[test]
fn single_connection_runs_at_core_speed() {
    let cfg = tiny(1.0, 2.0, &[(SENSOR, 1)], vec![(0.5, SENSOR, 1.0)]);
    let s = simulate(cfg);
    assert_eq!(s.sensor.count, 1);
    assert!(close(s.sensor.mean, 0.5), "{s:?}");
    // Utilisation over the 10 s measured: busy 0.5 s.
    assert!(close(s.host_util[0], 0.05), "{:?}", s.host_util);
}

#[test]
fn processor_sharing_two_jobs() {
    // Demands 1 and 2 arriving together on one core: both at rate 1/2
    // until t = 2 (first done), then the second alone: done at t = 3.
    let cfg = tiny(
        1.0,
        1.0,
        &[(SENSOR, 8)],
        vec![(0.0, SENSOR, 1.0), (0.0, SENSOR, 2.0)],
    );
    assert_eq!(rts(cfg), vec![2.5, 3.0, 2.0]);
    // Staggered: A (2) at 0 alone until 1 (1 left), B (1) arrives; both
    // at 1/2: both finish at 3. RTs 3 and 2.
    let cfg = tiny(
        1.0,
        1.0,
        &[(SENSOR, 8)],
        vec![(0.0, SENSOR, 2.0), (1.0, SENSOR, 1.0)],
    );
    let s = simulate(cfg);
    assert!(close(s.all.mean, 2.5) && close(s.all.p95, 3.0), "{s:?}");
}

#[test]
fn processor_sharing_multicore_and_vcpu_caps() {
    // 3 jobs of 1 on 2 cores: each gets 2/3 of a core: all done at 1.5.
    let cfg = tiny(2.0, 1.0, &[(SENSOR, 8)], vec![(0.0, SENSOR, 1.0); 3]);
    let s = simulate(cfg);
    assert!(close(s.all.mean, 1.5) && close(s.all.p95, 1.5), "{s:?}");
    // 2 jobs on a 1-vCPU VM of a 4-core host: one core shared: 2.0.
    let cfg = tiny(4.0, 1.0, &[(SENSOR, 1)], vec![(0.0, SENSOR, 1.0); 2]);
    let s = simulate(cfg);
    assert!(close(s.all.mean, 2.0), "{s:?}");
    // Two VMs of the same service, one job each (WLC spreads them): no
    // sharing on 2 cores.
    let cfg = tiny(
        2.0,
        1.0,
        &[(SENSOR, 1), (SENSOR, 1)],
        vec![(0.0, SENSOR, 1.0); 2],
    );
    let s = simulate(cfg);
    assert!(close(s.all.mean, 1.0), "{s:?}");
}

#[test]
fn work_is_conserved() {
    // Random-ish trace on a 2-core host: busy time = work / speed while
    // the host never idles with work pending.
    let mut r = Rng::new(3);
    let mut t = 0.0;
    let mut work = 0.0;
    let mut trace = Vec::new();
    for _ in 0..200 {
        t += r.exp(0.05);
        let d = r.exp(0.08);
        work += d;
        trace.push((t, SENSOR, d));
    }
    let mut cfg = tiny(2.0, 1.25, &[(SENSOR, 4), (SENSOR, 4)], trace);
    cfg.duration = 1000.0;
    let s = simulate(cfg);
    assert_eq!(s.all.count, 200);
    assert_eq!(s.all.censored, 0);
    let busy = s.host_util[0] * 1000.0 * 2.0 * 1.25;
    assert!((busy - work).abs() < 1e-6, "{busy} {work}");
    // Nobody finishes faster than alone on one core.
    assert!(s.all.mean >= 0.08 / 1.25 * 0.5);
}

#[test]
fn lingering_connections_count_as_inactive() {
    // Two VMs (implicit hosts under WLC). A short connection at t=0;
    // during its linger, the next one must go to the other VM (1 inactive
    // vs 0); after the linger both are equal again.
    let trace = vec![(0.0, SENSOR, 0.1), (1.0, SENSOR, 0.1), (2.0, SENSOR, 0.1)];
    let mut cfg = tiny(2.0, 1.0, &[(SENSOR, 1), (SENSOR, 1)], trace);
    cfg.linger = 5.0;
    let (_, log) = Sim::new(cfg.clone()).run_logged();
    assert_eq!(log.len(), 3);
    assert_ne!(log[0].2, log[1].2);
    // Both have one inactive at t=2: either is fine; without linger the
    // second connection sees two idle VMs: over seeds both are chosen.
    cfg.linger = 0.0;
    let mut seen = [false; 2];
    for seed in 0..32 {
        cfg.seed = seed;
        let (_, log) = Sim::new(cfg.clone()).run_logged();
        seen[log[1].2] = true;
    }
    assert_eq!(seen, [true, true]);
}

#[test]
fn censored_when_overloaded() {
    // 1 core, 20 s of work arriving at once, drain cut at 5 s after end.
    let mut cfg = tiny(
        1.0,
        1.0,
        &[(SENSOR, 8)],
        vec![(0.0, SENSOR, 10.0), (0.0, SENSOR, 10.0)],
    );
    cfg.duration = 1.0;
    cfg.drain = 5.0;
    let s = simulate(cfg);
    assert_eq!(s.all.count, 2);
    assert_eq!(s.all.censored, 2);
    assert!(close(s.all.mean, 6.0), "{s:?}");
}

fn arrivals(cfg: Config) -> Vec<(f64, usize, usize)> {
    Sim::new(cfg).run_logged().1
}

#[test]
fn sensors_report_every_period() {
    let sensor = SensorSpec {
        count: 10,
        period: 5.0,
        phase_spread: 0.0,
        jitter: 0.0,
        demand: Demand::Const(0.01),
    };
    let mut cfg = tiny(4.0, 1.0, &[(SENSOR, 4), (SENSOR, 4)], vec![]);
    cfg.sensor = Some(sensor.clone());
    cfg.duration = 100.0;
    cfg.drain = 0.0;
    let log = arrivals(cfg.clone());
    // Synchronised: 10 readings at every multiple of 5 s.
    let before: Vec<_> = log.iter().filter(|a| a.0 < 100.0).collect();
    assert_eq!(before.len(), 200);
    assert!(before
        .iter()
        .all(|a| a.1 == SENSOR && (a.0 / 5.0).fract() == 0.0));
    // Spread phases and jitter: still one reading per sensor and period,
    // not all at once.
    cfg.sensor = Some(SensorSpec {
        phase_spread: 5.0,
        jitter: 0.5,
        ..sensor
    });
    let log = arrivals(cfg);
    let n = log.iter().filter(|a| a.0 < 100.0).count();
    assert!((190..=200).contains(&n), "{n}");
    let distinct: std::collections::BTreeSet<u64> = log.iter().map(|a| a.0.to_bits()).collect();
    assert_eq!(distinct.len(), log.len());
}

#[test]
fn web_arrivals_are_bursty_with_the_right_mean() {
    let web = WebSpec {
        mean_rate: 20.0,
        batch_mean: 3.0,
        on_mean: 4.0,
        off_mean: 8.0,
        burst_ratio: 8.0,
        demand: Demand::Const(0.001),
    };
    let mut cfg = tiny(4.0, 1.0, &[(WEB, 4)], vec![]);
    cfg.web = Some(web);
    cfg.duration = 4000.0;
    cfg.drain = 0.0;
    let log = arrivals(cfg);
    let n = log.iter().filter(|a| a.0 < 4000.0).count() as f64;
    assert!((n / 4000.0 - 20.0).abs() < 1.5, "rate {}", n / 4000.0);
    assert!(log.iter().all(|a| a.1 == WEB));
    // Batches: connections sharing a timestamp.
    let same = log.windows(2).filter(|w| w[0].0 == w[1].0).count() as f64;
    assert!(same / n > 0.5, "{same} {n}");
    // Index of dispersion of 1-s counts far above Poisson's 1.
    let mut counts = vec![0.0f64; 4000];
    for a in &log {
        if let Some(c) = counts.get_mut(a.0 as usize) {
            *c += 1.0;
        }
    }
    let m = counts.iter().sum::<f64>() / counts.len() as f64;
    let v = counts.iter().map(|c| (c - m) * (c - m)).sum::<f64>() / counts.len() as f64;
    assert!(v / m > 4.0, "dispersion {}", v / m);
}

/// End to end: a web connection keeps host 0 busy; a new sensor
/// connection goes to host 1 under VMWLC/H every time, while WLC and
/// VMWLC see two idle sensor VMs and pick either.
#[test]
fn schedulers_see_the_right_load_end_to_end() {
    let base = Config {
        hosts: vec![
            HostSpec {
                cores: 1.0,
                speed: 1.0,
                weight: 1,
            };
            2
        ],
        vms: vec![
            VmSpec {
                host: 0,
                service: WEB,
                weight: 1,
                vcpus: 1,
            },
            VmSpec {
                host: 0,
                service: SENSOR,
                weight: 1,
                vcpus: 1,
            },
            VmSpec {
                host: 1,
                service: SENSOR,
                weight: 1,
                vcpus: 1,
            },
        ],
        trace: vec![(0.0, WEB, 100.0), (1.0, SENSOR, 0.1)],
        ..tiny(1.0, 1.0, &[], vec![])
    };
    for policy in [
        Policy::Wlc,
        Policy::Vmwlc,
        Policy::Vmwlch,
        Policy::VmwlchStudy,
    ] {
        let mut seen = [false; 3];
        for seed in 0..32 {
            let cfg = Config {
                policy,
                seed,
                ..base.clone()
            };
            let (_, log) = Sim::new(cfg).run_logged();
            assert_eq!(log[0].2, 0);
            seen[log[1].2] = true;
        }
        if policy == Policy::Vmwlch {
            assert_eq!(seen, [false, false, true], "{policy:?}");
        } else {
            // VMWLC/H* schedules sensors with VMWLC, as the study did.
            assert_eq!(seen, [false, true, true], "{policy:?}");
        }
    }
}

#[test]
fn runs_are_deterministic_and_policies_share_the_workload() {
    let cal = Calibration {
        linger: 5.0,
        ..Calibration::default()
    };
    let mk = |p| {
        let mut c = cal.config(Scenario::Hybrid(60), Placement::Skewed, p, 9);
        c.warmup = 5.0;
        c.duration = 30.0;
        c
    };
    let a = Sim::new(mk(Policy::Vmwlch)).run_logged();
    let b = Sim::new(mk(Policy::Vmwlch)).run_logged();
    assert_eq!(a, b);
    let c = Sim::new(mk(Policy::Wlc)).run_logged();
    // Same arrivals (times and services), different decisions.
    let times =
        |l: &[(f64, usize, usize)]| l.iter().map(|x| (x.0.to_bits(), x.1)).collect::<Vec<_>>();
    assert_eq!(times(&a.1), times(&c.1));
    assert_ne!(a.1, c.1);
    assert_eq!(a.0.dropped, 0);
}

#[test]
fn imbalance_measure() {
    assert_eq!(max_over_mean(&[]), 1.0);
    assert_eq!(max_over_mean(&[0.0, 0.0]), 1.0);
    assert!(close(max_over_mean(&[1.0, 1.0, 1.0]), 1.0));
    assert!(close(max_over_mean(&[2.0, 0.0]), 2.0));
    let s = SvcStats::from((1..=100).map(f64::from).collect(), 0);
    assert_eq!((s.count, s.p95), (100, 95.0));
    assert!(close(s.mean, 50.5));
}
