//! Ties are shared evenly, never "always the first"; `rng` is only called on ties.

mod common;

use std::cell::Cell;

use common::{act, histogram, XorShift, SCOPES, SVC_A, SVC_B};
use vmwlch_core::oracle::{live, Snapshot};
use vmwlch_core::{select, Live, Scope};

const N: usize = 40_000;

/// Every count within `share +- 1%` of `N`.
fn assert_even(counts: &[usize], who: &[usize], share: f64) {
    for &d in who {
        let f = counts[d] as f64 / N as f64;
        assert!(
            (f - share).abs() <= 0.01,
            "dest {d}: {f} (want {share}), {counts:?}"
        );
    }
    let total: usize = who.iter().map(|&d| counts[d]).sum();
    assert_eq!(total, N, "only tied destinations may be chosen");
}

#[test]
fn four_equal_hosts_share_evenly() {
    let mut s = Snapshot::new();
    let mut picks = Vec::new();
    for _ in 0..4 {
        // Equal host load 3*256+10 (Aggregate) and 256+10 (Service).
        let d = s.add_host(2, &[(SVC_A, live(1, 1, 10)), (SVC_B, act(1, 2))]);
        picks.push(d[0]);
    }
    for scope in SCOPES {
        for seed in [1, 2, 3] {
            let counts = histogram(&s, SVC_A, scope, N, seed);
            assert_even(&counts, &picks, 0.25);
        }
    }
}

#[test]
fn four_equal_dests_in_one_host_share_evenly() {
    let mut s = Snapshot::new();
    s.add_host(1, &[(SVC_A, act(1, 9))]);
    let d = s.add_host(
        3,
        &[
            (SVC_A, act(2, 2)),
            (SVC_A, act(1, 1)),
            (SVC_B, act(1, 0)),
            (SVC_A, act(4, 4)),
            (SVC_A, live(3, 3, 0)),
            (SVC_A, act(1, 2)),
        ],
    );
    let tied = [d[0], d[1], d[3], d[4]];
    for scope in SCOPES {
        let counts = histogram(&s, SVC_A, scope, N, 99);
        assert_even(&counts, &tied, 0.25);
    }
}

#[test]
fn tied_hosts_then_tied_dests() {
    // Two tied hosts, each with two tied dests: each dest gets 1/4.
    let mut s = Snapshot::new();
    let h1 = s.add_host(1, &[(SVC_A, act(1, 1)), (SVC_A, act(1, 1))]);
    // L = 512 + 256 + 256 (an overloaded VM still counts), W = 2.
    let h2 = s.add_host(
        2,
        &[
            (SVC_A, act(2, 2)),
            (SVC_A, act(1, 1)),
            (
                SVC_A,
                Live {
                    overloaded: true,
                    ..act(1, 1)
                },
            ),
        ],
    );
    for scope in SCOPES {
        let counts = histogram(&s, SVC_A, scope, N, 5);
        assert_even(&counts, &[h1[0], h1[1], h2[0], h2[1]], 0.25);
    }
}

#[test]
fn three_tied_hosts_of_different_weights() {
    // L/W = 512/1 = 1024/2 = 1536/3: equal ratios, so 1/3 each.
    let mut s = Snapshot::new();
    let a = s.add_host(1, &[(SVC_A, act(1, 2))]);
    let b = s.add_host(2, &[(SVC_A, act(1, 4))]);
    let c = s.add_host(3, &[(SVC_A, act(1, 6))]);
    for scope in SCOPES {
        let counts = histogram(&s, SVC_A, scope, N, 11);
        assert_even(&counts, &[a[0], b[0], c[0]], 1.0 / 3.0);
    }
}

#[test]
fn not_always_the_first() {
    let mut s = Snapshot::new();
    let a = s.add_host(1, &[(SVC_A, act(1, 0))]);
    let b = s.add_host(1, &[(SVC_A, act(1, 0))]);
    let mut rng = XorShift::new(1234);
    let mut seen = [false; 2];
    for _ in 0..64 {
        let d = select(&s, SVC_A, Scope::Aggregate, &mut || rng.next()).unwrap();
        seen[usize::from(d == b[0])] = true;
        assert!(d == a[0] || d == b[0]);
    }
    assert_eq!(seen, [true, true]);
    // The draw picks among the tied in scan order: 0 gives the first, the
    // largest value the last.
    assert_eq!(select(&s, SVC_A, Scope::Service, &mut || 0), Some(a[0]));
    assert_eq!(
        select(&s, SVC_A, Scope::Service, &mut || u32::MAX),
        Some(b[0])
    );
}

#[test]
fn rng_is_called_only_on_ties() {
    let mut s = Snapshot::new();
    s.add_host(
        1,
        &[(SVC_A, act(1, 3)), (SVC_A, act(1, 1)), (SVC_B, act(1, 0))],
    );
    let best = s.add_host(2, &[(SVC_A, act(2, 1)), (SVC_A, act(1, 2))]);
    s.add_implicit(SVC_A, act(1, 9));
    s.add_host(0, &[(SVC_A, act(1, 0))]);
    let calls = Cell::new(0);
    for scope in SCOPES {
        let got = select(&s, SVC_A, scope, &mut || {
            calls.set(calls.get() + 1);
            0
        });
        assert_eq!(got, Some(best[0]));
    }
    assert_eq!(calls.get(), 0);
    s.add_host(1, &[(SVC_A, act(1, 7)), (SVC_A, act(1, 7))]);
    // Tied dests on a losing host: destinations are only compared on the
    // chosen host, so no call.
    let got = select(&s, SVC_A, Scope::Service, &mut || {
        calls.set(calls.get() + 1);
        0
    });
    assert_eq!(got, Some(best[0]));
    assert_eq!(calls.get(), 0);
    // Two tied dests on the chosen host: exactly one call.
    let mut t = Snapshot::new();
    let pair = t.add_host(1, &[(SVC_A, act(1, 2)), (SVC_A, act(1, 2))]);
    t.add_host(1, &[(SVC_A, act(1, 9))]);
    let got = select(&t, SVC_A, Scope::Aggregate, &mut || {
        calls.set(calls.get() + 1);
        0
    });
    assert_eq!(got, Some(pair[0]));
    assert_eq!(calls.get(), 1);
}

#[test]
fn connections_spread_by_host_weight() {
    // Each new connection becomes active on the chosen dest. Hosts of weight
    // 1:2:3 (two VMs each) end up with loads 1:2:3, whatever the VM weights.
    let mut s = Snapshot::new();
    let hosts = [
        s.add_host(1, &[(SVC_A, act(1, 0)), (SVC_A, act(5, 0))]),
        s.add_host(2, &[(SVC_A, act(1, 0)), (SVC_A, act(1, 0))]),
        s.add_host(3, &[(SVC_A, act(3, 0)), (SVC_A, act(1, 0))]),
    ];
    let mut rng = XorShift::new(77);
    for _ in 0..6000 {
        let d = select(&s, SVC_A, Scope::Aggregate, &mut || rng.next()).unwrap();
        s.dests[d].live.activeconns += 1;
    }
    let per_host: Vec<i32> = hosts
        .iter()
        .map(|h| h.iter().map(|&d| s.dests[d].live.activeconns).sum())
        .collect();
    assert_eq!(per_host, vec![1000, 2000, 3000]);
    // Within the weight-3 host the VMs split 3:1.
    assert_eq!(s.dests[hosts[2][0]].live.activeconns, 2250);
    assert_eq!(s.dests[hosts[2][1]].live.activeconns, 750);
}

/// More tied candidates than the selection keeps as bits (it samples those
/// beyond 64 as they come): still an even share, for hosts and for the
/// destinations of one host.
#[test]
fn many_ties_share_evenly() {
    let mut s = Snapshot::new();
    let mut hosts = Vec::new();
    for i in 0..97 {
        // Host weights 1 and 2 with loads in the same ratio: all tied.
        let w = 1 + i % 2;
        hosts.push(s.add_host(w, &[(SVC_A, act(1, w as i32))])[0]);
    }
    // A losing host that lists a tied destination count of its own.
    s.add_host(1, &[(SVC_A, act(1, 5))]);
    for scope in SCOPES {
        let counts = histogram(&s, SVC_A, scope, N * 2, 11);
        let want = (N * 2) as f64 / 97.0;
        for &d in &hosts {
            let c = counts[d] as f64;
            assert!(
                (c - want).abs() <= want * 0.2,
                "host dest {d}: {c} (want {want})"
            );
        }
        assert_eq!(hosts.iter().map(|&d| counts[d]).sum::<usize>(), N * 2);
    }
    let mut t = Snapshot::new();
    let vms = t.add_host(1, &vec![(SVC_A, act(2, 2)); 83]);
    t.add_host(1, &[(SVC_A, act(1, 10_000))]);
    let counts = histogram(&t, SVC_A, Scope::Aggregate, N * 2, 12);
    let want = (N * 2) as f64 / 83.0;
    for &d in &vms {
        let c = counts[d] as f64;
        assert!((c - want).abs() <= want * 0.2, "vm {d}: {c} (want {want})");
    }
    // The ones kept as bits and the ones sampled share alike.
    let (bits, sampled): (Vec<usize>, Vec<usize>) = vms.iter().partition(|&&d| d - vms[0] < 64);
    let mean = |v: &[usize]| v.iter().map(|&d| counts[d]).sum::<usize>() as f64 / v.len() as f64;
    assert!(
        (mean(&bits) / mean(&sampled) - 1.0).abs() < 0.05,
        "{} vs {}",
        mean(&bits),
        mean(&sampled)
    );
}

/// Exactly as many tied candidates as are kept as bits, and one more.
#[test]
fn ties_at_the_bit_limit_share_evenly() {
    for n in [64, 65] {
        let mut s = Snapshot::new();
        let vms = s.add_host(1, &vec![(SVC_A, act(1, 0)); n]);
        let counts = histogram(&s, SVC_A, Scope::Aggregate, N, 5 + n as u64);
        let share = 1.0 / n as f64;
        for &d in &vms {
            let f = counts[d] as f64 / N as f64;
            assert!(
                (f - share).abs() <= share * 0.3,
                "{n} tied: dest {d}: {f} (want {share})"
            );
        }
    }
}
