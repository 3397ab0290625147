#!/usr/bin/env python3
"""Churn: services and destinations added, edited and deleted, schedulers
switched with ipvsadm -E and the host map replaced, while connections are
made. The kernel log check of scripts/vm.sh catches any warning, lockdep or
KASAN report; this script checks that traffic kept flowing and that the
module's counters moved. Bounded in count and time."""
import os
import random
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(__file__))
from ipvslab import Lab  # noqa: E402
from vmwlch_nl import Vmwlch  # noqa: E402

DURATION = float(os.environ.get("CHURN_SECONDS", "40"))
addrs = [f"10.1.{h}.{v}" for h in range(1, 6) for v in range(1, 5)]
lab = Lab("churn", rs_addrs4=addrs)
nl = Vmwlch(lab.lb)
rng = random.Random(11)
VIPS = [f"10.0.0.1:{p}" for p in (80, 81, 82, 83)]
SCHEDS = ["vmwlch", "vmwlc", "wlc", "rr"]
stop = time.time() + DURATION
errors = []
conns = {"ok": 0, "refused": 0}


def traffic():
    while time.time() < stop and conns["ok"] + conns["refused"] < 3000:
        v = rng.choice(VIPS)
        h, p = v.split(":")
        try:
            lab.connect(h, int(p))
            conns["ok"] += 1
        except RuntimeError:
            conns["refused"] += 1  # service or all its dests may be gone right now


def ipvs_op(v):
    """One random IPVS configuration change, as an ipvsadm restore line."""
    r = rng.random()
    a = rng.choice(addrs) + ":80"
    if r < 0.15:
        return f"-A -t {v} -s {rng.choice(SCHEDS)}"
    if r < 0.30:
        return f"-E -t {v} -s {rng.choice(SCHEDS)}"
    if r < 0.35:
        return f"-D -t {v}"
    if r < 0.65:
        return f"-a -t {v} -r {a} -m -w {rng.randint(0, 5)}"
    if r < 0.85:
        return f"-e -t {v} -r {a} -m -w {rng.randint(0, 5)} -x {rng.choice([0, 2, 50])}"
    if r < 0.99:
        return f"-d -t {v} -r {a}"
    return "-C"


def churn():
    ops = 0
    while time.time() < stop and ops < 20000:
        # Batches through one ipvsadm -R: an exec per change is slow in the VM.
        # A failing line (e.g. editing a missing service) ends the batch; fine.
        batch = "\n".join(ipvs_op(rng.choice(VIPS)) for _ in range(12)) + "\n"
        subprocess.run(["ip", "netns", "exec", lab.lb, "ipvsadm", "-R"], input=batch, text=True,
                       capture_output=True)
        ops += 12
        for _ in range(3):
            r = rng.random()
            ops += 1
            try:
                if r < 0.6:
                    hosts = {}
                    for a in addrs:
                        if rng.random() < 0.8:
                            hosts.setdefault(f"h{rng.randint(1, 6)}", (rng.randint(0, 4), []))[1].append(a)
                    nl.replace(hosts)
                elif r < 0.9:
                    nl.set_host(f"h{rng.randint(1, 6)}", weight=rng.randint(0, 9))
                else:
                    nl.cmd("FLUSH")
            except Exception as e:
                errors.append(repr(e))
    return ops


t = threading.Thread(target=traffic)
t.start()
ops = churn()
t.join()
info = nl.info()
print(f"churn: {ops} config operations, {conns['ok']} connections served, {conns['refused']} refused; info {info}")
lab.ipvsadm("-C")
lab.close()
if errors:
    print("unexpected errors:", errors[:5])
if conns["ok"] < 50 or info["decisions"] == 0 or errors:
    sys.exit(1)
