//! A real etcd for tests: Debian's `etcd` binary on loopback, with a
//! temporary data directory and free ports; killed and its directory
//! removed when dropped (also when a test fails).

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running (or stopped) single-member etcd.
pub struct Etcd {
    dir: PathBuf,
    client: SocketAddr,
    /// A second client address, for a writer while the first is closed.
    admin: SocketAddr,
    peer: SocketAddr,
    child: Option<Child>,
}

fn free_port() -> std::io::Result<SocketAddr> {
    TcpListener::bind("127.0.0.1:0")?.local_addr()
}

impl Etcd {
    /// Start etcd and wait until it accepts connections (at most 30 s).
    /// A free port can be taken between asking for it and etcd's bind
    /// (tests run in parallel, and outgoing connections use the same
    /// range): then again, on other ports, a few times.
    pub fn start() -> Result<Etcd, String> {
        let mut last = String::new();
        for _ in 0..5 {
            match Etcd::start_once() {
                Err(e) if e.contains("address already in use") => last = e,
                r => return r,
            }
        }
        Err(last)
    }

    fn start_once() -> Result<Etcd, String> {
        let n = std::process::id();
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let dir = std::env::temp_dir().join(format!("cluster-etcd-test-{n}-{t}"));
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let mut e = Etcd {
            dir,
            client: free_port().map_err(|e| e.to_string())?,
            admin: free_port().map_err(|e| e.to_string())?,
            peer: free_port().map_err(|e| e.to_string())?,
            child: None,
        };
        e.restart()?;
        Ok(e)
    }

    /// The client endpoint, `http://127.0.0.1:PORT`.
    pub fn endpoint(&self) -> String {
        format!("http://{}", self.client)
    }

    /// The second client endpoint, open also in [`Etcd::restart_admin_only`].
    pub fn admin_endpoint(&self) -> String {
        format!("http://{}", self.admin)
    }

    /// Kill etcd (SIGKILL: no goodbye to the clients) and wait for it.
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Start etcd again on the same data and ports.
    pub fn restart(&mut self) -> Result<(), String> {
        self.spawn(true)
    }

    /// Start etcd on the admin endpoint only: clients of [`Etcd::endpoint`]
    /// stay cut off while a test writes.
    pub fn restart_admin_only(&mut self) -> Result<(), String> {
        self.spawn(false)
    }

    fn spawn(&mut self, main: bool) -> Result<(), String> {
        self.kill();
        let a = format!("http://{}", self.admin);
        let c = if main {
            format!("http://{},{a}", self.client)
        } else {
            a.clone()
        };
        let p = format!("http://{}", self.peer);
        let log = std::fs::File::create(self.dir.join("etcd.log")).map_err(|e| e.to_string())?;
        let child = Command::new("etcd")
            .args(["--name", "test", "--data-dir"])
            .arg(self.dir.join("data"))
            .args(["--listen-client-urls", &c, "--advertise-client-urls", &a])
            .args([
                "--listen-peer-urls",
                &p,
                "--initial-advertise-peer-urls",
                &p,
            ])
            .args(["--initial-cluster", &format!("test={p}")])
            .args(["--log-level", "warn"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .map_err(|e| {
                format!(
                    "cannot start etcd: {e} (apt-get install etcd-server; scripts/setup.sh does)"
                )
            })?;
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if TcpStream::connect_timeout(&self.admin, Duration::from_millis(200)).is_ok() {
                return Ok(());
            }
            if let Some(Ok(Some(st))) = self.child.as_mut().map(Child::try_wait) {
                let log = std::fs::read_to_string(self.dir.join("etcd.log")).unwrap_or_default();
                return Err(format!("etcd exited ({st}):\n{log}"));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        Err("etcd did not listen within 30 s".into())
    }
}

impl Drop for Etcd {
    fn drop(&mut self) {
        self.kill();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
