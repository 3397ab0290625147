//! Where the desired IPVS state (services, destinations, the host map) comes
//! from. A [`ClusterSource`] delivers each new desired state over a channel
//! that the daemon's event loop reads; the daemon adds the health-check
//! overrides and hands the result to the IPVS worker. Today the source is
//! the configuration file ([`FileSource`]: on start and on every reload);
//! a source that watches a cluster store sends from a task of its own
//! whenever the state changes, and keeps the last state when it loses the
//! store.

use std::sync::Arc;

use tokio::sync::mpsc::UnboundedSender;

use crate::config::Config;

/// The desired IPVS state, typed and validated (none = IPVS is not
/// managed); shared, so handing it on copies no services.
pub type Desired = Option<Arc<ipvs_cluster::Desired>>;

pub trait ClusterSource: Send {
    /// The daemon's configuration was loaded or reloaded.
    fn configure(&mut self, cfg: &Config);
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
