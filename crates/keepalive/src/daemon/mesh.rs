//! Full-mesh IPVS connection sync (`bgp.ipvs_sync`): the kernel's sync
//! daemon runs as master and as backup at once on every active-active
//! director, from start to shutdown. Health, withdrawals and drain leave it
//! alone: a flow that ECMP moves to another director must find its entry
//! there, and the drained director must keep learning the others' flows.

use tracing::info;

use super::Daemon;
use crate::config::{Config, MeshSync};
use crate::ipvs::SyncRole;
use crate::metrics::{Labels, G};

fn role_labels(role: SyncRole) -> Labels {
    let r = match role {
        SyncRole::Master => "master",
        SyncRole::Backup => "backup",
    };
    vec![("role", r.to_string())]
}

fn wanted(cfg: &Config) -> Option<MeshSync> {
    cfg.bgp.as_ref().and_then(|b| b.ipvs_sync.clone())
}

impl Daemon {
    /// Start both roles (at start, or when a reload adds or changes them).
    fn run_mesh(&mut self, m: MeshSync) {
        info!(
            interface = %m.interface,
            syncid = m.syncid.0,
            "IPVS sync daemon: starting master and backup (full mesh)"
        );
        for role in [SyncRole::Master, SyncRole::Backup] {
            self.metrics.set(G::IpvsSyncMesh, role_labels(role), 0);
        }
        self.ipvs.sync_mesh(&m.interface.0, m.syncid.0);
        self.mesh = Some(m);
    }

    pub(super) fn start_mesh(&mut self, cfg: &Config) {
        if let Some(m) = wanted(cfg) {
            self.run_mesh(m);
        }
    }

    /// A role started, or failed to (the worker logs why and retries).
    pub(super) fn on_mesh(&mut self, role: SyncRole, ok: bool) {
        if self.mesh.is_none() {
            return; // from before a reload removed it
        }
        let l = role_labels(role);
        let was = self.metrics.gauge(G::IpvsSyncMesh, &l);
        if ok && was == 0 {
            info!(?role, "IPVS mesh sync daemon running");
        }
        self.metrics.set(G::IpvsSyncMesh, l, i64::from(ok));
    }

    /// Reload, before the VRRP instances change: a removed mesh stops, so
    /// that an instance taking over `ipvs_sync` starts from nothing.
    pub(super) fn mesh_reload_stop(&mut self, new: &Config) {
        if self.mesh.is_some() && wanted(new).is_none() {
            info!("reload: bgp.ipvs_sync removed; stopping both IPVS sync daemons");
            self.ipvs.sync_stop();
            self.mesh = None;
        }
    }

    /// Reload, after the VRRP instances changed (one giving up
    /// `ipvs_sync` stops the daemons): a new or changed mesh starts; an
    /// unchanged one is left alone.
    pub(super) fn mesh_reload_start(&mut self, new: &Config) {
        if let Some(m) = wanted(new).filter(|m| self.mesh.as_ref() != Some(m)) {
            self.run_mesh(m);
        }
    }

    /// Its `role` series are kept by a reload while the mesh runs.
    pub(super) fn mesh_owns(&self, owner: &str) -> bool {
        self.mesh.is_some() && (owner == "master" || owner == "backup")
    }

    /// Shutdown, after BGP's withdrawal: until then, flows still arrive.
    pub(super) fn stop_mesh(&mut self) {
        if self.mesh.take().is_some() {
            info!("stopping both IPVS sync daemons");
            self.ipvs.sync_stop();
        }
    }
}
