//! A connection's life: the scheduler picks a VM (with the kernel module's
//! selection code), the VM serves it, and after completion it stays an
//! inactive connection of that VM for `linger` seconds (IPVS keeps closed
//! connections a while, and the schedulers count them).

use std::cmp::Reverse;

use super::ps::Job;
use super::{Sim, T};
use crate::model::Config;
use crate::sched::{choose, DestState, Topology};

/// The scheduler's view of the VMs (no connections yet) and the topology
/// its policy sees.
pub(super) fn scheduler_state(cfg: &Config) -> (Vec<DestState>, Topology) {
    let dests: Vec<DestState> = cfg
        .vms
        .iter()
        .map(|v| DestState {
            service: v.service,
            weight: v.weight,
            active: 0,
            inactive: 0,
        })
        .collect();
    let vm_host: Vec<usize> = cfg.vms.iter().map(|v| v.host).collect();
    let weights: Vec<u32> = cfg.hosts.iter().map(|h| h.weight).collect();
    let topology = Topology::new(cfg.policy, &vm_host, &weights, &dests);
    (dests, topology)
}

impl Sim {
    /// A new connection to `service` with work `demand` arrives now.
    pub(super) fn arrive(&mut self, service: usize, demand: f64) {
        let measured = self.now >= self.cfg.warmup && self.now < self.end;
        let mut tie = || self.rng_sched.next_u32();
        let Some(d) = choose(
            self.cfg.policy,
            &self.topology,
            &self.dests,
            service,
            &mut tie,
        ) else {
            self.dropped += 1;
            return;
        };
        let Some(vm) = self.vms.get_mut(d) else {
            self.dropped += 1;
            return;
        };
        self.seq += 1;
        vm.jobs.push(Reverse(Job {
            tag: T(vm.attained + demand.max(0.0)),
            seq: self.seq,
            // Negative arrival marks a connection that is not measured.
            arrival: T(if measured { self.now } else { -1.0 }),
        }));
        let h = vm.host;
        if let Some(log) = self.log.as_mut() {
            log.push((self.now, service, d));
        }
        self.dests[d].active += 1;
        if measured {
            self.pending[service.min(1)] += 1;
        }
        self.rerate(h);
    }

    /// The connection of VM `v` with the least tag finishes now.
    pub(super) fn complete(&mut self, v: usize) {
        let Some(vm) = self.vms.get_mut(v) else {
            return;
        };
        let Some(Reverse(job)) = vm.jobs.pop() else {
            return;
        };
        // Pin the counter to the tag to keep rounding from accumulating.
        vm.attained = vm.attained.max(job.tag.0);
        let h = vm.host;
        let service = self.dests[v].service.min(1);
        if job.arrival.0 >= 0.0 {
            self.rts[service].push(self.now - job.arrival.0);
            self.pending[service] = self.pending[service].saturating_sub(1);
        }
        self.dests[v].active -= 1;
        if self.cfg.linger > 0.0 {
            self.dests[v].inactive += 1;
            self.lingers.push_back((self.now + self.cfg.linger, v));
        }
        self.rerate(h);
    }

    /// The oldest lingering connection is gone.
    pub(super) fn linger_expired(&mut self) {
        if let Some((_, v)) = self.lingers.pop_front() {
            if let Some(d) = self.dests.get_mut(v) {
                d.inactive -= 1;
            }
        }
    }
}
