//! `health_checks:`, real-server checks.

use std::net::SocketAddr;

use serde::de::{self, Deserializer};
use serde::Deserialize;

use super::values::{Command, Count, Millis};

#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq, Hash)]
#[serde(rename_all = "lowercase")]
pub enum CheckKind {
    Tcp,
    Http,
    Https,
    Exec,
}

#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum OnFailure {
    /// Set the destination's weight to 0 (established connections continue).
    #[default]
    Quiesce,
    /// Remove the destination from its services.
    Remove,
}

/// Expected HTTP status: one code or a list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Statuses(pub Vec<u16>);

impl<'de> Deserialize<'de> for Statuses {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            One(u16),
            Many(Vec<u16>),
        }
        let v = match Raw::deserialize(d).map_err(|_| {
            de::Error::custom("expected_status must be a status code or a list of codes")
        })? {
            Raw::One(n) => vec![n],
            Raw::Many(v) => v,
        };
        if v.is_empty() || v.iter().any(|&c| !(100..=599).contains(&c)) {
            return Err(de::Error::custom("expected_status codes must be 100..=599"));
        }
        Ok(Statuses(v))
    }
}

/// A health check of one real server.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct HealthCheck {
    /// Destination address:port as it appears in the IPVS services.
    pub real_server: SocketAddr,
    /// Restrict to services whose virtual address:port is this (default: all
    /// services that have the destination).
    #[serde(default)]
    pub service: Option<SocketAddr>,
    #[serde(rename = "type")]
    pub kind: CheckKind,
    /// Port to probe (default: the real server's port).
    #[serde(default)]
    pub port: Option<u16>,
    #[serde(default)]
    pub path: Option<String>,
    /// HTTP Host header (default: the address).
    #[serde(default)]
    pub host: Option<String>,
    #[serde(default)]
    pub expected_status: Option<Statuses>,
    #[serde(default)]
    pub command: Option<Command>,
    #[serde(default = "default_check_interval")]
    pub interval_ms: Millis,
    #[serde(default = "default_check_timeout")]
    pub timeout_ms: Millis,
    #[serde(default = "default_rise")]
    pub rise: Count,
    #[serde(default = "default_fall")]
    pub fall: Count,
    #[serde(default)]
    pub on_failure: OnFailure,
}

fn default_check_interval() -> Millis {
    Millis(2000)
}
fn default_check_timeout() -> Millis {
    Millis(1000)
}
fn default_rise() -> Count {
    Count(2)
}
fn default_fall() -> Count {
    Count(3)
}

impl HealthCheck {
    pub fn target(&self) -> SocketAddr {
        SocketAddr::new(
            self.real_server.ip(),
            self.port.unwrap_or(self.real_server.port()),
        )
    }
    pub fn label(&self) -> String {
        let kind = match self.kind {
            CheckKind::Tcp => "tcp",
            CheckKind::Http => "http",
            CheckKind::Https => "https",
            CheckKind::Exec => "exec",
        };
        format!("{kind}:{}", self.real_server)
    }
}

/// Cross-field rules of `health_checks:`.
pub fn validate(checks: &[HealthCheck]) -> Result<(), String> {
    for (i, hc) in checks.iter().enumerate() {
        let at = format!("health_checks[{i}] ({})", hc.label());
        match hc.kind {
            CheckKind::Exec if hc.command.is_none() => {
                return Err(format!("{at}: type exec needs `command`"));
            }
            CheckKind::Tcp | CheckKind::Http | CheckKind::Https if hc.command.is_some() => {
                return Err(format!("{at}.command: only valid with type exec"));
            }
            _ => {}
        }
        if !matches!(hc.kind, CheckKind::Http | CheckKind::Https)
            && (hc.path.is_some() || hc.expected_status.is_some() || hc.host.is_some())
        {
            return Err(format!(
                "{at}: path/host/expected_status only apply to http and https checks"
            ));
        }
        if let Some(p) = &hc.path {
            if !p.starts_with('/') || p.contains(['\r', '\n', ' ']) {
                return Err(format!(
                    "{at}.path: must start with / and contain no spaces or newlines"
                ));
            }
        }
        if let Some(h) = &hc.host {
            if h.is_empty() || h.contains(['\r', '\n', ' ']) {
                return Err(format!("{at}.host: invalid Host header {h:?}"));
            }
        }
        if hc.timeout_ms.0 == 0 || hc.interval_ms.0 == 0 {
            return Err(format!("{at}: interval_ms and timeout_ms must be > 0"));
        }
        if hc.timeout_ms.0 > hc.interval_ms.0 {
            return Err(format!("{at}.timeout_ms: must not exceed interval_ms"));
        }
    }
    Ok(())
}
