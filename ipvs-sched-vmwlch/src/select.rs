// SPDX-License-Identifier: GPL-2.0

//! Destination selection of the `vmwlc` and `vmwlch` IPVS schedulers.
//!
//! This file is compiled twice: into the kernel module (`ip_vs_vmwlch.ko`)
//! and into the user-space crate `vmwlch-core`, where it is tested against a
//! brute-force oracle. It therefore uses only `core`, never allocates, never
//! panics (no indexing, no unchecked arithmetic, no `unwrap`), uses no
//! floating point, uses `u128` only on 64-bit targets (where a 64x64-bit
//! product is one instruction, never a runtime helper), and contains no
//! `unsafe` code.
//!
//! The algorithm (DESIGN.md, "The algorithm (normative)"):
//!
//! * `d` is eligible for service `S` when it belongs to `S`, its weight is
//!   positive, it is not overloaded and its host's weight `W(h)` is positive;
//! * pick the host `h*` minimising `L(h)/W(h)` among hosts with an eligible
//!   destination, then the eligible destination of `S` on `h*` minimising
//!   `overhead/weight`;
//! * ratios are compared by exact cross-multiplication (64x64 -> 128 bits);
//! * equal ratios are resolved by a uniform draw among the tied candidates,
//!   so tied hosts (and tied destinations) share new connections evenly.
//! * `o(d) = max(0, activeconns * 256 + inactconns)`, and a host's load is
//!   the same formula over the sums of its destinations' counters (equal to
//!   the sum of their overheads: counters are never negative in practice).
//!
//! The cluster is presented per service ([`Cluster::view`]): the hosts on
//! which the service has destinations, each with the range of all its
//! destinations (every service, for the aggregate load) and the list of the
//! service's own destinations there. A decision is then one pass over those
//! hosts that sums each host's counters and keeps the least loaded host, and
//! one pass over the chosen host's destinations of the service that picks
//! the least loaded eligible one. The first pass does not look at weights
//! and flags: a host whose destinations of the service have all lost their
//! eligibility (a weight set to 0, an OVERLOAD flag) is noticed when the
//! second pass finds nothing there, and the decision is then made again by
//! the exact two passes that check eligibility on every host. Views that
//! leave out hosts with no destination of positive weight (the kernel's do)
//! make that rare.
//!
//! The hot loops are written for the cost of emulation as much as for real
//! CPUs (the benchmarks run under QEMU's TCG): ties are collected as bits in
//! a register rather than drawn one by one (`ties.rs`), and the first pass
//! has no data-dependent branch per destination.

use core::cmp::Ordering;

#[path = "ties.rs"]
mod ties;

#[path = "host_cache.rs"]
mod host_cache;

/// The per-CPU host loads of the kernel's decisions.
pub use host_cache::{HostCache, HostLoad};
use ties::Least;

/// Which load the host stage minimises.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// `vmwlc`: only the requested service's destinations count toward `L(h)`.
    Service,
    /// `vmwlch`: all tracked destinations (of every service) count toward `L(h)`.
    Aggregate,
}

/// Live values of a destination at decision time (read once per decision).
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Live {
    /// The destination's IPVS weight; `<= 0` means it takes no new connections.
    pub weight: i32,
    /// Active connections (IPVS `activeconns`).
    pub activeconns: i32,
    /// Inactive connections (IPVS `inactconns`).
    pub inactconns: i32,
    /// The destination carries `IP_VS_DEST_F_OVERLOAD`.
    pub overloaded: bool,
}

/// IPVS overhead of counters: `activeconns * 256 + inactconns`, or 0 if
/// that is negative (a counter can only be negative through a kernel bug;
/// the clamp keeps every ratio's numerator meaningful).
///
/// For one destination the result is below `2^40`. For the sums of a host's
/// counters it is exact while the summed `activeconns` stays below `2^55`
/// (over `2^24` destinations at the largest value), and saturates beyond.
#[must_use]
#[inline(always)]
pub fn load(activeconns: i64, inactconns: i64) -> u64 {
    // Both in [0, 2^55) (the common case, one test): the sum is below 2^64.
    let (a, i) = (activeconns as u64, inactconns as u64);
    if (a | i) >> 55 == 0 {
        return a.wrapping_shl(8).wrapping_add(i);
    }
    let o = activeconns.saturating_mul(256).saturating_add(inactconns);
    o.max(0).unsigned_abs()
}

/// IPVS overhead of a destination (as [`load`]; below `2^40`).
#[must_use]
#[inline(always)]
pub fn overhead(l: &Live) -> u64 {
    // |a| * 256 + |i| < 2^40: no i64 overflow. The clamp without a branch:
    // the sign mask clears a negative value.
    let o = i64::from(l.activeconns)
        .wrapping_shl(8)
        .wrapping_add(i64::from(l.inactconns));
    (o & !(o >> 63)) as u64
}

/// A host as one service sees it: a candidate of the first pass.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Span {
    /// Host weight `W(h)`; 0 drains the host.
    pub weight: u32,
    /// The host's number in the cluster, the key of [`Cluster::host_load`]
    /// (a cluster that does not cache loads may put anything here).
    pub host: u32,
    /// The host's destinations of every service: indices `[start, end)` of
    /// the destination table (the part beyond the table is ignored). Their
    /// counters make the aggregate load.
    pub start: u32,
    /// End of the host's destination range (exclusive).
    pub end: u32,
    /// The service's destinations on the host: entries `[own_start,
    /// own_end)` of the view's member list (the part beyond it is ignored).
    pub own_start: u32,
    /// End of the own range (exclusive).
    pub own_end: u32,
}

/// The cluster as one service sees it.
#[derive(Clone, Copy)]
pub struct View<'a> {
    /// The mapped hosts on which the service may have an eligible
    /// destination, in scan order. Hosts with none may be listed (they cost
    /// time, not correctness); a host with an eligible destination must be.
    pub spans: &'a [Span],
    /// Destination table indices of the service's destinations on mapped
    /// hosts, in the order the spans' own ranges refer to them.
    pub members: &'a [u32],
    /// Destination table indices of the service's destinations whose address
    /// the map does not know: each is a host of its own (an implicit host),
    /// whose weight is the destination's live weight and whose load is its
    /// overhead.
    pub solo: &'a [u32],
}

impl View<'_> {
    /// An empty view: the service has no destination.
    pub const EMPTY: View<'static> = View {
        spans: &[],
        members: &[],
        solo: &[],
    };
}

/// What the kernel snapshot (or a test) provides.
pub trait Cluster {
    /// The view of `service` (an opaque key; the kernel passes the service
    /// pointer as `usize`). Spans should be disjoint host ranges and their
    /// own members destinations of the service on that host; anything else
    /// gives some destination of the view's members, or none, never a panic.
    fn view(&self, service: usize) -> View<'_>;
    /// Number of destinations in the destination table; indices at or beyond
    /// it are never passed to [`Cluster::counts`] or [`Cluster::live`].
    fn dest_count(&self) -> usize;
    /// `(activeconns, inactconns)` of a destination.
    fn counts(&self, dest: usize) -> (i32, i32);
    /// Weight, counters and flags of a destination.
    fn live(&self, dest: usize) -> Live;
    /// `L(h)` of the host of `sp` for `vmwlch`: `sum` adds up the counters
    /// of all its destinations. A cluster may instead answer what it summed
    /// for that host a moment ago plus what it scheduled there since
    /// ([`Cluster::scheduled`], [`HostCache`]): the kernel does, per CPU
    /// within a jiffy, so that a decision does not read every destination of
    /// every service on the service's hosts.
    #[inline(always)]
    fn host_load(&self, sp: &Span, sum: impl FnOnce() -> u64) -> u64 {
        let _ = sp;
        sum()
    }
    /// A `vmwlch` decision chose a destination on the host of `sp`.
    #[inline(always)]
    fn scheduled(&self, sp: &Span) {
        let _ = sp;
    }
}

/// A range of `u32` bounds, clamped to `len` (never inverted).
#[inline(always)]
fn clamp(start: u32, end: u32, len: usize) -> (usize, usize) {
    let end = usize::try_from(end).unwrap_or(usize::MAX).min(len);
    let start = usize::try_from(start).unwrap_or(usize::MAX).min(end);
    (start, end)
}

/// Exact product of two `u64` values as `(high, low)` 64-bit halves.
///
/// Done with 32-bit limbs so that no `u128` arithmetic (and no compiler
/// runtime helper such as `__multi3` on 32-bit architectures) is needed.
#[must_use]
#[inline]
pub const fn mul_wide(a: u64, b: u64) -> (u64, u64) {
    const MASK: u64 = 0xffff_ffff;
    let (a_hi, a_lo) = (a >> 32, a & MASK);
    let (b_hi, b_lo) = (b >> 32, b & MASK);
    // Each partial product of two values below 2^32 is below 2^64: exact.
    let ll = a_lo.wrapping_mul(b_lo);
    let lh = a_lo.wrapping_mul(b_hi);
    let hl = a_hi.wrapping_mul(b_lo);
    let hh = a_hi.wrapping_mul(b_hi);
    // Below 3 * 2^32: exact.
    let mid = (ll >> 32).wrapping_add(lh & MASK).wrapping_add(hl & MASK);
    let low = (mid << 32) | (ll & MASK);
    // The full product is below 2^128, so the high half cannot overflow.
    let high = hh
        .wrapping_add(lh >> 32)
        .wrapping_add(hl >> 32)
        .wrapping_add(mid >> 32);
    (high, low)
}

/// The exact cross products `(n1 * d2, n2 * d1)`, as values that compare
/// like the products (so `n1 / d1 < n2 / d2` iff `.0 < .1` for positive
/// denominators).
#[cfg(target_pointer_width = "64")]
#[inline(always)]
fn cross(n1: u64, d1: u64, n2: u64, d2: u64) -> (u128, u128) {
    // All four below 2^32 (the usual case): the 64-bit products are exact,
    // and cheaper (no 128-bit compare).
    if (n1 | d1 | n2 | d2) >> 32 == 0 {
        return (
            u128::from(n1.wrapping_mul(d2)),
            u128::from(n2.wrapping_mul(d1)),
        );
    }
    // Products of two values below 2^64 are below 2^128: exact.
    (
        u128::from(n1).wrapping_mul(u128::from(d2)),
        u128::from(n2).wrapping_mul(u128::from(d1)),
    )
}

/// As above, on 32-bit targets (no 128-bit arithmetic, no compiler helper).
#[cfg(not(target_pointer_width = "64"))]
#[inline(always)]
fn cross(n1: u64, d1: u64, n2: u64, d2: u64) -> ((u64, u64), (u64, u64)) {
    (mul_wide(n1, d2), mul_wide(n2, d1))
}

/// Compares `n1 / d1` with `n2 / d2` exactly by cross-multiplication
/// (`n1 * d2` against `n2 * d1`, 128-bit). Denominators must be positive for
/// the result to be the ratio order.
#[must_use]
#[inline(always)]
pub fn cmp_ratio(n1: u64, d1: u64, n2: u64, d2: u64) -> Ordering {
    // All four below 2^32 (the usual case): the 64-bit products are exact
    // and one compare decides.
    if (n1 | d1 | n2 | d2) >> 32 == 0 {
        return n1.wrapping_mul(d2).cmp(&n2.wrapping_mul(d1));
    }
    let (a, b) = cross(n1, d1, n2, d2);
    a.cmp(&b)
}

/// IPVS `wlc` (`ip_vs_wlc.c`) over one service's destinations offered in
/// list order: the first of positive weight that is not overloaded, then
/// each later one that is not overloaded and has a strictly smaller
/// overhead per weight. The module decides by it while no snapshot is
/// current.
///
/// The products are exact ([`cmp_ratio`]) for every weight up to `i32::MAX`
/// and every counter, so nothing wraps (with `CONFIG_RUST_OVERFLOW_CHECKS`
/// a wrapped `i64` product is a panic in softirq). The choice is wlc's
/// wherever wlc's own arithmetic is exact: its overhead is an `int`
/// (`activeconns < 2^23`); beyond, wlc's wraps and this one does not.
pub struct WlcLeast<T> {
    /// The destination chosen so far, its overhead and weight.
    least: Option<(T, u64, u64)>,
}

impl<T> WlcLeast<T> {
    /// Nothing offered yet.
    #[must_use]
    pub const fn new() -> Self {
        Self { least: None }
    }

    /// Offers the next destination of the service's list.
    #[inline(always)]
    pub fn offer(&mut self, dest: T, l: &Live) {
        if l.overloaded {
            return;
        }
        let (oh, w) = (overhead(l), u64::from(l.weight.max(0).unsigned_abs()));
        let better = match &self.least {
            None => w > 0,
            // oh / w < loh / lw, as wlc's `loh * w > oh * lw`.
            Some((_, loh, lw)) => cmp_ratio(oh, w, *loh, *lw) == Ordering::Less,
        };
        if better {
            self.least = Some((dest, oh, w));
        }
    }

    /// wlc's choice among the destinations offered (`None` if none is eligible).
    #[must_use]
    pub fn least(self) -> Option<T> {
        self.least.map(|(d, _, _)| d)
    }
}

impl<T> Default for WlcLeast<T> {
    /// Nothing offered yet.
    fn default() -> Self {
        Self::new()
    }
}

/// A candidate: `load / weight` is its ratio.
#[derive(Clone, Copy)]
struct Pick {
    /// Numerator: host load `L(h)` or destination overhead.
    load: u64,
    /// Denominator: host weight `W(h)` or destination weight; positive for
    /// a real candidate.
    weight: u64,
    /// The destination chosen if this candidate wins: for a host, an
    /// eligible destination found by the checking first pass, else none
    /// (`usize::MAX`).
    dest: usize,
    /// For a host, the index of its span, whose own members the second pass
    /// scans; `usize::MAX` for a destination.
    span: usize,
}

impl Pick {
    /// No candidate yet: an infinite ratio (weight 0), so that any real
    /// candidate (positive weight) compares strictly less.
    const NONE: Pick = Pick {
        load: 1,
        weight: 0,
        dest: usize::MAX,
        span: usize::MAX,
    };
}

/// Destination `d` as a candidate of ratio overhead/weight, if it is eligible
/// (positive weight, not overloaded).
#[inline(always)]
fn vm_pick(live: &Live, d: usize) -> Option<Pick> {
    eligible(live).map(|(load, weight)| Pick {
        load,
        weight,
        dest: d,
        span: usize::MAX,
    })
}

/// Keeps in `best` the candidate with the least ratio. Among equal ratios it
/// keeps each of the `ties` candidates seen so far with probability `1/ties`
/// (reservoir sampling); `rng` is called only when a tie is met.
#[inline(always)]
fn offer<R: FnMut() -> u32>(best: &mut Pick, ties: &mut u32, cand: Pick, rng: &mut R) {
    // cand < best iff cand.load * best.weight < best.load * cand.weight;
    // against NONE that is 0 < cand.weight: always.
    let (c, b) = cross(cand.load, cand.weight, best.load, best.weight);
    if c < b {
        *best = cand;
        *ties = 1;
    } else if c == b {
        *ties = ties.saturating_add(1);
        // floor(r * k / 2^32) is uniform on [0, k) up to 2^-32 bias;
        // r < 2^32 and k < 2^32, so the product does not overflow.
        let pick = u64::from(rng()).wrapping_mul(u64::from(*ties)) >> 32;
        if pick == 0 {
            *best = cand;
        }
    }
}

/// Load of a host: its counters summed (every destination of the host under
/// `AGGREGATE`, else the service's own), as [`load`].
#[inline(always)]
fn span_load<const AGGREGATE: bool, C: Cluster>(c: &C, v: &View<'_>, sp: &Span) -> u64 {
    if AGGREGATE {
        return c.host_load(sp, || host_sum(c, sp));
    }
    // Each term is an i32 and there are fewer than 2^32 of them: no i64 wraps.
    let (mut active, mut inactive) = (0i64, 0i64);
    for &d in own(v, sp) {
        let d = d as usize;
        if d < c.dest_count() {
            let (a, i) = c.counts(d);
            active = active.wrapping_add(i64::from(a));
            inactive = inactive.wrapping_add(i64::from(i));
        }
    }
    load(active, inactive)
}

/// Load of a host: the counters of all its destinations summed, as [`load`].
#[inline(always)]
fn host_sum<C: Cluster>(c: &C, sp: &Span) -> u64 {
    // Each term is an i32 and there are fewer than 2^32 of them: no i64 wraps.
    let (mut active, mut inactive) = (0i64, 0i64);
    // A range beyond the table is cut at its end; an inverted one is empty.
    let end = (sp.end as usize).min(c.dest_count());
    let mut d = sp.start as usize;
    // Two destinations per step: half the loop's own instructions
    // (what emulation weighs). `d < end` bounds both sums below usize::MAX.
    while d.wrapping_add(1) < end {
        let (a0, i0) = c.counts(d);
        let (a1, i1) = c.counts(d.wrapping_add(1));
        active = active
            .wrapping_add(i64::from(a0))
            .wrapping_add(i64::from(a1));
        inactive = inactive
            .wrapping_add(i64::from(i0))
            .wrapping_add(i64::from(i1));
        d = d.wrapping_add(2);
    }
    if d < end {
        let (a, i) = c.counts(d);
        active = active.wrapping_add(i64::from(a));
        inactive = inactive.wrapping_add(i64::from(i));
    }
    load(active, inactive)
}

/// A destination's overhead and weight, if it is eligible (positive weight,
/// not overloaded).
#[inline(always)]
fn eligible(live: &Live) -> Option<(u64, u64)> {
    (live.weight > 0 && !live.overloaded)
        .then(|| (overhead(live), u64::from(live.weight.unsigned_abs())))
}

/// The eligible destination among `members` (destination table indices)
/// with the least overhead/weight.
#[inline(always)]
fn least_vm<C: Cluster, R: FnMut() -> u32>(c: &C, members: &[u32], rng: &mut R) -> Option<usize> {
    let count = c.dest_count();
    let mut vm = Least::NONE;
    let mut bit = 1u64;
    for (k, &d) in members.iter().enumerate() {
        let d = d as usize;
        if d < count {
            let l = c.live(d);
            if l.weight > 0 && !l.overloaded {
                vm.offer(
                    overhead(&l),
                    u64::from(l.weight.unsigned_abs()),
                    k,
                    bit,
                    rng,
                );
            }
        }
        bit <<= 1;
    }
    vm.winner(rng)
        .and_then(|k| members.get(k))
        .map(|&d| d as usize)
}

/// The own members of span `sp` of view `v`.
#[inline(always)]
fn own<'a>(v: &View<'a>, sp: &Span) -> &'a [u32] {
    let (start, end) = clamp(sp.own_start, sp.own_end, v.members.len());
    v.members.get(start..end).unwrap_or(&[])
}

/// Chooses the destination for a new connection to `service`.
///
/// Returns the index of the chosen destination in the destination table, or
/// `None` when no destination is eligible (the caller reports it like IPVS
/// schedulers do, with `ip_vs_scheduler_err`). `rng` is called only to break
/// ties between equal ratios.
#[must_use]
#[inline(always)]
pub fn select<C: Cluster, R: FnMut() -> u32>(
    c: &C,
    service: usize,
    scope: Scope,
    rng: &mut R,
) -> Option<usize> {
    let v = c.view(service);
    // One copy of each scan per scope, so that the scope test is not in the loop.
    let fast = match scope {
        Scope::Service => fast_scan::<false, C, R>(c, &v, rng),
        Scope::Aggregate => fast_scan::<true, C, R>(c, &v, rng),
    };
    match fast {
        Fast::Chosen(d) => Some(d),
        Fast::NoHost => None,
        // The host the first pass chose had no eligible destination left:
        // decide again, checking every host's destinations.
        Fast::Recheck => match scope {
            Scope::Service => exact_scan::<false, C, R>(c, &v, rng),
            Scope::Aggregate => exact_scan::<true, C, R>(c, &v, rng),
        },
    }
}

/// Outcome of [`fast_scan`].
enum Fast {
    /// This destination.
    Chosen(usize),
    /// No host can have an eligible destination: every listed host is
    /// drained and no implicit host's destination is eligible.
    NoHost,
    /// The chosen host had no eligible destination.
    Recheck,
}

/// The two passes, the first without looking at the eligibility of mapped
/// hosts' destinations (`AGGREGATE` is `scope == Scope::Aggregate`).
///
/// Out of line: each scope's copy is a function of its own, so that the
/// callers stay small (and, in the benchmark build, every hot loop lies in
/// one page: see `scripts/bench-sched.sh`).
#[must_use]
#[inline(never)]
fn fast_scan<const AGGREGATE: bool, C: Cluster, R: FnMut() -> u32>(
    c: &C,
    v: &View<'_>,
    rng: &mut R,
) -> Fast {
    let count = c.dest_count();
    let mut best = Least::NONE;
    // First pass: the host with the least L(h)/W(h). Positions: spans by
    // index, then implicit hosts after them.
    let mut bit = 1u64;
    for (i, sp) in v.spans.iter().enumerate() {
        if sp.weight != 0 {
            let load = span_load::<AGGREGATE, C>(c, v, sp);
            best.offer(load, u64::from(sp.weight), i, bit, rng);
        }
        bit <<= 1;
    }
    for (k, &d) in v.solo.iter().enumerate() {
        let d = d as usize;
        if d < count {
            // An implicit host counts only if its destination is eligible.
            if let Some((load, weight)) = eligible(&c.live(d)) {
                best.offer(load, weight, v.spans.len().wrapping_add(k), bit, rng);
            }
        }
        bit <<= 1;
    }
    let Some(id) = best.winner(rng) else {
        return Fast::NoHost;
    };
    match v.spans.get(id) {
        // Second pass: the chosen host's eligible destination of the
        // service with the least overhead/weight.
        Some(sp) => match least_vm(c, own(v, sp), rng) {
            Some(d) => {
                if AGGREGATE {
                    c.scheduled(sp);
                }
                Fast::Chosen(d)
            }
            None => Fast::Recheck,
        },
        None => v
            .solo
            .get(id.wrapping_sub(v.spans.len()))
            .map_or(Fast::NoHost, |&d| Fast::Chosen(d as usize)),
    }
}

/// The two passes, the first considering only hosts with an eligible
/// destination of the service: the exact algorithm whatever the view lists
/// (`AGGREGATE` is `scope == Scope::Aggregate`).
#[must_use]
#[inline(never)]
fn exact_scan<const AGGREGATE: bool, C: Cluster, R: FnMut() -> u32>(
    c: &C,
    v: &View<'_>,
    rng: &mut R,
) -> Option<usize> {
    let count = c.dest_count();
    let mut best = Pick::NONE;
    let mut ties = 0u32;
    for &d in v.solo {
        let d = d as usize;
        if d < count {
            if let Some(cand) = vm_pick(&c.live(d), d) {
                offer(&mut best, &mut ties, cand, rng);
            }
        }
    }
    for (i, sp) in v.spans.iter().enumerate() {
        if sp.weight == 0 {
            continue;
        }
        // The first eligible destination of the service on the host.
        let Some(dest) = own(v, sp)
            .iter()
            .map(|&d| d as usize)
            .find(|&d| d < count && vm_pick(&c.live(d), d).is_some())
        else {
            continue;
        };
        let cand = Pick {
            load: span_load::<AGGREGATE, C>(c, v, sp),
            weight: u64::from(sp.weight),
            dest,
            span: i,
        };
        offer(&mut best, &mut ties, cand, rng);
    }
    if best.weight == 0 {
        return None;
    }
    let Some(sp) = v.spans.get(best.span) else {
        // An implicit host: its destination.
        return Some(best.dest);
    };
    if AGGREGATE {
        c.scheduled(sp);
    }
    // Should the counters have changed so that none is eligible any more,
    // the first pass's find stands.
    Some(least_vm(c, own(v, sp), rng).unwrap_or(best.dest))
}
