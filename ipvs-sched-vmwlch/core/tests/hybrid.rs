//! The design's motivating case: two services sharing physical hosts.

mod common;

use common::{act, SVC_A, SVC_B};
use vmwlch_core::oracle::{allowed, Snapshot};
use vmwlch_core::{select, Scope};

/// Sensor ingest (A) and web dashboard (B) share two hosts. h1 runs a busy
/// dashboard VM and a light ingest VM; h2 only a moderately busy ingest VM.
#[test]
fn aggregate_and_service_scopes_pick_different_hosts() {
    let mut s = Snapshot::new();
    let h1 = s.add_host(1, &[(SVC_A, act(1, 1)), (SVC_B, act(1, 10))]);
    let h2 = s.add_host(1, &[(SVC_A, act(1, 3)), (SVC_B, act(1, 0))]);
    // vmwlc: L_A(h1) = 256 < L_A(h2) = 768 -> the ingest VM on h1.
    assert_eq!(select(&s, SVC_A, Scope::Service, &mut || 0), Some(h1[0]));
    // vmwlch: L(h1) = 256 + 2560 > L(h2) = 768 -> the ingest VM on h2.
    assert_eq!(select(&s, SVC_A, Scope::Aggregate, &mut || 0), Some(h2[0]));
    // The dashboard: both scopes prefer h2 (its dashboard VM is idle, h2 lighter).
    assert_eq!(select(&s, SVC_B, Scope::Service, &mut || 0), Some(h2[1]));
    assert_eq!(select(&s, SVC_B, Scope::Aggregate, &mut || 0), Some(h2[1]));
    assert_eq!(allowed(&s, SVC_A, Scope::Service), vec![h1[0]]);
    assert_eq!(allowed(&s, SVC_A, Scope::Aggregate), vec![h2[0]]);
}

/// The reference workload: 5 hosts, 20 VMs, two services; drained host and
/// a quiesced VM are avoided, host weights respected.
#[test]
fn reference_workload() {
    let mut s = Snapshot::new();
    let mut vms = Vec::new();
    for (h, w) in [(0, 4), (1, 4), (2, 2), (3, 0), (4, 1)] {
        let dests: Vec<_> = (0..4)
            .map(|i| {
                let svc = if i % 2 == 0 { SVC_A } else { SVC_B };
                (svc, act(1, 10 * (h + 1) + i))
            })
            .collect();
        vms.push(s.add_host(w, &dests));
    }
    // L = sum over 4 VMs of 256*(10(h+1)+i) = 256*(40(h+1)+6); ratio by W:
    // h0: 46*256/4, h1: 86*256/4, h2: 126*256/2, h3 drained, h4: 206*256/1.
    assert_eq!(
        select(&s, SVC_A, Scope::Aggregate, &mut || 0),
        Some(vms[0][0])
    );
    assert_eq!(
        select(&s, SVC_B, Scope::Aggregate, &mut || 0),
        Some(vms[0][1])
    );
    // Quiesce both ingest VMs of h0: h1 is next for ingest, h0 still for B.
    s.dests[vms[0][0]].live.weight = 0;
    s.dests[vms[0][2]].live.overloaded = true;
    assert_eq!(
        select(&s, SVC_A, Scope::Aggregate, &mut || 0),
        Some(vms[1][0])
    );
    assert_eq!(
        select(&s, SVC_B, Scope::Aggregate, &mut || 0),
        Some(vms[0][1])
    );
    // A drained host is never chosen, even when idle.
    for &d in &vms[3] {
        s.dests[d].live.activeconns = 0;
    }
    for svc in [SVC_A, SVC_B] {
        for scope in [Scope::Service, Scope::Aggregate] {
            let d = select(&s, svc, scope, &mut || 0).unwrap();
            assert!(!vms[3].contains(&d));
            assert!(allowed(&s, svc, scope).contains(&d));
        }
    }
}
