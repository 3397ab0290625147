"""Load feedback in the lab (a `_fb` phase, e.g. wlc_fb): one host-agent per
physical host, keepalive polling them in stock-kernel mode (wlc, each
destination's weight scaled by its host's factor), and the two scenarios
of a real cluster: a CPU antagonist on one host and a VM that moves.

The hosts are lab-serve's models, so a host's CPU is the /proc/stat that
lab-serve publishes for it (PROC_DIR/HOST/stat, read by the agent's
--proc-root); the agents, keepalive, the controller and IPVS are the real
ones. The VM list of each agent is a file (--vms-file) that a migration hook
would keep: the lab moves the VM's veth, then rewrites both hosts' files."""
import asyncio
import os
import subprocess
import time

from .base import AGENT_ADDR, AGENT_PORT, HNAMES, HOST_AGENT, SENSOR_PORT, VMS, WEB_PORT, LabError, log, write
from .frontends import ipvs_weights

AGENT_PERIOD_MS = 500
# The antagonist's host (sensor VMs only) and the VM moved off it, and where to.
ANTAGONIST_HOST = "h5"
MOVE_TO = "h1"
# What the scenarios must show (issue: within 30 s; <= 1 write per
# destination per 10 s at steady state; a moved VM followed within 2 s).
MOVE_OFF_BOUND_S = 30.0
STEADY_S = 10.0
FOLLOW_BOUND_MS = 2000.0


def is_feedback(label):
    return label.endswith("_fb")


def writes_per_dest(series):
    """{dest: number of weight changes} over a list of {dest: weight} samples."""
    n = {}
    for a, b in zip(series, series[1:]):
        for k, w in b.items():
            if k in a and a[k] != w:
                n[k] = n.get(k, 0) + 1
    return n


class FeedbackMixin:
    """Needs self.tmp, self.ka, self.master, self.srv_cmd, self.a."""

    def proc_dir(self):
        return os.path.join(self.tmp, "hosts")

    def write_vms(self, placement):
        """Each host's VMs file, from {vm addr: host} (replaced atomically)."""
        for h in HNAMES:
            d = os.path.join(self.proc_dir(), h)
            os.makedirs(d, exist_ok=True)
            addrs = sorted(a for a, x in placement.items() if x == h)
            write(os.path.join(d, "vms.tmp"), "".join(f"{a}\n" for a in addrs))
            os.replace(os.path.join(d, "vms.tmp"), os.path.join(d, "vms"))

    def start_agents(self):
        """One host-agent per host, in the host's namespace, on its bridge address."""
        self.agents = {}
        self.placement = {v["addr"]: v["host"] for v in VMS}
        if not os.access(HOST_AGENT, os.X_OK):
            raise LabError(f"{HOST_AGENT} missing (scripts/setup.sh builds it)")
        self.write_vms(self.placement)
        end = time.time() + 20
        while not all(os.path.exists(os.path.join(self.proc_dir(), h, "stat")) for h in HNAMES):
            if time.time() > end:
                raise LabError("lab-serve published no host CPU files in 20 s")
            time.sleep(0.1)
        for h in HNAMES:
            d = os.path.join(self.proc_dir(), h)
            logf = open(os.path.join(self.tmp, f"agent-{h}.log"), "a")
            self.agents[h] = subprocess.Popen(
                ["ip", "netns", "exec", f"lab-{h}", HOST_AGENT, "--host", h, "--listen",
                 f"{AGENT_ADDR[h]}:{AGENT_PORT}", "--proc-root", d, "--vms-file", os.path.join(d, "vms"),
                 "--period-ms", str(AGENT_PERIOD_MS)],
                stdout=logf, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        want = f":{AGENT_PORT:04X}"
        end = time.time() + 30
        for h, p in self.agents.items():
            while True:
                if p.poll() is not None:
                    raise LabError(f"host-agent of {h} exited ({p.returncode}): {self.agent_log(h)}")
                try:  # `ip netns exec` execs the agent: its pid sees the host's sockets
                    rows = open(f"/proc/{p.pid}/net/tcp").read().splitlines()[1:]
                except OSError:
                    rows = []
                if any(len(f) > 3 and f[1].endswith(want) and f[3] == "0A" for f in map(str.split, rows)):
                    break
                if time.time() > end:
                    raise LabError(f"host-agent of {h} not listening after 30 s: {self.agent_log(h)}")
                time.sleep(0.1)

    def agent_log(self, h):
        try:
            return open(os.path.join(self.tmp, f"agent-{h}.log")).read()[-800:]
        except OSError:
            return ""

    def stop_agents(self):
        for p in getattr(self, "agents", {}).values():
            if p.poll() is None:
                p.terminate()
        for p in getattr(self, "agents", {}).values():
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                p.kill()

    def weights(self):
        """{vm addr: weight} of the sensor and web services on the master front end."""
        return {ip: w for (port, ip), w in ipvs_weights(self.ka[self.master].pid).items()
                if port in (SENSOR_PORT, WEB_PORT)}

    async def watch(self, seconds, until=None, every=0.1):
        """Weight samples every EVERY s for SECONDS, or until UNTIL(sample)
        holds: (samples, seconds waited, whether UNTIL held)."""
        t0, series = time.time(), []
        while True:
            series.append(self.weights())
            if until is not None and until(series[-1]):
                return series, time.time() - t0, True
            if time.time() - t0 >= seconds:
                return series, time.time() - t0, False
            await asyncio.sleep(every)

    async def move_vm(self, vm, to):
        """Live-migrate VM (a VMS entry) to host TO: its veth into TO's bridge,
        its requests served there, then the hook's rewrite of the VMs files.
        Returns the time of the rewrite (the agents' view changes from then)."""
        frm = self.placement[vm["addr"]]
        for cmd in (["ip", "-n", f"lab-{frm}", "link", "set", vm["name"], "netns", f"lab-{to}"],
                    ["ip", "-n", f"lab-{to}", "link", "set", vm["name"], "master", "hbr", "up"]):
            p = await asyncio.create_subprocess_exec(*cmd, stderr=subprocess.PIPE)
            _, err = await asyncio.wait_for(p.communicate(), 60)
            if p.returncode != 0:
                raise LabError(f"{' '.join(cmd)}: {err.decode().strip()[:200]}")
        self.srv_cmd({"move": {"vm": vm["name"], "host": to}})
        self.placement[vm["addr"]] = to
        self.write_vms(self.placement)
        return time.time()

    async def feedback_scenarios(self):
        """The antagonist, the steady state under it, the VM move; then all undone."""
        ant = [v["addr"] for v in VMS if v["host"] == ANTAGONIST_HOST]
        rest = [v["addr"] for v in VMS if v["host"] != ANTAGONIST_HOST]
        mean = lambda w, xs: sum(w[x] for x in xs) / len(xs)  # noqa: E731
        before = self.weights()
        w0 = mean(before, ant)
        self.srv_cmd({"antagonist": {"host": ANTAGONIST_HOST, "on": True}})
        # moved off: the host's VMs at half their weight or less, and at half the others'
        off = lambda w: mean(w, ant) <= 0.5 * min(w0, mean(w, rest))  # noqa: E731
        _, moved_s, moved = await self.watch(MOVE_OFF_BOUND_S, off)
        await asyncio.sleep(5.0)  # the rest of the way (bounded steps), then the steady state
        steady, _, _ = await self.watch(STEADY_S, every=0.25)
        writes = writes_per_dest(steady)
        under = steady[-1]
        res = dict(antagonist_host=ANTAGONIST_HOST, weight_before=round(w0, 1),
                   others_before=round(mean(before, rest), 1), moved_off=moved,
                   moved_off_s=round(moved_s, 2) if moved else None,
                   weight_under=round(mean(under, ant), 1), others_under=round(mean(under, rest), 1),
                   steady_window_s=STEADY_S, steady_max_writes=max(writes.values(), default=0),
                   steady_writes=sum(writes.values()))
        # the VM move, with the antagonist still on: the moved VM's weight
        # goes from its old host's (low) factors to its new host's, i.e. to
        # the weight of the new host's VMs of its service (the same base
        # weight), whatever those are by then
        vm = next(v for v in reversed(VMS) if v["host"] == ANTAGONIST_HOST)
        w_old = under[vm["addr"]]
        peers = [v["addr"] for v in VMS if v["service"] == vm["service"] and self.placement[v["addr"]] == MOVE_TO]
        t_rewrite = await self.move_vm(vm, MOVE_TO)
        _, _, followed = await self.watch(10.0, lambda w: abs(w[vm["addr"]] - mean(w, peers)) <= 0.1 * mean(w, peers),
                                          every=0.02)
        follow_ms = 1000 * (time.time() - t_rewrite) if followed else None
        res.update(moved_vm=vm["addr"], moved_to=MOVE_TO, vm_weight_before=w_old,
                   vm_weight_after=self.weights()[vm["addr"]], followed=followed,
                   follow_ms=round(follow_ms) if followed else None)
        # undone: the later phases start from the reference cluster
        self.srv_cmd({"antagonist": {"host": ANTAGONIST_HOST, "on": False}})
        await self.move_vm(vm, ANTAGONIST_HOST)
        res["ok"] = bool(moved and off(under) and res["steady_max_writes"] <= 1 and followed
                         and follow_ms <= FOLLOW_BOUND_MS)
        log(f"feedback: antagonist on {ANTAGONIST_HOST}: its VMs' weight {w0:.0f} -> {res['weight_under']:.0f}"
            f" in {fmt_s(res['moved_off_s'])} (others {res['others_before']:.0f} -> {res['others_under']:.0f});"
            f" steady {STEADY_S:.0f} s: at most {res['steady_max_writes']} write(s) per destination;"
            f" VM {vm['addr']} moved to {MOVE_TO}: weight {w_old} -> {res['vm_weight_after']}"
            f" {'in %d ms' % follow_ms if followed else 'NOT followed in 10 s'}")
        return res


def fmt_s(v):
    return f"{v:.1f} s" if v is not None else f"not within {MOVE_OFF_BOUND_S:.0f} s"


def steady_writes(samples):
    """Most weight changes of one destination per 10 s over the phase's
    measured samples (one a second), and the window in seconds."""
    series = [s["weights"] for s in samples if s.get("weights")]
    if len(series) < 2:
        return None, 0.0
    span = max(1.0, samples[-1]["abs"] - samples[0]["abs"])
    n = writes_per_dest(series)
    return round(10.0 * max(n.values(), default=0) / span, 2), round(span, 1)

