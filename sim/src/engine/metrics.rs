//! What a run measures: response times per service, the host load
//! imbalance per utilisation window and over the measured period, and the
//! run's [`Summary`].

use std::cmp::Reverse;

use super::Sim;
use crate::model::Config;
use crate::sched::{SENSOR, WEB};

/// Response-time statistics of one service.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SvcStats {
    /// Measured connections (arrived in the measured period).
    pub count: u64,
    /// Of those, still unfinished when the run stopped (their response time
    /// is counted as the time they had waited so far).
    pub censored: u64,
    /// Mean response time (s).
    pub mean: f64,
    /// 95th percentile response time (s).
    pub p95: f64,
}

impl SvcStats {
    pub(super) fn from(mut rts: Vec<f64>, censored: u64) -> Self {
        if rts.is_empty() {
            return Self::default();
        }
        rts.sort_by(f64::total_cmp);
        let n = rts.len();
        let mean = rts.iter().sum::<f64>() / n as f64;
        // Nearest rank: the smallest value with at least 95% at or below it.
        let rank = (0.95 * n as f64).ceil() as usize;
        let p95 = rts[rank.clamp(1, n) - 1];
        Self {
            count: n as u64,
            censored,
            mean,
            p95,
        }
    }
}

/// What a run reports.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Summary {
    /// Sensor connections.
    pub sensor: SvcStats,
    /// Web connections.
    pub web: SvcStats,
    /// All connections.
    pub all: SvcStats,
    /// Time average over windows of max/mean of host utilisation
    /// (`used / capacity`, i.e. utilisation weighted by host capacity).
    pub imb_util: f64,
    /// Time average over windows of max/mean of connections in service per
    /// unit of host capacity (sees the difference between two saturated
    /// hosts that utilisation cannot).
    pub imb_queue: f64,
    /// max/mean over hosts of the utilisation averaged over the measured period.
    pub imb_longrun: f64,
    /// Mean utilisation of each host over the measured period.
    pub host_util: Vec<f64>,
    /// Connections for which the scheduler found no destination.
    pub dropped: u64,
    /// Events processed.
    pub events: u64,
}

/// Length of a utilisation window (s); 1 s when the configuration has none.
pub(super) fn window_len(cfg: &Config) -> f64 {
    if cfg.window > 0.0 {
        cfg.window
    } else {
        1.0
    }
}

impl Sim {
    /// A utilisation window ends: records its imbalance when it lies in the
    /// measured period and starts the next one.
    pub(super) fn tick(&mut self) {
        let w = window_len(&self.cfg);
        if self.now > self.cfg.warmup && self.now <= self.end + 1e-9 {
            let util: Vec<f64> = self
                .hosts
                .iter()
                .map(|h| h.win_busy / (w * h.spec_cores * h.speed))
                .collect();
            let queue: Vec<f64> = self
                .hosts
                .iter()
                .map(|h| h.win_jobs / (w * h.spec_cores * h.speed))
                .collect();
            self.imb_util_sum += max_over_mean(&util);
            self.imb_queue_sum += max_over_mean(&queue);
            self.windows += 1;
        }
        for h in &mut self.hosts {
            h.win_busy = 0.0;
            h.win_jobs = 0.0;
        }
        self.next_tick += w;
    }

    /// The run's summary, once the run has stopped.
    pub(super) fn summarise(mut self) -> Summary {
        // Unfinished measured connections: censored at their wait so far.
        let mut censored = [0u64; 2];
        for (v, vm) in self.vms.iter().enumerate() {
            let s = self.dests[v].service.min(1);
            for Reverse(j) in vm.jobs.iter() {
                if j.arrival.0 >= 0.0 {
                    self.rts[s].push(self.now - j.arrival.0);
                    censored[s] += 1;
                }
            }
        }
        let measured = self.cfg.duration.max(1e-9);
        let host_util: Vec<f64> = self
            .hosts
            .iter()
            .map(|h| h.total_busy / (measured * h.spec_cores * h.speed))
            .collect();
        let all: Vec<f64> = self.rts.iter().flatten().copied().collect();
        let [rs, rw] = self.rts;
        let windows = self.windows.max(1) as f64;
        Summary {
            sensor: SvcStats::from(rs, censored[SENSOR]),
            web: SvcStats::from(rw, censored[WEB]),
            all: SvcStats::from(all, censored[0] + censored[1]),
            imb_util: self.imb_util_sum / windows,
            imb_queue: self.imb_queue_sum / windows,
            imb_longrun: max_over_mean(&host_util),
            host_util,
            dropped: self.dropped,
            events: self.events,
        }
    }
}

/// max/mean of the values; 1 when the mean is not positive (all idle is balanced).
#[must_use]
pub fn max_over_mean(xs: &[f64]) -> f64 {
    if xs.is_empty() {
        return 1.0;
    }
    let mean = xs.iter().sum::<f64>() / xs.len() as f64;
    if mean <= 0.0 {
        return 1.0;
    }
    xs.iter().copied().fold(f64::MIN, f64::max) / mean
}
