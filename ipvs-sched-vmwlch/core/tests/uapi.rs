//! The kernel module's Rust constants (src/uapi.rs) match the uapi header,
//! which is the single source of truth of the VMWLCH wire protocol.

use std::collections::HashMap;

const HEADER: &str = include_str!("../../include/uapi/linux/vmwlch.h");
const RUST: &str = include_str!("../../src/uapi.rs");

/// The header without its comments.
fn strip_comments(src: &str) -> String {
    let mut out = String::new();
    let mut rest = src;
    while let Some(i) = rest.find("/*") {
        out.push_str(&rest[..i]);
        let end = rest[i..].find("*/").expect("unterminated comment");
        rest = &rest[i + end + 2..];
    }
    out.push_str(rest);
    out
}

/// Every #define with a number and every enum member of the header, by name.
fn header_values() -> HashMap<String, i64> {
    let mut out = HashMap::new();
    let mut in_enum = false;
    let mut next = 0i64;
    for line in strip_comments(HEADER).lines() {
        let l = line.trim();
        if l.starts_with("enum ") {
            in_enum = true;
            next = 0;
            continue;
        }
        if in_enum {
            if l.starts_with('}') {
                in_enum = false;
                continue;
            }
            let name = l.trim_end_matches(',').trim();
            if name.is_empty() {
                continue;
            }
            let (name, val) = match name.split_once('=') {
                Some((n, v)) => (n.trim(), v.trim().parse().expect("enum value")),
                None => (name, next),
            };
            out.insert(name.to_string(), val);
            next = val + 1;
        } else if let Some(rest) = l.strip_prefix("#define ") {
            let mut it = rest.split_whitespace();
            if let (Some(n), Some(v)) = (it.next(), it.next()) {
                if let Ok(v) = v.parse::<i64>() {
                    out.insert(n.to_string(), v);
                }
            }
        }
    }
    out
}

#[test]
fn rust_constants_match_the_header() {
    let h = header_values();
    let mut checked = 0;
    for line in RUST.lines() {
        let Some(rest) = line.trim().strip_prefix("pub(crate) const ") else {
            continue;
        };
        let (name, rest) = rest.split_once(':').unwrap();
        let val: i64 = rest
            .split('=')
            .nth(1)
            .unwrap()
            .trim()
            .trim_end_matches(';')
            .parse()
            .unwrap();
        let hv = h
            .get(name)
            .unwrap_or_else(|| panic!("{name} is not in the header"));
        assert_eq!(*hv, val, "{name}");
        checked += 1;
    }
    assert!(checked >= 30, "only {checked} constants checked");
}
