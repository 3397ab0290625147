//! Polling the host agents of `load_feedback:`: one round per interval,
//! every agent at once, each poll bounded by the timeout. The daemon turns
//! the rounds into weights (`daemon/feedback.rs`).

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Arc;

use ipvs_netlink::ipvs::ServiceKey;
use load_feedback::{fetch, FetchError, Report};
use tokio::sync::mpsc::UnboundedSender;

use crate::config::{FeedbackMode, LoadFeedback};

/// How often `mode: auto` asks whether the vmwlch module came or went.
const MODULE_RECHECK: std::time::Duration = std::time::Duration::from_secs(10);

/// One round: every agent's answer, and (in `mode: auto`) whether the
/// kernel has the VMWLCH family now: the module loaded or unloaded while
/// the weights hold still must change where they go.
#[derive(Debug)]
pub struct Round {
    pub polls: Vec<Poll>,
    pub module: Option<bool>,
    /// The director's own load on each destination of each service (wlc's
    /// overhead: `activeconns * 256 + inactconns`): without the module,
    /// the destination weights balance it per host. None in
    /// `mode: host_weights`, or when IPVS cannot be read.
    pub conns: Option<Conns>,
}

/// Overhead by service and destination address (ports of one address in a
/// service summed).
pub type Conns = HashMap<(ServiceKey, IpAddr), u64>;

/// One agent's answer in a round.
#[derive(Debug)]
pub struct Poll {
    pub host: String,
    pub result: Result<Report, FetchError>,
}

impl Poll {
    /// The metrics label of the result.
    pub fn kind(&self) -> &'static str {
        match &self.result {
            Ok(_) => "good",
            Err(FetchError::Bad(_)) => "bad",
            Err(FetchError::Unreachable(_)) => "unreachable",
            Err(FetchError::NoFigures) => "no_figures",
        }
    }
}

/// Polls until the receiver is gone. A round ends when every poll has (the
/// timeout bounds each), so a dead agent never delays the others' reports
/// by more than the timeout.
pub async fn run(cfg: Arc<LoadFeedback>, tx: UnboundedSender<Round>) {
    let mut tick = tokio::time::interval(cfg.interval());
    let mut module_asked: Option<tokio::time::Instant> = None;
    let mut has_module: Option<bool> = None;
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let mut set = tokio::task::JoinSet::new();
        for (host, addr) in &cfg.agents {
            let (host, addr, timeout) = (host.clone(), *addr, cfg.timeout());
            // Blocking std I/O with its own deadline: off the event loop.
            set.spawn_blocking(move || Poll {
                host,
                result: fetch(addr, timeout),
            });
        }
        // A lookup of a missing family makes the kernel run modprobe:
        // asked once per MODULE_RECHECK, not every round.
        let due = module_asked.is_none_or(|t| t.elapsed() >= MODULE_RECHECK);
        let module = if cfg.mode == FeedbackMode::Auto && due {
            module_asked = Some(tokio::time::Instant::now());
            let m = tokio::task::spawn_blocking(vmwlch_loaded).await.ok();
            has_module = m.or(has_module);
            m
        } else {
            None
        };
        // The counts are only for destination weights: not read while the
        // module balances the hosts.
        let conns = match (cfg.mode, has_module) {
            (FeedbackMode::HostWeights, _) | (FeedbackMode::Auto, Some(true)) => None,
            _ => tokio::task::spawn_blocking(read_conns).await.ok().flatten(),
        };
        let mut polls = Vec::with_capacity(cfg.agents.len());
        while let Some(r) = set.join_next().await {
            if let Ok(p) = r {
                polls.push(p);
            }
        }
        if tx
            .send(Round {
                polls,
                module,
                conns,
            })
            .is_err()
        {
            return;
        }
    }
}

/// Is the VMWLCH family registered in this network namespace? (A fresh
/// socket each time: a socket caches the families it resolved.)
fn vmwlch_loaded() -> bool {
    ipvs_netlink::Netlink::open()
        .and_then(|mut nl| nl.resolve(ipvs_netlink::vmwlch::VMWLCH_GENL_NAME))
        .is_ok()
}

/// Every destination address's overhead over all services, or None if IPVS
/// cannot be read (the apply path reports IPVS errors).
fn read_conns() -> Option<Conns> {
    let mut c = ipvs_netlink::ipvs::Client::open().ok()?;
    let all = c.services_with_dests_with(false).ok()?;
    let mut out = Conns::new();
    for (s, dests) in all {
        for d in dests {
            let o = u64::from(d.active_conns) * 256 + u64::from(d.inact_conns);
            *out.entry((s.key, d.addr)).or_insert(0) += o;
        }
    }
    Some(out)
}
