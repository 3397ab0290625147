"""The active-active lab's steps: balance with one director and with all,
a cluster change through etcd, a director killed and rejoining, a drain,
etcd stopped and back. Each step fills self.res[step]."""
import asyncio
import json
import os
import sys
import signal
import subprocess
import time
import urllib.request

from netns import netns
from .aa_net import CANARY_PORT, JOIN_HOLD_MS, VIP, ipvs_conns_scheduled, ipvs_table, ns_dir, ports, rebuild_director
from .base import HNAMES, KEEPALIVE, SENSOR_PERIOD, WEB_PORT, WEIGHT, LabError, out, speed_factor
from .stats import imbalance, mean

# The documented sync delay: an entry is sent when the connection is
# established, and the master's partial buffer goes out within 2 s.
SYNC_DELAY_S = 2.5
PROBE_EVERY_S = 0.05
PROBE_CONNECT_S = 3.0  # a probe that needed a SYN retransmission fails anyway (prober.py)
PROBER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "prober.py")


class StepsMixin:
    # ---- helpers
    async def until(self, secs, cond, what):
        """Wait until COND() (a value or a coroutine) holds; the time it did."""
        end = time.time() + secs
        while True:
            v = cond()
            if asyncio.iscoroutine(v):
                v = await v
            if v:
                return time.time()
            if time.time() > end:
                raise LabError(f"not within {secs} s: {what}; route: {self.route_text()}\n"
                               + "\n".join(f"--- d{i}\n{self.tail(f'd{i}', 800)}" for i in self.ka))
            await asyncio.sleep(0.05)

    def err_mark(self):
        return self.errors["sensor"], len(self.web_errors)

    def errs_since(self, mark):
        """Client errors since MARK: sensor errors, web sessions lost because
        they were younger than the sync delay when the route changed (their
        entry had not reached the director their flow moved to: the
        documented cost), and any other web error (with its session's age
        at the last route change before it, and the error)."""
        young, other = 0, []
        for s, err, t in self.web_errors[mark[1]:]:
            opened = self.web_open.get(s, 0.0)
            if any(c - SYNC_DELAY_S < opened <= c <= t for c in self.route_changes):
                young += 1
            else:
                last = max((c for c in self.route_changes if c <= t), default=None)
                other.append((round(last - opened, 2) if last else None, err))
        return dict(sensor=self.errors["sensor"] - mark[0], web=len(other), web_young_at_route_change=young,
                    web_other=other[:3])

    async def watch_routes(self):
        """Every change of the router's route to the VIP, timestamped by
        `ip monitor` as it happens (the polls in the steps lag it)."""
        p = await asyncio.create_subprocess_exec("ip", "-n", "lab-rt", "-ts", "monitor", "route",
                                                 stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        try:
            while True:
                line = await p.stdout.readline()
                if not line:
                    return
                t = route_change_after(line.decode(errors="replace"), 0.0)
                if t is not None:
                    self.route_changes.append(t)
        finally:
            if p.returncode is None:
                p.kill()
                await p.wait()

    async def route_is(self, pred):
        return pred(await self.route_via_async())

    def keepalive_cmd(self, i, verb):
        r = subprocess.run(["ip", "netns", "exec", ns_dir(i), KEEPALIVE, verb, "--pid-file", self.pidfile(i)],
                           capture_output=True, text=True, timeout=30)
        if r.returncode != 0:
            raise LabError(f"keepalive {verb} on d{i} failed ({r.returncode}): {r.stderr.strip()}")

    def metric(self, i, name):
        """A keepalive gauge of director I (None: unreadable)."""
        try:
            with netns(ns_dir(i)):
                text = urllib.request.urlopen("http://127.0.0.1:9650/metrics", timeout=2).read().decode()
        except OSError:
            return None
        for line in text.splitlines():
            if line.startswith(name + " ") or line.startswith(name + "{"):
                return float(line.split()[-1])
        return None

    async def probing(self, secs, results, started=None):
        """New connections to the VIP every PROBE_EVERY_S for SECS seconds,
        from a process of their own (tuples (start, ok, error) appended to
        RESULTS); STARTED (an Event) is set once the prober runs."""
        p = await asyncio.create_subprocess_exec(
            "ip", "netns", "exec", "lab-cl", sys.executable, PROBER, self.vip, str(WEB_PORT), str(secs),
            str(PROBE_EVERY_S), str(PROBE_CONNECT_S), stdout=subprocess.PIPE)
        try:
            while True:
                line = await asyncio.wait_for(p.stdout.readline(), secs + 60)
                if not line:
                    break
                x = json.loads(line)
                if x.get("ready"):
                    if started is not None:
                        started.set()
                    continue
                results.append((x["t"], x["ok"], x["err"]))
        finally:
            if p.returncode is None:
                p.kill()
            await p.wait()
        if started is not None and not started.is_set():
            started.set()
            raise LabError("the prober did not start")

    async def started_probing(self, secs, results):
        """probing() as a task, once its process runs."""
        ev = asyncio.Event()
        task = asyncio.create_task(self.probing(secs, results, ev))
        await ev.wait()
        return task

    async def survivors(self, snap, since):
        """Sensors of SNAP answered for a reading sent after SINCE (waits one
        period and a margin for the last ones): (kept, lost)."""
        end = time.time() + SENSOR_PERIOD + 8
        while time.time() < end:
            if all(self.sensors[i]["gen"] == g and self.sensors[i]["last_ok_sent"] > since for i, g in snap.items()):
                break
            await asyncio.sleep(0.2)
        kept = [i for i, g in snap.items() if self.sensors[i]["gen"] == g and self.sensors[i]["last_ok_sent"] > since]
        return kept, [i for i in snap if i not in kept]

    @staticmethod
    def pids_in(ns):
        """Processes in network namespace NS (what `ip netns pids` does, without an exec)."""
        want = os.stat(f"/run/netns/{ns}").st_ino
        res = []
        for p in os.listdir("/proc"):
            if p.isdigit():
                try:
                    if os.stat(f"/proc/{p}/ns/net").st_ino == want:
                        res.append(p)
                except OSError:
                    pass
        return res

    def scheduled(self):
        return {i: ipvs_conns_scheduled(p.pid) for i, p in self.ka.items() if p.poll() is None}

    # ---- 1. balance
    async def measure(self, label, c0):
        """Mean over the window of max/mean weighted open connections per host;
        C0: the directors' scheduled-connection counters before the clients started."""
        ims, loads = [], {h: [] for h in HNAMES}
        end = time.time() + self.a.measure
        while time.time() < end:
            conns = (self.srv_stats or {}).get("conns") or {}
            w = {h: conns.get(h, 0) / WEIGHT[h] for h in HNAMES}
            im = imbalance(list(w.values()))
            if im:
                ims.append(im)
                for h in HNAMES:
                    loads[h].append(w[h])
            await asyncio.sleep(1.0)
        c1 = self.scheduled()
        # Synced connections count in the receiving director's destination
        # counters: each director's sum of active connections against the
        # servers' own count of open connections.
        active = {f"d{i}": sum(a for dests in ipvs_table(p.pid).values() for a, _ in dests.values())
                  for i, p in self.ka.items() if p.poll() is None}
        r = dict(imbalance=round(mean(ims), 3) if ims else None, samples=len(ims),
                 active_per_director=active,
                 servers_open=sum(((self.srv_stats or {}).get("conns") or {}).values()),
                 host_wload={h: round(mean(v), 1) for h, v in loads.items()},
                 scheduled_by={f"d{i}": c1[i] - c0.get(i, 0) for i in c1})
        out(f"== {label}: host imbalance (max/mean of open connections / host weight) {r['imbalance']}"
            f" over {r['samples']} s; connections each director scheduled in the phase {r['scheduled_by']};"
            " active connections in"
            f" each director's counters {r['active_per_director']}, open at the servers {r['servers_open']}")
        return r

    async def balance(self):
        others = range(2, self.n + 1)
        for i in others:
            self.keepalive_cmd(i, "drain")
        await self.until(30, lambda: self.route_is(lambda v: v == {1}), "the route through d1 only")
        c0 = self.scheduled()
        await self.start_clients()
        one = await self.measure("one director (the others drained)", c0)
        await self.stop_clients()
        await self.until(60, lambda: sum(((self.srv_stats or {}).get("conns") or {"x": 1}).values()) == 0,
                         "the servers' connections closed")
        for i in others:
            self.keepalive_cmd(i, "resume")
        await self.until(30, lambda: self.route_is(lambda v: v == set(range(1, self.n + 1))), "the route through all")
        c0 = self.scheduled()
        await self.start_clients()
        many = await self.measure(f"{self.n} directors (ECMP)", c0)
        ratio = many["imbalance"] / one["imbalance"] if one["imbalance"] and many["imbalance"] else None
        self.res["balance"] = dict(one=one, many=many, ratio=round(ratio, 3) if ratio else None)
        out(f"== balance: {self.n} directors / one director = {self.res['balance']['ratio']}")

    # ---- 2. a changed cluster file
    async def converge(self, canary):
        """Store the file (canary service or not) and wait until every
        director runs it: ms from the write, per director, client errors
        meanwhile."""
        errs = self.err_mark()
        t, ack = await self.put_timed(canary)
        out(f"   cluster file written at {time.strftime('%H:%M:%S', time.gmtime(t))}.{int(t % 1 * 1000):03d}"
            f" (UTC), etcd acknowledged it after {round(1000 * (ack - t))} ms")
        done = {}
        end = t + 60
        while len(done) < self.n and time.time() < end:
            for i in range(1, self.n + 1):
                if i not in done and self.applied(i, canary):
                    done[i] = time.time()
            await asyncio.sleep(0.02)
        if len(done) < self.n:
            raise LabError(f"the changed cluster file did not reach every director in 60 s: {sorted(done)}")
        return dict(converged_ms=round(1000 * (max(done.values()) - t)), put_ack_ms=round(1000 * (ack - t)),
                    after_ack_ms=round(1000 * (max(done.values()) - ack)),
                    each_ms={f"d{i}": round(1000 * (x - t)) for i, x in sorted(done.items())},
                    client_errors=self.errs_since(errs))

    async def etcd_change(self):
        speed = speed_factor()
        self.res["etcd"] = r = await self.converge(canary=True)
        r.update(speed_ms=speed[0], speed_factor=speed[1])
        out(f"== etcd: a changed cluster file (a service added) applied by every director {r['converged_ms']} ms"
            f" after the write ({r['each_ms']}), {r['after_ack_ms']} ms after etcd acknowledged it"
            f" ({r['put_ack_ms']} ms); client errors meanwhile {r['client_errors']}")

    # ---- 3. a director killed, then back
    async def kill_and_rejoin(self, victim=2):
        speed = speed_factor()
        cut = await asyncio.create_subprocess_exec("ip", "-n", "lab-br", "-batch", "-", stdin=subprocess.PIPE,
                                                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        await asyncio.sleep(0.5)  # `ip` started, waiting for its input
        mon = await asyncio.create_subprocess_exec("ip", "-n", "lab-rt", "-ts", "monitor", "route",
                                                   stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        probes = []
        pr = await self.started_probing(8.0, probes)
        await asyncio.sleep(1.0)
        errs = self.err_mark()
        t0 = time.time()
        snap = {i: x["gen"] for i, x in self.open_sensors().items() if x["opened"] <= t0 - SYNC_DELAY_S}
        young = sum(1 for x in self.open_sensors().values() if x["opened"] > t0 - SYNC_DELAY_S)
        # without warning: the links go first (no goodbye reaches the
        # router), then every process of the director is SIGKILLed
        p, q = ports(victim)
        cut.stdin.write(f"link set {p} down\nlink set {q} down\n".encode())
        cut.stdin.close()
        self.killed = {victim: True}
        for p in self.pids_in(ns_dir(victim)):
            try:
                os.kill(int(p), signal.SIGKILL)
            except (OSError, ValueError):
                pass
        await asyncio.wait_for(cut.wait(), 30)
        t1 = time.time()
        self.ka[victim].wait()
        await self.until(15, lambda: self.route_is(lambda v: victim not in v), "the router dropped the dead director")
        await asyncio.sleep(0.5)
        mon.terminate()
        gone = route_change_after((await mon.communicate())[0].decode(), t0)
        await pr
        kept, lost = await self.survivors(snap, t1)
        after = sorted(p for p in probes if p[0] >= t0)
        bad = [k for k, p in enumerate(after) if not p[1]]
        first = after[bad[-1] + 1][0] if bad and bad[-1] + 1 < len(after) else (after[0][0] if after and not bad
                                                                                  else None)
        r = dict(victim=f"d{victim}", established=len(snap), young=young, kept=len(kept), lost=len(lost),
                 lost_errors=[self.sensors[i]["err"] for i in lost][:5], cut_ms=round(1000 * (t1 - t0)),
                 route_gone_ms=round(1000 * (gone - t0)) if gone else None,
                 first_new_ms=round(1000 * (first - t0)) if first else None,
                 probes=len(after), probes_failed=len(bad), probe_errors=[after[k][2] for k in bad][:3],
                 client_errors=self.errs_since(errs), speed_ms=speed[0], speed_factor=speed[1])
        out(f"== kill d{victim}: {r['established']} connections established > {SYNC_DELAY_S} s: {r['kept']} kept,"
            f" {r['lost']} lost; route withdrawn after {r['route_gone_ms']} ms; new connections all succeed"
            f" from {r['first_new_ms']} ms ({r['probes_failed']} of {r['probes']} probes failed before)")
        # back: a fresh namespace, keepalive waits for the sync mesh before it announces
        rebuild_director(self.tmp, victim)
        self.killed = {}
        try:
            os.unlink(self.pidfile(victim))
        except OSError:
            pass
        errs = self.err_mark()
        tb = time.time()
        self.start_director(victim, hold_ms=JOIN_HOLD_MS)
        back = await self.until(60 + JOIN_HOLD_MS / 1000, lambda: self.route_is(lambda v: victim in v),
                                "the director announced again")
        snap = {i: x["gen"] for i, x in self.open_sensors().items()}
        kept2, lost2 = await self.survivors(snap, back)
        r.update(rejoin_ms=round(1000 * (back - tb)), rejoin_open=len(snap), rejoin_kept=len(kept2),
                 rejoin_lost=len(lost2), rejoin_lost_errors=[self.sensors[i]["err"] for i in lost2][:5],
                 rejoin_client_errors=self.errs_since(errs))
        self.res["kill"] = r
        out(f"== rejoin d{victim}: announced {r['rejoin_ms']} ms after its start; of {len(snap)} open connections"
            f" {len(kept2)} kept, {len(lost2)} lost; client errors {r['rejoin_client_errors']}")

    # ---- 4. drain
    async def drain(self, i=3):
        i = min(i, self.n)
        errs = self.err_mark()
        self.keepalive_cmd(i, "drain")
        t = time.time()
        gone = await self.until(15, lambda: self.route_is(lambda v: i not in v), "the drained director's route withdrawn")
        snap = {k: x["gen"] for k, x in self.open_sensors().items()}
        await asyncio.sleep(1.0)  # the router's last frames to it
        c0 = ipvs_conns_scheduled(self.ka[i].pid)
        route = self.route_text()
        probes = []
        await self.probing(3.0, probes)
        kept, lost = await self.survivors(snap, gone)
        c1 = ipvs_conns_scheduled(self.ka[i].pid)
        drained = self.metric(i, "keepalive_bgp_drained")
        self.keepalive_cmd(i, "resume")
        back = await self.until(15, lambda: self.route_is(lambda v: i in v), "the resumed director's route")
        self.res["drain"] = r = dict(director=f"d{i}", withdrawn_ms=round(1000 * (gone - t)), open=len(snap),
                                     kept=len(kept), lost=len(lost), new_on_drained=c1 - c0, probes=len(probes),
                                     probes_failed=sum(1 for p in probes if not p[1]),
                                     probe_errors=[p[2] for p in probes if not p[1]][:3], route=route,
                                     drained_metric=drained, resumed_ms=round(1000 * (time.time() - back)),
                                     client_errors=self.errs_since(errs))
        out(f"== drain d{i}: route withdrawn after {r['withdrawn_ms']} ms; {r['kept']}/{r['open']} connections"
            f" kept; new connections it took {r['new_on_drained']}; probes failed {r['probes_failed']}/"
            f"{r['probes']} {r['probe_errors']}; route {r['route']!r}; resumed")

    # ---- 5. etcd stopped, then back
    async def etcd_outage(self):
        errs = self.err_mark()
        self.stop_etcd()
        t = time.time()
        await self.until(60, lambda: all(self.metric(i, "keepalive_cluster_source_connected") == 0
                                         for i in range(1, self.n + 1)), "every director reports etcd lost")
        seen = time.time()
        probes = []
        await self.probing(3.0, probes)
        self.start_etcd()
        c = await self.converge(canary=False)
        ms, each = c["converged_ms"], c["each_ms"]
        await self.until(30, lambda: all(self.metric(i, "keepalive_cluster_source_connected") == 1
                                         for i in range(1, self.n + 1)), "every director reports etcd back")
        self.res["etcd"].update(outage_reported_ms=round(1000 * (seen - t)), outage_probes=len(probes),
                                outage_probes_failed=sum(1 for p in probes if not p[1]), after_outage_converged_ms=ms,
                                after_outage_each_ms=each,
                                outage_client_errors=self.errs_since(errs))
        out(f"== etcd stopped: every director reported it after {round(1000 * (seen - t))} ms and kept serving"
            f" ({len(probes) - self.res['etcd']['outage_probes_failed']}/{len(probes)} new connections);"
            f" back: the next change applied everywhere in {ms} ms")

    def table(self):
        r = self.res
        b, k, d, e = r["balance"], r["kill"], r["drain"], r["etcd"]
        hs = " ".join(f"{h:>6}" for h in HNAMES)
        rows = [f"Active-active lab: {self.n} directors behind ECMP (BGP + BFD), sync mesh, cluster in etcd",
                f"  host load (open connections / weight)   {hs}   max/mean",
                "  one director                            " + " ".join(
                    f"{b['one']['host_wload'][h]:6.1f}" for h in HNAMES) + f"   {b['one']['imbalance']}",
                f"  {self.n} directors                             " + " ".join(
                    f"{b['many']['host_wload'][h]:6.1f}" for h in HNAMES) + f"   {b['many']['imbalance']}",
                f"  ratio {b['ratio']}  (connections each director scheduled: {b['many']['scheduled_by']})",
                f"  kill {k['victim']}: established {k['established']} kept {k['kept']} lost {k['lost']};"
                f" route gone {k['route_gone_ms']} ms; new connections OK from {k['first_new_ms']} ms",
                f"  rejoin: announced after {k['rejoin_ms']} ms (hold {JOIN_HOLD_MS} ms); {k['rejoin_kept']}/"
                f"{k['rejoin_open']} connections kept",
                f"  drain {d['director']}: {d['kept']}/{d['open']} kept, {d['new_on_drained']} new on it,"
                f" {d['probes_failed']}/{d['probes']} probes failed",
                f"  etcd: change applied everywhere in {e['converged_ms']} ms; outage reported in"
                f" {e['outage_reported_ms']} ms, {e['outage_probes_failed']}/{e['outage_probes']} probes failed;"
                f" caught up in {e['after_outage_converged_ms']} ms",
                f"  (canary service port {CANARY_PORT}; sync delay assumed {SYNC_DELAY_S} s; this VM ran the"
                f" reference work {e['speed_factor']}x / {k['speed_factor']}x slower than the reference VM"
                f" at the etcd / kill steps)"]
        return "\n".join(rows)


def route_change_after(text, t0):
    """Time of the first change of the VIP's route after T0 in `ip -ts monitor
    route` output (None: none seen)."""
    import datetime
    for line in text.splitlines():
        if line.startswith("[") and VIP in line:
            try:
                t = datetime.datetime.fromisoformat(line[1:line.index("]")]).timestamp()
            except ValueError:
                continue
            if t >= t0:
                return t
    return None
