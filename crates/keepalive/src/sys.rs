//! Raw sockets: VRRP (IP protocol 112) for IPv4/IPv6, AF_PACKET for
//! gratuitous ARP, ICMPv6 for unsolicited NAs.
//!
//! nix covers socket creation and the common options; the few options it
//! lacks (IP_HDRINCL, IP_MULTICAST_ALL, ip_mreqn/ipv6_mreq with an interface
//! index, IPV6_RECVHOPLIMIT and its control message) are set through libc in
//! the small `setopt` helper. All sockets are non-blocking and bound to their
//! interface with SO_BINDTODEVICE.

use std::ffi::OsString;
use std::io;
use std::mem;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd, RawFd};

use nix::sys::socket::{self as ns, sockopt, AddressFamily, SockFlag, SockProtocol, SockType};

use vrrp::packet::IPPROTO_VRRP;

fn setopt<T>(fd: RawFd, level: libc::c_int, name: libc::c_int, val: &T) -> io::Result<()> {
    // SAFETY: `val` points to a live, initialised T of the given size for the
    // duration of the call; the kernel copies it and keeps no reference.
    let r = unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            (val as *const T).cast(),
            mem::size_of::<T>() as libc::socklen_t,
        )
    };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

fn raw_socket(family: AddressFamily, ty: SockType, proto: libc::c_int) -> io::Result<OwnedFd> {
    // SAFETY: plain socket(2) call; the returned descriptor is owned by us.
    let fd = unsafe {
        libc::socket(
            family as libc::c_int,
            ty as libc::c_int | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
            proto,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fd is a fresh, valid descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn bind_device(fd: &OwnedFd, ifname: &str) -> io::Result<()> {
    ns::setsockopt(fd, sockopt::BindToDevice, &OsString::from(ifname)).map_err(io::Error::from)
}

/// A VRRP raw socket on one interface for one address family.
pub struct VrrpSocket {
    fd: OwnedFd,
    pub v6: bool,
    pub ifindex: u32,
    joined: std::sync::atomic::AtomicBool,
}

impl AsRawFd for VrrpSocket {
    fn as_raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

/// Metadata of a received IPv6 packet.
#[derive(Debug, Clone, Copy)]
pub struct RecvV6 {
    pub len: usize,
    pub src: Ipv6Addr,
    pub dst: Option<Ipv6Addr>,
    pub hops: Option<u8>,
}

impl VrrpSocket {
    /// IPv4: we build the IP header ourselves (IP_HDRINCL) so that the source
    /// address, TTL 255 and the pseudo-header checksum agree exactly.
    pub fn open_v4(ifname: &str, ifindex: u32, join: bool) -> io::Result<VrrpSocket> {
        let fd = raw_socket(
            AddressFamily::Inet,
            SockType::Raw,
            libc::c_int::from(IPPROTO_VRRP),
        )?;
        bind_device(&fd, ifname)?;
        let raw = fd.as_raw_fd();
        setopt(raw, libc::IPPROTO_IP, libc::IP_HDRINCL, &1i32)?;
        ns::setsockopt(&fd, sockopt::IpMulticastLoop, &false)?;
        ns::setsockopt(&fd, sockopt::IpMulticastTtl, &255u8)?;
        let _ = setopt(raw, libc::IPPROTO_IP, libc::IP_MULTICAST_ALL, &0i32);
        let mreqn = libc::ip_mreqn {
            imr_multiaddr: libc::in_addr {
                s_addr: u32::from(vrrp::packet::MCAST_V4).to_be(),
            },
            imr_address: libc::in_addr { s_addr: 0 },
            imr_ifindex: ifindex as libc::c_int,
        };
        setopt(raw, libc::IPPROTO_IP, libc::IP_MULTICAST_IF, &mreqn)?;
        let s = VrrpSocket {
            fd,
            v6: false,
            ifindex,
            joined: Default::default(),
        };
        s.set_membership(join)?;
        Ok(s)
    }

    pub fn open_v6(ifname: &str, ifindex: u32, join: bool) -> io::Result<VrrpSocket> {
        let fd = raw_socket(
            AddressFamily::Inet6,
            SockType::Raw,
            libc::c_int::from(IPPROTO_VRRP),
        )?;
        bind_device(&fd, ifname)?;
        let raw = fd.as_raw_fd();
        setopt(raw, libc::IPPROTO_IPV6, libc::IPV6_MULTICAST_LOOP, &0i32)?;
        setopt(raw, libc::IPPROTO_IPV6, libc::IPV6_MULTICAST_HOPS, &255i32)?;
        setopt(raw, libc::IPPROTO_IPV6, libc::IPV6_UNICAST_HOPS, &255i32)?;
        setopt(
            raw,
            libc::IPPROTO_IPV6,
            libc::IPV6_MULTICAST_IF,
            &(ifindex as libc::c_int),
        )?;
        setopt(raw, libc::IPPROTO_IPV6, libc::IPV6_RECVHOPLIMIT, &1i32)?;
        setopt(raw, libc::IPPROTO_IPV6, libc::IPV6_RECVPKTINFO, &1i32)?;
        let _ = setopt(raw, libc::IPPROTO_IPV6, libc::IPV6_MULTICAST_ALL, &0i32);
        let s = VrrpSocket {
            fd,
            v6: true,
            ifindex,
            joined: Default::default(),
        };
        s.set_membership(join)?;
        Ok(s)
    }

    /// Join (or leave) the VRRP group on the socket's interface: a socket
    /// shared by multicast and unicast instances is a member while one of
    /// them is multicast.
    pub fn set_membership(&self, join: bool) -> io::Result<()> {
        use std::sync::atomic::Ordering::Relaxed;
        if join == self.joined.load(Relaxed) {
            return Ok(());
        }
        let raw = self.fd.as_raw_fd();
        if self.v6 {
            let mreq = libc::ipv6_mreq {
                ipv6mr_multiaddr: libc::in6_addr {
                    s6_addr: vrrp::packet::MCAST_V6.octets(),
                },
                ipv6mr_interface: self.ifindex,
            };
            let op = if join {
                libc::IPV6_ADD_MEMBERSHIP
            } else {
                libc::IPV6_DROP_MEMBERSHIP
            };
            setopt(raw, libc::IPPROTO_IPV6, op, &mreq)?;
        } else {
            let mreqn = libc::ip_mreqn {
                imr_multiaddr: libc::in_addr {
                    s_addr: u32::from(vrrp::packet::MCAST_V4).to_be(),
                },
                imr_address: libc::in_addr { s_addr: 0 },
                imr_ifindex: self.ifindex as libc::c_int,
            };
            let op = if join {
                libc::IP_ADD_MEMBERSHIP
            } else {
                libc::IP_DROP_MEMBERSHIP
            };
            setopt(raw, libc::IPPROTO_IP, op, &mreqn)?;
        }
        self.joined.store(join, Relaxed);
        Ok(())
    }

    pub fn joined(&self) -> bool {
        self.joined.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// IPv4: read one whole IP packet (header included).
    pub fn recv_v4(&self, buf: &mut [u8]) -> io::Result<usize> {
        ns::recv(self.fd.as_raw_fd(), buf, ns::MsgFlags::empty()).map_err(io::Error::from)
    }

    /// IPv4: send a complete IP packet built by `packet::encode_ipv4_packet`.
    pub fn send_v4(&self, pkt: &[u8], dst: Ipv4Addr) -> io::Result<()> {
        let sa = ns::SockaddrIn::from(std::net::SocketAddrV4::new(dst, 0));
        ns::sendto(self.fd.as_raw_fd(), pkt, &sa, ns::MsgFlags::empty())?;
        Ok(())
    }

    /// IPv6: read the VRRP message with its source, destination and hop limit.
    pub fn recv_v6(&self, buf: &mut [u8]) -> io::Result<RecvV6> {
        let mut src: libc::sockaddr_in6 = unsafe_zeroed();
        let mut cbuf = [0u64; 16]; // 128 bytes, aligned for cmsghdr
        let mut iov = libc::iovec {
            iov_base: buf.as_mut_ptr().cast(),
            iov_len: buf.len(),
        };
        let mut msg: libc::msghdr = unsafe_zeroed();
        msg.msg_name = (&mut src as *mut libc::sockaddr_in6).cast();
        msg.msg_namelen = mem::size_of::<libc::sockaddr_in6>() as libc::socklen_t;
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = cbuf.as_mut_ptr().cast();
        msg.msg_controllen = mem::size_of_val(&cbuf);
        // SAFETY: msg points at live buffers (iov -> buf, name -> src, control
        // -> cbuf) whose sizes are given; they outlive the call.
        let n = unsafe { libc::recvmsg(self.fd.as_raw_fd(), &mut msg, 0) };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        let mut out = RecvV6 {
            len: n as usize,
            src: Ipv6Addr::from(src.sin6_addr.s6_addr),
            dst: None,
            hops: None,
        };
        // SAFETY: the kernel filled msg_control with msg_controllen bytes of
        // well-formed cmsgs; CMSG_* only walk within that range.
        unsafe {
            let mut c = libc::CMSG_FIRSTHDR(&msg);
            while !c.is_null() {
                let h = &*c;
                let data = libc::CMSG_DATA(c);
                if h.cmsg_level == libc::IPPROTO_IPV6 && h.cmsg_type == libc::IPV6_HOPLIMIT {
                    let v = std::ptr::read_unaligned(data.cast::<libc::c_int>());
                    out.hops = u8::try_from(v).ok();
                } else if h.cmsg_level == libc::IPPROTO_IPV6 && h.cmsg_type == libc::IPV6_PKTINFO {
                    let pi = std::ptr::read_unaligned(data.cast::<libc::in6_pktinfo>());
                    out.dst = Some(Ipv6Addr::from(pi.ipi6_addr.s6_addr));
                }
                c = libc::CMSG_NXTHDR(&msg, c);
            }
        }
        Ok(out)
    }

    /// IPv6: send a VRRP message from `src` (link-local) to `dst`.
    pub fn send_v6(&self, msg: &[u8], src: Ipv6Addr, dst: Ipv6Addr) -> io::Result<()> {
        send6(&self.fd, msg, src, dst, self.ifindex)
    }
}

fn unsafe_zeroed<T>() -> T {
    // SAFETY: only used for plain C structs (sockaddr_in6, msghdr) for which
    // all-zero bytes are a valid value.
    unsafe { mem::zeroed() }
}

fn send6(fd: &OwnedFd, data: &[u8], src: Ipv6Addr, dst: Ipv6Addr, ifindex: u32) -> io::Result<()> {
    let pi = libc::in6_pktinfo {
        ipi6_addr: libc::in6_addr {
            s6_addr: src.octets(),
        },
        ipi6_ifindex: ifindex,
    };
    let scope = if dst.segments()[0] & 0xff00 == 0xff00 || dst.segments()[0] & 0xffc0 == 0xfe80 {
        ifindex
    } else {
        0
    };
    let sa = ns::SockaddrIn6::from(std::net::SocketAddrV6::new(dst, 0, 0, scope));
    let iov = [io::IoSlice::new(data)];
    let cmsg = [ns::ControlMessage::Ipv6PacketInfo(&pi)];
    ns::sendmsg(
        fd.as_raw_fd(),
        &iov,
        &cmsg,
        ns::MsgFlags::empty(),
        Some(&sa),
    )?;
    Ok(())
}

/// AF_PACKET socket for gratuitous ARP frames.
pub struct PacketSocket {
    fd: OwnedFd,
}

impl PacketSocket {
    pub fn open() -> io::Result<PacketSocket> {
        let fd = raw_socket(AddressFamily::Packet, SockType::Raw, 0)?;
        Ok(PacketSocket { fd })
    }

    pub fn send_frame(&self, ifindex: u32, frame: &[u8]) -> io::Result<()> {
        let mut sll: libc::sockaddr_ll = unsafe_zeroed();
        sll.sll_family = libc::AF_PACKET as u16;
        sll.sll_protocol = 0x0806u16.to_be();
        sll.sll_ifindex = ifindex as i32;
        sll.sll_halen = 6;
        sll.sll_addr[..6].copy_from_slice(&[0xff; 6]);
        // SAFETY: frame and sll are live for the call and their sizes are passed.
        let r = unsafe {
            libc::sendto(
                self.fd.as_fd().as_raw_fd(),
                frame.as_ptr().cast(),
                frame.len(),
                0,
                (&sll as *const libc::sockaddr_ll).cast(),
                mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t,
            )
        };
        if r < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(())
        }
    }
}

/// ICMPv6 raw socket for unsolicited neighbour advertisements (hop limit 255).
pub struct Icmp6Socket {
    fd: OwnedFd,
}

impl Icmp6Socket {
    pub fn open() -> io::Result<Icmp6Socket> {
        let fd = ns::socket(
            AddressFamily::Inet6,
            SockType::Raw,
            SockFlag::SOCK_CLOEXEC | SockFlag::SOCK_NONBLOCK,
            SockProtocol::IcmpV6,
        )?;
        let raw = fd.as_raw_fd();
        setopt(raw, libc::IPPROTO_IPV6, libc::IPV6_MULTICAST_HOPS, &255i32)?;
        setopt(raw, libc::IPPROTO_IPV6, libc::IPV6_UNICAST_HOPS, &255i32)?;
        setopt(raw, libc::IPPROTO_IPV6, libc::IPV6_MULTICAST_LOOP, &0i32)?;
        Ok(Icmp6Socket { fd })
    }

    pub fn send_na(&self, body: &[u8], src: Ipv6Addr, ifindex: u32) -> io::Result<()> {
        send6(&self.fd, body, src, crate::announce::ALL_NODES, ifindex)
    }
}
