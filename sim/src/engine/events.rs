//! The clock and the event loop: which event comes next, moving time to
//! it, and handing it to the part that handles it.

use std::cmp::Reverse;

use super::{Sim, Summary};

/// What happens next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Next {
    Completion(usize),
    Linger,
    Tick,
    Sensor,
    WebToggle,
    WebPage,
    Trace,
}

impl Sim {
    /// Moves the clock to `t`, accruing service and the load integrals.
    fn advance(&mut self, t: f64) {
        let dt = t - self.now;
        if dt > 0.0 {
            for vm in &mut self.vms {
                if !vm.jobs.is_empty() {
                    vm.attained += vm.rate * dt;
                }
            }
            let measuring = self.now >= self.cfg.warmup && self.now < self.end;
            for h in &mut self.hosts {
                h.win_busy += h.used * dt;
                h.win_jobs += h.jobs as f64 * dt;
                if measuring {
                    h.total_busy += h.used * dt;
                }
            }
        }
        self.now = t.max(self.now);
    }

    fn next_event(&self) -> (f64, Next) {
        let mut best = (f64::INFINITY, Next::Tick);
        let mut offer = |t: f64, n: Next| {
            if t < best.0 {
                best = (t, n);
            }
        };
        // Order of offers = priority on equal times.
        if let Some((t, v)) = self.next_completion() {
            offer(t, Next::Completion(v));
        }
        if let Some(&(t, _)) = self.lingers.front() {
            offer(t, Next::Linger);
        }
        offer(self.next_tick, Next::Tick);
        if let Some(Reverse((t, _, _))) = self.sensors.peek() {
            offer(t.0, Next::Sensor);
        }
        if let Some(w) = &self.web {
            offer(w.next_toggle, Next::WebToggle);
            offer(w.next_page, Next::WebPage);
        }
        if let Some(&(t, _, _)) = self.cfg.trace.get(self.next_trace) {
            offer(t, Next::Trace);
        }
        best
    }

    /// Runs until the measured period is over and every measured connection
    /// has finished, or the drain time is up; returns the summary and the
    /// decision log (empty unless logging).
    pub(super) fn run_inner(mut self) -> (Summary, Vec<(f64, usize, usize)>) {
        let hard_stop = self.end + self.cfg.drain.max(0.0);
        loop {
            let draining = self.now >= self.end;
            if draining && (self.pending == [0, 0] || self.now >= hard_stop) {
                break;
            }
            let (t, what) = self.next_event();
            if !t.is_finite() {
                break;
            }
            let t = if draining { t.min(hard_stop) } else { t };
            self.advance(t);
            if self.now >= hard_stop {
                break;
            }
            self.events += 1;
            match what {
                Next::Completion(v) => self.complete(v),
                Next::Linger => self.linger_expired(),
                Next::Tick => self.tick(),
                Next::Sensor => self.sensor_reading(),
                Next::WebToggle => self.web_toggle(),
                Next::WebPage => self.web_page(),
                Next::Trace => self.trace_arrival(),
            }
        }
        let log = self.log.take().unwrap_or_default();
        (self.summarise(), log)
    }
}
