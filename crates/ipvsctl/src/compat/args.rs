//! The low-level arguments: C number and address parsing as ipvsadm
//! does it, the C structures it fills, service and scheduler-flag parsing.

use super::*;

/// C `strtol(s, &end, 10)` with a full-string check (`string_to_number`).
pub(super) fn string_to_number(s: &str, min: i64, max: i64) -> Option<i64> {
    let v = strtol_full(s)?;
    (min <= v && v <= max).then_some(v)
}

/// strtol base 10 accepting leading whitespace and a sign; the whole string
/// must be consumed and must contain digits. `None` also on overflow.
pub(super) fn strtol_full(s: &str) -> Option<i64> {
    let t = s.trim_start_matches([' ', '\t', '\n', '\r', '\x0b', '\x0c']);
    let (neg, digits) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let mut v: i64 = 0;
    for b in digits.bytes() {
        v = v.checked_mul(10)?.checked_add((b - b'0') as i64)?;
    }
    Some(if neg { -v } else { v })
}

/// C `atoi`.
pub(super) fn atoi(s: &str) -> i64 {
    let t = s.trim_start_matches([' ', '\t', '\n', '\r', '\x0b', '\x0c']);
    let (neg, rest) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let mut v: i64 = 0;
    for b in rest.bytes().take_while(|b| b.is_ascii_digit()) {
        v = v.saturating_mul(10).saturating_add((b - b'0') as i64);
    }
    if neg {
        -v
    } else {
        v
    }
}

/// glibc `inet_aton`: 1-4 parts, each decimal, octal (0) or hex (0x);
/// trailing whitespace and anything after it are ignored.
pub fn inet_aton(s: &str) -> Option<Ipv4Addr> {
    let end = s.find(|c: char| c.is_ascii_whitespace()).unwrap_or(s.len());
    let s = &s[..end];
    if s.is_empty() {
        return None;
    }
    let parts: Vec<&str> = s.split('.').collect();
    if parts.len() > 4 {
        return None;
    }
    let mut vals = Vec::with_capacity(4);
    for p in &parts {
        let (radix, digits) = if let Some(h) = p.strip_prefix("0x").or_else(|| p.strip_prefix("0X"))
        {
            (16, h)
        } else if p.len() > 1 && p.starts_with('0') {
            (8, &p[1..])
        } else {
            (10, *p)
        };
        if digits.is_empty() && radix != 16 {
            return None;
        }
        let v = if digits.is_empty() {
            0
        } else {
            u64::from_str_radix(digits, radix).ok()?
        };
        if v > u32::MAX as u64 {
            return None;
        }
        vals.push(v as u32);
    }
    let n = vals.len();
    for v in &vals[..n - 1] {
        if *v > 255 {
            return None;
        }
    }
    let last = vals[n - 1];
    let max_last: u64 = match n {
        1 => u32::MAX as u64,
        2 => 0xffffff,
        3 => 0xffff,
        _ => 0xff,
    };
    if last as u64 > max_last {
        return None;
    }
    let mut addr: u32 = last;
    for (i, v) in vals[..n - 1].iter().enumerate() {
        addr |= v << (24 - 8 * i);
    }
    Some(Ipv4Addr::from(addr))
}

/// Strict `inet_pton(AF_INET)` (dotted quad of decimals, no leading zeros
/// longer than the value).
pub(super) fn inet_pton4(s: &str) -> Option<Ipv4Addr> {
    let parts: Vec<&str> = s.split('.').collect();
    if parts.len() != 4 {
        return None;
    }
    let mut o = [0u8; 4];
    for (i, p) in parts.iter().enumerate() {
        if p.is_empty()
            || p.len() > 3
            || !p.bytes().all(|b| b.is_ascii_digit())
            || (p.len() > 1 && p.starts_with('0'))
        {
            return None;
        }
        o[i] = p.parse().ok()?;
    }
    Some(Ipv4Addr::from(o))
}

/// `inet_pton(AF_INET6)`.
pub(super) fn inet_pton6(s: &str) -> Option<Ipv6Addr> {
    s.parse().ok()
}

pub(super) const SERVICE_ADDR: u32 = 1;
pub(super) const SERVICE_PORT: u32 = 2;

/// The C `ipvs_service_t` fields ipvsadm fills while parsing.
#[derive(Debug, Clone, Default)]
pub(super) struct CSvc {
    pub(super) af: u16,
    pub(super) protocol: u16,
    pub(super) addr: Option<IpAddr>,
    pub(super) port: u16,
    pub(super) fwmark: u32,
    pub(super) sched_name: String,
    pub(super) flags: u32,
    pub(super) timeout: u32,
    pub(super) netmask: [u8; 4],
    pub(super) pe_name: String,
}

#[derive(Debug, Clone, Default)]
pub(super) struct CDest {
    pub(super) af: u16,
    pub(super) addr: Option<IpAddr>,
    pub(super) port: u16,
    pub(super) conn_flags: u32,
    pub(super) weight: i64,
    pub(super) u_threshold: u32,
    pub(super) l_threshold: u32,
    pub(super) tun_type: u8,
    pub(super) tun_port: u16,
    pub(super) tun_flags: u16,
}

#[derive(Debug, Clone, Default)]
pub(super) struct CDaemon {
    pub(super) state: u32,
    pub(super) mcast_ifn: String,
    pub(super) syncid: u32,
    pub(super) sync_maxlen: u16,
    pub(super) mcast_group: Option<IpAddr>,
    pub(super) mcast_port: u16,
    pub(super) mcast_ttl: u8,
}

/// `parse_service`: fills af/addr/port of `svc`; returns SERVICE_* bits.
pub(super) fn parse_service(buf: &str, svc: &mut CSvc) -> u32 {
    if buf.bytes().all(|b| b.is_ascii_digit()) {
        return 0;
    }
    let mut host: &str = buf;
    let mut portp: Option<&str> = None;
    let mut bracketed = false;
    if let Some(rest) = buf.strip_prefix('[') {
        let Some(close) = rest.find(']') else {
            return 0;
        };
        let after = &rest[close + 1..];
        if !after.starts_with(':') {
            return 0;
        }
        host = &rest[..close];
        portp = Some(&after[1..]);
        bracketed = true;
    }
    if let Some(a6) = inet_pton6(host) {
        svc.addr = Some(IpAddr::V6(a6));
        svc.af = AF_INET6;
        svc.netmask = 128u32.to_ne_bytes();
    } else {
        // ipvsadm looks for the port separator again inside the (bracket
        // stripped) host part: "[1.2.3.4]:80" loses its port.
        if bracketed {
            portp = None;
        }
        if let Some(i) = host.rfind(':') {
            portp = Some(&host[i + 1..]);
            host = &host[..i];
        }
        if let Some(a) = inet_aton(host).or_else(|| names::host_to_addr(host)) {
            svc.addr = Some(IpAddr::V4(a));
            svc.af = AF_INET;
        } else {
            return 0;
        }
    }
    let mut result = SERVICE_ADDR;
    if let Some(p) = portp {
        result |= SERVICE_PORT;
        if let Some(n) = string_to_number(p, 0, 65535) {
            svc.port = n as u16;
        } else if let Some(n) = names::service_to_port(p, Protocol::from_number(svc.protocol))
            .filter(|_| svc.protocol != 0)
        {
            svc.port = n;
        } else {
            return 0;
        }
    }
    result
}

/// `parse_sched_flags`.
pub(super) fn parse_sched_flags(sched: &str, arg: &str) -> Result<u32, Exit> {
    let sched = if sched.is_empty() { DEF_SCHED } else { sched };
    let mut flags = 0;
    // strtok: empty tokens are skipped; an all-separator string yields none
    // (ipvsadm then calls strcmp(NULL) - we report it as invalid).
    let toks: Vec<&str> = arg.split(',').filter(|t| !t.is_empty()).collect();
    if toks.is_empty() {
        return Err(fail(2, "invalid scheduler flag `(null)'"));
    }
    for flag in toks {
        flags |= match sched_flag(sched, flag) {
            Ok(bit) => bit,
            Err(SchedFlagError::Unknown) => {
                return Err(fail(2, format!("invalid scheduler flag `{flag}'")))
            }
            Err(SchedFlagError::Incompatible { .. }) => {
                return Err(fail(2, format!("incompatible scheduler flag `{flag}'")))
            }
        };
    }
    Ok(flags)
}

/// `s` cut to at most `max` bytes (on a character boundary), as ipvsadm's
/// fixed-size `strncpy` fields keep it.
pub(super) fn truncate_bytes(s: &str, max: usize) -> String {
    let mut n = s.len().min(max);
    while !s.is_char_boundary(n) {
        n -= 1;
    }
    s[..n].to_string()
}
