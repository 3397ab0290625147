#!/usr/bin/env python3
"""The lab's servers: every VM's service in one asyncio process.

    labsrv.py CONFIG.json

For each VM of the config the process creates its listening socket inside
the VM's network namespace (setns around socket creation; the socket keeps
its namespace), so one process serves all 20 VMs without an exec per VM:

  sensor VMs (port 9000): an ingest server; each line "R <id> <seq> <value>"
      is processed (host work, below) and answered "OK <seq>".
  web VMs (port 80): a small HTTP/1.1 server with keep-alive; GET /ping is
      answered at once, any other path after host work, with a ~300-byte body.

Host contention (the model): every physical host is one processor-sharing
(PS) server with a capacity (1.0 for a normal host, more for a fast one). A
request brings an amount of work (seconds of one normal CPU); while n
requests of the VMs on that host are in service, each progresses at
capacity/n. So a request's response time is its work divided by the share
of the host it gets: it grows with the aggregate load of *all* VMs on the
host, whatever service they serve. Time is real time: the process sleeps
the computed delays, it does not burn CPU.

Every second a JSON line on stdout: {"t": wall, "busy": {host: s}, "area":
{host: job-s}, "n": {host: jobs now}, "done": {host: requests}} with
cumulative busy time (>= 1 request in service) and job-seconds (integral of
n) per host. Stops on SIGTERM or when stdin closes.
"""
import asyncio
import json
import os
import random
import signal
import socket
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests", "py"))
from netns import netns  # noqa: E402

def listen_in(ns, addr, port):
    """A listening TCP socket bound to ADDR:PORT in network namespace NS."""
    with netns(ns):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind((addr, port))
        s.listen(1024)
        s.setblocking(False)
        return s


class Host:
    """One physical host as an egalitarian processor-sharing server."""

    def __init__(self, name, capacity):
        self.name, self.cap = name, capacity
        self.jobs = {}  # future -> remaining work (s of a normal CPU)
        self.last = time.monotonic()
        self.busy = 0.0  # s with at least one job in service
        self.area = 0.0  # integral of the number of jobs (job-s)
        self.done = 0
        self.timer = None

    def _advance(self):
        t = time.monotonic()
        dt, self.last = t - self.last, t
        n = len(self.jobs)
        if n and dt > 0:
            self.busy += dt
            self.area += n * dt
            step = dt * self.cap / n
            for f in self.jobs:
                self.jobs[f] -= step

    def _schedule(self):
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        if self.jobs:
            n = len(self.jobs)
            delay = max(0.0, min(self.jobs.values()) * n / self.cap)
            self.timer = asyncio.get_running_loop().call_later(delay, self._fire)

    def _fire(self):
        self.timer = None
        self._advance()
        for f in [f for f, r in self.jobs.items() if r <= 1e-6]:
            del self.jobs[f]
            self.done += 1
            if not f.done():
                f.set_result(None)
        self._schedule()

    async def work(self, amount):
        if amount <= 0:
            return
        self._advance()
        f = asyncio.get_running_loop().create_future()
        self.jobs[f] = amount
        self._schedule()
        try:
            await f
        finally:
            if f in self.jobs:  # cancelled (connection gone): leave the host
                self._advance()
                del self.jobs[f]
                self._schedule()


def jitter(w):
    return w * random.uniform(0.5, 1.5)


async def sensor_conn(host, cfg, reader, writer):
    try:
        while True:
            line = await reader.readline()
            if not line:
                break
            parts = line.split()
            if len(parts) < 3 or parts[0] != b"R":
                break
            await host.work(jitter(cfg["sensor_work"]))
            writer.write(b"OK " + parts[2] + b"\n")
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        writer.close()


BODY = (b"<html><body><h1>dashboard</h1>" + b"<p>sensor 42: 21.5 C</p>" * 10 + b"</body></html>\n")


async def web_conn(host, cfg, vm, reader, writer):
    try:
        while True:
            try:
                head = await reader.readuntil(b"\r\n\r\n")
            except asyncio.IncompleteReadError:
                break
            req = head.split(b"\r\n", 1)[0].split()
            if len(req) < 2 or req[0] != b"GET":
                writer.write(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                break
            if req[1] != b"/ping":
                await host.work(jitter(cfg["web_work"]))
            body = BODY if req[1] != b"/ping" else b"pong\n"
            close = b"connection: close" in head.lower()
            writer.write(b"HTTP/1.1 200 OK\r\nServer: lab-%s\r\nContent-Type: text/html\r\n"
                         b"Content-Length: %d\r\n%s\r\n" % (vm.encode(), len(body),
                                                             b"Connection: close\r\n" if close else b"")
                         + body)
            await writer.drain()
            if close:
                break
    except (ConnectionError, OSError, asyncio.LimitOverrunError):
        pass
    finally:
        writer.close()


async def main():
    cfg = json.load(open(sys.argv[1]))
    hosts = {h["name"]: Host(h["name"], h["capacity"]) for h in cfg["hosts"]}
    servers = []
    for vm in cfg["vms"]:
        host = hosts[vm["host"]]
        if vm["service"] == "sensor":
            s = listen_in(vm["ns"], vm["addr"], cfg["sensor_port"])
            cb = (lambda h: lambda r, w: sensor_conn(h, cfg, r, w))(host)
        else:
            s = listen_in(vm["ns"], vm["addr"], cfg["web_port"])
            cb = (lambda h, n: lambda r, w: web_conn(h, cfg, n, r, w))(host, vm["name"])
        servers.append(await asyncio.start_server(cb, sock=s, backlog=1024))
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    loop.add_signal_handler(signal.SIGINT, stop.set)
    loop.add_reader(sys.stdin.fileno(), lambda: (os.read(sys.stdin.fileno(), 4096) or stop.set()))
    print(json.dumps({"ready": len(servers)}), flush=True)
    while not stop.is_set():
        for h in hosts.values():
            h._advance()
        print(json.dumps({
            "t": time.time(),
            "busy": {n: round(h.busy, 4) for n, h in hosts.items()},
            "area": {n: round(h.area, 4) for n, h in hosts.items()},
            "n": {n: len(h.jobs) for n, h in hosts.items()},
            "done": {n: h.done for n, h in hosts.items()},
        }), flush=True)
        try:
            await asyncio.wait_for(stop.wait(), 1.0)
        except asyncio.TimeoutError:
            pass
    for s in servers:
        s.close()


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except BrokenPipeError:
        pass
