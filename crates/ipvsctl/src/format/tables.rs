//! The whole listings: the version header, every service or one,
//! the timeouts and the sync daemons.

use super::*;

/// The version header of `list_all`.
pub fn header(info: &Info) -> String {
    format!(
        "IP Virtual Server version {}.{}.{} (size={})\n",
        (info.version >> 16) & 0xff,
        (info.version >> 8) & 0xff,
        info.version & 0xff,
        info.conn_tab_size as i32
    )
}

/// `list_all`: header (not for rules), title, then each service.
pub fn list_all(info: &Info, entries: &[Entry], format: u32, res: &dyn Resolver) -> String {
    let mut out = String::new();
    if format & FMT_RULE == 0 {
        out.push_str(&header(info));
    }
    let mut v: Vec<&Entry> = entries.iter().collect();
    sort_entries(&mut v, format);
    out.push_str(&title(format));
    for (s, d) in v {
        write_service_entry(&mut out, s, d, format, res);
    }
    out
}

/// `list_service` (`-L -t addr:port`): title and the one service.
pub fn list_service(entry: &Entry, format: u32, res: &dyn Resolver) -> String {
    let mut out = title(format);
    out.push_str(&service_entry(&entry.0, &entry.1, format, res));
    out
}

/// `--timeout`.
pub fn timeouts(t: &Timeouts) -> String {
    format!(
        "Timeout (tcp tcpfin udp): {} {} {}\n",
        t.tcp as i32, t.tcp_fin as i32, t.udp as i32
    )
}

/// `--daemon`.
pub fn daemons(ds: &[SyncDaemon]) -> String {
    let mut out = String::new();
    for d in ds.iter().take(2) {
        let _ = write!(
            out,
            "{} sync daemon (mcast={}, syncid={}",
            d.state.name(),
            d.mcast_ifn,
            d.sync_id as i32
        );
        if let Some(m) = d.sync_maxlen.filter(|m| *m != 0) {
            let _ = write!(out, ", maxlen={m}");
        }
        if let Some(g) = &d.mcast_group {
            let _ = write!(out, ", group={}", ntop(g));
        }
        if let Some(p) = d.mcast_port.filter(|p| *p != 0) {
            let _ = write!(out, ", port={p}");
        }
        if let Some(t) = d.mcast_ttl.filter(|t| *t != 0) {
            let _ = write!(out, ", ttl={t}");
        }
        out.push_str(")\n");
    }
    out
}
