#!/usr/bin/env python3
"""A real cluster's shape under steady churn (issue 27): 50 services of 20
VMs, all co-located on 10 hosts of weights 1 to 4, on vmwlch. Connections to
one service arrive for 30 s while another service's destination weights
change every 100 ms (drained to 0 and back, the change that makes that
service's view stale), on top of as many connections to a third service
made before without churn. Asserted:
  - >= 99 % of the decisions meanwhile took the host-aware path (GET_INFO's
    host_aware / decisions): another service's change must not send this one
    to plain wlc;
  - the host imbalance (max / mean of open connections per host weight) is
    that of the connections made without churn (within 5 %, or at most
    1.10: what the connection count resolves).
Bounded in count and time."""
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from ipvslab import Lab  # noqa: E402
from vmwlch_nl import Vmwlch  # noqa: E402

SERVICES, VMS, HOSTS = 50, 20, 10
WEIGHTS = [1 + h % 4 for h in range(HOSTS)]
CONNS = 400
CHURN_S = float(os.environ.get("STEADY_CHURN_SECONDS", "30"))
PERIOD_S = 0.1

addrs = [f"10.1.{1 + i // 250}.{i % 250 + 1}" for i in range(SERVICES * VMS)]
host_of = {addrs[s * VMS + k]: k % HOSTS for s in range(SERVICES) for k in range(VMS)}


def setup():
    lab = Lab("steady", rs_addrs4=[], port=80)
    batch = "".join(f"addr add {a}/16 dev r0\n" for a in addrs)
    subprocess.run(["ip", "-n", lab.rs, "-batch", "-"], input=batch, text=True, check=True)
    restore = ""
    for s in range(SERVICES):
        restore += f"-A -t 10.0.0.1:{80 + s} -s vmwlch\n" + "".join(
            f"-a -t 10.0.0.1:{80 + s} -r {addrs[s * VMS + k]}:80 -m -w 1\n" for k in range(VMS))
    subprocess.run(["ip", "netns", "exec", lab.lb, "ipvsadm", "-R"], input=restore, text=True, check=True)
    nl = Vmwlch(lab.lb)
    nl.replace({f"h{h}": (WEIGHTS[h], [a for a in addrs if host_of[a] == h]) for h in range(HOSTS)})
    return lab, nl


def imbalance(lab, port):
    """Of the open connections of the service on PORT."""
    load = [0] * HOSTS
    for (svc, dest), c in lab.dests().items():
        if svc == f"10.0.0.1:{port}":
            load[host_of[dest.rsplit(":", 1)[0]]] += c["active"]
    per_w = [load[h] / WEIGHTS[h] for h in range(HOSTS)]
    mean = sum(per_w) / HOSTS
    return max(per_w) / mean if mean else None


def phase(lab, nl, port, churn_s):
    """CONNS connections to the service on PORT, left open (spread over
    churn_s, with the churn of service 1 meanwhile when churn_s > 0);
    returns (their imbalance, decisions, host-aware decisions, weight
    changes, GET_INFO)."""
    before = nl.info()
    churn = None
    if churn_s:
        # One ipvsadm -R fed a line per period: it applies each line as it reads it.
        churn = subprocess.Popen(["ip", "netns", "exec", lab.lb, "ipvsadm", "-R"], stdin=subprocess.PIPE,
                                 text=True, stderr=subprocess.PIPE)
    start, opened, changes, k = time.time(), [], 0, 0
    next_change = start
    while len(opened) < CONNS and time.time() < start + max(churn_s, 0) + 60:
        now = time.time()
        if churn and now >= next_change:
            # Service 1's VM k to 0 and back: the change that makes a view stale.
            w = 0 if changes % 2 == 0 else 1 + changes % 5
            churn.stdin.write(f"-e -t 10.0.0.1:81 -r {addrs[VMS + k % VMS]}:80 -m -w {w}\n")
            churn.stdin.flush()
            changes += 1
            k += changes % 2 == 0
            next_change += PERIOD_S
        # Connections spread evenly over the phase.
        if not churn_s or now >= start + churn_s * len(opened) / CONNS:
            opened.append(lab.connect("10.0.0.1", port))
        else:
            time.sleep(0.01)
    while churn and time.time() < start + churn_s:
        time.sleep(PERIOD_S)
    if churn:
        churn.stdin.close()
        if churn.wait(timeout=30) != 0:
            sys.exit(f"steady churn: ipvsadm -R failed: {churn.stderr.read()[:300]}")
    after = nl.info()
    ib = imbalance(lab, port)
    decisions = after["decisions"] - before["decisions"]
    aware = after["host_aware"] - before["host_aware"]
    return ib, decisions, aware, changes, after


def main():
    lab, nl = setup()
    # Service 0 without churn, then service 2 with: the first phase's
    # connections stay open, a load balanced by host weight under the second.
    ib0, d0, a0, _, _ = phase(lab, nl, 80, 0)
    ib1, d1, a1, changes, info = phase(lab, nl, 82, CHURN_S)
    share = a1 / d1 if d1 else 0
    print(f"steady churn: {SERVICES} services x {VMS} VMs on {HOSTS} hosts; {CONNS} connections to one service:"
          f" without churn imbalance {ib0:.3f} (host-aware {a0}/{d0});"
          f" with {changes} weight changes of another service in {CHURN_S:.0f} s imbalance {ib1:.3f},"
          f" host-aware {a1}/{d1} = {100 * share:.2f} %; rebuilds {info['rebuilds']}"
          f" deferred {info['deferred']} build_ns {info['build_ns']}")
    lab.close()
    ok = True
    if d1 < CONNS or share < 0.99:
        print(f"FAIL: host-aware share {100 * share:.2f} % < 99 % ({a1}/{d1})")
        ok = False
    if changes < CHURN_S / PERIOD_S * 0.8:
        print(f"FAIL: only {changes} weight changes in {CHURN_S:.0f} s")
        ok = False
    if ib0 is None or ib1 is None or not (ib1 <= ib0 * 1.05 or ib1 <= 1.10):
        print(f"FAIL: imbalance {ib1} under churn vs {ib0} without")
        ok = False
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
