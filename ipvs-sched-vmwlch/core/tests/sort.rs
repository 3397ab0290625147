//! The module's heapsort (src/sort.rs, compiled here as it is in the kernel)
//! against the standard library's sort.

#[path = "../../src/sort.rs"]
#[allow(dead_code)]
mod sort;

use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn sorts_like_std(mut v in proptest::collection::vec(any::<u16>(), 0..300)) {
        let mut want = v.clone();
        want.sort();
        sort::sort(&mut v);
        prop_assert_eq!(v, want);
    }

    #[test]
    fn sorts_by_key_like_std(mut v in proptest::collection::vec((0u8..8, any::<u32>()), 0..300)) {
        // Unstable: compare the keys' order and the multiset, not positions.
        let mut want = v.clone();
        want.sort();
        sort::sort_by_key(&mut v, |p| p.0);
        prop_assert!(v.windows(2).all(|w| w[0].0 <= w[1].0));
        let mut got = v.clone();
        got.sort();
        prop_assert_eq!(got, want);
    }
}

#[test]
fn large_and_adversarial_inputs() {
    for n in [0usize, 1, 2, 3, 65_536, 150_001] {
        let asc: Vec<u32> = (0..n as u32).collect();
        let mut desc: Vec<u32> = asc.iter().rev().copied().collect();
        sort::sort(&mut desc);
        assert_eq!(desc, asc);
        let mut same = vec![7u32; n];
        sort::sort(&mut same);
        assert!(same.iter().all(|&x| x == 7));
    }
}
