//! Encoding and decoding of IPVS generic netlink messages.
//!
//! Wire details (see `reference/ipvsadm.md` §2): ports and `TUN_PORT` are
//! big-endian; `NETMASK` is a network-order mask for IPv4 and a host-order
//! prefix length for IPv6; `FLAGS` is `{flags, mask}`; addresses are sent as
//! 16-byte `nf_inet_addr`; `STATS64` is preferred over `STATS`, and `PAD`
//! attributes are skipped.

use std::net::IpAddr;

use super::consts::*;
use super::*;
use crate::attr::{addr_from_bytes, addr_to_bytes16};
use crate::{Attr, Attrs, Error, FamilyName, GenlBody};

/// The `IPVS` generic netlink family.
#[derive(Debug, Clone, Default)]
pub struct IpvsFamily;

impl FamilyName for IpvsFamily {
    const NAME: &'static str = IPVS_GENL_NAME;
    const VERSION: u8 = IPVS_GENL_VERSION;
}

/// An IPVS message body.
pub type IpvsMsg = GenlBody<IpvsFamily>;

/// Service identity attributes (enough for DEL_SERVICE, GET_SERVICE and
/// the destination commands).
pub fn service_key_attrs(key: &ServiceKey) -> Vec<Attr> {
    let mut v = vec![Attr::U16(IPVS_SVC_ATTR_AF, key.family().to_af())];
    match key {
        ServiceKey::Fwmark { mark, .. } => v.push(Attr::U32(IPVS_SVC_ATTR_FWMARK, *mark)),
        ServiceKey::Addr {
            protocol,
            addr,
            port,
        } => {
            v.push(Attr::U16(IPVS_SVC_ATTR_PROTOCOL, protocol.number()));
            v.push(Attr::Bytes(IPVS_SVC_ATTR_ADDR, addr_to_bytes16(addr)));
            v.push(Attr::Be16(IPVS_SVC_ATTR_PORT, *port));
        }
    }
    v
}

/// Full service attributes (NEW_SERVICE / SET_SERVICE): identity, scheduler,
/// optional PE name, flags with mask ~0 (a full replace), timeout, netmask.
pub fn service_attrs(svc: &Service) -> Vec<Attr> {
    let mut v = service_key_attrs(&svc.key);
    v.push(Attr::Str(IPVS_SVC_ATTR_SCHED_NAME, svc.scheduler.clone()));
    if let Some(pe) = svc.pe_name.as_ref().filter(|p| !p.is_empty()) {
        v.push(Attr::Str(IPVS_SVC_ATTR_PE_NAME, pe.clone()));
    }
    let flags = svc.flags & !IP_VS_SVC_F_HASHED;
    let mut f = Vec::with_capacity(8);
    f.extend_from_slice(&flags.to_ne_bytes());
    f.extend_from_slice(&u32::MAX.to_ne_bytes());
    v.push(Attr::Bytes(IPVS_SVC_ATTR_FLAGS, f));
    v.push(Attr::U32(IPVS_SVC_ATTR_TIMEOUT, svc.timeout));
    v.push(Attr::Bytes(
        IPVS_SVC_ATTR_NETMASK,
        svc.netmask.to_wire().to_vec(),
    ));
    v
}

/// Destination attributes. `full` adds everything NEW_DEST/SET_DEST need;
/// otherwise only the identity (DEL_DEST).
pub fn dest_attrs(d: &Dest, full: bool) -> Vec<Attr> {
    let mut v = vec![
        Attr::U16(IPVS_DEST_ATTR_ADDR_FAMILY, d.family().to_af()),
        Attr::Bytes(IPVS_DEST_ATTR_ADDR, addr_to_bytes16(&d.addr)),
        Attr::Be16(IPVS_DEST_ATTR_PORT, d.port),
    ];
    if full {
        v.push(Attr::U32(
            IPVS_DEST_ATTR_FWD_METHOD,
            d.fwd.to_raw() & IP_VS_CONN_F_FWD_MASK,
        ));
        v.push(Attr::U32(IPVS_DEST_ATTR_WEIGHT, d.weight));
        v.push(Attr::U8(IPVS_DEST_ATTR_TUN_TYPE, d.tun_type.to_raw()));
        v.push(Attr::Be16(IPVS_DEST_ATTR_TUN_PORT, d.tun_port));
        v.push(Attr::U16(IPVS_DEST_ATTR_TUN_FLAGS, d.tun_flags.to_raw()));
        v.push(Attr::U32(IPVS_DEST_ATTR_U_THRESH, d.u_threshold));
        v.push(Attr::U32(IPVS_DEST_ATTR_L_THRESH, d.l_threshold));
    }
    v
}

/// Sync daemon attributes for NEW_DAEMON.
pub fn daemon_attrs(d: &SyncDaemon) -> Vec<Attr> {
    let mut v = vec![
        Attr::U32(IPVS_DAEMON_ATTR_STATE, d.state.to_raw()),
        Attr::Str(IPVS_DAEMON_ATTR_MCAST_IFN, d.mcast_ifn.clone()),
        Attr::U32(IPVS_DAEMON_ATTR_SYNC_ID, d.sync_id),
    ];
    if let Some(m) = d.sync_maxlen {
        v.push(Attr::U16(IPVS_DAEMON_ATTR_SYNC_MAXLEN, m));
    }
    if let Some(p) = d.mcast_port {
        v.push(Attr::U16(IPVS_DAEMON_ATTR_MCAST_PORT, p));
    }
    if let Some(t) = d.mcast_ttl {
        v.push(Attr::U8(IPVS_DAEMON_ATTR_MCAST_TTL, t));
    }
    match d.mcast_group {
        Some(IpAddr::V6(g)) => v.push(Attr::Bytes(
            IPVS_DAEMON_ATTR_MCAST_GROUP6,
            g.octets().to_vec(),
        )),
        Some(IpAddr::V4(g)) => v.push(Attr::Bytes(
            IPVS_DAEMON_ATTR_MCAST_GROUP,
            g.octets().to_vec(),
        )),
        None => {}
    }
    v
}

/// `IPVS_CMD_NEW_SERVICE`.
pub fn new_service(svc: &Service) -> IpvsMsg {
    IpvsMsg::new(
        IPVS_CMD_NEW_SERVICE,
        vec![Attr::Nested(IPVS_CMD_ATTR_SERVICE, service_attrs(svc))],
    )
}
/// `IPVS_CMD_SET_SERVICE` (full replace).
pub fn set_service(svc: &Service) -> IpvsMsg {
    IpvsMsg::new(
        IPVS_CMD_SET_SERVICE,
        vec![Attr::Nested(IPVS_CMD_ATTR_SERVICE, service_attrs(svc))],
    )
}
/// `IPVS_CMD_DEL_SERVICE`.
pub fn del_service(key: &ServiceKey) -> IpvsMsg {
    IpvsMsg::new(
        IPVS_CMD_DEL_SERVICE,
        vec![Attr::Nested(IPVS_CMD_ATTR_SERVICE, service_key_attrs(key))],
    )
}
/// `IPVS_CMD_GET_SERVICE` for one service (doit).
pub fn get_service(key: &ServiceKey) -> IpvsMsg {
    IpvsMsg::new(
        IPVS_CMD_GET_SERVICE,
        vec![Attr::Nested(IPVS_CMD_ATTR_SERVICE, service_key_attrs(key))],
    )
}
/// `IPVS_CMD_GET_SERVICE` dump.
pub fn dump_services() -> IpvsMsg {
    IpvsMsg::new(IPVS_CMD_GET_SERVICE, vec![])
}
/// `IPVS_CMD_GET_DEST` dump of one service.
pub fn dump_dests(key: &ServiceKey) -> IpvsMsg {
    IpvsMsg::new(
        IPVS_CMD_GET_DEST,
        vec![Attr::Nested(IPVS_CMD_ATTR_SERVICE, service_key_attrs(key))],
    )
}
fn dest_cmd(cmd: u8, key: &ServiceKey, d: &Dest, full: bool) -> IpvsMsg {
    IpvsMsg::new(
        cmd,
        vec![
            Attr::Nested(IPVS_CMD_ATTR_SERVICE, service_key_attrs(key)),
            Attr::Nested(IPVS_CMD_ATTR_DEST, dest_attrs(d, full)),
        ],
    )
}
/// `IPVS_CMD_NEW_DEST`.
pub fn new_dest(key: &ServiceKey, d: &Dest) -> IpvsMsg {
    dest_cmd(IPVS_CMD_NEW_DEST, key, d, true)
}
/// `IPVS_CMD_SET_DEST` (full replace).
pub fn set_dest(key: &ServiceKey, d: &Dest) -> IpvsMsg {
    dest_cmd(IPVS_CMD_SET_DEST, key, d, true)
}
/// `IPVS_CMD_DEL_DEST`.
pub fn del_dest(key: &ServiceKey, d: &Dest) -> IpvsMsg {
    dest_cmd(IPVS_CMD_DEL_DEST, key, d, false)
}
/// `IPVS_CMD_FLUSH`.
pub fn flush() -> IpvsMsg {
    IpvsMsg::new(IPVS_CMD_FLUSH, vec![])
}
/// `IPVS_CMD_ZERO` (all services when `key` is `None`).
pub fn zero(key: Option<&ServiceKey>) -> IpvsMsg {
    let attrs = key
        .map(|k| vec![Attr::Nested(IPVS_CMD_ATTR_SERVICE, service_key_attrs(k))])
        .unwrap_or_default();
    IpvsMsg::new(IPVS_CMD_ZERO, attrs)
}
/// `IPVS_CMD_SET_CONFIG` with the three timeouts (0 = unchanged).
pub fn set_config(t: &Timeouts) -> IpvsMsg {
    IpvsMsg::new(
        IPVS_CMD_SET_CONFIG,
        vec![
            Attr::U32(IPVS_CMD_ATTR_TIMEOUT_TCP, t.tcp),
            Attr::U32(IPVS_CMD_ATTR_TIMEOUT_TCP_FIN, t.tcp_fin),
            Attr::U32(IPVS_CMD_ATTR_TIMEOUT_UDP, t.udp),
        ],
    )
}
/// `IPVS_CMD_GET_CONFIG`.
pub fn get_config() -> IpvsMsg {
    IpvsMsg::new(IPVS_CMD_GET_CONFIG, vec![])
}
/// `IPVS_CMD_GET_INFO`.
pub fn get_info() -> IpvsMsg {
    IpvsMsg::new(IPVS_CMD_GET_INFO, vec![])
}
/// `IPVS_CMD_NEW_DAEMON`.
pub fn new_daemon(d: &SyncDaemon) -> IpvsMsg {
    IpvsMsg::new(
        IPVS_CMD_NEW_DAEMON,
        vec![Attr::Nested(IPVS_CMD_ATTR_DAEMON, daemon_attrs(d))],
    )
}
/// `IPVS_CMD_DEL_DAEMON`.
pub fn del_daemon(state: DaemonState) -> IpvsMsg {
    IpvsMsg::new(
        IPVS_CMD_DEL_DAEMON,
        vec![Attr::Nested(
            IPVS_CMD_ATTR_DAEMON,
            vec![Attr::U32(IPVS_DAEMON_ATTR_STATE, state.to_raw())],
        )],
    )
}
/// `IPVS_CMD_GET_DAEMON` dump.
pub fn dump_daemons() -> IpvsMsg {
    IpvsMsg::new(IPVS_CMD_GET_DAEMON, vec![])
}

/// Decode `STATS`/`STATS64` nested attributes (`wide` = 64-bit counters).
pub fn parse_stats(a: &Attrs<'_>, wide: bool) -> Result<Stats, Error> {
    let get = |k: u16| -> Result<u64, Error> {
        if wide || k == IPVS_STATS_ATTR_INBYTES || k == IPVS_STATS_ATTR_OUTBYTES {
            Ok(a.u64(k)?.unwrap_or(0))
        } else {
            Ok(a.u32(k)?.unwrap_or(0) as u64)
        }
    };
    Ok(Stats {
        conns: get(IPVS_STATS_ATTR_CONNS)?,
        inpkts: get(IPVS_STATS_ATTR_INPKTS)?,
        outpkts: get(IPVS_STATS_ATTR_OUTPKTS)?,
        inbytes: get(IPVS_STATS_ATTR_INBYTES)?,
        outbytes: get(IPVS_STATS_ATTR_OUTBYTES)?,
        cps: get(IPVS_STATS_ATTR_CPS)?,
        inpps: get(IPVS_STATS_ATTR_INPPS)?,
        outpps: get(IPVS_STATS_ATTR_OUTPPS)?,
        inbps: get(IPVS_STATS_ATTR_INBPS)?,
        outbps: get(IPVS_STATS_ATTR_OUTBPS)?,
    })
}

fn parse_any_stats(a: &Attrs<'_>, k64: u16, k32: u16) -> Result<Stats, Error> {
    if let Some(s) = a.nested(k64)? {
        parse_stats(&s, true)
    } else if let Some(s) = a.nested(k32)? {
        parse_stats(&s, false)
    } else {
        Ok(Stats::default())
    }
}

/// Decode the SERVICE nest of a message.
pub fn parse_service(a: &Attrs<'_>) -> Result<Service, Error> {
    let af = a
        .u16(IPVS_SVC_ATTR_AF)?
        .ok_or_else(|| Error::Decode("service without AF".into()))?;
    let family = Family::from_af(af)
        .ok_or_else(|| Error::Decode(format!("service with unknown AF {af}")))?;
    let key = if let Some(mark) = a.u32(IPVS_SVC_ATTR_FWMARK)?.filter(|m| *m != 0) {
        ServiceKey::Fwmark { family, mark }
    } else {
        let protocol = a
            .u16(IPVS_SVC_ATTR_PROTOCOL)?
            .ok_or_else(|| Error::Decode("service without protocol".into()))?;
        let addr = a
            .get(IPVS_SVC_ATTR_ADDR)
            .ok_or_else(|| Error::Decode("service without address".into()))?;
        let port = a
            .be16(IPVS_SVC_ATTR_PORT)?
            .ok_or_else(|| Error::Decode("service without port".into()))?;
        ServiceKey::Addr {
            protocol: Protocol::from_number(protocol),
            addr: addr_from_bytes(family == Family::Inet6, addr)?,
            port,
        }
    };
    let flags = match a.get(IPVS_SVC_ATTR_FLAGS) {
        Some(v) if v.len() >= 8 => {
            let f = u32::from_ne_bytes([v[0], v[1], v[2], v[3]]);
            let m = u32::from_ne_bytes([v[4], v[5], v[6], v[7]]);
            f & m & !IP_VS_SVC_F_HASHED
        }
        Some(v) if v.len() >= 4 => {
            u32::from_ne_bytes([v[0], v[1], v[2], v[3]]) & !IP_VS_SVC_F_HASHED
        }
        _ => 0,
    };
    let netmask = match a.raw4(IPVS_SVC_ATTR_NETMASK)? {
        Some(raw) => Netmask::from_wire(family, raw),
        None => Netmask::host(family),
    };
    Ok(Service {
        key,
        scheduler: a.string(IPVS_SVC_ATTR_SCHED_NAME).unwrap_or_default(),
        flags,
        timeout: a.u32(IPVS_SVC_ATTR_TIMEOUT)?.unwrap_or(0),
        netmask,
        pe_name: a.string(IPVS_SVC_ATTR_PE_NAME).filter(|s| !s.is_empty()),
        stats: parse_any_stats(a, IPVS_SVC_ATTR_STATS64, IPVS_SVC_ATTR_STATS)?,
    })
}

/// Decode the DEST nest of a message; `svc_family` is used when the kernel
/// (< 3.18) sends no `ADDR_FAMILY`.
pub fn parse_dest(a: &Attrs<'_>, svc_family: Family) -> Result<Dest, Error> {
    parse_dest_with(a, svc_family, true)
}

/// [`parse_dest`], leaving the traffic counters zero unless `counters`.
pub fn parse_dest_with(a: &Attrs<'_>, svc_family: Family, counters: bool) -> Result<Dest, Error> {
    let family = match a.u16(IPVS_DEST_ATTR_ADDR_FAMILY)? {
        Some(af) => Family::from_af(af).unwrap_or(svc_family),
        None => svc_family,
    };
    let addr = a
        .get(IPVS_DEST_ATTR_ADDR)
        .ok_or_else(|| Error::Decode("destination without address".into()))?;
    Ok(Dest {
        addr: addr_from_bytes(family == Family::Inet6, addr)?,
        port: a.be16(IPVS_DEST_ATTR_PORT)?.unwrap_or(0),
        fwd: Forward::from_raw(a.u32(IPVS_DEST_ATTR_FWD_METHOD)?.unwrap_or(0)),
        weight: a.u32(IPVS_DEST_ATTR_WEIGHT)?.unwrap_or(0),
        u_threshold: a.u32(IPVS_DEST_ATTR_U_THRESH)?.unwrap_or(0),
        l_threshold: a.u32(IPVS_DEST_ATTR_L_THRESH)?.unwrap_or(0),
        tun_type: TunnelType::from_raw(a.u8(IPVS_DEST_ATTR_TUN_TYPE)?.unwrap_or(0)),
        tun_port: a.be16(IPVS_DEST_ATTR_TUN_PORT)?.unwrap_or(0),
        tun_flags: TunnelCsum::from_raw(a.u16(IPVS_DEST_ATTR_TUN_FLAGS)?.unwrap_or(0)),
        active_conns: a.u32(IPVS_DEST_ATTR_ACTIVE_CONNS)?.unwrap_or(0),
        inact_conns: a.u32(IPVS_DEST_ATTR_INACT_CONNS)?.unwrap_or(0),
        persist_conns: a.u32(IPVS_DEST_ATTR_PERSIST_CONNS)?.unwrap_or(0),
        stats: if counters {
            parse_any_stats(a, IPVS_DEST_ATTR_STATS64, IPVS_DEST_ATTR_STATS)?
        } else {
            Stats::default()
        },
    })
}

/// Decode the DAEMON nest of a GET_DAEMON reply.
pub fn parse_daemon(a: &Attrs<'_>) -> Result<Option<SyncDaemon>, Error> {
    let state = match a.u32(IPVS_DAEMON_ATTR_STATE)? {
        Some(s) if s & IP_VS_STATE_MASTER != 0 => DaemonState::Master,
        Some(s) if s & IP_VS_STATE_BACKUP != 0 => DaemonState::Backup,
        _ => return Ok(None),
    };
    let mcast_group = if let Some(g) = a.raw4(IPVS_DAEMON_ATTR_MCAST_GROUP)? {
        Some(IpAddr::from(g))
    } else if let Some(g) = a.get(IPVS_DAEMON_ATTR_MCAST_GROUP6) {
        Some(addr_from_bytes(true, g)?)
    } else {
        None
    };
    Ok(Some(SyncDaemon {
        state,
        mcast_ifn: a.string(IPVS_DAEMON_ATTR_MCAST_IFN).unwrap_or_default(),
        sync_id: a.u32(IPVS_DAEMON_ATTR_SYNC_ID)?.unwrap_or(0),
        sync_maxlen: a.u16(IPVS_DAEMON_ATTR_SYNC_MAXLEN)?,
        mcast_group,
        mcast_port: a.u16(IPVS_DAEMON_ATTR_MCAST_PORT)?,
        mcast_ttl: a.u8(IPVS_DAEMON_ATTR_MCAST_TTL)?,
    }))
}

/// Decode a GET_CONFIG reply.
pub fn parse_config(a: &Attrs<'_>) -> Result<Timeouts, Error> {
    Ok(Timeouts {
        tcp: a.u32(IPVS_CMD_ATTR_TIMEOUT_TCP)?.unwrap_or(0),
        tcp_fin: a.u32(IPVS_CMD_ATTR_TIMEOUT_TCP_FIN)?.unwrap_or(0),
        udp: a.u32(IPVS_CMD_ATTR_TIMEOUT_UDP)?.unwrap_or(0),
    })
}

/// Decode a GET_INFO reply.
pub fn parse_info(a: &Attrs<'_>) -> Result<Info, Error> {
    Ok(Info {
        version: a.u32(IPVS_INFO_ATTR_VERSION)?.unwrap_or(0),
        conn_tab_size: a.u32(IPVS_INFO_ATTR_CONN_TAB_SIZE)?.unwrap_or(0),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::genl::encode_request;
    use netlink_packet_core::{NLM_F_ACK, NLM_F_REQUEST};
    use std::net::{Ipv4Addr, Ipv6Addr};

    fn enc(m: IpvsMsg) -> Vec<u8> {
        let mut out = Vec::new();
        encode_request(&mut out, 0x1f, m, NLM_F_REQUEST | NLM_F_ACK, 1);
        out
    }

    fn v4(a: [u8; 4]) -> IpAddr {
        IpAddr::V4(Ipv4Addr::from(a))
    }

    #[test]
    fn golden_new_service_tcp_v4() {
        let mut s = Service::new(ServiceKey::tcp(v4([10, 0, 0, 1]), 80)).with_persistence(300);
        s.netmask = Netmask::V4(Ipv4Addr::new(255, 255, 255, 0));
        #[rustfmt::skip]
        let want: Vec<u8> = vec![
            104, 0, 0, 0, 0x1f, 0, 5, 0, 1, 0, 0, 0, 0, 0, 0, 0,   // nlmsghdr len 104 REQUEST|ACK
            1, 1, 0, 0,                                            // NEW_SERVICE v1
            84, 0, 1, 0x80,                                        // SERVICE (nested)
            6, 0, 1, 0, 2, 0, 0, 0,                                // AF = 2
            6, 0, 2, 0, 6, 0, 0, 0,                                // PROTOCOL = 6
            20, 0, 3, 0, 10, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, // ADDR
            6, 0, 4, 0, 0, 80, 0, 0,                               // PORT be16 80
            8, 0, 6, 0, b'w', b'l', b'c', 0,                       // SCHED_NAME
            12, 0, 7, 0, 1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff,       // FLAGS {1, ~0}
            8, 0, 8, 0, 0x2c, 1, 0, 0,                             // TIMEOUT 300
            8, 0, 9, 0, 255, 255, 255, 0,                          // NETMASK be32
        ];
        assert_eq!(enc(new_service(&s)), want);
    }

    #[test]
    fn golden_fwmark_v6_service_with_pe() {
        let mut s = Service::new(ServiceKey::Fwmark {
            family: Family::Inet6,
            mark: 7,
        })
        .with_scheduler("rr")
        .with_persistence(360);
        s.netmask = Netmask::V6(64);
        s.pe_name = Some("sip".into());
        #[rustfmt::skip]
        let want: Vec<u8> = vec![
            84, 0, 0, 0, 0x1f, 0, 5, 0, 1, 0, 0, 0, 0, 0, 0, 0,
            2, 1, 0, 0,                                            // SET_SERVICE
            64, 0, 1, 0x80,
            6, 0, 1, 0, 10, 0, 0, 0,                               // AF = 10
            8, 0, 5, 0, 7, 0, 0, 0,                                // FWMARK 7
            7, 0, 6, 0, b'r', b'r', 0, 0,                          // SCHED "rr"
            8, 0, 11, 0, b's', b'i', b'p', 0,                      // PE_NAME
            12, 0, 7, 0, 1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff,
            8, 0, 8, 0, 0x68, 1, 0, 0,                             // TIMEOUT 360
            8, 0, 9, 0, 64, 0, 0, 0,                               // NETMASK prefix 64 (host order)
        ];
        assert_eq!(enc(set_service(&s)), want);
    }

    #[test]
    fn golden_new_dest_gue() {
        let key = ServiceKey::fwmark(7);
        let mut d = Dest::new(v4([10, 1, 0, 5]), 0).with_fwd(Forward::Tunnel);
        d.tun_type = TunnelType::Gue;
        d.tun_port = 6080;
        d.tun_flags = TunnelCsum::RemCsum;
        d.u_threshold = 100;
        d.l_threshold = 10;
        #[rustfmt::skip]
        let want: Vec<u8> = vec![
            136, 0, 0, 0, 0x1f, 0, 5, 0, 1, 0, 0, 0, 0, 0, 0, 0,
            5, 1, 0, 0,                                            // NEW_DEST
            20, 0, 1, 0x80,                                        // SERVICE
            6, 0, 1, 0, 2, 0, 0, 0,
            8, 0, 5, 0, 7, 0, 0, 0,
            96, 0, 2, 0x80,                                        // DEST
            6, 0, 11, 0, 2, 0, 0, 0,                               // ADDR_FAMILY
            20, 0, 1, 0, 10, 1, 0, 5, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
            6, 0, 2, 0, 0, 0, 0, 0,                                // PORT 0
            8, 0, 3, 0, 2, 0, 0, 0,                                // FWD tunnel
            8, 0, 4, 0, 1, 0, 0, 0,                                // WEIGHT 1
            5, 0, 13, 0, 1, 0, 0, 0,                               // TUN_TYPE gue
            6, 0, 14, 0, 0x17, 0xc0, 0, 0,                         // TUN_PORT be 6080
            6, 0, 15, 0, 2, 0, 0, 0,                               // TUN_FLAGS remcsum
            8, 0, 5, 0, 100, 0, 0, 0,                              // U_THRESH
            8, 0, 6, 0, 10, 0, 0, 0,                               // L_THRESH
        ];
        assert_eq!(enc(new_dest(&key, &d)), want);
    }

    #[test]
    fn golden_del_dest_and_flush_zero_config() {
        let key = ServiceKey::udp(IpAddr::V6("2001:db8::1".parse().unwrap()), 53);
        let d = Dest::new(IpAddr::V6("2001:db8::10".parse().unwrap()), 53);
        let b = enc(del_dest(&key, &d));
        assert_eq!(b[16], IPVS_CMD_DEL_DEST);
        // DEST nest carries only family, address and port.
        let body = crate::Attrs::parse(&b[20..]).unwrap();
        let dn = body.nested(IPVS_CMD_ATTR_DEST).unwrap().unwrap();
        assert_eq!(dn.u16(IPVS_DEST_ATTR_ADDR_FAMILY).unwrap(), Some(10));
        assert!(!dn.has(IPVS_DEST_ATTR_WEIGHT));
        assert_eq!(
            enc(flush()),
            vec![20, 0, 0, 0, 0x1f, 0, 5, 0, 1, 0, 0, 0, 0, 0, 0, 0, 17, 1, 0, 0]
        );
        assert_eq!(enc(zero(None)).len(), 20);
        #[rustfmt::skip]
        let want: Vec<u8> = vec![
            44, 0, 0, 0, 0x1f, 0, 5, 0, 1, 0, 0, 0, 0, 0, 0, 0,
            12, 1, 0, 0,
            8, 0, 4, 0, 0x84, 3, 0, 0,      // tcp 900
            8, 0, 5, 0, 120, 0, 0, 0,       // tcpfin 120
            8, 0, 6, 0, 44, 1, 0, 0,        // udp 300
        ];
        assert_eq!(
            enc(set_config(&Timeouts {
                tcp: 900,
                tcp_fin: 120,
                udp: 300
            })),
            want
        );
    }

    #[test]
    fn golden_new_daemon() {
        let mut d = SyncDaemon::new(DaemonState::Master, "eth0");
        d.sync_id = 5;
        d.mcast_group = Some(v4([224, 0, 0, 81]));
        d.mcast_port = Some(8848);
        d.mcast_ttl = Some(1);
        d.sync_maxlen = Some(1472);
        #[rustfmt::skip]
        let want: Vec<u8> = vec![
            84, 0, 0, 0, 0x1f, 0, 5, 0, 1, 0, 0, 0, 0, 0, 0, 0,
            9, 1, 0, 0,
            64, 0, 3, 0x80,
            8, 0, 1, 0, 1, 0, 0, 0,                    // STATE master
            9, 0, 2, 0, b'e', b't', b'h', b'0', 0, 0, 0, 0, // IFN
            8, 0, 3, 0, 5, 0, 0, 0,                    // SYNC_ID
            6, 0, 4, 0, 0xc0, 5, 0, 0,                 // MAXLEN 1472 host order
            6, 0, 7, 0, 0x90, 0x22, 0, 0,              // PORT 8848 host order
            5, 0, 8, 0, 1, 0, 0, 0,                    // TTL
            8, 0, 5, 0, 224, 0, 0, 81,                 // GROUP (be32)
        ];
        assert_eq!(enc(new_daemon(&d)), want);
    }

    /// A kernel GET_SERVICE dump message for `UDP [2001:db8::1]:53 sh` with
    /// HASHED set, both STATS and STATS64 (with PAD), decoded.
    #[test]
    fn decode_service_dump_v6_stats64() {
        let mut stats64 = Vec::new();
        // PAD first (kernel may emit it for alignment), then 10 u64 counters.
        stats64.push(Attr::Bytes(IPVS_STATS_ATTR_PAD, vec![]));
        for k in 1..=10u16 {
            stats64.push(Attr::U64(k, (1u64 << 33) + k as u64));
        }
        let mut stats32 = Vec::new();
        for k in 1..=10u16 {
            if k == 4 || k == 5 {
                stats32.push(Attr::U64(k, 99));
            } else {
                stats32.push(Attr::U32(k, k as u32));
            }
        }
        let mut flags = Vec::new();
        flags.extend_from_slice(
            &(IP_VS_SVC_F_HASHED | IP_VS_SVC_F_SCHED1 | IP_VS_SVC_F_SCHED2).to_ne_bytes(),
        );
        flags.extend_from_slice(&u32::MAX.to_ne_bytes());
        let svc = vec![
            Attr::U16(IPVS_SVC_ATTR_AF, AF_INET6),
            Attr::U16(IPVS_SVC_ATTR_PROTOCOL, IPPROTO_UDP),
            Attr::Bytes(
                IPVS_SVC_ATTR_ADDR,
                "2001:db8::1".parse::<Ipv6Addr>().unwrap().octets().to_vec(),
            ),
            Attr::Be16(IPVS_SVC_ATTR_PORT, 53),
            Attr::Str(IPVS_SVC_ATTR_SCHED_NAME, "sh".into()),
            Attr::Bytes(IPVS_SVC_ATTR_FLAGS, flags),
            Attr::U32(IPVS_SVC_ATTR_TIMEOUT, 0),
            Attr::U32(IPVS_SVC_ATTR_NETMASK, 128),
            Attr::Nested(IPVS_SVC_ATTR_STATS, stats32),
            Attr::Nested(IPVS_SVC_ATTR_STATS64, stats64),
        ];
        let body = IpvsMsg::new(
            IPVS_CMD_NEW_SERVICE,
            vec![Attr::Nested(IPVS_CMD_ATTR_SERVICE, svc)],
        );
        let bytes = enc(body);
        let attrs = crate::Attrs::parse(&bytes[20..]).unwrap();
        let s = parse_service(&attrs.nested(IPVS_CMD_ATTR_SERVICE).unwrap().unwrap()).unwrap();
        assert_eq!(s.key, ServiceKey::udp("2001:db8::1".parse().unwrap(), 53));
        assert_eq!(
            s.flags,
            IP_VS_SVC_F_SCHED1 | IP_VS_SVC_F_SCHED2,
            "HASHED stripped"
        );
        assert_eq!(s.netmask, Netmask::V6(128));
        assert_eq!(s.stats.conns, (1u64 << 33) + 1, "STATS64 preferred");
        assert_eq!(s.stats.outbps, (1u64 << 33) + 10);
    }

    #[test]
    fn decode_dest_without_addr_family_and_stats32() {
        let dest = vec![
            Attr::Bytes(
                IPVS_DEST_ATTR_ADDR,
                vec![192, 168, 1, 10, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
            ),
            Attr::Be16(IPVS_DEST_ATTR_PORT, 8080),
            Attr::U32(IPVS_DEST_ATTR_FWD_METHOD, IP_VS_CONN_F_MASQ),
            Attr::U32(IPVS_DEST_ATTR_WEIGHT, 5),
            Attr::U32(IPVS_DEST_ATTR_U_THRESH, 0),
            Attr::U32(IPVS_DEST_ATTR_L_THRESH, 0),
            Attr::U32(IPVS_DEST_ATTR_ACTIVE_CONNS, 12),
            Attr::U32(IPVS_DEST_ATTR_INACT_CONNS, 345),
            Attr::U32(IPVS_DEST_ATTR_PERSIST_CONNS, 1),
            Attr::Nested(
                IPVS_DEST_ATTR_STATS,
                vec![
                    Attr::U32(IPVS_STATS_ATTR_CONNS, 7),
                    Attr::U64(IPVS_STATS_ATTR_INBYTES, 1 << 40),
                ],
            ),
        ];
        let body = IpvsMsg::new(
            IPVS_CMD_NEW_DEST,
            vec![Attr::Nested(IPVS_CMD_ATTR_DEST, dest)],
        );
        let bytes = enc(body);
        let attrs = crate::Attrs::parse(&bytes[20..]).unwrap();
        let d = parse_dest(
            &attrs.nested(IPVS_CMD_ATTR_DEST).unwrap().unwrap(),
            Family::Inet,
        )
        .unwrap();
        assert_eq!(d.addr, v4([192, 168, 1, 10]));
        assert_eq!(d.port, 8080);
        assert_eq!(d.fwd, Forward::Masq);
        assert_eq!(
            (d.weight, d.active_conns, d.inact_conns, d.persist_conns),
            (5, 12, 345, 1)
        );
        assert_eq!(d.stats.conns, 7);
        assert_eq!(d.stats.inbytes, 1 << 40);
    }

    #[test]
    fn decode_v4_netmask_and_daemon() {
        assert_eq!(
            Netmask::from_wire(Family::Inet, [255, 255, 0, 0]),
            Netmask::V4(Ipv4Addr::new(255, 255, 0, 0))
        );
        let d = vec![
            Attr::U32(IPVS_DAEMON_ATTR_STATE, IP_VS_STATE_BACKUP),
            Attr::Str(IPVS_DAEMON_ATTR_MCAST_IFN, "eth1".into()),
            Attr::U32(IPVS_DAEMON_ATTR_SYNC_ID, 9),
            Attr::U16(IPVS_DAEMON_ATTR_SYNC_MAXLEN, 1472),
            Attr::U16(IPVS_DAEMON_ATTR_MCAST_PORT, 8848),
            Attr::U8(IPVS_DAEMON_ATTR_MCAST_TTL, 2),
            Attr::Bytes(
                IPVS_DAEMON_ATTR_MCAST_GROUP6,
                "ff02::81".parse::<Ipv6Addr>().unwrap().octets().to_vec(),
            ),
        ];
        let bytes = enc(IpvsMsg::new(
            IPVS_CMD_NEW_DAEMON,
            vec![Attr::Nested(IPVS_CMD_ATTR_DAEMON, d)],
        ));
        let attrs = crate::Attrs::parse(&bytes[20..]).unwrap();
        let d = parse_daemon(&attrs.nested(IPVS_CMD_ATTR_DAEMON).unwrap().unwrap())
            .unwrap()
            .unwrap();
        assert_eq!(d.state, DaemonState::Backup);
        assert_eq!(d.mcast_ifn, "eth1");
        assert_eq!(d.mcast_group, Some("ff02::81".parse().unwrap()));
        assert_eq!(
            (d.sync_id, d.sync_maxlen, d.mcast_port, d.mcast_ttl),
            (9, Some(1472), Some(8848), Some(2))
        );
    }
}
