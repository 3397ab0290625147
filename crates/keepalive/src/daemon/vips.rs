//! The VIPs per role: installed on the interface and announced (gratuitous
//! ARP / unsolicited NA bursts) when an instance becomes MASTER, withdrawn
//! when it leaves. This is the one place where "this node serves the VIPs"
//! is made true or false; an announcer of another kind (a BGP route for
//! the VIPs) is called from [`Daemon::add_vips`] and [`Daemon::remove_vips`]
//! next to the addresses.

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use tracing::{error, warn};

use super::instance::Inst;
use super::Daemon;
use crate::announce;
use crate::rtnl::Rtnl;
use crate::sys::{Icmp6Socket, PacketSocket};

/// Remove the instance's VIPs from its interface (missing ones are fine).
pub(super) fn remove_addresses(rtnl: &mut Rtnl, inst: &Inst) {
    let Some(index) = inst.ifindex() else { return };
    for c in &inst.cfg.virtual_ips {
        if let Err(e) = rtnl.del_addr(index, c) {
            error!(instance = %inst.cfg.name, vip = %c, error = %e, "removing virtual address failed");
        }
    }
}

impl Daemon {
    pub(super) fn add_vips(&mut self, i: usize) {
        let inst = &self.insts[i];
        let Some(index) = inst.ifindex() else { return };
        for c in &inst.cfg.virtual_ips {
            if let Err(e) = self.rtnl.add_addr(index, c) {
                error!(instance = %inst.cfg.name, vip = %c, error = %e, "adding virtual address failed");
            }
        }
    }

    pub(super) fn remove_vips(&mut self, i: usize) {
        if let Some(t) = self.insts[i].announcer.take() {
            t.abort();
        }
        remove_addresses(&mut self.rtnl, &self.insts[i]);
    }

    /// Gratuitous ARP (IPv4) or unsolicited NA (IPv6) bursts for the VIPs,
    /// replacing any still running for this instance.
    pub(super) fn announce(&mut self, i: usize) {
        if let Some(t) = self.insts[i].announcer.take() {
            t.abort();
        }
        let inst = &self.insts[i];
        let Some(link) = &inst.link else { return };
        let Some(mac) = link.mac else { return };
        let g = &self.cfg.global;
        let burst = Burst {
            repeat: g.garp_repeat.0,
            spacing: Duration::from_millis(g.garp_interval_ms.0),
            refresh: Duration::from_millis(g.garp_master_delay_ms.0),
        };
        let ifindex = link.index;
        let name = inst.cfg.name.clone();
        let task = if inst.cfg.is_ipv6() {
            let Some(IpAddr::V6(src)) = inst.src else {
                return;
            };
            let router = std::fs::read_to_string("/proc/sys/net/ipv6/conf/all/forwarding")
                .is_ok_and(|s| s.trim() == "1");
            let bodies: Vec<[u8; 32]> = inst
                .cfg
                .virtual_ips
                .iter()
                .filter_map(|c| match c.addr {
                    IpAddr::V6(a) => Some(announce::na_body(mac, a, router)),
                    _ => None,
                })
                .collect();
            let Some(sock) = self.icmp6_socket() else {
                return;
            };
            tokio::spawn(burst.run(move || {
                for b in &bodies {
                    if let Err(e) = sock.send_na(b, src, ifindex) {
                        warn!(instance = %name, error = %e, "unsolicited NA failed");
                    }
                }
            }))
        } else {
            let frames: Vec<[u8; 42]> = inst
                .cfg
                .virtual_ips
                .iter()
                .filter_map(|c| match c.addr {
                    IpAddr::V4(a) => Some(announce::garp_frame(mac, a)),
                    _ => None,
                })
                .collect();
            let Some(sock) = self.packet_socket() else {
                return;
            };
            tokio::spawn(burst.run(move || {
                for f in &frames {
                    if let Err(e) = sock.send_frame(ifindex, f) {
                        warn!(instance = %name, error = %e, "gratuitous ARP failed");
                    }
                }
            }))
        };
        self.insts[i].announcer = Some(task);
    }

    fn icmp6_socket(&mut self) -> Option<Arc<Icmp6Socket>> {
        if self.icmp6.is_none() {
            self.icmp6 = Icmp6Socket::open()
                .map(Arc::new)
                .map_err(|e| warn!(error = %e, "ICMPv6 socket"))
                .ok();
        }
        self.icmp6.clone()
    }

    fn packet_socket(&mut self) -> Option<Arc<PacketSocket>> {
        if self.garp.is_none() {
            self.garp = PacketSocket::open()
                .map(Arc::new)
                .map_err(|e| warn!(error = %e, "packet socket"))
                .ok();
        }
        self.garp.clone()
    }
}

/// `repeat` sends `spacing` apart, and once more after `refresh` (0 = not).
struct Burst {
    repeat: u32,
    spacing: Duration,
    refresh: Duration,
}

impl Burst {
    async fn run<F: Fn() + Send + 'static>(self, send: F) {
        self.once(&send).await;
        if !self.refresh.is_zero() {
            tokio::time::sleep(self.refresh).await;
            self.once(&send).await;
        }
    }

    async fn once<F: Fn()>(&self, send: &F) {
        for k in 0..self.repeat {
            if k > 0 {
                tokio::time::sleep(self.spacing).await;
            }
            send();
        }
    }
}
