//! Host and service name lookups, with the C library's semantics
//! (`gethostbyname`, `gethostbyaddr`, `getservbyname`, `getservbyport`),
//! as ipvsadm uses them. Results are cached per process (ipvsadm looks an
//! address up again for every line; the answers are the same).

use std::cell::RefCell;
use std::collections::HashMap;
use std::ffi::{CStr, CString};
use std::net::{IpAddr, Ipv4Addr};

use ipvs_netlink::ipvs::Protocol;

/// Name resolution used by the non-numeric listings.
pub trait Resolver {
    /// Reverse lookup of an address (None: print it numerically).
    fn host(&self, addr: &IpAddr) -> Option<String>;
    /// Service name of a port for a protocol.
    fn service(&self, port: u16, proto: Protocol) -> Option<String>;
}

/// No lookups: everything numeric.
pub struct Numeric;

impl Resolver for Numeric {
    fn host(&self, _: &IpAddr) -> Option<String> {
        None
    }
    fn service(&self, _: u16, _: Protocol) -> Option<String> {
        None
    }
}

/// Lookups through the C library (NSS: /etc/hosts, DNS, /etc/services).
#[derive(Default)]
pub struct LibcResolver {
    hosts: RefCell<HashMap<IpAddr, Option<String>>>,
    services: RefCell<HashMap<(u16, u16), Option<String>>>,
}

impl LibcResolver {
    /// A resolver with empty caches.
    pub fn new() -> Self {
        Self::default()
    }
}

#[repr(C)]
struct HostEnt {
    h_name: *mut libc::c_char,
    h_aliases: *mut *mut libc::c_char,
    h_addrtype: libc::c_int,
    h_length: libc::c_int,
    h_addr_list: *mut *mut libc::c_char,
}

extern "C" {
    fn gethostbyaddr(
        addr: *const libc::c_void,
        len: libc::socklen_t,
        ty: libc::c_int,
    ) -> *mut HostEnt;
    fn gethostbyname(name: *const libc::c_char) -> *mut HostEnt;
}

fn proto_name(p: Protocol) -> Option<&'static CStr> {
    match p {
        Protocol::Tcp => Some(c"tcp"),
        Protocol::Udp => Some(c"udp"),
        Protocol::Sctp => Some(c"sctp"),
        Protocol::Other(_) => None,
    }
}

impl Resolver for LibcResolver {
    fn host(&self, addr: &IpAddr) -> Option<String> {
        if let Some(v) = self.hosts.borrow().get(addr) {
            return v.clone();
        }
        let (bytes, af): (Vec<u8>, libc::c_int) = match addr {
            IpAddr::V4(a) => (a.octets().to_vec(), libc::AF_INET),
            IpAddr::V6(a) => (a.octets().to_vec(), libc::AF_INET6),
        };
        // SAFETY: `bytes` outlives the call and its length is passed; the
        // returned hostent (static storage of the C library) is read before
        // any other lookup in this single-threaded use.
        let name = unsafe {
            let h = gethostbyaddr(
                bytes.as_ptr() as *const libc::c_void,
                bytes.len() as libc::socklen_t,
                af,
            );
            if h.is_null() || (*h).h_name.is_null() {
                None
            } else {
                Some(CStr::from_ptr((*h).h_name).to_string_lossy().into_owned())
            }
        };
        self.hosts.borrow_mut().insert(*addr, name.clone());
        name
    }

    fn service(&self, port: u16, proto: Protocol) -> Option<String> {
        let key = (port, proto.number());
        if let Some(v) = self.services.borrow().get(&key) {
            return v.clone();
        }
        let p = proto_name(proto)?;
        // SAFETY: `p` is a valid C string; the servent is static storage of
        // the C library, copied before any other lookup.
        let name = unsafe {
            let s = libc::getservbyport(port.to_be() as libc::c_int, p.as_ptr());
            if s.is_null() || (*s).s_name.is_null() {
                None
            } else {
                Some(CStr::from_ptr((*s).s_name).to_string_lossy().into_owned())
            }
        };
        self.services.borrow_mut().insert(key, name.clone());
        name
    }
}

/// `getservbyname(name, proto)` → port (host order).
pub fn service_to_port(name: &str, proto: Protocol) -> Option<u16> {
    let p = proto_name(proto)?;
    let n = CString::new(name).ok()?;
    // SAFETY: both are valid C strings; the result is copied immediately.
    unsafe {
        let s = libc::getservbyname(n.as_ptr(), p.as_ptr());
        if s.is_null() {
            None
        } else {
            Some(u16::from_be((*s).s_port as u16))
        }
    }
}

/// `gethostbyname(name)` → the first IPv4 address (ipvsadm's host_to_addr).
pub fn host_to_addr(name: &str) -> Option<Ipv4Addr> {
    let n = CString::new(name).ok()?;
    // SAFETY: valid C string; the hostent is static storage read at once;
    // h_addr_list[0] points to h_length (checked to be 4) bytes.
    unsafe {
        let h = gethostbyname(n.as_ptr());
        if h.is_null() || (*h).h_addrtype != libc::AF_INET || (*h).h_length != 4 {
            return None;
        }
        let list = (*h).h_addr_list;
        if list.is_null() || (*list).is_null() {
            return None;
        }
        let p = *list as *const u8;
        Some(Ipv4Addr::new(*p, *p.add(1), *p.add(2), *p.add(3)))
    }
}

/// A resolver with fixed answers, for tests.
#[derive(Default)]
pub struct StaticResolver {
    /// Address → name.
    pub hosts: HashMap<IpAddr, String>,
    /// (port, protocol number) → name.
    pub services: HashMap<(u16, u16), String>,
}

impl Resolver for StaticResolver {
    fn host(&self, addr: &IpAddr) -> Option<String> {
        self.hosts.get(addr).cloned()
    }
    fn service(&self, port: u16, proto: Protocol) -> Option<String> {
        self.services.get(&(port, proto.number())).cloned()
    }
}
