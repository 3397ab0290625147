//! Polling the host agents of `load_feedback:`: one round per interval,
//! every agent at once, each poll bounded by the timeout. The daemon turns
//! the rounds into weights (`daemon/feedback.rs`).

use std::sync::Arc;

use load_feedback::{fetch, FetchError, Report};
use tokio::sync::mpsc::UnboundedSender;

use crate::config::LoadFeedback;

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
pub async fn run(cfg: Arc<LoadFeedback>, tx: UnboundedSender<Vec<Poll>>) {
    let mut tick = tokio::time::interval(cfg.interval());
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
        let mut round = Vec::with_capacity(cfg.agents.len());
        while let Some(r) = set.join_next().await {
            if let Ok(p) = r {
                round.push(p);
            }
        }
        if tx.send(round).is_err() {
            return;
        }
    }
}
