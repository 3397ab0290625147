//! ipvsadm's tables, typed: the commands ([`Cmd`]) and options ([`Opt`])
//! with their names and the `commands_v_options` legality table, the
//! tunnel-type table, and the popt option table ([`OPTIONS`]) with what
//! each entry stands for ([`Key`]).

use super::*;

pub(super) const MAX_TIMEOUT: i64 = 86400 * 31;
pub(super) const DEF_SCHED: &str = "wlc";
pub(super) const DEF_MCAST_IFN: &str = "eth0";
pub(super) const PERSISTENT_TIMEOUT: u32 = 6 * 60;

/// Declares [`Cmd`] (ipvsadm's `CMD_*`, in its order) with each command's
/// name for messages and its row of the legality table.
macro_rules! commands {
    ($($cmd:ident $name:literal $row:literal,)*) => {
        /// An ipvsadm command (`CMD_*`), chosen by the first option.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum Cmd {
            $(#[doc = concat!("`", $name, "`")] $cmd,)*
        }

        impl Cmd {
            /// Its name in messages (`cmdnames`).
            pub const fn name(self) -> &'static str {
                match self {
                    $(Cmd::$cmd => $name,)*
                }
            }

            /// Its row of the legality table, one byte per [`Opt`].
            pub(super) const fn row(self) -> &'static [u8; NUMBER_OF_OPT] {
                CMD_V_OPT[self as usize]
            }
        }

        /// `commands_v_options` of ipvsadm.c, one row per command (`+`
        /// compulsory, `x` illegal, `1` exclusive, space optional), columns
        /// in [`Opt`] order (generated from the C table).
        pub(super) const CMD_V_OPT: [&[u8; NUMBER_OF_OPT]; 14] = [$($row,)*];
    };
}

commands! {
    Add "add-service" b"xx+   xxxxxxxxxxxxxxx   xxxxxxxxxx",
    Edit "edit-service" b"xx+   xxxxxxxxxxxxxxx   xxxxxxxxxx",
    Del "delete-service" b"xx+xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
    Flush "flush" b"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
    List "list" b" 11xxxxxxxxx11       xxxxxxx xxxxx",
    AddDest "add-server" b"xx+xxx+    xxxxxxxxxxxxxxxxxx     ",
    DelDest "delete-server" b"xx+xxx+xxxxxxxxxxxxxxxxxxxxxxxxxxx",
    EditDest "edit-server" b"xx+xxx+    xxxxxxxxxxxxxxxxxx     ",
    Timeout "set" b"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
    StartDaemon "start-daemon" b"xxxxxxxxxxx xxxxxxx xxxx    xxxxxx",
    StopDaemon "stop-daemon" b"xxxxxxxxxxxxxxxxxxx xxxxxxxxxxxxxx",
    Restore "restore" b"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
    Save "save" b" xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
    Zero "zero" b"xx xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
}

pub(super) const NUMBER_OF_OPT: usize = 34;

/// Declares [`Opt`] (ipvsadm's `OPTC_*`) in the column order of the
/// legality table, with each option's name for messages (`optnames`).
macro_rules! options {
    ($($opt:ident $name:literal,)*) => {
        /// An ipvsadm option (`OPTC_*`): a column of the legality table.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum Opt {
            $(#[doc = concat!("`", $name, "`")] $opt,)*
        }

        impl Opt {
            /// Every option, in column order.
            pub const ALL: [Opt; NUMBER_OF_OPT] = [$(Opt::$opt,)*];

            /// Its name in messages (`optnames`).
            pub const fn name(self) -> &'static str {
                match self {
                    $(Opt::$opt => $name,)*
                }
            }
        }
    };
}

options! {
    Numeric "numeric",
    Connection "connection",
    Service "service-address",
    Scheduler "scheduler",
    Persistent "persistent",
    Netmask "netmask",
    Server "real-server",
    Forward "forwarding-method",
    Weight "weight",
    UThreshold "u-threshold",
    LThreshold "l-threshold",
    Mcast "mcast-interface",
    Timeout "timeout",
    Daemon "daemon",
    Stats "stats",
    Rate "rate",
    Thresholds "thresholds",
    PersistentConn "persistent-conn",
    NoSort "nosort",
    SyncId "syncid",
    Exact "exact",
    OnePacket "ops",
    PersistenceEngine "pe",
    SchedFlags "sched-flags",
    McastGroup "mcast-group",
    McastPort "mcast-port",
    McastTtl "mcast-ttl",
    SyncMaxlen "sync-maxlen",
    TunInfo "tun-info",
    TunType "tun-type",
    TunPort "tun-port",
    TunNocsum "tun-nocsum",
    TunCsum "tun-csum",
    TunRemcsum "tun-remcsum",
}

/// A set of options (ipvsadm's `options` bit mask), one bit per [`Opt`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(super) struct OptSet(u64);

impl OptSet {
    /// The set of `opts`.
    pub(super) const fn of(opts: &[Opt]) -> OptSet {
        let mut bits = 0;
        let mut i = 0;
        while i < opts.len() {
            bits |= OptSet::bit(opts[i]);
            i += 1;
        }
        OptSet(bits)
    }

    const fn bit(opt: Opt) -> u64 {
        1 << opt as u32
    }

    pub(super) fn contains(self, opt: Opt) -> bool {
        self.0 & OptSet::bit(opt) != 0
    }

    /// Adds `opt`; false if it was already there.
    pub(super) fn insert(&mut self, opt: Opt) -> bool {
        let had = self.contains(opt);
        self.0 |= OptSet::bit(opt);
        !had
    }

    /// Whether any option of `other` is in the set.
    pub(super) fn intersects(self, other: OptSet) -> bool {
        self.0 & other.0 != 0
    }
}

/// The legality of `opt` with `cmd` (`+`, `x`, `1` or space).
#[cfg(test)]
pub(super) fn legality(cmd: Cmd, opt: Opt) -> u8 {
    cmd.row()[opt as usize]
}

/// `tunnel_types_v_options` over [`TUNOPTS`], one row per tunnel type.
pub(super) const TUN_V_OPT: [[u8; 4]; 3] = [*b"xxxx", *b"+111", *b"x11x"];
pub(super) const TUNOPTS: [Opt; 4] = [Opt::TunPort, Opt::TunNocsum, Opt::TunCsum, Opt::TunRemcsum];
pub(super) const TUNNAMES: [&str; 3] = ["ipip", "gue", "gre"];

/// What an entry of [`OPTIONS`] stands for: the value popt returns for it
/// (ipvsadm's `'A'` or `TAG_*` codes), grouped by what the option does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Key {
    /// A command (`-A`, `-L`/`-l`, `--set`, `--start-daemon`, ...).
    Cmd(Cmd),
    /// `-h`.
    Help,
    /// `-v`.
    Version,
    /// `-t`/`-u`/`--sctp-service`, with the protocol number.
    Service(u16),
    /// `-f`.
    Fwmark,
    /// `-6`.
    Ipv6,
    /// `-s`.
    Scheduler,
    /// `-p`.
    Persistent,
    /// `-M`.
    Netmask,
    /// `--pe`.
    PersistenceEngine,
    /// `-o`.
    OnePacket,
    /// `-b`.
    SchedFlags,
    /// `-r`.
    RealServer,
    /// `-g`/`-i`/`-m`, with the forwarding method's connection flags.
    Forward(u32),
    /// An option taking a bounded number.
    Number(Num),
    /// `--mcast-interface`.
    McastInterface,
    /// `--mcast-group`.
    McastGroup,
    /// A listing option (`-n`, `-c`, `--stats`, ...), with its output
    /// format bit (none for `-c`, `--timeout` and `--daemon`).
    Listing(Opt, u32),
    /// `--sort` (accepted, does nothing).
    Sort,
    /// `--tun-type`.
    TunType,
    /// `--tun-nocsum`/`--tun-csum`/`--tun-remcsum`, with the encapsulation flag.
    TunCsum(Opt, u16),
}

/// The options taking a bounded number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Num {
    /// `-w`.
    Weight,
    /// `-x`.
    UThreshold,
    /// `-y`.
    LThreshold,
    /// `--syncid`.
    SyncId,
    /// `--mcast-port`.
    McastPort,
    /// `--mcast-ttl`.
    McastTtl,
    /// `--sync-maxlen`.
    SyncMaxlen,
    /// `--tun-port`.
    TunPort,
}

impl Num {
    /// The option, its bounds (inclusive) and its name in `illegal <name>
    /// specified`.
    pub(super) const fn spec(self) -> (Opt, i64, i64, &'static str) {
        const INT_MAX: i64 = i32::MAX as i64;
        match self {
            // Debian's ipvsadm takes weights up to INT_MAX (bug #814348).
            Num::Weight => (Opt::Weight, 0, INT_MAX, "weight"),
            Num::UThreshold => (Opt::UThreshold, 0, INT_MAX, "u_threshold"),
            Num::LThreshold => (Opt::LThreshold, 0, INT_MAX, "l_threshold"),
            Num::SyncId => (Opt::SyncId, 0, 255, "syncid"),
            Num::McastPort => (Opt::McastPort, 1, 65535, "mcast-port"),
            Num::McastTtl => (Opt::McastTtl, 1, 255, "mcast-ttl"),
            // An IPv4 datagram less its IP and UDP headers.
            Num::SyncMaxlen => (Opt::SyncMaxlen, 1, 65535 - 20 - 8, "sync-maxlen"),
            Num::TunPort => (Opt::TunPort, 1, 65535, "tunnel port"),
        }
    }
}

const fn o(long: &'static str, short: Option<char>, arg: ArgKind, val: Key) -> OptDef<Key> {
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
#[rustfmt::skip]
pub const OPTIONS: &[OptDef<Key>] = &[
    o("add-service", Some('A'), N, Key::Cmd(Cmd::Add)),
    o("edit-service", Some('E'), N, Key::Cmd(Cmd::Edit)),
    o("delete-service", Some('D'), N, Key::Cmd(Cmd::Del)),
    o("clear", Some('C'), N, Key::Cmd(Cmd::Flush)),
    o("list", Some('L'), N, Key::Cmd(Cmd::List)),
    o("list", Some('l'), N, Key::Cmd(Cmd::List)),
    o("zero", Some('Z'), N, Key::Cmd(Cmd::Zero)),
    o("add-server", Some('a'), N, Key::Cmd(Cmd::AddDest)),
    o("edit-server", Some('e'), N, Key::Cmd(Cmd::EditDest)),
    o("delete-server", Some('d'), N, Key::Cmd(Cmd::DelDest)),
    o("set", None, N, Key::Cmd(Cmd::Timeout)),
    o("help", Some('h'), N, Key::Help),
    o("version", Some('v'), N, Key::Version),
    o("restore", Some('R'), N, Key::Cmd(Cmd::Restore)),
    o("save", Some('S'), N, Key::Cmd(Cmd::Save)),
    o("start-daemon", None, R, Key::Cmd(Cmd::StartDaemon)),
    o("stop-daemon", None, R, Key::Cmd(Cmd::StopDaemon)),
    o("tcp-service", Some('t'), R, Key::Service(IPPROTO_TCP)),
    o("udp-service", Some('u'), R, Key::Service(IPPROTO_UDP)),
    o("sctp-service", None, R, Key::Service(IPPROTO_SCTP)),
    o("fwmark-service", Some('f'), R, Key::Fwmark),
    o("scheduler", Some('s'), R, Key::Scheduler),
    o("persistent", Some('p'), ArgKind::Optional, Key::Persistent),
    o("netmask", Some('M'), R, Key::Netmask),
    o("real-server", Some('r'), R, Key::RealServer),
    o("masquerading", Some('m'), N, Key::Forward(IP_VS_CONN_F_MASQ)),
    o("ipip", Some('i'), N, Key::Forward(IP_VS_CONN_F_TUNNEL)),
    o("gatewaying", Some('g'), N, Key::Forward(IP_VS_CONN_F_DROUTE)),
    o("weight", Some('w'), R, Key::Number(Num::Weight)),
    o("u-threshold", Some('x'), R, Key::Number(Num::UThreshold)),
    o("l-threshold", Some('y'), R, Key::Number(Num::LThreshold)),
    o("numeric", Some('n'), N, Key::Listing(Opt::Numeric, FMT_NUMERIC)),
    o("connection", Some('c'), N, Key::Listing(Opt::Connection, 0)),
    o("mcast-interface", None, R, Key::McastInterface),
    o("syncid", None, R, Key::Number(Num::SyncId)),
    o("timeout", None, N, Key::Listing(Opt::Timeout, 0)),
    o("daemon", None, N, Key::Listing(Opt::Daemon, 0)),
    o("stats", None, N, Key::Listing(Opt::Stats, FMT_STATS)),
    o("rate", None, N, Key::Listing(Opt::Rate, FMT_RATE)),
    o("thresholds", None, N, Key::Listing(Opt::Thresholds, FMT_THRESHOLDS)),
    o("persistent-conn", None, N, Key::Listing(Opt::PersistentConn, FMT_PERSISTENTCONN)),
    o("nosort", None, N, Key::Listing(Opt::NoSort, FMT_NOSORT)),
    o("sort", None, N, Key::Sort),
    o("exact", Some('X'), N, Key::Listing(Opt::Exact, FMT_EXACT)),
    o("ipv6", Some('6'), N, Key::Ipv6),
    o("ops", Some('o'), N, Key::OnePacket),
    o("pe", None, R, Key::PersistenceEngine),
    o("sched-flags", Some('b'), R, Key::SchedFlags),
    o("mcast-group", None, R, Key::McastGroup),
    o("mcast-port", None, R, Key::Number(Num::McastPort)),
    o("mcast-ttl", None, R, Key::Number(Num::McastTtl)),
    o("sync-maxlen", None, R, Key::Number(Num::SyncMaxlen)),
    o("tun-info", None, N, Key::Listing(Opt::TunInfo, FMT_TUN_INFO)),
    o("tun-type", None, R, Key::TunType),
    o("tun-port", None, R, Key::Number(Num::TunPort)),
    o("tun-nocsum", None, N, Key::TunCsum(Opt::TunNocsum, IP_VS_TUNNEL_ENCAP_FLAG_NOCSUM)),
    o("tun-csum", None, N, Key::TunCsum(Opt::TunCsum, IP_VS_TUNNEL_ENCAP_FLAG_CSUM)),
    o("tun-remcsum", None, N, Key::TunCsum(Opt::TunRemcsum, IP_VS_TUNNEL_ENCAP_FLAG_REMCSUM)),
];
