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

mod service;
mod sort;
mod tables;
#[cfg(test)]
mod tests;
mod text;

pub use service::*;
pub use sort::*;
pub use tables::*;
pub use text::*;

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
