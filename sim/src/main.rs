//! `vmwlch-sim`: the simulator's command line.

use std::process::ExitCode;
use std::time::Instant;

use vmwlch_sim::model::{Calibration, Placement, Scenario};
use vmwlch_sim::report::{self, Plan};
use vmwlch_sim::{simulate, Policy};

const USAGE: &str = "\
usage:
  vmwlch-sim report [--quick] [--md PATH] [--csv PATH] [--threads N] [--seeds N]
      Runs the study's scenarios (sensor only, web only, hybrid; sensor counts
      150-450; three VM placements; sensitivity variants) for WLC, VMWLC and
      VMWLC/H, prints the hybrid table and the headline, and writes the
      markdown report and a CSV of every run when asked to.
  vmwlch-sim run [--scenario sensor|web|hybrid] [--level N] [--placement even|skewed|packed]
                 [--policy wlc|vmwlc|vmwlch|vmwlch-study|wlc-ipvs|all] [--seed N]
                 [--linger S] [--vcpus N] [--phase-spread S] [--duration S]
                 [--sensor-demand S] [--web-demand S] [--web-scv X] [--web-load F]
      One scenario point; prints each run's summary.
";

fn value<T: std::str::FromStr>(args: &[String], i: &mut usize, name: &str) -> Result<T, String> {
    *i += 1;
    args.get(*i)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| format!("{name} needs a valid value"))
}

fn cmd_report(args: &[String]) -> Result<(), String> {
    let mut plan = Plan::full();
    let mut md: Option<String> = None;
    let mut csv: Option<String> = None;
    let mut threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut i = 0;
    while i < args.len() {
        match args[i].as_str() {
            "--quick" => plan = Plan::quick(),
            "--md" => md = Some(value(args, &mut i, "--md")?),
            "--csv" => csv = Some(value(args, &mut i, "--csv")?),
            "--threads" => threads = value(args, &mut i, "--threads")?,
            "--seeds" => plan.seeds = value(args, &mut i, "--seeds")?,
            other => return Err(format!("unknown option {other}")),
        }
        i += 1;
    }
    let t0 = Instant::now();
    let specs = report::specs(&plan);
    eprintln!("vmwlch-sim: {} runs on {threads} threads ...", specs.len());
    let results = report::run_all(&specs, &plan, threads);
    let agg = report::aggregate(&specs, &results);
    print!("{}", report::terminal(&plan, &agg));
    let write = |path: &str, text: &str| -> Result<(), String> {
        if let Some(dir) = std::path::Path::new(path).parent() {
            if !dir.as_os_str().is_empty() {
                std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
            }
        }
        std::fs::write(path, text).map_err(|e| format!("{path}: {e}"))?;
        eprintln!("vmwlch-sim: wrote {path}");
        Ok(())
    };
    if let Some(p) = &csv {
        write(p, &report::csv(&specs, &results))?;
    }
    if let Some(p) = &md {
        write(p, &report::markdown(&plan, &agg, specs.len()))?;
    }
    let events: u64 = results.iter().map(|s| s.events).sum();
    eprintln!(
        "vmwlch-sim: {} runs, {events} events in {:.1} s",
        specs.len(),
        t0.elapsed().as_secs_f64()
    );
    Ok(())
}

fn cmd_run(args: &[String]) -> Result<(), String> {
    let mut cal = Calibration::default();
    let mut kind = "hybrid".to_string();
    let mut level: Option<f64> = None;
    let mut placement = Placement::Even;
    let mut policies: Vec<Policy> = Policy::MAIN.to_vec();
    let mut seed = 1u64;
    let mut duration: Option<f64> = None;
    let mut i = 0;
    while i < args.len() {
        match args[i].as_str() {
            "--scenario" => kind = value(args, &mut i, "--scenario")?,
            "--level" => level = Some(value(args, &mut i, "--level")?),
            "--placement" => {
                let s: String = value(args, &mut i, "--placement")?;
                placement = Placement::parse(&s).ok_or(format!("unknown placement {s}"))?;
            }
            "--policy" => {
                let s: String = value(args, &mut i, "--policy")?;
                policies = if s == "all" {
                    let mut v = Policy::MAIN.to_vec();
                    v.push(Policy::WlcIpvs);
                    v
                } else {
                    vec![Policy::parse(&s).ok_or(format!("unknown policy {s}"))?]
                };
            }
            "--seed" => seed = value(args, &mut i, "--seed")?,
            "--linger" => cal.linger = value(args, &mut i, "--linger")?,
            "--vcpus" => cal.vcpus = value(args, &mut i, "--vcpus")?,
            "--phase-spread" => cal.phase_spread = value(args, &mut i, "--phase-spread")?,
            "--sensor-demand" => cal.sensor_demand = value(args, &mut i, "--sensor-demand")?,
            "--web-demand" => cal.web_demand = value(args, &mut i, "--web-demand")?,
            "--web-scv" => cal.web_scv = value(args, &mut i, "--web-scv")?,
            "--web-load" => cal.hybrid_web_load = value(args, &mut i, "--web-load")?,
            "--duration" => duration = Some(value(args, &mut i, "--duration")?),
            other => return Err(format!("unknown option {other}")),
        }
        i += 1;
    }
    let scenario = match kind.as_str() {
        "sensor" => Scenario::Sensor(level.unwrap_or(225.0) as u32),
        "web" => Scenario::Web(level.unwrap_or(0.3)),
        "hybrid" => Scenario::Hybrid(level.unwrap_or(225.0) as u32),
        other => return Err(format!("unknown scenario {other}")),
    };
    println!(
        "{} {} on {} placement, seed {seed}",
        scenario.kind(),
        scenario.level(),
        placement.name()
    );
    println!(
        "{:<9} {:>7} {:>7} {:>7} {:>15} {:>15} {:>8} {:>5}  host utilisation %",
        "scheduler",
        "imb_win",
        "imb_q",
        "imb_run",
        "sensor mean/p95",
        "web mean/p95",
        "all mean",
        "cens"
    );
    for p in policies {
        let mut cfg = cal.config(scenario, placement, p, 1000 + seed);
        if let Some(d) = duration {
            cfg.duration = d;
        }
        let s = simulate(cfg);
        let util: Vec<String> = s
            .host_util
            .iter()
            .map(|u| format!("{:.0}", u * 100.0))
            .collect();
        println!(
            "{:<9} {:>7.3} {:>7.3} {:>7.3} {:>7.0}/{:<7.0} {:>7.0}/{:<7.0} {:>8.0} {:>5}  {}",
            p.name(),
            s.imb_util,
            s.imb_queue,
            s.imb_longrun,
            s.sensor.mean * 1e3,
            s.sensor.p95 * 1e3,
            s.web.mean * 1e3,
            s.web.p95 * 1e3,
            s.all.mean * 1e3,
            s.all.censored,
            util.join(" ")
        );
    }
    println!("(response times in ms)");
    Ok(())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (cmd, rest) = match args.split_first() {
        Some((c, r)) => (c.as_str(), r),
        None => ("help", &args[..]),
    };
    let r = match cmd {
        "report" => cmd_report(rest),
        "run" => cmd_run(rest),
        "help" | "--help" | "-h" => {
            print!("{USAGE}");
            Ok(())
        }
        other => Err(format!("unknown command {other}\n{USAGE}")),
    };
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("vmwlch-sim: {e}");
            ExitCode::from(2)
        }
    }
}
