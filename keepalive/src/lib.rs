//! keepalive: VRRPv3 front-end failover for IPVS directors.
//!
//! * [`vrrp::packet`]: the VRRPv3 codec (IPv4/IPv6, both IPv4 checksum forms);
//! * [`vrrp::machine`]: the sans-IO protocol state machine;
//! * [`config`]: the YAML file with located errors;
//! * [`daemon`]: the thin IO layer (raw sockets, rtnetlink, GARP/NA, signals);
//! * [`health`]: real-server checks; [`ipvs`]: the IPVS side behind a trait;
//! * [`metrics`]: Prometheus text endpoint; [`sdnotify`]: systemd readiness;
//! * [`realtime`]: SCHED_FIFO and mlockall for the event loop.
pub mod announce;
pub mod config;
pub mod daemon;
pub mod health;
pub mod ipvs;
pub mod metrics;
pub mod realtime;
pub mod rtnl;
pub mod sdnotify;
pub mod sys;
pub mod vrrp;
