//! The YAML configuration file (`keepalive -c FILE`).
//!
//! Field values are checked while deserializing (validating newtypes in
//! [`values`]), so a bad value is reported with its file, line, column and
//! path, e.g. `keepalive.yaml:4:11: vrrp[0].vrid: vrid must be 1..=255, got 0`.
//! Cross-field rules (unique names and VRIDs, one address family per
//! instance, …) are checked afterwards ([`vrrp::validate`],
//! [`checks::validate`]) and name the offending entry by path.
//!
//! The `services:`, `hosts:` and `options:` sections are those of an
//! `ipvsctl apply` file: they are read as `ipvs-cluster` types in the same
//! pass, validated (errors located in this file) and kept as the typed
//! desired state that the IPVS worker applies.

mod bgp;
mod checks;
mod feedback;
mod source;
mod values;
mod vrrp;

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use serde::Deserialize;

use ::vrrp::packet::ChecksumForm;
use ipvs_cluster::{ClusterSpec, Desired, HostSpec, ServiceSpec};

pub use bgp::{BfdTimers, Bgp, MeshSync, Neighbor, VipGroup};
pub use checks::{CheckKind, HealthCheck, OnFailure, Statuses};
pub use feedback::{FeedbackMode, LoadFeedback};
pub use source::{ClusterSourceConfig, EtcdSource};
pub use values::{
    AdvertIntervalMs, Asn, BfdMultiplier, Cidr, Command, Count, HostRoute, IfName, Millis,
    Priority, RtPriority, SyncId, Ttl, Vrid, VrrpVersion, Weight,
};
pub use vrrp::{Instance, IpvsSync, Notify, SyncGroup, TrackInterface, TrackScript, TtlRange};

/// A configuration error with a location (path and, where known, line/column).
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{path}: cannot read: {err}")]
    Io { path: String, err: std::io::Error },
    #[error("{file}: {msg}")]
    Invalid { file: String, msg: String },
    /// Errors with positions, each line `FILE:LINE:COL: PATH: MESSAGE`.
    #[error("{0}")]
    Located(String),
}

/// What a failed IPVS apply does to the VRRP role (`global.ipvs_apply_failure`).
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum ApplyFailure {
    /// Keep the role; the apply is retried with back-off.
    #[default]
    KeepRole,
    /// Stay (or become) BACKUP until the table is applied: a front end
    /// without its services never takes the VIPs.
    Demote,
}

/// Global settings.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Global {
    /// Address of the Prometheus metrics endpoint (`GET /metrics`); none = off.
    #[serde(default)]
    pub metrics_listen: Option<SocketAddr>,
    /// IPv4 checksum form to send (both are always accepted).
    #[serde(default = "default_checksum")]
    pub checksum: ChecksumForm,
    /// Gratuitous ARP / unsolicited NA packets per announcement.
    #[serde(default = "default_garp_repeat")]
    pub garp_repeat: Count,
    /// Spacing of the repeats.
    #[serde(default = "default_garp_interval")]
    pub garp_interval_ms: Millis,
    /// After becoming master, repeat the announcement once more after this delay (0 = off).
    #[serde(default = "default_garp_refresh")]
    pub garp_master_delay_ms: Millis,
    /// Run the VRRP event loop with this SCHED_FIFO priority (1-99, like
    /// keepalived's `vrrp_rt_priority`); none = normal scheduling. With
    /// advert intervals of a few ms on a busy machine, an ordinary process
    /// can be kept off the CPU past the master-down interval and a backup
    /// then takes over although the master is alive. Applied at start.
    #[serde(default)]
    pub realtime_priority: Option<RtPriority>,
    /// Lock the daemon's memory (mlockall) so that paging never delays an
    /// advert. Applied at start.
    #[serde(default)]
    pub lock_memory: bool,
    /// What a failed IPVS apply does to the VRRP role (retries go on either way).
    #[serde(default)]
    pub ipvs_apply_failure: ApplyFailure,
}

fn default_checksum() -> ChecksumForm {
    ChecksumForm::PseudoHeader
}
fn default_garp_repeat() -> Count {
    Count(3)
}
fn default_garp_interval() -> Millis {
    Millis(50)
}
/// The repeated burst is for neighbours that missed the first one (a lost
/// frame, a switch still learning the port). ARP `locktime` is no reason for
/// it: Linux applies a gratuitous ARP request (sender IP = target IP, as sent
/// here) to an existing entry even within locktime (`arp_is_garp()` in
/// net/ipv4/arp.c); the SIGTERM traces of scripts/bench-failover.sh show the
/// client's entry switching at the first frame.
fn default_garp_refresh() -> Millis {
    Millis(1100)
}

impl Default for Global {
    fn default() -> Self {
        Global {
            metrics_listen: None,
            checksum: default_checksum(),
            garp_repeat: default_garp_repeat(),
            garp_interval_ms: default_garp_interval(),
            garp_master_delay_ms: default_garp_refresh(),
            realtime_priority: None,
            lock_memory: false,
            ipvs_apply_failure: ApplyFailure::KeepRole,
        }
    }
}

/// The file as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    global: Global,
    #[serde(default)]
    vrrp: Vec<Instance>,
    #[serde(default)]
    sync_groups: Vec<SyncGroup>,
    #[serde(default)]
    health_checks: Vec<HealthCheck>,
    #[serde(default)]
    cluster_source: Option<ClusterSourceConfig>,
    #[serde(default)]
    bgp: Option<Bgp>,
    #[serde(default)]
    load_feedback: Option<LoadFeedback>,
    #[serde(default)]
    services: Option<Vec<ServiceSpec>>,
    #[serde(default)]
    hosts: Option<Vec<HostSpec>>,
    #[serde(default)]
    options: ipvs_cluster::Options,
}

/// The whole configuration, validated.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    pub global: Global,
    pub vrrp: Vec<Instance>,
    pub sync_groups: Vec<SyncGroup>,
    pub health_checks: Vec<HealthCheck>,
    /// The IPVS services and host map to keep applied (None: the file has
    /// neither `services:` nor `hosts:`).
    pub cluster: Option<Arc<Desired>>,
    /// Where they come from instead (etcd); excludes `cluster`.
    pub cluster_source: Option<ClusterSourceConfig>,
    /// VIPs announced by BGP (through BIRD).
    pub bgp: Option<Bgp>,
    /// Host agents whose reports move the weights.
    pub load_feedback: Option<LoadFeedback>,
}

impl Config {
    /// Parse and validate YAML text. `file` names the source in messages.
    pub fn parse(text: &str, file: &str) -> Result<Config, ConfigError> {
        if text.trim().is_empty() {
            return Err(ConfigError::Invalid {
                file: file.to_string(),
                msg: "empty configuration".into(),
            });
        }
        let located = |errs: &[ipvs_cluster::ConfigError]| {
            let lines: Vec<String> = errs.iter().map(|e| e.in_file(file)).collect();
            ConfigError::Located(lines.join("\n"))
        };
        let f: File = ipvs_cluster::yaml::from_str(text).map_err(|e| located(&[e]))?;
        let spec = ClusterSpec {
            services: f.services,
            hosts: f.hosts,
            options: f.options,
        };
        let cfg = Config {
            global: f.global,
            vrrp: f.vrrp,
            sync_groups: f.sync_groups,
            health_checks: f.health_checks,
            cluster: None,
            cluster_source: f.cluster_source,
            bgp: f.bgp,
            load_feedback: f.load_feedback,
        };
        let has_cluster = spec.services.is_some() || spec.hosts.is_some();
        let host_names: Option<Vec<String>> = match (&spec.hosts, &cfg.cluster_source) {
            (_, Some(_)) => None,
            (Some(h), None) => Some(h.iter().map(|h| h.name.clone()).collect()),
            (None, None) => Some(vec![]),
        };
        cfg.validate()
            .and_then(|()| source::validate(cfg.cluster_source.as_ref(), has_cluster))
            .and_then(|()| match &cfg.load_feedback {
                Some(f) => feedback::validate(f, host_names.as_deref()),
                None => Ok(()),
            })
            .map_err(|msg| ConfigError::Invalid {
                file: file.to_string(),
                msg,
            })?;
        let cluster = if spec.services.is_some() || spec.hosts.is_some() {
            Some(Arc::new(
                ipvs_cluster::check(&spec, text).map_err(|e| located(&e))?,
            ))
        } else {
            None
        };
        Ok(Config { cluster, ..cfg })
    }

    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|err| ConfigError::Io {
            path: path.display().to_string(),
            err,
        })?;
        Config::parse(&text, &path.display().to_string())
    }

    fn validate(&self) -> Result<(), String> {
        vrrp::validate(&self.vrrp, &self.sync_groups)?;
        if let Some(b) = &self.bgp {
            bgp::validate(b)?;
            bgp::validate_sync_owner(b, &self.vrrp)?;
        }
        checks::validate(&self.health_checks)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    const GOOD: &str = r#"
global:
  metrics_listen: 127.0.0.1:9650
  checksum: message_only
vrrp:
  - name: VI_1
    interface: eth0
    vrid: 51
    priority: 150
    advert_interval_ms: 100
    virtual_ips: [192.0.2.10/24, 192.0.2.11]
    preempt_delay_ms: 500
    unicast_peers: [10.0.0.2]
    ipvs_sync: { interface: eth1, syncid: 7 }
    notify:
      master: "logger master"
      any: [/usr/bin/env]
  - name: VI_6
    interface: eth0
    vrid: 51
    virtual_ips: ["fe80::51/64", "2001:db8::10/64"]
health_checks:
  - real_server: 10.1.0.11:80
    type: http
    path: /healthz
    expected_status: [200, 204]
    interval_ms: 1000
    timeout_ms: 500
    rise: 2
    fall: 2
  - real_server: 10.1.0.12:80
    type: exec
    command: "true"
    on_failure: remove
services:
  - protocol: tcp
    address: 192.0.2.10
    port: 80
    scheduler: vmwlch
    dests:
      - address: 10.1.0.11
        weight: 3
      - address: 10.1.0.12
hosts:
  - name: h1
    vms: [10.1.0.11]
"#;

    #[test]
    fn parses_full_example() {
        let c = Config::parse(GOOD, "t.yaml").unwrap();
        assert_eq!(c.global.checksum, ChecksumForm::MessageOnly);
        assert_eq!(c.vrrp.len(), 2);
        let i = &c.vrrp[0];
        assert_eq!(i.vrid, Vrid(51));
        assert_eq!(i.advert_interval_ms.centis(), 10);
        assert!(i.preempt);
        assert_eq!(i.preempt_delay(), Duration::from_millis(500));
        assert_eq!(i.virtual_ips[1].prefix, 32);
        assert_eq!(i.notify.master.as_ref().unwrap().0[0], "/bin/sh");
        assert!(c.vrrp[1].is_ipv6());
        assert_eq!(c.vrrp[1].priority, Priority(100));
        assert_eq!(c.health_checks[1].on_failure, OnFailure::Remove);
        // The IPVS sections as the typed desired state.
        let d = c.cluster.as_ref().unwrap();
        let svc = &d.services.as_ref().unwrap()[0];
        assert_eq!(svc.0.scheduler, "vmwlch");
        assert_eq!(svc.1.len(), 2);
        assert_eq!(svc.1[0].weight, 3);
        assert_eq!(d.hosts.as_ref().unwrap()[0].name, "h1");
    }

    #[test]
    fn example_file_is_valid() {
        let c = Config::parse(
            include_str!("../keepalive.example.yaml"),
            "keepalive.example.yaml",
        )
        .unwrap();
        assert_eq!(c.vrrp.len(), 2);
        assert_eq!(c.health_checks.len(), 4);
        assert!(c.cluster.is_some());
    }

    fn err(text: &str) -> String {
        Config::parse(text, "t.yaml").unwrap_err().to_string()
    }

    #[test]
    fn located_value_errors() {
        let e = err(
            "vrrp:\n  - name: a\n    interface: eth0\n    vrid: 0\n    virtual_ips: [10.0.0.1]\n",
        );
        assert!(
            e.contains("t.yaml:4:11: vrrp[0].vrid") && e.contains("1..=255"),
            "{e}"
        );
        let e = err("vrrp:\n  - name: a\n    interface: eth0\n    vrid: 1\n    advert_interval_ms: 15\n    virtual_ips: [10.0.0.1]\n");
        assert!(
            e.contains("advert_interval_ms") && e.contains("t.yaml:5:"),
            "{e}"
        );
        let e = err("vrrp:\n  - name: a\n    interface: eth0\n    vrid: 1\n    virtual_ips: [10.0.0.1/33]\n");
        assert!(e.contains("prefix") && e.contains("t.yaml:5:"), "{e}");
        let e = err("vrrp:\n  - name: a\n    interface: eth0\n    vrid: 1\n    virtual_ips: [10.0.0.1]\n    colour: red\n");
        assert!(
            e.contains("unknown field `colour`") && e.contains("t.yaml:6:"),
            "{e}"
        );
        let e = err("vrrp:\n  - name: a\n    interface: eth0\n    vrid: 1\n    priority: 256\n    virtual_ips: [10.0.0.1]\n");
        assert!(e.contains("priority must be 1..=255"), "{e}");
    }

    #[test]
    fn cross_field_errors() {
        let base =
            "vrrp:\n  - name: a\n    interface: eth0\n    vrid: 1\n    virtual_ips: [10.0.0.1]\n";
        let e = err(&format!(
            "{base}  - name: a\n    interface: eth1\n    vrid: 2\n    virtual_ips: [10.0.0.2]\n"
        ));
        assert!(e.contains("vrrp[1] (a).name: duplicate"), "{e}");
        let e = err(&format!(
            "{base}  - name: b\n    interface: eth0\n    vrid: 1\n    virtual_ips: [10.0.0.2]\n"
        ));
        assert!(e.contains("VRID 1 is already used on eth0"), "{e}");
        let e = err("vrrp:\n  - name: a\n    interface: eth0\n    vrid: 1\n    virtual_ips: [10.0.0.1, '::1']\n");
        assert!(e.contains("mixes address families"), "{e}");
        let e = err("vrrp:\n  - name: a\n    interface: eth0\n    vrid: 1\n    virtual_ips: []\n");
        assert!(e.contains("at least one"), "{e}");
        let e = err("health_checks:\n  - real_server: 10.0.0.1:80\n    type: exec\n");
        assert!(e.contains("needs `command`"), "{e}");
        let e = err(
            "health_checks:\n  - real_server: 10.0.0.1:80\n    type: tcp\n    timeout_ms: 5000\n",
        );
        assert!(e.contains("timeout_ms"), "{e}");
        assert!(err("").contains("empty"));
        // the cluster model's own validation, located in the original file
        let e = err("vrrp: []\nservices:\n  - protocol: tcp\n    address: 192.0.2.1\n    port: 80\n    dests:\n      - address: 10.0.0.1\n        weight: -1\n");
        assert!(e.contains("t.yaml:8:"), "{e}");
        assert!(err("vrrp: [").contains("t.yaml"));
    }
}
