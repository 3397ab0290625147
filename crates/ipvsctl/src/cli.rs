//! The modern command line (`ipvsctl service|dest|list|conn|host|apply|plan|save|...`)
//! and the dispatch between it and the ipvsadm-compatible syntax.
//!
//! Exit codes: 0 success; 1 a kernel or I/O error (etcd unreachable too); 2 a usage error or an
//! invalid file; 3 an apply that failed part-way (the report says which
//! steps were applied).

#![allow(missing_docs)] // clap argument structs: their docs are the help texts

use std::io::Read;
use std::net::IpAddr;
use std::path::PathBuf;

use clap::{Args, CommandFactory, Parser, Subcommand, ValueEnum};
use serde::Serialize;

mod args;
mod dispatch;
mod etcd;
#[cfg(test)]
mod tests;
mod values;
mod view;

pub use args::*;
use dispatch::*;
use values::*;
pub use values::{parse_addr_port, Fail};
use view::*;
pub use view::{service_view, DestView, ServiceView, TunnelView};

use crate::format;
use ipvs_cluster as cluster;
use ipvs_netlink::conn;
use ipvs_netlink::ipvs::{
    Client, DaemonState, Dest, Error, Family, Forward, Netmask, Protocol, Service, ServiceKey,
    Stats, SyncDaemon, Timeouts, TunnelCsum, TunnelType,
};
use ipvs_netlink::vmwlch::{self, HostMap};
use ipvs_netlink::Netlink;

/// Words that select the modern interface when they come first.
const SUBCOMMANDS: &[&str] = &[
    "service",
    "dest",
    "list",
    "conn",
    "host",
    "apply",
    "plan",
    "save",
    "status",
    "timeout",
    "daemon",
    "zero",
    "flush",
    "info",
    "completions",
    "man",
    "help",
    "--help",
    "--version",
    "-V",
];

/// Entry point of the binary: `ipvsadm` (by `argv[0]`) or ipvsadm-style
/// options run the compatible interface; subcommands the modern one.
pub fn main(argv: Vec<String>) -> i32 {
    let prog = argv
        .first()
        .map(|a| a.rsplit('/').next().unwrap_or(a).to_string())
        .unwrap_or_default();
    if prog.starts_with("ipvsadm") {
        return crate::compat::main(&argv);
    }
    match argv.get(1) {
        None => run_modern(vec![argv[0].clone(), "list".into()]),
        Some(a) if SUBCOMMANDS.contains(&a.as_str()) || a == "-h" => run_modern(argv),
        Some(_) => crate::compat::main(&argv),
    }
}
