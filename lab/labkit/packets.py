"""Packet-level failover timing: tcpdump and a SYN prober in the client namespace."""
import asyncio
import subprocess
import sys

from .base import NS_CL, VIP, WEB_PORT, LabError

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


# A process start takes seconds in a busy emulated VM (CI saw over 30 s).
START_BOUND_S = 120


async def bounded(aw, what):
    try:
        return await asyncio.wait_for(aw, START_BOUND_S)
    except asyncio.TimeoutError:
        raise LabError(f"waited {START_BOUND_S} s for {what}")


class PacketTiming:
    """tcpdump and the SYN prober in the client namespace (see SYN_PROBER)."""

    def __init__(self, mac, old_mac):
        self.mac, self.old_mac, self.lines, self.procs, self.reader = mac, old_mac, [], [], None

    async def start(self):
        await self.start_capture()
        await self.start_prober()

    async def start_capture(self):
        """tcpdump only: passive, so it may start while a phase is measured
        (under emulation its start takes tens of seconds)."""
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
            line = await bounded(cap.stderr.readline(), "tcpdump in the client namespace to start")
            seen.append(line.decode(errors="replace").strip())
            if not line:
                raise LabError(f"tcpdump in the client namespace did not start: {' / '.join(seen)}")
            if b"listening on" in line:
                break

    async def start_prober(self):
        """The SYN prober: it connects to the VIP every 20 ms, so only at the failover."""
        syn = await asyncio.create_subprocess_exec(
            "ip", "netns", "exec", NS_CL, sys.executable, "-c", SYN_PROBER, VIP, str(WEB_PORT),
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.procs.append(syn)
        if b"ready" not in await bounded(syn.stdout.readline(), "the SYN prober to start"):
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


