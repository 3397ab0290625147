//! What load feedback changes in the desired state before it is applied:
//! VM moves in the host map, and the weights, as vmwlch host weights or,
//! on a kernel without the module, as scaled destination weights.

use std::collections::BTreeMap;
use std::net::IpAddr;

use ipvs_cluster::Desired;

use crate::config::FeedbackMode;

/// The controller follows each host at this many times its static weight:
/// static host weights are often single digits, and a destination's factor
/// (dest_weights) in whole host-weight steps would move by a third or a
/// half at a time, too coarse to balance and a cause of oscillation. The
/// vmwlch host map gets the weight divided back (rounded, at least 1).
pub const RESOLUTION: u32 = 100;

/// The connection-balance factors (dest_weights) are in thousandths.
pub const FACTOR_SCALE: u32 = 1000;

/// The load-feedback part of the overrides (see [`super::Overrides`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Feedback {
    pub mode: FeedbackMode,
    /// Weights the controller wrote, by host, in [`RESOLUTION`]ths of a
    /// host weight; a host absent here keeps its static weight.
    pub weights: BTreeMap<String, u32>,
    /// Where fresh agent reports say a VM address runs now.
    pub placement: BTreeMap<IpAddr, String>,
    /// dest_weights only: each host's factor from the director's own
    /// connection counts (in [`FACTOR_SCALE`]ths; absent: 1), which brings
    /// the hosts' aggregate loads over all services to their weights.
    pub factors: BTreeMap<String, u32>,
}

/// Which weights a [`Feedback`] ends up in, given whether the kernel has
/// the VMWLCH family.
pub fn resolved_mode(mode: FeedbackMode, module: bool) -> FeedbackMode {
    match mode {
        FeedbackMode::Auto if module => FeedbackMode::HostWeights,
        FeedbackMode::Auto => FeedbackMode::DestWeights,
        m => m,
    }
}

/// Applies `fb` to `desired`. `module`: the kernel has the VMWLCH family;
/// without it (in `dest_weights` mode) the host map only guides the
/// weights and is not applied. Returns the VMs moved.
pub fn override_feedback(desired: &mut Desired, fb: &Feedback, module: bool) -> usize {
    let Some(hosts) = desired.hosts.as_mut() else {
        return 0;
    };
    let mut moved = 0;
    for (addr, to) in &fb.placement {
        let Some(t) = hosts.iter().position(|h| &h.name == to) else {
            continue;
        };
        let Some(f) = hosts.iter().position(|h| h.members.contains(addr)) else {
            continue; // only addresses the map already places
        };
        if f != t {
            hosts[f].members.retain(|a| a != addr);
            hosts[t].members.push(*addr);
            moved += 1;
        }
    }
    let mode = resolved_mode(fb.mode, module);
    if mode == FeedbackMode::HostWeights {
        for h in hosts.iter_mut() {
            if let Some(&w) = fb.weights.get(&h.name) {
                h.weight = ((w + RESOLUTION / 2) / RESOLUTION).max(1);
            }
        }
        return moved;
    }
    // dest_weights: (weight written / (static * RESOLUTION)) * connection
    // factor per host, on every destination the map places there.
    let factor: BTreeMap<IpAddr, (u64, u64)> = hosts
        .iter()
        .filter(|h| h.weight > 0)
        .filter_map(|h| {
            let w = fb.weights.get(&h.name).copied();
            let c = fb.factors.get(&h.name).copied();
            if w.is_none() && c.is_none() {
                return None;
            }
            let w = w.map_or(u64::from(h.weight) * u64::from(RESOLUTION), u64::from);
            let num = w * u64::from(c.unwrap_or(FACTOR_SCALE));
            let den = u64::from(h.weight) * u64::from(RESOLUTION) * u64::from(FACTOR_SCALE);
            Some((h, (num, den)))
        })
        .flat_map(|(h, f)| h.members.iter().map(move |a| (*a, f)))
        .collect();
    for (_, dests) in desired.services.iter_mut().flatten() {
        for d in dests.iter_mut() {
            if let Some(&(num, den)) = factor.get(&d.addr) {
                d.weight = scale(d.weight, num, den);
            }
        }
    }
    if !module {
        desired.hosts = None;
    }
    moved
}

/// `weight * num / den`, rounded, in IPVS's weight range; a positive weight
/// stays positive (draining is the operator's, not the controller's).
fn scale(weight: u32, num: u64, den: u64) -> u32 {
    if weight == 0 {
        return 0;
    }
    let v = (u128::from(weight) * u128::from(num) + u128::from(den / 2)) / u128::from(den.max(1));
    // The kernel's weights are ints: at most i32::MAX (fits in u32).
    v.clamp(1, i32::MAX as u128) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = "services:
  - {protocol: tcp, address: 192.0.2.10, port: 80, scheduler: wlc,
     dests: [{address: 10.1.0.1, weight: 10}, {address: 10.1.0.2, weight: 10}, {address: 10.1.0.9, weight: 4}]}
  - {protocol: tcp, address: 192.0.2.10, port: 81, scheduler: wlc,
     dests: [{address: 10.1.0.1, port: 81, weight: 1}, {address: 10.1.0.3, weight: 0}]}
hosts:
  - {name: h1, weight: 4, vms: [10.1.0.1, 10.1.0.3]}
  - {name: h2, weight: 4, vms: [10.1.0.2]}
";

    fn desired() -> Desired {
        ipvs_cluster::parse(FILE).unwrap().1
    }

    /// The destination weights of the file's service on `port` (80 or 81).
    fn weights(d: &Desired, port: u16) -> Vec<u32> {
        let s = d.services.as_ref().unwrap();
        s[usize::from(port - 80)]
            .1
            .iter()
            .map(|d| d.weight)
            .collect()
    }

    fn fb(mode: FeedbackMode, w: &[(&str, u32)]) -> Feedback {
        Feedback {
            mode,
            // the tests give whole host weights
            weights: w
                .iter()
                .map(|(h, w)| (h.to_string(), *w * RESOLUTION))
                .collect(),
            placement: BTreeMap::new(),
            factors: BTreeMap::new(),
        }
    }

    #[test]
    fn host_weights_go_to_the_map() {
        let mut d = desired();
        override_feedback(
            &mut d,
            &fb(FeedbackMode::Auto, &[("h1", 2), ("h9", 7)]),
            true,
        );
        let h = d.hosts.as_ref().unwrap();
        assert_eq!((h[0].weight, h[1].weight), (2, 4));
        assert_eq!(weights(&d, 80), vec![10, 10, 4], "destinations untouched");
    }

    #[test]
    fn dest_weights_scale_the_hosts_destinations_and_leave_the_map_out() {
        let mut d = desired();
        override_feedback(
            &mut d,
            &fb(FeedbackMode::Auto, &[("h1", 1), ("h2", 6)]),
            false,
        );
        assert!(d.hosts.is_none(), "a stock kernel gets no host map");
        // 10*1/4 = 2.5 -> 3; 10*6/4 = 15; unmapped 10.1.0.9 keeps 4.
        assert_eq!(weights(&d, 80), vec![3, 15, 4]);
        // 1*1/4 rounds to 0 but stays 1; weight 0 stays 0.
        assert_eq!(weights(&d, 81), vec![1, 0]);
        // Explicit dest_weights with the module: the map stays, static.
        let mut d = desired();
        override_feedback(&mut d, &fb(FeedbackMode::DestWeights, &[("h2", 2)]), true);
        assert_eq!(d.hosts.as_ref().unwrap()[1].weight, 4);
        assert_eq!(weights(&d, 80), vec![10, 5, 4]);
    }

    #[test]
    fn placement_moves_only_mapped_addresses_to_known_hosts() {
        let mut d = desired();
        let mut f = fb(FeedbackMode::HostWeights, &[]);
        f.placement.insert("10.1.0.1".parse().unwrap(), "h2".into());
        f.placement.insert("10.1.0.9".parse().unwrap(), "h2".into()); // not in the map
        f.placement.insert("10.1.0.3".parse().unwrap(), "h7".into()); // no such host
        f.placement.insert("10.1.0.2".parse().unwrap(), "h2".into()); // already there
        assert_eq!(override_feedback(&mut d, &f, true), 1);
        let h = d.hosts.as_ref().unwrap();
        assert_eq!(h[0].members, vec!["10.1.0.3".parse::<IpAddr>().unwrap()]);
        assert_eq!(h[1].members.len(), 2);
        // The moved VM's weight follows its new host in dest_weights.
        let mut d = desired();
        let mut f = fb(FeedbackMode::DestWeights, &[("h2", 8)]);
        f.placement.insert("10.1.0.1".parse().unwrap(), "h2".into());
        override_feedback(&mut d, &f, false);
        assert_eq!(weights(&d, 80), vec![20, 20, 4]);
    }

    #[test]
    fn connection_factors_multiply_the_host_weights_factor() {
        let mut d = desired();
        let mut f = fb(FeedbackMode::DestWeights, &[("h1", 2)]);
        f.factors.insert("h1".into(), 1500); // x1.5
        f.factors.insert("h2".into(), 250); // x0.25, no weight written
        override_feedback(&mut d, &f, false);
        // 10 * 2/4 * 1.5 = 7.5 -> 8; 10 * 0.25 = 2.5 -> 3; unmapped 4.
        assert_eq!(weights(&d, 80), vec![8, 3, 4]);
        // Host weights mode: factors are not used (the module balances).
        let mut d = desired();
        let f = Feedback {
            mode: FeedbackMode::HostWeights,
            ..f
        };
        override_feedback(&mut d, &f, true);
        assert_eq!(weights(&d, 80), vec![10, 10, 4]);
    }

    #[test]
    fn scale_bounds() {
        assert_eq!(scale(i32::MAX as u32, 2, 1), i32::MAX as u32);
        assert_eq!(scale(0, 5, 1), 0);
        assert_eq!(scale(3, 0, 1), 1);
        assert_eq!(scale(u32::MAX, u64::MAX, 1), i32::MAX as u32);
    }
}
