// SPDX-License-Identifier: GPL-2.0

//! Per-network-namespace state: the host map, the services bound to our
//! schedulers with their destinations, and the RCU-published snapshot that
//! `schedule()` reads.
//!
//! # Invariants
//!
//! * Everything in [`Inner`] is only touched with the glue's `vmwlch_mutex`
//!   held (every entry point except `schedule` and the RCU free callback).
//! * `members` is sorted by address with no duplicates, and every
//!   `Member::host` indexes `hosts`.
//! * Every destination in a published snapshot belongs to a service that was
//!   tracked when the snapshot was built; a destination or service leaves the
//!   tracked set (`del_dest`/`done_service`) before IPVS frees it, and the
//!   snapshot that still names it is freed only after an RCU grace period.

use core::cell::UnsafeCell;
use core::sync::atomic::{AtomicI32, AtomicPtr, Ordering};

use kernel::alloc::AllocError;
use kernel::prelude::*;

use crate::ffi::{self, IpVsDest, IpVsService, RcuHead};
use crate::select::{Cluster, Live, Scope, Span, View};
use crate::uapi::*;

/// A real-server address: family and 16 bytes (IPv4 in the first 4).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Addr {
    pub(crate) af: u16,
    pub(crate) bytes: [u8; 16],
}

impl Addr {
    /// Parses the wire form: 4 bytes (IPv4) or 16 bytes (IPv6).
    pub(crate) fn from_wire(b: &[u8]) -> Option<Self> {
        let mut bytes = [0u8; 16];
        let af = match b.len() {
            4 => ffi::AF_INET,
            16 => ffi::AF_INET6,
            _ => return None,
        };
        bytes.get_mut(..b.len())?.copy_from_slice(b);
        Some(Self { af, bytes })
    }

    /// The wire form.
    pub(crate) fn wire(&self) -> &[u8] {
        let n = if self.af == ffi::AF_INET { 4 } else { 16 };
        self.bytes.get(..n).unwrap_or(&[])
    }
}

/// A physical host of the map.
#[derive(Clone, Copy)]
pub(crate) struct Host {
    name: [u8; VMWLCH_HOST_NAME_MAX],
    name_len: u8,
    pub(crate) weight: u32,
}

impl Host {
    /// A host; `name` must already be validated (at most 63 bytes).
    pub(crate) fn new(name: &[u8], weight: u32) -> Self {
        let mut buf = [0u8; VMWLCH_HOST_NAME_MAX];
        let n = name.len().min(VMWLCH_HOST_NAME_MAX - 1);
        if let (Some(dst), Some(src)) = (buf.get_mut(..n), name.get(..n)) {
            dst.copy_from_slice(src);
        }
        Self {
            name: buf,
            name_len: n as u8,
            weight,
        }
    }

    /// The host's name.
    pub(crate) fn name(&self) -> &[u8] {
        self.name.get(..usize::from(self.name_len)).unwrap_or(&[])
    }
}

/// An address mapped to a host.
#[derive(Clone, Copy)]
pub(crate) struct Member {
    pub(crate) addr: Addr,
    pub(crate) host: u32,
}

/// A tracked destination.
#[derive(Clone, Copy)]
struct Dest {
    dest: *mut IpVsDest,
    addr: Addr,
}

/// A service bound to `vmwlc` or `vmwlch`.
struct Svc {
    svc: *mut IpVsService,
    dests: KVec<Dest>,
}

/// A destination in a snapshot: the IPVS destination it stands for.
#[derive(Clone, Copy)]
struct SnapDest(*mut IpVsDest);

impl SnapDest {
    /// A field of the destination, at an offset from [`ffi::layout`].
    ///
    /// # Safety
    ///
    /// The destination is live (see [`Snapshot::live`]) and `off` is the
    /// offset of a 4-byte field of `struct ip_vs_dest` accessed atomically or
    /// with READ_ONCE by the kernel.
    #[inline(always)]
    unsafe fn field(&self, off: usize) -> i32 {
        // SAFETY: per the contract the address is that of a live, aligned
        // 4-byte field, which `AtomicI32` may view (atomic_t is an int;
        // relaxed loads are what atomic_read()/READ_ONCE() do).
        unsafe { &*self.0.cast::<u8>().add(off).cast::<AtomicI32>() }.load(Ordering::Relaxed)
    }

    /// The two terms of wlc's overhead: activeconns and the other counter
    /// ([`ffi::layout::DEST_OVERHEAD_TERM`]), with one load where they are
    /// one aligned word ([`COUNTERS_PAIRED`]).
    ///
    /// # Safety
    ///
    /// The destination is live (see [`Snapshot::live`]).
    #[inline(always)]
    unsafe fn counters(&self) -> (i32, i32) {
        use ffi::layout::*;
        if COUNTERS_PAIRED {
            // SAFETY: the destination is live and the word at
            // DEST_ACTIVECONNS is 8-byte aligned (COUNTERS_PAIRED). An
            // aligned word-sized load is single-copy atomic on the 64-bit
            // CPUs the kernel supports, so each half is a value its field
            // held (as with READ_ONCE on the word; atomic_read() of each is a
            // plain aligned load as well). A volatile read: the kernel's racy
            // reads of counters that other CPUs update.
            let x = unsafe {
                self.0
                    .cast::<u8>()
                    .add(DEST_ACTIVECONNS)
                    .cast::<u64>()
                    .read_volatile()
            };
            return (x as i32, (x >> 32) as i32);
        }
        // SAFETY: live destination; offsets of 4-byte counters.
        unsafe { (self.field(DEST_ACTIVECONNS), self.field(DEST_OVERHEAD_TERM)) }
    }
}

/// The two counters of wlc's overhead are adjacent 4-byte fields, in the
/// order active then the other, starting on an 8-byte boundary of the
/// (kmalloc'ed, so 8-byte aligned) destination, on a little-endian 64-bit
/// CPU: one 8-byte load reads both (half the loads of the first pass).
const COUNTERS_PAIRED: bool = {
    use ffi::layout::*;
    DEST_OVERHEAD_TERM == DEST_ACTIVECONNS + 4
        && DEST_ACTIVECONNS % 8 == 0
        && cfg!(target_endian = "little")
        && cfg!(target_pointer_width = "64")
};

/// Where one service's view lies in a snapshot's tables.
#[derive(Clone, Copy)]
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
}

/// An immutable view for `schedule()`: every tracked destination, grouped
/// by host and within a host by service, and per service the hosts it may
/// use.
#[repr(C)]
pub(crate) struct Snapshot {
    /// Must stay the first field: the RCU callback gets its address.
    rcu: RcuHead,
    dests: KVec<SnapDest>,
    spans: KVec<Span>,
    members: KVec<u32>,
    /// Sorted by `svc`.
    views: KVec<SvcView>,
}

/// `table[start..end]`, or empty if the range is not within it.
fn sub<T>(table: &[T], r: (u32, u32)) -> &[T] {
    table.get(r.0 as usize..r.1 as usize).unwrap_or(&[])
}

// The scheduling loop calls these per destination: always inline (the test
// kernels, like tinyconfig, optimise for size and would not).
impl Cluster for Snapshot {
    #[inline(always)]
    fn view(&self, service: usize) -> View<'_> {
        match self.views.binary_search_by_key(&service, |v| v.svc) {
            Ok(i) => match self.views.get(i) {
                Some(v) => View {
                    spans: sub(&self.spans, v.spans),
                    members: sub(&self.members, v.members),
                    solo: sub(&self.members, v.solo),
                },
                None => View::EMPTY,
            },
            Err(_) => View::EMPTY,
        }
    }

    #[inline(always)]
    fn dest_count(&self) -> usize {
        self.dests.len()
    }

    #[inline(always)]
    fn counts(&self, dest: usize) -> (i32, i32) {
        let Some(d) = self.dests.get(dest) else {
            return (0, 0);
        };
        // SAFETY: as in `live`.
        unsafe { d.counters() }
    }

    #[inline(always)]
    fn live(&self, dest: usize) -> Live {
        let Some(d) = self.dests.get(dest) else {
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
}

/// Random numbers for breaking ties within one decision: SplitMix64 over a
/// per-decision seed (the glue's per-CPU Weyl sequence), itself mixed first
/// so that consecutive decisions' streams do not overlap. Only computed when
/// a decision has a tie; a decision draws at most one number per stage
/// (host, then destination) unless more than 64 candidates tie.
struct TieRandom {
    seed: u64,
    state: u64,
}

impl TieRandom {
    /// The golden-ratio increment of SplitMix64.
    const GAMMA: u64 = 0x9e37_79b9_7f4a_7c15;

    #[inline(always)]
    fn new(seed: u64) -> Self {
        Self { seed, state: 0 }
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
        if self.state == 0 {
            // First draw of the decision (a state that later reaches 0 merely
            // restarts from the seed: harmless).
            self.state = Self::mix(self.seed) | 1;
        }
        self.state = self.state.wrapping_add(Self::GAMMA);
        (Self::mix(self.state) >> 32) as u32
    }
}

/// State written under `vmwlch_mutex`.
pub(crate) struct Inner {
    pub(crate) hosts: KVec<Host>,
    pub(crate) members: KVec<Member>,
    svcs: KVec<Option<Svc>>,
    pub(crate) generation: u32,
}

/// The per-namespace state; C holds it as an opaque pointer.
pub(crate) struct NetState {
    snap: AtomicPtr<Snapshot>,
    inner: UnsafeCell<Inner>,
}

/// Shrinks `v` to `len` elements.
fn truncate<T: Copy>(v: &mut KVec<T>, len: usize) {
    if len < v.len() {
        // SAFETY: `len` is below the current length, so the first `len`
        // elements are initialised; `T: Copy` has no destructor to run.
        unsafe { v.set_len(len) };
    }
}

/// Removes element `i` without keeping the order.
fn swap_remove<T: Copy>(v: &mut KVec<T>, i: usize) {
    let n = v.len();
    if i < n {
        v.as_mut_slice().swap(i, n - 1);
        truncate(v, n - 1);
    }
}

impl Inner {
    /// The host an address is mapped to.
    pub(crate) fn host_of(&self, a: &Addr) -> Option<u32> {
        self.members
            .binary_search_by(|m| m.addr.cmp(a))
            .ok()
            .and_then(|i| self.members.get(i))
            .map(|m| m.host)
    }

    /// Index of the host named `name`.
    pub(crate) fn host_index(&self, name: &[u8]) -> Option<usize> {
        self.hosts.iter().position(|h| h.name() == name)
    }

    /// Deletes host `idx` and unmaps its members.
    pub(crate) fn del_host(&mut self, idx: usize) {
        let idx32 = idx as u32;
        let mut w = 0;
        for r in 0..self.members.len() {
            let Some(mut m) = self.members.get(r).copied() else {
                break;
            };
            if m.host == idx32 {
                continue;
            }
            if m.host > idx32 {
                m.host -= 1;
            }
            if let Some(slot) = self.members.get_mut(w) {
                *slot = m;
            }
            w += 1;
        }
        truncate(&mut self.members, w);
        let n = self.hosts.len();
        if idx < n {
            self.hosts.as_mut_slice().copy_within(idx + 1.., idx);
            truncate(&mut self.hosts, n - 1);
        }
    }

    /// Unmaps the given (mapped) addresses; `addrs` sorted.
    pub(crate) fn unmap(&mut self, addrs: &[Addr]) {
        let mut w = 0;
        for r in 0..self.members.len() {
            let Some(m) = self.members.get(r).copied() else {
                break;
            };
            if addrs.binary_search(&m.addr).is_ok() {
                continue;
            }
            if let Some(slot) = self.members.get_mut(w) {
                *slot = m;
            }
            w += 1;
        }
        truncate(&mut self.members, w);
    }

    /// Number of tracked services and destinations.
    pub(crate) fn counts(&self) -> (usize, usize) {
        let mut s = 0;
        let mut d = 0;
        for svc in self.svcs.iter().flatten() {
            s += 1;
            d += svc.dests.len();
        }
        (s, d)
    }

    /// Live load of a host: (activeconns, inactconns, tracked destinations).
    pub(crate) fn host_load(&self, idx: u32) -> (u64, u64, u32) {
        let (mut a, mut i, mut n) = (0u64, 0u64, 0u32);
        for svc in self.svcs.iter().flatten() {
            for d in svc.dests.iter() {
                if self.host_of(&d.addr) == Some(idx) {
                    // SAFETY: tracked destinations are live under the mutex
                    // (they leave the set before IPVS unlinks them).
                    let l = unsafe { ffi::dest_live(d.dest) };
                    a = a.saturating_add(u64::from(l.activeconns.max(0).unsigned_abs()));
                    i = i.saturating_add(u64::from(l.inactconns.max(0).unsigned_abs()));
                    n = n.saturating_add(1);
                }
            }
        }
        (a, i, n)
    }

    /// The first tracked service (null if none).
    pub(crate) fn first_service(&self) -> *mut IpVsService {
        self.svcs
            .iter()
            .flatten()
            .next()
            .map_or(core::ptr::null_mut(), |s| s.svc)
    }

    fn svc_slot(&mut self, svc: *mut IpVsService) -> Option<&mut Svc> {
        self.svcs
            .iter_mut()
            .flatten()
            .find(|s| core::ptr::eq(s.svc, svc))
    }

    /// Starts tracking `svc` with its current destinations.
    ///
    /// # Safety
    ///
    /// Called from `init_service` with the IPVS config mutex held.
    pub(crate) unsafe fn init_service(&mut self, svc: *mut IpVsService) -> Result {
        if self.svc_slot(svc).is_some() {
            return Ok(());
        }
        let mut dests = KVec::new();
        // SAFETY: the IPVS config mutex is held (caller's contract).
        let walked = unsafe {
            ffi::svc_walk(svc, |d| {
                // SAFETY: `d` is on the service's list under the config mutex.
                let (af, bytes) = ffi::dest_addr(d);
                dests
                    .push(
                        Dest {
                            dest: d,
                            addr: Addr { af, bytes },
                        },
                        GFP_KERNEL,
                    )
                    .map_err(|_| ENOMEM.to_errno())
            })
        };
        if walked.is_err() {
            return Err(ENOMEM);
        }
        let entry = Svc { svc, dests };
        if let Some(slot) = self.svcs.iter_mut().find(|s| s.is_none()) {
            *slot = Some(entry);
        } else {
            self.svcs.push(Some(entry), GFP_KERNEL)?;
        }
        Ok(())
    }

    /// Stops tracking `svc`.
    pub(crate) fn done_service(&mut self, svc: *mut IpVsService) {
        if let Some(slot) = self
            .svcs
            .iter_mut()
            .find(|s| s.as_ref().is_some_and(|s| core::ptr::eq(s.svc, svc)))
        {
            *slot = None;
        }
    }

    /// Tracks a new destination of `svc`.
    ///
    /// # Safety
    ///
    /// Called from `add_dest` with the IPVS config mutex held.
    pub(crate) unsafe fn add_dest(&mut self, svc: *mut IpVsService, dest: *mut IpVsDest) -> Result {
        // SAFETY: `dest` was just linked under the config mutex.
        let (af, bytes) = unsafe { ffi::dest_addr(dest) };
        let Some(s) = self.svc_slot(svc) else {
            return Ok(());
        };
        if s.dests.iter().any(|d| core::ptr::eq(d.dest, dest)) {
            return Ok(());
        }
        s.dests.push(
            Dest {
                dest,
                addr: Addr { af, bytes },
            },
            GFP_KERNEL,
        )?;
        Ok(())
    }

    /// Stops tracking a destination of `svc`.
    pub(crate) fn del_dest(&mut self, svc: *mut IpVsService, dest: *mut IpVsDest) {
        if let Some(s) = self.svc_slot(svc) {
            if let Some(i) = s.dests.iter().position(|d| core::ptr::eq(d.dest, dest)) {
                swap_remove(&mut s.dests, i);
            }
        }
    }

    /// Builds the snapshot of the current state.
    ///
    /// The destination table is sorted by host, then by service, so that a
    /// host's destinations and its destinations of one service are each a
    /// contiguous range. A service's view lists the hosts of positive weight
    /// where it has a destination of positive weight (weights change only
    /// through `upd_dest`, which rebuilds; the selection checks them live
    /// anyway), and its unmapped destinations as implicit hosts.
    fn build(&self) -> Result<KBox<Snapshot>, AllocError> {
        /// An unmapped address is a host of its own: keys above any index.
        const IMPLICIT: u64 = 1 << 32;
        let (_, total) = self.counts();
        // (host key, service, destination, positive weight)
        let mut keyed: KVec<(u64, usize, SnapDest, bool)> = KVec::with_capacity(total, GFP_KERNEL)?;
        let mut implicit = IMPLICIT;
        for svc in self.svcs.iter().flatten() {
            for d in svc.dests.iter() {
                let key = match self.host_of(&d.addr) {
                    Some(h) => u64::from(h),
                    None => {
                        implicit += 1;
                        implicit
                    }
                };
                // SAFETY: tracked destinations are live under the mutex.
                let weighted = unsafe { ffi::dest_live(d.dest) }.weight > 0;
                keyed.push(
                    (key, svc.svc as usize, SnapDest(d.dest), weighted),
                    GFP_KERNEL,
                )?;
            }
        }
        keyed.as_mut_slice().sort_unstable_by_key(|k| (k.0, k.1));

        // One segment per (host, service): (service, key, host range, own range, weighted).
        let mut segs: KVec<(usize, u64, (u32, u32), (u32, u32), bool)> = KVec::new();
        let mut dests = KVec::with_capacity(total, GFP_KERNEL)?;
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
                    dests.push(d, GFP_KERNEL)?;
                    weighted |= w;
                    i += 1;
                }
                segs.push(
                    (
                        svc,
                        key,
                        (host_start as u32, end as u32),
                        (own_start as u32, i as u32),
                        weighted,
                    ),
                    GFP_KERNEL,
                )?;
            }
        }
        // By service, hosts in table order within a service.
        segs.as_mut_slice().sort_unstable_by_key(|g| (g.0, g.2 .0));

        let mut spans = KVec::new();
        let mut members = KVec::with_capacity(total, GFP_KERNEL)?;
        let mut views: KVec<SvcView> = KVec::new();
        let mut j = 0;
        while let Some(&(svc, ..)) = segs.get(j) {
            let first = j;
            while segs.get(j).is_some_and(|g| g.0 == svc) {
                j += 1;
            }
            let (span_start, member_start) = (spans.len() as u32, members.len() as u32);
            for &(_, key, host, own, weighted) in segs.get(first..j).unwrap_or(&[]) {
                let weight = if key >= IMPLICIT {
                    0
                } else {
                    self.hosts.get(key as usize).map_or(0, |h| h.weight)
                };
                if key >= IMPLICIT || weight == 0 || !weighted {
                    continue;
                }
                // Own ranges are relative to the view's member list.
                let m = members.len() as u32 - member_start;
                for d in own.0..own.1 {
                    members.push(d, GFP_KERNEL)?;
                }
                spans.push(
                    Span {
                        weight,
                        start: host.0,
                        end: host.1,
                        own_start: m,
                        own_end: members.len() as u32 - member_start,
                    },
                    GFP_KERNEL,
                )?;
            }
            let solo_start = members.len() as u32;
            for &(_, key, _, own, _) in segs.get(first..j).unwrap_or(&[]) {
                if key >= IMPLICIT {
                    for d in own.0..own.1 {
                        members.push(d, GFP_KERNEL)?;
                    }
                }
            }
            views.push(
                SvcView {
                    svc,
                    spans: (span_start, spans.len() as u32),
                    members: (member_start, solo_start),
                    solo: (solo_start, members.len() as u32),
                },
                GFP_KERNEL,
            )?;
        }
        KBox::new(
            Snapshot {
                rcu: RcuHead::new(),
                dests,
                spans,
                members,
                views,
            },
            GFP_KERNEL,
        )
    }
}

impl NetState {
    /// A new, empty state.
    pub(crate) fn new() -> Result<KBox<Self>, AllocError> {
        KBox::new(
            Self {
                snap: AtomicPtr::new(core::ptr::null_mut()),
                inner: UnsafeCell::new(Inner {
                    hosts: KVec::new(),
                    members: KVec::new(),
                    svcs: KVec::new(),
                    generation: 0,
                }),
            },
            GFP_KERNEL,
        )
    }

    /// The writable part.
    ///
    /// # Safety
    ///
    /// The caller holds `vmwlch_mutex` for as long as it uses the result,
    /// and takes no other reference to the inner state meanwhile.
    #[allow(clippy::mut_from_ref)]
    pub(crate) unsafe fn inner_mut(&self) -> &mut Inner {
        // SAFETY: exclusive access is guaranteed by the mutex (caller's contract).
        unsafe { &mut *self.inner.get() }
    }

    /// Rebuilds and publishes the snapshot after a change of `inner`.
    ///
    /// If memory runs out, publishes no snapshot at all (every decision
    /// then fails with "no destination available") rather than a stale one
    /// that could name a destination IPVS is about to free.
    pub(crate) fn rebuild(&self, inner: &mut Inner) {
        inner.generation = inner.generation.wrapping_add(1);
        match inner.build() {
            Ok(s) => self.publish(KBox::into_raw(s)),
            Err(_) => {
                pr_warn!("out of memory rebuilding the scheduling snapshot; scheduling is off until the next change\n");
                self.publish(core::ptr::null_mut());
            }
        }
    }

    fn publish(&self, new: *mut Snapshot) {
        // Release pairs with the Acquire load in `schedule` (rcu_assign_pointer).
        let old = self.snap.swap(new, Ordering::AcqRel);
        if !old.is_null() {
            // SAFETY: `old` came from `KBox::into_raw` and is unreachable for
            // new readers; `rcu` is its first field (`repr(C)`).
            unsafe { ffi::retire(old.cast::<RcuHead>()) };
        }
    }

    /// Picks a destination for a new connection to `svc`.
    ///
    /// Runs under `rcu_read_lock()`, possibly in softirq: no sleeping, no allocation.
    pub(crate) fn schedule(&self, svc: *mut IpVsService, scope: Scope, seed: u64) -> *mut IpVsDest {
        // Acquire pairs with the Release in `publish` (rcu_dereference).
        let p = self.snap.load(Ordering::Acquire);
        // SAFETY: a published snapshot stays allocated until a grace period
        // after it is unpublished, and we are inside an RCU read-side section.
        let chosen = unsafe { p.as_ref() }.and_then(|snap| {
            let mut ties = TieRandom::new(seed);
            crate::select::select(snap, svc as usize, scope, &mut || ties.next())
                .and_then(|i| snap.dests.get(i))
                .map(|d| d.0)
        });
        // The glue counts decisions per CPU.
        chosen.unwrap_or(core::ptr::null_mut())
    }

    /// Frees a retired snapshot (the RCU callback).
    ///
    /// # Safety
    ///
    /// `head` is the `rcu` field of a snapshot passed to `retire`, after a grace period.
    pub(crate) unsafe fn free_snapshot(head: *mut RcuHead) {
        // SAFETY: per the contract, `head` is the address of a `Snapshot`
        // leaked with `KBox::into_raw` that no reader can still see.
        drop(unsafe { KBox::from_raw(head.cast::<Snapshot>()) });
    }
}

impl Drop for NetState {
    fn drop(&mut self) {
        // The glue waited for a grace period before dropping us; the last
        // snapshot goes through call_rcu like the others (module exit runs
        // rcu_barrier()).
        self.publish(core::ptr::null_mut());
    }
}
