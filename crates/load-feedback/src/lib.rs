//! Load feedback: what a host agent reports about its physical host, and
//! the controller that turns those reports into host weights.
//!
//! The director polls each host's agent like a health check
//! ([`Report::parse`] validates what it gets), feeds the result to a
//! [`Controller`], and writes the weights it returns (vmwlch host weights,
//! or per-destination wlc weights on a kernel without the module). The
//! controller is deliberately slow and conservative: smoothed load, a
//! bounded step per period, a dead band before any write, and a report
//! that stops coming freezes the weight, then decays it to the static one;
//! a host without an agent keeps its static weight.

#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod balance;
mod controller;
mod fetch;
mod report;

pub use balance::{BalanceDest, BalanceParams, ConnBalance};
pub use controller::{Controller, HostStats, Params, REFERENCE};
pub use fetch::{fetch, FetchError};
pub use report::{BadReport, Report, VmLoad, MAX_REPORT_BYTES, MAX_VMS};
