//! Client of the `VMWLCH` generic netlink family of the `ip_vs_vmwlch`
//! kernel module: the map of physical hosts (name, weight) to the VM
//! addresses they run, used by the `vmwlc`/`vmwlch` schedulers.
//!
//! The constants are in [`uapi`], mirrored from the module's uapi header.

use std::net::IpAddr;

use serde::{Deserialize, Serialize};

use crate::attr::{addr_from_bytes, Attr, Attrs};
use crate::{Error, FamilyName, GenlBody, Netlink};

pub mod uapi;

use uapi::attr::*;
use uapi::cmd::*;
pub use uapi::{
    VMWLCH_DEFAULT_WEIGHT, VMWLCH_GENL_NAME, VMWLCH_GENL_VERSION, VMWLCH_HOST_NAME_MAX,
    VMWLCH_MAX_HOSTS, VMWLCH_MAX_MEMBERS, VMWLCH_MAX_WEIGHT,
};

/// The family marker.
#[derive(Debug, Clone, Default)]
pub struct VmwlchFamily;

impl FamilyName for VmwlchFamily {
    const NAME: &'static str = VMWLCH_GENL_NAME;
    const VERSION: u8 = VMWLCH_GENL_VERSION;
}

type Msg = GenlBody<VmwlchFamily>;

/// A host of the map, as configured.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Host {
    /// Host name (1..63 bytes).
    pub name: String,
    /// Host weight 0..65535.
    pub weight: u32,
    /// VM addresses on the host.
    pub members: Vec<IpAddr>,
}

/// A host as dumped, with its live load.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HostState {
    /// Host name.
    pub name: String,
    /// Weight.
    pub weight: u32,
    /// Mapped VM addresses.
    pub members: Vec<IpAddr>,
    /// Sum of active connections of its tracked destinations.
    pub activeconns: u64,
    /// Sum of inactive connections.
    pub inactconns: u64,
    /// Tracked destinations on the host.
    pub dests: u32,
}

/// `VMWLCH_CMD_GET_INFO`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct VmwlchInfo {
    /// Module version.
    pub version: String,
    /// Host limit.
    pub max_hosts: u32,
    /// Member limit.
    pub max_members: u32,
    /// Hosts in this namespace.
    pub hosts: u32,
    /// Mapped addresses.
    pub members: u32,
    /// Services using vmwlc/vmwlch.
    pub services: u32,
    /// Tracked destinations.
    pub dests: u32,
    /// Successful scheduling decisions.
    pub decisions: u64,
    /// Decisions without an eligible destination.
    pub no_dest: u64,
    /// Map/destination generation counter.
    pub generation: u32,
    /// Decisions made by plain wlc while the scheduling snapshot was not
    /// current (right after a change, or after a rebuild that failed).
    pub fallbacks: u64,
    /// Snapshots built and published.
    pub rebuilds: u64,
    /// Changes whose rebuild was deferred and coalesced.
    pub deferred: u64,
    /// Rebuilds that ran out of memory.
    pub rebuild_failures: u64,
    /// Rebuilds retried after a failure.
    pub rebuild_retries: u64,
    /// New destinations whose tracking ran out of memory (retried).
    pub track_failures: u64,
    /// Whether decisions use the snapshot (false: plain wlc for now);
    /// `None` from a module without the attribute.
    pub snapshot_current: Option<bool>,
    /// Time spent building snapshots (ns).
    pub build_ns: u64,
    /// Schedule calls decided host-aware, from a current snapshot (the
    /// others are `fallbacks`); `None` from a module without the attribute.
    pub host_aware: Option<u64>,
}

/// How many times a host dump interrupted by a change is taken again.
const DUMP_TRIES: u32 = 5;

/// The message shown when the family is missing.
pub const NOT_LOADED: &str =
    "VMWLCH netlink family not found: is the ip_vs_vmwlch module loaded? (modprobe ip_vs_vmwlch)";

fn addr_bytes(a: &IpAddr) -> Vec<u8> {
    match a {
        IpAddr::V4(v) => v.octets().to_vec(),
        IpAddr::V6(v) => v.octets().to_vec(),
    }
}

fn members_attr(m: &[IpAddr]) -> Attr {
    Attr::Nested(
        VMWLCH_A_HOST_MEMBERS,
        m.iter()
            .map(|a| Attr::Bytes(VMWLCH_MEMBER_A_ADDR, addr_bytes(a)))
            .collect(),
    )
}

/// Validate a host name against the uapi limits.
pub fn check_name(name: &str) -> Result<(), Error> {
    if name.is_empty() || name.len() >= VMWLCH_HOST_NAME_MAX {
        return Err(Error::Invalid(format!(
            "host name `{name}': must be 1..{} bytes",
            VMWLCH_HOST_NAME_MAX - 1
        )));
    }
    if name.bytes().any(|b| b == 0) {
        return Err(Error::Invalid(format!("host name `{name}' contains NUL")));
    }
    Ok(())
}

/// `SET_HOST` request (create or update; members are added/moved).
pub fn msg_set_host(name: &str, weight: Option<u32>, members: &[IpAddr]) -> Msg {
    let mut a = vec![Attr::Str(VMWLCH_A_HOST_NAME, name.into())];
    if let Some(w) = weight {
        a.push(Attr::U32(VMWLCH_A_HOST_WEIGHT, w));
    }
    if !members.is_empty() {
        a.push(members_attr(members));
    }
    Msg::new(VMWLCH_CMD_SET_HOST, a)
}

/// `REPLACE_MAP` request.
pub fn msg_replace_map(hosts: &[Host]) -> Msg {
    let a = hosts
        .iter()
        .map(|h| {
            Attr::Nested(
                VMWLCH_A_HOST,
                vec![
                    Attr::Str(VMWLCH_A_HOST_NAME, h.name.clone()),
                    Attr::U32(VMWLCH_A_HOST_WEIGHT, h.weight),
                    members_attr(&h.members),
                ],
            )
        })
        .collect();
    Msg::new(VMWLCH_CMD_REPLACE_MAP, a)
}

fn parse_members(a: &Attrs<'_>) -> Result<Vec<IpAddr>, Error> {
    let mut out = Vec::new();
    if let Some(m) = a.nested(VMWLCH_A_HOST_MEMBERS)? {
        for v in m.all(VMWLCH_MEMBER_A_ADDR) {
            out.push(addr_from_bytes(v.len() == 16, v)?);
        }
    }
    Ok(out)
}

/// Decode a GET_HOST reply.
pub fn parse_host(a: &Attrs<'_>) -> Result<HostState, Error> {
    Ok(HostState {
        name: a.string(VMWLCH_A_HOST_NAME).unwrap_or_default(),
        weight: a.u32(VMWLCH_A_HOST_WEIGHT)?.unwrap_or(0),
        members: parse_members(a)?,
        activeconns: a.u64(VMWLCH_A_HOST_ACTIVECONNS)?.unwrap_or(0),
        inactconns: a.u64(VMWLCH_A_HOST_INACTCONNS)?.unwrap_or(0),
        dests: a.u32(VMWLCH_A_HOST_DESTS)?.unwrap_or(0),
    })
}

/// Client of the VMWLCH family on a shared socket.
pub struct HostMap<'a> {
    nl: &'a mut Netlink,
    family: u16,
}

impl<'a> HostMap<'a> {
    /// Resolve the family on `nl`. A missing family is reported as
    /// [`Error::FamilyNotFound`] (show [`NOT_LOADED`] to users).
    pub fn new(nl: &'a mut Netlink) -> Result<Self, Error> {
        let family = nl.resolve(VMWLCH_GENL_NAME)?;
        Ok(HostMap { nl, family })
    }

    fn ack(&mut self, m: Msg) -> Result<(), Error> {
        self.nl
            .genl_request::<VmwlchFamily>(self.family, m)
            .map(|_| ())
    }

    /// Create or update a host: weight (None = default on create,
    /// unchanged on update) and members to add (moved from other hosts).
    pub fn set_host(
        &mut self,
        name: &str,
        weight: Option<u32>,
        members: &[IpAddr],
    ) -> Result<(), Error> {
        check_name(name)?;
        self.ack(msg_set_host(name, weight, members))
    }
    /// Delete a host (its members become unmapped).
    pub fn del_host(&mut self, name: &str) -> Result<(), Error> {
        check_name(name)?;
        self.ack(Msg::new(
            VMWLCH_CMD_DEL_HOST,
            vec![Attr::Str(VMWLCH_A_HOST_NAME, name.into())],
        ))
    }
    /// Map addresses to an existing host.
    pub fn add_members(&mut self, name: &str, members: &[IpAddr]) -> Result<(), Error> {
        check_name(name)?;
        self.ack(Msg::new(
            VMWLCH_CMD_ADD_MEMBERS,
            vec![
                Attr::Str(VMWLCH_A_HOST_NAME, name.into()),
                members_attr(members),
            ],
        ))
    }
    /// Unmap addresses.
    pub fn del_members(&mut self, members: &[IpAddr]) -> Result<(), Error> {
        self.ack(Msg::new(
            VMWLCH_CMD_DEL_MEMBERS,
            vec![members_attr(members)],
        ))
    }
    /// Replace the whole map atomically.
    pub fn replace_map(&mut self, hosts: &[Host]) -> Result<(), Error> {
        for h in hosts {
            check_name(&h.name)?;
        }
        self.ack(msg_replace_map(hosts))
    }
    /// Delete every host.
    pub fn flush(&mut self) -> Result<(), Error> {
        self.ack(Msg::new(VMWLCH_CMD_FLUSH, vec![]))
    }
    /// Every host with members and live load. A dump that a change
    /// interrupted (the module flags it) is taken again, a few times.
    pub fn hosts(&mut self) -> Result<Vec<HostState>, Error> {
        let mut tries = 0;
        let r = loop {
            let msg = Msg::new(VMWLCH_CMD_GET_HOST, vec![]);
            match self.nl.genl_dump::<VmwlchFamily>(self.family, msg) {
                Err(Error::DumpInterrupted) if tries < DUMP_TRIES => tries += 1,
                r => break r?,
            }
        };
        r.iter().map(|m| parse_host(&m.attrs()?)).collect()
    }
    /// Module version, limits and counters.
    pub fn info(&mut self) -> Result<VmwlchInfo, Error> {
        let r = self
            .nl
            .genl_request::<VmwlchFamily>(self.family, Msg::new(VMWLCH_CMD_GET_INFO, vec![]))?;
        let m = r
            .first()
            .ok_or_else(|| Error::Decode("no GET_INFO reply".into()))?;
        let a = m.attrs()?;
        Ok(VmwlchInfo {
            version: a.string(VMWLCH_A_INFO_VERSION).unwrap_or_default(),
            max_hosts: a.u32(VMWLCH_A_INFO_MAX_HOSTS)?.unwrap_or(0),
            max_members: a.u32(VMWLCH_A_INFO_MAX_MEMBERS)?.unwrap_or(0),
            hosts: a.u32(VMWLCH_A_INFO_HOSTS)?.unwrap_or(0),
            members: a.u32(VMWLCH_A_INFO_MEMBERS)?.unwrap_or(0),
            services: a.u32(VMWLCH_A_INFO_SERVICES)?.unwrap_or(0),
            dests: a.u32(VMWLCH_A_INFO_DESTS)?.unwrap_or(0),
            decisions: a.u64(VMWLCH_A_INFO_DECISIONS)?.unwrap_or(0),
            no_dest: a.u64(VMWLCH_A_INFO_NO_DEST)?.unwrap_or(0),
            generation: a.u32(VMWLCH_A_INFO_GENERATION)?.unwrap_or(0),
            fallbacks: a.u64(VMWLCH_A_INFO_FALLBACKS)?.unwrap_or(0),
            rebuilds: a.u64(VMWLCH_A_INFO_REBUILDS)?.unwrap_or(0),
            deferred: a.u64(VMWLCH_A_INFO_DEFERRED)?.unwrap_or(0),
            rebuild_failures: a.u64(VMWLCH_A_INFO_REBUILD_FAILURES)?.unwrap_or(0),
            rebuild_retries: a.u64(VMWLCH_A_INFO_REBUILD_RETRIES)?.unwrap_or(0),
            track_failures: a.u64(VMWLCH_A_INFO_TRACK_FAILURES)?.unwrap_or(0),
            snapshot_current: a.u32(VMWLCH_A_INFO_SNAPSHOT_CURRENT)?.map(|v| v != 0),
            build_ns: a.u64(VMWLCH_A_INFO_BUILD_NS)?.unwrap_or(0),
            host_aware: a.u64(VMWLCH_A_INFO_HOST_AWARE)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn golden_set_host() {
        let mut out = Vec::new();
        crate::genl::encode_request(
            &mut out,
            0x22,
            msg_set_host("h1", Some(3), &["10.0.0.5".parse().unwrap()]),
            netlink_packet_core::NLM_F_REQUEST | netlink_packet_core::NLM_F_ACK,
            4,
        );
        #[rustfmt::skip]
        let want: Vec<u8> = vec![
            48, 0, 0, 0, 0x22, 0, 5, 0, 4, 0, 0, 0, 0, 0, 0, 0,
            1, 1, 0, 0,
            7, 0, 1, 0, b'h', b'1', 0, 0,
            8, 0, 2, 0, 3, 0, 0, 0,
            12, 0, 3, 0x80, 8, 0, 1, 0, 10, 0, 0, 5,
        ];
        assert_eq!(out, want);
    }

    #[test]
    fn decode_host_dump() {
        let body = Msg::new(
            VMWLCH_CMD_GET_HOST,
            vec![
                Attr::Str(VMWLCH_A_HOST_NAME, "rack1".into()),
                Attr::U32(VMWLCH_A_HOST_WEIGHT, 2),
                Attr::Nested(
                    VMWLCH_A_HOST_MEMBERS,
                    vec![
                        Attr::Bytes(VMWLCH_MEMBER_A_ADDR, vec![10, 0, 0, 1]),
                        Attr::Bytes(
                            VMWLCH_MEMBER_A_ADDR,
                            "2001:db8::5"
                                .parse::<std::net::Ipv6Addr>()
                                .unwrap()
                                .octets()
                                .to_vec(),
                        ),
                    ],
                ),
                Attr::U64(VMWLCH_A_HOST_ACTIVECONNS, 7),
                Attr::U64(VMWLCH_A_HOST_INACTCONNS, 9),
                Attr::U32(VMWLCH_A_HOST_DESTS, 2),
            ],
        );
        let mut out = Vec::new();
        crate::genl::encode_request(&mut out, 0x22, body, 0, 1);
        let a = Attrs::parse(&out[20..]).unwrap();
        let h = parse_host(&a).unwrap();
        assert_eq!(h.name, "rack1");
        assert_eq!(
            h.members,
            vec![
                "10.0.0.1".parse::<IpAddr>().unwrap(),
                "2001:db8::5".parse().unwrap()
            ]
        );
        assert_eq!(
            (h.weight, h.activeconns, h.inactconns, h.dests),
            (2, 7, 9, 2)
        );
    }
}
