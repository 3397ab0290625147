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
//!   when the command returns); they do not make the previous snapshot
//!   unsafe, so if that rebuild fails, the previous snapshot stays in use.
//! * A failed rebuild (out of memory) keeps the previous snapshot where it is
//!   still valid and plain wlc otherwise, counts the failure, logs it (rate
//!   limited) and retries from the work item with a growing delay. A
//!   destination whose `add_dest` ran out of memory is re-read from the
//!   service's list at the next rebuild, and retried likewise.

use kernel::prelude::*;
use kernel::time::Ktime;

use crate::ffi;
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
    /// weight); `stale`: the published snapshot must not be used any more.
    /// Called with `vmwlch_net.lock` held.
    pub(crate) fn changed(&self, inner: &mut Inner, stale: bool) {
        inner.generation = inner.generation.wrapping_add(1);
        if stale {
            self.invalidate(inner);
        }
        inner.pace.pending = true;
        let now = now_ns();
        let wait = inner.pace.not_before.saturating_sub(now);
        if wait <= 0 {
            self.rebuild(inner, now);
        } else {
            inner.pace.stats.deferred += 1;
            self.queue(wait);
        }
    }

    /// A netlink command changed the map: rebuild at once.
    pub(crate) fn map_changed(&self, inner: &mut Inner) {
        inner.generation = inner.generation.wrapping_add(1);
        inner.pace.pending = true;
        self.rebuild(inner, now_ns());
    }

    /// An `add_dest` ran out of memory (the service will be re-read).
    pub(crate) fn track_failed(&self, inner: &mut Inner) {
        inner.pace.stats.track_failures += 1;
    }

    /// The rebuild work item (queued by [`NetState::queue`]).
    pub(crate) fn work(&self, inner: &mut Inner) {
        if !inner.pace.pending {
            return;
        }
        let now = now_ns();
        let wait = inner.pace.not_before.saturating_sub(now);
        if wait > 0 {
            // Queued for an earlier deadline that a later rebuild moved on.
            self.queue(wait);
            return;
        }
        if inner.pace.failing > 0 {
            inner.pace.stats.retries += 1;
        }
        self.rebuild(inner, now);
    }

    /// Builds and publishes the snapshot of the current state (`t0`: now).
    fn rebuild(&self, inner: &mut Inner, t0: i64) {
        let resynced = if inner.needs_resync() {
            inner.resync()
        } else {
            Ok(())
        };
        let built = snapshot::build(inner, inner.tracked_gen);
        let t1 = now_ns();
        let took = u64::try_from(t1.saturating_sub(t0)).unwrap_or(0);
        inner.pace.stats.build_ns = inner.pace.stats.build_ns.saturating_add(took);
        let Ok(snap) = built else {
            self.failed(inner, t1);
            return;
        };
        self.publish(snap);
        let p = &mut inner.pace;
        p.stats.rebuilds += 1;
        p.not_before = t1.saturating_add(t1.saturating_sub(t0).saturating_mul(RATIO));
        if resynced.is_err() {
            // Published without the destinations that could not be re-read.
            self.failed(inner, t1);
            return;
        }
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
        self.queue(backoff);
    }

    /// Queues the rebuild work to run in `wait_ns` (no-op if queued).
    fn queue(&self, wait_ns: i64) {
        let ms = wait_ns.saturating_add(999_999) / 1_000_000;
        let ms = u32::try_from(ms.max(1)).unwrap_or(u32::MAX);
        let jiffies = kernel::time::msecs_to_jiffies(ms);
        // SAFETY: `vn` is the glue's data of the namespace that owns us,
        // alive as long as we are.
        unsafe { ffi::queue_rebuild(self.vn(), jiffies) };
    }
}
