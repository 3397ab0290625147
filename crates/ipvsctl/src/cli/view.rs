//! The JSON/YAML views of services and real servers, and printing in the
//! chosen output format.

use super::*;

pub(super) fn print_out<T: Serialize>(
    fmt: OutFmt,
    v: &T,
    text: impl FnOnce() -> String,
) -> Result<(), Fail> {
    let s = match fmt {
        OutFmt::Text => text(),
        OutFmt::Json => serde_json::to_string_pretty(v).map_err(|e| Fail(1, e.to_string()))? + "\n",
        OutFmt::Yaml => ipvs_cluster::yaml::to_string(v).map_err(|e| Fail(1, e))?,
    };
    print!("{s}");
    Ok(())
}

/// JSON/YAML view of a service.
#[derive(Debug, Serialize)]
pub struct ServiceView {
    /// tcp/udp/sctp or absent for fwmark.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub protocol: Option<Protocol>,
    /// Address.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub address: Option<IpAddr>,
    /// Port.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub port: Option<u16>,
    /// Firewall mark.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fwmark: Option<u32>,
    /// Family.
    pub family: Family,
    /// Scheduler.
    pub scheduler: String,
    /// Persistence timeout, if persistent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub persistent: Option<u32>,
    /// Netmask (mask or prefix).
    pub netmask: String,
    /// Persistence engine.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pe: Option<String>,
    /// Scheduler flag names.
    pub sched_flags: Vec<String>,
    /// One-packet scheduling.
    pub one_packet: bool,
    /// Raw flags.
    pub flags: u32,
    /// Counters.
    pub stats: Stats,
    /// Real servers.
    pub dests: Vec<DestView>,
}

/// JSON/YAML view of a real server.
#[derive(Debug, Serialize)]
pub struct DestView {
    /// Address.
    pub address: IpAddr,
    /// Port.
    pub port: u16,
    /// Forwarding method.
    pub forward: Forward,
    /// Weight.
    pub weight: u32,
    /// Upper threshold.
    pub u_threshold: u32,
    /// Lower threshold.
    pub l_threshold: u32,
    /// Tunnel type (tunnel forwarding).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tunnel: Option<TunnelView>,
    /// Active connections.
    pub active_conns: u32,
    /// Inactive connections.
    pub inact_conns: u32,
    /// Persistent templates.
    pub persist_conns: u32,
    /// Counters.
    pub stats: Stats,
}

/// Tunnel parameters.
#[derive(Debug, Serialize)]
pub struct TunnelView {
    /// Type.
    #[serde(rename = "type")]
    pub kind: TunnelType,
    /// Port.
    pub port: u16,
    /// Checksum mode.
    pub csum: TunnelCsum,
}

/// The view of a service and its real servers.
pub fn service_view(s: &Service, ds: &[Dest]) -> ServiceView {
    let sched_flags = cluster::kernel::service_spec(s, &[]).sched_flags;
    let (protocol, address, port, fwmark) = match s.key {
        ServiceKey::Addr {
            protocol,
            addr,
            port,
        } => (Some(protocol), Some(addr), Some(port), None),
        ServiceKey::Fwmark { mark, .. } => (None, None, None, Some(mark)),
    };
    let mut ds: Vec<&Dest> = ds.iter().collect();
    ds.sort_by_key(|d| (d.addr, d.port));
    ServiceView {
        protocol,
        address,
        port,
        fwmark,
        family: s.key.family(),
        scheduler: s.scheduler.clone(),
        persistent: s.persistent().then_some(s.timeout),
        netmask: match s.netmask {
            Netmask::V4(a) => a.to_string(),
            Netmask::V6(p) => p.to_string(),
        },
        pe: s.pe_name.clone(),
        sched_flags,
        one_packet: s.one_packet(),
        flags: s.flags,
        stats: s.stats,
        dests: ds
            .into_iter()
            .map(|d| DestView {
                address: d.addr,
                port: d.port,
                forward: d.fwd,
                weight: d.weight,
                u_threshold: d.u_threshold,
                l_threshold: d.l_threshold,
                tunnel: (d.fwd == Forward::Tunnel).then_some(TunnelView {
                    kind: d.tun_type,
                    port: d.tun_port,
                    csum: d.tun_flags,
                }),
                active_conns: d.active_conns,
                inact_conns: d.inact_conns,
                persist_conns: d.persist_conns,
                stats: d.stats,
            })
            .collect(),
    }
}

#[derive(Serialize)]
pub(super) struct ListView {
    pub(super) version: String,
    pub(super) conn_tab_size: u32,
    pub(super) services: Vec<ServiceView>,
}
