//! The IPVS side of a front end, behind a small trait so the daemon and its
//! tests do not depend on a kernel with IPVS.

use std::borrow::Cow;
use std::net::SocketAddr;
use std::sync::Arc;

use ipvs_cluster::Desired;

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

pub trait IpvsBackend: Send {
    /// Bring the kernel's services and host map to the desired state, with
    /// the failed destinations quiesced or removed. Idempotent; called at
    /// start, on reload and on every health change.
    fn apply(&mut self, desired: Option<&Desired>, down: &[DownDest]) -> anyhow::Result<()>;
    /// Run the sync daemon in `role` (stopping the other role) on `iface`.
    fn sync_role(&mut self, role: SyncRole, iface: &str, syncid: u8) -> anyhow::Result<()>;
    /// Stop both sync daemons.
    fn sync_stop(&mut self) -> anyhow::Result<()>;
}

/// One request to the [`IpvsWorker`].
#[derive(Clone)]
enum Request {
    Apply {
        desired: Option<Arc<Desired>>,
        down: Vec<DownDest>,
    },
    SyncRole {
        role: SyncRole,
        iface: String,
        syncid: u8,
    },
    SyncStop,
}

/// What the worker reports back to the event loop.
#[derive(Debug, Clone, PartialEq)]
pub enum IpvsEvent {
    /// An apply finished: `ok`, and whether it was a retry of a failed one;
    /// the state it applied (without the health overrides) and its error,
    /// for a source that publishes what runs (etcd).
    Applied {
        ok: bool,
        retry: bool,
        desired: Option<Arc<Desired>>,
        error: Option<String>,
    },
}

/// First wait before a failed apply is retried; it doubles up to [`RETRY_MAX`].
pub const RETRY_FIRST: std::time::Duration = std::time::Duration::from_millis(250);
pub const RETRY_MAX: std::time::Duration = std::time::Duration::from_secs(30);

fn backoff(failures: u32) -> std::time::Duration {
    RETRY_FIRST
        .saturating_mul(1u32 << failures.saturating_sub(1).min(16))
        .min(RETRY_MAX)
}

/// Runs the backend on its own thread, in request order, so that netlink
/// round trips (a large `apply`, starting a sync daemon: the kernel creates
/// its threads) never hold up the VRRP timers and adverts on the daemon's
/// event loop. Errors are logged here. Of several queued applies only the
/// last runs (each carries the whole desired state). A failed apply is
/// retried with back-off ([`RETRY_FIRST`] doubling to [`RETRY_MAX`]) until
/// it succeeds or a newer one replaces it; each result is reported as an
/// [`IpvsEvent`].
pub struct IpvsWorker {
    tx: Option<std::sync::mpsc::Sender<Request>>,
    done: std::sync::mpsc::Receiver<()>,
}

/// The worker thread's loop.
fn work(
    mut backend: Box<dyn IpvsBackend>,
    rx: std::sync::mpsc::Receiver<Request>,
    events: Option<tokio::sync::mpsc::UnboundedSender<IpvsEvent>>,
) {
    use std::sync::mpsc::RecvTimeoutError;
    let mut queue = std::collections::VecDeque::new();
    // The last apply, while it fails, and how often it failed.
    let mut failed: Option<(Request, u32)> = None;
    loop {
        let mut retry = false;
        match &failed {
            None => match rx.recv() {
                Ok(r) => queue.push_back(r),
                Err(_) => return,
            },
            Some((r, n)) => match rx.recv_timeout(backoff(*n)) {
                Ok(next) => queue.push_back(next),
                Err(RecvTimeoutError::Timeout) => {
                    queue.push_back(r.clone());
                    retry = true;
                }
                Err(RecvTimeoutError::Disconnected) => return,
            },
        }
        queue.extend(rx.try_iter());
        while let Some(r) = queue.pop_front() {
            let is_apply = matches!(r, Request::Apply { .. });
            if is_apply && queue.iter().any(|q| matches!(q, Request::Apply { .. })) {
                continue; // superseded
            }
            let applied = match &r {
                Request::Apply { desired, .. } => desired.clone(),
                _ => None,
            };
            let result = run(backend.as_mut(), r.clone());
            let ok = result.is_ok();
            if is_apply {
                let retrying = retry && failed.is_some();
                failed = match (ok, failed.take()) {
                    (true, _) => None,
                    (false, Some((_, n))) if retrying => Some((r, n + 1)),
                    (false, _) => Some((r, 1)),
                };
                if let Some(ev) = &events {
                    let _ = ev.send(IpvsEvent::Applied {
                        ok,
                        retry: retrying,
                        desired: applied,
                        error: result.err(),
                    });
                }
            }
        }
    }
}

impl IpvsWorker {
    pub fn spawn(
        backend: Box<dyn IpvsBackend>,
        events: Option<tokio::sync::mpsc::UnboundedSender<IpvsEvent>>,
    ) -> std::io::Result<IpvsWorker> {
        let (tx, rx) = std::sync::mpsc::channel::<Request>();
        let (done_tx, done) = std::sync::mpsc::channel();
        std::thread::Builder::new()
            .name("ipvs".into())
            .spawn(move || {
                work(backend, rx, events);
                let _ = done_tx.send(());
            })?;
        Ok(IpvsWorker { tx: Some(tx), done })
    }

    fn send(&self, r: Request) {
        if let Some(tx) = &self.tx {
            if tx.send(r).is_err() {
                tracing::error!("IPVS worker thread is gone");
            }
        }
    }

    /// Bring IPVS to the desired state with the failed destinations applied.
    pub fn apply(&self, desired: Option<Arc<Desired>>, down: Vec<DownDest>) {
        self.send(Request::Apply { desired, down });
    }

    pub fn sync_role(&self, role: SyncRole, iface: &str, syncid: u8) {
        self.send(Request::SyncRole {
            role,
            iface: iface.to_string(),
            syncid,
        });
    }

    pub fn sync_stop(&self) {
        self.send(Request::SyncStop);
    }

    /// Let the queued requests finish (at most `timeout`); no more requests.
    pub fn finish(&mut self, timeout: std::time::Duration) {
        self.tx = None;
        if self.done.recv_timeout(timeout).is_err() {
            tracing::warn!("IPVS requests still running at exit");
        }
    }
}

/// Run one request; its error (also logged here).
fn run(backend: &mut dyn IpvsBackend, r: Request) -> Result<(), String> {
    let (what, result) = match r {
        Request::Apply { desired, down } => (
            "applying IPVS configuration (retried with back-off)",
            backend.apply(desired.as_deref(), &down),
        ),
        Request::SyncRole {
            role,
            iface,
            syncid,
        } => (
            match role {
                SyncRole::Master => "IPVS sync daemon (master)",
                SyncRole::Backup => "IPVS sync daemon (backup)",
            },
            backend.sync_role(role, &iface, syncid),
        ),
        Request::SyncStop => ("stopping the IPVS sync daemon", backend.sync_stop()),
    };
    result.map_err(|e| {
        let e = format!("{e:#}");
        tracing::error!(error = e, "{what}");
        e
    })
}

/// Used when there is nothing to manage (no `services:`, no `ipvs_sync`) or
/// IPVS is unavailable: logs what it would do.
#[derive(Debug, Default)]
pub struct NullBackend;

impl IpvsBackend for NullBackend {
    fn apply(&mut self, desired: Option<&Desired>, down: &[DownDest]) -> anyhow::Result<()> {
        if desired.is_some() {
            tracing::warn!(
                down = down.len(),
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
            self.client = Some(
                ipvs_netlink::ipvs::Client::open()
                    .map_err(|e| anyhow::anyhow!("IPVS netlink: {e}"))?,
            );
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
    fn apply(&mut self, desired: Option<&Desired>, down: &[DownDest]) -> anyhow::Result<()> {
        let Some(desired) = desired else {
            return Ok(());
        };
        let mut desired = Cow::Borrowed(desired);
        if !down.is_empty() {
            override_down(desired.to_mut(), down);
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
        use ipvs_netlink::ipvs::{DaemonState, SyncDaemon};
        let want = match role {
            SyncRole::Master => DaemonState::Master,
            SyncRole::Backup => DaemonState::Backup,
        };
        let running = self.with_client(|c| c.daemons())?;
        let mut have = false;
        for d in running {
            if d.state == want && d.mcast_ifn == iface && d.sync_id == u32::from(syncid) {
                have = true;
            } else {
                self.with_client(|c| c.stop_daemon(d.state))?;
            }
        }
        if !have {
            let d = SyncDaemon {
                state: want,
                mcast_ifn: iface.to_string(),
                sync_id: u32::from(syncid),
                sync_maxlen: None,
                mcast_group: None,
                mcast_port: None,
                mcast_ttl: None,
            };
            self.with_client(|c| c.start_daemon(&d))?;
            tracing::info!(?role, iface, syncid, "IPVS sync daemon started");
        }
        Ok(())
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
/// `cluster_source`) manages IPVS services, the host map or a sync daemon;
/// otherwise nothing.
pub fn default_backend(cfg: &crate::config::Config) -> Box<dyn IpvsBackend> {
    let wants = cfg.cluster.is_some()
        || cfg.cluster_source.is_some()
        || cfg.vrrp.iter().any(|i| i.ipvs_sync.is_some());
    if wants {
        Box::new(IpvsctlBackend::default())
    } else {
        Box::new(NullBackend)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    struct Recorder(Arc<Mutex<Vec<String>>>);
    impl IpvsBackend for Recorder {
        fn apply(&mut self, desired: Option<&Desired>, down: &[DownDest]) -> anyhow::Result<()> {
            std::thread::sleep(std::time::Duration::from_millis(20));
            let name = desired.and_then(|d| Some(d.hosts.as_ref()?[0].name.clone()));
            self.0
                .lock()
                .unwrap()
                .push(format!("apply {name:?} {}", down.len()));
            Ok(())
        }
        fn sync_role(&mut self, role: SyncRole, iface: &str, syncid: u8) -> anyhow::Result<()> {
            self.0
                .lock()
                .unwrap()
                .push(format!("{role:?} {iface} {syncid}"));
            Ok(())
        }
        fn sync_stop(&mut self) -> anyhow::Result<()> {
            self.0.lock().unwrap().push("stop".into());
            anyhow::bail!("no daemon")
        }
    }

    /// A desired state told apart by its one host's name.
    fn named(name: &str) -> Option<Arc<Desired>> {
        Some(Arc::new(Desired {
            hosts: Some(vec![ipvs_netlink::vmwlch::Host {
                name: name.into(),
                weight: 1,
                members: vec![],
            }]),
            ..Default::default()
        }))
    }

    #[test]
    fn worker_keeps_order_and_finishes() {
        let log = Arc::new(Mutex::new(vec![]));
        let mut w = IpvsWorker::spawn(Box::new(Recorder(log.clone())), None).unwrap();
        w.apply(named("a"), vec![]);
        w.sync_role(SyncRole::Backup, "eth1", 51);
        w.sync_role(SyncRole::Master, "eth1", 51);
        w.sync_stop();
        w.finish(std::time::Duration::from_secs(5));
        let log = log.lock().unwrap().clone();
        // nothing to coalesce: everything runs, in order
        assert_eq!(
            log,
            [
                "apply Some(\"a\") 0",
                "Backup eth1 51",
                "Master eth1 51",
                "stop"
            ]
        );
    }

    #[test]
    fn worker_coalesces_queued_applies() {
        let log = Arc::new(Mutex::new(vec![]));
        let mut w = IpvsWorker::spawn(Box::new(Recorder(log.clone())), None).unwrap();
        for i in 0..20 {
            w.apply(named(&format!("{i}")), vec![]);
        }
        w.finish(std::time::Duration::from_secs(5));
        let log = log.lock().unwrap().clone();
        assert!(log.len() < 20, "{log:?}");
        assert_eq!(log.last().unwrap(), "apply Some(\"19\") 0");
    }

    /// Fails its first `fails` applies.
    struct Flaky(u32, Arc<Mutex<u32>>);
    impl IpvsBackend for Flaky {
        fn apply(&mut self, _: Option<&Desired>, _: &[DownDest]) -> anyhow::Result<()> {
            *self.1.lock().unwrap() += 1;
            if self.0 > 0 {
                self.0 -= 1;
                anyhow::bail!("kernel says no")
            }
            Ok(())
        }
        fn sync_role(&mut self, _: SyncRole, _: &str, _: u8) -> anyhow::Result<()> {
            Ok(())
        }
        fn sync_stop(&mut self) -> anyhow::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn failed_apply_is_retried_with_back_off() {
        let calls = Arc::new(Mutex::new(0));
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let t0 = std::time::Instant::now();
        let mut w = IpvsWorker::spawn(Box::new(Flaky(2, calls.clone())), Some(tx)).unwrap();
        w.apply(named("a"), vec![]);
        let mut got = Vec::new();
        while got.len() < 3 {
            if let Ok(e) = rx.try_recv() {
                got.push(e);
            } else {
                assert!(t0.elapsed() < std::time::Duration::from_secs(10), "{got:?}");
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
        }
        // failed; retried 250 ms later, failed; retried 500 ms later, applied
        let got: Vec<(bool, bool, bool)> = got
            .iter()
            .map(
                |IpvsEvent::Applied {
                     ok, retry, error, ..
                 }| (*ok, *retry, error.is_some()),
            )
            .collect();
        assert_eq!(
            got,
            [
                (false, false, true),
                (false, true, true),
                (true, true, false)
            ]
        );
        assert!(t0.elapsed() >= RETRY_FIRST + backoff(2));
        assert_eq!(backoff(2), RETRY_FIRST * 2);
        assert_eq!(backoff(40), RETRY_MAX);
        w.finish(std::time::Duration::from_secs(5));
        assert_eq!(*calls.lock().unwrap(), 3);
    }

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
}
