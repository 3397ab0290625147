//! Where the desired IPVS state (services, destinations, the host map) comes
//! from. A [`ClusterSource`] delivers each new desired state over a channel
//! that the daemon's event loop reads; the daemon adds the health-check
//! overrides and hands the result to the IPVS worker, and tells the source
//! when an apply finished ([`ClusterSource::applied`]). The source is the
//! configuration file ([`FileSource`]: on start and on every reload), or
//! etcd ([`EtcdSource`]: `cluster_source: {etcd: ...}`), which sends from a
//! task of its own whenever the state changes, keeps the last state when it
//! loses the store, and publishes the revision that runs.
//! [`Selector`] picks one by the configuration.

use std::sync::Arc;

use tokio::sync::mpsc::UnboundedSender;

use crate::config::{ClusterSourceConfig, Config};
use crate::metrics::Metrics;

mod etcd;
pub use etcd::EtcdSource;

/// The desired IPVS state, typed and validated (none = IPVS is not
/// managed); shared, so handing it on copies no services.
pub type Desired = Option<Arc<ipvs_cluster::Desired>>;

pub trait ClusterSource: Send {
    /// The daemon's configuration was loaded or reloaded.
    fn configure(&mut self, cfg: &Config);

    /// An apply of `desired` (a state this source sent, or an older one)
    /// finished, with its error if it failed.
    fn applied(&mut self, _desired: &Desired, _error: Option<&str>) {}
}

/// The desired state written in the configuration file itself.
pub struct FileSource {
    tx: UnboundedSender<Desired>,
}

impl FileSource {
    pub fn new(tx: UnboundedSender<Desired>) -> FileSource {
        FileSource { tx }
    }
}

impl ClusterSource for FileSource {
    fn configure(&mut self, cfg: &Config) {
        // The receiver lives as long as the daemon; nothing to do without it.
        let _ = self.tx.send(cfg.cluster.clone());
    }
}

/// The file or etcd, as `cluster_source:` says; a reload that keeps the
/// same etcd settings keeps the running watch (and its last state).
pub struct Selector {
    tx: UnboundedSender<Desired>,
    metrics: Metrics,
    etcd: Option<(crate::config::EtcdSource, EtcdSource)>,
    file: FileSource,
}

impl Selector {
    pub fn new(tx: UnboundedSender<Desired>, metrics: Metrics) -> Selector {
        Selector {
            file: FileSource::new(tx.clone()),
            tx,
            metrics,
            etcd: None,
        }
    }
}

impl ClusterSource for Selector {
    fn configure(&mut self, cfg: &Config) {
        match &cfg.cluster_source {
            None => {
                self.etcd = None; // stops its tasks
                self.file.configure(cfg);
            }
            Some(ClusterSourceConfig::Etcd(e)) => {
                if self.etcd.as_ref().is_some_and(|(c, _)| c == e) {
                    return;
                }
                let src = EtcdSource::start(e, self.tx.clone(), self.metrics.clone());
                self.etcd = Some((e.clone(), src));
            }
        }
    }

    fn applied(&mut self, desired: &Desired, error: Option<&str>) {
        if let Some((_, src)) = &mut self.etcd {
            src.applied(desired, error);
        }
    }
}
