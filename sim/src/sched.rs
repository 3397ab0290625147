//! The schedulers under comparison, wired to the real selection code
//! (`vmwlch_core::select`, the source the kernel module compiles).
//!
//! * WLC: every VM is an implicit host of its own (no host map), so the host
//!   stage is IPVS's weighted least connections over the service's VMs.
//! * VMWLC: `Scope::Service` with the host map (the `vmwlc` scheduler).
//! * VMWLC/H: `Scope::Aggregate` with the host map (the `vmwlch` scheduler)
//!   for every service.
//! * VMWLC/H (study mix): what the study ran (its section 3.2.3): the web
//!   service on VMWLC/H, the sensor service on VMWLC. In this toolkit that is
//!   `-s vmwlch` on the web service and `-s vmwlc` on the sensor service; both
//!   are tracked, so the web decisions see the sensor load.
//! * WLC (IPVS ties): a plain re-implementation of `ip_vs_wlc.c`, which keeps
//!   the *first* least-loaded destination on ties; used to check that the
//!   implicit-host wiring is WLC and to show the effect of tie-breaking.

use std::collections::BTreeMap;

use vmwlch_core::oracle::{self, OwnedView};
use vmwlch_core::{overhead, select, Cluster, Live, Scope, View};

/// Service keys (the `service` argument of [`select`]).
pub const SENSOR: usize = 0;
/// The web dashboard service.
pub const WEB: usize = 1;

/// A scheduling policy of the comparison.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Policy {
    /// IPVS `wlc` through the core with every VM an implicit host.
    Wlc,
    /// `vmwlc` for both services.
    Vmwlc,
    /// `vmwlch` for both services.
    Vmwlch,
    /// The study's configuration: `vmwlch` for web, `vmwlc` for sensors.
    VmwlchStudy,
    /// Plain IPVS `wlc` (first least-loaded destination wins ties).
    WlcIpvs,
}

impl Policy {
    /// The four policies of the main comparison.
    pub const MAIN: [Policy; 4] = [
        Policy::Wlc,
        Policy::Vmwlc,
        Policy::Vmwlch,
        Policy::VmwlchStudy,
    ];

    /// Short name used in tables, CSV and on the command line.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Policy::Wlc => "WLC",
            Policy::Vmwlc => "VMWLC",
            Policy::Vmwlch => "VMWLC/H",
            Policy::VmwlchStudy => "VMWLC/H*",
            Policy::WlcIpvs => "WLC-ipvs",
        }
    }

    /// Parses a command-line name (`wlc`, `vmwlc`, `vmwlch`, `vmwlch-study`, `wlc-ipvs`).
    #[must_use]
    pub fn parse(s: &str) -> Option<Policy> {
        match s.to_ascii_lowercase().as_str() {
            "wlc" => Some(Policy::Wlc),
            "vmwlc" => Some(Policy::Vmwlc),
            "vmwlch" | "vmwlc/h" => Some(Policy::Vmwlch),
            "vmwlch-study" | "vmwlc/h*" | "vmwlch*" => Some(Policy::VmwlchStudy),
            "wlc-ipvs" => Some(Policy::WlcIpvs),
            _ => None,
        }
    }

    /// Whether the policy uses the VM-to-host map (host groups) or treats
    /// every VM as an implicit host of its own.
    #[must_use]
    pub fn uses_host_map(self) -> bool {
        matches!(self, Policy::Vmwlc | Policy::Vmwlch | Policy::VmwlchStudy)
    }

    /// The scope the core is called with for a new connection to `service`
    /// (`None`: plain IPVS wlc, not the core).
    #[must_use]
    pub fn scope(self, service: usize) -> Option<Scope> {
        match self {
            // Implicit hosts ignore the scope (each host is one VM); Service
            // is the natural reading of "per-service wlc".
            Policy::Wlc | Policy::Vmwlc => Some(Scope::Service),
            Policy::Vmwlch => Some(Scope::Aggregate),
            Policy::VmwlchStudy => Some(if service == WEB {
                Scope::Aggregate
            } else {
                Scope::Service
            }),
            Policy::WlcIpvs => None,
        }
    }
}

/// The live state of one destination (VM) as the front end sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DestState {
    /// Service key.
    pub service: usize,
    /// IPVS weight of the VM.
    pub weight: i32,
    /// Connections being served.
    pub active: i32,
    /// Finished connections still lingering in FIN_WAIT/TIME_WAIT.
    pub inactive: i32,
}

impl DestState {
    /// The counters in the core's form.
    #[must_use]
    pub fn live(&self) -> Live {
        Live {
            weight: self.weight,
            activeconns: self.active,
            inactconns: self.inactive,
            overloaded: false,
        }
    }
}

/// Every service's view of the hosts under a policy.
#[derive(Clone, Default)]
pub struct Topology {
    views: BTreeMap<usize, OwnedView>,
}

impl Topology {
    /// Builds the views. `vm_host[d]` is the host of destination `d`, whose
    /// service is `dests[d].service`; destinations must be ordered by host
    /// (contiguous). Without the host map every VM is a host of its own.
    #[must_use]
    pub fn new(
        policy: Policy,
        vm_host: &[usize],
        host_weights: &[u32],
        dests: &[DestState],
    ) -> Self {
        let n = vm_host.len().min(dests.len());
        let service_of = |d: usize| dests[d].service;
        if !policy.uses_host_map() {
            return Self {
                views: oracle::views([], 0..dests.len(), service_of),
            };
        }
        let hosts: Vec<(u32, Vec<usize>)> = host_weights
            .iter()
            .enumerate()
            .map(|(h, &w)| (w, (0..n).filter(|&d| vm_host[d] == h).collect()))
            .collect();
        Self {
            views: oracle::views(
                hosts.iter().map(|(w, m)| (*w, m.as_slice())),
                [],
                service_of,
            ),
        }
    }

    /// The view of `service`.
    fn view(&self, service: usize) -> View<'_> {
        self.views
            .get(&service)
            .map_or(View::EMPTY, OwnedView::view)
    }
}

/// A [`Cluster`] over the simulator's destination table.
struct Table<'a> {
    topology: &'a Topology,
    /// Destinations, ordered by host.
    dests: &'a [DestState],
}

impl Cluster for Table<'_> {
    fn view(&self, service: usize) -> View<'_> {
        self.topology.view(service)
    }
    fn dest_count(&self) -> usize {
        self.dests.len()
    }
    fn counts(&self, dest: usize) -> (i32, i32) {
        self.dests
            .get(dest)
            .map_or((0, 0), |d| (d.active, d.inactive))
    }
    fn live(&self, dest: usize) -> Live {
        self.dests.get(dest).map_or(
            Live {
                weight: 0,
                activeconns: 0,
                inactconns: 0,
                overloaded: false,
            },
            DestState::live,
        )
    }
}

/// Plain IPVS `wlc` (`net/netfilter/ipvs/ip_vs_wlc.c`): the destination of
/// `service` with the least `overhead / weight`, the first one on ties.
#[must_use]
pub fn wlc_ipvs(dests: &[DestState], service: usize) -> Option<usize> {
    let mut least: Option<(usize, u64, u64)> = None;
    for (i, d) in dests.iter().enumerate() {
        if d.service != service || d.weight <= 0 {
            continue;
        }
        let oh = overhead(&d.live());
        let w = u64::from(d.weight.unsigned_abs());
        match least {
            // loh * dw > doh * lw  <=>  doh / dw < loh / lw
            Some((_, loh, lw))
                if u128::from(loh) * u128::from(w) <= u128::from(oh) * u128::from(lw) => {}
            _ => least = Some((i, oh, w)),
        }
    }
    least.map(|(i, _, _)| i)
}

/// Chooses the destination for a new connection to `service` under `policy`.
pub fn choose<R: FnMut() -> u32>(
    policy: Policy,
    topology: &Topology,
    dests: &[DestState],
    service: usize,
    rng: &mut R,
) -> Option<usize> {
    match policy.scope(service) {
        Some(scope) => select(&Table { topology, dests }, service, scope, rng),
        None => wlc_ipvs(dests, service),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;
    use vmwlch_core::oracle::{self, Snapshot};

    fn d(service: usize, active: i32, inactive: i32) -> DestState {
        DestState {
            service,
            weight: 1,
            active,
            inactive,
        }
    }

    /// Two hosts, the study's motivating case: host 0 carries a busy web VM
    /// and a light sensor VM, host 1 a moderately busy sensor VM and an idle
    /// web VM.
    fn two_hosts() -> (Vec<usize>, Vec<DestState>) {
        let vm_host = vec![0, 0, 1, 1];
        let dests = vec![
            d(SENSOR, 1, 0),
            d(WEB, 10, 0),
            d(SENSOR, 3, 0),
            d(WEB, 0, 0),
        ];
        (vm_host, dests)
    }

    #[test]
    fn scopes_are_wired() {
        assert_eq!(Policy::Vmwlc.scope(SENSOR), Some(Scope::Service));
        assert_eq!(Policy::Vmwlc.scope(WEB), Some(Scope::Service));
        assert_eq!(Policy::Vmwlch.scope(SENSOR), Some(Scope::Aggregate));
        assert_eq!(Policy::Vmwlch.scope(WEB), Some(Scope::Aggregate));
        assert_eq!(Policy::VmwlchStudy.scope(SENSOR), Some(Scope::Service));
        assert_eq!(Policy::VmwlchStudy.scope(WEB), Some(Scope::Aggregate));
        assert_eq!(Policy::WlcIpvs.scope(WEB), None);
        assert!(!Policy::Wlc.uses_host_map());
        assert!(Policy::Vmwlc.uses_host_map() && Policy::Vmwlch.uses_host_map());
        for p in [
            Policy::Wlc,
            Policy::Vmwlc,
            Policy::Vmwlch,
            Policy::VmwlchStudy,
            Policy::WlcIpvs,
        ] {
            assert_eq!(Policy::parse(&p.name().to_ascii_lowercase()), Some(p));
        }
    }

    #[test]
    fn topology_shape() {
        let vm_host = [0, 0, 0, 1, 2, 2];
        let dests = [
            d(SENSOR, 0, 0),
            d(WEB, 0, 0),
            d(SENSOR, 0, 0),
            d(WEB, 0, 0),
            d(SENSOR, 0, 0),
            d(SENSOR, 0, 0),
        ];
        let t = Topology::new(Policy::Vmwlch, &vm_host, &[32, 31, 0], &dests);
        let v = t.view(SENSOR);
        let spans: Vec<_> = v
            .spans
            .iter()
            .map(|s| {
                let own = &v.members[s.own_start as usize..s.own_end as usize];
                (s.weight, s.start, s.end, own.to_vec())
            })
            .collect();
        assert_eq!(spans, [(32, 0, 3, vec![0u32, 2]), (0, 4, 6, vec![4, 5])]);
        assert!(v.solo.is_empty());
        let v = t.view(WEB);
        assert_eq!(v.spans.len(), 2);
        assert_eq!(v.members, [1, 3]);
        assert!(t.view(99).spans.is_empty());
        let t = Topology::new(Policy::Wlc, &vm_host, &[32, 31, 0], &dests);
        assert!(t.view(SENSOR).spans.is_empty());
        assert_eq!(t.view(SENSOR).solo, [0, 2, 4, 5]);
        assert_eq!(t.view(WEB).solo, [1, 3]);
    }

    /// The three schedulers decide differently on the motivating case, each
    /// as its scope prescribes.
    #[test]
    fn policies_decide_by_their_scope() {
        let (vm_host, dests) = two_hosts();
        let w = [1, 1];
        let pick = |p: Policy, s: usize| {
            let g = Topology::new(p, &vm_host, &w, &dests);
            choose(p, &g, &dests, s, &mut || 0)
        };
        // Sensor: WLC and VMWLC look at sensor VMs only -> the light one (0);
        // VMWLC/H sees host 0's web load (256 + 2560 > 768) -> VM 2.
        assert_eq!(pick(Policy::Wlc, SENSOR), Some(0));
        assert_eq!(pick(Policy::WlcIpvs, SENSOR), Some(0));
        assert_eq!(pick(Policy::Vmwlc, SENSOR), Some(0));
        assert_eq!(pick(Policy::Vmwlch, SENSOR), Some(2));
        // The study's mix schedules sensors with VMWLC.
        assert_eq!(pick(Policy::VmwlchStudy, SENSOR), Some(0));
        // Web: everyone picks the idle web VM on host 1.
        for p in [
            Policy::Wlc,
            Policy::Vmwlc,
            Policy::Vmwlch,
            Policy::VmwlchStudy,
        ] {
            assert_eq!(pick(p, WEB), Some(3));
        }
    }

    /// Host-level balancing differs from VM-level balancing when a host has
    /// several VMs of the service: VMWLC sums them, WLC does not.
    #[test]
    fn vmwlc_balances_hosts_not_vms() {
        // Host 0: two sensor VMs with 2 connections each; host 1: one with 3.
        let vm_host = vec![0, 0, 1];
        let dests = vec![d(SENSOR, 2, 0), d(SENSOR, 2, 0), d(SENSOR, 3, 0)];
        let g = Topology::new(Policy::Wlc, &vm_host, &[1, 1], &dests);
        let wlc = choose(Policy::Wlc, &g, &dests, SENSOR, &mut || 0);
        assert!(matches!(wlc, Some(0) | Some(1)));
        let g = Topology::new(Policy::Vmwlc, &vm_host, &[1, 1], &dests);
        assert_eq!(
            choose(Policy::Vmwlc, &g, &dests, SENSOR, &mut || 0),
            Some(2)
        );
        // Host weights: host 0 twice as strong -> 4/2 < 3/1.
        let g = Topology::new(Policy::Vmwlc, &vm_host, &[2, 1], &dests);
        assert!(matches!(
            choose(Policy::Vmwlc, &g, &dests, SENSOR, &mut || 0),
            Some(0) | Some(1)
        ));
    }

    /// WLC through the core (implicit hosts) and the plain IPVS wlc both
    /// pick from the oracle's WLC set, on random states; they agree exactly
    /// whenever the minimum is unique.
    #[test]
    fn implicit_hosts_are_wlc() {
        let mut r = Rng::new(11);
        let mut unique = 0;
        for _ in 0..5000 {
            let n = 1 + (r.next_u32() % 8) as usize;
            let dests: Vec<DestState> = (0..n)
                .map(|_| DestState {
                    service: (r.next_u32() % 2) as usize,
                    weight: (r.next_u32() % 4) as i32,
                    active: (r.next_u32() % 4) as i32,
                    inactive: (r.next_u32() % 300) as i32,
                })
                .collect();
            let vm_host: Vec<usize> = (0..n).collect();
            let g = Topology::new(Policy::Wlc, &vm_host, &[], &dests);
            let mut snap = Snapshot::new();
            for x in &dests {
                snap.add_implicit(x.service, x.live());
            }
            for svc in [SENSOR, WEB] {
                let allowed = oracle::wlc_allowed(&snap, svc);
                let mut tie = || r.next_u32();
                let core = choose(Policy::Wlc, &g, &dests, svc, &mut tie);
                let plain = wlc_ipvs(&dests, svc);
                match (core, plain) {
                    (None, None) => assert!(allowed.is_empty()),
                    (Some(a), Some(b)) => {
                        assert!(allowed.contains(&a), "{dests:?} {svc} {a}");
                        assert!(allowed.contains(&b), "{dests:?} {svc} {b}");
                        if allowed.len() == 1 {
                            assert_eq!(a, b);
                            unique += 1;
                        } else {
                            // IPVS keeps the first of the tied ones.
                            assert_eq!(Some(&b), allowed.iter().min());
                        }
                    }
                    other => panic!("disagree on eligibility: {other:?} {dests:?}"),
                }
            }
        }
        assert!(unique > 1000);
    }

    /// With the host map, the simulator's view gives the same decisions as
    /// the oracle's snapshot of the same state.
    #[test]
    fn host_map_matches_oracle() {
        let mut r = Rng::new(5);
        for _ in 0..2000 {
            let hosts = 1 + (r.next_u32() % 4) as usize;
            let mut vm_host = Vec::new();
            let mut dests = Vec::new();
            let mut snap = Snapshot::new();
            let weights: Vec<u32> = (0..hosts).map(|_| r.next_u32() % 3).collect();
            for (h, &w) in weights.iter().enumerate() {
                let k = 1 + (r.next_u32() % 3) as usize;
                let mut members = Vec::new();
                for _ in 0..k {
                    let x = DestState {
                        service: (r.next_u32() % 2) as usize,
                        weight: 1 + (r.next_u32() % 2) as i32,
                        active: (r.next_u32() % 5) as i32,
                        inactive: (r.next_u32() % 50) as i32,
                    };
                    vm_host.push(h);
                    dests.push(x);
                    members.push((x.service, x.live()));
                }
                snap.add_host(w, &members);
            }
            for p in [Policy::Vmwlc, Policy::Vmwlch] {
                let g = Topology::new(p, &vm_host, &weights, &dests);
                for svc in [SENSOR, WEB] {
                    let scope = p.scope(svc).unwrap_or(Scope::Service);
                    let allowed = oracle::allowed(&snap, svc, scope);
                    let got = choose(p, &g, &dests, svc, &mut || r.next_u32());
                    match got {
                        None => assert!(allowed.is_empty()),
                        Some(x) => assert!(allowed.contains(&x), "{p:?} {svc} {x} {allowed:?}"),
                    }
                }
            }
        }
    }
}
