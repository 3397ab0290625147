//! A real server (destination): forwarding method, tunnel, weight and
//! thresholds.

use std::net::IpAddr;

use serde::{Deserialize, Serialize};

use super::consts::*;
use super::{Family, Stats};

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
