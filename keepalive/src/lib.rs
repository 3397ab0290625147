//! keepalive: VRRPv3 front-end failover for IPVS directors.
pub mod config;
pub mod vrrp;
