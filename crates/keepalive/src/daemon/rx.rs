//! A received packet: the IP layer unpacked, the advert decoded and checked
//! against its instance (version, TTL / hop limit, unicast source),
//! counted, and handed to the machine. Rejected and mismatched adverts are
//! counted by reason and logged at warn, at most once per
//! [`RATE_LIMIT`] per (instance or interface, reason).

use std::collections::{BTreeSet, HashMap};
use std::net::IpAddr;
use std::time::{Duration, Instant};

use tracing::warn;

use super::sockets::{RxPacket, SockKey};
use super::Daemon;
use crate::metrics::{self, C};
use vrrp::machine::{Ignored, Input};
use vrrp::packet::{self, ChecksumForm, Decoded, ParseError, MCAST_V6, VRRP_TTL};

/// Shortest time between two warnings of one kind.
pub const RATE_LIMIT: Duration = Duration::from_secs(10);

/// Warnings by (instance or interface, reason): when the last was logged,
/// and how many were held back since.
#[derive(Default)]
pub(super) struct RateLimit(HashMap<(String, &'static str), (Instant, u64)>);

impl RateLimit {
    /// Whether to log now, and how many were held back before this one.
    fn allow(&mut self, who: &str, reason: &'static str, now: Instant) -> Option<u64> {
        match self.0.get_mut(&(who.to_string(), reason)) {
            Some((last, held)) if now.duration_since(*last) < RATE_LIMIT => {
                *held += 1;
                None
            }
            Some((last, held)) => {
                *last = now;
                Some(std::mem::take(held))
            }
            None => {
                self.0.insert((who.to_string(), reason), (now, 0));
                Some(0)
            }
        }
    }
}

/// The IP layer of a packet: source, destination, TTL / hop limit, message.
type Unpacked<'a> = (IpAddr, IpAddr, Option<u8>, &'a [u8]);

fn unpack(p: &RxPacket) -> Result<Unpacked<'_>, ParseError> {
    match &p.v6 {
        None => {
            let (info, m) = packet::split_ipv4(&p.data)?;
            Ok((
                IpAddr::V4(info.src),
                IpAddr::V4(info.dst),
                Some(info.ttl),
                m,
            ))
        }
        Some(r) => Ok((
            IpAddr::V6(r.src),
            IpAddr::V6(r.dst.unwrap_or(MCAST_V6)),
            r.hops,
            &p.data[..r.len.min(p.data.len())],
        )),
    }
}

impl Daemon {
    /// Count a dropped (or, `vips_mismatch`, a suspicious) advert and warn.
    fn reject(
        &mut self,
        key: &SockKey,
        inst: Option<usize>,
        src: Option<IpAddr>,
        reason: &'static str,
    ) {
        let (labels, who) = match inst {
            Some(i) => {
                let n = &self.insts[i].cfg.name;
                (metrics::inst_reason(n, reason), n.clone())
            }
            None => (
                vec![("interface", key.0.clone()), ("reason", reason.to_string())],
                key.0.clone(),
            ),
        };
        self.metrics.inc(C::AdvertsInvalid, labels);
        if let Some(held) = self.warn_limit.allow(&who, reason, Instant::now()) {
            let src = src.map(|s| s.to_string()).unwrap_or_default();
            warn!(
                instance_or_interface = %who,
                %src,
                reason,
                held_back = held,
                "VRRP advert rejected or mismatched (counted in keepalive_vrrp_adverts_invalid_total)"
            );
        }
    }

    pub(super) fn on_packet(&mut self, p: RxPacket) {
        let (src, dst, ttl, msg) = match unpack(&p) {
            Ok(x) => x,
            Err(e) => return self.reject(&p.key, None, None, e.reason()),
        };
        let inst = msg.get(1).and_then(|&vrid| self.find(&p.key, vrid));
        if inst.is_some_and(|i| self.insts[i].src == Some(src)) {
            return; // our own advert looped back
        }
        let dec = match packet::decode(msg, src, dst) {
            Ok(d) => d,
            Err(e) => return self.reject(&p.key, inst, Some(src), e.reason()),
        };
        let Some(i) = inst else {
            return self.reject(&p.key, None, Some(src), "unknown_vrid");
        };
        if let Err(reason) = self.check(i, src, ttl, &dec) {
            return self.reject(&p.key, Some(i), Some(src), reason);
        }
        let inst = &self.insts[i];
        let ours: BTreeSet<IpAddr> = inst.cfg.virtual_ips.iter().map(|c| c.addr).collect();
        let theirs: BTreeSet<IpAddr> = dec.advert.addrs.iter().copied().collect();
        let name = inst.cfg.name.clone();
        if ours != theirs && dec.advert.priority != 255 {
            // RFC 5798 §7.1: MAY log; the advert is still processed.
            self.reject(&p.key, Some(i), Some(src), "vips_mismatch");
        }
        self.metrics.inc(C::AdvertsReceived, metrics::inst(&name));
        if src.is_ipv4() && dec.advert.version == packet::Version::V3 {
            let form = match dec.checksum_form {
                ChecksumForm::PseudoHeader => "pseudo_header",
                ChecksumForm::MessageOnly => "message_only",
            };
            self.metrics.inc(
                C::ChecksumForm,
                vec![("instance", name), ("form", form.to_string())],
            );
        }
        let now = self.now();
        let acts = self.insts[i].machine.handle(
            now,
            Input::Advert {
                src,
                priority: dec.advert.priority,
                max_adver_int_cs: dec.advert.max_adver_int_cs,
            },
        );
        if self.insts[i].machine.last_ignored == Some(Ignored::IntervalMismatch) {
            self.reject(
                &p.key,
                Some(i),
                Some(src),
                Ignored::IntervalMismatch.reason(),
            );
        }
        self.exec(i, acts);
    }

    /// The instance's own rules for a decoded advert.
    fn check(
        &self,
        i: usize,
        src: IpAddr,
        ttl: Option<u8>,
        dec: &Decoded,
    ) -> Result<(), &'static str> {
        let inst = &self.insts[i];
        if dec.advert.version != inst.cfg.version() {
            return Err(ParseError::BadVersion.reason());
        }
        if inst.multicast() {
            if ttl != Some(VRRP_TTL) {
                return Err(ParseError::BadTtl.reason());
            }
        } else {
            if !inst.cfg.unicast_peers.contains(&src) {
                return Err("unknown_unicast_source");
            }
            if !ttl.is_some_and(|t| inst.cfg.unicast_ttl.contains(t)) {
                return Err(ParseError::BadTtl.reason());
            }
        }
        if dec.advert.max_adver_int_cs == 0 {
            return Err("bad_interval");
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rate_limit_holds_back_and_reports() {
        let mut r = RateLimit::default();
        let t0 = Instant::now();
        assert_eq!(r.allow("VI_1", "bad_ttl", t0), Some(0));
        assert_eq!(
            r.allow("VI_1", "bad_ttl", t0 + Duration::from_secs(1)),
            None
        );
        assert_eq!(
            r.allow("VI_1", "bad_ttl", t0 + Duration::from_secs(2)),
            None
        );
        assert_eq!(r.allow("VI_1", "too_short", t0), Some(0));
        assert_eq!(r.allow("VI_1", "bad_ttl", t0 + RATE_LIMIT), Some(2));
        assert_eq!(r.allow("VI_1", "bad_ttl", t0 + RATE_LIMIT), None);
    }
}
