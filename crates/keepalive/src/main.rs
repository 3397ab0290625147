//! `keepalive -c FILE`: VRRPv3 failover daemon for IPVS front ends.
//!
//! Exit codes: 0 normal stop (or `--check` passed), 1 runtime error,
//! 2 invalid command line or configuration.
//!
//! Signals: SIGHUP reloads; SIGTERM/SIGINT stop (a `bgp:` section's routes
//! are withdrawn first); SIGUSR1 drains the `bgp:` groups (withdraws them,
//! VRRP unaffected) until SIGUSR2.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, ValueEnum};
use keepalive::config::Config;

#[derive(Debug, Clone, Copy, ValueEnum)]
enum LogFormat {
    Text,
    Json,
}

#[derive(Debug, Parser)]
#[command(
    name = "keepalive",
    version,
    about = "VRRPv3 front-end failover for IPVS directors"
)]
struct Args {
    /// Configuration file (YAML).
    #[arg(
        short = 'c',
        long = "config",
        default_value = "/etc/keepalive/keepalive.yaml"
    )]
    config: PathBuf,
    /// Validate the configuration and exit.
    #[arg(long)]
    check: bool,
    /// Log format.
    #[arg(long, value_enum, default_value = "text")]
    log_format: LogFormat,
    /// Log filter (tracing env-filter syntax); overrides RUST_LOG.
    #[arg(long)]
    log_level: Option<String>,
    /// Print the man page (roff, section 8) and exit (for packaging).
    #[arg(long, hide = true)]
    man: bool,
}

fn main() -> ExitCode {
    let args = Args::parse();
    if args.man {
        let page = clap_mangen::Man::new(<Args as clap::CommandFactory>::command()).section("8");
        return match page.render(&mut std::io::stdout()) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("keepalive: cannot write the man page: {e}");
                ExitCode::from(1)
            }
        };
    }
    let filter = args
        .log_level
        .clone()
        .or_else(|| std::env::var("RUST_LOG").ok())
        .unwrap_or_else(|| "info".into());
    let filter = match tracing_subscriber::EnvFilter::try_new(&filter) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("keepalive: invalid log filter {filter:?}: {e}");
            return ExitCode::from(2);
        }
    };
    // Colours only for a terminal, not in files or the journal.
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_writer(std::io::stderr);
    match args.log_format {
        LogFormat::Json => builder.json().init(),
        LogFormat::Text => builder.init(),
    }

    let cfg = match Config::load(&args.config) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("keepalive: {e}");
            return ExitCode::from(2);
        }
    };
    if args.check {
        let bgp = cfg.bgp.as_ref().map_or(String::new(), |b| {
            format!(
                ", {} BGP group(s) to {} neighbor(s)",
                b.groups.len(),
                b.neighbors.len()
            )
        });
        println!(
            "{}: OK ({} VRRP instance(s), {} health check(s){bgp}{})",
            args.config.display(),
            cfg.vrrp.len(),
            cfg.health_checks.len(),
            if cfg.cluster.is_some() {
                ", IPVS services/hosts"
            } else if cfg.cluster_source.is_some() {
                ", IPVS services/hosts from etcd"
            } else {
                ""
            }
        );
        return ExitCode::SUCCESS;
    }

    // Before the runtime and the IPVS worker exist, so that both the event
    // loop (this thread) and the worker start from the chosen setting.
    if cfg.global.lock_memory {
        if let Err(e) = keepalive::realtime::lock_memory() {
            tracing::warn!(error = %e, "lock_memory: mlockall failed; continuing without");
        }
    }
    if let Some(p) = cfg.global.realtime_priority {
        match keepalive::realtime::make_realtime(p.0) {
            Ok(()) => tracing::info!(priority = p.0, "VRRP event loop runs SCHED_FIFO"),
            Err(e) => tracing::warn!(
                error = %e,
                "realtime_priority: cannot switch to SCHED_FIFO (needs CAP_SYS_NICE and real-time \
                 CPU time in this cgroup); continuing with normal scheduling"
            ),
        }
    }

    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("keepalive: cannot start runtime: {e}");
            return ExitCode::from(1);
        }
    };
    let backend = keepalive::ipvs::default_backend(&cfg);
    let result = rt.block_on(async move {
        let d = keepalive::daemon::Daemon::new(cfg, args.config.clone(), backend)?;
        d.run().await
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!(error = format!("{e:#}"), "fatal");
            eprintln!("keepalive: {e:#}");
            ExitCode::from(1)
        }
    }
}
