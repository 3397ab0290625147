//! Asking a host agent for its report (blocking, bounded in time and size).

use std::fmt;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use crate::report::MAX_REPORT_BYTES;
use crate::{BadReport, Report};

/// Why no report came from an agent.
#[derive(Debug)]
pub enum FetchError {
    /// The agent did not answer (refused, timed out, reset).
    Unreachable(String),
    /// It answered with an empty line: it has no current figures.
    NoFigures,
    /// It answered with something that is not a valid report (a lying or
    /// broken agent: count it).
    Bad(BadReport),
}

impl fmt::Display for FetchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FetchError::Unreachable(e) => write!(f, "agent unreachable: {e}"),
            FetchError::NoFigures => f.write_str("agent has no current figures"),
            FetchError::Bad(b) => b.fmt(f),
        }
    }
}

impl std::error::Error for FetchError {}

/// Connects to the agent at `addr`, asks for its report and reads it, all
/// within `timeout`; at most [`MAX_REPORT_BYTES`] are read.
pub fn fetch(addr: SocketAddr, timeout: Duration) -> Result<Report, FetchError> {
    let end = Instant::now() + timeout;
    let unreachable = |e: std::io::Error| FetchError::Unreachable(format!("{addr}: {e}"));
    let mut s = TcpStream::connect_timeout(&addr, timeout).map_err(unreachable)?;
    s.set_write_timeout(Some(timeout)).map_err(unreachable)?;
    s.write_all(b"report\n").map_err(unreachable)?;
    let mut buf = Vec::new();
    let mut chunk = [0u8; 16384];
    loop {
        let left = end.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(FetchError::Unreachable(format!(
                "{addr}: no complete answer within {timeout:?}"
            )));
        }
        s.set_read_timeout(Some(left)).map_err(unreachable)?;
        match s.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => {
                buf.extend_from_slice(&chunk[..n]);
                if buf.len() > MAX_REPORT_BYTES {
                    return Err(FetchError::Bad(BadReport(format!(
                        "over {MAX_REPORT_BYTES} bytes"
                    ))));
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(unreachable(e)),
        }
    }
    let text = buf.trim_ascii();
    if text.is_empty() {
        return Err(FetchError::NoFigures);
    }
    Report::parse(text).map_err(FetchError::Bad)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    /// An agent that answers each connection with the next of `answers`
    /// (`None`: accept and say nothing).
    fn agent(answers: Vec<Option<Vec<u8>>>) -> SocketAddr {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        std::thread::spawn(move || {
            let mut held = Vec::new();
            for a in answers {
                let (mut s, _) = l.accept().unwrap();
                let mut req = [0u8; 7];
                let _ = s.read_exact(&mut req);
                match a {
                    Some(bytes) => {
                        let _ = s.write_all(&bytes);
                    }
                    None => held.push(s),
                }
            }
            std::thread::sleep(Duration::from_secs(3));
        });
        addr
    }

    #[test]
    fn good_empty_garbage_huge_and_silent_agents() {
        let good = br#"{"host":"h1","cpu":0.5,"psi_cpu":1.0}"#.to_vec();
        let addr = agent(vec![
            Some(good),
            Some(b"\n".to_vec()),
            Some(b"{\"host\":\"h1\",\"cpu\":9,\"psi_cpu\":0}\n".to_vec()),
            Some(vec![b'x'; MAX_REPORT_BYTES + 10]),
            None,
        ]);
        let t = Duration::from_millis(500);
        assert_eq!(fetch(addr, t).unwrap().cpu, 0.5);
        assert!(matches!(fetch(addr, t), Err(FetchError::NoFigures)));
        assert!(matches!(fetch(addr, t), Err(FetchError::Bad(_))));
        let e = fetch(addr, t).unwrap_err();
        assert!(e.to_string().contains("bytes"), "{e}");
        let started = Instant::now();
        let e = fetch(addr, t).unwrap_err();
        assert!(matches!(e, FetchError::Unreachable(_)), "{e}");
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "bounded by the timeout"
        );
    }

    #[test]
    fn a_closed_port_is_unreachable() {
        let addr = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap();
        let e = fetch(addr, Duration::from_millis(500)).unwrap_err();
        assert!(
            e.to_string().starts_with("agent unreachable: 127.0.0.1:"),
            "{e}"
        );
    }
}
