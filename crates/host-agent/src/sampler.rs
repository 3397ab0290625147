//! Two readings a period apart make a report: CPU use as a rate, PSI as
//! the kernel's own 10 s average.

use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Instant;

use load_feedback::{Report, VmLoad};

use crate::procfs::{
    cgroup_capacity, cgroup_usage_usec, cpu_times, psi_some_avg10, CpuTimes, ReadError,
};

/// A VM the host runs: its addresses and its cgroup (v2) directory.
#[derive(Debug, Clone, PartialEq)]
pub struct VmSource {
    /// Addresses the directors' destinations name.
    pub addrs: Vec<IpAddr>,
    /// Its cgroup, for CPU use and pressure (`None`: not measured).
    pub cgroup: Option<PathBuf>,
}

/// The previous reading.
struct Reading {
    at: Instant,
    cpu: CpuTimes,
    /// Per VM, its cgroup's `usage_usec` (if readable).
    vm_usage: Vec<Option<u64>>,
    /// The host cgroup's `usage_usec` (with a host cgroup).
    host_usage: Option<u64>,
}

/// Samples a host and its VMs.
pub struct Sampler {
    host: String,
    proc_root: PathBuf,
    vms: Vec<VmSource>,
    host_cgroup: Option<PathBuf>,
    prev: Option<Reading>,
}

impl Sampler {
    /// A sampler of host `host` reading procfs under `proc_root` (`/proc`).
    pub fn new(host: String, proc_root: PathBuf, vms: Vec<VmSource>) -> Self {
        Sampler {
            host,
            proc_root,
            vms,
            host_cgroup: None,
            prev: None,
        }
    }

    /// Measures the host as the cgroup `cg` (v2) rather than the whole
    /// machine: its CPU use against its `cpu.max` (or all CPUs), its
    /// `cpu.pressure` and `io.pressure`. For a host that is a slice of a
    /// bigger machine (a lab's hosts sharing one kernel, a partitioned
    /// server).
    pub fn with_host_cgroup(mut self, cg: Option<PathBuf>) -> Self {
        self.host_cgroup = cg;
        self
    }

    /// Replaces the VM list (a VM started, stopped or moved here); their
    /// CPU rates restart from the next sample.
    pub fn set_vms(&mut self, vms: Vec<VmSource>) {
        self.vms = vms;
        if let Some(p) = &mut self.prev {
            p.vm_usage = vec![None; self.vms.len()];
        }
    }

    /// Reads everything at `now`; returns the report over the interval
    /// since the previous sample (`None` on the first). The host's CPU
    /// times must be readable; a host without PSI reports pressure 0, a VM
    /// whose cgroup cannot be read reports 0.
    pub fn sample(&mut self, now: Instant) -> Result<Option<Report>, ReadError> {
        let cpu = cpu_times(&self.proc_root)?;
        let vm_usage: Vec<Option<u64>> = self
            .vms
            .iter()
            .map(|v| v.cgroup.as_ref().and_then(|c| cgroup_usage_usec(c).ok()))
            .collect();
        let host_usage = match &self.host_cgroup {
            Some(c) => Some(cgroup_usage_usec(c)?),
            None => None,
        };
        let reading = Reading {
            at: now,
            cpu,
            vm_usage,
            host_usage,
        };
        let Some(prev) = self.prev.replace(reading) else {
            return Ok(None);
        };
        let cur = self.prev.as_ref().unwrap_or(&prev);
        let secs = cur.at.saturating_duration_since(prev.at).as_secs_f64();
        let pressure = |f: &str| {
            let p = match &self.host_cgroup {
                Some(c) => c.join(format!("{f}.pressure")),
                None => self.proc_root.join("pressure").join(f),
            };
            psi_some_avg10(&p).unwrap_or(0.0)
        };
        let host_cpu = match (&self.host_cgroup, cur.host_usage, prev.host_usage) {
            (Some(c), Some(b), Some(a)) if secs > 0.0 => {
                let cpus = cgroup_capacity(&self.proc_root, c)?;
                (b.saturating_sub(a) as f64 / 1e6 / secs / cpus).clamp(0.0, 1.0)
            }
            (Some(_), _, _) => 0.0,
            (None, _, _) => cur.cpu.busy_since(&prev.cpu),
        };
        let vms = self
            .vms
            .iter()
            .enumerate()
            .map(|(i, v)| {
                let used = match (
                    cur.vm_usage.get(i).copied().flatten(),
                    prev.vm_usage.get(i).copied().flatten(),
                ) {
                    (Some(b), Some(a)) if secs > 0.0 => b.saturating_sub(a) as f64 / 1e6 / secs,
                    _ => 0.0,
                };
                VmLoad {
                    addrs: v.addrs.clone(),
                    cpu: used.min(65536.0),
                    psi_cpu: v
                        .cgroup
                        .as_ref()
                        .and_then(|c| psi_some_avg10(&c.join("cpu.pressure")).ok())
                        .unwrap_or(0.0),
                }
            })
            .collect();
        Ok(Some(Report {
            host: self.host.clone(),
            cpu: host_cpu,
            psi_cpu: pressure("cpu"),
            psi_io: pressure("io"),
            vms,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;
    use std::time::Duration;

    /// A fake procfs and cgroup tree in a fresh directory.
    fn tree(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("host-agent-{tag}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        fs::create_dir_all(d.join("proc/pressure")).unwrap();
        fs::create_dir_all(d.join("cg/vm1")).unwrap();
        d
    }

    fn write(d: &std::path::Path, f: &str, s: &str) {
        fs::write(d.join(f), s).unwrap();
    }

    #[test]
    fn two_samples_make_a_report_of_rates() {
        let d = tree("rates");
        write(&d, "proc/stat", "cpu  100 0 100 800 0 0 0 0\n");
        write(
            &d,
            "proc/pressure/cpu",
            "some avg10=20.00 avg60=0 avg300=0 total=1\n",
        );
        write(&d, "cg/vm1/cpu.stat", "usage_usec 1000000\n");
        write(
            &d,
            "cg/vm1/cpu.pressure",
            "some avg10=5.50 avg60=0 avg300=0 total=1\n",
        );
        let vm = VmSource {
            addrs: vec!["10.1.1.1".parse().unwrap()],
            cgroup: Some(d.join("cg/vm1")),
        };
        let unmeasured = VmSource {
            addrs: vec!["10.1.1.2".parse().unwrap()],
            cgroup: None,
        };
        let mut s = Sampler::new("h1".into(), d.join("proc"), vec![vm, unmeasured]);
        let t0 = Instant::now();
        assert_eq!(s.sample(t0).unwrap(), None, "the first sample has no rate");
        write(&d, "proc/stat", "cpu  400 0 200 1200 0 0 0 0\n");
        write(&d, "cg/vm1/cpu.stat", "usage_usec 4000000\n");
        let r = s.sample(t0 + Duration::from_secs(2)).unwrap().unwrap();
        assert!((r.cpu - 0.5).abs() < 1e-9, "{}", r.cpu);
        assert_eq!((r.psi_cpu, r.psi_io), (20.0, 0.0), "no io file: 0");
        assert!((r.vms[0].cpu - 1.5).abs() < 1e-9, "3 s of CPU in 2 s");
        assert_eq!(r.vms[0].psi_cpu, 5.5);
        assert_eq!((r.vms[1].cpu, r.vms[1].psi_cpu), (0.0, 0.0));
        r.check().unwrap();
        assert_eq!(r.agent_check_line(), "50%\n");
        let _ = fs::remove_dir_all(&d);
    }

    #[test]
    fn a_host_cgroup_is_measured_against_its_limit() {
        let d = tree("hostcg");
        fs::create_dir_all(d.join("cg/host")).unwrap();
        write(
            &d,
            "proc/stat",
            "cpu  100 0 100 800 0 0 0 0\ncpu0 1 1 1 1\ncpu1 1 1 1 1\n",
        );
        write(&d, "cg/host/cpu.stat", "usage_usec 0\n");
        write(&d, "cg/host/cpu.max", "100000 100000\n");
        write(
            &d,
            "cg/host/cpu.pressure",
            "some avg10=30.00 avg60=0 avg300=0 total=1\n",
        );
        let mut s = Sampler::new("h1".into(), d.join("proc"), vec![])
            .with_host_cgroup(Some(d.join("cg/host")));
        let t0 = Instant::now();
        assert_eq!(s.sample(t0).unwrap(), None);
        write(&d, "cg/host/cpu.stat", "usage_usec 1500000\n");
        let r = s.sample(t0 + Duration::from_secs(2)).unwrap().unwrap();
        assert!(
            (r.cpu - 0.75).abs() < 1e-9,
            "1.5 s of one CPU's limit in 2 s: {}",
            r.cpu
        );
        assert_eq!((r.psi_cpu, r.psi_io), (30.0, 0.0));
        fs::remove_file(d.join("cg/host/cpu.max")).unwrap();
        write(&d, "cg/host/cpu.stat", "usage_usec 3500000\n");
        let r = s.sample(t0 + Duration::from_secs(4)).unwrap().unwrap();
        assert!(
            (r.cpu - 0.5).abs() < 1e-9,
            "2 s in 2 s of 2 CPUs: {}",
            r.cpu
        );
        fs::remove_file(d.join("cg/host/cpu.stat")).unwrap();
        assert!(
            s.sample(t0 + Duration::from_secs(6)).is_err(),
            "an unreadable host cgroup is an error"
        );
        let _ = fs::remove_dir_all(&d);
    }

    #[test]
    fn an_unreadable_host_is_an_error_naming_the_file() {
        let d = tree("bad");
        let mut s = Sampler::new("h1".into(), d.join("proc"), vec![]);
        let e = s.sample(Instant::now()).unwrap_err();
        assert!(e.to_string().contains("proc/stat"), "{e}");
        let _ = fs::remove_dir_all(&d);
    }
}
