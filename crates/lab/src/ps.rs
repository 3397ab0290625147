//! One physical host as an egalitarian processor-sharing server, the model
//! of the former Python lab servers: while n jobs are in service each progresses at
//! capacity/n normal CPUs. Time is passed in (seconds, monotonic) so that
//! the model is exact and testable; lab-serve sleeps the delays it computes.

use std::collections::BTreeMap;

/// Remaining work at or below this counts as done (float rounding).
const EPS: f64 = 1e-6;

#[derive(Debug, Clone)]
pub struct Ps {
    cap: f64,
    jobs: BTreeMap<u64, f64>, // id -> remaining work (s of a normal CPU)
    last: f64,
    /// Seconds with at least one job in service.
    pub busy: f64,
    /// Integral of the number of jobs (job-seconds).
    pub area: f64,
    /// Jobs completed.
    pub done: u64,
}

impl Ps {
    pub fn new(cap: f64, now: f64) -> Self {
        Ps {
            cap,
            jobs: BTreeMap::new(),
            last: now,
            busy: 0.0,
            area: 0.0,
            done: 0,
        }
    }

    pub fn len(&self) -> usize {
        self.jobs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.jobs.is_empty()
    }

    /// Brings the jobs and the counters forward to NOW.
    pub fn advance(&mut self, now: f64) {
        let dt = now - self.last;
        if dt <= 0.0 {
            return;
        }
        self.last = now;
        let n = self.jobs.len();
        if n == 0 {
            return;
        }
        self.busy += dt;
        self.area += n as f64 * dt;
        let step = dt * self.cap / n as f64;
        for r in self.jobs.values_mut() {
            *r -= step;
        }
    }

    pub fn add(&mut self, id: u64, work: f64, now: f64) {
        self.advance(now);
        self.jobs.insert(id, work);
    }

    /// A job that leaves before it is done (its connection went away).
    pub fn remove(&mut self, id: u64, now: f64) {
        self.advance(now);
        self.jobs.remove(&id);
    }

    /// Seconds from the last advance until the next job completes.
    pub fn next_due(&self) -> Option<f64> {
        let n = self.jobs.len() as f64;
        self.jobs
            .values()
            .copied()
            .reduce(f64::min)
            .map(|m| (m * n / self.cap).max(0.0))
    }

    /// Advances to NOW and removes (returns) the jobs that are done.
    pub fn finish(&mut self, now: f64) -> Vec<u64> {
        self.advance(now);
        let ids: Vec<u64> = self
            .jobs
            .iter()
            .filter(|(_, r)| **r <= EPS)
            .map(|(id, _)| *id)
            .collect();
        for id in &ids {
            self.jobs.remove(id);
        }
        self.done += ids.len() as u64;
        ids
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    #[test]
    fn one_job_takes_work_over_capacity() {
        let mut h = Ps::new(1.5, 0.0);
        h.add(1, 0.3, 0.0);
        assert!(close(h.next_due().unwrap(), 0.2));
        assert!(h.finish(0.1).is_empty());
        assert_eq!(h.finish(0.2), vec![1]);
        assert!(close(h.busy, 0.2) && close(h.area, 0.2) && h.done == 1);
        assert_eq!(h.next_due(), None);
    }

    #[test]
    fn jobs_share_the_host() {
        // two equal jobs on one CPU: each takes twice as long
        let mut h = Ps::new(1.0, 0.0);
        h.add(1, 1.0, 0.0);
        h.add(2, 1.0, 0.0);
        assert!(close(h.next_due().unwrap(), 2.0));
        assert!(h.finish(1.999).is_empty());
        assert_eq!(h.finish(2.0), vec![1, 2]);
        assert!(close(h.area, 4.0) && close(h.busy, 2.0));
    }

    #[test]
    fn late_arrival_and_departure() {
        let mut h = Ps::new(1.0, 0.0);
        h.add(1, 1.0, 0.0);
        h.add(2, 1.0, 0.5); // job 1 has 0.5 left, then both at 1/2 speed
        assert!(close(h.next_due().unwrap(), 1.0));
        h.remove(2, 1.0); // job 1: 0.25 left, alone again
        assert!(close(h.next_due().unwrap(), 0.25));
        assert_eq!(h.finish(1.25), vec![1]);
        assert_eq!(h.done, 1, "a removed job is not counted as done");
        h.advance(3.0); // idle time is not busy
        assert!(close(h.busy, 1.25) && close(h.area, 0.5 + 1.0 + 0.25));
    }
}
