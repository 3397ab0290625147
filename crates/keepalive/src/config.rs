//! The YAML configuration file (`keepalive -c FILE`).
//!
//! Field values are checked while deserializing (validating newtypes), so a
//! bad value is reported with its file, line, column and path, e.g.
//! `keepalive.yaml:4:11: vrrp[0].vrid: vrid must be 1..=255, got 0`.
//! Cross-field rules (unique names and VRIDs, one address family per
//! instance, …) are checked afterwards and name the offending entry by path.
//!
//! The `services:`, `hosts:` and `options:` sections are those of an
//! `ipvsctl apply` file: they are read as `ipvs-cluster` types in the same
//! pass, validated (errors located in this file) and kept as the typed
//! desired state that the IPVS worker applies.

use std::collections::{BTreeMap, HashSet};
use std::fmt;
use std::net::{IpAddr, SocketAddr};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde::de::{self, Deserializer};
use serde::Deserialize;

use ipvs_cluster::{ClusterSpec, Desired, HostSpec, ServiceSpec};
use vrrp::packet::ChecksumForm;

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

/// Range-checks an integer inside the visitor, so the error has the
/// scalar's own path, line and column.
struct RangeVisitor {
    lo: i64,
    hi: i64,
    what: &'static str,
}

impl de::Visitor<'_> for RangeVisitor {
    type Value = i64;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "an integer {}..={}", self.lo, self.hi)
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<i64, E> {
        if v < self.lo || v > self.hi {
            return Err(E::custom(format!(
                "{} must be {}..={}, got {}",
                self.what, self.lo, self.hi, v
            )));
        }
        Ok(v)
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<i64, E> {
        self.visit_i64(i64::try_from(v).unwrap_or(i64::MAX))
    }
}

/// Parses a string inside the visitor (precise error locations, as above).
struct StrVisitor<F>(&'static str, F);

impl<T, F: FnOnce(&str) -> Result<T, String>> de::Visitor<'_> for StrVisitor<F> {
    type Value = T;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<T, E> {
        (self.1)(v).map_err(E::custom)
    }
}

macro_rules! ranged_int {
    ($name:ident, $t:ty, $lo:expr, $hi:expr, $what:expr) => {
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(pub $t);
        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let v = d.deserialize_i64(RangeVisitor {
                    lo: $lo,
                    hi: $hi,
                    what: $what,
                })?;
                Ok($name(v as $t))
            }
        }
    };
}

ranged_int!(Vrid, u8, 1, 255, "vrid");
ranged_int!(Priority, u8, 1, 255, "priority");
ranged_int!(SyncId, u8, 0, 255, "syncid");
ranged_int!(Count, u32, 1, 100, "count");
ranged_int!(RtPriority, u8, 1, 99, "real-time priority");
ranged_int!(Millis, u64, 0, 86_400_000, "milliseconds");

/// Advertisement interval in ms: a multiple of 10 from 10 to 40950 (VRRPv3
/// carries centiseconds in 12 bits).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct AdvertIntervalMs(pub u16);

impl AdvertIntervalMs {
    pub fn centis(self) -> u16 {
        self.0 / 10
    }
}

impl<'de> Deserialize<'de> for AdvertIntervalMs {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl de::Visitor<'_> for V {
            type Value = u16;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a multiple of 10 from 10 to 40950")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<u16, E> {
                if !(10..=40_950).contains(&v) || v % 10 != 0 {
                    return Err(E::custom(format!(
                        "advert_interval_ms must be a multiple of 10 between 10 and 40950 (VRRPv3 centiseconds), got {v}"
                    )));
                }
                Ok(v as u16)
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<u16, E> {
                self.visit_i64(i64::try_from(v).unwrap_or(i64::MAX))
            }
        }
        Ok(AdvertIntervalMs(d.deserialize_i64(V)?))
    }
}

/// An address with a prefix length, written `ADDR/LEN` (or a bare address = host prefix).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Cidr {
    pub addr: IpAddr,
    pub prefix: u8,
}

impl fmt::Display for Cidr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.addr, self.prefix)
    }
}

impl std::str::FromStr for Cidr {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let (a, p) = match s.split_once('/') {
            Some((a, p)) => (a, Some(p)),
            None => (s, None),
        };
        let addr: IpAddr = a
            .trim()
            .parse()
            .map_err(|_| format!("invalid IP address {a:?} in {s:?}"))?;
        let max = if addr.is_ipv4() { 32 } else { 128 };
        let prefix = match p {
            None => max,
            Some(p) => p
                .trim()
                .parse::<u8>()
                .ok()
                .filter(|&n| n <= max)
                .ok_or_else(|| format!("invalid prefix length {p:?} in {s:?} (0..={max})"))?,
        };
        if addr.is_unspecified() || addr.is_multicast() {
            return Err(format!("{s:?} is not a usable unicast address"));
        }
        Ok(Cidr { addr, prefix })
    }
}

impl<'de> Deserialize<'de> for Cidr {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_str(StrVisitor("an address or ADDR/PREFIX", |s: &str| s.parse()))
    }
}

/// Interface name (checked against IFNAMSIZ).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct IfName(pub String);

impl<'de> Deserialize<'de> for IfName {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_str(StrVisitor("an interface name", |s: &str| {
            if s.is_empty() || s.len() > 15 || s.contains(['/', ' ', '\0']) || s == "." || s == ".."
            {
                return Err(format!(
                    "invalid interface name {s:?} (1-15 characters, no '/' or spaces)"
                ));
            }
            Ok(IfName(s.to_string()))
        }))
    }
}

impl fmt::Display for IfName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A command: a string run by `/bin/sh -c`, or an argv list run directly.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Command(pub Vec<String>);

impl<'de> Deserialize<'de> for Command {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Shell(String),
            Argv(Vec<String>),
        }
        let argv = match Raw::deserialize(d)
            .map_err(|_| de::Error::custom("command must be a string or a list of strings"))?
        {
            Raw::Shell(s) => vec!["/bin/sh".into(), "-c".into(), s],
            Raw::Argv(v) => v,
        };
        if argv.is_empty() || argv[0].is_empty() {
            return Err(de::Error::custom("command must not be empty"));
        }
        Ok(Command(argv))
    }
}

fn default_true() -> bool {
    true
}
fn default_priority() -> Priority {
    Priority(100)
}
fn default_interval() -> AdvertIntervalMs {
    AdvertIntervalMs(1000)
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
        }
    }
}

/// Kernel IPVS connection-sync daemon bound to an instance's role.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct IpvsSync {
    pub interface: IfName,
    /// Defaults to the instance's VRID.
    #[serde(default)]
    pub syncid: Option<SyncId>,
}

/// Hooks run (without waiting) on transitions. Each gets the environment
/// `KEEPALIVE_INSTANCE`, `KEEPALIVE_STATE`, `KEEPALIVE_PRIORITY`; `any` also
/// gets `INSTANCE NAME STATE PRIORITY` as arguments, like keepalived's `notify`.
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Notify {
    #[serde(default)]
    pub master: Option<Command>,
    #[serde(default)]
    pub backup: Option<Command>,
    #[serde(default)]
    pub stop: Option<Command>,
    #[serde(default)]
    pub any: Option<Command>,
}

/// One VRRP instance (virtual router).
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Instance {
    pub name: String,
    pub interface: IfName,
    pub vrid: Vrid,
    #[serde(default = "default_priority")]
    pub priority: Priority,
    #[serde(default = "default_interval")]
    pub advert_interval_ms: AdvertIntervalMs,
    pub virtual_ips: Vec<Cidr>,
    #[serde(default = "default_true")]
    pub preempt: bool,
    #[serde(default)]
    pub preempt_delay_ms: Option<Millis>,
    /// Unicast peers; empty = multicast (224.0.0.18 / ff02::12).
    #[serde(default)]
    pub unicast_peers: Vec<IpAddr>,
    /// Source address for adverts; default: the interface's primary address
    /// (IPv4) or its link-local address (IPv6).
    #[serde(default)]
    pub source_ip: Option<IpAddr>,
    #[serde(default)]
    pub ipvs_sync: Option<IpvsSync>,
    /// IPv4 checksum form to send; default from `global.checksum`.
    #[serde(default)]
    pub checksum: Option<ChecksumForm>,
    #[serde(default)]
    pub notify: Notify,
}

impl Instance {
    pub fn is_ipv6(&self) -> bool {
        self.virtual_ips.first().is_some_and(|c| c.addr.is_ipv6())
    }
    pub fn preempt_delay(&self) -> Duration {
        Duration::from_millis(self.preempt_delay_ms.map_or(0, |m| m.0))
    }
}

#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq, Hash)]
#[serde(rename_all = "lowercase")]
pub enum CheckKind {
    Tcp,
    Http,
    Https,
    Exec,
}

#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum OnFailure {
    /// Set the destination's weight to 0 (established connections continue).
    #[default]
    Quiesce,
    /// Remove the destination from its services.
    Remove,
}

/// Expected HTTP status: one code or a list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Statuses(pub Vec<u16>);

impl<'de> Deserialize<'de> for Statuses {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            One(u16),
            Many(Vec<u16>),
        }
        let v = match Raw::deserialize(d).map_err(|_| {
            de::Error::custom("expected_status must be a status code or a list of codes")
        })? {
            Raw::One(n) => vec![n],
            Raw::Many(v) => v,
        };
        if v.is_empty() || v.iter().any(|&c| !(100..=599).contains(&c)) {
            return Err(de::Error::custom("expected_status codes must be 100..=599"));
        }
        Ok(Statuses(v))
    }
}

/// A health check of one real server.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct HealthCheck {
    /// Destination address:port as it appears in the IPVS services.
    pub real_server: SocketAddr,
    /// Restrict to services whose virtual address:port is this (default: all
    /// services that have the destination).
    #[serde(default)]
    pub service: Option<SocketAddr>,
    #[serde(rename = "type")]
    pub kind: CheckKind,
    /// Port to probe (default: the real server's port).
    #[serde(default)]
    pub port: Option<u16>,
    #[serde(default)]
    pub path: Option<String>,
    /// HTTP Host header (default: the address).
    #[serde(default)]
    pub host: Option<String>,
    #[serde(default)]
    pub expected_status: Option<Statuses>,
    #[serde(default)]
    pub command: Option<Command>,
    #[serde(default = "default_check_interval")]
    pub interval_ms: Millis,
    #[serde(default = "default_check_timeout")]
    pub timeout_ms: Millis,
    #[serde(default = "default_rise")]
    pub rise: Count,
    #[serde(default = "default_fall")]
    pub fall: Count,
    #[serde(default)]
    pub on_failure: OnFailure,
}

fn default_check_interval() -> Millis {
    Millis(2000)
}
fn default_check_timeout() -> Millis {
    Millis(1000)
}
fn default_rise() -> Count {
    Count(2)
}
fn default_fall() -> Count {
    Count(3)
}

impl HealthCheck {
    pub fn target(&self) -> SocketAddr {
        SocketAddr::new(
            self.real_server.ip(),
            self.port.unwrap_or(self.real_server.port()),
        )
    }
    pub fn label(&self) -> String {
        let kind = match self.kind {
            CheckKind::Tcp => "tcp",
            CheckKind::Http => "http",
            CheckKind::Https => "https",
            CheckKind::Exec => "exec",
        };
        format!("{kind}:{}", self.real_server)
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
    health_checks: Vec<HealthCheck>,
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
    pub health_checks: Vec<HealthCheck>,
    /// The IPVS services and host map to keep applied (None: the file has
    /// neither `services:` nor `hosts:`).
    pub cluster: Option<Arc<Desired>>,
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
            health_checks: f.health_checks,
            cluster: None,
        };
        cfg.validate().map_err(|msg| ConfigError::Invalid {
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
        let mut names: BTreeMap<&str, usize> = BTreeMap::new();
        let mut vrids: BTreeMap<(&str, bool, u8), usize> = BTreeMap::new();
        for (i, inst) in self.vrrp.iter().enumerate() {
            let at = format!("vrrp[{i}] ({})", inst.name);
            if inst.name.is_empty()
                || inst.name.len() > 64
                || inst.name.contains(char::is_whitespace)
            {
                return Err(format!(
                    "vrrp[{i}].name: must be 1-64 characters without spaces"
                ));
            }
            if let Some(j) = names.insert(&inst.name, i) {
                return Err(format!("{at}.name: duplicate of vrrp[{j}]"));
            }
            if inst.virtual_ips.is_empty() {
                return Err(format!(
                    "{at}.virtual_ips: at least one address is required"
                ));
            }
            if inst.virtual_ips.len() > 255 {
                return Err(format!(
                    "{at}.virtual_ips: at most 255 addresses fit in an advertisement"
                ));
            }
            let v6 = inst.is_ipv6();
            if let Some(bad) = inst.virtual_ips.iter().find(|c| c.addr.is_ipv6() != v6) {
                return Err(format!(
                    "{at}.virtual_ips: {bad} mixes address families; use one instance per family (RFC 5798)"
                ));
            }
            let mut seen = HashSet::new();
            if let Some(dup) = inst.virtual_ips.iter().find(|c| !seen.insert(c.addr)) {
                return Err(format!("{at}.virtual_ips: {dup} listed twice"));
            }
            if let Some(p) = inst.unicast_peers.iter().find(|p| p.is_ipv6() != v6) {
                return Err(format!(
                    "{at}.unicast_peers: {p} is not of the virtual addresses' family"
                ));
            }
            if let Some(p) = inst
                .unicast_peers
                .iter()
                .find(|p| p.is_multicast() || p.is_unspecified())
            {
                return Err(format!("{at}.unicast_peers: {p} is not a unicast address"));
            }
            if let Some(s) = inst.source_ip {
                if s.is_ipv6() != v6 {
                    return Err(format!(
                        "{at}.source_ip: {s} is not of the virtual addresses' family"
                    ));
                }
            }
            if let Some(j) = vrids.insert((&inst.interface.0, v6, inst.vrid.0), i) {
                return Err(format!(
                    "{at}.vrid: VRID {} is already used on {} by vrrp[{j}] ({})",
                    inst.vrid.0, inst.interface, self.vrrp[j].name
                ));
            }
        }
        for (i, hc) in self.health_checks.iter().enumerate() {
            let at = format!("health_checks[{i}] ({})", hc.label());
            match hc.kind {
                CheckKind::Exec if hc.command.is_none() => {
                    return Err(format!("{at}: type exec needs `command`"));
                }
                CheckKind::Tcp | CheckKind::Http | CheckKind::Https if hc.command.is_some() => {
                    return Err(format!("{at}.command: only valid with type exec"));
                }
                _ => {}
            }
            if !matches!(hc.kind, CheckKind::Http | CheckKind::Https)
                && (hc.path.is_some() || hc.expected_status.is_some() || hc.host.is_some())
            {
                return Err(format!(
                    "{at}: path/host/expected_status only apply to http and https checks"
                ));
            }
            if let Some(p) = &hc.path {
                if !p.starts_with('/') || p.contains(['\r', '\n', ' ']) {
                    return Err(format!(
                        "{at}.path: must start with / and contain no spaces or newlines"
                    ));
                }
            }
            if let Some(h) = &hc.host {
                if h.is_empty() || h.contains(['\r', '\n', ' ']) {
                    return Err(format!("{at}.host: invalid Host header {h:?}"));
                }
            }
            if hc.timeout_ms.0 == 0 || hc.interval_ms.0 == 0 {
                return Err(format!("{at}: interval_ms and timeout_ms must be > 0"));
            }
            if hc.timeout_ms.0 > hc.interval_ms.0 {
                return Err(format!("{at}.timeout_ms: must not exceed interval_ms"));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
