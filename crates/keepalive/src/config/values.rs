//! Validating value types: a bad value is reported by the YAML parser with
//! its path, line and column.

use std::fmt;
use std::net::IpAddr;

use serde::de::{self, Deserializer};
use serde::Deserialize;

/// Range-checks an integer inside the visitor, so serde_yaml reports the
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
ranged_int!(Weight, i32, -253, 253, "weight");
ranged_int!(Ttl, u8, 1, 255, "TTL");
// 0 and 4294967295 are reserved (RFC 7607, RFC 7300).
ranged_int!(Asn, u32, 1, 4_294_967_294, "AS number");
ranged_int!(BfdMultiplier, u8, 1, 255, "BFD multiplier");

/// `version: 2` or `3` of an instance.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct VrrpVersion(pub vrrp::packet::Version);

impl<'de> Deserialize<'de> for VrrpVersion {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = d.deserialize_i64(RangeVisitor {
            lo: 2,
            hi: 3,
            what: "version",
        })?;
        Ok(VrrpVersion(if v == 2 {
            vrrp::packet::Version::V2
        } else {
            vrrp::packet::Version::V3
        }))
    }
}

/// Advertisement interval in ms: a multiple of 10 from 10 to 40950 for
/// VRRPv3 (centiseconds in 12 bits), whole seconds up to 255 s for VRRPv2
/// (checked with the version, [`super::vrrp`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct AdvertIntervalMs(pub u32);

impl AdvertIntervalMs {
    pub fn centis(self) -> u16 {
        u16::try_from(self.0 / 10).unwrap_or(u16::MAX)
    }
}

impl<'de> Deserialize<'de> for AdvertIntervalMs {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl de::Visitor<'_> for V {
            type Value = u32;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a multiple of 10 from 10 to 40950 (VRRPv2: of 1000 up to 255000)")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<u32, E> {
                if !(10..=255_000).contains(&v) || v % 10 != 0 {
                    return Err(E::custom(format!(
                        "advert_interval_ms must be a multiple of 10 between 10 and 40950 (VRRPv3 centiseconds), got {v}"
                    )));
                }
                Ok(v as u32)
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<u32, E> {
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

/// A VIP announced by BGP: one address, as `ADDR` or `ADDR/32` (`/128`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct HostRoute(pub IpAddr);

impl HostRoute {
    pub fn cidr(&self) -> Cidr {
        let prefix = if self.0.is_ipv4() { 32 } else { 128 };
        Cidr {
            addr: self.0,
            prefix,
        }
    }
}

impl fmt::Display for HostRoute {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.cidr().fmt(f)
    }
}

impl<'de> Deserialize<'de> for HostRoute {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_str(StrVisitor("a host address (/32 or /128)", |s: &str| {
            let c: Cidr = s.parse()?;
            let max = if c.addr.is_ipv4() { 32 } else { 128 };
            if c.prefix != max {
                return Err(format!("{s:?} is not a host route (/{max})"));
            }
            Ok(HostRoute(c.addr))
        }))
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
