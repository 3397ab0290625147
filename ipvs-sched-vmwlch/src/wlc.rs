// SPDX-License-Identifier: GPL-2.0

//! Plain wlc over a service's own destinations: what `schedule()` decides by
//! while the snapshot is not current (the short window between a change of
//! the tracked set and the rebuild, or after a rebuild that ran out of
//! memory), so that no connection is refused for lack of a snapshot.
//!
//! The choice of `net/netfilter/ipvs/ip_vs_wlc.c` (not callable from a
//! module), made by the shared [`WlcLeast`] with exact products: weights up
//! to `INT_MAX` and any counters cannot overflow here (the user-space oracle
//! `bench/wlc_oracle.rs` checks it against wlc's C loop at that limit).

use kernel::ffi::c_int;

use crate::ffi::{self, ip_vs_dest, ip_vs_service};
use crate::select::{Live, WlcLeast};

/// The destination plain wlc picks for `svc` (NULL if none is eligible).
///
/// # Safety
///
/// `svc` is live: called from `schedule()`, inside IPVS's RCU read-side section.
pub(crate) unsafe fn schedule(svc: *mut ip_vs_service) -> *mut ip_vs_dest {
    let mut least = WlcLeast::new();
    let mut visit = |dest: *mut ip_vs_dest| -> Result<(), c_int> {
        // SAFETY: the walk hands out destinations linked to `svc` under RCU.
        let l = unsafe { ffi::dest_live(dest) };
        // wlc's overhead: activeconns * 256 + this kernel's second term.
        let live = Live {
            weight: l.weight,
            activeconns: l.activeconns,
            inactconns: l.overhead_term,
            overloaded: l.flags & ffi::IP_VS_DEST_F_OVERLOAD != 0,
        };
        least.offer(dest, &live);
        Ok(())
    };
    // SAFETY: `svc` is live (contract); `visit` neither sleeps nor allocates.
    let _ = unsafe { ffi::svc_walk_rcu(svc, &mut visit) };
    least.least().unwrap_or(core::ptr::null_mut())
}
