//! The host CPU model: processor sharing over vCPU threads.
//!
//! A host has `cores` cores of speed `speed`. A VM with `n` connections in
//! service and `k` vCPUs has `min(n, k)` runnable vCPU threads; the host's
//! cores are shared equally by all runnable threads of all its VMs (each
//! thread gets at most one core), and a VM's connections share its threads'
//! capacity equally. So every connection on VM `v` progresses at
//!
//! ```text
//! r(v) = min(n_v, k_v) * speed * min(1, cores / T) / n_v,   T = sum over the host's VMs of min(n_u, k_u)
//! ```
//!
//! and all requests on a host share its capacity. With enough vCPUs this is
//! plain per-host processor sharing with a one-core cap per connection.
//!
//! Because all connections of a VM progress at the same rate, each VM keeps
//! one counter `attained` (work received by every one of its connections
//! since the start); a connection arriving with demand `D` finishes when the
//! counter reaches `attained_at_arrival + D` (its *tag*). The next completion
//! of a VM is its least tag; rates change only when a connection arrives at
//! or leaves the host.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::{Sim, T};
use crate::model::{Config, HostSpec, VmSpec};

/// A connection in service.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct Job {
    /// Finish tag (attained-service level at which it completes).
    pub(super) tag: T,
    /// Arrival order (tie-break, determinism).
    pub(super) seq: u64,
    /// Arrival time.
    pub(super) arrival: T,
}

/// Run-time state of a VM.
#[derive(Debug)]
pub(super) struct Vm {
    pub(super) host: usize,
    pub(super) vcpus: u32,
    pub(super) jobs: BinaryHeap<Reverse<Job>>,
    /// Work received by each of its connections since the start.
    pub(super) attained: f64,
    /// Current per-connection rate.
    pub(super) rate: f64,
}

/// Run-time state of a host.
#[derive(Debug, Default, Clone)]
pub(super) struct Host {
    pub(super) spec_cores: f64,
    pub(super) speed: f64,
    pub(super) vms: std::ops::Range<usize>,
    /// Capacity in use now.
    pub(super) used: f64,
    /// Connections in service now.
    pub(super) jobs: usize,
    /// Integrals over the current window and over the measured period.
    pub(super) win_busy: f64,
    pub(super) win_jobs: f64,
    pub(super) total_busy: f64,
}

/// The hosts of a configuration, idle. A host's VMs are contiguous in
/// `cfg.vms` (the placements list them host by host).
pub(super) fn hosts(cfg: &Config) -> Vec<Host> {
    cfg.hosts
        .iter()
        .enumerate()
        .map(|(h, spec): (usize, &HostSpec)| {
            let first = cfg.vms.iter().position(|v| v.host == h).unwrap_or(0);
            let len = cfg.vms.iter().filter(|v| v.host == h).count();
            Host {
                spec_cores: spec.cores,
                speed: spec.speed,
                vms: first..first + len,
                ..Host::default()
            }
        })
        .collect()
}

/// The VMs of a configuration, idle.
pub(super) fn vms(cfg: &Config) -> Vec<Vm> {
    cfg.vms
        .iter()
        .map(|v: &VmSpec| Vm {
            host: v.host,
            vcpus: v.vcpus.max(1),
            jobs: BinaryHeap::new(),
            attained: 0.0,
            rate: 0.0,
        })
        .collect()
}

/// Rate of every connection on each VM of a host, and the capacity used,
/// for the VMs' connection counts `n` and vCPUs `k` (see the module docs).
#[must_use]
pub fn ps_rates(cores: f64, speed: f64, n: &[usize], k: &[u32]) -> (Vec<f64>, f64) {
    let threads: Vec<f64> = n
        .iter()
        .zip(k)
        .map(|(&n, &k)| n.min(k as usize) as f64)
        .collect();
    let t: f64 = threads.iter().sum();
    if t <= 0.0 {
        return (vec![0.0; n.len()], 0.0);
    }
    let per_thread = speed * (cores / t).min(1.0);
    let rates = n
        .iter()
        .zip(&threads)
        .map(|(&n, &th)| {
            if n == 0 {
                0.0
            } else {
                th * per_thread / n as f64
            }
        })
        .collect();
    (rates, speed * t.min(cores))
}

impl Sim {
    /// Recomputes the rates of the VMs of host `h`.
    pub(super) fn rerate(&mut self, h: usize) {
        let Some(host) = self.hosts.get(h) else {
            return;
        };
        let range = host.vms.clone();
        let n: Vec<usize> = self.vms[range.clone()]
            .iter()
            .map(|v| v.jobs.len())
            .collect();
        let k: Vec<u32> = self.vms[range.clone()].iter().map(|v| v.vcpus).collect();
        let (rates, used) = ps_rates(host.spec_cores, host.speed, &n, &k);
        for (vm, r) in self.vms[range].iter_mut().zip(rates) {
            vm.rate = r;
        }
        let host = &mut self.hosts[h];
        host.used = used;
        host.jobs = n.iter().sum();
    }

    /// The earliest completion over all VMs at the current rates: `(time, VM)`.
    pub(super) fn next_completion(&self) -> Option<(f64, usize)> {
        let mut best: Option<(f64, usize)> = None;
        for (i, vm) in self.vms.iter().enumerate() {
            if let Some(Reverse(j)) = vm.jobs.peek() {
                if vm.rate > 0.0 {
                    let t = self.now + ((j.tag.0 - vm.attained).max(0.0) / vm.rate);
                    if best.is_none_or(|(b, _)| t < b) {
                        best = Some((t, i));
                    }
                }
            }
        }
        best
    }
}
