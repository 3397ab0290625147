// SPDX-License-Identifier: GPL-2.0

//! `ip_vs_vmwlch`: the IPVS schedulers `vmwlc` and `vmwlch`.
//!
//! VM-based weighted least connections: for a new connection, pick the
//! physical host with the least weighted load (`vmwlch`: the aggregate of
//! every service on the host; `vmwlc`: the requested service only), then the
//! least loaded VM of the requested service on that host. User space maps VM
//! addresses to hosts and sets host weights through the `VMWLCH` generic
//! netlink family (`include/uapi/linux/vmwlch.h`).
//!
//! Layout: `select.rs` is the selection (shared with user-space tests),
//! `state.rs` the per-namespace state, `snapshot.rs` the snapshot that
//! `schedule()` reads, `pace.rs` when it is rebuilt, `wlc.rs` the fallback
//! while it is not current, `nl.rs` the netlink commands, `ffi.rs` the only code that calls C, `glue.c` the C side.

use kernel::ffi::{c_char, c_int, c_void};
use kernel::prelude::*;

mod ffi;
mod nl;
mod pace;
#[path = "select.rs"]
pub mod select;
mod snapshot;
mod sort;
mod state;
mod uapi;
mod wlc;

use ffi::{ip_vs_dest, ip_vs_service, sk_buff, Msg};
use pace::Stale;
use state::{Decision, Inner, NetState};

/// Version reported by `VMWLCH_CMD_GET_INFO`.
pub(crate) const VERSION: &str = "0.1.0";

module! {
    type: VmwlchModule,
    name: "ip_vs_vmwlch",
    description: "IPVS VM-based weighted least-connection schedulers (vmwlc, vmwlch)",
    license: "GPL",
    // `-s vmwlc` autoloads us too; so does a lookup of the netlink family.
    alias: ["ip_vs_vmwlc", "net-pf-16-proto-16-family-VMWLCH"],
}

struct VmwlchModule;

impl kernel::Module for VmwlchModule {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        // SAFETY: called once at module init, before any other entry point.
        let ret = unsafe { ffi::glue_init() };
        if ret != 0 {
            return Err(Error::from_errno(ret));
        }
        pr_info!(
            "vmwlc and vmwlch schedulers registered (version {})\n",
            VERSION
        );
        Ok(VmwlchModule)
    }
}

impl Drop for VmwlchModule {
    fn drop(&mut self) {
        // SAFETY: module exit; `init` succeeded. IPVS holds a module
        // reference while any service uses our schedulers.
        unsafe { ffi::glue_exit() };
    }
}

/// The state behind the opaque pointer C passes back to us.
///
/// # Safety
///
/// `p` came from [`vmwlch_rs_net_new`] and has not been passed to
/// [`vmwlch_rs_net_free`].
unsafe fn state<'a>(p: *mut c_void) -> &'a NetState {
    // SAFETY: per the contract, `p` points to a live `NetState`.
    unsafe { &*p.cast::<NetState>() }
}

/// A scheduler callback's change of the tracked services and destinations;
/// `change` says what it leaves of the published snapshot ([`Stale`]), or
/// `None` if it does not affect it.
///
/// # Safety
///
/// As for [`state`]; called with `vmwlch_net.lock` held.
unsafe fn edit(p: *mut c_void, change: impl FnOnce(&NetState, &mut Inner) -> Option<Stale>) {
    // SAFETY: per the contract.
    let st = unsafe { state(p) };
    // SAFETY: `vmwlch_net.lock` is held.
    let inner = unsafe { st.inner_mut() };
    if let Some(stale) = change(st, inner) {
        st.changed(inner, stale);
    }
}

fn scope(kind: c_int) -> select::Scope {
    if kind == 0 {
        select::Scope::Service
    } else {
        select::Scope::Aggregate
    }
}

/// Allocates the state of a new network namespace (NULL on failure); `vn`
/// is the glue's per-namespace data (for the rebuild work item).
#[no_mangle]
extern "C" fn vmwlch_rs_net_new(vn: *mut c_void) -> *mut c_void {
    match NetState::new(vn) {
        Ok(b) => KBox::into_raw(b).cast(),
        Err(_) => core::ptr::null_mut(),
    }
}

/// Frees a namespace's state.
///
/// # Safety
///
/// `p` came from `vmwlch_rs_net_new`; no reader can reach it any more (the
/// glue unpublished it and waited for a grace period).
#[no_mangle]
unsafe extern "C" fn vmwlch_rs_net_free(p: *mut c_void) {
    if !p.is_null() {
        // SAFETY: per the contract we own the allocation again.
        drop(unsafe { KBox::from_raw(p.cast::<NetState>()) });
    }
}

/// `init_service`: start tracking a service.
///
/// # Safety
///
/// `st` is a live state; called with `vmwlch_net.lock` and the IPVS config mutex held.
#[no_mangle]
unsafe extern "C" fn vmwlch_rs_init_service(
    st: *mut c_void,
    svc: *mut ip_vs_service,
    _kind: c_int,
) -> c_int {
    // SAFETY: per the contract.
    let st = unsafe { state(st) };
    // SAFETY: `vmwlch_net.lock` is held.
    let inner = unsafe { st.inner_mut() };
    // SAFETY: the IPVS config mutex is held.
    match unsafe { inner.init_service(svc) } {
        Ok(()) => {
            // The snapshot has no view of the new service: stale.
            st.changed(inner, Stale::All);
            0
        }
        Err(e) => e.to_errno(),
    }
}

/// `done_service`: stop tracking a service.
///
/// # Safety
///
/// As for [`vmwlch_rs_init_service`].
#[no_mangle]
unsafe extern "C" fn vmwlch_rs_done_service(st: *mut c_void, svc: *mut ip_vs_service) {
    let untrack = |_: &NetState, inner: &mut Inner| {
        inner.done_service(svc);
        // IPVS frees the service's destinations after this: stale.
        Some(Stale::All)
    };
    // SAFETY: per the contract.
    unsafe { edit(st, untrack) };
}

/// `add_dest`: track a new destination.
///
/// # Safety
///
/// As for [`vmwlch_rs_init_service`]; `dest` was just linked to `svc`.
#[no_mangle]
unsafe extern "C" fn vmwlch_rs_add_dest(
    st: *mut c_void,
    svc: *mut ip_vs_service,
    dest: *mut ip_vs_dest,
) {
    let track = |st: &NetState, inner: &mut Inner| {
        // SAFETY: the IPVS config mutex is held.
        if unsafe { inner.add_dest(svc, dest) }.is_err() {
            // IPVS ignores add_dest's result: the service is re-read at the
            // next rebuild (and retried until that succeeds).
            st.track_failed(inner);
        }
        // Not in the snapshot: the service's view is stale until one that
        // has it is published. The others' host loads miss its connections
        // (none yet) until then.
        Some(Stale::Service(svc))
    };
    // SAFETY: per the contract.
    unsafe { edit(st, track) };
}

/// `del_dest`: stop tracking a destination.
///
/// # Safety
///
/// As for [`vmwlch_rs_init_service`].
#[no_mangle]
unsafe extern "C" fn vmwlch_rs_del_dest(
    st: *mut c_void,
    svc: *mut ip_vs_service,
    dest: *mut ip_vs_dest,
) {
    let untrack = |_: &NetState, inner: &mut Inner| {
        inner.del_dest(svc, dest);
        // IPVS frees it after a grace period: no decision may use a
        // snapshot that names it from now on.
        Some(Stale::All)
    };
    // SAFETY: per the contract.
    unsafe { edit(st, untrack) };
}

/// `upd_dest`: a destination's weight or flags were edited.
///
/// # Safety
///
/// As for [`vmwlch_rs_init_service`].
#[no_mangle]
unsafe extern "C" fn vmwlch_rs_upd_dest(
    st: *mut c_void,
    svc: *mut ip_vs_service,
    dest: *mut ip_vs_dest,
) {
    // Only a weight that becomes positive (the service's view may lack its
    // host) or stops being so (outdated) matters (see `Inner::upd_dest`);
    // other edits leave the snapshot exact. Other services' views do not
    // depend on this service's weights.
    let weight = |_: &NetState, inner: &mut Inner| {
        // SAFETY: the IPVS config mutex is held (contract).
        unsafe { inner.upd_dest(svc, dest) }.map(|positive| {
            if positive {
                Stale::Service(svc)
            } else {
                Stale::No
            }
        })
    };
    // SAFETY: per the contract.
    unsafe { edit(st, weight) };
}

/// The rebuild work item: rebuilds the snapshot if one is pending.
///
/// # Safety
///
/// `st` is a live state; called with `vmwlch_net.lock` held, from process context.
#[no_mangle]
unsafe extern "C" fn vmwlch_rs_rebuild_work(st: *mut c_void) {
    // SAFETY: per the contract.
    let st = unsafe { state(st) };
    // SAFETY: `vmwlch_net.lock` is held.
    let inner = unsafe { st.inner_mut() };
    st.work(inner);
}

/// `schedule`: pick a destination (NULL if none is eligible). Without a
/// current snapshot (or without a state: the namespace is going away), plain
/// wlc decides and `*fallback` is set.
///
/// # Safety
///
/// `st` is NULL or a live state reached through `rcu_dereference` inside the
/// RCU read-side section that IPVS holds around `schedule`; `svc` is live
/// and bound to one of our schedulers; `fallback` is writable.
#[no_mangle]
unsafe extern "C" fn vmwlch_rs_schedule(
    st: *mut c_void,
    svc: *mut ip_vs_service,
    kind: c_int,
    seed: u64,
    cost: u32,
    fallback: *mut c_int,
) -> *mut ip_vs_dest {
    let decision = if st.is_null() {
        Decision::Stale
    } else {
        // SAFETY: per the contract: `st` is a live state, `svc` is live and
        // bound to our scheduler, inside IPVS's RCU read-side section.
        unsafe { state(st).schedule(svc, scope(kind), seed, cost) }
    };
    match decision {
        Decision::Chosen(d) => d,
        Decision::NoDest => core::ptr::null_mut(),
        Decision::Stale => {
            // SAFETY: writable (contract).
            unsafe { *fallback = 1 };
            // SAFETY: `svc` is live, inside the RCU read-side section.
            unsafe { wlc::schedule(svc) }
        }
    }
}

/// A netlink do-command (see glue.h).
///
/// # Safety
///
/// `st` is a live state, `vmwlch_net.lock` is held, `attrs` points to `len`
/// readable bytes, `reply` is NULL or a writable skb owned by the caller,
/// `counters` is readable, `msg` and `bad_off` are writable.
#[no_mangle]
unsafe extern "C" fn vmwlch_rs_do(
    st: *mut c_void,
    cmd: u8,
    attrs: *const c_void,
    len: c_int,
    reply: *mut sk_buff,
    portid: u32,
    seq: u32,
    counters: *const ffi::RawCounters,
    msg: *mut *const c_char,
    bad_off: *mut c_int,
) -> c_int {
    // SAFETY: per the contract.
    let st = unsafe { state(st) };
    // SAFETY: `vmwlch_net.lock` is held.
    let inner = unsafe { st.inner_mut() };
    let len = usize::try_from(len).unwrap_or(0);
    let buf: &[u8] = if attrs.is_null() || len == 0 {
        &[]
    } else {
        // SAFETY: `attrs` points to `len` readable bytes (the request).
        unsafe { core::slice::from_raw_parts(attrs.cast::<u8>(), len) }
    };
    let reply = nl::Reply {
        skb: reply,
        portid,
        seq,
    };
    // SAFETY: `counters` is readable (contract).
    let counters = unsafe { &*counters };
    // SAFETY: `reply.skb` is NULL or valid and ours (contract).
    match unsafe { nl::do_cmd(st, inner, cmd, buf, &reply, counters) } {
        Ok(()) => 0,
        Err(r) => {
            // SAFETY: `msg` and `bad_off` are writable (contract).
            unsafe {
                *msg = r.msg.as_char_ptr();
                *bad_off = r.bad;
            }
            r.err.to_errno()
        }
    }
}

/// The map's and tracked set's generation: a host dump whose parts saw
/// different ones is flagged `NLM_F_DUMP_INTR`.
///
/// # Safety
///
/// `st` is a live state and `vmwlch_net.lock` is held.
#[no_mangle]
unsafe extern "C" fn vmwlch_rs_generation(st: *mut c_void) -> u32 {
    // SAFETY: per the contract.
    unsafe { state(st).inner_mut() }.generation
}

/// Every host's figures for one part of a GET_HOST dump (NULL: out of memory).
///
/// # Safety
///
/// `st` is a live state and `vmwlch_net.lock` is held.
#[no_mangle]
unsafe extern "C" fn vmwlch_rs_dump_index(st: *mut c_void) -> *mut c_void {
    // SAFETY: per the contract.
    let inner = unsafe { state(st).inner_mut() };
    match nl::HostIndex::build(inner) {
        Ok(b) => KBox::into_raw(b).cast(),
        Err(_) => core::ptr::null_mut(),
    }
}

/// Frees what [`vmwlch_rs_dump_index`] returned (NULL: nothing).
///
/// # Safety
///
/// `index` came from `vmwlch_rs_dump_index` and is not used afterwards.
#[no_mangle]
unsafe extern "C" fn vmwlch_rs_dump_index_free(index: *mut c_void) {
    if !index.is_null() {
        // SAFETY: per the contract we own it again.
        drop(unsafe { KBox::from_raw(index.cast::<nl::HostIndex>()) });
    }
}

/// Writes one host message into `skb` (see glue.h for the return values).
///
/// # Safety
///
/// `st` is a live state, `vmwlch_net.lock` is held, `index` is NULL or came
/// from `vmwlch_rs_dump_index` under this hold of the lock, `skb` is a
/// writable skb owned by the caller, `member_off` is writable.
#[no_mangle]
unsafe extern "C" fn vmwlch_rs_fill_host(
    st: *mut c_void,
    index: *mut c_void,
    idx: u32,
    member_off: *mut u32,
    skb: *mut sk_buff,
    portid: u32,
    seq: u32,
    flags: c_int,
) -> c_int {
    // SAFETY: per the contract.
    let inner = unsafe { state(st).inner_mut() };
    if idx as usize >= inner.hosts.len() {
        return ENOENT.to_errno();
    }
    // SAFETY: `member_off` is writable (contract).
    let off = unsafe { *member_off };
    // SAFETY: `skb` is valid and ours (contract).
    let Ok(mut msg) = (unsafe { Msg::start(skb, portid, seq, flags, uapi::VMWLCH_CMD_GET_HOST) })
    else {
        return -(kernel::bindings::EMSGSIZE as c_int);
    };
    // SAFETY: NULL or a live index of this state as it is (contract).
    let index = unsafe { index.cast::<nl::HostIndex>().as_ref() };
    match nl::fill_host(inner, index, idx, off, &mut msg) {
        Ok(nl::Fill::Done) => {
            msg.end();
            0
        }
        Ok(nl::Fill::Partial(next)) => {
            msg.end();
            // SAFETY: writable (contract).
            unsafe { *member_off = next };
            1
        }
        Err(_) => -(kernel::bindings::EMSGSIZE as c_int),
    }
}

/// The first tracked service, for the benchmark build's debugfs timer.
///
/// # Safety
///
/// `st` is a live state and `vmwlch_net.lock` is held.
#[no_mangle]
unsafe extern "C" fn vmwlch_rs_bench_svc(st: *mut c_void) -> *mut ip_vs_service {
    // SAFETY: per the contract.
    let inner = unsafe { state(st).inner_mut() };
    inner.first_service()
}
