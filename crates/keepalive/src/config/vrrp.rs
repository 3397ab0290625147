//! `vrrp:` instances, their tracking and notify hooks, and `sync_groups:`.

use std::collections::{BTreeMap, HashSet};
use std::net::IpAddr;
use std::time::Duration;

use serde::Deserialize;

use super::values::{
    AdvertIntervalMs, Cidr, Command, Count, IfName, Millis, Priority, SyncId, Ttl, Vrid,
    VrrpVersion, Weight,
};
use vrrp::packet::{ChecksumForm, Version};

fn default_true() -> bool {
    true
}
fn default_priority() -> Priority {
    Priority(100)
}
fn default_interval() -> AdvertIntervalMs {
    AdvertIntervalMs(1000)
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
/// `KEEPALIVE_INSTANCE` (or `KEEPALIVE_GROUP`), `KEEPALIVE_STATE`,
/// `KEEPALIVE_PRIORITY`; `any` also gets `INSTANCE|GROUP NAME STATE
/// PRIORITY` as arguments, like keepalived's `notify`.
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Notify {
    #[serde(default)]
    pub master: Option<Command>,
    #[serde(default)]
    pub backup: Option<Command>,
    #[serde(default)]
    pub fault: Option<Command>,
    #[serde(default)]
    pub stop: Option<Command>,
    #[serde(default)]
    pub any: Option<Command>,
}

/// An interface whose operational state moves the instance: down (or
/// missing) means FAULT without a weight; a negative weight is added to
/// the priority while it is down, a positive one while it is up.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct TrackInterface {
    pub interface: IfName,
    #[serde(default)]
    pub weight: Option<Weight>,
}

fn default_script_interval() -> Millis {
    Millis(1000)
}
fn default_script_timeout() -> Millis {
    Millis(1000)
}
fn default_one() -> Count {
    Count(1)
}

/// A command run every `interval_ms` (exit 0 = success, killed after
/// `timeout_ms` = failure); `fall` failures in a row make it failing,
/// `rise` successes healthy again. Scripts start healthy. Its weight works
/// as for interfaces.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct TrackScript {
    /// Label in logs and metrics (default: the command).
    #[serde(default)]
    pub name: Option<String>,
    pub command: Command,
    #[serde(default = "default_script_interval")]
    pub interval_ms: Millis,
    #[serde(default = "default_script_timeout")]
    pub timeout_ms: Millis,
    #[serde(default)]
    pub weight: Option<Weight>,
    #[serde(default = "default_one")]
    pub rise: Count,
    #[serde(default = "default_one")]
    pub fall: Count,
}

impl TrackScript {
    pub fn label(&self) -> String {
        self.name
            .clone()
            .unwrap_or_else(|| self.command.0.join(" "))
    }
}

fn default_ttl() -> Ttl {
    Ttl(255)
}

/// TTL / hop limit accepted on unicast adverts (RFC 5798 §5.1.1.3 wants
/// 255; a peer behind routers arrives with less: lower `min`).
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct TtlRange {
    #[serde(default = "default_ttl")]
    pub min: Ttl,
    #[serde(default = "default_ttl")]
    pub max: Ttl,
}

impl Default for TtlRange {
    fn default() -> Self {
        TtlRange {
            min: default_ttl(),
            max: default_ttl(),
        }
    }
}

impl TtlRange {
    pub fn contains(&self, ttl: u8) -> bool {
        (self.min.0..=self.max.0).contains(&ttl)
    }
}

/// One VRRP instance (virtual router).
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Instance {
    pub name: String,
    pub interface: IfName,
    pub vrid: Vrid,
    /// VRRP version: 3 (RFC 5798/9568, default) or 2 (RFC 3768, IPv4,
    /// whole-second intervals: keepalived's default for IPv4).
    #[serde(default)]
    pub version: VrrpVersion,
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
    #[serde(default)]
    pub unicast_ttl: TtlRange,
    /// Source address for adverts; default: the interface's primary address
    /// (IPv4) or its link-local address (IPv6).
    #[serde(default)]
    pub source_ip: Option<IpAddr>,
    #[serde(default)]
    pub ipvs_sync: Option<IpvsSync>,
    /// IPv4 checksum form to send (v3); default from `global.checksum`.
    #[serde(default)]
    pub checksum: Option<ChecksumForm>,
    #[serde(default)]
    pub track_interfaces: Vec<TrackInterface>,
    #[serde(default)]
    pub track_scripts: Vec<TrackScript>,
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
    pub fn version(&self) -> Version {
        self.version.0
    }
}

/// Instances that move together (`sync_groups:`).
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct SyncGroup {
    pub name: String,
    pub instances: Vec<String>,
    /// Run once per group transition (besides the instances' hooks).
    #[serde(default)]
    pub notify: Notify,
}

fn check_name(at: &str, name: &str) -> Result<(), String> {
    if name.is_empty() || name.len() > 64 || name.contains(char::is_whitespace) {
        return Err(format!("{at}: must be 1-64 characters without spaces"));
    }
    Ok(())
}

fn validate_instance(at: &str, inst: &Instance) -> Result<(), String> {
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
    if inst.unicast_ttl.min > inst.unicast_ttl.max {
        return Err(format!("{at}.unicast_ttl: min is above max"));
    }
    if inst.version() == Version::V3 && inst.advert_interval_ms.0 > 40_950 {
        return Err(format!(
            "{at}.advert_interval_ms: must be a multiple of 10 between 10 and 40950 (VRRPv3 centiseconds), got {}",
            inst.advert_interval_ms.0
        ));
    }
    if inst.version() == Version::V2 {
        if v6 {
            return Err(format!(
                "{at}.version: VRRPv2 is IPv4 only (RFC 3768); IPv6 needs version 3"
            ));
        }
        let ms = inst.advert_interval_ms.0;
        if !ms.is_multiple_of(1000) || ms > 255_000 {
            return Err(format!(
                "{at}.advert_interval_ms: VRRPv2 carries whole seconds: 1000..=255000 in steps of 1000, got {ms}"
            ));
        }
    }
    for (k, t) in inst.track_scripts.iter().enumerate() {
        if t.interval_ms.0 == 0 || t.timeout_ms.0 == 0 {
            return Err(format!(
                "{at}.track_scripts[{k}]: interval_ms and timeout_ms must be > 0"
            ));
        }
        if t.timeout_ms.0 > t.interval_ms.0 {
            return Err(format!(
                "{at}.track_scripts[{k}].timeout_ms: must not exceed interval_ms"
            ));
        }
    }
    Ok(())
}

/// Cross-field rules of `vrrp:` and `sync_groups:`.
pub fn validate(vrrp: &[Instance], groups: &[SyncGroup]) -> Result<(), String> {
    let mut names: BTreeMap<&str, usize> = BTreeMap::new();
    let mut vrids: BTreeMap<(&str, bool, u8), usize> = BTreeMap::new();
    let mut sync_owner: Option<usize> = None;
    for (i, inst) in vrrp.iter().enumerate() {
        check_name(&format!("vrrp[{i}].name"), &inst.name)?;
        let at = format!("vrrp[{i}] ({})", inst.name);
        if let Some(j) = names.insert(&inst.name, i) {
            return Err(format!("{at}.name: duplicate of vrrp[{j}]"));
        }
        validate_instance(&at, inst)?;
        if let Some(j) = vrids.insert((&inst.interface.0, inst.is_ipv6(), inst.vrid.0), i) {
            return Err(format!(
                "{at}.vrid: VRID {} is already used on {} by vrrp[{j}] ({})",
                inst.vrid.0, inst.interface, vrrp[j].name
            ));
        }
        if inst.ipvs_sync.is_some() {
            if let Some(j) = sync_owner {
                return Err(format!(
                    "{at}.ipvs_sync: vrrp[{j}] ({}) already owns the IPVS sync daemon; only one instance may",
                    vrrp[j].name
                ));
            }
            sync_owner = Some(i);
        }
    }
    let mut member_of: BTreeMap<&str, usize> = BTreeMap::new();
    let mut gnames = HashSet::new();
    for (g, grp) in groups.iter().enumerate() {
        check_name(&format!("sync_groups[{g}].name"), &grp.name)?;
        let at = format!("sync_groups[{g}] ({})", grp.name);
        if !gnames.insert(&grp.name) {
            return Err(format!("{at}.name: duplicate group name"));
        }
        if grp.instances.len() < 2 {
            return Err(format!(
                "{at}.instances: a sync group needs at least two instances"
            ));
        }
        for m in &grp.instances {
            if !names.contains_key(m.as_str()) {
                return Err(format!("{at}.instances: no vrrp instance is named {m:?}"));
            }
            if let Some(h) = member_of.insert(m, g) {
                return Err(format!(
                    "{at}.instances: {m} is already in sync_groups[{h}] ({})",
                    groups[h].name
                ));
            }
        }
    }
    Ok(())
}
