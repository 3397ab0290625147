#!/usr/bin/env python3
"""The load generator's own cost, in the test VM (scripts/bench-lab.sh runs it):
requests answered per CPU-second of the generator, lab-load (Rust) against
the former Python clients (pyload.py), one after the other against the same
lab-serve (zero modelled work) in a namespace of its own.

    bench.py [--sensors N] [--web-users U] [--seconds S]
"""
import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
BIN = os.path.join(REPO, "target", "release")
NS = "lab-bench"


def child_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def in_ns(cmd, **kw):
    return subprocess.Popen(["ip", "netns", "exec", NS] + cmd, **kw)


def run_rust(a):
    c0 = child_cpu()
    p = in_ns([os.path.join(BIN, "lab-load"), "127.0.0.1", "9000", "8080", "1"],
              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    p.stdin.write(json.dumps({"web": {"users": a.web_users, "idle": 3.0}}) + "\n")
    p.stdin.write(json.dumps({"sensors": {"n": a.sensors, "ramp": 1.0}}) + "\n")
    p.stdin.flush()
    time.sleep(a.seconds)
    p.stdin.write('{"stop": true}\n')
    p.stdin.close()
    n = err = 0
    for line in p.stdout:
        e = json.loads(line).get("e")
        n += e in ("sr", "wr")
        err += e in ("sx", "wx")
    p.wait()
    return n, err, child_cpu() - c0


def run_py(a):
    c0 = child_cpu()
    r = subprocess.run(["ip", "netns", "exec", NS, sys.executable, os.path.join(HERE, "pyload.py"), "127.0.0.1",
                        "9000", "8080", str(a.sensors), str(a.web_users), str(a.seconds)],
                       capture_output=True, text=True, timeout=a.seconds + 120)
    s = json.loads(r.stdout.strip().splitlines()[-1])
    return s["requests"], s["errors"], child_cpu() - c0


def main():
    ap = argparse.ArgumentParser()
    # a load the Python clients can still carry in the emulated VM (at 300
    # sensors and 40 web users they answered nothing there: every connect or
    # first answer timed out), so that both figures exist
    ap.add_argument("--sensors", type=int, default=60)
    ap.add_argument("--web-users", type=int, default=8)
    ap.add_argument("--seconds", type=float, default=20)
    a = ap.parse_args()
    subprocess.run(["ip", "netns", "del", NS], capture_output=True)
    subprocess.run(["ip", "netns", "add", NS], check=True)
    subprocess.run(["ip", "-n", NS, "link", "set", "lo", "up"], check=True)
    cfg = dict(hosts=[dict(name="h", capacity=1.0)], sensor_port=9000, web_port=8080, sensor_work=0, web_work=0,
               vms=[dict(name="s1", ns=NS, addr="127.0.0.1", host="h", service="sensor"),
                    dict(name="w1", ns=NS, addr="127.0.0.1", host="h", service="web")])
    f = tempfile.NamedTemporaryFile("w", suffix=".json", delete=False)
    json.dump(cfg, f)
    f.close()
    srv = subprocess.Popen([os.path.join(BIN, "lab-serve"), f.name], stdin=subprocess.PIPE,
                           stdout=subprocess.PIPE, text=True)
    try:
        if '"ready"' not in srv.stdout.readline():
            print("bench: lab-serve did not start", file=sys.stderr)
            return 1
        # lab-serve reports every second: drain it, or a full pipe stalls the
        # servers (they share its one thread) and the generators time out
        threading.Thread(target=lambda: [None for _ in srv.stdout], daemon=True).start()
        res = {}
        for name, fn in (("lab-load (Rust)", run_rust), ("pyload.py (Python)", run_py)):
            n, err, cpu = fn(a)
            res[name] = n / cpu if cpu > 0 else None
            print(f"{name:20} {n:7d} requests, {err} errors, {cpu:6.2f} CPU-s: "
                  + (f"{res[name]:8.0f} requests/CPU-s" if res[name] else "not measured (no CPU time)"),
                  flush=True)
        r, p = res["lab-load (Rust)"], res["pyload.py (Python)"]
        print(f"ratio (Rust/Python requests per CPU-second): {r / p:.1f}x" if r and p else
              "ratio: not measured (a generator answered nothing: it could not carry this load here;"
              " try fewer --sensors/--web-users)")
        return 0
    finally:
        srv.terminate()
        try:
            srv.wait(timeout=10)
        except subprocess.TimeoutExpired:
            srv.kill()
            srv.wait()
        os.unlink(f.name)
        subprocess.run(["ip", "netns", "del", NS], capture_output=True)


if __name__ == "__main__":
    sys.exit(main())
