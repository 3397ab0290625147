//! `process_options`: ipvsadm's option loop and its checks.

use super::*;

/// `parse_options` + `process_options` up to the point of acting: returns
/// the action or a terminal exit (usage, version, any error).
pub fn process_options(argv: &[String], reading_stdin: bool) -> Result<Action, Exit> {
    let program = argv.first().map(String::as_str).unwrap_or("ipvsadm");
    let mut cmd = CMD_NONE;
    let mut options: u64 = 0;
    let mut format: u32 = FMT_NONE;
    let mut svc = CSvc {
        netmask: [0xff; 4],
        ..Default::default()
    };
    let mut dest = CDest {
        weight: 1,
        conn_flags: IP_VS_CONN_F_DROUTE,
        ..Default::default()
    };
    let mut timeout = Timeouts::default();
    let mut daemon = CDaemon::default();
    let mut sched_flags_arg = String::new();
    let mut netmask_arg: Option<String> = None;

    let set_cmd = |cmd: &mut usize, new: usize| -> Result<(), Exit> {
        if *cmd != CMD_NONE {
            return Err(fail(2, "multiple commands specified"));
        }
        *cmd = new;
        Ok(())
    };
    let set_opt = |options: &mut u64, o: usize| -> Result<(), Exit> {
        if *options & bit(o) != 0 {
            return Err(fail(
                2,
                format!("multiple '{}' options specified", OPTNAMES[o]),
            ));
        }
        *options |= bit(o);
        Ok(())
    };

    let mut p = Popt::new(OPTIONS, argv);
    match p.next_opt() {
        Next::Opt(c, arg) => match c {
            c if c == 'A' as i32 => set_cmd(&mut cmd, CMD_ADD)?,
            c if c == 'E' as i32 => set_cmd(&mut cmd, CMD_EDIT)?,
            c if c == 'D' as i32 => set_cmd(&mut cmd, CMD_DEL)?,
            c if c == 'a' as i32 => set_cmd(&mut cmd, CMD_ADDDEST)?,
            c if c == 'e' as i32 => set_cmd(&mut cmd, CMD_EDITDEST)?,
            c if c == 'd' as i32 => set_cmd(&mut cmd, CMD_DELDEST)?,
            c if c == 'C' as i32 => set_cmd(&mut cmd, CMD_FLUSH)?,
            c if c == 'L' as i32 || c == 'l' as i32 => set_cmd(&mut cmd, CMD_LIST)?,
            c if c == 'Z' as i32 => set_cmd(&mut cmd, CMD_ZERO)?,
            TAG_SET => set_cmd(&mut cmd, CMD_TIMEOUT)?,
            c if c == 'R' as i32 => set_cmd(&mut cmd, CMD_RESTORE)?,
            c if c == 'S' as i32 => set_cmd(&mut cmd, CMD_SAVE)?,
            TAG_START_DAEMON | TAG_STOP_DAEMON => {
                let start = c == TAG_START_DAEMON;
                set_cmd(
                    &mut cmd,
                    if start {
                        CMD_STARTDAEMON
                    } else {
                        CMD_STOPDAEMON
                    },
                )?;
                match arg.as_deref() {
                    Some("master") => daemon.state = IP_VS_STATE_MASTER,
                    Some("backup") => daemon.state = IP_VS_STATE_BACKUP,
                    _ if start => return Err(fail(2, "illegal start-daemon parameter specified")),
                    _ => return Err(fail(2, "illegal start_daemon specified")),
                }
            }
            c if c == 'h' as i32 => {
                return Err(Exit {
                    code: 0,
                    stdout: usage(program),
                    stderr: String::new(),
                    soft: false,
                })
            }
            c if c == 'v' as i32 => {
                return Err(Exit {
                    code: 0,
                    stdout: format!("{VERSION_LINE}\n"),
                    stderr: String::new(),
                    soft: false,
                })
            }
            _ => return Err(tryhelp(program)),
        },
        _ => return Err(tryhelp(program)),
    }

    let last = loop {
        let (c, arg) = match p.next_opt() {
            Next::Opt(c, a) => (c, a),
            other => break other,
        };
        let arg_s = arg.clone().unwrap_or_default();
        match c {
            c if c == 't' as i32 || c == 'u' as i32 || c == TAG_SCTP_SERVICE => {
                set_opt(&mut options, OPTC_SERVICE)?;
                svc.protocol = if c == 't' as i32 {
                    IPPROTO_TCP
                } else if c == 'u' as i32 {
                    IPPROTO_UDP
                } else {
                    IPPROTO_SCTP
                };
                if parse_service(&arg_s, &mut svc) & SERVICE_ADDR == 0 {
                    return Err(fail(2, "illegal virtual server address[:port] specified"));
                }
            }
            c if c == 'f' as i32 => {
                set_opt(&mut options, OPTC_SERVICE)?;
                svc.af = AF_INET;
                svc.protocol = IPPROTO_TCP;
                svc.fwmark = match strtol_full(&arg_s) {
                    Some(l) if l > 0 && l <= u32::MAX as i64 => l as u32,
                    _ => return Err(fail(2, format!("invalid fwmark value `{arg_s}' specified"))),
                };
            }
            c if c == 's' as i32 => {
                set_opt(&mut options, OPTC_SCHEDULER)?;
                svc.sched_name = truncate_bytes(&arg_s, IP_VS_SCHEDNAME_MAXLEN - 1);
            }
            c if c == 'p' as i32 => {
                set_opt(&mut options, OPTC_PERSISTENT)?;
                svc.flags |= IP_VS_SVC_F_PERSISTENT;
                svc.timeout = match &arg {
                    None => PERSISTENT_TIMEOUT,
                    Some(a) => match string_to_number(a, 1, MAX_TIMEOUT) {
                        Some(v) => v as u32,
                        None => {
                            return Err(fail(2, format!("invalid timeout value `{a}' specified")))
                        }
                    },
                };
            }
            c if c == 'M' as i32 => {
                set_opt(&mut options, OPTC_NETMASK)?;
                netmask_arg = Some(arg_s);
            }
            c if c == 'r' as i32 => {
                set_opt(&mut options, OPTC_SERVER)?;
                let mut t = svc.clone();
                let parse = parse_service(&arg_s, &mut t);
                dest.af = t.af;
                dest.addr = t.addr;
                dest.port = t.port;
                if parse & SERVICE_ADDR == 0 {
                    return Err(fail(2, "illegal real server address[:port] specified"));
                }
                if parse == SERVICE_ADDR {
                    dest.port = svc.port;
                }
            }
            c if c == 'i' as i32 || c == 'g' as i32 || c == 'm' as i32 => {
                set_opt(&mut options, OPTC_FORWARD)?;
                dest.conn_flags = if c == 'i' as i32 {
                    IP_VS_CONN_F_TUNNEL
                } else if c == 'g' as i32 {
                    IP_VS_CONN_F_DROUTE
                } else {
                    IP_VS_CONN_F_MASQ
                };
            }
            c if c == 'w' as i32 => {
                set_opt(&mut options, OPTC_WEIGHT)?;
                dest.weight = string_to_number(&arg_s, 0, i32::MAX as i64)
                    .ok_or_else(|| fail(2, "illegal weight specified"))?;
            }
            c if c == 'x' as i32 => {
                set_opt(&mut options, OPTC_UTHRESHOLD)?;
                dest.u_threshold = string_to_number(&arg_s, 0, i32::MAX as i64)
                    .ok_or_else(|| fail(2, "illegal u_threshold specified"))?
                    as u32;
            }
            c if c == 'y' as i32 => {
                set_opt(&mut options, OPTC_LTHRESHOLD)?;
                dest.l_threshold = string_to_number(&arg_s, 0, i32::MAX as i64)
                    .ok_or_else(|| fail(2, "illegal l_threshold specified"))?
                    as u32;
            }
            c if c == 'c' as i32 => set_opt(&mut options, OPTC_CONNECTION)?,
            c if c == 'n' as i32 => {
                set_opt(&mut options, OPTC_NUMERIC)?;
                format |= FMT_NUMERIC;
            }
            TAG_MCAST_INTERFACE => {
                set_opt(&mut options, OPTC_MCAST)?;
                daemon.mcast_ifn = truncate_bytes(&arg_s, IP_VS_IFNAME_MAXLEN - 1);
            }
            c if c == 'I' as i32 => {
                set_opt(&mut options, OPTC_SYNCID)?;
                daemon.syncid = string_to_number(&arg_s, 0, 255)
                    .ok_or_else(|| fail(2, "illegal syncid specified"))?
                    as u32;
            }
            TAG_TIMEOUT => set_opt(&mut options, OPTC_TIMEOUT)?,
            TAG_DAEMON => set_opt(&mut options, OPTC_DAEMON)?,
            TAG_STATS => {
                set_opt(&mut options, OPTC_STATS)?;
                format |= FMT_STATS;
            }
            TAG_RATE => {
                set_opt(&mut options, OPTC_RATE)?;
                format |= FMT_RATE;
            }
            TAG_THRESHOLDS => {
                set_opt(&mut options, OPTC_THRESHOLDS)?;
                format |= FMT_THRESHOLDS;
            }
            TAG_PERSISTENTCONN => {
                set_opt(&mut options, OPTC_PERSISTENTCONN)?;
                format |= FMT_PERSISTENTCONN;
            }
            TAG_NO_SORT => {
                set_opt(&mut options, OPTC_NOSORT)?;
                format |= FMT_NOSORT;
            }
            TAG_SORT => {}
            c if c == 'X' as i32 => {
                set_opt(&mut options, OPTC_EXACT)?;
                format |= FMT_EXACT;
            }
            c if c == '6' as i32 => {
                if svc.fwmark != 0 {
                    svc.af = AF_INET6;
                    svc.netmask = 128u32.to_ne_bytes();
                } else {
                    return Err(fail(2, "-6 used before -f\n"));
                }
            }
            c if c == 'o' as i32 => {
                set_opt(&mut options, OPTC_ONEPACKET)?;
                svc.flags |= IP_VS_SVC_F_ONEPACKET;
            }
            TAG_PERSISTENCE_ENGINE => {
                set_opt(&mut options, OPTC_PERSISTENCE_ENGINE)?;
                svc.pe_name = truncate_bytes(&arg_s, IP_VS_PENAME_MAXLEN);
            }
            c if c == 'b' as i32 => {
                set_opt(&mut options, OPTC_SCHED_FLAGS)?;
                sched_flags_arg = truncate_bytes(&arg_s, 127);
            }
            TAG_MCAST_GROUP => {
                set_opt(&mut options, OPTC_MCAST_GROUP)?;
                if arg_s.contains(':') {
                    match inet_pton6(&arg_s) {
                        Some(a) if a.is_multicast() => daemon.mcast_group = Some(IpAddr::V6(a)),
                        _ => return Err(fail(2, format!("invalid IPv6 mcast-group `{arg_s}'"))),
                    }
                } else {
                    match inet_pton4(&arg_s) {
                        Some(a) if a.is_multicast() => daemon.mcast_group = Some(IpAddr::V4(a)),
                        _ => return Err(fail(2, format!("invalid IPv4 mcast-group `{arg_s}'"))),
                    }
                }
            }
            TAG_MCAST_PORT => {
                set_opt(&mut options, OPTC_MCAST_PORT)?;
                daemon.mcast_port = string_to_number(&arg_s, 1, 65535)
                    .ok_or_else(|| fail(2, "illegal mcast-port specified"))?
                    as u16;
            }
            TAG_MCAST_TTL => {
                set_opt(&mut options, OPTC_MCAST_TTL)?;
                daemon.mcast_ttl = string_to_number(&arg_s, 1, 255)
                    .ok_or_else(|| fail(2, "illegal mcast-ttl specified"))?
                    as u8;
            }
            TAG_SYNC_MAXLEN => {
                set_opt(&mut options, OPTC_SYNC_MAXLEN)?;
                daemon.sync_maxlen = string_to_number(&arg_s, 1, 65535 - 20 - 8)
                    .ok_or_else(|| fail(2, "illegal sync-maxlen specified"))?
                    as u16;
            }
            TAG_TUN_INFO => {
                set_opt(&mut options, OPTC_TUN_INFO)?;
                format |= FMT_TUN_INFO;
            }
            TAG_TUN_TYPE => {
                set_opt(&mut options, OPTC_TUN_TYPE)?;
                dest.tun_type = match TunnelType::parse(&arg_s) {
                    Some(t) => t.to_raw(),
                    None => return Err(fail(2, "illegal tunnel type specified")),
                };
            }
            TAG_TUN_PORT => {
                set_opt(&mut options, OPTC_TUN_PORT)?;
                dest.tun_port = string_to_number(&arg_s, 1, 65535)
                    .ok_or_else(|| fail(2, "illegal tunnel port specified"))?
                    as u16;
            }
            TAG_TUN_NOCSUM => {
                set_opt(&mut options, OPTC_TUN_NOCSUM)?;
                dest.tun_flags |= IP_VS_TUNNEL_ENCAP_FLAG_NOCSUM;
            }
            TAG_TUN_CSUM => {
                set_opt(&mut options, OPTC_TUN_CSUM)?;
                dest.tun_flags |= IP_VS_TUNNEL_ENCAP_FLAG_CSUM;
            }
            TAG_TUN_REMCSUM => {
                set_opt(&mut options, OPTC_TUN_REMCSUM)?;
                dest.tun_flags |= IP_VS_TUNNEL_ENCAP_FLAG_REMCSUM;
            }
            _ => return Err(fail(2, format!("invalid option `{}'", p.bad_option()))),
        }
    };
    if let Next::Err(e) = last {
        return Err(Exit {
            code: 255,
            stdout: String::new(),
            stderr: format!("{}: {}\n", p.bad_option(), e.text()),
            soft: true,
        });
    }

    if cmd == CMD_TIMEOUT {
        let (a, b, c) = (p.get_arg(), p.get_arg(), p.get_arg());
        match (a, b, c) {
            (Some(a), Some(b), Some(c)) => {
                let pt = |s: &str| -> Result<u32, Exit> {
                    string_to_number(s, 0, MAX_TIMEOUT)
                        .map(|v| v as u32)
                        .ok_or_else(|| fail(2, format!("invalid timeout value `{s}' specified")))
                };
                timeout.tcp = pt(&a)?;
                timeout.tcp_fin = pt(&b)?;
                timeout.udp = pt(&c)?;
            }
            _ => return Err(fail(2, "--set option requires 3 timeout values")),
        }
    }
    if let Some(extra) = p.get_arg() {
        return Err(fail(2, format!("unexpected argument {extra}")));
    }
    if !sched_flags_arg.is_empty() {
        svc.flags &= !IP_VS_SVC_F_SCHED_MASK;
        svc.flags |= parse_sched_flags(&svc.sched_name, &sched_flags_arg)?;
    }
    // -M, interpreted with the final address family (ipvsadm bug fix).
    if let Some(m) = netmask_arg {
        if svc.af != AF_INET6 {
            match inet_aton(&m).or_else(|| names::host_to_addr(&m)) {
                Some(a) => svc.netmask = a.octets(),
                None => return Err(fail(2, "illegal virtual server persistent mask specified")),
            }
        } else {
            let n = atoi(&m);
            if !(1..=128).contains(&n) {
                return Err(fail(2, "illegal ipv6 netmask specified"));
            }
            svc.netmask = (n as u32).to_ne_bytes();
        }
    }

    generic_opt_check(cmd, options)?;

    if cmd == CMD_ADD || cmd == CMD_EDIT {
        if svc.fwmark == 0 && svc.port == 0 && svc.flags & IP_VS_SVC_F_PERSISTENT == 0 {
            return Err(fail(2, "Zero port specified for non-persistent service"));
        }
        if svc.flags & IP_VS_SVC_F_ONEPACKET != 0 && svc.fwmark == 0 && svc.protocol != IPPROTO_UDP
        {
            return Err(fail(
                2,
                "One-Packet Scheduling is only for UDP virtual services",
            ));
        }
        if svc.sched_name.is_empty() {
            svc.sched_name = DEF_SCHED.into();
        }
    }
    if cmd == CMD_STARTDAEMON && daemon.mcast_ifn.is_empty() {
        daemon.mcast_ifn = DEF_MCAST_IFN.into();
    }
    let fwd = dest.conn_flags & IP_VS_CONN_F_FWD_MASK;
    if cmd == CMD_ADDDEST || cmd == CMD_EDITDEST {
        if svc.fwmark == 0 && (fwd == IP_VS_CONN_F_TUNNEL || fwd == IP_VS_CONN_F_DROUTE) {
            dest.port = svc.port;
        }
        if dest.af != svc.af && fwd != IP_VS_CONN_F_TUNNEL {
            return Err(fail(
                2,
                "Different address family is allowed only for tunneling servers",
            ));
        }
        let tun_opts = bit(OPTC_TUN_TYPE)
            | bit(OPTC_TUN_PORT)
            | bit(OPTC_TUN_NOCSUM)
            | bit(OPTC_TUN_CSUM)
            | bit(OPTC_TUN_REMCSUM);
        if options & tun_opts != 0 && fwd != IP_VS_CONN_F_TUNNEL {
            return Err(fail(2, "Tunnel options conflict with forward method"));
        }
        // tunnel_opt_check
        let ti = dest.tun_type as usize;
        if ti < 3 {
            let mut count = 0;
            let mut lastk = 0;
            for (j, &k) in TUNOPTS.iter().enumerate() {
                let l = TUN_V_OPT[ti][j];
                if options & bit(k) == 0 {
                    if l == b'+' {
                        return Err(fail(
                            2,
                            format!(
                                "You need to supply the '{}' option for the '{}' tunnel type",
                                OPTNAMES[k], TUNNAMES[ti]
                            ),
                        ));
                    }
                } else {
                    if l == b'x' {
                        return Err(fail(
                            2,
                            format!(
                                "Illegal '{}' option with the '{}' tunnel type",
                                OPTNAMES[k], TUNNAMES[ti]
                            ),
                        ));
                    }
                    if l == b'1' {
                        count += 1;
                        if count == 1 {
                            lastk = k;
                            continue;
                        }
                        return Err(fail(
                            2,
                            format!(
                                "The option '{}' conflicts with the '{}' option in the '{}' tunnel type",
                                OPTNAMES[k], OPTNAMES[lastk], TUNNAMES[ti]
                            ),
                        ));
                    }
                }
            }
        }
    }

    let kop = |op: Op, func: Func| Ok(Action::Kernel(KOp { op, func }));
    match cmd {
        CMD_LIST => {
            let o = options;
            if (o & (bit(OPTC_CONNECTION) | bit(OPTC_TIMEOUT) | bit(OPTC_DAEMON)) != 0
                && o & (bit(OPTC_STATS) | bit(OPTC_RATE) | bit(OPTC_THRESHOLDS)) != 0)
                || (o & (bit(OPTC_TIMEOUT) | bit(OPTC_DAEMON)) != 0
                    && o & bit(OPTC_PERSISTENTCONN) != 0)
            {
                return Err(fail(2, "options conflicts in the list command"));
            }
            Ok(Action::List(if o & bit(OPTC_CONNECTION) != 0 {
                ListReq::Conn(format)
            } else if o & bit(OPTC_SERVICE) != 0 {
                ListReq::Service(svc_key(&svc), format)
            } else if o & bit(OPTC_TIMEOUT) != 0 {
                ListReq::Timeout
            } else if o & bit(OPTC_DAEMON) != 0 {
                ListReq::Daemon
            } else {
                ListReq::All(format)
            }))
        }
        CMD_RESTORE => {
            if reading_stdin {
                return Err(tryhelp(program));
            }
            Ok(Action::Restore)
        }
        CMD_SAVE => Ok(Action::Save(format | FMT_RULE)),
        CMD_FLUSH => kop(Op::Flush, Func::Other),
        CMD_ADD => kop(Op::AddService(to_service(&svc)), Func::AddService),
        CMD_EDIT => kop(Op::EditService(to_service(&svc)), Func::UpdateService),
        CMD_DEL => kop(Op::DelService(svc_key(&svc)), Func::DelService),
        CMD_ZERO => {
            let unspecified = svc.addr.map(|a| a.is_unspecified()).unwrap_or(true);
            let key = (svc.fwmark != 0 || !unspecified || svc.port != 0).then(|| svc_key(&svc));
            kop(Op::Zero(key), Func::ZeroService)
        }
        CMD_ADDDEST => kop(Op::AddDest(svc_key(&svc), to_dest(&dest)), Func::AddDest),
        CMD_EDITDEST => kop(
            Op::EditDest(svc_key(&svc), to_dest(&dest)),
            Func::UpdateDest,
        ),
        CMD_DELDEST => kop(Op::DelDest(svc_key(&svc), to_dest(&dest)), Func::DelDest),
        CMD_TIMEOUT => kop(Op::SetTimeouts(timeout), Func::Other),
        CMD_STARTDAEMON => {
            let d = SyncDaemon {
                state: if daemon.state == IP_VS_STATE_MASTER {
                    DaemonState::Master
                } else {
                    DaemonState::Backup
                },
                mcast_ifn: daemon.mcast_ifn.clone(),
                sync_id: daemon.syncid,
                sync_maxlen: (daemon.sync_maxlen != 0).then_some(daemon.sync_maxlen),
                mcast_group: daemon.mcast_group,
                mcast_port: (daemon.mcast_port != 0).then_some(daemon.mcast_port),
                mcast_ttl: (daemon.mcast_ttl != 0).then_some(daemon.mcast_ttl),
            };
            kop(Op::StartDaemon(d), Func::StartDaemon)
        }
        CMD_STOPDAEMON => kop(
            Op::StopDaemon(if daemon.state == IP_VS_STATE_MASTER {
                DaemonState::Master
            } else {
                DaemonState::Backup
            }),
            Func::StopDaemon,
        ),
        _ => Err(tryhelp(program)),
    }
}

/// ipvsadm's `generic_opt_check`: each given option against the command's row of the
/// legality table (required, illegal, at most one of a group).
fn generic_opt_check(cmd: usize, options: u64) -> Result<(), Exit> {
    let ci = cmd - 1;
    let mut count = 0;
    let mut lastj = 0;
    for (j, optname) in OPTNAMES.iter().enumerate() {
        let l = legality(cmd, j);
        if options & bit(j) == 0 {
            if l == b'+' {
                return Err(fail(
                    2,
                    format!(
                        "You need to supply the '{}' option for the '{}' command",
                        optname, CMDNAMES[ci]
                    ),
                ));
            }
        } else {
            if l == b'x' {
                return Err(fail(
                    2,
                    format!(
                        "Illegal '{}' option with the '{}' command",
                        optname, CMDNAMES[ci]
                    ),
                ));
            }
            if l == b'1' {
                count += 1;
                if count == 1 {
                    lastj = j;
                    continue;
                }
                return Err(fail(
                    2,
                    format!(
                        "The option '{}' conflicts with the '{}' option in the '{}' command",
                        optname, OPTNAMES[lastj], CMDNAMES[ci]
                    ),
                ));
            }
        }
    }
    Ok(())
}

pub(super) fn truncate_bytes(s: &str, max: usize) -> String {
    let mut n = s.len().min(max);
    while !s.is_char_boundary(n) {
        n -= 1;
    }
    s[..n].to_string()
}
