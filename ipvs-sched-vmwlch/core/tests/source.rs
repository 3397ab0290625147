//! The shared source is compiled by the kernel: check what the compiler of
//! this crate cannot (it sees the file as a module of a `no_std` crate).

const SRC: &str = include_str!("../../src/select.rs");

/// The source with `//` comments removed (the file has no string literals).
fn code() -> String {
    SRC.lines()
        .map(|l| match l.find("//") {
            Some(i) => &l[..i],
            None => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn no_crate_attributes() {
    assert!(!SRC.contains("#!["), "crate-level attribute in select.rs");
}

#[test]
fn only_core() {
    let code = code();
    for bad in [
        "std::",
        "alloc::",
        "extern crate",
        "Box",
        "Vec",
        "String",
        "format!",
        "println!",
    ] {
        assert!(!code.contains(bad), "select.rs uses {bad}");
    }
}

#[test]
fn nothing_that_panics_or_is_unsafe() {
    let code = code();
    for bad in [
        "unsafe",
        "unwrap()",
        ".expect(",
        "panic!",
        "unreachable!",
        "todo!",
        "unimplemented!",
        "assert",
        "f32",
        "f64",
        "u128",
        "i128",
        " / ",
        " % ",
        "/=",
        "%=",
    ] {
        assert!(!code.contains(bad), "select.rs contains {bad:?}");
    }
    // Besides attributes, the only `[` is the slice type `&[HostGroup]`:
    // no indexing or slicing.
    for (i, _) in code.match_indices('[') {
        assert!(
            code[..i].ends_with('&') || code[..i].ends_with('#'),
            "indexing at byte {i}: {}",
            &code[i..i + 20]
        );
    }
}

#[test]
fn every_pub_item_is_documented() {
    let lines: Vec<&str> = SRC.lines().collect();
    for (i, l) in lines.iter().enumerate() {
        let t = l.trim_start();
        if t.starts_with("pub ") || t.starts_with("fn ") || t.starts_with("struct ") {
            let mut j = i;
            while j > 0 && lines[j - 1].trim_start().starts_with("#[") {
                j -= 1;
            }
            assert!(
                j > 0 && lines[j - 1].trim_start().starts_with("///"),
                "undocumented item at line {}: {t}",
                i + 1
            );
        }
    }
}
