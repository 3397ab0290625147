// SPDX-License-Identifier: GPL-2.0

//! Host loads kept for one tick (the kernel: one CPU's, for one jiffy), so
//! that a `vmwlch` decision does not sum every destination of every service
//! on each of the service's hosts.
//!
//! Part of `select.rs` (compiled with it into the kernel module and into
//! `vmwlch-core`, under the same rules: `core` only, no allocation, no
//! panic, no `unsafe`).
//!
//! With 50 services of 20 VMs on 10 hosts a decision would read 1,000
//! destinations' counters where wlc reads 20. With the cache, a host's sum is
//! read at most once per tick, and in between the host's load is that sum
//! plus what this cache's owner scheduled there since (a new connection's
//! weight in the counters, [`HostCache::new`]). What it misses within a tick
//! (decisions of other CPUs, connections ending) is at most one jiffy old:
//! 1 to 10 ms, well below how fast a host's load moves. The chosen host's
//! destinations of the service are still read live (the second pass), so a
//! burst to one service is spread among its VMs exactly as without cache.

use core::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// One host's cached load. Zeroed memory is a valid, stale entry.
///
/// Atomics, not plain fields: the kernel's owner is one CPU, but a softirq
/// can interrupt a decision of process context on that CPU and update the
/// same entry. A stamp and a load from two different sums of the same tick
/// are both a sum of that tick: either is right.
#[repr(C)]
pub struct HostLoad {
    /// The tick of `load`, plus one (so that zeroed memory is stale).
    stamp: AtomicUsize,
    /// `L(h)` summed during that tick, plus the connections scheduled since.
    load: AtomicU64,
}

impl HostLoad {
    /// A stale entry.
    #[must_use]
    pub const fn new() -> Self {
        Self {
            stamp: AtomicUsize::new(0),
            load: AtomicU64::new(0),
        }
    }
}

impl Default for HostLoad {
    /// A stale entry.
    fn default() -> Self {
        Self::new()
    }
}

/// One decision's view of a cache: its entries (indexed by host number),
/// the current tick, and what a new connection adds to its host's load.
#[derive(Clone, Copy)]
pub struct HostCache<'a> {
    /// One entry per host number.
    entries: &'a [HostLoad],
    /// The current tick, plus one (see [`HostLoad::stamp`]).
    stamp: usize,
    /// Added to the chosen host's load by [`HostCache::scheduled`].
    cost: u64,
}

impl<'a> HostCache<'a> {
    /// `cost` is what a new connection adds to its host's load by the next
    /// decision: in IPVS a TCP or SCTP connection is inactive until
    /// established (1), one of another protocol active (256).
    #[must_use]
    pub const fn new(entries: &'a [HostLoad], tick: usize, cost: u64) -> Self {
        Self {
            entries,
            stamp: tick.wrapping_add(1),
            cost,
        }
    }

    /// The load of `host`: the cached one if it was summed this tick, else
    /// `sum()` (then cached). A host beyond the entries is summed each time.
    #[inline(always)]
    pub fn load(&self, host: u32, sum: impl FnOnce() -> u64) -> u64 {
        let Some(e) = self.entries.get(host as usize) else {
            return sum();
        };
        // Acquire/Release: a fresh stamp comes with its sum's load (an
        // interrupting decision writes both, load first).
        if e.stamp.load(Ordering::Acquire) == self.stamp {
            return e.load.load(Ordering::Relaxed);
        }
        let l = sum();
        e.load.store(l, Ordering::Relaxed);
        e.stamp.store(self.stamp, Ordering::Release);
        l
    }

    /// A new connection went to `host`: its load grows by the cost until
    /// the next sum.
    #[inline(always)]
    pub fn scheduled(&self, host: u32) {
        if let Some(e) = self.entries.get(host as usize) {
            if e.stamp.load(Ordering::Acquire) == self.stamp {
                let l = e.load.load(Ordering::Relaxed).saturating_add(self.cost);
                e.load.store(l, Ordering::Relaxed);
            }
        }
    }
}
