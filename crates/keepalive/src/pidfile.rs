//! The daemon's pid file (`--pid-file PATH`) and the `keepalive drain` /
//! `keepalive resume` commands that signal the daemon it names.
//!
//! A pid file counts as live only while `/proc/PID/comm` is `keepalive`:
//! after a crash or a reboot its pid may belong to anything else, and that
//! must neither block a start nor receive a signal.

use std::io::{ErrorKind, Write};
use std::path::{Path, PathBuf};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

/// Where the systemd unit has the daemon write its pid.
pub const DEFAULT_PATH: &str = "/run/keepalive/keepalive.pid";

/// The daemon's process name (`/proc/PID/comm`).
pub const PROGRAM: &str = "keepalive";

/// What a pid file names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Holder {
    /// No file.
    Missing,
    /// A running process named `program`.
    Live(i32),
    /// Anything else: why it is stale.
    Stale(String),
}

/// The process name of `pid`, if it runs.
pub fn comm(pid: i32) -> Option<String> {
    let c = std::fs::read_to_string(format!("/proc/{pid}/comm")).ok()?;
    Some(c.trim_end_matches('\n').to_string())
}

fn parse(text: &str) -> Option<i32> {
    text.trim().parse::<i32>().ok().filter(|p| *p > 0)
}

/// Who `path` names: a live `program`, or why it is stale.
pub fn holder(path: &Path, program: &str) -> std::io::Result<Holder> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(Holder::Missing),
        Err(e) => return Err(e),
    };
    let Some(pid) = parse(&text) else {
        return Ok(Holder::Stale(format!(
            "it holds {:?}, not a pid",
            text.trim()
        )));
    };
    Ok(match comm(pid) {
        Some(c) if c == program => Holder::Live(pid),
        Some(c) => Holder::Stale(format!("pid {pid} is {c:?}, not {program}")),
        None => Holder::Stale(format!("pid {pid} is not running")),
    })
}

/// The running daemon's pid file: written at start, removed when dropped
/// (if it still names this process).
#[derive(Debug)]
pub struct PidFile {
    path: PathBuf,
    pid: u32,
}

impl PidFile {
    /// Write this process's pid to `path`. Refused while the file names
    /// another running keepalive; a stale file is replaced (with a warning).
    pub fn create(path: &Path) -> Result<PidFile, String> {
        create_as(path, PROGRAM)
    }
}

/// [`PidFile::create`] for a daemon named `program` (tests use another name).
fn create_as(path: &Path, program: &str) -> Result<PidFile, String> {
    let me = std::process::id();
    let at = path.display();
    match holder(path, program) {
        Ok(Holder::Live(pid)) if u32::try_from(pid) != Ok(me) => {
            return Err(format!(
                "pid file {at}: {program} is already running as pid {pid}; stop it first, or \
                 give this daemon another --pid-file"
            ));
        }
        Ok(Holder::Stale(why)) => {
            tracing::warn!(pid_file = %at, reason = %why, "replacing a stale pid file");
        }
        Ok(_) => {}
        Err(e) => return Err(format!("pid file {at}: cannot read it: {e}")),
    }
    write_atomically(path, me).map_err(|e| {
        format!(
            "pid file {at}: cannot write it: {e} (does its directory exist and is it writable?)"
        )
    })?;
    Ok(PidFile {
        path: path.to_path_buf(),
        pid: me,
    })
}

/// Readers see the old file or the whole new one, never a partial pid.
fn write_atomically(path: &Path, pid: u32) -> std::io::Result<()> {
    let name = path
        .file_name()
        .ok_or_else(|| std::io::Error::new(ErrorKind::InvalidInput, "not a file name"))?;
    let mut tmp_name = std::ffi::OsString::from(".");
    tmp_name.push(name);
    tmp_name.push(format!(".{pid}.tmp"));
    let tmp = path.with_file_name(tmp_name);
    let result = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        writeln!(f, "{pid}")?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

impl Drop for PidFile {
    fn drop(&mut self) {
        // A successor may already have replaced it: leave that one alone.
        let ours = std::fs::read_to_string(&self.path)
            .ok()
            .and_then(|t| parse(&t))
            .is_some_and(|p| u32::try_from(p) == Ok(self.pid));
        if ours {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// What `keepalive drain` / `keepalive resume` asks of the daemon.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Request {
    Drain,
    Resume,
}

impl Request {
    pub fn signal(self) -> Signal {
        match self {
            Request::Drain => Signal::SIGUSR1,
            Request::Resume => Signal::SIGUSR2,
        }
    }
}

/// Send `req`'s signal to the keepalive that `path` names; its pid, or a
/// message that says which file was read and what to do.
pub fn signal_daemon(path: &Path, req: Request) -> Result<i32, String> {
    signal_as(path, req, PROGRAM)
}

fn signal_as(path: &Path, req: Request, program: &str) -> Result<i32, String> {
    let at = path.display();
    let pid = match holder(path, program) {
        Ok(Holder::Live(pid)) => pid,
        Ok(Holder::Missing) => {
            return Err(format!(
                "no pid file {at}, so no {program} to signal: start the daemon with --pid-file \
                 {at} (the systemd unit does), or pass the file that the running daemon writes \
                 (--pid-file PATH)"
            ));
        }
        Ok(Holder::Stale(why)) => {
            return Err(format!(
                "stale pid file {at}: {why}, so no running {program} to signal; start {program} \
                 (it replaces the file), or pass the right --pid-file"
            ));
        }
        Err(e) => {
            return Err(format!(
                "cannot read the pid file {at}: {e}; run as root, or pass the right --pid-file"
            ));
        }
    };
    kill(Pid::from_raw(pid), req.signal()).map_err(|e| {
        format!(
            "cannot send {} to {program} pid {pid} (from {at}): {}; run as root (or the \
             daemon's user)",
            req.signal(),
            e.desc()
        )
    })?;
    Ok(pid)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fresh directory under the system's temporary directory.
    fn tempdir(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("ka-pidfile-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).expect("temp dir");
        d
    }

    /// A child process and its name, standing in for another daemon.
    struct Other(std::process::Child);
    impl Other {
        fn start() -> Other {
            let o = Other(
                std::process::Command::new("sleep")
                    .arg("30")
                    .spawn()
                    .expect("sleep"),
            );
            // Until its exec, the child bears this test thread's name.
            let t0 = std::time::Instant::now();
            while comm(o.pid()).as_deref() != Some("sleep") {
                assert!(t0.elapsed() < std::time::Duration::from_secs(10));
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            o
        }
        fn pid(&self) -> i32 {
            i32::try_from(self.0.id()).expect("pid")
        }
    }
    impl Drop for Other {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }

    #[test]
    fn create_writes_and_drop_removes() {
        let d = tempdir("create");
        let p = d.join("k.pid");
        let f = create_as(&p, "sleep").expect("created");
        let text = std::fs::read_to_string(&p).expect("written");
        assert_eq!(text, format!("{}\n", std::process::id()));
        // no temporary file left beside it
        assert_eq!(std::fs::read_dir(&d).expect("dir").count(), 1);
        drop(f);
        assert!(!p.exists());
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn create_refuses_a_live_daemon_and_replaces_stale_files() {
        let d = tempdir("live");
        let p = d.join("k.pid");
        let other = Other::start();
        std::fs::write(&p, format!("{}\n", other.pid())).expect("write");
        // "sleep" plays the daemon: a live one is refused, the file kept
        let e = create_as(&p, "sleep").expect_err("refused");
        assert!(
            e.contains("already running as pid") && e.contains("k.pid"),
            "{e}"
        );
        assert_eq!(
            std::fs::read_to_string(&p).expect("kept").trim(),
            other.pid().to_string()
        );
        // the same pid under another name (a reused pid): stale, replaced
        let f = create_as(&p, "keepalive").expect("replaced");
        assert_eq!(
            std::fs::read_to_string(&p).expect("ours").trim(),
            std::process::id().to_string()
        );
        drop(f);
        // a pid that no longer runs, and garbage: stale too
        let mut gone = Other::start();
        let gone_pid = gone.pid();
        let _ = gone.0.kill();
        let _ = gone.0.wait();
        for stale in [format!("{gone_pid}\n"), "not a pid\n".to_string()] {
            std::fs::write(&p, stale).expect("write");
            drop(create_as(&p, "sleep").expect("stale file replaced"));
        }
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn drop_leaves_a_successors_file() {
        let d = tempdir("successor");
        let p = d.join("k.pid");
        let f = create_as(&p, "sleep").expect("created");
        std::fs::write(&p, "1\n").expect("successor");
        drop(f);
        assert_eq!(std::fs::read_to_string(&p).expect("kept"), "1\n");
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn create_reports_an_unwritable_directory() {
        let e = create_as(Path::new("/nonexistent-ka-dir/k.pid"), "sleep").expect_err("no dir");
        assert!(
            e.contains("/nonexistent-ka-dir/k.pid") && e.contains("cannot write"),
            "{e}"
        );
    }

    #[test]
    fn signal_checks_the_process_name() {
        let d = tempdir("signal");
        let p = d.join("k.pid");
        let e = signal_as(&p, Request::Drain, "keepalive").expect_err("missing");
        assert!(e.contains("no pid file") && e.contains("k.pid"), "{e}");
        // a live process that is not keepalive is never signalled
        let other = Other::start();
        std::fs::write(&p, format!("{}\n", other.pid())).expect("write");
        let e = signal_as(&p, Request::Drain, "keepalive").expect_err("not keepalive");
        assert!(
            e.contains("stale pid file") && e.contains("\"sleep\", not keepalive"),
            "{e}"
        );
        // named as expected: signalled (SIGUSR2 ends a sleep)
        let mut other = other;
        let pid = signal_as(&p, Request::Resume, "sleep").expect("sent");
        assert_eq!(pid, other.pid());
        let status = other.0.wait().expect("wait");
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(status.signal(), Some(libc::SIGUSR2));
        let _ = std::fs::remove_dir_all(&d);
    }
}
