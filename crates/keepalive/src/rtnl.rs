//! Minimal rtnetlink client: interface lookup and address add/delete.
//!
//! Uses the workspace's one netlink stack (netlink-sys + netlink-packet-route),
//! one socket per process, synchronous request/ack. Calls are short and happen
//! only on role changes, so they run inline on the event loop.

use std::io;
use std::net::IpAddr;

use netlink_packet_core::{
    NetlinkHeader, NetlinkMessage, NetlinkPayload, NLM_F_ACK, NLM_F_CREATE, NLM_F_DUMP, NLM_F_EXCL,
    NLM_F_REQUEST,
};
use netlink_packet_route::address::{
    AddressAttribute, AddressFlags, AddressHeaderFlags, AddressMessage, AddressScope,
};
use netlink_packet_route::link::{LinkAttribute, LinkFlags, LinkMessage};
use netlink_packet_route::{AddressFamily, RouteNetlinkMessage};
use netlink_sys::{protocols::NETLINK_ROUTE, Socket, SocketAddr};

use crate::config::Cidr;

/// An interface as far as VRRP needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Link {
    pub index: u32,
    pub mac: Option<[u8; 6]>,
    pub up: bool,
}

/// One address on an interface.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Addr {
    pub addr: IpAddr,
    pub prefix: u8,
    pub secondary: bool,
    pub tentative: bool,
    pub link_scope: bool,
}

pub struct Rtnl {
    sock: Socket,
    seq: u32,
}

impl Rtnl {
    pub fn new() -> io::Result<Rtnl> {
        let mut sock = Socket::new(NETLINK_ROUTE)?;
        sock.bind_auto()?;
        sock.connect(&SocketAddr::new(0, 0))?;
        let _ = sock.set_ext_ack(true);
        Ok(Rtnl { sock, seq: 0 })
    }

    fn request(
        &mut self,
        msg: RouteNetlinkMessage,
        flags: u16,
    ) -> io::Result<Vec<RouteNetlinkMessage>> {
        self.seq = self.seq.wrapping_add(1);
        let seq = self.seq;
        let mut header = NetlinkHeader::default();
        header.flags = NLM_F_REQUEST | flags;
        header.sequence_number = seq;
        let mut nl = NetlinkMessage::new(header, NetlinkPayload::from(msg));
        nl.finalize();
        let mut buf = vec![0u8; nl.buffer_len()];
        nl.serialize(&mut buf);
        self.sock.send(&buf, 0)?;
        let dump = flags & NLM_F_DUMP == NLM_F_DUMP;
        let mut out = Vec::new();
        loop {
            let (data, _) = self.sock.recv_from_full()?;
            let mut off = 0;
            while off < data.len() {
                let m = NetlinkMessage::<RouteNetlinkMessage>::deserialize(&data[off..])
                    .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e.to_string()))?;
                let len = m.header.length as usize;
                if len == 0 {
                    break;
                }
                off += (len + 3) & !3;
                if m.header.sequence_number != seq {
                    continue;
                }
                match m.payload {
                    NetlinkPayload::Error(e) => {
                        return match e.code {
                            None => Ok(out),
                            Some(_) => Err(e.to_io()),
                        }
                    }
                    NetlinkPayload::Done(_) => return Ok(out),
                    NetlinkPayload::InnerMessage(i) => {
                        out.push(i);
                        if !dump && flags & NLM_F_ACK == 0 {
                            return Ok(out);
                        }
                    }
                    _ => {}
                }
            }
        }
    }

    /// Look an interface up by name.
    pub fn link(&mut self, name: &str) -> io::Result<Link> {
        let index = nix::net::if_::if_nametoindex(name).map_err(|e| {
            io::Error::new(io::ErrorKind::NotFound, format!("interface {name}: {e}"))
        })?;
        let mut msg = LinkMessage::default();
        msg.header.index = index;
        let r = self.request(RouteNetlinkMessage::GetLink(msg), 0)?;
        for m in r {
            if let RouteNetlinkMessage::NewLink(l) = m {
                let mac = l.attributes.iter().find_map(|a| match a {
                    LinkAttribute::Address(b) if b.len() == 6 => {
                        let mut m = [0u8; 6];
                        m.copy_from_slice(b);
                        Some(m)
                    }
                    _ => None,
                });
                return Ok(Link {
                    index,
                    mac,
                    up: l.header.flags.contains(LinkFlags::Up),
                });
            }
        }
        Err(io::Error::new(
            io::ErrorKind::NotFound,
            format!("interface {name}: no link message"),
        ))
    }

    /// All addresses of one family on an interface, in kernel order (primary first).
    pub fn addrs(&mut self, index: u32, v6: bool) -> io::Result<Vec<Addr>> {
        let mut msg = AddressMessage::default();
        msg.header.family = if v6 {
            AddressFamily::Inet6
        } else {
            AddressFamily::Inet
        };
        let r = self.request(RouteNetlinkMessage::GetAddress(msg), NLM_F_DUMP)?;
        let mut out = Vec::new();
        for m in r {
            let RouteNetlinkMessage::NewAddress(a) = m else {
                continue;
            };
            if a.header.index != index {
                continue;
            }
            let mut flags = AddressFlags::from_bits_retain(u32::from(a.header.flags.bits()));
            let mut addr = None;
            let mut local = None;
            for attr in &a.attributes {
                match attr {
                    AddressAttribute::Address(x) => addr = Some(*x),
                    AddressAttribute::Local(x) => local = Some(*x),
                    AddressAttribute::Flags(f) => flags = *f,
                    _ => {}
                }
            }
            if let Some(addr) = local.or(addr) {
                if addr.is_ipv6() != v6 {
                    continue;
                }
                out.push(Addr {
                    addr,
                    prefix: a.header.prefix_len,
                    secondary: flags.contains(AddressFlags::Secondary),
                    tentative: flags.contains(AddressFlags::Tentative),
                    link_scope: a.header.scope == AddressScope::Link,
                });
            }
        }
        Ok(out)
    }

    fn addr_msg(index: u32, c: &Cidr) -> AddressMessage {
        let mut msg = AddressMessage::default();
        msg.header.family = if c.addr.is_ipv6() {
            AddressFamily::Inet6
        } else {
            AddressFamily::Inet
        };
        msg.header.prefix_len = c.prefix;
        msg.header.index = index;
        let link_local = matches!(c.addr, IpAddr::V6(a) if a.segments()[0] & 0xffc0 == 0xfe80);
        msg.header.scope = if link_local {
            AddressScope::Link
        } else {
            AddressScope::Universe
        };
        msg.attributes.push(AddressAttribute::Local(c.addr));
        if c.addr.is_ipv6() {
            // No duplicate address detection: the VIP must be usable at once
            // (keepalived does the same).
            msg.header.flags = AddressHeaderFlags::Nodad;
            msg.attributes
                .push(AddressAttribute::Flags(AddressFlags::Nodad));
        } else {
            msg.attributes.push(AddressAttribute::Address(c.addr));
        }
        msg
    }

    /// Add an address; an address that is already there is not an error.
    pub fn add_addr(&mut self, index: u32, c: &Cidr) -> io::Result<()> {
        let m = Self::addr_msg(index, c);
        match self.request(
            RouteNetlinkMessage::NewAddress(m),
            NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL,
        ) {
            Err(e) if e.raw_os_error() == Some(libc::EEXIST) => Ok(()),
            r => r.map(|_| ()),
        }
    }

    /// Delete an address; an address that is not there is not an error.
    pub fn del_addr(&mut self, index: u32, c: &Cidr) -> io::Result<()> {
        let m = Self::addr_msg(index, c);
        match self.request(RouteNetlinkMessage::DelAddress(m), NLM_F_ACK) {
            Err(e)
                if e.raw_os_error() == Some(libc::EADDRNOTAVAIL)
                    || e.raw_os_error() == Some(libc::ENODEV) =>
            {
                Ok(())
            }
            r => r.map(|_| ()),
        }
    }
}
