#!/usr/bin/env python3
"""Allocation failures during configuration churn under traffic.

Service A (vmwlch) keeps four mapped real servers of positive weight the
whole time, and gains and loses others; service B (vmwlch) is churned
harder, with scheduler switches. Every configuration batch runs in an
ipvsadm process whose slab and page allocations fail at random (failslab and
fail_page_alloc with task-filter: /proc/PID/make-it-fail), so the module's
synchronous rebuilds and add_dest tracking run out of memory, while its
rebuild work (a kworker, not filtered) retries.

Checks: no connection to A is refused (it always has eligible
destinations, whatever the snapshot's state); GET_INFO counted failures and
retries; once the injection stops, the snapshot becomes current and the
module tracks exactly the destinations IPVS has (a destination whose
add_dest ran out of memory is tracked after all); then every decision again
matches the algorithm. The kernel log check of scripts/vm.sh catches any
splat. Bounded in count and time.
"""
import os
import random
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(__file__))
from decisions import allowed  # noqa: E402
from ipvslab import Lab, wait_total  # noqa: E402
from vmwlch_nl import Vmwlch  # noqa: E402

DBG = "/sys/kernel/debug"
DURATION = float(os.environ.get("FAULT_SECONDS", "30"))
A, B = "10.0.0.1:80", "10.0.0.1:81"
CORE = ["10.1.1.1", "10.1.1.2", "10.1.2.1", "10.1.2.2"]
EXTRA = [f"10.1.{h}.{v}" for h in (1, 2, 3) for v in range(3, 9)]


def knobs(name, **kv):
    for k, v in kv.items():
        with open(f"{DBG}/{name}/{k.replace('_', '-')}", "w") as f:
            f.write(f"{v}\n")


def inject(on):
    """Random failures of the flagged tasks' allocations (or none): every
    slab allocation, and page allocations of order 1 and more (kmalloc of
    large tables; not page tables or user pages, nor vmalloc's highmem
    pages: failing those only makes user space retry its page faults)."""
    if on:
        knobs("failslab", task_filter="Y", ignore_gfp_wait="N", probability=15, interval=1,
              times=-1, space=0, verbose=0)
        knobs("fail_page_alloc", task_filter="Y", ignore_gfp_wait="N", ignore_gfp_highmem="Y",
              min_order=1, probability=15, interval=1, times=-1, space=0, verbose=0)
    else:
        for name in ("failslab", "fail_page_alloc"):
            knobs(name, probability=0, times=0)


def failing_restore(lb, batch):
    """ipvsadm -R in the director's namespace, its allocations failing at random."""
    p = subprocess.Popen(["ip", "netns", "exec", lb, "ipvsadm", "-R"], stdin=subprocess.PIPE,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, text=True)
    # Flag it once it is ipvsadm waiting for its input (not the exec of it).
    for _ in range(100):
        try:
            if os.readlink(f"/proc/{p.pid}/exe").endswith("/ipvsadm"):
                with open(f"/proc/{p.pid}/stat") as f:
                    if f.read().rsplit(")", 1)[1].split()[0] == "S":
                        break
        except OSError:
            pass
        time.sleep(0.02)
    try:
        with open(f"/proc/{p.pid}/make-it-fail", "w") as f:
            f.write("1\n")
    except OSError:
        pass  # already gone
    p.communicate(batch, timeout=60)


def churn_line(rng):
    r, a = rng.random(), rng.choice(EXTRA) + ":80"
    if r < 0.35:
        return f"-a -t {A} -r {a} -m -w {rng.randint(0, 3)}"
    if r < 0.55:
        return f"-d -t {A} -r {a}"
    if r < 0.75:
        return f"-a -t {B} -r {a} -m -w {rng.randint(0, 3)}"
    if r < 0.85:
        return f"-e -t {B} -r {a} -m -w {rng.randint(0, 3)}"
    if r < 0.95:
        return f"-d -t {B} -r {a}"
    return f"-E -t {B} -s {rng.choice(['vmwlch', 'vmwlc', 'wlc'])}"


def tracked_by_ipvs(lab):
    """Destinations of services on vmwlc/vmwlch, as IPVS lists them."""
    n, ours = 0, False
    for line in lab.ipvsadm("-Ln").splitlines():
        if line.startswith(("TCP", "UDP")):
            ours = line.split()[2] in ("vmwlc", "vmwlch")
        elif "->" in line and ours and not line.strip().startswith("-> RemoteAddress"):
            n += 1
    return n


def main():
    if not (os.path.isdir(f"{DBG}/failslab") and os.path.isdir(f"{DBG}/fail_page_alloc")):
        print("no failslab/fail_page_alloc in debugfs (CONFIG_FAILSLAB, CONFIG_FAIL_PAGE_ALLOC, "
              "CONFIG_FAULT_INJECTION_DEBUG_FS)", file=sys.stderr)
        return 77
    rng = random.Random(5)
    lab = Lab("flt", rs_addrs4=CORE + EXTRA)
    nl = Vmwlch(lab.lb)
    hosts = {"h1": (2, [a for a in CORE + EXTRA if a.startswith("10.1.1.")]),
             "h2": (1, [a for a in CORE + EXTRA if a.startswith("10.1.2.")])}
    nl.replace(hosts)
    for s in (A, B):
        lab.ipvsadm("-A", "-t", s, "-s", "vmwlch")
    for a in CORE:
        lab.ipvsadm("-a", "-t", A, "-r", f"{a}:80", "-m", "-w", "1")
    lab.ipvsadm("-a", "-t", B, "-r", f"{CORE[0]}:80", "-m", "-w", "1")

    stop = time.time() + DURATION
    conns = {"ok": 0, "refused": 0, "errors": []}

    def traffic():
        # A's four core servers keep a positive weight throughout. Every
        # connection stays open (the client holds it): a bounded number.
        while time.time() < stop and conns["ok"] + conns["refused"] < 600:
            try:
                lab.connect("10.0.0.1", 80)
                conns["ok"] += 1
            except RuntimeError as e:
                conns["refused"] += 1
                conns["errors"].append(str(e))

    t = threading.Thread(target=traffic)
    t.start()
    batches = 0
    inject(True)
    try:
        while time.time() < stop and batches < 200:
            failing_restore(lab.lb, "\n".join(churn_line(rng) for _ in range(10)) + "\n")
            batches += 1
    finally:
        inject(False)
    t.join()
    during = nl.info()
    print(f"faults: {batches} batches under injection, {conns['ok']} connections served, "
          f"{conns['refused']} refused; info {during}")

    fails = []
    if conns["refused"]:
        fails.append(f"{conns['refused']} connections to A refused: {conns['errors'][:3]}")
    if conns["ok"] < 20:
        fails.append(f"only {conns['ok']} connections served")
    if during["rebuild_failures"] + during["track_failures"] == 0:
        fails.append("no allocation failure was counted (injection ineffective?)")

    # Recovery: a retry publishes a current snapshot that tracks everything.
    end = time.time() + 30
    while time.time() < end:
        info = nl.info()
        if info["snapshot_current"] == 1 and info["dests"] == tracked_by_ipvs(lab):
            break
        time.sleep(0.2)
    info = nl.info()
    print("after recovery:", info)
    if info["snapshot_current"] != 1:
        fails.append("no current snapshot 30 s after the injection stopped")
    if info["dests"] != tracked_by_ipvs(lab):
        fails.append(f"module tracks {info['dests']} destinations, IPVS has {tracked_by_ipvs(lab)}")
    if during["rebuild_failures"] and not info["rebuild_retries"]:
        fails.append("rebuild failures were never retried")

    # Decisions are exact again (each checked against the algorithm).
    sched = {A: "vmwlch"}
    hostmap = {a: h for h, (_, v) in hosts.items() for a in v}
    hostw = {h: w for h, (w, _) in hosts.items()}
    total = sum(v["active"] + v["inactive"] for v in lab.dests().values())
    for i in range(12):
        # B's destinations have no connections (traffic goes to A only), so
        # A's alone decide its hosts' aggregate load.
        before = {k: v for k, v in lab.dests().items() if k[0] == A}
        ok = allowed(A, before, sched, hostmap, hostw, {})
        lab.connect("10.0.0.1", 80)
        total += 1
        after = wait_total(lab, total)
        grew = [k for k in before if after[k]["active"] + after[k]["inactive"]
                > before[k]["active"] + before[k]["inactive"]]
        if len(grew) != 1 or grew[0] not in ok:
            fails.append(f"decision {i} after recovery: took {grew}, allowed {sorted(ok)}")
    lab.ipvsadm("-C")
    lab.close()
    for f in fails:
        print("FAIL:", f)
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
