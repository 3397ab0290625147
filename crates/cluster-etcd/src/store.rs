//! Single requests against the cluster state: store and read the cluster
//! file, publish a director's state, list the fleet.

use std::future::Future;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use etcd_client::{Client, ConnectOptions, GetOptions, PutOptions};
use serde::{Deserialize, Serialize};

use crate::{Error, Result};

/// How long one request may take: a balanced channel with no reachable
/// endpoint waits forever otherwise.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);

/// The lifetime of a director's key without keep-alives.
pub const LEASE_TTL: i64 = 10;

/// The cluster file as stored, with the revision that last wrote it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stored {
    /// The YAML text as the user wrote it.
    pub text: String,
    /// etcd's `mod_revision` of the key.
    pub revision: i64,
}

/// What a director publishes after applying a revision.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DirectorState {
    /// The revision of `P/cluster` it applied (or tried to).
    pub revision: i64,
    /// When, in seconds since the Unix epoch.
    pub time: u64,
    /// Whether the apply succeeded.
    pub ok: bool,
    /// Why it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl DirectorState {
    /// The state of an apply that finished now.
    pub fn now(revision: i64, error: Option<String>) -> DirectorState {
        let time = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        DirectorState {
            revision,
            time,
            ok: error.is_none(),
            error,
        }
    }
}

/// One director of the fleet.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Member {
    /// The name under `P/directors/`.
    pub name: String,
    /// Its published state (`None`: the value is not ours to read).
    pub state: Option<DirectorState>,
}

/// The stored revision and the directors that are alive.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Fleet {
    /// The revision of `P/cluster`, if it exists.
    pub revision: Option<i64>,
    /// The directors with a live key, by name.
    pub directors: Vec<Member>,
}

/// A connection to etcd and the prefix the cluster lives under.
#[derive(Clone)]
pub struct Store {
    client: Client,
    endpoints: String,
    prefix: String,
}

/// The endpoints of `--etcd`: comma-separated, blanks ignored.
pub fn split_endpoints(s: &str) -> Vec<String> {
    s.split(',')
        .map(str::trim)
        .filter(|e| !e.is_empty())
        .map(str::to_string)
        .collect()
}

impl Store {
    /// Connect (lazily: the first request finds out whether etcd is there).
    pub async fn connect(endpoints: &[String], prefix: &str) -> Result<Store> {
        let shown = endpoints.join(",");
        if endpoints.is_empty() {
            return Err(Error::Usage(
                "no etcd endpoint given (--etcd http://127.0.0.1:2379[,...])".into(),
            ));
        }
        let prefix = prefix.trim_end_matches('/').to_string();
        if prefix.is_empty() || !prefix.starts_with('/') {
            return Err(Error::Usage(format!(
                "etcd prefix {prefix:?} must start with / (e.g. --prefix /ipvs/prod)"
            )));
        }
        let opts = ConnectOptions::new()
            .with_connect_timeout(Duration::from_secs(3))
            .with_timeout(REQUEST_TIMEOUT)
            // Notice a silent connection loss (no RST) while watching.
            .with_keep_alive(Duration::from_secs(5), Duration::from_secs(3))
            .with_keep_alive_while_idle(true);
        let client = bounded(&shown, Client::connect(endpoints, Some(opts)))
            .await?
            .map_err(|e| Error::from_etcd(&shown, "connect", e))?;
        Ok(Store {
            client,
            endpoints: shown,
            prefix,
        })
    }

    /// The endpoints, for messages.
    pub fn endpoints(&self) -> &str {
        &self.endpoints
    }

    /// `P/cluster`.
    pub fn cluster_key(&self) -> String {
        format!("{}/cluster", self.prefix)
    }

    /// `P/directors/<name>`.
    pub fn director_key(&self, name: &str) -> String {
        format!("{}/directors/{name}", self.prefix)
    }

    pub(crate) fn client(&self) -> Client {
        self.client.clone()
    }

    /// Run one request with the timeout, its error explained.
    pub(crate) async fn call<T, F>(&self, what: &'static str, f: F) -> Result<T>
    where
        F: Future<Output = std::result::Result<T, etcd_client::Error>>,
    {
        bounded(&self.endpoints, f)
            .await?
            .map_err(|e| Error::from_etcd(&self.endpoints, what, e))
    }

    /// Store a cluster file's text. It must be valid: the caller parses it
    /// first ([`ipvs_cluster::parse`]), so an invalid file never gets here.
    /// Returns the new revision.
    pub async fn put_cluster(&self, text: &str) -> Result<i64> {
        let mut c = self.client();
        let key = self.cluster_key();
        let r = self
            .call("store the cluster file", c.put(key, text, None))
            .await?;
        Ok(r.header().map_or(0, |h| h.revision()))
    }

    /// The stored cluster file (`None`: nothing stored yet) and the
    /// store's current revision (to watch from).
    pub async fn get_cluster(&self) -> Result<(Option<Stored>, i64)> {
        let mut c = self.client();
        let key = self.cluster_key();
        let r = self
            .call("read the cluster file", c.get(key.clone(), None))
            .await?;
        let head = r.header().map_or(0, |h| h.revision());
        let Some(kv) = r.kvs().first() else {
            return Ok((None, head));
        };
        let text = kv.value_str().map_err(|e| Error::Corrupt {
            key,
            detail: format!("not UTF-8 text: {e}"),
        })?;
        let stored = Stored {
            text: text.to_string(),
            revision: kv.mod_revision(),
        };
        Ok((Some(stored), head))
    }

    /// Forget the history before `revision` (etcd's compaction; tests,
    /// maintenance).
    pub async fn compact(&self, revision: i64) -> Result<()> {
        let mut c = self.client();
        self.call("compact", c.compact(revision, None))
            .await
            .map(drop)
    }

    /// A lease for a director's key; it expires `ttl` seconds after the
    /// last keep-alive.
    pub async fn grant(&self, ttl: i64) -> Result<i64> {
        let mut c = self.client();
        let r = self.call("grant a lease", c.lease_grant(ttl, None)).await?;
        Ok(r.id())
    }

    /// Revoke a lease: its keys go at once.
    pub async fn revoke(&self, lease: i64) -> Result<()> {
        let mut c = self.client();
        self.call("revoke the lease", c.lease_revoke(lease))
            .await
            .map(drop)
    }

    /// Write a director's state under its lease.
    pub async fn publish(&self, lease: i64, name: &str, st: &DirectorState) -> Result<()> {
        let mut c = self.client();
        let json = serde_json::to_string(st).map_err(|e| Error::Usage(e.to_string()))?;
        let opts = PutOptions::new().with_lease(lease);
        let key = self.director_key(name);
        self.call("publish the director state", c.put(key, json, Some(opts)))
            .await
            .map(drop)
    }

    /// The stored revision and every live director.
    pub async fn fleet(&self) -> Result<Fleet> {
        let (stored, _) = self.get_cluster().await?;
        let mut c = self.client();
        let dir = format!("{}/directors/", self.prefix);
        let r = self
            .call(
                "list the directors",
                c.get(dir.clone(), Some(GetOptions::new().with_prefix())),
            )
            .await?;
        let directors = r
            .kvs()
            .iter()
            .map(|kv| Member {
                name: String::from_utf8_lossy(&kv.key()[dir.len()..]).into_owned(),
                state: serde_json::from_slice(kv.value()).ok(),
            })
            .collect();
        Ok(Fleet {
            revision: stored.map(|s| s.revision),
            directors,
        })
    }
}

/// `f` with [`REQUEST_TIMEOUT`].
async fn bounded<T>(endpoints: &str, f: impl Future<Output = T>) -> Result<T> {
    tokio::time::timeout(REQUEST_TIMEOUT, f)
        .await
        .map_err(|_| Error::timeout(endpoints, REQUEST_TIMEOUT))
}
