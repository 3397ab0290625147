//! A running VRRP instance: its configuration, state machine, link and the
//! source address its adverts carry. The link or the address may be
//! missing (the interface is not there yet, has no address): the instance
//! then waits in FAULT ([`super::track`]).

use std::collections::BTreeSet;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use tokio::task::JoinHandle;

use super::sockets::SockKey;
use super::Daemon;
use crate::config::Instance;
use crate::rtnl::{Link, Rtnl};
use vrrp::machine::{Machine, Params};
use vrrp::packet::ChecksumForm;

pub(super) struct Inst {
    pub cfg: Instance,
    pub machine: Machine,
    /// None while the interface does not exist.
    pub link: Option<Link>,
    /// None while the interface has no address to send from.
    pub src: Option<IpAddr>,
    pub checksum: ChecksumForm,
    /// The gratuitous ARP / NA bursts of the last announcement.
    pub announcer: Option<JoinHandle<()>>,
    /// Index into the daemon's sync groups.
    pub group: Option<usize>,
    /// Why the instance is in FAULT (empty: it is not), for the logs.
    pub faults: Vec<String>,
}

impl Inst {
    pub fn key(&self) -> SockKey {
        (self.cfg.interface.0.clone(), self.cfg.is_ipv6())
    }
    pub fn multicast(&self) -> bool {
        self.cfg.unicast_peers.is_empty()
    }
    pub fn ifindex(&self) -> Option<u32> {
        self.link.as_ref().map(|l| l.index)
    }
}

/// The machine's parameters from the configuration, at `priority`.
pub(super) fn params(ic: &Instance, src: Option<IpAddr>, priority: u8) -> Params {
    let unspecified = if ic.is_ipv6() {
        IpAddr::V6(Ipv6Addr::UNSPECIFIED)
    } else {
        IpAddr::V4(Ipv4Addr::UNSPECIFIED)
    };
    Params {
        vrid: ic.vrid.0,
        priority,
        advert_interval_cs: ic.advert_interval_ms.centis(),
        preempt: ic.preempt,
        preempt_delay: ic.preempt_delay(),
        primary_addr: src.unwrap_or(unspecified),
        version: ic.version(),
    }
}

/// The address adverts are sent from: `source_ip`, else the interface's
/// primary IPv4 address or its IPv6 link-local address (never a VIP).
pub(super) fn source_address(rtnl: &mut Rtnl, ic: &Instance, link: &Link) -> Option<IpAddr> {
    if let Some(s) = ic.source_ip {
        return Some(s);
    }
    let v6 = ic.is_ipv6();
    let vips: BTreeSet<IpAddr> = ic.virtual_ips.iter().map(|c| c.addr).collect();
    let addrs = match rtnl.addrs(link.index, v6) {
        Ok(a) => a,
        Err(e) => {
            tracing::warn!(instance = %ic.name, error = %e, "reading the interface's addresses");
            return None;
        }
    };
    addrs
        .iter()
        .find(|a| {
            !vips.contains(&a.addr)
                && !a.tentative
                && if v6 {
                    a.link_scope || is_link_local(a.addr)
                } else {
                    !a.secondary
                }
        })
        .map(|a| a.addr)
}

pub(super) fn is_link_local(a: IpAddr) -> bool {
    matches!(a, IpAddr::V6(v) if v.segments()[0] & 0xffc0 == 0xfe80)
}

impl Daemon {
    /// A new instance (not started); its link and address as far as they exist.
    pub(super) fn make_inst(&mut self, ic: &Instance) -> Inst {
        let link = self.links.get(&ic.interface.0).cloned();
        let src = link
            .as_ref()
            .and_then(|l| source_address(&mut self.rtnl, ic, l));
        Inst {
            cfg: ic.clone(),
            machine: Machine::new(params(ic, src, ic.priority.0)),
            link,
            src,
            checksum: ic.checksum.unwrap_or(self.cfg.global.checksum),
            announcer: None,
            group: None,
            faults: vec![],
        }
    }

    pub(super) fn find(&self, key: &SockKey, vrid: u8) -> Option<usize> {
        self.insts
            .iter()
            .position(|i| i.cfg.vrid.0 == vrid && i.key() == *key)
    }
}
