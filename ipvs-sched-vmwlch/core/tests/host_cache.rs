//! The kernel's per-CPU host loads (`host_cache.rs`) through the selection:
//! within a tick, decisions that see only their own new connections are
//! exactly the uncached ones; changes made elsewhere are seen from the next
//! tick; a host's destinations are summed at most once per tick.

mod common;

use std::cell::Cell;

use common::XorShift;
use vmwlch_core::oracle::{live, Snapshot};
use vmwlch_core::{select, Cluster, HostCache, HostLoad, Live, Scope, Span, View};

/// A snapshot decided through a cache, counting the counter reads.
struct Cached<'a> {
    inner: &'a Snapshot,
    cache: HostCache<'a>,
    reads: Cell<usize>,
}

impl<'a> Cached<'a> {
    fn new(inner: &'a Snapshot, entries: &'a [HostLoad], tick: usize) -> Self {
        Cached {
            inner,
            cache: HostCache::new(entries, tick, 1),
            reads: Cell::new(0),
        }
    }
}

impl Cluster for Cached<'_> {
    fn view(&self, service: usize) -> View<'_> {
        self.inner.view(service)
    }
    fn dest_count(&self) -> usize {
        self.inner.dest_count()
    }
    fn counts(&self, dest: usize) -> (i32, i32) {
        self.reads.set(self.reads.get() + 1);
        self.inner.counts(dest)
    }
    fn live(&self, dest: usize) -> Live {
        self.inner.live(dest)
    }
    fn host_load(&self, sp: &Span, sum: impl FnOnce() -> u64) -> u64 {
        self.cache.load(sp.host, sum)
    }
    fn scheduled(&self, sp: &Span) {
        self.cache.scheduled(sp.host)
    }
}

const SERVICES: usize = 6;
const HOSTS: usize = 5;

fn svc(i: usize) -> usize {
    0xffff_8880_0000_0000 + 0x1000 * (i + 1)
}

/// `SERVICES` services with 2 VMs on each of `HOSTS` hosts (co-located),
/// random counters, host weights 1 to 3.
fn colocated(seed: u64) -> Snapshot {
    let mut rng = XorShift::new(seed);
    let mut s = Snapshot::new();
    for h in 0..HOSTS {
        let dests: Vec<(usize, Live)> = (0..SERVICES * 2)
            .map(|k| {
                let (a, i) = (rng.next() % 5, rng.next() % 40);
                (
                    svc(k / 2),
                    live(1 + (rng.next() % 3) as i32, a as i32, i as i32),
                )
            })
            .collect();
        s.add_host(1 + (h as u32) % 3, &dests);
    }
    s
}

/// A new connection on `d`: inactive, as a TCP one until it is established.
fn connect(s: &mut Snapshot, d: usize) {
    s.dests[d].live.inactconns += 1;
}

#[test]
fn within_a_tick_own_decisions_match_uncached_ones() {
    for seed in 1..20u64 {
        let mut exact = colocated(seed);
        let mut cached = exact.clone();
        let entries: Vec<HostLoad> = (0..HOSTS).map(|_| HostLoad::new()).collect();
        let (mut r1, mut r2, mut pick) = (
            XorShift::new(seed),
            XorShift::new(seed),
            XorShift::new(!seed),
        );
        let mut tick = 7usize;
        for n in 0..3000 {
            if n % 250 == 0 {
                // A new tick, and connections ended meanwhile (in both).
                tick += 1;
                for _ in 0..10 {
                    let d = pick.next() as usize % exact.dests.len();
                    let l = &mut exact.dests[d].live;
                    l.activeconns = (l.activeconns - 1).max(0);
                    cached.dests[d].live = *l;
                }
            }
            let service = svc(pick.next() as usize % SERVICES);
            let a = select(&exact, service, Scope::Aggregate, &mut || r1.next());
            let b = select(
                &Cached::new(&cached, &entries, tick),
                service,
                Scope::Aggregate,
                &mut || r2.next(),
            );
            assert_eq!(a, b, "seed {seed}, decision {n}");
            let d = a.expect("a destination");
            connect(&mut exact, d);
            connect(&mut cached, d);
        }
    }
}

#[test]
fn a_change_elsewhere_is_seen_from_the_next_tick() {
    let mut s = Snapshot::new();
    let a = s.add_host(1, &[(svc(0), live(1, 0, 0)), (svc(1), live(1, 0, 0))]);
    let b = s.add_host(1, &[(svc(0), live(1, 1, 0)), (svc(1), live(1, 0, 0))]);
    let entries: Vec<HostLoad> = (0..2).map(|_| HostLoad::new()).collect();
    let mut one = || 0u32;
    // Host a is the less loaded: service 0 goes there, and the cache has
    // both hosts' sums of tick 1.
    let d = select(
        &Cached::new(&s, &entries, 1),
        svc(0),
        Scope::Aggregate,
        &mut one,
    );
    assert_eq!(d, Some(a[0]));
    // Another CPU schedules 4 connections of service 1 on host a.
    s.dests[a[1]].live.activeconns = 4;
    assert_eq!(
        select(&s, svc(0), Scope::Aggregate, &mut one),
        Some(b[0]),
        "uncached"
    );
    let c = Cached::new(&s, &entries, 1);
    assert_eq!(
        select(&c, svc(0), Scope::Aggregate, &mut one),
        Some(a[0]),
        "same tick: cached sums"
    );
    assert_eq!(c.reads.get(), 0, "no counter read within the tick");
    let c = Cached::new(&s, &entries, 2);
    assert_eq!(
        select(&c, svc(0), Scope::Aggregate, &mut one),
        Some(b[0]),
        "next tick: the change"
    );
    assert_eq!(c.reads.get(), 4, "each host summed once");
}

#[test]
fn each_host_is_summed_once_per_tick() {
    let s = colocated(3);
    let entries: Vec<HostLoad> = (0..HOSTS).map(|_| HostLoad::new()).collect();
    let mut rng = XorShift::new(5);
    for tick in 0..3 {
        let c = Cached::new(&s, &entries, tick);
        for k in 0..200 {
            select(&c, svc(k % SERVICES), Scope::Aggregate, &mut || rng.next())
                .expect("a destination");
        }
        assert_eq!(
            c.reads.get(),
            s.dests.len(),
            "tick {tick}: every destination read once"
        );
    }
}

#[test]
fn hosts_beyond_the_entries_and_the_service_scope_are_not_cached() {
    let s = colocated(4);
    let short: Vec<HostLoad> = (0..2).map(|_| HostLoad::new()).collect();
    let mut r1 = XorShift::new(9);
    let mut r2 = XorShift::new(9);
    for k in 0..100 {
        for scope in [Scope::Aggregate, Scope::Service] {
            let c = Cached::new(&s, &short, 1);
            let a = select(&s, svc(k % SERVICES), scope, &mut || r1.next());
            let b = select(&c, svc(k % SERVICES), scope, &mut || r2.next());
            assert_eq!(a, b);
            assert!(c.reads.get() > 0, "summed again");
        }
    }
}

#[test]
fn zeroed_entries_are_stale_and_loads_saturate() {
    let entries = [HostLoad::new()];
    let c = HostCache::new(&entries, 0, u64::MAX);
    assert_eq!(c.load(0, || 5), 5);
    assert_eq!(c.load(0, || unreachable!("cached")), 5);
    c.scheduled(0);
    c.scheduled(0);
    assert_eq!(c.load(0, || unreachable!("cached")), u64::MAX);
    c.scheduled(9); // beyond the entries: nothing
                    // The tick before 0 (usize::MAX) does not see tick 0's entry.
    let c = HostCache::new(&entries, usize::MAX, 1);
    assert_eq!(c.load(0, || 7), 7);
}
