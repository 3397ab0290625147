//! # ipvsctl
//!
//! A netlink-based replacement for `ipvsadm`: a library used by the
//! `keepalive` daemon and the `ipvsctl` binary.
//!
//! * [`ipvs`]: a typed client for the kernel's `IPVS` generic netlink family
//!   ([`ipvs::Client`], [`ipvs::Service`], [`ipvs::Dest`], [`ipvs::Timeouts`],
//!   [`ipvs::SyncDaemon`], [`ipvs::Info`], pipelined batches with
//!   [`ipvs::Client::execute`]).
//! * [`vmwlch`]: the client of the `VMWLCH` family of the `ip_vs_vmwlch`
//!   kernel module (the VM-to-host map of the `vmwlc`/`vmwlch` schedulers).
//! * [`config`]: the declarative YAML model (`services:` and `hosts:`),
//!   validation with line:column errors, [`config::plan`] and
//!   [`config::apply`].
//! * [`format`]: ipvsadm-identical listing and `-S` save formatting (pure
//!   functions, tested against golden text).
//! * [`compat`]: the ipvsadm 1.31 command-line surface (used when the binary
//!   runs as `ipvsadm`, or as `ipvsctl` with ipvsadm-style options).
//! * [`conn`]: connection entries parsed from `/proc/net/ip_vs_conn`.
//!
//! ## Netlink stack
//!
//! One stack for everything: the rust-netlink crates (`netlink-sys` for the
//! socket, `netlink-packet-core` for framing and the NLA traits,
//! `netlink-packet-generic` for the generic netlink header and family
//! resolution) - the same crates `keepalive` uses for rtnetlink
//! (`netlink-packet-route`), so the workspace carries one netlink
//! implementation. No published crate models the IPVS or VMWLCH families
//! completely and safely (`netlink-packet-ipvs` 0.0.1 panics on unknown
//! scheduler names and has no daemon/config/info/zero/flush), so their
//! attributes are encoded here on top of `netlink-packet-core`'s `Nla`
//! trait and buffers ([`netlink::Attr`], [`netlink::Attrs`]).
//!
//! One socket per process, each family resolved once, and bulk changes
//! pipelined: many requests per `sendmsg` with distinct sequence numbers,
//! a bounded window of unacknowledged requests, each ACK (with the kernel's
//! extended-ACK message) mapped back to its request.
#![warn(missing_docs)]

pub mod cli;
pub mod compat;
pub mod config;
pub mod conn_format;
pub mod format;
pub mod names;
