//! The host agent's measurements: CPU use and pressure (PSI) of the
//! physical host and of each VM's cgroup, read from procfs and cgroup v2
//! files, turned into [`load_feedback::Report`]s.
//!
//! Readings are cumulative counters; a [`Sampler`] keeps the previous one
//! and reports the rates over the interval between two samples. [`serve`]
//! answers on the agent's TCP port: HAProxy's agent-check line, or the JSON
//! report for a director.

#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod procfs;
mod sampler;
mod serve;
mod vms_file;

pub use procfs::{
    cgroup_capacity, cgroup_usage_usec, cpu_times, psi_some_avg10, CpuTimes, ReadError,
};
pub use sampler::{Sampler, VmSource};
pub use serve::{serve, Latest, MAX_CONNECTIONS};
pub use vms_file::{parse_vm, parse_vms, VmsFile};
