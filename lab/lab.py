#!/usr/bin/env python3
"""The reference cluster lab (run inside the test VM, as root; see docs/demo.md).

    lab.py --out DIR [--sensors N] [--web-users U] [--warm S] [--ramp S]
           [--measure S] [--schedulers wlc,vmwlc,vmwlch] [--no-failover]

Builds, with network namespaces of this VM only:

  client 192.0.2.200 --br0-- fe1/fe2 eth0 (VIP 192.0.2.10, VRRP VI_1)
                             fe1/fe2 eth1 (10.1.0.1/.2, gateway 10.1.0.254, VRRP VI_2)
                     --br1-- 5 physical hosts (a bridge each) -- 20 VMs 10.1.H.x/16

Two front ends run keepalive (VRRPv3, 100 ms adverts, IPVS connection sync
on eth1) with the services "sensor" (VIP:9000) and "web" (VIP:80), NAT to
the VMs, and the VMWLCH host map. One process (lab-serve, Rust) serves every VM and
models the hosts' CPUs; lab-load (Rust) runs the sensors and the web users;
this process orchestrates, samples and reports, off the request path.

Phases: for each scheduler the hybrid workload runs for warm+ramp+measure
seconds (web users first, then sensors connect over the ramp, then the
measured window); per-host load is sampled every second. Then, under the
last scheduler with everything connected, the active front end is killed
(its links cut and keepalive SIGKILLed) and the failover is measured.

Writes DIR/summary.json, DIR/summary.txt and DIR/samples-<sched>.dat;
prints a progress display and the table. Exit status: 0 measured, 1 the lab
could not be built or measured (errors on stderr), 2 bad arguments, 3 the
run completed but its self-check found it untrustworthy (the reasons are
printed: generator lag, connect timeouts, sensors that never connected).
"""
import argparse
import asyncio
import datetime
import json
import math
import os
import random
import re
import resource
import signal
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(REPO, "tests", "py"))
from netns import enter, netns  # noqa: E402
BIN = os.path.join(REPO, "target", "release")
KEEPALIVE = os.path.join(BIN, "keepalive")
LAB_LOAD = os.path.join(BIN, "lab-load")
LAB_SERVE = os.path.join(BIN, "lab-serve")

VIP, GW = "192.0.2.10", "10.1.0.254"
SENSOR_PORT, WEB_PORT = 9000, 80
SENSOR_PERIOD = 5.0
NS_BR, NS_CL = "lab-br", "lab-cl"
FE = {1: "lab-fe1", 2: "lab-fe2"}

# The reference cluster. Host: (name, capacity in normal CPUs, host weight).
# Two fast hosts (1.5x) get weight 3, the others 2: weight ~ capacity.
HOSTS = [("h1", 1.5, 3), ("h2", 1.5, 3), ("h3", 1.0, 2), ("h4", 1.0, 2), ("h5", 1.0, 2)]
# Placement: four VMs per host (a VM-count view looks balanced), but the web
# tier sits on two of the older hosts (h3: 3 web + 1 sensor, h4: 2 + 2) and
# the fast hosts carry only sensor VMs. Per-service schedulers cannot see
# that h3/h4 also carry the web load, nor that h1/h2 are faster.
PLACEMENT = {"h1": "ssss", "h2": "ssss", "h3": "wwws", "h4": "wwss", "h5": "ssss"}


def log(*a):
    print("[lab]", *a, file=sys.stderr, flush=True)


def out(*a):
    print(*a, flush=True)


class LabError(Exception):
    pass


def vms():
    """[{name, ns, addr, host, service}] in placement order."""
    res, ns_, nw = [], 0, 0
    for hi, (h, _, _) in enumerate(HOSTS, 1):
        for k, kind in enumerate(PLACEMENT[h]):
            if kind == "s":
                ns_ += 1
                name, svc = f"s{ns_}", "sensor"
            else:
                nw += 1
                name, svc = f"w{nw}", "web"
            res.append(dict(name=name, ns=f"lab-{name}", addr=f"10.1.{hi}.{11 + k}", host=h, service=svc))
    return res


VMS = vms()
HOST_OF = {v["addr"]: v["host"] for v in VMS}
WEIGHT = {h: w for h, _, w in HOSTS}
CAP = {h: c for h, c, _ in HOSTS}
HNAMES = [h for h, _, _ in HOSTS]

def run(cmd, timeout=60, input=None):
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, input=input)
    except subprocess.TimeoutExpired:
        raise LabError(f"{' '.join(cmd)}: no answer in {timeout} s")
    if r.returncode != 0:
        raise LabError(f"{' '.join(cmd)} failed ({r.returncode}): {r.stderr.strip()[:500]}")
    return r.stdout


def write(path, value):
    with open(path, "w") as f:
        f.write(str(value))


# ---------------------------------------------------------------- topology

def build_topology(tmp):
    # Namespaces inherit these from the VM's own (private) root namespace:
    # forwarding, ARP answered only on the asked interface, no IPv6 chatter.
    write("/proc/sys/net/core/devconf_inherit_init_net", 1)
    for scope in ("all", "default"):
        write(f"/proc/sys/net/ipv6/conf/{scope}/disable_ipv6", 1)
        write(f"/proc/sys/net/ipv4/conf/{scope}/forwarding", 1)
        write(f"/proc/sys/net/ipv4/conf/{scope}/arp_ignore", 1)
    names = [NS_BR, NS_CL, FE[1], FE[2]] + [f"lab-{h}" for h in HNAMES] + [v["ns"] for v in VMS]
    root = [f"netns add {n}" for n in names]
    root.append(f"link add eth0 netns {NS_CL} type veth peer name pc netns {NS_BR}")
    for i in (1, 2):
        root.append(f"link add eth0 netns {FE[i]} type veth peer name pf{i} netns {NS_BR}")
        root.append(f"link add eth1 netns {FE[i]} type veth peer name qf{i} netns {NS_BR}")
    for h in HNAMES:
        root.append(f"link add uplink netns lab-{h} type veth peer name q{h} netns {NS_BR}")
    for v in VMS:
        root.append(f"link add eth0 netns {v['ns']} type veth peer name {v['name']} netns lab-{v['host']}")
    per = {}
    br = ["link set lo up", "link add br0 type bridge", "link add br1 type bridge",
          "link set br0 up", "link set br1 up", "link set pc master br0 up"]
    for i in (1, 2):
        br += [f"link set pf{i} master br0 up", f"link set qf{i} master br1 up"]
    br += [f"link set q{h} master br1 up" for h in HNAMES]
    per[NS_BR] = br
    per[NS_CL] = ["link set lo up", "addr add 192.0.2.200/24 dev eth0", "link set eth0 up"]
    for i in (1, 2):
        per[FE[i]] = ["link set lo up", f"addr add 192.0.2.{i}/24 dev eth0", f"addr add 10.1.0.{i}/16 dev eth1",
                      "link set eth0 up", "link set eth1 up"]
    for h in HNAMES:
        per[f"lab-{h}"] = ["link set lo up", "link add hbr type bridge", "link set hbr up",
                           "link set uplink master hbr up"] + \
                          [f"link set {v['name']} master hbr up" for v in VMS if v["host"] == h]
    for v in VMS:
        per[v["ns"]] = ["link set lo up", f"addr add {v['addr']}/16 dev eth0", "link set eth0 up",
                        f"route add default via {GW}"]
    path = os.path.join(tmp, "root.batch")
    write(path, "\n".join(root) + "\n")
    run(["ip", "-batch", path], timeout=120)
    procs = []
    for ns, lines in per.items():
        p = os.path.join(tmp, f"{ns}.batch")
        write(p, "\n".join(lines) + "\n")
        procs.append((ns, subprocess.Popen(["ip", "-n", ns, "-batch", p], stdout=subprocess.DEVNULL,
                                           stderr=subprocess.PIPE, text=True)))
    for ns, p in procs:
        try:
            _, err = p.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            p.kill()
            raise LabError(f"configuring {ns}: no answer in 120 s")
        if p.returncode != 0:
            raise LabError(f"configuring {ns} failed: {err.strip()[:300]}")


def delete_topology():
    """Remove the lab's namespaces (one exec: `ip -batch`)."""
    names = [n for n in (os.listdir("/run/netns") if os.path.isdir("/run/netns") else []) if n.startswith("lab-")]
    if names:
        try:
            subprocess.run(["ip", "-force", "-batch", "-"], input="".join(f"netns del {n}\n" for n in names),
                           capture_output=True, text=True, timeout=60)
        except subprocess.TimeoutExpired:
            log("warning: removing the lab's namespaces timed out")


# A SYN to HOST:PORT every 20 ms for 15 s (run in the client namespace as its
# own process, so that the loaded lab event loop cannot delay it); each socket
# is dropped after 0.5 s, completed or not. Only the SYN-ACKs matter: tcpdump
# timestamps them.
SYN_PROBER = """
import socket, sys, time
host, port = sys.argv[1], int(sys.argv[2])
print("ready", flush=True)
open_, end = [], time.time() + 15
while time.time() < end:
    s = socket.socket()
    s.setblocking(False)
    s.connect_ex((host, port))
    open_.append((time.time(), s))
    while open_ and open_[0][0] < time.time() - 0.5:
        open_.pop(0)[1].close()
    time.sleep(0.02)
"""


class PacketTiming:
    """tcpdump and the SYN prober in the client namespace (see SYN_PROBER)."""

    def __init__(self, mac, old_mac):
        self.mac, self.old_mac, self.lines, self.procs, self.reader = mac, old_mac, [], [], None

    async def start(self):
        cap = await asyncio.create_subprocess_exec(
            "ip", "netns", "exec", NS_CL, "tcpdump", "-i", "eth0", "-n", "-e", "-tt", "-l", "-U",
            f"(src host {VIP} and tcp src port {WEB_PORT} and tcp[tcpflags] & tcp-syn != 0) or "
            f"(arp and ether src {self.mac}) or (ether src {self.old_mac} and ip proto 112)",
            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.procs.append(cap)

        async def read():
            async for line in cap.stdout:
                self.lines.append(line.decode(errors="replace"))

        self.reader = asyncio.create_task(read())
        seen = []
        while True:
            line = await asyncio.wait_for(cap.stderr.readline(), 30)
            seen.append(line.decode(errors="replace").strip())
            if not line:
                raise LabError(f"tcpdump in the client namespace did not start: {' / '.join(seen)}")
            if b"listening on" in line:
                break
        syn = await asyncio.create_subprocess_exec(
            "ip", "netns", "exec", NS_CL, sys.executable, "-c", SYN_PROBER, VIP, str(WEB_PORT),
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.procs.append(syn)
        if b"ready" not in await asyncio.wait_for(syn.stdout.readline(), 30):
            raise LabError("the SYN prober did not start")

    async def stop(self):
        for p in self.procs:
            if p.returncode is None:
                p.terminate()
        for p in self.procs:
            try:
                await asyncio.wait_for(p.wait(), 10)
            except asyncio.TimeoutError:
                p.kill()
        if self.reader is not None:
            self.reader.cancel()
            await asyncio.gather(self.reader, return_exceptions=True)
        self.procs = []

    async def first_after(self, t0):
        """Stops the capture; (first SYN-ACK, first ARP) from the MAC at or after
        T0, and the old master's last VRRP advertisement before that SYN-ACK."""
        await self.stop()
        synack, garp = first_from(self.lines, self.mac, t0)
        last = None
        for line in self.lines:
            p = line.split()
            if len(p) > 1 and p[1].lower() == self.old_mac.lower() and "VRRP" in line:
                try:
                    t = float(p[0])
                except ValueError:
                    continue
                if synack is None or t < synack:
                    last = t
        return synack, garp, last


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


def first_from(capture, mac, t0):
    """(first SYN-ACK, first ARP) from MAC at or after T0 in `tcpdump -e -tt` lines."""
    synack = garp = None
    for line in capture:
        p = line.split()
        if len(p) < 2 or p[1].lower() != mac.lower():
            continue
        try:
            t = float(p[0])
        except ValueError:
            continue
        if t < t0:
            continue
        if "ARP" in line and garp is None:
            garp = t
        if "Flags [S.]" in line and synack is None:
            synack = t
    return synack, garp


# ---------------------------------------------------------------- front ends

def ka_config(i, sched):
    prio = 200 if i == 1 else 100
    # real-time event loop: the lab keeps the VM busy, and adverts must not wait
    y = ["global:", "  metrics_listen: 127.0.0.1:9650", "  realtime_priority: 50", "vrrp:"]
    y += ["  - name: VI_1", "    interface: eth0", "    vrid: 51", f"    priority: {prio}",
          "    advert_interval_ms: 100", f"    virtual_ips: [{VIP}/24]",
          "    ipvs_sync: { interface: eth1, syncid: 51 }"]
    y += ["  - name: VI_2", "    interface: eth1", "    vrid: 52", f"    priority: {prio}",
          "    advert_interval_ms: 100", f"    virtual_ips: [{GW}/16]"]
    y += ["services:"]
    for svc, port in (("sensor", SENSOR_PORT), ("web", WEB_PORT)):
        y += [f"  # {svc}", "  - protocol: tcp", f"    address: {VIP}", f"    port: {port}",
              f"    scheduler: {sched}", "    dests:"]
        y += [f"      - {{ address: {v['addr']}, forward: masq }}" for v in VMS if v["service"] == svc]
    y += ["hosts:"]
    for h, _, w in HOSTS:
        y += [f"  - name: {h}", f"    weight: {w}",
              f"    vms: [{', '.join(v['addr'] for v in VMS if v['host'] == h)}]"]
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


def ipvs_read(pid):
    """({port: scheduler}, {(port, dest_addr): (active, inactive)}) from /proc/PID/net/ip_vs."""
    scheds, dests, port = {}, {}, None
    with open(f"/proc/{pid}/net/ip_vs") as f:
        for line in f.read().splitlines()[3:]:
            p = line.split()
            if not p:
                continue
            if p[0] in ("TCP", "UDP", "SCTP"):
                port = int(p[1].split(":")[1], 16)
                scheds[port] = p[2]
            elif p[0] == "->" and port is not None:
                a, _ = p[1].split(":")
                ip = ".".join(str(int(a[i:i + 2], 16)) for i in (0, 2, 4, 6))
                dests[(port, ip)] = (int(p[4]), int(p[5]))
    return scheds, dests


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


# ---------------------------------------------------------------- statistics

def pct(xs, q):
    if not xs:
        return float("nan")
    xs = sorted(xs)
    return xs[min(len(xs) - 1, max(0, math.ceil(q * len(xs)) - 1))]


def mean(xs):
    return sum(xs) / len(xs) if xs else float("nan")


def measured(v):
    return v is not None and not (isinstance(v, float) and math.isnan(v))


def fmtv(v, spec, why="nothing to measure in the window"):
    """V formatted, or "not measured (why)": a figure the run lacks must never crash the report."""
    return format(v, spec) if measured(v) else f"not measured ({why})"


def imbalance(vals):
    m = mean(vals)
    return max(vals) / m if m > 0 else None


# ---------------------------------------------------------------- the lab

class Phase:
    def __init__(self, sched):
        self.sched = sched
        self.t0 = self.m0 = self.m1 = None
        self.samples = []  # dicts
        self.rt = {"sensor": [], "web": []}  # (t_sent, seconds)
        self.errors = {"sensor": 0, "web": 0}
        self.stopping = False
        self.lag = []  # sampler lateness per second (s)
        self.gen_lag = []  # lab-load's own timer lateness per second (ms)
        self.connect_timeouts = 0  # lab-load's connects that never opened


class Lab:
    def __init__(self, a):
        self.a = a
        self.tmp = tempfile.mkdtemp(prefix="lab.")
        self.ka = {}
        self.srv = None
        self.srv_stats = None
        self.phase = None
        self.phases = []
        self.master = 1
        self.sensors = {}  # id -> dict(gen, open, last_ok_sent)
        self.sessions = {}  # web session id -> dict(open, ok_after, err)
        self.session_seq = 0
        self.stop_all = False
        self.failing = False
        self.load = None  # the lab-load process (the clients)
        self.stopped = None  # asyncio.Event: lab-load ended its clients

    # ---- setup
    def setup(self):
        t = time.time()
        delete_topology()  # leftovers of an earlier run (LAB_KEEP=1)
        build_topology(self.tmp)
        log(f"topology: {len(VMS)} VMs on {len(HOSTS)} hosts, 2 front ends, client "
            f"({time.time() - t:.1f} s)")
        work = self.calibrate()
        cfg = dict(hosts=[dict(name=h, capacity=c) for h, c, _ in HOSTS], vms=VMS,
                   sensor_port=SENSOR_PORT, web_port=WEB_PORT, **work)
        self.work = work
        write(os.path.join(self.tmp, "srv.json"), json.dumps(cfg))
        if not os.access(LAB_SERVE, os.X_OK):
            raise LabError(f"{LAB_SERVE} missing (scripts/setup.sh builds it)")
        self.srv = subprocess.Popen([LAB_SERVE, os.path.join(self.tmp, "srv.json")],
                                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        first = self.srv.stdout.readline()
        if '"ready"' not in first:
            raise LabError(f"the lab servers did not start: {first!r}")
        for i in (1, 2):
            self.start_ka(i, self.a.schedulers[0])
        end = time.time() + 30
        while time.time() < end:
            if fib_has(self.ka[1].pid, VIP) and fib_has(self.ka[1].pid, GW) and self.applied(self.a.schedulers[0]):
                break
            for i in (1, 2):
                if self.ka[i].poll() is not None:
                    raise LabError(f"keepalive on fe{i} exited: {self.ka_log(i)}")
            time.sleep(0.2)
        else:
            raise LabError(f"fe1 did not become master with the services applied: {self.ka_log(1)}")
        if fib_has(self.ka[2].pid, VIP):
            raise LabError("both front ends hold the VIP")
        log(f"front ends up: fe1 master, fe2 backup (warm, connection sync) ({time.time() - t:.1f} s)")
        enter(NS_CL)

    def calibrate(self):
        """Work per request so that the cluster as a whole runs near --util of
        its capacity, and an open connection of either service costs the host
        about the same (the regime least-connection scheduling assumes)."""
        a = self.a
        # web user: idle ~ exp(mean idle), then k in 3..8 requests ~think s apart
        k, think = 5.5, 1.0
        active_frac = (k * think) / (k * think + a.web_idle)
        open_conns = a.sensors + a.web_users * active_frac
        total_cap = sum(CAP.values())
        c = a.util * total_cap / open_conns  # CPU-s per s per open connection
        return dict(sensor_work=round(c * SENSOR_PERIOD, 4), web_work=round(c * think, 4),
                    per_conn=c, expected_web_conns=a.web_users * active_frac)

    def start_ka(self, i, sched):
        conf = os.path.join(self.tmp, f"fe{i}.yaml")
        write(conf, ka_config(i, sched))
        logf = open(os.path.join(self.tmp, f"fe{i}.log"), "a")
        self.ka[i] = subprocess.Popen(["ip", "netns", "exec", FE[i], KEEPALIVE, "-c", conf, "--log-level", "info"],
                                      stdout=logf, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)

    def ka_log(self, i):
        try:
            return open(os.path.join(self.tmp, f"fe{i}.log")).read()[-1500:]
        except OSError:
            return ""

    def applied(self, sched, fes=(1,)):
        for i in fes:
            try:
                s, d = ipvs_read(self.ka[i].pid)
            except OSError:
                return False
            if s.get(SENSOR_PORT) != sched or s.get(WEB_PORT) != sched or len(d) != len(VMS):
                return False
        return True

    async def switch(self, sched):
        for i in (1, 2):
            write(os.path.join(self.tmp, f"fe{i}.yaml"), ka_config(i, sched))
            os.kill(self.ka[i].pid, signal.SIGHUP)
        end = time.time() + 20
        while not self.applied(sched, (1, 2)):
            if time.time() > end:
                raise LabError(f"scheduler {sched} not applied on both front ends: {self.ka_log(1)}")
            await asyncio.sleep(0.2)

    # ---- server stats
    async def read_srv(self):
        loop = asyncio.get_running_loop()
        while True:
            line = await loop.run_in_executor(None, self.srv.stdout.readline)
            if not line:
                return
            try:
                self.srv_stats = json.loads(line)
            except ValueError:
                pass

    # ---- clients
    # ---- clients: lab-load (Rust) runs every sensor and web user; this
    # process only applies its events to the state the lab reports on
    def start_load(self):
        if not os.access(LAB_LOAD, os.X_OK):
            raise LabError(f"{LAB_LOAD} missing (scripts/setup.sh builds it)")
        loop = asyncio.get_running_loop()
        self.stopped = asyncio.Event()
        self.load = subprocess.Popen([LAB_LOAD, VIP, str(SENSOR_PORT), str(WEB_PORT), str(self.a.seed)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)

        def reader():  # a thread: events reach the loop in order, one call each
            for line in self.load.stdout:
                try:
                    ev = json.loads(line)
                except ValueError:
                    continue
                try:
                    loop.call_soon_threadsafe(self.apply, ev)
                except RuntimeError:  # the loop has ended: nothing to apply to
                    return
        threading.Thread(target=reader, daemon=True).start()

    def load_cmd(self, cmd):
        try:
            self.load.stdin.write(json.dumps(cmd) + "\n")
            self.load.stdin.flush()
        except (OSError, ValueError) as e:
            raise LabError(f"lab-load is gone ({e})")

    def apply(self, ev):
        ph, e = self.phase, ev.get("e")
        if e == "stopped":
            self.stopped.set()
            return
        if ph is None or ph.stopping:
            return
        if e in ("so", "sr", "sx"):
            st = self.sensors.setdefault(ev["i"], dict(gen=0, open=False, last_ok_sent=0.0, err=None))
            if e == "so":
                st.update(gen=ev["g"], open=True, err=None)
            elif e == "sr":
                ph.rt["sensor"].append((ev["t"], ev["d"]))
                st["last_ok_sent"] = ev["t"]
            else:
                ph.errors["sensor"] += 1
                st.update(open=False, err=ev["err"])
        elif e == "wo":
            self.sessions[ev["s"]] = dict(open=True, opened=ev["t"], ok_after=0.0, err=None)
        elif e == "wr":
            ph.rt["web"].append((ev["t"], ev["d"]))
            if ev["s"] in self.sessions:
                self.sessions[ev["s"]]["ok_after"] = ev["t"]
        elif e == "wx":
            ph.errors["web"] += 1
            st = self.sessions.setdefault(ev["s"], dict(ok_after=0.0))
            st.update(open=False, err=ev["err"])
        elif e == "we":
            st = self.sessions.get(ev["s"])
            if st is not None:
                st["open"] = False
                if not self.failing:
                    self.sessions.pop(ev["s"], None)  # finished normally: forget it
        elif e == "h":
            ph.gen_lag.append(ev["lag_ms"])
            ph.connect_timeouts = ev["connect_timeouts"]

    async def stop_clients(self, ph):
        ph.stopping = True
        if self.load is None or self.load.poll() is not None:
            return
        self.stopped.clear()
        self.load_cmd({"stop": True})
        try:
            await asyncio.wait_for(self.stopped.wait(), 30)
        except asyncio.TimeoutError:
            raise LabError("lab-load did not stop its clients within 30 s")
        for x in list(self.sensors.values()) + list(self.sessions.values()):
            x["open"] = False

    async def open(self, port, timeout):
        return await asyncio.wait_for(asyncio.open_connection(VIP, port), timeout)

    async def http_get(self, r, w, path, close=False):
        w.write(b"GET %s HTTP/1.1\r\nHost: %s\r\n%s\r\n" % (path.encode(), VIP.encode(),
                                                             b"Connection: close\r\n" if close else b""))
        head = await r.readuntil(b"\r\n\r\n")
        if not head.startswith(b"HTTP/1.1 200"):
            raise ConnectionError(f"bad answer {head[:40]!r}")
        n = 0
        for h in head.split(b"\r\n"):
            if h.lower().startswith(b"content-length:"):
                n = int(h.split(b":")[1])
        await r.readexactly(n)

    # ---- sampling and display
    def sample(self, prev):
        ph = self.phase
        _, d = ipvs_read(self.ka[self.master].pid)
        conns = {h: 0 for h in HNAMES}
        for (port, ip), (act, _) in d.items():
            conns[HOST_OF[ip]] += act
        st = self.srv_stats or {}
        now = time.time()
        util = {}
        for h in HNAMES:
            b = st.get("busy", {}).get(h, 0.0)
            if prev and prev.get("_busy") is not None:
                dt = max(1e-3, st.get("t", now) - prev["_t"])
                util[h] = max(0.0, min(1.0, (b - prev["_busy"][h]) / dt))
            else:
                util[h] = 0.0
        s = dict(t=round(now - ph.t0, 2), abs=now, conns=conns,
                 wload={h: conns[h] / WEIGHT[h] for h in HNAMES}, util=util,
                 jobs=dict(st.get("n", {})), _busy=dict(st.get("busy", {})) if st else None,
                 _t=st.get("t", now))
        s["measured"] = ph.m0 is not None and ph.m1 is None
        ph.samples.append(s)
        return s

    def progress(self, s, label):
        ph = self.phase
        nsens = sum(1 for x in self.sensors.values() if x["open"])
        nweb = sum(1 for x in self.sessions.values() if x["open"])
        im = imbalance(list(s["wload"].values()))
        out(f"  {ph.sched:<7} {label:<9} t={s['t']:5.0f}s  sensors {nsens:3d}  web sessions {nweb:3d} | "
            f"active/W " + " ".join(f"{h} {s['wload'][h]:5.1f}" for h in HNAMES) +
            " | busy% " + " ".join(f"{100 * s['util'][h]:3.0f}" for h in HNAMES) +
            f" | max/mean {im:.2f}" if im else f"  {ph.sched:<7} {label:<9} t={s['t']:5.0f}s  (no connections yet)")

    async def sampler(self):
        prev = None
        n = 0
        last = time.time()
        while not self.stop_all:
            now = time.time()
            if self.phase is not None:  # how late the event loop runs (a VM short of CPU)
                self.phase.lag.append(max(0.0, now - last - 1.0))
            last = now
            if self.phase is not None:
                try:
                    prev = self.sample(prev)
                    n += 1
                    if n % self.a.progress_every == 0 and not self.phase.stopping:
                        ph = self.phase
                        label = "failover" if self.failing else \
                            "measure" if prev["measured"] else ("warm-up" if ph.m0 is None else "done")
                        self.progress(prev, label)
                except (OSError, KeyError) as e:
                    log(f"sample failed: {e}")
            await asyncio.sleep(1.0)

    # ---- phases
    async def run_phase(self, sched, keep):
        a = self.a
        if self.phase is None or self.phase.sched != sched:
            await self.switch(sched)
        ph = Phase(sched)
        ph.t0 = time.time()
        self.phase = ph
        self.phases.append(ph)
        self.sensors.clear()
        self.sessions.clear()
        out(f"== {sched}: web users {a.web_users} start, then {a.sensors} sensors connect over {a.ramp:.0f} s,"
            f" then {a.measure:.0f} s measured")
        self.load_cmd({"web": {"users": a.web_users, "idle": a.web_idle}})
        await asyncio.sleep(a.warm)
        # lab-load connects the sensors at a steady pace over the ramp
        self.load_cmd({"sensors": {"n": a.sensors, "ramp": a.ramp}})
        await asyncio.sleep(a.ramp)
        # settle: on a slow VM the last connects lag the ramp; measuring before
        # they are open skews the balance, so wait for them (bounded: a run
        # that never gets there is reported by the self-check instead)
        waited = await self.wait_open(a.sensors, max(10.0, a.ramp))
        if waited > 0.5:
            log(f"{sched}: waited {waited:.1f} s after the ramp for the sensors to connect"
                f" ({self.open_sensors()} of {a.sensors} open)")
        ph.settle_s = round(waited, 1)
        await asyncio.sleep(2.0)  # the last sensors' first readings
        ph.m0 = time.time()
        ph.open_at_m0 = self.open_sensors()
        await asyncio.sleep(a.measure)
        ph.m1 = time.time()
        r = self.report(ph)
        out(f"== {sched}: host imbalance (max/mean active/W) {fmtv(r['imbalance_conns'], '.2f')}, busy max/mean "
            f"{fmtv(r['imbalance_busy'], '.2f')}; sensor rt mean {fmtv(r['sensor_mean_ms'], '.0f')} ms p95 "
            f"{fmtv(r['sensor_p95_ms'], '.0f')} ms; web rt mean {fmtv(r['web_mean_ms'], '.0f')} ms p95 "
            f"{fmtv(r['web_p95_ms'], '.0f')} ms")
        if not keep:
            await self.stop_phase(ph)

    def open_sensors(self):
        return sum(1 for x in self.sensors.values() if x["open"])

    async def wait_open(self, n, bound):
        """Seconds waited (at most bound) until n sensors are open."""
        t0 = time.time()
        while self.open_sensors() < n and time.time() - t0 < bound:
            await asyncio.sleep(0.2)
        return time.time() - t0

    async def stop_phase(self, ph):
        await self.stop_clients(ph)
        end = time.time() + 20
        while time.time() < end:
            _, d = ipvs_read(self.ka[self.master].pid)
            if sum(x[0] for x in d.values()) == 0:
                break
            await asyncio.sleep(0.2)
        else:
            log("warning: active connections left on the front end after the phase")

    def report(self, ph):
        ms = [s for s in ph.samples if s["abs"] >= ph.m0 and s["abs"] <= ph.m1 + 0.5]
        ims = [imbalance(list(s["wload"].values())) for s in ms]
        ims = [x for x in ims if x]
        busy = {h: mean([s["util"][h] for s in ms]) for h in HNAMES}
        r = dict(scheduler=ph.sched, samples=len(ms),
                 imbalance_conns=mean(ims), imbalance_busy=imbalance(list(busy.values())) if ms else None,
                 host_wload={h: mean([s["wload"][h] for s in ms]) for h in HNAMES},
                 host_conns={h: mean([s["conns"][h] for s in ms]) for h in HNAMES},
                 host_busy=busy, max_busy=max(busy.values()) if ms else float("nan"),
                 errors=dict(ph.errors), loop_lag_ms=1000 * mean(ph.lag) if ph.lag else 0.0,
                 gen_lag_ms=mean(ph.gen_lag) if ph.gen_lag else None, connect_timeouts=ph.connect_timeouts,
                 sensors_open_at_measure=getattr(ph, "open_at_m0", 0), settle_s=getattr(ph, "settle_s", None))
        for svc in ("sensor", "web"):
            xs = [x for t, x in ph.rt[svc] if ph.m0 <= t <= ph.m1]
            r[f"{svc}_n"] = len(xs)
            r[f"{svc}_mean_ms"] = 1000 * mean(xs)
            r[f"{svc}_p95_ms"] = 1000 * pct(xs, 0.95)
        ph.result = r
        return r

    # ---- failover
    async def failover(self):
        self.failing = True
        res = dict(done=False)
        # the backup must hold every established sensor connection
        nopen = sum(1 for x in self.sensors.values() if x["open"])
        end = time.time() + 20
        while True:
            synced = synced_established(self.ka[2].pid, SENSOR_PORT)
            if synced >= nopen or time.time() > end:
                break
            await asyncio.sleep(0.5)
        res["sensors_open"], res["synced_on_backup"] = nopen, synced
        out(f"== failover: {nopen} sensor connections open and {sum(1 for x in self.sessions.values() if x['open'])}"
            f" web sessions; backup fe2 holds {synced} synced ESTABLISHED sensor entries")
        # Packet-level timing, independent of this (loaded) event loop: a
        # separate process in the client namespace sends a SYN to the VIP
        # every 20 ms, and tcpdump timestamps (in the kernel) the SYN-ACKs
        # and gratuitous ARPs that arrive from fe2's MAC address.
        mac1, mac2 = (run(["ip", "-n", FE[i], "-br", "link", "show", "eth0"]).split()[2] for i in (1, 2))
        timing = PacketTiming(mac2, mac1)
        try:
            await timing.start()
            return await self.measure_failover(res, timing)
        finally:
            await timing.stop()

    async def measure_failover(self, res, timing):
        # probes: a new connection to the VIP every 50 ms, each bounded by 3 s
        probes = []

        async def probe():
            t = time.time()
            w = None
            try:
                r, w = await self.open(WEB_PORT, 3)
                port = w.get_extra_info("sockname")[1]
                await asyncio.wait_for(self.http_get(r, w, "/ping", close=True), 3)
                probes.append((t, time.time(), True, port))
            except Exception:  # noqa: BLE001
                probes.append((t, time.time(), False, None))
            finally:
                if w is not None:
                    w.close()

        ptasks = []
        probing = True
        first = None

        async def prober():
            while probing:
                ptasks.append(asyncio.create_task(probe()))
                await asyncio.sleep(0.05 if first is None else 0.5)

        pt = asyncio.create_task(prober())
        vip_at = []

        async def vip_watch():
            while not vip_at:
                if fib_has(self.ka[2].pid, VIP):
                    vip_at.append(time.time())
                    return
                await asyncio.sleep(0.01)

        await asyncio.sleep(1.0)
        cut = await asyncio.create_subprocess_exec("ip", "-n", NS_BR, "-batch", "-", stdin=subprocess.PIPE,
                                                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        await asyncio.sleep(0.5)  # let `ip` start and wait on its input
        snap_s = {i: x["gen"] for i, x in self.sensors.items() if x["open"]}
        snap_w = {sid for sid, x in self.sessions.items() if x["open"]}
        vw = asyncio.create_task(vip_watch())
        t0 = time.time()
        os.kill(self.ka[1].pid, signal.SIGKILL)
        # A dead machine answers no ARP at once; taking its links down is one
        # `ip` command that can take seconds in a busy emulated VM, and until
        # it is through fe1's kernel would still answer for the VIP and the
        # gateway address it kept. Mute that first (a sysctl write, instant).
        with netns(FE[1]):
            write("/proc/sys/net/ipv4/conf/all/arp_ignore", 8)
        cut.stdin.write(b"link set pf1 down\nlink set qf1 down\n")
        cut.stdin.close()
        self.master = 2  # the sampler reads fe2's counters from now on
        try:
            await asyncio.wait_for(cut.wait(), 15)
        except asyncio.TimeoutError:
            cut.kill()
            raise LabError("cutting fe1's links did not finish")
        t1 = time.time()
        out(f"== failover: fe1 killed (keepalive SIGKILLed; cutting its links took {1000 * (t1 - t0):.0f} ms)")
        # "answering on the backup": the first probe that fe2 forwarded (its
        # client port is in fe2's connection table); while the cut is under
        # way fe1 may still forward some, and those do not count
        end = time.time() + 20
        while time.time() < end and first is None:
            via2 = client_ports(self.ka[2].pid, WEB_PORT)
            ok = [e for st_, e, good, port in probes if good and st_ >= t0 and port in via2]
            first = min(ok) if ok else None
            await asyncio.sleep(0.3)
        # survival: each connection open at the kill must be answered after it
        end = time.time() + SENSOR_PERIOD + 8
        while time.time() < end:
            pending = [i for i, g in snap_s.items() if self.sensors[i]["gen"] == g and
                       self.sensors[i]["open"] and self.sensors[i]["last_ok_sent"] <= t1]
            if not pending:
                break
            await asyncio.sleep(0.2)
        kept = [i for i, g in snap_s.items() if self.sensors[i]["gen"] == g and self.sensors[i]["last_ok_sent"] > t1]
        lost = [i for i in snap_s if i not in kept]
        probing = False
        await pt
        wk = [sid for sid in snap_w if sid in self.sessions and self.sessions[sid]["ok_after"] > t1]
        wl = [sid for sid in snap_w if sid in self.sessions and self.sessions[sid]["err"]]
        await asyncio.gather(*ptasks, return_exceptions=True)
        vw.cancel()
        await asyncio.gather(vw, return_exceptions=True)
        synack, garp, last_advert = await timing.first_after(t0)
        masters = ka_masters_since(os.path.join(self.tmp, "fe2.log"), t0)
        after = [p for p in probes if first is not None and p[0] >= first + 1]
        res.update(done=first is not None, http_via_backup_ms=1000 * (first - t0) if first else None,
                   failover_ms=1000 * (synack - t0) if synack else None,
                   garp_ms=1000 * (garp - t0) if garp else None,
                   # fe1's last sign of life on the wire: the cut of its links
                   # is one slow `ip` command under load, so the kill command
                   # and fe1's real disappearance can be a second apart
                   last_advert_ms=1000 * (last_advert - t0) if last_advert else None,
                   failover_from_last_advert_ms=1000 * (synack - last_advert) if synack and last_advert else None,
                   fe2_master_ms={k: round(1000 * (v - t0)) for k, v in masters.items()},
                   cut_ms=1000 * (t1 - t0), vip_on_backup_ms=1000 * (vip_at[0] - t0) if vip_at else None,
                   sensors_kept=len(kept), sensors_lost=len(lost), sensors_at_kill=len(snap_s),
                   lost_errors=[self.sensors[i]["err"] for i in lost][:5],
                   web_sessions_at_kill=len(snap_w), web_kept=len(wk), web_lost=len(wl),
                   web_lost_errors=[self.sessions[sid]["err"] for sid in wl][:5],
                   # age at the kill: the sync daemon ships a connection after a few
                   # packets and flushes its buffer every ~2 s, so young ones may be lost
                   web_lost_age_ms=[round(1000 * (t0 - self.sessions[sid].get("opened", t0))) for sid in wl],
                   probes_after=len(after), probes_after_ok=sum(1 for p in after if p[2]),
                   new_master_sync=synced_established(self.ka[2].pid, SENSOR_PORT))
        self.failing = False
        return res

    # ---- output
    def write_outputs(self, fo, elapsed):
        os.makedirs(self.a.out, exist_ok=True)
        for ph in self.phases:
            with open(os.path.join(self.a.out, f"samples-{ph.sched}.dat"), "w") as f:
                f.write("# t " + " ".join(f"load_{h}" for h in HNAMES) + " " +
                        " ".join(f"busy_{h}" for h in HNAMES) + " measured\n")
                for k, s in enumerate(ph.samples):
                    win = ph.samples[max(0, k - 2):k + 3]  # busy: 5-s centred moving average
                    f.write(f"{s['t']:.1f} " + " ".join(f"{s['wload'][h]:.2f}" for h in HNAMES) + " " +
                            " ".join(f"{100 * mean([x['util'][h] for x in win]):.1f}" for h in HNAMES) +
                            f" {1 if s['measured'] else 0}\n")
        with open(os.path.join(self.a.out, "labels.gp"), "w") as f:  # for lab/plot.gp
            f.write(f'scheds = "{" ".join(ph.sched for ph in self.phases)}"\n')
            for ph in self.phases:
                r = getattr(ph, "result", None)
                if r:
                    f.write(f'title_{ph.sched} = "{ph.sched}: host imbalance {fmtv(r["imbalance_conns"], ".2f")}, '
                            f'sensor p95 {fmtv(r["sensor_p95_ms"], ".0f")} ms"\n')
        summ = dict(params=dict(vars(self.a)), work=self.work,
                    hosts=[dict(name=h, capacity=c, weight=w, vms=[v["name"] for v in VMS if v["host"] == h])
                           for h, c, w in HOSTS],
                    phases=[ph.result for ph in self.phases if hasattr(ph, "result")],
                    failover=fo, elapsed_s=round(elapsed, 1))
        summ["untrusted"] = self.self_check(summ)
        with open(os.path.join(self.a.out, "summary.json"), "w") as f:
            json.dump(summ, f, indent=1, default=str)
        return summ

    def table(self, summ):
        ps = summ["phases"]
        L = []
        w = 12
        L.append("")
        L.append("Results (measured window of each run; host load = active connections / host weight)")
        L.append(f"{'':34}" + "".join(f"{p['scheduler']:>{w}}" for p in ps))

        missing = []

        def row(label, key, fmt):
            for p in ps:
                if not measured(p.get(key)):
                    missing.append(f"  {label} under {p['scheduler']}: not measured (no {key.split('_')[0]}"
                                   " figure in the measured window)")
            L.append(f"{label:34}" + "".join(f"{fmt.format(p[key]) if measured(p.get(key)) else '-':>{w}}"
                                             for p in ps))
        row("host imbalance, conns (max/mean)", "imbalance_conns", "{:.2f}")
        row("host imbalance, busy (max/mean)", "imbalance_busy", "{:.2f}")
        row("busiest host, busy %", "max_busy", "{:.0%}")
        for h in HNAMES:
            L.append(f"{'  ' + h + f' (w{WEIGHT[h]}) active/W, busy %':34}" + "".join(
                f"{p['host_wload'][h]:>{w - 5}.1f}{p['host_busy'][h]:>5.0%}" for p in ps))
        row("sensor reading rt mean (ms)", "sensor_mean_ms", "{:.0f}")
        row("sensor reading rt p95 (ms)", "sensor_p95_ms", "{:.0f}")
        row("web request rt mean (ms)", "web_mean_ms", "{:.0f}")
        row("web request rt p95 (ms)", "web_p95_ms", "{:.0f}")
        row("sampler event-loop lag (ms/s)", "loop_lag_ms", "{:.0f}")
        row("load generator timer lag (ms)", "gen_lag_ms", "{:.1f}")
        L.append(f"{'requests measured (sensor/web)':34}" + "".join(
            f"{str(p['sensor_n']) + '/' + str(p['web_n']):>{w}}" for p in ps))
        L.append(f"{'errors (sensor/web)':34}" + "".join(
            f"{str(p['errors']['sensor']) + '/' + str(p['errors']['web']):>{w}}" for p in ps))
        L += missing
        fo = summ["failover"]
        if fo:
            L.append("")
            if fo.get("done"):
                ms = lambda k: "n/a" if fo.get(k) is None else f"{fo[k]:.0f} ms"  # noqa: E731
                L.append(f"Failover (vmwlch, under load): fe1 killed -> VIP answering on fe2 (first SYN-ACK"
                         f" from fe2 at the client, kernel timestamp) in {ms('failover_ms')}")
                L.append("  fe2 became master: " + ", ".join(
                    f"{k} {v} ms" for k, v in sorted(fo.get("fe2_master_ms", {}).items())) +
                    " (keepalive's log)")
                L.append(f"  fe2's first gratuitous ARP at the client {ms('garp_ms')}; fe1's last advertisement on"
                         f" the wire {ms('last_advert_ms')} (cutting its links took {fo['cut_ms']:.0f} ms);"
                         f" from that last advertisement to the first SYN-ACK from fe2:"
                         f" {ms('failover_from_last_advert_ms')}")
            else:
                L.append("Failover: the VIP did not answer on fe2 within 15 s")
            L.append(f"  established sensor connections kept: {fo['sensors_kept']}/{fo['sensors_at_kill']}"
                     f" (fe2 held {fo['synced_on_backup']} synced entries before the kill); web sessions open"
                     f" at the kill: {fo['web_kept']} kept, {fo['web_lost']} lost, the rest ended normally;"
                     f" new connections after: {fo['probes_after_ok']}/{fo['probes_after']}")
        L.append("")
        L += self.words(summ)
        L.append("")
        bad = summ.get("untrusted") or []
        L.append("Self-check: the lab's own health was good; the figures can be trusted." if not bad else
                 "Self-check: this run CANNOT be trusted - " + "; ".join(bad) + ".")
        return "\n".join(L)

    def self_check(self, summ):
        """Reasons, in plain words, why the lab's figures are artefacts (empty: trusted)."""
        a, why = self.a, []
        for p in summ["phases"]:
            n = p["scheduler"]
            if p["sensors_open_at_measure"] < a.sensors:
                why.append(f"under {n} only {p['sensors_open_at_measure']} of {a.sensors} sensors were connected"
                           " when the measurement began")
            if p["connect_timeouts"]:
                why.append(f"under {n} {p['connect_timeouts']} connections never opened (connect timed out)")
            # half a second late on average is a tenth of a sensor period and of the
            # order of the response times measured: below that the figures hold
            if measured(p["gen_lag_ms"]) and p["gen_lag_ms"] > 500:
                why.append(f"under {n} the load generator's timers ran {p['gen_lag_ms']:.0f} ms late on average"
                           " (it was short of CPU)")
            if p["loop_lag_ms"] > 500:
                why.append(f"under {n} the sampler ran {p['loop_lag_ms']:.0f} ms late per second")
            if not p["sensor_n"] or not p["web_n"]:
                why.append(f"under {n} a service had no answered request in the measured window")
        if len(summ["phases"]) < len(a.schedulers):
            why.append("not every scheduler was measured")
        return why

    def words(self, summ):
        by = {p["scheduler"]: p for p in summ["phases"]}
        W = ["What the numbers show:"]
        if "wlc" in by and "vmwlch" in by:
            a, b = by["wlc"], by["vmwlch"]
            if not all(measured(x[k]) for x in (a, b) for k in ("imbalance_conns", "max_busy", "sensor_mean_ms",
                                                                    "sensor_p95_ms", "web_mean_ms", "web_p95_ms")):
                W.append("- Host balance and response times: not measured (a phase had no samples or no"
                         " answered request; see the self-check below)")
                return W
            better = b["imbalance_conns"] < a["imbalance_conns"]
            W.append(f"- Host balance: the busiest host carried {a['imbalance_conns']:.2f}x the mean weighted load"
                     f" under wlc and {b['imbalance_conns']:.2f}x under vmwlch"
                     + (f" ({fmtv(by['vmwlc']['imbalance_conns'], '.2f')}x under vmwlc)" if "vmwlc" in by else "")
                     + ". "
                     + ("vmwlch keeps the physical hosts more even: it counts every service's connections per"
                        " host and the host weights, so sensors go to the fast hosts and away from the hosts"
                        " that carry the web VMs." if better else
                        "vmwlch did NOT come out more even than wlc in this run; see docs/demo.md"
                        " (\"When vmwlch does not win\") for what to check."))
            W.append(f"- Busy time follows: the busiest host was busy {a['max_busy']:.0%} of the time under wlc,"
                     f" {b['max_busy']:.0%} under vmwlch; sensor readings took {a['sensor_mean_ms']:.0f} ms"
                     f" (p95 {a['sensor_p95_ms']:.0f}) vs {b['sensor_mean_ms']:.0f} ms (p95"
                     f" {b['sensor_p95_ms']:.0f}), web requests {a['web_mean_ms']:.0f} ms (p95"
                     f" {a['web_p95_ms']:.0f}) vs {b['web_mean_ms']:.0f} ms (p95 {b['web_p95_ms']:.0f}).")
            W.append("  (Response times include the emulated VM's own network latency and the Rust clients'"
                     " and servers' scheduling delays, the same for every scheduler.)")
            lag = max(p["loop_lag_ms"] for p in summ["phases"])
            if lag > 200:
                W.append(f"  Note: the VM was short of CPU in this run (the client's event loop ran up to"
                         f" {lag:.0f} ms late per second on average; other VMs on this machine?): response"
                         " times are inflated and noisier; host balance is not affected.")
        fo = summ["failover"]
        if fo and fo.get("done") and fo.get("failover_ms") is not None:
            allkept = fo["sensors_kept"] == fo["sensors_at_kill"] and fo["web_lost"] == 0
            W.append(f"- Failover: the standby answered new connections {fo['failover_ms']:.0f} ms after"
                     f" the active front end died, and {fo['sensors_kept']} of {fo['sensors_at_kill']} established"
                     f" sensor connections {'all ' if allkept else ''}kept working through it"
                     " (the standby had them from the IPVS sync daemon).")
        elif fo:
            W.append("- Failover: the standby did not take over within the bound; see the keepalive logs.")
        return W


async def amain(lab):
    a = lab.a
    t_start = time.time()
    rd = asyncio.create_task(lab.read_srv())
    lab.start_load()
    sp = asyncio.create_task(lab.sampler())
    fo = None
    try:
        for k, sched in enumerate(a.schedulers):
            last = k == len(a.schedulers) - 1
            await lab.run_phase(sched, keep=last and not a.no_failover)
        if not a.no_failover:
            fo = await asyncio.wait_for(lab.failover(), 90)
    finally:
        # also on errors: stop the clients so that the loop can end
        ph = lab.phase
        if ph is not None:
            try:
                await lab.stop_clients(ph)
            except LabError as e:
                log(f"warning: {e}")
        lab.stop_all = True
        sp.cancel()
        await asyncio.gather(sp, return_exceptions=True)
    summ = lab.write_outputs(fo, time.time() - t_start)
    txt = lab.table(summ)
    out(txt)
    with open(os.path.join(a.out, "summary.txt"), "w") as f:
        f.write(txt + "\n")
    rd.cancel()
    return summ


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--sensors", type=int, default=150)
    ap.add_argument("--web-users", type=int, default=24)
    ap.add_argument("--web-idle", type=float, default=3.0, help="mean idle time between web sessions (s)")
    ap.add_argument("--util", type=float, default=0.6, help="target mean utilisation of the cluster")
    ap.add_argument("--warm", type=float, default=4)
    ap.add_argument("--ramp", type=float, default=10)
    ap.add_argument("--measure", type=float, default=30)
    ap.add_argument("--schedulers", default="wlc,vmwlc,vmwlch")
    ap.add_argument("--no-failover", action="store_true")
    ap.add_argument("--progress-every", type=int, default=3, help="progress line every N samples (s)")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    a.schedulers = a.schedulers.split(",")
    if a.sensors < 1 or a.web_users < 1 or a.measure <= 0:
        ap.error("need at least one sensor, one web user and a positive --measure")
    random.seed(a.seed)
    if os.geteuid() != 0:
        log("must run as root (in the test VM: scripts/vm.sh -- lab/run.sh)")
        return 1
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 65536), hard))
    lab = Lab(a)
    t0 = time.time()
    try:
        lab.setup()
        out(f"lab ready in {time.time() - t0:.0f} s: {a.sensors} sensors (a reading every {SENSOR_PERIOD:.0f} s), "
            f"{a.web_users} web users; work per sensor reading {1000 * lab.work['sensor_work']:.0f} ms, "
            f"per web request {1000 * lab.work['web_work']:.0f} ms of a normal CPU (target cluster load "
            f"{a.util:.0%})")
        summ = asyncio.run(amain(lab))
        if summ.get("untrusted"):
            log("the self-check found this run untrustworthy: " + "; ".join(summ["untrusted"]))
            return 3
        return 0
    except LabError as e:
        log(f"error: {e}")
        return 1
    finally:
        for i, p in lab.ka.items():
            if p.poll() is None:
                p.terminate()
        for p in (lab.srv, lab.load):
            if p and p.poll() is None:
                p.terminate()
        for p in list(lab.ka.values()) + [p for p in (lab.srv, lab.load) if p]:
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                p.kill()
        if os.environ.get("LAB_KEEP"):
            log(f"namespaces kept; logs in {lab.tmp}")
        else:
            delete_topology()


if __name__ == "__main__":
    sys.exit(main())
