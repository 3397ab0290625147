//! Extreme inputs: no panic, and still the right answer.

mod common;

use common::{act, XorShift, SCOPES, SVC_A, SVC_B};
use vmwlch_core::oracle::{allowed, live, HostGroup, Snapshot};
use vmwlch_core::{load, overhead, select, Cluster, Live, Scope, Span, View};

fn max_live() -> Live {
    live(i32::MAX, i32::MAX, i32::MAX)
}

fn agree(s: &Snapshot, service: usize) {
    for scope in SCOPES {
        let ok = allowed(s, service, scope);
        let mut rng = XorShift::new(7);
        for _ in 0..16 {
            match select(s, service, scope, &mut || rng.next()) {
                None => assert!(ok.is_empty(), "{scope:?}: None but {ok:?}"),
                Some(d) => assert!(ok.contains(&d), "{scope:?}: {d} not in {ok:?}"),
            }
        }
    }
}

#[test]
fn overhead_clamps_and_never_overflows() {
    assert_eq!(overhead(&live(1, -5, -5)), 0);
    assert_eq!(overhead(&live(1, i32::MIN, 3)), 0);
    assert_eq!(overhead(&live(1, -1, 300)), 44);
    assert_eq!(overhead(&live(1, 2, 3)), 515);
    assert_eq!(overhead(&live(1, 0, i32::MIN)), 0);
    assert_eq!(
        overhead(&max_live()),
        (i32::MAX as u64) * 256 + i32::MAX as u64
    );
    assert_eq!(overhead(&live(1, i32::MIN, i32::MIN)), 0);
}

#[test]
fn load_is_exact_then_saturates() {
    assert_eq!(load(0, 0), 0);
    assert_eq!(load(2, 3), 515);
    assert_eq!(load(-1, 300), 44);
    assert_eq!(load(1, -300), 0);
    // The fast path's edge: 2^55 - 1 is exact, 2^55 takes the other path.
    let e = (1i64 << 55) - 1;
    assert_eq!(load(e, e), ((e as u64) << 8) + e as u64);
    assert_eq!(load(e + 1, 0), i64::MAX as u64);
    assert_eq!(load(0, e + 1), 1u64 << 55);
    // Beyond: saturates, never wraps.
    assert_eq!(load(i64::MAX, i64::MAX), i64::MAX as u64);
    assert_eq!(load(i64::MAX, i64::MIN), 0);
    assert_eq!(load(i64::MIN, i64::MAX), 0);
    assert_eq!(load(i64::MIN, i64::MIN), 0);
}

#[test]
fn empty_inputs() {
    let s = Snapshot::new();
    for scope in SCOPES {
        assert_eq!(select(&s, SVC_A, scope, &mut || 0), None);
    }
    // Groups but no destinations; groups of length 0; a drained host.
    let mut s = Snapshot::new();
    s.add_group(HostGroup {
        weight: 1,
        implicit: false,
        start: 0,
        len: 0,
    });
    s.add_group(HostGroup {
        weight: 5,
        implicit: true,
        start: 3,
        len: 9,
    });
    s.add_host(0, &[(SVC_A, act(1, 0))]);
    s.add_host(7, &[]);
    for scope in SCOPES {
        assert_eq!(select(&s, SVC_A, scope, &mut || 0), None);
    }
}

#[test]
fn ranges_beyond_the_table_are_clamped() {
    let mut s = Snapshot::new();
    let a = s.add_host(1, &[(SVC_A, act(1, 5))]);
    let b = s.add_host(1, &[(SVC_A, act(1, 3))]);
    for (start, len) in [
        (u32::MAX, u32::MAX),
        (u32::MAX, 1),
        (1, u32::MAX),
        (2, 5),
        (0, u32::MAX),
    ] {
        for implicit in [false, true] {
            s.add_group(HostGroup {
                weight: u32::MAX,
                implicit,
                start,
                len,
            });
        }
    }
    agree(&s, SVC_A);
    agree(&s, SVC_B);
    // The huge groups include dest 1 (overhead 768): weight u32::MAX makes it best.
    assert_eq!(
        select(&s, SVC_A, Scope::Aggregate, &mut || u32::MAX),
        Some(b[0])
    );
    let _ = a;
}

#[test]
fn max_counters_and_weights() {
    let mut s = Snapshot::new();
    // Two hosts of huge weight fully loaded; one nearly empty one of weight 1.
    s.add_host(u32::MAX, &[(SVC_A, max_live()), (SVC_B, max_live())]);
    s.add_host(u32::MAX - 1, &[(SVC_A, max_live()), (SVC_B, max_live())]);
    let light = s.add_host(1, &[(SVC_A, live(i32::MAX, 0, 1))]);
    s.add_implicit(SVC_A, max_live());
    s.add_implicit(SVC_A, live(1, i32::MAX, i32::MAX));
    agree(&s, SVC_A);
    agree(&s, SVC_B);
    // Host ratios (Aggregate): ~2^41/2^32 = 512 vs ~2^41/(2^32-1) vs 1/1: light wins.
    for scope in SCOPES {
        assert_eq!(select(&s, SVC_A, scope, &mut || 0), Some(light[0]));
    }
}

#[test]
fn extreme_ratios_differing_in_the_last_bit() {
    // L/W with L = 2^40 - 1 vs 2^40, W = u32::MAX: the cross products differ by W only.
    let mut s = Snapshot::new();
    let a = s.add_host(u32::MAX, &[(SVC_A, live(1, i32::MAX, i32::MAX))]);
    let b = s.add_host(u32::MAX, &[(SVC_A, live(1, i32::MAX, i32::MAX - 1))]);
    assert!(overhead(&s.dests[b[0]].live) < overhead(&s.dests[a[0]].live));
    for scope in SCOPES {
        assert_eq!(select(&s, SVC_A, scope, &mut || 0), Some(b[0]));
        assert_eq!(select(&s, SVC_A, scope, &mut || u32::MAX), Some(b[0]));
    }
}

#[test]
fn thousands_of_destinations() {
    let mut s = Snapshot::new();
    let mut rng = XorShift::new(42);
    let mut expected_host = Vec::new();
    for h in 0..50u32 {
        let dests: Vec<(usize, Live)> = (0..100)
            .map(|_| {
                let svc = if rng.next() % 3 == 0 { SVC_B } else { SVC_A };
                let a = (rng.next() % 1000) as i32 + if h == 17 { 0 } else { 1_000_000 };
                (
                    svc,
                    live((rng.next() % 100) as i32, a, (rng.next() % 10_000) as i32),
                )
            })
            .collect();
        expected_host.push(s.add_host(1 + rng.next() % 3, &dests));
    }
    for _ in 0..500 {
        s.add_implicit(SVC_A, live(1, i32::MAX, i32::MAX));
    }
    assert!(s.dests.len() >= 5000);
    agree(&s, SVC_A);
    agree(&s, SVC_B);
    // Host 17 is far lighter than any other, under both scopes.
    for scope in SCOPES {
        let d = select(&s, SVC_A, scope, &mut || 0).unwrap();
        assert!(expected_host[17].contains(&d));
    }
}

/// A cluster whose destinations are synthesised on the fly, too many to store.
struct Huge {
    spans: Vec<Span>,
    members: Vec<u32>,
    count: usize,
}

impl Cluster for Huge {
    fn view(&self, _service: usize) -> View<'_> {
        View {
            spans: &self.spans,
            members: &self.members,
            solo: &[],
        }
    }
    fn dest_count(&self) -> usize {
        self.count
    }
    fn counts(&self, dest: usize) -> (i32, i32) {
        let l = self.live(dest);
        (l.activeconns, l.inactconns)
    }
    fn live(&self, dest: usize) -> Live {
        if dest == 0 {
            live(1, 0, 0)
        } else {
            max_live()
        }
    }
}

#[test]
fn host_load_saturates_instead_of_overflowing() {
    // 2^25 destinations at ~2^39 each: the sum exceeds 2^64 and saturates.
    let n = (1usize << 25) + 2;
    let c = Huge {
        spans: vec![
            Span {
                weight: 1,
                host: 0,
                start: 1,
                end: u32::MAX,
                own_start: 1,
                own_end: 2,
            },
            Span {
                weight: 2,
                host: 1,
                start: 0,
                end: u32::MAX,
                own_start: 0,
                own_end: 2,
            },
        ],
        members: vec![0, 1],
        count: n,
    };
    // Both hosts saturate at u64::MAX: the one of weight 2 has the lower
    // ratio, and its best destination is dest 0.
    assert_eq!(select(&c, SVC_A, Scope::Aggregate, &mut || 0), Some(0));
    assert_eq!(
        load(i64::from(i32::MAX) << 25, i64::from(i32::MAX) << 25),
        u64::MAX >> 1
    );
}
