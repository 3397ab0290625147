//! The cluster state in etcd (`cluster_source: {etcd: ...}`): each valid
//! revision of `PREFIX/cluster` becomes the desired state; what the daemon
//! applied goes to `PREFIX/directors/NAME`.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use cluster_etcd::{split_endpoints, DirectorState, Publisher, WatchEvent};
use tokio::sync::mpsc::UnboundedSender;
use tokio::task::JoinHandle;
use tracing::{error, info, warn};

use super::{ClusterSource, Desired};
use crate::metrics::{Metrics, C, G};

/// States sent and their revisions, newest last: an apply that finishes
/// names the state it ran, which may be a few behind the newest.
type Sent = Arc<Mutex<VecDeque<(Arc<ipvs_cluster::Desired>, i64)>>>;
const SENT_KEPT: usize = 16;

/// Watches `PREFIX/cluster` and publishes this director's applied revision.
pub struct EtcdSource {
    task: JoinHandle<()>,
    sent: Sent,
    publisher: Publisher,
}

impl EtcdSource {
    /// Start watching (on the current tokio runtime). Nothing is sent
    /// before the first valid revision arrives.
    pub fn start(
        cfg: &crate::config::EtcdSource,
        tx: UnboundedSender<Desired>,
        metrics: Metrics,
    ) -> EtcdSource {
        let endpoints: Vec<String> = cfg
            .endpoints
            .iter()
            .flat_map(|e| split_endpoints(e))
            .collect();
        let name = cfg.director_name();
        info!(endpoints = endpoints.join(","), prefix = %cfg.prefix, director = %name, "cluster state from etcd");
        metrics.set(G::SourceConnected, vec![], 0);
        let sent: Sent = Arc::default();
        let events = cluster_etcd::watch(endpoints.clone(), cfg.prefix.clone());
        let key = format!("{}/cluster", cfg.prefix.trim_end_matches('/'));
        let task = tokio::spawn(follow(events, tx, metrics, sent.clone(), key));
        let publisher = Publisher::spawn(endpoints, cfg.prefix.clone(), name);
        EtcdSource {
            task,
            sent,
            publisher,
        }
    }
}

impl Drop for EtcdSource {
    fn drop(&mut self) {
        // Dropping the watch's receiver ends the watch; the publisher's
        // task revokes its lease when the publisher goes.
        self.task.abort();
    }
}

impl ClusterSource for EtcdSource {
    fn configure(&mut self, _cfg: &crate::config::Config) {}

    fn applied(&mut self, desired: &Desired, error: Option<&str>) {
        let Some(d) = desired else { return };
        let sent = self.sent.lock().unwrap_or_else(|e| e.into_inner());
        let rev = sent
            .iter()
            .rev()
            .find(|(s, _)| Arc::ptr_eq(s, d))
            .map(|x| x.1);
        if let Some(rev) = rev {
            self.publisher
                .publish(DirectorState::now(rev, error.map(str::to_string)));
        }
    }
}

/// The watch's events: valid revisions go to the daemon, invalid ones are
/// logged and skipped (the last good state stays), the connection state
/// goes to the metrics.
async fn follow(
    mut events: tokio::sync::mpsc::Receiver<WatchEvent>,
    tx: UnboundedSender<Desired>,
    metrics: Metrics,
    sent: Sent,
    key: String,
) {
    while let Some(ev) = events.recv().await {
        match ev {
            WatchEvent::Connected(up, why) => {
                metrics.set(G::SourceConnected, vec![], i64::from(up));
                match why {
                    None => info!("etcd connected"),
                    Some(w) => warn!(error = %w, "etcd lost: keeping the last cluster state"),
                }
            }
            WatchEvent::Cluster {
                stored: None,
                revision,
            } => warn!(revision, %key, "cluster key absent in etcd: keeping the last state"),
            WatchEvent::Cluster {
                stored: Some(s),
                revision,
            } => match ipvs_cluster::parse(&s.text) {
                Ok((_, d)) => {
                    let d = Arc::new(d);
                    {
                        let mut q = sent.lock().unwrap_or_else(|e| e.into_inner());
                        q.push_back((d.clone(), revision));
                        if q.len() > SENT_KEPT {
                            q.pop_front();
                        }
                    }
                    metrics.set(G::SourceRevision, vec![], revision);
                    info!(revision, "new cluster state from etcd");
                    if tx.send(Some(d)).is_err() {
                        return;
                    }
                }
                Err(errs) => {
                    metrics.inc(C::SourceInvalid, vec![]);
                    let name = format!("{key}@{revision}");
                    let msgs: Vec<String> = errs.iter().map(|e| e.in_file(&name)).collect();
                    error!(revision, errors = %msgs.join("; "), "invalid cluster state in etcd skipped: the last valid one stays");
                }
            },
        }
    }
}
