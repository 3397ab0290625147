//! IPVS connection entries from `/proc/net/ip_vs_conn` (the kernel has no
//! netlink dump for connections).
//!
//! Line format (kernel `ip_vs_conn_seq_show`): IPv4 addresses as 8 hex
//! digits, IPv6 as text, ports as 4 hex digits, then state, expiry seconds
//! and optionally the persistence engine name and data.

use std::net::{IpAddr, Ipv4Addr};

use serde::Serialize;

/// The proc file.
pub const CONN_PROC_FILE: &str = "/proc/net/ip_vs_conn";

/// One connection entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Conn {
    /// Protocol name as printed by the kernel (TCP, UDP, SCTP, IP).
    pub protocol: String,
    /// Client address.
    pub client: IpAddr,
    /// Client port.
    pub client_port: u16,
    /// Virtual address.
    pub virtual_addr: IpAddr,
    /// Virtual port.
    pub virtual_port: u16,
    /// Real server address.
    pub dest: IpAddr,
    /// Real server port.
    pub dest_port: u16,
    /// Connection state (ESTABLISHED, FIN_WAIT, NONE, ...).
    pub state: String,
    /// Seconds until expiry.
    pub expires: u32,
    /// Persistence engine name, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pe_name: Option<String>,
    /// Persistence engine data, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pe_data: Option<String>,
}

fn parse_addr(s: &str) -> Option<IpAddr> {
    if s.contains(':') {
        s.parse().ok()
    } else if s.contains('.') {
        s.parse::<Ipv4Addr>().ok().map(IpAddr::V4)
    } else {
        u32::from_str_radix(s, 16)
            .ok()
            .map(|v| IpAddr::V4(Ipv4Addr::from(v)))
    }
}

/// Parse one entry line (not the header).
pub fn parse_line(line: &str) -> Option<Conn> {
    let t: Vec<&str> = line.split_whitespace().collect();
    if t.len() < 9 {
        return None;
    }
    let port = |s: &str| u16::from_str_radix(s, 16).ok();
    Some(Conn {
        protocol: t[0].to_string(),
        client: parse_addr(t[1])?,
        client_port: port(t[2])?,
        virtual_addr: parse_addr(t[3])?,
        virtual_port: port(t[4])?,
        dest: parse_addr(t[5])?,
        dest_port: port(t[6])?,
        state: t[7].to_string(),
        expires: t[8].parse().ok()?,
        pe_name: t.get(9).map(|s| s.to_string()),
        pe_data: t.get(10).map(|s| s.to_string()),
    })
}

/// Parse the whole file's text (first line is the header).
pub fn parse(text: &str) -> Vec<Conn> {
    text.lines().skip(1).filter_map(parse_line).collect()
}

/// Read and parse the proc file.
pub fn read() -> std::io::Result<Vec<Conn>> {
    Ok(parse(&std::fs::read_to_string(CONN_PROC_FILE)?))
}

/// Filters for the modern connection listing.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    /// Protocol (case-insensitive).
    pub protocol: Option<String>,
    /// Client address.
    pub client: Option<IpAddr>,
    /// Virtual address.
    pub virtual_addr: Option<IpAddr>,
    /// Virtual port.
    pub virtual_port: Option<u16>,
    /// Real server address.
    pub dest: Option<IpAddr>,
    /// Real server port.
    pub dest_port: Option<u16>,
    /// State (case-insensitive).
    pub state: Option<String>,
}

impl Filter {
    /// Does the entry match every given criterion?
    pub fn matches(&self, c: &Conn) -> bool {
        self.protocol
            .as_ref()
            .is_none_or(|p| p.eq_ignore_ascii_case(&c.protocol))
            && self.client.is_none_or(|a| a == c.client)
            && self.virtual_addr.is_none_or(|a| a == c.virtual_addr)
            && self.virtual_port.is_none_or(|p| p == c.virtual_port)
            && self.dest.is_none_or(|a| a == c.dest)
            && self.dest_port.is_none_or(|p| p == c.dest_port)
            && self
                .state
                .as_ref()
                .is_none_or(|s| s.eq_ignore_ascii_case(&c.state))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "Pro FromIP   FPrt ToIP     TPrt DestIP   DPrt State       Expires PEName PEData\n\
TCP 0A000002 D431 0A000001 0050 C0A8010A 0050 ESTABLISHED     899\n\
UDP 2001:0db8:0000:0000:0000:0000:0000:0002 8000 2001:0db8:0000:0000:0000:0000:0000:0001 0035 2001:0db8:0000:0000:0000:0000:0000:0010 0035 UDP             299\n\
UDP 0A000002 13C4 0A000001 13C4 C0A8010B 13C4 UDP             100 sip 1234@host\n";

    #[test]
    fn parse_proc() {
        let v = parse(SAMPLE);
        assert_eq!(v.len(), 3);
        assert_eq!(v[0].client, "10.0.0.2".parse::<IpAddr>().unwrap());
        assert_eq!(v[0].client_port, 0xd431);
        assert_eq!(v[0].dest_port, 80);
        assert_eq!(v[1].virtual_addr, "2001:db8::1".parse::<IpAddr>().unwrap());
        assert_eq!(v[2].pe_name.as_deref(), Some("sip"));
        let f = Filter {
            state: Some("established".into()),
            ..Default::default()
        };
        assert_eq!(v.iter().filter(|c| f.matches(c)).count(), 1);
    }
}
