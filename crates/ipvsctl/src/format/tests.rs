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
    let want = include_str!("../../tests/golden/sample_Ln.txt");
    assert_eq!(list_all(&INFO, &sample(), FMT_NUMERIC, &Numeric), want);
}

#[test]
fn golden_sample_save() {
    // The reference sample lists only the first dest of the first
    // service; compare its lines.
    let got = list_all(&INFO, &sample(), FMT_NUMERIC | FMT_RULE, &Numeric);
    let want = include_str!("../../tests/golden/sample_save.txt");
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
    let want = include_str!("../../tests/golden/sample_stats.txt");
    assert_eq!(
        list_all(&INFO, &stats_sample(), FMT_NUMERIC | FMT_STATS, &Numeric),
        want
    );
    let want = include_str!("../../tests/golden/sample_rate.txt");
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
    assert!(ti.contains(
        "  -> 192.168.1.10:80              Route   n/a           1      0          0         \n"
    ));
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

#[test]
fn rule_lines_per_tunnel_type() {
    // Each tunnel type's `-a` suffix as ipvsadm -S prints it; non-tunnel dests get none.
    let s = Service::new(ServiceKey::fwmark(7)).with_scheduler("rr");
    let tun = |t: TunnelType| {
        let mut d = Dest::new(ip("10.1.0.5"), 0).with_fwd(Forward::Tunnel);
        d.tun_type = t;
        d
    };
    let mut masq = Dest::new(ip("10.1.0.6"), 0).with_fwd(Forward::Masq);
    masq.tun_type = TunnelType::Gre;
    for (d, want) in [
        (tun(TunnelType::Gre), "-i -w 1 --tun-type gre --tun-nocsum"),
        (tun(TunnelType::Ipip), "-i -w 1 --tun-type ipip"),
        (masq, "-m -w 1"),
    ] {
        let out = service_entry(&s, &[d], FMT_NUMERIC | FMT_RULE, &Numeric);
        let line = out.lines().nth(1).unwrap();
        assert!(line.starts_with("-a -f 7 -r 10.1.0."), "{line:?}");
        assert!(line.ends_with(&format!(":0 {want}")), "{line:?}");
    }
}

#[test]
fn fwmark_above_i32_max_prints_signed_like_ipvsadm() {
    let res = Numeric;
    let key = ServiceKey::fwmark(4_294_967_295);
    assert_eq!(service_name(&key, 0, &res), "FWM  -1");
    assert_eq!(service_name(&key, FMT_RULE, &res), "-f -1");
    let key = ServiceKey::fwmark(2_147_483_647);
    assert_eq!(service_name(&key, FMT_RULE, &res), "-f 2147483647");
}
