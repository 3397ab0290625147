//! Counters and the Prometheus text endpoint.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// Per-instance counters.
#[derive(Debug, Default, Clone)]
pub struct InstanceStats {
    pub state: &'static str,
    pub priority: u8,
    pub transitions: u64,
    pub adverts_sent: u64,
    pub adverts_received: u64,
    pub invalid: BTreeMap<&'static str, u64>,
}

/// Health check state.
#[derive(Debug, Default, Clone)]
pub struct CheckStats {
    pub up: bool,
    pub failures: u64,
    pub transitions: u64,
}

#[derive(Debug, Default)]
pub struct Stats {
    pub instances: BTreeMap<String, InstanceStats>,
    /// Packets that could not be attributed to an instance, by interface and reason.
    pub invalid: BTreeMap<(String, &'static str), u64>,
    pub checks: BTreeMap<String, CheckStats>,
    pub reloads: u64,
}

pub type Shared = Arc<Mutex<Stats>>;

fn esc(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

impl Stats {
    pub fn count_invalid(&mut self, iface: &str, reason: &'static str) {
        *self.invalid.entry((iface.to_string(), reason)).or_default() += 1;
    }

    /// Render in the Prometheus text exposition format.
    pub fn render(&self) -> String {
        let mut o = String::new();
        let _ = writeln!(
            o,
            "# HELP keepalive_vrrp_state VRRP state of the instance (1 for the current state)."
        );
        let _ = writeln!(o, "# TYPE keepalive_vrrp_state gauge");
        for (n, i) in &self.instances {
            for s in ["init", "backup", "master"] {
                let _ = writeln!(
                    o,
                    "keepalive_vrrp_state{{instance=\"{}\",state=\"{s}\"}} {}",
                    esc(n),
                    u8::from(i.state == s)
                );
            }
        }
        let _ = writeln!(o, "# HELP keepalive_vrrp_priority Current priority.");
        let _ = writeln!(o, "# TYPE keepalive_vrrp_priority gauge");
        for (n, i) in &self.instances {
            let _ = writeln!(
                o,
                "keepalive_vrrp_priority{{instance=\"{}\"}} {}",
                esc(n),
                i.priority
            );
        }
        for (metric, help, get) in [
            (
                "keepalive_vrrp_transitions_total",
                "State transitions.",
                (|i: &InstanceStats| i.transitions) as fn(&InstanceStats) -> u64,
            ),
            (
                "keepalive_vrrp_adverts_sent_total",
                "Advertisements sent.",
                |i| i.adverts_sent,
            ),
            (
                "keepalive_vrrp_adverts_received_total",
                "Valid advertisements received.",
                |i| i.adverts_received,
            ),
        ] {
            let _ = writeln!(o, "# HELP {metric} {help}");
            let _ = writeln!(o, "# TYPE {metric} counter");
            for (n, i) in &self.instances {
                let _ = writeln!(o, "{metric}{{instance=\"{}\"}} {}", esc(n), get(i));
            }
        }
        let _ = writeln!(
            o,
            "# HELP keepalive_vrrp_adverts_invalid_total Advertisements dropped, by reason."
        );
        let _ = writeln!(o, "# TYPE keepalive_vrrp_adverts_invalid_total counter");
        for (n, i) in &self.instances {
            for (r, c) in &i.invalid {
                let _ = writeln!(
                    o,
                    "keepalive_vrrp_adverts_invalid_total{{instance=\"{}\",reason=\"{r}\"}} {c}",
                    esc(n)
                );
            }
        }
        for ((ifname, r), c) in &self.invalid {
            let _ = writeln!(
                o,
                "keepalive_vrrp_adverts_invalid_total{{interface=\"{}\",reason=\"{r}\"}} {c}",
                esc(ifname)
            );
        }
        let _ = writeln!(
            o,
            "# HELP keepalive_check_up Health check state of the real server (1 up, 0 down)."
        );
        let _ = writeln!(o, "# TYPE keepalive_check_up gauge");
        for (n, c) in &self.checks {
            let _ = writeln!(
                o,
                "keepalive_check_up{{check=\"{}\"}} {}",
                esc(n),
                u8::from(c.up)
            );
        }
        let _ = writeln!(
            o,
            "# HELP keepalive_check_failures_total Failed health check probes."
        );
        let _ = writeln!(o, "# TYPE keepalive_check_failures_total counter");
        for (n, c) in &self.checks {
            let _ = writeln!(
                o,
                "keepalive_check_failures_total{{check=\"{}\"}} {}",
                esc(n),
                c.failures
            );
        }
        let _ = writeln!(
            o,
            "# HELP keepalive_check_transitions_total Up/down changes of the real server."
        );
        let _ = writeln!(o, "# TYPE keepalive_check_transitions_total counter");
        for (n, c) in &self.checks {
            let _ = writeln!(
                o,
                "keepalive_check_transitions_total{{check=\"{}\"}} {}",
                esc(n),
                c.transitions
            );
        }
        let _ = writeln!(o, "# HELP keepalive_reloads_total Configuration reloads.");
        let _ = writeln!(o, "# TYPE keepalive_reloads_total counter");
        let _ = writeln!(o, "keepalive_reloads_total {}", self.reloads);
        o
    }
}

/// Serve `GET /metrics` (any path answers the same) until the task is dropped.
pub async fn serve(listener: TcpListener, stats: Shared) {
    loop {
        let Ok((mut conn, _)) = listener.accept().await else {
            continue;
        };
        let stats = stats.clone();
        tokio::spawn(async move {
            let mut buf = [0u8; 2048];
            let read =
                tokio::time::timeout(std::time::Duration::from_secs(2), conn.read(&mut buf)).await;
            let n = match read {
                Ok(Ok(n)) => n,
                _ => return,
            };
            let req = String::from_utf8_lossy(&buf[..n]);
            let (status, body) = if req.starts_with("GET ") {
                let body = stats.lock().map(|s| s.render()).unwrap_or_default();
                ("200 OK", body)
            } else {
                ("405 Method Not Allowed", String::new())
            };
            let resp = format!(
                "HTTP/1.1 {status}\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = conn.write_all(resp.as_bytes()).await;
            let _ = conn.shutdown().await;
        });
    }
}

pub async fn bind(addr: SocketAddr) -> std::io::Result<TcpListener> {
    TcpListener::bind(addr).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_prometheus_text() {
        let mut s = Stats::default();
        s.instances.insert(
            "VI_1".into(),
            InstanceStats {
                state: "master",
                priority: 150,
                transitions: 2,
                adverts_sent: 10,
                ..Default::default()
            },
        );
        s.instances
            .get_mut("VI_1")
            .unwrap()
            .invalid
            .insert("bad_ttl", 3);
        s.count_invalid("eth0", "too_short");
        s.checks.insert(
            "tcp:10.0.0.1:80".into(),
            CheckStats {
                up: true,
                failures: 1,
                transitions: 0,
            },
        );
        let t = s.render();
        assert!(t.contains("keepalive_vrrp_state{instance=\"VI_1\",state=\"master\"} 1"));
        assert!(t.contains("keepalive_vrrp_state{instance=\"VI_1\",state=\"backup\"} 0"));
        assert!(t.contains("keepalive_vrrp_adverts_sent_total{instance=\"VI_1\"} 10"));
        assert!(t.contains(
            "keepalive_vrrp_adverts_invalid_total{instance=\"VI_1\",reason=\"bad_ttl\"} 3"
        ));
        assert!(t.contains(
            "keepalive_vrrp_adverts_invalid_total{interface=\"eth0\",reason=\"too_short\"} 1"
        ));
        assert!(t.contains("keepalive_check_up{check=\"tcp:10.0.0.1:80\"} 1"));
        // every sample line is "name{labels} value" or a comment
        for l in t.lines() {
            assert!(
                l.starts_with('#')
                    || l.rsplit_once(' ')
                        .is_some_and(|(_, v)| v.parse::<f64>().is_ok()),
                "{l}"
            );
        }
    }
}
