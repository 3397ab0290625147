//! The plan: the ordered changes that bring the kernel from its current
//! state to the desired one without black-holing traffic (hosts mapped and
//! services with their real servers added first, then edits, then
//! deletions; with the drain policy removed real servers get weight 0 first
//! and go once idle).

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::net::IpAddr;

use ipvs_netlink::ipvs::consts::IP_VS_SVC_F_SCHED_MASK;
use ipvs_netlink::ipvs::{
    fmt_addr_port, Dest, Forward, Op, Service, ServiceKey, TunnelCsum, TunnelType,
};
use ipvs_netlink::vmwlch::{self, HostState};

use crate::kernel::Current;
use crate::model::{Desired, ServiceEntry};
use crate::spec::RemovePolicy;

/// A change to the host map.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostOp {
    /// Create/update a host, adding (or moving) members.
    Set {
        /// Host name.
        name: String,
        /// Weight.
        weight: u32,
        /// Members to add.
        members: Vec<IpAddr>,
    },
    /// Unmap addresses.
    DelMembers(Vec<IpAddr>),
    /// Delete a host.
    Del(String),
}

/// One planned change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// An IPVS operation.
    Ipvs(Op),
    /// A host map operation.
    Host(HostOp),
}

/// A step of a plan: the change, its phase and a human description.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    /// Phase (steps run phase by phase; see [`apply`](crate::apply::apply)).
    pub phase: u8,
    /// The change.
    pub change: Change,
    /// `+`/`~`/`-` line for humans.
    pub text: String,
}

/// The plan: ordered steps, plus notes (e.g. servers still draining).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Plan {
    /// Steps in execution order.
    pub steps: Vec<Step>,
    /// Informational notes.
    pub notes: Vec<String>,
}

impl Plan {
    /// No changes?
    pub fn is_empty(&self) -> bool {
        self.steps.is_empty()
    }
}

impl fmt::Display for Plan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.steps.is_empty() {
            writeln!(f, "No changes.")?;
        }
        for s in &self.steps {
            writeln!(f, "{}", s.text)?;
        }
        for n in &self.notes {
            writeln!(f, "# {n}")?;
        }
        Ok(())
    }
}

fn dest_desc(d: &Dest) -> String {
    let mut s = format!(
        "{} {} weight {}",
        fmt_addr_port(&d.addr, d.port),
        d.fwd.name(),
        d.weight
    );
    if d.u_threshold != 0 || d.l_threshold != 0 {
        s.push_str(&format!(" thresholds {}/{}", d.u_threshold, d.l_threshold));
    }
    if d.fwd == Forward::Tunnel {
        s.push_str(&format!(" tunnel {}", d.tun_type.name()));
        if d.tun_port != 0 {
            s.push_str(&format!(":{}", d.tun_port));
        }
        if d.tun_flags != TunnelCsum::NoCsum {
            s.push_str(&format!(" {}", d.tun_flags.name()));
        }
    }
    s
}

fn svc_desc(s: &Service) -> String {
    let mut out = format!("{} {}", s.key, s.scheduler);
    if s.persistent() {
        out.push_str(&format!(" persistent {}", s.timeout));
    }
    if !s.netmask.is_host() {
        out.push_str(&format!(" mask {}", s.netmask));
    }
    if let Some(pe) = &s.pe_name {
        out.push_str(&format!(" pe {pe}"));
    }
    if s.flags & IP_VS_SVC_F_SCHED_MASK != 0 {
        out.push_str(&format!(" flags {:#x}", s.flags & IP_VS_SVC_F_SCHED_MASK));
    }
    if s.one_packet() {
        out.push_str(" ops");
    }
    out
}

fn svc_equal(a: &Service, b: &Service) -> bool {
    a.scheduler == b.scheduler
        && a.flags == b.flags
        && (a.timeout == b.timeout || !a.persistent())
        && a.netmask == b.netmask
        && a.pe_name == b.pe_name
}

fn dest_equal(a: &Dest, b: &Dest) -> bool {
    let tun = |d: &Dest| {
        if d.fwd == Forward::Tunnel {
            (d.tun_type, d.tun_port, d.tun_flags)
        } else {
            (TunnelType::Ipip, 0, TunnelCsum::NoCsum)
        }
    };
    a.fwd == b.fwd
        && a.weight == b.weight
        && a.u_threshold == b.u_threshold
        && a.l_threshold == b.l_threshold
        && tun(a) == tun(b)
}

/// Phases of a plan, in execution order.
pub mod phase {
    /// Hosts created/updated and VMs (re)mapped.
    pub const HOSTS_SET: u8 = 0;
    /// New services, each followed by its real servers.
    pub const ADD_SERVICES: u8 = 1;
    /// Changed services.
    pub const EDIT_SERVICES: u8 = 2;
    /// New real servers of existing services.
    pub const ADD_DESTS: u8 = 3;
    /// Changed real servers (including drains to weight 0).
    pub const EDIT_DESTS: u8 = 4;
    /// Removed real servers.
    pub const DEL_DESTS: u8 = 5;
    /// Removed services.
    pub const DEL_SERVICES: u8 = 6;
    /// VMs unmapped and hosts deleted.
    pub const HOSTS_DEL: u8 = 7;
}

/// Compute the plan that converges `current` to `desired`.
pub fn plan(desired: &Desired, current: &Current) -> Plan {
    let mut p = Plan::default();
    if let Some(want) = &desired.services {
        let drain = desired.remove == RemovePolicy::Drain;
        plan_services(&mut p, want, &current.services, drain);
    }
    if let Some(want) = &desired.hosts {
        plan_hosts(&mut p, want, current.hosts.as_deref().unwrap_or_default());
    }
    p.steps.sort_by_key(|s| s.phase);
    p
}

fn step(steps: &mut Vec<Step>, phase: u8, change: Change, text: String) {
    steps.push(Step {
        phase,
        change,
        text,
    });
}

fn plan_services(p: &mut Plan, want: &[ServiceEntry], current: &[ServiceEntry], drain: bool) {
    use phase::*;
    let cur: HashMap<ServiceKey, &ServiceEntry> = current.iter().map(|e| (e.0.key, e)).collect();
    for (svc, dests) in want {
        let Some((csvc, cdests)) = cur.get(&svc.key) else {
            let text = format!("+ service {}", svc_desc(svc));
            step(
                &mut p.steps,
                ADD_SERVICES,
                Change::Ipvs(Op::AddService(svc.clone())),
                text,
            );
            for d in dests {
                let text = format!("+   dest {} -> {}", svc.key, dest_desc(d));
                let op = Op::AddDest(svc.key, d.clone());
                step(&mut p.steps, ADD_SERVICES, Change::Ipvs(op), text);
            }
            continue;
        };
        if !svc_equal(svc, csvc) {
            let text = format!("~ service {} (was {})", svc_desc(svc), svc_desc(csvc));
            step(
                &mut p.steps,
                EDIT_SERVICES,
                Change::Ipvs(Op::EditService(svc.clone())),
                text,
            );
        }
        plan_dests(p, svc.key, dests, cdests, drain);
    }
    let want_keys: HashSet<ServiceKey> = want.iter().map(|(s, _)| s.key).collect();
    for (csvc, cdests) in current {
        if want_keys.contains(&csvc.key) {
            continue;
        }
        if drain {
            let mut busy = false;
            for c in cdests {
                busy |= removal(p, csvc.key, c, true);
            }
            if busy {
                p.notes.push(format!(
                    "service {} kept until its real servers have drained",
                    csvc.key
                ));
                continue;
            }
        }
        let text = format!("- service {}", svc_desc(csvc));
        step(
            &mut p.steps,
            DEL_SERVICES,
            Change::Ipvs(Op::DelService(csvc.key)),
            text,
        );
    }
}

/// The real servers of a service that exists in the kernel.
fn plan_dests(p: &mut Plan, key: ServiceKey, dests: &[Dest], cdests: &[Dest], drain: bool) {
    let cmap: HashMap<(IpAddr, u16), &Dest> =
        cdests.iter().map(|d| ((d.addr, d.port), d)).collect();
    for d in dests {
        match cmap.get(&(d.addr, d.port)) {
            None => {
                let text = format!("+   dest {key} -> {}", dest_desc(d));
                let op = Op::AddDest(key, d.clone());
                step(&mut p.steps, phase::ADD_DESTS, Change::Ipvs(op), text);
            }
            Some(c) if !dest_equal(d, c) => {
                let text = format!("~   dest {key} -> {} (was {})", dest_desc(d), dest_desc(c));
                let op = Op::EditDest(key, d.clone());
                step(&mut p.steps, phase::EDIT_DESTS, Change::Ipvs(op), text);
            }
            Some(_) => {}
        }
    }
    let wset: HashSet<(IpAddr, u16)> = dests.iter().map(|d| (d.addr, d.port)).collect();
    for c in cdests {
        if !wset.contains(&(c.addr, c.port)) {
            removal(p, key, c, drain);
        }
    }
}

fn plan_hosts(p: &mut Plan, want: &[vmwlch::Host], current: &[HostState]) {
    use phase::*;
    let cur: HashMap<&str, &HostState> = current.iter().map(|h| (h.name.as_str(), h)).collect();
    let mut wanted_members: HashSet<IpAddr> = HashSet::new();
    for h in want {
        wanted_members.extend(h.members.iter().copied());
        let Some(c) = cur.get(h.name.as_str()) else {
            let text = format!(
                "+ host {} weight {} vms {}",
                h.name,
                h.weight,
                fmt_addrs(&h.members)
            );
            let op = HostOp::Set {
                name: h.name.clone(),
                weight: h.weight,
                members: h.members.clone(),
            };
            step(&mut p.steps, HOSTS_SET, Change::Host(op), text);
            continue;
        };
        let have: HashSet<IpAddr> = c.members.iter().copied().collect();
        let add: Vec<IpAddr> = h
            .members
            .iter()
            .copied()
            .filter(|a| !have.contains(a))
            .collect();
        if c.weight != h.weight || !add.is_empty() {
            let mut t = format!("~ host {}", h.name);
            if c.weight != h.weight {
                t.push_str(&format!(" weight {} -> {}", c.weight, h.weight));
            }
            if !add.is_empty() {
                t.push_str(&format!(" +vms {}", fmt_addrs(&add)));
            }
            let op = HostOp::Set {
                name: h.name.clone(),
                weight: h.weight,
                members: add,
            };
            step(&mut p.steps, HOSTS_SET, Change::Host(op), t);
        }
    }
    let want_names: HashSet<&str> = want.iter().map(|h| h.name.as_str()).collect();
    let mut unmap: Vec<IpAddr> = current
        .iter()
        .filter(|c| want_names.contains(c.name.as_str()))
        .flat_map(|c| c.members.iter().copied())
        .filter(|a| !wanted_members.contains(a))
        .collect();
    if !unmap.is_empty() {
        unmap.sort();
        let text = format!("- vms {}", fmt_addrs(&unmap));
        step(
            &mut p.steps,
            HOSTS_DEL,
            Change::Host(HostOp::DelMembers(unmap)),
            text,
        );
    }
    let mut gone: Vec<&HostState> = current
        .iter()
        .filter(|c| !want_names.contains(c.name.as_str()))
        .collect();
    gone.sort_by(|a, b| a.name.cmp(&b.name));
    for c in gone {
        let text = format!("- host {}", c.name);
        step(
            &mut p.steps,
            HOSTS_DEL,
            Change::Host(HostOp::Del(c.name.clone())),
            text,
        );
    }
}

/// Plan the removal of a destination. Returns true if it is kept (draining).
fn removal(p: &mut Plan, key: ServiceKey, c: &Dest, drain: bool) -> bool {
    let at = fmt_addr_port(&c.addr, c.port);
    if drain {
        if c.weight != 0 {
            let mut d = c.clone();
            d.weight = 0;
            let text = format!("~   dest {key} -> {at} weight 0 (drain)");
            step(
                &mut p.steps,
                phase::EDIT_DESTS,
                Change::Ipvs(Op::EditDest(key, d)),
                text,
            );
            p.notes.push(format!(
                "{at} of {key} is draining; apply again to delete it once it has no connections"
            ));
            return true;
        }
        if c.active_conns + c.inact_conns > 0 {
            p.notes.push(format!(
                "{at} of {key} is draining ({} active, {} inactive connections)",
                c.active_conns, c.inact_conns
            ));
            return true;
        }
    }
    let text = format!("-   dest {key} -> {at}");
    step(
        &mut p.steps,
        phase::DEL_DESTS,
        Change::Ipvs(Op::DelDest(key, c.clone())),
        text,
    );
    false
}

fn fmt_addrs(v: &[IpAddr]) -> String {
    let s: Vec<String> = v.iter().map(|a| a.to_string()).collect();
    format!("[{}]", s.join(", "))
}
