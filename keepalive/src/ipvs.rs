//! The IPVS side of a front end, behind a small trait so the daemon and its
//! tests do not depend on a kernel with IPVS.

use std::net::SocketAddr;

use crate::config::OnFailure;

/// Role of the kernel connection-sync daemon.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SyncRole {
    Master,
    Backup,
}

/// A destination whose health check failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DownDest {
    pub dest: SocketAddr,
    /// Only in this service (virtual address:port), or in every service.
    pub service: Option<SocketAddr>,
    pub action: OnFailure,
}

pub trait IpvsBackend {
    /// Bring the kernel's services and host map to the `services:`/`hosts:`
    /// document, with the failed destinations quiesced or removed.
    /// Idempotent; called at start, on reload and on every health change.
    fn apply(&mut self, doc: Option<&str>, down: &[DownDest]) -> anyhow::Result<()>;
    /// Run the sync daemon in `role` (stopping the other role) on `iface`.
    fn sync_role(&mut self, role: SyncRole, iface: &str, syncid: u8) -> anyhow::Result<()>;
    /// Stop both sync daemons.
    fn sync_stop(&mut self) -> anyhow::Result<()>;
}

/// Used when there is nothing to manage (no `services:`, no `ipvs_sync`) or
/// IPVS is unavailable: logs what it would do.
#[derive(Debug, Default)]
pub struct NullBackend;

impl IpvsBackend for NullBackend {
    fn apply(&mut self, doc: Option<&str>, down: &[DownDest]) -> anyhow::Result<()> {
        if doc.is_some() {
            tracing::warn!(down = down.len(), "no IPVS backend: services/hosts not applied");
        }
        Ok(())
    }
    fn sync_role(&mut self, role: SyncRole, iface: &str, syncid: u8) -> anyhow::Result<()> {
        tracing::debug!(?role, iface, syncid, "no IPVS backend: sync daemon not changed");
        Ok(())
    }
    fn sync_stop(&mut self) -> anyhow::Result<()> {
        Ok(())
    }
}
