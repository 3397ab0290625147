use super::*;

fn args(s: &str) -> Vec<String> {
    std::iter::once("ipvsadm")
        .chain(s.split_whitespace())
        .map(String::from)
        .collect()
}

fn err(s: &str) -> Exit {
    match process_options(&args(s), false) {
        Err(e) => e,
        Ok(a) => panic!("{s}: expected an error, got {a:?}"),
    }
}

fn ok(s: &str) -> Action {
    match process_options(&args(s), false) {
        Ok(a) => a,
        Err(e) => panic!("{s}: {e:?}"),
    }
}

#[test]
fn table_rows_have_34_columns() {
    for (i, r) in CMD_V_OPT.iter().enumerate() {
        assert_eq!(r.len(), NUMBER_OF_OPT, "row {i}");
    }
    // Spot checks against ipvsadm.c.
    assert_eq!(legality(Cmd::Add, Opt::Service), b'+');
    assert_eq!(legality(Cmd::Add, Opt::OnePacket), b' ');
    assert_eq!(legality(Cmd::Add, Opt::SchedFlags), b' ');
    assert_eq!(legality(Cmd::Add, Opt::McastGroup), b'x');
    assert_eq!(legality(Cmd::AddDest, Opt::TunType), b' ');
    assert_eq!(legality(Cmd::AddDest, Opt::TunInfo), b'x');
    assert_eq!(legality(Cmd::AddDest, Opt::Weight), b' ');
    assert_eq!(legality(Cmd::AddDest, Opt::LThreshold), b' ');
    assert_eq!(legality(Cmd::AddDest, Opt::Mcast), b'x');
    assert_eq!(legality(Cmd::StartDaemon, Opt::Mcast), b' ');
    assert_eq!(legality(Cmd::StartDaemon, Opt::SyncId), b' ');
    assert_eq!(legality(Cmd::StartDaemon, Opt::McastGroup), b' ');
    assert_eq!(legality(Cmd::StartDaemon, Opt::SyncMaxlen), b' ');
    assert_eq!(legality(Cmd::StartDaemon, Opt::TunInfo), b'x');
    assert_eq!(legality(Cmd::StopDaemon, Opt::SyncId), b' ');
    assert_eq!(legality(Cmd::StopDaemon, Opt::Mcast), b'x');
    assert_eq!(legality(Cmd::Save, Opt::Numeric), b' ');
    assert_eq!(legality(Cmd::Zero, Opt::Service), b' ');
    assert_eq!(legality(Cmd::List, Opt::TunInfo), b' ');
    assert_eq!(legality(Cmd::List, Opt::Exact), b' ');
}

#[test]
fn error_messages() {
    let cases: &[(&str, i32, &str)] = &[
        ("", 255, "Try `ipvsadm -h' or 'ipvsadm --help' for more information.\n"),
        ("-t 1.2.3.4:80", 255, "Try `ipvsadm -h' or 'ipvsadm --help' for more information.\n"),
        ("--bogus", 255, "Try `ipvsadm -h' or 'ipvsadm --help' for more information.\n"),
        ("-L --bogus", 255, "--bogus: unknown option\n"),
        ("-A -t", 255, "-t: missing argument\n"),
        ("-A", 2, "You need to supply the 'service-address' option for the 'add-service' command\n"),
        ("-A -t 1.2.3.4:80 -r 1.1.1.1", 2, "Illegal 'real-server' option with the 'add-service' command\n"),
        ("-A -t 1.2.3.4:80 -A", 2, "invalid option `-A'\n"),
        ("-A -t 1.2.3.4", 2, "Zero port specified for non-persistent service\n"),
        ("-A -t 1.2.3.4:80 -o", 2, "One-Packet Scheduling is only for UDP virtual services\n"),
        ("-A -t 1.2.3.4:99999", 2, "illegal virtual server address[:port] specified\n"),
        ("-A -t 1.2.3.4:80 -s rr -s wlc", 2, "multiple 'scheduler' options specified\n"),
        ("-A -t 1.2.3.4:80 -p 0", 2, "invalid timeout value `0' specified\n"),
        ("-A -t 1.2.3.4:80 -b foo", 2, "invalid scheduler flag `foo'\n"),
        ("-A -t 1.2.3.4:80 -b sh-port", 2, "incompatible scheduler flag `sh-port'\n"),
        ("-A -t 1.2.3.4:80 -6", 2, "-6 used before -f\n\n"),
        ("-A -f 0", 2, "invalid fwmark value `0' specified\n"),
        ("-A -f 1 -6 -M 200", 2, "illegal ipv6 netmask specified\n"),
        ("-a -t 1.2.3.4:80 -r 5.6.7.8 -w 2147483648", 2, "illegal weight specified\n"),
        ("-a -t 1.2.3.4:80 -r [::1]:80 -m", 2, "Different address family is allowed only for tunneling servers\n"),
        ("-a -t 1.2.3.4:80 -r 5.6.7.8 --tun-type gue", 2, "Tunnel options conflict with forward method\n"),
        ("-a -t 1.2.3.4:80 -r 5.6.7.8 -i --tun-type gue", 2, "You need to supply the 'tun-port' option for the 'gue' tunnel type\n"),
        ("-a -t 1.2.3.4:80 -r 5.6.7.8 -i --tun-port 5", 2, "Illegal 'tun-port' option with the 'ipip' tunnel type\n"),
        (
            "-a -t 1.2.3.4:80 -r 5.6.7.8 -i --tun-type gue --tun-port 5 --tun-csum --tun-remcsum",
            2,
            "The option 'tun-remcsum' conflicts with the 'tun-csum' option in the 'gue' tunnel type\n",
        ),
        ("-L -c --timeout", 2, "The option 'timeout' conflicts with the 'connection' option in the 'list' command\n"),
        ("-L --timeout --stats", 2, "options conflicts in the list command\n"),
        ("-L --daemon --persistent-conn", 2, "options conflicts in the list command\n"),
        ("--set 1 2", 2, "--set option requires 3 timeout values\n"),
        ("--set 1 2 x", 2, "invalid timeout value `x' specified\n"),
        ("-L foo", 2, "unexpected argument foo\n"),
        ("--start-daemon foo", 2, "illegal start-daemon parameter specified\n"),
        ("--stop-daemon foo", 2, "illegal start_daemon specified\n"),
        ("--start-daemon master --mcast-group 1.2.3.4", 2, "invalid IPv4 mcast-group `1.2.3.4'\n"),
        ("--start-daemon master --mcast-group ff02::1:x", 2, "invalid IPv6 mcast-group `ff02::1:x'\n"),
        ("--start-daemon master --syncid 256", 2, "illegal syncid specified\n"),
        ("-L -A", 2, "invalid option `-A'\n"),
        ("-Ln -n", 2, "multiple 'numeric' options specified\n"),
        ("-S -c", 2, "Illegal 'connection' option with the 'save' command\n"),
    ];
    for (a, code, msg) in cases {
        let e = err(a);
        assert_eq!((e.code, e.stderr.as_str()), (*code, *msg), "ipvsadm {a}");
    }
}

#[test]
fn help_and_version() {
    let e = err("-h");
    assert_eq!(e.code, 0);
    assert!(e.stdout.starts_with(
        "ipvsadm v1.31 2019/12/24 (compiled with popt and IPVS v1.2.1)\nUsage:\n  ipvsadm -A|E"
    ));
    assert!(e
        .stdout
        .ends_with("  --mcast-ttl ttl                     Multicast TTL (default=1)\n"));
    assert_eq!(
        err("-v").stdout,
        "ipvsadm v1.31 2019/12/24 (compiled with popt and IPVS v1.2.1)\n"
    );
}

#[test]
fn add_service_defaults_and_options() {
    match ok("-A -t 10.0.0.1:80 -p -M 255.255.255.0") {
        Action::Kernel(KOp {
            op: Op::AddService(s),
            func: Func::AddService,
        }) => {
            assert_eq!(s.scheduler, "wlc");
            assert_eq!(s.timeout, 360);
            assert!(s.persistent());
            assert_eq!(s.netmask, Netmask::V4(Ipv4Addr::new(255, 255, 255, 0)));
        }
        a => panic!("{a:?}"),
    }
    // The -M ordering bug is fixed: the prefix survives.
    match ok("-A -M 64 -t [2001:db8::1]:80 -p 10") {
        Action::Kernel(KOp {
            op: Op::AddService(s),
            ..
        }) => assert_eq!(s.netmask, Netmask::V6(64)),
        a => panic!("{a:?}"),
    }
    match ok("-A -u 10.0.0.1:53 -s sh -b sh-fallback,sh-port -o --pe sip") {
        Action::Kernel(KOp {
            op: Op::AddService(s),
            ..
        }) => {
            assert_eq!(
                s.flags,
                IP_VS_SVC_F_SCHED1 | IP_VS_SVC_F_SCHED2 | IP_VS_SVC_F_ONEPACKET
            );
            assert_eq!(s.pe_name.as_deref(), Some("sip"));
        }
        a => panic!("{a:?}"),
    }
}

#[test]
fn weight_range_is_debians() {
    // Debian patches ipvsadm to take weights up to INT_MAX (bug #814348).
    for (w, want) in [("70000", 70000), ("2147483647", 2147483647), ("0", 0)] {
        match ok(&format!("-a -t 10.1.1.1:80 -r 10.2.0.30 -w {w}")) {
            Action::Kernel(KOp {
                op: Op::AddDest(_, d),
                ..
            }) => assert_eq!(d.weight, want),
            a => panic!("{a:?}"),
        }
    }
}

#[test]
fn dest_port_rules() {
    // -g forces the vport; -m keeps the given port; no port copies vport.
    match ok("-a -t 10.0.0.1:80 -r 192.168.1.1:8080") {
        Action::Kernel(KOp {
            op: Op::AddDest(_, d),
            ..
        }) => assert_eq!((d.port, d.fwd), (80, Forward::Route)),
        a => panic!("{a:?}"),
    }
    match ok("-a -t 10.0.0.1:80 -r 192.168.1.1:8080 -m -w 0") {
        Action::Kernel(KOp {
            op: Op::AddDest(_, d),
            ..
        }) => assert_eq!((d.port, d.weight), (8080, 0)),
        a => panic!("{a:?}"),
    }
    match ok("-a -f 7 -r 10.1.0.5 -i --tun-type gue --tun-port 6080 --tun-nocsum") {
        Action::Kernel(KOp {
            op: Op::AddDest(k, d),
            ..
        }) => {
            assert_eq!(k, ServiceKey::fwmark(7));
            assert_eq!((d.port, d.tun_type, d.tun_port), (0, TunnelType::Gue, 6080));
        }
        a => panic!("{a:?}"),
    }
}

#[test]
fn misc_parsers() {
    assert_eq!(inet_aton("10.1"), Some(Ipv4Addr::new(10, 0, 0, 1)));
    assert_eq!(inet_aton("0x0a.010.0.1"), Some(Ipv4Addr::new(10, 8, 0, 1)));
    assert_eq!(inet_aton("256.0.0.1"), None);
    assert_eq!(inet_aton("1.2.3.4 junk"), Some(Ipv4Addr::new(1, 2, 3, 4)));
    assert_eq!(string_to_number(" +5", 0, 10), Some(5));
    assert_eq!(string_to_number("5x", 0, 10), None);
    assert_eq!(atoi("64abc"), 64);
    assert_eq!(
        ipvs_strerror(libc::EEXIST, Func::AddService),
        "Service already exists"
    );
    assert_eq!(
        ipvs_strerror(libc::ESRCH, Func::AddDest),
        "Service not defined"
    );
    assert_eq!(
        ipvs_strerror(libc::ERANGE, Func::AddDest),
        "Numerical result out of range"
    );
}

#[test]
fn zero_all_when_service_is_unspecified() {
    match ok("-Z") {
        Action::Kernel(KOp {
            op: Op::Zero(None), ..
        }) => {}
        a => panic!("{a:?}"),
    }
    match ok("-Z -t 0.0.0.0:0") {
        Action::Kernel(KOp {
            op: Op::Zero(None), ..
        }) => {}
        a => panic!("{a:?}"),
    }
}

fn dest_of(a: Action) -> Dest {
    match a {
        Action::Kernel(KOp {
            op: Op::AddDest(_, d),
            ..
        }) => d,
        a => panic!("{a:?}"),
    }
}

fn daemon_of(a: Action) -> SyncDaemon {
    match a {
        Action::Kernel(KOp {
            op: Op::StartDaemon(d),
            ..
        }) => d,
        a => panic!("{a:?}"),
    }
}

fn service_of(a: Action) -> Service {
    match a {
        Action::Kernel(KOp {
            op: Op::AddService(s),
            ..
        }) => s,
        a => panic!("{a:?}"),
    }
}

fn timeouts_of(a: Action) -> Timeouts {
    match a {
        Action::Kernel(KOp {
            op: Op::SetTimeouts(t),
            ..
        }) => t,
        a => panic!("{a:?}"),
    }
}

/// Each value of `values` appended to `cmd`: the number `get` finds in
/// the action, or ipvsadm's message.
fn limits(cmd: &str, get: fn(Action) -> i64, values: &[(&str, Result<i64, &str>)]) {
    for (v, want) in values {
        let line = format!("{cmd} {v}");
        let got = process_options(&args(&line), false)
            .map(get)
            .map_err(|e| e.stderr);
        let want = want.map_err(|m| format!("{m}\n"));
        assert_eq!(got, want, "ipvsadm {line}");
    }
}

#[test]
fn real_server_number_limits() {
    const SRV: &str = "-a -t 10.1.1.1:80 -r 10.2.0.30";
    for (opt, what, get) in [
        (
            "-w",
            "weight",
            (|a| dest_of(a).weight.into()) as fn(Action) -> i64,
        ),
        ("-x", "u_threshold", |a| dest_of(a).u_threshold.into()),
        ("-y", "l_threshold", |a| dest_of(a).l_threshold.into()),
    ] {
        let bad = format!("illegal {what} specified");
        let values = [
            ("0", Ok(0)),
            ("2147483647", Ok(2147483647)),
            ("2147483648", Err(bad.as_str())),
            ("-1", Err(bad.as_str())),
        ];
        limits(&format!("{SRV} {opt}"), get, &values);
    }
    let bad = Err("illegal tunnel port specified");
    limits(
        &format!("{SRV} -i --tun-type gue --tun-port"),
        |a| dest_of(a).tun_port.into(),
        &[
            ("0", bad),
            ("1", Ok(1)),
            ("65535", Ok(65535)),
            ("65536", bad),
        ],
    );
}

#[test]
fn daemon_number_limits() {
    const SD: &str = "--start-daemon master";
    let bad = Err("illegal syncid specified");
    limits(
        &format!("{SD} --syncid"),
        |a| daemon_of(a).sync_id.into(),
        &[("0", Ok(0)), ("255", Ok(255)), ("256", bad), ("-1", bad)],
    );
    let bad = Err("illegal mcast-port specified");
    limits(
        &format!("{SD} --mcast-port"),
        |a| daemon_of(a).mcast_port.map_or(-1, i64::from),
        &[
            ("0", bad),
            ("1", Ok(1)),
            ("65535", Ok(65535)),
            ("65536", bad),
        ],
    );
    let bad = Err("illegal mcast-ttl specified");
    limits(
        &format!("{SD} --mcast-ttl"),
        |a| daemon_of(a).mcast_ttl.map_or(-1, i64::from),
        &[("0", bad), ("1", Ok(1)), ("255", Ok(255)), ("256", bad)],
    );
    let bad = Err("illegal sync-maxlen specified");
    limits(
        &format!("{SD} --sync-maxlen"),
        |a| daemon_of(a).sync_maxlen.map_or(-1, i64::from),
        &[
            ("0", bad),
            ("1", Ok(1)),
            ("65507", Ok(65507)),
            ("65508", bad),
        ],
    );
}

#[test]
fn service_and_timeout_limits() {
    limits(
        "-A -t 10.0.0.1:80 -p",
        |a| service_of(a).timeout.into(),
        &[
            ("0", Err("invalid timeout value `0' specified")),
            ("1", Ok(1)),
            ("2678400", Ok(2678400)),
            ("2678401", Err("invalid timeout value `2678401' specified")),
        ],
    );
    limits(
        "-A -f",
        |a| match service_of(a).key {
            ServiceKey::Fwmark { mark, .. } => mark.into(),
            k => panic!("{k:?}"),
        },
        &[
            ("0", Err("invalid fwmark value `0' specified")),
            ("1", Ok(1)),
            ("4294967295", Ok(4294967295)),
            (
                "4294967296",
                Err("invalid fwmark value `4294967296' specified"),
            ),
            ("-1", Err("invalid fwmark value `-1' specified")),
        ],
    );
    // After `--`, so that popt takes -1 for a word.
    limits(
        "--set 5 6 --",
        |a| timeouts_of(a).udp.into(),
        &[
            ("0", Ok(0)),
            ("2678400", Ok(2678400)),
            ("2678401", Err("invalid timeout value `2678401' specified")),
            ("-1", Err("invalid timeout value `-1' specified")),
        ],
    );
    let t = timeouts_of(ok("--set 1 2 3"));
    assert_eq!((t.tcp, t.tcp_fin, t.udp), (1, 2, 3));
}

#[test]
fn first_error_wins() {
    let cases: &[(&str, &str)] = &[
        // Option values are checked as they are scanned, before the table.
        ("-A -t 1.2.3.4:80 -w x", "illegal weight specified\n"),
        ("-A -w x --bogus", "illegal weight specified\n"),
        ("-A --bogus -w x", "--bogus: unknown option\n"),
        // Leftover words come after the options.
        ("-L extra -w x", "illegal weight specified\n"),
        ("--set 1 x y", "invalid timeout value `x' specified\n"),
        ("--set 1 2 3 4", "unexpected argument 4\n"),
        // -b, then -M, then the legality table.
        ("-L -f 1 -6 -M 200 -b foo", "invalid scheduler flag `foo'\n"),
        ("-L -f 1 -6 -M 200", "illegal ipv6 netmask specified\n"),
        ("-L -b ,", "invalid scheduler flag `(null)'\n"),
        // The table, then the command's own checks.
        (
            "-A -t 1.2.3.4 -o -w 1",
            "Illegal 'weight' option with the 'add-service' command\n",
        ),
        (
            "-A -t 1.2.3.4 -o",
            "Zero port specified for non-persistent service\n",
        ),
        (
            "-A -t 1.2.3.4 -p -o",
            "One-Packet Scheduling is only for UDP virtual services\n",
        ),
        (
            "-a -t 1.2.3.4:80 -r [::1]:80 --tun-type gue",
            "Different address family is allowed only for tunneling servers\n",
        ),
        (
            "-R -n",
            "Illegal 'numeric' option with the 'restore' command\n",
        ),
    ];
    for (a, msg) in cases {
        assert_eq!(err(a).stderr, *msg, "ipvsadm {a}");
    }
    // -R inside -R input sends to --help, after the table.
    let r = process_options(&args("-R"), true).unwrap_err();
    assert_eq!((r.code, r.soft), (255, false));
    assert!(r.stderr.starts_with("Try `ipvsadm -h'"));
}

#[test]
fn popt_errors_are_soft() {
    for a in ["-L --bogus", "-A -t", "-L --stats=1", "-Lq"] {
        let e = err(a);
        assert_eq!((e.code, e.soft), (255, true), "ipvsadm {a}");
    }
    assert!(!err("-L -A").soft);
}

#[test]
fn options_in_table_column_order() {
    for (i, o) in Opt::ALL.iter().enumerate() {
        assert_eq!(*o as usize, i);
    }
    assert_eq!(Opt::ALL[0].name(), "numeric");
    assert_eq!(Opt::ALL[NUMBER_OF_OPT - 1].name(), "tun-remcsum");
    assert_eq!(Cmd::Zero.name(), "zero");
    assert_eq!(Cmd::Zero.row(), CMD_V_OPT[13]);
    // Each popt table entry that records an option names the right one.
    for d in OPTIONS {
        let opt = match d.val {
            Key::Number(n) => n.spec().0,
            Key::Listing(o, _) | Key::TunCsum(o, _) => o,
            _ => continue,
        };
        assert_eq!(d.long, opt.name());
    }
}
