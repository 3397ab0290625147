//! From the file as written to the desired state: everything the kernel or
//! ipvsadm would reject, plus duplicates, each problem named by the path
//! of its node (`services[1].dests[0].weight`).

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr};

use ipvs_netlink::ipvs::consts::*;
use ipvs_netlink::ipvs::flags::{sched_flag, sched_flag_list, SchedFlagError};
use ipvs_netlink::ipvs::{
    Dest, Family, Forward, Netmask, Protocol, Service, ServiceKey, TunnelCsum, TunnelType,
};
use ipvs_netlink::vmwlch;

use crate::model::{Desired, ServiceEntry};
use crate::spec::{ClusterSpec, DestSpec, HostSpec, NetmaskSpec, ServiceSpec, TunnelSpec};

/// The longest persistence timeout ipvsadm accepts (31 days).
const MAX_PERSISTENT: u32 = 86400 * 31;

/// Problems found so far: (path, message).
#[derive(Default)]
struct Errors(Vec<(String, String)>);

impl Errors {
    fn push(&mut self, path: impl Into<String>, msg: impl Into<String>) {
        self.0.push((path.into(), msg.into()));
    }
    fn len(&self) -> usize {
        self.0.len()
    }
}

/// Check a whole file; every problem is reported, as `(path, message)`.
pub fn validate(cfg: &ClusterSpec) -> Result<Desired, Vec<(String, String)>> {
    let mut errs = Errors::default();
    let services = cfg.services.as_ref().map(|list| services(list, &mut errs));
    let hosts = cfg.hosts.as_ref().map(|list| hosts(list, &mut errs));
    if errs.0.is_empty() {
        Ok(Desired {
            services,
            hosts,
            remove: cfg.options.remove,
        })
    } else {
        Err(errs.0)
    }
}

fn services(list: &[ServiceSpec], errs: &mut Errors) -> Vec<ServiceEntry> {
    let mut out = Vec::with_capacity(list.len());
    let mut seen: HashMap<ServiceKey, usize> = HashMap::new();
    for (i, s) in list.iter().enumerate() {
        let p = format!("services[{i}]");
        if let Some(key) = spec_key(s) {
            if let Some(j) = seen.insert(key, i) {
                errs.push(&p, format!("duplicate service {key} (also services[{j}])"));
            }
        }
        if let Some(e) = service(s, &p, errs) {
            out.push(e);
        }
    }
    out
}

fn hosts(list: &[HostSpec], errs: &mut Errors) -> Vec<vmwlch::Host> {
    let mut out = Vec::with_capacity(list.len());
    let mut names: HashMap<&str, usize> = HashMap::new();
    let mut vms: HashMap<IpAddr, usize> = HashMap::new();
    for (i, h) in list.iter().enumerate() {
        let p = format!("hosts[{i}]");
        if let Err(e) = vmwlch::check_name(&h.name) {
            errs.push(format!("{p}.name"), e.to_string());
        }
        if let Some(j) = names.insert(h.name.as_str(), i) {
            errs.push(
                format!("{p}.name"),
                format!("duplicate host `{}' (also hosts[{j}])", h.name),
            );
        }
        if h.weight > vmwlch::VMWLCH_MAX_WEIGHT {
            errs.push(
                format!("{p}.weight"),
                format!(
                    "weight {} out of range 0..{}",
                    h.weight,
                    vmwlch::VMWLCH_MAX_WEIGHT
                ),
            );
        }
        for (k, a) in h.vms.iter().enumerate() {
            match vms.insert(*a, i) {
                Some(j) if j != i => errs.push(
                    format!("{p}.vms[{k}]"),
                    format!("{a} is already a VM of hosts[{j}]"),
                ),
                Some(_) => errs.push(format!("{p}.vms[{k}]"), format!("{a} listed twice")),
                None => {}
            }
        }
        out.push(vmwlch::Host {
            name: h.name.clone(),
            weight: h.weight,
            members: h.vms.clone(),
        });
    }
    if out.len() > vmwlch::VMWLCH_MAX_HOSTS as usize {
        errs.push(
            "hosts",
            format!("more than {} hosts", vmwlch::VMWLCH_MAX_HOSTS),
        );
    }
    out
}

/// The identity a spec names, if it names one unambiguously (for the
/// duplicate check; [`service_key`] reports what is wrong otherwise).
fn spec_key(s: &ServiceSpec) -> Option<ServiceKey> {
    match (s.fwmark, s.address) {
        (Some(mark), None) => Some(ServiceKey::Fwmark {
            family: s.family.unwrap_or(Family::Inet),
            mark,
        }),
        (None, Some(addr)) => Some(ServiceKey::Addr {
            protocol: s.protocol.unwrap_or(Protocol::Tcp),
            addr,
            port: s.port.unwrap_or(0),
        }),
        _ => None,
    }
}

fn service(s: &ServiceSpec, p: &str, errs: &mut Errors) -> Option<ServiceEntry> {
    let n0 = errs.len();
    let key = service_key(s, p, errs)?;
    if !valid_sched_name(&s.scheduler) {
        errs.push(
            format!("{p}.scheduler"),
            format!(
                "scheduler name must be 1..{} bytes",
                IP_VS_SCHEDNAME_MAXLEN - 1
            ),
        );
    }
    let flags = service_flags(s, &key, p, errs);
    if key.port() == 0 && key.mark() == 0 && s.persistent.is_none() {
        errs.push(
            format!("{p}.port"),
            "port 0 is only allowed for persistent services",
        );
    }
    let netmask = netmask(s.netmask.as_ref(), key.family(), p, errs);
    if let Some(pe) = &s.pe {
        if pe.is_empty() || pe.len() >= IP_VS_PENAME_MAXLEN {
            errs.push(
                format!("{p}.pe"),
                format!(
                    "persistence engine name must be 1..{} bytes",
                    IP_VS_PENAME_MAXLEN - 1
                ),
            );
        }
    }
    let svc = Service {
        key,
        scheduler: s.scheduler.clone(),
        flags,
        timeout: s.persistent.unwrap_or(0),
        netmask,
        pe_name: s.pe.clone().filter(|p| !p.is_empty()),
        stats: Default::default(),
    };
    let dests = dests(&s.dests, &key, p, errs);
    (errs.len() == n0).then_some((svc, dests))
}

fn service_key(s: &ServiceSpec, p: &str, errs: &mut Errors) -> Option<ServiceKey> {
    match (s.fwmark, s.protocol, s.address, s.port) {
        (Some(mark), None, None, None) => {
            if mark == 0 {
                errs.push(format!("{p}.fwmark"), "fwmark must be greater than zero");
            }
            Some(ServiceKey::Fwmark {
                family: s.family.unwrap_or(Family::Inet),
                mark,
            })
        }
        (Some(_), ..) => {
            errs.push(p, "give either fwmark or protocol/address/port, not both");
            None
        }
        (None, proto, Some(addr), port) => {
            if s.family.is_some_and(|f| f != Family::of(&addr)) {
                errs.push(format!("{p}.family"), "family does not match the address");
            }
            let protocol = proto.unwrap_or(Protocol::Tcp);
            if let Protocol::Other(n) = protocol {
                errs.push(
                    format!("{p}.protocol"),
                    format!("unsupported protocol {n} (tcp, udp, sctp)"),
                );
            }
            Some(ServiceKey::Addr {
                protocol,
                addr,
                port: port.unwrap_or(0),
            })
        }
        (None, _, None, _) => {
            errs.push(
                p,
                "a service needs `address` (with `protocol` and `port`) or `fwmark`",
            );
            None
        }
    }
}

fn valid_sched_name(s: &str) -> bool {
    !s.is_empty() && s.len() < IP_VS_SCHEDNAME_MAXLEN && !s.contains('\0')
}

/// The service's flag word: scheduler flags, one-packet, persistence.
fn service_flags(s: &ServiceSpec, key: &ServiceKey, p: &str, errs: &mut Errors) -> u32 {
    let mut flags = 0u32;
    for (k, f) in s.sched_flags.iter().enumerate() {
        match sched_flag(&s.scheduler, f) {
            Ok(b) => flags |= b,
            Err(SchedFlagError::Incompatible { needs }) => errs.push(
                format!("{p}.sched_flags[{k}]"),
                format!("scheduler flag `{f}' needs scheduler {needs}"),
            ),
            Err(SchedFlagError::Unknown) => errs.push(
                format!("{p}.sched_flags[{k}]"),
                format!("unknown scheduler flag `{f}' ({})", sched_flag_list()),
            ),
        }
    }
    if s.one_packet {
        if matches!(key, ServiceKey::Addr { protocol, .. } if *protocol != Protocol::Udp) {
            errs.push(
                format!("{p}.one_packet"),
                "one-packet scheduling is only for UDP (and fwmark) services",
            );
        }
        flags |= IP_VS_SVC_F_ONEPACKET;
    }
    if let Some(t) = s.persistent {
        if t == 0 || t > MAX_PERSISTENT {
            errs.push(
                format!("{p}.persistent"),
                format!("persistence timeout {t} out of range 1..{MAX_PERSISTENT}"),
            );
        }
        flags |= IP_VS_SVC_F_PERSISTENT;
    }
    flags
}

fn netmask(m: Option<&NetmaskSpec>, fam: Family, p: &str, errs: &mut Errors) -> Netmask {
    match (m, fam) {
        (None, f) => Netmask::host(f),
        (Some(NetmaskSpec::Mask(m)), Family::Inet) => match m.parse::<Ipv4Addr>() {
            Ok(a) => Netmask::V4(a),
            Err(_) => {
                errs.push(
                    format!("{p}.netmask"),
                    format!("`{m}' is not an IPv4 netmask"),
                );
                Netmask::host(fam)
            }
        },
        (Some(NetmaskSpec::Prefix(n)), Family::Inet) if *n <= 32 => {
            Netmask::V4(Ipv4Addr::from(if *n == 0 {
                0
            } else {
                u32::MAX << (32 - n)
            }))
        }
        (Some(NetmaskSpec::Prefix(n)), Family::Inet6) if (1..=128).contains(n) => Netmask::V6(*n),
        (Some(other), _) => {
            errs.push(
                format!("{p}.netmask"),
                format!("invalid netmask {other:?} for this address family (IPv6: prefix 1..128)"),
            );
            Netmask::host(fam)
        }
    }
}

fn dests(list: &[DestSpec], key: &ServiceKey, p: &str, errs: &mut Errors) -> Vec<Dest> {
    let mut out = Vec::with_capacity(list.len());
    let mut seen: HashMap<(IpAddr, u16), usize> = HashMap::new();
    for (j, d) in list.iter().enumerate() {
        let dp = format!("{p}.dests[{j}]");
        let dest = dest(d, key, &dp, errs);
        if let Some(k) = seen.insert((d.address, dest.port), j) {
            errs.push(
                format!("{dp}.address"),
                format!("duplicate real server (also dests[{k}])"),
            );
        }
        out.push(dest);
    }
    out
}

fn dest(d: &DestSpec, key: &ServiceKey, dp: &str, errs: &mut Errors) -> Dest {
    let port = match d.port {
        Some(port) => {
            if key.mark() == 0
                && matches!(d.forward, Forward::Route | Forward::Tunnel)
                && port != key.port()
            {
                errs.push(
                    format!("{dp}.port"),
                    format!(
                        "with {} forwarding the port must be the service port {}",
                        d.forward.name(),
                        key.port()
                    ),
                );
            }
            port
        }
        None => key.port(),
    };
    if d.weight > i32::MAX as u32 {
        errs.push(format!("{dp}.weight"), "weight out of range");
    }
    if d.u_threshold > i32::MAX as u32 || d.l_threshold > i32::MAX as u32 {
        errs.push(dp, "threshold out of range");
    }
    if d.l_threshold > d.u_threshold {
        errs.push(
            format!("{dp}.l_threshold"),
            format!(
                "l_threshold {} is above u_threshold {}",
                d.l_threshold, d.u_threshold
            ),
        );
    }
    if Family::of(&d.address) != key.family() && d.forward != Forward::Tunnel {
        errs.push(
            format!("{dp}.address"),
            "a different address family is allowed only for tunnel forwarding",
        );
    }
    if matches!(d.forward, Forward::Bypass | Forward::Other(_)) {
        errs.push(format!("{dp}.forward"), "unsupported forwarding method");
    }
    let mut dest = Dest::new(d.address, port)
        .with_fwd(d.forward)
        .with_weight(d.weight);
    dest.u_threshold = d.u_threshold;
    dest.l_threshold = d.l_threshold;
    if let Some(t) = &d.tunnel {
        tunnel(t, d.forward, dp, errs);
        dest.tun_type = t.kind;
        dest.tun_port = t.port.unwrap_or(0);
        dest.tun_flags = t.csum;
    }
    dest
}

fn tunnel(t: &TunnelSpec, fwd: Forward, dp: &str, errs: &mut Errors) {
    if fwd != Forward::Tunnel {
        errs.push(
            format!("{dp}.tunnel"),
            "tunnel options need `forward: tunnel`",
        );
    }
    let wrong = match t.kind {
        TunnelType::Gue if t.port.is_none_or(|p| p == 0) => Some("gue tunnels need a port"),
        TunnelType::Ipip if t.port.is_some() || t.csum != TunnelCsum::NoCsum => {
            Some("ipip tunnels take no port or checksum option")
        }
        TunnelType::Gre if t.port.is_some() || t.csum == TunnelCsum::RemCsum => {
            Some("gre tunnels take no port and no remcsum")
        }
        _ => None,
    };
    if let Some(msg) = wrong {
        errs.push(format!("{dp}.tunnel"), msg);
    }
}
