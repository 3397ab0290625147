//! Host balance on a kernel without the vmwlch module: per-host factors on
//! the destination weights of stock `wlc`, from the director's own
//! connection counts, so that each host's aggregate load over all services
//! follows its host weight (what vmwlch does per connection).
//!
//! Stock `wlc` balances each service on its own: it keeps every
//! destination's overhead (`activeconns * 256 + inactconns`) in proportion
//! to its weight, so a service's `N` open load settles at
//! `N * w(d) / Σw` on each of its destinations. Scaling all destinations of
//! host `h` by `f(h)` moves every service's share toward or away from `h`.
//! [`ConnBalance::tick`] solves for the factors at which that settled load,
//! summed over the services, stands in proportion to the host weights,
//! given each service's load now (iterative proportional fitting, warm
//! started from the last solution). It is a model of wlc, not an integral
//! on the measured host loads: long-lived connections placed earlier cannot
//! move, and integrating on them would wind the factors up to a bound. The
//! factors move halfway to the solution per round and are written only
//! once they moved past a band since their last write; with too few
//! connections to measure they hold.

use std::collections::BTreeMap;

/// The balancer's tuning; [`BalanceParams::default`] suits a round a second.
#[derive(Debug, Clone, PartialEq)]
pub struct BalanceParams {
    /// Share of the way (in log terms) to the solved factor moved per round.
    pub gain: f64,
    /// A factor is written again only once it moved by this share of its
    /// last written value.
    pub write_band: f64,
    /// Bounds of a factor (the lower one keeps a host in service).
    pub min_factor: f64,
    /// See `min_factor`.
    pub max_factor: f64,
    /// The factors hold while the total overhead is below this per host
    /// (256 is one active connection): too few connections to measure.
    pub min_overhead_per_host: u64,
}

impl Default for BalanceParams {
    fn default() -> Self {
        BalanceParams {
            gain: 0.5,
            write_band: 0.10,
            min_factor: 0.125,
            max_factor: 8.0,
            min_overhead_per_host: 2 * 256,
        }
    }
}

/// One destination of a service, as the director sees it in a round.
#[derive(Debug, Clone, PartialEq)]
pub struct BalanceDest {
    /// The host it runs on (None: not in the host map, never scaled).
    pub host: Option<String>,
    /// Its weight before the factor (0: takes no new connections).
    pub weight: f64,
    /// Its overhead now (`activeconns * 256 + inactconns`).
    pub overhead: u64,
}

/// The factor of each host, following the director's connection counts.
#[derive(Debug, Clone)]
pub struct ConnBalance {
    params: BalanceParams,
    /// Current and last written factor, by host.
    factors: BTreeMap<String, (f64, f64)>,
    /// The last solution (the next solve starts from it).
    solved: BTreeMap<String, f64>,
}

/// A weighted destination in a solve: its host's index (None: unscaled)
/// and its weight.
type Weighted = (Option<usize>, f64);

/// Iterations of one solve, and the error at which it stops early.
const SOLVE_ROUNDS: usize = 200;
const SOLVE_TOLERANCE: f64 = 0.005;

impl ConnBalance {
    /// A balancer with every factor at 1.
    pub fn new(params: BalanceParams) -> Self {
        ConnBalance {
            params,
            factors: BTreeMap::new(),
            solved: BTreeMap::new(),
        }
    }

    /// The factor last returned for `host` (1 if none was).
    pub fn written(&self, host: &str) -> f64 {
        self.factors.get(host).map_or(1.0, |f| f.1)
    }

    /// Every host's last written factor.
    pub fn factors(&self) -> impl Iterator<Item = (&str, f64)> {
        self.factors.iter().map(|(h, f)| (h.as_str(), f.1))
    }

    /// One round: the host weights (a host absent here, or at 0, is not
    /// balanced) and every service's destinations in; the factors to write
    /// out. Hosts no longer given are forgotten (back at 1).
    pub fn tick(
        &mut self,
        hosts: &BTreeMap<String, f64>,
        services: &[Vec<BalanceDest>],
    ) -> Vec<(String, f64)> {
        self.factors.retain(|h, _| hosts.contains_key(h));
        self.solved.retain(|h, _| hosts.contains_key(h));
        let total: u64 = services.iter().flatten().map(|d| d.overhead).sum();
        let live = hosts.values().filter(|w| **w > 0.0).count() as u64;
        if live < 2 || total < self.params.min_overhead_per_host * live {
            return Vec::new();
        }
        let Some(solved) = solve(&self.params, hosts, services, &self.solved) else {
            return Vec::new();
        };
        let p = &self.params;
        let mut out = Vec::new();
        for (h, target) in &solved {
            let f = self.factors.entry(h.clone()).or_insert((1.0, 1.0));
            f.0 = (f.0.ln() + p.gain * (target.ln() - f.0.ln())).exp();
            if (f.0 / f.1 - 1.0).abs() >= p.write_band {
                f.1 = f.0;
                out.push((h.clone(), f.0));
            }
        }
        self.solved = solved;
        out
    }
}

/// The factors at which each service's load now, spread by wlc in
/// proportion to the scaled weights, sums per host to the host weights'
/// proportions. Only hosts that can take load (a weighted destination in a
/// service with load) are solved; None if fewer than two can.
fn solve(
    p: &BalanceParams,
    hosts: &BTreeMap<String, f64>,
    services: &[Vec<BalanceDest>],
    start: &BTreeMap<String, f64>,
) -> Option<BTreeMap<String, f64>> {
    let index: BTreeMap<&str, usize> = hosts
        .iter()
        .filter(|(_, w)| **w > 0.0 && w.is_finite())
        .enumerate()
        .map(|(i, (h, _))| (h.as_str(), i))
        .collect();
    let svcs: Vec<(f64, Vec<Weighted>)> = services
        .iter()
        .map(|s| {
            let n = s.iter().map(|d| d.overhead).sum::<u64>() as f64;
            let ds = s
                .iter()
                .filter(|d| d.weight > 0.0 && d.weight.is_finite())
                .map(|d| {
                    (
                        d.host.as_deref().and_then(|h| index.get(h).copied()),
                        d.weight,
                    )
                })
                .collect::<Vec<_>>();
            (n, ds)
        })
        .filter(|(n, ds)| *n > 0.0 && !ds.is_empty())
        .collect();
    let mut reach = vec![false; index.len()];
    for (_, ds) in &svcs {
        for (h, _) in ds {
            if let Some(h) = h {
                reach[*h] = true;
            }
        }
    }
    if reach.iter().filter(|r| **r).count() < 2 {
        return None;
    }
    let names: Vec<&str> = index.keys().copied().collect();
    let weight: Vec<f64> = names.iter().map(|h| hosts[*h]).collect();
    let mut f: Vec<f64> = names
        .iter()
        .map(|h| start.get(*h).copied().unwrap_or(1.0))
        .collect();
    let mut load = vec![0.0; f.len()];
    for _ in 0..SOLVE_ROUNDS {
        load.iter_mut().for_each(|l| *l = 0.0);
        for (n, ds) in &svcs {
            let scaled = |(h, w): &Weighted| w * h.map_or(1.0, |h| f[h]);
            let sum: f64 = ds.iter().map(scaled).sum();
            for d in ds {
                if let Some(h) = d.0 {
                    load[h] += n * scaled(d) / sum;
                }
            }
        }
        let (mut l_sum, mut w_sum) = (0.0, 0.0);
        for h in (0..f.len()).filter(|&h| reach[h]) {
            l_sum += load[h];
            w_sum += weight[h];
        }
        let mut worst: f64 = 0.0;
        for h in (0..f.len()).filter(|&h| reach[h]) {
            let target = l_sum * weight[h] / w_sum;
            let e = (target / load[h].max(f64::MIN_POSITIVE)).clamp(0.1, 10.0);
            worst = worst.max((e - 1.0).abs());
            f[h] = (f[h] * e.sqrt()).clamp(p.min_factor, p.max_factor);
        }
        // Only ratios matter to wlc: keep the weighted geometric mean at 1.
        let g = (0..f.len())
            .filter(|&h| reach[h])
            .map(|h| weight[h] * f[h].ln())
            .sum::<f64>()
            / w_sum;
        for h in (0..f.len()).filter(|&h| reach[h]) {
            f[h] = (f[h] / g.exp()).clamp(p.min_factor, p.max_factor);
        }
        if worst < SOLVE_TOLERANCE {
            break;
        }
    }
    Some(
        (0..f.len())
            .filter(|&h| reach[h])
            .map(|h| (names[h].to_string(), f[h]))
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two services whose per-service wlc places each new connection on
    /// the VM with the least connections per weight: h1 runs two VMs of
    /// service A, h2 one of A and one of B, h3 one of B.
    struct Sim {
        vms: Vec<(&'static str, usize)>,
        /// Open connections per VM.
        conns: Vec<u64>,
        weights: BTreeMap<String, f64>,
    }

    impl Sim {
        fn new(weights: &[(&str, f64)]) -> Self {
            let vms = vec![("h1", 0), ("h1", 0), ("h2", 0), ("h2", 1), ("h3", 1)];
            Sim {
                conns: vec![0; vms.len()],
                vms,
                weights: weights.iter().map(|(h, w)| (h.to_string(), *w)).collect(),
            }
        }

        /// `n` new connections to service `s`, by wlc with the factors.
        fn connect(&mut self, b: &ConnBalance, s: usize, n: u64) {
            for _ in 0..n {
                let score = |k: usize| self.conns[k] as f64 / b.written(self.vms[k].0);
                let vm = (0..self.vms.len())
                    .filter(|&i| self.vms[i].1 == s)
                    .min_by(|&i, &j| score(i).total_cmp(&score(j)))
                    .unwrap();
                self.conns[vm] += 1;
            }
        }

        fn services(&self) -> Vec<Vec<BalanceDest>> {
            (0..2)
                .map(|s| {
                    (0..self.vms.len())
                        .filter(|&k| self.vms[k].1 == s)
                        .map(|k| BalanceDest {
                            host: Some(self.vms[k].0.to_string()),
                            weight: 1.0,
                            overhead: self.conns[k] * 256,
                        })
                        .collect()
                })
                .collect()
        }

        fn tick(&self, b: &mut ConnBalance) -> usize {
            b.tick(&self.weights, &self.services()).len()
        }

        /// max/mean of the hosts' connections per weight.
        fn imbalance(&self) -> f64 {
            let r: Vec<f64> = self
                .weights
                .iter()
                .map(|(h, w)| {
                    let c: u64 = (0..self.vms.len())
                        .filter(|&k| self.vms[k].0 == h)
                        .map(|k| self.conns[k])
                        .sum();
                    c as f64 / w
                })
                .collect();
            let m = r.iter().sum::<f64>() / r.len() as f64;
            r.iter().copied().fold(0.0, f64::max) / m
        }
    }

    #[test]
    fn factors_bring_the_hosts_aggregate_to_their_weights() {
        let mut b = ConnBalance::new(BalanceParams::default());
        let mut s = Sim::new(&[("h1", 1.0), ("h2", 1.0), ("h3", 1.0)]);
        // Per-service wlc alone: A's split 2:1 over h1:h2, B's 1:1 over
        // h2:h3, so h2 carries half of B on top of a third of A (5/6 of a
        // service's load against the mean's 2/3). Balanced: B 1:2 over h2:h3.
        s.connect(&b, 0, 30);
        s.connect(&b, 1, 30);
        let plain = s.imbalance();
        for _ in 0..20 {
            s.connect(&b, 0, 6);
            s.connect(&b, 1, 6);
            s.tick(&mut b);
        }
        assert!(plain > 1.2, "{plain}");
        assert!(s.imbalance() < 1.1, "imbalance {}", s.imbalance());
        let r = b.written("h3") / b.written("h2");
        assert!((r - 2.0).abs() < 0.3, "h3/h2 {r}");
        // Steady: the same mix goes on, the factors are not written again.
        let mut writes = 0;
        for _ in 0..30 {
            s.connect(&b, 0, 6);
            s.connect(&b, 1, 6);
            writes += s.tick(&mut b);
        }
        assert!(writes <= 3, "{writes} writes at steady state");
        assert!(s.imbalance() < 1.05, "imbalance {}", s.imbalance());
    }

    #[test]
    fn long_lived_connections_do_not_wind_the_factors_up() {
        let mut b = ConnBalance::new(BalanceParams::default());
        let mut s = Sim::new(&[("h1", 1.0), ("h2", 1.0), ("h3", 1.0)]);
        // Placed before any balance, and never closing.
        s.connect(&b, 0, 60);
        s.connect(&b, 1, 60);
        for _ in 0..100 {
            s.tick(&mut b);
        }
        let f: Vec<f64> = ["h1", "h2", "h3"].iter().map(|h| b.written(h)).collect();
        assert!(f.iter().all(|f| *f > 0.2 && *f < 5.0), "{f:?}");
    }

    fn dest(host: &str, weight: f64, overhead: u64) -> BalanceDest {
        BalanceDest {
            host: Some(host.into()),
            weight,
            overhead,
        }
    }

    #[test]
    fn a_balanced_cluster_writes_nothing() {
        let mut b = ConnBalance::new(BalanceParams::default());
        let hosts = [("h1", 2.0), ("h2", 2.0), ("h3", 3.0)]
            .iter()
            .map(|(h, w)| (h.to_string(), *w))
            .collect();
        // One service over all three, weights in proportion: wlc alone balances.
        let svc = vec![vec![
            dest("h1", 2.0, 1010),
            dest("h2", 2.0, 980),
            dest("h3", 3.0, 1500),
        ]];
        for _ in 0..100 {
            assert!(b.tick(&hosts, &svc).is_empty());
        }
        assert_eq!(b.written("h3"), 1.0);
    }

    #[test]
    fn few_connections_unmapped_and_drained_hosts() {
        let mut b = ConnBalance::new(BalanceParams::default());
        let hosts = |w2: f64| -> BTreeMap<String, f64> {
            [("h1".to_string(), 1.0), ("h2".to_string(), w2)]
                .into_iter()
                .collect()
        };
        // h1 has two VMs of A, h2 one: wlc alone gives h1 twice h2's load.
        let svc = |o: u64| {
            vec![vec![
                dest("h1", 1.0, o),
                dest("h1", 1.0, o),
                dest("h2", 1.0, o),
            ]]
        };
        // Three connections on two hosts: not enough to measure.
        assert!(b.tick(&hosts(1.0), &svc(256)).is_empty());
        // A drained host (weight 0) is left out: one host is no balance.
        assert!(b.tick(&hosts(0.0), &svc(100_000)).is_empty());
        // Enough: h1's factor halves against h2's (2 VMs against 1).
        for _ in 0..30 {
            b.tick(&hosts(1.0), &svc(100_000));
        }
        let r = b.written("h1") / b.written("h2");
        assert!((r - 0.5).abs() < 0.06, "ratio {r}");
        // An unmapped destination takes its share unscaled.
        let mut s = svc(100_000);
        s[0].push(BalanceDest {
            host: None,
            weight: 1.0,
            overhead: 100_000,
        });
        b.tick(&hosts(1.0), &s);
        // A host gone from the weights is forgotten.
        b.tick(&[("h2".to_string(), 1.0)].into_iter().collect(), &s);
        assert_eq!(b.written("h1"), 1.0);
    }

    #[test]
    fn an_unbalanceable_host_stays_in_bounds() {
        // h2's only VM serves B, which has no load; h1 and h3 share A.
        let mut b = ConnBalance::new(BalanceParams::default());
        let hosts = [("h1", 1.0), ("h2", 1.0), ("h3", 1.0)]
            .iter()
            .map(|(h, w)| (h.to_string(), *w))
            .collect();
        let svc = vec![
            vec![
                dest("h1", 1.0, 5000),
                dest("h1", 1.0, 5000),
                dest("h3", 1.0, 5000),
            ],
            vec![dest("h2", 1.0, 0)],
        ];
        for _ in 0..50 {
            b.tick(&hosts, &svc);
        }
        assert_eq!(b.written("h2"), 1.0, "not reachable by any load: held");
        let r = b.written("h1") / b.written("h3");
        assert!((r - 0.5).abs() < 0.06, "ratio {r}");
    }
}
