//! Typed client for the kernel's `IPVS` generic netlink family.
//!
//! ```no_run
//! use ipvs_netlink::ipvs::{Client, Dest, Service, ServiceKey, Forward};
//! # fn main() -> Result<(), ipvs_netlink::Error> {
//! let mut c = Client::open()?;
//! let key = ServiceKey::tcp("10.0.0.1".parse().unwrap(), 80);
//! c.add_service(&Service::new(key).with_scheduler("rr"))?;
//! c.add_dest(&key, &Dest::new("192.168.1.10".parse().unwrap(), 80).with_fwd(Forward::Masq))?;
//! for (svc, dests) in c.services_with_dests()? {
//!     println!("{} {} ({} dests)", svc.key, svc.scheduler, dests.len());
//! }
//! # Ok(()) }
//! ```
//!
//! Every method uses the one socket of the client; the family id is resolved
//! once in [`Client::open`]. Bulk changes go through [`Client::execute`],
//! which pipelines the requests (see [`crate::Netlink::pipeline`]).

pub mod codec;
pub mod consts;
mod daemon;
mod dest;
pub mod flags;
mod key;
mod service;

pub use crate::Error;
pub use daemon::{DaemonState, Info, SyncDaemon, Timeouts};
pub use dest::{Dest, Forward, TunnelCsum, TunnelType};
pub use key::{fmt_addr_port, Family, Protocol, ServiceKey};
pub use service::{Netmask, Service, Stats};

use crate::{Attrs, Netlink};
use codec::IpvsFamily;
use consts::*;

/// One change to the IPVS table, for [`Client::execute`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    /// Add a service.
    AddService(Service),
    /// Replace a service's scheduler, flags, timeout, netmask and PE.
    EditService(Service),
    /// Delete a service and its destinations.
    DelService(ServiceKey),
    /// Add a destination to a service.
    AddDest(ServiceKey, Dest),
    /// Replace a destination's parameters.
    EditDest(ServiceKey, Dest),
    /// Delete a destination.
    DelDest(ServiceKey, Dest),
    /// Delete every service.
    Flush,
    /// Zero the counters of one service or of all.
    Zero(Option<ServiceKey>),
    /// Set connection timeouts (0 = unchanged).
    SetTimeouts(Timeouts),
    /// Start a sync daemon.
    StartDaemon(SyncDaemon),
    /// Stop a sync daemon.
    StopDaemon(DaemonState),
}

impl Op {
    /// The netlink request of the operation.
    pub fn to_msg(&self) -> codec::IpvsMsg {
        match self {
            Op::AddService(s) => codec::new_service(s),
            Op::EditService(s) => codec::set_service(s),
            Op::DelService(k) => codec::del_service(k),
            Op::AddDest(k, d) => codec::new_dest(k, d),
            Op::EditDest(k, d) => codec::set_dest(k, d),
            Op::DelDest(k, d) => codec::del_dest(k, d),
            Op::Flush => codec::flush(),
            Op::Zero(k) => codec::zero(k.as_ref()),
            Op::SetTimeouts(t) => codec::set_config(t),
            Op::StartDaemon(d) => codec::new_daemon(d),
            Op::StopDaemon(s) => codec::del_daemon(*s),
        }
    }
}

impl std::fmt::Display for Op {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Op::AddService(s) => write!(f, "add service {} ({})", s.key, s.scheduler),
            Op::EditService(s) => write!(f, "edit service {} ({})", s.key, s.scheduler),
            Op::DelService(k) => write!(f, "delete service {k}"),
            Op::AddDest(k, d) => write!(
                f,
                "add dest {} to {k} (weight {})",
                fmt_addr_port(&d.addr, d.port),
                d.weight
            ),
            Op::EditDest(k, d) => write!(
                f,
                "edit dest {} of {k} (weight {})",
                fmt_addr_port(&d.addr, d.port),
                d.weight
            ),
            Op::DelDest(k, d) => {
                write!(f, "delete dest {} from {k}", fmt_addr_port(&d.addr, d.port))
            }
            Op::Flush => write!(f, "flush"),
            Op::Zero(Some(k)) => write!(f, "zero {k}"),
            Op::Zero(None) => write!(f, "zero all"),
            Op::SetTimeouts(t) => write!(f, "set timeouts {} {} {}", t.tcp, t.tcp_fin, t.udp),
            Op::StartDaemon(d) => {
                write!(f, "start {} sync daemon on {}", d.state.name(), d.mcast_ifn)
            }
            Op::StopDaemon(s) => write!(f, "stop {} sync daemon", s.name()),
        }
    }
}

/// IPVS client over one generic netlink socket.
pub struct Client {
    nl: Netlink,
    family: u16,
}

impl Client {
    /// Open a socket and resolve the `IPVS` family. Fails with
    /// [`Error::FamilyNotFound`] when IPVS is not in the kernel.
    pub fn open() -> Result<Client, Error> {
        Client::from_netlink(Netlink::open()?)
    }

    /// Use an existing socket (shared with other families).
    pub fn from_netlink(mut nl: Netlink) -> Result<Client, Error> {
        let family = nl.resolve(IPVS_GENL_NAME)?;
        Ok(Client { nl, family })
    }

    /// The underlying socket (e.g. for [`crate::vmwlch::HostMap`]).
    pub fn netlink(&mut self) -> &mut Netlink {
        &mut self.nl
    }

    /// Give the socket back.
    pub fn into_netlink(self) -> Netlink {
        self.nl
    }

    fn ack(&mut self, msg: codec::IpvsMsg) -> Result<(), Error> {
        self.nl
            .genl_request::<IpvsFamily>(self.family, msg)
            .map(|_| ())
    }

    /// Module version and connection table size.
    pub fn info(&mut self) -> Result<Info, Error> {
        let r = self
            .nl
            .genl_request::<IpvsFamily>(self.family, codec::get_info())?;
        let m = r
            .first()
            .ok_or_else(|| Error::Decode("no GET_INFO reply".into()))?;
        codec::parse_info(&m.attrs()?)
    }

    /// All services, in kernel order (without destinations).
    pub fn services(&mut self) -> Result<Vec<Service>, Error> {
        let mut out = Vec::new();
        self.nl
            .genl_dump_each::<IpvsFamily>(self.family, codec::dump_services(), |_, raw| {
                if let Some(s) = Attrs::parse(raw)?.nested(IPVS_CMD_ATTR_SERVICE)? {
                    out.push(codec::parse_service(&s)?);
                }
                Ok(())
            })?;
        Ok(out)
    }

    /// One service (`ESRCH` if absent).
    pub fn service(&mut self, key: &ServiceKey) -> Result<Service, Error> {
        let r = self
            .nl
            .genl_request::<IpvsFamily>(self.family, codec::get_service(key))?;
        for m in &r {
            if let Some(s) = m.attrs()?.nested(IPVS_CMD_ATTR_SERVICE)? {
                return codec::parse_service(&s);
            }
        }
        Err(Error::Kernel {
            errno: libc::ESRCH,
            msg: None,
        })
    }

    /// The destinations of a service, in kernel order (an unknown service
    /// gives an empty list, like the kernel).
    pub fn dests(&mut self, key: &ServiceKey) -> Result<Vec<Dest>, Error> {
        self.dests_with(key, true)
    }

    /// [`Client::dests`]; without `counters` the traffic counters are not
    /// decoded and `Dest::stats` stays zero (a third of the decoding, for
    /// listings that print none of them).
    pub fn dests_with(&mut self, key: &ServiceKey, counters: bool) -> Result<Vec<Dest>, Error> {
        let mut out = Vec::new();
        let family = key.family();
        self.nl
            .genl_dump_each::<IpvsFamily>(self.family, codec::dump_dests(key), |_, raw| {
                if let Some(d) = Attrs::parse(raw)?.nested(IPVS_CMD_ATTR_DEST)? {
                    out.push(codec::parse_dest_with(&d, family, counters)?);
                }
                Ok(())
            })?;
        Ok(out)
    }

    /// Every service with its destinations.
    pub fn services_with_dests(&mut self) -> Result<Vec<(Service, Vec<Dest>)>, Error> {
        self.services_with_dests_with(true)
    }

    /// [`Client::services_with_dests`], decoding the destinations' traffic
    /// counters only if `counters` (see [`Client::dests_with`]).
    pub fn services_with_dests_with(
        &mut self,
        counters: bool,
    ) -> Result<Vec<(Service, Vec<Dest>)>, Error> {
        let svcs = self.services()?;
        let mut out = Vec::with_capacity(svcs.len());
        for s in svcs {
            let d = self.dests_with(&s.key, counters)?;
            out.push((s, d));
        }
        Ok(out)
    }

    /// Add a service.
    pub fn add_service(&mut self, s: &Service) -> Result<(), Error> {
        self.ack(codec::new_service(s))
    }
    /// Replace a service's parameters (full entry).
    pub fn edit_service(&mut self, s: &Service) -> Result<(), Error> {
        self.ack(codec::set_service(s))
    }
    /// Delete a service.
    pub fn del_service(&mut self, key: &ServiceKey) -> Result<(), Error> {
        self.ack(codec::del_service(key))
    }
    /// Add a destination.
    pub fn add_dest(&mut self, key: &ServiceKey, d: &Dest) -> Result<(), Error> {
        self.ack(codec::new_dest(key, d))
    }
    /// Replace a destination's parameters (full entry).
    pub fn edit_dest(&mut self, key: &ServiceKey, d: &Dest) -> Result<(), Error> {
        self.ack(codec::set_dest(key, d))
    }
    /// Delete a destination.
    pub fn del_dest(&mut self, key: &ServiceKey, d: &Dest) -> Result<(), Error> {
        self.ack(codec::del_dest(key, d))
    }
    /// Delete all services.
    pub fn flush(&mut self) -> Result<(), Error> {
        self.ack(codec::flush())
    }
    /// Zero counters of one service, or of all with `None`.
    pub fn zero(&mut self, key: Option<&ServiceKey>) -> Result<(), Error> {
        self.ack(codec::zero(key))
    }
    /// Current connection timeouts.
    pub fn timeouts(&mut self) -> Result<Timeouts, Error> {
        let r = self
            .nl
            .genl_request::<IpvsFamily>(self.family, codec::get_config())?;
        let m = r
            .first()
            .ok_or_else(|| Error::Decode("no GET_CONFIG reply".into()))?;
        codec::parse_config(&m.attrs()?)
    }
    /// Set connection timeouts (0 leaves a value unchanged).
    pub fn set_timeouts(&mut self, t: &Timeouts) -> Result<(), Error> {
        self.ack(codec::set_config(t))
    }
    /// Running sync daemons.
    pub fn daemons(&mut self) -> Result<Vec<SyncDaemon>, Error> {
        let r = self
            .nl
            .genl_dump::<IpvsFamily>(self.family, codec::dump_daemons())?;
        let mut out = Vec::new();
        for m in &r {
            if let Some(d) = m.attrs()?.nested(IPVS_CMD_ATTR_DAEMON)? {
                if let Some(d) = codec::parse_daemon(&d)? {
                    out.push(d);
                }
            }
        }
        Ok(out)
    }
    /// Start a sync daemon.
    pub fn start_daemon(&mut self, d: &SyncDaemon) -> Result<(), Error> {
        self.ack(codec::new_daemon(d))
    }
    /// Stop a sync daemon.
    pub fn stop_daemon(&mut self, state: DaemonState) -> Result<(), Error> {
        self.ack(codec::del_daemon(state))
    }

    /// Run many operations pipelined, in order. The outer error is a socket
    /// failure; the inner results say, per operation, whether the kernel
    /// accepted it. A failed operation does not stop the following ones.
    pub fn execute(&mut self, ops: &[Op]) -> Result<Vec<Result<(), Error>>, Error> {
        let msgs = ops.iter().map(Op::to_msg).collect();
        self.nl.genl_pipeline::<IpvsFamily>(self.family, msgs)
    }

    /// Start a batch of operations (see [`Batch`]).
    pub fn batch(&mut self) -> Batch<'_> {
        Batch {
            client: self,
            ops: Vec::new(),
        }
    }
}

/// An operation with the kernel's answer.
pub type OpResult = (Op, Result<(), Error>);

/// A batch of operations sent pipelined by [`Batch::commit`].
pub struct Batch<'a> {
    client: &'a mut Client,
    ops: Vec<Op>,
}

impl Batch<'_> {
    /// Queue an operation.
    pub fn push(&mut self, op: Op) -> &mut Self {
        self.ops.push(op);
        self
    }
    /// Number of queued operations.
    pub fn len(&self) -> usize {
        self.ops.len()
    }
    /// Is the batch empty?
    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }
    /// Send everything; returns each operation with its result.
    pub fn commit(self) -> Result<Vec<OpResult>, Error> {
        let results = self.client.execute(&self.ops)?;
        Ok(self.ops.into_iter().zip(results).collect())
    }
}
