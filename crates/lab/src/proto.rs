//! The lab's two wire protocols, unchanged from the former Python servers:
//! - sensor ingest: `"R <id> <seq> <value>\n"` answered `"OK <seq>\n"`;
//! - HTTP/1.1 with keep-alive: GET /ping answered at once, any other path
//!   after host work, with a ~300-byte page; "Connection: close" honoured.

/// The sequence number of a reading line, or None for anything else (the
/// server then closes the connection).
pub fn sensor_seq(line: &[u8]) -> Option<&[u8]> {
    let mut p = line
        .split(|b| b.is_ascii_whitespace())
        .filter(|s| !s.is_empty());
    if p.next()? != b"R" {
        return None;
    }
    p.next()?;
    p.next()
}

pub fn sensor_reading(id: usize, seq: u64, value: f64) -> Vec<u8> {
    format!("R {id} {seq} {value:.2}\n").into_bytes()
}

/// The answer to reading SEQ is `"OK <seq>"` (more words may follow).
pub fn sensor_ok(line: &[u8], seq: u64) -> bool {
    let mut p = line
        .split(|b| b.is_ascii_whitespace())
        .filter(|s| !s.is_empty());
    p.next() == Some(b"OK") && p.next() == Some(seq.to_string().as_bytes())
}

#[derive(Debug, PartialEq, Eq)]
pub struct Request {
    pub path: Vec<u8>,
    pub close: bool,
}

/// A request head (through the blank line); None if it is not a GET.
pub fn parse_request(head: &[u8]) -> Option<Request> {
    let first = head.split(|&b| b == b'\n').next()?;
    let mut p = first
        .split(|b| b.is_ascii_whitespace())
        .filter(|s| !s.is_empty());
    if p.next()? != b"GET" {
        return None;
    }
    let path = p.next()?.to_vec();
    let close = head
        .to_ascii_lowercase()
        .windows(17)
        .any(|w| w == b"connection: close");
    Some(Request { path, close })
}

pub const BAD_REQUEST: &[u8] =
    b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";

pub fn page() -> Vec<u8> {
    let mut b = b"<html><body><h1>dashboard</h1>".to_vec();
    for _ in 0..10 {
        b.extend_from_slice(b"<p>sensor 42: 21.5 C</p>");
    }
    b.extend_from_slice(b"</body></html>\n");
    b
}

pub fn response(vm: &str, body: &[u8], close: bool) -> Vec<u8> {
    let mut r = format!(
        "HTTP/1.1 200 OK\r\nServer: lab-{vm}\r\nContent-Type: text/html\r\nContent-Length: {}\r\n{}\r\n",
        body.len(),
        if close { "Connection: close\r\n" } else { "" }
    )
    .into_bytes();
    r.extend_from_slice(body);
    r
}

pub fn get(path: &str, host: &str, close: bool) -> Vec<u8> {
    format!(
        "GET {path} HTTP/1.1\r\nHost: {host}\r\n{}\r\n",
        if close { "Connection: close\r\n" } else { "" }
    )
    .into_bytes()
}

/// The body length of a 200 response head; Err(reason) for anything else.
pub fn response_len(head: &[u8]) -> Result<usize, String> {
    if !head.starts_with(b"HTTP/1.1 200") {
        let n = head.len().min(40);
        return Err(format!(
            "bad answer {:?}",
            String::from_utf8_lossy(&head[..n])
        ));
    }
    for h in head.split(|&b| b == b'\n') {
        let h = h.strip_suffix(b"\r").unwrap_or(h);
        if h.len() > 15 && h[..15].eq_ignore_ascii_case(b"content-length:") {
            return std::str::from_utf8(&h[15..])
                .ok()
                .and_then(|s| s.trim().parse().ok())
                .ok_or_else(|| "bad Content-Length".to_string());
        }
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sensor_lines() {
        assert_eq!(sensor_seq(b"R 3 17 21.50\n"), Some(&b"17"[..]));
        assert_eq!(sensor_seq(b"R 3\n"), None);
        assert_eq!(sensor_seq(b"X 3 17 1\n"), None);
        assert_eq!(sensor_seq(b""), None);
        let line = sensor_reading(4, 9, 21.456);
        assert_eq!(line, b"R 4 9 21.46\n");
        assert_eq!(sensor_seq(&line), Some(&b"9"[..]));
        assert!(sensor_ok(b"OK 9\n", 9));
        assert!(!sensor_ok(b"OK 8\n", 9) && !sensor_ok(b"", 9) && !sensor_ok(b"NO 9\n", 9));
    }

    #[test]
    fn requests() {
        let r = parse_request(b"GET /dashboard HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
        assert_eq!(
            r,
            Request {
                path: b"/dashboard".to_vec(),
                close: false
            }
        );
        let r = parse_request(&get("/ping", "192.0.2.10", true)).unwrap();
        assert!(r.close && r.path == b"/ping");
        assert_eq!(parse_request(b"POST / HTTP/1.1\r\n\r\n"), None);
        assert_eq!(parse_request(b"GET\r\n\r\n"), None);
    }

    #[test]
    fn responses_round_trip() {
        let body = page();
        assert!(body.len() > 250 && body.len() < 350);
        let r = response("w1", &body, false);
        let end = r.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
        assert_eq!(response_len(&r[..end]), Ok(body.len()));
        assert_eq!(&r[end..], &body[..]);
        assert!(response_len(BAD_REQUEST).is_err());
        assert_eq!(response_len(b"HTTP/1.1 200 OK\r\n\r\n"), Ok(0));
        assert!(response_len(b"HTTP/1.1 200 OK\r\ncontent-length: x\r\n\r\n").is_err());
    }
}
