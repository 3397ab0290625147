#!/usr/bin/env python3
"""In-kernel cost of one scheduling decision, vmwlch against wlc, measured side
by side by the benchmark build of the module (debugfs vmwlch_bench) on the same
service and destinations. Run inside the test VM by scripts/bench-sched.sh."""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from ipvslab import Lab  # noqa: E402
from netns import netns  # noqa: E402
from vmwlch_nl import Vmwlch  # noqa: E402

BENCH = "/sys/kernel/debug/vmwlch_bench"


def bench(lab, iters):
    # The timer runs in the writer's network namespace: enter the director's
    # (only the network namespace, so debugfs stays mounted).
    with netns(lab.lb):
        with open(BENCH, "w") as f:
            f.write(str(iters))
        out = open(BENCH).read()
    kv = dict(x.split("=") for x in out.split())
    return int(kv["vmwlch_ns"]), int(kv["wlc_ns"]), int(kv["vmwlch_call_ns"]), int(kv["wlc_call_ns"])


def scenario(n_dests, per_host, conns, iters, rows):
    addrs = [f"10.1.{1 + i // 250}.{i % 250 + 1}" for i in range(n_dests)]
    lab = Lab(f"b{n_dests}", rs_addrs4=[], port=80)
    # Addresses in one exec (ip -batch): execs are slow under emulation.
    batch = "".join(f"addr add {a}/16 dev r0\n" for a in addrs)
    subprocess.run(["ip", "-n", lab.rs, "-batch", "-"], input=batch, text=True, check=True)
    restore = "-A -t 10.0.0.1:80 -s vmwlch\n" + "".join(
        f"-a -t 10.0.0.1:80 -r {a}:80 -m -w {1 + i % 3}\n" for i, a in enumerate(addrs))
    subprocess.run(
        ["ip", "netns", "exec", lab.lb, "ipvsadm", "-R"], input=restore, text=True, check=True)
    hosts = {f"h{h}": (1 + h % 4, addrs[h * per_host:(h + 1) * per_host]) for h in range(n_dests // per_host)}
    Vmwlch(lab.lb).replace(hosts)
    n_hosts = len(hosts)
    rows.append((n_dests, n_hosts, "idle (all tied)") + bench(lab, iters))
    for _ in range(conns):
        lab.connect("10.0.0.1", 80)
    rows.append((n_dests, n_hosts, f"{conns} connections") + bench(lab, iters))
    lab.close()


def main():
    rows = []
    scenario(20, 4, 200, 200000, rows)
    scenario(1000, 20, 1200, 5000, rows)
    print("selection: vmwlch's selection called directly against wlc's loop inlined in the timing loop")
    print("schedule(): each scheduler's schedule() called through a pointer, as IPVS calls it")
    print(f"{'dests':>6} {'hosts':>6} {'load':<18} {'selection: vmwlch':>17} {'wlc':>6} {'ratio':>6}"
          f"  {'schedule(): vmwlch':>18} {'wlc':>6} {'ratio':>6}")
    for d, hs, load, h, w, hc, wc in rows:
        print(f"{d:>6} {hs:>6} {load:<18} {h:>14} ns {w:>6} {h / max(w, 1):>6.2f}"
              f"  {hc:>15} ns {wc:>6} {hc / max(wc, 1):>6.2f}")
    by = {(r[0], r[2].startswith("idle")): r for r in rows}
    for idle in (True, False):
        a, b = by[(20, idle)], by[(1000, idle)]
        print(f"growth 20 -> 1000 destinations ({'idle' if idle else 'loaded'}, x50 destinations): "
              f"vmwlch x{b[3] / max(a[3], 1):.1f}, wlc x{b[4] / max(a[4], 1):.1f}")


if __name__ == "__main__":
    main()
