//! Connection timeouts, sync daemons and the module's info.

use std::net::IpAddr;

use serde::{Deserialize, Serialize};

use super::consts::*;

/// Connection timeouts in seconds (`--set tcp tcpfin udp`; 0 = unchanged
/// when setting).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Timeouts {
    /// Established TCP.
    pub tcp: u32,
    /// TCP after FIN.
    pub tcp_fin: u32,
    /// UDP.
    pub udp: u32,
}

/// State (role) of a connection synchronisation daemon.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DaemonState {
    /// Sends sync messages.
    Master,
    /// Receives sync messages.
    Backup,
}

impl DaemonState {
    /// Wire value.
    pub fn to_raw(self) -> u32 {
        match self {
            DaemonState::Master => IP_VS_STATE_MASTER,
            DaemonState::Backup => IP_VS_STATE_BACKUP,
        }
    }
    /// `master` / `backup`.
    pub fn name(self) -> &'static str {
        match self {
            DaemonState::Master => "master",
            DaemonState::Backup => "backup",
        }
    }
}

/// A connection synchronisation daemon.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SyncDaemon {
    /// Master or backup.
    pub state: DaemonState,
    /// Multicast interface (default `eth0` in ipvsadm).
    pub mcast_ifn: String,
    /// Sync id 0..255.
    pub sync_id: u32,
    /// Maximum sync message length.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sync_maxlen: Option<u16>,
    /// Multicast group (IPv4 or IPv6).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mcast_group: Option<IpAddr>,
    /// UDP port.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mcast_port: Option<u16>,
    /// Multicast TTL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mcast_ttl: Option<u8>,
}

impl SyncDaemon {
    /// A daemon with the given role on an interface, sync id 0.
    pub fn new(state: DaemonState, mcast_ifn: &str) -> SyncDaemon {
        SyncDaemon {
            state,
            mcast_ifn: mcast_ifn.into(),
            sync_id: 0,
            sync_maxlen: None,
            mcast_group: None,
            mcast_port: None,
            mcast_ttl: None,
        }
    }
}

/// `IPVS_CMD_GET_INFO`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Info {
    /// Version code, e.g. 0x010201.
    pub version: u32,
    /// Connection hash table size.
    pub conn_tab_size: u32,
}

impl Info {
    /// `major.minor.patch`.
    pub fn version_string(&self) -> String {
        format!(
            "{}.{}.{}",
            (self.version >> 16) & 0xff,
            (self.version >> 8) & 0xff,
            self.version & 0xff
        )
    }
}
