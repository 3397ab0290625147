//! The constants of the `VMWLCH` generic netlink family, mirrored from the
//! module's uapi header `ipvs-sched-vmwlch/include/uapi/linux/vmwlch.h`
//! (the single source of truth). This file holds every copy user space
//! has; the test below parses the header and checks each value, and that
//! nothing the header defines is missing here.

/// Family name.
pub const VMWLCH_GENL_NAME: &str = "VMWLCH";
/// Family version.
pub const VMWLCH_GENL_VERSION: u8 = 1;
/// Host name limit in bytes, including the NUL.
pub const VMWLCH_HOST_NAME_MAX: usize = 64;
/// Hosts per namespace.
pub const VMWLCH_MAX_HOSTS: u32 = 1024;
/// Mapped addresses per namespace.
pub const VMWLCH_MAX_MEMBERS: u32 = 65536;
/// Largest host weight (0 drains the host).
pub const VMWLCH_MAX_WEIGHT: u32 = 65535;
/// Weight of a new host when none is given.
pub const VMWLCH_DEFAULT_WEIGHT: u32 = 1;

/// `enum vmwlch_cmd`.
pub mod cmd {
    #![allow(missing_docs)]
    pub const VMWLCH_CMD_UNSPEC: u8 = 0;
    pub const VMWLCH_CMD_SET_HOST: u8 = 1;
    pub const VMWLCH_CMD_DEL_HOST: u8 = 2;
    pub const VMWLCH_CMD_ADD_MEMBERS: u8 = 3;
    pub const VMWLCH_CMD_DEL_MEMBERS: u8 = 4;
    pub const VMWLCH_CMD_REPLACE_MAP: u8 = 5;
    pub const VMWLCH_CMD_FLUSH: u8 = 6;
    pub const VMWLCH_CMD_GET_HOST: u8 = 7;
    pub const VMWLCH_CMD_GET_INFO: u8 = 8;
    pub const VMWLCH_CMD_MAX: u8 = 8;
}

/// `enum vmwlch_attr` and `enum vmwlch_member_attr`.
pub mod attr {
    #![allow(missing_docs)]
    pub const VMWLCH_A_UNSPEC: u16 = 0;
    pub const VMWLCH_A_HOST_NAME: u16 = 1;
    pub const VMWLCH_A_HOST_WEIGHT: u16 = 2;
    pub const VMWLCH_A_HOST_MEMBERS: u16 = 3;
    pub const VMWLCH_A_HOST: u16 = 4;
    pub const VMWLCH_A_HOST_ACTIVECONNS: u16 = 5;
    pub const VMWLCH_A_HOST_INACTCONNS: u16 = 6;
    pub const VMWLCH_A_HOST_DESTS: u16 = 7;
    pub const VMWLCH_A_INFO_VERSION: u16 = 8;
    pub const VMWLCH_A_INFO_MAX_HOSTS: u16 = 9;
    pub const VMWLCH_A_INFO_MAX_MEMBERS: u16 = 10;
    pub const VMWLCH_A_INFO_HOSTS: u16 = 11;
    pub const VMWLCH_A_INFO_MEMBERS: u16 = 12;
    pub const VMWLCH_A_INFO_SERVICES: u16 = 13;
    pub const VMWLCH_A_INFO_DESTS: u16 = 14;
    pub const VMWLCH_A_INFO_DECISIONS: u16 = 15;
    pub const VMWLCH_A_INFO_NO_DEST: u16 = 16;
    pub const VMWLCH_A_INFO_GENERATION: u16 = 17;
    pub const VMWLCH_A_PAD: u16 = 18;
    pub const VMWLCH_A_INFO_FALLBACKS: u16 = 19;
    pub const VMWLCH_A_INFO_REBUILDS: u16 = 20;
    pub const VMWLCH_A_INFO_DEFERRED: u16 = 21;
    pub const VMWLCH_A_INFO_REBUILD_FAILURES: u16 = 22;
    pub const VMWLCH_A_INFO_REBUILD_RETRIES: u16 = 23;
    pub const VMWLCH_A_INFO_TRACK_FAILURES: u16 = 24;
    pub const VMWLCH_A_INFO_SNAPSHOT_CURRENT: u16 = 25;
    pub const VMWLCH_A_INFO_BUILD_NS: u16 = 26;
    pub const VMWLCH_A_INFO_HOST_AWARE: u16 = 27;
    pub const VMWLCH_A_MAX: u16 = 27;
    pub const VMWLCH_MEMBER_A_UNSPEC: u16 = 0;
    pub const VMWLCH_MEMBER_A_ADDR: u16 = 1;
    pub const VMWLCH_MEMBER_A_MAX: u16 = 1;
}

#[cfg(test)]
mod tests {
    use super::attr::*;
    use super::cmd::*;
    use super::*;
    use std::collections::HashMap;

    const HEADER: &str = include_str!("../../../../ipvs-sched-vmwlch/include/uapi/linux/vmwlch.h");

    /// Values of every `#define` and enumerator in the header.
    fn header_values() -> HashMap<String, String> {
        let mut m = HashMap::new();
        // Strip comments.
        let mut text = String::new();
        let mut rest = HEADER;
        while let Some(i) = rest.find("/*") {
            text.push_str(&rest[..i]);
            match rest[i..].find("*/") {
                Some(j) => rest = &rest[i + j + 2..],
                None => {
                    rest = "";
                }
            }
        }
        text.push_str(rest);
        let mut in_enum = false;
        let mut next_val: i64 = 0;
        for line in text.lines() {
            let l = line.trim();
            if let Some(d) = l.strip_prefix("#define") {
                let mut it = d.split_whitespace();
                if let (Some(k), Some(v)) = (it.next(), it.next()) {
                    let v: String = std::iter::once(v).chain(it).collect::<Vec<_>>().join(" ");
                    m.insert(k.to_string(), v);
                }
            } else if l.starts_with("enum ") {
                in_enum = true;
                next_val = 0;
            } else if in_enum && l.starts_with('}') {
                in_enum = false;
            } else if in_enum {
                for item in l.split(',').map(str::trim).filter(|s| !s.is_empty()) {
                    let (name, val) = match item.split_once('=') {
                        Some((n, v)) => (n.trim(), v.trim().parse::<i64>().expect("enum value")),
                        None => (item, next_val),
                    };
                    m.insert(name.to_string(), val.to_string());
                    next_val = val + 1;
                }
            }
        }
        // Resolve "(__X - 1)" defines.
        let keys: Vec<String> = m.keys().cloned().collect();
        for k in keys {
            let v = m[&k].clone();
            if let Some(inner) = v.strip_prefix('(').and_then(|s| s.strip_suffix(" - 1)")) {
                if let Some(base) = m.get(inner).and_then(|b| b.parse::<i64>().ok()) {
                    m.insert(k, (base - 1).to_string());
                }
            }
        }
        m
    }

    #[test]
    fn constants_match_uapi_header() {
        let h = header_values();
        let ours: &[(&str, String)] = &[
            ("VMWLCH_GENL_NAME", format!("\"{VMWLCH_GENL_NAME}\"")),
            ("VMWLCH_GENL_VERSION", VMWLCH_GENL_VERSION.to_string()),
            ("VMWLCH_HOST_NAME_MAX", VMWLCH_HOST_NAME_MAX.to_string()),
            ("VMWLCH_MAX_HOSTS", VMWLCH_MAX_HOSTS.to_string()),
            ("VMWLCH_MAX_MEMBERS", VMWLCH_MAX_MEMBERS.to_string()),
            ("VMWLCH_MAX_WEIGHT", VMWLCH_MAX_WEIGHT.to_string()),
            ("VMWLCH_DEFAULT_WEIGHT", VMWLCH_DEFAULT_WEIGHT.to_string()),
            ("VMWLCH_CMD_UNSPEC", VMWLCH_CMD_UNSPEC.to_string()),
            ("VMWLCH_CMD_SET_HOST", VMWLCH_CMD_SET_HOST.to_string()),
            ("VMWLCH_CMD_DEL_HOST", VMWLCH_CMD_DEL_HOST.to_string()),
            ("VMWLCH_CMD_ADD_MEMBERS", VMWLCH_CMD_ADD_MEMBERS.to_string()),
            ("VMWLCH_CMD_DEL_MEMBERS", VMWLCH_CMD_DEL_MEMBERS.to_string()),
            ("VMWLCH_CMD_REPLACE_MAP", VMWLCH_CMD_REPLACE_MAP.to_string()),
            ("VMWLCH_CMD_FLUSH", VMWLCH_CMD_FLUSH.to_string()),
            ("VMWLCH_CMD_GET_HOST", VMWLCH_CMD_GET_HOST.to_string()),
            ("VMWLCH_CMD_GET_INFO", VMWLCH_CMD_GET_INFO.to_string()),
            ("VMWLCH_CMD_MAX", VMWLCH_CMD_MAX.to_string()),
            ("VMWLCH_A_UNSPEC", VMWLCH_A_UNSPEC.to_string()),
            ("VMWLCH_A_HOST_NAME", VMWLCH_A_HOST_NAME.to_string()),
            ("VMWLCH_A_HOST_WEIGHT", VMWLCH_A_HOST_WEIGHT.to_string()),
            ("VMWLCH_A_HOST_MEMBERS", VMWLCH_A_HOST_MEMBERS.to_string()),
            ("VMWLCH_A_HOST", VMWLCH_A_HOST.to_string()),
            (
                "VMWLCH_A_HOST_ACTIVECONNS",
                VMWLCH_A_HOST_ACTIVECONNS.to_string(),
            ),
            (
                "VMWLCH_A_HOST_INACTCONNS",
                VMWLCH_A_HOST_INACTCONNS.to_string(),
            ),
            ("VMWLCH_A_HOST_DESTS", VMWLCH_A_HOST_DESTS.to_string()),
            ("VMWLCH_A_INFO_VERSION", VMWLCH_A_INFO_VERSION.to_string()),
            (
                "VMWLCH_A_INFO_MAX_HOSTS",
                VMWLCH_A_INFO_MAX_HOSTS.to_string(),
            ),
            (
                "VMWLCH_A_INFO_MAX_MEMBERS",
                VMWLCH_A_INFO_MAX_MEMBERS.to_string(),
            ),
            ("VMWLCH_A_INFO_HOSTS", VMWLCH_A_INFO_HOSTS.to_string()),
            ("VMWLCH_A_INFO_MEMBERS", VMWLCH_A_INFO_MEMBERS.to_string()),
            ("VMWLCH_A_INFO_SERVICES", VMWLCH_A_INFO_SERVICES.to_string()),
            ("VMWLCH_A_INFO_DESTS", VMWLCH_A_INFO_DESTS.to_string()),
            (
                "VMWLCH_A_INFO_DECISIONS",
                VMWLCH_A_INFO_DECISIONS.to_string(),
            ),
            ("VMWLCH_A_INFO_NO_DEST", VMWLCH_A_INFO_NO_DEST.to_string()),
            (
                "VMWLCH_A_INFO_GENERATION",
                VMWLCH_A_INFO_GENERATION.to_string(),
            ),
            ("VMWLCH_A_PAD", VMWLCH_A_PAD.to_string()),
            (
                "VMWLCH_A_INFO_FALLBACKS",
                VMWLCH_A_INFO_FALLBACKS.to_string(),
            ),
            ("VMWLCH_A_INFO_REBUILDS", VMWLCH_A_INFO_REBUILDS.to_string()),
            ("VMWLCH_A_INFO_DEFERRED", VMWLCH_A_INFO_DEFERRED.to_string()),
            (
                "VMWLCH_A_INFO_REBUILD_FAILURES",
                VMWLCH_A_INFO_REBUILD_FAILURES.to_string(),
            ),
            (
                "VMWLCH_A_INFO_REBUILD_RETRIES",
                VMWLCH_A_INFO_REBUILD_RETRIES.to_string(),
            ),
            (
                "VMWLCH_A_INFO_TRACK_FAILURES",
                VMWLCH_A_INFO_TRACK_FAILURES.to_string(),
            ),
            (
                "VMWLCH_A_INFO_SNAPSHOT_CURRENT",
                VMWLCH_A_INFO_SNAPSHOT_CURRENT.to_string(),
            ),
            ("VMWLCH_A_INFO_BUILD_NS", VMWLCH_A_INFO_BUILD_NS.to_string()),
            (
                "VMWLCH_A_INFO_HOST_AWARE",
                VMWLCH_A_INFO_HOST_AWARE.to_string(),
            ),
            ("VMWLCH_A_MAX", VMWLCH_A_MAX.to_string()),
            ("VMWLCH_MEMBER_A_UNSPEC", VMWLCH_MEMBER_A_UNSPEC.to_string()),
            ("VMWLCH_MEMBER_A_ADDR", VMWLCH_MEMBER_A_ADDR.to_string()),
            ("VMWLCH_MEMBER_A_MAX", VMWLCH_MEMBER_A_MAX.to_string()),
        ];
        for (k, v) in ours {
            assert_eq!(h.get(*k), Some(v), "{k}");
        }
        // Every constant the header defines is mirrored here.
        let mirrored: std::collections::HashSet<&str> = ours.iter().map(|(k, _)| *k).collect();
        for k in h.keys() {
            if k.starts_with("__") || k == "_UAPI_LINUX_VMWLCH_H" {
                continue;
            }
            assert!(
                mirrored.contains(k.as_str()),
                "header constant {k} is not mirrored in vmwlch/uapi.rs"
            );
        }
    }
}
