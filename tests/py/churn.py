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
nl = Vmwlch()
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


def churn():
    ops = 0
    while time.time() < stop and ops < 4000:
        ops += 1
        v = rng.choice(VIPS)
        r = rng.random()
        try:
            if r < 0.15:
                lab.ipvsadm("-A", "-t", v, "-s", rng.choice(SCHEDS))
            elif r < 0.25:
                lab.ipvsadm("-E", "-t", v, "-s", rng.choice(SCHEDS))
            elif r < 0.30:
                lab.ipvsadm("-D", "-t", v)
            elif r < 0.55:
                lab.ipvsadm("-a", "-t", v, "-r", rng.choice(addrs) + ":80", "-m", "-w", str(rng.randint(0, 5)))
            elif r < 0.70:
                lab.ipvsadm("-e", "-t", v, "-r", rng.choice(addrs) + ":80", "-m", "-w", str(rng.randint(0, 5)),
                            "-x", str(rng.choice([0, 2, 50])))
            elif r < 0.80:
                lab.ipvsadm("-d", "-t", v, "-r", rng.choice(addrs) + ":80")
            elif r < 0.90:
                hosts = {}
                for a in addrs:
                    if rng.random() < 0.8:
                        hosts.setdefault(f"h{rng.randint(1, 6)}", (rng.randint(0, 4), []))[1].append(a)
                nl.replace(hosts)
            elif r < 0.95:
                nl.set_host(f"h{rng.randint(1, 6)}", weight=rng.randint(0, 9))
            elif r < 0.97:
                nl.cmd("FLUSH")
            else:
                lab.ipvsadm("-C")
        except RuntimeError:
            pass  # e.g. editing a service that does not exist right now
        except Exception as e:  # netlink errors are fine only if expected
            if "ENOENT" not in str(e):
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
