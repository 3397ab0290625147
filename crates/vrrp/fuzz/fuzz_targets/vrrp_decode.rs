#![no_main]
//! Any bytes, as an IPv4 packet or as a bare VRRP message for IPv4 or IPv6,
//! must decode or be rejected with a reason, never panic; whatever decodes
//! (VRRPv3, or VRRPv2 over IPv4) must re-encode to a message that decodes
//! to the same advert. The first byte's version nibble steers the fuzzer
//! into both codecs; a v2 re-encoding must carry the message-only checksum.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use vrrp::packet::{self, ChecksumForm};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let s4 = IpAddr::V4(Ipv4Addr::new(192, 0, 2, 1));
    let d4 = IpAddr::V4(packet::MCAST_V4);
    let s6 = IpAddr::V6(Ipv6Addr::new(0xfe80, 0, 0, 0, 0, 0, 0, 1));
    let d6 = IpAddr::V6(packet::MCAST_V6);
    if let Ok((info, payload)) = packet::split_ipv4(data) {
        let _ = packet::decode(payload, IpAddr::V4(info.src), IpAddr::V4(info.dst));
    }
    for (s, d) in [(s4, d4), (s6, d6)] {
        if let Ok(dec) = packet::decode(data, s, d) {
            let m = packet::encode(&dec.advert, s, d, ChecksumForm::PseudoHeader);
            let again = packet::decode(&m, s, d).expect("re-encoded advert decodes");
            if dec.advert.version == packet::Version::V2 {
                assert_eq!(again.checksum_form, ChecksumForm::MessageOnly);
            }
            assert_eq!(again.advert, dec.advert);
        }
    }
});
