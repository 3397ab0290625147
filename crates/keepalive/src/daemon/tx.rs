//! Adverts out: encoded for the instance's family and checksum form, to the
//! VRRP group or to each unicast peer.

use std::net::IpAddr;

use tracing::warn;

use super::Daemon;
use vrrp::packet::{self, Advert, ChecksumForm, MCAST_V4, MCAST_V6};

impl Daemon {
    pub(super) fn send_advert(&mut self, i: usize, priority: u8) {
        let inst = &self.insts[i];
        let adv = Advert {
            vrid: inst.cfg.vrid.0,
            priority,
            max_adver_int_cs: inst.cfg.advert_interval_ms.centis(),
            addrs: inst.cfg.virtual_ips.iter().map(|c| c.addr).collect(),
        };
        let Some(sock) = self.sockets.get(&inst.key()) else {
            return;
        };
        let dsts: Vec<IpAddr> = if inst.multicast() {
            vec![if inst.cfg.is_ipv6() {
                IpAddr::V6(MCAST_V6)
            } else {
                IpAddr::V4(MCAST_V4)
            }]
        } else {
            inst.cfg.unicast_peers.clone()
        };
        let mut sent = 0;
        for dst in dsts {
            let r = match (inst.src, dst) {
                (IpAddr::V4(s), IpAddr::V4(d)) => {
                    sock.send_v4(&packet::encode_ipv4_packet(&adv, s, d, inst.checksum), d)
                }
                (IpAddr::V6(s), IpAddr::V6(d)) => sock.send_v6(
                    &packet::encode(&adv, inst.src, dst, ChecksumForm::PseudoHeader),
                    s,
                    d,
                ),
                _ => continue,
            };
            match r {
                Ok(()) => sent += 1,
                Err(e) => {
                    warn!(instance = %inst.cfg.name, %dst, error = %e, "sending advertisement failed")
                }
            }
        }
        self.stats()
            .instances
            .entry(inst.cfg.name.clone())
            .or_default()
            .adverts_sent += sent;
    }
}
