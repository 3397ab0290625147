// SPDX-License-Identifier: GPL-2.0

//! Native (user-space) benchmark of one scheduling decision: the module's
//! selection code (`../src/select.rs`, the same source the kernel module
//! compiles) against wlc's loop (`wlc.c`, compiled by gcc like the kernel),
//! on destinations laid out like `struct ip_vs_dest`. Built and run by
//! `scripts/bench-sched.sh`; it complements the in-kernel measurement, which
//! runs under QEMU's software emulation and so weighs instructions as the
//! emulator does, not as a CPU does.

#![allow(dead_code)]

#[path = "../src/select.rs"]
mod select;

use select::{Cluster, HostCache, HostLoad, Live, Scope, Span, View};
use std::hint::black_box;
use std::sync::atomic::Ordering;
use std::time::Instant;

#[path = "wlc_c.rs"]
mod wlc_c;

use wlc_c::*;

/// Offsets in wlc.c's `struct dest`, which has the layout of 6.12's
/// `struct ip_vs_dest` at these fields (checked against wlc.c at start):
/// constants, as the module's generated offsets are.
const OFF_WEIGHT: usize = 60;
const OFF_ACTIVE: usize = 432;
const OFF_FLAGS: usize = 52;

/// The module's snapshot, reduced to what a decision reads: per service a
/// view found by binary search, the spans, members and destination table.
/// `PAIRED`: the counters read by one 8-byte load (the module's former way).
struct Snapshot<const PAIRED: bool> {
    views: Vec<(usize, (usize, usize))>,
    spans: Vec<Span>,
    members: Vec<u32>,
    dests: Vec<*mut u8>,
    /// The module's per-CPU host loads (one CPU here), at a fixed tick:
    /// every decision after the first of the tick reads them. Empty: no
    /// cache, host loads summed in every decision.
    loads: Vec<HostLoad>,
}

/// A 4-byte field of a destination: a relaxed atomic load, as the module
/// reads them (atomic_read()).
fn field(d: *mut u8, off: usize) -> i32 {
    dest_field(d, off).load(Ordering::Relaxed)
}

impl<const PAIRED: bool> Cluster for Snapshot<PAIRED> {
    #[inline(always)]
    fn view(&self, service: usize) -> View<'_> {
        match self.views.binary_search_by_key(&service, |v| v.0) {
            Ok(i) => {
                let (a, b) = self.views[i].1;
                View {
                    spans: &self.spans[a..b],
                    members: &self.members,
                    solo: &[],
                }
            }
            Err(_) => View::EMPTY,
        }
    }

    #[inline(always)]
    fn dest_count(&self) -> usize {
        self.dests.len()
    }

    #[inline(always)]
    fn counts(&self, dest: usize) -> (i32, i32) {
        let Some(&d) = self.dests.get(dest) else {
            return (0, 0);
        };
        if PAIRED {
            // SAFETY: the two counters are one aligned 8-byte word of a
            // live destination (wlc.c's layout). Single-threaded here.
            let x = unsafe { d.add(OFF_ACTIVE).cast::<u64>().read_volatile() };
            return (x as i32, (x >> 32) as i32);
        }
        (field(d, OFF_ACTIVE), field(d, OFF_ACTIVE + 4))
    }

    #[inline(always)]
    fn host_load(&self, sp: &Span, sum: impl FnOnce() -> u64) -> u64 {
        HostCache::new(&self.loads, 1, 1).load(sp.host, sum)
    }

    #[inline(always)]
    fn scheduled(&self, sp: &Span) {
        HostCache::new(&self.loads, 1, 1).scheduled(sp.host)
    }

    #[inline(always)]
    fn live(&self, dest: usize) -> Live {
        let Some(&d) = self.dests.get(dest) else {
            return Live {
                weight: 0,
                activeconns: 0,
                inactconns: 0,
                overloaded: true,
            };
        };
        let (activeconns, inactconns) = self.counts(dest);
        Live {
            weight: field(d, OFF_WEIGHT),
            activeconns,
            inactconns,
            overloaded: field(d, OFF_FLAGS) as u32 & 2 != 0,
        }
    }
}

/// SplitMix64's output function.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// One `vmwlch` decision, with the module's tie-breaking random source
/// (snapshot.rs's TieRandom: the two halves of the mixed seed, then SplitMix64).
#[inline(never)]
fn vmwlch<const PAIRED: bool>(s: &Snapshot<PAIRED>, service: usize, seed: u64) -> *mut u8 {
    let mut state = 0u64;
    let mut spare: Option<u32> = None;
    let mut rng = || {
        if let Some(r) = spare.take() {
            return r;
        }
        let z = if state == 0 {
            let z = mix(seed);
            state = z | 1;
            z
        } else {
            state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
            mix(state)
        };
        spare = Some(z as u32);
        (z >> 32) as u32
    };
    select::select(s, service, Scope::Aggregate, &mut rng)
        .and_then(|i| s.dests.get(i).copied())
        .unwrap_or(std::ptr::null_mut())
}

/// Nanoseconds per decision of each kind (wlc, vmwlch, vmwlch with the
/// paired load), as [`measure3`] times them.
fn measure(s: &Snapshot<false>, p: &Snapshot<true>, svc: *mut u8, iters: u32) -> [f64; 3] {
    let service = svc as usize;
    measure3(
        // SAFETY: svc is the service bench_service built.
        |_| unsafe { bench_wlc(black_box(svc)) },
        |seed| vmwlch(black_box(s), black_box(service), seed),
        |seed| vmwlch(black_box(p), black_box(service), seed),
        iters,
    )
}

/// Nanoseconds per decision of `a`, `b`, `c` (each given a seed): rounds in
/// the order a b c a b c c b a after an untimed warm-up of each, so that
/// drift affects all alike.
fn measure3(
    a: impl Fn(u64) -> *mut u8,
    b: impl Fn(u64) -> *mut u8,
    c: impl Fn(u64) -> *mut u8,
    iters: u32,
) -> [f64; 3] {
    let mut seed = 0x1234_5678u64;
    let mut t = [0f64; 3];
    for (round, kind) in [0usize, 1, 2, 0, 1, 2, 2, 1, 0].into_iter().enumerate() {
        let t0 = Instant::now();
        for _ in 0..iters {
            seed = seed.wrapping_add(0x9e37_79b9_7f4a_7c15);
            black_box(match kind {
                0 => a(seed),
                1 => b(seed),
                _ => c(seed),
            });
        }
        if round >= 3 {
            t[kind] += t0.elapsed().as_nanos() as f64;
        }
    }
    t.map(|x| x / f64::from(2 * iters))
}

/// A real cluster's shape: `services` services of `vms` VMs each, all
/// mapped on the same `hosts` hosts (every host runs `vms / hosts` VMs of
/// every service). One service is timed: wlc walks its `vms` destinations;
/// vmwlch's first pass needs every host's load over all services
/// (`services * vms` destinations), summed per decision without the
/// module's per-CPU host loads, read from them with it.
fn colocated(services: usize, vms: usize, hosts: usize, conns: usize, iters: u32) {
    let per = vms / hosts; // VMs of one service on one host
    let mut own = vec![std::ptr::null_mut(); vms];
    let mut others = vec![std::ptr::null_mut(); (services - 1) * vms];
    // SAFETY: each vector has room for the count asked.
    let (svc, _) = unsafe {
        (
            bench_service(vms as i32, own.as_mut_ptr()),
            bench_service(others.len() as i32, others.as_mut_ptr()),
        )
    };
    assert!(!svc.is_null() && own.iter().chain(&others).all(|d| !d.is_null()));
    // The table by host: the timed service's VMs there, then the others'.
    let (mut dests, mut members, mut spans) = (Vec::new(), Vec::new(), Vec::new());
    let mut rest = others.iter();
    for h in 0..hosts {
        let start = dests.len() as u32;
        for &d in &own[h * per..(h + 1) * per] {
            members.push(dests.len() as u32);
            dests.push(d);
        }
        dests.extend(rest.by_ref().take((services - 1) * per));
        spans.push(Span {
            weight: 1 + (h as u32) % 4,
            host: h as u32,
            start,
            end: dests.len() as u32,
            own_start: (h * per) as u32,
            own_end: ((h + 1) * per) as u32,
        });
    }
    let n = dests.len();
    for (i, &d) in dests.iter().enumerate() {
        let c = conns / n + usize::from(i < conns % n);
        // SAFETY: OFF_ACTIVE is activeconns of a live destination.
        unsafe { d.add(OFF_ACTIVE).cast::<i32>().write_volatile(c as i32) };
    }
    let summed = Snapshot::<false> {
        views: vec![(svc as usize, (0, hosts))],
        spans,
        members,
        dests,
        loads: Vec::new(),
    };
    let cached = Snapshot::<false> {
        views: summed.views.clone(),
        spans: summed.spans.clone(),
        members: summed.members.clone(),
        dests: summed.dests.clone(),
        loads: (0..hosts).map(|_| HostLoad::new()).collect(),
    };
    let service = svc as usize;
    let [w, v, c] = measure3(
        // SAFETY: svc is the service bench_service built.
        |_| unsafe { bench_wlc(black_box(svc)) },
        |seed| vmwlch(black_box(&summed), black_box(service), seed),
        |seed| vmwlch(black_box(&cached), black_box(service), seed),
        iters,
    );
    println!(
        "{n:>6} {hosts:>6} {:<18} {v:>6.1} ns {w:>6.1} ns {:>6.2}   {c:>6.1} ns {:>6.2}",
        format!("{services}x{vms} co-located"),
        v / w,
        c / w
    );
}

fn main() {
    // SAFETY: plain constants of wlc.c.
    let off = unsafe {
        [
            bench_off_weight,
            bench_off_active,
            bench_off_flags,
            bench_off_inact,
        ]
    };
    assert_eq!(
        off,
        [OFF_WEIGHT, OFF_ACTIVE, OFF_FLAGS, OFF_ACTIVE + 4],
        "wlc.c's layout no longer matches the offsets here"
    );
    println!(
        "{:>6} {:>6} {:<18} {:>9} {:>9} {:>6}   {:>9} {:>6}",
        "dests", "hosts", "load", "vmwlch", "wlc", "ratio", "8B-load", "ratio"
    );
    for (n, per, conns, iters) in [
        (20usize, 4usize, 200usize, 2_000_000u32),
        (1000, 20, 1200, 40_000),
    ] {
        let mut dests = vec![std::ptr::null_mut(); n];
        // SAFETY: dests has room for n pointers.
        let svc = unsafe { bench_service(n as i32, dests.as_mut_ptr()) };
        assert!(!svc.is_null() && dests.iter().all(|d| !d.is_null()));
        let hosts = n / per;
        let spans: Vec<Span> = (0..hosts)
            .map(|h| {
                let (a, b) = ((h * per) as u32, ((h + 1) * per) as u32);
                Span {
                    weight: 1 + (h as u32) % 4,
                    host: h as u32,
                    start: a,
                    end: b,
                    own_start: a,
                    own_end: b,
                }
            })
            .collect();
        let s = Snapshot::<false> {
            views: vec![(svc as usize, (0, hosts))],
            spans: spans.clone(),
            members: (0..n as u32).collect(),
            dests: dests.clone(),
            loads: Vec::new(),
        };
        let p = Snapshot::<true> {
            views: s.views.clone(),
            spans,
            members: s.members.clone(),
            dests: dests.clone(),
            loads: Vec::new(),
        };
        for (label, total) in [
            ("idle (all tied)".to_string(), 0),
            (format!("{conns} connections"), conns),
        ] {
            // Connections spread evenly, as a balancing scheduler leaves them.
            for (i, &d) in dests.iter().enumerate() {
                let c = total / n + usize::from(i < total % n);
                // SAFETY: OFF_ACTIVE is activeconns of a live destination.
                unsafe { d.add(OFF_ACTIVE).cast::<i32>().write_volatile(c as i32) };
            }
            let [w, v, vp] = measure(&s, &p, svc, iters);
            println!(
                "{n:>6} {hosts:>6} {label:<18} {v:>6.1} ns {w:>6.1} ns {:>6.2}   {vp:>6.1} ns {:>6.2}",
                v / w,
                vp / w
            );
        }
    }
    println!();
    println!(
        "{:>6} {:>6} {:<18} {:>9} {:>9} {:>6}   {:>9} {:>6}",
        "dests", "hosts", "services x VMs", "summed", "wlc", "ratio", "cached", "ratio"
    );
    colocated(50, 20, 10, 2000, 100_000);
}
