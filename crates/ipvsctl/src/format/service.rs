//! The service listing: titles, the service column, and each service
//! with its real servers (plain, `--stats`, `--rate`, `--thresholds`,
//! `--persistent-conn`, `--tun-info`, and `-S` rules).

use super::*;

pub(super) fn sched_flags(svc: &Service) -> String {
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

pub(super) fn fwd_name(f: Forward) -> &'static str {
    match f {
        Forward::Masq => "Masq",
        Forward::Local => "Local",
        Forward::Tunnel => "Tunnel",
        Forward::Route => "Route",
        _ => "(null)",
    }
}

pub(super) fn fwd_switch(f: Forward) -> &'static str {
    match f {
        Forward::Masq => "-m",
        Forward::Tunnel => "-i",
        Forward::Local | Forward::Route => "-g",
        _ => "(null)",
    }
}

pub(super) fn tun_flag_short(f: TunnelCsum) -> &'static str {
    match f {
        TunnelCsum::NoCsum => "-c",
        TunnelCsum::Csum => "+c",
        TunnelCsum::RemCsum => "r+c",
        TunnelCsum::Other(_) => "?",
    }
}

pub(super) fn tun_flag_opt(f: TunnelCsum) -> &'static str {
    match f {
        TunnelCsum::NoCsum => "--tun-nocsum",
        TunnelCsum::Csum => "--tun-csum",
        TunnelCsum::RemCsum => "--tun-remcsum",
        TunnelCsum::Other(_) => "",
    }
}

pub(super) fn tun_info(d: &Dest) -> Option<String> {
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
pub(super) fn lookup_proto(key: &ServiceKey) -> Protocol {
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
            // ipvsadm prints the mark with %d: above 2^31-1 it shows negative
            // (and its -R then refuses what its -S wrote; matched byte for byte).
            let mark = *mark as i32;
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

/// `print_service_entry` appending to `out`.
pub fn write_service_entry(
    out: &mut String,
    svc: &Service,
    dests: &[Dest],
    format: u32,
    res: &dyn Resolver,
) {
    let svc_name = service_name(&svc.key, format, res);
    write_service_line(out, svc, &svc_name, format);

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
        if format & FMT_RULE != 0 {
            write_dest_rule(out, e, &svc_name, &dname);
        } else {
            write_dest_line(out, e, &dname, format);
        }
    }
}

/// The service's own line (rule, stats, rate or plain listing), newline included.
fn write_service_line(out: &mut String, svc: &Service, svc_name: &str, format: u32) {
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
}

/// One destination as an `-a` rule (`ipvsadm -S` / `-R` input).
fn write_dest_rule(out: &mut String, e: &Dest, svc_name: &str, dname: &str) {
    let weight = e.weight as i32;
    let _ = write!(
        out,
        "-a {svc_name} -r {dname} {} -w {weight}",
        fwd_switch(e.fwd)
    );
    // Only tunnelling destinations carry their tunnel's options.
    if e.fwd == Forward::Tunnel {
        match e.tun_type {
            TunnelType::Gre => {
                let _ = write!(out, " --tun-type gre {}", tun_flag_opt(e.tun_flags));
            }
            TunnelType::Gue => {
                let _ = write!(
                    out,
                    " --tun-type gue --tun-port {} {}",
                    e.tun_port,
                    tun_flag_opt(e.tun_flags)
                );
            }
            TunnelType::Ipip => out.push_str(" --tun-type ipip"),
            TunnelType::Other(_) => {}
        }
    }
    out.push('\n');
}

/// One destination as a listing line in the columns `format` selects.
fn write_dest_line(out: &mut String, e: &Dest, dname: &str, format: u32) {
    let weight = e.weight as i32;
    if format & FMT_STATS != 0 {
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
        push_left(out, dname, 28);
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
