// SPDX-License-Identifier: GPL-2.0

//! `wlc.c`'s interface, shared by `native.rs` and `wlc_oracle.rs`.

use std::sync::atomic::AtomicI32;

extern "C" {
    /// wlc's choice over `svc`'s list (NULL if none is eligible).
    pub fn bench_wlc(svc: *mut u8) -> *mut u8;
    /// A service of `n` destinations (weights 1, 2, 3, ...), written to `out`.
    pub fn bench_service(n: i32, out: *mut *mut u8) -> *mut u8;
    pub static bench_off_weight: usize;
    pub static bench_off_flags: usize;
    pub static bench_off_active: usize;
    pub static bench_off_inact: usize;
}

/// A 4-byte field of a destination that `bench_service` made (they are
/// never freed), read and written atomically as the module's atomic_read().
pub fn dest_field(d: *mut u8, off: usize) -> &'static AtomicI32 {
    // SAFETY: d is a destination bench_service allocated and never freed,
    // off the offset of one of its aligned 4-byte fields.
    unsafe { &*d.add(off).cast::<AtomicI32>() }
}
