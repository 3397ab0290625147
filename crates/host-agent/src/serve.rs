//! The agent's one TCP port. A client that sends nothing (HAProxy's
//! agent-check without `agent-send`) or anything but `report` gets the
//! agent-check line (`"37%\n"`); one that sends `report\n` gets the JSON
//! report and a newline (an empty line while the agent has no current
//! figures). Either way the agent closes the connection after
//! answering, as HAProxy's agent-check expects.

use std::io::{ErrorKind, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use load_feedback::Report;

/// Connections answered at once; beyond, new ones are closed at once.
pub const MAX_CONNECTIONS: usize = 64;
/// How long a client may take to send its request.
const REQUEST_WAIT: Duration = Duration::from_millis(300);

/// The latest report, shared by the sampler and the server.
#[derive(Default)]
pub struct Latest {
    report: Mutex<Option<Report>>,
    busy: AtomicUsize,
}

impl Latest {
    /// Stores the newest report.
    pub fn set(&self, r: Report) {
        *self.report.lock().unwrap_or_else(|e| e.into_inner()) = Some(r);
    }

    /// Forgets the report (sampling failed): no stale figures are served
    /// as current; the directors see no report and freeze the weight.
    pub fn clear(&self) {
        *self.report.lock().unwrap_or_else(|e| e.into_inner()) = None;
    }

    fn get(&self) -> Option<Report> {
        self.report
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

/// What a request asks for.
fn answer(request: &[u8], latest: &Latest) -> Vec<u8> {
    let json = String::from_utf8_lossy(request).trim() == "report";
    let Some(r) = latest.get() else {
        // No current figures: an empty line for a director (no report,
        // not a bad one), "up" for HAProxy (the configured weight).
        return if json {
            b"\n".to_vec()
        } else {
            b"up\n".to_vec()
        };
    };
    if json {
        let mut out = serde_json::to_vec(&r).unwrap_or_default();
        out.push(b'\n');
        out
    } else {
        r.agent_check_line().into_bytes()
    }
}

/// Reads the request (up to a newline, 64 bytes or [`REQUEST_WAIT`]).
fn request(s: &mut TcpStream) -> Vec<u8> {
    let mut buf = [0u8; 64];
    let mut got = 0;
    if s.set_read_timeout(Some(REQUEST_WAIT)).is_err() {
        return Vec::new();
    }
    while got < buf.len() {
        match s.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => {
                got += n;
                if buf[..got].contains(&b'\n') {
                    break;
                }
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(_) => break, // timed out: nothing (more) was sent
        }
    }
    buf[..got].to_vec()
}

fn handle(mut s: TcpStream, latest: &Latest) {
    let req = request(&mut s);
    let _ = s.set_write_timeout(Some(Duration::from_secs(2)));
    let _ = s.write_all(&answer(&req, latest));
}

/// Serves `listener` until it fails; one thread per connection, at most
/// [`MAX_CONNECTIONS`] at once.
pub fn serve(listener: TcpListener, latest: Arc<Latest>) -> std::io::Result<()> {
    loop {
        let (s, _) = match listener.accept() {
            Ok(x) => x,
            Err(e)
                if matches!(
                    e.kind(),
                    ErrorKind::Interrupted | ErrorKind::ConnectionAborted
                ) =>
            {
                continue
            }
            Err(e) => return Err(e),
        };
        if latest.busy.fetch_add(1, Ordering::AcqRel) >= MAX_CONNECTIONS {
            latest.busy.fetch_sub(1, Ordering::AcqRel);
            continue; // dropped: closed
        }
        let l = latest.clone();
        std::thread::spawn(move || {
            handle(s, &l);
            l.busy.fetch_sub(1, Ordering::AcqRel);
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Shutdown;

    fn ask(addr: std::net::SocketAddr, send: &[u8]) -> String {
        let mut s = TcpStream::connect(addr).unwrap();
        s.write_all(send).unwrap();
        if !send.is_empty() {
            s.shutdown(Shutdown::Write).unwrap();
        }
        let mut out = String::new();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        s.read_to_string(&mut out).unwrap();
        out
    }

    #[test]
    fn agent_check_line_json_report_and_garbage() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let latest = Arc::new(Latest::default());
        let srv = latest.clone();
        std::thread::spawn(move || serve(l, srv));
        assert_eq!(ask(addr, b""), "up\n", "before the first report");
        assert_eq!(ask(addr, b"report\n"), "\n", "no report yet: an empty line");
        latest.set(Report {
            host: "h1".into(),
            cpu: 0.25,
            psi_cpu: 10.0,
            psi_io: 0.0,
            vms: vec![],
        });
        assert_eq!(
            ask(addr, b""),
            "75%\n",
            "HAProxy agent-check without agent-send"
        );
        assert_eq!(ask(addr, b"hello\n"), "75%\n", "agent-send of another word");
        let json = ask(addr, b"report\n");
        let r = Report::parse(json.trim_end().as_bytes()).unwrap();
        assert_eq!((r.host.as_str(), r.cpu), ("h1", 0.25));
        assert_eq!(ask(addr, &[0xff; 64]), "75%\n", "binary garbage");
    }
}
