//! The workload generators: periodic sensor readings, bursty web page
//! views (ON/OFF modulated, several connections per page view) and a fixed
//! trace of connections.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::{Sim, T};
use crate::model::{Config, WebSpec};
use crate::rng::Rng;
use crate::sched::{SENSOR, WEB};

/// Pending sensor readings, earliest first: `(time, nominal time, sensor)`.
pub(super) type Readings = BinaryHeap<Reverse<(T, T, u32)>>;

/// Web source state.
#[derive(Debug)]
pub(super) struct WebSrc {
    on: bool,
    rate_on: f64,
    rate_off: f64,
    pub(super) next_toggle: f64,
    pub(super) next_page: f64,
}

impl WebSrc {
    /// Starts in ON or OFF with the long-run probabilities, so there is no
    /// start-up transient.
    pub(super) fn start(w: &WebSpec, rng_web: &mut Rng) -> Self {
        let (rate_on, rate_off) = w.page_rates();
        let total = w.on_mean + w.off_mean;
        let on = total <= 0.0 || rng_web.uniform() < w.on_mean / total;
        let next_toggle = rng_web.exp(if on { w.on_mean } else { w.off_mean });
        let rate = if on { rate_on } else { rate_off };
        let next_page = if rate > 0.0 {
            rng_web.exp(1.0 / rate)
        } else {
            f64::INFINITY
        };
        WebSrc {
            on,
            rate_on,
            rate_off,
            next_toggle: if total <= 0.0 {
                f64::INFINITY
            } else {
                next_toggle
            },
            next_page,
        }
    }
}

/// Each sensor's first reading: a phase within the spread plus jitter, as
/// `(time, nominal time, sensor)`.
pub(super) fn first_readings(cfg: &Config, rng_sensor: &mut Rng) -> Readings {
    let mut sensors = BinaryHeap::new();
    if let Some(s) = &cfg.sensor {
        for i in 0..s.count {
            let nominal = rng_sensor.uniform() * s.phase_spread.max(0.0);
            let t = nominal + rng_sensor.uniform() * s.jitter.max(0.0);
            sensors.push(Reverse((T(t), T(nominal), i)));
        }
    }
    sensors
}

impl Sim {
    /// The next sensor reading arrives; schedules that sensor's following one.
    pub(super) fn sensor_reading(&mut self) {
        let Some(Reverse((_, nominal, i))) = self.sensors.pop() else {
            return;
        };
        let Some(spec) = self.cfg.sensor.clone() else {
            return;
        };
        let demand = spec.demand.sample(&mut self.rng_dem_s);
        self.arrive(SENSOR, demand);
        // From the nominal time, so jitter does not accumulate into drift.
        let next_nominal = nominal.0 + spec.period.max(1e-3);
        let t = next_nominal + self.rng_sensor.uniform() * spec.jitter.max(0.0);
        self.sensors.push(Reverse((T(t), T(next_nominal), i)));
    }

    /// The web source switches between ON and OFF.
    pub(super) fn web_toggle(&mut self) {
        let (Some(w), Some(spec)) = (self.web.as_mut(), self.cfg.web.as_ref()) else {
            return;
        };
        w.on = !w.on;
        let now = self.now;
        w.next_toggle = now
            + self
                .rng_web
                .exp(if w.on { spec.on_mean } else { spec.off_mean });
        let rate = if w.on { w.rate_on } else { w.rate_off };
        // Memoryless: redraw the next page view at the new rate.
        w.next_page = if rate > 0.0 {
            now + self.rng_web.exp(1.0 / rate)
        } else {
            f64::INFINITY
        };
    }

    /// A page view: a batch of web connections arrives at once.
    pub(super) fn web_page(&mut self) {
        let Some(spec) = self.cfg.web.clone() else {
            return;
        };
        let batch = self.rng_web.geometric(spec.batch_mean, 64);
        for _ in 0..batch {
            let demand = spec.demand.sample(&mut self.rng_dem_w);
            self.arrive(WEB, demand);
        }
        let now = self.now;
        if let Some(w) = self.web.as_mut() {
            let rate = if w.on { w.rate_on } else { w.rate_off };
            w.next_page = if rate > 0.0 {
                now + self.rng_web.exp(1.0 / rate)
            } else {
                f64::INFINITY
            };
        }
    }

    /// The trace's next connection arrives.
    pub(super) fn trace_arrival(&mut self) {
        if let Some(&(_, service, demand)) = self.cfg.trace.get(self.next_trace) {
            self.next_trace += 1;
            self.arrive(service, demand);
        }
    }
}
