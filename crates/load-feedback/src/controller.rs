//! Host weights from load reports: a damped, bounded, dead-banded
//! controller with stale-report handling.
//!
//! Each host's target is its static weight scaled by its spare capacity
//! relative to the reporting hosts' mean: `W0 * spare / mean(spare)`, where
//! `spare = 1 - load` of the smoothed load, its distance to the mean load
//! shrunk by a band (a soft threshold: a host's own traffic makes its load
//! vary, and only a host that lost capacity should lose weight). Equal loads give the static
//! weights back (a fixed point, unlike LVS's dynamic-feedback formula,
//! which drifts all weights while every host is off its target load); a
//! host with an antagonist gets a share in proportion to what it can still
//! take. Per period the weight moves a fraction of the way to the target,
//! by at most a bounded step, and is written only when it moved past the
//! dead band since the last write: no oscillation at steady state. A host
//! whose reports stop (or turn bad) keeps its weight for a while, then
//! decays to the static weight; a host that never reported keeps it.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use crate::Report;

/// The controller's tuning. The rates are per [`REFERENCE`] period (2 s)
/// and scaled to the real time between reports and between ticks, so the
/// time constants hold whatever the poll interval, and when rounds come
/// late (a starved machine).
#[derive(Debug, Clone, PartialEq)]
pub struct Params {
    /// Smoothing of the reported load (0 to 1: a new value's share after
    /// one reference period).
    pub smoothing: f64,
    /// Share of the way to the target a weight moves per reference period.
    pub gain: f64,
    /// Largest move per reference period, as a share of the static weight.
    pub max_step: f64,
    /// No write unless the weight moved this share of the static weight
    /// (and at least 1) since the last write.
    pub dead_band: f64,
    /// Bounds of a weight, as shares of the static weight (the lower one
    /// keeps a loaded host in service: draining is the operator's).
    pub min_share: f64,
    /// See `min_share`.
    pub max_share: f64,
    /// Spare capacity below this counts as this (a saturated host still
    /// gets the minimum share, not a division by zero).
    pub min_spare: f64,
    /// A host's load this close to the reporting hosts' mean counts as the
    /// mean, and a farther one this much closer (a soft threshold): the
    /// load a host's own connections bring varies from second to second,
    /// and chasing it only moves connections back and forth; what a
    /// weight must follow is a host that lost capacity (an antagonist).
    pub load_band: f64,
    /// A report older than this is stale: the weight is frozen.
    pub stale_after: Duration,
    /// Stale for longer than this: the weight decays toward the static one.
    pub decay_after: Duration,
    /// Share of the distance to the static weight covered per reference
    /// period while decaying.
    pub decay: f64,
}

/// The period the rates of [`Params`] are given for.
pub const REFERENCE: Duration = Duration::from_secs(2);

/// The share of `rate` (per [`REFERENCE`]) that applies after `dt`
/// (compounded: two periods of 1 s move as far as one of 2 s). A gap is
/// counted as at most five reference periods.
fn per(rate: f64, dt: Duration) -> f64 {
    let n = (dt.as_secs_f64() / REFERENCE.as_secs_f64()).min(5.0);
    1.0 - (1.0 - rate.clamp(0.0, 1.0)).powf(n)
}

impl Default for Params {
    fn default() -> Self {
        Params {
            smoothing: 0.25,
            gain: 0.5,
            max_step: 0.25,
            dead_band: 0.15,
            min_share: 0.10,
            max_share: 2.0,
            min_spare: 0.05,
            load_band: 0.10,
            stale_after: Duration::from_secs(6),
            decay_after: Duration::from_secs(20),
            decay: 0.25,
        }
    }
}

/// One host as the controller follows it.
#[derive(Debug, Clone, PartialEq)]
pub struct HostStats {
    /// The weight of the cluster file.
    pub static_weight: u32,
    /// The controller's weight (before rounding).
    pub weight: f64,
    /// The weight last returned for writing.
    pub written: u32,
    /// Smoothed load (0 to 1), once a report came.
    pub load: Option<f64>,
    /// When the last good report came.
    pub last_report: Option<Instant>,
    /// Good reports taken.
    pub reports: u64,
    /// Reports refused (garbage, out of range, another host's name).
    pub bad_reports: u64,
    /// Weights returned for writing.
    pub writes: u64,
}

impl HostStats {
    fn new(static_weight: u32) -> Self {
        HostStats {
            static_weight,
            weight: f64::from(static_weight),
            written: static_weight,
            load: None,
            last_report: None,
            reports: 0,
            bad_reports: 0,
            writes: 0,
        }
    }

    fn fresh(&self, now: Instant, p: &Params) -> bool {
        self.last_report
            .is_some_and(|t| now.saturating_duration_since(t) <= p.stale_after)
    }
}

/// The weights of a set of hosts, following their reports.
#[derive(Debug, Clone)]
pub struct Controller {
    params: Params,
    hosts: BTreeMap<String, HostStats>,
    /// When the last tick ran (the rates are scaled to the time since).
    last_tick: Option<Instant>,
}

impl Controller {
    /// Hosts with their static weights.
    pub fn new(params: Params, hosts: impl IntoIterator<Item = (String, u32)>) -> Self {
        Controller {
            params,
            hosts: hosts
                .into_iter()
                .map(|(h, w)| (h, HostStats::new(w)))
                .collect(),
            last_tick: None,
        }
    }

    /// The hosts and static weights changed (a new cluster file): a host
    /// kept with the same static weight keeps its state, one whose static
    /// weight changed starts again from it, new hosts start static.
    pub fn set_hosts(&mut self, hosts: impl IntoIterator<Item = (String, u32)>) {
        let mut old = std::mem::take(&mut self.hosts);
        self.hosts = hosts
            .into_iter()
            .map(|(h, w)| {
                let st = match old.remove(&h) {
                    Some(s) if s.static_weight == w => s,
                    _ => HostStats::new(w),
                };
                (h, st)
            })
            .collect();
    }

    /// The hosts followed, by name.
    pub fn hosts(&self) -> impl Iterator<Item = (&str, &HostStats)> {
        self.hosts.iter().map(|(h, s)| (h.as_str(), s))
    }

    /// The parameters.
    pub fn params(&self) -> &Params {
        &self.params
    }

    /// The state of `host`.
    pub fn host(&self, host: &str) -> Option<&HostStats> {
        self.hosts.get(host)
    }

    /// The result of polling `host`'s agent at `now`: a report, or why
    /// there is none usable (the agent did not answer, or lied). Only a
    /// good report of that very host counts.
    pub fn observe(&mut self, host: &str, now: Instant, report: Result<&Report, ()>) {
        let rate = self.params.smoothing;
        let Some(h) = self.hosts.get_mut(host) else {
            return;
        };
        let dt = h
            .last_report
            .map_or(REFERENCE, |t| now.saturating_duration_since(t));
        let smoothing = per(rate, dt);
        match report {
            Ok(r) if r.host == host && r.check().is_ok() => {
                let l = r.load();
                h.load = Some(h.load.map_or(l, |old| old + smoothing * (l - old)));
                h.last_report = Some(now);
                h.reports += 1;
            }
            Ok(_) => h.bad_reports += 1,
            Err(()) => {}
        }
    }

    /// Counts a refused report of `host` (see [`crate::BadReport`]).
    pub fn refused(&mut self, host: &str) {
        if let Some(h) = self.hosts.get_mut(host) {
            h.bad_reports += 1;
        }
    }

    /// One control period at `now`: moves every weight and returns the
    /// hosts whose weight should be written, with the weight.
    pub fn tick(&mut self, now: Instant) -> Vec<(String, u32)> {
        let p = self.params.clone();
        let dt = self
            .last_tick
            .replace(now)
            .map_or(REFERENCE, |t| now.saturating_duration_since(t));
        let (gain, decay) = (per(p.gain, dt), per(p.decay, dt));
        let max_step = p.max_step * (dt.as_secs_f64() / REFERENCE.as_secs_f64()).min(5.0);
        let fresh: Vec<f64> = self
            .hosts
            .values()
            .filter(|h| h.fresh(now, &p))
            .filter_map(|h| h.load)
            .collect();
        let mean_load = if fresh.is_empty() {
            0.0
        } else {
            fresh.iter().sum::<f64>() / fresh.len() as f64
        };
        let spare = |l: f64| {
            let d = l - mean_load;
            let l = mean_load + d.signum() * (d.abs() - p.load_band).max(0.0);
            (1.0 - l).max(p.min_spare)
        };
        let mean = if fresh.is_empty() {
            1.0
        } else {
            fresh.iter().map(|l| spare(*l)).sum::<f64>() / fresh.len() as f64
        };
        let mut out = Vec::new();
        for (name, h) in &mut self.hosts {
            let w0 = f64::from(h.static_weight);
            let next = if h.fresh(now, &p) {
                let target = w0 * spare(h.load.unwrap_or(0.0)) / mean;
                let target = target.clamp(w0 * p.min_share, w0 * p.max_share);
                let step = (gain * (target - h.weight)).clamp(-max_step * w0, max_step * w0);
                h.weight + step
            } else {
                let silent = h
                    .last_report
                    .map_or(Duration::MAX, |t| now.saturating_duration_since(t));
                if silent > p.decay_after {
                    // Within the dead band of home: home (it would
                    // otherwise creep there for as long as it took to get
                    // there from the last write).
                    let w = h.weight + decay * (w0 - h.weight);
                    if (w - w0).abs() < p.dead_band * w0 {
                        w0
                    } else {
                        w
                    }
                } else {
                    h.weight // frozen
                }
            };
            h.weight = next;
            let rounded = next.round().clamp(0.0, f64::from(u32::MAX)) as u32;
            // At the static weight exactly, as soon as it rounds there.
            let rounded = if (next - w0).abs() < 0.5 {
                h.static_weight
            } else {
                rounded
            };
            let band = (p.dead_band * w0).max(1.0);
            let home = rounded == h.static_weight && h.written != h.static_weight;
            if home || f64::from(rounded.abs_diff(h.written)) >= band {
                h.written = rounded;
                h.writes += 1;
                out.push((name.clone(), rounded));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(host: &str, cpu: f64) -> Report {
        Report {
            host: host.into(),
            cpu,
            psi_cpu: 0.0,
            psi_io: 0.0,
            vms: vec![],
        }
    }

    const HOSTS: [&str; 3] = ["h1", "h2", "h3"];

    fn ctl() -> Controller {
        Controller::new(
            Params::default(),
            HOSTS.iter().map(|h| (h.to_string(), 100)),
        )
    }

    /// Polls every host with `load(host)` every 2 s for `secs`; returns the
    /// writes per host.
    fn run(
        c: &mut Controller,
        t: &mut Instant,
        secs: u64,
        load: impl Fn(&str) -> Option<f64>,
    ) -> BTreeMap<String, u32> {
        let mut writes = BTreeMap::new();
        for _ in 0..secs / 2 {
            *t += Duration::from_secs(2);
            for h in HOSTS {
                match load(h) {
                    Some(l) => c.observe(h, *t, Ok(&report(h, l))),
                    None => c.observe(h, *t, Err(())),
                }
            }
            for (h, _) in c.tick(*t) {
                *writes.entry(h).or_default() += 1;
            }
        }
        writes
    }

    #[test]
    fn set_hosts_keeps_the_state_of_unchanged_hosts() {
        let mut c = ctl();
        let mut t = Instant::now();
        run(&mut c, &mut t, 60, |h| {
            Some(if h == "h1" { 0.95 } else { 0.3 })
        });
        let before = c.host("h2").unwrap().clone();
        assert!(c.host("h1").unwrap().written < 100);
        c.set_hosts([
            ("h1".to_string(), 50),
            ("h2".to_string(), 100),
            ("h4".to_string(), 7),
        ]);
        assert_eq!(c.host("h2"), Some(&before));
        assert_eq!(
            c.host("h1").unwrap().written,
            50,
            "new static weight: starts from it"
        );
        assert_eq!(c.host("h4").unwrap().written, 7);
        assert!(c.host("h3").is_none());
        assert_eq!(c.hosts().count(), 3);
    }

    #[test]
    fn equal_loads_keep_the_static_weights_without_a_write() {
        let mut c = ctl();
        let mut t = Instant::now();
        let w = run(&mut c, &mut t, 120, |_| Some(0.6));
        assert!(w.is_empty(), "{w:?}");
        assert_eq!(c.host("h1").unwrap().written, 100);
    }

    #[test]
    fn an_antagonist_moves_weight_off_its_host_then_it_settles() {
        let mut c = ctl();
        let mut t = Instant::now();
        run(&mut c, &mut t, 20, |_| Some(0.3));
        // h1 gets a CPU antagonist: 90 % busy.
        let load = |h: &str| Some(if h == "h1" { 0.9 } else { 0.3 });
        run(&mut c, &mut t, 30, load);
        let h1 = c.host("h1").unwrap().written;
        // 0.9 against 0.3 counts as 0.8 against 0.4 (the load band):
        // spare 0.2 against a mean of 0.47, a target of 43.
        assert!(h1 < 50, "h1 not halved after 30 s: {h1}");
        assert!(c.host("h2").unwrap().written > 100);
        // Steady state: no more than one write per host per 10 s (here none).
        let w = run(&mut c, &mut t, 60, load);
        assert!(w.values().all(|&n| n <= 6), "{w:?}");
        let w = run(&mut c, &mut t, 60, load);
        assert!(w.is_empty(), "still writing at steady state: {w:?}");
    }

    #[test]
    fn the_time_constants_hold_at_any_poll_interval() {
        // The same antagonist polled every 2 s and every 200 ms (or late).
        let weight_after = |step: Duration, secs: u64| {
            let mut c = ctl();
            let mut t = Instant::now();
            for _ in 0..(secs * 1000 / step.as_millis() as u64) {
                t += step;
                for h in HOSTS {
                    let l = if h == "h1" { 0.9 } else { 0.3 };
                    c.observe(h, t, Ok(&report(h, l)));
                }
                c.tick(t);
            }
            c.host("h1").unwrap().weight
        };
        for secs in [10, 20, 30] {
            let slow = weight_after(Duration::from_secs(2), secs);
            let fast = weight_after(Duration::from_millis(200), secs);
            let late = weight_after(Duration::from_millis(2500), secs);
            assert!(
                (slow - fast).abs() < 12.0,
                "after {secs} s: {slow} and {fast}"
            );
            assert!(
                (slow - late).abs() < 12.0,
                "after {secs} s: {slow} and {late}"
            );
        }
    }

    #[test]
    fn noise_within_the_dead_band_writes_nothing() {
        let mut c = ctl();
        let mut t = Instant::now();
        // No agent at all: static behaviour.
        let w = run(&mut c, &mut t, 300, |_| None);
        assert!(w.is_empty());
        let noisy = |h: &str| Some(0.5 + if h == "h2" { 0.03 } else { -0.02 });
        let w = run(&mut c, &mut t, 300, noisy);
        assert!(w.is_empty(), "{w:?}");
    }

    #[test]
    fn a_silent_agent_freezes_then_decays_to_the_static_weight() {
        let mut c = ctl();
        let mut t = Instant::now();
        let load = |h: &str| Some(if h == "h1" { 0.95 } else { 0.2 });
        run(&mut c, &mut t, 40, load);
        let low = c.host("h1").unwrap().written;
        assert!(low < 50, "{low}");
        // h1's agent dies: frozen while stale, then back to 100 within 60 s.
        let dead = |h: &str| if h == "h1" { None } else { Some(0.2) };
        run(&mut c, &mut t, 6, dead);
        assert_eq!(c.host("h1").unwrap().written, low, "frozen at first");
        run(&mut c, &mut t, 54, dead);
        assert_eq!(
            c.host("h1").unwrap().written,
            100,
            "decayed to the static weight"
        );
    }

    #[test]
    fn lying_agents_are_counted_and_change_nothing() {
        let mut c = ctl();
        let mut t = Instant::now();
        for _ in 0..30 {
            t += Duration::from_secs(2);
            // Another host's name, and values out of range.
            c.observe("h1", t, Ok(&report("h2", 0.9)));
            c.observe("h2", t, Ok(&report("h2", 7.0)));
            c.refused("h3");
            assert!(c.tick(t).is_empty());
        }
        for h in HOSTS {
            let s = c.host(h).unwrap();
            assert_eq!((s.written, s.bad_reports, s.reports), (100, 30, 0), "{h}");
        }
    }

    #[test]
    fn a_saturated_host_keeps_a_share() {
        let mut c = ctl();
        let mut t = Instant::now();
        run(&mut c, &mut t, 200, |h| {
            Some(if h == "h1" { 1.0 } else { 0.0 })
        });
        // 1.0 against 0.0 counts as 0.9 against 0.1 (the load band): spare
        // 0.1 against a mean of 0.63, a weight of 16 (written within the
        // dead band of it), above the minimum share.
        let s = c.host("h1").unwrap();
        assert!((s.weight - 15.8).abs() < 0.5, "{}", s.weight);
        assert!(s.written >= 10 && s.written <= 26, "{}", s.written);
        assert!(c.host("h2").unwrap().written <= 200);
    }
}
