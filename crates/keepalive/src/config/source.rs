//! `cluster_source:`: where the services and host map come from when they
//! are not in this file.

use serde::Deserialize;

/// Where the desired IPVS state comes from (absent: this file's
/// `services:`/`hosts:`/`options:`).
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum ClusterSourceConfig {
    /// The cluster file stored in etcd by `ipvsctl apply --etcd`.
    Etcd(EtcdSource),
}

/// `cluster_source: { etcd: { endpoints: [...], prefix: P, name: N } }`.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct EtcdSource {
    /// Client URLs, e.g. `http://10.0.0.5:2379`.
    pub endpoints: Vec<String>,
    /// Key prefix: the file at `PREFIX/cluster`.
    #[serde(default = "default_prefix")]
    pub prefix: String,
    /// This director's name under `PREFIX/directors/` (default: the host name).
    #[serde(default)]
    pub name: Option<String>,
}

fn default_prefix() -> String {
    "/ipvs".into()
}

impl EtcdSource {
    /// The director name: as configured, else the host name.
    pub fn director_name(&self) -> String {
        self.name.clone().unwrap_or_else(|| {
            // The kernel's host name (what gethostname(2) returns).
            std::fs::read_to_string("/proc/sys/kernel/hostname")
                .map(|h| h.trim().to_string())
                .ok()
                .filter(|h| !h.is_empty())
                .unwrap_or_else(|| "unknown".into())
        })
    }
}

/// Cross-field rules: one source of services, usable endpoints and prefix.
pub(super) fn validate(src: Option<&ClusterSourceConfig>, has_cluster: bool) -> Result<(), String> {
    let Some(ClusterSourceConfig::Etcd(e)) = src else {
        return Ok(());
    };
    if has_cluster {
        return Err(
            "cluster_source: etcd and services:/hosts: in this file exclude each other \
             (store the services with `ipvsctl apply --etcd`)"
                .into(),
        );
    }
    if e.endpoints.iter().all(|p| p.trim().is_empty()) {
        return Err(
            "cluster_source.etcd.endpoints: give at least one, e.g. [http://127.0.0.1:2379]".into(),
        );
    }
    if !e.prefix.starts_with('/') {
        return Err(format!(
            "cluster_source.etcd.prefix: {:?} must start with / (e.g. /ipvs)",
            e.prefix
        ));
    }
    if let Some(n) = &e.name {
        if n.is_empty() || n.contains('/') {
            return Err(format!(
                "cluster_source.etcd.name: {n:?} must be non-empty and without /"
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::config::{ClusterSourceConfig, Config};

    const ETCD: &str =
        "cluster_source:\n  etcd:\n    endpoints: [http://127.0.0.1:2379]\n    name: fe1\n";

    #[test]
    fn etcd_source_parses_with_defaults() {
        let c = Config::parse(ETCD, "k.yaml").expect("valid");
        let Some(ClusterSourceConfig::Etcd(e)) = &c.cluster_source else {
            panic!("no etcd source: {c:?}");
        };
        assert_eq!(e.prefix, "/ipvs");
        assert_eq!(e.director_name(), "fe1");
        assert!(c.cluster.is_none());
    }

    #[test]
    fn etcd_source_rules() {
        let with_services =
            format!("{ETCD}services:\n  - {{protocol: tcp, address: 10.0.0.1, port: 80}}\n");
        let e = Config::parse(&with_services, "k.yaml").expect_err("both");
        assert!(e.to_string().contains("exclude each other"), "{e}");
        let no_ep = "cluster_source:\n  etcd:\n    endpoints: []\n";
        let e = Config::parse(no_ep, "k.yaml").expect_err("no endpoint");
        assert!(e.to_string().contains("endpoints"), "{e}");
        let bad_prefix = "cluster_source:\n  etcd:\n    endpoints: [x:1]\n    prefix: ipvs\n";
        let e = Config::parse(bad_prefix, "k.yaml").expect_err("prefix");
        assert!(e.to_string().contains("must start with /"), "{e}");
        let unknown = "cluster_source:\n  consul: {}\n";
        assert!(Config::parse(unknown, "k.yaml").is_err());
    }
}
