"""The front ends: keepalive's configuration, its log, and what the lab reads
from their namespaces through /proc (no exec on the sampling path)."""
import datetime
import re
from .base import AGENT_ADDR, AGENT_PORT, GW, HOSTS, SENSOR_PORT, VIP, VMS, WEB_PORT

# ---------------------------------------------------------------- front ends

# A service without traffic on the web VMs, whose weights `_churn` phases
# change constantly (lab.py --schedulers vmwlch,vmwlch_churn).
CHURN_PORT = 8081


# Load feedback (a `_fb` phase): the destinations' static weight, which the
# host factors scale, and how often the agents are polled.
FB_DEST_WEIGHT = 100
FB_INTERVAL_MS = 1000


def ka_config(i, sched, advert_ms=100, churn_service=False, feedback=False):
    prio = 200 if i == 1 else 100
    # real-time event loop: the lab keeps the VM busy, and adverts must not wait
    y = ["global:", "  metrics_listen: 127.0.0.1:9650", "  realtime_priority: 50", "vrrp:"]
    y += ["  - name: VI_1", "    interface: eth0", "    vrid: 51", f"    priority: {prio}",
          f"    advert_interval_ms: {advert_ms}", f"    virtual_ips: [{VIP}/24]",
          "    ipvs_sync: { interface: eth1, syncid: 51 }"]
    y += ["  - name: VI_2", "    interface: eth1", "    vrid: 52", f"    priority: {prio}",
          f"    advert_interval_ms: {advert_ms}", f"    virtual_ips: [{GW}/16]"]
    y += ["services:"]
    for svc, port in (("sensor", SENSOR_PORT), ("web", WEB_PORT)):
        y += [f"  # {svc}", "  - protocol: tcp", f"    address: {VIP}", f"    port: {port}",
              f"    scheduler: {sched}", "    dests:"]
        weight = f", weight: {FB_DEST_WEIGHT}" if feedback else ""
        y += [f"      - {{ address: {v['addr']}, forward: masq{weight} }}" for v in VMS if v["service"] == svc]
    if churn_service:
        y += ["  # churn: no traffic, weights changed under the others' load", "  - protocol: tcp",
              f"    address: {VIP}", f"    port: {CHURN_PORT}", f"    scheduler: {sched}", "    dests:"]
        y += [f"      - {{ address: {v['addr']}, forward: masq }}" for v in VMS if v["service"] == "web"]
    y += ["hosts:"]
    for h, _, w in HOSTS:
        y += [f"  - name: {h}", f"    weight: {w}",
              f"    vms: [{', '.join(v['addr'] for v in VMS if v['host'] == h)}]"]
    if feedback:
        # stock-kernel mode: wlc with each destination's weight scaled by
        # its host's factor (the module, loaded for the other phases, unused)
        y += ["load_feedback:", "  agents:"]
        y += [f"    {h}: \"{AGENT_ADDR[h]}:{AGENT_PORT}\"" for h, _, _ in HOSTS]
        y += [f"  interval_ms: {FB_INTERVAL_MS}", f"  timeout_ms: {FB_INTERVAL_MS - 100}",
              "  mode: dest_weights", "  follow_placement: true"]
    return "\n".join(y) + "\n"


def fib_has(pid, addr):
    """Namespace of PID has ADDR as a local address (from /proc, no exec)."""
    try:
        lines = open(f"/proc/{pid}/net/fib_trie").read().splitlines()
    except OSError:
        return False
    for a, b in zip(lines, lines[1:]):
        if a.strip().endswith(f"-- {addr}") and "host LOCAL" in b:
            return True
    return False


def _ipvs_rows(pid):
    """(port, scheduler, None) per service and (port, dest_addr, fields) per
    destination line of /proc/PID/net/ip_vs (fields: Forward Weight ActiveConn InActConn)."""
    port = None
    with open(f"/proc/{pid}/net/ip_vs") as f:
        for line in f.read().splitlines()[3:]:
            p = line.split()
            if not p:
                continue
            if p[0] in ("TCP", "UDP", "SCTP"):
                port = int(p[1].split(":")[1], 16)
                yield port, p[2], None
            elif p[0] == "->" and port is not None:
                a, _ = p[1].split(":")
                yield port, ".".join(str(int(a[i:i + 2], 16)) for i in (0, 2, 4, 6)), p[2:]


def ipvs_read(pid):
    """({port: scheduler}, {(port, dest_addr): (active, inactive)}) from /proc/PID/net/ip_vs."""
    scheds, dests = {}, {}
    for port, x, fields in _ipvs_rows(pid):
        if fields is None:
            scheds[port] = x
        else:
            dests[(port, x)] = (int(fields[2]), int(fields[3]))
    return scheds, dests


def ipvs_weights(pid):
    """{(port, dest_addr): weight} from /proc/PID/net/ip_vs."""
    return {(port, x): int(fields[1]) for port, x, fields in _ipvs_rows(pid) if fields is not None}


def client_ports(pid, port):
    """Client ports of the connections to VIP:port in PID's IPVS connection table."""
    want = "%08X" % int.from_bytes(bytes(map(int, "192.0.2.200".split("."))), "big")
    ports = set()
    try:
        with open(f"/proc/{pid}/net/ip_vs_conn") as f:
            for line in f:
                p = line.split()
                if len(p) >= 8 and p[1] == want and int(p[4], 16) == port:
                    ports.add(int(p[2], 16))
    except (OSError, ValueError):
        pass
    return ports


def synced_established(pid, port):
    """ESTABLISHED entries from the client to VIP:port in PID's connection table."""
    want = "%08X" % int.from_bytes(bytes(map(int, "192.0.2.200".split("."))), "big")
    vip = "%08X" % int.from_bytes(bytes(map(int, VIP.split("."))), "big")
    n = 0
    try:
        with open(f"/proc/{pid}/net/ip_vs_conn") as f:
            for line in f:
                p = line.split()
                if len(p) >= 8 and p[0] == "TCP" and p[1] == want and p[3] == vip \
                        and int(p[4], 16) == port and p[7] == "ESTABLISHED":
                    n += 1
    except OSError:
        pass
    return n



def ka_masters_since(path, t0):
    """{instance: time} of keepalive's first transitions to MASTER at or after T0 in its log."""
    res = {}
    try:
        text = open(path, errors="replace").read()
    except OSError:
        return res
    for line in re.sub(r"\x1b\[[0-9;]*m", "", text).splitlines():
        if "VRRP transition" not in line or not re.search(r'to="?master', line, re.I):
            continue
        m = re.search(r"instance=(\S+)", line)
        try:
            t = datetime.datetime.fromisoformat(line.split()[0]).timestamp()
        except (ValueError, IndexError):
            continue
        if m and t >= t0 and m.group(1) not in res:
            res[m.group(1)] = t
    return res


