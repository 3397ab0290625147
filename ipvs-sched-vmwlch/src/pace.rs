// SPDX-License-Identifier: GPL-2.0

//! When the snapshot is rebuilt, so that a configuration change costs
//! O(change) and not O(table).
//!
//! Building a snapshot is O(D log D) for D tracked destinations. Rebuilding
//! it in every scheduler callback (under IPVS's global `__ip_vs_mutex`) made
//! restoring D destinations O(D^2 log D). Instead, rebuilds are coalesced:
//!
//! * A callback records its change in the tracked set (O(1) amortised, plus
//!   O(destinations of the service) to find a destination) and, if the
//!   change could make the published snapshot wrong, moves the tracked set's
//!   generation on (`NetState::invalidate`): from then on `schedule()` does
//!   not use that snapshot but decides by plain wlc over the service's own
//!   destinations (`wlc.rs`, IPVS's wlc loop) until a current
//!   one is published. That window is short and documented; it never refuses
//!   a connection that has an eligible destination.
//! * The rebuild runs at once if the budget allows, else from a delayed work
//!   item: after a rebuild that took `d`, the next one waits until `RATIO * d`
//!   has passed. Rebuilding thus takes at most `1 / (RATIO + 1)` of the time
//!   of any burst of changes (a restore of 10,000 services), whatever the
//!   size of the table, while an isolated change (a health check's weight
//!   edit, an operator's command) is still applied at once.
//! * Netlink changes of the map rebuild at once (the new map is in effect
//!   when the command returns); if that rebuild runs out of memory, the
//!   command fails with ENOMEM, the previous map is put back and the
//!   previous snapshot (which shows it) stays in use.
//! * A failed rebuild (out of memory) keeps the previous snapshot where it is
//!   still valid and plain wlc otherwise, counts the failure, logs it (rate
//!   limited) and retries from the work item with a growing delay. A
//!   destination whose `add_dest` ran out of memory is re-read from the
//!   service's list at the next rebuild, and retried likewise; until that
//!   succeeds no snapshot is published (one without it would pass for
//!   current), so decisions are plain wlc, which sees every destination.

use kernel::alloc::AllocError;
use kernel::prelude::*;
use kernel::time::Ktime;

use crate::ffi::{self, ip_vs_service};
use crate::snapshot;
use crate::state::{Inner, NetState};

/// A rebuild that took `d` is followed by the next one `RATIO * d` later at
/// the earliest: rebuilds cost at most 1/17 of a burst's time.
const RATIO: i64 = 16;
/// The first retry after a failure, doubling per consecutive failure...
const RETRY_MIN_NS: i64 = 10_000_000;
/// ...up to this.
const RETRY_MAX_NS: i64 = 1_000_000_000;
/// At most one log line about failures per this period.
const LOG_EVERY_NS: i64 = 10_000_000_000;

/// Counters reported by `VMWLCH_CMD_GET_INFO`.
#[derive(Default, Clone, Copy)]
pub(crate) struct PaceStats {
    /// Snapshots built and published.
    pub(crate) rebuilds: u64,
    /// Changes whose rebuild was deferred to the work item (coalesced).
    pub(crate) deferred: u64,
    /// Snapshot builds or destination re-reads that ran out of memory.
    pub(crate) failures: u64,
    /// Rebuilds attempted again after a failure.
    pub(crate) retries: u64,
    /// `add_dest` callbacks that ran out of memory (tracked later).
    pub(crate) track_failures: u64,
    /// Time spent building snapshots (ns), failed builds included.
    pub(crate) build_ns: u64,
}

/// What a change leaves of the published snapshot.
pub(crate) enum Stale {
    /// Exact, or only outdated (a view lists a host for nothing, which
    /// costs time, not correctness): still used until the rebuild.
    No,
    /// Wrong for this service only (its view may lack a destination or a
    /// host): its decisions are plain wlc until the rebuild, while the other
    /// services keep deciding host-aware (a change of one service must not
    /// send every service to wlc under steady churn).
    Service(*mut ip_vs_service),
    /// Wrong for all: it may name a destination or service IPVS is about to
    /// free.
    All,
}

/// Why a rebuild published nothing (both: out of memory).
enum Unbuilt {
    /// A service's destinations could not be re-read.
    Incomplete,
    /// The snapshot could not be built.
    NoMemory,
}

/// When the next rebuild may run, and what happened so far.
pub(crate) struct Pace {
    /// The published snapshot does not show the latest change.
    pending: bool,
    /// Earliest time (ktime ns) of the next rebuild.
    not_before: i64,
    /// Consecutive failures.
    failing: u32,
    /// When a failure was last logged.
    logged: Option<i64>,
    /// When the queued rebuild work is due (ktime ns), if it is queued.
    queued: Option<i64>,
    pub(crate) stats: PaceStats,
}

fn now_ns() -> i64 {
    Ktime::ktime_get().to_ns()
}

impl Pace {
    /// Nothing pending; the first rebuild may run at once.
    pub(crate) const fn new() -> Self {
        Self {
            pending: false,
            not_before: 0,
            failing: 0,
            logged: None,
            queued: None,
            stats: PaceStats {
                rebuilds: 0,
                deferred: 0,
                failures: 0,
                retries: 0,
                track_failures: 0,
                build_ns: 0,
            },
        }
    }
}

impl NetState {
    /// A scheduler callback changed the tracked set (or a destination's
    /// weight); `stale`: what of the published snapshot may still be used.
    /// Called with `vmwlch_net.lock` held.
    pub(crate) fn changed(&self, inner: &mut Inner, stale: Stale) {
        inner.generation = inner.generation.wrapping_add(1);
        match stale {
            Stale::No => {}
            // A service without a view in the current snapshot (none
            // published yet): nothing to mark, so nothing is used.
            Stale::Service(svc) => {
                if !self.stale_service(svc) {
                    self.invalidate(inner);
                }
            }
            Stale::All => self.invalidate(inner),
        }
        inner.pace.pending = true;
        let now = now_ns();
        let wait = inner.pace.not_before.saturating_sub(now);
        if wait <= 0 {
            self.rebuild(inner, now);
        } else {
            inner.pace.stats.deferred += 1;
            self.queue(&mut inner.pace, now, wait);
        }
    }

    /// A netlink command changed the map: build its snapshot at once, so
    /// that the map is in effect when the command returns. `Err`: the build
    /// ran out of memory and nothing was published; the caller puts the
    /// previous map back (the published snapshot still shows that one) and
    /// fails the command. A tracked set still incomplete after an earlier
    /// `add_dest` failure is not the command's: the map stays and the
    /// retry publishes it.
    pub(crate) fn map_changed(&self, inner: &mut Inner) -> Result<(), AllocError> {
        match self.build_publish(inner, now_ns()) {
            Ok(()) => self.settled(inner),
            Err(Unbuilt::Incomplete) => self.failed(inner, now_ns()),
            Err(Unbuilt::NoMemory) => {
                inner.pace.stats.failures += 1;
                return Err(AllocError);
            }
        }
        inner.generation = inner.generation.wrapping_add(1);
        Ok(())
    }

    /// An `add_dest` ran out of memory (the service will be re-read).
    pub(crate) fn track_failed(&self, inner: &mut Inner) {
        inner.pace.stats.track_failures += 1;
    }

    /// The rebuild work item (queued by [`NetState::queue`]).
    pub(crate) fn work(&self, inner: &mut Inner) {
        inner.pace.queued = None;
        if !inner.pace.pending {
            return;
        }
        let now = now_ns();
        let wait = inner.pace.not_before.saturating_sub(now);
        if wait > 0 {
            // Queued for an earlier deadline that a later rebuild moved on.
            self.queue(&mut inner.pace, now, wait);
            return;
        }
        if inner.pace.failing > 0 {
            inner.pace.stats.retries += 1;
        }
        self.rebuild(inner, now);
    }

    /// Builds and publishes the snapshot of the current state (`t0`: now).
    fn rebuild(&self, inner: &mut Inner, t0: i64) {
        match self.build_publish(inner, t0) {
            Ok(()) => self.settled(inner),
            Err(_) => self.failed(inner, now_ns()),
        }
    }

    /// Re-reads the services whose `add_dest` ran out of memory, then
    /// builds and publishes the snapshot. Nothing is published unless every
    /// destination IPVS has is in it: a snapshot missing one would be used
    /// as current and never pick it.
    fn build_publish(&self, inner: &mut Inner, t0: i64) -> Result<(), Unbuilt> {
        let resynced = if inner.needs_resync() {
            inner.resync()
        } else {
            Ok(())
        };
        let built = match resynced {
            Ok(()) => snapshot::build(inner, inner.tracked_gen).map_err(|_| Unbuilt::NoMemory),
            Err(_) => Err(Unbuilt::Incomplete),
        };
        let t1 = now_ns();
        let p = &mut inner.pace;
        let took = u64::try_from(t1.saturating_sub(t0)).unwrap_or(0);
        p.stats.build_ns = p.stats.build_ns.saturating_add(took);
        let snap = built?;
        self.publish(snap);
        p.stats.rebuilds += 1;
        p.not_before = t1.saturating_add(t1.saturating_sub(t0).saturating_mul(RATIO));
        Ok(())
    }

    /// A rebuild published everything: nothing is pending any more.
    fn settled(&self, inner: &mut Inner) {
        let p = &mut inner.pace;
        if p.failing > 0 {
            pr_info!(
                "scheduling snapshot rebuilt after {} failed attempts\n",
                p.failing
            );
            p.failing = 0;
        }
        p.pending = false;
    }

    /// A rebuild ran out of memory: count, log (rate limited), retry later.
    fn failed(&self, inner: &mut Inner, now: i64) {
        let current = self.is_current();
        let dests = inner.dest_count();
        let p = &mut inner.pace;
        p.stats.failures += 1;
        p.failing = p.failing.saturating_add(1);
        p.pending = true;
        let backoff = (RETRY_MIN_NS << (p.failing - 1).min(7)).min(RETRY_MAX_NS);
        p.not_before = now.saturating_add(backoff);
        if p.logged
            .is_none_or(|t| now.saturating_sub(t) >= LOG_EVERY_NS)
        {
            p.logged = Some(now);
            pr_warn!(
                "out of memory updating the scheduling snapshot ({} destinations, {} failures so far); {} until a retry succeeds\n",
                dests,
                p.stats.failures,
                if current { "the previous snapshot stays in use" } else { "decisions are plain wlc" }
            );
        }
        self.queue(p, now, backoff);
    }

    /// Has the rebuild work run `wait_ns` after `now`, or earlier if it is
    /// already queued for earlier. A later deadline replaces a queued one
    /// (mod_delayed_work): a change after a failure's long backoff is not
    /// held back by it.
    fn queue(&self, p: &mut Pace, now: i64, wait_ns: i64) {
        let due = now.saturating_add(wait_ns);
        if p.queued.is_some_and(|q| q <= due) {
            return;
        }
        p.queued = Some(due);
        let ms = wait_ns.saturating_add(999_999) / 1_000_000;
        let ms = u32::try_from(ms.max(1)).unwrap_or(u32::MAX);
        let jiffies = kernel::time::msecs_to_jiffies(ms);
        // SAFETY: `vn` is the glue's data of the namespace that owns us,
        // alive as long as we are.
        unsafe { ffi::queue_rebuild(self.vn(), jiffies) };
    }
}
