//! # ipvs-cluster
//!
//! The declarative cluster model: virtual services with their real
//! servers, and the VMWLCH host map (physical hosts, their weights, the VMs
//! on each). `ipvsctl apply`/`plan`/`save` and the keepalive daemon use it;
//! both hand it typed values and get typed values back.
//!
//! * [`spec`]: the file as written (serde types for `services:`, `hosts:`,
//!   `options:`);
//! * [`yaml`]: YAML with positions: every error carries `line:column` and
//!   the path of its node;
//! * [`validate()`]: from the spec to the [`Desired`] state (typed IPVS
//!   services, real servers and hosts), reporting every problem;
//! * [`kernel`]: the kernel's current state, and that state as a spec
//!   (`save -o yaml`);
//! * [`plan()`]: the diff, ordered so that traffic is never black-holed;
//! * [`apply()`]: the plan run against the kernel, phase by phase.
//!
//! The cluster file:
//!
//! ```yaml
//! services:
//!   - protocol: tcp            # tcp | udp | sctp, or `fwmark: 7` (+ `family: inet6`)
//!     address: 10.0.0.1
//!     port: 80
//!     scheduler: vmwlch        # any name (custom schedulers exist)
//!     persistent: 300          # seconds; optional
//!     netmask: 255.255.255.0   # IPv4 mask, or an IPv6 prefix length
//!     pe: sip                  # persistence engine; optional
//!     sched_flags: [flag-1]    # flag-1..3, sh-fallback, sh-port, mh-fallback, mh-port
//!     one_packet: false        # UDP and fwmark services only
//!     dests:                   # alias: real_servers
//!       - address: 192.168.1.10
//!         port: 80             # default: the service port
//!         weight: 1            # default 1; 0 quiesces
//!         forward: route       # route (default) | masq | tunnel | local
//!         u_threshold: 0
//!         l_threshold: 0
//!         tunnel: {type: gue, port: 6080, csum: nocsum}   # forward: tunnel only
//! hosts:
//!   - name: host1
//!     weight: 1
//!     vms: [192.168.1.10, 192.168.1.11]
//! options:
//!   remove: delete             # or `drain`: removed real servers get weight 0
//!                              # first and are deleted once they have no
//!                              # connections left (by a later apply)
//! ```
//!
//! A section that is absent is not managed (`hosts:` missing leaves the host
//! map alone); an empty list (`hosts: []`) empties it.
//!
//! Another file can carry these sections (keepalive's does): it
//! deserialises them as [`spec`] types in its own pass and calls
//! [`check`] with its text, which locates the errors in that file.
#![warn(missing_docs)]

pub mod apply;
mod error;
pub mod kernel;
pub mod model;
pub mod plan;
pub mod spec;
mod validate;
pub mod yaml;

pub use apply::{apply, Outcome, Report};
pub use error::ConfigError;
pub use kernel::{from_state, read_current, Current};
pub use model::{Desired, ServiceEntry};
pub use plan::{phase, plan, Change, HostOp, Plan, Step};
pub use spec::{
    ClusterSpec, DestSpec, HostSpec, NetmaskSpec, Options, RemovePolicy, ServiceSpec, TunnelSpec,
};
pub use validate::validate;

/// Parse and validate a cluster file's text; every problem is reported,
/// each with its `line:column` and node path.
pub fn parse(text: &str) -> Result<(ClusterSpec, Desired), Vec<ConfigError>> {
    let spec = yaml::from_str::<Option<ClusterSpec>>(text)
        .map_err(|e| vec![e])?
        .unwrap_or_default();
    let desired = check(&spec, text)?;
    Ok((spec, desired))
}

/// Validate a spec read from `text` (a cluster file, or a larger file whose
/// top-level `services:`/`hosts:`/`options:` these are), errors located in
/// that text.
pub fn check(spec: &ClusterSpec, text: &str) -> Result<Desired, Vec<ConfigError>> {
    validate(spec).map_err(|errs| yaml::Positions::new(text).locate(errs))
}

#[cfg(test)]
mod tests;
