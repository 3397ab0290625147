//! The IPVS side of a front end, behind a small trait so the daemon and its
//! tests do not depend on a kernel with IPVS.

use std::borrow::Cow;
use std::net::SocketAddr;

use ipvs_cluster::Desired;

use ipvs_netlink::ipvs::{DaemonState, SyncDaemon};

use crate::config::OnFailure;

/// The longest wait for the kernel's answer to one IPVS request: a lost
/// reply fails the request (retried on a fresh socket with back-off)
/// instead of holding every later apply behind it.
const REPLY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

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

/// What the daemon changes in the source's desired state before applying
/// it: health-check results and load feedback.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Overrides {
    /// Destinations whose health check failed.
    pub down: Vec<DownDest>,
    /// Weights and VM moves from the host agents (`load_feedback:`).
    pub feedback: Option<Feedback>,
}

pub trait IpvsBackend: Send {
    /// Bring the kernel's services and host map to the desired state, with
    /// the overrides: load feedback, then the failed destinations quiesced
    /// or removed. Idempotent; called at start, on reload, on every health
    /// change and on every weight load feedback writes.
    fn apply(&mut self, desired: Option<&Desired>, ov: &Overrides) -> anyhow::Result<()>;
    /// Run the sync daemon in `role` (stopping the other role) on `iface`.
    fn sync_role(&mut self, role: SyncRole, iface: &str, syncid: u8) -> anyhow::Result<()>;
    /// Run the sync daemon in `role` on `iface`, leaving the other role
    /// alone (both run at once for a full mesh). A daemon of this role with
    /// another interface or syncid is replaced; the same one is kept.
    fn sync_start(&mut self, role: SyncRole, iface: &str, syncid: u8) -> anyhow::Result<()>;
    /// Stop both sync daemons.
    fn sync_stop(&mut self) -> anyhow::Result<()>;
}

mod feedback;
mod worker;
pub use feedback::{override_feedback, resolved_mode, Feedback, FACTOR_SCALE, RESOLUTION};
pub use worker::{IpvsEvent, IpvsWorker, RETRY_FIRST, RETRY_MAX};

/// Used when there is nothing to manage (no `services:`, no `ipvs_sync`) or
/// IPVS is unavailable: logs what it would do.
#[derive(Debug, Default)]
pub struct NullBackend;

impl IpvsBackend for NullBackend {
    fn apply(&mut self, desired: Option<&Desired>, ov: &Overrides) -> anyhow::Result<()> {
        if desired.is_some() {
            tracing::warn!(
                down = ov.down.len(),
                "no IPVS backend: services/hosts not applied"
            );
        }
        Ok(())
    }
    fn sync_role(&mut self, role: SyncRole, iface: &str, syncid: u8) -> anyhow::Result<()> {
        tracing::debug!(
            ?role,
            iface,
            syncid,
            "no IPVS backend: sync daemon not changed"
        );
        Ok(())
    }
    /// Only a reload can ask this (a mesh configured at start gets the real
    /// backend): say so rather than report daemons that do not run.
    fn sync_start(&mut self, role: SyncRole, iface: &str, syncid: u8) -> anyhow::Result<()> {
        anyhow::bail!(
            "cannot start the {role:?} sync daemon on {iface} (syncid {syncid}): keepalive \
             started without IPVS duties, so without an IPVS backend; restart keepalive to \
             apply bgp.ipvs_sync"
        )
    }
    fn sync_stop(&mut self) -> anyhow::Result<()> {
        Ok(())
    }
}

/// The real thing: `ipvs-cluster`'s plan and apply over `ipvs-netlink`
/// (IPVS generic netlink, the VMWLCH host map). The netlink socket is opened on first use and
/// reopened after an error, so a daemon started before `ip_vs` is loaded
/// recovers on the next apply.
#[derive(Default)]
pub struct IpvsctlBackend {
    client: Option<ipvs_netlink::ipvs::Client>,
}

impl IpvsctlBackend {
    fn client(&mut self) -> anyhow::Result<&mut ipvs_netlink::ipvs::Client> {
        if self.client.is_none() {
            let mut c = ipvs_netlink::ipvs::Client::open()
                .map_err(|e| anyhow::anyhow!("IPVS netlink: {e}"))?;
            c.netlink()
                .set_reply_timeout(Some(REPLY_TIMEOUT))
                .map_err(|e| anyhow::anyhow!("IPVS netlink: {e}"))?;
            self.client = Some(c);
        }
        self.client
            .as_mut()
            .ok_or_else(|| anyhow::anyhow!("IPVS client unavailable"))
    }

    fn with_client<T>(
        &mut self,
        f: impl FnOnce(&mut ipvs_netlink::ipvs::Client) -> Result<T, ipvs_netlink::Error>,
    ) -> anyhow::Result<T> {
        let r = f(self.client()?);
        if r.is_err() {
            self.client = None;
        }
        r.map_err(|e| anyhow::anyhow!("{e}"))
    }

    /// Does the kernel have the VMWLCH family (the vmwlch module loaded)?
    /// Asked at every apply with load feedback: the module may come later.
    fn has_vmwlch(&mut self) -> bool {
        self.client()
            .is_ok_and(|c| ipvs_netlink::vmwlch::HostMap::new(c.netlink()).is_ok())
    }

    /// Bring the kernel's daemons to `role` on `iface` with `syncid`; with
    /// `exclusive` the other role is stopped.
    fn run_daemon(
        &mut self,
        role: SyncRole,
        iface: &str,
        syncid: u8,
        exclusive: bool,
    ) -> anyhow::Result<()> {
        let want = SyncDaemon {
            state: daemon_state(role),
            mcast_ifn: iface.to_string(),
            sync_id: u32::from(syncid),
            sync_maxlen: None,
            mcast_group: None,
            mcast_port: None,
            mcast_ttl: None,
        };
        let running = self.with_client(|c| c.daemons())?;
        let (stop, start) = daemon_plan(&running, &want, exclusive);
        for state in stop {
            self.with_client(|c| c.stop_daemon(state))?;
        }
        if start {
            self.with_client(|c| c.start_daemon(&want))
                .map_err(|e| anyhow::anyhow!("starting it on {iface} (syncid {syncid}): {e:#}"))?;
            tracing::info!(?role, iface, syncid, "IPVS sync daemon started");
        }
        Ok(())
    }
}

fn daemon_state(role: SyncRole) -> DaemonState {
    match role {
        SyncRole::Master => DaemonState::Master,
        SyncRole::Backup => DaemonState::Backup,
    }
}

/// Which running daemons to stop, and whether to start `want`: one of its
/// role with other parameters is replaced; with `exclusive` (a VRRP role)
/// the other role stops too, without it (the mesh) the other role is kept.
fn daemon_plan(
    running: &[SyncDaemon],
    want: &SyncDaemon,
    exclusive: bool,
) -> (Vec<DaemonState>, bool) {
    let same = |d: &SyncDaemon| {
        d.state == want.state && d.mcast_ifn == want.mcast_ifn && d.sync_id == want.sync_id
    };
    let stop = running
        .iter()
        .filter(|d| !same(d) && (d.state == want.state || exclusive))
        .map(|d| d.state)
        .collect();
    (stop, !running.iter().any(same))
}

/// Apply health-check results to the desired state: failed destinations get
/// weight 0 (quiesce) or are left out (remove).
pub fn override_down(desired: &mut Desired, down: &[DownDest]) {
    use ipvs_netlink::ipvs::ServiceKey;
    let Some(services) = desired.services.as_mut() else {
        return;
    };
    for (svc, dests) in services.iter_mut() {
        let vaddr = match svc.key {
            ServiceKey::Addr { addr, port, .. } => Some(SocketAddr::new(addr, port)),
            ServiceKey::Fwmark { .. } => None,
        };
        for dd in down {
            if dd.service.is_some() && dd.service != vaddr {
                continue;
            }
            let hit =
                |d: &ipvs_netlink::ipvs::Dest| d.addr == dd.dest.ip() && d.port == dd.dest.port();
            match dd.action {
                OnFailure::Quiesce => dests
                    .iter_mut()
                    .filter(|d| hit(d))
                    .for_each(|d| d.weight = 0),
                OnFailure::Remove => dests.retain(|d| !hit(d)),
            }
        }
    }
}

impl IpvsBackend for IpvsctlBackend {
    fn apply(&mut self, desired: Option<&Desired>, ov: &Overrides) -> anyhow::Result<()> {
        let Some(desired) = desired else {
            return Ok(());
        };
        let mut desired = Cow::Borrowed(desired);
        if let Some(fb) = &ov.feedback {
            let module = self.has_vmwlch();
            let moved = override_feedback(desired.to_mut(), fb, module);
            tracing::debug!(
                mode = ?resolved_mode(fb.mode, module),
                moved,
                weights = fb.weights.len(),
                "load feedback applied to the desired state"
            );
        }
        if !ov.down.is_empty() {
            override_down(desired.to_mut(), &ov.down);
        }
        let hosts = desired.hosts.is_some();
        let current = self.with_client(|c| ipvs_cluster::read_current(c, hosts))?;
        let plan = ipvs_cluster::plan(&desired, &current);
        if plan.is_empty() {
            return Ok(());
        }
        let report = self.with_client(|c| ipvs_cluster::apply(c, &plan))?;
        if !report.ok() {
            anyhow::bail!("IPVS apply incomplete:\n{report}");
        }
        tracing::info!(changes = report.done(), "IPVS configuration applied");
        Ok(())
    }

    fn sync_role(&mut self, role: SyncRole, iface: &str, syncid: u8) -> anyhow::Result<()> {
        self.run_daemon(role, iface, syncid, true)
    }

    fn sync_start(&mut self, role: SyncRole, iface: &str, syncid: u8) -> anyhow::Result<()> {
        self.run_daemon(role, iface, syncid, false)
    }

    fn sync_stop(&mut self) -> anyhow::Result<()> {
        let running = self.with_client(|c| c.daemons())?;
        for d in running {
            self.with_client(|c| c.stop_daemon(d.state))?;
        }
        Ok(())
    }
}

/// The backend for this configuration: the real one when the file (or its
/// `cluster_source`) manages IPVS services, the host map or a sync daemon
/// (`vrrp[].ipvs_sync` or `bgp.ipvs_sync`);
/// otherwise nothing.
pub fn default_backend(cfg: &crate::config::Config) -> Box<dyn IpvsBackend> {
    let wants = cfg.cluster.is_some()
        || cfg.cluster_source.is_some()
        || cfg.vrrp.iter().any(|i| i.ipvs_sync.is_some())
        || cfg.bgp.as_ref().is_some_and(|b| b.ipvs_sync.is_some());
    if wants {
        Box::new(IpvsctlBackend::default())
    } else {
        Box::new(NullBackend)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn health_overrides() {
        let text = "services:\n  - protocol: tcp\n    address: 192.0.2.10\n    port: 80\n    dests:\n      - {address: 10.1.0.1, weight: 5}\n      - {address: 10.1.0.2, weight: 5}\n  - protocol: tcp\n    address: 192.0.2.10\n    port: 443\n    dests:\n      - {address: 10.1.0.1, weight: 5}\n";
        let (_, mut d) = ipvs_cluster::parse(text).unwrap();
        let down = [
            DownDest {
                dest: "10.1.0.1:80".parse().unwrap(),
                service: None,
                action: OnFailure::Quiesce,
            },
            DownDest {
                dest: "10.1.0.2:80".parse().unwrap(),
                service: Some("192.0.2.10:80".parse().unwrap()),
                action: OnFailure::Remove,
            },
            DownDest {
                dest: "10.1.0.1:443".parse().unwrap(),
                service: Some("192.0.2.10:8080".parse().unwrap()),
                action: OnFailure::Remove,
            },
        ];
        override_down(&mut d, &down);
        let s = d.services.unwrap();
        assert_eq!(s[0].1.len(), 1);
        assert_eq!(s[0].1[0].weight, 0);
        assert_eq!(s[1].1.len(), 1);
        assert_eq!(s[1].1[0].weight, 5);
    }

    fn daemon(role: SyncRole, iface: &str, syncid: u32) -> SyncDaemon {
        SyncDaemon {
            sync_id: syncid,
            ..SyncDaemon::new(daemon_state(role), iface)
        }
    }

    /// The mesh starts its second role without stopping the first; a VRRP
    /// role stops the other one.
    #[test]
    fn daemon_plan_keeps_the_other_role_for_the_mesh() {
        use SyncRole::{Backup, Master};
        let master = daemon(Master, "eth1", 7);
        let backup = daemon(Backup, "eth1", 7);
        // Mesh: master running, backup wanted: start it, stop nothing.
        assert_eq!(
            daemon_plan(std::slice::from_ref(&master), &backup, false),
            (vec![], true)
        );
        // Both running as wanted: nothing to do.
        let both = [master.clone(), backup.clone()];
        assert_eq!(daemon_plan(&both, &master, false), (vec![], false));
        assert_eq!(daemon_plan(&both, &backup, false), (vec![], false));
        // Another syncid or interface for this role: replaced, the other kept.
        let old = [daemon(Master, "eth1", 3), backup.clone()];
        assert_eq!(
            daemon_plan(&old, &master, false),
            (vec![DaemonState::Master], true)
        );
        let old = [master.clone(), daemon(Backup, "eth2", 7)];
        assert_eq!(
            daemon_plan(&old, &backup, false),
            (vec![DaemonState::Backup], true)
        );
        // A VRRP role (exclusive) stops the other role, keeps its own.
        assert_eq!(
            daemon_plan(&both, &master, true),
            (vec![DaemonState::Backup], false)
        );
        assert_eq!(daemon_plan(&[], &backup, true), (vec![], true));
    }
}
