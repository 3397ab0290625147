//! `apply`/`plan`/`save --etcd` and `status` against a real etcd (Debian's
//! `etcd`, started per test by `cluster_etcd::testing`).

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Output};
use std::time::Duration;

use cluster_etcd::testing::Etcd;
use cluster_etcd::{DirectorState, Store};

const GOOD: &str = "# the web tier\nservices:\n  - protocol: tcp\n    address: 10.0.0.1\n    port: 80\n    scheduler: wlc\n    dests:\n      - address: 192.168.1.10\n";
const NEXT: &str = "services:\n  - protocol: tcp\n    address: 10.0.0.1\n    port: 80\n    scheduler: wlc\n    dests:\n      - address: 192.168.1.11\n";
const BAD: &str = "services:\n  - protocol: tcp\n    address: 10.0.0.1\n    port: 99999\n";

/// A temporary file removed on drop.
struct TempFile(PathBuf);
impl TempFile {
    fn new(name: &str, text: &str) -> TempFile {
        let p = std::env::temp_dir().join(format!("ipvsctl-etcd-{}-{name}", std::process::id()));
        let mut f = std::fs::File::create(&p).expect("temp file");
        f.write_all(text.as_bytes()).expect("write");
        TempFile(p)
    }
}
impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ipvsctl"))
        .args(args)
        .output()
        .expect("run ipvsctl")
}

fn out(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

#[test]
fn apply_save_round_trip_and_invalid_refused() {
    let etcd = Etcd::start().expect("etcd");
    let ep = etcd.endpoint();
    let good = TempFile::new("good.yaml", GOOD);
    let bad = TempFile::new("bad.yaml", BAD);
    let g = good.0.to_str().expect("utf-8");
    let b = bad.0.to_str().expect("utf-8");

    // Invalid before anything is stored: exit 2, the key stays absent.
    let o = run(&["apply", "--etcd", &ep, "--prefix", "/t", "-f", b]);
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    assert!(err(&o).contains("invalid cluster file"), "{}", err(&o));
    let rt = rt();
    let store = rt
        .block_on(Store::connect(std::slice::from_ref(&ep), "/t"))
        .expect("store");
    assert_eq!(rt.block_on(store.get_cluster()).expect("get").0, None);

    let o = run(&["apply", "--etcd", &ep, "--prefix", "/t", "-f", g]);
    assert!(o.status.success(), "{}", err(&o));
    assert!(out(&o).starts_with("stored as revision "), "{}", out(&o));
    let stored = rt
        .block_on(store.get_cluster())
        .expect("get")
        .0
        .expect("stored");

    // Invalid after: exit 2, the stored revision unchanged.
    let o = run(&["apply", "--etcd", &ep, "--prefix", "/t", "-f", b]);
    assert_eq!(o.status.code(), Some(2));
    let after = rt
        .block_on(store.get_cluster())
        .expect("get")
        .0
        .expect("stored");
    assert_eq!(after, stored);

    let o = run(&["save", "--etcd", &ep, "--prefix", "/t"]);
    assert!(o.status.success(), "{}", err(&o));
    assert_eq!(out(&o), GOOD, "save gives back the text as written");
}

#[test]
fn plan_against_stored_state() {
    let etcd = Etcd::start().expect("etcd");
    let ep = etcd.endpoint();
    let good = TempFile::new("plan-good.yaml", GOOD);
    let next = TempFile::new("plan-next.yaml", NEXT);
    let g = good.0.to_str().expect("utf-8");
    let n = next.0.to_str().expect("utf-8");
    // Nothing stored: everything is new.
    let o = run(&["plan", "--etcd", &ep, "-f", g]);
    assert!(o.status.success(), "{}", err(&o));
    assert!(out(&o).contains("192.168.1.10"), "{}", out(&o));
    assert!(run(&["apply", "--etcd", &ep, "-f", g]).status.success());
    // The same file: no change; the next one: one dest out, one in.
    let o = run(&["plan", "--etcd", &ep, "-f", g]);
    assert!(!out(&o).contains("192.168.1.10"), "{}", out(&o));
    let o = run(&["plan", "--etcd", &ep, "-f", n]);
    let plan = out(&o);
    assert!(
        plan.contains("192.168.1.11") && plan.contains("192.168.1.10"),
        "{plan}"
    );
    // plan stores nothing.
    let o = run(&["save", "--etcd", &ep]);
    assert_eq!(out(&o), GOOD);
}

#[test]
fn status_shows_directors_until_their_lease_goes() {
    let etcd = Etcd::start().expect("etcd");
    let ep = etcd.endpoint();
    let good = TempFile::new("status.yaml", GOOD);
    assert!(run(&[
        "apply",
        "--etcd",
        &ep,
        "-f",
        good.0.to_str().expect("utf-8")
    ])
    .status
    .success());
    let rt = rt();
    let store = rt
        .block_on(Store::connect(std::slice::from_ref(&ep), "/ipvs"))
        .expect("store");
    let rev = rt
        .block_on(store.get_cluster())
        .expect("get")
        .0
        .expect("stored")
        .revision;
    let lease = rt.block_on(store.grant(30)).expect("lease");
    rt.block_on(store.publish(lease, "lb1", &DirectorState::now(rev, None)))
        .expect("publish");
    rt.block_on(store.publish(
        lease,
        "lb2",
        &DirectorState::now(rev - 1, Some("EPERM".into())),
    ))
    .expect("publish");

    let o = run(&["status", "--etcd", &ep]);
    assert!(o.status.success(), "{}", err(&o));
    let text = out(&o);
    assert!(text.contains(&format!("cluster revision {rev}")), "{text}");
    assert!(
        text.lines()
            .any(|l| l.starts_with("lb1") && l.ends_with("ok")),
        "{text}"
    );
    assert!(
        text.lines()
            .any(|l| l.starts_with("lb2") && l.contains("error: EPERM")),
        "{text}"
    );

    let o = run(&["status", "--etcd", &ep, "-o", "json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    assert_eq!(v["revision"], rev);
    assert_eq!(v["directors"][0]["name"], "lb1");
    assert_eq!(v["directors"][0]["state"]["revision"], rev);

    rt.block_on(store.revoke(lease)).expect("revoke");
    std::thread::sleep(Duration::from_millis(200));
    let o = run(&["status", "--etcd", &ep, "-o", "json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    assert_eq!(
        v["directors"],
        serde_json::json!([]),
        "lease revoked: no directors"
    );
}

#[test]
fn unreachable_etcd_is_exit_1_with_advice() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("port")
        .port();
    let ep = format!("http://127.0.0.1:{port}");
    let o = run(&["save", "--etcd", &ep]);
    assert_eq!(o.status.code(), Some(1));
    assert!(err(&o).contains("cannot reach etcd at"), "{}", err(&o));
    assert!(err(&o).contains("is etcd running?"), "{}", err(&o));
    assert!(err(&o).contains("Connection refused"), "{}", err(&o));
    let o = run(&["save", "--etcd", "http://bad host:x"]);
    assert_eq!(o.status.code(), Some(2), "a bad endpoint is a usage error");
    let o = run(&["save", "--etcd", &ep, "--prefix", "relative"]);
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    let o = run(&["status", "--prefix", "/x"]);
    assert_eq!(o.status.code(), Some(2), "--prefix needs --etcd");
}
