//! # ipvs-netlink
//!
//! The kernel side of the toolkit, without any command line or file
//! format: what `ipvsctl`, `ipvs-cluster` and `keepalive` use to talk to
//! the kernel.
//!
//! * [`Netlink`]: the netlink engine. One socket per protocol, sequence
//!   numbers, the request/ACK loop with the kernel's extended ACK messages,
//!   dumps read in place from the receive buffer (`recvmmsg`), and
//!   pipelined batches (many requests per `sendmsg`, a bounded window of
//!   unacknowledged ones, each ACK mapped back to its request). Any
//!   `netlink-packet-core` payload goes through it: generic netlink
//!   ([`genl`]: the IPVS and VMWLCH families) and rtnetlink
//!   (`netlink_packet_route::RouteNetlinkMessage`, see [`engine`]).
//! * [`ipvs`]: a typed client of the kernel's `IPVS` family
//!   ([`ipvs::Client`], [`ipvs::Service`], [`ipvs::Dest`], pipelined
//!   [`ipvs::Op`] batches), its wire codec and constants.
//! * [`vmwlch`]: the client of the `VMWLCH` family of the `ip_vs_vmwlch`
//!   module (the VM-to-host map); its constants live in one file,
//!   [`vmwlch::uapi`], checked against the module's uapi header.
//! * [`conn`]: the connection table (`/proc/net/ip_vs_conn`: the kernel
//!   has no netlink dump of connections).
//!
//! The rust-netlink crates provide the socket (`netlink-sys`), framing and
//! NLA traits (`netlink-packet-core`) and the generic netlink header and
//! controller (`netlink-packet-generic`). No published crate models the
//! IPVS or VMWLCH families completely and safely (`netlink-packet-ipvs`
//! 0.0.1 panics on unknown scheduler names and has no daemon, config,
//! info, zero or flush), so their attributes are encoded here with
//! [`Attr`] and decoded with [`Attrs`].
#![warn(missing_docs)]

pub mod attr;
pub mod conn;
pub mod engine;
mod error;
pub mod genl;
pub mod ipvs;
mod message;
pub mod vmwlch;

pub use attr::{Attr, Attrs};
pub use engine::Netlink;
pub use error::{strerror, Error};
pub use genl::{FamilyName, GenlBody};
