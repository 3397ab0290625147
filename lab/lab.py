#!/usr/bin/env python3
"""The reference cluster lab (run inside the test VM, as root; see docs/demo.md).

    lab.py --out DIR [--sensors N] [--web-users U] [--warm S] [--ramp S]
           [--measure S] [--schedulers wlc,vmwlc,vmwlch] [--no-failover]
           [--churn-ms MS] [--no-feedback-scenarios]

Builds, with network namespaces of this VM only:

  client 192.0.2.200 --br0-- fe1/fe2 eth0 (VIP 192.0.2.10, VRRP VI_1)
                             fe1/fe2 eth1 (10.1.0.1/.2, gateway 10.1.0.254, VRRP VI_2)
                     --br1-- 5 physical hosts (a bridge each) -- 20 VMs 10.1.H.x/16

Two front ends run keepalive (VRRPv3, 100 ms adverts, IPVS connection sync
on eth1) with the services "sensor" (VIP:9000) and "web" (VIP:80), NAT to
the VMs, and the VMWLCH host map. One process (lab-serve, Rust) serves every VM and
models the hosts' CPUs; lab-load (Rust) runs the sensors and the web users;
this process orchestrates, samples and reports, off the request path.

A scheduler named with the suffix `_churn` (e.g. --schedulers
vmwlch,vmwlch_churn) runs that scheduler while a third service without traffic
(port 8081, on the web VMs) has one VM drained and restored every --churn-ms
(100): the constant change of a real cluster; the phase reports how many of
the module's decisions were host-aware meanwhile.

A scheduler with the suffix `_fb` (--schedulers wlc,wlc_fb,vmwlc,vmwlch) is the
stock-kernel mode of load feedback: one host-agent per host reports the
host's CPU (lab-serve's model, as /proc/stat), keepalive polls them and
scales each destination's wlc weight by its host's factors: one from the
agents' CPU, one from the director's own connections per host over both
services (the module is not used). After its measured window a CPU antagonist starts on h5 (its VMs'
weights must fall within 30 s, then change at most once per destination in
10 s) and a VM of h5 moves to h1 (its veth and the agents' VM files: its
weight must follow within 2 s); both are undone before the next phase
(labkit/feedback.py; --no-feedback-scenarios skips them).

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
import json
import os
import random
import resource
import signal
import subprocess
import sys
import tempfile
import threading
import time

from labkit.base import (FE, GW, HNAMES, HOST_OF, HOSTS, KEEPALIVE, LAB_LOAD, LAB_SERVE, NS_CL, SENSOR_PERIOD,
                         SENSOR_PORT, VIP, VMS, WEB_PORT, WEIGHT, LabError, json_lines, log, out, send_json,
                         write)
from labkit.calibrate import CalibrationMixin
from labkit.failover import FailoverMixin
from labkit.feedback import FeedbackMixin, is_feedback, steady_writes
from labkit.frontends import CHURN_PORT, fib_has, ipvs_read, ka_config
from labkit.report import ReportMixin
from labkit.stats import Phase, cpu_share, fmtv, imbalance, mean, pct, proc_cpu
from labkit.topology import build_topology, delete_topology
from netns import enter  # on sys.path through labkit.base

# The failover's own bounds (sync wait, tcpdump and prober start, the kill,
# survival checks) add up to a few minutes on a starved VM.
FAILOVER_BOUND_S = 420


def base_scheduler(label):
    """The IPVS scheduler of a phase: `vmwlch_churn` runs vmwlch, `wlc_fb` wlc."""
    return label.split("_")[0]


def ka_setup(label):
    """What keepalive's configuration depends on in a phase."""
    return base_scheduler(label), is_feedback(label)

# ---------------------------------------------------------------- the lab


def kernel_log_tail(lines=30):
    """The kernel log's last lines (IPVS and hung-task messages)."""
    try:
        return "\n".join(subprocess.run(["dmesg"], capture_output=True, text=True,
                                         timeout=10).stdout.splitlines()[-lines:])
    except (OSError, subprocess.SubprocessError) as e:
        return f"dmesg failed: {e}"


class Lab(CalibrationMixin, FailoverMixin, FeedbackMixin, ReportMixin):
    def __init__(self, a):
        self.a = a
        # the churn phases' service exists in every phase of such a run
        self.churn_service = any(x.endswith("_churn") for x in a.schedulers)
        self.feedback = any(is_feedback(x) for x in a.schedulers)
        self.agents = {}
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
        self.early_capture = None  # (PacketTiming, start task) begun before the first phase
        self.load = None  # the lab-load process (the clients)
        self.stopped = None  # asyncio.Event: lab-load ended its clients
        self.calibration = None  # what the probe measured (labkit.calibrate)
        self.advert_ms = 100  # VRRP advert interval; the calibration may lengthen it

    # ---- setup
    def setup(self):
        t = time.time()
        delete_topology()  # leftovers of an earlier run (LAB_KEEP=1)
        build_topology(self.tmp)
        log(f"topology: {len(VMS)} VMs on {len(HOSTS)} hosts, 2 front ends, client "
            f"({time.time() - t:.1f} s)")
        work = self.work_for(self.a.sensors, self.a.web_users)
        cfg = dict(hosts=[dict(name=h, capacity=c) for h, c, _ in HOSTS], vms=VMS,
                   sensor_port=SENSOR_PORT, web_port=WEB_PORT, **work)
        if self.feedback:
            cfg["proc_dir"] = self.proc_dir()
        self.work = work
        write(os.path.join(self.tmp, "srv.json"), json.dumps(cfg))
        if not os.access(LAB_SERVE, os.X_OK):
            raise LabError(f"{LAB_SERVE} missing (scripts/setup.sh builds it)")
        self.srv = subprocess.Popen([LAB_SERVE, os.path.join(self.tmp, "srv.json")],
                                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        first = self.srv.stdout.readline()
        if '"ready"' not in first:
            raise LabError(f"the lab servers did not start: {first!r}")
        if self.feedback:
            self.start_agents()
            log(f"host agents: {len(self.agents)} listening ({time.time() - t:.1f} s)")
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
        self.fe_up_t = time.time()
        log(f"front ends up: fe1 master, fe2 backup (warm, connection sync) ({self.fe_up_t - t:.1f} s)")
        enter(NS_CL)

    def start_ka(self, i, label):
        conf = os.path.join(self.tmp, f"fe{i}.yaml")
        write(conf, ka_config(i, base_scheduler(label), self.advert_ms, self.churn_service, is_feedback(label)))
        logf = open(os.path.join(self.tmp, f"fe{i}.log"), "a")
        self.ka[i] = subprocess.Popen(["ip", "netns", "exec", FE[i], KEEPALIVE, "-c", conf, "--log-level", "info"],
                                      stdout=logf, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)

    def keep_diagnostics(self):
        """The front ends' keepalive logs and the module's counters next to
        the results (the lab's temporary directory goes with the VM)."""
        for i in (1, 2):
            try:
                with open(os.path.join(self.tmp, f"fe{i}.log")) as src, \
                        open(os.path.join(self.a.out, f"keepalive-fe{i}.log"), "w") as dst:
                    dst.write(src.read())
                info = subprocess.run(["ip", "netns", "exec", FE[i], "ipvsctl", "host", "info"],
                                      capture_output=True, text=True, timeout=30)
                with open(os.path.join(self.a.out, f"vmwlch-info-fe{i}.txt"), "w") as f:
                    f.write(info.stdout + info.stderr)
            except (OSError, subprocess.SubprocessError) as e:
                log(f"warning: fe{i}'s diagnostics not kept: {e}")

    def ka_log(self, i):
        try:
            return open(os.path.join(self.tmp, f"fe{i}.log")).read()[-1500:]
        except OSError:
            return ""

    def ka_threads(self, i):
        """Where each of fe{i}'s keepalive threads waits (a stuck apply)."""
        out = []
        task_dir = f"/proc/{self.ka[i].pid}/task"
        try:
            for tid in sorted(os.listdir(task_dir), key=int):
                parts = []
                for name in ("comm", "wchan", "stack"):
                    try:
                        parts.append(open(f"{task_dir}/{tid}/{name}").read().strip().replace("\n", " | "))
                    except OSError:
                        parts.append("?")
                out.append(f"thread {tid}: " + " / ".join(parts))
        except OSError as e:
            out.append(f"threads unreadable: {e}")
        return "\n".join(out)

    def applied(self, label, fes=(1,)):
        sched = base_scheduler(label)
        for i in fes:
            try:
                s, d = ipvs_read(self.ka[i].pid)
            except OSError:
                return False
            if s.get(SENSOR_PORT) != sched or s.get(WEB_PORT) != sched:
                return False
            if sum(1 for port, _ in d if port in (SENSOR_PORT, WEB_PORT)) != len(VMS):
                return False
        return True

    async def switch(self, label):
        for i in (1, 2):
            write(os.path.join(self.tmp, f"fe{i}.yaml"),
                  ka_config(i, base_scheduler(label), self.advert_ms, self.churn_service, is_feedback(label)))
            os.kill(self.ka[i].pid, signal.SIGHUP)
        end = time.time() + 20
        while not self.applied(label, (1, 2)):
            if time.time() > end:
                raise LabError(f"{label} not applied on both front ends:\n"
                               f"--- fe1\n{self.ka_log(1)}\n{self.ka_threads(1)}\n"
                               f"--- fe2\n{self.ka_log(2)}\n{self.ka_threads(2)}\n"
                               f"--- kernel log\n{kernel_log_tail()}")
            await asyncio.sleep(0.2)

    # ---- server stats
    async def read_srv(self):
        async for v in json_lines(self.srv):
            self.srv_stats = v

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

    def srv_cmd(self, cmd):
        send_json(self.srv, "lab-serve", cmd)

    def load_cmd(self, cmd):
        send_json(self.load, "lab-load", cmd)

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
        if is_feedback(ph.sched):
            s["weights"] = self.weights()
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
                    if n % self.a.progress_every == 0 and not self.phase.stopping \
                            and not getattr(self.phase, "probe", False):
                        ph = self.phase
                        label = "failover" if self.failing else \
                            "measure" if prev["measured"] else ("warm-up" if ph.m0 is None else "done")
                        self.progress(prev, label)
                except (OSError, KeyError) as e:
                    log(f"sample failed: {e}")
            await asyncio.sleep(1.0)

    # ---- phases
    async def run_phase(self, label, keep):
        a = self.a
        sched = base_scheduler(label)
        if self.phase is None or ka_setup(self.phase.sched) != ka_setup(label):
            await self.switch(label)
        ph = Phase(label)
        ph.t0 = time.time()
        self.phase = ph
        self.phases.append(ph)
        self.sensors.clear()
        self.sessions.clear()
        churn = asyncio.create_task(self.churn(ph)) if label.endswith("_churn") else None
        out(f"== {label}: web users {a.web_users} start, then {a.sensors} sensors connect over {a.ramp:.0f} s,"
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
        cpu0 = proc_cpu()
        await asyncio.sleep(a.measure)
        ph.m1 = time.time()
        ph.cpu = cpu_share(cpu0, proc_cpu(), ph.m1 - ph.m0)
        if churn:
            ph.churn = await churn
        r = self.report(ph)
        out(f"== {label}: host imbalance (max/mean active/W) {fmtv(r['imbalance_conns'], '.2f')}, busy max/mean "
            f"{fmtv(r['imbalance_busy'], '.2f')}; sensor rt mean {fmtv(r['sensor_mean_ms'], '.0f')} ms p95 "
            f"{fmtv(r['sensor_p95_ms'], '.0f')} ms; web rt mean {fmtv(r['web_mean_ms'], '.0f')} ms p95 "
            f"{fmtv(r['web_p95_ms'], '.0f')} ms")
        out(f"== {label}: CPU in the measured window (CPU s per s): "
            + ", ".join(f"{k} {v:.2f}" for k, v in ph.cpu.items()))
        if r["churn"]:
            c = r["churn"]
            out(f"== {label}: {c['changes']} weight changes of another service meanwhile; host-aware decisions"
                f" {c['host_aware']}/{c['decisions']} ({fmtv(100 * (c['host_aware_share'] or 0), '.2f')} %)")
        if is_feedback(label):
            out(f"== {label}: destination weights written by the load feedback: at most"
                f" {fmtv(r['fb_steady_writes'], '.1f')} change(s) per destination per 10 s over the"
                f" {r['fb_steady_window_s']:.0f} s measured")
            if not a.no_feedback_scenarios:
                r["feedback"] = await self.feedback_scenarios()
        if not keep:
            await self.stop_phase(ph)

    def module_info(self):
        """The master front end's GET_INFO counters (ipvsctl host info)."""
        p = subprocess.run(["ip", "netns", "exec", FE[self.master], "ipvsctl", "host", "info", "-o", "json"],
                           capture_output=True, text=True, timeout=60)
        if p.returncode != 0:
            raise LabError(f"ipvsctl host info failed: {p.stderr.strip()[:300]}")
        return json.loads(p.stdout)

    async def churn(self, ph):
        """Until the phase's measured window ends: the churn service's VMs
        drained and restored in turn every --churn-ms, through one ipvsadm -R
        on the master front end (it applies each line as it reads it).
        Returns the changes made and the module's decisions meanwhile."""
        webs = [v["addr"] for v in VMS if v["service"] == "web"]
        before = await asyncio.to_thread(self.module_info)
        p = await asyncio.create_subprocess_exec(
            "ip", "netns", "exec", FE[self.master], "ipvsadm", "-R", stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        n, period = 0, self.a.churn_ms / 1000
        nxt = time.time()
        a = self.a
        deadline = nxt + a.warm + a.ramp + a.measure + 300  # bounded even if the phase never ends
        while ph.m1 is None and time.time() < deadline:
            vm = webs[(n // 2) % len(webs)]
            p.stdin.write(f"-e -t {VIP}:{CHURN_PORT} -r {vm}:{CHURN_PORT} -m -w {0 if n % 2 == 0 else 1}\n".encode())
            await p.stdin.drain()
            n += 1
            nxt += period
            await asyncio.sleep(max(0.0, nxt - time.time()))
        p.stdin.close()
        _, err = await asyncio.wait_for(p.communicate(), 60)
        if p.returncode != 0:
            raise LabError(f"the churn's ipvsadm -R failed: {err.decode().strip()[:300]}")
        after = await asyncio.to_thread(self.module_info)
        dec = after["decisions"] - before["decisions"]
        aware = after["host_aware"] - before["host_aware"]
        return dict(changes=n, decisions=dec, host_aware=aware,
                    host_aware_share=round(aware / dec, 4) if dec else None)

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
                 host_busy=busy, cpu=ph.cpu, max_busy=max(busy.values()) if ms else float("nan"),
                 errors=dict(ph.errors), loop_lag_ms=1000 * mean(ph.lag) if ph.lag else 0.0,
                 gen_lag_ms=mean(ph.gen_lag) if ph.gen_lag else None, connect_timeouts=ph.connect_timeouts,
                 sensors_open_at_measure=getattr(ph, "open_at_m0", 0), settle_s=getattr(ph, "settle_s", None),
                 churn=getattr(ph, "churn", None))
        if is_feedback(ph.sched):
            r["fb_steady_writes"], r["fb_steady_window_s"] = steady_writes(ms)
        for svc in ("sensor", "web"):
            xs = [x for t, x in ph.rt[svc] if ph.m0 <= t <= ph.m1]
            r[f"{svc}_n"] = len(xs)
            r[f"{svc}_mean_ms"] = 1000 * mean(xs)
            r[f"{svc}_p95_ms"] = 1000 * pct(xs, 0.95)
        ph.result = r
        return r


async def amain(lab):
    a = lab.a
    t_start = time.time()
    rd = asyncio.create_task(lab.read_srv())
    lab.start_load()
    sp = asyncio.create_task(lab.sampler())
    fo = None
    try:
        lab.calibration = await lab.calibrate_load()
        out(f"load: {a.sensors} sensors (a reading every {SENSOR_PERIOD:.0f} s), {a.web_users} web users; work"
            f" per sensor reading {1000 * lab.work['sensor_work']:.0f} ms, per web request"
            f" {1000 * lab.work['web_work']:.0f} ms of a normal CPU (target cluster load {a.util:.0%})")
        if not a.no_failover:
            # The failover's tcpdump (passive) is up before the first phase:
            # its start costs tens of seconds of CPU under emulation, which
            # must fall on no scheduler's phase (nor on the failover's clock).
            lab.early_capture = lab.start_capture()
            await lab.early_capture[1]
        for k, sched in enumerate(a.schedulers):
            last = k == len(a.schedulers) - 1
            # the last phase's connections stay open for the failover
            await lab.run_phase(sched, keep=last and not a.no_failover)
        if not a.no_failover:
            try:
                fo = await asyncio.wait_for(lab.failover(), FAILOVER_BOUND_S)
            except (LabError, asyncio.TimeoutError) as e:
                why = str(e) or f"no result within {FAILOVER_BOUND_S} s"
                log(f"the failover was not measured: {why}")
                fo = dict(done=False, error=why)
    finally:
        # also on errors: stop the clients so that the loop can end
        ph = lab.phase
        if ph is not None:
            try:
                await lab.stop_clients(ph)
            except LabError as e:
                log(f"warning: {e}")
        if lab.early_capture is not None:  # the failover never ran
            timing, capture = lab.early_capture
            await asyncio.gather(capture, return_exceptions=True)
            await timing.stop()
        lab.stop_all = True
        sp.cancel()
        await asyncio.gather(sp, return_exceptions=True)
    summ = lab.write_outputs(fo, time.time() - t_start)
    txt = lab.table(summ)
    out(txt)
    with open(os.path.join(a.out, "summary.txt"), "w") as f:
        f.write(txt + "\n")
    lab.keep_diagnostics()
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
    ap.add_argument("--churn-ms", type=int, default=100,
                    help="period of the weight changes in a _churn phase (ms)")
    ap.add_argument("--no-feedback-scenarios", action="store_true",
                    help="a _fb phase without the antagonist and the VM move")
    a = ap.parse_args()
    a.schedulers = a.schedulers.split(",")
    if a.sensors < 1 or a.web_users < 1 or a.measure <= 0:
        ap.error("need at least one sensor, one web user and a positive --measure")
    if a.churn_ms < 10:
        ap.error("--churn-ms must be at least 10")
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
        out(f"lab ready in {time.time() - t0:.0f} s; calibrating the load to this VM"
            f" ({a.sensors} sensors and {a.web_users} web users asked)")
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
        lab.stop_agents()
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

