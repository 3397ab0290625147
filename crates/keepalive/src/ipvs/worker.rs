//! The [`IpvsWorker`]: the backend on its own thread, its requests, retries
//! and the events it reports.

use std::sync::Arc;

use ipvs_cluster::Desired;

use super::{DownDest, IpvsBackend, SyncRole};

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

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

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
}
