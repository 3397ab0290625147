//! The metrics endpoint: HTTP/1.1 with hyper. `GET` and `HEAD` of
//! `/metrics` (and `/`), 404 for other paths, 405 for other methods;
//! keep-alive; connections served concurrently (at most
//! [`MAX_CONNECTIONS`] at once); request heads bounded in size and in the
//! time they may take to arrive, bodies never read.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::header::{HeaderValue, ALLOW, CONTENT_TYPE};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio::sync::Semaphore;

use crate::metrics::Metrics;

/// Connections served at once; more wait in the listen queue.
pub const MAX_CONNECTIONS: usize = 64;
/// Largest request head accepted (hyper's minimum buffer).
const MAX_HEAD: usize = 8192;

fn respond(req: &Request<Incoming>, metrics: &Metrics) -> Response<Full<Bytes>> {
    let mut resp = Response::new(Full::new(Bytes::new()));
    if req.method() != Method::GET && req.method() != Method::HEAD {
        *resp.status_mut() = StatusCode::METHOD_NOT_ALLOWED;
        resp.headers_mut()
            .insert(ALLOW, HeaderValue::from_static("GET, HEAD"));
        return resp;
    }
    if !matches!(req.uri().path(), "/metrics" | "/") {
        *resp.status_mut() = StatusCode::NOT_FOUND;
        return resp;
    }
    // hyper sends the headers of a HEAD answer (Content-Length included)
    // without its body.
    *resp.body_mut() = Full::new(Bytes::from(metrics.render()));
    resp.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static(prometheus_client::encoding::prometheus_text::CONTENT_TYPE),
    );
    resp
}

/// Serve until the task is dropped.
pub async fn serve(listener: TcpListener, metrics: Metrics) {
    let slots = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    loop {
        let Ok(permit) = slots.clone().acquire_owned().await else {
            return;
        };
        let (conn, _) = match listener.accept().await {
            Ok(c) => c,
            Err(e) => {
                tracing::warn!(error = %e, "metrics endpoint: accept");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let metrics = metrics.clone();
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |req: Request<Incoming>| {
                let r = respond(&req, &metrics);
                async move { Ok::<_, Infallible>(r) }
            });
            let _ = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(Duration::from_secs(5))
                .max_buf_size(MAX_HEAD)
                .keep_alive(true)
                .serve_connection(TokioIo::new(conn), service)
                .await;
            drop(permit);
        });
    }
}

pub async fn bind(addr: SocketAddr) -> std::io::Result<TcpListener> {
    TcpListener::bind(addr).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    async fn exchange(addr: SocketAddr, req: &[u8]) -> String {
        let mut c = tokio::net::TcpStream::connect(addr).await.unwrap();
        c.write_all(req).await.unwrap();
        let mut out = Vec::new();
        let _ = tokio::time::timeout(Duration::from_secs(3), c.read_to_end(&mut out)).await;
        String::from_utf8_lossy(&out).into_owned()
    }

    #[tokio::test]
    async fn methods_paths_keep_alive_and_limits() {
        let m = Metrics::new();
        m.inc(crate::metrics::C::Reloads, vec![]);
        let l = bind("127.0.0.1:0".parse().unwrap()).await.unwrap();
        let addr = l.local_addr().unwrap();
        tokio::spawn(serve(l, m));

        let r = exchange(
            addr,
            b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        )
        .await;
        assert!(r.starts_with("HTTP/1.1 200"), "{r}");
        assert!(r.contains("keepalive_reloads_total 1"), "{r}");
        // two requests on one connection (keep-alive), the second a HEAD
        let r = exchange(
            addr,
            b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\nHEAD /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        )
        .await;
        assert_eq!(r.matches("HTTP/1.1 200").count(), 2, "{r}");
        assert_eq!(
            r.matches("keepalive_reloads_total 1").count(),
            1,
            "HEAD has no body: {r}"
        );
        let r = exchange(
            addr,
            b"GET /nope HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        )
        .await;
        assert!(r.starts_with("HTTP/1.1 404"), "{r}");
        let r = exchange(
            addr,
            b"POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
        )
        .await;
        assert!(r.starts_with("HTTP/1.1 405"), "{r}");
        // an oversized head is refused, and the server keeps serving
        let mut big = b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Pad: ".to_vec();
        big.extend(std::iter::repeat_n(b'a', 64 * 1024));
        big.extend_from_slice(b"\r\n\r\n");
        let r = exchange(addr, &big).await;
        assert!(r.is_empty() || r.starts_with("HTTP/1.1 431"), "{r}");
        // concurrent scrapes
        let mut tasks = Vec::new();
        for _ in 0..16 {
            tasks.push(tokio::spawn(exchange(
                addr,
                b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
            )));
        }
        for t in tasks {
            assert!(t.await.unwrap().starts_with("HTTP/1.1 200"));
        }
    }
}
