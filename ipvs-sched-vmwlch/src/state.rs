// SPDX-License-Identifier: GPL-2.0

//! Per-network-namespace state: the host map, the services bound to our
//! schedulers with their destinations (the tracked set), and the
//! RCU-published snapshot that `schedule()` reads (`snapshot.rs`), kept up
//! to date by `pace.rs`.
//!
//! # Invariants
//!
//! * Everything in [`Inner`] is only touched with the glue's per-namespace `vmwlch_net.lock`
//!   held (every entry point except `schedule` and the RCU free callback).
//! * `members` is sorted by address with no duplicates, and every
//!   `Member::host` indexes `hosts`.
//! * A destination or service leaves the tracked set (`del_dest`,
//!   `done_service`) before IPVS can free it, and doing so moves the tracked
//!   set's generation on ([`NetState::gen`]) before the callback returns:
//!   `schedule()` uses a snapshot only while its generation is current, and
//!   IPVS frees a destination (or service) only after a grace period that
//!   starts later still, so no reader that used a snapshot naming it is left.
//! * A snapshot is freed only after a grace period that starts after it was
//!   unpublished.
//! * `svcs[i]` holds service `s` only if `s->sched_data` is `i + 1`
//!   ([`ffi::svc_slot`]); lookups check the service pointer anyway.

use core::cell::UnsafeCell;
use core::sync::atomic::{AtomicPtr, AtomicU32, Ordering};

use kernel::alloc::AllocError;
use kernel::ffi::c_void;
use kernel::prelude::*;

use crate::ffi::{self, ip_vs_dest, ip_vs_service};
use crate::pace::Pace;
use crate::select::Scope;
use crate::snapshot::{self, nowarn, Snapshot};
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
    dest: *mut ip_vs_dest,
    addr: Addr,
    /// Its weight was positive at the last `add_dest`/`upd_dest`.
    weighted: bool,
}

impl Dest {
    /// The tracking entry of a destination.
    ///
    /// # Safety
    ///
    /// `dest` is live: linked to a tracked service (under the IPVS config
    /// mutex, or inside an RCU read-side section).
    unsafe fn new(dest: *mut ip_vs_dest) -> Self {
        // SAFETY: per the contract.
        let (af, bytes) = unsafe { ffi::dest_addr(dest) };
        // SAFETY: per the contract.
        let weighted = unsafe { ffi::dest_live(dest) }.weight > 0;
        Self {
            dest,
            addr: Addr { af, bytes },
            weighted,
        }
    }
}

/// A service bound to `vmwlc` or `vmwlch`.
struct Svc {
    svc: *mut ip_vs_service,
    dests: KVVec<Dest>,
    /// An `add_dest` ran out of memory: `dests` may miss destinations of
    /// the service until [`Inner::resync`] succeeds.
    resync: bool,
}

/// State written under `vmwlch_net.lock`.
pub(crate) struct Inner {
    pub(crate) hosts: KVVec<Host>,
    pub(crate) members: KVVec<Member>,
    /// Tracked services by slot (see the invariants).
    svcs: KVVec<Option<Svc>>,
    /// Free slots of `svcs`.
    free: KVVec<u32>,
    n_svcs: usize,
    n_dests: usize,
    /// Bumped on every change of the map or the tracked set (reported).
    pub(crate) generation: u32,
    /// Generation of the tracked set (mirrored in [`NetState::gen`]).
    pub(crate) tracked_gen: u32,
    /// When to rebuild the snapshot, and what happened so far.
    pub(crate) pace: Pace,
}

/// The per-namespace state; C holds it as an opaque pointer.
pub(crate) struct NetState {
    snap: AtomicPtr<Snapshot>,
    /// The tracked set's generation: a snapshot built for another one is
    /// stale and is not used (see the invariants).
    gen: AtomicU32,
    /// The glue's per-namespace data: the rebuild work item's owner.
    vn: *mut c_void,
    inner: UnsafeCell<Inner>,
}

/// A scheduling outcome.
pub(crate) enum Decision {
    /// This destination.
    Chosen(*mut ip_vs_dest),
    /// No destination is eligible.
    NoDest,
    /// The snapshot is not current: the caller decides by plain wlc.
    Stale,
}

/// Shrinks `v` to `len` elements.
fn truncate<T: Copy, A: kernel::alloc::Allocator>(v: &mut Vec<T, A>, len: usize) {
    if len < v.len() {
        // SAFETY: `len` is below the current length, so the first `len`
        // elements are initialised; `T: Copy` has no destructor to run.
        unsafe { v.set_len(len) };
    }
}

/// Removes element `i` without keeping the order.
fn swap_remove<T: Copy, A: kernel::alloc::Allocator>(v: &mut Vec<T, A>, i: usize) {
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
        (self.n_svcs, self.n_dests)
    }

    /// Number of tracked destinations.
    pub(crate) fn dest_count(&self) -> usize {
        self.n_dests
    }

    /// Number of tracked services.
    pub(crate) fn svc_count(&self) -> usize {
        self.n_svcs
    }

    /// Every tracked destination: (service key, destination, address).
    pub(crate) fn tracked(&self) -> impl Iterator<Item = (usize, *mut ip_vs_dest, &Addr)> {
        self.svcs.iter().flatten().flat_map(|s| {
            s.dests
                .iter()
                .map(move |d| (s.svc as usize, d.dest, &d.addr))
        })
    }

    /// Live load of a host: (activeconns, inactconns, tracked destinations).
    pub(crate) fn host_load(&self, idx: u32) -> (u64, u64, u32) {
        let (mut a, mut i, mut n) = (0u64, 0u64, 0u32);
        for (_, dest, addr) in self.tracked() {
            if self.host_of(addr) == Some(idx) {
                // SAFETY: tracked destinations are live under the mutex
                // (they leave the set before IPVS unlinks them).
                let l = unsafe { ffi::dest_live(dest) };
                a = a.saturating_add(u64::from(l.activeconns.max(0).unsigned_abs()));
                i = i.saturating_add(u64::from(l.inactconns.max(0).unsigned_abs()));
                n = n.saturating_add(1);
            }
        }
        (a, i, n)
    }

    /// Per slot of `svcs`, its service's key (`struct ip_vs_service *` as
    /// an integer), if the slot is in use.
    pub(crate) fn slot_keys(&self) -> impl ExactSizeIterator<Item = Option<usize>> + '_ {
        self.svcs.iter().map(|s| s.as_ref().map(|s| s.svc as usize))
    }

    /// The first tracked service (null if none).
    pub(crate) fn first_service(&self) -> *mut ip_vs_service {
        self.svcs
            .iter()
            .flatten()
            .next()
            .map_or(core::ptr::null_mut(), |s| s.svc)
    }

    /// The slot of a tracked service: O(1) through `sched_data`, which only
    /// we write while the service uses our scheduler.
    fn slot_of(&self, svc: *mut ip_vs_service) -> Option<usize> {
        // SAFETY: `svc` is live (every caller is a scheduler callback for it).
        let slot = unsafe { ffi::svc_slot(svc) }.checked_sub(1)?;
        let s = self.svcs.get(slot)?.as_ref()?;
        core::ptr::eq(s.svc, svc).then_some(slot)
    }

    /// The slot of a tracked service, by `sched_data` or, should that not
    /// lead to it (it always does), by a search: a service must not stay
    /// tracked past its `done_service`.
    fn find(&self, svc: *mut ip_vs_service) -> Option<usize> {
        self.slot_of(svc).or_else(|| {
            self.svcs
                .iter()
                .position(|s| s.as_ref().is_some_and(|s| core::ptr::eq(s.svc, svc)))
        })
    }

    fn svc_mut(&mut self, svc: *mut ip_vs_service) -> Option<&mut Svc> {
        let slot = self.find(svc)?;
        self.svcs.get_mut(slot)?.as_mut()
    }

    /// Starts tracking `svc` with its current destinations.
    ///
    /// # Safety
    ///
    /// Called from `init_service` with the IPVS config mutex held.
    pub(crate) unsafe fn init_service(&mut self, svc: *mut ip_vs_service) -> Result {
        // Not `find`: a new service is not tracked, and a search per
        // service would make a restore quadratic again.
        if self.slot_of(svc).is_some() {
            return Ok(());
        }
        let mut dests = KVVec::new();
        let add = |d| {
            // SAFETY: `d` is on the service's list under the config mutex.
            let entry = unsafe { Dest::new(d) };
            dests.push(entry, nowarn()).map_err(|_| ENOMEM.to_errno())
        };
        // SAFETY: the IPVS config mutex is held (caller's contract).
        if unsafe { ffi::svc_walk(svc, add) }.is_err() {
            return Err(ENOMEM);
        }
        // Room for the slot first: nothing below fails.
        let slot = match self.free.last().copied() {
            Some(i) => {
                let n = self.free.len() - 1;
                truncate(&mut self.free, n);
                i as usize
            }
            None => {
                self.svcs.push(None, nowarn())?;
                self.svcs.len() - 1
            }
        };
        self.n_dests += dests.len();
        self.n_svcs += 1;
        if let Some(s) = self.svcs.get_mut(slot) {
            *s = Some(Svc {
                svc,
                dests,
                resync: false,
            });
        }
        // SAFETY: `svc` is live and being bound to our scheduler.
        unsafe { ffi::svc_set_slot(svc, slot + 1) };
        Ok(())
    }

    /// Stops tracking `svc`.
    pub(crate) fn done_service(&mut self, svc: *mut ip_vs_service) {
        let Some(slot) = self.find(svc) else {
            return;
        };
        if let Some(s) = self.svcs.get_mut(slot).and_then(Option::take) {
            self.n_dests -= s.dests.len();
            self.n_svcs -= 1;
        }
        // SAFETY: `svc` is live (done_service of it).
        unsafe { ffi::svc_set_slot(svc, 0) };
        // Without room in the free list the slot is merely not reused.
        let _ = self.free.push(slot as u32, nowarn());
    }

    /// Tracks a new destination of `svc`. On failure the service is marked
    /// for [`Inner::resync`], so the destination is tracked later.
    ///
    /// # Safety
    ///
    /// Called from `add_dest` with the IPVS config mutex held.
    pub(crate) unsafe fn add_dest(
        &mut self,
        svc: *mut ip_vs_service,
        dest: *mut ip_vs_dest,
    ) -> Result {
        // SAFETY: `dest` was just linked under the config mutex.
        let entry = unsafe { Dest::new(dest) };
        let Some(s) = self.svc_mut(svc) else {
            return Ok(());
        };
        if s.dests.iter().any(|d| core::ptr::eq(d.dest, dest)) {
            return Ok(());
        }
        if s.dests.push(entry, nowarn()).is_err() {
            s.resync = true;
            return Err(ENOMEM);
        }
        self.n_dests += 1;
        Ok(())
    }

    /// Stops tracking a destination of `svc`.
    pub(crate) fn del_dest(&mut self, svc: *mut ip_vs_service, dest: *mut ip_vs_dest) {
        let Some(s) = self.svc_mut(svc) else {
            return;
        };
        if let Some(i) = s.dests.iter().position(|d| core::ptr::eq(d.dest, dest)) {
            swap_remove(&mut s.dests, i);
            self.n_dests -= 1;
        }
    }

    /// A destination's weight or flags were edited. Returns whether its
    /// weight became positive (a snapshot may then leave its host out of
    /// the service's view: stale) or stopped being so (outdated: the view
    /// lists a host for nothing, which costs time, not correctness); `None`
    /// if neither.
    ///
    /// # Safety
    ///
    /// Called from `upd_dest` with the IPVS config mutex held.
    pub(crate) unsafe fn upd_dest(
        &mut self,
        svc: *mut ip_vs_service,
        dest: *mut ip_vs_dest,
    ) -> Option<bool> {
        // SAFETY: `dest` is linked to `svc` under the config mutex.
        let weighted = unsafe { ffi::dest_live(dest) }.weight > 0;
        let s = self.svc_mut(svc)?;
        let d = s.dests.iter_mut().find(|d| core::ptr::eq(d.dest, dest))?;
        if d.weighted == weighted {
            return None;
        }
        d.weighted = weighted;
        Some(weighted)
    }

    /// Whether some service's tracking ran out of memory.
    pub(crate) fn needs_resync(&self) -> bool {
        self.svcs.iter().flatten().any(|s| s.resync)
    }

    /// Re-reads the destinations of every service whose `add_dest` ran out
    /// of memory. Runs without the IPVS config mutex (from the rebuild
    /// work), so the list is walked under RCU: a destination seen there is
    /// either still linked or its `del_dest` is waiting for our mutex, and
    /// will untrack it; one unlinked before is not seen (its `del_dest`
    /// returned before we took the mutex).
    pub(crate) fn resync(&mut self) -> Result<(), AllocError> {
        let mut result = Ok(());
        for slot in 0..self.svcs.len() {
            let Some(Some(s)) = self.svcs.get_mut(slot) else {
                continue;
            };
            if !s.resync {
                continue;
            }
            match resync_one(s.svc) {
                Ok(dests) => {
                    let old = core::mem::replace(&mut s.dests, dests);
                    s.resync = false;
                    self.n_dests = self.n_dests - old.len() + s.dests.len();
                }
                Err(e) => result = Err(e),
            }
        }
        result
    }
}

/// The current destinations of `svc`, read under RCU.
fn resync_one(svc: *mut ip_vs_service) -> Result<KVVec<Dest>, AllocError> {
    for _ in 0..4 {
        let mut n = 0usize;
        let count = |_| {
            n += 1;
            Ok(())
        };
        // SAFETY: `svc` is tracked, so alive while we hold `vmwlch_net.lock`
        // (its done_service waits for the mutex).
        let _ = unsafe { ffi::svc_walk_rcu(svc, count) };
        // Room for a few added meanwhile; the walk cannot allocate.
        let mut v = KVVec::with_capacity(n + 8, nowarn())?;
        let add = |d| {
            if v.len() == v.capacity() {
                return Err(ENOSPC.to_errno());
            }
            // SAFETY: `d` is on the list inside the walk's RCU section.
            let entry = unsafe { Dest::new(d) };
            v.push(entry, GFP_NOWAIT).map_err(|_| ENOSPC.to_errno())
        };
        // SAFETY: as above.
        if unsafe { ffi::svc_walk_rcu(svc, add) }.is_ok() {
            return Ok(v);
        }
    }
    Err(AllocError)
}

impl NetState {
    /// A new, empty state; `vn` is the glue's per-namespace data.
    pub(crate) fn new(vn: *mut c_void) -> Result<KBox<Self>, AllocError> {
        KBox::new(
            Self {
                snap: AtomicPtr::new(core::ptr::null_mut()),
                gen: AtomicU32::new(0),
                vn,
                inner: UnsafeCell::new(Inner {
                    hosts: KVVec::new(),
                    members: KVVec::new(),
                    svcs: KVVec::new(),
                    free: KVVec::new(),
                    n_svcs: 0,
                    n_dests: 0,
                    generation: 0,
                    tracked_gen: 0,
                    pace: Pace::new(),
                }),
            },
            GFP_KERNEL_ACCOUNT,
        )
    }

    /// The writable part.
    ///
    /// # Safety
    ///
    /// The caller holds `vmwlch_net.lock` for as long as it uses the result,
    /// and takes no other reference to the inner state meanwhile.
    #[allow(clippy::mut_from_ref)]
    pub(crate) unsafe fn inner_mut(&self) -> &mut Inner {
        // SAFETY: exclusive access is guaranteed by the mutex (caller's contract).
        unsafe { &mut *self.inner.get() }
    }

    /// The glue's per-namespace data.
    pub(crate) fn vn(&self) -> *mut c_void {
        self.vn
    }

    /// Moves the tracked set's generation on: from now on no decision uses
    /// a snapshot built before (called with `vmwlch_net.lock` held).
    pub(crate) fn invalidate(&self, inner: &mut Inner) {
        inner.tracked_gen = inner.tracked_gen.wrapping_add(1);
        self.gen.store(inner.tracked_gen, Ordering::Release);
    }

    /// Marks `svc`'s view in the published snapshot stale: its decisions
    /// are plain wlc until the next one, while other services keep using it
    /// (called with `vmwlch_net.lock` held). `false`: no current snapshot
    /// has a view of `svc` to mark.
    pub(crate) fn stale_service(&self, svc: *mut ip_vs_service) -> bool {
        let p = self.snap.load(Ordering::Acquire);
        // SAFETY: called with `vmwlch_net.lock` held: only writers under it
        // unpublish (and then retire) snapshots.
        unsafe { p.as_ref() }.is_some_and(|s| {
            s.gen == self.gen.load(Ordering::Relaxed) && s.mark_stale(svc as usize)
        })
    }

    /// Whether the published snapshot is current.
    pub(crate) fn is_current(&self) -> bool {
        let p = self.snap.load(Ordering::Acquire);
        // SAFETY: called with `vmwlch_net.lock` held: only writers under it
        // unpublish (and then retire) snapshots.
        unsafe { p.as_ref() }.is_some_and(|s| s.gen == self.gen.load(Ordering::Relaxed))
    }

    /// Publishes a new snapshot (called with `vmwlch_net.lock` held).
    pub(crate) fn publish(&self, new: KBox<Snapshot>) {
        self.swap(KBox::into_raw(new));
    }

    fn swap(&self, new: *mut Snapshot) {
        // Release pairs with the Acquire load in `schedule` (rcu_assign_pointer).
        let old = self.snap.swap(new, Ordering::AcqRel);
        if !old.is_null() {
            // SAFETY: `old` came from `KBox::into_raw` and is unreachable for
            // new readers.
            unsafe { Snapshot::retire(old) };
        }
    }

    /// Picks a destination for a new connection to `svc`.
    ///
    /// Runs under `rcu_read_lock()`, possibly in softirq: no sleeping, no allocation.
    ///
    /// # Safety
    ///
    /// `svc` is live and bound to one of our schedulers (IPVS's `schedule`
    /// call), inside an RCU read-side section.
    #[inline(always)]
    pub(crate) unsafe fn schedule(
        &self,
        svc: *mut ip_vs_service,
        scope: Scope,
        seed: u64,
        cost: u32,
    ) -> Decision {
        // Acquire pairs with the Release in `swap` (rcu_dereference).
        let p = self.snap.load(Ordering::Acquire);
        // SAFETY: a published snapshot stays allocated until a grace period
        // after it is unpublished, and we are inside an RCU read-side section.
        let Some(snap) = (unsafe { p.as_ref() }) else {
            return Decision::Stale;
        };
        // A snapshot of an older tracked set may name destinations IPVS has
        // unlinked since. Seeing the current generation here means this
        // read-side section started before the change that would move it on,
        // so every destination the snapshot names outlives it (invariants).
        if snap.gen != self.gen.load(Ordering::Relaxed) {
            return Decision::Stale;
        }
        // SAFETY: `svc` is live and ours (contract).
        match unsafe { snap.select(svc, scope, seed, cost) } {
            Ok(Some(d)) => Decision::Chosen(d),
            Ok(None) => Decision::NoDest,
            // The service's view was marked stale (`stale_service`).
            Err(snapshot::StaleView) => Decision::Stale,
        }
    }
}

impl Drop for NetState {
    fn drop(&mut self) {
        // The glue waited for a grace period before dropping us; the last
        // snapshot goes through call_rcu like the others (module exit runs
        // rcu_barrier()).
        self.swap(core::ptr::null_mut());
    }
}
