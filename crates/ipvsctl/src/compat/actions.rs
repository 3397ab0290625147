//! What the option processing decides (kernel operations, listings,
//! save, restore), libipvs's error texts, and the C structures as
//! `ipvs-netlink` values.

use super::*;

/// What `process_options` decided to do.
#[derive(Debug, Clone)]
pub enum Action {
    /// A kernel change (the libipvs function, for the error text).
    Kernel(KOp),
    /// `-L` and friends.
    List(ListReq),
    /// `-S`.
    Save(u32),
    /// `-R`.
    Restore,
}

/// A kernel operation tagged with the libipvs function that ipvsadm would
/// call (its `ipvs_strerror` table depends on it).
#[derive(Debug, Clone)]
pub struct KOp {
    /// The operation.
    pub op: Op,
    /// libipvs function name.
    pub func: Func,
}

/// libipvs functions with specific error texts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Func {
    /// ipvs_add_service
    AddService,
    /// ipvs_update_service
    UpdateService,
    /// ipvs_del_service
    DelService,
    /// ipvs_zero_service
    ZeroService,
    /// ipvs_add_dest
    AddDest,
    /// ipvs_update_dest
    UpdateDest,
    /// ipvs_del_dest
    DelDest,
    /// ipvs_start_daemon
    StartDaemon,
    /// ipvs_stop_daemon
    StopDaemon,
    /// ipvs_get_services / ipvs_get_dests / ipvs_get_service
    Get,
    /// anything else
    Other,
}

/// `ipvs_strerror`.
pub fn ipvs_strerror(errno: i32, func: Func) -> String {
    use Func::*;
    let specific = match (func, errno) {
        (AddService, libc::EEXIST) => Some("Service already exists"),
        (AddService, libc::ENOENT) | (UpdateService, libc::ENOENT) => {
            Some("Scheduler or persistence engine not found")
        }
        (UpdateService, libc::ESRCH)
        | (DelService, libc::ESRCH)
        | (ZeroService, libc::ESRCH)
        | (Get, libc::ESRCH) => Some("No such service"),
        (AddDest, libc::ESRCH) | (UpdateDest, libc::ESRCH) | (DelDest, libc::ESRCH) => {
            Some("Service not defined")
        }
        (AddDest, libc::EEXIST) => Some("Destination already exists"),
        (UpdateDest, libc::ENOENT) | (DelDest, libc::ENOENT) => Some("No such destination"),
        (StartDaemon, libc::EEXIST) => Some("Daemon has already run"),
        (StopDaemon, libc::ESRCH) => Some("No daemon is running"),
        _ => None,
    };
    if let Some(s) = specific {
        return s.into();
    }
    match errno {
        libc::EPERM => "Permission denied (you must be root)".into(),
        libc::EINVAL => {
            "Invalid operation.  Possibly wrong module version, address not unicast, ...".into()
        }
        libc::ENOPROTOOPT => "Protocol not available".into(),
        libc::ENOMEM => "Memory allocation problem".into(),
        libc::EOPNOTSUPP => "Operation not supported with IPv6".into(),
        libc::EAFNOSUPPORT => "Operation not supported with specified address family".into(),
        libc::EMSGSIZE => "Module is wrong version".into(),
        e => ipvs_netlink::strerror(e),
    }
}

pub(super) fn err_errno(e: &Error) -> i32 {
    e.errno().unwrap_or(libc::EINVAL)
}

/// A listing request.
#[derive(Debug, Clone)]
pub enum ListReq {
    /// `-c`.
    Conn(u32),
    /// `-L -t ...`.
    Service(ServiceKey, u32),
    /// `--timeout`.
    Timeout,
    /// `--daemon`.
    Daemon,
    /// Everything.
    All(u32),
}

pub(super) fn svc_key(svc: &CSvc) -> ServiceKey {
    let family = if svc.af == AF_INET6 {
        Family::Inet6
    } else {
        Family::Inet
    };
    if svc.fwmark != 0 {
        ServiceKey::Fwmark {
            family,
            mark: svc.fwmark,
        }
    } else {
        let addr = svc.addr.unwrap_or(match family {
            Family::Inet => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
            Family::Inet6 => IpAddr::V6(Ipv6Addr::UNSPECIFIED),
        });
        ServiceKey::Addr {
            protocol: Protocol::from_number(svc.protocol),
            addr,
            port: svc.port,
        }
    }
}

pub(super) fn to_service(svc: &CSvc) -> Service {
    let key = svc_key(svc);
    Service {
        key,
        scheduler: svc.sched_name.clone(),
        flags: svc.flags,
        timeout: svc.timeout,
        netmask: Netmask::from_wire(key.family(), svc.netmask),
        pe_name: (!svc.pe_name.is_empty()).then(|| svc.pe_name.clone()),
        stats: Default::default(),
    }
}

pub(super) fn to_dest(d: &CDest) -> Dest {
    let addr = d.addr.unwrap_or(if d.af == AF_INET6 {
        IpAddr::V6(Ipv6Addr::UNSPECIFIED)
    } else {
        IpAddr::V4(Ipv4Addr::UNSPECIFIED)
    });
    Dest {
        addr,
        port: d.port,
        fwd: Forward::from_raw(d.conn_flags),
        weight: d.weight as u32,
        u_threshold: d.u_threshold,
        l_threshold: d.l_threshold,
        tun_type: TunnelType::from_raw(d.tun_type),
        tun_port: d.tun_port,
        tun_flags: TunnelCsum::from_raw(d.tun_flags),
        active_conns: 0,
        inact_conns: 0,
        persist_conns: 0,
        stats: Default::default(),
    }
}
