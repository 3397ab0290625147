//! `vmwlch-sim`: the simulator's command line.

use std::process::ExitCode;
use std::time::Instant;

use clap::{Args, Parser, Subcommand, ValueEnum};

use vmwlch_sim::model::{Calibration, Placement, Scenario};
use vmwlch_sim::report::{self, Plan};
use vmwlch_sim::{simulate, Policy};

/// Discrete-event simulator of the VMC/H study's experiments (WLC, VMWLC,
/// VMWLC/H) on top of the kernel module's own selection code. Deterministic:
/// the same options and seeds give the same output.
#[derive(Parser)]
#[command(name = "vmwlch-sim", version, arg_required_else_help = true)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Runs the study's scenarios (sensor only, web only, hybrid; sensor counts
    /// 150-450; three VM placements; sensitivity variants) for WLC, VMWLC and
    /// VMWLC/H, prints the hybrid table and the headline, and writes the
    /// markdown report and a CSV of every run when asked to.
    Report(ReportArgs),
    /// One scenario point; prints each run's summary.
    Run(RunArgs),
}

#[derive(Args)]
struct ReportArgs {
    /// A small grid for a quick look (fewer seeds, sensor counts and variants).
    #[arg(long)]
    quick: bool,
    /// Write the markdown report here (e.g. docs/simulation.md).
    #[arg(long, value_name = "PATH")]
    md: Option<String>,
    /// Write one CSV row per run here.
    #[arg(long, value_name = "PATH")]
    csv: Option<String>,
    /// Worker threads [default: the available parallelism].
    #[arg(long, value_name = "N")]
    threads: Option<usize>,
    /// Seeds of the main grid [default: 5, or the quick grid's].
    #[arg(long, value_name = "N")]
    seeds: Option<u64>,
}

#[derive(Clone, Copy, ValueEnum)]
enum Kind {
    Sensor,
    Web,
    Hybrid,
}

fn parse_placement(s: &str) -> Result<Placement, String> {
    Placement::parse(s).ok_or(format!("unknown placement {s} (even, skewed, packed)"))
}

/// `--policy`'s value: one policy, or `all` (the main three plus the kernel's
/// own WLC). A newtype because clap reads a bare `Vec` as a repeated option.
#[derive(Clone)]
struct Policies(Vec<Policy>);

fn parse_policies(s: &str) -> Result<Policies, String> {
    if s == "all" {
        let mut v = Policy::MAIN.to_vec();
        v.push(Policy::WlcIpvs);
        return Ok(Policies(v));
    }
    Policy::parse(s).map(|p| Policies(vec![p])).ok_or(format!(
        "unknown policy {s} (wlc, vmwlc, vmwlch, vmwlch-study, wlc-ipvs, all)"
    ))
}

#[derive(Args)]
struct RunArgs {
    /// Workload: sensor readings only, web connections only, or both.
    #[arg(long, value_enum, default_value = "hybrid")]
    scenario: Kind,
    /// Sensor count (sensor, hybrid) or web load as a fraction of cluster
    /// capacity (web) [default: 225 sensors, web 0.3].
    #[arg(long, value_name = "N")]
    level: Option<f64>,
    /// VM placement on the hosts: even, skewed or packed.
    #[arg(long, default_value = "even", value_parser = parse_placement)]
    placement: Placement,
    /// wlc, vmwlc, vmwlch, vmwlch-study, wlc-ipvs, or all
    /// [default: WLC, VMWLC and VMWLC/H].
    #[arg(long, value_name = "POLICY", value_parser = parse_policies)]
    policy: Option<Policies>,
    /// Seed of the run (the generator is seeded with 1000 + N).
    #[arg(long, default_value_t = 1, value_name = "N")]
    seed: u64,
    /// Inactive linger (s).
    #[arg(long, value_name = "S", default_value_t = Calibration::default().linger)]
    linger: f64,
    /// vCPUs per VM.
    #[arg(long, value_name = "N", default_value_t = Calibration::default().vcpus)]
    vcpus: u32,
    /// Sensor phase spread (s).
    #[arg(long, value_name = "S", default_value_t = Calibration::default().phase_spread)]
    phase_spread: f64,
    /// Measured seconds [default: the calibration's].
    #[arg(long, value_name = "S")]
    duration: Option<f64>,
    /// Mean work per sensor reading (s of one slow core).
    #[arg(long, value_name = "S", default_value_t = Calibration::default().sensor_demand)]
    sensor_demand: f64,
    /// Mean work per web connection (s).
    #[arg(long, value_name = "S", default_value_t = Calibration::default().web_demand)]
    web_demand: f64,
    /// Squared coefficient of variation of the web work.
    #[arg(long, value_name = "X", default_value_t = Calibration::default().web_scv)]
    web_scv: f64,
    /// Web load in the hybrid scenario (fraction of cluster capacity).
    #[arg(long, value_name = "F", default_value_t = Calibration::default().hybrid_web_load)]
    web_load: f64,
}

fn cmd_report(args: ReportArgs) -> Result<(), String> {
    let mut plan = if args.quick {
        Plan::quick()
    } else {
        Plan::full()
    };
    if let Some(n) = args.seeds {
        plan.seeds = n;
    }
    let threads = args
        .threads
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    let (md, csv) = (args.md, args.csv);
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

fn cmd_run(args: RunArgs) -> Result<(), String> {
    let cal = Calibration {
        sensor_demand: args.sensor_demand,
        web_demand: args.web_demand,
        web_scv: args.web_scv,
        hybrid_web_load: args.web_load,
        vcpus: args.vcpus,
        linger: args.linger,
        phase_spread: args.phase_spread,
    };
    let (placement, seed, duration) = (args.placement, args.seed, args.duration);
    let policies = args.policy.map_or_else(|| Policy::MAIN.to_vec(), |p| p.0);
    let level = args.level;
    let scenario = match args.scenario {
        Kind::Sensor => Scenario::Sensor(level.unwrap_or(225.0) as u32),
        Kind::Web => Scenario::Web(level.unwrap_or(0.3)),
        Kind::Hybrid => Scenario::Hybrid(level.unwrap_or(225.0) as u32),
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
    let r = match Cli::parse().cmd {
        Cmd::Report(a) => cmd_report(a),
        Cmd::Run(a) => cmd_run(a),
    };
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("vmwlch-sim: {e}");
            ExitCode::from(2)
        }
    }
}
