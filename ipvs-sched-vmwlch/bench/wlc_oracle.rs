// SPDX-License-Identifier: GPL-2.0

//! Oracle test of the module's fallback wlc (`WlcLeast` in `../src/select.rs`,
//! the source the module compiles) against wlc's loop as the kernel has it
//! (`wlc.c`: `int` overhead, `s64` cross products, built by gcc with the
//! kernel's `-fno-strict-overflow`), on the same destinations, at the limit
//! of IPVS weights (`INT_MAX`). Built with overflow checks on, so any wrap in
//! the shared code is a panic here, as it would be in the kernel with
//! `CONFIG_RUST_OVERFLOW_CHECKS`. Run by `tests/host/wlc-oracle.sh`.
//!
//! Each scenario simulates 10^6 connections arriving one by one: both
//! schedulers choose, they must choose the same destination, the chosen one
//! gets the connection; between arrivals connections end and expire, weights
//! change between extremes and destinations become overloaded.

#![allow(dead_code)]

// Only the fallback wlc of the selection is used here.
#[allow(unused_imports)]
#[path = "../src/select.rs"]
mod select;

use select::{Live, WlcLeast};
use std::process::ExitCode;
use std::sync::atomic::Ordering;

#[path = "wlc_c.rs"]
mod wlc_c;

use wlc_c::*;

const F_OVERLOAD: i32 = 2;
const ARRIVALS: u32 = 1_000_000;
const DESTS: usize = 8;

struct Dests {
    svc: *mut u8,
    d: Vec<*mut u8>,
    off: [usize; 4], // weight, flags, activeconns, inactconns
}

impl Dests {
    fn new(n: usize) -> Self {
        let mut d = vec![std::ptr::null_mut(); n];
        // SAFETY: d has room for n pointers; the offsets are plain constants.
        let (svc, off) = unsafe {
            (
                bench_service(n as i32, d.as_mut_ptr()),
                [bench_off_weight, bench_off_flags, bench_off_active, bench_off_inact],
            )
        };
        assert!(!svc.is_null() && d.iter().all(|p| !p.is_null()), "out of memory");
        Self { svc, d, off }
    }
    fn get(&self, i: usize, f: usize) -> i32 {
        dest_field(self.d[i], self.off[f]).load(Ordering::Relaxed)
    }
    fn set(&self, i: usize, f: usize, v: i32) {
        dest_field(self.d[i], self.off[f]).store(v, Ordering::Relaxed)
    }
    fn c_wlc(&self) -> Option<usize> {
        // SAFETY: svc is the service bench_service built, its list intact.
        let p = unsafe { bench_wlc(self.svc) };
        self.d.iter().position(|&d| d == p)
    }
    fn module_wlc(&self) -> Option<usize> {
        let mut least = WlcLeast::new();
        for i in 0..self.d.len() {
            let live = Live {
                weight: self.get(i, 0),
                activeconns: self.get(i, 2),
                inactconns: self.get(i, 3),
                overloaded: self.get(i, 1) & F_OVERLOAD != 0,
            };
            least.offer(i, &live);
        }
        least.least()
    }
    fn state(&self) -> String {
        (0..self.d.len())
            .map(|i| {
                let (w, f, a, n) = (self.get(i, 0), self.get(i, 1), self.get(i, 2), self.get(i, 3));
                format!("  d{i}: weight {w} flags {f} active {a} inactive {n}\n")
            })
            .collect()
    }
}

/// xorshift64*: a fixed sequence per seed.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

const W: [i32; 7] = [i32::MAX, i32::MAX - 1, i32::MAX / 2 + 1, 1 << 30, 65_535, 1, 0];

/// 10^6 arrivals on `DESTS` destinations with weights drawn from `weights`
/// (index into `W`); returns the number of decisions compared.
fn scenario(name: &str, seed: u64, weights: &[usize], churn: bool) -> Result<u32, String> {
    let s = Dests::new(DESTS);
    let mut rng = Rng(seed);
    for i in 0..DESTS {
        s.set(i, 0, W[weights[i % weights.len()]]);
    }
    for n in 0..ARRIVALS {
        let (c, m) = (s.c_wlc(), s.module_wlc());
        if c != m {
            return Err(format!(
                "{name}: arrival {n}: C wlc chose {c:?}, the module's wlc {m:?}\n{}",
                s.state()
            ));
        }
        if let Some(i) = c {
            s.set(i, 2, s.get(i, 2) + 1);
        }
        if !churn {
            continue;
        }
        // An active connection ends (to TIME_WAIT: inactive), an inactive
        // one expires, now and then a weight or an overload flag changes.
        let i = rng.below(DESTS as u64) as usize;
        match rng.below(16) {
            0..=5 if s.get(i, 2) > 0 => {
                s.set(i, 2, s.get(i, 2) - 1);
                s.set(i, 3, s.get(i, 3) + 1);
            }
            6..=9 if s.get(i, 3) > 0 => s.set(i, 3, s.get(i, 3) - 1),
            10 if rng.below(64) == 0 => s.set(i, 0, W[rng.below(W.len() as u64) as usize]),
            11 if rng.below(256) == 0 => s.set(i, 1, s.get(i, 1) ^ F_OVERLOAD),
            _ => {}
        }
    }
    Ok(ARRIVALS)
}

/// Counters at and beyond wlc's `int` overhead: the module's choice is the
/// exact minimum (no panic, no wrap); where wlc's arithmetic is still exact
/// (overhead <= INT_MAX), also wlc's choice.
fn limits() -> Result<u32, String> {
    let s = Dests::new(4);
    let cases: [[(i32, i32, i32); 4]; 4] = [
        // (weight, activeconns, inactconns): overheads just below INT_MAX.
        [
            (i32::MAX, 8_388_607, 255),
            (i32::MAX - 1, 8_388_606, 0),
            (1, 8_388_607, 0),
            (i32::MAX, 8_388_607, 254),
        ],
        [(i32::MAX, 0, 0), (i32::MAX, 0, 0), (i32::MAX, 0, 1), (1, 0, 0)],
        [(0, 0, 0), (i32::MAX, 1_000_000, 0), (i32::MAX, 999_999, 256), (i32::MAX, 999_999, 255)],
        // Beyond: wlc's int wraps; the exact minimum is d3 (least per weight).
        [(i32::MAX, i32::MAX, i32::MAX), (i32::MAX - 1, i32::MAX, i32::MAX), (1, 1 << 24, 0), (i32::MAX, 1 << 24, 0)],
    ];
    for (k, case) in cases.iter().enumerate() {
        for (i, &(w, a, n)) in case.iter().enumerate() {
            s.set(i, 0, w);
            s.set(i, 2, a);
            s.set(i, 3, n);
        }
        let m = s.module_wlc();
        let exact_in_c = case.iter().all(|&(_, a, n)| i64::from(a) * 256 + i64::from(n) <= i64::from(i32::MAX));
        let want = if exact_in_c { s.c_wlc() } else { Some(3) };
        if m != want {
            return Err(format!("limit case {k}: want {want:?}, the module's wlc chose {m:?}\n{}", s.state()));
        }
    }
    Ok(cases.len() as u32)
}

fn main() -> ExitCode {
    let all = [0, 1, 2, 3, 4, 5, 6];
    let runs: [(&str, u64, &[usize], bool); 4] = [
        ("every weight INT_MAX", 1, &[0], false),
        ("INT_MAX and INT_MAX-1 alternating", 2, &[0, 1], false),
        ("extreme weights, churn", 3, &all, true),
        ("INT_MAX with 0 and 1, churn", 4, &[0, 6, 0, 5], true),
    ];
    let mut decisions = 0u64;
    for (name, seed, weights, churn) in runs {
        match scenario(name, seed, weights, churn) {
            Ok(n) => {
                decisions += u64::from(n);
                println!("ok: {name}: {n} arrivals, the same choice as C wlc at each");
            }
            Err(e) => {
                eprintln!("FAIL: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    match limits() {
        Ok(n) => println!("ok: {n} limit cases (overhead at INT_MAX and beyond it)"),
        Err(e) => {
            eprintln!("FAIL: {e}");
            return ExitCode::FAILURE;
        }
    }
    println!("wlc oracle: {decisions} decisions compared, all equal");
    ExitCode::SUCCESS
}
