//! Netlink attributes: [`Attr`], a tree to encode (through
//! `netlink_packet_core::Nla`), and [`Attrs`], one decoded level indexed
//! without allocating.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use netlink_packet_core::{Emitable, Nla, NlaBuffer, NlasIterator, NLA_F_NESTED};

use crate::Error;

/// A netlink attribute tree, encoded through `netlink_packet_core::Nla`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Attr {
    /// u8 value.
    U8(u16, u8),
    /// u16 in host order.
    U16(u16, u16),
    /// u16 in network order (ports).
    Be16(u16, u16),
    /// u32 in host order.
    U32(u16, u32),
    /// u64 in host order.
    U64(u16, u64),
    /// Raw bytes.
    Bytes(u16, Vec<u8>),
    /// NUL-terminated string.
    Str(u16, String),
    /// Nested attributes (sent with `NLA_F_NESTED`).
    Nested(u16, Vec<Attr>),
}

impl Nla for Attr {
    fn value_len(&self) -> usize {
        match self {
            Attr::U8(..) => 1,
            Attr::U16(..) | Attr::Be16(..) => 2,
            Attr::U32(..) => 4,
            Attr::U64(..) => 8,
            Attr::Bytes(_, v) => v.len(),
            Attr::Str(_, s) => s.len() + 1,
            Attr::Nested(_, v) => v.as_slice().buffer_len(),
        }
    }
    fn kind(&self) -> u16 {
        match self {
            Attr::U8(k, _)
            | Attr::U16(k, _)
            | Attr::Be16(k, _)
            | Attr::U32(k, _)
            | Attr::U64(k, _)
            | Attr::Bytes(k, _)
            | Attr::Str(k, _) => *k,
            Attr::Nested(k, _) => *k | NLA_F_NESTED,
        }
    }
    fn emit_value(&self, buf: &mut [u8]) {
        match self {
            Attr::U8(_, v) => buf[0] = *v,
            Attr::U16(_, v) => buf[..2].copy_from_slice(&v.to_ne_bytes()),
            Attr::Be16(_, v) => buf[..2].copy_from_slice(&v.to_be_bytes()),
            Attr::U32(_, v) => buf[..4].copy_from_slice(&v.to_ne_bytes()),
            Attr::U64(_, v) => buf[..8].copy_from_slice(&v.to_ne_bytes()),
            Attr::Bytes(_, v) => buf[..v.len()].copy_from_slice(v),
            Attr::Str(_, s) => {
                buf[..s.len()].copy_from_slice(s.as_bytes());
                buf[s.len()] = 0;
            }
            Attr::Nested(_, v) => v.as_slice().emit(buf),
        }
    }
}

/// Attribute types below this are looked up through an index; higher ones
/// (rare) by walking the attributes.
const INDEXED_KINDS: usize = 32;

/// Parsed attributes of one level. Parsing validates the whole run once and
/// indexes the last attribute of each type (the kernel's `nla_parse` keeps
/// the last), without allocating: listings parse several of these per real
/// server.
#[derive(Debug, Clone)]
pub struct Attrs<'a> {
    buf: &'a [u8],
    /// Offset + 1 of the last attribute of each low type (0 = absent).
    last: [u32; INDEXED_KINDS],
}

impl Default for Attrs<'_> {
    fn default() -> Self {
        Attrs {
            buf: &[],
            last: [0; INDEXED_KINDS],
        }
    }
}

impl<'a> Attrs<'a> {
    /// Parse a run of attributes.
    pub fn parse(buf: &'a [u8]) -> Result<Attrs<'a>, Error> {
        let mut last = [0u32; INDEXED_KINDS];
        let mut off = 0usize;
        for nla in NlasIterator::new(buf) {
            let nla: NlaBuffer<&'a [u8]> = nla.map_err(|e| Error::Decode(e.to_string()))?;
            let kind = nla.kind() as usize;
            if kind < INDEXED_KINDS {
                last[kind] = off as u32 + 1;
            }
            off += (nla.length() as usize + 3) & !3;
        }
        Ok(Attrs { buf, last })
    }
    /// `(type, value)` of every attribute, in wire order (already validated).
    fn iter(&self) -> impl Iterator<Item = (u16, &'a [u8])> + '_ {
        NlasIterator::new(self.buf).filter_map(|nla| {
            let nla: NlaBuffer<&'a [u8]> = nla.ok()?;
            let kind = nla.kind();
            let len = nla.value_length();
            Some((kind, &nla.into_inner()[4..4 + len]))
        })
    }
    /// The last attribute of a type (the kernel's `nla_parse` keeps the last).
    pub fn get(&self, kind: u16) -> Option<&'a [u8]> {
        if (kind as usize) < INDEXED_KINDS {
            let at = self.last[kind as usize] as usize;
            if at == 0 {
                return None;
            }
            let h = &self.buf[at - 1..];
            let len = u16::from_ne_bytes([h[0], h[1]]) as usize;
            return Some(&h[4..len]);
        }
        self.iter()
            .filter(|(k, _)| *k == kind)
            .last()
            .map(|(_, v)| v)
    }
    /// Does the attribute exist?
    pub fn has(&self, kind: u16) -> bool {
        self.get(kind).is_some()
    }
    /// All attributes of a type, in order.
    pub fn all(&self, kind: u16) -> impl Iterator<Item = &'a [u8]> + '_ {
        self.iter().filter(move |(k, _)| *k == kind).map(|(_, v)| v)
    }
    /// u8 value.
    pub fn u8(&self, kind: u16) -> Result<Option<u8>, Error> {
        self.get(kind)
            .map(|v| fixed::<1>(kind, v).map(|b| b[0]))
            .transpose()
    }
    /// u16 value, host order.
    pub fn u16(&self, kind: u16) -> Result<Option<u16>, Error> {
        self.get(kind)
            .map(|v| fixed::<2>(kind, v).map(u16::from_ne_bytes))
            .transpose()
    }
    /// u16 value, network order.
    pub fn be16(&self, kind: u16) -> Result<Option<u16>, Error> {
        self.get(kind)
            .map(|v| fixed::<2>(kind, v).map(u16::from_be_bytes))
            .transpose()
    }
    /// u32 value, host order.
    pub fn u32(&self, kind: u16) -> Result<Option<u32>, Error> {
        self.get(kind)
            .map(|v| fixed::<4>(kind, v).map(u32::from_ne_bytes))
            .transpose()
    }
    /// Raw 4 bytes.
    pub fn raw4(&self, kind: u16) -> Result<Option<[u8; 4]>, Error> {
        self.get(kind).map(|v| fixed::<4>(kind, v)).transpose()
    }
    /// u64 value, host order.
    pub fn u64(&self, kind: u16) -> Result<Option<u64>, Error> {
        self.get(kind)
            .map(|v| fixed::<8>(kind, v).map(u64::from_ne_bytes))
            .transpose()
    }
    /// NUL-terminated (or unterminated) string.
    pub fn string(&self, kind: u16) -> Option<String> {
        self.get(kind).map(|v| {
            let end = v.iter().position(|&b| b == 0).unwrap_or(v.len());
            String::from_utf8_lossy(&v[..end]).into_owned()
        })
    }
    /// Nested attributes.
    pub fn nested(&self, kind: u16) -> Result<Option<Attrs<'a>>, Error> {
        self.get(kind).map(Attrs::parse).transpose()
    }
}

fn fixed<const N: usize>(kind: u16, v: &[u8]) -> Result<[u8; N], Error> {
    if v.len() < N {
        return Err(Error::Decode(format!(
            "attribute {kind}: {} bytes, expected {N}",
            v.len()
        )));
    }
    let mut a = [0u8; N];
    a.copy_from_slice(&v[..N]);
    Ok(a)
}

/// Decode an address of a family from a 4- or 16-byte attribute.
pub fn addr_from_bytes(v6: bool, v: &[u8]) -> Result<IpAddr, Error> {
    if v6 {
        let b: [u8; 16] = fixed::<16>(0, v)?;
        Ok(IpAddr::V6(Ipv6Addr::from(b)))
    } else {
        let b: [u8; 4] = fixed::<4>(0, v)?;
        Ok(IpAddr::V4(Ipv4Addr::from(b)))
    }
}

/// 16-byte `union nf_inet_addr` encoding of an address.
pub fn addr_to_bytes16(a: &IpAddr) -> Vec<u8> {
    match a {
        IpAddr::V4(a) => {
            let mut v = a.octets().to_vec();
            v.resize(16, 0);
            v
        }
        IpAddr::V6(a) => a.octets().to_vec(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attrs_reject_short_values() {
        let buf = [5u8, 0, 1, 0, 9, 0, 0, 0];
        let a = Attrs::parse(&buf).unwrap();
        assert_eq!(a.u8(1).unwrap(), Some(9));
        assert!(a.u32(1).is_err());
    }
}
