"""Namespace topology helpers for the VM tests: a director namespace running
IPVS (NAT mode), a client namespace and a real-server namespace holding every
real-server address, with a TCP server that keeps connections open.

All traffic stays inside namespaces this module creates.
"""
import atexit
import ipaddress
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def sh(*args, check=True, ns=None, input=None):
    cmd = list(args)
    if ns:
        cmd = ["ip", "netns", "exec", ns] + cmd
    r = subprocess.run(cmd, capture_output=True, text=True, input=input)
    if check and r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({r.returncode}): {r.stderr.strip()}")
    return r.stdout


SERVER = r"""
import selectors, socket, sys
fam = socket.AF_INET6 if sys.argv[1] == "6" else socket.AF_INET
s = socket.socket(fam, socket.SOCK_STREAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
if fam == socket.AF_INET6:
    s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
s.bind(("::" if fam == socket.AF_INET6 else "0.0.0.0", int(sys.argv[2])))
s.listen(4096)
sel = selectors.DefaultSelector()
sel.register(s, selectors.EVENT_READ)
conns = []
print("ready", flush=True)
while True:
    for k, _ in sel.select(30):
        if k.fileobj is s:
            c, _ = s.accept()
            conns.append(c)   # hold it open: an active connection for IPVS
"""

CLIENT = r"""
import socket, sys
socks = []
for line in sys.stdin:
    if line.startswith("close "):
        i = int(line.split()[1]) % max(len(socks), 1)
        if socks:
            socks.pop(i).close()   # FIN from the client: IPVS counts it inactive
        print("ok 0", flush=True)
        continue
    host, port = line.split()
    fam = socket.AF_INET6 if ":" in host else socket.AF_INET
    c = socket.socket(fam, socket.SOCK_STREAM)
    c.settimeout(5)
    try:
        c.connect((host, int(port)))
        socks.append(c)
        print("ok", c.getsockname()[1], flush=True)
    except OSError as e:
        print("err", e, flush=True)
"""


def _addr(hexport):
    """/proc/net/ip_vs address ("0A000001:0050" or "[fd00:...:0001]:0050") in ipvsadm -Ln form."""
    a, p = hexport.rsplit(":", 1)
    port = int(p, 16)
    if a.startswith("["):
        return f"[{ipaddress.IPv6Address(a.strip('[]'))}]:{port}"
    return f"{ipaddress.IPv4Address(int(a, 16))}:{port}"


class Lab:
    """lb: IPVS director; cl: client; rs: all real servers (NAT mode)."""

    def __init__(self, tag, rs_addrs4=(), rs_addrs6=(), port=80):
        self.tag = tag
        self.lb, self.cl, self.rs = f"{tag}-lb", f"{tag}-cl", f"{tag}-rs"
        self.procs = []
        atexit.register(self.close)
        for n in (self.lb, self.cl, self.rs):
            sh("ip", "netns", "add", n)
            sh("ip", "link", "set", "lo", "up", ns=n)
        sh("ip", "link", "add", "c0", "netns", self.cl, "type", "veth", "peer", "name", "l0", "netns", self.lb)
        sh("ip", "link", "add", "r0", "netns", self.rs, "type", "veth", "peer", "name", "l1", "netns", self.lb)
        for ns, dev in ((self.cl, "c0"), (self.lb, "l0"), (self.lb, "l1"), (self.rs, "r0")):
            sh("ip", "link", "set", dev, "up", ns=ns)
        sh("ip", "addr", "add", "10.0.0.2/24", "dev", "c0", ns=self.cl)
        sh("ip", "addr", "add", "10.0.0.1/24", "dev", "l0", ns=self.lb)
        sh("ip", "addr", "add", "fd00::2/64", "dev", "c0", "nodad", ns=self.cl)
        sh("ip", "addr", "add", "fd00::1/64", "dev", "l0", "nodad", ns=self.lb)
        sh("ip", "addr", "add", "10.1.0.1/16", "dev", "l1", ns=self.lb)
        sh("ip", "addr", "add", "fd01::1/64", "dev", "l1", "nodad", ns=self.lb)
        sh("ip", "addr", "add", "10.1.0.2/16", "dev", "r0", ns=self.rs)
        sh("ip", "addr", "add", "fd01::2/64", "dev", "r0", "nodad", ns=self.rs)
        sh("ip", "route", "add", "default", "via", "10.1.0.1", ns=self.rs)
        sh("ip", "-6", "route", "add", "default", "via", "fd01::1", ns=self.rs)
        sh("ip", "route", "add", "default", "via", "10.0.0.1", ns=self.cl)
        sh("ip", "-6", "route", "add", "default", "via", "fd00::1", ns=self.cl)
        sh("sysctl", "-qw", "net.ipv4.ip_forward=1", ns=self.lb)
        sh("sysctl", "-qw", "net.ipv6.conf.all.forwarding=1", ns=self.lb)
        sh("sysctl", "-qw", "net.ipv4.vs.conntrack=0", ns=self.lb, check=False)
        for a in rs_addrs4:
            sh("ip", "addr", "add", f"{a}/16", "dev", "r0", ns=self.rs)
        for a in rs_addrs6:
            sh("ip", "addr", "add", f"{a}/64", "dev", "r0", "nodad", ns=self.rs)
        self.vip4, self.vip6 = "10.0.0.1", "fd00::1"
        self._server("4", port)
        if rs_addrs6:
            self._server("6", port)
        # A process parked in the director's namespace: its /proc/PID/net/ip_vs
        # gives the counters without an exec per read (execs are slow in the VM).
        self.holder = subprocess.Popen(["ip", "netns", "exec", self.lb, "sleep", "3600"])
        self.procs.append(self.holder)
        self.client = subprocess.Popen(["ip", "netns", "exec", self.cl, sys.executable, "-c", CLIENT],
                                       stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.procs.append(self.client)

    def _server(self, fam, port):
        p = subprocess.Popen(["ip", "netns", "exec", self.rs, sys.executable, "-c", SERVER, fam, str(port)],
                             stdout=subprocess.PIPE, text=True)
        assert p.stdout.readline().strip() == "ready"
        self.procs.append(p)

    def connect(self, host, port):
        self.client.stdin.write(f"{host} {port}\n")
        self.client.stdin.flush()
        line = self.client.stdout.readline().split()
        if not line or line[0] != "ok":
            raise RuntimeError(f"connect {host}:{port}: {' '.join(line)}")
        return int(line[1])

    def close_one(self, i):
        self.client.stdin.write(f"close {i}\n")
        self.client.stdin.flush()
        self.client.stdout.readline()

    def ipvsadm(self, *args):
        return sh("ipvsadm", *args, ns=self.lb)

    def dests(self):
        """{(service, dest): dict(weight, active, inactive)}, keys as ipvsadm -Ln
        prints them ("10.0.0.1:80", "[fd00::1]:80"), read from /proc/net/ip_vs."""
        out, svc = {}, None
        with open(f"/proc/{self.holder.pid}/net/ip_vs") as f:
            lines = f.read().splitlines()
        for line in lines[3:]:
            m = re.match(r"^(TCP|UDP|SCTP)\s+(\S+)\s", line)
            if m:
                svc = _addr(m.group(2))
                continue
            m = re.match(r"^\s+->\s+(\S+)\s+\S+\s+(\d+)\s+(\d+)\s+(\d+)", line)
            if m and svc:
                out[(svc, _addr(m.group(1)))] = dict(weight=int(m.group(2)), active=int(m.group(3)),
                                                     inactive=int(m.group(4)))
        return out

    def close(self):
        for p in self.procs:
            try:
                p.kill()
                p.wait(timeout=5)
            except Exception:
                pass
        self.procs = []
        for n in (self.lb, self.cl, self.rs):
            subprocess.run(["ip", "netns", "del", n], capture_output=True)


def wait_total(lab, expected, timeout=5.0):
    """Wait until the connections counted by IPVS reach `expected`."""
    end = time.time() + timeout
    while True:
        d = lab.dests()
        total = sum(v["active"] + v["inactive"] for v in d.values())
        if total >= expected or time.time() > end:
            return d
        time.sleep(0.02)
