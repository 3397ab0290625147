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
//! * equal ratios are resolved by reservoir sampling, so tied hosts (and tied
//!   destinations) share new connections evenly.
//!
//! The scan is one pass over the host groups that computes each host's load
//! and whether it has an eligible destination, then one pass over the chosen
//! host's destinations of the service to choose among them. Each
//! destination's live counters are read once per decision, except that the
//! chosen host's destinations of the requested service are read a second
//! time by the second pass (the kernel updates counters concurrently in any
//! case; every value the decision uses was current when it was read).

use core::cmp::Ordering;

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

/// IPVS overhead = `activeconns * 256 + inactconns`, negatives clamped to 0.
///
/// The result is below `2^40`, so sums of up to `2^24` overheads never
/// saturate in practice (they saturate rather than wrap if they would).
#[must_use]
#[inline(always)]
pub fn overhead(l: &Live) -> u64 {
    let active = u64::from(l.activeconns.max(0).unsigned_abs());
    let inactive = u64::from(l.inactconns.max(0).unsigned_abs());
    active.saturating_mul(256).saturating_add(inactive)
}

/// A host group in a snapshot: the destinations `[start, start + len)` of the
/// snapshot's destination table belong to it.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct HostGroup {
    /// Host weight `W(h)`; 0 drains the host. Ignored for implicit hosts.
    pub weight: u32,
    /// An address the map does not know: the host of a single destination,
    /// whose weight is that destination's live weight. A malformed implicit
    /// group with several destinations is treated as that many implicit hosts.
    pub implicit: bool,
    /// Index of the group's first destination in the destination table.
    pub start: u32,
    /// Number of destinations in the group; the part of the range beyond the
    /// destination table is ignored.
    pub len: u32,
}

/// What the kernel snapshot (or a test) provides.
///
/// Groups should be disjoint; a destination listed by two groups counts for
/// both and is read once per group.
pub trait Cluster {
    /// The host groups, in scan order.
    fn hosts(&self) -> &[HostGroup];
    /// Number of destinations in the destination table; indices at or beyond
    /// it are never passed to [`Cluster::dest_service`] or [`Cluster::live`].
    fn dest_count(&self) -> usize;
    /// Opaque key of the service the destination belongs to (the kernel
    /// passes the service pointer as `usize`).
    fn dest_service(&self, dest: usize) -> usize;
    /// Live counters of the destination; called at most once per destination
    /// (per group listing it) and pass.
    fn live(&self, dest: usize) -> Live;
}

/// The destination index range of a group, clamped to the destination table.
#[inline(always)]
fn group_range(g: &HostGroup, dest_count: usize) -> (usize, usize) {
    let start = usize::try_from(g.start).unwrap_or(usize::MAX);
    let len = usize::try_from(g.len).unwrap_or(usize::MAX);
    let end = start.saturating_add(len).min(dest_count);
    (start.min(end), end)
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
    let (a, b) = cross(n1, d1, n2, d2);
    a.cmp(&b)
}

/// A candidate: `load / weight` is its ratio, `dest` the destination it stands for.
#[derive(Clone, Copy)]
struct Pick {
    /// Numerator: host load `L(h)` or destination overhead.
    load: u64,
    /// Denominator: host weight `W(h)` or destination weight; positive for
    /// a real candidate.
    weight: u64,
    /// Destination chosen if this candidate wins (for a host group: an
    /// eligible destination, the fallback of the second pass).
    dest: usize,
    /// For a host group, the destination range the second pass scans;
    /// empty for a single destination.
    group: (usize, usize),
}

impl Pick {
    /// No candidate yet: an infinite ratio (weight 0), so that any real
    /// candidate (positive weight) compares strictly less.
    const NONE: Pick = Pick {
        load: 1,
        weight: 0,
        dest: usize::MAX,
        group: (0, 0),
    };
}

/// Destination `d` as a candidate of ratio overhead/weight, if it is eligible
/// (positive weight, not overloaded).
#[inline(always)]
fn vm_pick(live: &Live, d: usize) -> Option<Pick> {
    (live.weight > 0 && !live.overloaded).then(|| Pick {
        load: overhead(live),
        weight: u64::from(live.weight.unsigned_abs()),
        dest: d,
        group: (0, 0),
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

/// All ones if `b`, else zero.
#[inline(always)]
fn mask(b: bool) -> usize {
    0usize.wrapping_sub(usize::from(b))
}

/// As [`mask`], 64 bits wide.
#[inline(always)]
fn mask64(b: bool) -> u64 {
    0u64.wrapping_sub(u64::from(b))
}

/// Aggregate load of a host group: the saturating sum of the overhead of all
/// its destinations (every service) within the destination table.
#[must_use]
pub fn host_load<C: Cluster>(c: &C, host: &HostGroup) -> u64 {
    let (start, end) = group_range(host, c.dest_count());
    (start..end).fold(0u64, |sum, d| sum.saturating_add(overhead(&c.live(d))))
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
    // One copy of the scan per scope, so that the scope test is not in the loop.
    match scope {
        Scope::Service => scan::<false, C, R>(c, service, rng),
        Scope::Aggregate => scan::<true, C, R>(c, service, rng),
    }
}

/// [`select`] for one scope: `AGGREGATE` is `scope == Scope::Aggregate`.
#[must_use]
fn scan<const AGGREGATE: bool, C: Cluster, R: FnMut() -> u32>(
    c: &C,
    service: usize,
    rng: &mut R,
) -> Option<usize> {
    let count = c.dest_count();
    let mut best = Pick::NONE;
    let mut host_ties = 0u32;

    // First pass: the host with the least L(h)/W(h) among those with an
    // eligible destination of the service.
    for g in c.hosts() {
        let (start, end) = group_range(g, count);
        if g.implicit {
            // Every destination is a host of its own with W(h) = w(d) and
            // L(h) = o(d); such a host only matters if its destination is
            // eligible for `service`.
            for d in start..end {
                if c.dest_service(d) != service {
                    continue;
                }
                if let Some(cand) = vm_pick(&c.live(d), d) {
                    offer(&mut best, &mut host_ties, cand, rng);
                }
            }
            continue;
        }
        if g.weight == 0 {
            // Drained: no eligible destination, its load does not matter.
            continue;
        }
        let mut load = 0u64;
        // An eligible destination of the service on this host (the last
        // one seen), or none. The loop body has no branch: every
        // destination's counters are read and masked, which costs less than
        // the mispredicted (or, under emulation, block-ending) branches
        // that picking by service would take.
        let mut eligible = usize::MAX;
        // Carries out of `load`: the sum saturates once, after the loop (a
        // saturating add per destination compiles to a branch).
        let mut carries = 0u64;
        for d in start..end {
            let own = c.dest_service(d) == service;
            let live = c.live(d);
            let keep = if AGGREGATE { u64::MAX } else { mask64(own) };
            let (sum, carry) = load.overflowing_add(overhead(&live) & keep);
            load = sum;
            carries = carries.wrapping_add(u64::from(carry));
            let ok = mask(own & (live.weight > 0) & !live.overloaded);
            eligible = (d & ok) | (eligible & !ok);
        }
        if carries != 0 {
            load = u64::MAX;
        }
        if eligible != usize::MAX {
            let cand = Pick {
                load,
                weight: u64::from(g.weight),
                dest: eligible,
                group: (start, end),
            };
            offer(&mut best, &mut host_ties, cand, rng);
        }
    }
    if best.weight == 0 {
        return None;
    }

    // Second pass: the chosen host's eligible destination of the service
    // with the least overhead/weight. Should the counters have changed so
    // that none is eligible any more, the first pass's find stands.
    let mut vm = Pick::NONE;
    let mut vm_ties = 0u32;
    for d in best.group.0..best.group.1 {
        if c.dest_service(d) != service {
            continue;
        }
        if let Some(cand) = vm_pick(&c.live(d), d) {
            offer(&mut vm, &mut vm_ties, cand, rng);
        }
    }
    Some(if vm.weight != 0 { vm.dest } else { best.dest })
}
