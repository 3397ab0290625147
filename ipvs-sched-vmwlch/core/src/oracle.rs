//! Brute-force reference for [`select`](crate::select) (feature `std`).
//!
//! Written independently of the selection and as plainly as possible: it
//! lists every host with its members, computes every load exactly (`u128`
//! sums, no saturation), and returns *all* destinations that an optimal
//! (host, destination) choice may yield. Used by the property tests, the
//! simulator and the VM test tool.
//!
//! [`Snapshot`] is also a [`Cluster`]: host groups over a destination table,
//! from which it derives each service's [`View`] the plain way (every host
//! group with a destination of the service, whatever the weights).

use std::cell::OnceCell;
use std::collections::BTreeMap;
use std::vec;
use std::vec::Vec;

use crate::{Cluster, Live, Scope, Span, View};

/// A host group: the destinations `[start, start + len)` of the table
/// belong to it.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct HostGroup {
    /// Host weight `W(h)`; 0 drains the host. Ignored for implicit hosts.
    pub weight: u32,
    /// An address the map does not know: each destination of the group is
    /// a host of its own, whose weight is that destination's live weight.
    pub implicit: bool,
    /// Index of the group's first destination in the destination table.
    pub start: u32,
    /// Number of destinations in the group; the part of the range beyond the
    /// destination table is ignored.
    pub len: u32,
}

/// A destination of a [`Snapshot`].
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Dest {
    /// Opaque service key.
    pub service: usize,
    /// Live counters.
    pub live: Live,
}

/// A service's view, owned.
#[derive(Clone, Default, Debug)]
pub struct OwnedView {
    /// See [`View::spans`].
    pub spans: Vec<Span>,
    /// See [`View::members`].
    pub members: Vec<u32>,
    /// See [`View::solo`].
    pub solo: Vec<u32>,
}

impl OwnedView {
    /// Borrowed, as the selection takes it.
    pub fn view(&self) -> View<'_> {
        View {
            spans: &self.spans,
            members: &self.members,
            solo: &self.solo,
        }
    }
}

/// Every service's view, the plain way: for each mapped host (its weight and
/// its destinations, ascending table indices) with a destination of the
/// service, a span over the host's destinations listing the service's; each
/// unmapped destination of the service as an implicit host. `service_of`
/// gives a destination's service.
pub fn views<'a>(
    hosts: impl IntoIterator<Item = (u32, &'a [usize])>,
    solo: impl IntoIterator<Item = usize>,
    service_of: impl Fn(usize) -> usize,
) -> BTreeMap<usize, OwnedView> {
    let mut views: BTreeMap<usize, OwnedView> = BTreeMap::new();
    for (host, (weight, m)) in hosts.into_iter().enumerate() {
        let (start, end) = match (m.first(), m.last()) {
            (Some(&a), Some(&b)) => (a as u32, b as u32 + 1),
            _ => continue,
        };
        let mut services: Vec<usize> = m.iter().map(|&d| service_of(d)).collect();
        services.sort_unstable();
        services.dedup();
        for svc in services {
            let v = views.entry(svc).or_default();
            let own_start = v.members.len() as u32;
            v.members.extend(
                m.iter()
                    .filter(|&&d| service_of(d) == svc)
                    .map(|&d| d as u32),
            );
            v.spans.push(Span {
                weight,
                host: host as u32,
                start,
                end,
                own_start,
                own_end: v.members.len() as u32,
            });
        }
    }
    for d in solo {
        views.entry(service_of(d)).or_default().solo.push(d as u32);
    }
    views
}

/// A plain in-memory snapshot: host groups over a destination table.
///
/// The destinations' counters, weights and flags may be changed in place;
/// their services and the groups only through the methods (the views are
/// derived from them once).
#[derive(Clone, Default, Debug)]
pub struct Snapshot {
    /// Host groups, in scan order.
    hosts: Vec<HostGroup>,
    /// The destination table.
    pub dests: Vec<Dest>,
    /// Views by service, derived on first use.
    views: OnceCell<BTreeMap<usize, OwnedView>>,
}

impl core::fmt::Debug for Span {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "Span(W={}, [{}..{}], own {}..{})",
            self.weight, self.start, self.end, self.own_start, self.own_end
        )
    }
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
        self.add_group(HostGroup {
            weight,
            implicit: false,
            start: u32::try_from(start).expect("too many destinations"),
            len: u32::try_from(dests.len()).expect("too many destinations"),
        });
        (start..self.dests.len()).collect()
    }

    /// Appends a host group as it is (its range may be anything).
    pub fn add_group(&mut self, g: HostGroup) {
        self.hosts.push(g);
        self.views.take();
    }

    /// Appends destinations that no group lists yet; returns the index of
    /// the first.
    pub fn add_dests(&mut self, dests: &[Dest]) -> usize {
        let start = self.dests.len();
        self.dests.extend_from_slice(dests);
        self.views.take();
        start
    }

    /// The host groups.
    pub fn hosts(&self) -> &[HostGroup] {
        &self.hosts
    }

    /// Rotates the group order left by `n`.
    pub fn rotate_hosts(&mut self, n: usize) {
        if !self.hosts.is_empty() {
            let len = self.hosts.len();
            self.hosts.rotate_left(n % len);
            self.views.take();
        }
    }

    /// Each service's view: for every non-implicit group (in order) with a
    /// destination of the service, a span over the group's in-table range
    /// listing those destinations; each destination of the service in an
    /// implicit group as an implicit host.
    fn derive(&self) -> BTreeMap<usize, OwnedView> {
        let n = self.dests.len();
        let mapped: Vec<(u32, Vec<usize>)> = self
            .hosts
            .iter()
            .filter(|g| !g.implicit)
            .map(|g| (g.weight, members(g, n)))
            .collect();
        let solo = self
            .hosts
            .iter()
            .filter(|g| g.implicit)
            .flat_map(|g| members(g, n));
        views(mapped.iter().map(|(w, m)| (*w, m.as_slice())), solo, |d| {
            self.dests[d].service
        })
    }

    /// Appends an implicit host (an unmapped address) with one destination;
    /// returns its index.
    pub fn add_implicit(&mut self, service: usize, live: Live) -> usize {
        let start = self.dests.len();
        self.dests.push(Dest { service, live });
        self.add_group(HostGroup {
            weight: 0,
            implicit: true,
            start: u32::try_from(start).expect("too many destinations"),
            len: 1,
        });
        start
    }
}

impl Cluster for Snapshot {
    fn view(&self, service: usize) -> View<'_> {
        self.views
            .get_or_init(|| self.derive())
            .get(&service)
            .map_or(View::EMPTY, OwnedView::view)
    }
    fn dest_count(&self) -> usize {
        self.dests.len()
    }
    fn counts(&self, dest: usize) -> (i32, i32) {
        let l = self.dests[dest].live;
        (l.activeconns, l.inactconns)
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

/// `activeconns * 256 + inactconns`, exact.
fn raw(l: &Live) -> i128 {
    l.activeconns as i128 * 256 + l.inactconns as i128
}

/// Overhead computed independently: `activeconns * 256 + inactconns`, or 0
/// if negative.
fn ovh(l: &Live) -> u128 {
    raw(l).max(0) as u128
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
        // The counters summed, then clamped at 0 (a negative counter is a
        // kernel bug; this is what the selection defines for it).
        let mut sum = 0i128;
        for &d in &h.members {
            let counts = match scope {
                Scope::Aggregate => true,
                Scope::Service => s.dests[d].service == service,
            };
            if counts {
                sum += raw(&s.dests[d].live);
            }
        }
        let load = sum.max(0) as u128;
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
