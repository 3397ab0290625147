//! Polling the host agents of `load_feedback:`: one round per interval,
//! every agent at once, each poll bounded by the timeout. The daemon turns
//! the rounds into weights (`daemon/feedback.rs`).

use std::sync::Arc;

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
}

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
            tokio::task::spawn_blocking(vmwlch_loaded).await.ok()
        } else {
            None
        };
        let mut polls = Vec::with_capacity(cfg.agents.len());
        while let Some(r) = set.join_next().await {
            if let Ok(p) = r {
                polls.push(p);
            }
        }
        if tx.send(Round { polls, module }).is_err() {
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
