#!/usr/bin/env python3
"""The large case of scripts/bench-restore.sh: a director with a small mapped
vmwlch service whose real servers answer, then BIG more tracked destinations
(services on vmwlch, 10 real servers each, unmapped addresses) restored with
ipvsctl -R. Checks that the restore succeeds, how long the module takes to
publish a current snapshot, and that new connections to the small service
are still scheduled as the algorithm says (the oracle of decisions.py; the
large set's unmapped destinations are implicit hosts of their own, so they
do not change the small service's host loads). Also times one isolated
change at that size. Prints results; exits 1 if a check fails.

    restore_big.py BIG WORKDIR
"""
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from decisions import allowed, ACTIVE_WEIGHT  # noqa: E402
from ipvslab import Lab, sh  # noqa: E402
from vmwlch_nl import Vmwlch  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
IPVSCTL = os.path.join(REPO, "target", "release", "ipvsctl")
PER_SERVICE = 10
SVC = "10.0.0.1:80"


def service_dests(lab):
    """The small service's destinations as decisions.allowed() wants them."""
    out = {}
    for line in sh("ipvsadm", "-Ln", "-t", SVC, ns=lab.lb).splitlines():
        m = re.match(r"^\s+->\s+(\S+)\s+\S+\s+(\d+)\s+(\d+)\s+(\d+)", line)
        if m:
            out[(SVC, m.group(1))] = dict(weight=int(m.group(2)), active=int(m.group(3)),
                                          inactive=int(m.group(4)))
    return out


def wait_current(nl, limit):
    """Seconds until GET_INFO says the snapshot is current (None: not within limit)."""
    t0 = time.time()
    while time.time() - t0 < limit:
        if nl.info().get("snapshot_current") == 1:
            return time.time() - t0
        time.sleep(0.05)
    return None


def main():
    big, work = int(sys.argv[1]), sys.argv[2]
    fails = []
    hosts = {"h1": (2, ["10.1.1.1", "10.1.1.2"]), "h2": (1, ["10.1.2.1", "10.1.2.2"])}
    addrs = [a for _, v in hosts.values() for a in v]
    lab = Lab("rst-big", rs_addrs4=addrs)
    nl = Vmwlch(lab.lb)
    nl.replace(hosts)
    hostmap = {a: h for h, (_, v) in hosts.items() for a in v}
    hostw = {h: w for h, (w, _) in hosts.items()}
    lab.ipvsadm("-A", "-t", SVC, "-s", "vmwlch")
    for a, w in zip(addrs, (1, 2, 1, 1)):
        lab.ipvsadm("-a", "-t", SVC, "-r", f"{a}:80", "-m", "-w", str(w))

    rules = os.path.join(work, "rules.big")
    with open(rules, "w") as f:
        for i in range(big // PER_SERVICE):
            v = f"10.{100 + i // 62500 % 150}.{i // 250 % 250}.{i % 250 + 1}:80"
            f.write(f"-A -t {v} -s vmwlch\n")
            for j in range(PER_SERVICE):
                k = i * PER_SERVICE + j
                f.write(f"-a -t {v} -r 172.{16 + k // 62500 % 16}.{k // 250 % 250}.{k % 250 + 1}:8080 -m -w 1\n")
    t0 = time.time()
    with open(rules) as f:
        r = subprocess.run(["ip", "netns", "exec", lab.lb, IPVSCTL, "-R"], stdin=f,
                           capture_output=True, text=True)
    took = time.time() - t0
    if r.returncode != 0:
        fails.append(f"ipvsctl -R failed ({r.returncode}): {r.stderr.strip()[:300]}")
    current = wait_current(nl, 120)
    info = nl.info()
    want = big // PER_SERVICE * PER_SERVICE + 4
    print(f"restore of {want - 4} destinations ({big // PER_SERVICE} services): {took:.1f} s; "
          f"snapshot current {'after %.2f s' % current if current is not None else 'NOT within 120 s'}")
    if info.get("dests") != want:
        fails.append(f"module tracks {info.get('dests')} destinations, expected {want}")
    if current is None:
        fails.append("no current snapshot within 120 s of the restore")

    # New connections to the small service, each checked against the algorithm.
    sched = {SVC: "vmwlch"}
    checked = 0
    for i in range(16):
        before = service_dests(lab)
        ok = allowed(SVC, before, sched, hostmap, hostw, {})
        try:
            lab.connect("10.0.0.1", 80)
        except RuntimeError as e:
            fails.append(f"connection {i} refused ({e}) with {sorted(ok)} eligible")
            continue
        total = sum(v["active"] + v["inactive"] for v in before.values()) + 1
        for _ in range(100):
            after = service_dests(lab)
            if sum(v["active"] + v["inactive"] for v in after.values()) >= total:
                break
            time.sleep(0.05)
        grew = [k for k in after if after[k]["active"] + after[k]["inactive"]
                > before[k]["active"] + before[k]["inactive"]]
        if len(grew) != 1:
            fails.append(f"connection {i}: cannot tell which destination took it: {grew}")
        elif grew[0] not in ok:
            fails.append(f"connection {i}: chose {grew[0][1]}, allowed {sorted(d for _, d in ok)}")
        else:
            checked += 1

    # One isolated change at this size: how long decisions fall back to wlc.
    lab.ipvsadm("-a", "-t", SVC, "-r", "10.1.2.2:81", "-m", "-w", "0")
    single = wait_current(nl, 60)
    info = nl.info()
    print(f"{checked} of 16 decisions checked against the algorithm (overhead {ACTIVE_WEIGHT}*active + inactive)")
    print(f"one change at this size: snapshot current again after "
          f"{'%.2f s' % single if single is not None else 'more than 60 s'}")
    print("GET_INFO:", {k: info.get(k) for k in ("dests", "services", "rebuilds", "deferred", "fallbacks",
                                                 "rebuild_failures", "rebuild_retries", "track_failures",
                                                 "decisions", "no_dest")})
    if info.get("rebuild_failures"):
        print(f"note: {info['rebuild_failures']} rebuilds ran out of memory (retried)")
    lab.close()
    for f in fails:
        print("FAIL:", f)
    print("large case:", "OK" if not fails else "FAILED")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
