//! The ipvsadm 1.31 command line, reproduced: the popt option scanning,
//! the `commands_v_options` legality table, every client-side check with
//! its exact message and exit status, the kernel error texts of
//! `ipvs_strerror`, listings and `-S` through [`crate::format`], and `-R`.
//!
//! Differences from ipvsadm (bugs fixed; see `crates/ipvsctl/README.md`):
//! * `-M` is interpreted after all options are read, so `-M 64 -t [v6]:80`
//!   keeps the IPv6 prefix (ipvsadm silently loses it);
//! * real-server `--stats`/`--rate` counters are 64-bit;
//! * fwmarks are printed unsigned (the post-1.31 upstream fix);
//! * `-R` pipelines the kernel requests of consecutive lines (same results,
//!   same messages, far fewer round trips).

pub mod popt;

use std::io::{BufRead, Write};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use crate::conn_format;
use crate::format::{self, *};
use crate::names::{self, LibcResolver, Numeric, Resolver};
use ipvs_netlink::ipvs::consts::*;
use ipvs_netlink::ipvs::flags::{sched_flag, SchedFlagError};
use ipvs_netlink::ipvs::{
    Client, DaemonState, Dest, Error, Family, Forward, Info, Netmask, Op, Protocol, Service,
    ServiceKey, SyncDaemon, Timeouts, TunnelCsum, TunnelType,
};
use popt::{ArgKind, Next, OptDef, Popt};

/// `ipvsadm -v`.
pub const VERSION_LINE: &str = "ipvsadm v1.31 2019/12/24 (compiled with popt and IPVS v1.2.1)";
const MAX_TIMEOUT: i64 = 86400 * 31;
const DEF_SCHED: &str = "wlc";
const DEF_MCAST_IFN: &str = "eth0";
const PERSISTENT_TIMEOUT: u32 = 6 * 60;

// Commands (CMD_*).
const CMD_NONE: usize = 0;
const CMD_ADD: usize = 1;
const CMD_EDIT: usize = 2;
const CMD_DEL: usize = 3;
const CMD_FLUSH: usize = 4;
const CMD_LIST: usize = 5;
const CMD_ADDDEST: usize = 6;
const CMD_DELDEST: usize = 7;
const CMD_EDITDEST: usize = 8;
const CMD_TIMEOUT: usize = 9;
const CMD_STARTDAEMON: usize = 10;
const CMD_STOPDAEMON: usize = 11;
const CMD_RESTORE: usize = 12;
const CMD_SAVE: usize = 13;
const CMD_ZERO: usize = 14;

const CMDNAMES: [&str; 14] = [
    "add-service",
    "edit-service",
    "delete-service",
    "flush",
    "list",
    "add-server",
    "delete-server",
    "edit-server",
    "set",
    "start-daemon",
    "stop-daemon",
    "restore",
    "save",
    "zero",
];

// Options (OPTC_*).
const OPTC_NUMERIC: usize = 0;
const OPTC_CONNECTION: usize = 1;
const OPTC_SERVICE: usize = 2;
const OPTC_SCHEDULER: usize = 3;
const OPTC_PERSISTENT: usize = 4;
const OPTC_NETMASK: usize = 5;
const OPTC_SERVER: usize = 6;
const OPTC_FORWARD: usize = 7;
const OPTC_WEIGHT: usize = 8;
const OPTC_UTHRESHOLD: usize = 9;
const OPTC_LTHRESHOLD: usize = 10;
const OPTC_MCAST: usize = 11;
const OPTC_TIMEOUT: usize = 12;
const OPTC_DAEMON: usize = 13;
const OPTC_STATS: usize = 14;
const OPTC_RATE: usize = 15;
const OPTC_THRESHOLDS: usize = 16;
const OPTC_PERSISTENTCONN: usize = 17;
const OPTC_NOSORT: usize = 18;
const OPTC_SYNCID: usize = 19;
const OPTC_EXACT: usize = 20;
const OPTC_ONEPACKET: usize = 21;
const OPTC_PERSISTENCE_ENGINE: usize = 22;
const OPTC_SCHED_FLAGS: usize = 23;
const OPTC_MCAST_GROUP: usize = 24;
const OPTC_MCAST_PORT: usize = 25;
const OPTC_MCAST_TTL: usize = 26;
const OPTC_SYNC_MAXLEN: usize = 27;
const OPTC_TUN_INFO: usize = 28;
const OPTC_TUN_TYPE: usize = 29;
const OPTC_TUN_PORT: usize = 30;
const OPTC_TUN_NOCSUM: usize = 31;
const OPTC_TUN_CSUM: usize = 32;
const OPTC_TUN_REMCSUM: usize = 33;
const NUMBER_OF_OPT: usize = 34;

const fn bit(o: usize) -> u64 {
    1u64 << o
}

const OPTNAMES: [&str; NUMBER_OF_OPT] = [
    "numeric",
    "connection",
    "service-address",
    "scheduler",
    "persistent",
    "netmask",
    "real-server",
    "forwarding-method",
    "weight",
    "u-threshold",
    "l-threshold",
    "mcast-interface",
    "timeout",
    "daemon",
    "stats",
    "rate",
    "thresholds",
    "persistent-conn",
    "nosort",
    "syncid",
    "exact",
    "ops",
    "pe",
    "sched-flags",
    "mcast-group",
    "mcast-port",
    "mcast-ttl",
    "sync-maxlen",
    "tun-info",
    "tun-type",
    "tun-port",
    "tun-nocsum",
    "tun-csum",
    "tun-remcsum",
];

/// `commands_v_options` of ipvsadm.c, one row per command (`+`
/// compulsory, `x` illegal, `1` exclusive, space optional), columns in
/// OPTC order (generated from the C table).
const CMD_V_OPT: [&[u8; NUMBER_OF_OPT]; 14] = [
    b"xx+   xxxxxxxxxxxxxxx   xxxxxxxxxx", // ADD
    b"xx+   xxxxxxxxxxxxxxx   xxxxxxxxxx", // EDIT
    b"xx+xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", // DEL
    b"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", // FLUSH
    b" 11xxxxxxxxx11       xxxxxxx xxxxx", // LIST
    b"xx+xxx+    xxxxxxxxxxxxxxxxxx     ", // ADDSRV
    b"xx+xxx+xxxxxxxxxxxxxxxxxxxxxxxxxxx", // DELSRV
    b"xx+xxx+    xxxxxxxxxxxxxxxxxx     ", // EDITSRV
    b"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", // TIMEOUT
    b"xxxxxxxxxxx xxxxxxx xxxx    xxxxxx", // STARTD
    b"xxxxxxxxxxxxxxxxxxx xxxxxxxxxxxxxx", // STOPD
    b"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", // RESTORE
    b" xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", // SAVE
    b"xx xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", // ZERO
];

fn legality(cmd: usize, opt: usize) -> u8 {
    CMD_V_OPT[cmd - 1][opt]
}

/// `tunnel_types_v_options` over (tun-port, nocsum, csum, remcsum).
const TUN_V_OPT: [[u8; 4]; 3] = [*b"xxxx", *b"+111", *b"x11x"];
const TUNOPTS: [usize; 4] = [
    OPTC_TUN_PORT,
    OPTC_TUN_NOCSUM,
    OPTC_TUN_CSUM,
    OPTC_TUN_REMCSUM,
];
const TUNNAMES: [&str; 3] = ["ipip", "gue", "gre"];

// Option tags.
const TAG_SET: i32 = 128;
const TAG_START_DAEMON: i32 = 129;
const TAG_STOP_DAEMON: i32 = 130;
const TAG_MCAST_INTERFACE: i32 = 131;
const TAG_TIMEOUT: i32 = 132;
const TAG_DAEMON: i32 = 133;
const TAG_STATS: i32 = 134;
const TAG_RATE: i32 = 135;
const TAG_THRESHOLDS: i32 = 136;
const TAG_PERSISTENTCONN: i32 = 137;
const TAG_SORT: i32 = 138;
const TAG_NO_SORT: i32 = 139;
const TAG_PERSISTENCE_ENGINE: i32 = 140;
const TAG_SCTP_SERVICE: i32 = 141;
const TAG_MCAST_GROUP: i32 = 142;
const TAG_MCAST_PORT: i32 = 143;
const TAG_MCAST_TTL: i32 = 144;
const TAG_SYNC_MAXLEN: i32 = 145;
const TAG_TUN_INFO: i32 = 146;
const TAG_TUN_TYPE: i32 = 147;
const TAG_TUN_PORT: i32 = 148;
const TAG_TUN_NOCSUM: i32 = 149;
const TAG_TUN_CSUM: i32 = 150;
const TAG_TUN_REMCSUM: i32 = 151;

const fn o(long: &'static str, short: Option<char>, arg: ArgKind, val: i32) -> OptDef {
    OptDef {
        long,
        short,
        arg,
        val,
    }
}
const N: ArgKind = ArgKind::None;
const R: ArgKind = ArgKind::Required;

/// ipvsadm's popt table, in its order.
pub const OPTIONS: &[OptDef] = &[
    o("add-service", Some('A'), N, 'A' as i32),
    o("edit-service", Some('E'), N, 'E' as i32),
    o("delete-service", Some('D'), N, 'D' as i32),
    o("clear", Some('C'), N, 'C' as i32),
    o("list", Some('L'), N, 'L' as i32),
    o("list", Some('l'), N, 'l' as i32),
    o("zero", Some('Z'), N, 'Z' as i32),
    o("add-server", Some('a'), N, 'a' as i32),
    o("edit-server", Some('e'), N, 'e' as i32),
    o("delete-server", Some('d'), N, 'd' as i32),
    o("set", None, N, TAG_SET),
    o("help", Some('h'), N, 'h' as i32),
    o("version", Some('v'), N, 'v' as i32),
    o("restore", Some('R'), N, 'R' as i32),
    o("save", Some('S'), N, 'S' as i32),
    o("start-daemon", None, R, TAG_START_DAEMON),
    o("stop-daemon", None, R, TAG_STOP_DAEMON),
    o("tcp-service", Some('t'), R, 't' as i32),
    o("udp-service", Some('u'), R, 'u' as i32),
    o("sctp-service", None, R, TAG_SCTP_SERVICE),
    o("fwmark-service", Some('f'), R, 'f' as i32),
    o("scheduler", Some('s'), R, 's' as i32),
    o("persistent", Some('p'), ArgKind::Optional, 'p' as i32),
    o("netmask", Some('M'), R, 'M' as i32),
    o("real-server", Some('r'), R, 'r' as i32),
    o("masquerading", Some('m'), N, 'm' as i32),
    o("ipip", Some('i'), N, 'i' as i32),
    o("gatewaying", Some('g'), N, 'g' as i32),
    o("weight", Some('w'), R, 'w' as i32),
    o("u-threshold", Some('x'), R, 'x' as i32),
    o("l-threshold", Some('y'), R, 'y' as i32),
    o("numeric", Some('n'), N, 'n' as i32),
    o("connection", Some('c'), N, 'c' as i32),
    o("mcast-interface", None, R, TAG_MCAST_INTERFACE),
    o("syncid", None, R, 'I' as i32),
    o("timeout", None, N, TAG_TIMEOUT),
    o("daemon", None, N, TAG_DAEMON),
    o("stats", None, N, TAG_STATS),
    o("rate", None, N, TAG_RATE),
    o("thresholds", None, N, TAG_THRESHOLDS),
    o("persistent-conn", None, N, TAG_PERSISTENTCONN),
    o("nosort", None, N, TAG_NO_SORT),
    o("sort", None, N, TAG_SORT),
    o("exact", Some('X'), N, 'X' as i32),
    o("ipv6", Some('6'), N, '6' as i32),
    o("ops", Some('o'), N, 'o' as i32),
    o("pe", None, R, TAG_PERSISTENCE_ENGINE),
    o("sched-flags", Some('b'), R, 'b' as i32),
    o("mcast-group", None, R, TAG_MCAST_GROUP),
    o("mcast-port", None, R, TAG_MCAST_PORT),
    o("mcast-ttl", None, R, TAG_MCAST_TTL),
    o("sync-maxlen", None, R, TAG_SYNC_MAXLEN),
    o("tun-info", None, N, TAG_TUN_INFO),
    o("tun-type", None, R, TAG_TUN_TYPE),
    o("tun-port", None, R, TAG_TUN_PORT),
    o("tun-nocsum", None, N, TAG_TUN_NOCSUM),
    o("tun-csum", None, N, TAG_TUN_CSUM),
    o("tun-remcsum", None, N, TAG_TUN_REMCSUM),
];

/// A terminal outcome: text for stdout and stderr and an exit status.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Exit {
    /// Exit status (as the process would report it, 0..=255).
    pub code: i32,
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
    /// Not an `exit()`: ipvsadm returns -1 from `process_options` (popt
    /// errors), so `-R` goes on with the next line.
    pub soft: bool,
}

fn fail(code: i32, msg: impl Into<String>) -> Exit {
    let mut m = msg.into();
    m.push('\n');
    Exit {
        code,
        stdout: String::new(),
        stderr: m,
        soft: false,
    }
}

fn tryhelp(program: &str) -> Exit {
    Exit {
        code: 255,
        stdout: String::new(),
        stderr: format!("Try `{program} -h' or '{program} --help' for more information.\n"),
        soft: false,
    }
}

/// The usage text (`usage_exit`).
pub fn usage(program: &str) -> String {
    let p = program;
    let mut s = format!("{VERSION_LINE}\n");
    s.push_str(&format!(
        "Usage:\n  {p} -A|E virtual-service [-s scheduler] [-p [timeout]] [-M netmask] [--pe persistence_engine] [-b sched-flags]\n  {p} -D virtual-service\n  {p} -C\n  {p} -R\n  {p} -S [-n]\n  {p} -a|e virtual-service -r server-address [options]\n  {p} -d virtual-service -r server-address\n  {p} -L|l [virtual-service] [options]\n  {p} -Z [virtual-service]\n  {p} --set tcp tcpfin udp\n  {p} --start-daemon {{master|backup}} [daemon-options]\n  {p} --stop-daemon {{master|backup}}\n  {p} -h\n\n"
    ));
    s.push_str(concat!(
        "Commands:\n",
        "Either long or short options are allowed.\n",
        "  --add-service     -A        add virtual service with options\n",
        "  --edit-service    -E        edit virtual service with options\n",
        "  --delete-service  -D        delete virtual service\n",
        "  --clear           -C        clear the whole table\n",
        "  --restore         -R        restore rules from stdin\n",
        "  --save            -S        save rules to stdout\n",
        "  --add-server      -a        add real server with options\n",
        "  --edit-server     -e        edit real server with options\n",
        "  --delete-server   -d        delete real server\n",
        "  --list            -L|-l     list the table\n",
        "  --zero            -Z        zero counters in a service or all services\n",
        "  --set tcp tcpfin udp        set connection timeout values\n",
        "  --start-daemon              start connection sync daemon\n",
        "  --stop-daemon               stop connection sync daemon\n",
        "  --help            -h        display this help message\n\n",
        "virtual-service:\n",
        "  --tcp-service|-t  service-address   service-address is host[:port]\n",
        "  --udp-service|-u  service-address   service-address is host[:port]\n",
        "  --sctp-service    service-address   service-address is host[:port]\n",
        "  --fwmark-service|-f fwmark          fwmark is an integer greater than zero\n",
        "\n",
        "Options:\n",
        "  --ipv6         -6                   fwmark entry uses IPv6\n",
        "  --scheduler    -s scheduler         one of rr|wrr|lc|wlc|lblc|lblcr|dh|sh|sed|nq|fo|ovf|mh,\n",
        "                                      the default scheduler is wlc.\n",
        "  --pe            engine              alternate persistence engine may be sip,\n",
        "                                      not set by default.\n",
        "  --persistent   -p [timeout]         persistent service\n",
        "  --netmask      -M netmask           persistent granularity mask\n",
        "  --real-server  -r server-address    server-address is host (and port)\n",
        "  --gatewaying   -g                   gatewaying (direct routing) (default)\n",
        "  --ipip         -i                   ipip encapsulation (tunneling)\n",
        "  --masquerading -m                   masquerading (NAT)\n",
        "  --tun-type      type                one of ipip|gue|gre,\n",
        "                                      the default tunnel type is ipip.\n",
        "  --tun-port      port                tunnel destination port\n",
        "  --tun-nocsum                        tunnel encapsulation without checksum\n",
        "  --tun-csum                          tunnel encapsulation with checksum\n",
        "  --tun-remcsum                       tunnel encapsulation with remote checksum\n",
        "  --weight       -w weight            capacity of real server\n",
        "  --u-threshold  -x uthreshold        upper threshold of connections\n",
        "  --l-threshold  -y lthreshold        lower threshold of connections\n",
        "  --connection   -c                   output of current IPVS connections\n",
        "  --timeout                           output of timeout (tcp tcpfin udp)\n",
        "  --daemon                            output of daemon information\n",
        "  --stats                             output of statistics information\n",
        "  --rate                              output of rate information\n",
        "  --exact                             expand numbers (display exact values)\n",
        "  --thresholds                        output of thresholds information\n",
        "  --persistent-conn                   output of persistent connection info\n",
        "  --tun-info                          output of tunnel information\n",
        "  --nosort                            disable sorting output of service/server entries\n",
        "  --sort                              does nothing, for backwards compatibility\n",
        "  --ops          -o                   one-packet scheduling\n",
        "  --numeric      -n                   numeric output of addresses and ports\n",
        "  --sched-flags  -b flags             scheduler flags (comma-separated)\n",
        "Daemon Options:\n",
        "  --syncid sid                        syncid for connection sync (default=255)\n",
        "  --sync-maxlen length                Max sync message length (default=1472)\n",
        "  --mcast-interface interface         multicast interface for connection sync\n",
        "  --mcast-group address               IPv4/IPv6 group (default=224.0.0.81)\n",
        "  --mcast-port port                   UDP port (default=8848)\n",
        "  --mcast-ttl ttl                     Multicast TTL (default=1)\n",
    ));
    s
}

/// C `strtol(s, &end, 10)` with a full-string check (`string_to_number`).
fn string_to_number(s: &str, min: i64, max: i64) -> Option<i64> {
    let v = strtol_full(s)?;
    (min <= v && v <= max).then_some(v)
}

/// strtol base 10 accepting leading whitespace and a sign; the whole string
/// must be consumed and must contain digits. `None` also on overflow.
fn strtol_full(s: &str) -> Option<i64> {
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
fn atoi(s: &str) -> i64 {
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
fn inet_pton4(s: &str) -> Option<Ipv4Addr> {
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
fn inet_pton6(s: &str) -> Option<Ipv6Addr> {
    s.parse().ok()
}

const SERVICE_ADDR: u32 = 1;
const SERVICE_PORT: u32 = 2;

/// The C `ipvs_service_t` fields ipvsadm fills while parsing.
#[derive(Debug, Clone, Default)]
struct CSvc {
    af: u16,
    protocol: u16,
    addr: Option<IpAddr>,
    port: u16,
    fwmark: u32,
    sched_name: String,
    flags: u32,
    timeout: u32,
    netmask: [u8; 4],
    pe_name: String,
}

#[derive(Debug, Clone, Default)]
struct CDest {
    af: u16,
    addr: Option<IpAddr>,
    port: u16,
    conn_flags: u32,
    weight: i64,
    u_threshold: u32,
    l_threshold: u32,
    tun_type: u8,
    tun_port: u16,
    tun_flags: u16,
}

#[derive(Debug, Clone, Default)]
struct CDaemon {
    state: u32,
    mcast_ifn: String,
    syncid: u32,
    sync_maxlen: u16,
    mcast_group: Option<IpAddr>,
    mcast_port: u16,
    mcast_ttl: u8,
}

/// `parse_service`: fills af/addr/port of `svc`; returns SERVICE_* bits.
fn parse_service(buf: &str, svc: &mut CSvc) -> u32 {
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
fn parse_sched_flags(sched: &str, arg: &str) -> Result<u32, Exit> {
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

/// What `process_options` decided to do.
#[derive(Debug, Clone)]
pub enum Action {
    /// A kernel change (the libipvs function, for the error text).
    Kernel(KOp),
    /// `-L` and friends.
    List(ListReq),
    /// `-S`.
    Save(u32),
    /// `-R`.
    Restore,
}

/// A kernel operation tagged with the libipvs function that ipvsadm would
/// call (its `ipvs_strerror` table depends on it).
#[derive(Debug, Clone)]
pub struct KOp {
    /// The operation.
    pub op: Op,
    /// libipvs function name.
    pub func: Func,
}

/// libipvs functions with specific error texts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Func {
    /// ipvs_add_service
    AddService,
    /// ipvs_update_service
    UpdateService,
    /// ipvs_del_service
    DelService,
    /// ipvs_zero_service
    ZeroService,
    /// ipvs_add_dest
    AddDest,
    /// ipvs_update_dest
    UpdateDest,
    /// ipvs_del_dest
    DelDest,
    /// ipvs_start_daemon
    StartDaemon,
    /// ipvs_stop_daemon
    StopDaemon,
    /// ipvs_get_services / ipvs_get_dests / ipvs_get_service
    Get,
    /// anything else
    Other,
}

/// `ipvs_strerror`.
pub fn ipvs_strerror(errno: i32, func: Func) -> String {
    use Func::*;
    let specific = match (func, errno) {
        (AddService, libc::EEXIST) => Some("Service already exists"),
        (AddService, libc::ENOENT) | (UpdateService, libc::ENOENT) => {
            Some("Scheduler or persistence engine not found")
        }
        (UpdateService, libc::ESRCH)
        | (DelService, libc::ESRCH)
        | (ZeroService, libc::ESRCH)
        | (Get, libc::ESRCH) => Some("No such service"),
        (AddDest, libc::ESRCH) | (UpdateDest, libc::ESRCH) | (DelDest, libc::ESRCH) => {
            Some("Service not defined")
        }
        (AddDest, libc::EEXIST) => Some("Destination already exists"),
        (UpdateDest, libc::ENOENT) | (DelDest, libc::ENOENT) => Some("No such destination"),
        (StartDaemon, libc::EEXIST) => Some("Daemon has already run"),
        (StopDaemon, libc::ESRCH) => Some("No daemon is running"),
        _ => None,
    };
    if let Some(s) = specific {
        return s.into();
    }
    match errno {
        libc::EPERM => "Permission denied (you must be root)".into(),
        libc::EINVAL => {
            "Invalid operation.  Possibly wrong module version, address not unicast, ...".into()
        }
        libc::ENOPROTOOPT => "Protocol not available".into(),
        libc::ENOMEM => "Memory allocation problem".into(),
        libc::EOPNOTSUPP => "Operation not supported with IPv6".into(),
        libc::EAFNOSUPPORT => "Operation not supported with specified address family".into(),
        libc::EMSGSIZE => "Module is wrong version".into(),
        e => ipvs_netlink::strerror(e),
    }
}

fn err_errno(e: &Error) -> i32 {
    e.errno().unwrap_or(libc::EINVAL)
}

/// A listing request.
#[derive(Debug, Clone)]
pub enum ListReq {
    /// `-c`.
    Conn(u32),
    /// `-L -t ...`.
    Service(ServiceKey, u32),
    /// `--timeout`.
    Timeout,
    /// `--daemon`.
    Daemon,
    /// Everything.
    All(u32),
}

fn svc_key(svc: &CSvc) -> ServiceKey {
    let family = if svc.af == AF_INET6 {
        Family::Inet6
    } else {
        Family::Inet
    };
    if svc.fwmark != 0 {
        ServiceKey::Fwmark {
            family,
            mark: svc.fwmark,
        }
    } else {
        let addr = svc.addr.unwrap_or(match family {
            Family::Inet => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
            Family::Inet6 => IpAddr::V6(Ipv6Addr::UNSPECIFIED),
        });
        ServiceKey::Addr {
            protocol: Protocol::from_number(svc.protocol),
            addr,
            port: svc.port,
        }
    }
}

fn to_service(svc: &CSvc) -> Service {
    let key = svc_key(svc);
    Service {
        key,
        scheduler: svc.sched_name.clone(),
        flags: svc.flags,
        timeout: svc.timeout,
        netmask: Netmask::from_wire(key.family(), svc.netmask),
        pe_name: (!svc.pe_name.is_empty()).then(|| svc.pe_name.clone()),
        stats: Default::default(),
    }
}

fn to_dest(d: &CDest) -> Dest {
    let addr = d.addr.unwrap_or(if d.af == AF_INET6 {
        IpAddr::V6(Ipv6Addr::UNSPECIFIED)
    } else {
        IpAddr::V4(Ipv4Addr::UNSPECIFIED)
    });
    Dest {
        addr,
        port: d.port,
        fwd: Forward::from_raw(d.conn_flags),
        weight: d.weight as u32,
        u_threshold: d.u_threshold,
        l_threshold: d.l_threshold,
        tun_type: TunnelType::from_raw(d.tun_type),
        tun_port: d.tun_port,
        tun_flags: TunnelCsum::from_raw(d.tun_flags),
        active_conns: 0,
        inact_conns: 0,
        persist_conns: 0,
        stats: Default::default(),
    }
}

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

    // generic_opt_check
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

fn truncate_bytes(s: &str, max: usize) -> String {
    let mut n = s.len().min(max);
    while !s.is_char_boundary(n) {
        n -= 1;
    }
    s[..n].to_string()
}

/// Output sinks (stdout/stderr), so the driver is testable.
pub trait Out {
    /// Write to standard output.
    fn out(&mut self, s: &str);
    /// Write to standard error.
    fn err(&mut self, s: &str);
}

/// The process's real stdout/stderr.
pub struct StdOut;

impl Out for StdOut {
    fn out(&mut self, s: &str) {
        let mut o = std::io::stdout().lock();
        let _ = o.write_all(s.as_bytes());
        let _ = o.flush();
    }
    fn err(&mut self, s: &str) {
        let _ = std::io::stderr().lock().write_all(s.as_bytes());
    }
}

/// Why the driver stops: an `exit()` with a status.
#[derive(Debug)]
pub struct ExitCode(pub i32);

/// The ipvsadm driver: one client, one info snapshot.
pub struct Compat<'a> {
    client: Client,
    info: Info,
    program: String,
    out: &'a mut dyn Out,
}

const INIT_FAIL: &str = "Are you sure that IP Virtual Server is built in the kernel or as module?";

fn modprobe_ipvs() -> bool {
    std::process::Command::new("/sbin/modprobe")
        .args(["--", "ip_vs"])
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
}

fn open_client() -> Result<(Client, Info), Error> {
    let mut c = Client::open()?;
    let info = c.info()?;
    Ok((c, info))
}

/// Run ipvsadm with `argv` (argv[0] is the program name); returns the exit status.
pub fn main(argv: &[String]) -> i32 {
    let mut out = StdOut;
    run(argv, &mut out, &mut std::io::stdin().lock())
}

/// [`main`] with explicit output and input.
pub fn run(argv: &[String], out: &mut dyn Out, input: &mut dyn BufRead) -> i32 {
    let program = argv.first().cloned().unwrap_or_else(|| "ipvsadm".into());
    // -h/-v need no kernel (ipvsadm initialises first; being helpful here
    // changes nothing where IPVS exists).
    if argv.len() > 1 {
        if let Err(e) = process_options(argv, false) {
            if e.code == 0 {
                out.out(&e.stdout);
                return 0;
            }
        }
    }
    let (client, info) = match open_client() {
        Ok(v) => v,
        Err(_) => {
            let retry = if modprobe_ipvs() {
                open_client()
            } else {
                Err(Error::FamilyNotFound("IPVS".into()))
            };
            match retry {
                Ok(v) => v,
                Err(e) => {
                    let errno = match &e {
                        Error::FamilyNotFound(_) => libc::ENOPROTOOPT,
                        other => err_errno(other),
                    };
                    out.err(&format!(
                        "Can't initialize ipvs: {}\n{INIT_FAIL}\n",
                        ipvs_strerror(errno, Func::Other)
                    ));
                    return 2;
                }
            }
        }
    };
    if info.version < 0x010104 {
        out.err(&format!(
            "Warning: IPVS version mismatch: \n  Kernel compiled with IPVS version {}\n  ipvsadm v1.31  requires minimum IPVS version 1.1.4\n\n",
            info.version_string()
        ));
    }
    let mut c = Compat {
        client,
        info,
        program,
        out,
    };
    if argv.len() == 1 {
        return match c.list(&ListReq::All(FMT_NONE)) {
            Ok(()) => 0,
            Err(ExitCode(n)) => n,
        };
    }
    match c.process(argv, false, input) {
        Ok(n) => n,
        Err(ExitCode(n)) => n,
    }
}

impl Compat<'_> {
    fn exit_with(&mut self, e: Exit) -> ExitCode {
        self.out.out(&e.stdout);
        self.out.err(&e.stderr);
        ExitCode(e.code)
    }

    /// `process_options` + action; `Ok(result)` is the return value
    /// (0 or 255), `Err` an immediate exit.
    fn process(
        &mut self,
        argv: &[String],
        reading_stdin: bool,
        input: &mut dyn BufRead,
    ) -> Result<i32, ExitCode> {
        match process_options(argv, reading_stdin) {
            Err(e) => Err(self.exit_with(e)),
            Ok(Action::List(l)) => self.list(&l).map(|_| 0),
            Ok(Action::Save(f)) => self.list(&ListReq::All(f)).map(|_| 0),
            Ok(Action::Restore) => self.restore(input),
            Ok(Action::Kernel(k)) => {
                let r = match self.client.execute(std::slice::from_ref(&k.op)) {
                    Ok(mut v) => v.pop().unwrap_or(Ok(())),
                    Err(e) => Err(e),
                };
                match r {
                    Ok(()) => Ok(0),
                    Err(e) => {
                        self.out
                            .err(&format!("{}\n", ipvs_strerror(err_errno(&e), k.func)));
                        Ok(255)
                    }
                }
            }
        }
    }

    fn resolver(format: u32) -> Box<dyn Resolver> {
        if format & FMT_NUMERIC != 0 {
            Box::new(Numeric)
        } else {
            Box::new(LibcResolver::new())
        }
    }

    fn fail_get(&mut self, e: &Error) -> ExitCode {
        self.out
            .err(&format!("{}\n", ipvs_strerror(err_errno(e), Func::Get)));
        ExitCode(1)
    }

    fn list(&mut self, req: &ListReq) -> Result<(), ExitCode> {
        match req {
            ListReq::Conn(f) => match conn_format::list_ipvsadm(*f, &*Self::resolver(*f)) {
                Ok(s) => {
                    self.out.out(&s);
                    Ok(())
                }
                Err(msg) => {
                    self.out.err(&msg);
                    Err(ExitCode(1))
                }
            },
            ListReq::Timeout => match self.client.timeouts() {
                Ok(t) => {
                    self.out.out(&format::timeouts(&t));
                    Ok(())
                }
                Err(_) => Err(ExitCode(1)),
            },
            ListReq::Daemon => match self.client.daemons() {
                Ok(d) => {
                    self.out.out(&format::daemons(&d));
                    Ok(())
                }
                Err(_) => Err(ExitCode(1)),
            },
            ListReq::Service(key, f) => {
                let svc = match self.client.service(key) {
                    Ok(s) => s,
                    Err(e) => return Err(self.fail_get(&e)),
                };
                let counters = f & (FMT_STATS | FMT_RATE) != 0;
                let dests = match self.client.dests_with(&svc.key, counters) {
                    Ok(d) => d,
                    Err(e) => return Err(self.fail_get(&e)),
                };
                let res = Self::resolver(*f);
                self.out
                    .out(&format::list_service(&(svc, dests), *f, &*res));
                Ok(())
            }
            ListReq::All(f) => {
                if f & FMT_RULE == 0 {
                    let h = format::header(&self.info);
                    self.out.out(&h);
                }
                let counters = f & (FMT_STATS | FMT_RATE) != 0;
                let entries = match self.client.services_with_dests_with(counters) {
                    Ok(e) => e,
                    Err(e) => return Err(self.fail_get(&e)),
                };
                let res = Self::resolver(*f);
                let mut v: Vec<&format::Entry> = entries.iter().collect();
                format::sort_entries(&mut v, *f);
                let mut s = format::title(*f);
                // Roughly a service line and four real server lines each.
                s.reserve(v.len() * 400);
                for (svc, d) in v {
                    format::write_service_entry(&mut s, svc, d, *f, &*res);
                }
                self.out.out(&s);
                Ok(())
            }
        }
    }

    /// Send the queued kernel operations; print their errors in order.
    /// Returns the result of the last one.
    fn flush_queue(&mut self, q: &mut Vec<KOp>) -> Result<Option<i32>, ExitCode> {
        if q.is_empty() {
            return Ok(None);
        }
        let ops: Vec<Op> = q.iter().map(|k| k.op.clone()).collect();
        let results = match self.client.execute(&ops) {
            Ok(r) => r,
            Err(e) => {
                self.out.err(&format!("{e}\n"));
                return Err(ExitCode(255));
            }
        };
        let mut last = 0;
        let mut errs = String::new();
        for (k, r) in q.iter().zip(results) {
            last = match r {
                Ok(()) => 0,
                Err(e) => {
                    errs.push_str(&ipvs_strerror(err_errno(&e), k.func));
                    errs.push('\n');
                    255
                }
            };
        }
        if !errs.is_empty() {
            self.out.err(&errs);
        }
        q.clear();
        Ok(Some(last))
    }

    /// `-R`: one command per line; consecutive kernel changes are pipelined.
    fn restore(&mut self, input: &mut dyn BufRead) -> Result<i32, ExitCode> {
        let mut result = 0;
        let mut queue: Vec<KOp> = Vec::new();
        let mut line = Vec::new();
        loop {
            line.clear();
            match input.read_until(b'\n', &mut line) {
                Ok(0) => break,
                Ok(_) => {}
                Err(_) => break,
            }
            let text = String::from_utf8_lossy(&line);
            let mut argv = vec![self.program.clone()];
            argv.extend(
                text.split([' ', '\t', '\r', '\n'])
                    .filter(|t| !t.is_empty() && *t != "ipvsadm")
                    .map(String::from),
            );
            if argv.len() <= 1 {
                continue;
            }
            match process_options(&argv, true) {
                Ok(Action::Kernel(k)) => {
                    queue.push(k);
                    if queue.len() >= 4096 {
                        if let Some(r) = self.flush_queue(&mut queue)? {
                            result = r;
                        }
                    }
                }
                other => {
                    self.flush_queue(&mut queue)?;
                    result = match other {
                        Err(e) if e.soft => {
                            self.out.err(&e.stderr);
                            255
                        }
                        Err(e) => return Err(self.exit_with(e)),
                        Ok(Action::List(l)) => self.list(&l).map(|_| 0)?,
                        Ok(Action::Save(f)) => self.list(&ListReq::All(f)).map(|_| 0)?,
                        Ok(Action::Restore) | Ok(Action::Kernel(_)) => 0,
                    };
                }
            }
        }
        if let Some(r) = self.flush_queue(&mut queue)? {
            result = r;
        }
        Ok(result)
    }
}

#[cfg(test)]
mod tests {
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
        assert_eq!(legality(CMD_ADD, OPTC_SERVICE), b'+');
        assert_eq!(legality(CMD_ADD, OPTC_ONEPACKET), b' ');
        assert_eq!(legality(CMD_ADD, OPTC_SCHED_FLAGS), b' ');
        assert_eq!(legality(CMD_ADD, OPTC_MCAST_GROUP), b'x');
        assert_eq!(legality(CMD_ADDDEST, OPTC_TUN_TYPE), b' ');
        assert_eq!(legality(CMD_ADDDEST, OPTC_TUN_INFO), b'x');
        assert_eq!(legality(CMD_ADDDEST, OPTC_WEIGHT), b' ');
        assert_eq!(legality(CMD_ADDDEST, OPTC_LTHRESHOLD), b' ');
        assert_eq!(legality(CMD_ADDDEST, OPTC_MCAST), b'x');
        assert_eq!(legality(CMD_STARTDAEMON, OPTC_MCAST), b' ');
        assert_eq!(legality(CMD_STARTDAEMON, OPTC_SYNCID), b' ');
        assert_eq!(legality(CMD_STARTDAEMON, OPTC_MCAST_GROUP), b' ');
        assert_eq!(legality(CMD_STARTDAEMON, OPTC_SYNC_MAXLEN), b' ');
        assert_eq!(legality(CMD_STARTDAEMON, OPTC_TUN_INFO), b'x');
        assert_eq!(legality(CMD_STOPDAEMON, OPTC_SYNCID), b' ');
        assert_eq!(legality(CMD_STOPDAEMON, OPTC_MCAST), b'x');
        assert_eq!(legality(CMD_SAVE, OPTC_NUMERIC), b' ');
        assert_eq!(legality(CMD_ZERO, OPTC_SERVICE), b' ');
        assert_eq!(legality(CMD_LIST, OPTC_TUN_INFO), b' ');
        assert_eq!(legality(CMD_LIST, OPTC_EXACT), b' ');
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
}
