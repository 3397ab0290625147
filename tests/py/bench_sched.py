#!/usr/bin/env python3
"""In-kernel cost of one scheduling decision, vmwlch against wlc, measured side
by side by the benchmark build of the module (debugfs vmwlch_bench) on the same
service and destinations. Run inside the test VM by scripts/bench-sched.sh.

With `--modules A.ko B.ko` (scripts/bench-sched.sh --against REV) the same
scenarios run under two builds of the module in one boot, alternating, and
their vmwlch/wlc ratios are printed side by side."""
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from ipvslab import Lab  # noqa: E402
from netns import netns  # noqa: E402
from vmwlch_nl import Vmwlch  # noqa: E402

BENCH = "/sys/kernel/debug/vmwlch_bench"
# Services besides the timed one in the last scenario (0: no such scenario).
OTHER_SERVICES = int(os.environ.get("BENCH_OTHER_SERVICES", "10000"))


def bench(lab, iters):
    # The timer runs in the writer's network namespace: enter the director's
    # (only the network namespace, so debugfs stays mounted).
    with netns(lab.lb):
        with open(BENCH, "w") as f:
            f.write(str(iters))
        out = open(BENCH).read()
    kv = dict(x.split("=") for x in out.split())
    return int(kv["vmwlch_ns"]), int(kv["wlc_ns"]), int(kv["vmwlch_call_ns"]), int(kv["wlc_call_ns"])


def scenario(n_dests, per_host, conns, iters, rows, others=0):
    addrs = [f"10.1.{1 + i // 250}.{i % 250 + 1}" for i in range(n_dests)]
    lab = Lab(f"b{n_dests}", rs_addrs4=[], port=80)
    # Addresses in one exec (ip -batch): execs are slow under emulation.
    batch = "".join(f"addr add {a}/16 dev r0\n" for a in addrs)
    subprocess.run(["ip", "-n", lab.rs, "-batch", "-"], input=batch, text=True, check=True)
    restore = "-A -t 10.0.0.1:80 -s vmwlch\n" + "".join(
        f"-a -t 10.0.0.1:80 -r {a}:80 -m -w {1 + i % 3}\n" for i, a in enumerate(addrs))
    # Other services on vmwlch (one unmapped real server each), added after
    # the timed one: what a decision's lookup of its service must not pay for.
    restore += "".join(
        f"-A -t 10.3.{i // 250}.{i % 250 + 1}:80 -s vmwlch\n"
        f"-a -t 10.3.{i // 250}.{i % 250 + 1}:80 -r 10.4.{i // 250}.{i % 250 + 1}:80 -m\n"
        for i in range(others))
    subprocess.run(
        ["ip", "netns", "exec", lab.lb, "ipvsadm", "-R"], input=restore, text=True, check=True)
    hosts = {f"h{h}": (1 + h % 4, addrs[h * per_host:(h + 1) * per_host]) for h in range(n_dests // per_host)}
    Vmwlch(lab.lb).replace(hosts)
    n_hosts = len(hosts)
    if others:
        rows.append((n_dests, n_hosts, f"idle, +{others} svcs") + bench(lab, iters))
        lab.close()
        return
    rows.append((n_dests, n_hosts, "idle (all tied)") + bench(lab, iters))
    for _ in range(conns):
        lab.connect("10.0.0.1", 80)
    rows.append((n_dests, n_hosts, f"{conns} connections") + bench(lab, iters))
    lab.close()


def colocated(services, vms, n_hosts, iters, rows):
    """A real cluster's shape: SERVICES services of VMS VMs each, all on the
    same N_HOSTS hosts (each host runs VMS / N_HOSTS VMs of every service).
    The first service is timed: wlc reads its VMS destinations, vmwlch needs
    every host's load over all services (the module's per-CPU host loads)."""
    n = services * vms
    addrs = [f"10.1.{1 + i // 250}.{i % 250 + 1}" for i in range(n)]
    lab = Lab(f"c{n}", rs_addrs4=[], port=80)
    batch = "".join(f"addr add {a}/16 dev r0\n" for a in addrs)
    subprocess.run(["ip", "-n", lab.rs, "-batch", "-"], input=batch, text=True, check=True)
    restore = ""
    for s in range(services):
        restore += f"-A -t 10.0.0.1:{1000 + s} -s vmwlch\n" + "".join(
            f"-a -t 10.0.0.1:{1000 + s} -r {addrs[s * vms + k]}:80 -m -w {1 + k % 3}\n" for k in range(vms))
    subprocess.run(
        ["ip", "netns", "exec", lab.lb, "ipvsadm", "-R"], input=restore, text=True, check=True)
    hosts = {f"h{h}": (1 + h % 4, [addrs[s * vms + k] for s in range(services) for k in range(vms)
                                   if k % n_hosts == h]) for h in range(n_hosts)}
    Vmwlch(lab.lb).replace(hosts)
    rows.append((n, n_hosts, f"{services}x{vms} co-located") + bench(lab, iters))
    lab.close()


def run_all():
    rows = []
    scenario(20, 4, 200, 200000, rows)
    scenario(1000, 20, 1200, 5000, rows)
    colocated(50, 20, 10, 50000, rows)
    if OTHER_SERVICES:
        scenario(20, 4, 0, 200000, rows, others=OTHER_SERVICES)
    return rows


def print_table(rows):
    print("selection: vmwlch's selection called directly against wlc's loop inlined in the timing loop")
    print("schedule(): each scheduler's schedule() called through a pointer, as IPVS calls it")
    print(f"{'dests':>6} {'hosts':>6} {'load':<18} {'selection: vmwlch':>17} {'wlc':>6} {'ratio':>6}"
          f"  {'schedule(): vmwlch':>18} {'wlc':>6} {'ratio':>6}")
    for d, hs, load, h, w, hc, wc in rows:
        print(f"{d:>6} {hs:>6} {load:<18} {h:>14} ns {w:>6} {h / max(w, 1):>6.2f}"
              f"  {hc:>15} ns {wc:>6} {hc / max(wc, 1):>6.2f}")
    by = {(r[0], r[2].startswith("idle")): r for r in rows if "svcs" not in r[2] and "co-located" not in r[2]}
    for idle in (True, False):
        a, b = by[(20, idle)], by[(1000, idle)]
        print(f"growth 20 -> 1000 destinations ({'idle' if idle else 'loaded'}, x50 destinations): "
              f"vmwlch x{b[3] / max(a[3], 1):.1f}, wlc x{b[4] / max(a[4], 1):.1f}")
    more = [r for r in rows if "svcs" in r[2]]
    if not more:
        return
    a, b = by[(20, True)], more[0]
    print(f"growth 1 -> {OTHER_SERVICES + 1} services (20 destinations, idle): "
          f"vmwlch x{b[3] / max(a[3], 1):.2f}, wlc x{b[4] / max(a[4], 1):.2f}")


def swap_module(ko):
    """Loads `ko` as ip_vs_vmwlch in place of whichever is loaded; a module
    whose services are still going away (namespaces are freed
    asynchronously) is retried for a while."""
    deadline = time.monotonic() + 60
    while subprocess.run(["rmmod", "ip_vs_vmwlch"], capture_output=True).returncode != 0:
        if not os.path.exists("/sys/module/ip_vs_vmwlch"):
            break
        if time.monotonic() > deadline:
            sys.exit("bench_sched: ip_vs_vmwlch stays in use, cannot swap modules")
        time.sleep(0.5)
    subprocess.run(["insmod", ko], check=True)


def ab(kos, rounds=3):
    """Each module's rows, rounds alternating between the modules (A B A B)
    in one boot, then the vmwlch/wlc ratios side by side. The ratio of each
    round is taken against that round's own wlc, so drift between rounds
    affects both modules alike; the median round counts."""
    ratios = {ko: [] for ko in kos}
    for _ in range(rounds):
        for ko in kos:
            swap_module(ko)
            rows = run_all()
            ratios[ko].append([(r[3] / max(r[4], 1), r[5] / max(r[6], 1)) for r in rows])
            keys = [(r[0], r[1], r[2]) for r in rows]
    a, b = kos
    print(f"A = {os.path.basename(os.path.dirname(a))}, B = {os.path.basename(os.path.dirname(b))};"
          f" vmwlch/wlc per decision, median of {rounds} rounds each, alternating A B")
    print(f"{'dests':>6} {'hosts':>6} {'load':<18} {'selection: A':>12} {'B':>6} {'B/A':>6}"
          f"  {'schedule(): A':>13} {'B':>6} {'B/A':>6}")
    for i, (d, hs, load) in enumerate(keys):
        sa = statistics.median(x[i][0] for x in ratios[a])
        sb = statistics.median(x[i][0] for x in ratios[b])
        ca = statistics.median(x[i][1] for x in ratios[a])
        cb = statistics.median(x[i][1] for x in ratios[b])
        print(f"{d:>6} {hs:>6} {load:<18} {sa:>12.2f} {sb:>6.2f} {sb / sa:>6.2f}"
              f"  {ca:>13.2f} {cb:>6.2f} {cb / ca:>6.2f}")


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--modules":
        ab(sys.argv[2:])
    else:
        print_table(run_all())


if __name__ == "__main__":
    main()
