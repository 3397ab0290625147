//! The etcd cluster source against a real etcd (Debian's `etcd`, started
//! per test): revisions in, invalid ones skipped, the applied revision
//! published, etcd lost and back.

use std::time::{Duration, Instant};

use cluster_etcd::testing::Etcd;
use cluster_etcd::Store;
use keepalive::config::EtcdSource as EtcdCfg;
use keepalive::metrics::{Metrics, C, G};
use keepalive::source::{ClusterSource, Desired, EtcdSource};
use tokio::sync::mpsc::UnboundedReceiver;

const A: &str = "services:\n  - protocol: tcp\n    address: 10.0.0.1\n    port: 80\n    dests:\n      - address: 192.168.1.10\n";
const B: &str = "services:\n  - protocol: tcp\n    address: 10.0.0.1\n    port: 80\n    dests:\n      - address: 192.168.1.11\n";
const BAD: &str = "services:\n  - protocol: tcp\n    address: 10.0.0.1\n    port: 99999\n";
const P: &str = "/ka";

async fn recv(rx: &mut UnboundedReceiver<Desired>, secs: u64) -> Option<Desired> {
    tokio::time::timeout(Duration::from_secs(secs), rx.recv())
        .await
        .ok()
        .flatten()
}

fn dest_of(d: &Desired) -> String {
    let d = d.as_ref().expect("managed");
    let s = d.services.as_ref().expect("services");
    s[0].1[0].addr.to_string()
}

/// The published state of director `lb1`: (revision, ok).
async fn published(store: &Store) -> Option<(i64, bool)> {
    let f = store.fleet().await.ok()?;
    let m = f.directors.into_iter().find(|m| m.name == "lb1")?;
    m.state.map(|s| (s.revision, s.ok))
}

/// Wait (at most `secs` seconds) until `f` holds.
async fn until(secs: u64, what: &str, mut f: impl AsyncFnMut() -> bool) {
    let t = Instant::now();
    while !f().await {
        assert!(t.elapsed() < Duration::from_secs(secs), "timed out: {what}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn revisions_publish_outage_and_catch_up() {
    let mut etcd = Etcd::start().expect("etcd");
    let store = Store::connect(&[etcd.endpoint()], P).await.expect("store");
    let r1 = store.put_cluster(A).await.expect("put");
    let cfg = EtcdCfg {
        endpoints: vec![etcd.endpoint()],
        prefix: P.into(),
        name: Some("lb1".into()),
    };
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let metrics = Metrics::new();
    let mut src = EtcdSource::start(&cfg, tx, metrics.clone());
    let none = vec![];

    // The stored revision arrives; applying it publishes it.
    let d1 = recv(&mut rx, 20).await.expect("first revision");
    assert_eq!(dest_of(&d1), "192.168.1.10");
    assert_eq!(metrics.gauge(G::SourceConnected, &none), 1);
    assert_eq!(metrics.gauge(G::SourceRevision, &none), r1);
    src.applied(&d1, None);
    until(10, "lb1 published r1", async || {
        published(&store).await == Some((r1, true))
    })
    .await;

    // An invalid revision (written around ipvsctl's check) is skipped.
    let bad = store.put_cluster(BAD).await.expect("put bad");
    assert!(
        recv(&mut rx, 2).await.is_none(),
        "an invalid revision is not sent"
    );
    assert_eq!(metrics.gauge(G::SourceRevision, &none), r1);
    assert_eq!(metrics.counter(C::SourceInvalid, &none), 1);
    let r2 = store.put_cluster(B).await.expect("put");
    assert!(r2 > bad);
    let d2 = recv(&mut rx, 20).await.expect("next valid revision");
    assert_eq!(dest_of(&d2), "192.168.1.11");
    src.applied(&d2, Some("EPERM"));
    until(10, "lb1 published r2 failed", async || {
        published(&store).await == Some((r2, false))
    })
    .await;

    // etcd gone: disconnected, nothing new sent (the last state stays).
    etcd.kill();
    until(30, "disconnected", async || {
        metrics.gauge(G::SourceConnected, &none) == 0
    })
    .await;
    assert!(recv(&mut rx, 1).await.is_none());

    // Written while this director is cut off; caught up when it is back,
    // and published.
    etcd.restart_admin_only().expect("restart");
    let admin = Store::connect(&[etcd.admin_endpoint()], P)
        .await
        .expect("store");
    let r3 = admin.put_cluster(A).await.expect("put while cut off");
    assert!(recv(&mut rx, 1).await.is_none(), "cut off");
    etcd.restart().expect("restart");
    let d3 = recv(&mut rx, 40).await.expect("caught up");
    assert_eq!(dest_of(&d3), "192.168.1.10");
    assert_eq!(metrics.gauge(G::SourceConnected, &none), 1);
    assert_eq!(metrics.gauge(G::SourceRevision, &none), r3);
    src.applied(&d3, None);
    until(30, "lb1 published r3", async || {
        published(&store).await == Some((r3, true))
    })
    .await;
    drop(src);
}

/// A backend that fails while `fail` is set and otherwise applies nothing.
struct Fake(std::sync::Arc<std::sync::atomic::AtomicBool>);

impl keepalive::ipvs::IpvsBackend for Fake {
    fn apply(
        &mut self,
        _desired: Option<&ipvs_cluster::Desired>,
        _ov: &keepalive::ipvs::Overrides,
    ) -> anyhow::Result<()> {
        if self.0.load(std::sync::atomic::Ordering::SeqCst) {
            anyhow::bail!("fake apply failure");
        }
        Ok(())
    }
    fn sync_role(
        &mut self,
        _role: keepalive::ipvs::SyncRole,
        _iface: &str,
        _syncid: u8,
    ) -> anyhow::Result<()> {
        Ok(())
    }
    fn sync_start(
        &mut self,
        _role: keepalive::ipvs::SyncRole,
        _iface: &str,
        _syncid: u8,
    ) -> anyhow::Result<()> {
        Ok(())
    }
    fn sync_stop(&mut self) -> anyhow::Result<()> {
        Ok(())
    }
}

/// The whole path in the daemon (no VRRP instance, a fake IPVS backend):
/// each stored revision is applied and the result published.
#[tokio::test]
async fn daemon_publishes_each_applied_revision() {
    let etcd = Etcd::start().expect("etcd");
    let store = Store::connect(&[etcd.endpoint()], P).await.expect("store");
    let r1 = store.put_cluster(A).await.expect("put");
    let text = format!(
        "cluster_source:\n  etcd:\n    endpoints: [{}]\n    prefix: {P}\n    name: lb1\n",
        etcd.endpoint()
    );
    let cfg = keepalive::config::Config::parse(&text, "k.yaml").expect("config");
    let fail = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let backend = Box::new(Fake(fail.clone()));
    let daemon = keepalive::daemon::Daemon::new(cfg, "k.yaml".into(), backend).expect("daemon");
    let body = async {
        until(20, "lb1 applied r1", async || {
            published(&store).await == Some((r1, true))
        })
        .await;
        fail.store(true, std::sync::atomic::Ordering::SeqCst);
        let r2 = store.put_cluster(B).await.expect("put");
        until(20, "lb1 failed r2", async || {
            published(&store).await == Some((r2, false))
        })
        .await;
        // The retry succeeds: published as applied.
        fail.store(false, std::sync::atomic::Ordering::SeqCst);
        until(20, "lb1 applied r2 on retry", async || {
            published(&store).await == Some((r2, true))
        })
        .await;
    };
    tokio::select! {
        r = daemon.run() => panic!("the daemon stopped: {r:?}"),
        () = body => {}
    }
}
