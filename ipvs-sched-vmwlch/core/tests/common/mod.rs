//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::cell::RefCell;

use vmwlch_core::oracle::{live, Snapshot};
use vmwlch_core::{Cluster, Live, Scope, View};

/// Service keys used by the tests (look like kernel pointers).
pub const SVC_A: usize = 0xffff_8880_0000_1000;
/// Second service key.
pub const SVC_B: usize = 0xffff_8880_0000_2000;

/// xorshift32: a tiny deterministic PRNG.
pub struct XorShift(pub u32);

impl XorShift {
    /// A generator from any seed (0 is mapped to a non-zero state).
    pub fn new(seed: u64) -> Self {
        let s = (seed ^ (seed >> 32)) as u32;
        XorShift(if s == 0 { 0x9e37_79b9 } else { s })
    }
    /// Next value.
    pub fn next(&mut self) -> u32 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        self.0 = x;
        x
    }
}

/// Wraps a snapshot and counts the calls of `counts()` and `live()` per
/// destination.
pub struct Counting<'a> {
    pub inner: &'a Snapshot,
    pub counts: RefCell<Vec<u32>>,
    pub reads: RefCell<Vec<u32>>,
}

impl<'a> Counting<'a> {
    pub fn new(inner: &'a Snapshot) -> Self {
        Counting {
            inner,
            counts: RefCell::new(vec![0; inner.dests.len()]),
            reads: RefCell::new(vec![0; inner.dests.len()]),
        }
    }
}

impl Cluster for Counting<'_> {
    fn view(&self, service: usize) -> View<'_> {
        self.inner.view(service)
    }
    fn dest_count(&self) -> usize {
        self.inner.dest_count()
    }
    fn counts(&self, dest: usize) -> (i32, i32) {
        self.counts.borrow_mut()[dest] += 1;
        self.inner.counts(dest)
    }
    fn live(&self, dest: usize) -> Live {
        self.reads.borrow_mut()[dest] += 1;
        self.inner.live(dest)
    }
}

/// `live()` with `activeconns` only.
pub fn act(weight: i32, activeconns: i32) -> Live {
    live(weight, activeconns, 0)
}

/// Runs `n` decisions with a seeded PRNG and counts the chosen destinations.
pub fn histogram(s: &Snapshot, service: usize, scope: Scope, n: usize, seed: u64) -> Vec<usize> {
    let mut rng = XorShift::new(seed);
    let mut next = || rng.next();
    let mut counts = vec![0usize; s.dests.len()];
    for _ in 0..n {
        let d = vmwlch_core::select(s, service, scope, &mut next).expect("a destination");
        counts[d] += 1;
    }
    counts
}

/// Both scopes.
pub const SCOPES: [Scope; 2] = [Scope::Service, Scope::Aggregate];
