//! `host-agent`: runs on a physical host, samples its CPU use and pressure
//! and its VMs', and answers directors (and HAProxy's agent-check) on one
//! TCP port (see `serve.rs` for the protocol).

use std::net::{IpAddr, SocketAddr, TcpListener};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Parser;
use host_agent::{Latest, Sampler, VmSource};

/// Report this host's load and VMs to the directors.
#[derive(Parser, Debug)]
#[command(version, about)]
struct Args {
    /// This host's name, as in the cluster file's `hosts:`.
    #[arg(long)]
    host: String,
    /// Address and port to answer on.
    #[arg(long, default_value = "0.0.0.0:7070")]
    listen: SocketAddr,
    /// A VM run here: its addresses, comma-separated, and optionally
    /// `=CGROUP`, its cgroup v2 directory (repeatable).
    #[arg(long = "vm", value_name = "ADDR[,ADDR...][=CGROUP]", value_parser = parse_vm)]
    vms: Vec<VmSource>,
    /// Sampling period in milliseconds.
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(100..=60000))]
    period_ms: u64,
    /// Where procfs is mounted.
    #[arg(long, default_value = "/proc", hide = true)]
    proc_root: PathBuf,
}

fn parse_vm(s: &str) -> Result<VmSource, String> {
    let (addrs, cgroup) = match s.split_once('=') {
        Some((a, c)) if !c.is_empty() => (a, Some(PathBuf::from(c))),
        Some(_) => return Err("empty cgroup after '='".into()),
        None => (s, None),
    };
    let addrs = addrs
        .split(',')
        .map(|a| {
            a.trim().parse::<IpAddr>().map_err(|_| {
                format!("{a:?} is not an IP address (expected ADDR[,ADDR...][=CGROUP])")
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(VmSource { addrs, cgroup })
}

fn main() -> ExitCode {
    let a = Args::parse();
    let period = Duration::from_millis(a.period_ms);
    let mut sampler = Sampler::new(a.host.clone(), a.proc_root.clone(), a.vms.clone());
    let latest = Arc::new(Latest::default());
    // Two samples before listening: a report exists from the first answer.
    let first = sampler.sample(Instant::now()).and_then(|_| {
        std::thread::sleep(period.min(Duration::from_millis(500)));
        sampler.sample(Instant::now())
    });
    match first {
        Ok(Some(r)) => latest.set(r),
        Ok(None) => {}
        Err(e) => {
            eprintln!("host-agent: cannot sample this host: {e}");
            return ExitCode::from(1);
        }
    }
    let listener = match TcpListener::bind(a.listen) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("host-agent: cannot listen on {}: {e} (another agent running? --listen picks the address)", a.listen);
            return ExitCode::from(1);
        }
    };
    eprintln!(
        "host-agent: host {} with {} VMs, answering on {}",
        a.host,
        a.vms.len(),
        a.listen
    );
    let srv = latest.clone();
    std::thread::spawn(move || {
        std::thread::sleep(period);
        loop {
            match sampler.sample(Instant::now()) {
                Ok(Some(r)) => srv.set(r),
                Ok(None) => {}
                Err(e) => {
                    srv.clear();
                    eprintln!("host-agent: sampling failed: {e}");
                }
            }
            std::thread::sleep(period);
        }
    });
    match host_agent::serve(listener, latest) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("host-agent: accepting connections failed: {e}");
            ExitCode::from(1)
        }
    }
}
