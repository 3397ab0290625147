"""The failover measurement: the active front end killed under load."""
import asyncio
import os
import signal
import subprocess
import time
from .base import FE, LabError, NS_BR, SENSOR_PERIOD, SENSOR_PORT, VIP, WEB_PORT, out, run, write
from .frontends import client_ports, fib_has, ka_masters_since, synced_established
from netns import netns
from .packets import PacketTiming


class FailoverMixin:
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
        timing, capture = self.early_capture or self.start_capture()
        self.early_capture = None
        try:
            await capture
            await timing.start_prober()
            return await self.measure_failover(res, timing)
        finally:
            await timing.stop()

    def start_capture(self):
        """(PacketTiming, the task starting its tcpdump). The lab calls this
        before the first phase, so that tcpdump is up by the failover."""
        mac1, mac2 = (run(["ip", "-n", FE[i], "-br", "link", "show", "eth0"]).split()[2] for i in (1, 2))
        timing = PacketTiming(mac2, mac1)
        return timing, asyncio.create_task(timing.start_capture())

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
            except Exception as e:  # noqa: BLE001
                probes.append((t, time.time(), False, repr(e)))
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
        # "New connections after": those started a second after the failover
        # settled - fe2 answering and fe1's links gone (until the cut is
        # through, the killed fe1 can still take a frame: a harness artefact,
        # a dead machine takes none). Probe for 3 s past that at least.
        settled = max(first or t1, t1)
        while first is not None and time.time() < settled + 3:
            await asyncio.sleep(0.2)
        probing = False
        await pt
        wk = [sid for sid in snap_w if sid in self.sessions and self.sessions[sid]["ok_after"] > t1]
        wl = [sid for sid in snap_w if sid in self.sessions and self.sessions[sid]["err"]]
        await asyncio.gather(*ptasks, return_exceptions=True)
        vw.cancel()
        await asyncio.gather(vw, return_exceptions=True)
        synack, garp, last_advert = await timing.first_after(t0)
        masters = ka_masters_since(os.path.join(self.tmp, "fe2.log"), t0)
        # A takeover before the kill: fe1's adverts came later than the
        # master-down interval (~3.6 advert intervals) - the VM stalled - and
        # what follows is not the kill's failover.
        early = {k: v for k, v in ka_masters_since(os.path.join(self.tmp, "fe2.log"), self.fe_up_t).items()
                 if v < t0}
        after = [p for p in probes if first is not None and p[0] >= settled + 1]
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
                   probes_after_errors=[p[3] for p in after if not p[2]][:5],
                   new_master_sync=synced_established(self.ka[2].pid, SENSOR_PORT))
        if early:
            res["error"] = (f"fe2 had taken over from fe1 before the kill ({', '.join(sorted(early))},"
                            f" {1000 * (t0 - min(early.values())):.0f} ms before it): fe1's VRRP adverts came late,"
                            " the VM stalled for longer than the master-down interval")
        self.failing = False
        return res

