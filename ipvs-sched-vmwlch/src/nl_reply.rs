// SPDX-License-Identifier: GPL-2.0

//! The replies of the VMWLCH family: a host (GET_HOST, its dump) and the
//! module's counters (GET_INFO).

use kernel::alloc::AllocError;
use kernel::prelude::*;

use crate::ffi::{self, Msg, MsgFull, RawCounters};
use crate::snapshot::nowarn;
use crate::state::{Inner, Member};
use crate::uapi::*;

/// Outcome of filling one host message.
pub(crate) enum Fill {
    /// The host is complete in this message.
    Done,
    /// The skb filled up; continue with this member offset.
    Partial(u32),
}

/// Every host's load and members, computed once for a part of a GET_HOST
/// dump: a part fills many hosts under the namespace lock (IPVS callbacks
/// wait on it, holding `__ip_vs_mutex`), and computing each host apart
/// costs a pass over every destination and member per host.
pub(crate) struct HostIndex {
    /// Per host: activeconns, inactconns, destinations.
    loads: KVVec<(u64, u64, u32)>,
    /// The members of host `h` are `inner.members[order[k]]` for `k` in
    /// `start[h]..start[h + 1]`, in address order.
    start: KVVec<u32>,
    order: KVVec<u32>,
}

impl HostIndex {
    /// O(destinations x log(members) + members + hosts).
    pub(crate) fn build(inner: &Inner) -> Result<KBox<HostIndex>, AllocError> {
        let hosts = inner.hosts.len();
        let mut loads = KVVec::from_elem((0u64, 0u64, 0u32), hosts, nowarn())?;
        for (_, dest, addr) in inner.tracked() {
            let Some(l) = inner.host_of(addr).and_then(|h| loads.get_mut(h as usize)) else {
                continue;
            };
            // SAFETY: tracked destinations are live under the mutex (they
            // leave the set before IPVS unlinks them).
            let d = unsafe { ffi::dest_live(dest) };
            l.0 =
                l.0.saturating_add(u64::from(d.activeconns.max(0).unsigned_abs()));
            l.1 =
                l.1.saturating_add(u64::from(d.inactconns.max(0).unsigned_abs()));
            l.2 = l.2.saturating_add(1);
        }
        // Counting sort of the members by host (stable: address order kept).
        let mut start = KVVec::from_elem(0u32, hosts + 1, nowarn())?;
        for m in inner.members.iter() {
            if let Some(c) = start.get_mut(m.host as usize + 1) {
                *c += 1;
            }
        }
        let mut acc = 0u32;
        for c in start.iter_mut() {
            acc = acc.saturating_add(*c);
            *c = acc;
        }
        let mut next = KVVec::with_capacity(hosts, nowarn())?;
        next.extend_from_slice(start.get(..hosts).unwrap_or(&[]), nowarn())?;
        let mut order = KVVec::from_elem(0u32, inner.members.len(), nowarn())?;
        for (k, m) in inner.members.iter().enumerate() {
            if let Some(n) = next.get_mut(m.host as usize) {
                if let Some(slot) = order.get_mut(*n as usize) {
                    *slot = k as u32;
                }
                *n += 1;
            }
        }
        KBox::new(
            HostIndex {
                loads,
                start,
                order,
            },
            nowarn(),
        )
    }

    fn members<'a>(&'a self, inner: &'a Inner, idx: u32) -> impl Iterator<Item = &'a Member> + 'a {
        let (a, b) = (
            self.start.get(idx as usize).copied().unwrap_or(0),
            self.start.get(idx as usize + 1).copied().unwrap_or(0),
        );
        self.order
            .get(a as usize..b as usize)
            .unwrap_or(&[])
            .iter()
            .filter_map(|&k| inner.members.get(k as usize))
    }
}

/// Writes host `idx` starting at its `member_off`-th member, from `index`
/// when the caller built one for `inner` as it is (a dump part), else
/// computing the host's figures (one host: GET_HOST).
pub(crate) fn fill_host(
    inner: &Inner,
    index: Option<&HostIndex>,
    idx: u32,
    member_off: u32,
    msg: &mut Msg,
) -> Result<Fill, MsgFull> {
    let Some(h) = inner.hosts.get(idx as usize) else {
        return Ok(Fill::Done);
    };
    msg.put_str(VMWLCH_A_HOST_NAME, h.name())?;
    if member_off == 0 {
        let (a, i, n) = match index.and_then(|x| x.loads.get(idx as usize)) {
            Some(&l) => l,
            None => inner.host_load(idx),
        };
        msg.put_u32(VMWLCH_A_HOST_WEIGHT, h.weight)?;
        msg.put_u64(VMWLCH_A_HOST_ACTIVECONNS, a)?;
        msg.put_u64(VMWLCH_A_HOST_INACTCONNS, i)?;
        msg.put_u32(VMWLCH_A_HOST_DESTS, n)?;
    }
    let nest = msg.nest_start(VMWLCH_A_HOST_MEMBERS)?;
    let mut k: u32 = 0;
    let mut put: u32 = 0;
    let mut scan = inner.members.iter().filter(|m| m.host == idx);
    let mut indexed = index.map(|x| x.members(inner, idx));
    let mut next = || match indexed.as_mut() {
        Some(it) => it.next(),
        None => scan.next(),
    };
    while let Some(m) = next() {
        if k >= member_off {
            if msg.put_bytes(VMWLCH_MEMBER_A_ADDR, m.addr.wire()).is_err() {
                msg.nest_end(nest);
                if put == 0 {
                    return Err(MsgFull);
                }
                return Ok(Fill::Partial(k));
            }
            put += 1;
        }
        k += 1;
    }
    msg.nest_end(nest);
    Ok(Fill::Done)
}

/// Writes the info reply; `current`: the published snapshot is current.
pub(crate) fn fill_info(
    inner: &Inner,
    c: &RawCounters,
    current: bool,
    msg: &mut Msg,
) -> Result<(), MsgFull> {
    let (svcs, dests) = inner.counts();
    msg.put_str(VMWLCH_A_INFO_VERSION, crate::VERSION.as_bytes())?;
    msg.put_u32(VMWLCH_A_INFO_MAX_HOSTS, VMWLCH_MAX_HOSTS as u32)?;
    msg.put_u32(VMWLCH_A_INFO_MAX_MEMBERS, VMWLCH_MAX_MEMBERS as u32)?;
    msg.put_u32(VMWLCH_A_INFO_HOSTS, inner.hosts.len() as u32)?;
    msg.put_u32(VMWLCH_A_INFO_MEMBERS, inner.members.len() as u32)?;
    msg.put_u32(VMWLCH_A_INFO_SERVICES, svcs as u32)?;
    msg.put_u32(VMWLCH_A_INFO_DESTS, dests as u32)?;
    msg.put_u64(VMWLCH_A_INFO_DECISIONS, c.decisions)?;
    msg.put_u64(VMWLCH_A_INFO_NO_DEST, c.no_dest)?;
    msg.put_u32(VMWLCH_A_INFO_GENERATION, inner.generation)?;
    let p = &inner.pace.stats;
    msg.put_u64(VMWLCH_A_INFO_FALLBACKS, c.fallback)?;
    msg.put_u64(VMWLCH_A_INFO_REBUILDS, p.rebuilds)?;
    msg.put_u64(VMWLCH_A_INFO_DEFERRED, p.deferred)?;
    msg.put_u64(VMWLCH_A_INFO_REBUILD_FAILURES, p.failures)?;
    msg.put_u64(VMWLCH_A_INFO_REBUILD_RETRIES, p.retries)?;
    msg.put_u64(VMWLCH_A_INFO_TRACK_FAILURES, p.track_failures)?;
    msg.put_u32(VMWLCH_A_INFO_SNAPSHOT_CURRENT, u32::from(current))?;
    msg.put_u64(VMWLCH_A_INFO_BUILD_NS, p.build_ns)?;
    // Every call counts as a decision or a no_dest, and fallback is a part
    // of them: the host-aware rest needs no counter of its own (per-CPU
    // sums read while counting may differ by a few: no wrap).
    let calls = c.decisions.saturating_add(c.no_dest);
    msg.put_u64(VMWLCH_A_INFO_HOST_AWARE, calls.saturating_sub(c.fallback))?;
    Ok(())
}
