//! The `host-agent` binary against a fake procfs: it answers on its port
//! with the agent-check line and the JSON report, and refuses bad options
//! and an unreadable host with a message and status 1 or 2.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use load_feedback::Report;

struct Agent(Child);

impl Drop for Agent {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn ask(port: u16, send: &[u8]) -> Option<String> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.write_all(send).ok()?;
    s.shutdown(Shutdown::Write).ok()?;
    let mut out = String::new();
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    s.read_to_string(&mut out).ok()?;
    Some(out)
}

#[test]
fn serves_this_hosts_load() {
    let port = free_port();
    let _a = Agent(
        Command::new(env!("CARGO_BIN_EXE_host-agent"))
            .args([
                "--host",
                "h1",
                "--listen",
                &format!("127.0.0.1:{port}"),
                "--period-ms",
                "200",
            ])
            .args([
                "--vm",
                "10.1.1.1,fd01::1",
                "--vm",
                "10.1.1.2=/nonexistent/cgroup",
            ])
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let end = Instant::now() + Duration::from_secs(20);
    let json = loop {
        match ask(port, b"report\n") {
            Some(j) if !j.trim().is_empty() => break j,
            _ if Instant::now() > end => panic!("no report within 20 s"),
            _ => std::thread::sleep(Duration::from_millis(100)),
        }
    };
    let r = Report::parse(json.trim_end().as_bytes()).unwrap();
    assert_eq!(r.host, "h1");
    assert_eq!(r.vms.len(), 2);
    assert_eq!(r.vms[0].addrs.len(), 2);
    let line = ask(port, b"").unwrap();
    assert!(
        line.ends_with("%\n") && line.trim_end_matches("%\n").parse::<u32>().is_ok(),
        "{line:?}"
    );
}

#[test]
fn bad_options_and_an_unreadable_host_fail_with_a_message() {
    let run = |args: &[&str]| {
        let o = Command::new(env!("CARGO_BIN_EXE_host-agent"))
            .args(args)
            .output()
            .unwrap();
        (
            o.status.code(),
            String::from_utf8_lossy(&o.stderr).to_string(),
        )
    };
    let (code, err) = run(&["--host", "h1", "--vm", "not-an-ip"]);
    assert_eq!(code, Some(2));
    assert!(err.contains("is not an IP address"), "{err}");
    let (code, err) = run(&[
        "--host",
        "h1",
        "--proc-root",
        "/nonexistent",
        "--listen",
        "127.0.0.1:0",
    ]);
    assert_eq!(code, Some(1));
    assert!(err.contains("/nonexistent/stat"), "{err}");
}
