//! The keepalive binary as an operator runs it: `--pid-file`, `keepalive
//! drain` and `keepalive resume`, with a configuration that needs no
//! interface, no IPVS and no privileges (no VRRP instance, no services).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

const KEEPALIVE: &str = env!("CARGO_BIN_EXE_keepalive");

/// A fresh directory for one test.
fn tempdir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("ka-cli-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("temp dir");
    d
}

fn keepalive(args: &[&str]) -> Output {
    Command::new(KEEPALIVE)
        .args(args)
        .output()
        .expect("run keepalive")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The daemon, stopped (SIGKILL) if a test fails before stopping it.
struct Daemon {
    child: Child,
    log: PathBuf,
}

impl Daemon {
    fn start(dir: &Path, pid_file: &Path) -> Daemon {
        let cfg = dir.join("keepalive.yaml");
        std::fs::write(&cfg, "vrrp: []\n").expect("config");
        let log = dir.join("daemon.log");
        let child = Command::new(KEEPALIVE)
            .arg("-c")
            .arg(&cfg)
            .arg("--pid-file")
            .arg(pid_file)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).expect("log"))
            .spawn()
            .expect("start keepalive");
        Daemon { child, log }
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Wait until the log has `what` (the daemon acted on a signal).
    fn wait_log(&self, what: &str, count: usize) {
        let t0 = Instant::now();
        while self.log().matches(what).count() < count {
            assert!(
                t0.elapsed() < Duration::from_secs(20),
                "no {what:?} in the log:\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn wait_for_file(p: &Path, d: &Daemon) -> String {
    let t0 = Instant::now();
    loop {
        if let Ok(t) = std::fs::read_to_string(p) {
            if t.ends_with('\n') {
                return t;
            }
        }
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "no pid file {}; daemon log:\n{}",
            p.display(),
            d.log()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn drain_without_a_pid_file_exits_1_and_says_which_file() {
    let dir = tempdir("missing");
    let p = dir.join("keepalive.pid");
    let pf = p.to_str().expect("utf-8 path");
    let out = keepalive(&["drain", "--pid-file", pf]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let err = text(&out.stderr);
    assert!(
        err.contains("keepalive drain: no pid file") && err.contains(pf),
        "{err}"
    );
    assert!(err.contains("--pid-file"), "says how to fix it: {err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn drain_refuses_a_pid_that_is_not_keepalive() {
    let dir = tempdir("stale");
    let p = dir.join("keepalive.pid");
    // This test process: alive, but not keepalive.
    std::fs::write(&p, format!("{}\n", std::process::id())).expect("write");
    let out = keepalive(&["resume", "--pid-file", p.to_str().expect("utf-8")]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let err = text(&out.stderr);
    assert!(
        err.contains("stale pid file") && err.contains("not keepalive"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn usage_errors_exit_2() {
    for args in [
        &["drain", "--bogus"][..],
        &["-c", "/etc/keepalive/keepalive.yaml", "drain"][..],
        &["frobnicate"][..],
    ] {
        let out = keepalive(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {out:?}");
    }
}

/// The daemon writes its pid file, a second daemon on the same file is
/// refused, drain and resume reach it, SIGTERM removes the file.
#[test]
fn daemon_pid_file_drain_resume_and_stop() {
    let dir = tempdir("daemon");
    let p = dir.join("keepalive.pid");
    let pf = p.to_str().expect("utf-8 path");
    let mut d = Daemon::start(&dir, &p);
    assert_eq!(wait_for_file(&p, &d), format!("{}\n", d.pid()));
    d.wait_log("keepalive started", 1);

    let cfg = dir.join("keepalive.yaml");
    let second = keepalive(&["-c", cfg.to_str().expect("utf-8"), "--pid-file", pf]);
    assert_eq!(second.status.code(), Some(1), "{second:?}");
    let err = text(&second.stderr);
    assert!(
        err.contains(&format!("keepalive is already running as pid {}", d.pid())),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(&p).expect("kept"),
        format!("{}\n", d.pid())
    );

    for (verb, sig, n) in [("drain", "SIGUSR1", 1), ("resume", "SIGUSR2", 2)] {
        let out = keepalive(&[verb, "--pid-file", pf]);
        assert_eq!(out.status.code(), Some(0), "{verb}: {out:?}");
        let said = text(&out.stdout);
        assert!(
            said.contains(&format!("sent {sig} to keepalive pid {}", d.pid())) && said.contains(pf),
            "{said}"
        );
        // Handled, not fatal: this daemon has no bgp: section and says so.
        d.wait_log("drain/resume signal without a bgp section", n);
        assert!(d.child.try_wait().expect("wait").is_none(), "{}", d.log());
    }

    let pid = nix::unistd::Pid::from_raw(i32::try_from(d.pid()).expect("pid"));
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).expect("SIGTERM");
    let t0 = Instant::now();
    let status = loop {
        if let Some(s) = d.child.try_wait().expect("wait") {
            break s;
        }
        assert!(t0.elapsed() < Duration::from_secs(20), "{}", d.log());
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(status.code(), Some(0), "{}", d.log());
    assert!(!p.exists(), "pid file left behind");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A pid file left by a killed daemon does not block the next start.
#[test]
fn a_stale_pid_file_is_replaced_with_a_warning() {
    let dir = tempdir("replace");
    let p = dir.join("keepalive.pid");
    std::fs::write(&p, "999999999\n").expect("write");
    let d = Daemon::start(&dir, &p);
    d.wait_log("keepalive started", 1);
    assert_eq!(
        std::fs::read_to_string(&p).expect("replaced"),
        format!("{}\n", d.pid())
    );
    assert!(
        d.log().contains("replacing a stale pid file"),
        "{}",
        d.log()
    );
    drop(d);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Without a subcommand the flags work as before.
#[test]
fn check_still_works_without_a_subcommand() {
    let dir = tempdir("check");
    let cfg = dir.join("k.yaml");
    std::fs::write(&cfg, "vrrp: []\n").expect("config");
    let out = keepalive(&["--check", "-c", cfg.to_str().expect("utf-8")]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(text(&out.stdout).contains(": OK (0 VRRP instance(s)"));
    std::fs::write(&cfg, "vrrp: [\n").expect("config");
    let out = keepalive(&["--check", "-c", cfg.to_str().expect("utf-8")]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let _ = std::fs::remove_dir_all(&dir);
}
