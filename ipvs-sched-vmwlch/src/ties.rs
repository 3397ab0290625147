// SPDX-License-Identifier: GPL-2.0

//! Ties of the selection: the least ratio of a scan and the candidates
//! that share it, and the uniform draw among them.
//!
//! Part of `select.rs` (compiled with it into the kernel module and into
//! `vmwlch-core`, under the same rules: `core` only, no allocation, no
//! panic, no `unsafe`). Written for the cost of emulation as much as for
//! real CPUs: ties are collected as bits in a register rather than drawn
//! one by one, and the final draw has no branch that depends on it.

use super::cmp_ratio;
use core::cmp::Ordering;

/// `floor(r * k / 2^32)`: uniform on `[0, k)` up to a bias of `2^-32`.
#[inline(always)]
fn uniform(r: u32, k: u32) -> u32 {
    // r < 2^32 and k < 2^32: the product does not overflow.
    (u64::from(r).wrapping_mul(u64::from(k)) >> 32) as u32
}

/// The least ratio seen so far and the candidates that have it, by their
/// position in the scan. Ties are shared evenly: positions below 64 are
/// kept as bits and the winner is drawn among all tied candidates at the
/// end, with one random number; positions from 64 on (rare) are sampled as
/// they come (reservoir sampling, one random number each), and stand for
/// their share in the final draw.
#[derive(Clone, Copy)]
pub(super) struct Least {
    /// Numerator of the least ratio.
    load: u64,
    /// Denominator of the least ratio; 0 until a candidate is offered.
    weight: u64,
    /// Tied positions below 64.
    bits: u64,
    /// Number of tied positions (all of them).
    n: u32,
    /// Number of tied positions from 64 on.
    over: u32,
    /// The one of those that reservoir sampling keeps.
    kept: usize,
}

impl Least {
    /// No candidate yet (an infinite ratio).
    pub(super) const NONE: Least = Least {
        load: 1,
        weight: 0,
        bits: 0,
        n: 0,
        over: 0,
        kept: 0,
    };

    /// Offers the candidate at position `pos` of ratio `load / weight`
    /// (`weight` positive and below `2^32`, as host and destination weights
    /// are); `bit` is `1 << pos`, or 0 from position 64 on (the scan shifts
    /// it along: a shift by a variable is slow to emulate).
    #[inline(always)]
    pub(super) fn offer<R: FnMut() -> u32>(
        &mut self,
        load: u64,
        weight: u64,
        pos: usize,
        bit: u64,
        rng: &mut R,
    ) {
        // Against NONE: load * 0 < 1 * weight, always. Weights are below
        // 2^32, so the 64-bit products are exact when both loads are too
        // (the usual case, decided by two branches).
        if (load | self.load) >> 32 == 0 {
            let (c, b) = (
                load.wrapping_mul(self.weight),
                self.load.wrapping_mul(weight),
            );
            if c < b {
                self.take(load, weight, pos, bit);
            } else if c == b {
                self.tie(pos, bit, rng);
            }
            return;
        }
        match cmp_ratio(load, weight, self.load, self.weight) {
            Ordering::Less => self.take(load, weight, pos, bit),
            Ordering::Equal => self.tie(pos, bit, rng),
            Ordering::Greater => {}
        }
    }

    /// A new least ratio.
    #[inline(always)]
    fn take(&mut self, load: u64, weight: u64, pos: usize, bit: u64) {
        self.load = load;
        self.weight = weight;
        self.bits = bit;
        self.n = 1;
        // From position 64 on, the first of a new least ratio is the one
        // kept (a draw among one).
        self.over = u32::from(bit == 0);
        self.kept = pos;
    }

    /// One more candidate of the least ratio.
    #[inline(always)]
    fn tie<R: FnMut() -> u32>(&mut self, pos: usize, bit: u64, rng: &mut R) {
        // At most one per position, and positions are indices of slices
        // of u32-indexed tables: no wrap in practice, and none would panic.
        self.n = self.n.wrapping_add(1);
        if bit != 0 {
            self.bits |= bit;
        } else {
            (self.over, self.kept) = tie_beyond(self.over, self.kept, pos, rng);
        }
    }

    /// The position of the chosen candidate, if any was offered.
    #[inline(always)]
    pub(super) fn winner<R: FnMut() -> u32>(&self, rng: &mut R) -> Option<usize> {
        if self.weight == 0 {
            return None;
        }
        let n = self.n;
        let j = if n > 1 { uniform(rng(), n) } else { 0 };
        let below = n.wrapping_sub(self.over);
        if j >= below {
            return Some(self.kept);
        }
        // The j-th set bit: clear the j lowest ones. The loop runs a count
        // that does not depend on the draw (below: the number of ties,
        // the same decision after decision) and clears conditionally: a
        // loop of j steps would be mispredicted at nearly every decision.
        let mut bits = self.bits;
        for k in 1..below {
            let keep = 0u64.wrapping_sub(u64::from(k > j));
            bits &= bits.wrapping_sub(1) | keep;
        }
        Some(bits.trailing_zeros() as usize)
    }
}

/// A tie at position `pos` >= 64 of a [`Least`] whose `over` and `kept` are
/// given: reservoir sampling. Out of line and by value, so that the scan
/// keeps the common state in registers.
#[cold]
#[inline(never)]
fn tie_beyond<R: FnMut() -> u32>(over: u32, kept: usize, pos: usize, rng: &mut R) -> (u32, usize) {
    let over = over.saturating_add(1);
    if uniform(rng(), over) == 0 {
        (over, pos)
    } else {
        (over, kept)
    }
}
