//! ipvsadm's tables: commands, options and their legality, the popt
//! option table, the usage text, and the terminal exits.

use super::*;

pub(super) const MAX_TIMEOUT: i64 = 86400 * 31;
pub(super) const DEF_SCHED: &str = "wlc";
pub(super) const DEF_MCAST_IFN: &str = "eth0";
pub(super) const PERSISTENT_TIMEOUT: u32 = 6 * 60;

// Commands (CMD_*).
pub(super) const CMD_NONE: usize = 0;
pub(super) const CMD_ADD: usize = 1;
pub(super) const CMD_EDIT: usize = 2;
pub(super) const CMD_DEL: usize = 3;
pub(super) const CMD_FLUSH: usize = 4;
pub(super) const CMD_LIST: usize = 5;
pub(super) const CMD_ADDDEST: usize = 6;
pub(super) const CMD_DELDEST: usize = 7;
pub(super) const CMD_EDITDEST: usize = 8;
pub(super) const CMD_TIMEOUT: usize = 9;
pub(super) const CMD_STARTDAEMON: usize = 10;
pub(super) const CMD_STOPDAEMON: usize = 11;
pub(super) const CMD_RESTORE: usize = 12;
pub(super) const CMD_SAVE: usize = 13;
pub(super) const CMD_ZERO: usize = 14;

pub(super) const CMDNAMES: [&str; 14] = [
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
pub(super) const OPTC_NUMERIC: usize = 0;
pub(super) const OPTC_CONNECTION: usize = 1;
pub(super) const OPTC_SERVICE: usize = 2;
pub(super) const OPTC_SCHEDULER: usize = 3;
pub(super) const OPTC_PERSISTENT: usize = 4;
pub(super) const OPTC_NETMASK: usize = 5;
pub(super) const OPTC_SERVER: usize = 6;
pub(super) const OPTC_FORWARD: usize = 7;
pub(super) const OPTC_WEIGHT: usize = 8;
pub(super) const OPTC_UTHRESHOLD: usize = 9;
pub(super) const OPTC_LTHRESHOLD: usize = 10;
pub(super) const OPTC_MCAST: usize = 11;
pub(super) const OPTC_TIMEOUT: usize = 12;
pub(super) const OPTC_DAEMON: usize = 13;
pub(super) const OPTC_STATS: usize = 14;
pub(super) const OPTC_RATE: usize = 15;
pub(super) const OPTC_THRESHOLDS: usize = 16;
pub(super) const OPTC_PERSISTENTCONN: usize = 17;
pub(super) const OPTC_NOSORT: usize = 18;
pub(super) const OPTC_SYNCID: usize = 19;
pub(super) const OPTC_EXACT: usize = 20;
pub(super) const OPTC_ONEPACKET: usize = 21;
pub(super) const OPTC_PERSISTENCE_ENGINE: usize = 22;
pub(super) const OPTC_SCHED_FLAGS: usize = 23;
pub(super) const OPTC_MCAST_GROUP: usize = 24;
pub(super) const OPTC_MCAST_PORT: usize = 25;
pub(super) const OPTC_MCAST_TTL: usize = 26;
pub(super) const OPTC_SYNC_MAXLEN: usize = 27;
pub(super) const OPTC_TUN_INFO: usize = 28;
pub(super) const OPTC_TUN_TYPE: usize = 29;
pub(super) const OPTC_TUN_PORT: usize = 30;
pub(super) const OPTC_TUN_NOCSUM: usize = 31;
pub(super) const OPTC_TUN_CSUM: usize = 32;
pub(super) const OPTC_TUN_REMCSUM: usize = 33;
pub(super) const NUMBER_OF_OPT: usize = 34;

pub(super) const fn bit(o: usize) -> u64 {
    1u64 << o
}

pub(super) const OPTNAMES: [&str; NUMBER_OF_OPT] = [
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
pub(super) const CMD_V_OPT: [&[u8; NUMBER_OF_OPT]; 14] = [
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

pub(super) fn legality(cmd: usize, opt: usize) -> u8 {
    CMD_V_OPT[cmd - 1][opt]
}

/// `tunnel_types_v_options` over (tun-port, nocsum, csum, remcsum).
pub(super) const TUN_V_OPT: [[u8; 4]; 3] = [*b"xxxx", *b"+111", *b"x11x"];
pub(super) const TUNOPTS: [usize; 4] = [
    OPTC_TUN_PORT,
    OPTC_TUN_NOCSUM,
    OPTC_TUN_CSUM,
    OPTC_TUN_REMCSUM,
];
pub(super) const TUNNAMES: [&str; 3] = ["ipip", "gue", "gre"];

// Option tags.
pub(super) const TAG_SET: i32 = 128;
pub(super) const TAG_START_DAEMON: i32 = 129;
pub(super) const TAG_STOP_DAEMON: i32 = 130;
pub(super) const TAG_MCAST_INTERFACE: i32 = 131;
pub(super) const TAG_TIMEOUT: i32 = 132;
pub(super) const TAG_DAEMON: i32 = 133;
pub(super) const TAG_STATS: i32 = 134;
pub(super) const TAG_RATE: i32 = 135;
pub(super) const TAG_THRESHOLDS: i32 = 136;
pub(super) const TAG_PERSISTENTCONN: i32 = 137;
pub(super) const TAG_SORT: i32 = 138;
pub(super) const TAG_NO_SORT: i32 = 139;
pub(super) const TAG_PERSISTENCE_ENGINE: i32 = 140;
pub(super) const TAG_SCTP_SERVICE: i32 = 141;
pub(super) const TAG_MCAST_GROUP: i32 = 142;
pub(super) const TAG_MCAST_PORT: i32 = 143;
pub(super) const TAG_MCAST_TTL: i32 = 144;
pub(super) const TAG_SYNC_MAXLEN: i32 = 145;
pub(super) const TAG_TUN_INFO: i32 = 146;
pub(super) const TAG_TUN_TYPE: i32 = 147;
pub(super) const TAG_TUN_PORT: i32 = 148;
pub(super) const TAG_TUN_NOCSUM: i32 = 149;
pub(super) const TAG_TUN_CSUM: i32 = 150;
pub(super) const TAG_TUN_REMCSUM: i32 = 151;

pub(super) const fn o(long: &'static str, short: Option<char>, arg: ArgKind, val: i32) -> OptDef {
    OptDef {
        long,
        short,
        arg,
        val,
    }
}
pub(super) const N: ArgKind = ArgKind::None;
pub(super) const R: ArgKind = ArgKind::Required;

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

pub(super) fn fail(code: i32, msg: impl Into<String>) -> Exit {
    let mut m = msg.into();
    m.push('\n');
    Exit {
        code,
        stdout: String::new(),
        stderr: m,
        soft: false,
    }
}

pub(super) fn tryhelp(program: &str) -> Exit {
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
