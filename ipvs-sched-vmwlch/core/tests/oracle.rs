//! Property tests: `select` against the brute-force oracle on random clusters.

mod common;

use std::cmp::Ordering;

use common::{Counting, XorShift, SCOPES, SVC_A, SVC_B};
use proptest::prelude::*;
use vmwlch_core::oracle::{allowed, Dest, HostGroup, Snapshot};
use vmwlch_core::Scope;
use vmwlch_core::{cmp_ratio, mul_wide, select, Live};

/// A third service and one that has no destinations.
const SVC_C: usize = 3;
const SVC_NONE: usize = 99;
const SERVICES: [usize; 4] = [SVC_A, SVC_B, SVC_C, SVC_NONE];

fn service() -> impl Strategy<Value = usize> {
    prop_oneof![Just(SVC_A), Just(SVC_B), Just(SVC_C)]
}

/// Counters: mostly small (so that ties are common), sometimes extreme.
fn counter() -> impl Strategy<Value = i32> {
    prop_oneof![
        6 => 0..4i32,
        1 => Just(i32::MAX),
        1 => Just(-1),
        1 => Just(i32::MIN),
        1 => any::<i32>(),
    ]
}

fn dest_weight() -> impl Strategy<Value = i32> {
    prop_oneof![
        6 => 1..4i32,
        2 => Just(0),
        1 => Just(-3),
        1 => Just(i32::MAX),
        1 => Just(i32::MIN),
        1 => any::<i32>(),
    ]
}

fn host_weight() -> impl Strategy<Value = u32> {
    prop_oneof![
        6 => 1..4u32,
        2 => Just(0),
        1 => Just(u32::MAX),
        1 => Just(u32::MAX - 1),
        1 => any::<u32>(),
    ]
}

fn dest() -> impl Strategy<Value = Dest> {
    (
        service(),
        dest_weight(),
        counter(),
        counter(),
        prop::bool::weighted(0.15),
    )
        .prop_map(
            |(service, weight, activeconns, inactconns, overloaded)| Dest {
                service,
                live: Live {
                    weight,
                    activeconns,
                    inactconns,
                    overloaded,
                },
            },
        )
}

/// (host weight, implicit, malformed implicit, destinations)
type HostSpec = (u32, bool, bool, Vec<Dest>);

fn host_spec() -> impl Strategy<Value = HostSpec> {
    (
        host_weight(),
        prop::bool::weighted(0.3),
        prop::bool::weighted(0.1),
        prop::collection::vec(dest(), 0..6),
    )
}

/// A well-formed snapshot: disjoint, contiguous groups; implicit groups have
/// one destination (or, rarely, none or several).
fn build(specs: Vec<HostSpec>) -> Snapshot {
    let mut s = Snapshot::new();
    for (weight, implicit, malformed, mut dests) in specs {
        if implicit && !malformed {
            dests.truncate(1);
        }
        let start = s.add_dests(&dests) as u32;
        s.add_group(HostGroup {
            weight,
            implicit,
            start,
            len: dests.len() as u32,
        });
    }
    s
}

fn well_formed() -> impl Strategy<Value = Snapshot> {
    prop::collection::vec(host_spec(), 0..8).prop_map(build)
}

/// Arbitrary groups: ranges beyond the table, overlapping, huge, empty.
fn raw_group() -> impl Strategy<Value = HostGroup> {
    (
        host_weight(),
        prop::bool::weighted(0.3),
        prop_oneof![4 => 0..40u32, 1 => Just(u32::MAX), 1 => any::<u32>()],
        prop_oneof![4 => 0..10u32, 1 => Just(u32::MAX), 1 => any::<u32>()],
    )
        .prop_map(|(weight, implicit, start, len)| HostGroup {
            weight,
            implicit,
            start,
            len,
        })
}

fn malformed() -> impl Strategy<Value = Snapshot> {
    (
        well_formed(),
        prop::collection::vec(raw_group(), 0..4),
        any::<usize>(),
    )
        .prop_map(|(mut s, extra, rot)| {
            for g in extra {
                s.add_group(g);
            }
            s.rotate_hosts(rot);
            s
        })
}

/// Checks `select` against the oracle for every service and scope, with a
/// seeded PRNG and two adversarial constant "random" sources, and checks
/// that every allowed destination is reachable when the tie set is small.
fn check(s: &Snapshot, seed: u64) -> Result<(), TestCaseError> {
    for scope in SCOPES {
        for service in SERVICES {
            let ok = allowed(s, service, scope);
            let mut rng = XorShift::new(seed);
            let mut seeded = || rng.next();
            let mut zero = || 0u32;
            let mut max = || u32::MAX;
            let got = [
                select(s, service, scope, &mut seeded),
                select(s, service, scope, &mut zero),
                select(s, service, scope, &mut max),
            ];
            for g in got {
                match g {
                    None => {
                        prop_assert!(ok.is_empty(), "{scope:?} {service}: None, allowed {ok:?}")
                    }
                    Some(d) => {
                        prop_assert!(ok.contains(&d), "{scope:?} {service}: {d} not in {ok:?}")
                    }
                }
            }
            if !ok.is_empty() && ok.len() <= 4 {
                let mut seen = vec![false; s.dests.len()];
                for _ in 0..40 * ok.len() * ok.len() {
                    if let Some(d) = select(s, service, scope, &mut seeded) {
                        seen[d] = true;
                    }
                }
                for &d in &ok {
                    prop_assert!(seen[d], "{scope:?} {service}: {d} of {ok:?} never chosen");
                }
            }
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn select_matches_oracle(s in well_formed(), seed in any::<u64>()) {
        check(&s, seed)?;
    }

    #[test]
    fn select_matches_oracle_on_malformed_groups(s in malformed(), seed in any::<u64>()) {
        check(&s, seed)?;
    }

    /// On disjoint groups, a decision reads each destination's counters at
    /// most once in each first pass (every destination of a weighted host
    /// under the aggregate scope, only the service's under the service
    /// scope) and each destination of the service at most once in each
    /// second pass. There is a second round of passes only if the host
    /// chosen first had no eligible destination of the service.
    #[test]
    fn counters_read_at_most_once_per_pass(s in well_formed(), seed in any::<u64>()) {
        for scope in SCOPES {
            for service in SERVICES {
                let c = Counting::new(&s);
                let mut rng = XorShift::new(seed);
                let _ = select(&c, service, scope, &mut || rng.next());
                // Whether some weighted host with a destination of the
                // service has none eligible: only then may a recheck happen.
                let recheck = s.hosts().iter().any(|g| {
                    !g.implicit && g.weight > 0 && {
                        let own: Vec<&Dest> = s.dests[g.start as usize..(g.start + g.len) as usize]
                            .iter()
                            .filter(|d| d.service == service)
                            .collect();
                        !own.is_empty()
                            && own.iter().all(|d| d.live.weight <= 0 || d.live.overloaded)
                    }
                });
                let rounds = if recheck { 2 } else { 1 };
                for (d, x) in s.dests.iter().enumerate() {
                    let counts = c.counts.borrow()[d];
                    let reads = c.reads.borrow()[d];
                    let own = x.service == service;
                    prop_assert!(counts <= rounds, "dest {d}: counters summed {counts} times");
                    if !own {
                        prop_assert_eq!(reads, 0, "dest {} of another service read", d);
                        if scope == Scope::Service {
                            prop_assert_eq!(counts, 0, "dest {} of another service summed", d);
                        }
                    } else {
                        // Second pass, plus (recheck) the checking first
                        // pass and its second pass; implicit hosts once per
                        // first pass.
                        let most = if recheck { 3 } else { 1 };
                        prop_assert!(reads <= most, "dest {d} read {reads} times (at most {most})");
                    }
                }
            }
        }
    }

    #[test]
    fn mul_wide_is_exact(a in any::<u64>(), b in any::<u64>()) {
        let p = (a as u128) * (b as u128);
        prop_assert_eq!(mul_wide(a, b), ((p >> 64) as u64, p as u64));
    }

    /// Values below 2^32 take the 64-bit products; at the edge too.
    #[test]
    fn cmp_ratio_is_exact_on_small_values(
        n1 in prop_oneof![0..=u32::MAX as u64, Just(u32::MAX as u64), Just(1u64 << 32)],
        d1 in 1..=u32::MAX as u64,
        n2 in 0..=u32::MAX as u64,
        d2 in prop_oneof![1..=u32::MAX as u64, Just(1u64 << 32)],
    ) {
        let want = ((n1 as u128) * (d2 as u128)).cmp(&((n2 as u128) * (d1 as u128)));
        prop_assert_eq!(cmp_ratio(n1, d1, n2, d2), want);
    }

    #[test]
    fn cmp_ratio_is_exact(n1 in any::<u64>(), d1 in 1..=u64::MAX, n2 in any::<u64>(), d2 in 1..=u64::MAX) {
        let want = ((n1 as u128) * (d2 as u128)).cmp(&((n2 as u128) * (d1 as u128)));
        prop_assert_eq!(cmp_ratio(n1, d1, n2, d2), want);
    }
}

#[test]
fn mul_wide_edges() {
    for a in [0, 1, 2, u32::MAX as u64, 1 << 32, u64::MAX - 1, u64::MAX] {
        for b in [0, 1, 3, u32::MAX as u64, (1 << 32) + 1, u64::MAX] {
            let p = (a as u128) * (b as u128);
            assert_eq!(mul_wide(a, b), ((p >> 64) as u64, p as u64), "{a} * {b}");
        }
    }
    assert_eq!(cmp_ratio(u64::MAX, u64::MAX, 1, 1), Ordering::Equal);
    assert_eq!(cmp_ratio(u64::MAX, u64::MAX - 1, 1, 1), Ordering::Greater);
}
