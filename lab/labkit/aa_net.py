"""The active-active lab's network and configuration files: a router with
BIRD (ECMP over the directors' BGP routes, BFD), N directors (keepalive
with a `bgp:` section, the sync mesh, the cluster from etcd), etcd, the
reference cluster's hosts and VMs answering by direct routing."""
import os
import subprocess
from .base import HOSTS, HNAMES, LabError, SENSOR_PORT, VMS, WEB_PORT, run, write

VIP = "198.51.100.10"
GW = "10.1.0.254"  # the router's leg on the servers' LAN: the VMs' gateway
ETCD_ADDR = "10.1.0.250"
ETCD_URL = f"http://{ETCD_ADDR}:2379"
PREFIX = "/lab"
NS_RT, NS_ETCD = "lab-rt", "lab-etcd"
CANARY_PORT = 8443  # the service a changed cluster file adds
# How long after its start a (re)joining director waits before it announces:
# the sync mesh re-sends every live connection within sync_refresh_period
# (plus the 2 s buffer flush), and a flow that ECMP moves to the newcomer
# must find its entry there.
SYNC_REFRESH_S = 10
JOIN_HOLD_MS = 1000 * (SYNC_REFRESH_S + 6)


# director -> times it was rebuilt: a director back from a crash gets a new
# namespace and new bridge ports, as the dead ones stay until the kernel
# frees them (their orphaned TCP sockets - FINs that the cut links never
# deliver - hold them for minutes).
GEN = {}


def ns_dir(i):
    return f"lab-d{i}" + (f"g{GEN[i]}" if GEN.get(i) else "")


def _batch(ns, lines, tmp, name):
    p = os.path.join(tmp, f"{name}.batch")
    write(p, "\n".join(lines) + "\n")
    # None: the VM's root namespace (the lab's own thread may have entered the client's)
    cmd = ["nsenter", "--net=/proc/1/ns/net", "ip", "-batch", p] if ns is None else ["ip", "-n", ns, "-batch", p]
    return subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def _wait(procs):
    for what, p in procs:
        try:
            _, err = p.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            p.kill()
            raise LabError(f"configuring {what}: no answer in 120 s")
        if p.returncode != 0:
            raise LabError(f"configuring {what} failed: {err.strip()[:300]}")


def ports(i):
    """Director I's bridge ports (routers' LAN, servers' LAN)."""
    g = f"g{GEN[i]}" if GEN.get(i) else ""
    return f"pd{i}{g}", f"qd{i}{g}"


def director_links(i):
    """`ip` lines (run in the root namespace) creating director I and its
    two links: eth0 on the routers' LAN, eth1 on the servers' LAN."""
    d = ns_dir(i)
    p, q = ports(i)
    return [f"netns add {d}",
            f"link add eth0 netns {d} type veth peer name {p} netns lab-br",
            f"link add eth1 netns {d} type veth peer name {q} netns lab-br"]


def director_setup(i):
    return ["link set lo up", f"addr add 10.0.0.{i}/24 dev eth0", f"addr add 10.1.0.{i}/16 dev eth1",
            "link set eth0 up", "link set eth1 up", "route add default via 10.0.0.254"]


def build(tmp, n):
    # Namespaces inherit these from the VM's root namespace: forwarding, no
    # IPv6, ARP for direct routing (answer only for the asked interface's
    # addresses, announce from the best local address), no reverse-path
    # filter (the VMs answer from the VIP through the router's other leg).
    write("/proc/sys/net/core/devconf_inherit_init_net", 1)
    for scope in ("all", "default"):
        write(f"/proc/sys/net/ipv6/conf/{scope}/disable_ipv6", 1)
        write(f"/proc/sys/net/ipv4/conf/{scope}/forwarding", 1)
        write(f"/proc/sys/net/ipv4/conf/{scope}/arp_ignore", 1)
        write(f"/proc/sys/net/ipv4/conf/{scope}/arp_announce", 2)
        write(f"/proc/sys/net/ipv4/conf/{scope}/rp_filter", 0)
    names = ["lab-br", "lab-cl", NS_RT, NS_ETCD] + [f"lab-{h}" for h in HNAMES] + [v["ns"] for v in VMS]
    root = [f"netns add {x}" for x in names]
    root += ["link add eth0 netns lab-cl type veth peer name eth2 netns " + NS_RT,
             f"link add eth0 netns {NS_RT} type veth peer name prt netns lab-br",
             f"link add eth1 netns {NS_RT} type veth peer name qrt netns lab-br",
             f"link add eth0 netns {NS_ETCD} type veth peer name qe netns lab-br"]
    for i in range(1, n + 1):
        root += director_links(i)
    for h in HNAMES:
        root.append(f"link add uplink netns lab-{h} type veth peer name q{h} netns lab-br")
    for v in VMS:
        root.append(f"link add eth0 netns {v['ns']} type veth peer name {v['name']} netns lab-{v['host']}")
    _wait([("namespaces", _batch(None, root, tmp, "root"))])
    per = {}
    br = ["link set lo up", "link add br0 type bridge", "link add br1 type bridge", "link set br0 up",
          "link set br1 up", "link set prt master br0 up", "link set qrt master br1 up", "link set qe master br1 up"]
    br += [f"link set pd{i} master br0 up" for i in range(1, n + 1)]
    br += [f"link set qd{i} master br1 up" for i in range(1, n + 1)]
    br += [f"link set q{h} master br1 up" for h in HNAMES]
    per["lab-br"] = br
    per["lab-cl"] = ["link set lo up", "addr add 192.0.2.200/24 dev eth0", "link set eth0 up",
                     "route add default via 192.0.2.254"]
    per[NS_RT] = ["link set lo up", "addr add 10.0.0.254/24 dev eth0", f"addr add {GW}/16 dev eth1",
                  "addr add 192.0.2.254/24 dev eth2", "link set eth0 up", "link set eth1 up", "link set eth2 up"]
    per[NS_ETCD] = ["link set lo up", f"addr add {ETCD_ADDR}/16 dev eth0", "link set eth0 up"]
    for i in range(1, n + 1):
        per[ns_dir(i)] = director_setup(i)
    for h in HNAMES:
        per[f"lab-{h}"] = ["link set lo up", "link add hbr type bridge", "link set hbr up",
                           "link set uplink master hbr up"] + \
                          [f"link set {v['name']} master hbr up" for v in VMS if v["host"] == h]
    for v in VMS:  # direct routing: the VIP on lo, the answers through the router
        per[v["ns"]] = ["link set lo up", f"addr add {VIP}/32 dev lo", f"addr add {v['addr']}/16 dev eth0",
                        "link set eth0 up", f"route add default via {GW}"]
    _wait([(ns, _batch(ns, lines, tmp, ns)) for ns, lines in per.items()])
    # L4 hashing: the client's connections spread over the directors
    run(["ip", "netns", "exec", NS_RT, "sysctl", "-qw", "net.ipv4.fib_multipath_hash_policy=1"])
    for i in range(1, n + 1):
        director_sysctls(i)


def director_sysctls(i):
    # Sync for the mesh: each established connection at once (a state
    # change), then again on traffic once SYNC_REFRESH_S has passed (so that
    # a rejoining director learns every live connection), not every 50
    # packets (sync_period 0).
    run(["ip", "netns", "exec", ns_dir(i), "sysctl", "-qw", "net.ipv4.vs.sync_threshold=3 0",
         f"net.ipv4.vs.sync_refresh_period={SYNC_REFRESH_S}"])


def rebuild_director(tmp, i):
    """A director that comes back from a crash: a fresh namespace (no IPVS
    state, no connection entries) on new bridge ports."""
    subprocess.run(["ip", "netns", "del", ns_dir(i)], capture_output=True, timeout=60)
    GEN[i] = GEN.get(i, 0) + 1
    p, q = ports(i)
    _wait([("director links", _batch(None, director_links(i), tmp, f"d{i}-root"))])
    _wait([(ns_dir(i), _batch(ns_dir(i), director_setup(i), tmp, f"d{i}")),
           ("lab-br", _batch("lab-br", [f"link set {p} master br0 up", f"link set {q} master br1 up"],
                             tmp, f"d{i}-br"))])
    director_sysctls(i)


def delete_all():
    names = [x for x in (os.listdir("/run/netns") if os.path.isdir("/run/netns") else []) if x.startswith("lab-")]
    if names:
        subprocess.run(["ip", "-force", "-batch", "-"], input="".join(f"netns del {x}\n" for x in names),
                       capture_output=True, text=True, timeout=60)


def router_conf(n):
    y = ["log stderr all;", "router id 10.0.0.254;", "protocol device {}",
         # every director's route merged into one multipath kernel route
         "protocol kernel { ipv4 { import none; export all; }; merge paths yes limit 16; }",
         "protocol bfd { interface \"eth0\" { min rx interval 100 ms; min tx interval 100 ms; multiplier 3; }; }"]
    for i in range(1, n + 1):
        y += [f"protocol bgp d{i} {{", "  local as 65000;", f"  neighbor 10.0.0.{i} as 65001;",
              "  bfd on; connect retry time 2; error wait time 1, 5;",
              "  ipv4 { import all; export none; };", "}"]
    return "\n".join(y) + "\n"


def bird_wrapper(tmp):
    """BIRD at a real-time priority: BFD's 100 ms timers must not wait for
    the CPU in a busy (emulated) VM, or sessions flap and routes go. On a
    busy director one would do the same (keepalive's own real-time priority
    is not inherited by what it starts)."""
    path = os.path.join(tmp, "bird-rt")
    write(path, '#!/bin/sh\nexec chrt -f 40 bird "$@"\n')
    os.chmod(path, 0o755)
    return path


def director_conf(i, tmp, hold_ms=0):
    return f"""global:
  metrics_listen: 127.0.0.1:9650
  realtime_priority: 50
bgp:
  runtime_dir: {tmp}/bird-d{i}
  bird: {bird_wrapper(tmp)}
  local_as: 65001
  router_id: 10.0.0.{i}
  withdraw_delay_ms: 500
  announce_hold_ms: {hold_ms}
  neighbors:
    - {{ address: 10.0.0.254, remote_as: 65000, bfd: true }}
  ipvs_sync: {{ interface: eth1, syncid: 7 }}
  groups:
    - name: lab
      vips: [{VIP}]
cluster_source:
  etcd: {{ endpoints: [{ETCD_URL}], prefix: {PREFIX}, name: d{i} }}
"""


def cluster_file(canary=False):
    y = ["services:"]
    for svc, port in (("sensor", SENSOR_PORT), ("web", WEB_PORT)):
        y += [f"  # {svc}", "  - protocol: tcp", f"    address: {VIP}", f"    port: {port}",
              "    scheduler: vmwlch", "    dests:"]
        y += [f"      - {{ address: {v['addr']}, forward: route }}" for v in VMS if v["service"] == svc]
    if canary:
        y += ["  # canary: a changed file stored mid-run", "  - protocol: tcp", f"    address: {VIP}",
              f"    port: {CANARY_PORT}", "    scheduler: vmwlch", "    dests:"]
        y += [f"      - {{ address: {v['addr']}, forward: route }}" for v in VMS if v["service"] == "web"]
    y += ["hosts:"]
    for h, _, w in HOSTS:
        y += [f"  - name: {h}", f"    weight: {w}",
              f"    vms: [{', '.join(v['addr'] for v in VMS if v['host'] == h)}]"]
    return "\n".join(y) + "\n"


def ipvs_table(pid):
    """{port: {real server: (active, inactive)}} of the VIP's services in
    PID's namespace (a service without real servers maps to {})."""
    want = "%08X" % int.from_bytes(bytes(map(int, VIP.split("."))), "big")
    res, port = {}, None
    with open(f"/proc/{pid}/net/ip_vs") as f:
        for line in f.read().splitlines()[3:]:
            p = line.split()
            if p and p[0] in ("TCP", "UDP", "SCTP"):
                a, pt = p[1].split(":")
                port = int(pt, 16) if a == want else None
                if port is not None:
                    res[port] = {}
            elif p and p[0] == "->" and port is not None:
                res[port][p[1]] = (int(p[4]), int(p[5]))
    return res


def ipvs_conns_scheduled(pid):
    """Connections this director scheduled itself (synced ones not counted)."""
    with open(f"/proc/{pid}/net/ip_vs_stats") as f:
        return int(f.read().splitlines()[2].split()[0], 16)
