//! A host agent's report: the JSON it serves, validated, and the HAProxy
//! agent-check line derived from it.

use std::fmt;
use std::net::IpAddr;

use serde::{Deserialize, Serialize};

/// The largest report accepted (bytes): a host with thousands of VMs fits.
pub const MAX_REPORT_BYTES: usize = 1 << 20;
/// The most VMs a report may list.
pub const MAX_VMS: usize = 4096;

/// One VM as its host sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VmLoad {
    /// The VM's address(es) as the director's destinations name them.
    pub addrs: Vec<IpAddr>,
    /// The VM's CPU use in host CPUs (its cgroup's usage over the last
    /// period: 1.5 = one and a half CPUs busy).
    #[serde(default)]
    pub cpu: f64,
    /// The VM's cgroup CPU pressure, `some avg10` (% of time, 0 to 100).
    #[serde(default)]
    pub psi_cpu: f64,
}

/// What a host agent reports about its physical host.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Report {
    /// The host's name (as in the cluster file's `hosts:`).
    pub host: String,
    /// Busy fraction of the host's CPUs over the last period (0 to 1).
    pub cpu: f64,
    /// Host CPU pressure, `some avg10` of `/proc/pressure/cpu` (0 to 100).
    pub psi_cpu: f64,
    /// Host IO pressure, `some avg10` of `/proc/pressure/io` (0 to 100).
    #[serde(default)]
    pub psi_io: f64,
    /// The VMs running there.
    #[serde(default)]
    pub vms: Vec<VmLoad>,
}

/// Why a report was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadReport(pub String);

impl fmt::Display for BadReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "bad load report: {}", self.0)
    }
}

impl std::error::Error for BadReport {}

fn within(name: &str, v: f64, lo: f64, hi: f64) -> Result<(), BadReport> {
    if v.is_finite() && (lo..=hi).contains(&v) {
        Ok(())
    } else {
        Err(BadReport(format!(
            "{name} = {v} is not within [{lo}, {hi}]"
        )))
    }
}

impl Report {
    /// Parses and checks a report: JSON of the documented shape, every
    /// figure finite and within its range, at most [`MAX_VMS`] VMs. A lying
    /// or broken agent gets an error (the caller counts it and treats the
    /// host as unreported), never a weight.
    pub fn parse(text: &[u8]) -> Result<Report, BadReport> {
        if text.len() > MAX_REPORT_BYTES {
            return Err(BadReport(format!(
                "{} bytes, over the {MAX_REPORT_BYTES} accepted",
                text.len()
            )));
        }
        let r: Report =
            serde_json::from_slice(text).map_err(|e| BadReport(format!("not a report: {e}")))?;
        r.check()?;
        Ok(r)
    }

    /// The range checks of [`Report::parse`].
    pub fn check(&self) -> Result<(), BadReport> {
        if self.host.is_empty() || self.host.len() > 255 {
            return Err(BadReport("host name empty or over 255 bytes".into()));
        }
        within("cpu", self.cpu, 0.0, 1.0)?;
        within("psi_cpu", self.psi_cpu, 0.0, 100.0)?;
        within("psi_io", self.psi_io, 0.0, 100.0)?;
        if self.vms.len() > MAX_VMS {
            return Err(BadReport(format!(
                "{} VMs, over the {MAX_VMS} accepted",
                self.vms.len()
            )));
        }
        for vm in &self.vms {
            within("vm cpu", vm.cpu, 0.0, 65536.0)?;
            within("vm psi_cpu", vm.psi_cpu, 0.0, 100.0)?;
        }
        Ok(())
    }

    /// The host's load for the controller, 0 (idle) to 1 (saturated): the
    /// busier of CPU use and CPU pressure (a host can be saturated at 70 %
    /// use when its VMs wait for CPU).
    pub fn load(&self) -> f64 {
        self.cpu.max(self.psi_cpu / 100.0).clamp(0.0, 1.0)
    }

    /// The HAProxy agent-check answer: the idle share as a weight
    /// percentage (`"37%"`, at least 1 % so that load alone never drains a
    /// server; draining is the operator's), newline-terminated.
    pub fn agent_check_line(&self) -> String {
        let idle = ((1.0 - self.load()) * 100.0).round().clamp(1.0, 100.0);
        format!("{idle:.0}%\n")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"{"host":"h1","cpu":0.42,"psi_cpu":12.5,"psi_io":1.0,
        "vms":[{"addrs":["10.1.1.1","fd01::1"],"cpu":0.8,"psi_cpu":3.0}]}"#;

    #[test]
    fn a_good_report_parses_and_gives_its_load_and_agent_line() {
        let r = Report::parse(GOOD.as_bytes()).unwrap();
        assert_eq!(r.host, "h1");
        assert_eq!(r.vms[0].addrs.len(), 2);
        assert!((r.load() - 0.42).abs() < 1e-9);
        assert_eq!(r.agent_check_line(), "58%\n");
        let busy = Report {
            psi_cpu: 99.9,
            ..r.clone()
        };
        assert_eq!(
            busy.agent_check_line(),
            "1%\n",
            "never 0 %: load does not drain"
        );
    }

    #[test]
    fn garbage_huge_and_out_of_range_reports_are_refused() {
        let cases: &[&[u8]] = &[
            b"",
            b"not json",
            b"{\"host\":\"h1\"}",
            br#"{"host":"h1","cpu":1e308,"psi_cpu":0}"#,
            br#"{"host":"h1","cpu":-0.1,"psi_cpu":0}"#,
            br#"{"host":"h1","cpu":0.5,"psi_cpu":101}"#,
            br#"{"host":"","cpu":0.5,"psi_cpu":1}"#,
            br#"{"host":"h1","cpu":0.5,"psi_cpu":1,"extra":1}"#,
            br#"{"host":"h1","cpu":0.5,"psi_cpu":1,"vms":[{"addrs":["nope"]}]}"#,
        ];
        for c in cases {
            let e = Report::parse(c).unwrap_err();
            assert!(e.to_string().starts_with("bad load report: "), "{e}");
        }
        let big = vec![b' '; MAX_REPORT_BYTES + 1];
        assert!(Report::parse(&big).unwrap_err().0.contains("accepted"));
        let vms: Vec<String> = (0..=MAX_VMS)
            .map(|i| format!(r#"{{"addrs":["10.2.{}.{}"]}}"#, i / 250, i % 250))
            .collect();
        let many = format!(
            r#"{{"host":"h1","cpu":0.1,"psi_cpu":0,"vms":[{}]}}"#,
            vms.join(",")
        );
        assert!(Report::parse(many.as_bytes())
            .unwrap_err()
            .0
            .contains("VMs"));
    }
}
