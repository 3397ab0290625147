//! A running VRRP instance: its configuration, state machine, link and the
//! source address its adverts carry.

use std::collections::BTreeSet;
use std::net::IpAddr;

use anyhow::{anyhow, Context};
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
    pub link: Link,
    pub src: IpAddr,
    pub checksum: ChecksumForm,
    /// The gratuitous ARP / NA bursts of the last announcement.
    pub announcer: Option<JoinHandle<()>>,
}

impl Inst {
    pub fn key(&self) -> SockKey {
        (self.cfg.interface.0.clone(), self.cfg.is_ipv6())
    }
    pub fn multicast(&self) -> bool {
        self.cfg.unicast_peers.is_empty()
    }
}

/// The machine's parameters from the configuration.
pub(super) fn params(ic: &Instance, src: IpAddr) -> Params {
    Params {
        vrid: ic.vrid.0,
        priority: ic.priority.0,
        advert_interval_cs: ic.advert_interval_ms.centis(),
        preempt: ic.preempt,
        preempt_delay: ic.preempt_delay(),
        primary_addr: src,
    }
}

/// The address adverts are sent from: `source_ip`, else the interface's
/// primary IPv4 address or its IPv6 link-local address (never a VIP).
pub(super) fn source_address(
    rtnl: &mut Rtnl,
    ic: &Instance,
    link: &Link,
) -> anyhow::Result<IpAddr> {
    if let Some(s) = ic.source_ip {
        return Ok(s);
    }
    let v6 = ic.is_ipv6();
    let vips: BTreeSet<IpAddr> = ic.virtual_ips.iter().map(|c| c.addr).collect();
    let addrs = rtnl.addrs(link.index, v6)?;
    let pick = addrs.iter().find(|a| {
        !vips.contains(&a.addr)
            && if v6 {
                a.link_scope || is_link_local(a.addr)
            } else {
                !a.secondary
            }
    });
    pick.map(|a| a.addr).ok_or_else(|| {
        anyhow!(
            "instance {}: interface {} has no {} address to send from",
            ic.name,
            ic.interface,
            if v6 {
                "IPv6 link-local"
            } else {
                "primary IPv4"
            }
        )
    })
}

pub(super) fn is_link_local(a: IpAddr) -> bool {
    matches!(a, IpAddr::V6(v) if v.segments()[0] & 0xffc0 == 0xfe80)
}

impl Daemon {
    pub(super) fn make_inst(&mut self, ic: &Instance) -> anyhow::Result<Inst> {
        let link = self
            .rtnl
            .link(&ic.interface.0)
            .with_context(|| format!("instance {}", ic.name))?;
        let src = source_address(&mut self.rtnl, ic, &link)?;
        Ok(Inst {
            cfg: ic.clone(),
            machine: Machine::new(params(ic, src)),
            link,
            src,
            checksum: ic.checksum.unwrap_or(self.cfg.global.checksum),
            announcer: None,
        })
    }

    pub(super) fn find(&self, key: &SockKey, vrid: u8) -> Option<usize> {
        self.insts
            .iter()
            .position(|i| i.cfg.vrid.0 == vrid && i.key() == *key)
    }
}
