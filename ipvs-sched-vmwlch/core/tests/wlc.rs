//! With every host implicit (an empty host map), both scopes choose like
//! IPVS `wlc`: a destination of minimal overhead/weight among the service's
//! destinations with positive weight that are not overloaded.

mod common;

use common::{act, XorShift, SCOPES, SVC_A, SVC_B};
use proptest::prelude::*;
use vmwlch_core::oracle::{live, wlc_allowed, Snapshot};
use vmwlch_core::{select, Live};

fn any_live() -> impl Strategy<Value = Live> {
    let c = || prop_oneof![6 => 0..5i32, 1 => Just(i32::MAX), 1 => Just(-7), 1 => any::<i32>()];
    let w = prop_oneof![6 => 1..5i32, 1 => Just(0), 1 => Just(-1), 1 => Just(i32::MAX), 1 => any::<i32>()];
    (w, c(), c(), prop::bool::weighted(0.1)).prop_map(
        |(weight, activeconns, inactconns, overloaded)| Live {
            weight,
            activeconns,
            inactconns,
            overloaded,
        },
    )
}

fn implicit_only() -> impl Strategy<Value = Snapshot> {
    prop::collection::vec((prop::bool::ANY, any_live()), 0..24).prop_map(|ds| {
        let mut s = Snapshot::new();
        for (a, l) in ds {
            s.add_implicit(if a { SVC_A } else { SVC_B }, l);
        }
        s
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1024))]

    #[test]
    fn implicit_hosts_choose_like_wlc(s in implicit_only(), seed in any::<u64>()) {
        for scope in SCOPES {
            for svc in [SVC_A, SVC_B] {
                let want = wlc_allowed(&s, svc);
                let mut rng = XorShift::new(seed);
                for _ in 0..4 {
                    let got = select(&s, svc, scope, &mut || rng.next());
                    match got {
                        None => prop_assert!(want.is_empty()),
                        Some(d) => prop_assert!(want.contains(&d), "{d} not in {want:?}"),
                    }
                }
                prop_assert_eq!(vmwlch_core::oracle::allowed(&s, svc, scope), want);
            }
        }
    }
}

#[test]
fn wlc_example() {
    // overhead/weight: 512/2 = 256, 256/1 = 256, 300/2 = 150 (best), overloaded, weight 0.
    let mut s = Snapshot::new();
    s.add_implicit(SVC_A, act(2, 2));
    s.add_implicit(SVC_A, act(1, 1));
    let best = s.add_implicit(SVC_A, live(2, 1, 44));
    s.add_implicit(
        SVC_A,
        Live {
            overloaded: true,
            ..act(100, 0)
        },
    );
    s.add_implicit(SVC_A, act(0, 0));
    s.add_implicit(SVC_B, act(5, 0));
    for scope in SCOPES {
        assert_eq!(select(&s, SVC_A, scope, &mut || 0), Some(best));
    }
}
