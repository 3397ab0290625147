// SPDX-License-Identifier: GPL-2.0

//! Plain wlc over a service's own destinations: what `schedule()` decides by
//! while the snapshot is not current (the short window between a change of
//! the tracked set and the rebuild, or after a rebuild that ran out of
//! memory), so that no connection is refused for lack of a snapshot.
//!
//! The same choice as `net/netfilter/ipvs/ip_vs_wlc.c` (not callable from a
//! module): the first destination with a positive weight that is not
//! overloaded, then any other with a smaller overhead per weight
//! (`overhead * weight` compared crosswise, as IPVS does).

use kernel::ffi::c_int;

use crate::ffi::{self, ip_vs_dest, ip_vs_service};

/// The destination plain wlc picks for `svc` (NULL if none is eligible).
///
/// # Safety
///
/// `svc` is live: called from `schedule()`, inside IPVS's RCU read-side section.
pub(crate) unsafe fn schedule(svc: *mut ip_vs_service) -> *mut ip_vs_dest {
    let mut least: *mut ip_vs_dest = core::ptr::null_mut();
    let (mut loh, mut lw) = (0i64, 0i64);
    let mut visit = |dest: *mut ip_vs_dest| -> Result<(), c_int> {
        // SAFETY: the walk hands out destinations linked to `svc` under RCU.
        let l = unsafe { ffi::dest_live(dest) };
        if l.flags & ffi::IP_VS_DEST_F_OVERLOAD != 0 {
            return Ok(());
        }
        let doh = i64::from(l.activeconns) * 256 + i64::from(l.overhead_term);
        let w = i64::from(l.weight);
        if least.is_null() {
            if w > 0 {
                (least, loh, lw) = (dest, doh, w);
            }
        } else if loh * w > doh * lw {
            (least, loh, lw) = (dest, doh, w);
        }
        Ok(())
    };
    // SAFETY: `svc` is live (contract); `visit` neither sleeps nor allocates.
    let _ = unsafe { ffi::svc_walk_rcu(svc, &mut visit) };
    least
}
