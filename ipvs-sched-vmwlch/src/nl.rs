// SPDX-License-Identifier: GPL-2.0

//! The VMWLCH generic netlink commands: parsing of the (policy-validated)
//! attribute stream, semantic validation and the all-or-nothing updates of
//! the host map, and the dump/info replies.

use kernel::prelude::*;

use crate::ffi::{sk_buff, Msg, RawCounters};
use crate::snapshot::nowarn;
use crate::state::{Addr, Host, Inner, Member, NetState};
use crate::uapi::*;

pub(crate) use reply::{fill_host, fill_info, Fill, HostIndex};

#[path = "nl_reply.rs"]
mod reply;

/// Netlink header flags masked off the attribute type.
const NLA_TYPE_MASK: u16 = !(0x8000 | 0x4000);

/// A rejected request: errno, a static message for extack, and the offset
/// of the offending attribute in the request's attribute stream (or -1).
pub(crate) struct Reject {
    pub(crate) err: Error,
    pub(crate) msg: &'static CStr,
    pub(crate) bad: i32,
}

fn reject(err: Error, msg: &'static CStr, bad: Option<usize>) -> Reject {
    Reject {
        err,
        msg,
        bad: bad.and_then(|b| i32::try_from(b).ok()).unwrap_or(-1),
    }
}

fn oom() -> Reject {
    reject(ENOMEM, kernel::c_str!("out of memory"), None)
}

/// One attribute: type, payload and the offset of its header in the request.
#[derive(Clone, Copy)]
struct Nla<'a> {
    ty: u16,
    payload: &'a [u8],
    off: usize,
}

/// Iterates the attributes in `buf`, whose first byte is at offset `base`.
struct Attrs<'a> {
    buf: &'a [u8],
    pos: usize,
    base: usize,
}

fn attrs(buf: &[u8], base: usize) -> Attrs<'_> {
    Attrs { buf, pos: 0, base }
}

impl<'a> Iterator for Attrs<'a> {
    type Item = Result<Nla<'a>, Reject>;

    fn next(&mut self) -> Option<Self::Item> {
        let rest = self.buf.get(self.pos..)?;
        if rest.len() < 4 {
            return None;
        }
        let off = self.base + self.pos;
        let len = usize::from(u16::from_ne_bytes([rest[0], rest[1]]));
        let ty = u16::from_ne_bytes([rest[2], rest[3]]) & NLA_TYPE_MASK;
        let Some(payload) = rest.get(4..len) else {
            self.pos = self.buf.len();
            return Some(Err(reject(
                EINVAL,
                kernel::c_str!("malformed attribute"),
                Some(off),
            )));
        };
        self.pos += (len + 3) & !3;
        Some(Ok(Nla { ty, payload, off }))
    }
}

/// A string attribute's bytes up to the NUL.
fn nla_str(p: &[u8]) -> &[u8] {
    let n = p.iter().position(|&c| c == 0).unwrap_or(p.len());
    p.get(..n).unwrap_or(&[])
}

fn nla_u32(p: &[u8]) -> Option<u32> {
    let b: [u8; 4] = p.get(..4)?.try_into().ok()?;
    Some(u32::from_ne_bytes(b))
}

fn valid_name(n: &[u8]) -> bool {
    !n.is_empty()
        && n.len() < VMWLCH_HOST_NAME_MAX
        && n.iter()
            .all(|&c| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'_' | b'-' | b':'))
}

/// The host-level attributes of a request (top level or inside `HOST`).
#[derive(Default)]
struct HostReq<'a> {
    name: Option<Nla<'a>>,
    weight: Option<u32>,
    members: Option<Nla<'a>>,
}

fn parse_host_attrs<'a>(buf: &'a [u8], base: usize, cmd: u8) -> Result<HostReq<'a>, Reject> {
    let mut r = HostReq::default();
    for a in attrs(buf, base) {
        let a = a?;
        match a.ty {
            VMWLCH_A_HOST_NAME => r.name = Some(a),
            VMWLCH_A_HOST_WEIGHT => {
                let w = nla_u32(a.payload).ok_or_else(|| {
                    reject(
                        EINVAL,
                        kernel::c_str!("HOST_WEIGHT must be a u32"),
                        Some(a.off),
                    )
                })?;
                if w > VMWLCH_MAX_WEIGHT {
                    return Err(reject(
                        EINVAL,
                        kernel::c_str!("host weight above 65535"),
                        Some(a.off),
                    ));
                }
                r.weight = Some(w);
            }
            VMWLCH_A_HOST_MEMBERS => r.members = Some(a),
            VMWLCH_A_HOST if cmd == VMWLCH_CMD_REPLACE_MAP => {}
            _ => {
                return Err(reject(
                    EINVAL,
                    kernel::c_str!("attribute not valid for this command"),
                    Some(a.off),
                ))
            }
        }
    }
    Ok(r)
}

fn req_name<'a>(r: &HostReq<'a>) -> Result<&'a [u8], Reject> {
    let Some(a) = r.name else {
        return Err(reject(EINVAL, kernel::c_str!("missing HOST_NAME"), None));
    };
    let n = nla_str(a.payload);
    if !valid_name(n) {
        return Err(reject(
            EINVAL,
            kernel::c_str!("host name must be 1-63 characters of A-Z a-z 0-9 . _ - :"),
            Some(a.off),
        ));
    }
    Ok(n)
}

/// Parses a HOST_MEMBERS nest into a sorted, de-duplicated address list.
fn parse_members(nest: Nla<'_>) -> Result<KVVec<Addr>, Reject> {
    let mut v = KVVec::new();
    for a in attrs(nest.payload, nest.off + 4) {
        let a = a?;
        if a.ty != VMWLCH_MEMBER_A_ADDR {
            return Err(reject(
                EINVAL,
                kernel::c_str!("unknown member attribute"),
                Some(a.off),
            ));
        }
        let addr = Addr::from_wire(a.payload).ok_or_else(|| {
            reject(
                EINVAL,
                kernel::c_str!("member address must be 4 (IPv4) or 16 (IPv6) bytes"),
                Some(a.off),
            )
        })?;
        if v.len() >= VMWLCH_MAX_MEMBERS {
            return Err(reject(
                E2BIG,
                kernel::c_str!("too many member addresses (limit 65536)"),
                Some(a.off),
            ));
        }
        v.push(addr, nowarn()).map_err(|_| oom())?;
    }
    crate::sort::sort(v.as_mut_slice());
    let mut w = 0;
    for r in 0..v.len() {
        let cur = v[r];
        if w == 0 || v[w - 1] != cur {
            v[w] = cur;
            w += 1;
        }
    }
    if w < v.len() {
        // SAFETY: `w` is below the length, so the first `w` elements are
        // initialised; `Addr` is `Copy` (nothing to drop).
        unsafe { v.set_len(w) };
    }
    Ok(v)
}

/// Maps `addrs` to host `idx` (moving addresses mapped elsewhere). All-or-nothing.
fn map_members(inner: &mut Inner, idx: u32, addrs: &[Addr]) -> Result<(), Reject> {
    let new = addrs.iter().filter(|a| inner.host_of(a).is_none()).count();
    if inner.members.len() + new > VMWLCH_MAX_MEMBERS {
        return Err(reject(
            ENOSPC,
            kernel::c_str!("too many mapped addresses (limit 65536)"),
            None,
        ));
    }
    inner.members.reserve(new, nowarn()).map_err(|_| oom())?;
    // Nothing below can fail.
    let old_len = inner.members.len();
    for a in addrs {
        match inner
            .members
            .get(..old_len)
            .unwrap_or(&[])
            .binary_search_by(|m| m.addr.cmp(a))
        {
            Ok(i) => {
                if let Some(m) = inner.members.get_mut(i) {
                    m.host = idx;
                }
            }
            Err(_) => {
                let _ = inner.members.push(
                    Member {
                        addr: *a,
                        host: idx,
                    },
                    nowarn(),
                );
            }
        }
    }
    crate::sort::sort_by(inner.members.as_mut_slice(), |a, b| a.addr < b.addr);
    Ok(())
}

fn cmd_set_host(inner: &mut Inner, r: &HostReq<'_>, add_only: bool) -> Result<(), Reject> {
    let name = req_name(r)?;
    let addrs = match r.members {
        Some(m) => parse_members(m)?,
        None if add_only => {
            return Err(reject(EINVAL, kernel::c_str!("missing HOST_MEMBERS"), None))
        }
        None => KVVec::new(),
    };
    let idx = match inner.host_index(name) {
        Some(i) => i,
        None if add_only => {
            return Err(reject(
                ENOENT,
                kernel::c_str!("no such host"),
                r.name.map(|a| a.off),
            ))
        }
        None => {
            if inner.hosts.len() >= VMWLCH_MAX_HOSTS {
                return Err(reject(
                    ENOSPC,
                    kernel::c_str!("too many hosts (limit 1024)"),
                    r.name.map(|a| a.off),
                ));
            }
            // Make room for both changes before making either.
            inner.hosts.reserve(1, nowarn()).map_err(|_| oom())?;
            let new = addrs.iter().filter(|a| inner.host_of(a).is_none()).count();
            if inner.members.len() + new > VMWLCH_MAX_MEMBERS {
                return Err(reject(
                    ENOSPC,
                    kernel::c_str!("too many mapped addresses (limit 65536)"),
                    None,
                ));
            }
            inner.members.reserve(new, nowarn()).map_err(|_| oom())?;
            let weight = r.weight.unwrap_or(VMWLCH_DEFAULT_WEIGHT);
            inner
                .hosts
                .push(Host::new(name, weight), nowarn())
                .map_err(|_| oom())?;
            inner.hosts.len() - 1
        }
    };
    map_members(inner, idx as u32, &addrs)?;
    if let (Some(w), Some(h)) = (r.weight, inner.hosts.get_mut(idx)) {
        h.weight = w;
    }
    Ok(())
}

fn cmd_del_host(inner: &mut Inner, r: &HostReq<'_>) -> Result<(), Reject> {
    let name = req_name(r)?;
    let idx = inner.host_index(name).ok_or_else(|| {
        reject(
            ENOENT,
            kernel::c_str!("no such host"),
            r.name.map(|a| a.off),
        )
    })?;
    inner.del_host(idx);
    Ok(())
}

fn cmd_del_members(inner: &mut Inner, r: &HostReq<'_>) -> Result<(), Reject> {
    let Some(nest) = r.members else {
        return Err(reject(EINVAL, kernel::c_str!("missing HOST_MEMBERS"), None));
    };
    let addrs = parse_members(nest)?;
    if let Some(name) = r.name {
        let n = nla_str(name.payload);
        let idx = inner
            .host_index(n)
            .ok_or_else(|| reject(ENOENT, kernel::c_str!("no such host"), Some(name.off)))?;
        if addrs.iter().any(|a| inner.host_of(a) != Some(idx as u32)) {
            return Err(reject(
                ENOENT,
                kernel::c_str!("an address is not mapped to this host"),
                Some(nest.off),
            ));
        }
    } else if addrs.iter().any(|a| inner.host_of(a).is_none()) {
        return Err(reject(
            ENOENT,
            kernel::c_str!("an address is not mapped"),
            Some(nest.off),
        ));
    }
    inner.unmap(&addrs);
    Ok(())
}

fn cmd_replace(inner: &mut Inner, buf: &[u8]) -> Result<(), Reject> {
    let mut hosts: KVVec<Host> = KVVec::new();
    let mut members: KVVec<Member> = KVVec::new();
    for a in attrs(buf, 0) {
        let a = a?;
        if a.ty != VMWLCH_A_HOST {
            return Err(reject(
                EINVAL,
                kernel::c_str!("REPLACE_MAP takes only HOST attributes"),
                Some(a.off),
            ));
        }
        let r = parse_host_attrs(a.payload, a.off + 4, VMWLCH_CMD_SET_HOST)?;
        let name = req_name(&r)?;
        if hosts.iter().any(|h| h.name() == name) {
            return Err(reject(
                EINVAL,
                kernel::c_str!("duplicate host name"),
                r.name.map(|n| n.off),
            ));
        }
        if hosts.len() >= VMWLCH_MAX_HOSTS {
            return Err(reject(
                ENOSPC,
                kernel::c_str!("too many hosts (limit 1024)"),
                Some(a.off),
            ));
        }
        let idx = hosts.len() as u32;
        hosts
            .push(
                Host::new(name, r.weight.unwrap_or(VMWLCH_DEFAULT_WEIGHT)),
                nowarn(),
            )
            .map_err(|_| oom())?;
        if let Some(m) = r.members {
            for addr in parse_members(m)?.iter() {
                if members.len() >= VMWLCH_MAX_MEMBERS {
                    return Err(reject(
                        ENOSPC,
                        kernel::c_str!("too many mapped addresses (limit 65536)"),
                        Some(m.off),
                    ));
                }
                members
                    .push(
                        Member {
                            addr: *addr,
                            host: idx,
                        },
                        nowarn(),
                    )
                    .map_err(|_| oom())?;
            }
        }
    }
    crate::sort::sort_by(members.as_mut_slice(), |a, b| a.addr < b.addr);
    if members.windows(2).any(|w| w[0].addr == w[1].addr) {
        return Err(reject(
            EINVAL,
            kernel::c_str!("an address is listed under two hosts"),
            None,
        ));
    }
    inner.hosts = hosts;
    inner.members = members;
    Ok(())
}

/// A copy of the map, to put back should the changed map's snapshot not
/// be built: O(map), less than the build it guards.
fn saved_map(inner: &Inner) -> Result<(KVVec<Host>, KVVec<Member>), Reject> {
    let mut hosts = KVVec::with_capacity(inner.hosts.len(), nowarn()).map_err(|_| oom())?;
    hosts
        .extend_from_slice(&inner.hosts, nowarn())
        .map_err(|_| oom())?;
    let mut members = KVVec::with_capacity(inner.members.len(), nowarn()).map_err(|_| oom())?;
    members
        .extend_from_slice(&inner.members, nowarn())
        .map_err(|_| oom())?;
    Ok((hosts, members))
}

/// Runs a changing command, all or nothing: the new map and the snapshot
/// that shows it, or (out of memory building that) ENOMEM, the previous map
/// and the previous snapshot.
pub(crate) fn command(st: &NetState, inner: &mut Inner, cmd: u8, buf: &[u8]) -> Result<(), Reject> {
    let saved = saved_map(inner)?;
    if let Err(e) = apply(inner, cmd, buf) {
        // Commands validate and reserve before they change anything; should
        // one fail after a first change all the same, that goes back too.
        (inner.hosts, inner.members) = saved;
        return Err(e);
    }
    if st.map_changed(inner).is_err() {
        (inner.hosts, inner.members) = saved;
        return Err(reject(
            ENOMEM,
            kernel::c_str!("out of memory building the scheduling snapshot: the map is unchanged"),
            None,
        ));
    }
    Ok(())
}

/// Applies a changing command to the map.
fn apply(inner: &mut Inner, cmd: u8, buf: &[u8]) -> Result<(), Reject> {
    match cmd {
        VMWLCH_CMD_SET_HOST | VMWLCH_CMD_ADD_MEMBERS => {
            let r = parse_host_attrs(buf, 0, cmd)?;
            cmd_set_host(inner, &r, cmd == VMWLCH_CMD_ADD_MEMBERS)?;
        }
        VMWLCH_CMD_DEL_HOST => {
            let r = parse_host_attrs(buf, 0, cmd)?;
            if r.weight.is_some() || r.members.is_some() {
                return Err(reject(
                    EINVAL,
                    kernel::c_str!("DEL_HOST takes only HOST_NAME"),
                    None,
                ));
            }
            cmd_del_host(inner, &r)?;
        }
        VMWLCH_CMD_DEL_MEMBERS => {
            let r = parse_host_attrs(buf, 0, cmd)?;
            cmd_del_members(inner, &r)?;
        }
        VMWLCH_CMD_REPLACE_MAP => cmd_replace(inner, buf)?,
        VMWLCH_CMD_FLUSH => {
            if let Some(a) = attrs(buf, 0).next() {
                let off = a.map(|a| a.off).ok();
                return Err(reject(
                    EINVAL,
                    kernel::c_str!("FLUSH takes no attributes"),
                    off,
                ));
            }
            inner.hosts = KVVec::new();
            inner.members = KVVec::new();
        }
        _ => {
            return Err(reject(
                Error::from_errno(-(kernel::bindings::EOPNOTSUPP as i32)),
                kernel::c_str!("unknown command"),
                None,
            ))
        }
    }
    Ok(())
}

/// Where a do-command's reply goes (GET_HOST, GET_INFO).
pub(crate) struct Reply {
    /// The reply skb (NULL for commands without a reply).
    pub(crate) skb: *mut sk_buff,
    /// The requester's port and sequence number.
    pub(crate) portid: u32,
    pub(crate) seq: u32,
}

fn emsgsize() -> Error {
    Error::from_errno(-(kernel::bindings::EMSGSIZE as i32))
}

fn msg_size() -> Reject {
    reject(
        emsgsize(),
        kernel::c_str!("host has too many members for one message: use a dump"),
        None,
    )
}

/// Runs a do-command: the changes, and the replies of GET_HOST and GET_INFO.
///
/// # Safety
///
/// `reply.skb` is NULL or a writable skb owned by the caller.
pub(crate) unsafe fn do_cmd(
    st: &NetState,
    inner: &mut Inner,
    cmd: u8,
    buf: &[u8],
    reply: &Reply,
    counters: &RawCounters,
) -> Result<(), Reject> {
    let start = |cmd| {
        if reply.skb.is_null() {
            return Err(reject(EINVAL, kernel::c_str!("no reply buffer"), None));
        }
        // SAFETY: `reply.skb` is valid and ours (contract).
        unsafe { Msg::start(reply.skb, reply.portid, reply.seq, 0, cmd) }.map_err(|_| msg_size())
    };
    match cmd {
        VMWLCH_CMD_GET_HOST => {
            let r = parse_host_attrs(buf, 0, cmd)?;
            let name = req_name(&r)?;
            let Some(idx) = inner.host_index(name) else {
                let off = r.name.map(|a| a.off);
                return Err(reject(ENOENT, kernel::c_str!("no such host"), off));
            };
            let mut msg = start(cmd)?;
            match fill_host(inner, None, idx as u32, 0, &mut msg) {
                Ok(Fill::Done) => msg.end(),
                Ok(Fill::Partial(_)) | Err(_) => return Err(msg_size()),
            }
        }
        VMWLCH_CMD_GET_INFO => {
            let mut msg = start(cmd)?;
            fill_info(inner, counters, st.is_current(), &mut msg).map_err(|_| {
                reject(
                    emsgsize(),
                    kernel::c_str!("the info reply does not fit"),
                    None,
                )
            })?;
            msg.end();
        }
        _ => command(st, inner, cmd, buf)?,
    }
    Ok(())
}
