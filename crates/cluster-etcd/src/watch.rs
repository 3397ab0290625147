//! Following `P/cluster`: every new revision, across connection losses.

use std::time::Duration;

use etcd_client::{EventType, WatchOptions};
use tokio::sync::mpsc;
use tracing::{debug, warn};

use crate::{Error, Result, Store, Stored};

/// First wait before reconnecting; it doubles up to [`BACKOFF_MAX`].
const BACKOFF_FIRST: Duration = Duration::from_millis(200);
/// The longest wait between attempts, which bounds how late a director
/// catches up once etcd is back. A connection attempt to a down etcd is one
/// refused TCP connect, so even a large fleet retrying every 2 s costs etcd
/// nothing (with 10 s, catching up after an outage took up to 8 s in the
/// active-active lab).
const BACKOFF_MAX: Duration = Duration::from_secs(2);

/// The wait after `failures` consecutive failed attempts (1 or more).
fn backoff(failures: u32) -> Duration {
    BACKOFF_FIRST
        .saturating_mul(1 << failures.saturating_sub(1).min(8))
        .min(BACKOFF_MAX)
}

/// What the watch reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WatchEvent {
    /// etcd answers (true) or does not (false, with the reason).
    Connected(bool, Option<String>),
    /// A revision of the cluster file newer than the last one reported
    /// (`None`: the key was deleted at `revision`).
    Cluster {
        /// The file, if the key exists.
        stored: Option<Stored>,
        /// The revision that wrote or deleted it.
        revision: i64,
    },
}

/// Watch `P/cluster` until the receiver is dropped. The current value comes
/// first; then each change. When the connection fails the watch reconnects
/// with back-off and re-reads the key before watching again: a revision
/// missed meanwhile (or compacted away) is caught up by that read, since
/// only the latest state matters.
pub fn watch(endpoints: Vec<String>, prefix: String) -> mpsc::Receiver<WatchEvent> {
    let (tx, rx) = mpsc::channel(16);
    tokio::spawn(async move {
        let mut last = 0i64;
        let mut failures = 0u32;
        loop {
            let err = match follow(&endpoints, &prefix, &tx, &mut last, &mut failures).await {
                Ok(()) => return, // the receiver is gone
                Err(e) => e,
            };
            warn!(error = %err, "etcd watch lost; reconnecting");
            if tx
                .send(WatchEvent::Connected(false, Some(err.to_string())))
                .await
                .is_err()
            {
                return;
            }
            failures = failures.saturating_add(1);
            tokio::time::sleep(backoff(failures)).await;
        }
    });
    rx
}

/// One connection: read the key, then watch it from the next revision.
/// `Ok` only when the receiver is gone.
async fn follow(
    endpoints: &[String],
    prefix: &str,
    tx: &mpsc::Sender<WatchEvent>,
    last: &mut i64,
    failures: &mut u32,
) -> Result<()> {
    let store = Store::connect(endpoints, prefix).await?;
    let (stored, head) = store.get_cluster().await?;
    *failures = 0;
    if tx.send(WatchEvent::Connected(true, None)).await.is_err() {
        return Ok(());
    }
    let rev = stored.as_ref().map_or(head, |s| s.revision);
    if (stored.is_some() || *last != 0) && rev > *last {
        *last = rev;
        let ev = WatchEvent::Cluster {
            stored,
            revision: rev,
        };
        if tx.send(ev).await.is_err() {
            return Ok(());
        }
    }
    let mut client = store.client();
    let opts = WatchOptions::new().with_start_revision(head + 1);
    let mut stream = store
        .call(
            "watch the cluster file",
            client.watch(store.cluster_key(), Some(opts)),
        )
        .await?;
    loop {
        let msg = tokio::select! {
            m = stream.message() => m,
            _ = tx.closed() => return Ok(()),
        };
        let resp = match msg {
            Ok(Some(r)) => r,
            Ok(None) => return Err(lost(&store, "the watch stream ended")),
            Err(e) => return Err(Error::from_etcd(store.endpoints(), "watch", e)),
        };
        if resp.canceled() {
            // Compacted past our revision, or etcd cancelled it: re-read.
            let why = format!(
                "watch cancelled (compacted at {}): {}",
                resp.compact_revision(),
                resp.cancel_reason()
            );
            return Err(lost(&store, &why));
        }
        for ev in resp.events() {
            let Some(kv) = ev.kv() else { continue };
            let rev = kv.mod_revision();
            if rev <= *last {
                continue;
            }
            let stored = match ev.event_type() {
                EventType::Delete => None,
                EventType::Put => match kv.value_str() {
                    Ok(t) => Some(Stored {
                        text: t.to_string(),
                        revision: rev,
                    }),
                    Err(e) => {
                        debug!(revision = rev, error = %e, "cluster value is not UTF-8");
                        continue;
                    }
                },
            };
            *last = rev;
            if tx
                .send(WatchEvent::Cluster {
                    stored,
                    revision: rev,
                })
                .await
                .is_err()
            {
                return Ok(());
            }
        }
    }
}

fn lost(store: &Store, why: &str) -> Error {
    Error::Unreachable {
        endpoints: store.endpoints().to_string(),
        detail: why.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_from_200ms_and_stays_at_2s() {
        let ms: Vec<u128> = [1, 2, 3, 4, 5, 6, 40, u32::MAX]
            .iter()
            .map(|&f| backoff(f).as_millis())
            .collect();
        assert_eq!(ms, [200, 400, 800, 1600, 2000, 2000, 2000, 2000]);
    }
}
