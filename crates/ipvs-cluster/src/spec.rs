//! The cluster file as written: what `services:`, `hosts:` and `options:`
//! say, before validation. Serde reads these from YAML (`ipvsctl apply`,
//! keepalive's own file) and writes them (`ipvsctl save -o yaml`).

use std::net::IpAddr;

use serde::{Deserialize, Serialize};

use ipvs_netlink::ipvs::{Family, Forward, Protocol, ServiceKey, TunnelCsum, TunnelType};

/// The whole file.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClusterSpec {
    /// Virtual services (None: not managed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub services: Option<Vec<ServiceSpec>>,
    /// The VMWLCH host map (None: not managed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hosts: Option<Vec<HostSpec>>,
    /// Apply options.
    #[serde(default, skip_serializing_if = "Options::is_default")]
    pub options: Options,
}

/// Apply options of the file.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Options {
    /// What to do with real servers (and services) that are not in the file.
    #[serde(default)]
    pub remove: RemovePolicy,
}

impl Options {
    /// The defaults (not written by `save`).
    pub fn is_default(&self) -> bool {
        *self == Options::default()
    }
}

/// Removal policy.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RemovePolicy {
    /// Delete at once.
    #[default]
    Delete,
    /// Weight 0 first; delete when no connections are left.
    Drain,
}

/// One virtual service.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServiceSpec {
    /// tcp, udp or sctp (address services).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<Protocol>,
    /// Virtual address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub address: Option<IpAddr>,
    /// Virtual port.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<u16>,
    /// Firewall mark (fwmark services).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fwmark: Option<u32>,
    /// Address family of a fwmark service (default inet).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub family: Option<Family>,
    /// Scheduler (default wlc).
    #[serde(default = "default_sched")]
    pub scheduler: String,
    /// Persistence timeout in seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub persistent: Option<u32>,
    /// Persistence granularity: IPv4 mask or IPv6 prefix length.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub netmask: Option<NetmaskSpec>,
    /// Persistence engine.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pe: Option<String>,
    /// Scheduler flags.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sched_flags: Vec<String>,
    /// One-packet scheduling.
    #[serde(default, skip_serializing_if = "is_false")]
    pub one_packet: bool,
    /// Real servers.
    #[serde(default, alias = "real_servers")]
    pub dests: Vec<DestSpec>,
}

impl ServiceSpec {
    /// The spec of a service identity, everything else at its default.
    /// A fwmark service's family is written only when it is not IPv4.
    pub fn for_key(key: ServiceKey) -> ServiceSpec {
        let mut spec = ServiceSpec {
            scheduler: default_sched(),
            ..Default::default()
        };
        match key {
            ServiceKey::Addr {
                protocol,
                addr,
                port,
            } => {
                spec.protocol = Some(protocol);
                spec.address = Some(addr);
                spec.port = Some(port);
            }
            ServiceKey::Fwmark { family, mark } => {
                spec.fwmark = Some(mark);
                spec.family = (family != Family::Inet).then_some(family);
            }
        }
        spec
    }
}

fn default_sched() -> String {
    "wlc".into()
}
fn is_false(b: &bool) -> bool {
    !*b
}
fn is_zero(v: &u32) -> bool {
    *v == 0
}
fn one() -> u32 {
    1
}

/// A netmask as written: a dotted IPv4 mask or a prefix length.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum NetmaskSpec {
    /// Prefix length (IPv6 services).
    Prefix(u32),
    /// Dotted mask (IPv4 services).
    Mask(String),
}

/// One real server.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DestSpec {
    /// Address.
    pub address: IpAddr,
    /// Port (default: the service port).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<u16>,
    /// Weight (default 1).
    #[serde(default = "one")]
    pub weight: u32,
    /// Forwarding method (default route).
    #[serde(default = "default_fwd")]
    pub forward: Forward,
    /// Upper connection threshold.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub u_threshold: u32,
    /// Lower connection threshold.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub l_threshold: u32,
    /// Tunnel options (forward: tunnel).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tunnel: Option<TunnelSpec>,
}

fn default_fwd() -> Forward {
    Forward::Route
}

/// Tunnel encapsulation of a real server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TunnelSpec {
    /// ipip (default), gue or gre.
    #[serde(rename = "type", default)]
    pub kind: TunnelType,
    /// GUE destination port.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<u16>,
    /// Checksum mode (gue, gre).
    #[serde(default, skip_serializing_if = "is_nocsum")]
    pub csum: TunnelCsum,
}

fn is_nocsum(c: &TunnelCsum) -> bool {
    *c == TunnelCsum::NoCsum
}

/// One physical host of the VMWLCH map.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostSpec {
    /// Host name.
    pub name: String,
    /// Host weight (default 1; 0 drains the host).
    #[serde(default = "one")]
    pub weight: u32,
    /// VM addresses on the host.
    #[serde(default)]
    pub vms: Vec<IpAddr>,
}
