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

mod action_from;
mod actions;
mod args;
mod checks;
mod options;
pub mod popt;
mod process;
mod run;
mod scan;
#[cfg(test)]
mod tests;
mod usage;

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

use actions::*;
pub use actions::{ipvs_strerror, Action, Func, KOp, ListReq};
pub use args::inet_aton;
use args::*;
use checks::{check, forward_method};
use options::*;
pub use options::{Cmd, Key, Num, Opt, OPTIONS};
pub use process::process_options;
pub use run::{main, run, Compat, ExitCode, Out, StdOut};
use scan::LowArgs;
use usage::*;
pub use usage::{usage, Exit};
