// SPDX-License-Identifier: GPL-2.0

//! The immutable snapshot that `schedule()` reads, and how it is built from
//! the writers' state.
//!
//! A snapshot holds every tracked destination grouped by host (and within a
//! host by service), and per service a view of the hosts it may use. It
//! records the generation of the tracked set it was built from
//! ([`Snapshot::gen`]): `schedule()` uses it only while that is still the
//! namespace's generation (see `state.rs` for when it moves on and why).
//!
//! The tables can be large (one entry per tracked destination, 150,000 and
//! more), so they are `KVVec`s: kmalloc when that is cheap, vmalloc when
//! contiguous pages are not to be had. A failure is handled (the caller
//! keeps serving and retries), so the allocations do not warn.

use core::sync::atomic::{AtomicBool, Ordering};

use kernel::alloc::{AllocError, Flags};
use kernel::prelude::*;

use crate::ffi::{self, ip_vs_dest, ip_vs_service, CpuLoads, RcuHead};
use crate::select::{Cluster, HostCache, Live, Scope, Span, View};
use crate::state::Inner;

/// Allocation flags for tables whose allocation failure is handled. They
/// grow with what a namespace's netlink and IPVS requests ask for (a user
/// namespace can drive them), so they are charged to the requester's
/// memory cgroup (`__GFP_ACCOUNT`; the rebuild work's charges go to root).
#[inline]
pub(crate) fn nowarn() -> Flags {
    GFP_KERNEL_ACCOUNT | __GFP_NOWARN
}

/// A destination in a snapshot: the IPVS destination it stands for.
#[derive(Clone, Copy)]
struct SnapDest(*mut ip_vs_dest);

impl SnapDest {
    /// A 4-byte field of the destination (see [`ffi::dest_field`]).
    ///
    /// # Safety
    ///
    /// The destination is live (see [`Snapshot::live`]) and `off` is the
    /// offset of a 4-byte field of `struct ip_vs_dest` accessed atomically or
    /// with READ_ONCE by the kernel.
    #[inline(always)]
    unsafe fn field(&self, off: usize) -> i32 {
        // SAFETY: per the contract.
        unsafe { ffi::dest_field(self.0, off) }
    }

    /// The two terms of wlc's overhead: activeconns and the other counter
    /// ([`ffi::layout::DEST_OVERHEAD_TERM`]). Two relaxed 4-byte loads, as
    /// IPVS's own schedulers do with `atomic_read()`: one 8-byte load over
    /// both fields would be a mixed-size access, a data race in the Rust
    /// and the kernel memory models.
    ///
    /// # Safety
    ///
    /// The destination is live (see [`Snapshot::live`]).
    #[inline(always)]
    unsafe fn counters(&self) -> (i32, i32) {
        use ffi::layout::*;
        // SAFETY: live destination; offsets of 4-byte counters.
        unsafe { (self.field(DEST_ACTIVECONNS), self.field(DEST_OVERHEAD_TERM)) }
    }
}

/// Where one service's view lies in a snapshot's tables.
struct SvcView {
    /// The service (`struct ip_vs_service *` as an integer: the core's key).
    svc: usize,
    /// Its spans: a range of [`Snapshot::spans`].
    spans: (u32, u32),
    /// Its members on mapped hosts, then its unmapped destinations: ranges
    /// of [`Snapshot::members`].
    members: (u32, u32),
    /// See `members`.
    solo: (u32, u32),
    /// A change made the view wrong (`Snapshot::mark_stale`): the service
    /// decides by plain wlc until the next snapshot.
    stale: AtomicBool,
}

/// An immutable view for `schedule()`: every tracked destination, grouped
/// by host and within a host by service, and per service the hosts it may
/// use.
#[repr(C)]
pub(crate) struct Snapshot {
    /// Must stay the first field: the RCU callback gets its address.
    rcu: RcuHead,
    /// The generation of the tracked set this snapshot shows.
    pub(crate) gen: u32,
    dests: KVVec<SnapDest>,
    spans: KVVec<Span>,
    members: KVVec<u32>,
    /// Sorted by `svc`.
    views: KVVec<SvcView>,
    /// Per service slot (`sched_data - 1`, see `state.rs`): the index of its
    /// view, or [`NO_VIEW`]. A decision finds its view in O(1), not by a
    /// search over every service.
    by_slot: KVVec<u32>,
    /// Per CPU, the loads of the hosts (by host index) summed this jiffy
    /// (`host_cache.rs`); `None`: summed in every decision.
    loads: Option<CpuLoads>,
}

/// The service's view in a snapshot was marked stale.
pub(crate) struct StaleView;

/// A slot without a view in [`Snapshot::by_slot`].
const NO_VIEW: u32 = u32::MAX;

/// Up to this many views a decision finds its own by binary search (at
/// most 3 steps); beyond, through its slot.
const SEARCH_MAX: usize = 8;

/// `table[start..end]`, or empty if the range is not within it.
fn sub<T>(table: &[T], r: (u32, u32)) -> &[T] {
    table.get(r.0 as usize..r.1 as usize).unwrap_or(&[])
}

/// The index of `svc`'s view in `views` (sorted by `svc`), if it has one.
fn find_view(views: &[SvcView], svc: usize) -> Option<usize> {
    views.binary_search_by_key(&svc, |v| v.svc).ok()
}

impl Snapshot {
    /// The view of `service`: through `slot` (its `sched_data`; 0: not
    /// read) when that leads to it, else by binary search. The slot leads
    /// to it whenever this snapshot is current; the search covers the rest
    /// (few services, or a race with the service's `done_service`).
    #[inline(always)]
    fn view_of(&self, service: usize, slot: usize) -> Option<&SvcView> {
        let by_slot = slot
            .checked_sub(1)
            .and_then(|i| self.by_slot.get(i))
            .and_then(|&i| self.views.get(i as usize))
            .filter(|v| v.svc == service);
        by_slot.or_else(|| self.views.get(find_view(&self.views, service)?))
    }

    /// The tables of a view.
    #[inline(always)]
    fn tables(&self, v: &SvcView) -> View<'_> {
        View {
            spans: sub(&self.spans, v.spans),
            members: sub(&self.members, v.members),
            solo: sub(&self.members, v.solo),
        }
    }

    /// Marks `svc`'s view stale (see [`SvcView::stale`]); `false` if it has
    /// none. Called with `vmwlch_net.lock` held.
    pub(crate) fn mark_stale(&self, svc: usize) -> bool {
        let Some(v) = find_view(&self.views, svc).and_then(|i| self.views.get(i)) else {
            return false;
        };
        v.stale.store(true, Ordering::Relaxed);
        true
    }
}

/// A snapshot as one decision reads it: the view of the decision's service
/// and this CPU's host loads ([`Snapshot::select`]).
struct Deciding<'a> {
    snap: &'a Snapshot,
    view: View<'a>,
    cache: HostCache<'a>,
}

// The scheduling loop calls these per destination: always inline (the test
// kernels, like tinyconfig, optimise for size and would not).
impl Cluster for Deciding<'_> {
    /// The decision's service's (the only one asked).
    #[inline(always)]
    fn view(&self, _service: usize) -> View<'_> {
        self.view
    }

    #[inline(always)]
    fn dest_count(&self) -> usize {
        self.snap.dests.len()
    }

    #[inline(always)]
    fn counts(&self, dest: usize) -> (i32, i32) {
        let Some(d) = self.snap.dests.get(dest) else {
            return (0, 0);
        };
        // SAFETY: as in `live`.
        unsafe { d.counters() }
    }

    #[inline(always)]
    fn live(&self, dest: usize) -> Live {
        let Some(d) = self.snap.dests.get(dest) else {
            return Live {
                weight: 0,
                activeconns: 0,
                inactconns: 0,
                overloaded: true,
            };
        };
        use ffi::layout::*;
        // SAFETY: snapshots are read under rcu_read_lock() (schedule) and
        // name only destinations that IPVS frees after a grace period that
        // starts after this snapshot was unpublished (type invariants); the
        // offsets are those of 4-byte atomic_t/unsigned int fields.
        unsafe {
            let (activeconns, inactconns) = d.counters();
            Live {
                weight: d.field(DEST_WEIGHT),
                activeconns,
                // The core's overhead is active*256 + this term: IPVS's own measure.
                inactconns,
                overloaded: d.field(DEST_FLAGS) as u32 & ffi::IP_VS_DEST_F_OVERLOAD != 0,
            }
        }
    }

    #[inline(always)]
    fn host_load(&self, sp: &Span, sum: impl FnOnce() -> u64) -> u64 {
        self.cache.load(sp.host, sum)
    }

    #[inline(always)]
    fn scheduled(&self, sp: &Span) {
        self.cache.scheduled(sp.host)
    }
}

/// Random numbers for breaking ties within one decision: SplitMix64 over a
/// per-decision seed (the glue's per-CPU Weyl sequence). Only computed when
/// a decision has a tie. A decision draws at most one number per stage
/// (host, then destination) unless more than 64 candidates tie, so the two
/// halves of the seed's one mixed value serve both; further draws continue
/// from that value (not from the seed, whose successor is the next
/// decision's seed), so consecutive decisions' streams do not overlap.
struct TieRandom {
    seed: u64,
    state: u64,
    spare: Option<u32>,
}

impl TieRandom {
    /// The golden-ratio increment of SplitMix64.
    const GAMMA: u64 = 0x9e37_79b9_7f4a_7c15;

    #[inline(always)]
    fn new(seed: u64) -> Self {
        Self {
            seed,
            state: 0,
            spare: None,
        }
    }

    /// SplitMix64's output function.
    #[inline(always)]
    fn mix(mut z: u64) -> u64 {
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    #[inline(always)]
    fn next(&mut self) -> u32 {
        if let Some(r) = self.spare.take() {
            return r;
        }
        let z = if self.state == 0 {
            let z = Self::mix(self.seed);
            self.state = z | 1;
            z
        } else {
            self.state = self.state.wrapping_add(Self::GAMMA);
            Self::mix(self.state)
        };
        self.spare = Some(z as u32);
        (z >> 32) as u32
    }
}

/// An unmapped address is a host of its own: keys above any host index.
const IMPLICIT: u64 = 1 << 32;

/// A tracked destination keyed for grouping: (host key, service,
/// destination, positive weight).
type Keyed = (u64, usize, SnapDest, bool);

/// One (host, service) segment of the destination table: (service, host
/// key, the host's range, the service's own range within it, whether one
/// of the service's destinations there has a positive weight).
type Seg = (usize, u64, (u32, u32), (u32, u32), bool);

/// Every tracked destination with its host key, sorted by host, then
/// service, so that a host's destinations and its destinations of one
/// service are each a contiguous range.
fn keyed(inner: &Inner) -> Result<KVVec<Keyed>, AllocError> {
    let mut keyed = KVVec::with_capacity(inner.dest_count(), nowarn())?;
    let mut implicit = IMPLICIT;
    for (svc, dest, addr) in inner.tracked() {
        let key = match inner.host_of(addr) {
            Some(h) => u64::from(h),
            None => {
                implicit += 1;
                implicit
            }
        };
        // SAFETY: tracked destinations are live under the mutex.
        let weighted = unsafe { ffi::dest_live(dest) }.weight > 0;
        keyed.push((key, svc, SnapDest(dest), weighted), nowarn())?;
    }
    crate::sort::sort_by_key(keyed.as_mut_slice(), |k| (k.0, k.1));
    Ok(keyed)
}

/// The destination table and its (host, service) segments, sorted by
/// service and, within a service, in table order.
fn segments(keyed: &[Keyed]) -> Result<(KVVec<SnapDest>, KVVec<Seg>), AllocError> {
    let mut segs: KVVec<Seg> = KVVec::with_capacity(keyed.len(), nowarn())?;
    let mut dests = KVVec::with_capacity(keyed.len(), nowarn())?;
    let mut i = 0;
    while let Some(&(key, _, _, _)) = keyed.get(i) {
        let host_start = i;
        let mut end = i;
        while keyed.get(end).is_some_and(|k| k.0 == key) {
            end += 1;
        }
        while i < end {
            let Some(&(_, svc, _, _)) = keyed.get(i) else {
                break;
            };
            let own_start = i;
            let mut weighted = false;
            while let Some(&(_, s, d, w)) = keyed.get(i) {
                if i >= end || s != svc {
                    break;
                }
                dests.push(d, nowarn())?;
                weighted |= w;
                i += 1;
            }
            let host = (host_start as u32, end as u32);
            let own = (own_start as u32, i as u32);
            segs.push((svc, key, host, own, weighted), nowarn())?;
        }
    }
    crate::sort::sort_by_key(segs.as_mut_slice(), |g| (g.0, g.2 .0));
    Ok((dests, segs))
}

/// The per-service tables of a snapshot.
struct Views {
    spans: KVVec<Span>,
    members: KVVec<u32>,
    views: KVVec<SvcView>,
}

/// A service's view lists the hosts of positive weight where it has a
/// destination of positive weight (an `upd_dest` that gives a destination
/// a positive weight again makes the snapshot stale; the selection checks
/// weights live anyway), and its unmapped destinations as implicit hosts.
fn views(inner: &Inner, segs: &[Seg]) -> Result<Views, AllocError> {
    let n = segs.len();
    let mut spans = KVVec::with_capacity(n, nowarn())?;
    let mut members = KVVec::with_capacity(inner.dest_count(), nowarn())?;
    let mut views: KVVec<SvcView> = KVVec::with_capacity(inner.svc_count(), nowarn())?;
    let mut j = 0;
    while let Some(&(svc, ..)) = segs.get(j) {
        let first = j;
        while segs.get(j).is_some_and(|g| g.0 == svc) {
            j += 1;
        }
        let mine = segs.get(first..j).unwrap_or(&[]);
        let (span_start, member_start) = (spans.len() as u32, members.len() as u32);
        for &(_, key, host, own, weighted) in mine {
            let weight = if key >= IMPLICIT {
                0
            } else {
                inner.hosts.get(key as usize).map_or(0, |h| h.weight)
            };
            if key >= IMPLICIT || weight == 0 || !weighted {
                continue;
            }
            // Own ranges are relative to the view's member list.
            let m = members.len() as u32 - member_start;
            for d in own.0..own.1 {
                members.push(d, nowarn())?;
            }
            let own_end = members.len() as u32 - member_start;
            spans.push(
                Span {
                    weight,
                    // A mapped host's key is its index in `inner.hosts`.
                    host: key as u32,
                    start: host.0,
                    end: host.1,
                    own_start: m,
                    own_end,
                },
                nowarn(),
            )?;
        }
        let solo_start = members.len() as u32;
        for &(_, key, _, own, _) in mine {
            if key >= IMPLICIT {
                for d in own.0..own.1 {
                    members.push(d, nowarn())?;
                }
            }
        }
        let view = SvcView {
            svc,
            spans: (span_start, spans.len() as u32),
            members: (member_start, solo_start),
            solo: (solo_start, members.len() as u32),
            stale: AtomicBool::new(false),
        };
        views.push(view, nowarn())?;
    }
    Ok(Views {
        spans,
        members,
        views,
    })
}

/// [`Snapshot::by_slot`]: O(S log S) for S service slots.
fn by_slot(inner: &Inner, views: &[SvcView]) -> Result<KVVec<u32>, AllocError> {
    let keys = inner.slot_keys();
    let mut t = KVVec::with_capacity(keys.len(), nowarn())?;
    for key in keys {
        let i = key
            .and_then(|k| find_view(views, k))
            .map_or(NO_VIEW, |i| i as u32);
        t.push(i, nowarn())?;
    }
    Ok(t)
}

/// Builds the snapshot of `inner`'s current state, for generation `gen`.
/// O(D log D) for D tracked destinations; every allocation may fail.
pub(crate) fn build(inner: &Inner, gen: u32) -> Result<KBox<Snapshot>, AllocError> {
    let keyed = keyed(inner)?;
    let (dests, segs) = segments(&keyed)?;
    drop(keyed);
    let v = views(inner, &segs)?;
    let by_slot = by_slot(inner, &v.views)?;
    // Best effort: without it decisions are the same, only slower.
    let loads = CpuLoads::new(inner.hosts.len());
    KBox::new(
        Snapshot {
            rcu: RcuHead::default(),
            gen,
            dests,
            spans: v.spans,
            members: v.members,
            views: v.views,
            by_slot,
            loads,
        },
        nowarn(),
    )
}

impl Snapshot {
    /// The destination for a new connection to `svc`, if one is eligible;
    /// `cost`: what it adds to its host's load (`host_cache.rs`).
    /// `Err`: the service's view is stale, decide otherwise.
    ///
    /// Runs under `rcu_read_lock()`: no sleeping, no allocation.
    ///
    /// # Safety
    ///
    /// `svc` is live and bound to one of our schedulers (`schedule()`'s
    /// service).
    #[inline(always)]
    pub(crate) unsafe fn select(
        &self,
        svc: *mut ip_vs_service,
        scope: Scope,
        seed: u64,
        cost: u32,
    ) -> Result<Option<*mut ip_vs_dest>, StaleView> {
        // Few services: a search is as cheap as the slot, left unread.
        let slot = if self.views.len() > SEARCH_MAX {
            // SAFETY: `svc` is live and ours (contract).
            unsafe { ffi::svc_slot(svc) }
        } else {
            0
        };
        let view = match self.view_of(svc as usize, slot) {
            Some(v) if v.stale.load(Ordering::Relaxed) => return Err(StaleView),
            Some(v) => self.tables(v),
            None => View::EMPTY,
        };
        let guard = self.loads.as_ref().map(CpuLoads::this_cpu);
        let entries = guard.as_ref().map_or(&[][..], |g| g.entries);
        let d = Deciding {
            snap: self,
            view,
            cache: HostCache::new(entries, ffi::tick(), u64::from(cost)),
        };
        let mut ties = TieRandom::new(seed);
        Ok(
            crate::select::select(&d, svc as usize, scope, &mut || ties.next())
                .and_then(|i| self.dests.get(i))
                .map(|d| d.0),
        )
    }

    /// Frees `this` after an RCU grace period.
    ///
    /// # Safety
    ///
    /// `this` came from `KBox::into_raw` and no new reader can reach it.
    pub(crate) unsafe fn retire(this: *mut Snapshot) {
        // SAFETY: `rcu` is the first field (`repr(C)`), unused until now;
        // `call_rcu` owns the snapshot until `free` runs. `free` has the C
        // type `rcu_callback_t` (its kCFI type id is that of C callbacks).
        unsafe { kernel::bindings::call_rcu(this.cast::<RcuHead>(), Some(free)) }
    }
}

/// The RCU callback of [`Snapshot::retire`].
///
/// # Safety
///
/// `head` is the `rcu` field of a retired snapshot, after a grace period.
unsafe extern "C" fn free(head: *mut RcuHead) {
    // SAFETY: per the contract, `head` is the address of a `Snapshot`
    // leaked with `KBox::into_raw` that no reader can still see.
    drop(unsafe { KBox::from_raw(head.cast::<Snapshot>()) });
}
