//! What is simulated: hosts, VMs and their placement, the workload, and the
//! study's reference cluster as defaults. See `docs/simulation.md` for why
//! each modelling choice was made.

use crate::rng::Demand;
use crate::sched::{Policy, SENSOR, WEB};

/// A physical host.
#[derive(Clone, Debug, PartialEq)]
pub struct HostSpec {
    /// CPU cores.
    pub cores: f64,
    /// Speed of one core relative to the slower hosts (work units per second).
    pub speed: f64,
    /// Host weight `W(h)` given to `vmwlc`/`vmwlch` (integer, like IPVS weights).
    pub weight: u32,
}

impl HostSpec {
    /// Total capacity (work units per second).
    #[must_use]
    pub fn capacity(&self) -> f64 {
        self.cores * self.speed
    }
}

/// A VM (a real server of one service).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VmSpec {
    /// Index of its host.
    pub host: usize,
    /// Service key ([`SENSOR`] or [`WEB`]).
    pub service: usize,
    /// IPVS weight of the VM.
    pub weight: i32,
    /// Virtual CPUs: at most this many of its requests run at once.
    pub vcpus: u32,
}

/// How the 15 sensor and 5 web VMs are spread over the 5 hosts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Placement {
    /// Every host: 3 sensor VMs and 1 web VM (symmetric).
    Even,
    /// Services unevenly spread: web VMs on hosts 1-3 (2, 2, 1), sensor VMs
    /// 2, 2, 3, 4, 4 on hosts 1-5; 4 VMs per host as in the study.
    Skewed,
    /// Services unevenly spread and VMs unevenly packed: the two faster
    /// hosts carry 6 VMs each (2 web, 4 sensor), host 3 four (1 web,
    /// 3 sensor), hosts 4-5 two sensor VMs each.
    Packed,
}

impl Placement {
    /// Both placements.
    pub const ALL: [Placement; 3] = [Placement::Even, Placement::Skewed, Placement::Packed];

    /// Name used in tables and on the command line.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Placement::Even => "even",
            Placement::Skewed => "skewed",
            Placement::Packed => "packed",
        }
    }

    /// Parses a command-line name.
    #[must_use]
    pub fn parse(s: &str) -> Option<Placement> {
        match s {
            "even" => Some(Placement::Even),
            "skewed" => Some(Placement::Skewed),
            "packed" => Some(Placement::Packed),
            _ => None,
        }
    }

    /// Services of the VMs on each of the 5 hosts.
    #[must_use]
    pub fn layout(self) -> Vec<Vec<usize>> {
        const S: usize = SENSOR;
        const W: usize = WEB;
        match self {
            Placement::Even => vec![vec![S, S, S, W]; 5],
            Placement::Skewed => vec![
                vec![W, W, S, S],
                vec![W, W, S, S],
                vec![W, S, S, S],
                vec![S, S, S, S],
                vec![S, S, S, S],
            ],
            Placement::Packed => vec![
                vec![W, W, S, S, S, S],
                vec![W, W, S, S, S, S],
                vec![W, S, S, S],
                vec![S, S],
                vec![S, S],
            ],
        }
    }

    /// The 20 VMs, ordered by host, each with weight 1 and `vcpus` vCPUs.
    #[must_use]
    pub fn vms(self, vcpus: u32) -> Vec<VmSpec> {
        let mut out = Vec::new();
        for (host, services) in self.layout().iter().enumerate() {
            for &service in services {
                out.push(VmSpec {
                    host,
                    service,
                    weight: 1,
                    vcpus,
                });
            }
        }
        out
    }
}

/// The study's 5 back-end hosts: hosts 1-2 i5-4460 @3.2 GHz, hosts 3-5
/// i5-4440 @3.1 GHz, 4 cores each. Host weights in the clock ratio (32:31).
#[must_use]
pub fn study_hosts() -> Vec<HostSpec> {
    (0..5)
        .map(|h| {
            if h < 2 {
                HostSpec {
                    cores: 4.0,
                    speed: 3.2 / 3.1,
                    weight: 32,
                }
            } else {
                HostSpec {
                    cores: 4.0,
                    speed: 1.0,
                    weight: 31,
                }
            }
        })
        .collect()
}

/// Sensor workload: every sensor opens a connection every `period` seconds
/// and sends one reading.
#[derive(Clone, Debug, PartialEq)]
pub struct SensorSpec {
    /// Number of sensors.
    pub count: u32,
    /// Reporting period (s).
    pub period: f64,
    /// Sensors' phases are uniform on `[0, phase_spread)` (period: fully
    /// desynchronised; small: sensors started together, readings in bursts).
    pub phase_spread: f64,
    /// Every reading is delayed by a uniform `[0, jitter)` (s).
    pub jitter: f64,
    /// Work per reading.
    pub demand: Demand,
}

/// Web workload: bursty page views. Page views arrive as a Poisson process
/// whose rate switches between ON and OFF periods (exponentially long); each
/// page view opens a batch of connections at once (the page and its data
/// requests), geometrically many.
#[derive(Clone, Debug, PartialEq)]
pub struct WebSpec {
    /// Mean connection rate over time (connections/s).
    pub mean_rate: f64,
    /// Mean connections per page view (>= 1).
    pub batch_mean: f64,
    /// Mean ON period (s).
    pub on_mean: f64,
    /// Mean OFF period (s).
    pub off_mean: f64,
    /// Page-view rate during ON divided by the rate during OFF (>= 1).
    pub burst_ratio: f64,
    /// Work per connection.
    pub demand: Demand,
}

impl WebSpec {
    /// Page-view rates (ON, OFF) that give the mean connection rate.
    #[must_use]
    pub fn page_rates(&self) -> (f64, f64) {
        let total = self.on_mean + self.off_mean;
        let p_on = if total > 0.0 {
            self.on_mean / total
        } else {
            1.0
        };
        let pages = self.mean_rate / self.batch_mean.max(1.0);
        let r = self.burst_ratio.max(1.0);
        let off = pages / (p_on * r + 1.0 - p_on);
        (off * r, off)
    }
}

/// One simulation run.
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    /// Physical hosts.
    pub hosts: Vec<HostSpec>,
    /// VMs, ordered by host.
    pub vms: Vec<VmSpec>,
    /// Sensor workload (none: web only).
    pub sensor: Option<SensorSpec>,
    /// Web workload (none: sensor only).
    pub web: Option<WebSpec>,
    /// Extra connections at given times: `(time, service, demand)`, sorted
    /// by time (tests and hand-made cases).
    pub trace: Vec<(f64, usize, f64)>,
    /// How long a finished connection stays in the front end's table as
    /// inactive (IPVS FIN_WAIT/TIME_WAIT), s. 0: not counted at all.
    pub linger: f64,
    /// Simulated time before measuring (s).
    pub warmup: f64,
    /// Measured time (s): connections arriving in `[warmup, warmup + duration)`.
    pub duration: f64,
    /// After the measured period, keep simulating (arrivals continue) at most
    /// this long for the measured connections to finish (s); the rest are
    /// counted with their response time so far (censored).
    pub drain: f64,
    /// Length of the utilisation windows for the imbalance measure (s).
    pub window: f64,
    /// The scheduler.
    pub policy: Policy,
    /// Seed of all random streams (arrivals and demands do not depend on the
    /// policy: runs of different policies with one seed see the same workload).
    pub seed: u64,
}

/// The study's scenarios.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Scenario {
    /// Sensor service only, this many sensors.
    Sensor(u32),
    /// Web service only, at this mean web load (fraction of cluster capacity).
    Web(f64),
    /// Both, this many sensors and the default hybrid web load.
    Hybrid(u32),
}

impl Scenario {
    /// Name of the workload kind.
    #[must_use]
    pub fn kind(&self) -> &'static str {
        match self {
            Scenario::Sensor(_) => "sensor",
            Scenario::Web(_) => "web",
            Scenario::Hybrid(_) => "hybrid",
        }
    }

    /// The swept parameter as text (sensor count or web load).
    #[must_use]
    pub fn level(&self) -> String {
        match self {
            Scenario::Sensor(n) | Scenario::Hybrid(n) => n.to_string(),
            Scenario::Web(l) => format!("{l:.2}"),
        }
    }
}

/// Calibration of the workload (see the report for the reasoning).
#[derive(Clone, Debug, PartialEq)]
pub struct Calibration {
    /// Mean work per sensor reading (s of one slow core).
    pub sensor_demand: f64,
    /// Mean work per web connection.
    pub web_demand: f64,
    /// Squared coefficient of variation of the web work (>= 1:
    /// hyperexponential; below 1: shifted exponential).
    pub web_scv: f64,
    /// Web load in the hybrid scenario, as a fraction of cluster capacity.
    pub hybrid_web_load: f64,
    /// vCPUs per VM.
    pub vcpus: u32,
    /// Inactive linger (s).
    pub linger: f64,
    /// Sensor phase spread (s).
    pub phase_spread: f64,
}

impl Default for Calibration {
    fn default() -> Self {
        Self {
            sensor_demand: 0.135,
            web_demand: 0.3,
            web_scv: 4.0,
            hybrid_web_load: 0.2,
            vcpus: 4,
            linger: 120.0,
            phase_spread: 5.0,
        }
    }
}

impl Calibration {
    /// The configuration of one run of `scenario` on `placement`.
    #[must_use]
    pub fn config(
        &self,
        scenario: Scenario,
        placement: Placement,
        policy: Policy,
        seed: u64,
    ) -> Config {
        let hosts = study_hosts();
        let capacity: f64 = hosts.iter().map(HostSpec::capacity).sum();
        let sensor = |count: u32| SensorSpec {
            count,
            period: 5.0,
            phase_spread: self.phase_spread,
            jitter: 0.2,
            demand: Demand::ShiftedExp {
                min: 0.5 * self.sensor_demand,
                mean: self.sensor_demand,
            },
        };
        let web = |load: f64| WebSpec {
            mean_rate: load * capacity / self.web_demand,
            batch_mean: 3.0,
            on_mean: 4.0,
            off_mean: 8.0,
            burst_ratio: 8.0,
            demand: if self.web_scv >= 1.0 {
                Demand::Hyper2 {
                    mean: self.web_demand,
                    scv: self.web_scv,
                }
            } else {
                Demand::ShiftedExp {
                    min: self.web_demand * (1.0 - self.web_scv.max(0.0).sqrt()),
                    mean: self.web_demand,
                }
            },
        };
        let (s, w) = match scenario {
            Scenario::Sensor(n) => (Some(sensor(n)), None),
            Scenario::Web(l) => (None, Some(web(l))),
            Scenario::Hybrid(n) => (Some(sensor(n)), Some(web(self.hybrid_web_load))),
        };
        Config {
            hosts,
            vms: placement.vms(self.vcpus),
            sensor: s,
            web: w,
            trace: Vec::new(),
            linger: self.linger,
            warmup: if self.linger > 0.0 {
                30.0 + self.linger
            } else {
                30.0
            },
            duration: 300.0,
            drain: 300.0,
            window: 1.0,
            policy,
            seed,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placements_have_the_study_counts() {
        for p in Placement::ALL {
            let vms = p.vms(2);
            assert_eq!(vms.len(), 20);
            assert_eq!(vms.iter().filter(|v| v.service == SENSOR).count(), 15);
            assert_eq!(vms.iter().filter(|v| v.service == WEB).count(), 5);
            assert!(vms.windows(2).all(|w| w[0].host <= w[1].host));
            let per_host: Vec<usize> = (0..5)
                .map(|h| vms.iter().filter(|v| v.host == h).count())
                .collect();
            if p == Placement::Packed {
                assert_eq!(per_host, [6, 6, 4, 2, 2]);
            } else {
                assert_eq!(per_host, [4; 5]);
            }
        }
        let hosts = study_hosts();
        assert_eq!(hosts.iter().filter(|h| h.speed > 1.0).count(), 2);
        assert!((hosts[0].capacity() / hosts[4].capacity() - 32.0 / 31.0).abs() < 1e-12);
    }

    #[test]
    fn web_rates_average_out() {
        let w = WebSpec {
            mean_rate: 30.0,
            batch_mean: 3.0,
            on_mean: 4.0,
            off_mean: 8.0,
            burst_ratio: 8.0,
            demand: Demand::Const(0.1),
        };
        let (on, off) = w.page_rates();
        assert!((on / off - 8.0).abs() < 1e-12);
        // Time-average page rate * batch = connection rate.
        let avg = (on * 4.0 + off * 8.0) / 12.0 * 3.0;
        assert!((avg - 30.0).abs() < 1e-9);
    }

    #[test]
    fn calibrated_loads() {
        let c = Calibration::default();
        let cfg = c.config(Scenario::Hybrid(450), Placement::Even, Policy::Wlc, 1);
        let cap: f64 = cfg.hosts.iter().map(HostSpec::capacity).sum();
        let s = cfg
            .sensor
            .as_ref()
            .map_or(0.0, |s| f64::from(s.count) / s.period * s.demand.mean());
        let w = cfg
            .web
            .as_ref()
            .map_or(0.0, |w| w.mean_rate * w.demand.mean());
        assert!((s / cap - 0.6).abs() < 0.01, "{}", s / cap);
        assert!((w / cap - 0.2).abs() < 1e-9);
    }
}
