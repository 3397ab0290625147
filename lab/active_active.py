#!/usr/bin/env python3
"""The active-active lab (run inside the test VM, as root; see docs/demo.md).

    active_active.py --out DIR [--directors 3] [--sensors N] [--web-users U]
                     [--warm S] [--ramp S] [--measure S]

Builds, with network namespaces of this VM only:

  client 192.0.2.200 -- router (BIRD: eBGP + BFD to every director, one
  multipath route to the VIP 198.51.100.10, L4 hashing) --10.0.0.0/24--
  directors d1..dN (keepalive: `bgp:` announcement, the IPVS sync mesh on
  eth1, the cluster from etcd) --10.1.0.0/16-- etcd, the reference
  cluster's 5 hosts and 20 VMs (direct routing: the VMs answer the client
  through the router, not through a director).

Steps, under vmwlch, with the sensor and web load of the main lab:
  1. balance: the workload through one director (the others drained), then
     the same through all of them; per-host load (weighted open connections,
     counted by the servers) side by side;
  2. etcd: a changed cluster file stored; time until every director runs it;
  3. kill: one director's links cut and its processes SIGKILLed under load;
     established connections kept or lost, time until new connections
     succeed again; then it comes back (a fresh namespace) and rejoins;
  4. drain: `keepalive drain` on a director, then `keepalive resume`;
  5. etcd stopped and started again: directors keep serving, then catch up.

Ends with one line for scripts:
  active-active: directors 3 killed 1 established N kept K lost L first-new-after-kill-ms T etcd-converged-ms E
Writes DIR/summary.json and DIR/summary.txt. Exit status: 0 measured (the
figures may still fail a test's bounds), 1 the lab could not be built or a
step failed (errors on stderr), 2 bad arguments.
"""
import argparse
import asyncio
import base64
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request

from labkit.aa_net import (CANARY_PORT, ETCD_ADDR, JOIN_HOLD_MS, NS_ETCD, NS_RT, PREFIX, VIP, build,
                           cluster_file, delete_all, director_conf, ipvs_table, ns_dir, router_conf)
from labkit.aa_steps import StepsMixin
from labkit.base import (CAP, HOSTS, KEEPALIVE, LAB_LOAD, LAB_SERVE, SENSOR_PERIOD, SENSOR_PORT, VMS, WEB_PORT,
                         LabError, json_lines, log, out, send_json, write)
from labkit.calibrate import WEB_THINK, web_active_frac
from netns import enter, netns

IPVSCTL = os.path.join(os.path.dirname(KEEPALIVE), "ipvsctl")


class Lab(StepsMixin):
    def __init__(self, a):
        self.a = a
        self.tmp = tempfile.mkdtemp(prefix="aa.")
        self.n = a.directors
        self.ka = {}  # director -> Popen
        self.etcd = self.rbird = self.srv = self.load = None
        self.srv_stats = {}
        self.sensors = {}  # id -> dict(gen, open, opened, last_ok_sent, err)
        self.errors = {"sensor": 0, "web": 0}
        self.web_open = {}  # web session -> time it opened
        self.web_errors = []  # (session, error, time)
        self.route_changes = []  # times the router's route to the VIP changed under load
        self.web_ok = 0
        self.stopped = None
        self.res = {}
        self.vip = VIP
        self.killed = {}  # director -> True while it is dead on purpose
        self.gen = {}  # director -> times it was rebuilt (its bridge ports' names)

    # ---- processes
    def spawn(self, name, cmd, ns=None):
        logf = open(os.path.join(self.tmp, f"{name}.log"), "a")
        full = (["ip", "netns", "exec", ns] if ns else []) + cmd
        return subprocess.Popen(full, stdout=logf, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)

    def tail(self, name, n=1500):
        try:
            return open(os.path.join(self.tmp, f"{name}.log"), errors="replace").read()[-n:]
        except OSError:
            return ""

    def start_etcd(self):
        data = os.path.join(self.tmp, "etcd-data")
        self.etcd = self.spawn("etcd", ["etcd", "--name", "lab", "--data-dir", data,
                                        "--listen-client-urls", f"http://{ETCD_ADDR}:2379,http://127.0.0.1:2379",
                                        "--advertise-client-urls", f"http://{ETCD_ADDR}:2379",
                                        "--listen-peer-urls", "http://127.0.0.1:2380",
                                        "--initial-advertise-peer-urls", "http://127.0.0.1:2380",
                                        "--initial-cluster", "lab=http://127.0.0.1:2380"], NS_ETCD)

    def stop_etcd(self):
        if self.etcd and self.etcd.poll() is None:
            self.etcd.kill()
            self.etcd.wait()

    async def store(self, canary):
        """Store the cluster file in etcd (`ipvsctl apply --etcd`, retried
        while etcd starts): (the time the command that stored it started,
        the time it printed that etcd took the write)."""
        path = os.path.join(self.tmp, "cluster.yaml")
        write(path, cluster_file(canary))
        end = time.time() + 60
        while True:
            t = time.time()
            p = await asyncio.create_subprocess_exec(
                "ip", "netns", "exec", NS_ETCD, IPVSCTL, "apply", "--etcd", "http://127.0.0.1:2379",
                "--prefix", PREFIX, "-f", path, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            stored = None
            while True:
                line = await asyncio.wait_for(p.stdout.readline(), 60)
                if not line:
                    break
                if line.startswith(b"stored as revision"):
                    stored = time.time()
            err = await p.stderr.read()
            await p.wait()
            if p.returncode == 0 and stored:
                return t, stored
            if p.returncode == 2 or time.time() > end:
                raise LabError(f"ipvsctl apply --etcd failed ({p.returncode}): {err.decode().strip()[:400]}")
            await asyncio.sleep(1)

    async def put_timed(self, canary):
        """Validate the cluster file against etcd (`ipvsctl apply --etcd
        --dry-run`: the plan from the stored file; retried while etcd
        starts), then store it through etcd's JSON gateway from this
        process: (the time just before the write, the time etcd acknowledged
        it); an exec of ipvsctl costs seconds in a busy emulated VM, which
        would blur the measurement."""
        path = os.path.join(self.tmp, "cluster.yaml")
        text = cluster_file(canary)
        write(path, text)
        end = time.time() + 60
        while True:
            p = await asyncio.create_subprocess_exec(
                "ip", "netns", "exec", NS_ETCD, IPVSCTL, "apply", "--etcd", "http://127.0.0.1:2379",
                "--prefix", PREFIX, "--dry-run", "-f", path, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            _, err = await asyncio.wait_for(p.communicate(), 60)
            if p.returncode == 0:
                break
            if p.returncode == 2 or time.time() > end:
                raise LabError(f"ipvsctl apply --etcd --dry-run failed ({p.returncode}): {err.decode()[:400]}")
            await asyncio.sleep(1)
        body = json.dumps({"key": base64.b64encode(f"{PREFIX}/cluster".encode()).decode(),
                           "value": base64.b64encode(text.encode()).decode()}).encode()
        t = time.time()
        try:
            with netns(NS_ETCD):
                urllib.request.urlopen(urllib.request.Request("http://127.0.0.1:2379/v3/kv/put", data=body),
                                       timeout=10).read()
        except OSError as e:
            raise LabError(f"writing the cluster file to etcd: {e}")
        return t, time.time()

    def start_director(self, i, hold_ms=0):
        conf = os.path.join(self.tmp, f"d{i}.yaml")
        write(conf, director_conf(i, self.tmp, hold_ms))
        self.ka[i] = self.spawn(f"d{i}", [KEEPALIVE, "-c", conf, "--log-level", "info",
                                          "--pid-file", self.pidfile(i)], ns_dir(i))

    def pidfile(self, i):
        return os.path.join(self.tmp, f"d{i}.pid")

    def setup(self):
        t = time.time()
        delete_all()
        build(self.tmp, self.n)
        log(f"topology: router, {self.n} directors, etcd, {len(VMS)} VMs on {len(HOSTS)} hosts"
            f" ({time.time() - t:.1f} s)")
        self.start_etcd()
        asyncio.run(self.store(canary=False))
        log(f"etcd up, cluster file stored ({time.time() - t:.1f} s)")
        frac = web_active_frac(self.a.web_idle)
        c = self.a.util * sum(CAP.values()) / (self.a.sensors + self.a.web_users * frac)
        cfg = dict(hosts=[dict(name=h, capacity=cp) for h, cp, _ in HOSTS],
                   vms=[dict(v, listen="0.0.0.0") for v in VMS], sensor_port=SENSOR_PORT, web_port=WEB_PORT,
                   sensor_work=round(c * SENSOR_PERIOD, 4), web_work=round(c * WEB_THINK, 4))
        write(os.path.join(self.tmp, "srv.json"), json.dumps(cfg))
        for p in (LAB_SERVE, LAB_LOAD, KEEPALIVE, IPVSCTL):
            if not os.access(p, os.X_OK):
                raise LabError(f"{p} missing (scripts/setup.sh builds it)")
        self.srv = subprocess.Popen([LAB_SERVE, os.path.join(self.tmp, "srv.json")],
                                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        first = self.srv.stdout.readline()
        if '"ready"' not in first:
            raise LabError(f"the lab servers did not start: {first!r}")
        write(os.path.join(self.tmp, "router.conf"), router_conf(self.n))
        self.rbird = self.spawn("router", ["chrt", "-f", "40", "bird", "-f", "-c", os.path.join(self.tmp, "router.conf"),
                                           "-s", os.path.join(self.tmp, "router.ctl")], NS_RT)
        for i in range(1, self.n + 1):
            self.start_director(i)
        self.wait_until(90, lambda: self.route_via() == set(range(1, self.n + 1)) and
                        all(self.applied(i) for i in range(1, self.n + 1)),
                        "every director applied and announced")
        log(f"{self.n} directors up: cluster from etcd applied, the VIP announced by each ({time.time() - t:.1f} s)")
        enter("lab-cl")

    def wait_until(self, secs, cond, what):
        end = time.time() + secs
        while not cond():
            for i, p in self.ka.items():
                if p is not None and p.poll() is not None and not self.killed.get(i):
                    raise LabError(f"keepalive on d{i} exited: {self.tail(f'd{i}')}")
            if time.time() > end:
                raise LabError(f"not within {secs} s: {what}; route: {self.route_text()}\n"
                               + "\n".join(f"--- d{i}\n{self.tail(f'd{i}', 800)}" for i in self.ka))
            time.sleep(0.2)

    def route_text(self):
        r = subprocess.run(["ip", "-n", NS_RT, "route", "show", f"{VIP}/32"], capture_output=True, text=True,
                           timeout=30)
        return r.stdout.strip()

    @staticmethod
    def via(text):
        """Directors a route (`ip route show` text) goes through."""
        return {int(w.split(".")[-1]) for w in text.split() if w.startswith("10.0.0.")}

    def route_via(self):
        return self.via(self.route_text())

    async def route_via_async(self):
        """route_via() without blocking the event loop (the probes run on it)."""
        p = await asyncio.create_subprocess_exec("ip", "-n", NS_RT, "route", "show", f"{VIP}/32",
                                                 stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        o, _ = await asyncio.wait_for(p.communicate(), 30)
        return self.via(o.decode())

    def applied(self, i, canary=False):
        try:
            s = {port: len(dests) for port, dests in ipvs_table(self.ka[i].pid).items()}
        except (OSError, AttributeError):
            return False
        want = {SENSOR_PORT: sum(v["service"] == "sensor" for v in VMS),
                WEB_PORT: sum(v["service"] == "web" for v in VMS)}
        if canary:
            want[CANARY_PORT] = want[WEB_PORT]
        return s == want

    # ---- the servers' statistics and the clients' events
    async def read_srv(self):
        async for v in json_lines(self.srv):
            self.srv_stats = v

    def start_load(self):
        loop = asyncio.get_running_loop()
        self.stopped = asyncio.Event()
        self.load = subprocess.Popen([LAB_LOAD, VIP, str(SENSOR_PORT), str(WEB_PORT), str(self.a.seed)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)

        def reader():
            for line in self.load.stdout:
                try:
                    ev = json.loads(line)
                    loop.call_soon_threadsafe(self.on_event, ev, time.time())
                except ValueError:
                    continue
                except RuntimeError:
                    return
        import threading
        threading.Thread(target=reader, daemon=True).start()

    def load_cmd(self, cmd):
        send_json(self.load, "lab-load", cmd)

    def on_event(self, ev, now):
        e = ev.get("e")
        if e == "stopped":
            self.stopped.set()
        elif e in ("so", "sr", "sx"):
            st = self.sensors.setdefault(ev["i"], dict(gen=0, open=False, opened=now, last_ok_sent=0.0, err=None))
            if e == "so":
                st.update(gen=ev["g"], open=True, opened=now, err=None)
            elif e == "sr":
                st["last_ok_sent"] = ev["t"]
            else:
                self.errors["sensor"] += 1
                st.update(open=False, err=ev["err"])
        elif e == "wr":
            self.web_ok += 1
        elif e == "wo":
            self.web_open[ev["s"]] = ev["t"]
        elif e == "wx":
            self.errors["web"] += 1
            self.web_errors.append((ev["s"], ev["err"], now))

    def open_sensors(self):
        return {i: x for i, x in self.sensors.items() if x["open"]}

    async def start_clients(self):
        a = self.a
        self.sensors.clear()
        self.load_cmd({"web": {"users": a.web_users, "idle": a.web_idle}})
        await asyncio.sleep(a.warm)
        self.load_cmd({"sensors": {"n": a.sensors, "ramp": a.ramp}})
        end = time.time() + a.ramp + max(10.0, a.ramp)
        while len(self.open_sensors()) < a.sensors and time.time() < end:
            await asyncio.sleep(0.2)
        if len(self.open_sensors()) < a.sensors:
            raise LabError(f"only {len(self.open_sensors())} of {a.sensors} sensors connected")
        await asyncio.sleep(2.0)

    async def stop_clients(self):
        if self.load is None or self.load.poll() is not None:
            return
        self.stopped.clear()
        self.load_cmd({"stop": True})
        try:
            await asyncio.wait_for(self.stopped.wait(), 30)
        except asyncio.TimeoutError:
            raise LabError("lab-load did not stop its clients within 30 s")
        for x in self.sensors.values():
            x["open"] = False

    def keep_logs(self):
        for name in [f"d{i}" for i in range(1, self.n + 1)] + ["router", "etcd"]:
            src = os.path.join(self.tmp, f"{name}.log")
            if os.path.exists(src):
                shutil.copy(src, os.path.join(self.a.out, f"{name}.log"))

    def stop_all(self):
        procs = [p for p in list(self.ka.values()) + [self.srv, self.load, self.rbird, self.etcd] if p]
        for p in procs:
            if p.poll() is None:
                p.terminate()
        for p in procs:
            try:
                p.wait(timeout=8)
            except subprocess.TimeoutExpired:
                p.kill()


async def amain(lab):
    rd = asyncio.create_task(lab.read_srv())
    rw = asyncio.create_task(lab.watch_routes())
    lab.start_load()
    try:
        await lab.balance()
        await lab.etcd_change()
        await lab.kill_and_rejoin()
        await lab.drain()
        await lab.etcd_outage()
    finally:
        try:
            await lab.stop_clients()
        except LabError as e:
            log(f"warning: {e}")
        rd.cancel()
        rw.cancel()
    r = lab.res
    line = (f"active-active: directors {lab.n} killed 1 established {r['kill']['established']}"
            f" kept {r['kill']['kept']} lost {r['kill']['lost']}"
            f" first-new-after-kill-ms {r['kill']['first_new_ms']} etcd-converged-ms {r['etcd']['converged_ms']}")
    r["line"] = line
    with open(os.path.join(lab.a.out, "summary.json"), "w") as f:
        json.dump(r, f, indent=1, sort_keys=True)
    txt = lab.table() + "\n" + line
    with open(os.path.join(lab.a.out, "summary.txt"), "w") as f:
        f.write(txt + "\n")
    out(txt)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--directors", type=int, default=3)
    ap.add_argument("--sensors", type=int, default=120)
    ap.add_argument("--web-users", type=int, default=12)
    ap.add_argument("--web-idle", type=float, default=3.0)
    ap.add_argument("--util", type=float, default=0.6)
    ap.add_argument("--warm", type=float, default=3)
    ap.add_argument("--ramp", type=float, default=10)
    ap.add_argument("--measure", type=float, default=20)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    if not 2 <= a.directors <= 8 or a.sensors < 3 or a.web_users < 1 or a.measure <= 0:
        ap.error("need 2..8 directors, at least 3 sensors, one web user and a positive --measure")
    if os.geteuid() != 0:
        log("must run as root (in the test VM: scripts/vm.sh -- lab/run.sh --active-active ...)")
        return 1
    for prog in ("bird", "etcd"):
        if shutil.which(prog) is None:
            log(f"{prog} missing (scripts/setup.sh installs bird2 and etcd-server)")
            return 1
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 65536), hard))
    os.makedirs(a.out, exist_ok=True)
    lab = Lab(a)
    t0 = time.time()
    try:
        lab.setup()
        out(f"lab ready in {time.time() - t0:.0f} s: {a.sensors} sensors and {a.web_users} web users under vmwlch;"
            f" a rejoining director waits {JOIN_HOLD_MS / 1000:.0f} s before it announces (sync catch-up)")
        asyncio.run(amain(lab))
        return 0
    except LabError as e:
        log(f"error: {e}")
        return 1
    finally:
        lab.stop_all()
        lab.keep_logs()
        if os.environ.get("LAB_KEEP"):
            log(f"namespaces kept; logs in {lab.tmp}")
        else:
            delete_all()


if __name__ == "__main__":
    sys.exit(main())
