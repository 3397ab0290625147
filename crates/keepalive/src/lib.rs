//! keepalive: VRRPv3 front-end failover for IPVS directors.
//!
//! The protocol itself (codec and sans-IO state machine) is the [`vrrp`]
//! crate; this crate is the IO around it:
//!
//! * [`config`]: the YAML file with located errors;
//! * [`daemon`]: the IO around the VRRP machines, one file per job;
//! * [`source`]: where the desired IPVS state comes from;
//! * [`health`]: real-server checks; [`ipvs`]: the IPVS side behind a trait;
//! * [`metrics`]: Prometheus text endpoint; [`sdnotify`]: systemd readiness;
//! * [`pidfile`]: `--pid-file`, and `keepalive drain|resume` that read it;
//! * [`bird`]: BIRD 2 as the BGP speaker for the `bgp:` section;
//! * [`realtime`]: SCHED_FIFO and mlockall for the event loop.

// The library exists for the binary and its tests: module overviews link to
// the private modules a reader goes on to, on purpose.
#![allow(rustdoc::private_intra_doc_links)]
pub mod announce;
pub mod bird;
pub mod config;
pub mod daemon;
pub mod feedback;
pub mod health;
pub mod http;
pub mod ipvs;
pub mod metrics;
pub mod pidfile;
pub mod realtime;
pub mod rtnl;
pub mod sdnotify;
pub mod source;
pub mod sys;
