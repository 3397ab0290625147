//! The text primitives: glibc's `inet_ntop`, ipvsadm's address:port
//! names and `print_largenum`, and column padding as `printf` does it.

use super::*;

/// glibc `inet_ntop(AF_INET6)` text (embedded IPv4 for `::a.b.c.d` and
/// `::ffff:a.b.c.d`, longest run of >= 2 zero groups compressed, first wins).
pub fn inet6_ntop(a: &Ipv6Addr) -> String {
    let w = a.segments();
    let (mut best_base, mut best_len) = (None::<usize>, 0usize);
    let (mut cur_base, mut cur_len) = (None::<usize>, 0usize);
    for (i, &x) in w.iter().enumerate() {
        if x == 0 {
            if cur_base.is_none() {
                cur_base = Some(i);
                cur_len = 1;
            } else {
                cur_len += 1;
            }
        } else if let Some(cb) = cur_base {
            if best_base.is_none() || cur_len > best_len {
                best_base = Some(cb);
                best_len = cur_len;
            }
            cur_base = None;
        }
    }
    if let Some(cb) = cur_base {
        if best_base.is_none() || cur_len > best_len {
            best_base = Some(cb);
            best_len = cur_len;
        }
    }
    if best_base.is_some() && best_len < 2 {
        best_base = None;
    }
    let mut s = String::new();
    let mut i = 0;
    while i < 8 {
        if let Some(bb) = best_base {
            if i >= bb && i < bb + best_len {
                if i == bb {
                    s.push(':');
                }
                i += 1;
                continue;
            }
        }
        if i != 0 {
            s.push(':');
        }
        if i == 6 && best_base == Some(0) && (best_len == 6 || (best_len == 5 && w[5] == 0xffff)) {
            let o = a.octets();
            let _ = write!(s, "{}.{}.{}.{}", o[12], o[13], o[14], o[15]);
            break;
        }
        let _ = write!(s, "{:x}", w[i]);
        i += 1;
    }
    if let Some(bb) = best_base {
        if bb + best_len == 8 {
            s.push(':');
        }
    }
    s
}

/// `inet_ntop` of either family.
pub fn ntop(a: &IpAddr) -> String {
    match a {
        IpAddr::V4(v) => v.to_string(),
        IpAddr::V6(v) => inet6_ntop(v),
    }
}

pub(super) fn truncate(s: &mut String, max: usize) {
    if s.len() > max {
        let mut n = max;
        while !s.is_char_boundary(n) {
            n -= 1;
        }
        s.truncate(n);
    }
}

/// ipvsadm's `addrport_to_anyname` (60-byte buffer).
pub fn addrport_to_anyname(
    addr: &IpAddr,
    port: u16,
    proto: Protocol,
    format: u32,
    res: &dyn Resolver,
) -> String {
    let v4 = matches!(addr, IpAddr::V4(_));
    let (l, r) = if v4 { ("", "") } else { ("[", "]") };
    let mut s = if format & FMT_NUMERIC != 0 {
        let mut s = String::with_capacity(48);
        s.push_str(l);
        match addr {
            IpAddr::V4(a) => push_ipv4(&mut s, a),
            IpAddr::V6(a) => s.push_str(&inet6_ntop(a)),
        }
        s.push_str(r);
        s.push(':');
        push_int_left(&mut s, port as i64, 0);
        s
    } else {
        let host = res.host(addr).unwrap_or_else(|| ntop(addr));
        let serv = res.service(port, proto).unwrap_or_else(|| port.to_string());
        format!("{l}{host}{r}:{serv}")
    };
    truncate(&mut s, 59);
    s
}

/// `print_largenum`.
pub fn largenum(i: u64, format: u32) -> String {
    if format & FMT_EXACT != 0 {
        let len = i.to_string().len();
        let w = if len <= 8 { 9 } else { len + 1 };
        return format!("{i:>w$}");
    }
    if i < 100_000_000 {
        format!("{i:>9}")
    } else if i < 1_000_000_000 {
        format!("{:>8}K", i / 1000)
    } else if i < 100_000_000_000 {
        format!("{:>8}M", i / 1_000_000)
    } else if i < 100_000_000_000_000 {
        format!("{:>8}G", i / 1_000_000_000)
    } else {
        format!("{:>8}T", i / 1_000_000_000_000)
    }
}

/// Append `s` left-justified in `w` columns, like `{:<w}`.
pub(super) fn push_left(out: &mut String, s: &str, w: usize) {
    out.push_str(s);
    let n = if s.is_ascii() {
        s.len()
    } else {
        s.chars().count()
    };
    for _ in n..w {
        out.push(' ');
    }
}

/// Append an integer left-justified in `w` columns, like `{:<w}`, without
/// going through `core::fmt` (listings print four per real server).
pub(super) fn push_int_left(out: &mut String, v: i64, w: usize) {
    let mut buf = [0u8; 20];
    let mut i = buf.len();
    let mut m = v.unsigned_abs();
    loop {
        i -= 1;
        buf[i] = b'0' + (m % 10) as u8;
        m /= 10;
        if m == 0 {
            break;
        }
    }
    let start = out.len();
    if v < 0 {
        out.push('-');
    }
    // The digits are ASCII.
    out.push_str(std::str::from_utf8(&buf[i..]).unwrap_or_default());
    for _ in out.len() - start..w {
        out.push(' ');
    }
}

/// Append a dotted-quad IPv4 address.
pub(super) fn push_ipv4(out: &mut String, a: &Ipv4Addr) {
    for (k, o) in a.octets().into_iter().enumerate() {
        if k != 0 {
            out.push('.');
        }
        push_int_left(out, o as i64, 0);
    }
}
