//! Discrete-event simulator of the experiments of the study the `vmwlc` and
//! `vmwlch` schedulers come from (5 hosts, 20 VMs, a sensor ingest service
//! and a bursty web dashboard service), comparing WLC, VMWLC and VMWLC/H
//! with the real selection code of the kernel module (`vmwlch-core`).
//!
//! * [`rng`]: seeded PRNG and demand distributions;
//! * [`model`]: hosts, VMs, placements, workloads, the study's calibration;
//! * [`sched`]: the policies wired to `vmwlch_core::select`;
//! * [`engine`]: the event engine (processor sharing per host) and metrics;
//! * [`report`]: the experiment grid, tables, CSV and the markdown report.

#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod engine;
pub mod model;
pub mod report;
pub mod rng;
pub mod sched;
pub mod text;

pub use engine::{simulate, Summary, SvcStats};
pub use model::{Calibration, Config, Placement, Scenario};
pub use sched::Policy;
