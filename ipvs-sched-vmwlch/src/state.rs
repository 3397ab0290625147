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
use crate::select::{Cluster, HostGroup, Live, Scope};
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

/// A destination in a snapshot: 16 bytes, so a scan touches few cache lines.
#[derive(Clone, Copy)]
struct SnapDest {
    dest: *mut IpVsDest,
    svc: usize,
}

impl SnapDest {
    /// A field of the destination, at an offset from [`ffi::layout`].
    ///
    /// # Safety
    ///
    /// `self.dest` is live (see [`Snapshot::live`]) and `off` is the offset
    /// of a 4-byte field of `struct ip_vs_dest` accessed atomically or with
    /// READ_ONCE by the kernel.
    #[inline(always)]
    unsafe fn field(&self, off: usize) -> &AtomicI32 {
        // SAFETY: per the contract the address is that of a live, aligned
        // 4-byte field, which `AtomicI32` may view (atomic_t is an int;
        // relaxed loads are what atomic_read()/READ_ONCE() do).
        unsafe { &*self.dest.cast::<u8>().add(off).cast::<AtomicI32>() }
    }
}

/// An immutable view for `schedule()`: every tracked destination grouped by
/// host (an unmapped destination is a group of its own).
#[repr(C)]
pub(crate) struct Snapshot {
    /// Must stay the first field: the RCU callback gets its address.
    rcu: RcuHead,
    groups: KVec<HostGroup>,
    dests: KVec<SnapDest>,
}

// The scheduling loop calls these per destination: always inline (the test
// kernels, like tinyconfig, optimise for size and would not).
impl Cluster for Snapshot {
    #[inline(always)]
    fn hosts(&self) -> &[HostGroup] {
        &self.groups
    }

    #[inline(always)]
    fn dest_count(&self) -> usize {
        self.dests.len()
    }

    #[inline(always)]
    fn dest_service(&self, dest: usize) -> usize {
        self.dests.get(dest).map_or(0, |d| d.svc)
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
            Live {
                weight: d.field(DEST_WEIGHT).load(Ordering::Relaxed),
                activeconns: d.field(DEST_ACTIVECONNS).load(Ordering::Relaxed),
                // The core's overhead is active*256 + this term: IPVS's own measure.
                inactconns: d.field(DEST_OVERHEAD_TERM).load(Ordering::Relaxed),
                overloaded: d.field(DEST_FLAGS).load(Ordering::Relaxed) as u32
                    & ffi::IP_VS_DEST_F_OVERLOAD
                    != 0,
            }
        }
    }
}

/// Random numbers for breaking ties within one decision: the first comes
/// from the kernel's per-CPU generator, the rest from a 64-bit LCG seeded with
/// it (high halves; Knuth's MMIX constants). A decision with many ties (an
/// idle cluster: every destination ties) then costs one call, not one per tie.
struct TieRandom(u64);

impl TieRandom {
    #[inline(always)]
    fn new() -> Self {
        Self(0)
    }

    #[inline(always)]
    fn next(&mut self) -> u32 {
        if self.0 == 0 {
            // 0 means unseeded; a later step that reaches 0 merely reseeds.
            self.0 = (u64::from(ffi::random_u32()) << 32) | 1;
            return (self.0 >> 32) as u32;
        }
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 32) as u32
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

    fn build(&self) -> Result<KBox<Snapshot>, AllocError> {
        let (_, total) = self.counts();
        let mut keyed: KVec<(u64, SnapDest)> = KVec::with_capacity(total, GFP_KERNEL)?;
        let mut implicit: u64 = 1 << 32;
        for svc in self.svcs.iter().flatten() {
            for d in svc.dests.iter() {
                let key = match self.host_of(&d.addr) {
                    Some(h) => u64::from(h),
                    None => {
                        implicit += 1;
                        implicit
                    }
                };
                let sd = SnapDest {
                    dest: d.dest,
                    svc: svc.svc as usize,
                };
                keyed.push((key, sd), GFP_KERNEL)?;
            }
        }
        keyed.as_mut_slice().sort_unstable_by_key(|k| k.0);

        let mut groups = KVec::new();
        let mut dests = KVec::with_capacity(total, GFP_KERNEL)?;
        let mut i = 0;
        while let Some(&(key, _)) = keyed.get(i) {
            let start = i;
            while let Some(&(k, d)) = keyed.get(i) {
                if k != key {
                    break;
                }
                dests.push(d, GFP_KERNEL)?;
                i += 1;
            }
            let is_implicit = key >= 1 << 32;
            let weight = if is_implicit {
                0
            } else {
                self.hosts.get(key as usize).map_or(0, |h| h.weight)
            };
            groups.push(
                HostGroup {
                    weight,
                    implicit: is_implicit,
                    start: start as u32,
                    len: (i - start) as u32,
                },
                GFP_KERNEL,
            )?;
        }
        KBox::new(
            Snapshot {
                rcu: RcuHead::new(),
                groups,
                dests,
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
    pub(crate) fn schedule(&self, svc: *mut IpVsService, scope: Scope) -> *mut IpVsDest {
        // Acquire pairs with the Release in `publish` (rcu_dereference).
        let p = self.snap.load(Ordering::Acquire);
        // SAFETY: a published snapshot stays allocated until a grace period
        // after it is unpublished, and we are inside an RCU read-side section.
        let chosen = unsafe { p.as_ref() }.and_then(|snap| {
            let mut ties = TieRandom::new();
            crate::select::select(snap, svc as usize, scope, &mut || ties.next())
                .and_then(|i| snap.dests.get(i))
                .map(|d| d.dest)
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
