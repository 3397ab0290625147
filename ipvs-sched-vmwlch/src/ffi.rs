// SPDX-License-Identifier: GPL-2.0

//! The only place that talks to C: declarations of the functions in
//! `glue.c` (see `glue.h`, which is the contract) and thin safe wrappers.
//!
//! IPVS objects (`struct ip_vs_service`, `struct ip_vs_dest`) are opaque here;
//! Rust only keeps their addresses and reads them through the C accessors.

use core::sync::atomic::AtomicI32;

use kernel::ffi::{c_char, c_int, c_void};

/// Opaque `struct ip_vs_service`.
#[repr(C)]
pub(crate) struct IpVsService {
    _p: [u8; 0],
}

/// Opaque `struct ip_vs_dest`.
#[repr(C)]
pub(crate) struct IpVsDest {
    _p: [u8; 0],
}

/// Opaque `struct sk_buff`.
#[repr(C)]
pub(crate) struct SkBuff {
    _p: [u8; 0],
}

/// `struct rcu_head` storage (two pointers; glue.c checks the size at build time).
#[repr(C)]
pub(crate) struct RcuHead {
    _next: *mut c_void,
    _func: *mut c_void,
}

impl RcuHead {
    /// An unused head.
    pub(crate) const fn new() -> Self {
        Self {
            _next: core::ptr::null_mut(),
            _func: core::ptr::null_mut(),
        }
    }
}

/// `struct vmwlch_live` from glue.h.
#[repr(C)]
#[derive(Default, Clone, Copy)]
pub(crate) struct RawLive {
    pub(crate) weight: i32,
    pub(crate) activeconns: i32,
    /// Second term of IPVS's overhead (inactconns or totalconns, see glue.h).
    pub(crate) overhead_term: i32,
    pub(crate) inactconns: i32,
    pub(crate) flags: u32,
}

/// `struct vmwlch_dest_fields` from glue.h: addresses of a destination's live fields.
#[repr(C)]
#[derive(Clone, Copy)]
pub(crate) struct DestFields {
    pub(crate) weight: *const AtomicI32,
    pub(crate) activeconns: *const AtomicI32,
    pub(crate) overhead_term: *const AtomicI32,
    pub(crate) flags: *const u32,
}

/// `IP_VS_DEST_F_OVERLOAD` from uapi/linux/ip_vs.h.
pub(crate) const IP_VS_DEST_F_OVERLOAD: u32 = 0x0002;
/// `AF_INET`.
pub(crate) const AF_INET: u16 = 2;
/// `AF_INET6`.
pub(crate) const AF_INET6: u16 = 10;

extern "C" {
    fn vmwlch_dest_live(dest: *const IpVsDest, out: *mut RawLive);
    fn vmwlch_dest_addr(dest: *const IpVsDest, out16: *mut u8) -> u16;
    fn vmwlch_dest_fields(dest: *const IpVsDest, out: *mut DestFields);
    fn vmwlch_svc_walk(
        svc: *mut IpVsService,
        cb: unsafe extern "C" fn(ctx: *mut c_void, dest: *mut IpVsDest) -> c_int,
        ctx: *mut c_void,
    ) -> c_int;
    fn vmwlch_retire(head: *mut RcuHead);
    fn vmwlch_random_u32() -> u32;
    fn vmwlch_msg_put(
        skb: *mut SkBuff,
        portid: u32,
        seq: u32,
        flags: c_int,
        cmd: u8,
    ) -> *mut c_void;
    fn vmwlch_msg_end(skb: *mut SkBuff, hdr: *mut c_void);
    fn vmwlch_msg_cancel(skb: *mut SkBuff, hdr: *mut c_void);
    fn vmwlch_put_u32(skb: *mut SkBuff, ty: c_int, value: u32) -> c_int;
    fn vmwlch_put_u64(skb: *mut SkBuff, ty: c_int, value: u64) -> c_int;
    fn vmwlch_put_bytes(skb: *mut SkBuff, ty: c_int, data: *const c_void, len: c_int) -> c_int;
    fn vmwlch_nest_start(skb: *mut SkBuff, ty: c_int) -> *mut c_void;
    fn vmwlch_nest_end(skb: *mut SkBuff, nest: *mut c_void);
    pub(crate) fn vmwlch_glue_init() -> c_int;
    pub(crate) fn vmwlch_glue_exit();
}

/// Reads a destination's live counters.
///
/// # Safety
///
/// `dest` must point to a live `struct ip_vs_dest`: inside an RCU read-side
/// section for a destination reached through a published snapshot, or under
/// the IPVS config mutex for a destination of a tracked service.
pub(crate) unsafe fn dest_live(dest: *const IpVsDest) -> RawLive {
    let mut out = RawLive::default();
    // SAFETY: `dest` is live per the caller's contract; `out` is a valid,
    // writable `struct vmwlch_live`.
    unsafe { vmwlch_dest_live(dest, &mut out) };
    out
}

/// The addresses of a destination's live fields.
///
/// # Safety
///
/// As for [`dest_live`]; the addresses stay valid as long as the destination.
pub(crate) unsafe fn dest_fields(dest: *const IpVsDest) -> DestFields {
    let mut out = DestFields {
        weight: core::ptr::null(),
        activeconns: core::ptr::null(),
        overhead_term: core::ptr::null(),
        flags: core::ptr::null(),
    };
    // SAFETY: `dest` is live per the caller's contract; `out` is writable.
    unsafe { vmwlch_dest_fields(dest, &mut out) };
    out
}

/// Reads a destination's address family and address (16 bytes, IPv4 in the first 4).
///
/// # Safety
///
/// As for [`dest_live`].
pub(crate) unsafe fn dest_addr(dest: *const IpVsDest) -> (u16, [u8; 16]) {
    let mut out = [0u8; 16];
    // SAFETY: `dest` is live per the caller's contract; `out` has 16 bytes.
    let af = unsafe { vmwlch_dest_addr(dest, out.as_mut_ptr()) };
    (af, out)
}

/// Calls `f` for each destination of `svc`; stops at the first error.
///
/// # Safety
///
/// The caller holds the IPVS config mutex (true in every scheduler callback
/// except `schedule`), so `svc->destinations` is stable during the walk.
pub(crate) unsafe fn svc_walk<F: FnMut(*mut IpVsDest) -> Result<(), c_int>>(
    svc: *mut IpVsService,
    mut f: F,
) -> Result<(), c_int> {
    unsafe extern "C" fn trampoline<F: FnMut(*mut IpVsDest) -> Result<(), c_int>>(
        ctx: *mut c_void,
        dest: *mut IpVsDest,
    ) -> c_int {
        // SAFETY: `ctx` is the `&mut F` passed below, alive for the whole walk.
        let f = unsafe { &mut *ctx.cast::<F>() };
        match f(dest) {
            Ok(()) => 0,
            Err(e) => e,
        }
    }
    // SAFETY: `svc` is a live service under the config mutex (caller's
    // contract); the callback and its context outlive the call.
    let ret = unsafe { vmwlch_svc_walk(svc, trampoline::<F>, (&mut f as *mut F).cast()) };
    if ret == 0 {
        Ok(())
    } else {
        Err(ret)
    }
}

/// Queues `head` to be freed by `vmwlch_rs_snapshot_free` after an RCU grace period.
///
/// # Safety
///
/// `head` is the first field of a `Snapshot` leaked from a `KBox` that no new
/// reader can reach any more.
pub(crate) unsafe fn retire(head: *mut RcuHead) {
    // SAFETY: per the caller's contract; `call_rcu` takes ownership until the callback.
    unsafe { vmwlch_retire(head) }
}

/// A random number from the kernel's CSPRNG (usable in softirq, does not sleep).
pub(crate) fn random_u32() -> u32 {
    // SAFETY: `get_random_u32` has no preconditions.
    unsafe { vmwlch_random_u32() }
}

/// Error from a netlink message writer: the skb is full.
pub(crate) struct MsgFull;

/// A generic netlink message being written into an skb; cancelled unless finished.
pub(crate) struct Msg {
    skb: *mut SkBuff,
    hdr: *mut c_void,
}

impl Msg {
    /// Starts a VMWLCH message.
    ///
    /// # Safety
    ///
    /// `skb` is a valid skb that the caller owns for the life of the `Msg`.
    pub(crate) unsafe fn start(
        skb: *mut SkBuff,
        portid: u32,
        seq: u32,
        flags: c_int,
        cmd: u8,
    ) -> Result<Self, MsgFull> {
        // SAFETY: `skb` is valid per the caller's contract.
        let hdr = unsafe { vmwlch_msg_put(skb, portid, seq, flags, cmd) };
        if hdr.is_null() {
            return Err(MsgFull);
        }
        Ok(Self { skb, hdr })
    }

    fn check(rc: c_int) -> Result<(), MsgFull> {
        if rc == 0 {
            Ok(())
        } else {
            Err(MsgFull)
        }
    }

    /// Appends a u32 attribute.
    pub(crate) fn put_u32(&mut self, ty: u16, v: u32) -> Result<(), MsgFull> {
        // SAFETY: `self.skb` is valid (invariant from `start`).
        Self::check(unsafe { vmwlch_put_u32(self.skb, c_int::from(ty), v) })
    }

    /// Appends a u64 attribute (64-bit aligned with VMWLCH_A_PAD).
    pub(crate) fn put_u64(&mut self, ty: u16, v: u64) -> Result<(), MsgFull> {
        // SAFETY: `self.skb` is valid (invariant from `start`).
        Self::check(unsafe { vmwlch_put_u64(self.skb, c_int::from(ty), v) })
    }

    /// Appends a binary attribute.
    pub(crate) fn put_bytes(&mut self, ty: u16, data: &[u8]) -> Result<(), MsgFull> {
        let len = c_int::try_from(data.len()).map_err(|_| MsgFull)?;
        // SAFETY: `self.skb` is valid; `data` is a readable slice of `len` bytes.
        Self::check(unsafe {
            vmwlch_put_bytes(self.skb, c_int::from(ty), data.as_ptr().cast(), len)
        })
    }

    /// Appends a NUL-terminated string attribute.
    pub(crate) fn put_str(&mut self, ty: u16, s: &[u8]) -> Result<(), MsgFull> {
        let mut buf = [0u8; 256];
        let n = s.len().min(buf.len() - 1);
        buf[..n].copy_from_slice(&s[..n]);
        self.put_bytes(ty, &buf[..=n])
    }

    /// Opens a nested attribute; close it with [`Msg::nest_end`].
    pub(crate) fn nest_start(&mut self, ty: u16) -> Result<*mut c_void, MsgFull> {
        // SAFETY: `self.skb` is valid (invariant from `start`).
        let n = unsafe { vmwlch_nest_start(self.skb, c_int::from(ty)) };
        if n.is_null() {
            Err(MsgFull)
        } else {
            Ok(n)
        }
    }

    /// Closes a nested attribute opened on this message.
    pub(crate) fn nest_end(&mut self, nest: *mut c_void) {
        // SAFETY: `nest` came from `nest_start` on this skb and nothing was
        // trimmed since (a trimmed message is cancelled as a whole).
        unsafe { vmwlch_nest_end(self.skb, nest) }
    }

    /// Finishes the message.
    pub(crate) fn end(self) {
        let this = core::mem::ManuallyDrop::new(self);
        // SAFETY: `hdr` came from `vmwlch_msg_put` on this skb.
        unsafe { vmwlch_msg_end(this.skb, this.hdr) }
    }
}

impl Drop for Msg {
    fn drop(&mut self) {
        // SAFETY: `hdr` came from `vmwlch_msg_put` on this skb; cancelling
        // trims everything written since.
        unsafe { vmwlch_msg_cancel(self.skb, self.hdr) }
    }
}

/// Reads a NUL-terminated C string of at most `max` bytes.
///
/// # Safety
///
/// `p` points to a NUL-terminated string (the netlink policy guarantees it).
pub(crate) unsafe fn c_str_bytes<'a>(p: *const c_char, max: usize) -> &'a [u8] {
    let mut n = 0;
    // SAFETY: the string is NUL-terminated; we stop at the NUL or at `max`.
    while n < max && unsafe { *p.add(n) } != 0 {
        n += 1;
    }
    // SAFETY: the first `n` bytes were just read.
    unsafe { core::slice::from_raw_parts(p, n) }
}
