//! `load_feedback:`, host agents polled for load and placement.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::Duration;

use serde::Deserialize;

use super::values::Millis;

/// Where the weights that follow the reports go.
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum FeedbackMode {
    /// `host_weights` where the kernel has the VMWLCH family (the vmwlch
    /// module), else `dest_weights`.
    #[default]
    Auto,
    /// The host weights of the vmwlch host map.
    HostWeights,
    /// A stock kernel: each destination's IPVS weight scaled by its host's
    /// factor (the host map is used for the placement, not applied).
    DestWeights,
}

/// `load_feedback: { agents: {HOST: ADDR:PORT, ...}, ... }`.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct LoadFeedback {
    /// Each host's agent (`host-agent --listen`), by host name as in `hosts:`.
    pub agents: BTreeMap<String, SocketAddr>,
    /// Poll period (the controller's rates are per real time, so a
    /// shorter one gives fresher figures, not a faster controller).
    #[serde(default = "default_interval")]
    pub interval_ms: Millis,
    /// Bound of one poll (connect, ask, read).
    #[serde(default = "default_timeout")]
    pub timeout_ms: Millis,
    #[serde(default)]
    pub mode: FeedbackMode,
    /// Follow VM moves that agents report (only among addresses `hosts:`
    /// already maps; a move holds while the new host's reports are fresh).
    #[serde(default = "yes")]
    pub follow_placement: bool,
}

fn default_interval() -> Millis {
    Millis(2000)
}
fn default_timeout() -> Millis {
    Millis(1000)
}
fn yes() -> bool {
    true
}

impl LoadFeedback {
    pub fn interval(&self) -> Duration {
        Duration::from_millis(self.interval_ms.0)
    }
    pub fn timeout(&self) -> Duration {
        Duration::from_millis(self.timeout_ms.0)
    }
}

/// Cross-field rules; `hosts`: the file's host names (None: the host map
/// comes from elsewhere and is checked when it arrives).
pub(super) fn validate(f: &LoadFeedback, hosts: Option<&[String]>) -> Result<(), String> {
    if f.agents.is_empty() {
        return Err(
            "load_feedback.agents: name at least one host's agent (HOST: ADDR:PORT)".into(),
        );
    }
    if !(200..=60_000).contains(&f.interval_ms.0) {
        return Err(format!(
            "load_feedback.interval_ms: must be 200..=60000, got {}",
            f.interval_ms.0
        ));
    }
    if f.timeout_ms.0 == 0 || f.timeout_ms.0 >= f.interval_ms.0 {
        return Err(format!(
            "load_feedback.timeout_ms: must be 1..{} (below interval_ms), got {}",
            f.interval_ms.0, f.timeout_ms.0
        ));
    }
    if let Some(hosts) = hosts {
        if let Some(h) = f.agents.keys().find(|h| !hosts.contains(h)) {
            return Err(format!(
                "load_feedback.agents.{h}: no such host in hosts: (known: {})",
                hosts.join(", ")
            ));
        }
    }
    Ok(())
}
