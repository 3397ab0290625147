//! Plain typed values of the IPVS configuration: services, destinations,
//! statistics, timeouts, sync daemons and module info.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use serde::{Deserialize, Serialize};

use super::consts::*;

/// Address family of a service, destination or multicast group.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Family {
    /// IPv4 (`AF_INET`).
    Inet,
    /// IPv6 (`AF_INET6`).
    Inet6,
}

impl Family {
    /// The `AF_*` value.
    pub fn to_af(self) -> u16 {
        match self {
            Family::Inet => AF_INET,
            Family::Inet6 => AF_INET6,
        }
    }
    /// From an `AF_*` value.
    pub fn from_af(af: u16) -> Option<Family> {
        match af {
            AF_INET => Some(Family::Inet),
            AF_INET6 => Some(Family::Inet6),
            _ => None,
        }
    }
    /// The family of an address.
    pub fn of(addr: &IpAddr) -> Family {
        match addr {
            IpAddr::V4(_) => Family::Inet,
            IpAddr::V6(_) => Family::Inet6,
        }
    }
}

/// Transport protocol of a virtual service.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Protocol {
    /// TCP (6).
    Tcp,
    /// UDP (17).
    Udp,
    /// SCTP (132).
    Sctp,
    /// Any other IP protocol number (the kernel does not check it).
    Other(u16),
}

impl Protocol {
    /// The IP protocol number.
    pub fn number(self) -> u16 {
        match self {
            Protocol::Tcp => IPPROTO_TCP,
            Protocol::Udp => IPPROTO_UDP,
            Protocol::Sctp => IPPROTO_SCTP,
            Protocol::Other(n) => n,
        }
    }
    /// From an IP protocol number.
    pub fn from_number(n: u16) -> Protocol {
        match n {
            IPPROTO_TCP => Protocol::Tcp,
            IPPROTO_UDP => Protocol::Udp,
            IPPROTO_SCTP => Protocol::Sctp,
            n => Protocol::Other(n),
        }
    }
    /// Lower-case name (`tcp`, `udp`, `sctp`, or the number).
    pub fn name(self) -> String {
        match self {
            Protocol::Tcp => "tcp".into(),
            Protocol::Udp => "udp".into(),
            Protocol::Sctp => "sctp".into(),
            Protocol::Other(n) => n.to_string(),
        }
    }
    /// Parse `tcp`, `udp`, `sctp` (any case) or a number.
    pub fn parse(s: &str) -> Option<Protocol> {
        match s.to_ascii_lowercase().as_str() {
            "tcp" => Some(Protocol::Tcp),
            "udp" => Some(Protocol::Udp),
            "sctp" => Some(Protocol::Sctp),
            other => other.parse::<u16>().ok().map(Protocol::from_number),
        }
    }
}

impl fmt::Display for Protocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

impl Serialize for Protocol {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.name())
    }
}

impl<'de> Deserialize<'de> for Protocol {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Protocol::parse(&s).ok_or_else(|| {
            serde::de::Error::custom(format!("unknown protocol `{s}' (tcp, udp, sctp)"))
        })
    }
}

/// The identity of a virtual service: protocol + address + port, or a
/// firewall mark (with its address family).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ServiceKey {
    /// `-t/-u/--sctp-service addr:port`.
    Addr {
        /// Transport protocol.
        protocol: Protocol,
        /// Virtual address.
        addr: IpAddr,
        /// Virtual port (0 only for persistent services).
        port: u16,
    },
    /// `-f mark [-6]`.
    Fwmark {
        /// Address family of the fwmark service.
        family: Family,
        /// The firewall mark (non-zero).
        mark: u32,
    },
}

impl ServiceKey {
    /// TCP service key.
    pub fn tcp(addr: IpAddr, port: u16) -> Self {
        ServiceKey::Addr {
            protocol: Protocol::Tcp,
            addr,
            port,
        }
    }
    /// UDP service key.
    pub fn udp(addr: IpAddr, port: u16) -> Self {
        ServiceKey::Addr {
            protocol: Protocol::Udp,
            addr,
            port,
        }
    }
    /// IPv4 fwmark service key.
    pub fn fwmark(mark: u32) -> Self {
        ServiceKey::Fwmark {
            family: Family::Inet,
            mark,
        }
    }
    /// Address family.
    pub fn family(&self) -> Family {
        match self {
            ServiceKey::Addr { addr, .. } => Family::of(addr),
            ServiceKey::Fwmark { family, .. } => *family,
        }
    }
    /// Protocol as the kernel records it (TCP for fwmark services).
    pub fn protocol(&self) -> Protocol {
        match self {
            ServiceKey::Addr { protocol, .. } => *protocol,
            ServiceKey::Fwmark { .. } => Protocol::Tcp,
        }
    }
    /// Virtual port (0 for fwmark services).
    pub fn port(&self) -> u16 {
        match self {
            ServiceKey::Addr { port, .. } => *port,
            ServiceKey::Fwmark { .. } => 0,
        }
    }
    /// Firewall mark (0 for address services).
    pub fn mark(&self) -> u32 {
        match self {
            ServiceKey::Addr { .. } => 0,
            ServiceKey::Fwmark { mark, .. } => *mark,
        }
    }
    /// Virtual address (unspecified address for fwmark services).
    pub fn addr(&self) -> IpAddr {
        match self {
            ServiceKey::Addr { addr, .. } => *addr,
            ServiceKey::Fwmark {
                family: Family::Inet,
                ..
            } => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
            ServiceKey::Fwmark {
                family: Family::Inet6,
                ..
            } => IpAddr::V6(Ipv6Addr::UNSPECIFIED),
        }
    }
}

impl fmt::Display for ServiceKey {
    /// `tcp 10.0.0.1:80`, `udp [2001:db8::1]:53`, `fwmark 7`, `fwmark 7 ipv6`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ServiceKey::Addr {
                protocol,
                addr,
                port,
            } => {
                write!(f, "{} {}", protocol, fmt_addr_port(addr, *port))
            }
            ServiceKey::Fwmark {
                family: Family::Inet,
                mark,
            } => write!(f, "fwmark {mark}"),
            ServiceKey::Fwmark {
                family: Family::Inet6,
                mark,
            } => write!(f, "fwmark {mark} ipv6"),
        }
    }
}

/// `a.b.c.d:port` or `[v6]:port`.
pub fn fmt_addr_port(addr: &IpAddr, port: u16) -> String {
    match addr {
        IpAddr::V4(a) => format!("{a}:{port}"),
        IpAddr::V6(a) => format!("[{a}]:{port}"),
    }
}

/// Persistence granularity: a network-order IPv4 mask, or an IPv6 prefix
/// length (the same netlink attribute carries either, by address family).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Netmask {
    /// IPv4 mask, e.g. 255.255.255.0.
    V4(Ipv4Addr),
    /// IPv6 prefix length 1..=128.
    V6(u32),
}

impl Netmask {
    /// The default (host) granularity for a family: /32 or /128.
    pub fn host(family: Family) -> Netmask {
        match family {
            Family::Inet => Netmask::V4(Ipv4Addr::BROADCAST),
            Family::Inet6 => Netmask::V6(128),
        }
    }
    /// The raw 32-bit attribute value in host memory order (network order
    /// bytes for IPv4, a native integer for IPv6).
    pub fn to_wire(self) -> [u8; 4] {
        match self {
            Netmask::V4(a) => a.octets(),
            Netmask::V6(p) => p.to_ne_bytes(),
        }
    }
    /// Decode the raw attribute for a family.
    pub fn from_wire(family: Family, raw: [u8; 4]) -> Netmask {
        match family {
            Family::Inet => Netmask::V4(Ipv4Addr::from(raw)),
            Family::Inet6 => Netmask::V6(u32::from_ne_bytes(raw)),
        }
    }
    /// Is this the /32 or /128 default?
    pub fn is_host(self) -> bool {
        match self {
            Netmask::V4(a) => a == Ipv4Addr::BROADCAST,
            Netmask::V6(p) => p == 128,
        }
    }
}

impl fmt::Display for Netmask {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Netmask::V4(a) => write!(f, "{a}"),
            Netmask::V6(p) => write!(f, "{p}"),
        }
    }
}

/// Packet and byte counters with their estimated rates. From `STATS64`
/// when the kernel sends it (always since 4.0), else from the 32-bit `STATS`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stats {
    /// Connections scheduled.
    pub conns: u64,
    /// Incoming packets.
    pub inpkts: u64,
    /// Outgoing packets.
    pub outpkts: u64,
    /// Incoming bytes.
    pub inbytes: u64,
    /// Outgoing bytes.
    pub outbytes: u64,
    /// Connections per second.
    pub cps: u64,
    /// Incoming packets per second.
    pub inpps: u64,
    /// Outgoing packets per second.
    pub outpps: u64,
    /// Incoming bytes per second.
    pub inbps: u64,
    /// Outgoing bytes per second.
    pub outbps: u64,
}

/// A virtual service.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Service {
    /// Identity.
    pub key: ServiceKey,
    /// Scheduler name (an open string: custom schedulers exist; `none` means
    /// no scheduler).
    pub scheduler: String,
    /// `IP_VS_SVC_F_*` flags, with `HASHED` stripped.
    pub flags: u32,
    /// Persistence timeout in seconds (meaningful with `PERSISTENT`).
    pub timeout: u32,
    /// Persistence granularity.
    pub netmask: Netmask,
    /// Persistence engine (e.g. `sip`), if any.
    pub pe_name: Option<String>,
    /// Counters (read only; ignored when writing).
    pub stats: Stats,
}

impl Service {
    /// A service with ipvsadm's defaults: `wlc`, not persistent, host mask.
    pub fn new(key: ServiceKey) -> Service {
        Service {
            key,
            scheduler: "wlc".into(),
            flags: 0,
            timeout: 0,
            netmask: Netmask::host(key.family()),
            pe_name: None,
            stats: Stats::default(),
        }
    }
    /// Builder: scheduler.
    pub fn with_scheduler(mut self, s: &str) -> Service {
        self.scheduler = s.into();
        self
    }
    /// Builder: persistence with a timeout in seconds.
    pub fn with_persistence(mut self, timeout: u32) -> Service {
        self.flags |= IP_VS_SVC_F_PERSISTENT;
        self.timeout = timeout;
        self
    }
    /// Is the service persistent?
    pub fn persistent(&self) -> bool {
        self.flags & IP_VS_SVC_F_PERSISTENT != 0
    }
    /// One-packet scheduling?
    pub fn one_packet(&self) -> bool {
        self.flags & IP_VS_SVC_F_ONEPACKET != 0
    }
}

/// Packet forwarding method of a destination.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Forward {
    /// NAT (`-m`).
    Masq,
    /// Local node.
    Local,
    /// IP tunnel (`-i`).
    Tunnel,
    /// Direct routing (`-g`, the default).
    Route,
    /// Bypass.
    Bypass,
    /// Unknown value.
    Other(u32),
}

impl Forward {
    /// The `IP_VS_CONN_F_*` value.
    pub fn to_raw(self) -> u32 {
        match self {
            Forward::Masq => IP_VS_CONN_F_MASQ,
            Forward::Local => IP_VS_CONN_F_LOCALNODE,
            Forward::Tunnel => IP_VS_CONN_F_TUNNEL,
            Forward::Route => IP_VS_CONN_F_DROUTE,
            Forward::Bypass => IP_VS_CONN_F_BYPASS,
            Forward::Other(v) => v,
        }
    }
    /// From connection flags (masked with `IP_VS_CONN_F_FWD_MASK`).
    pub fn from_raw(v: u32) -> Forward {
        match v & IP_VS_CONN_F_FWD_MASK {
            IP_VS_CONN_F_MASQ => Forward::Masq,
            IP_VS_CONN_F_LOCALNODE => Forward::Local,
            IP_VS_CONN_F_TUNNEL => Forward::Tunnel,
            IP_VS_CONN_F_DROUTE => Forward::Route,
            IP_VS_CONN_F_BYPASS => Forward::Bypass,
            v => Forward::Other(v),
        }
    }
    /// Name used in YAML/JSON: masq, local, tunnel, route, bypass.
    pub fn name(self) -> String {
        match self {
            Forward::Masq => "masq".into(),
            Forward::Local => "local".into(),
            Forward::Tunnel => "tunnel".into(),
            Forward::Route => "route".into(),
            Forward::Bypass => "bypass".into(),
            Forward::Other(v) => v.to_string(),
        }
    }
    /// Parse a name (also accepts `nat`, `dr`, `gatewaying`, `ipip`, `masquerading`).
    pub fn parse(s: &str) -> Option<Forward> {
        match s.to_ascii_lowercase().as_str() {
            "masq" | "nat" | "masquerading" => Some(Forward::Masq),
            "local" => Some(Forward::Local),
            "tunnel" | "tun" | "ipip" => Some(Forward::Tunnel),
            "route" | "dr" | "gatewaying" | "direct" => Some(Forward::Route),
            "bypass" => Some(Forward::Bypass),
            _ => None,
        }
    }
}

impl Serialize for Forward {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.name())
    }
}

impl<'de> Deserialize<'de> for Forward {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Forward::parse(&s).ok_or_else(|| {
            serde::de::Error::custom(format!(
                "unknown forwarding method `{s}' (route, masq, tunnel, local)"
            ))
        })
    }
}

/// Tunnel encapsulation type (for `Forward::Tunnel`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum TunnelType {
    /// IP-in-IP (default).
    #[default]
    Ipip,
    /// Generic UDP Encapsulation (needs a port).
    Gue,
    /// GRE.
    Gre,
    /// Unknown value.
    Other(u8),
}

impl TunnelType {
    /// Wire value.
    pub fn to_raw(self) -> u8 {
        match self {
            TunnelType::Ipip => IP_VS_CONN_F_TUNNEL_TYPE_IPIP,
            TunnelType::Gue => IP_VS_CONN_F_TUNNEL_TYPE_GUE,
            TunnelType::Gre => IP_VS_CONN_F_TUNNEL_TYPE_GRE,
            TunnelType::Other(v) => v,
        }
    }
    /// From the wire value.
    pub fn from_raw(v: u8) -> TunnelType {
        match v {
            IP_VS_CONN_F_TUNNEL_TYPE_IPIP => TunnelType::Ipip,
            IP_VS_CONN_F_TUNNEL_TYPE_GUE => TunnelType::Gue,
            IP_VS_CONN_F_TUNNEL_TYPE_GRE => TunnelType::Gre,
            v => TunnelType::Other(v),
        }
    }
    /// `ipip`, `gue`, `gre`.
    pub fn name(self) -> String {
        match self {
            TunnelType::Ipip => "ipip".into(),
            TunnelType::Gue => "gue".into(),
            TunnelType::Gre => "gre".into(),
            TunnelType::Other(v) => v.to_string(),
        }
    }
    /// Parse `ipip`, `gue`, `gre`.
    pub fn parse(s: &str) -> Option<TunnelType> {
        match s {
            "ipip" => Some(TunnelType::Ipip),
            "gue" => Some(TunnelType::Gue),
            "gre" => Some(TunnelType::Gre),
            _ => None,
        }
    }
}

impl Serialize for TunnelType {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.name())
    }
}

impl<'de> Deserialize<'de> for TunnelType {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        TunnelType::parse(&s).ok_or_else(|| {
            serde::de::Error::custom(format!("unknown tunnel type `{s}' (ipip, gue, gre)"))
        })
    }
}

/// Tunnel checksum mode (`IP_VS_TUNNEL_ENCAP_FLAG_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum TunnelCsum {
    /// No checksum (0).
    #[default]
    NoCsum,
    /// Checksum (1).
    Csum,
    /// Remote checksum offload (2).
    RemCsum,
    /// Any other combination.
    Other(u16),
}

impl TunnelCsum {
    /// Wire value.
    pub fn to_raw(self) -> u16 {
        match self {
            TunnelCsum::NoCsum => IP_VS_TUNNEL_ENCAP_FLAG_NOCSUM,
            TunnelCsum::Csum => IP_VS_TUNNEL_ENCAP_FLAG_CSUM,
            TunnelCsum::RemCsum => IP_VS_TUNNEL_ENCAP_FLAG_REMCSUM,
            TunnelCsum::Other(v) => v,
        }
    }
    /// From the wire value.
    pub fn from_raw(v: u16) -> TunnelCsum {
        match v {
            IP_VS_TUNNEL_ENCAP_FLAG_NOCSUM => TunnelCsum::NoCsum,
            IP_VS_TUNNEL_ENCAP_FLAG_CSUM => TunnelCsum::Csum,
            IP_VS_TUNNEL_ENCAP_FLAG_REMCSUM => TunnelCsum::RemCsum,
            v => TunnelCsum::Other(v),
        }
    }
    /// `nocsum`, `csum`, `remcsum`.
    pub fn name(self) -> String {
        match self {
            TunnelCsum::NoCsum => "nocsum".into(),
            TunnelCsum::Csum => "csum".into(),
            TunnelCsum::RemCsum => "remcsum".into(),
            TunnelCsum::Other(v) => v.to_string(),
        }
    }
    /// Parse `nocsum`, `csum`, `remcsum`.
    pub fn parse(s: &str) -> Option<TunnelCsum> {
        match s {
            "nocsum" => Some(TunnelCsum::NoCsum),
            "csum" => Some(TunnelCsum::Csum),
            "remcsum" => Some(TunnelCsum::RemCsum),
            _ => None,
        }
    }
}

impl Serialize for TunnelCsum {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.name())
    }
}

impl<'de> Deserialize<'de> for TunnelCsum {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        TunnelCsum::parse(&s).ok_or_else(|| {
            serde::de::Error::custom(format!(
                "unknown tunnel checksum mode `{s}' (nocsum, csum, remcsum)"
            ))
        })
    }
}

/// A real server (destination) of a virtual service.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dest {
    /// Address (its family may differ from the service's only for tunnels).
    pub addr: IpAddr,
    /// Port.
    pub port: u16,
    /// Forwarding method.
    pub fwd: Forward,
    /// Weight (0 quiesces the server).
    pub weight: u32,
    /// Upper connection threshold (0 = none).
    pub u_threshold: u32,
    /// Lower connection threshold.
    pub l_threshold: u32,
    /// Tunnel type (tunnel forwarding only).
    pub tun_type: TunnelType,
    /// Tunnel destination port (GUE).
    pub tun_port: u16,
    /// Tunnel checksum flags.
    pub tun_flags: TunnelCsum,
    /// Active connections (read only).
    pub active_conns: u32,
    /// Inactive connections (read only).
    pub inact_conns: u32,
    /// Persistent connection templates (read only).
    pub persist_conns: u32,
    /// Counters (read only).
    pub stats: Stats,
}

impl Dest {
    /// A destination with ipvsadm's defaults: direct routing, weight 1.
    pub fn new(addr: IpAddr, port: u16) -> Dest {
        Dest {
            addr,
            port,
            fwd: Forward::Route,
            weight: 1,
            u_threshold: 0,
            l_threshold: 0,
            tun_type: TunnelType::Ipip,
            tun_port: 0,
            tun_flags: TunnelCsum::NoCsum,
            active_conns: 0,
            inact_conns: 0,
            persist_conns: 0,
            stats: Stats::default(),
        }
    }
    /// Builder: forwarding method.
    pub fn with_fwd(mut self, fwd: Forward) -> Dest {
        self.fwd = fwd;
        self
    }
    /// Builder: weight.
    pub fn with_weight(mut self, w: u32) -> Dest {
        self.weight = w;
        self
    }
    /// Address family.
    pub fn family(&self) -> Family {
        Family::of(&self.addr)
    }
}

/// Connection timeouts in seconds (`--set tcp tcpfin udp`; 0 = unchanged
/// when setting).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Timeouts {
    /// Established TCP.
    pub tcp: u32,
    /// TCP after FIN.
    pub tcp_fin: u32,
    /// UDP.
    pub udp: u32,
}

/// State (role) of a connection synchronisation daemon.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DaemonState {
    /// Sends sync messages.
    Master,
    /// Receives sync messages.
    Backup,
}

impl DaemonState {
    /// Wire value.
    pub fn to_raw(self) -> u32 {
        match self {
            DaemonState::Master => IP_VS_STATE_MASTER,
            DaemonState::Backup => IP_VS_STATE_BACKUP,
        }
    }
    /// `master` / `backup`.
    pub fn name(self) -> &'static str {
        match self {
            DaemonState::Master => "master",
            DaemonState::Backup => "backup",
        }
    }
}

/// A connection synchronisation daemon.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SyncDaemon {
    /// Master or backup.
    pub state: DaemonState,
    /// Multicast interface (default `eth0` in ipvsadm).
    pub mcast_ifn: String,
    /// Sync id 0..255.
    pub sync_id: u32,
    /// Maximum sync message length.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sync_maxlen: Option<u16>,
    /// Multicast group (IPv4 or IPv6).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mcast_group: Option<IpAddr>,
    /// UDP port.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mcast_port: Option<u16>,
    /// Multicast TTL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mcast_ttl: Option<u8>,
}

impl SyncDaemon {
    /// A daemon with the given role on an interface, sync id 0.
    pub fn new(state: DaemonState, mcast_ifn: &str) -> SyncDaemon {
        SyncDaemon {
            state,
            mcast_ifn: mcast_ifn.into(),
            sync_id: 0,
            sync_maxlen: None,
            mcast_group: None,
            mcast_port: None,
            mcast_ttl: None,
        }
    }
}

/// `IPVS_CMD_GET_INFO`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Info {
    /// Version code, e.g. 0x010201.
    pub version: u32,
    /// Connection hash table size.
    pub conn_tab_size: u32,
}

impl Info {
    /// `major.minor.patch`.
    pub fn version_string(&self) -> String {
        format!(
            "{}.{}.{}",
            (self.version >> 16) & 0xff,
            (self.version >> 8) & 0xff,
            self.version & 0xff
        )
    }
}
