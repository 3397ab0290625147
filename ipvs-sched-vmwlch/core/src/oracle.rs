//! Brute-force reference for [`select`](crate::select) (feature `std`).
//!
//! Written independently of the selection and as plainly as possible: it
//! lists every host with its members, computes every load exactly (`u128`
//! sums, no saturation), and returns *all* destinations that an optimal
//! (host, destination) choice may yield. Used by the property tests, the
//! simulator and the VM test tool.

use std::vec;
use std::vec::Vec;

use crate::{Cluster, HostGroup, Live, Scope};

/// A destination of a [`Snapshot`].
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Dest {
    /// Opaque service key.
    pub service: usize,
    /// Live counters.
    pub live: Live,
}

/// A plain in-memory snapshot: host groups over a destination table.
#[derive(Clone, Default, Debug)]
pub struct Snapshot {
    /// Host groups, in scan order.
    pub hosts: Vec<HostGroup>,
    /// The destination table.
    pub dests: Vec<Dest>,
}

impl core::fmt::Debug for Live {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "Live(w={}, a={}, i={}{})",
            self.weight,
            self.activeconns,
            self.inactconns,
            if self.overloaded { ", OVERLOAD" } else { "" }
        )
    }
}

impl core::fmt::Debug for HostGroup {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "HostGroup({}W={}, [{}..+{}])",
            if self.implicit { "implicit, " } else { "" },
            self.weight,
            self.start,
            self.len
        )
    }
}

impl core::fmt::Debug for Scope {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(match self {
            Scope::Service => "Service",
            Scope::Aggregate => "Aggregate",
        })
    }
}

/// Live counters that are not overloaded.
pub fn live(weight: i32, activeconns: i32, inactconns: i32) -> Live {
    Live {
        weight,
        activeconns,
        inactconns,
        overloaded: false,
    }
}

impl Snapshot {
    /// An empty snapshot.
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends a mapped host of weight `weight` with the given `(service,
    /// live)` destinations; returns the indices of those destinations.
    pub fn add_host(&mut self, weight: u32, dests: &[(usize, Live)]) -> Vec<usize> {
        let start = self.dests.len();
        self.dests
            .extend(dests.iter().map(|&(service, live)| Dest { service, live }));
        self.hosts.push(HostGroup {
            weight,
            implicit: false,
            start: u32::try_from(start).expect("too many destinations"),
            len: u32::try_from(dests.len()).expect("too many destinations"),
        });
        (start..self.dests.len()).collect()
    }

    /// Appends an implicit host (an unmapped address) with one destination;
    /// returns its index.
    pub fn add_implicit(&mut self, service: usize, live: Live) -> usize {
        let start = self.dests.len();
        self.dests.push(Dest { service, live });
        self.hosts.push(HostGroup {
            weight: 0,
            implicit: true,
            start: u32::try_from(start).expect("too many destinations"),
            len: 1,
        });
        start
    }
}

impl Cluster for Snapshot {
    fn hosts(&self) -> &[HostGroup] {
        &self.hosts
    }
    fn dest_count(&self) -> usize {
        self.dests.len()
    }
    fn dest_service(&self, dest: usize) -> usize {
        self.dests[dest].service
    }
    fn live(&self, dest: usize) -> Live {
        self.dests[dest].live
    }
}

/// `max(x, 0)` widened.
fn nonneg(x: i32) -> u128 {
    if x < 0 {
        0
    } else {
        x as u128
    }
}

/// Overhead computed independently: `activeconns * 256 + inactconns`.
fn ovh(l: &Live) -> u128 {
    nonneg(l.activeconns) * 256 + nonneg(l.inactconns)
}

/// Whether `d` is eligible for `service`, its host's weight aside.
fn dest_ok(d: &Dest, service: usize) -> bool {
    d.service == service && d.live.weight > 0 && !d.live.overloaded
}

/// A host as the oracle sees it.
struct Host {
    /// `W(h)`.
    weight: u128,
    /// Indices of its destinations (within the table).
    members: Vec<usize>,
}

/// The in-table members of a group's range.
fn members(g: &HostGroup, table: usize) -> Vec<usize> {
    let lo = g.start as u128;
    let hi = (g.start as u128 + g.len as u128).min(table as u128);
    let mut out = Vec::new();
    let mut i = lo;
    while i < hi {
        out.push(i as usize);
        i += 1;
    }
    out
}

/// Every host of the snapshot: an implicit group is one host per destination.
fn all_hosts(s: &Snapshot) -> Vec<Host> {
    let mut hosts = Vec::new();
    for g in &s.hosts {
        let m = members(g, s.dests.len());
        if g.implicit {
            for d in m {
                hosts.push(Host {
                    weight: nonneg(s.dests[d].live.weight),
                    members: vec![d],
                });
            }
        } else {
            hosts.push(Host {
                weight: g.weight as u128,
                members: m,
            });
        }
    }
    hosts
}

/// All destinations `select` may return for `service` under `scope`
/// (ascending, deduplicated); empty iff no destination is eligible.
pub fn allowed(s: &Snapshot, service: usize, scope: Scope) -> Vec<usize> {
    // (load, weight, best destinations) of every candidate host.
    let mut cands: Vec<(u128, u128, Vec<usize>)> = Vec::new();
    for h in all_hosts(s) {
        if h.weight == 0 {
            continue;
        }
        let eligible: Vec<usize> = h
            .members
            .iter()
            .copied()
            .filter(|&d| dest_ok(&s.dests[d], service))
            .collect();
        if eligible.is_empty() {
            continue;
        }
        let mut load = 0u128;
        for &d in &h.members {
            let counts = match scope {
                Scope::Aggregate => true,
                Scope::Service => s.dests[d].service == service,
            };
            if counts {
                load += ovh(&s.dests[d].live);
            }
        }
        // Destinations d with o(d)/w(d) <= o(e)/w(e) for every eligible e.
        let ratio = |d: usize| (ovh(&s.dests[d].live), nonneg(s.dests[d].live.weight));
        let best: Vec<usize> = eligible
            .iter()
            .copied()
            .filter(|&d| {
                let (od, wd) = ratio(d);
                eligible.iter().all(|&e| {
                    let (oe, we) = ratio(e);
                    od * we <= oe * wd
                })
            })
            .collect();
        cands.push((load, h.weight, best));
    }
    let mut out = Vec::new();
    for (l, w, best) in &cands {
        if cands.iter().all(|(l2, w2, _)| l * w2 <= l2 * w) {
            out.extend(best.iter().copied());
        }
    }
    out.sort_unstable();
    out.dedup();
    out
}

/// Plain IPVS `wlc` reference: all destinations of `service` with positive
/// weight, not overloaded, whose `overhead / weight` is minimal (the set wlc
/// picks its first member from). Host groups are ignored.
pub fn wlc_allowed(s: &Snapshot, service: usize) -> Vec<usize> {
    let ok: Vec<usize> = (0..s.dests.len())
        .filter(|&d| dest_ok(&s.dests[d], service))
        .collect();
    let key = |d: usize| (ovh(&s.dests[d].live), nonneg(s.dests[d].live.weight));
    ok.iter()
        .copied()
        .filter(|&d| {
            let (od, wd) = key(d);
            ok.iter().all(|&e| {
                let (oe, we) = key(e);
                od * we <= oe * wd
            })
        })
        .collect()
}
