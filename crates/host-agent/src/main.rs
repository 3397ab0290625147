//! `host-agent`: runs on a physical host, samples its CPU use and pressure
//! and its VMs', and answers directors (and HAProxy's agent-check) on one
//! TCP port (see `serve.rs` for the protocol).

use std::net::{SocketAddr, TcpListener};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Parser;
use host_agent::{parse_vm, Latest, Sampler, VmSource, VmsFile};

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
    /// A file listing the VMs run here, one `ADDR[,ADDR...][=CGROUP]` per
    /// line, re-read when it changes (kept by the hypervisor's hooks: a VM
    /// that moves here is reported from the next sample).
    #[arg(long, value_name = "PATH", conflicts_with = "vms")]
    vms_file: Option<PathBuf>,
    /// Measure the host as this cgroup (v2) directory rather than the whole
    /// machine: its CPU use against its cpu.max, its cpu and io pressure.
    #[arg(long, value_name = "DIR")]
    host_cgroup: Option<PathBuf>,
    /// Sampling period in milliseconds.
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(100..=60000))]
    period_ms: u64,
    /// Where procfs is mounted.
    #[arg(long, default_value = "/proc", hide = true)]
    proc_root: PathBuf,
}

fn main() -> ExitCode {
    let a = Args::parse();
    let period = Duration::from_millis(a.period_ms);
    let mut vms_file = a.vms_file.as_deref().map(VmsFile::new);
    let vms = match vms_file.as_mut().map(|f| f.changed()) {
        None => a.vms.clone(),
        Some(Ok(v)) => v.unwrap_or_default(),
        Some(Err(e)) => {
            eprintln!("host-agent: cannot read the VMs file: {e}");
            return ExitCode::from(2);
        }
    };
    let nvms = vms.len();
    let mut sampler = Sampler::new(a.host.clone(), a.proc_root.clone(), vms)
        .with_host_cgroup(a.host_cgroup.clone());
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
        a.host, nvms, a.listen
    );
    let srv = latest.clone();
    std::thread::spawn(move || {
        std::thread::sleep(period);
        let mut file_error = None;
        loop {
            if let Some(f) = vms_file.as_mut() {
                follow_vms_file(f, &mut sampler, &mut file_error);
            }
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

/// The VMs file changed: its list replaces the sampler's. A bad file keeps
/// the list (logged once per distinct error).
fn follow_vms_file(f: &mut VmsFile, sampler: &mut Sampler, last_error: &mut Option<String>) {
    match f.changed() {
        Ok(Some(vms)) => {
            eprintln!("host-agent: VMs file changed: {} VMs", vms.len());
            sampler.set_vms(vms);
            *last_error = None;
        }
        Ok(None) => {}
        Err(e) => {
            if last_error.as_deref() != Some(e.as_str()) {
                eprintln!("host-agent: keeping the VM list: {e}");
                *last_error = Some(e);
            }
        }
    }
}
