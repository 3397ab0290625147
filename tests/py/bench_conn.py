#!/usr/bin/env python3
"""Connection throughput through IPVS (NAT) with each scheduler, side by side:
rounds of N short connections (connect, one request byte, close) alternate
between services using rr, wlc, vmwlc and vmwlch, so that every scheduler sees
the same machine state. Bounded in count and time. Run in the VM by
scripts/bench-conn.sh."""
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from ipvslab import Lab  # noqa: E402
from vmwlch_nl import Vmwlch  # noqa: E402

CLIENT = r"""
import socket, sys, time
for line in sys.stdin:
    host, port, n = line.split()
    t0 = time.perf_counter(); ok = 0
    for _ in range(int(n)):
        try:
            c = socket.create_connection((host, int(port)), timeout=5)
            c.sendall(b"x"); c.recv(1); c.close(); ok += 1
        except OSError:
            pass
    print(ok, time.perf_counter() - t0, flush=True)
"""

SERVER = r"""
import selectors, socket
sel = selectors.DefaultSelector()
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", 80)); s.listen(4096); s.setblocking(False)
sel.register(s, selectors.EVENT_READ, None)
print("ready", flush=True)
while True:
    for k, _ in sel.select():
        if k.data is None:
            c, _ = s.accept(); c.setblocking(False); sel.register(c, selectors.EVENT_READ, 1)
        else:
            c = k.fileobj
            try:
                d = c.recv(16)
                if d: c.send(b"y")
            except OSError:
                d = b""
            sel.unregister(c); c.close()
"""

SCHEDS = ["rr", "wlc", "vmwlc", "vmwlch"]
PORTS = {s: 8000 + i for i, s in enumerate(SCHEDS)}


def main():
    n_rs = 20
    addrs = [f"10.1.1.{i + 1}" for i in range(n_rs)]
    lab = Lab("bc", rs_addrs4=addrs, port=81)  # its own server on 81 is unused here
    srv = subprocess.Popen(["ip", "netns", "exec", lab.rs, sys.executable, "-c", SERVER],
                           stdout=subprocess.PIPE, text=True)
    assert srv.stdout.readline().strip() == "ready"
    lab.procs.append(srv)
    restore = ""
    for s, p in PORTS.items():
        restore += f"-A -t 10.0.0.1:{p} -s {s}\n"
        restore += "".join(f"-a -t 10.0.0.1:{p} -r {a}:80 -m\n" for a in addrs)
    subprocess.run(["ip", "netns", "exec", lab.lb, "ipvsadm", "-R"], input=restore, text=True, check=True)
    Vmwlch(lab.lb).replace({f"h{h}": (1 + h % 2, addrs[h * 4:(h + 1) * 4]) for h in range(5)})
    cli = subprocess.Popen(["ip", "netns", "exec", lab.cl, sys.executable, "-c", CLIENT],
                           stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    lab.procs.append(cli)
    rounds, per_round = int(os.environ.get("ROUNDS", "6")), int(os.environ.get("PER_ROUND", "300"))
    tot = {s: [0, 0.0] for s in SCHEDS}
    deadline = time.time() + 600
    for r in range(rounds):
        order = SCHEDS if r % 2 == 0 else SCHEDS[::-1]   # alternate to cancel drift
        for s in order:
            cli.stdin.write(f"10.0.0.1 {PORTS[s]} {per_round}\n")
            cli.stdin.flush()
            ok, secs = cli.stdout.readline().split()
            tot[s][0] += int(ok)
            tot[s][1] += float(secs)
        if time.time() > deadline:
            break
    base = tot["wlc"][0] / tot["wlc"][1]
    print(f"{'scheduler':<10} {'connections':>11} {'conn/s':>8} {'vs wlc':>7}")
    for s in SCHEDS:
        rate = tot[s][0] / tot[s][1]
        print(f"{s:<10} {tot[s][0]:>11} {rate:>8.0f} {rate / base:>7.2f}")
    lab.close()


if __name__ == "__main__":
    main()
