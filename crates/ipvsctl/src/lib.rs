//! # ipvsctl
//!
//! The command line of the toolkit: the ipvsadm-compatible surface and the
//! modern subcommands, on top of `ipvs-netlink` (the kernel interface) and
//! `ipvs-cluster` (the cluster file: validation, plan, apply).
//!
//! * [`cli`]: the modern subcommands, JSON/YAML views;
//! * [`compat`]: the ipvsadm 1.31 command-line surface (used when the binary
//!   runs as `ipvsadm`, or as `ipvsctl` with ipvsadm-style options);
//! * [`format`](mod@format): ipvsadm-identical listing and `-S` save formatting (pure
//!   functions, tested against golden text);
//! * [`conn_format`]: the connection listing (`-Lc`);
//! * [`names`]: host and service name lookups for non-numeric listings.
#![warn(missing_docs)]

pub mod cli;
pub mod compat;
pub mod conn_format;
pub mod format;
pub mod names;
