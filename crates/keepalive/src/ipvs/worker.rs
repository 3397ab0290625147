//! The [`IpvsWorker`]: the backend on its own thread, its requests, retries
//! and the events it reports.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Instant;

use ipvs_cluster::Desired;

use super::{IpvsBackend, Overrides, SyncRole};

/// One request to the [`IpvsWorker`].
#[derive(Clone)]
enum Request {
    Apply {
        desired: Option<Arc<Desired>>,
        ov: Overrides,
    },
    SyncRole {
        role: SyncRole,
        iface: String,
        syncid: u8,
    },
    /// Both roles at once (`bgp.ipvs_sync`).
    SyncMesh {
        iface: String,
        syncid: u8,
    },
    SyncStop,
}

impl Request {
    fn is_apply(&self) -> bool {
        matches!(self, Request::Apply { .. })
    }
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
    /// One role of the mesh sync daemons was (re)started, or failed to.
    SyncMesh {
        role: SyncRole,
        ok: bool,
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
/// last runs (each carries the whole desired state). A failed apply, and a
/// failed start of the mesh sync daemons, is retried with back-off
/// ([`RETRY_FIRST`] doubling to [`RETRY_MAX`]) until it succeeds or a newer
/// request of its kind replaces it; each result is reported as an
/// [`IpvsEvent`].
pub struct IpvsWorker {
    tx: Option<std::sync::mpsc::Sender<Request>>,
    done: std::sync::mpsc::Receiver<()>,
}

/// A failed request waiting for its retry.
struct Pending {
    req: Request,
    failures: u32,
    due: Instant,
}

/// The failed requests to retry: the last apply and the last mesh start,
/// each on its own back-off.
#[derive(Default)]
struct Retries {
    apply: Option<Pending>,
    mesh: Option<Pending>,
}

impl Retries {
    /// Where a failure of `r` waits; any sync request decides the daemons
    /// instead of an earlier mesh start.
    fn slot(&mut self, r: &Request) -> &mut Option<Pending> {
        if r.is_apply() {
            &mut self.apply
        } else {
            &mut self.mesh
        }
    }

    fn next_due(&self) -> Option<Instant> {
        [&self.apply, &self.mesh]
            .into_iter()
            .flatten()
            .map(|p| p.due)
            .min()
    }

    /// The retries due now, with their failure counts.
    fn take_due(&mut self, now: Instant) -> Vec<(Request, Option<u32>)> {
        [&mut self.apply, &mut self.mesh]
            .into_iter()
            .filter(|p| p.as_ref().is_some_and(|p| p.due <= now))
            .filter_map(Option::take)
            .map(|p| (p.req, Some(p.failures)))
            .collect()
    }

    /// After a run: a failure waits for its retry, a success clears it.
    fn record(&mut self, r: Request, ok: bool, before: Option<u32>) {
        let retried = matches!(r, Request::Apply { .. } | Request::SyncMesh { .. });
        let slot = self.slot(&r);
        *slot = if ok || !retried {
            None
        } else {
            let failures = before.map_or(1, |n| n + 1);
            Some(Pending {
                req: r,
                failures,
                due: Instant::now() + backoff(failures),
            })
        };
    }
}

/// The worker thread's loop.
fn work(
    mut backend: Box<dyn IpvsBackend>,
    rx: std::sync::mpsc::Receiver<Request>,
    events: Option<tokio::sync::mpsc::UnboundedSender<IpvsEvent>>,
) {
    use std::sync::mpsc::RecvTimeoutError;
    let send = |e: IpvsEvent| {
        if let Some(ev) = &events {
            let _ = ev.send(e);
        }
    };
    let mut retries = Retries::default();
    // Requests with the failure count of the retry they are (None: new).
    let mut queue: VecDeque<(Request, Option<u32>)> = VecDeque::new();
    loop {
        let first = match retries.next_due() {
            None => rx.recv().map_err(|_| RecvTimeoutError::Disconnected),
            Some(due) => rx.recv_timeout(due.saturating_duration_since(Instant::now())),
        };
        let mut new: Vec<Request> = match first {
            Ok(r) => vec![r],
            Err(RecvTimeoutError::Timeout) => vec![],
            Err(RecvTimeoutError::Disconnected) => return,
        };
        new.extend(rx.try_iter());
        // A newer request of a kind replaces its pending retry.
        for r in &new {
            *retries.slot(r) = None;
        }
        queue.extend(retries.take_due(Instant::now()));
        queue.extend(new.into_iter().map(|r| (r, None)));
        while let Some((r, before)) = queue.pop_front() {
            if r.is_apply() && queue.iter().any(|(q, _)| q.is_apply()) {
                continue; // superseded
            }
            let ok = match &r {
                Request::Apply { desired, ov } => {
                    let result = run(
                        "applying IPVS configuration (retried with back-off)",
                        backend.apply(desired.as_deref(), ov),
                    );
                    let ok = result.is_ok();
                    send(IpvsEvent::Applied {
                        ok,
                        retry: before.is_some(),
                        desired: desired.clone(),
                        error: result.err(),
                    });
                    ok
                }
                Request::SyncMesh { iface, syncid } => {
                    let mut ok = true;
                    for (role, result) in run_mesh(backend.as_mut(), iface, *syncid) {
                        ok &= result.is_ok();
                        send(IpvsEvent::SyncMesh {
                            role,
                            ok: result.is_ok(),
                            error: result.err(),
                        });
                    }
                    ok
                }
                Request::SyncRole {
                    role,
                    iface,
                    syncid,
                } => run(role_what(*role), backend.sync_role(*role, iface, *syncid)).is_ok(),
                Request::SyncStop => {
                    run("stopping the IPVS sync daemon", backend.sync_stop()).is_ok()
                }
            };
            retries.record(r, ok, before);
        }
    }
}

fn role_what(role: SyncRole) -> &'static str {
    match role {
        SyncRole::Master => "IPVS sync daemon (master)",
        SyncRole::Backup => "IPVS sync daemon (backup)",
    }
}

/// Start (or keep) both roles; the second is started even when the first
/// fails, and neither stops the other.
fn run_mesh(
    backend: &mut dyn IpvsBackend,
    iface: &str,
    syncid: u8,
) -> [(SyncRole, Result<(), String>); 2] {
    [SyncRole::Master, SyncRole::Backup].map(|role| {
        let what = match role {
            SyncRole::Master => "IPVS mesh sync daemon (master) (retried with back-off)",
            SyncRole::Backup => "IPVS mesh sync daemon (backup) (retried with back-off)",
        };
        (role, run(what, backend.sync_start(role, iface, syncid)))
    })
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
    pub fn apply(&self, desired: Option<Arc<Desired>>, ov: Overrides) {
        self.send(Request::Apply { desired, ov });
    }

    pub fn sync_role(&self, role: SyncRole, iface: &str, syncid: u8) {
        self.send(Request::SyncRole {
            role,
            iface: iface.to_string(),
            syncid,
        });
    }

    /// Run the sync daemon as master and as backup at once (full mesh).
    pub fn sync_mesh(&self, iface: &str, syncid: u8) {
        self.send(Request::SyncMesh {
            iface: iface.to_string(),
            syncid,
        });
    }

    /// Stop both sync daemons (whoever started them).
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

/// One backend call's result; its error (also logged here).
fn run(what: &str, result: anyhow::Result<()>) -> Result<(), String> {
    result.map_err(|e| {
        let e = format!("{e:#}");
        tracing::error!(error = e, "{what}");
        e
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    struct Recorder(Arc<Mutex<Vec<String>>>);
    impl IpvsBackend for Recorder {
        fn apply(&mut self, desired: Option<&Desired>, ov: &Overrides) -> anyhow::Result<()> {
            std::thread::sleep(std::time::Duration::from_millis(20));
            let name = desired.and_then(|d| Some(d.hosts.as_ref()?[0].name.clone()));
            self.0
                .lock()
                .unwrap()
                .push(format!("apply {name:?} {}", ov.down.len()));
            Ok(())
        }
        fn sync_role(&mut self, role: SyncRole, iface: &str, syncid: u8) -> anyhow::Result<()> {
            self.0
                .lock()
                .unwrap()
                .push(format!("{role:?} {iface} {syncid}"));
            Ok(())
        }
        fn sync_start(&mut self, role: SyncRole, iface: &str, syncid: u8) -> anyhow::Result<()> {
            self.0
                .lock()
                .unwrap()
                .push(format!("start {role:?} {iface} {syncid}"));
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
        w.apply(named("a"), Overrides::default());
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
            w.apply(named(&format!("{i}")), Overrides::default());
        }
        w.finish(std::time::Duration::from_secs(5));
        let log = log.lock().unwrap().clone();
        assert!(log.len() < 20, "{log:?}");
        assert_eq!(log.last().unwrap(), "apply Some(\"19\") 0");
    }

    /// Fails its first `fails` applies.
    struct Flaky(u32, Arc<Mutex<u32>>);
    impl IpvsBackend for Flaky {
        fn apply(&mut self, _: Option<&Desired>, _: &Overrides) -> anyhow::Result<()> {
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
        fn sync_start(&mut self, _: SyncRole, _: &str, _: u8) -> anyhow::Result<()> {
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
        w.apply(named("a"), Overrides::default());
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
            .map(|e| match e {
                IpvsEvent::Applied {
                    ok, retry, error, ..
                } => (*ok, *retry, error.is_some()),
                other => panic!("{other:?}"),
            })
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

    /// The mesh asks for both roles with `sync_start` (which leaves the
    /// other role running), never `sync_role` or a stop; each role reports.
    #[test]
    fn mesh_requests_both_roles_without_stopping_either() {
        let log = Arc::new(Mutex::new(vec![]));
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let mut w = IpvsWorker::spawn(Box::new(Recorder(log.clone())), Some(tx)).unwrap();
        w.sync_mesh("eth1", 9);
        w.finish(std::time::Duration::from_secs(5));
        let log = log.lock().unwrap().clone();
        assert_eq!(log, ["start Master eth1 9", "start Backup eth1 9"]);
        let mut got = vec![];
        while let Ok(e) = rx.try_recv() {
            got.push(e);
        }
        let ok = |role| IpvsEvent::SyncMesh {
            role,
            ok: true,
            error: None,
        };
        assert_eq!(got, [ok(SyncRole::Master), ok(SyncRole::Backup)]);
    }

    /// Fails to start the backup role its first `fails` times.
    struct NoBackup(u32, Arc<Mutex<Vec<String>>>);
    impl IpvsBackend for NoBackup {
        fn apply(&mut self, _: Option<&Desired>, _: &Overrides) -> anyhow::Result<()> {
            Ok(())
        }
        fn sync_role(&mut self, _: SyncRole, _: &str, _: u8) -> anyhow::Result<()> {
            Ok(())
        }
        fn sync_start(&mut self, role: SyncRole, _: &str, _: u8) -> anyhow::Result<()> {
            self.1.lock().unwrap().push(format!("start {role:?}"));
            if role == SyncRole::Backup && self.0 > 0 {
                self.0 -= 1;
                anyhow::bail!("No such device")
            }
            Ok(())
        }
        fn sync_stop(&mut self) -> anyhow::Result<()> {
            self.1.lock().unwrap().push("stop".into());
            Ok(())
        }
    }

    fn wait_events(
        rx: &mut tokio::sync::mpsc::UnboundedReceiver<IpvsEvent>,
        n: usize,
    ) -> Vec<IpvsEvent> {
        let t0 = std::time::Instant::now();
        let mut got = Vec::new();
        while got.len() < n {
            match rx.try_recv() {
                Ok(e) => got.push(e),
                Err(_) => {
                    assert!(t0.elapsed() < std::time::Duration::from_secs(10), "{got:?}");
                    std::thread::sleep(std::time::Duration::from_millis(10));
                }
            }
        }
        got
    }

    #[test]
    fn failed_mesh_start_is_retried_and_a_stop_cancels_the_retry() {
        let log = Arc::new(Mutex::new(vec![]));
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let t0 = std::time::Instant::now();
        let mut w = IpvsWorker::spawn(Box::new(NoBackup(1, log.clone())), Some(tx)).unwrap();
        w.sync_mesh("eth1", 0);
        // master ok, backup failed; 250 ms later both again, both ok
        let got: Vec<(SyncRole, bool)> = wait_events(&mut rx, 4)
            .into_iter()
            .map(|e| match e {
                IpvsEvent::SyncMesh { role, ok, error } => {
                    assert_eq!(ok, error.is_none());
                    (role, ok)
                }
                other => panic!("{other:?}"),
            })
            .collect();
        use SyncRole::{Backup, Master};
        assert_eq!(
            got,
            [
                (Master, true),
                (Backup, false),
                (Master, true),
                (Backup, true)
            ]
        );
        assert!(t0.elapsed() >= RETRY_FIRST);
        w.finish(std::time::Duration::from_secs(5));

        // Failing for good, then stopped: no retry after the stop.
        let log = Arc::new(Mutex::new(vec![]));
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let mut w = IpvsWorker::spawn(Box::new(NoBackup(u32::MAX, log.clone())), Some(tx)).unwrap();
        w.sync_mesh("eth1", 0);
        wait_events(&mut rx, 2);
        w.sync_stop();
        std::thread::sleep(RETRY_FIRST * 3);
        w.finish(std::time::Duration::from_secs(5));
        let log = log.lock().unwrap().clone();
        assert_eq!(log.last().map(String::as_str), Some("stop"), "{log:?}");
        assert_eq!(
            log.iter().filter(|l| *l == "start Backup").count(),
            1,
            "{log:?}"
        );
    }
}
