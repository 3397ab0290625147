"""Calibration before the measurement: how much load this VM can carry.

The modelled work costs no CPU (lab-serve sleeps the processor-sharing
delays), but every request does: the clients, the servers and the kernel's
path through veths, bridges and IPVS NAT. Under emulation that path is slow,
and a load generator short of CPU measures itself instead of the cluster.
So before the phases a short probe runs a fraction of the load and measures
the VM's idle CPU use, the connection set-up rate through the VIP, the CPU
per answered request (the whole VM, from /proc/stat, so the kernel's share
counts) and the generator's timer lag. If the full load would take more
than LOAD_BUDGET of the VM's CPUs, the counts are scaled down (and the output
says so); the work per request then follows from the counts, so the cluster
still runs at the target utilisation.
"""
import asyncio
import math
import os
import time

from .base import CAP, SENSOR_PERIOD, LabError, log, out
from .stats import Phase, mean

# Share of the VM's CPUs the request path may use at full load: the rest is
# for keepalive (real-time adverts), the sampler, and bursts (a sensor ramp).
LOAD_BUDGET = 0.5
PROBE_SENSORS, PROBE_WEB = 20, 4
PROBE_S = 4.0
# A web user: idle ~ exp(mean idle), then K requests THINK s apart.
WEB_K, WEB_THINK = 5.5, 1.0


def cpu_times():
    """(busy, total) jiffies of all CPUs (/proc/stat's first line)."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:9]]
    return sum(v) - v[3] - v[4], sum(v)  # idle and iowait are not busy


def busy_between(c0, c1):
    """Fraction of all CPUs busy between two cpu_times() readings."""
    return (c1[0] - c0[0]) / max(1, c1[1] - c0[1])


def web_active_frac(web_idle):
    return (WEB_K * WEB_THINK) / (WEB_K * WEB_THINK + web_idle)


def request_rate(sensors, web_users, web_idle):
    """Requests per second of the full workload."""
    return sensors / SENSOR_PERIOD + web_users * web_active_frac(web_idle) / WEB_THINK


class CalibrationMixin:
    def work_for(self, sensors, web_users):
        """Work per request so that the cluster as a whole runs near --util of
        its capacity, and an open connection of either service costs the host
        about the same (the regime least-connection scheduling assumes)."""
        a = self.a
        active_frac = web_active_frac(a.web_idle)
        open_conns = sensors + web_users * active_frac
        c = a.util * sum(CAP.values()) / open_conns  # CPU-s per s per open connection
        return dict(sensor_work=round(c * SENSOR_PERIOD, 4), web_work=round(c * WEB_THINK, 4),
                    per_conn=c, expected_web_conns=web_users * active_frac)

    async def probe(self):
        """Runs the probe load; returns what it measured."""
        a = self.a
        s0, w0 = min(a.sensors, PROBE_SENSORS), min(a.web_users, PROBE_WEB)
        ph = Phase("probe")
        ph.probe, ph.t0 = True, time.time()
        self.phase = ph
        c0 = cpu_times()
        await asyncio.sleep(2.0)
        base = busy_between(c0, cpu_times())
        self.load_cmd({"web": {"users": w0, "idle": a.web_idle}})
        self.load_cmd({"sensors": {"n": s0, "ramp": 1.0}})
        t = time.time()
        await self.wait_open(s0, 20.0)
        opened, open_s = self.open_sensors(), time.time() - t
        await asyncio.sleep(1.0)  # the sensors' first readings
        c0, t0, lag0 = cpu_times(), time.time(), len(ph.gen_lag)
        await asyncio.sleep(PROBE_S)
        busy, t1 = busy_between(c0, cpu_times()), time.time()
        rts = [d for svc in ("sensor", "web") for t_, d in ph.rt[svc] if t0 <= t_ <= t1]
        sensor_rt = sorted(d for t_, d in ph.rt["sensor"] if t0 <= t_ <= t1)
        lag = mean(ph.gen_lag[lag0:])
        await self.stop_phase(ph)
        self.phase = None
        return dict(sensors=s0, web_users=w0, opened=opened, open_s=round(open_s, 2),
                    idle_busy=round(base, 3), busy=round(busy, 3), requests=len(rts),
                    seconds=round(t1 - t0, 2), gen_lag_ms=lag,
                    sensor_rt_median_ms=1000 * sensor_rt[len(sensor_rt) // 2] if sensor_rt else None)

    async def calibrate_load(self):
        """Probe, then scale the counts to the VM and set the work per request."""
        a = self.a
        ncpu = os.cpu_count() or 1
        p = await self.probe()
        if not p["requests"] or p["opened"] < p["sensors"]:
            # nothing to scale by: the self-check reports a run this slow
            log(f"calibration: the probe got {p['requests']} answers and opened {p['opened']} of"
                f" {p['sensors']} sensors; keeping the counts asked for")
            p.update(scale=1.0, cpu_per_request_ms=None)
            return p
        per_req = max(0.0, p["busy"] - p["idle_busy"]) * ncpu * p["seconds"] / p["requests"]
        rate = request_rate(a.sensors, a.web_users, a.web_idle)
        need = p["idle_busy"] * ncpu + rate * per_req  # CPUs at full load
        room = LOAD_BUDGET * ncpu - p["idle_busy"] * ncpu
        scale = 1.0 if need <= LOAD_BUDGET * ncpu else max(0.0, room) / max(1e-9, rate * per_req)
        p.update(cpu_per_request_ms=round(1000 * per_req, 2), full_rate=round(rate, 1),
                 full_cpus=round(need, 2), budget_cpus=LOAD_BUDGET * ncpu, scale=round(min(1.0, scale), 3))
        out(f"calibration: {p['opened']} sensors connected in {p['open_s']:.1f} s; {p['requests']} requests in"
            f" {p['seconds']:.0f} s cost {p['cpu_per_request_ms']:.1f} ms of CPU each (whole VM, kernel included;"
            f" idle {100 * p['idle_busy']:.0f}% of {ncpu} CPUs); generator timer lag"
            f" {p['gen_lag_ms']:.1f} ms; the full load ({rate:.0f} requests/s) needs ~{need:.2f} of {ncpu} CPUs"
            f" (budget {LOAD_BUDGET * ncpu:.1f})")
        if scale < 1.0:
            asked = (a.sensors, a.web_users)
            a.sensors = max(PROBE_SENSORS // 2, math.floor(a.sensors * scale))
            a.web_users = max(2, math.floor(a.web_users * scale))
            out(f"calibration: this VM cannot carry {asked[0]} sensors and {asked[1]} web users without"
                f" starving the load generator: scaled down to {a.sensors} sensors and {a.web_users} web"
                f" users (x{scale:.2f}); the work per request grows so the cluster load stays at"
                f" {a.util:.0%}")
            p["asked"] = dict(sensors=asked[0], web_users=asked[1])
        self.work = self.work_for(a.sensors, a.web_users)
        want = {"sensor_work": self.work["sensor_work"], "web_work": self.work["web_work"]}
        self.srv_cmd({"work": want})
        end = time.time() + 10  # lab-serve reports the work in force every second
        while (self.srv_stats or {}).get("work") != want:
            if time.time() > end:
                raise LabError(f"lab-serve did not take the calibrated work {want}: {self.srv_stats}")
            await asyncio.sleep(0.2)
        return p
