//! The identity of a virtual service: address family, protocol and
//! [`ServiceKey`].

use std::cmp::Ordering;
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

/// The order of the modern (non-ipvsadm) listings and saved files:
/// address services (IPv4 before IPv6, then by address, protocol, port),
/// then fwmark services (IPv4 before IPv6, then by mark).
impl Ord for ServiceKey {
    fn cmp(&self, other: &Self) -> Ordering {
        let rank = |k: &ServiceKey| match *k {
            ServiceKey::Addr {
                protocol,
                addr,
                port,
            } => (
                0u8,
                addr.is_ipv6(),
                addr_bits(addr),
                protocol.number(),
                port,
                0u32,
            ),
            ServiceKey::Fwmark { family, mark } => (1u8, family == Family::Inet6, 0, 0, 0, mark),
        };
        rank(self).cmp(&rank(other))
    }
}

impl PartialOrd for ServiceKey {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// An address as one number, IPv4 in the top 32 bits (as ipvsadm's word
/// comparison sees it).
fn addr_bits(a: IpAddr) -> u128 {
    match a {
        IpAddr::V4(v) => u128::from(u32::from(v)) << 96,
        IpAddr::V6(v) => u128::from(v),
    }
}

/// `a.b.c.d:port` or `[v6]:port`.
pub fn fmt_addr_port(addr: &IpAddr, port: u16) -> String {
    match addr {
        IpAddr::V4(a) => format!("{a}:{port}"),
        IpAddr::V6(a) => format!("[{a}]:{port}"),
    }
}
