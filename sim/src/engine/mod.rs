//! The discrete-event engine: one run of one configuration.
//!
//! A [`Sim`] holds the whole state of a run; its methods live in the part
//! that does the job:
//!
//! * `events`: the clock, the choice of the next event and the event loop;
//! * `ps`: the host CPU model (processor sharing over vCPU threads), whose
//!   docs give the service model;
//! * `flow`: a connection's life (the scheduler's choice, completion,
//!   inactive linger);
//! * `sources`: the workload generators (sensor readings, web page views,
//!   a fixed trace);
//! * `metrics`: response times, utilisation windows and the run's [`Summary`].

use std::cmp::Ordering;
use std::collections::VecDeque;

use crate::model::Config;
use crate::rng::Rng;
use crate::sched::{DestState, Topology};

mod events;
mod flow;
mod metrics;
mod ps;
mod sources;
#[cfg(test)]
mod tests;

pub use metrics::{max_over_mean, Summary, SvcStats};
pub use ps::ps_rates;

use ps::{Host, Vm};
use sources::{Readings, WebSrc};

/// A time or tag, totally ordered.
#[derive(Clone, Copy, Debug, PartialEq)]
struct T(f64);
impl Eq for T {}
impl PartialOrd for T {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for T {
    fn cmp(&self, o: &Self) -> Ordering {
        self.0.total_cmp(&o.0)
    }
}

/// A simulation in progress.
pub struct Sim {
    cfg: Config,
    now: f64,
    end: f64,
    hosts: Vec<Host>,
    vms: Vec<Vm>,
    dests: Vec<DestState>,
    topology: Topology,
    lingers: VecDeque<(f64, usize)>,
    sensors: Readings,
    web: Option<WebSrc>,
    next_tick: f64,
    next_trace: usize,
    seq: u64,
    rng_sensor: Rng,
    rng_web: Rng,
    rng_dem_s: Rng,
    rng_dem_w: Rng,
    rng_sched: Rng,
    rts: [Vec<f64>; 2],
    pending: [u64; 2],
    imb_util_sum: f64,
    imb_queue_sum: f64,
    windows: u64,
    dropped: u64,
    events: u64,
    /// Scheduling decisions `(time, service, destination)`, when logging.
    log: Option<Vec<(f64, usize, usize)>>,
}

impl Sim {
    /// Prepares a run.
    #[must_use]
    pub fn new(cfg: Config) -> Self {
        // One random stream per job, so that a policy's tie-breaking draws
        // never shift the workload: every policy sees the same arrivals.
        let seed = cfg.seed;
        let mut rng_sensor = Rng::stream(seed, 1);
        let mut rng_web = Rng::stream(seed, 2);
        let (dests, topology) = flow::scheduler_state(&cfg);
        let sensors = sources::first_readings(&cfg, &mut rng_sensor);
        let web = cfg.web.as_ref().map(|w| WebSrc::start(w, &mut rng_web));
        Self {
            now: 0.0,
            end: cfg.warmup + cfg.duration,
            hosts: ps::hosts(&cfg),
            vms: ps::vms(&cfg),
            dests,
            topology,
            lingers: VecDeque::new(),
            sensors,
            web,
            next_tick: metrics::window_len(&cfg),
            next_trace: 0,
            seq: 0,
            rng_sensor,
            rng_web,
            rng_dem_s: Rng::stream(seed, 3),
            rng_dem_w: Rng::stream(seed, 4),
            rng_sched: Rng::stream(seed, 5),
            rts: [Vec::new(), Vec::new()],
            pending: [0, 0],
            imb_util_sum: 0.0,
            imb_queue_sum: 0.0,
            windows: 0,
            dropped: 0,
            events: 0,
            log: None,
            cfg,
        }
    }

    /// Runs to the end and summarises, also returning every scheduling
    /// decision as `(time, service, destination index)`.
    #[must_use]
    pub fn run_logged(mut self) -> (Summary, Vec<(f64, usize, usize)>) {
        self.log = Some(Vec::new());
        self.run_inner()
    }

    /// Runs to the end and summarises.
    #[must_use]
    pub fn run(self) -> Summary {
        self.run_inner().0
    }
}

/// Simulates one configuration.
#[must_use]
pub fn simulate(cfg: Config) -> Summary {
    Sim::new(cfg).run()
}
