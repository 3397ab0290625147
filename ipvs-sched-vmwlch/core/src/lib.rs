//! Host-aware weighted least-connection selection of the `vmwlc` and
//! `vmwlch` IPVS schedulers.
//!
//! The selection lives in `ipvs-sched-vmwlch/src/select.rs`, which the kernel
//! module compiles too; this crate compiles the very same file for user space
//! (tests, simulator, tools). The lints below approximate the kernel build
//! (`-D warnings`, `missing_docs`, `unreachable_pub`, `rust_2018_idioms`) and
//! additionally forbid, inside the shared file, everything that could panic,
//! allocate or use floating point.
//!
//! With the `std` feature, [`oracle`] provides a brute-force reference.

#![no_std]
#![forbid(unsafe_code)]
#![deny(missing_docs, unreachable_pub, rust_2018_idioms, unused)]

#[cfg(feature = "std")]
extern crate std;

#[deny(
    clippy::arithmetic_side_effects,
    clippy::indexing_slicing,
    clippy::panic,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::unreachable,
    clippy::todo,
    clippy::unimplemented,
    clippy::float_arithmetic,
    clippy::missing_docs_in_private_items,
    clippy::undocumented_unsafe_blocks,
    clippy::std_instead_of_core,
    clippy::alloc_instead_of_core
)]
#[path = "../../src/select.rs"]
mod select;

pub use select::*;

#[cfg(feature = "std")]
pub mod oracle;
