//! rtnetlink: interface lookup, address add/delete ([`Rtnl`], synchronous
//! request/ACK, short calls made on role changes, inline on the event loop)
//! and the link and address events the daemon watches ([`Monitor`]).
//!
//! Requests go through the `ipvs-netlink` engine (one request/ACK/dump
//! loop for IPVS, VMWLCH and rtnetlink); the event subscription is a
//! socket of its own that only listens (netlink-sys), its datagrams walked
//! by [`messages`].

use std::io;
use std::net::IpAddr;

use ipvs_netlink::Netlink;
use netlink_packet_core::{NetlinkMessage, NetlinkPayload, NLM_F_CREATE, NLM_F_DUMP, NLM_F_EXCL};
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
    /// Operationally up: administratively up and with a carrier
    /// (IFF_UP and IFF_RUNNING).
    pub up: bool,
}

/// The name and state of a link message.
fn link_of(l: &LinkMessage) -> (String, Link) {
    let mut name = String::new();
    let mut mac = None;
    for a in &l.attributes {
        match a {
            LinkAttribute::IfName(n) => name = n.clone(),
            LinkAttribute::Address(b) if b.len() == 6 => {
                let mut m = [0u8; 6];
                m.copy_from_slice(b);
                mac = Some(m);
            }
            _ => {}
        }
    }
    let f = l.header.flags;
    let link = Link {
        index: l.header.index,
        mac,
        up: f.contains(LinkFlags::Up) && f.contains(LinkFlags::Running),
    };
    (name, link)
}

/// The netlink messages in one datagram.
pub fn messages(data: &[u8]) -> io::Result<Vec<NetlinkMessage<RouteNetlinkMessage>>> {
    let mut out = Vec::new();
    let mut off = 0;
    while off < data.len() {
        let m = NetlinkMessage::<RouteNetlinkMessage>::deserialize(&data[off..])
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e.to_string()))?;
        let len = m.header.length as usize;
        if len == 0 {
            break;
        }
        off += (len + 3) & !3;
        out.push(m);
    }
    Ok(out)
}

/// A change the kernel announced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// A link appeared or changed.
    Link { name: String, link: Link },
    /// A link was removed.
    LinkGone { name: String, index: u32 },
    /// An address was added (or removed) on interface `index`.
    Addr {
        index: u32,
        addr: IpAddr,
        prefix: u8,
        added: bool,
    },
    /// Events were lost (the socket's buffer overran): read the state again.
    Overrun,
}

fn addr_of(a: &AddressMessage) -> Option<(IpAddr, u8)> {
    let mut addr = None;
    let mut local = None;
    for attr in &a.attributes {
        match attr {
            AddressAttribute::Address(x) => addr = Some(*x),
            AddressAttribute::Local(x) => local = Some(*x),
            _ => {}
        }
    }
    local.or(addr).map(|x| (x, a.header.prefix_len))
}

/// Subscription to link and IPv4/IPv6 address events (RTMGRP_LINK,
/// RTMGRP_IPV4_IFADDR, RTMGRP_IPV6_IFADDR) on a non-blocking socket of
/// its own.
pub struct Monitor {
    sock: Socket,
}

impl std::os::fd::AsRawFd for Monitor {
    fn as_raw_fd(&self) -> std::os::fd::RawFd {
        self.sock.as_raw_fd()
    }
}

impl Monitor {
    pub fn open() -> io::Result<Monitor> {
        const GROUPS: u32 = 0x1 | 0x10 | 0x100;
        let mut sock = Socket::new(NETLINK_ROUTE)?;
        sock.bind(&SocketAddr::new(0, GROUPS))?;
        sock.set_non_blocking(true)?;
        // Room for bursts (many addresses flushed at once); an overrun is
        // still handled, by reading the state again.
        let _ = sock.set_rx_buf_sz(1 << 20);
        Ok(Monitor { sock })
    }

    /// Read what has arrived (until the socket would block).
    pub fn read(&self, out: &mut Vec<Event>) -> io::Result<()> {
        loop {
            let data = match self.sock.recv_from_full() {
                Ok((d, _)) => d,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) if e.raw_os_error() == Some(libc::ENOBUFS) => {
                    out.push(Event::Overrun);
                    continue;
                }
                Err(e) => return Err(e),
            };
            for m in messages(&data)? {
                let NetlinkPayload::InnerMessage(i) = m.payload else {
                    continue;
                };
                let added = matches!(i, RouteNetlinkMessage::NewAddress(_));
                match i {
                    RouteNetlinkMessage::NewLink(l) => {
                        let (name, link) = link_of(&l);
                        out.push(Event::Link { name, link });
                    }
                    RouteNetlinkMessage::DelLink(l) => {
                        let (name, link) = link_of(&l);
                        out.push(Event::LinkGone {
                            name,
                            index: link.index,
                        });
                    }
                    RouteNetlinkMessage::NewAddress(a) | RouteNetlinkMessage::DelAddress(a) => {
                        if let Some((addr, prefix)) = addr_of(&a) {
                            out.push(Event::Addr {
                                index: a.header.index,
                                addr,
                                prefix,
                                added,
                            });
                        }
                    }
                    _ => {}
                }
            }
        }
    }
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

/// Requests to the kernel, on the project's netlink engine
/// ([`ipvs_netlink::Netlink`]: the same request/ACK/dump loop as IPVS and
/// VMWLCH).
pub struct Rtnl {
    nl: Netlink,
}

fn io_error(e: ipvs_netlink::Error) -> io::Error {
    match e.errno() {
        Some(errno) => io::Error::from_raw_os_error(errno),
        None => io::Error::other(e.to_string()),
    }
}

impl Rtnl {
    pub fn new() -> io::Result<Rtnl> {
        Ok(Rtnl {
            nl: Netlink::open_route().map_err(io_error)?,
        })
    }

    /// One request (`flags` besides REQUEST and ACK), its replies; a dump
    /// with `NLM_F_DUMP`.
    pub fn request(
        &mut self,
        msg: RouteNetlinkMessage,
        flags: u16,
    ) -> io::Result<Vec<RouteNetlinkMessage>> {
        if flags & NLM_F_DUMP == NLM_F_DUMP {
            self.nl.dump(msg).map_err(io_error)
        } else {
            self.nl.request(msg, flags).map_err(io_error)
        }
    }

    /// Every interface, by name.
    pub fn links(&mut self) -> io::Result<Vec<(String, Link)>> {
        let r = self.request(
            RouteNetlinkMessage::GetLink(LinkMessage::default()),
            NLM_F_DUMP,
        )?;
        Ok(r.into_iter()
            .filter_map(|m| match m {
                RouteNetlinkMessage::NewLink(l) => Some(link_of(&l)),
                _ => None,
            })
            .collect())
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
            NLM_F_CREATE | NLM_F_EXCL,
        ) {
            Err(e) if e.raw_os_error() == Some(libc::EEXIST) => Ok(()),
            r => r.map(|_| ()),
        }
    }

    /// Delete an address; an address that is not there is not an error.
    pub fn del_addr(&mut self, index: u32, c: &Cidr) -> io::Result<()> {
        let m = Self::addr_msg(index, c);
        match self.request(RouteNetlinkMessage::DelAddress(m), 0) {
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
