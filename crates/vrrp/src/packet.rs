//! VRRP codec: version 3 (RFC 5798 §5 / RFC 9568 §5) for IPv4 and IPv6,
//! version 2 (RFC 3768 §5) for IPv4.
//!
//! Pure functions over byte slices: no sockets, no allocation beyond the
//! returned values, never panics on any input (see the property tests).
//!
//! The IPv4 checksum is ambiguous between RFC 5798 and RFC 9568: keepalived
//! (default) and older FRR include an IPv4 pseudo-header, RFC 9568, Cisco,
//! Juniper and holo use the VRRP message only. [`decode`] accepts both and
//! reports which form matched; [`encode`] sends the configured form. IPv6
//! always uses the RFC 8200 §8.1 pseudo-header.
//!
//! VRRPv2 differs on the wire in three places: the byte after the address
//! count's word holds the authentication type (0, none: RFC 3768 removed
//! the others) and the interval in whole seconds; 8 bytes of
//! authentication data (zero) follow the addresses; the checksum covers
//! the message only. [`Advert::max_adver_int_cs`] is centiseconds for both
//! versions (a v2 interval is a multiple of 100).

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// IP protocol number of VRRP.
pub const IPPROTO_VRRP: u8 = 112;
/// IPv4 multicast group for VRRP.
pub const MCAST_V4: Ipv4Addr = Ipv4Addr::new(224, 0, 0, 18);
/// IPv6 multicast group for VRRP.
pub const MCAST_V6: Ipv6Addr = Ipv6Addr::new(0xff02, 0, 0, 0, 0, 0, 0, 0x12);
/// Required TTL / hop limit (RFC 5798 §5.1.1.3, §5.1.2.3).
pub const VRRP_TTL: u8 = 255;
/// Length of the fixed VRRP header.
pub const HEADER_LEN: usize = 8;
/// Largest valid Max Adver Int (12 bits, centiseconds).
pub const MAX_ADVER_INT_CS: u16 = 0x0fff;

/// Which checksum computation covers an IPv4 VRRPv3 message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Deserialize, serde::Serialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum ChecksumForm {
    /// RFC 5798 as read by keepalived (default) and older FRR: IPv4 pseudo-header + message.
    PseudoHeader,
    /// RFC 9568 §5.2.8 (and keepalived `v3_checksum_as_v2`, Cisco, Juniper): message only.
    MessageOnly,
}

/// Protocol version of an advertisement.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Version {
    /// RFC 3768: IPv4 only, interval in seconds.
    V2,
    /// RFC 5798 / RFC 9568: interval in centiseconds.
    #[default]
    V3,
}

impl Version {
    pub fn number(self) -> u8 {
        match self {
            Version::V2 => 2,
            Version::V3 => 3,
        }
    }
}

/// Length of the VRRPv2 authentication data after the addresses.
pub const V2_AUTH_LEN: usize = 8;

/// A decoded (or to-be-encoded) advertisement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Advert {
    pub version: Version,
    pub vrid: u8,
    pub priority: u8,
    /// Max Adver Int in centiseconds (12 bits in v3; v2: seconds * 100).
    pub max_adver_int_cs: u16,
    /// Virtual addresses, all of one family.
    pub addrs: Vec<IpAddr>,
}

/// Why a received packet was dropped. [`ParseError::reason`] is the metrics label.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ParseError {
    /// Shorter than the IP header or the VRRP header, or than its address count says.
    TooShort,
    /// IPv4 header malformed (version, IHL, total length) or not protocol 112.
    BadIpHeader,
    /// TTL / hop limit other than 255.
    BadTtl,
    /// VRRP version other than 2 or 3, or version 2 over IPv6.
    BadVersion,
    /// Type other than 1 (ADVERTISEMENT).
    BadType,
    /// VRID 0 is not a valid virtual router.
    BadVrid,
    /// Count of addresses is zero or disagrees with the length.
    BadLength,
    /// Neither checksum form matches.
    BadChecksum,
}

impl ParseError {
    /// Stable label for metrics and logs.
    pub fn reason(self) -> &'static str {
        match self {
            ParseError::TooShort => "too_short",
            ParseError::BadIpHeader => "bad_ip_header",
            ParseError::BadTtl => "bad_ttl",
            ParseError::BadVersion => "bad_version",
            ParseError::BadType => "bad_type",
            ParseError::BadVrid => "bad_vrid",
            ParseError::BadLength => "bad_length",
            ParseError::BadChecksum => "bad_checksum",
        }
    }
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.reason())
    }
}

impl std::error::Error for ParseError {}

/// One's-complement sum helper (RFC 1071), accumulating 16-bit big-endian words.
#[derive(Default)]
struct Csum(u32);

impl Csum {
    fn add(&mut self, data: &[u8]) {
        let mut chunks = data.chunks_exact(2);
        for c in &mut chunks {
            self.0 += u32::from(u16::from_be_bytes([c[0], c[1]]));
            self.fold();
        }
        if let [last] = chunks.remainder() {
            self.0 += u32::from(*last) << 8;
            self.fold();
        }
    }
    fn fold(&mut self) {
        while self.0 > 0xffff {
            self.0 = (self.0 & 0xffff) + (self.0 >> 16);
        }
    }
    fn finish(mut self) -> u16 {
        self.fold();
        !(self.0 as u16)
    }
}

/// RFC 1071 checksum of `data`.
pub fn inet_checksum(data: &[u8]) -> u16 {
    let mut c = Csum::default();
    c.add(data);
    c.finish()
}

fn pseudo_v4(src: Ipv4Addr, dst: Ipv4Addr, len: usize) -> [u8; 12] {
    let mut p = [0u8; 12];
    p[0..4].copy_from_slice(&src.octets());
    p[4..8].copy_from_slice(&dst.octets());
    p[9] = IPPROTO_VRRP;
    p[10..12].copy_from_slice(&(len as u16).to_be_bytes());
    p
}

fn pseudo_v6(src: Ipv6Addr, dst: Ipv6Addr, len: usize) -> [u8; 40] {
    let mut p = [0u8; 40];
    p[0..16].copy_from_slice(&src.octets());
    p[16..32].copy_from_slice(&dst.octets());
    p[32..36].copy_from_slice(&(len as u32).to_be_bytes());
    p[39] = IPPROTO_VRRP;
    p
}

/// Checksum of a VRRP message (whose checksum field may hold anything: it is
/// treated as zero) for the given addresses and form.
pub fn vrrp_checksum(msg: &[u8], src: IpAddr, dst: IpAddr, form: ChecksumForm) -> u16 {
    let mut c = Csum::default();
    match (src, dst) {
        (IpAddr::V6(s), IpAddr::V6(d)) => c.add(&pseudo_v6(s, d, msg.len())),
        (IpAddr::V4(s), IpAddr::V4(d)) if form == ChecksumForm::PseudoHeader => {
            c.add(&pseudo_v4(s, d, msg.len()))
        }
        _ => {}
    }
    if msg.len() >= 8 {
        c.add(&msg[..6]);
        c.add(&msg[8..]);
    } else {
        c.add(msg);
    }
    c.finish()
}

/// Encode the VRRP message (no IP header) with the checksum filled in.
/// `src`/`dst` are the IP addresses the packet will carry. Addresses of the
/// other family than `src` are skipped; at most 255 are encoded. A v2
/// advert always carries the message-only checksum (`form` is ignored).
pub fn encode(adv: &Advert, src: IpAddr, dst: IpAddr, form: ChecksumForm) -> Vec<u8> {
    let v6 = src.is_ipv6();
    let addrs: Vec<&IpAddr> = adv
        .addrs
        .iter()
        .filter(|a| a.is_ipv6() == v6)
        .take(255)
        .collect();
    let v2 = adv.version == Version::V2;
    let mut out =
        Vec::with_capacity(HEADER_LEN + addrs.len() * if v6 { 16 } else { 4 } + V2_AUTH_LEN);
    out.push(adv.version.number() << 4 | 1); // type 1: advertisement
    out.push(adv.vrid);
    out.push(adv.priority);
    out.push(addrs.len() as u8);
    if v2 {
        // auth type 0 (none), interval in seconds
        out.push(0);
        out.push((adv.max_adver_int_cs / 100).min(255) as u8);
    } else {
        out.extend_from_slice(&(adv.max_adver_int_cs & MAX_ADVER_INT_CS).to_be_bytes());
    }
    out.extend_from_slice(&[0, 0]);
    for a in addrs {
        match a {
            IpAddr::V4(a) => out.extend_from_slice(&a.octets()),
            IpAddr::V6(a) => out.extend_from_slice(&a.octets()),
        }
    }
    let form = if v2 {
        out.extend_from_slice(&[0; V2_AUTH_LEN]);
        ChecksumForm::MessageOnly
    } else {
        form
    };
    let ck = vrrp_checksum(&out, src, dst, form);
    out[6..8].copy_from_slice(&ck.to_be_bytes());
    out
}

/// Build a full IPv4 packet (for an `IP_HDRINCL` raw socket): TOS internetwork
/// control, TTL 255, protocol 112. The kernel fills the ID and header checksum
/// when they are zero, but we compute the header checksum anyway so the bytes
/// are complete and testable.
pub fn encode_ipv4_packet(
    adv: &Advert,
    src: Ipv4Addr,
    dst: Ipv4Addr,
    form: ChecksumForm,
) -> Vec<u8> {
    let msg = encode(adv, IpAddr::V4(src), IpAddr::V4(dst), form);
    let total = 20 + msg.len();
    let mut p = Vec::with_capacity(total);
    p.extend_from_slice(&[0x45, 0xc0]);
    p.extend_from_slice(&(total as u16).to_be_bytes());
    p.extend_from_slice(&[0, 0, 0, 0]); // id, flags/fragment
    p.push(VRRP_TTL);
    p.push(IPPROTO_VRRP);
    p.extend_from_slice(&[0, 0]);
    p.extend_from_slice(&src.octets());
    p.extend_from_slice(&dst.octets());
    let hck = inet_checksum(&p);
    p[10..12].copy_from_slice(&hck.to_be_bytes());
    p.extend_from_slice(&msg);
    p
}

/// Result of a successful decode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decoded {
    pub advert: Advert,
    /// For IPv4 v3, which checksum form matched (pseudo-header tried first);
    /// v2 always `MessageOnly`; IPv6 always `PseudoHeader`.
    pub checksum_form: ChecksumForm,
}

/// Decode and validate a VRRP message (no IP header) received from `src` to `dst`.
pub fn decode(msg: &[u8], src: IpAddr, dst: IpAddr) -> Result<Decoded, ParseError> {
    if msg.len() < HEADER_LEN {
        return Err(ParseError::TooShort);
    }
    let version = match msg[0] >> 4 {
        2 if src.is_ipv4() => Version::V2,
        3 => Version::V3,
        _ => return Err(ParseError::BadVersion),
    };
    let typ = msg[0] & 0x0f;
    if typ != 1 {
        return Err(ParseError::BadType);
    }
    let vrid = msg[1];
    if vrid == 0 {
        return Err(ParseError::BadVrid);
    }
    let priority = msg[2];
    let count = usize::from(msg[3]);
    let max_adver_int_cs = match version {
        Version::V2 => u16::from(msg[5]) * 100,
        Version::V3 => u16::from_be_bytes([msg[4], msg[5]]) & MAX_ADVER_INT_CS,
    };
    let alen = if src.is_ipv6() { 16 } else { 4 };
    let need = HEADER_LEN + count * alen;
    if msg.len() < need {
        return Err(ParseError::TooShort);
    }
    // Trailing bytes (the VRRPv2 authentication data, or such a trailer on
    // v3) are tolerated but must be covered by the checksum, as the sender
    // computed it over the whole payload.
    if count == 0 {
        return Err(ParseError::BadLength);
    }
    let got = u16::from_be_bytes([msg[6], msg[7]]);
    let form = if version == Version::V2 {
        if vrrp_checksum(msg, src, dst, ChecksumForm::MessageOnly) != got {
            return Err(ParseError::BadChecksum);
        }
        ChecksumForm::MessageOnly
    } else if vrrp_checksum(msg, src, dst, ChecksumForm::PseudoHeader) == got {
        ChecksumForm::PseudoHeader
    } else if src.is_ipv4() && vrrp_checksum(msg, src, dst, ChecksumForm::MessageOnly) == got {
        ChecksumForm::MessageOnly
    } else {
        return Err(ParseError::BadChecksum);
    };
    let mut addrs = Vec::with_capacity(count);
    for a in msg[HEADER_LEN..need].chunks_exact(alen) {
        addrs.push(match a.len() {
            4 => IpAddr::V4(Ipv4Addr::new(a[0], a[1], a[2], a[3])),
            _ => {
                let mut o = [0u8; 16];
                o.copy_from_slice(a);
                IpAddr::V6(Ipv6Addr::from(o))
            }
        });
    }
    Ok(Decoded {
        advert: Advert {
            version,
            vrid,
            priority,
            max_adver_int_cs,
            addrs,
        },
        checksum_form: form,
    })
}

/// Fields of an IPv4 header that VRRP reception needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ipv4Info {
    pub src: Ipv4Addr,
    pub dst: Ipv4Addr,
    pub ttl: u8,
}

/// Split a packet as read from an IPv4 raw socket into header info and VRRP payload.
pub fn split_ipv4(pkt: &[u8]) -> Result<(Ipv4Info, &[u8]), ParseError> {
    if pkt.len() < 20 {
        return Err(ParseError::TooShort);
    }
    if pkt[0] >> 4 != 4 {
        return Err(ParseError::BadIpHeader);
    }
    let ihl = usize::from(pkt[0] & 0x0f) * 4;
    if ihl < 20 || pkt.len() < ihl {
        return Err(ParseError::BadIpHeader);
    }
    if pkt[9] != IPPROTO_VRRP {
        return Err(ParseError::BadIpHeader);
    }
    let total = usize::from(u16::from_be_bytes([pkt[2], pkt[3]]));
    // Linux raw sockets hand over the header as received; accept a total
    // length that matches or exceeds our buffer's view being exact.
    if total < ihl || total > pkt.len() {
        return Err(ParseError::TooShort);
    }
    let info = Ipv4Info {
        src: Ipv4Addr::new(pkt[12], pkt[13], pkt[14], pkt[15]),
        dst: Ipv4Addr::new(pkt[16], pkt[17], pkt[18], pkt[19]),
        ttl: pkt[8],
    };
    Ok((info, &pkt[ihl..total]))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v4(a: &str) -> IpAddr {
        a.parse().unwrap()
    }

    fn hex(b: &[u8]) -> String {
        b.iter().map(|x| format!("{x:02x}")).collect()
    }

    fn adv4() -> Advert {
        Advert {
            version: Version::V3,
            vrid: 51,
            priority: 150,
            max_adver_int_cs: 10,
            addrs: vec![v4("192.0.2.10"), v4("192.0.2.11")],
        }
    }

    // Golden bytes computed independently of this code (RFC 1071 over the
    // message, with and without the pseudo-header, in a few lines of Python).
    #[test]
    fn golden_ipv4_pseudo_header() {
        let m = encode(
            &adv4(),
            v4("10.0.0.1"),
            v4("224.0.0.18"),
            ChecksumForm::PseudoHeader,
        );
        assert_eq!(hex(&m), "31339602000aca15c000020ac000020b");
    }

    #[test]
    fn golden_ipv4_message_only() {
        let m = encode(
            &adv4(),
            v4("10.0.0.1"),
            v4("224.0.0.18"),
            ChecksumForm::MessageOnly,
        );
        assert_eq!(hex(&m), "31339602000ab4a9c000020ac000020b");
        // message-only checksum does not depend on addresses
        let m2 = encode(
            &adv4(),
            v4("10.9.9.9"),
            v4("10.0.0.2"),
            ChecksumForm::MessageOnly,
        );
        assert_eq!(m, m2);
    }

    #[test]
    fn golden_ipv4_full_packet() {
        let p = encode_ipv4_packet(
            &adv4(),
            "10.0.0.1".parse().unwrap(),
            MCAST_V4,
            ChecksumForm::PseudoHeader,
        );
        assert_eq!(
            hex(&p),
            "45c0002400000000ff70d0960a000001e0000012\
             31339602000aca15c000020ac000020b"
        );
        let (info, payload) = split_ipv4(&p).unwrap();
        assert_eq!(info.ttl, 255);
        assert_eq!(info.src, "10.0.0.1".parse::<Ipv4Addr>().unwrap());
        assert_eq!(info.dst, MCAST_V4);
        assert_eq!(payload, &p[20..]);
        assert_eq!(inet_checksum(&p[..20]), 0);
    }

    #[test]
    fn golden_ipv6() {
        let a = Advert {
            version: Version::V3,
            vrid: 7,
            priority: 100,
            max_adver_int_cs: 100,
            addrs: vec![v4("fe80::1"), v4("2001:db8::10")],
        };
        let m = encode(
            &a,
            v4("fe80::a"),
            IpAddr::V6(MCAST_V6),
            ChecksumForm::MessageOnly,
        );
        assert_eq!(
            hex(&m),
            "310764020064400f\
             fe800000000000000000000000000001\
             20010db8000000000000000000000010"
        );
        let d = decode(&m, v4("fe80::a"), IpAddr::V6(MCAST_V6)).unwrap();
        assert_eq!(d.advert, a);
        assert_eq!(d.checksum_form, ChecksumForm::PseudoHeader);
        // a different source breaks the (mandatory) pseudo-header checksum
        assert_eq!(
            decode(&m, v4("fe80::b"), IpAddr::V6(MCAST_V6)),
            Err(ParseError::BadChecksum)
        );
    }

    #[test]
    fn decode_accepts_both_forms() {
        let (s, d) = (v4("10.0.0.1"), v4("224.0.0.18"));
        for form in [ChecksumForm::PseudoHeader, ChecksumForm::MessageOnly] {
            let m = encode(&adv4(), s, d, form);
            let dec = decode(&m, s, d).unwrap();
            assert_eq!(dec.advert, adv4());
            assert_eq!(dec.checksum_form, form);
        }
    }

    #[test]
    fn decode_rejects() {
        let (s, d) = (v4("10.0.0.1"), v4("224.0.0.18"));
        let good = encode(&adv4(), s, d, ChecksumForm::PseudoHeader);
        assert_eq!(decode(&good[..7], s, d), Err(ParseError::TooShort));
        assert_eq!(decode(&good[..12], s, d), Err(ParseError::TooShort));
        let mut m = good.clone();
        m[7] ^= 1;
        assert_eq!(decode(&m, s, d), Err(ParseError::BadChecksum));
        let mut m = good.clone();
        m[0] = 0x11;
        assert_eq!(decode(&m, s, d), Err(ParseError::BadVersion));
        // a v2 header over a v3 checksum: the v2 (message-only) checksum fails
        let mut m = good.clone();
        m[0] = 0x21;
        assert_eq!(decode(&m, s, d), Err(ParseError::BadChecksum));
        let mut m = good.clone();
        m[0] = 0x32;
        assert_eq!(decode(&m, s, d), Err(ParseError::BadType));
        let a0 = Advert { vrid: 0, ..adv4() };
        assert_eq!(
            decode(&encode(&a0, s, d, ChecksumForm::PseudoHeader), s, d),
            Err(ParseError::BadVrid)
        );
        let none = Advert {
            addrs: vec![],
            ..adv4()
        };
        assert_eq!(
            decode(&encode(&none, s, d, ChecksumForm::PseudoHeader), s, d),
            Err(ParseError::BadLength)
        );
        // pseudo-header checksum computed for another destination fails
        let other = encode(&adv4(), s, v4("10.0.0.2"), ChecksumForm::PseudoHeader);
        assert_eq!(decode(&other, s, d), Err(ParseError::BadChecksum));
    }

    #[test]
    fn reserved_bits_ignored() {
        let (s, d) = (v4("10.0.0.1"), v4("224.0.0.18"));
        let mut m = encode(&adv4(), s, d, ChecksumForm::MessageOnly);
        m[4] |= 0xf0;
        let ck = vrrp_checksum(&m, s, d, ChecksumForm::MessageOnly);
        m[6..8].copy_from_slice(&ck.to_be_bytes());
        assert_eq!(decode(&m, s, d).unwrap().advert.max_adver_int_cs, 10);
    }

    fn adv4_v2() -> Advert {
        Advert {
            version: Version::V2,
            max_adver_int_cs: 100,
            ..adv4()
        }
    }

    // Golden bytes computed independently of this code (RFC 1071 over the
    // whole message, authentication data included, in a few lines of Python).
    #[test]
    fn golden_v2_message_and_packet() {
        let (s, d) = (v4("10.0.0.1"), v4("224.0.0.18"));
        for form in [ChecksumForm::PseudoHeader, ChecksumForm::MessageOnly] {
            let m = encode(&adv4_v2(), s, d, form);
            assert_eq!(hex(&m), "213396020001c4b2c000020ac000020b0000000000000000");
        }
        let p = encode_ipv4_packet(
            &adv4_v2(),
            "10.0.0.1".parse().unwrap(),
            MCAST_V4,
            ChecksumForm::PseudoHeader,
        );
        assert_eq!(
            hex(&p),
            "45c0002c00000000ff70d08e0a000001e0000012\
             213396020001c4b2c000020ac000020b0000000000000000"
        );
        let dec = decode(&p[20..], s, d).unwrap();
        assert_eq!(dec.advert, adv4_v2());
        assert_eq!(dec.checksum_form, ChecksumForm::MessageOnly);
    }

    #[test]
    fn v2_interval_in_seconds_and_rejects() {
        let (s, d) = (v4("10.0.0.1"), v4("224.0.0.18"));
        let a = Advert {
            max_adver_int_cs: 300,
            ..adv4_v2()
        };
        let m = encode(&a, s, d, ChecksumForm::MessageOnly);
        assert_eq!((m[4], m[5]), (0, 3));
        assert_eq!(decode(&m, s, d).unwrap().advert.max_adver_int_cs, 300);
        // v2 does not exist over IPv6
        let (s6, d6) = (v4("fe80::1"), IpAddr::V6(MCAST_V6));
        assert_eq!(decode(&m, s6, d6), Err(ParseError::BadVersion));
        // the pseudo-header form is not a v2 checksum
        let mut bad = m.clone();
        let ck = vrrp_checksum(&bad, s, d, ChecksumForm::PseudoHeader);
        bad[6..8].copy_from_slice(&ck.to_be_bytes());
        assert_eq!(decode(&bad, s, d), Err(ParseError::BadChecksum));
        // without its authentication data it still decodes (checksum over what is there)
        let mut short = m[..16].to_vec();
        let ck = vrrp_checksum(&short, s, d, ChecksumForm::MessageOnly);
        short[6..8].copy_from_slice(&ck.to_be_bytes());
        assert_eq!(decode(&short, s, d).unwrap().advert, a);
    }

    #[test]
    fn split_ipv4_rejects() {
        let p = encode_ipv4_packet(
            &adv4(),
            "10.0.0.1".parse().unwrap(),
            MCAST_V4,
            ChecksumForm::PseudoHeader,
        );
        assert_eq!(split_ipv4(&p[..19]), Err(ParseError::TooShort));
        let mut q = p.clone();
        q[0] = 0x44;
        assert_eq!(split_ipv4(&q), Err(ParseError::BadIpHeader));
        let mut q = p.clone();
        q[9] = 6;
        assert_eq!(split_ipv4(&q), Err(ParseError::BadIpHeader));
        let mut q = p.clone();
        q[3] = 0xff;
        assert_eq!(split_ipv4(&q), Err(ParseError::TooShort));
    }
}
