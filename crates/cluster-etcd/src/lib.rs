//! # cluster-etcd
//!
//! One cluster state in etcd (v3 API), shared by a fleet of directors.
//! Under a key prefix `P`:
//!
//! * `P/cluster`: the cluster file as the user wrote it (YAML text, kept
//!   verbatim so `ipvsctl save --etcd` gives it back); it is validated
//!   before it is written, so every stored revision parsed once;
//! * `P/directors/<name>`: each director's applied state as JSON
//!   ([`DirectorState`]), bound to a lease that the director keeps alive:
//!   a director that stops or loses etcd drops out of the fleet by itself.
//!
//! [`Store`] does the single requests (store, read, list the fleet, publish);
//! [`watch`] follows `P/cluster` across connection losses; [`Publisher`]
//! keeps a director's key and lease alive.

mod error;
mod publish;
mod store;
pub mod testing;
mod watch;

pub use error::Error;
pub use publish::Publisher;
pub use store::{split_endpoints, DirectorState, Fleet, Member, Store, Stored, LEASE_TTL};
pub use watch::{watch, WatchEvent};

/// The `Result` of this crate.
pub type Result<T> = std::result::Result<T, Error>;
