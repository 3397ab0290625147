//! A director's key `P/directors/<name>`: its last applied state, on a
//! lease kept alive for as long as the director runs and reaches etcd.

use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinHandle;
use tracing::{debug, warn};

use crate::{DirectorState, Error, Result, Store, LEASE_TTL};

/// Keeps one director's state published. The last state given wins; when
/// etcd is lost the key expires with its lease, and the task re-creates
/// both once etcd answers again.
pub struct Publisher {
    tx: watch::Sender<Option<DirectorState>>,
    task: JoinHandle<()>,
}

impl Publisher {
    /// Start publishing as `name` (nothing is written before the first
    /// [`Publisher::publish`]).
    pub fn spawn(endpoints: Vec<String>, prefix: String, name: String) -> Publisher {
        let (tx, rx) = watch::channel(None);
        let task = tokio::spawn(run(endpoints, prefix, name, rx));
        Publisher { tx, task }
    }

    /// The state to publish now.
    pub fn publish(&self, st: DirectorState) {
        self.tx.send_replace(Some(st));
    }
}

impl Publisher {
    /// Stop publishing and revoke the lease (its key goes at once), within
    /// `t`; a publisher merely dropped stops too and its key expires.
    pub async fn close(self, t: Duration) {
        let Publisher { tx, task } = self;
        drop(tx);
        let _ = tokio::time::timeout(t, task).await;
    }
}

async fn run(
    endpoints: Vec<String>,
    prefix: String,
    name: String,
    mut rx: watch::Receiver<Option<DirectorState>>,
) {
    let mut failures = 0u32;
    loop {
        if rx.wait_for(Option::is_some).await.is_err() {
            return;
        }
        match session(&endpoints, &prefix, &name, &mut rx, &mut failures).await {
            Ok(()) => return,
            Err(e) => warn!(error = %e, director = %name, "publishing to etcd; retrying"),
        }
        failures = failures.saturating_add(1);
        let wait = Duration::from_millis(200)
            .saturating_mul(1 << failures.min(6))
            .min(Duration::from_secs(10));
        tokio::time::sleep(wait).await;
    }
}

/// One lease: publish every change, keep the lease alive. `Ok` when the
/// publisher is dropped.
async fn session(
    endpoints: &[String],
    prefix: &str,
    name: &str,
    rx: &mut watch::Receiver<Option<DirectorState>>,
    failures: &mut u32,
) -> Result<()> {
    let store = Store::connect(endpoints, prefix).await?;
    let lease = store.grant(LEASE_TTL).await?;
    let mut client = store.client();
    let (mut keeper, mut answers) = store
        .call("keep the lease alive", client.lease_keep_alive(lease))
        .await?;
    // The state so far, on this (new) lease.
    let st = rx.borrow_and_update().clone();
    if let Some(st) = st {
        store.publish(lease, name, &st).await?;
    }
    let mut tick = tokio::time::interval(Duration::from_secs((LEASE_TTL / 3).max(1) as u64));
    loop {
        tokio::select! {
            changed = rx.changed() => {
                if changed.is_err() {
                    // Dropped: take the key away now rather than at expiry.
                    let _ = store.revoke(lease).await;
                    return Ok(());
                }
                let st = rx.borrow_and_update().clone();
                if let Some(st) = st {
                    store.publish(lease, name, &st).await?;
                    *failures = 0;
                    debug!(revision = st.revision, director = name, "published");
                }
            }
            _ = tick.tick() => {
                store.call("keep the lease alive", keeper.keep_alive()).await?;
                let answer = store.call("keep the lease alive", answers.message()).await?;
                match answer {
                    Some(a) if a.ttl() > 0 => {}
                    _ => return Err(Error::Unreachable {
                        endpoints: store.endpoints().to_string(),
                        detail: format!("lease {lease:x} expired"),
                    }),
                }
            }
        }
    }
}
