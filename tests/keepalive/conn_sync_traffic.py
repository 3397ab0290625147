#!/usr/bin/env python3
"""Traffic for tests/vm/keepalive-conn-sync.sh, all in one process (every exec
is slow in the emulated VM): echo servers in the real-server namespaces, N
long-lived client connections through the VIP from the client namespace, and
new connections at the end.

    conn_sync_traffic.py --client NS --server NS:ADDR:PORT [--server ...]
        --vip ADDR --port PORT --conns N --interval S --deadline S --dir DIR

Files in DIR (the test script drives the phases through them):
  ready      written once every connection has done 20 round trips
  killed     written by the test: "T0 T1", wall-clock ms just before and
             just after the failure was made
  status     rewritten every 50 ms: "conns=N failed=F recovered=R echoes=E1,E2,..."
             (recovered = connections with 5 round trips completed after T1)
  stop       written by the test: stop the long-lived traffic, try new
             connections, print a JSON summary on stdout and exit
Exit status 0 = every long-lived connection kept working and every new
connection was served, 1 otherwise. Every wait is bounded by --deadline.
"""
import argparse
import ctypes
import json
import os
import selectors
import socket
import threading
import time

CLONE_NEWNET = 0x40000000
libc = ctypes.CDLL(None, use_errno=True)


def enter(ns):
    """Move the calling thread into network namespace NS (ip netns name)."""
    fd = os.open(f"/run/netns/{ns}", os.O_RDONLY)
    try:
        if libc.setns(fd, CLONE_NEWNET) != 0:
            e = ctypes.get_errno()
            raise OSError(e, f"setns {ns}: {os.strerror(e)}")
    finally:
        os.close(fd)


def now_ms():
    return time.time() * 1000.0


def echo_server(listeners, stop):
    """Echo lines back; greet each connection with 'rs ADDR' so the client
    knows which real server it reached."""
    sel = selectors.DefaultSelector()
    for ls, addr in listeners:
        ls.setblocking(False)
        sel.register(ls, selectors.EVENT_READ, ("listen", addr))
    while not stop.is_set():
        for key, _ in sel.select(0.2):
            kind, addr = key.data
            if kind == "listen":
                try:
                    c, _ = key.fileobj.accept()
                except BlockingIOError:
                    continue
                c.setblocking(True)
                c.settimeout(2)
                try:
                    c.sendall(b"rs %s\n" % addr.encode())
                except OSError:
                    c.close()
                    continue
                c.setblocking(False)
                sel.register(c, selectors.EVENT_READ, ("conn", addr))
            else:
                c = key.fileobj
                try:
                    data = c.recv(65536)
                except BlockingIOError:
                    continue
                except OSError:
                    data = b""
                if not data:
                    sel.unregister(c)
                    c.close()
                    continue
                c.setblocking(True)
                c.settimeout(2)
                try:
                    c.sendall(data)
                except OSError:
                    sel.unregister(c)
                    c.close()
                    continue
                c.setblocking(False)


class Reader:
    """Line reader over a socket with a short timeout, bounded by `until`."""

    def __init__(self, s):
        self.s = s
        self.buf = b""

    def line(self, until, stop=None):
        while b"\n" not in self.buf:
            if time.time() > until or (stop is not None and stop.is_set()):
                raise TimeoutError("no answer")
            try:
                chunk = self.s.recv(4096)
            except socket.timeout:
                continue
            if not chunk:
                raise ConnectionError("connection closed by peer")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return line.decode()


class Conn:
    def __init__(self, i, s, rs):
        self.i, self.s, self.rs = i, s, rs
        self.reader = None
        self.n = 0
        self.done = []  # completion times (ms) of round trips
        self.error = None


def run_conn(c, interval, deadline, stop):
    try:
        while not stop.is_set():
            msg = "conn %d line %d" % (c.i, c.n)
            c.s.sendall(msg.encode() + b"\n")
            got = c.reader.line(deadline, stop)
            if got != msg:
                raise ValueError("bad echo %r for %r" % (got, msg))
            c.done.append(now_ms())
            c.n += 1
            time.sleep(interval)
    except TimeoutError:
        if not stop.is_set():
            c.error = "no answer before the deadline"
    except Exception as e:  # noqa: BLE001 - any failure ends this connection
        c.error = "%s: %s" % (type(e).__name__, e)


def connect(vip, port, timeout):
    s = socket.create_connection((vip, port), timeout=timeout)
    s.settimeout(0.2)
    r = Reader(s)
    rs = r.line(time.time() + timeout).split()[1]
    return s, r, rs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--client", required=True)
    ap.add_argument("--server", action="append", required=True)
    ap.add_argument("--vip", required=True)
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--conns", type=int, default=8)
    ap.add_argument("--new-conns", type=int, default=4)
    ap.add_argument("--interval", type=float, default=0.05)
    ap.add_argument("--deadline", type=float, default=120)
    ap.add_argument("--dir", required=True)
    a = ap.parse_args()
    deadline = time.time() + a.deadline
    path = lambda name: os.path.join(a.dir, name)  # noqa: E731
    stop_servers = threading.Event()
    stop_conns = threading.Event()

    listeners = []
    for spec in a.server:
        ns, addr, port = spec.split(":")
        enter(ns)
        ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        ls.bind((addr, int(port)))
        ls.listen(64)
        listeners.append((ls, addr))
    enter(a.client)
    srv = threading.Thread(target=echo_server, args=(listeners, stop_servers), daemon=True)
    srv.start()

    conns = []
    for i in range(a.conns):
        s, r, rs = connect(a.vip, a.port, 5)
        c = Conn(i, s, rs)
        c.reader = r
        conns.append(c)
    threads = [threading.Thread(target=run_conn, args=(c, a.interval, deadline, stop_conns), daemon=True) for c in conns]
    for t in threads:
        t.start()

    ready = False
    kill_ms = cut_ms = None
    while time.time() < deadline:
        failed = sum(1 for c in conns if c.error)
        if not ready and all(c.n >= 20 for c in conns):
            with open(path("ready"), "w") as f:
                f.write("ready\n")
            ready = True
        if kill_ms is None and os.path.exists(path("killed")):
            with open(path("killed")) as f:
                txt = f.read().strip()
            if txt:
                kill_ms, cut_ms = (float(x) for x in txt.split())
        recovered = 0
        if kill_ms is not None:
            recovered = sum(1 for c in conns if sum(1 for t in c.done if t > cut_ms) >= 5)
        with open(path("status.tmp"), "w") as f:
            # the echo counts say, on a timeout, which connections were stuck
            f.write("conns=%d failed=%d recovered=%d echoes=%s\n"
                    % (len(conns), failed, recovered, ",".join(str(c.n) for c in conns)))
        os.replace(path("status.tmp"), path("status"))
        if os.path.exists(path("stop")):
            break
        time.sleep(0.05)
    stop_conns.set()
    for t in threads:
        t.join(max(0.1, min(5, deadline - time.time())))

    # New connections, served by whoever holds the VIP now.
    new = []
    for i in range(a.new_conns):
        t0 = now_ms()
        try:
            s, r, rs = connect(a.vip, a.port, 3)
            s.sendall(b"new %d\n" % i)
            ok = r.line(time.time() + 3) == "new %d" % i
            s.close()
            new.append({"rs": rs, "ok": ok, "ms": round(now_ms() - t0, 1)})
        except Exception as e:  # noqa: BLE001
            new.append({"ok": False, "error": "%s: %s" % (type(e).__name__, e)})
    stop_servers.set()

    a_interval_ms = a.interval * 1000
    out = {"conns": [], "new": new}
    for c in conns:
        d = {"i": c.i, "rs": c.rs, "round_trips": c.n, "error": c.error}
        if kill_ms is not None:
            d["after_kill"] = sum(1 for t in c.done if t > cut_ms)
            # pauses between answers (ms, wall clock) from a little before the
            # failure on: the test picks the one the takeover falls into
            d["gaps"] = [
                [round(a, 1), round(b, 1)]
                for a, b in zip(c.done, c.done[1:])
                if b - a > 3 * a_interval_ms and kill_ms - 1000 < b < cut_ms + 10000
            ]
        out["conns"].append(d)
    print(json.dumps(out), flush=True)
    good = all(c.error is None for c in conns) and all(n["ok"] for n in new)
    if kill_ms is not None:
        good = good and all(sum(1 for t in c.done if t > cut_ms) >= 5 for c in conns)
    os._exit(0 if good else 1)


if __name__ == "__main__":
    main()
