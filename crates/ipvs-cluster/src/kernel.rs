//! The kernel's side: its current state (what a plan starts from) and that
//! state written back as a cluster file (`ipvsctl save -o yaml`).

use ipvs_netlink::ipvs::flags::sched_flag_names;
use ipvs_netlink::ipvs::{Client, Dest, Error, Forward, Netmask, Service};
use ipvs_netlink::vmwlch::{HostMap, HostState};

use crate::model::ServiceEntry;
use crate::spec::{ClusterSpec, DestSpec, HostSpec, NetmaskSpec, Options, ServiceSpec, TunnelSpec};

/// The current kernel state relevant to a plan.
#[derive(Debug, Clone, Default)]
pub struct Current {
    /// Services with destinations.
    pub services: Vec<ServiceEntry>,
    /// Host map, when the VMWLCH family is available and managed.
    pub hosts: Option<Vec<HostState>>,
}

impl Current {
    /// The state a successful apply of `d` leaves (no connections yet): what
    /// a plan against a stored desired state, rather than the kernel, starts from.
    pub fn applied(d: crate::model::Desired) -> Current {
        let hosts = d.hosts.map(|hs| {
            hs.into_iter()
                .map(|h| HostState {
                    name: h.name,
                    weight: h.weight,
                    members: h.members,
                    activeconns: 0,
                    inactconns: 0,
                    dests: 0,
                })
                .collect()
        });
        Current {
            services: d.services.unwrap_or_default(),
            hosts,
        }
    }
}

/// Read the current state (the host map only if `hosts` is wanted).
pub fn read_current(client: &mut Client, hosts: bool) -> Result<Current, Error> {
    let services = client.services_with_dests()?;
    let hosts = if hosts {
        let mut hm = HostMap::new(client.netlink())?;
        Some(hm.hosts()?)
    } else {
        None
    };
    Ok(Current { services, hosts })
}

/// The kernel state as a cluster file, sorted (services by identity, real
/// servers by address, hosts by name), defaults left out; applying it is a
/// no-op.
pub fn from_state(services: Option<&[ServiceEntry]>, hosts: Option<&[HostState]>) -> ClusterSpec {
    let services = services.map(|list| {
        let mut v: Vec<&ServiceEntry> = list.iter().collect();
        v.sort_by_key(|e| e.0.key);
        v.into_iter().map(|(s, ds)| service_spec(s, ds)).collect()
    });
    let hosts = hosts.map(|hs| {
        let mut v: Vec<&HostState> = hs.iter().collect();
        v.sort_by(|a, b| a.name.cmp(&b.name));
        v.into_iter()
            .map(|h| {
                let mut vms = h.members.clone();
                vms.sort();
                HostSpec {
                    name: h.name.clone(),
                    weight: h.weight,
                    vms,
                }
            })
            .collect()
    });
    ClusterSpec {
        services,
        hosts,
        options: Options::default(),
    }
}

/// One service (and its real servers, sorted) as the file writes it.
pub fn service_spec(s: &Service, dests: &[Dest]) -> ServiceSpec {
    let mut spec = ServiceSpec::for_key(s.key);
    spec.scheduler = s.scheduler.clone();
    if s.persistent() {
        spec.persistent = Some(s.timeout);
    }
    if !s.netmask.is_host() {
        spec.netmask = Some(match s.netmask {
            Netmask::V4(a) => NetmaskSpec::Mask(a.to_string()),
            Netmask::V6(p) => NetmaskSpec::Prefix(p),
        });
    }
    spec.pe = s.pe_name.clone();
    spec.one_packet = s.one_packet();
    spec.sched_flags = sched_flag_names(&s.scheduler, s.flags)
        .into_iter()
        .map(String::from)
        .collect();
    let mut ds: Vec<&Dest> = dests.iter().collect();
    ds.sort_by_key(|d| (d.addr, d.port));
    spec.dests = ds
        .into_iter()
        .map(|d| DestSpec {
            address: d.addr,
            port: (d.port != s.key.port() || s.key.mark() != 0).then_some(d.port),
            weight: d.weight,
            forward: d.fwd,
            u_threshold: d.u_threshold,
            l_threshold: d.l_threshold,
            tunnel: (d.fwd == Forward::Tunnel).then(|| TunnelSpec {
                kind: d.tun_type,
                port: (d.tun_port != 0).then_some(d.tun_port),
                csum: d.tun_flags,
            }),
        })
        .collect();
    spec
}
