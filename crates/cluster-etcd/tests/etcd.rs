//! Against a real etcd (Debian's `etcd` binary, started per test).

use std::time::Duration;

use cluster_etcd::testing::Etcd;
use cluster_etcd::{DirectorState, Publisher, Store, WatchEvent};
use tokio::sync::mpsc::Receiver;

const FILE: &str =
    "services:\n  - protocol: tcp\n    address: 10.0.0.1\n    port: 80\n    scheduler: wlc\n";
const FILE2: &str = "services: []\n";
const P: &str = "/test/ipvs";

async fn next(rx: &mut Receiver<WatchEvent>, what: &str) -> WatchEvent {
    match tokio::time::timeout(Duration::from_secs(40), rx.recv()).await {
        Ok(Some(e)) => e,
        Ok(None) => panic!("watch ended waiting for {what}"),
        Err(_) => panic!("no watch event within 40 s waiting for {what}"),
    }
}

/// The next revision reported, skipping connection events.
async fn next_cluster(rx: &mut Receiver<WatchEvent>) -> (Option<String>, i64) {
    loop {
        if let WatchEvent::Cluster { stored, revision } = next(rx, "a revision").await {
            return (stored.map(|s| s.text), revision);
        }
    }
}

async fn until_connected(rx: &mut Receiver<WatchEvent>, want: bool) {
    loop {
        if let WatchEvent::Connected(c, _) = next(rx, "a connection change").await {
            if c == want {
                return;
            }
        }
    }
}

#[tokio::test]
async fn store_and_read_back() {
    let etcd = Etcd::start().expect("etcd");
    let s = Store::connect(&[etcd.endpoint()], P)
        .await
        .expect("connect");
    assert_eq!(s.get_cluster().await.expect("get").0, None);
    let rev = s.put_cluster(FILE).await.expect("put");
    let (stored, _) = s.get_cluster().await.expect("get");
    let stored = stored.expect("stored");
    assert_eq!(stored.text, FILE, "the text comes back as written");
    assert_eq!(stored.revision, rev);
}

#[tokio::test]
async fn unreachable_says_what_to_do() {
    // A port nobody listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("port")
        .port();
    let ep = format!("http://127.0.0.1:{port}");
    let s = Store::connect(std::slice::from_ref(&ep), P)
        .await
        .expect("lazy connect");
    let e = s
        .get_cluster()
        .await
        .expect_err("nothing listens")
        .to_string();
    assert!(e.contains(&format!("cannot reach etcd at {ep}")), "{e}");
    assert!(e.contains("is etcd running?"), "{e}");
}

#[tokio::test]
async fn fleet_shows_published_director_until_revoked() {
    let etcd = Etcd::start().expect("etcd");
    let s = Store::connect(&[etcd.endpoint()], P)
        .await
        .expect("connect");
    let rev = s.put_cluster(FILE).await.expect("put");
    let p = Publisher::spawn(vec![etcd.endpoint()], P.into(), "d1".into());
    p.publish(DirectorState::now(rev, Some("boom".into())));
    let mut seen = None;
    for _ in 0..50 {
        let f = s.fleet().await.expect("fleet");
        if let Some(m) = f.directors.first() {
            seen = Some((f.revision, m.clone()));
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let (frev, m) = seen.expect("the director shows up within 5 s");
    assert_eq!(frev, Some(rev));
    assert_eq!(m.name, "d1");
    let st = m.state.expect("JSON state");
    assert_eq!(
        (st.revision, st.ok, st.error.as_deref()),
        (rev, false, Some("boom"))
    );
    p.close(Duration::from_secs(5)).await;
    let f = s.fleet().await.expect("fleet");
    assert!(f.directors.is_empty(), "revoked lease took the key: {f:?}");
}

#[tokio::test]
async fn lease_expires_without_keepalive() {
    let etcd = Etcd::start().expect("etcd");
    let s = Store::connect(&[etcd.endpoint()], P)
        .await
        .expect("connect");
    let lease = s.grant(2).await.expect("grant");
    s.publish(lease, "d2", &DirectorState::now(1, None))
        .await
        .expect("publish");
    assert_eq!(s.fleet().await.expect("fleet").directors.len(), 1);
    tokio::time::sleep(Duration::from_secs(4)).await;
    assert!(s.fleet().await.expect("fleet").directors.is_empty());
}

#[tokio::test]
async fn watch_follows_revisions_across_a_restart() {
    let mut etcd = Etcd::start().expect("etcd");
    let s = Store::connect(&[etcd.endpoint()], P)
        .await
        .expect("connect");
    let r1 = s.put_cluster(FILE).await.expect("put");
    let mut rx = cluster_etcd::watch(vec![etcd.endpoint()], P.into());
    until_connected(&mut rx, true).await;
    assert_eq!(next_cluster(&mut rx).await, (Some(FILE.into()), r1));
    let r2 = s.put_cluster(FILE2).await.expect("put");
    assert_eq!(next_cluster(&mut rx).await, (Some(FILE2.into()), r2));

    etcd.kill();
    until_connected(&mut rx, false).await;
    // Written while the watch is cut off, and compacted: found by the
    // re-read when the watch is back.
    etcd.restart_admin_only().expect("restart");
    let admin = Store::connect(&[etcd.admin_endpoint()], P)
        .await
        .expect("connect");
    let r3 = admin.put_cluster(FILE).await.expect("put while cut off");
    assert!(r3 > r2);
    admin.compact(r3).await.expect("compact");
    etcd.restart().expect("restart");
    assert_eq!(next_cluster(&mut rx).await, (Some(FILE.into()), r3));
    let r4 = s.put_cluster(FILE2).await.expect("put after restart");
    assert_eq!(next_cluster(&mut rx).await, (Some(FILE2.into()), r4));
}
