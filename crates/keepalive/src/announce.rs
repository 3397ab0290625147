//! Gratuitous ARP and unsolicited neighbour advertisement frames (pure builders).

use std::net::{Ipv4Addr, Ipv6Addr};

/// All-nodes multicast, destination of unsolicited NAs.
pub const ALL_NODES: Ipv6Addr = Ipv6Addr::new(0xff02, 0, 0, 0, 0, 0, 0, 1);

/// A gratuitous ARP request as keepalived sends it: Ethernet broadcast,
/// sender IP = target IP = the VIP, target hardware address broadcast.
pub fn garp_frame(mac: [u8; 6], vip: Ipv4Addr) -> [u8; 42] {
    let mut f = [0u8; 42];
    f[0..6].copy_from_slice(&[0xff; 6]);
    f[6..12].copy_from_slice(&mac);
    f[12..14].copy_from_slice(&0x0806u16.to_be_bytes());
    f[14..16].copy_from_slice(&1u16.to_be_bytes()); // Ethernet
    f[16..18].copy_from_slice(&0x0800u16.to_be_bytes()); // IPv4
    f[18] = 6;
    f[19] = 4;
    f[20..22].copy_from_slice(&1u16.to_be_bytes()); // request
    f[22..28].copy_from_slice(&mac);
    f[28..32].copy_from_slice(&vip.octets());
    f[32..38].copy_from_slice(&[0xff; 6]);
    f[38..42].copy_from_slice(&vip.octets());
    f
}

/// ICMPv6 body of an unsolicited neighbour advertisement (RFC 4861 §4.4,
/// RFC 5798 §6.4.2): override flag set, solicited clear, router flag as
/// given, target = VIP, target link-layer address option. The checksum
/// (bytes 2..4) is left zero: the kernel fills it for ICMPv6 raw sockets.
pub fn na_body(mac: [u8; 6], target: Ipv6Addr, router: bool) -> [u8; 32] {
    let mut b = [0u8; 32];
    b[0] = 136;
    b[4] = 0x20 | if router { 0x80 } else { 0 };
    b[8..24].copy_from_slice(&target.octets());
    b[24] = 2; // target link-layer address
    b[25] = 1; // 8 bytes
    b[26..32].copy_from_slice(&mac);
    b
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn garp_bytes() {
        let f = garp_frame([2, 0, 0, 0, 0, 1], Ipv4Addr::new(192, 0, 2, 10));
        let hex: String = f.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(
            hex,
            "ffffffffffff020000000001080600010800060400010200000000\
             01c000020affffffffffffc000020a"
        );
    }

    #[test]
    fn na_bytes() {
        let b = na_body([2, 0, 0, 0, 0, 1], "2001:db8::10".parse().unwrap(), false);
        assert_eq!(b[0], 136);
        assert_eq!(b[4], 0x20);
        assert_eq!(&b[24..26], &[2, 1]);
        assert_eq!(na_body([0; 6], Ipv6Addr::LOCALHOST, true)[4], 0xa0);
    }
}
