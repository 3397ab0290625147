"""Calibration before the measurement: how much load this VM can carry.

The modelled work costs no CPU (lab-serve sleeps the processor-sharing
delays), but every request does: the clients, the servers and the kernel's
path through veths, bridges and IPVS NAT. Under emulation that path is slow,
and a load generator short of CPU measures itself instead of the cluster.
So before the phases the lab probes, a few seconds each: a small load (the
connection set-up rate through the VIP, a sensor reading's response time
against its modelled work, the VM's busy time idle and loaded from
/proc/stat, the generator's timer lag), then the full counts asked for. If
the full load starves the generator (its timers late by more than
LAG_MAX_MS, connects timing out, sensors not connecting), the VM's capacity
is taken as the requests per second it still answered, the counts are
scaled to MARGIN of it (never below the small probe's, which the VM just
carried) and probed again, at most MAX_PROBES times; the output says so. The VM's busy time is reported, not used: under
emulation with a CPU quota the guest's accounting reads near 100 % even
idle. The work per request then follows from the counts run, so the cluster
still runs at the target utilisation.
"""
import asyncio
import math
import time

from .base import CAP, SENSOR_PERIOD, LabError, log, out
from .stats import Phase, mean, measured

# Generator timer lag (a 100 ms timer, mean lateness) above which the VM is
# short of CPU for the load: a fifth of the self-check's limit.
LAG_MAX_MS = 100.0
# A starved probe answers about the VM's capacity in requests/s: the next
# counts aim at this fraction of it. Probes at the full or scaled counts
# stop after MAX_PROBES (the last one's counts are run, checked or not).
MARGIN = 0.7
MAX_PROBES = 3
# Above this mean timer lag in the small probe (idle VM: ~6 ms; a VM at half
# its CPU: 50-90 ms) the VM stalls now and then for longer than VRRP's
# master-down interval at 100 ms adverts: the lab uses SLOW_ADVERT_MS.
SLOW_TIMERS_MS = 20.0
SLOW_ADVERT_MS = 250
PROBE_SENSORS, PROBE_WEB = 20, 4
PROBE_S = 4.0
# A web user: idle ~ exp(mean idle), then K requests THINK s apart.
WEB_K, WEB_THINK = 5.5, 1.0


def fmt_ms(v):
    return "-" if v is None else f"{v:.0f} ms"


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

    async def probe(self, sensors, web_users, ramp, idle_s=0.0):
        """Runs SENSORS and WEB_USERS for PROBE_S seconds after they connect
        over RAMP seconds; returns what it measured. With IDLE_S, the VM's
        idle busy time is measured first, over that long with no client."""
        a = self.a
        ph = Phase("probe")
        ph.probe, ph.t0 = True, time.time()
        self.phase = ph
        self.sensors.clear()
        self.sessions.clear()
        c0 = cpu_times()
        await asyncio.sleep(idle_s)
        base = busy_between(c0, cpu_times()) if idle_s else None
        self.load_cmd({"web": {"users": web_users, "idle": a.web_idle}})
        self.load_cmd({"sensors": {"n": sensors, "ramp": ramp}})
        t = time.time()
        await self.wait_open(sensors, ramp + 15.0)
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
        return dict(sensors=sensors, web_users=web_users, opened=opened, open_s=round(open_s, 2),
                    idle_busy=None if base is None else round(base, 3), busy=round(busy, 3), requests=len(rts),
                    seconds=round(t1 - t0, 2), gen_lag_ms=lag if measured(lag) else None,
                    connect_timeouts=ph.connect_timeouts, errors=sum(ph.errors.values()),
                    sensor_rt_median_ms=1000 * sensor_rt[len(sensor_rt) // 2] if sensor_rt else None)

    @staticmethod
    def starved(p):
        """Why a probe's load was too much for the VM ("" if it was not)."""
        if p["opened"] < p["sensors"]:
            return f"only {p['opened']} of {p['sensors']} sensors connected"
        if p["connect_timeouts"]:
            return f"{p['connect_timeouts']} connects timed out"
        if not p["requests"]:
            return "no request was answered in the probe's window"
        if p["gen_lag_ms"] is None:
            return "the generator sent no timer report in the probe's window"
        if p["gen_lag_ms"] is not None and p["gen_lag_ms"] > LAG_MAX_MS:
            return f"the generator's timers ran {p['gen_lag_ms']:.0f} ms late"
        return ""

    async def fit_adverts(self, small):
        """Lengthens the VRRP advert interval on a VM whose timers run late:
        at 100 ms the backup takes over after ~0.35 s without an advert, and
        a VM that stalls that long would fail over with no fault at all."""
        lag = small.get("gen_lag_ms")
        if not measured(lag) or lag <= SLOW_TIMERS_MS:
            return
        self.advert_ms = SLOW_ADVERT_MS
        await self.switch(self.a.schedulers[0])
        out(f"calibration: the generator's timers ran {lag:.0f} ms late: VRRP adverts every {SLOW_ADVERT_MS} ms"
            f" instead of 100 (the backup takes over after ~{3.6 * SLOW_ADVERT_MS / 1000:.1f} s of silence),"
            " so that a stalled VM does not fail over on its own")

    async def calibrate_load(self):
        """Probes with a small load, then with the full one; scales the counts
        down if the full load starves the generator; sets the work per request."""
        a = self.a
        small = await self.probe(min(a.sensors, PROBE_SENSORS), min(a.web_users, PROBE_WEB), 1.0, idle_s=2.0)
        small["sensor_work_ms"] = round(1000 * self.work["sensor_work"], 1)
        out(f"calibration: {small['opened']} sensors connected through the VIP in {small['open_s']:.1f} s;"
            f" {small['requests']} requests in {small['seconds']:.0f} s took the VM from"
            f" {100 * small['idle_busy']:.0f}% to {100 * small['busy']:.0f}% busy; a sensor reading modelled"
            f" at {small['sensor_work_ms']:.0f} ms took {fmt_ms(small['sensor_rt_median_ms'])} (median);"
            f" generator timer lag {fmt_ms(small['gen_lag_ms'])}")
        cal = dict(small=small, scale=1.0)
        await self.fit_adverts(small)
        cal["advert_ms"] = self.advert_ms
        why = self.starved(small)
        if why:
            # nothing smaller to fall back on: the self-check reports a run this slow
            log(f"calibration: the VM is short even for the probe's load ({why}); keeping the counts asked for")
            cal["why"] = why
            return cal
        asked = (a.sensors, a.web_users)
        cal["probes"] = []
        carried = small["sensors"]  # the most sensors the VM was seen to carry
        for _ in range(MAX_PROBES):
            if a.sensors <= carried:
                break
            p = await self.probe(a.sensors, a.web_users, max(3.0, min(a.ramp, 10.0)))
            cal["probes"].append(p)
            why = self.starved(p)
            out(f"calibration: {a.sensors} sensors and {a.web_users} web users: {p['opened']} connected in"
                f" {p['open_s']:.1f} s, {p['requests']} requests in {p['seconds']:.0f} s, generator timer lag"
                f" {fmt_ms(p['gen_lag_ms'])}" + (f": too much ({why})" if why else ": carried"))
            if not why:
                break
            cal["why"] = why
            # Starved, the VM answers about what it can: aim at a margin below
            # that; and at most halfway (geometrically) to what it carried, as a
            # choked VM may answer nothing at all.
            cap = p["requests"] / max(1e-3, p["seconds"])
            by_cap = a.sensors * MARGIN * cap / request_rate(a.sensors, a.web_users, a.web_idle)
            mid = math.sqrt(carried * a.sensors)
            n = max(carried, math.floor(mid if by_cap < carried else min(by_cap, mid)))
            a.web_users = max(small["web_users"], math.floor(asked[1] * n / asked[0]))
            a.sensors = n
        if (a.sensors, a.web_users) != asked:
            cal.update(asked=dict(sensors=asked[0], web_users=asked[1]),
                       scale=round(a.sensors / asked[0], 3))
            out(f"calibration: this VM cannot carry {asked[0]} sensors and {asked[1]} web users"
                f" ({cal['why']}): scaled down to {a.sensors} sensors and {a.web_users} web users; the work"
                f" per request grows so the cluster load stays at {a.util:.0%}")
        self.work = self.work_for(a.sensors, a.web_users)
        want = {"sensor_work": self.work["sensor_work"], "web_work": self.work["web_work"]}
        self.srv_cmd({"work": want})
        end = time.time() + 10  # lab-serve reports the work in force every second
        while (self.srv_stats or {}).get("work") != want:
            if time.time() > end:
                raise LabError(f"lab-serve did not take the calibrated work {want}: {self.srv_stats}")
            await asyncio.sleep(0.2)
        return cal
