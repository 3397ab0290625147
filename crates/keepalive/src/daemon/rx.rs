//! A received packet: the IP layer unpacked, the advert decoded and checked
//! against its instance, counted, and handed to the machine.

use std::collections::BTreeSet;
use std::net::IpAddr;

use tracing::debug;

use super::sockets::{RxPacket, SockKey};
use super::Daemon;
use vrrp::machine::Input;
use vrrp::packet::{self, ParseError, MCAST_V6, VRRP_TTL};

impl Daemon {
    fn count_invalid(&mut self, key: &SockKey, inst: Option<usize>, reason: &'static str) {
        let mut st = self.stats();
        match inst {
            Some(i) => {
                let name = &self.insts[i].cfg.name;
                *st.instances
                    .entry(name.clone())
                    .or_default()
                    .invalid
                    .entry(reason)
                    .or_default() += 1;
            }
            None => st.count_invalid(&key.0, reason),
        }
        drop(st);
        debug!(interface = %key.0, reason, "dropped VRRP packet");
    }

    pub(super) fn on_packet(&mut self, p: RxPacket) {
        // Unpack the IP layer.
        let (src, dst, ttl, msg): (IpAddr, IpAddr, Option<u8>, &[u8]) = match &p.v6 {
            None => match packet::split_ipv4(&p.data) {
                Ok((info, m)) => (
                    IpAddr::V4(info.src),
                    IpAddr::V4(info.dst),
                    Some(info.ttl),
                    m,
                ),
                Err(e) => return self.count_invalid(&p.key, None, e.reason()),
            },
            Some(r) => {
                let dst = r.dst.unwrap_or(MCAST_V6);
                (
                    IpAddr::V6(r.src),
                    IpAddr::V6(dst),
                    r.hops,
                    &p.data[..r.len.min(p.data.len())],
                )
            }
        };
        let inst = msg.get(1).and_then(|&vrid| self.find(&p.key, vrid));
        if let Some(i) = inst {
            if self.insts[i].src == src {
                return; // our own advert looped back
            }
        }
        let dec = match packet::decode(msg, src, dst) {
            Ok(d) => d,
            Err(e) => return self.count_invalid(&p.key, inst, e.reason()),
        };
        let Some(i) = inst else {
            return self.count_invalid(&p.key, None, "unknown_vrid");
        };
        let multicast = self.insts[i].multicast();
        if multicast && ttl != Some(VRRP_TTL) {
            return self.count_invalid(&p.key, Some(i), ParseError::BadTtl.reason());
        }
        if !multicast && !self.insts[i].cfg.unicast_peers.contains(&src) {
            return self.count_invalid(&p.key, Some(i), "unknown_unicast_source");
        }
        if dec.advert.max_adver_int_cs == 0 {
            return self.count_invalid(&p.key, Some(i), "bad_interval");
        }
        let inst = &self.insts[i];
        let ours: BTreeSet<IpAddr> = inst.cfg.virtual_ips.iter().map(|c| c.addr).collect();
        let theirs: BTreeSet<IpAddr> = dec.advert.addrs.iter().copied().collect();
        if ours != theirs && dec.advert.priority != 255 {
            // RFC 5798 §7.1: MAY log; the advert is still processed.
            debug!(instance = %inst.cfg.name, %src, "advertised addresses differ from ours");
        }
        self.stats()
            .instances
            .entry(inst.cfg.name.clone())
            .or_default()
            .adverts_received += 1;
        let now = self.now();
        let acts = self.insts[i].machine.handle(
            now,
            Input::Advert {
                src,
                priority: dec.advert.priority,
                max_adver_int_cs: dec.advert.max_adver_int_cs,
            },
        );
        self.exec(i, acts);
    }
}
