//! systemd readiness and watchdog notification (sd_notify) over $NOTIFY_SOCKET.

use std::os::unix::net::UnixDatagram;
use std::time::Duration;

/// How often to send `WATCHDOG=1`: half the `WATCHDOG_USEC` the service
/// manager set (`WatchdogSec=`), if it is meant for this process.
pub fn watchdog_interval() -> Option<Duration> {
    watchdog_from(
        std::env::var("WATCHDOG_USEC").ok().as_deref(),
        std::env::var("WATCHDOG_PID").ok().as_deref(),
        std::process::id(),
    )
}

fn watchdog_from(usec: Option<&str>, pid: Option<&str>, me: u32) -> Option<Duration> {
    let usec: u64 = usec?.trim().parse().ok().filter(|&u| u > 0)?;
    if let Some(p) = pid {
        if p.trim().parse::<u32>().ok() != Some(me) {
            return None;
        }
    }
    Some(Duration::from_micros(usec / 2))
}

/// Send a state string such as `READY=1`. No-op without `NOTIFY_SOCKET`.
pub fn notify(state: &str) {
    let Some(path) = std::env::var_os("NOTIFY_SOCKET") else {
        return;
    };
    let Ok(sock) = UnixDatagram::unbound() else {
        return;
    };
    let bytes = path.as_encoded_bytes();
    let r = if let Some(abstract_name) = bytes.strip_prefix(b"@") {
        use std::os::linux::net::SocketAddrExt;
        std::os::unix::net::SocketAddr::from_abstract_name(abstract_name)
            .and_then(|a| sock.send_to_addr(state.as_bytes(), &a))
    } else {
        sock.send_to(state.as_bytes(), &path)
    };
    if let Err(e) = r {
        tracing::warn!(error = %e, "sd_notify failed");
    }
}

#[cfg(test)]
mod tests {
    use super::watchdog_from;
    use std::time::Duration;

    #[test]
    fn watchdog_interval_is_half_and_for_us() {
        assert_eq!(
            watchdog_from(Some("10000000"), None, 7),
            Some(Duration::from_secs(5))
        );
        assert_eq!(
            watchdog_from(Some("10000000"), Some("7"), 7),
            Some(Duration::from_secs(5))
        );
        assert_eq!(watchdog_from(Some("10000000"), Some("8"), 7), None);
        assert_eq!(watchdog_from(Some("0"), None, 7), None);
        assert_eq!(watchdog_from(Some("x"), None, 7), None);
        assert_eq!(watchdog_from(None, None, 7), None);
    }

    #[test]
    fn sends_to_socket() {
        let dir = std::env::temp_dir().join(format!("ka-notify-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&dir);
        let p = dir.join("sock");
        let _ = std::fs::remove_file(&p);
        let rx = std::os::unix::net::UnixDatagram::bind(&p).unwrap();
        // This test is the only user of NOTIFY_SOCKET in the test binary.
        std::env::set_var("NOTIFY_SOCKET", &p);
        super::notify("READY=1");
        std::env::remove_var("NOTIFY_SOCKET");
        let mut b = [0u8; 32];
        let n = rx.recv(&mut b).unwrap();
        assert_eq!(&b[..n], b"READY=1");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
