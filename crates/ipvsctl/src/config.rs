//! The declarative cluster file: `services:` (virtual services with their
//! real servers) and `hosts:` (the VMWLCH host map), its validation with
//! `line:column` locations, the plan (a diff against the kernel) and its
//! application in an order that never black-holes traffic.
//!
//! ```yaml
//! services:
//!   - protocol: tcp            # tcp | udp | sctp, or `fwmark: 7` (+ `family: inet6`)
//!     address: 10.0.0.1
//!     port: 80
//!     scheduler: vmwlch        # any name (custom schedulers exist)
//!     persistent: 300          # seconds; optional
//!     netmask: 255.255.255.0   # IPv4 mask, or an IPv6 prefix length
//!     pe: sip                  # persistence engine; optional
//!     sched_flags: [flag-1]    # flag-1..3, sh-fallback, sh-port, mh-fallback, mh-port
//!     one_packet: false        # UDP and fwmark services only
//!     dests:                   # alias: real_servers
//!       - address: 192.168.1.10
//!         port: 80             # default: the service port
//!         weight: 1            # default 1; 0 quiesces
//!         forward: route       # route (default) | masq | tunnel | local
//!         u_threshold: 0
//!         l_threshold: 0
//!         tunnel: {type: gue, port: 6080, csum: nocsum}   # forward: tunnel only
//! hosts:
//!   - name: host1
//!     weight: 1
//!     vms: [192.168.1.10, 192.168.1.11]
//! options:
//!   remove: delete             # or `drain`: removed real servers get weight 0
//!                              # first and are deleted once they have no
//!                              # connections left (by a later apply)
//! ```
//!
//! A section that is absent is not managed (`hosts:` missing leaves the host
//! map alone); an empty list (`hosts: []`) empties it.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::net::{IpAddr, Ipv4Addr};

use serde::{Deserialize, Serialize};

use ipvs_netlink::ipvs::consts::*;
use ipvs_netlink::ipvs::flags::{sched_flag, sched_flag_list, sched_flag_names, SchedFlagError};
use ipvs_netlink::ipvs::{
    Client, Dest, Error, Family, Forward, Netmask, Op, Protocol, Service, ServiceKey, TunnelCsum,
    TunnelType,
};
use ipvs_netlink::vmwlch::{self, HostMap, HostState};

/// The whole file.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClusterConfig {
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
    fn is_default(&self) -> bool {
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

/// A validation error with its location.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    /// Path of the offending node, e.g. `services[1].dests[0].weight`.
    pub path: String,
    /// 1-based line.
    pub line: Option<usize>,
    /// 1-based column.
    pub column: Option<usize>,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let (Some(l), Some(c)) = (self.line, self.column) {
            write!(f, "{l}:{c}: ")?;
        }
        if self.path.is_empty() {
            write!(f, "{}", self.message)
        } else {
            write!(f, "{}: {}", self.path, self.message)
        }
    }
}

/// The validated desired state.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Desired {
    /// Services with their destinations (None: unmanaged).
    pub services: Option<Vec<(Service, Vec<Dest>)>>,
    /// Host map (None: unmanaged).
    pub hosts: Option<Vec<vmwlch::Host>>,
    /// Removal policy.
    pub remove: RemovePolicy,
}

/// Parse and validate a file's text; every problem is reported, each with
/// its `line:column` where it can be found.
pub fn parse(text: &str) -> Result<(ClusterConfig, Desired), Vec<ConfigError>> {
    let cfg: ClusterConfig = match serde_yaml::from_str::<Option<ClusterConfig>>(text) {
        Ok(c) => c.unwrap_or_default(),
        Err(e) => {
            let (line, column) = e
                .location()
                .map(|l| (Some(l.line()), Some(l.column())))
                .unwrap_or((None, None));
            let mut msg = e.to_string();
            // serde_yaml appends " at line L column C"; we print the location first.
            if let Some(i) = msg.rfind(" at line ") {
                msg.truncate(i);
            }
            return Err(vec![ConfigError {
                path: String::new(),
                line,
                column,
                message: msg,
            }]);
        }
    };
    let loc = Locator::new(text);
    match validate(&cfg) {
        Ok(d) => Ok((cfg, d)),
        Err(errs) => Err(errs
            .into_iter()
            .map(|(path, message)| {
                let (line, column) = loc.find(&path);
                ConfigError {
                    path,
                    line,
                    column,
                    message,
                }
            })
            .collect()),
    }
}

/// The `services:` and `hosts:` sections of a larger YAML document (for
/// example the keepalive daemon's own file): other top-level keys are
/// ignored; errors are located like [`parse`]'s.
pub fn parse_sections(text: &str) -> Result<(ClusterConfig, Desired), Vec<ConfigError>> {
    #[derive(Deserialize)]
    struct Sections {
        #[serde(default)]
        services: Option<Vec<ServiceSpec>>,
        #[serde(default)]
        hosts: Option<Vec<HostSpec>>,
    }
    let sec: Sections = match serde_yaml::from_str::<Option<Sections>>(text) {
        Ok(Some(s)) => s,
        Ok(None) => Sections {
            services: None,
            hosts: None,
        },
        Err(e) => return Err(vec![yaml_error(&e)]),
    };
    let cfg = ClusterConfig {
        services: sec.services,
        hosts: sec.hosts,
        options: Options::default(),
    };
    let loc = Locator::new(text);
    match validate(&cfg) {
        Ok(d) => Ok((cfg, d)),
        Err(errs) => Err(errs
            .into_iter()
            .map(|(path, message)| {
                let (line, column) = loc.find(&path);
                ConfigError {
                    path,
                    line,
                    column,
                    message,
                }
            })
            .collect()),
    }
}

fn yaml_error(e: &serde_yaml::Error) -> ConfigError {
    let (line, column) = e
        .location()
        .map(|l| (Some(l.line()), Some(l.column())))
        .unwrap_or((None, None));
    let mut msg = e.to_string();
    // serde_yaml appends " at line L column C"; the location is printed first.
    if let Some(i) = msg.rfind(" at line ") {
        msg.truncate(i);
    }
    ConfigError {
        path: String::new(),
        line,
        column,
        message: msg,
    }
}

fn valid_sched_name(s: &str) -> bool {
    !s.is_empty() && s.len() < IP_VS_SCHEDNAME_MAXLEN && !s.contains('\0')
}

/// Semantic validation (everything the kernel or ipvsadm would reject,
/// plus duplicates).
pub fn validate(cfg: &ClusterConfig) -> Result<Desired, Vec<(String, String)>> {
    let mut errs: Vec<(String, String)> = Vec::new();
    let mut services = None;
    if let Some(list) = &cfg.services {
        let mut out = Vec::new();
        let mut seen: HashMap<ServiceKey, usize> = HashMap::new();
        for (i, s) in list.iter().enumerate() {
            let p = format!("services[{i}]");
            if let Some(key) = spec_key(s) {
                if let Some(j) = seen.insert(key, i) {
                    errs.push((
                        p.clone(),
                        format!("duplicate service {key} (also services[{j}])"),
                    ));
                }
            }
            if let Some(e) = service_from_spec(s, &p, &mut errs) {
                out.push(e);
            }
        }
        services = Some(out);
    }
    let mut hosts = None;
    if let Some(list) = &cfg.hosts {
        let mut out = Vec::new();
        let mut names: HashMap<&str, usize> = HashMap::new();
        let mut vms: HashMap<IpAddr, usize> = HashMap::new();
        for (i, h) in list.iter().enumerate() {
            let p = format!("hosts[{i}]");
            if let Err(e) = vmwlch::check_name(&h.name) {
                errs.push((format!("{p}.name"), e.to_string()));
            }
            if let Some(j) = names.insert(h.name.as_str(), i) {
                errs.push((
                    format!("{p}.name"),
                    format!("duplicate host `{}' (also hosts[{j}])", h.name),
                ));
            }
            if h.weight > vmwlch::VMWLCH_MAX_WEIGHT {
                errs.push((
                    format!("{p}.weight"),
                    format!(
                        "weight {} out of range 0..{}",
                        h.weight,
                        vmwlch::VMWLCH_MAX_WEIGHT
                    ),
                ));
            }
            for (k, a) in h.vms.iter().enumerate() {
                if let Some(j) = vms.insert(*a, i) {
                    if j != i {
                        errs.push((
                            format!("{p}.vms[{k}]"),
                            format!("{a} is already a VM of hosts[{j}]"),
                        ));
                    } else {
                        errs.push((format!("{p}.vms[{k}]"), format!("{a} listed twice")));
                    }
                }
            }
            out.push(vmwlch::Host {
                name: h.name.clone(),
                weight: h.weight,
                members: h.vms.clone(),
            });
        }
        if out.len() > vmwlch::VMWLCH_MAX_HOSTS as usize {
            errs.push((
                "hosts".into(),
                format!("more than {} hosts", vmwlch::VMWLCH_MAX_HOSTS),
            ));
        }
        hosts = Some(out);
    }
    if errs.is_empty() {
        Ok(Desired {
            services,
            hosts,
            remove: cfg.options.remove,
        })
    } else {
        Err(errs)
    }
}

fn spec_key(s: &ServiceSpec) -> Option<ServiceKey> {
    match (s.fwmark, s.address) {
        (Some(mark), None) => Some(ServiceKey::Fwmark {
            family: s.family.unwrap_or(Family::Inet),
            mark,
        }),
        (None, Some(addr)) => Some(ServiceKey::Addr {
            protocol: s.protocol.unwrap_or(Protocol::Tcp),
            addr,
            port: s.port.unwrap_or(0),
        }),
        _ => None,
    }
}

fn parse_flag(sched: &str, f: &str) -> Result<u32, String> {
    sched_flag(sched, f).map_err(|e| match e {
        SchedFlagError::Incompatible { needs } => {
            format!("scheduler flag `{f}' needs scheduler {needs}")
        }
        SchedFlagError::Unknown => {
            format!("unknown scheduler flag `{f}' ({})", sched_flag_list())
        }
    })
}

fn service_from_spec(
    s: &ServiceSpec,
    p: &str,
    errs: &mut Vec<(String, String)>,
) -> Option<(Service, Vec<Dest>)> {
    let n0 = errs.len();
    let key = match (s.fwmark, s.protocol, s.address, s.port) {
        (Some(m), None, None, None) => {
            if m == 0 {
                errs.push((
                    format!("{p}.fwmark"),
                    "fwmark must be greater than zero".into(),
                ));
            }
            ServiceKey::Fwmark {
                family: s.family.unwrap_or(Family::Inet),
                mark: m,
            }
        }
        (Some(_), ..) => {
            errs.push((
                p.into(),
                "give either fwmark or protocol/address/port, not both".into(),
            ));
            return None;
        }
        (None, proto, Some(addr), port) => {
            if s.family.is_some_and(|f| f != Family::of(&addr)) {
                errs.push((
                    format!("{p}.family"),
                    "family does not match the address".into(),
                ));
            }
            let protocol = proto.unwrap_or(Protocol::Tcp);
            if let Protocol::Other(n) = protocol {
                errs.push((
                    format!("{p}.protocol"),
                    format!("unsupported protocol {n} (tcp, udp, sctp)"),
                ));
            }
            ServiceKey::Addr {
                protocol,
                addr,
                port: port.unwrap_or(0),
            }
        }
        (None, _, None, _) => {
            errs.push((
                p.into(),
                "a service needs `address` (with `protocol` and `port`) or `fwmark`".into(),
            ));
            return None;
        }
    };
    let fam = key.family();
    if !valid_sched_name(&s.scheduler) {
        errs.push((
            format!("{p}.scheduler"),
            format!(
                "scheduler name must be 1..{} bytes",
                IP_VS_SCHEDNAME_MAXLEN - 1
            ),
        ));
    }
    let mut flags = 0u32;
    for (k, f) in s.sched_flags.iter().enumerate() {
        match parse_flag(&s.scheduler, f) {
            Ok(b) => flags |= b,
            Err(e) => errs.push((format!("{p}.sched_flags[{k}]"), e)),
        }
    }
    if s.one_packet {
        if matches!(key, ServiceKey::Addr { protocol, .. } if protocol != Protocol::Udp) {
            errs.push((
                format!("{p}.one_packet"),
                "one-packet scheduling is only for UDP (and fwmark) services".into(),
            ));
        }
        flags |= IP_VS_SVC_F_ONEPACKET;
    }
    let mut timeout = 0;
    if let Some(t) = s.persistent {
        if t == 0 || t > 86400 * 31 {
            errs.push((
                format!("{p}.persistent"),
                format!("persistence timeout {t} out of range 1..{}", 86400 * 31),
            ));
        }
        flags |= IP_VS_SVC_F_PERSISTENT;
        timeout = t;
    }
    if key.port() == 0 && key.mark() == 0 && s.persistent.is_none() {
        errs.push((
            format!("{p}.port"),
            "port 0 is only allowed for persistent services".into(),
        ));
    }
    let netmask = match (&s.netmask, fam) {
        (None, f) => Netmask::host(f),
        (Some(NetmaskSpec::Mask(m)), Family::Inet) => match m.parse::<Ipv4Addr>() {
            Ok(a) => Netmask::V4(a),
            Err(_) => {
                errs.push((
                    format!("{p}.netmask"),
                    format!("`{m}' is not an IPv4 netmask"),
                ));
                Netmask::host(fam)
            }
        },
        (Some(NetmaskSpec::Prefix(n)), Family::Inet) if *n <= 32 => {
            Netmask::V4(Ipv4Addr::from(if *n == 0 {
                0
            } else {
                u32::MAX << (32 - n)
            }))
        }
        (Some(NetmaskSpec::Prefix(n)), Family::Inet6) if (1..=128).contains(n) => Netmask::V6(*n),
        (Some(other), _) => {
            errs.push((
                format!("{p}.netmask"),
                format!("invalid netmask {other:?} for this address family (IPv6: prefix 1..128)"),
            ));
            Netmask::host(fam)
        }
    };
    if let Some(pe) = &s.pe {
        if pe.is_empty() || pe.len() >= IP_VS_PENAME_MAXLEN {
            errs.push((
                format!("{p}.pe"),
                format!(
                    "persistence engine name must be 1..{} bytes",
                    IP_VS_PENAME_MAXLEN - 1
                ),
            ));
        }
    }
    let svc = Service {
        key,
        scheduler: s.scheduler.clone(),
        flags,
        timeout,
        netmask,
        pe_name: s.pe.clone().filter(|p| !p.is_empty()),
        stats: Default::default(),
    };
    let mut dests = Vec::new();
    let mut seen: HashMap<(IpAddr, u16), usize> = HashMap::new();
    for (j, d) in s.dests.iter().enumerate() {
        let dp = format!("{p}.dests[{j}]");
        let port = match d.port {
            Some(port) => {
                if key.mark() == 0
                    && matches!(d.forward, Forward::Route | Forward::Tunnel)
                    && port != key.port()
                {
                    errs.push((
                        format!("{dp}.port"),
                        format!(
                            "with {} forwarding the port must be the service port {}",
                            d.forward.name(),
                            key.port()
                        ),
                    ));
                }
                port
            }
            None => key.port(),
        };
        if d.weight > i32::MAX as u32 {
            errs.push((format!("{dp}.weight"), "weight out of range".into()));
        }
        if d.u_threshold > i32::MAX as u32 || d.l_threshold > i32::MAX as u32 {
            errs.push((dp.clone(), "threshold out of range".into()));
        }
        if d.l_threshold > d.u_threshold {
            errs.push((
                format!("{dp}.l_threshold"),
                format!(
                    "l_threshold {} is above u_threshold {}",
                    d.l_threshold, d.u_threshold
                ),
            ));
        }
        if Family::of(&d.address) != fam && d.forward != Forward::Tunnel {
            errs.push((
                format!("{dp}.address"),
                "a different address family is allowed only for tunnel forwarding".into(),
            ));
        }
        if matches!(d.forward, Forward::Bypass | Forward::Other(_)) {
            errs.push((
                format!("{dp}.forward"),
                "unsupported forwarding method".into(),
            ));
        }
        let mut dest = Dest::new(d.address, port)
            .with_fwd(d.forward)
            .with_weight(d.weight);
        dest.u_threshold = d.u_threshold;
        dest.l_threshold = d.l_threshold;
        if let Some(t) = &d.tunnel {
            if d.forward != Forward::Tunnel {
                errs.push((
                    format!("{dp}.tunnel"),
                    "tunnel options need `forward: tunnel`".into(),
                ));
            }
            match t.kind {
                TunnelType::Gue if t.port.is_none_or(|p| p == 0) => {
                    errs.push((format!("{dp}.tunnel"), "gue tunnels need a port".into()))
                }
                TunnelType::Ipip if t.port.is_some() || t.csum != TunnelCsum::NoCsum => {
                    errs.push((
                        format!("{dp}.tunnel"),
                        "ipip tunnels take no port or checksum option".into(),
                    ))
                }
                TunnelType::Gre if t.port.is_some() || t.csum == TunnelCsum::RemCsum => {
                    errs.push((
                        format!("{dp}.tunnel"),
                        "gre tunnels take no port and no remcsum".into(),
                    ))
                }
                _ => {}
            }
            dest.tun_type = t.kind;
            dest.tun_port = t.port.unwrap_or(0);
            dest.tun_flags = t.csum;
        }
        if let Some(k) = seen.insert((d.address, port), j) {
            errs.push((
                format!("{dp}.address"),
                format!("duplicate real server (also dests[{k}])"),
            ));
        }
        dests.push(dest);
    }
    if errs.len() > n0 {
        None
    } else {
        Some((svc, dests))
    }
}

/// Finds the `line:column` of a path like `services[1].dests[0].weight` in
/// block-style YAML text (the style these files are written in).
pub struct Locator {
    map: HashMap<String, (usize, usize)>,
}

impl Locator {
    /// Index a text.
    pub fn new(text: &str) -> Locator {
        let mut map = HashMap::new();
        // Frames: (indent, path, is_item).
        let mut stack: Vec<(usize, String, bool)> = Vec::new();
        let mut counters: HashMap<String, usize> = HashMap::new();
        for (ln, raw) in text.lines().enumerate() {
            let line_no = ln + 1;
            let trimmed = raw.trim_start_matches(' ');
            if trimmed.is_empty() || trimmed.starts_with('#') || trimmed.starts_with("---") {
                continue;
            }
            let mut col = raw.len() - trimmed.len();
            let mut content = trimmed;
            loop {
                if content == "-" || content.starts_with("- ") {
                    while stack
                        .last()
                        .is_some_and(|f| f.0 > col || (f.0 == col && f.2))
                    {
                        stack.pop();
                    }
                    let parent = stack.last().map(|f| f.1.clone()).unwrap_or_default();
                    let c = counters.entry(parent.clone()).or_insert(0);
                    let path = format!("{parent}[{c}]");
                    *c += 1;
                    map.insert(path.clone(), (line_no, col + 1));
                    stack.push((col, path, true));
                    let rest = content[1..].trim_start_matches(' ');
                    col += content.len() - rest.len();
                    content = rest;
                    if content.is_empty() {
                        break;
                    }
                    continue;
                }
                if let Some(key) = key_of(content) {
                    // Paths use the canonical field names.
                    let key = if key == "real_servers" { "dests" } else { key };
                    while stack.last().is_some_and(|f| f.0 >= col) {
                        stack.pop();
                    }
                    let parent = stack.last().map(|f| f.1.clone()).unwrap_or_default();
                    let path = if parent.is_empty() {
                        key.to_string()
                    } else {
                        format!("{parent}.{key}")
                    };
                    map.insert(path.clone(), (line_no, col + 1));
                    counters.remove(&path);
                    stack.push((col, path, false));
                }
                break;
            }
        }
        Locator { map }
    }

    /// The location of a path, or of its nearest located ancestor.
    pub fn find(&self, path: &str) -> (Option<usize>, Option<usize>) {
        let mut p = path.to_string();
        loop {
            if let Some((l, c)) = self.map.get(&p) {
                return (Some(*l), Some(*c));
            }
            match p.rfind(['.', '[']) {
                Some(i) => p.truncate(i),
                None => return (None, None),
            }
        }
    }
}

fn key_of(content: &str) -> Option<&str> {
    if content.starts_with(['{', '[', '"', '\'']) {
        // Quoted keys: take the quoted text.
        if let Some(q) = content.chars().next().filter(|c| *c == '"' || *c == '\'') {
            let end = content[1..].find(q)? + 1;
            let after = &content[end + 1..];
            if after.starts_with(':') {
                return Some(&content[1..end]);
            }
        }
        return None;
    }
    let i = content.find(':')?;
    let after = &content[i + 1..];
    if after.is_empty() || after.starts_with(' ') || after.starts_with('\t') {
        Some(content[..i].trim_end())
    } else {
        None
    }
}

/// Convert the kernel state into the file model (`save -o yaml`).
pub fn from_state(
    services: Option<&[(Service, Vec<Dest>)]>,
    hosts: Option<&[HostState]>,
) -> ClusterConfig {
    let services = services.map(|list| {
        let mut v: Vec<&(Service, Vec<Dest>)> = list.iter().collect();
        v.sort_by_key(|e| e.0.key);
        v.into_iter()
            .map(|(s, ds)| {
                let mut spec = ServiceSpec {
                    scheduler: s.scheduler.clone(),
                    ..Default::default()
                };
                match s.key {
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
                        if family == Family::Inet6 {
                            spec.family = Some(family);
                        }
                    }
                }
                if s.persistent() {
                    spec.persistent = Some(s.timeout);
                }
                if !s.netmask.is_host() {
                    spec.netmask = Some(match s.netmask {
                        Netmask::V4(a) => NetmaskSpec::Mask(a.to_string()),
                        Netmask::V6(p) => NetmaskSpec::Prefix(p),
                    });
                }
                spec.pe = s.pe_name.clone();
                spec.one_packet = s.one_packet();
                spec.sched_flags = sched_flag_names(&s.scheduler, s.flags)
                    .into_iter()
                    .map(String::from)
                    .collect();
                let mut ds: Vec<&Dest> = ds.iter().collect();
                ds.sort_by_key(|d| (d.addr, d.port));
                spec.dests = ds
                    .into_iter()
                    .map(|d| DestSpec {
                        address: d.addr,
                        port: (d.port != s.key.port() || s.key.mark() != 0).then_some(d.port),
                        weight: d.weight,
                        forward: d.fwd,
                        u_threshold: d.u_threshold,
                        l_threshold: d.l_threshold,
                        tunnel: (d.fwd == Forward::Tunnel).then(|| TunnelSpec {
                            kind: d.tun_type,
                            port: (d.tun_port != 0).then_some(d.tun_port),
                            csum: d.tun_flags,
                        }),
                    })
                    .collect();
                spec
            })
            .collect()
    });
    let hosts = hosts.map(|hs| {
        let mut v: Vec<&HostState> = hs.iter().collect();
        v.sort_by(|a, b| a.name.cmp(&b.name));
        v.into_iter()
            .map(|h| {
                let mut vms = h.members.clone();
                vms.sort();
                HostSpec {
                    name: h.name.clone(),
                    weight: h.weight,
                    vms,
                }
            })
            .collect()
    });
    ClusterConfig {
        services,
        hosts,
        options: Options::default(),
    }
}

/// The current kernel state relevant to a plan.
#[derive(Debug, Clone, Default)]
pub struct Current {
    /// Services with destinations.
    pub services: Vec<(Service, Vec<Dest>)>,
    /// Host map, when the VMWLCH family is available and managed.
    pub hosts: Option<Vec<HostState>>,
}

/// Read the current state (hosts only if `hosts` is wanted).
pub fn read_current(client: &mut Client, hosts: bool) -> Result<Current, Error> {
    let services = client.services_with_dests()?;
    let hosts = if hosts {
        let mut hm = HostMap::new(client.netlink())?;
        Some(hm.hosts()?)
    } else {
        None
    };
    Ok(Current { services, hosts })
}

/// A change to the host map.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostOp {
    /// Create/update a host, adding (or moving) members.
    Set {
        /// Host name.
        name: String,
        /// Weight.
        weight: u32,
        /// Members to add.
        members: Vec<IpAddr>,
    },
    /// Unmap addresses.
    DelMembers(Vec<IpAddr>),
    /// Delete a host.
    Del(String),
}

/// One planned change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// An IPVS operation.
    Ipvs(Op),
    /// A host map operation.
    Host(HostOp),
}

/// A step of a plan: the change, its phase and a human description.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    /// Phase (steps run phase by phase; see [`apply`]).
    pub phase: u8,
    /// The change.
    pub change: Change,
    /// `+`/`~`/`-` line for humans.
    pub text: String,
}

/// The plan: ordered steps, plus notes (e.g. servers still draining).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Plan {
    /// Steps in execution order.
    pub steps: Vec<Step>,
    /// Informational notes.
    pub notes: Vec<String>,
}

impl Plan {
    /// No changes?
    pub fn is_empty(&self) -> bool {
        self.steps.is_empty()
    }
}

impl fmt::Display for Plan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.steps.is_empty() {
            writeln!(f, "No changes.")?;
        }
        for s in &self.steps {
            writeln!(f, "{}", s.text)?;
        }
        for n in &self.notes {
            writeln!(f, "# {n}")?;
        }
        Ok(())
    }
}

fn dest_desc(d: &Dest) -> String {
    let mut s = format!(
        "{} {} weight {}",
        ipvs_netlink::ipvs::fmt_addr_port(&d.addr, d.port),
        d.fwd.name(),
        d.weight
    );
    if d.u_threshold != 0 || d.l_threshold != 0 {
        s.push_str(&format!(" thresholds {}/{}", d.u_threshold, d.l_threshold));
    }
    if d.fwd == Forward::Tunnel {
        s.push_str(&format!(" tunnel {}", d.tun_type.name()));
        if d.tun_port != 0 {
            s.push_str(&format!(":{}", d.tun_port));
        }
        if d.tun_flags != TunnelCsum::NoCsum {
            s.push_str(&format!(" {}", d.tun_flags.name()));
        }
    }
    s
}

fn svc_desc(s: &Service) -> String {
    let mut out = format!("{} {}", s.key, s.scheduler);
    if s.persistent() {
        out.push_str(&format!(" persistent {}", s.timeout));
    }
    if !s.netmask.is_host() {
        out.push_str(&format!(" mask {}", s.netmask));
    }
    if let Some(pe) = &s.pe_name {
        out.push_str(&format!(" pe {pe}"));
    }
    if s.flags & IP_VS_SVC_F_SCHED_MASK != 0 {
        out.push_str(&format!(" flags {:#x}", s.flags & IP_VS_SVC_F_SCHED_MASK));
    }
    if s.one_packet() {
        out.push_str(" ops");
    }
    out
}

fn svc_equal(a: &Service, b: &Service) -> bool {
    a.scheduler == b.scheduler
        && a.flags == b.flags
        && (a.timeout == b.timeout || !a.persistent())
        && a.netmask == b.netmask
        && a.pe_name == b.pe_name
}

fn dest_equal(a: &Dest, b: &Dest) -> bool {
    let tun = |d: &Dest| {
        if d.fwd == Forward::Tunnel {
            (d.tun_type, d.tun_port, d.tun_flags)
        } else {
            (TunnelType::Ipip, 0, TunnelCsum::NoCsum)
        }
    };
    a.fwd == b.fwd
        && a.weight == b.weight
        && a.u_threshold == b.u_threshold
        && a.l_threshold == b.l_threshold
        && tun(a) == tun(b)
}

/// Phases of a plan, in execution order.
pub mod phase {
    /// Hosts created/updated and VMs (re)mapped.
    pub const HOSTS_SET: u8 = 0;
    /// New services, each followed by its real servers.
    pub const ADD_SERVICES: u8 = 1;
    /// Changed services.
    pub const EDIT_SERVICES: u8 = 2;
    /// New real servers of existing services.
    pub const ADD_DESTS: u8 = 3;
    /// Changed real servers (including drains to weight 0).
    pub const EDIT_DESTS: u8 = 4;
    /// Removed real servers.
    pub const DEL_DESTS: u8 = 5;
    /// Removed services.
    pub const DEL_SERVICES: u8 = 6;
    /// VMs unmapped and hosts deleted.
    pub const HOSTS_DEL: u8 = 7;
}

/// Compute the plan that converges `current` to `desired`.
pub fn plan(desired: &Desired, current: &Current) -> Plan {
    use phase::*;
    let mut steps = Vec::new();
    let mut notes = Vec::new();
    let drain = desired.remove == RemovePolicy::Drain;
    if let Some(want) = &desired.services {
        let cur: HashMap<ServiceKey, &(Service, Vec<Dest>)> =
            current.services.iter().map(|e| (e.0.key, e)).collect();
        let want_keys: HashSet<ServiceKey> = want.iter().map(|(s, _)| s.key).collect();
        for (svc, dests) in want {
            match cur.get(&svc.key) {
                None => {
                    steps.push(Step {
                        phase: ADD_SERVICES,
                        change: Change::Ipvs(Op::AddService(svc.clone())),
                        text: format!("+ service {}", svc_desc(svc)),
                    });
                    for d in dests {
                        steps.push(Step {
                            phase: ADD_SERVICES,
                            change: Change::Ipvs(Op::AddDest(svc.key, d.clone())),
                            text: format!("+   dest {} -> {}", svc.key, dest_desc(d)),
                        });
                    }
                }
                Some((csvc, cdests)) => {
                    if !svc_equal(svc, csvc) {
                        steps.push(Step {
                            phase: EDIT_SERVICES,
                            change: Change::Ipvs(Op::EditService(svc.clone())),
                            text: format!("~ service {} (was {})", svc_desc(svc), svc_desc(csvc)),
                        });
                    }
                    let cmap: HashMap<(IpAddr, u16), &Dest> =
                        cdests.iter().map(|d| ((d.addr, d.port), d)).collect();
                    let wset: HashSet<(IpAddr, u16)> =
                        dests.iter().map(|d| (d.addr, d.port)).collect();
                    for d in dests {
                        match cmap.get(&(d.addr, d.port)) {
                            None => steps.push(Step {
                                phase: ADD_DESTS,
                                change: Change::Ipvs(Op::AddDest(svc.key, d.clone())),
                                text: format!("+   dest {} -> {}", svc.key, dest_desc(d)),
                            }),
                            Some(c) if !dest_equal(d, c) => steps.push(Step {
                                phase: EDIT_DESTS,
                                change: Change::Ipvs(Op::EditDest(svc.key, d.clone())),
                                text: format!(
                                    "~   dest {} -> {} (was {})",
                                    svc.key,
                                    dest_desc(d),
                                    dest_desc(c)
                                ),
                            }),
                            Some(_) => {}
                        }
                    }
                    for c in cdests {
                        if !wset.contains(&(c.addr, c.port)) {
                            removal(&mut steps, &mut notes, svc.key, c, drain);
                        }
                    }
                }
            }
        }
        for (csvc, cdests) in &current.services {
            if want_keys.contains(&csvc.key) {
                continue;
            }
            if drain {
                let mut busy = false;
                for c in cdests {
                    busy |= removal(&mut steps, &mut notes, csvc.key, c, true);
                }
                if busy {
                    notes.push(format!(
                        "service {} kept until its real servers have drained",
                        csvc.key
                    ));
                    continue;
                }
            }
            steps.push(Step {
                phase: DEL_SERVICES,
                change: Change::Ipvs(Op::DelService(csvc.key)),
                text: format!("- service {}", svc_desc(csvc)),
            });
        }
    }
    if let Some(want) = &desired.hosts {
        let cur: HashMap<&str, &HostState> = current
            .hosts
            .iter()
            .flatten()
            .map(|h| (h.name.as_str(), h))
            .collect();
        let mut wanted_members: HashSet<IpAddr> = HashSet::new();
        for h in want {
            wanted_members.extend(h.members.iter().copied());
            match cur.get(h.name.as_str()) {
                None => steps.push(Step {
                    phase: HOSTS_SET,
                    change: Change::Host(HostOp::Set {
                        name: h.name.clone(),
                        weight: h.weight,
                        members: h.members.clone(),
                    }),
                    text: format!(
                        "+ host {} weight {} vms {}",
                        h.name,
                        h.weight,
                        fmt_addrs(&h.members)
                    ),
                }),
                Some(c) => {
                    let have: HashSet<IpAddr> = c.members.iter().copied().collect();
                    let add: Vec<IpAddr> = h
                        .members
                        .iter()
                        .copied()
                        .filter(|a| !have.contains(a))
                        .collect();
                    if c.weight != h.weight || !add.is_empty() {
                        let mut t = format!("~ host {}", h.name);
                        if c.weight != h.weight {
                            t.push_str(&format!(" weight {} -> {}", c.weight, h.weight));
                        }
                        if !add.is_empty() {
                            t.push_str(&format!(" +vms {}", fmt_addrs(&add)));
                        }
                        steps.push(Step {
                            phase: HOSTS_SET,
                            change: Change::Host(HostOp::Set {
                                name: h.name.clone(),
                                weight: h.weight,
                                members: add,
                            }),
                            text: t,
                        });
                    }
                }
            }
        }
        let want_names: HashSet<&str> = want.iter().map(|h| h.name.as_str()).collect();
        let mut unmap: Vec<IpAddr> = Vec::new();
        for c in current.hosts.iter().flatten() {
            if want_names.contains(c.name.as_str()) {
                unmap.extend(
                    c.members
                        .iter()
                        .copied()
                        .filter(|a| !wanted_members.contains(a)),
                );
            }
        }
        if !unmap.is_empty() {
            unmap.sort();
            steps.push(Step {
                phase: HOSTS_DEL,
                change: Change::Host(HostOp::DelMembers(unmap.clone())),
                text: format!("- vms {}", fmt_addrs(&unmap)),
            });
        }
        let mut gone: Vec<&HostState> = current
            .hosts
            .iter()
            .flatten()
            .filter(|c| !want_names.contains(c.name.as_str()))
            .collect();
        gone.sort_by(|a, b| a.name.cmp(&b.name));
        for c in gone {
            steps.push(Step {
                phase: HOSTS_DEL,
                change: Change::Host(HostOp::Del(c.name.clone())),
                text: format!("- host {}", c.name),
            });
        }
    }
    steps.sort_by_key(|s| s.phase);
    Plan { steps, notes }
}

/// Plan the removal of a destination. Returns true if it is kept (draining).
fn removal(
    steps: &mut Vec<Step>,
    notes: &mut Vec<String>,
    key: ServiceKey,
    c: &Dest,
    drain: bool,
) -> bool {
    if drain {
        if c.weight != 0 {
            let mut d = c.clone();
            d.weight = 0;
            steps.push(Step {
                phase: phase::EDIT_DESTS,
                change: Change::Ipvs(Op::EditDest(key, d)),
                text: format!(
                    "~   dest {} -> {} weight 0 (drain)",
                    key,
                    ipvs_netlink::ipvs::fmt_addr_port(&c.addr, c.port)
                ),
            });
            notes.push(format!(
                "{} of {} is draining; apply again to delete it once it has no connections",
                ipvs_netlink::ipvs::fmt_addr_port(&c.addr, c.port),
                key
            ));
            return true;
        }
        if c.active_conns + c.inact_conns > 0 {
            notes.push(format!(
                "{} of {} is draining ({} active, {} inactive connections)",
                ipvs_netlink::ipvs::fmt_addr_port(&c.addr, c.port),
                key,
                c.active_conns,
                c.inact_conns
            ));
            return true;
        }
    }
    steps.push(Step {
        phase: phase::DEL_DESTS,
        change: Change::Ipvs(Op::DelDest(key, c.clone())),
        text: format!(
            "-   dest {} -> {}",
            key,
            ipvs_netlink::ipvs::fmt_addr_port(&c.addr, c.port)
        ),
    });
    false
}

fn fmt_addrs(v: &[IpAddr]) -> String {
    let s: Vec<String> = v.iter().map(|a| a.to_string()).collect();
    format!("[{}]", s.join(", "))
}

/// Outcome of one step.
#[derive(Debug)]
pub enum Outcome {
    /// Applied.
    Done,
    /// The kernel refused it.
    Failed(Error),
    /// Not attempted (an earlier phase failed).
    Skipped,
}

/// What [`apply`] did, step by step.
#[derive(Debug)]
pub struct Report {
    /// Each step with its outcome, in plan order.
    pub steps: Vec<(Step, Outcome)>,
}

impl Report {
    /// Did everything apply?
    pub fn ok(&self) -> bool {
        self.steps.iter().all(|(_, o)| matches!(o, Outcome::Done))
    }
    /// Number of steps applied.
    pub fn done(&self) -> usize {
        self.steps
            .iter()
            .filter(|(_, o)| matches!(o, Outcome::Done))
            .count()
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (s, o) in &self.steps {
            match o {
                Outcome::Done => writeln!(f, "ok      {}", s.text)?,
                Outcome::Failed(e) => writeln!(f, "FAILED  {}: {e}", s.text)?,
                Outcome::Skipped => writeln!(f, "skipped {}", s.text)?,
            }
        }
        Ok(())
    }
}

/// Apply a plan phase by phase (IPVS operations of a phase pipelined). If a
/// phase has a failure, the later phases are not attempted, so nothing is
/// deleted after an addition failed. The report says exactly which steps
/// were applied, failed or skipped.
pub fn apply(client: &mut Client, plan: &Plan) -> Result<Report, Error> {
    let mut out: Vec<(Step, Outcome)> = Vec::with_capacity(plan.steps.len());
    let mut failed = false;
    let mut i = 0;
    let steps = &plan.steps;
    while i < steps.len() {
        let ph = steps[i].phase;
        let mut j = i;
        while j < steps.len() && steps[j].phase == ph {
            j += 1;
        }
        let group = &steps[i..j];
        if failed {
            out.extend(group.iter().map(|s| (s.clone(), Outcome::Skipped)));
            i = j;
            continue;
        }
        // IPVS ops of the phase in one pipelined batch; host ops one by one.
        let ops: Vec<Op> = group
            .iter()
            .filter_map(|s| {
                if let Change::Ipvs(op) = &s.change {
                    Some(op.clone())
                } else {
                    None
                }
            })
            .collect();
        let mut results = client.execute(&ops)?.into_iter();
        let needs_hosts = group.iter().any(|s| matches!(s.change, Change::Host(_)));
        let mut host_results: Vec<Result<(), Error>> = Vec::new();
        if needs_hosts {
            let mut hm = HostMap::new(client.netlink())?;
            for s in group {
                if let Change::Host(h) = &s.change {
                    host_results.push(match h {
                        HostOp::Set {
                            name,
                            weight,
                            members,
                        } => hm.set_host(name, Some(*weight), members),
                        HostOp::DelMembers(m) => hm.del_members(m),
                        HostOp::Del(n) => hm.del_host(n),
                    });
                }
            }
        }
        let mut hres = host_results.into_iter();
        for s in group {
            let r = match s.change {
                Change::Ipvs(_) => results.next(),
                Change::Host(_) => hres.next(),
            }
            .unwrap_or(Ok(()));
            let o = match r {
                Ok(()) => Outcome::Done,
                Err(e) => {
                    failed = true;
                    Outcome::Failed(e)
                }
            };
            out.push((s.clone(), o));
        }
        i = j;
    }
    Ok(Report { steps: out })
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = "\
services:
  - protocol: tcp
    address: 10.0.0.1
    port: 80
    scheduler: vmwlch
    persistent: 300
    netmask: 255.255.255.0
    dests:
      - address: 192.168.1.10
        weight: 2
      - address: 192.168.1.11
        forward: masq
        port: 8080
  - fwmark: 7
    family: inet6
    scheduler: rr
    real_servers:
      - address: 2001:db8::10
        forward: tunnel
        tunnel: {type: gue, port: 6080, csum: remcsum}
hosts:
  - name: h1
    weight: 2
    vms: [192.168.1.10]
  - name: h2
    vms:
      - 192.168.1.11
";

    fn desired() -> Desired {
        parse(FILE).unwrap().1
    }

    #[test]
    fn parses_example() {
        let d = desired();
        let s = d.services.as_ref().unwrap();
        assert_eq!(s.len(), 2);
        assert_eq!(s[0].0.scheduler, "vmwlch");
        assert!(s[0].0.persistent());
        assert_eq!(s[0].1[0].port, 80);
        assert_eq!(s[0].1[1].port, 8080);
        assert_eq!(
            s[1].0.key,
            ServiceKey::Fwmark {
                family: Family::Inet6,
                mark: 7
            }
        );
        assert_eq!(s[1].1[0].tun_type, TunnelType::Gue);
        assert_eq!(d.hosts.as_ref().unwrap()[1].weight, 1);
    }

    #[test]
    fn syntax_error_located() {
        let e = parse("services:\n  - protocol: tcp\n    address: 10.0.0.1\n    port: 99999\n")
            .unwrap_err();
        assert_eq!((e[0].line, e[0].column), (Some(4), Some(11)), "{}", e[0]);
        let e = parse("services:\n  - protocol: tcp\n    adress: 10.0.0.1\n").unwrap_err();
        assert_eq!(e[0].line, Some(3), "{}", e[0]);
        assert!(e[0].message.contains("unknown field `adress`"), "{}", e[0]);
    }

    #[test]
    fn semantic_errors_located() {
        let text = "\
services:
  - protocol: tcp
    address: 10.0.0.1
    port: 80
    dests:
      - address: 192.168.1.10
        l_threshold: 5
      - address: 192.168.1.10
  - protocol: tcp
    address: 10.0.0.1
    port: 80
hosts:
  - name: a
    vms: [1.1.1.1]
  - name: a
";
        let errs = parse(text).unwrap_err();
        let find = |p: &str| {
            errs.iter()
                .find(|e| e.path == p)
                .unwrap_or_else(|| panic!("{p} in {errs:?}"))
        };
        assert_eq!(find("services[0].dests[0].l_threshold").line, Some(7));
        assert_eq!(find("services[0].dests[1].address").line, Some(8));
        assert_eq!(find("hosts[1].name").line, Some(15));
        assert_eq!(find("hosts[1].name").column, Some(5));
        // The duplicate service is reported at its item.
        let dup = errs
            .iter()
            .find(|e| e.message.contains("duplicate service"))
            .unwrap();
        assert_eq!((dup.line, dup.column), (Some(9), Some(3)));
    }

    #[test]
    fn plan_from_empty_then_noop() {
        let d = desired();
        let p = plan(
            &d,
            &Current {
                services: vec![],
                hosts: Some(vec![]),
            },
        );
        // hosts first, then services with their dests.
        assert!(matches!(
            p.steps[0].change,
            Change::Host(HostOp::Set { .. })
        ));
        let n_svc = p
            .steps
            .iter()
            .filter(|s| matches!(s.change, Change::Ipvs(Op::AddService(_))))
            .count();
        assert_eq!(n_svc, 2);
        assert_eq!(p.steps.len(), 2 + 2 + 3);
        // Current == desired: no changes.
        let cur = Current {
            services: d.services.clone().unwrap(),
            hosts: Some(
                d.hosts
                    .clone()
                    .unwrap()
                    .into_iter()
                    .map(|h| HostState {
                        name: h.name,
                        weight: h.weight,
                        members: h.members,
                        activeconns: 0,
                        inactconns: 0,
                        dests: 0,
                    })
                    .collect(),
            ),
        };
        let p2 = plan(&d, &cur);
        assert!(p2.is_empty(), "{p2}");
    }

    #[test]
    fn plan_minimal_and_ordered() {
        let d = desired();
        let mut cur_services = d.services.clone().unwrap();
        // Kernel has: weight 1 instead of 2, an extra dest, an extra service.
        cur_services[0].1[0].weight = 1;
        cur_services[0]
            .1
            .push(Dest::new("192.168.1.99".parse().unwrap(), 80));
        cur_services.push((
            Service::new(ServiceKey::tcp("10.9.9.9".parse().unwrap(), 443)),
            vec![],
        ));
        // And a new dest is wanted.
        let mut want = d.clone();
        want.services.as_mut().unwrap()[0]
            .1
            .push(Dest::new("192.168.1.12".parse().unwrap(), 80));
        let cur = Current {
            services: cur_services,
            hosts: None,
        };
        want.hosts = None;
        let p = plan(&want, &cur);
        let kinds: Vec<&str> = p
            .steps
            .iter()
            .map(|s| match &s.change {
                Change::Ipvs(Op::AddDest(..)) => "add",
                Change::Ipvs(Op::EditDest(..)) => "edit",
                Change::Ipvs(Op::DelDest(..)) => "deldest",
                Change::Ipvs(Op::DelService(..)) => "delsvc",
                _ => "other",
            })
            .collect();
        assert_eq!(kinds, vec!["add", "edit", "deldest", "delsvc"], "{p}");
        // Drain: the extra dest is set to weight 0 instead of deleted.
        want.remove = RemovePolicy::Drain;
        let p = plan(&want, &cur);
        assert!(p.steps.iter().any(|s| s.text.contains("(drain)")), "{p}");
        assert!(
            !p.steps
                .iter()
                .any(|s| matches!(s.change, Change::Ipvs(Op::DelDest(..)))),
            "{p}"
        );
    }

    #[test]
    fn save_roundtrip() {
        let d = desired();
        let hosts: Vec<HostState> = d
            .hosts
            .clone()
            .unwrap()
            .into_iter()
            .map(|h| HostState {
                name: h.name,
                weight: h.weight,
                members: h.members,
                activeconns: 0,
                inactconns: 0,
                dests: 0,
            })
            .collect();
        let cfg = from_state(d.services.as_deref(), Some(&hosts));
        let text = serde_yaml::to_string(&cfg).unwrap();
        let (_, d2) = parse(&text).unwrap();
        let p = plan(
            &d2,
            &Current {
                services: d.services.clone().unwrap(),
                hosts: Some(hosts),
            },
        );
        assert!(p.is_empty(), "{text}\n{p}");
    }

    #[test]
    fn embedded_sections() {
        let text = format!("vrrp:\n  vrid: 5\n{FILE}");
        let (_, d) = parse_sections(&text).unwrap();
        assert_eq!(d.services.unwrap().len(), 2);
        let bad = "vrrp: {}\nservices:\n  - protocol: tcp\n    address: 10.0.0.1\n    port: 0\n";
        let e = parse_sections(bad).unwrap_err();
        assert_eq!(e[0].line, Some(5), "{e:?}");
    }

    #[test]
    fn locator_paths() {
        let l = Locator::new(FILE);
        assert_eq!(l.find("services[1].dests[0].tunnel"), (Some(20), Some(9)));
        assert_eq!(l.find("hosts[1].vms[0]"), (Some(27), Some(7)));
        assert_eq!(l.find("services[0].dests[1].port"), (Some(13), Some(9)));
    }
}
