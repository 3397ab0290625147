//! The shared source is compiled by the kernel: check what the compiler of
//! this crate cannot (it sees the file as a module of a `no_std` crate).

/// `select.rs` and the files it includes as modules, under the same rules.
const SRC: &str = concat!(
    include_str!("../../src/select.rs"),
    include_str!("../../src/ties.rs"),
    include_str!("../../src/host_cache.rs")
);

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

/// `code()` without the items compiled only for 64-bit targets, where a
/// 64x64 -> 128-bit product is one instruction and needs no runtime helper.
fn code_for_any_target() -> String {
    let code = code();
    let mut out = Vec::new();
    let mut skipping = false;
    for l in code.lines() {
        if l.trim() == "#[cfg(target_pointer_width = \"64\")]" {
            skipping = true;
        }
        if !skipping {
            out.push(l);
        }
        if skipping && l == "}" {
            skipping = false;
        }
    }
    out.join("\n")
}

#[test]
fn u128_only_where_it_is_one_instruction() {
    assert!(code().contains("u128"), "the 64-bit fast path is gone");
    assert!(!code_for_any_target().contains("u128"));
    assert!(!code_for_any_target().contains("i128"));
}

#[test]
fn nothing_that_panics_or_is_unsafe() {
    let code = code_for_any_target();
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
    // Besides attributes, the only `[` are slice and array types and
    // values (`&[Span]`, `&'a [u32]`, `&[]`, `ids: [usize; N]`): no
    // indexing or slicing, which is always written `x[`.
    for (i, _) in code.match_indices('[') {
        assert!(
            code[..i].ends_with('&')
                || code[..i].ends_with("&'a ")
                || code[..i].ends_with(": ")
                || code[..i].ends_with('#'),
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
