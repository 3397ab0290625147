//! `keepalive -c FILE`: VRRPv3 failover daemon for IPVS front ends.
//!
//! Exit codes: 0 normal stop (or `--check` passed, or a signal sent), 1
//! runtime error (or no running daemon to signal), 2 invalid command line
//! or configuration.
//!
//! Signals: SIGHUP reloads; SIGTERM/SIGINT stop (a `bgp:` section's routes
//! are withdrawn first); SIGUSR1 drains the `bgp:` groups (withdraws them,
//! VRRP unaffected) until SIGUSR2.
//!
//! Subcommands for operators: `keepalive drain` and `keepalive resume`
//! send SIGUSR1 / SIGUSR2 to the daemon named by `--pid-file` (default
//! `/run/keepalive/keepalive.pid`, which the systemd unit has the daemon
//! write), after checking that it is a running keepalive.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};
use keepalive::config::Config;
use keepalive::pidfile::{self, PidFile, Request};

#[derive(Debug, Clone, Copy, ValueEnum)]
enum LogFormat {
    Text,
    Json,
}

/// `--help` and the man page: what the subcommands' page would say.
const AFTER_HELP: &str = "\
Signals: SIGHUP reloads the configuration; SIGTERM/SIGINT stop (a bgp: \
section's routes are withdrawn first); SIGUSR1 drains the bgp: groups until \
SIGUSR2.

keepalive drain [--pid-file PATH] withdraws the running daemon's bgp: groups \
(SIGUSR1) until keepalive resume [--pid-file PATH] (SIGUSR2). Both read the \
pid file (default /run/keepalive/keepalive.pid, the daemon's --pid-file in the \
systemd unit) and signal only a running keepalive.

Exit codes: 0 normal stop, valid file (--check) or signal sent; 1 runtime \
error, or no running daemon to signal; 2 invalid command line or \
configuration.";

#[derive(Debug, Parser)]
#[command(
    name = "keepalive",
    version,
    about = "VRRPv3 front-end failover for IPVS directors",
    args_conflicts_with_subcommands = true,
    after_long_help = AFTER_HELP
)]
struct Args {
    #[command(subcommand)]
    command: Option<Cmd>,
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
    /// Write the daemon's pid to this file (removed at exit), for `keepalive
    /// drain|resume`. Refuses to start while it names a running keepalive.
    #[arg(long, value_name = "PATH")]
    pid_file: Option<PathBuf>,
    /// Print the man page (roff, section 8) and exit (for packaging).
    #[arg(long, hide = true)]
    man: bool,
}

#[derive(Debug, Subcommand)]
enum Cmd {
    /// Withdraw the running daemon's bgp: groups (SIGUSR1) until `resume`;
    /// VRRP and the IPVS sync daemons are unaffected.
    Drain(Target),
    /// Announce the running daemon's healthy bgp: groups again (SIGUSR2).
    Resume(Target),
}

#[derive(Debug, clap::Args)]
struct Target {
    /// The running daemon's pid file (as given to its --pid-file).
    #[arg(long, value_name = "PATH", default_value = pidfile::DEFAULT_PATH)]
    pid_file: PathBuf,
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
    match &args.command {
        Some(Cmd::Drain(t)) => send(t, Request::Drain),
        Some(Cmd::Resume(t)) => send(t, Request::Resume),
        None => daemon(args),
    }
}

/// `keepalive drain|resume`: signal the daemon; say what was done.
fn send(t: &Target, req: Request) -> ExitCode {
    let (verb, what) = match req {
        Request::Drain => (
            "drain",
            "its bgp: groups are withdrawn until `keepalive resume`",
        ),
        Request::Resume => ("resume", "its healthy bgp: groups are announced again"),
    };
    match pidfile::signal_daemon(&t.pid_file, req) {
        Ok(pid) => {
            println!(
                "keepalive {verb}: sent {} to keepalive pid {pid} (from {}); {what} (a daemon \
                 without a bgp: section ignores it: see its log)",
                req.signal(),
                t.pid_file.display()
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("keepalive {verb}: {e}");
            ExitCode::from(1)
        }
    }
}

fn init_logging(args: &Args) -> Result<(), String> {
    let filter = args
        .log_level
        .clone()
        .or_else(|| std::env::var("RUST_LOG").ok())
        .unwrap_or_else(|| "info".into());
    let filter = tracing_subscriber::EnvFilter::try_new(&filter)
        .map_err(|e| format!("invalid log filter {filter:?}: {e}"))?;
    // Colours only for a terminal, not in files or the journal.
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_writer(std::io::stderr);
    match args.log_format {
        LogFormat::Json => builder.json().init(),
        LogFormat::Text => builder.init(),
    }
    Ok(())
}

/// `--check`: what the file configures.
fn check_summary(args: &Args, cfg: &Config) -> String {
    let bgp = cfg.bgp.as_ref().map_or(String::new(), |b| {
        let sync = b.ipvs_sync.as_ref().map_or(String::new(), |m| {
            format!(", full-mesh IPVS sync on {}", m.interface)
        });
        format!(
            ", {} BGP group(s) to {} neighbor(s){sync}",
            b.groups.len(),
            b.neighbors.len()
        )
    });
    format!(
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
    )
}

/// Before the runtime and the IPVS worker exist, so that both the event
/// loop (this thread) and the worker start from the chosen setting.
fn set_scheduling(cfg: &Config) {
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
}

/// No subcommand: validate (`--check`) or run the daemon.
fn daemon(args: Args) -> ExitCode {
    if let Err(e) = init_logging(&args) {
        eprintln!("keepalive: {e}");
        return ExitCode::from(2);
    }
    let cfg = match Config::load(&args.config) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("keepalive: {e}");
            return ExitCode::from(2);
        }
    };
    if args.check {
        println!("{}", check_summary(&args, &cfg));
        return ExitCode::SUCCESS;
    }
    set_scheduling(&cfg);
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
        // Signals first: once the pid file exists, `keepalive drain` may
        // send SIGUSR1, whose default action would end the process.
        let signals = keepalive::daemon::Signals::new()?;
        let _pid = match &args.pid_file {
            Some(p) => Some(PidFile::create(p).map_err(anyhow::Error::msg)?),
            None => None,
        };
        let d = keepalive::daemon::Daemon::new(cfg, args.config.clone(), backend)?;
        d.run_with(signals).await
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
