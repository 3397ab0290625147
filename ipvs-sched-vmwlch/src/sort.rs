// SPDX-License-Identifier: GPL-2.0

//! In-place heapsort for the module's tables (snapshot segments, member
//! lists).
//!
//! Not `core`'s `sort_unstable`: its quicksort keeps a small-sort scratch
//! buffer on the stack, about 2 KB per recursion level, and recurses about
//! log2(n) deep. Sorting some 20,000 entries overflowed a 16 KB kernel stack
//! (seen with the benchmark kernel; the test kernel's KASAN doubles the
//! stack size, which hid it). Heapsort needs no recursion and a constant,
//! small stack, with an O(n log n) worst case: what the kernel's own
//! lib/sort.c does.

/// Sorts `v` so that no element is `less` than the one before it.
pub(crate) fn sort_by<T>(v: &mut [T], mut less: impl FnMut(&T, &T) -> bool) {
    let n = v.len();
    let mut i = n / 2;
    while i > 0 {
        i -= 1;
        sift_down(v, i, n, &mut less);
    }
    let mut end = n;
    while end > 1 {
        end -= 1;
        v.swap(0, end);
        sift_down(v, 0, end, &mut less);
    }
}

/// Sorts `v` by the key `f` gives each element.
pub(crate) fn sort_by_key<T, K: Ord>(v: &mut [T], mut f: impl FnMut(&T) -> K) {
    sort_by(v, |a, b| f(a) < f(b));
}

/// Sorts `v` by its elements' order.
pub(crate) fn sort<T: Ord>(v: &mut [T]) {
    sort_by(v, |a, b| a < b);
}

/// Moves `v[root]` down the max-heap `v[..end]` until both children are
/// not greater.
fn sift_down<T>(v: &mut [T], mut root: usize, end: usize, less: &mut impl FnMut(&T, &T) -> bool) {
    let end = end.min(v.len());
    loop {
        // root < end <= v.len() <= isize::MAX: no overflow.
        let mut child = 2 * root + 1;
        if child >= end {
            return;
        }
        if child + 1 < end && less(&v[child], &v[child + 1]) {
            child += 1;
        }
        if !less(&v[root], &v[child]) {
            return;
        }
        v.swap(root, child);
        root = child;
    }
}
