//! A virtual service: its parameters and counters.

use std::fmt;
use std::net::Ipv4Addr;

use serde::{Deserialize, Serialize};

use super::consts::*;
use super::{Family, ServiceKey};

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
