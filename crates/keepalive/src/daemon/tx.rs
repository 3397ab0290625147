//! Adverts out: encoded for the instance's family and checksum form, to the
//! VRRP group or to each unicast peer.

use std::net::IpAddr;

use tracing::{debug, warn};

use super::Daemon;
use crate::metrics::{self, C};
use vrrp::packet::{self, Advert, ChecksumForm, MCAST_V4, MCAST_V6};

impl Daemon {
    pub(super) fn send_advert(&mut self, i: usize, priority: u8) {
        let inst = &self.insts[i];
        // Without an address (FAULT) there is nothing to send from.
        let Some(src) = inst.src else { return };
        let adv = Advert {
            version: inst.cfg.version(),
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
        let mut sent = 0u64;
        for dst in dsts {
            let r = match (src, dst) {
                (IpAddr::V4(s), IpAddr::V4(d)) => {
                    sock.send_v4(&packet::encode_ipv4_packet(&adv, s, d, inst.checksum), d)
                }
                (IpAddr::V6(s), IpAddr::V6(d)) => sock.send_v6(
                    &packet::encode(&adv, src, dst, ChecksumForm::PseudoHeader),
                    s,
                    d,
                ),
                _ => continue,
            };
            match r {
                Ok(()) => sent += 1,
                // A link that just went down: FAULT follows with the event.
                Err(e) if inst.link.as_ref().is_some_and(|l| !l.up) => {
                    debug!(instance = %inst.cfg.name, %dst, error = %e, "sending advertisement failed (link down)")
                }
                Err(e) => {
                    warn!(instance = %inst.cfg.name, %dst, error = %e, "sending advertisement failed")
                }
            }
        }
        self.metrics
            .add(C::AdvertsSent, metrics::inst(&inst.cfg.name), sent);
    }
}
