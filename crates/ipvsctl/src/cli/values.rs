//! Command-line values to kernel values: the user-facing failure, addresses,
//! service keys, services and real servers.

use super::*;

/// A user-facing failure with an exit status.
#[derive(Debug)]
pub struct Fail(pub i32, pub String);

impl From<Error> for Fail {
    fn from(e: Error) -> Self {
        match e {
            Error::FamilyNotFound(f) if f == vmwlch::VMWLCH_GENL_NAME => {
                Fail(1, vmwlch::NOT_LOADED.into())
            }
            Error::FamilyNotFound(f) => Fail(
                1,
                format!("netlink family {f} not found: is IPVS in the kernel? (modprobe ip_vs)"),
            ),
            Error::Invalid(m) => Fail(2, m),
            e => Fail(1, e.to_string()),
        }
    }
}

pub(super) fn usage(m: impl Into<String>) -> Fail {
    Fail(2, m.into())
}

/// Parse `ADDR:PORT`, `[V6]:PORT`, `ADDR` (port None), `V6`.
pub fn parse_addr_port(s: &str) -> Result<(IpAddr, Option<u16>), Fail> {
    let bad = || {
        usage(format!(
            "invalid address `{s}' (ADDR[:PORT], [IPV6][:PORT])"
        ))
    };
    if let Some(rest) = s.strip_prefix('[') {
        let (a, after) = rest.split_once(']').ok_or_else(bad)?;
        let addr: IpAddr = a.parse().map_err(|_| bad())?;
        let port = match after {
            "" => None,
            p => Some(
                p.strip_prefix(':')
                    .ok_or_else(bad)?
                    .parse()
                    .map_err(|_| bad())?,
            ),
        };
        return Ok((addr, port));
    }
    if let Ok(a) = s.parse::<IpAddr>() {
        return Ok((a, None));
    }
    let (a, p) = s.rsplit_once(':').ok_or_else(bad)?;
    Ok((
        a.parse().map_err(|_| bad())?,
        Some(p.parse().map_err(|_| bad())?),
    ))
}

pub(super) fn svc_key(kind: &str, target: &str, ipv6: bool) -> Result<ServiceKey, Fail> {
    if kind.eq_ignore_ascii_case("fwmark") {
        let mark: u32 = target
            .parse()
            .ok()
            .filter(|m| *m > 0)
            .ok_or_else(|| usage(format!("invalid fwmark `{target}'")))?;
        return Ok(ServiceKey::Fwmark {
            family: if ipv6 { Family::Inet6 } else { Family::Inet },
            mark,
        });
    }
    let protocol = match Protocol::parse(kind) {
        Some(p @ (Protocol::Tcp | Protocol::Udp | Protocol::Sctp)) => p,
        _ => {
            return Err(usage(format!(
                "invalid service kind `{kind}' (tcp, udp, sctp, fwmark)"
            )))
        }
    };
    let (addr, port) = parse_addr_port(target)?;
    Ok(ServiceKey::Addr {
        protocol,
        addr,
        port: port.unwrap_or(0),
    })
}

pub(super) fn service_from(svc: &SvcArgs, p: &SvcParams) -> Result<Service, Fail> {
    // Build a one-service cluster spec and reuse the file validation.
    let key = svc_key(&svc.kind, &svc.target, svc.ipv6)?;
    let mut spec = cluster::ServiceSpec::for_key(key);
    spec.scheduler = p.scheduler.clone();
    spec.persistent = p.persistent;
    spec.netmask = p.netmask.as_ref().map(|m| match m.parse::<u32>() {
        Ok(n) => cluster::NetmaskSpec::Prefix(n),
        Err(_) => cluster::NetmaskSpec::Mask(m.clone()),
    });
    spec.pe = p.pe.clone();
    spec.sched_flags = p
        .sched_flags
        .as_deref()
        .map(|f| f.split(',').map(String::from).collect())
        .unwrap_or_default();
    spec.one_packet = p.ops;
    let cfg = cluster::ClusterSpec {
        services: Some(vec![spec]),
        ..Default::default()
    };
    let d = cluster::validate(&cfg).map_err(|errs| {
        usage(
            errs.into_iter()
                .map(|(_, m)| m)
                .collect::<Vec<_>>()
                .join("; "),
        )
    })?;
    let mut list = d.services.unwrap_or_default();
    list.pop()
        .map(|(s, _)| s)
        .ok_or_else(|| usage("invalid service"))
}

pub(super) fn dest_from(key: &ServiceKey, server: &str, p: &DestParams) -> Result<Dest, Fail> {
    let (addr, port) = parse_addr_port(server)?;
    let fwd = Forward::parse(&p.forward)
        .ok_or_else(|| usage(format!("invalid forwarding method `{}'", p.forward)))?;
    let mut port = port.unwrap_or(key.port());
    if key.mark() == 0 && matches!(fwd, Forward::Route | Forward::Tunnel) {
        port = key.port();
    }
    let mut d = Dest::new(addr, port).with_fwd(fwd).with_weight(p.weight);
    d.u_threshold = p.u_threshold;
    d.l_threshold = p.l_threshold;
    if let Some(t) = &p.tun_type {
        d.tun_type =
            TunnelType::parse(t).ok_or_else(|| usage(format!("invalid tunnel type `{t}'")))?;
    }
    d.tun_port = p.tun_port.unwrap_or(0);
    if let Some(c) = &p.tun_csum {
        d.tun_flags =
            TunnelCsum::parse(c).ok_or_else(|| usage(format!("invalid tunnel checksum `{c}'")))?;
    }
    if (p.tun_type.is_some() || p.tun_port.is_some() || p.tun_csum.is_some())
        && fwd != Forward::Tunnel
    {
        return Err(usage("tunnel options need --forward tunnel"));
    }
    if d.tun_type == TunnelType::Gue && d.tun_port == 0 && fwd == Forward::Tunnel {
        return Err(usage("gue tunnels need --tun-port"));
    }
    Ok(d)
}
