//! `bgp:`: announce VIPs by BGP (through a BIRD 2 child process) instead of,
//! or next to, VRRP. Each group of VIPs is announced while it is healthy.

use std::collections::BTreeSet;
use std::net::{IpAddr, Ipv4Addr};
use std::path::PathBuf;

use serde::Deserialize;

use super::values::{Asn, BfdMultiplier, HostRoute, IfName, Millis, SyncId};
use super::vrrp::{Instance, TrackScript};

fn default_bird() -> PathBuf {
    PathBuf::from("bird")
}
fn default_birdc() -> PathBuf {
    PathBuf::from("birdc")
}
fn default_lo() -> IfName {
    IfName("lo".into())
}
fn default_withdraw_delay() -> Millis {
    Millis(1000)
}
fn zero_ms() -> Millis {
    Millis(0)
}
fn default_bfd_interval() -> Millis {
    Millis(100)
}
fn default_bfd_multiplier() -> BfdMultiplier {
    BfdMultiplier(3)
}
fn default_name() -> String {
    "main".into()
}
fn default_syncid() -> SyncId {
    SyncId(0)
}

/// The `bgp:` section.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Bgp {
    /// Names the runtime directory (`/run/keepalive/bird-NAME/`).
    #[serde(default = "default_name")]
    pub name: String,
    /// Where BIRD's generated configuration and control socket live
    /// (default `/run/keepalive/bird-NAME`).
    #[serde(default)]
    pub runtime_dir: Option<PathBuf>,
    /// The `bird` and `birdc` programs.
    #[serde(default = "default_bird")]
    pub bird: PathBuf,
    #[serde(default = "default_birdc")]
    pub birdc: PathBuf,
    pub local_as: Asn,
    pub router_id: Ipv4Addr,
    /// Interface the VIPs are added to (so that IPVS accepts their traffic).
    #[serde(default = "default_lo")]
    pub vip_interface: IfName,
    /// On shutdown: time between the withdrawal and stopping BIRD.
    #[serde(default = "default_withdraw_delay")]
    pub withdraw_delay_ms: Millis,
    /// After start, announce nothing for this long (default 0): a director
    /// that (re)joins a sync mesh first learns the others' connections
    /// (each is re-sent within `net.ipv4.vs.sync_refresh_period`), so that
    /// the flows ECMP moves to it find their entries.
    #[serde(default = "zero_ms")]
    pub announce_hold_ms: Millis,
    /// BFD timers, for the neighbors with `bfd: true`.
    #[serde(default)]
    pub bfd: BfdTimers,
    pub neighbors: Vec<Neighbor>,
    pub groups: Vec<VipGroup>,
    /// Full-mesh IPVS connection sync between active-active directors.
    #[serde(default)]
    pub ipvs_sync: Option<MeshSync>,
}

/// `bgp.ipvs_sync`: the kernel's IPVS sync daemon as master and backup at
/// once, from start to shutdown, whatever the groups' health or a drain:
/// flows that ECMP moves to another director must find their entries there.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct MeshSync {
    /// The interface both daemons send and receive on (the same on every
    /// director).
    pub interface: IfName,
    /// Stamped on the messages sent; a backup with a non-zero syncid
    /// ignores other syncids.
    #[serde(default = "default_syncid")]
    pub syncid: SyncId,
}

/// BFD session timers (BIRD's `protocol bfd`).
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct BfdTimers {
    #[serde(default = "default_bfd_interval")]
    pub min_rx_ms: Millis,
    #[serde(default = "default_bfd_interval")]
    pub min_tx_ms: Millis,
    #[serde(default = "default_bfd_multiplier")]
    pub multiplier: BfdMultiplier,
}

impl Default for BfdTimers {
    fn default() -> Self {
        BfdTimers {
            min_rx_ms: default_bfd_interval(),
            min_tx_ms: default_bfd_interval(),
            multiplier: default_bfd_multiplier(),
        }
    }
}

/// A BGP peer (a router). IPv4 VIPs go to IPv4 neighbors, IPv6 to IPv6.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Neighbor {
    pub address: IpAddr,
    pub remote_as: Asn,
    /// Tie the session to a BFD session (sub-second failure detection).
    #[serde(default)]
    pub bfd: bool,
}

/// VIPs announced together while all their tracked objects are healthy
/// (and the IPVS state is applied).
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct VipGroup {
    pub name: String,
    pub vips: Vec<HostRoute>,
    /// Interfaces that must be up.
    #[serde(default)]
    pub track_interfaces: Vec<IfName>,
    /// Scripts that must succeed (as for VRRP; `weight` has no meaning here).
    #[serde(default)]
    pub track_scripts: Vec<TrackScript>,
}

impl Bgp {
    pub fn runtime_dir(&self) -> PathBuf {
        self.runtime_dir
            .clone()
            .unwrap_or_else(|| PathBuf::from(format!("/run/keepalive/bird-{}", self.name)))
    }
}

/// One owner of the kernel's sync daemons: a VRRP instance switches them
/// with its role, the mesh runs both roles at once; they cannot share.
pub(super) fn validate_sync_owner(b: &Bgp, vrrp: &[Instance]) -> Result<(), String> {
    if b.ipvs_sync.is_none() {
        return Ok(());
    }
    match vrrp.iter().position(|i| i.ipvs_sync.is_some()) {
        None => Ok(()),
        Some(k) => Err(format!(
            "bgp.ipvs_sync: vrrp[{k}] ({}).ipvs_sync also runs the IPVS sync daemon, and the \
             kernel has one per role; keep bgp.ipvs_sync for active-active directors (both \
             roles at once) or vrrp[{k}].ipvs_sync for an active-passive pair, not both",
            vrrp[k].name
        )),
    }
}

fn valid_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 64
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

pub(super) fn validate(b: &Bgp) -> Result<(), String> {
    if !valid_name(&b.name) {
        return Err(format!(
            "bgp.name: {:?} must be 1-64 of [A-Za-z0-9_-]",
            b.name
        ));
    }
    if b.router_id.is_unspecified() {
        return Err("bgp.router_id: must not be 0.0.0.0".into());
    }
    if b.neighbors.is_empty() {
        return Err("bgp.neighbors: at least one neighbor is needed".into());
    }
    let mut seen = BTreeSet::new();
    for (k, n) in b.neighbors.iter().enumerate() {
        let a = n.address;
        if a.is_unspecified() || a.is_multicast() || a.is_loopback() {
            return Err(format!(
                "bgp.neighbors[{k}].address: {a} is not a usable peer address"
            ));
        }
        if !seen.insert(a) {
            return Err(format!("bgp.neighbors[{k}].address: {a} listed twice"));
        }
    }
    if b.groups.is_empty() {
        return Err("bgp.groups: at least one group is needed".into());
    }
    let mut names = BTreeSet::new();
    let mut vips = BTreeSet::new();
    for (k, g) in b.groups.iter().enumerate() {
        let at = format!("bgp.groups[{k}]");
        if !valid_name(&g.name) {
            return Err(format!(
                "{at}.name: {:?} must be 1-64 of [A-Za-z0-9_-]",
                g.name
            ));
        }
        if !names.insert(g.name.as_str()) {
            return Err(format!("{at}.name: {:?} used twice", g.name));
        }
        if g.vips.is_empty() {
            return Err(format!("{at}.vips: at least one VIP is needed"));
        }
        for v in &g.vips {
            if !vips.insert(*v) {
                return Err(format!("{at}.vips: {v} is in more than one place"));
            }
            if !b
                .neighbors
                .iter()
                .any(|n| n.address.is_ipv4() == v.0.is_ipv4())
            {
                return Err(format!(
                    "{at}.vips: {v}: no neighbor of its address family to announce it to"
                ));
            }
        }
        for (s, t) in g.track_scripts.iter().enumerate() {
            if t.weight.is_some() {
                return Err(format!(
                    "{at}.track_scripts[{s}].weight: a BGP group has no priority to move"
                ));
            }
            if t.interval_ms.0 == 0 || t.timeout_ms.0 == 0 {
                return Err(format!(
                    "{at}.track_scripts[{s}]: interval_ms and timeout_ms must be > 0"
                ));
            }
            if t.timeout_ms.0 > t.interval_ms.0 {
                return Err(format!(
                    "{at}.track_scripts[{s}].timeout_ms: must not exceed interval_ms"
                ));
            }
        }
    }
    let t = &b.bfd;
    if t.min_rx_ms.0 == 0 || t.min_tx_ms.0 == 0 {
        return Err("bgp.bfd: intervals must be > 0".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::config::Config;

    fn with(neighbor: &str, vips: &str, extra: &str) -> Result<Config, String> {
        let y = format!(
            "bgp:\n  local_as: 65001\n  router_id: 10.0.0.1\n  neighbors:\n    - {neighbor}\n  \
             groups:\n    - name: web\n      vips: {vips}\n{extra}"
        );
        Config::parse(&y, "t.yaml").map_err(|e| e.to_string())
    }

    const N: &str = "{ address: 10.0.0.2, remote_as: 65000 }";

    #[test]
    fn accepts_a_good_section() {
        let c = with(N, "[198.51.100.10, 198.51.100.11/32]", "").expect("valid");
        let b = c.bgp.expect("bgp");
        assert_eq!(b.groups[0].vips.len(), 2);
        assert_eq!(b.runtime_dir().to_str(), Some("/run/keepalive/bird-main"));
        assert_eq!(b.local_as.0, 65001);
    }

    #[test]
    fn refuses_bad_input() {
        let cases = [
            (
                with(
                    "{ address: 10.0.0.300, remote_as: 65000 }",
                    "[198.51.100.10]",
                    "",
                ),
                "invalid IP address",
            ),
            (
                with("{ address: 10.0.0.2, remote_as: 0 }", "[198.51.100.10]", ""),
                "AS number must be 1..=4294967294",
            ),
            (
                with(
                    "{ address: 10.0.0.2, remote_as: 4294967296 }",
                    "[198.51.100.10]",
                    "",
                ),
                "AS number must be",
            ),
            (with(N, "[198.51.100.0/24]", ""), "is not a host route"),
            (with(N, "[\"2001:db8::1/64\"]", ""), "is not a host route"),
            (
                with(N, "[\"2001:db8::1\"]", ""),
                "no neighbor of its address family",
            ),
            (with(N, "[]", ""), "at least one VIP"),
            (
                with(
                    N,
                    "[198.51.100.10]",
                    "    - { name: web, vips: [198.51.100.11] }\n",
                ),
                "used twice",
            ),
            (
                with(
                    N,
                    "[198.51.100.10]",
                    "    - { name: b, vips: [198.51.100.10] }\n",
                ),
                "more than one place",
            ),
            (
                with(
                    N,
                    "[198.51.100.10]",
                    "      track_scripts: [{ command: /bin/true, weight: 10 }]\n",
                ),
                "no priority to move",
            ),
            (
                with(
                    "{ address: 127.0.0.1, remote_as: 65000 }",
                    "[198.51.100.10]",
                    "",
                ),
                "not a usable peer address",
            ),
        ];
        for (r, want) in cases {
            match r {
                Ok(_) => panic!("accepted, wanted {want:?}"),
                Err(e) => assert!(e.contains(want), "{e:?} lacks {want:?}"),
            }
        }
    }
    #[test]
    fn mesh_sync_parses_with_default_syncid() {
        let c = with(N, "[198.51.100.10]", "  ipvs_sync: { interface: eth1 }\n").expect("valid");
        let m = c.bgp.and_then(|b| b.ipvs_sync).expect("ipvs_sync");
        assert_eq!(m.interface.0, "eth1");
        assert_eq!(m.syncid.0, 0);
        let c = with(
            N,
            "[198.51.100.10]",
            "  ipvs_sync: { interface: eth1, syncid: 42 }\n",
        )
        .expect("valid");
        assert_eq!(
            c.bgp.and_then(|b| b.ipvs_sync).map(|m| m.syncid.0),
            Some(42)
        );
        // Without the field: no mesh.
        let c = with(N, "[198.51.100.10]", "").expect("valid");
        assert!(c.bgp.expect("bgp").ipvs_sync.is_none());
    }

    #[test]
    fn announce_hold_defaults_to_zero_and_is_bounded() {
        let c = with(N, "[198.51.100.10]", "").expect("valid");
        assert_eq!(c.bgp.expect("bgp").announce_hold_ms.0, 0);
        let c = with(N, "[198.51.100.10]", "  announce_hold_ms: 16000\n").expect("valid");
        assert_eq!(c.bgp.expect("bgp").announce_hold_ms.0, 16000);
        let e = with(N, "[198.51.100.10]", "  announce_hold_ms: -1\n").expect_err("negative");
        assert!(e.contains("announce_hold_ms"), "{e}");
    }

    #[test]
    fn mesh_sync_refuses_bad_input() {
        let cases = [
            (
                "  ipvs_sync: { interface: eth1, syncid: 256 }\n",
                "syncid must be 0..=255, got 256",
            ),
            ("  ipvs_sync: { syncid: 1 }\n", "missing field `interface`"),
            (
                "  ipvs_sync: { interface: eth1, port: 8848 }\n",
                "unknown field `port`",
            ),
            (
                "  ipvs_sync: { interface: \"a/b\" }\n",
                "invalid interface name",
            ),
        ];
        for (extra, want) in cases {
            match with(N, "[198.51.100.10]", extra) {
                Ok(_) => panic!("accepted {extra:?}, wanted {want:?}"),
                Err(e) => assert!(
                    e.contains(want) && e.contains("t.yaml:"),
                    "{e:?} lacks {want:?}"
                ),
            }
        }
    }

    /// The kernel's sync daemons have one owner: the mesh or a VRRP role.
    #[test]
    fn mesh_sync_excludes_vrrp_sync() {
        let vrrp = "vrrp:\n  - name: VI_1\n    interface: eth0\n    vrid: 51\n    \
                    virtual_ips: [192.0.2.10]\n    ipvs_sync: { interface: eth1 }\n";
        let bgp = format!(
            "bgp:\n  local_as: 65001\n  router_id: 10.0.0.1\n  neighbors: [{N}]\n  \
             groups: [{{ name: web, vips: [198.51.100.10] }}]\n"
        );
        let both = format!("{vrrp}{bgp}  ipvs_sync: {{ interface: eth1 }}\n");
        let e = Config::parse(&both, "t.yaml").unwrap_err().to_string();
        assert!(
            e.contains("bgp.ipvs_sync: vrrp[0] (VI_1).ipvs_sync also runs the IPVS sync daemon")
                && e.contains("not both"),
            "{e}"
        );
        // Either alone is fine.
        Config::parse(&format!("{vrrp}{bgp}"), "t.yaml").expect("vrrp sync only");
        let vrrp_plain = vrrp.replace("    ipvs_sync: { interface: eth1 }\n", "");
        Config::parse(
            &format!("{vrrp_plain}{bgp}  ipvs_sync: {{ interface: eth1 }}\n"),
            "t.yaml",
        )
        .expect("mesh sync only");
    }
}

#[cfg(test)]
mod example {
    /// The commented `bgp:` section of keepalive.example.yaml is valid.
    #[test]
    fn example_section_is_valid() {
        let text = include_str!("../../keepalive.example.yaml");
        let yaml: String = text
            .lines()
            .skip_while(|l| !l.starts_with("# bgp:"))
            .take_while(|l| l.starts_with('#'))
            .map(|l| format!("{}\n", l.strip_prefix("# ").unwrap_or("")))
            .collect();
        let c = crate::config::Config::parse(&yaml, "example").expect("valid example");
        let b = c.bgp.expect("bgp");
        assert_eq!(b.neighbors.len(), 3);
        assert_eq!(b.groups[0].vips.len(), 2);
        assert_eq!(b.ipvs_sync.map(|m| m.syncid.0), Some(7));
    }
}
