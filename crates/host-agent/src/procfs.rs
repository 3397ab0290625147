//! Parsing the kernel's accounting files: `/proc/stat`, the PSI files
//! (`/proc/pressure/*`, a cgroup's `cpu.pressure`) and a cgroup's
//! `cpu.stat`. Each parser takes the file's text, so it is tested on
//! captured contents; each reader names the file in its error.

use std::fmt;
use std::path::{Path, PathBuf};

/// A file that could not be read or did not have the expected form.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadError {
    /// The file.
    pub path: PathBuf,
    /// What went wrong.
    pub why: String,
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path.display(), self.why)
    }
}

impl std::error::Error for ReadError {}

fn read(path: &Path) -> Result<String, ReadError> {
    std::fs::read_to_string(path).map_err(|e| ReadError {
        path: path.to_path_buf(),
        why: e.to_string(),
    })
}

fn bad(path: &Path, why: &str) -> ReadError {
    ReadError {
        path: path.to_path_buf(),
        why: why.to_string(),
    }
}

/// The host's CPU time in clock ticks, from the `cpu` line of `/proc/stat`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CpuTimes {
    /// Ticks spent idle or waiting for IO.
    pub idle: u64,
    /// All ticks (busy and idle; guest time is already in user).
    pub total: u64,
}

impl CpuTimes {
    /// Busy fraction between `earlier` and `self` (0 to 1; 0 if no tick passed).
    pub fn busy_since(&self, earlier: &CpuTimes) -> f64 {
        let total = self.total.saturating_sub(earlier.total);
        let idle = self.idle.saturating_sub(earlier.idle).min(total);
        if total == 0 {
            0.0
        } else {
            (total - idle) as f64 / total as f64
        }
    }
}

/// Parses the first (`cpu`) line of `/proc/stat`: user nice system idle
/// iowait irq softirq steal [guest guest_nice]; guest times are counted in
/// user already, so they are not added.
pub fn parse_cpu_times(text: &str) -> Option<CpuTimes> {
    let line = text.lines().find(|l| l.starts_with("cpu "))?;
    let v: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .map(|x| x.parse().ok())
        .collect::<Option<_>>()?;
    if v.len() < 4 {
        return None;
    }
    let upto = v.len().min(8);
    let total = v
        .get(..upto)?
        .iter()
        .try_fold(0u64, |a, &x| a.checked_add(x))?;
    let idle = v.get(3)? + v.get(4).copied().unwrap_or(0);
    Some(CpuTimes { idle, total })
}

/// Parses the `some avg10=` figure of a PSI file (0 to 100).
pub fn parse_psi_some_avg10(text: &str) -> Option<f64> {
    let line = text.lines().find(|l| l.starts_with("some "))?;
    let v = line
        .split_whitespace()
        .find_map(|kv| kv.strip_prefix("avg10="))?
        .parse::<f64>()
        .ok()?;
    (v.is_finite() && (0.0..=100.0).contains(&v)).then_some(v)
}

/// Parses `usage_usec` of a cgroup's `cpu.stat`.
pub fn parse_usage_usec(text: &str) -> Option<u64> {
    text.lines()
        .find_map(|l| l.strip_prefix("usage_usec "))?
        .trim()
        .parse()
        .ok()
}

/// The CPUs a cgroup may use from its `cpu.max` (`"QUOTA PERIOD"`;
/// `None` for `"max ..."`, no limit).
pub fn parse_cpu_max(text: &str) -> Option<f64> {
    let mut it = text.split_whitespace();
    let quota = it.next()?.parse::<u64>().ok()?;
    let period = it.next()?.parse::<u64>().ok()?;
    (quota > 0 && period > 0).then(|| quota as f64 / period as f64)
}

/// The number of `cpuN` lines of `/proc/stat` (the online CPUs).
pub fn parse_cpu_count(text: &str) -> usize {
    text.lines()
        .filter(|l| l.starts_with("cpu") && l.as_bytes().get(3).is_some_and(u8::is_ascii_digit))
        .count()
}

/// How many CPUs a cgroup's usage is measured against: its `cpu.max`
/// limit if it has one, else the host's online CPUs (at least 1).
pub fn cgroup_capacity(proc_root: &Path, cgroup: &Path) -> Result<f64, ReadError> {
    let limit = std::fs::read_to_string(cgroup.join("cpu.max"))
        .ok()
        .and_then(|t| parse_cpu_max(&t));
    if let Some(l) = limit {
        return Ok(l);
    }
    let p = proc_root.join("stat");
    Ok(parse_cpu_count(&read(&p)?).max(1) as f64)
}

/// `/proc/stat`'s CPU times under `proc_root` (normally `/proc`).
pub fn cpu_times(proc_root: &Path) -> Result<CpuTimes, ReadError> {
    let p = proc_root.join("stat");
    parse_cpu_times(&read(&p)?).ok_or_else(|| bad(&p, "no well-formed \"cpu\" line"))
}

/// `some avg10` of a PSI file (`/proc/pressure/cpu`, a cgroup's `cpu.pressure`).
pub fn psi_some_avg10(path: &Path) -> Result<f64, ReadError> {
    parse_psi_some_avg10(&read(path)?).ok_or_else(|| {
        bad(
            path,
            "no \"some avg10=\" figure in 0..100 (is the kernel built with CONFIG_PSI, psi=1?)",
        )
    })
}

/// `usage_usec` of the cgroup (v2) directory `cgroup`.
pub fn cgroup_usage_usec(cgroup: &Path) -> Result<u64, ReadError> {
    let p = cgroup.join("cpu.stat");
    parse_usage_usec(&read(&p)?).ok_or_else(|| bad(&p, "no \"usage_usec\" line"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_max_and_count() {
        assert_eq!(parse_cpu_max("50000 100000\n"), Some(0.5));
        assert_eq!(parse_cpu_max("max 100000\n"), None);
        assert_eq!(parse_cpu_max("0 100000"), None);
        assert_eq!(parse_cpu_max(""), None);
        let stat = "cpu  1 2 3 4\ncpu0 1 1 1 1\ncpu1 1 1 1 1\ncpufreq x\nintr 5\n";
        assert_eq!(parse_cpu_count(stat), 2);
    }

    #[test]
    fn proc_stat_cpu_line() {
        let text = "cpu  100 5 50 800 45 0 0 0 10 0\ncpu0 50 2 25 400 20 0 0 0 5 0\nintr 1\n";
        let t = parse_cpu_times(text).unwrap();
        assert_eq!(
            t,
            CpuTimes {
                idle: 845,
                total: 1000
            }
        );
        let later = CpuTimes {
            idle: 945,
            total: 1200,
        };
        assert!((later.busy_since(&t) - 0.5).abs() < 1e-9);
        assert_eq!(t.busy_since(&t), 0.0);
        assert_eq!(
            t.busy_since(&later),
            0.0,
            "counters going back: 0, not a panic"
        );
        for bad in ["", "cpu0 1 2 3 4\n", "cpu  1 2 x 4\n", "cpu  1 2\n"] {
            assert_eq!(parse_cpu_times(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn psi_and_cgroup_files() {
        let psi = "some avg10=12.34 avg60=5.00 avg300=1.00 total=123456\nfull avg10=1.00 avg60=0.00 avg300=0.00 total=1\n";
        assert_eq!(parse_psi_some_avg10(psi), Some(12.34));
        assert_eq!(parse_psi_some_avg10("some avg10=101.00 total=1\n"), None);
        assert_eq!(parse_psi_some_avg10("full avg10=1.00\n"), None);
        let stat = "usage_usec 5000000\nuser_usec 4000000\nsystem_usec 1000000\n";
        assert_eq!(parse_usage_usec(stat), Some(5_000_000));
        assert_eq!(parse_usage_usec("user_usec 1\n"), None);
    }

    #[test]
    fn readers_name_the_file_in_errors() {
        let e = cpu_times(Path::new("/nonexistent-proc")).unwrap_err();
        assert!(e.to_string().starts_with("/nonexistent-proc/stat: "), "{e}");
        let e = cgroup_usage_usec(Path::new("/nonexistent-cg")).unwrap_err();
        assert!(e.to_string().contains("cpu.stat"), "{e}");
    }

    #[test]
    fn this_machine_can_be_read() {
        // /proc/stat exists wherever the tests run (Linux).
        let t = cpu_times(Path::new("/proc")).unwrap();
        assert!(t.total > 0 && t.idle <= t.total);
    }
}
