//! The discrete-event engine.
//!
//! Service model (processor sharing over vCPU threads): a host has `cores`
//! cores of speed `speed`. A VM with `n` connections in service and `k`
//! vCPUs has `min(n, k)` runnable vCPU threads; the host's cores are shared
//! equally by all runnable threads of all its VMs (each thread gets at most
//! one core), and a VM's connections share its threads' capacity equally.
//! So every connection on VM `v` progresses at
//!
//! ```text
//! r(v) = min(n_v, k_v) * speed * min(1, cores / T) / n_v,   T = sum over the host's VMs of min(n_u, k_u)
//! ```
//!
//! and all requests on a host share its capacity. With enough vCPUs this is
//! plain per-host processor sharing with a one-core cap per connection.
//!
//! Because all connections of a VM progress at the same rate, each VM keeps
//! one counter `attained` (work received by every one of its connections
//! since the start); a connection arriving with demand `D` finishes when the
//! counter reaches `attained_at_arrival + D` (its *tag*). The next completion
//! of a VM is its least tag; rates change only when a connection arrives at
//! or leaves the host.

use std::cmp::{Ordering, Reverse};
use std::collections::{BinaryHeap, VecDeque};

use crate::model::{Config, HostSpec, VmSpec};
use crate::rng::Rng;
use crate::sched::{choose, DestState, Topology, SENSOR, WEB};

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

/// A connection in service.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Job {
    /// Finish tag (attained-service level at which it completes).
    tag: T,
    /// Arrival order (tie-break, determinism).
    seq: u64,
    /// Arrival time.
    arrival: T,
}

/// Run-time state of a VM.
#[derive(Debug)]
struct Vm {
    host: usize,
    vcpus: u32,
    jobs: BinaryHeap<Reverse<Job>>,
    /// Work received by each of its connections since the start.
    attained: f64,
    /// Current per-connection rate.
    rate: f64,
}

/// Run-time state of a host.
#[derive(Debug, Default, Clone)]
struct Host {
    spec_cores: f64,
    speed: f64,
    vms: std::ops::Range<usize>,
    /// Capacity in use now.
    used: f64,
    /// Connections in service now.
    jobs: usize,
    /// Integrals over the current window and over the measured period.
    win_busy: f64,
    win_jobs: f64,
    total_busy: f64,
}

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
    fn from(mut rts: Vec<f64>, censored: u64) -> Self {
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

/// Web source state.
#[derive(Debug)]
struct WebSrc {
    on: bool,
    rate_on: f64,
    rate_off: f64,
    next_toggle: f64,
    next_page: f64,
}

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

/// Rate of every connection on each VM of a host, and the capacity used,
/// for the VMs' connection counts `n` and vCPUs `k` (see the module docs).
#[must_use]
pub fn ps_rates(cores: f64, speed: f64, n: &[usize], k: &[u32]) -> (Vec<f64>, f64) {
    let threads: Vec<f64> = n
        .iter()
        .zip(k)
        .map(|(&n, &k)| n.min(k as usize) as f64)
        .collect();
    let t: f64 = threads.iter().sum();
    if t <= 0.0 {
        return (vec![0.0; n.len()], 0.0);
    }
    let per_thread = speed * (cores / t).min(1.0);
    let rates = n
        .iter()
        .zip(&threads)
        .map(|(&n, &th)| {
            if n == 0 {
                0.0
            } else {
                th * per_thread / n as f64
            }
        })
        .collect();
    (rates, speed * t.min(cores))
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
    /// Sensor readings: (time, nominal time, sensor).
    sensors: BinaryHeap<Reverse<(T, T, u32)>>,
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
        let seed = cfg.seed;
        let mut rng_sensor = Rng::stream(seed, 1);
        let mut rng_web = Rng::stream(seed, 2);
        let hosts: Vec<Host> = cfg
            .hosts
            .iter()
            .enumerate()
            .map(|(h, spec): (usize, &HostSpec)| {
                let first = cfg.vms.iter().position(|v| v.host == h).unwrap_or(0);
                let len = cfg.vms.iter().filter(|v| v.host == h).count();
                Host {
                    spec_cores: spec.cores,
                    speed: spec.speed,
                    vms: first..first + len,
                    ..Host::default()
                }
            })
            .collect();
        let vms = cfg
            .vms
            .iter()
            .map(|v: &VmSpec| Vm {
                host: v.host,
                vcpus: v.vcpus.max(1),
                jobs: BinaryHeap::new(),
                attained: 0.0,
                rate: 0.0,
            })
            .collect();
        let dests: Vec<DestState> = cfg
            .vms
            .iter()
            .map(|v| DestState {
                service: v.service,
                weight: v.weight,
                active: 0,
                inactive: 0,
            })
            .collect();
        let vm_host: Vec<usize> = cfg.vms.iter().map(|v| v.host).collect();
        let weights: Vec<u32> = cfg.hosts.iter().map(|h| h.weight).collect();
        let topology = Topology::new(cfg.policy, &vm_host, &weights, &dests);
        let mut sensors = BinaryHeap::new();
        if let Some(s) = &cfg.sensor {
            for i in 0..s.count {
                let nominal = rng_sensor.uniform() * s.phase_spread.max(0.0);
                let t = nominal + rng_sensor.uniform() * s.jitter.max(0.0);
                sensors.push(Reverse((T(t), T(nominal), i)));
            }
        }
        let web = cfg.web.as_ref().map(|w| {
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
        });
        let end = cfg.warmup + cfg.duration;
        let window = if cfg.window > 0.0 { cfg.window } else { 1.0 };
        Self {
            now: 0.0,
            end,
            hosts,
            vms,
            dests,
            topology,
            lingers: VecDeque::new(),
            sensors,
            web,
            next_tick: window,
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

    fn window(&self) -> f64 {
        if self.cfg.window > 0.0 {
            self.cfg.window
        } else {
            1.0
        }
    }

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

    /// Recomputes the rates of the VMs of host `h`.
    fn rerate(&mut self, h: usize) {
        let Some(host) = self.hosts.get(h) else {
            return;
        };
        let range = host.vms.clone();
        let n: Vec<usize> = self.vms[range.clone()]
            .iter()
            .map(|v| v.jobs.len())
            .collect();
        let k: Vec<u32> = self.vms[range.clone()].iter().map(|v| v.vcpus).collect();
        let (rates, used) = ps_rates(host.spec_cores, host.speed, &n, &k);
        for (vm, r) in self.vms[range].iter_mut().zip(rates) {
            vm.rate = r;
        }
        let host = &mut self.hosts[h];
        host.used = used;
        host.jobs = n.iter().sum();
    }

    fn next_completion(&self) -> Option<(f64, usize)> {
        let mut best: Option<(f64, usize)> = None;
        for (i, vm) in self.vms.iter().enumerate() {
            if let Some(Reverse(j)) = vm.jobs.peek() {
                if vm.rate > 0.0 {
                    let t = self.now + ((j.tag.0 - vm.attained).max(0.0) / vm.rate);
                    if best.is_none_or(|(b, _)| t < b) {
                        best = Some((t, i));
                    }
                }
            }
        }
        best
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

    /// A new connection to `service` with work `demand` arrives now.
    fn arrive(&mut self, service: usize, demand: f64) {
        let measured = self.now >= self.cfg.warmup && self.now < self.end;
        let mut tie = || self.rng_sched.next_u32();
        let Some(d) = choose(
            self.cfg.policy,
            &self.topology,
            &self.dests,
            service,
            &mut tie,
        ) else {
            self.dropped += 1;
            return;
        };
        let Some(vm) = self.vms.get_mut(d) else {
            self.dropped += 1;
            return;
        };
        self.seq += 1;
        vm.jobs.push(Reverse(Job {
            tag: T(vm.attained + demand.max(0.0)),
            seq: self.seq,
            // Negative arrival marks a connection that is not measured.
            arrival: T(if measured { self.now } else { -1.0 }),
        }));
        let h = vm.host;
        if let Some(log) = self.log.as_mut() {
            log.push((self.now, service, d));
        }
        self.dests[d].active += 1;
        if measured {
            self.pending[service.min(1)] += 1;
        }
        self.rerate(h);
    }

    fn complete(&mut self, v: usize) {
        let Some(vm) = self.vms.get_mut(v) else {
            return;
        };
        let Some(Reverse(job)) = vm.jobs.pop() else {
            return;
        };
        // Pin the counter to the tag to keep rounding from accumulating.
        vm.attained = vm.attained.max(job.tag.0);
        let h = vm.host;
        let service = self.dests[v].service.min(1);
        if job.arrival.0 >= 0.0 {
            self.rts[service].push(self.now - job.arrival.0);
            self.pending[service] = self.pending[service].saturating_sub(1);
        }
        self.dests[v].active -= 1;
        if self.cfg.linger > 0.0 {
            self.dests[v].inactive += 1;
            self.lingers.push_back((self.now + self.cfg.linger, v));
        }
        self.rerate(h);
    }

    fn tick(&mut self) {
        let w = self.window();
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

    fn sensor_reading(&mut self) {
        let Some(Reverse((_, nominal, i))) = self.sensors.pop() else {
            return;
        };
        let Some(spec) = self.cfg.sensor.clone() else {
            return;
        };
        let demand = spec.demand.sample(&mut self.rng_dem_s);
        self.arrive(SENSOR, demand);
        let next_nominal = nominal.0 + spec.period.max(1e-3);
        let t = next_nominal + self.rng_sensor.uniform() * spec.jitter.max(0.0);
        self.sensors.push(Reverse((T(t), T(next_nominal), i)));
    }

    fn web_toggle(&mut self) {
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

    fn web_page(&mut self) {
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

    fn run_inner(mut self) -> (Summary, Vec<(f64, usize, usize)>) {
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
                Next::Linger => {
                    if let Some((_, v)) = self.lingers.pop_front() {
                        if let Some(d) = self.dests.get_mut(v) {
                            d.inactive -= 1;
                        }
                    }
                }
                Next::Tick => self.tick(),
                Next::Sensor => self.sensor_reading(),
                Next::WebToggle => self.web_toggle(),
                Next::WebPage => self.web_page(),
                Next::Trace => {
                    if let Some(&(_, service, demand)) = self.cfg.trace.get(self.next_trace) {
                        self.next_trace += 1;
                        self.arrive(service, demand);
                    }
                }
            }
        }
        let log = self.log.take().unwrap_or_default();
        (self.summarise(), log)
    }

    fn summarise(mut self) -> Summary {
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

/// Simulates one configuration.
#[must_use]
pub fn simulate(cfg: Config) -> Summary {
    Sim::new(cfg).run()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Calibration, Placement, Scenario, SensorSpec, WebSpec};
    use crate::rng::Demand;
    use crate::sched::Policy;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    /// One host of `cores` cores at `speed`, VMs with the given (service,
    /// vcpus), connections from `trace`.
    fn tiny(cores: f64, speed: f64, vms: &[(usize, u32)], trace: Vec<(f64, usize, f64)>) -> Config {
        Config {
            hosts: vec![HostSpec {
                cores,
                speed,
                weight: 1,
            }],
            vms: vms
                .iter()
                .map(|&(service, vcpus)| VmSpec {
                    host: 0,
                    service,
                    weight: 1,
                    vcpus,
                })
                .collect(),
            sensor: None,
            web: None,
            trace,
            linger: 0.0,
            warmup: 0.0,
            duration: 10.0,
            drain: 100.0,
            window: 1.0,
            policy: Policy::Wlc,
            seed: 1,
        }
    }

    /// (mean, p95, count) of all connections.
    fn rts(cfg: Config) -> Vec<f64> {
        let s = simulate(cfg);
        vec![s.all.mean, s.all.p95, s.all.count as f64]
    }

    #[test]
    fn ps_rate_formula() {
        let k4 = [4, 4, 4, 4];
        let (r, used) = ps_rates(4.0, 1.0, &[1, 0, 0, 0], &k4);
        assert!(close(r[0], 1.0) && close(used, 1.0) && r[1] == 0.0);
        // 8 connections on one VM with 4 vCPUs: 4 cores shared by 8.
        let (r, used) = ps_rates(4.0, 1.0, &[8, 0, 0, 0], &k4);
        assert!(close(r[0], 0.5) && close(used, 4.0));
        // 6 runnable threads on 4 cores: each thread 2/3 of a core.
        let (r, used) = ps_rates(4.0, 1.0, &[3, 3, 0, 0], &k4);
        assert!(close(r[0], 2.0 / 3.0) && close(r[1], 2.0 / 3.0) && close(used, 4.0));
        // vCPU cap: 5 connections on a 2-vCPU VM share 2 cores.
        let (r, used) = ps_rates(4.0, 1.0, &[1, 5], &[2, 2]);
        assert!(close(r[0], 1.0) && close(r[1], 0.4) && close(used, 3.0));
        // Speed scales everything.
        let (r, used) = ps_rates(2.0, 1.5, &[1], &[8]);
        assert!(close(r[0], 1.5) && close(used, 1.5));
        let (r, used) = ps_rates(2.0, 1.0, &[0, 0], &[1, 1]);
        assert_eq!((r, used), (vec![0.0, 0.0], 0.0));
    }

    #[test]
    fn single_connection_runs_at_core_speed() {
        let cfg = tiny(1.0, 2.0, &[(SENSOR, 1)], vec![(0.5, SENSOR, 1.0)]);
        let s = simulate(cfg);
        assert_eq!(s.sensor.count, 1);
        assert!(close(s.sensor.mean, 0.5), "{s:?}");
        // Utilisation over the 10 s measured: busy 0.5 s.
        assert!(close(s.host_util[0], 0.05), "{:?}", s.host_util);
    }

    #[test]
    fn processor_sharing_two_jobs() {
        // Demands 1 and 2 arriving together on one core: both at rate 1/2
        // until t = 2 (first done), then the second alone: done at t = 3.
        let cfg = tiny(
            1.0,
            1.0,
            &[(SENSOR, 8)],
            vec![(0.0, SENSOR, 1.0), (0.0, SENSOR, 2.0)],
        );
        assert_eq!(rts(cfg), vec![2.5, 3.0, 2.0]);
        // Staggered: A (2) at 0 alone until 1 (1 left), B (1) arrives; both
        // at 1/2: both finish at 3. RTs 3 and 2.
        let cfg = tiny(
            1.0,
            1.0,
            &[(SENSOR, 8)],
            vec![(0.0, SENSOR, 2.0), (1.0, SENSOR, 1.0)],
        );
        let s = simulate(cfg);
        assert!(close(s.all.mean, 2.5) && close(s.all.p95, 3.0), "{s:?}");
    }

    #[test]
    fn processor_sharing_multicore_and_vcpu_caps() {
        // 3 jobs of 1 on 2 cores: each gets 2/3 of a core: all done at 1.5.
        let cfg = tiny(2.0, 1.0, &[(SENSOR, 8)], vec![(0.0, SENSOR, 1.0); 3]);
        let s = simulate(cfg);
        assert!(close(s.all.mean, 1.5) && close(s.all.p95, 1.5), "{s:?}");
        // 2 jobs on a 1-vCPU VM of a 4-core host: one core shared: 2.0.
        let cfg = tiny(4.0, 1.0, &[(SENSOR, 1)], vec![(0.0, SENSOR, 1.0); 2]);
        let s = simulate(cfg);
        assert!(close(s.all.mean, 2.0), "{s:?}");
        // Two VMs of the same service, one job each (WLC spreads them): no
        // sharing on 2 cores.
        let cfg = tiny(
            2.0,
            1.0,
            &[(SENSOR, 1), (SENSOR, 1)],
            vec![(0.0, SENSOR, 1.0); 2],
        );
        let s = simulate(cfg);
        assert!(close(s.all.mean, 1.0), "{s:?}");
    }

    #[test]
    fn work_is_conserved() {
        // Random-ish trace on a 2-core host: busy time = work / speed while
        // the host never idles with work pending.
        let mut r = Rng::new(3);
        let mut t = 0.0;
        let mut work = 0.0;
        let mut trace = Vec::new();
        for _ in 0..200 {
            t += r.exp(0.05);
            let d = r.exp(0.08);
            work += d;
            trace.push((t, SENSOR, d));
        }
        let mut cfg = tiny(2.0, 1.25, &[(SENSOR, 4), (SENSOR, 4)], trace);
        cfg.duration = 1000.0;
        let s = simulate(cfg);
        assert_eq!(s.all.count, 200);
        assert_eq!(s.all.censored, 0);
        let busy = s.host_util[0] * 1000.0 * 2.0 * 1.25;
        assert!((busy - work).abs() < 1e-6, "{busy} {work}");
        // Nobody finishes faster than alone on one core.
        assert!(s.all.mean >= 0.08 / 1.25 * 0.5);
    }

    #[test]
    fn lingering_connections_count_as_inactive() {
        // Two VMs (implicit hosts under WLC). A short connection at t=0;
        // during its linger, the next one must go to the other VM (1 inactive
        // vs 0); after the linger both are equal again.
        let trace = vec![(0.0, SENSOR, 0.1), (1.0, SENSOR, 0.1), (2.0, SENSOR, 0.1)];
        let mut cfg = tiny(2.0, 1.0, &[(SENSOR, 1), (SENSOR, 1)], trace);
        cfg.linger = 5.0;
        let (_, log) = Sim::new(cfg.clone()).run_logged();
        assert_eq!(log.len(), 3);
        assert_ne!(log[0].2, log[1].2);
        // Both have one inactive at t=2: either is fine; without linger the
        // second connection sees two idle VMs: over seeds both are chosen.
        cfg.linger = 0.0;
        let mut seen = [false; 2];
        for seed in 0..32 {
            cfg.seed = seed;
            let (_, log) = Sim::new(cfg.clone()).run_logged();
            seen[log[1].2] = true;
        }
        assert_eq!(seen, [true, true]);
    }

    #[test]
    fn censored_when_overloaded() {
        // 1 core, 20 s of work arriving at once, drain cut at 5 s after end.
        let mut cfg = tiny(
            1.0,
            1.0,
            &[(SENSOR, 8)],
            vec![(0.0, SENSOR, 10.0), (0.0, SENSOR, 10.0)],
        );
        cfg.duration = 1.0;
        cfg.drain = 5.0;
        let s = simulate(cfg);
        assert_eq!(s.all.count, 2);
        assert_eq!(s.all.censored, 2);
        assert!(close(s.all.mean, 6.0), "{s:?}");
    }

    fn arrivals(cfg: Config) -> Vec<(f64, usize, usize)> {
        Sim::new(cfg).run_logged().1
    }

    #[test]
    fn sensors_report_every_period() {
        let sensor = SensorSpec {
            count: 10,
            period: 5.0,
            phase_spread: 0.0,
            jitter: 0.0,
            demand: Demand::Const(0.01),
        };
        let mut cfg = tiny(4.0, 1.0, &[(SENSOR, 4), (SENSOR, 4)], vec![]);
        cfg.sensor = Some(sensor.clone());
        cfg.duration = 100.0;
        cfg.drain = 0.0;
        let log = arrivals(cfg.clone());
        // Synchronised: 10 readings at every multiple of 5 s.
        let before: Vec<_> = log.iter().filter(|a| a.0 < 100.0).collect();
        assert_eq!(before.len(), 200);
        assert!(before
            .iter()
            .all(|a| a.1 == SENSOR && (a.0 / 5.0).fract() == 0.0));
        // Spread phases and jitter: still one reading per sensor and period,
        // not all at once.
        cfg.sensor = Some(SensorSpec {
            phase_spread: 5.0,
            jitter: 0.5,
            ..sensor
        });
        let log = arrivals(cfg);
        let n = log.iter().filter(|a| a.0 < 100.0).count();
        assert!((190..=200).contains(&n), "{n}");
        let distinct: std::collections::BTreeSet<u64> = log.iter().map(|a| a.0.to_bits()).collect();
        assert_eq!(distinct.len(), log.len());
    }

    #[test]
    fn web_arrivals_are_bursty_with_the_right_mean() {
        let web = WebSpec {
            mean_rate: 20.0,
            batch_mean: 3.0,
            on_mean: 4.0,
            off_mean: 8.0,
            burst_ratio: 8.0,
            demand: Demand::Const(0.001),
        };
        let mut cfg = tiny(4.0, 1.0, &[(WEB, 4)], vec![]);
        cfg.web = Some(web);
        cfg.duration = 4000.0;
        cfg.drain = 0.0;
        let log = arrivals(cfg);
        let n = log.iter().filter(|a| a.0 < 4000.0).count() as f64;
        assert!((n / 4000.0 - 20.0).abs() < 1.5, "rate {}", n / 4000.0);
        assert!(log.iter().all(|a| a.1 == WEB));
        // Batches: connections sharing a timestamp.
        let same = log.windows(2).filter(|w| w[0].0 == w[1].0).count() as f64;
        assert!(same / n > 0.5, "{same} {n}");
        // Index of dispersion of 1-s counts far above Poisson's 1.
        let mut counts = vec![0.0f64; 4000];
        for a in &log {
            if let Some(c) = counts.get_mut(a.0 as usize) {
                *c += 1.0;
            }
        }
        let m = counts.iter().sum::<f64>() / counts.len() as f64;
        let v = counts.iter().map(|c| (c - m) * (c - m)).sum::<f64>() / counts.len() as f64;
        assert!(v / m > 4.0, "dispersion {}", v / m);
    }

    /// End to end: a web connection keeps host 0 busy; a new sensor
    /// connection goes to host 1 under VMWLC/H every time, while WLC and
    /// VMWLC see two idle sensor VMs and pick either.
    #[test]
    fn schedulers_see_the_right_load_end_to_end() {
        let base = Config {
            hosts: vec![
                HostSpec {
                    cores: 1.0,
                    speed: 1.0,
                    weight: 1,
                };
                2
            ],
            vms: vec![
                VmSpec {
                    host: 0,
                    service: WEB,
                    weight: 1,
                    vcpus: 1,
                },
                VmSpec {
                    host: 0,
                    service: SENSOR,
                    weight: 1,
                    vcpus: 1,
                },
                VmSpec {
                    host: 1,
                    service: SENSOR,
                    weight: 1,
                    vcpus: 1,
                },
            ],
            trace: vec![(0.0, WEB, 100.0), (1.0, SENSOR, 0.1)],
            ..tiny(1.0, 1.0, &[], vec![])
        };
        for policy in [
            Policy::Wlc,
            Policy::Vmwlc,
            Policy::Vmwlch,
            Policy::VmwlchStudy,
        ] {
            let mut seen = [false; 3];
            for seed in 0..32 {
                let cfg = Config {
                    policy,
                    seed,
                    ..base.clone()
                };
                let (_, log) = Sim::new(cfg).run_logged();
                assert_eq!(log[0].2, 0);
                seen[log[1].2] = true;
            }
            if policy == Policy::Vmwlch {
                assert_eq!(seen, [false, false, true], "{policy:?}");
            } else {
                // VMWLC/H* schedules sensors with VMWLC, as the study did.
                assert_eq!(seen, [false, true, true], "{policy:?}");
            }
        }
    }

    #[test]
    fn runs_are_deterministic_and_policies_share_the_workload() {
        let cal = Calibration {
            linger: 5.0,
            ..Calibration::default()
        };
        let mk = |p| {
            let mut c = cal.config(Scenario::Hybrid(60), Placement::Skewed, p, 9);
            c.warmup = 5.0;
            c.duration = 30.0;
            c
        };
        let a = Sim::new(mk(Policy::Vmwlch)).run_logged();
        let b = Sim::new(mk(Policy::Vmwlch)).run_logged();
        assert_eq!(a, b);
        let c = Sim::new(mk(Policy::Wlc)).run_logged();
        // Same arrivals (times and services), different decisions.
        let times =
            |l: &[(f64, usize, usize)]| l.iter().map(|x| (x.0.to_bits(), x.1)).collect::<Vec<_>>();
        assert_eq!(times(&a.1), times(&c.1));
        assert_ne!(a.1, c.1);
        assert_eq!(a.0.dropped, 0);
    }

    #[test]
    fn imbalance_measure() {
        assert_eq!(max_over_mean(&[]), 1.0);
        assert_eq!(max_over_mean(&[0.0, 0.0]), 1.0);
        assert!(close(max_over_mean(&[1.0, 1.0, 1.0]), 1.0));
        assert!(close(max_over_mean(&[2.0, 0.0]), 2.0));
        let s = SvcStats::from((1..=100).map(f64::from).collect(), 0);
        assert_eq!((s.count, s.p95), (100, 95.0));
        assert!(close(s.mean, 50.5));
    }
}
