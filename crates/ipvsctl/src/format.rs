//! ipvsadm 1.31 listing and save (`-S`) output, byte for byte.
//!
//! Pure functions over the typed table, so they are tested against golden
//! text without a kernel. The `printf` formats are those of `ipvsadm.c`
//! (see `reference/ipvsadm.md` §1.3-1.5): trailing spaces, the 33/28
//! character truncation of IPv4 names, `print_largenum`, and the sort with
//! ipvsadm's (wrapping) comparator and glibc's merge sort.
//!
//! One deliberate difference: real-server counters in `--stats`/`--rate`
//! are the full 64-bit values (ipvsadm truncates them to 32 bits, a bug).

use std::fmt::Write as _;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use crate::names::Resolver;
use ipvs_netlink::ipvs::consts::*;
use ipvs_netlink::ipvs::flags::sched_flag_names;
use ipvs_netlink::ipvs::{
    Dest, Family, Forward, Info, Netmask, Protocol, Service, ServiceKey, SyncDaemon, Timeouts,
    TunnelCsum, TunnelType,
};

/// No format flags.
pub const FMT_NONE: u32 = 0x0000;
/// `-n`.
pub const FMT_NUMERIC: u32 = 0x0001;
/// `-S` rules.
pub const FMT_RULE: u32 = 0x0002;
/// `--stats`.
pub const FMT_STATS: u32 = 0x0004;
/// `--rate`.
pub const FMT_RATE: u32 = 0x0008;
/// `--thresholds`.
pub const FMT_THRESHOLDS: u32 = 0x0010;
/// `--persistent-conn`.
pub const FMT_PERSISTENTCONN: u32 = 0x0020;
/// `--nosort`.
pub const FMT_NOSORT: u32 = 0x0040;
/// `--exact`.
pub const FMT_EXACT: u32 = 0x0080;
/// `--tun-info`.
pub const FMT_TUN_INFO: u32 = 0x0100;

/// A service with its destinations.
pub type Entry = (Service, Vec<Dest>);

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

fn truncate(s: &mut String, max: usize) {
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

fn sched_flags(svc: &Service) -> String {
    let own = matches!(svc.scheduler.as_str(), "sh" | "mh");
    // ipvsadm names only the sh/mh bits of those schedulers (no flag-3).
    sched_flag_names(&svc.scheduler, svc.flags)
        .into_iter()
        .filter(|n| !(own && n.starts_with("flag-")))
        .collect::<Vec<_>>()
        .join(",")
}

/// Title lines (`print_title`).
pub fn title(format: u32) -> String {
    if format & FMT_STATS != 0 {
        format!(
            "{:<33} {:>8} {:>8} {:>8} {:>8} {:>8}\n  -> RemoteAddress:Port\n",
            "Prot LocalAddress:Port", "Conns", "InPkts", "OutPkts", "InBytes", "OutBytes"
        )
    } else if format & FMT_RATE != 0 {
        format!(
            "{:<33} {:>8} {:>8} {:>8} {:>8} {:>8}\n  -> RemoteAddress:Port\n",
            "Prot LocalAddress:Port", "CPS", "InPPS", "OutPPS", "InBPS", "OutBPS"
        )
    } else if format & FMT_THRESHOLDS != 0 {
        format!(
            "{:<33} {:<10} {:<10} {:<10} {:<10}\n  -> RemoteAddress:Port\n",
            "Prot LocalAddress:Port", "Uthreshold", "Lthreshold", "ActiveConn", "InActConn"
        )
    } else if format & FMT_PERSISTENTCONN != 0 {
        format!(
            "{:<33} {:<9} {:<11} {:<10} {:<10}\n  -> RemoteAddress:Port\n",
            "Prot LocalAddress:Port", "Weight", "PersistConn", "ActiveConn", "InActConn"
        )
    } else if format & FMT_TUN_INFO != 0 {
        "Prot LocalAddress:Port Scheduler Flags\n  -> RemoteAddress:Port           Forward TunnelInfo    Weight ActiveConn InActConn\n".into()
    } else if format & FMT_RULE == 0 {
        "Prot LocalAddress:Port Scheduler Flags\n  -> RemoteAddress:Port           Forward Weight ActiveConn InActConn\n".into()
    } else {
        String::new()
    }
}

fn fwd_name(f: Forward) -> &'static str {
    match f {
        Forward::Masq => "Masq",
        Forward::Local => "Local",
        Forward::Tunnel => "Tunnel",
        Forward::Route => "Route",
        _ => "(null)",
    }
}

fn fwd_switch(f: Forward) -> &'static str {
    match f {
        Forward::Masq => "-m",
        Forward::Tunnel => "-i",
        Forward::Local | Forward::Route => "-g",
        _ => "(null)",
    }
}

fn tun_flag_short(f: TunnelCsum) -> &'static str {
    match f {
        TunnelCsum::NoCsum => "-c",
        TunnelCsum::Csum => "+c",
        TunnelCsum::RemCsum => "r+c",
        TunnelCsum::Other(_) => "?",
    }
}

fn tun_flag_opt(f: TunnelCsum) -> &'static str {
    match f {
        TunnelCsum::NoCsum => "--tun-nocsum",
        TunnelCsum::Csum => "--tun-csum",
        TunnelCsum::RemCsum => "--tun-remcsum",
        TunnelCsum::Other(_) => "",
    }
}

fn tun_info(d: &Dest) -> Option<String> {
    if d.fwd != Forward::Tunnel {
        return None;
    }
    let mut s = match d.tun_type {
        TunnelType::Ipip => "ipip".to_string(),
        TunnelType::Gue => format!("gue:{}:{}", d.tun_port, tun_flag_short(d.tun_flags)),
        TunnelType::Gre => format!("gre:{}", tun_flag_short(d.tun_flags)),
        TunnelType::Other(_) => return None,
    };
    truncate(&mut s, 15);
    Some(s)
}

/// The protocol ipvsadm uses for name lookups of a service's addresses
/// (fwmark services carry no protocol: 0).
fn lookup_proto(key: &ServiceKey) -> Protocol {
    match key {
        ServiceKey::Addr { protocol, .. } => *protocol,
        ServiceKey::Fwmark { .. } => Protocol::Other(0),
    }
}

/// The service column (`svc_name`).
pub fn service_name(key: &ServiceKey, format: u32, res: &dyn Resolver) -> String {
    match key {
        ServiceKey::Fwmark { family, mark } => {
            let v6 = *family == Family::Inet6;
            match (format & FMT_RULE != 0, v6) {
                (true, true) => format!("-f {mark} -6"),
                (true, false) => format!("-f {mark}"),
                (false, true) => format!("FWM  {mark} IPv6"),
                (false, false) => format!("FWM  {mark}"),
            }
        }
        ServiceKey::Addr {
            protocol,
            addr,
            port,
        } => {
            let vname = addrport_to_anyname(addr, *port, *protocol, format, res);
            if format & FMT_RULE != 0 {
                let stype = match protocol {
                    Protocol::Tcp => "-t",
                    Protocol::Udp => "-u",
                    Protocol::Sctp => "--sctp-service",
                    Protocol::Other(_) => "--xxx-service",
                };
                format!("{stype} {vname}")
            } else {
                let stype = match protocol {
                    Protocol::Tcp => "TCP",
                    Protocol::Udp => "UDP",
                    Protocol::Sctp => "SCTP",
                    Protocol::Other(_) => "?",
                };
                let mut s = format!("{stype:<4} {vname}");
                if matches!(addr, IpAddr::V4(_)) {
                    truncate(&mut s, 33);
                }
                s
            }
        }
    }
}

/// `print_service_entry`: the service line and its destination lines.
pub fn service_entry(svc: &Service, dests: &[Dest], format: u32, res: &dyn Resolver) -> String {
    let mut out = String::new();
    write_service_entry(&mut out, svc, dests, format, res);
    out
}

/// Append `s` left-justified in `w` columns, like `{:<w}`.
fn push_left(out: &mut String, s: &str, w: usize) {
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
fn push_int_left(out: &mut String, v: i64, w: usize) {
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
fn push_ipv4(out: &mut String, a: &Ipv4Addr) {
    for (k, o) in a.octets().into_iter().enumerate() {
        if k != 0 {
            out.push('.');
        }
        push_int_left(out, o as i64, 0);
    }
}

/// `print_service_entry` appending to `out`.
pub fn write_service_entry(
    out: &mut String,
    svc: &Service,
    dests: &[Dest],
    format: u32,
    res: &dyn Resolver,
) {
    let svc_name = service_name(&svc.key, format, res);
    let fam = svc.key.family();
    let sflags = svc.flags & IP_VS_SVC_F_SCHED_MASK != 0;
    if format & FMT_RULE != 0 {
        let _ = write!(out, "-A {svc_name} -s {}", svc.scheduler);
        if svc.persistent() {
            let _ = write!(out, " -p {}", svc.timeout);
            match svc.netmask {
                Netmask::V4(m) if fam == Family::Inet && !svc.netmask.is_host() => {
                    let _ = write!(out, " -M {m}");
                }
                Netmask::V6(p) if fam == Family::Inet6 && p != 128 => {
                    let _ = write!(out, " -M {}", p as i32);
                }
                _ => {}
            }
        }
        if let Some(pe) = svc.pe_name.as_ref().filter(|p| !p.is_empty()) {
            let _ = write!(out, " --pe {pe}");
        }
        if svc.one_packet() {
            out.push_str(" -o");
        }
        if sflags {
            let _ = write!(out, " -b {}", sched_flags(svc));
        }
    } else if format & FMT_STATS != 0 {
        let s = &svc.stats;
        let _ = write!(out, "{svc_name:<33}");
        for v in [s.conns, s.inpkts, s.outpkts, s.inbytes, s.outbytes] {
            out.push_str(&largenum(v, format));
        }
    } else if format & FMT_RATE != 0 {
        let s = &svc.stats;
        let _ = write!(out, "{svc_name:<33}");
        for v in [s.cps, s.inpps, s.outpps, s.inbps, s.outbps] {
            out.push_str(&largenum(v, format));
        }
    } else {
        let _ = write!(out, "{svc_name} {}", svc.scheduler);
        if sflags {
            let _ = write!(out, " ({})", sched_flags(svc));
        }
        if svc.persistent() {
            let _ = write!(out, " persistent {}", svc.timeout);
            match svc.netmask {
                Netmask::V4(m) if fam == Family::Inet && !svc.netmask.is_host() => {
                    let _ = write!(out, " mask {m}");
                }
                Netmask::V6(p) if fam == Family::Inet6 && p != 128 => {
                    let _ = write!(out, " mask {}", p as i32);
                }
                _ => {}
            }
            if let Some(pe) = svc.pe_name.as_ref().filter(|p| !p.is_empty()) {
                let _ = write!(out, " pe {pe}");
            }
        }
        if svc.one_packet() {
            out.push_str(" ops");
        }
    }
    out.push('\n');

    let mut order: Vec<&Dest> = dests.iter().collect();
    if format & FMT_NOSORT == 0 {
        glibc_msort(&mut order, |a, b| cmp_dests(a, b));
    }
    let proto = lookup_proto(&svc.key);
    for e in order {
        let mut dname = addrport_to_anyname(&e.addr, e.port, proto, format, res);
        if format & FMT_RULE == 0 && e.family() != Family::Inet6 {
            truncate(&mut dname, 28);
        }
        let weight = e.weight as i32;
        if format & FMT_RULE != 0 {
            if e.fwd == Forward::Tunnel {
                match e.tun_type {
                    TunnelType::Gre => {
                        let _ = writeln!(
                            out,
                            "-a {svc_name} -r {dname} {} -w {weight} --tun-type gre {}",
                            fwd_switch(e.fwd),
                            tun_flag_opt(e.tun_flags)
                        );
                    }
                    TunnelType::Gue => {
                        let _ = writeln!(
                            out,
                            "-a {svc_name} -r {dname} {} -w {weight} --tun-type gue --tun-port {} {}",
                            fwd_switch(e.fwd),
                            e.tun_port,
                            tun_flag_opt(e.tun_flags)
                        );
                    }
                    TunnelType::Ipip => {
                        let _ = writeln!(
                            out,
                            "-a {svc_name} -r {dname} {} -w {weight} --tun-type ipip",
                            fwd_switch(e.fwd)
                        );
                    }
                    TunnelType::Other(_) => {
                        let _ = writeln!(
                            out,
                            "-a {svc_name} -r {dname} {} -w {weight}",
                            fwd_switch(e.fwd)
                        );
                    }
                }
            } else {
                let _ = writeln!(
                    out,
                    "-a {svc_name} -r {dname} {} -w {weight}",
                    fwd_switch(e.fwd)
                );
            }
        } else if format & FMT_STATS != 0 {
            let s = &e.stats;
            let _ = write!(out, "  -> {dname:<28}");
            for v in [s.conns, s.inpkts, s.outpkts, s.inbytes, s.outbytes] {
                out.push_str(&largenum(v, format));
            }
            out.push('\n');
        } else if format & FMT_RATE != 0 {
            let s = &e.stats;
            let _ = write!(
                out,
                "  -> {dname:<28} {:>8} {:>8} {:>8}",
                s.cps, s.inpps, s.outpps
            );
            out.push_str(&largenum(s.inbps, format));
            out.push_str(&largenum(s.outbps, format));
            out.push('\n');
        } else if format & FMT_THRESHOLDS != 0 {
            let _ = writeln!(
                out,
                "  -> {dname:<28} {:<10} {:<10} {:<10} {:<10}",
                e.u_threshold, e.l_threshold, e.active_conns, e.inact_conns
            );
        } else if format & FMT_PERSISTENTCONN != 0 {
            let _ = writeln!(
                out,
                "  -> {dname:<28} {:<9} {:<11} {:<10} {:<10}",
                e.weight, e.persist_conns, e.active_conns, e.inact_conns
            );
        } else if format & FMT_TUN_INFO != 0 {
            let ti = tun_info(e).unwrap_or_else(|| "n/a".into());
            let _ = writeln!(
                out,
                "  -> {dname:<28} {:<7} {ti:<13} {weight:<6} {:<10} {:<10}",
                fwd_name(e.fwd),
                e.active_conns,
                e.inact_conns
            );
        } else {
            out.push_str("  -> ");
            push_left(out, &dname, 28);
            out.push(' ');
            push_left(out, fwd_name(e.fwd), 7);
            out.push(' ');
            push_int_left(out, weight as i64, 6);
            out.push(' ');
            push_int_left(out, e.active_conns as i64, 10);
            out.push(' ');
            push_int_left(out, e.inact_conns as i64, 10);
            out.push('\n');
        }
    }
}

/// The version header of `list_all`.
pub fn header(info: &Info) -> String {
    format!(
        "IP Virtual Server version {}.{}.{} (size={})\n",
        (info.version >> 16) & 0xff,
        (info.version >> 8) & 0xff,
        info.version & 0xff,
        info.conn_tab_size as i32
    )
}

/// Sort services like ipvsadm (unless `FMT_NOSORT`).
pub fn sort_entries(entries: &mut Vec<&Entry>, format: u32) {
    if format & FMT_NOSORT == 0 {
        glibc_msort(entries, |a, b| cmp_services(&a.0, &b.0));
    }
}

/// `list_all`: header (not for rules), title, then each service.
pub fn list_all(info: &Info, entries: &[Entry], format: u32, res: &dyn Resolver) -> String {
    let mut out = String::new();
    if format & FMT_RULE == 0 {
        out.push_str(&header(info));
    }
    let mut v: Vec<&Entry> = entries.iter().collect();
    sort_entries(&mut v, format);
    out.push_str(&title(format));
    for (s, d) in v {
        write_service_entry(&mut out, s, d, format, res);
    }
    out
}

/// `list_service` (`-L -t addr:port`): title and the one service.
pub fn list_service(entry: &Entry, format: u32, res: &dyn Resolver) -> String {
    let mut out = title(format);
    out.push_str(&service_entry(&entry.0, &entry.1, format, res));
    out
}

/// `--timeout`.
pub fn timeouts(t: &Timeouts) -> String {
    format!(
        "Timeout (tcp tcpfin udp): {} {} {}\n",
        t.tcp as i32, t.tcp_fin as i32, t.udp as i32
    )
}

/// `--daemon`.
pub fn daemons(ds: &[SyncDaemon]) -> String {
    let mut out = String::new();
    for d in ds.iter().take(2) {
        let _ = write!(
            out,
            "{} sync daemon (mcast={}, syncid={}",
            d.state.name(),
            d.mcast_ifn,
            d.sync_id as i32
        );
        if let Some(m) = d.sync_maxlen.filter(|m| *m != 0) {
            let _ = write!(out, ", maxlen={m}");
        }
        if let Some(g) = &d.mcast_group {
            let _ = write!(out, ", group={}", ntop(g));
        }
        if let Some(p) = d.mcast_port.filter(|p| *p != 0) {
            let _ = write!(out, ", port={p}");
        }
        if let Some(t) = d.mcast_ttl.filter(|t| *t != 0) {
            let _ = write!(out, ", ttl={t}");
        }
        out.push_str(")\n");
    }
    out
}

fn words(a: &IpAddr) -> [u32; 4] {
    let o = match a {
        IpAddr::V4(v) => {
            let mut b = [0u8; 16];
            b[..4].copy_from_slice(&v.octets());
            b
        }
        IpAddr::V6(v) => v.octets(),
    };
    [
        u32::from_be_bytes([o[0], o[1], o[2], o[3]]),
        u32::from_be_bytes([o[4], o[5], o[6], o[7]]),
        u32::from_be_bytes([o[8], o[9], o[10], o[11]]),
        u32::from_be_bytes([o[12], o[13], o[14], o[15]]),
    ]
}

fn addr_cmp(a_v6: bool, a: &IpAddr, b: &IpAddr) -> i32 {
    let (wa, wb) = (words(a), words(b));
    if a_v6 {
        let mut r = 0i32;
        for i in 0..4 {
            if r != 0 {
                break;
            }
            r = wa[i].wrapping_sub(wb[i]) as i32;
        }
        r
    } else {
        wa[0].wrapping_sub(wb[0]) as i32
    }
}

/// ipvsadm's `ipvs_cmp_services` (C `int` arithmetic on unsigned values,
/// so it is not a total order; reproduced as is).
pub fn cmp_services(s1: &Service, s2: &Service) -> i32 {
    let r = s1.key.mark().wrapping_sub(s2.key.mark()) as i32;
    if r != 0 {
        return r;
    }
    let r = s1.key.family().to_af() as i32 - s2.key.family().to_af() as i32;
    if r != 0 {
        return r;
    }
    let p = |k: &ServiceKey| match k {
        ServiceKey::Addr { protocol, .. } => protocol.number() as i32,
        ServiceKey::Fwmark { .. } => 0,
    };
    let r = p(&s1.key) - p(&s2.key);
    if r != 0 {
        return r;
    }
    let r = addr_cmp(
        s1.key.family() == Family::Inet6,
        &s1.key.addr(),
        &s2.key.addr(),
    );
    if r != 0 {
        return r;
    }
    s1.key.port() as i32 - s2.key.port() as i32
}

/// ipvsadm's `ipvs_cmp_dests`.
pub fn cmp_dests(d1: &Dest, d2: &Dest) -> i32 {
    let r = addr_cmp(d1.family() == Family::Inet6, &d1.addr, &d2.addr);
    if r != 0 {
        return r;
    }
    d1.port as i32 - d2.port as i32
}

/// glibc 2.36 `qsort` (`msort_with_tmp`): top-down merge sort, left half
/// of size n/2, taking from the left run while `cmp <= 0`. With a
/// non-transitive comparator the result depends on this exact algorithm.
pub fn glibc_msort<T: Copy>(v: &mut [T], cmp: impl Fn(&T, &T) -> i32) {
    let mut tmp: Vec<T> = v.to_vec();
    msort_rec(v, &mut tmp, &cmp);
}

fn msort_rec<T: Copy>(b: &mut [T], tmp: &mut [T], cmp: &impl Fn(&T, &T) -> i32) {
    let n = b.len();
    if n <= 1 {
        return;
    }
    let n1 = n / 2;
    {
        let (l, r) = b.split_at_mut(n1);
        msort_rec(l, &mut tmp[..n1], cmp);
        msort_rec(r, &mut tmp[n1..n], cmp);
    }
    let (mut i, mut j, mut k) = (0, n1, 0);
    while i < n1 && j < n {
        if cmp(&b[i], &b[j]) <= 0 {
            tmp[k] = b[i];
            i += 1;
        } else {
            tmp[k] = b[j];
            j += 1;
        }
        k += 1;
    }
    while i < n1 {
        tmp[k] = b[i];
        i += 1;
        k += 1;
    }
    // Remaining right-run elements are already in place.
    b[..k].copy_from_slice(&tmp[..k]);
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::names::{Numeric, StaticResolver};
    use ipvs_netlink::ipvs::Stats;
    use std::net::Ipv4Addr;

    #[test]
    fn fast_pads_match_core_fmt() {
        for v in [
            0i64,
            7,
            -1,
            42,
            -2147483648,
            2147483647,
            4294967295,
            i64::MIN + 1,
        ] {
            for w in [0usize, 1, 6, 10] {
                let mut out = String::from("x");
                push_int_left(&mut out, v, w);
                assert_eq!(out, format!("x{v:<w$}"));
            }
        }
        for a in ["0.0.0.0", "10.1.2.3", "255.255.255.255"] {
            let mut out = String::new();
            push_ipv4(&mut out, &a.parse().unwrap());
            assert_eq!(out, a);
        }
        let mut out = String::new();
        push_left(&mut out, "h\u{e9}", 4);
        assert_eq!(out, format!("{:<4}", "h\u{e9}"));
    }

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    /// The table of `reference/sample_*.txt`.
    fn sample() -> Vec<Entry> {
        let mut s1 = Service::new(ServiceKey::tcp(ip("10.0.0.1"), 80)).with_persistence(300);
        s1.netmask = Netmask::V4(Ipv4Addr::new(255, 255, 255, 0));
        let d11 = Dest::new(ip("192.168.1.10"), 80);
        let mut d12 = Dest::new(ip("192.168.1.11"), 80);
        d12.active_conns = 12;
        d12.inact_conns = 345;
        let mut s2 = Service::new(ServiceKey::udp(ip("2001:db8::1"), 53)).with_scheduler("sh");
        s2.flags |= IP_VS_SVC_F_SCHED_SH_FALLBACK | IP_VS_SVC_F_SCHED_SH_PORT;
        let d2 = Dest::new(ip("2001:db8::10"), 53)
            .with_fwd(Forward::Masq)
            .with_weight(5);
        let s3 = Service::new(ServiceKey::fwmark(7)).with_scheduler("rr");
        let mut d3 = Dest::new(ip("10.1.0.5"), 0).with_fwd(Forward::Tunnel);
        d3.tun_type = TunnelType::Gue;
        d3.tun_port = 6080;
        // Kernel dump order differs from the sorted order on purpose.
        vec![(s3, vec![d3]), (s2, vec![d2]), (s1, vec![d12, d11])]
    }

    const INFO: Info = Info {
        version: 0x010201,
        conn_tab_size: 4096,
    };

    #[test]
    fn golden_sample_ln() {
        let want = include_str!("../tests/golden/sample_Ln.txt");
        assert_eq!(list_all(&INFO, &sample(), FMT_NUMERIC, &Numeric), want);
    }

    #[test]
    fn golden_sample_save() {
        // The reference sample lists only the first dest of the first
        // service; compare its lines.
        let got = list_all(&INFO, &sample(), FMT_NUMERIC | FMT_RULE, &Numeric);
        let want = include_str!("../tests/golden/sample_save.txt");
        for line in want.lines() {
            assert!(got.lines().any(|l| l == line), "missing {line:?} in\n{got}");
        }
        assert_eq!(got.lines().next(), want.lines().next());
    }

    fn stats_sample() -> Vec<Entry> {
        let mut s = Service::new(ServiceKey::tcp(ip("10.0.0.1"), 80));
        s.stats = Stats {
            conns: 12345,
            inpkts: 234567890,
            inbytes: 123456789012,
            cps: 10,
            inpps: 2000,
            inbps: 150000000,
            ..Default::default()
        };
        let mut d = Dest::new(ip("192.168.1.10"), 80);
        d.stats = Stats {
            conns: 6000,
            inpkts: 117283945,
            inbytes: 61728394506,
            cps: 5,
            inpps: 1000,
            inbps: 75000000,
            ..Default::default()
        };
        vec![(s, vec![d])]
    }

    #[test]
    fn golden_sample_stats_and_rate() {
        let want = include_str!("../tests/golden/sample_stats.txt");
        assert_eq!(
            list_all(&INFO, &stats_sample(), FMT_NUMERIC | FMT_STATS, &Numeric),
            want
        );
        let want = include_str!("../tests/golden/sample_rate.txt");
        assert_eq!(
            list_all(&INFO, &stats_sample(), FMT_NUMERIC | FMT_RATE, &Numeric),
            want
        );
    }

    #[test]
    fn largenum_thresholds() {
        assert_eq!(largenum(99_999_999, 0), " 99999999");
        assert_eq!(largenum(100_000_000, 0), "  100000K");
        assert_eq!(largenum(999_999_999, 0), "  999999K");
        assert_eq!(largenum(1_000_000_000, 0), "    1000M");
        assert_eq!(largenum(99_999_999_999, 0), "   99999M");
        assert_eq!(largenum(100_000_000_000, 0), "     100G");
        assert_eq!(largenum(100_000_000_000_000, 0), "     100T");
        assert_eq!(largenum(5, FMT_EXACT), "        5");
        assert_eq!(largenum(123_456_789, FMT_EXACT), " 123456789");
        assert_eq!(largenum(u64::MAX, FMT_EXACT), " 18446744073709551615");
    }

    #[test]
    fn other_list_formats() {
        let e = sample();
        let th = list_all(&INFO, &e, FMT_NUMERIC | FMT_THRESHOLDS, &Numeric);
        assert!(th.contains(
            "Prot LocalAddress:Port            Uthreshold Lthreshold ActiveConn InActConn \n"
        ));
        assert!(th.contains(
            "  -> 192.168.1.11:80              0          0          12         345       \n"
        ));
        let pc = list_all(&INFO, &e, FMT_NUMERIC | FMT_PERSISTENTCONN, &Numeric);
        assert!(pc.contains(
            "Prot LocalAddress:Port            Weight    PersistConn ActiveConn InActConn \n"
        ));
        assert!(pc.contains(
            "  -> 192.168.1.11:80              1         0           12         345       \n"
        ));
        let ti = list_all(&INFO, &e, FMT_NUMERIC | FMT_TUN_INFO, &Numeric);
        assert!(ti.contains("  -> 10.1.0.5:0                   Tunnel  gue:6080:-c   1      0          0         \n"), "{ti}");
        assert!(ti.contains("  -> 192.168.1.10:80              Route   n/a           1      0          0         \n"));
    }

    #[test]
    fn truncation_and_names() {
        let mut r = StaticResolver::default();
        r.hosts
            .insert(ip("10.0.62.121"), "ip-10-0-62-121.ec2.internal".into());
        r.services.insert((80, 6), "http".into());
        let s = Service::new(ServiceKey::tcp(ip("10.0.62.121"), 80)).with_scheduler("rr");
        let d = Dest::new(ip("10.0.62.121"), 80);
        let out = service_entry(&s, &[d], 0, &r);
        // kube-router#415: "TCP  ip-10-0-62-121.ec2.internal: rr"
        assert_eq!(
            out.lines().next().unwrap(),
            "TCP  ip-10-0-62-121.ec2.internal: rr"
        );
        assert_eq!(
            out.lines().nth(1).unwrap(),
            "  -> ip-10-0-62-121.ec2.internal: Route   1      0          0         "
        );
        let rule = service_entry(&s, &[Dest::new(ip("10.0.62.121"), 80)], FMT_RULE, &r);
        assert_eq!(
            rule.lines().next().unwrap(),
            "-A -t ip-10-0-62-121.ec2.internal:http -s rr"
        );
    }

    #[test]
    fn ipadm_sort_quirk() {
        // 10.x sorts after 192.168.x with ipvsadm's wrapping comparator.
        let a = Service::new(ServiceKey::tcp(ip("10.0.0.1"), 80));
        let b = Service::new(ServiceKey::tcp(ip("192.168.0.1"), 80));
        assert!(cmp_services(&a, &b) > 0);
        let e = vec![(a, vec![]), (b, vec![])];
        let out = list_all(&INFO, &e, FMT_NUMERIC, &Numeric);
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines[3], "TCP  192.168.0.1:80 wlc");
        assert_eq!(lines[4], "TCP  10.0.0.1:80 wlc");
    }

    #[test]
    fn msort_is_stable_merge() {
        let mut v = vec![5, 3, 9, 1, 3, 7, 0];
        glibc_msort(&mut v, |a, b| a - b);
        assert_eq!(v, vec![0, 1, 3, 3, 5, 7, 9]);
    }

    #[test]
    fn inet6_ntop_like_glibc() {
        for (a, want) in [
            ("::", "::"),
            ("::1", "::1"),
            ("::ffff:1.2.3.4", "::ffff:1.2.3.4"),
            ("::1.2.3.4", "::1.2.3.4"),
            ("2001:db8::10", "2001:db8::10"),
            ("2001:db8:0:1:0:0:0:1", "2001:db8:0:1::1"),
            ("2001:0:0:1:0:0:1:1", "2001::1:0:0:1:1"),
            ("1:0:1:1:1:1:1:1", "1:0:1:1:1:1:1:1"),
            ("fe80::", "fe80::"),
        ] {
            assert_eq!(inet6_ntop(&a.parse().unwrap()), want, "{a}");
        }
    }

    #[test]
    fn timeout_and_daemon_lines() {
        assert_eq!(
            timeouts(&Timeouts {
                tcp: 900,
                tcp_fin: 120,
                udp: 300
            }),
            "Timeout (tcp tcpfin udp): 900 120 300\n"
        );
        let mut d = SyncDaemon::new(ipvs_netlink::ipvs::DaemonState::Master, "eth0");
        d.sync_maxlen = Some(1472);
        d.mcast_group = Some(ip("224.0.0.81"));
        d.mcast_port = Some(8848);
        d.mcast_ttl = Some(1);
        assert_eq!(
            daemons(&[d]),
            "master sync daemon (mcast=eth0, syncid=0, maxlen=1472, group=224.0.0.81, port=8848, ttl=1)\n"
        );
    }
}
