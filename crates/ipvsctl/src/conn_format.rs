//! ipvsadm's connection listing (`-Lc`) over the kernel's connection table
//! text (the lines are reformatted as ipvsadm does, field by field).

use std::net::{IpAddr, Ipv4Addr};

use ipvs_netlink::conn::CONN_PROC_FILE;
use ipvs_netlink::ipvs::Protocol;

use crate::format::{addrport_to_anyname, FMT_PERSISTENTCONN};
use crate::names::Resolver;

/// ipvsadm's `print_conn` for one raw line.
pub fn format_line_ipvsadm(line: &str, format: u32, res: &dyn Resolver) -> String {
    let t: Vec<&str> = line.split_whitespace().collect();
    let n = t.len();
    let get = |i: usize| t.get(i).copied().unwrap_or("");
    let protocol = get(0);
    let proto = match protocol {
        "TCP" => Protocol::Tcp,
        "UDP" => Protocol::Udp,
        "SCTP" => Protocol::Sctp,
        _ => Protocol::Other(0),
    };
    let hex_port = |s: &str| u16::from_str_radix(s, 16).unwrap_or(0);
    let v4hex = |s: &str| IpAddr::V4(Ipv4Addr::from(u32::from_str_radix(s, 16).unwrap_or(0)));
    let (caddr, vaddr) = if let Ok(a) = get(1).parse::<std::net::Ipv6Addr>() {
        (
            IpAddr::V6(a),
            get(3)
                .parse::<std::net::Ipv6Addr>()
                .map(IpAddr::V6)
                .unwrap_or(IpAddr::V6(0.into())),
        )
    } else if let Ok(a) = get(1).parse::<Ipv4Addr>() {
        (
            IpAddr::V4(a),
            get(3)
                .parse::<Ipv4Addr>()
                .map(IpAddr::V4)
                .unwrap_or(IpAddr::V4(0.into())),
        )
    } else {
        (v4hex(get(1)), v4hex(get(3)))
    };
    let daddr = if let Ok(a) = get(5).parse::<std::net::Ipv6Addr>() {
        IpAddr::V6(a)
    } else if let Ok(a) = get(5).parse::<Ipv4Addr>() {
        IpAddr::V4(a)
    } else {
        v4hex(get(5))
    };
    let cname = addrport_to_anyname(&caddr, hex_port(get(2)), proto, format, res);
    let vname = addrport_to_anyname(&vaddr, hex_port(get(4)), proto, format, res);
    let dname = addrport_to_anyname(&daddr, hex_port(get(6)), proto, format, res);
    let expires: i64 = get(8).parse().unwrap_or(0);
    let expire = format!("{:02}:{:02}", expires / 60, expires % 60);
    let state = get(7);
    if format & FMT_PERSISTENTCONN != 0 && n >= 11 {
        format!(
            "{protocol:<3} {expire:<6} {state:<11} {cname:<18} {vname:<18} {dname:<16} {:<18} {}\n",
            get(9),
            get(10)
        )
    } else {
        format!("{protocol:<3} {expire:<6} {state:<11} {cname:<18} {vname:<18} {dname}\n")
    }
}

/// ipvsadm's `list_conn` over the proc file text.
pub fn format_ipvsadm(text: &str, format: u32, res: &dyn Resolver) -> Result<String, String> {
    let mut lines = text.split_inclusive('\n');
    if lines.next().is_none() {
        return Err(format!("unexpected input from {CONN_PROC_FILE}\n"));
    }
    let mut out = String::from("IPVS connection entries\n");
    if format & FMT_PERSISTENTCONN != 0 {
        out.push_str(&format!(
            "pro expire {:<11} {:<18} {:<18} {:<18} {:<16} {}\n",
            "state", "source", "virtual", "destination", "pe name", "pe_data"
        ));
    } else {
        out.push_str(&format!(
            "pro expire {:<11} {:<18} {:<18} {}\n",
            "state", "source", "virtual", "destination"
        ));
    }
    for l in lines {
        if l.trim().is_empty() {
            continue;
        }
        out.push_str(&format_line_ipvsadm(l, format, res));
    }
    Ok(out)
}

/// `ipvsadm -Lc`: read the proc file and format it.
pub fn list_ipvsadm(format: u32, res: &dyn Resolver) -> Result<String, String> {
    let text = std::fs::read_to_string(CONN_PROC_FILE)
        .map_err(|_| format!("cannot open file {CONN_PROC_FILE}\n"))?;
    format_ipvsadm(&text, format, res)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::names::Numeric;

    const SAMPLE: &str = "Pro FromIP   FPrt ToIP     TPrt DestIP   DPrt State       Expires PEName PEData\n\
TCP 0A000002 D431 0A000001 0050 C0A8010A 0050 ESTABLISHED     899\n\
UDP 2001:0db8:0000:0000:0000:0000:0000:0002 8000 2001:0db8:0000:0000:0000:0000:0000:0001 0035 2001:0db8:0000:0000:0000:0000:0000:0010 0035 UDP             299\n\
UDP 0A000002 13C4 0A000001 13C4 C0A8010B 13C4 UDP             100 sip 1234@host\n";

    #[test]
    fn ipvsadm_format() {
        let out = format_ipvsadm(SAMPLE, crate::format::FMT_NUMERIC, &Numeric).unwrap();
        let want = "IPVS connection entries\n\
pro expire state       source             virtual            destination\n\
TCP 14:59  ESTABLISHED 10.0.0.2:54321     10.0.0.1:80        192.168.1.10:80\n\
UDP 04:59  UDP         [2001:db8::2]:32768 [2001:db8::1]:53   [2001:db8::10]:53\n\
UDP 01:40  UDP         10.0.0.2:5060      10.0.0.1:5060      192.168.1.11:5060\n";
        assert_eq!(out, want);
        let pc = format_ipvsadm(
            SAMPLE,
            crate::format::FMT_NUMERIC | FMT_PERSISTENTCONN,
            &Numeric,
        )
        .unwrap();
        assert!(pc.contains("pro expire state       source             virtual            destination        pe name          pe_data\n"));
        assert!(
            pc.contains("192.168.1.11:5060 sip                1234@host\n"),
            "{pc}"
        );
    }
}
