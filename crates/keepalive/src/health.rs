//! Real-server health checks: TCP connect, HTTP(S) GET with expected status,
//! exec. Each check is an independent task on the event loop (all IO is
//! async, commands are spawned), so a slow or hanging server never delays
//! the VRRP timers. Results are debounced by rise/fall counts and reported
//! as up/down changes over a channel.

use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::mpsc;

use crate::config::{CheckKind, HealthCheck};

/// An up/down change of one check (index into `Config::health_checks`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    pub index: usize,
    pub up: bool,
    pub reason: String,
}

/// One probe result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Probe {
    pub index: usize,
    pub ok: bool,
    pub detail: String,
}

/// Rise/fall debouncing. Servers start up (they are in the configuration
/// with their weight) and go down after `fall` consecutive failures; a down
/// server comes back after `rise` consecutive successes.
#[derive(Debug, Clone)]
pub struct Debounce {
    pub up: bool,
    rise: u32,
    fall: u32,
    streak: u32,
}

impl Debounce {
    pub fn new(rise: u32, fall: u32) -> Debounce {
        Debounce {
            up: true,
            rise: rise.max(1),
            fall: fall.max(1),
            streak: 0,
        }
    }

    /// Feed one result; returns the new state if it changed.
    pub fn feed(&mut self, ok: bool) -> Option<bool> {
        if ok == self.up {
            self.streak = 0;
            return None;
        }
        self.streak += 1;
        let need = if self.up { self.fall } else { self.rise };
        if self.streak >= need {
            self.up = ok;
            self.streak = 0;
            Some(ok)
        } else {
            None
        }
    }
}

async fn http_exchange<S: AsyncRead + AsyncWrite + Unpin>(
    mut s: S,
    hc: &HealthCheck,
) -> Result<u16, String> {
    let path = hc.path.as_deref().unwrap_or("/");
    let host = hc
        .host
        .clone()
        .unwrap_or_else(|| hc.target().ip().to_string());
    let req = format!(
        "GET {path} HTTP/1.0\r\nHost: {host}\r\nUser-Agent: keepalive\r\nConnection: close\r\n\r\n"
    );
    s.write_all(req.as_bytes())
        .await
        .map_err(|e| format!("write: {e}"))?;
    let mut buf = Vec::with_capacity(256);
    let mut chunk = [0u8; 256];
    // Read just the status line.
    while !buf.contains(&b'\n') && buf.len() < 4096 {
        let n = s.read(&mut chunk).await.map_err(|e| format!("read: {e}"))?;
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    parse_status(&buf).ok_or_else(|| "no HTTP status line".to_string())
}

/// Status code of an HTTP response's first line.
pub fn parse_status(buf: &[u8]) -> Option<u16> {
    let line = buf.split(|&b| b == b'\n').next()?;
    let line = std::str::from_utf8(line).ok()?;
    let mut it = line.split_whitespace();
    if !it.next()?.starts_with("HTTP/") {
        return None;
    }
    it.next()?.parse().ok()
}

mod tls {
    use std::sync::Arc;
    use tokio_rustls::rustls::client::danger::{
        HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier,
    };
    use tokio_rustls::rustls::pki_types::{CertificateDer, ServerName, UnixTime};
    use tokio_rustls::rustls::{self, DigitallySignedStruct, SignatureScheme};

    /// Health checks test reachability of a real server, not its identity
    /// (like keepalived's SSL_GET without a CA): any certificate is accepted.
    #[derive(Debug)]
    struct AnyCert(Arc<rustls::crypto::CryptoProvider>);

    impl ServerCertVerifier for AnyCert {
        fn verify_server_cert(
            &self,
            _: &CertificateDer<'_>,
            _: &[CertificateDer<'_>],
            _: &ServerName<'_>,
            _: &[u8],
            _: UnixTime,
        ) -> Result<ServerCertVerified, rustls::Error> {
            Ok(ServerCertVerified::assertion())
        }
        fn verify_tls12_signature(
            &self,
            m: &[u8],
            c: &CertificateDer<'_>,
            d: &DigitallySignedStruct,
        ) -> Result<HandshakeSignatureValid, rustls::Error> {
            rustls::crypto::verify_tls12_signature(
                m,
                c,
                d,
                &self.0.signature_verification_algorithms,
            )
        }
        fn verify_tls13_signature(
            &self,
            m: &[u8],
            c: &CertificateDer<'_>,
            d: &DigitallySignedStruct,
        ) -> Result<HandshakeSignatureValid, rustls::Error> {
            rustls::crypto::verify_tls13_signature(
                m,
                c,
                d,
                &self.0.signature_verification_algorithms,
            )
        }
        fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
            self.0.signature_verification_algorithms.supported_schemes()
        }
    }

    pub fn connector() -> Result<tokio_rustls::TlsConnector, String> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let cfg = rustls::ClientConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(|e| e.to_string())?
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AnyCert(provider)))
            .with_no_client_auth();
        Ok(tokio_rustls::TlsConnector::from(Arc::new(cfg)))
    }
}

/// Run one probe (without the timeout, which the caller applies).
pub async fn probe(hc: &HealthCheck) -> Result<(), String> {
    match hc.kind {
        CheckKind::Tcp => {
            TcpStream::connect(hc.target())
                .await
                .map_err(|e| format!("connect: {e}"))?;
            Ok(())
        }
        CheckKind::Http | CheckKind::Https => {
            let s = TcpStream::connect(hc.target())
                .await
                .map_err(|e| format!("connect: {e}"))?;
            let code = if hc.kind == CheckKind::Https {
                let name = hc
                    .host
                    .clone()
                    .unwrap_or_else(|| hc.target().ip().to_string());
                let sn = tokio_rustls::rustls::pki_types::ServerName::try_from(name)
                    .map_err(|e| format!("server name: {e}"))?;
                let tls = tls::connector()?
                    .connect(sn, s)
                    .await
                    .map_err(|e| format!("tls: {e}"))?;
                http_exchange(tls, hc).await?
            } else {
                http_exchange(s, hc).await?
            };
            let want = hc
                .expected_status
                .as_ref()
                .map_or(&[200u16][..], |s| &s.0[..]);
            if want.contains(&code) {
                Ok(())
            } else {
                Err(format!("status {code}, expected {want:?}"))
            }
        }
        CheckKind::Exec => {
            let Some(cmd) = &hc.command else {
                return Err("no command".into());
            };
            let status = tokio::process::Command::new(&cmd.0[0])
                .args(&cmd.0[1..])
                .env("KEEPALIVE_REAL_SERVER", hc.real_server.to_string())
                .stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .kill_on_drop(true)
                .status()
                .await
                .map_err(|e| format!("spawn {}: {e}", cmd.0[0]))?;
            if status.success() {
                Ok(())
            } else {
                Err(format!("exit {status}"))
            }
        }
    }
}

/// Run a check forever, sending every probe result to `tx`. Stops when the
/// receiver is gone (or the task is aborted on reload/shutdown).
pub async fn run(index: usize, hc: Arc<HealthCheck>, tx: mpsc::UnboundedSender<Probe>) {
    let interval = Duration::from_millis(hc.interval_ms.0);
    let timeout = Duration::from_millis(hc.timeout_ms.0);
    // Spread the first probes of many checks over the first interval.
    let jitter = Duration::from_millis((index as u64 * 97) % hc.interval_ms.0.max(1));
    tokio::time::sleep(jitter.min(interval)).await;
    let mut tick = tokio::time::interval(interval);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let r = match tokio::time::timeout(timeout, probe(&hc)).await {
            Ok(r) => r,
            Err(_) => Err(format!("timeout after {} ms", hc.timeout_ms.0)),
        };
        let p = Probe {
            index,
            ok: r.is_ok(),
            detail: r.err().unwrap_or_default(),
        };
        if tx.send(p).is_err() {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;

    #[test]
    fn debounce_rise_fall() {
        let mut d = Debounce::new(2, 3);
        assert_eq!(d.feed(false), None);
        assert_eq!(d.feed(false), None);
        assert_eq!(d.feed(true), None); // streak broken
        assert_eq!(d.feed(false), None);
        assert_eq!(d.feed(false), None);
        assert_eq!(d.feed(false), Some(false));
        assert!(!d.up);
        assert_eq!(d.feed(true), None);
        assert_eq!(d.feed(true), Some(true));
        assert_eq!(d.feed(true), None);
    }

    #[test]
    fn status_line() {
        assert_eq!(parse_status(b"HTTP/1.1 204 No Content\r\n"), Some(204));
        assert_eq!(parse_status(b"HTTP/1.0 200\r\n"), Some(200));
        assert_eq!(parse_status(b"SSH-2.0\r\n"), None);
        assert_eq!(parse_status(b""), None);
    }

    fn check(yaml: &str) -> HealthCheck {
        Config::parse(yaml, "t").unwrap().health_checks.remove(0)
    }

    #[tokio::test]
    async fn probes_against_local_servers() {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = l.local_addr().unwrap().port();
        tokio::spawn(async move {
            while let Ok((mut c, _)) = l.accept().await {
                let mut b = [0u8; 512];
                let n = c.read(&mut b).await.unwrap_or(0);
                let resp: &[u8] = if b[..n].starts_with(b"GET /ok ") {
                    b"HTTP/1.0 200 OK\r\n\r\n"
                } else {
                    b"HTTP/1.0 503 Unavailable\r\n\r\n"
                };
                let _ = c.write_all(resp).await;
            }
        });
        let t = format!("health_checks:\n  - real_server: 127.0.0.1:{port}\n    type: tcp\n");
        assert_eq!(probe(&check(&t)).await, Ok(()));
        let h = format!(
            "health_checks:\n  - real_server: 127.0.0.1:{port}\n    type: http\n    path: /ok\n"
        );
        assert_eq!(probe(&check(&h)).await, Ok(()));
        let h = format!(
            "health_checks:\n  - real_server: 127.0.0.1:{port}\n    type: http\n    path: /bad\n"
        );
        assert!(probe(&check(&h)).await.unwrap_err().contains("503"));
        let h = format!(
            "health_checks:\n  - real_server: 127.0.0.1:{port}\n    type: http\n    path: /bad\n    expected_status: [503]\n"
        );
        assert_eq!(probe(&check(&h)).await, Ok(()));
        // a closed port fails
        let closed = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let cport = closed.local_addr().unwrap().port();
        drop(closed);
        let t = format!("health_checks:\n  - real_server: 127.0.0.1:{cport}\n    type: tcp\n");
        assert!(probe(&check(&t)).await.is_err());
        let e = "health_checks:\n  - real_server: 127.0.0.1:1\n    type: exec\n    command: [\"true\"]\n";
        assert_eq!(probe(&check(e)).await, Ok(()));
        let e = "health_checks:\n  - real_server: 127.0.0.1:1\n    type: exec\n    command: \"exit 3\"\n";
        assert!(probe(&check(e)).await.is_err());
    }
}
