"""Constants of the reference cluster, paths, and the small helpers every part
of the lab uses (logging, running a command, writing a /proc or /sys file)."""
import asyncio
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
# the shared netns helper (tests/py/netns.py)
sys.path.insert(0, os.path.join(REPO, "tests", "py"))
BIN = os.path.join(REPO, "target", "release")
KEEPALIVE = os.path.join(BIN, "keepalive")
LAB_LOAD = os.path.join(BIN, "lab-load")
LAB_SERVE = os.path.join(BIN, "lab-serve")
HOST_AGENT = os.path.join(BIN, "host-agent")
AGENT_PORT = 7070

VIP, GW = "192.0.2.10", "10.1.0.254"
SENSOR_PORT, WEB_PORT = 9000, 80
SENSOR_PERIOD = 5.0
NS_BR, NS_CL = "lab-br", "lab-cl"
FE = {1: "lab-fe1", 2: "lab-fe2"}

# The reference cluster. Host: (name, capacity in normal CPUs, host weight).
# Two fast hosts (1.5x) get weight 3, the others 2: weight ~ capacity.
HOSTS = [("h1", 1.5, 3), ("h2", 1.5, 3), ("h3", 1.0, 2), ("h4", 1.0, 2), ("h5", 1.0, 2)]
# Placement: four VMs per host (a VM-count view looks balanced), but the web
# tier sits on two of the older hosts (h3: 3 web + 1 sensor, h4: 2 + 2) and
# the fast hosts carry only sensor VMs. Per-service schedulers cannot see
# that h3/h4 also carry the web load, nor that h1/h2 are faster.
PLACEMENT = {"h1": "ssss", "h2": "ssss", "h3": "wwws", "h4": "wwss", "h5": "ssss"}


def log(*a):
    print("[lab]", *a, file=sys.stderr, flush=True)


def out(*a):
    print(*a, flush=True)


class LabError(Exception):
    pass


def vms():
    """[{name, ns, addr, host, service}] in placement order."""
    res, ns_, nw = [], 0, 0
    for hi, (h, _, _) in enumerate(HOSTS, 1):
        for k, kind in enumerate(PLACEMENT[h]):
            if kind == "s":
                ns_ += 1
                name, svc = f"s{ns_}", "sensor"
            else:
                nw += 1
                name, svc = f"w{nw}", "web"
            res.append(dict(name=name, ns=f"lab-{name}", addr=f"10.1.{hi}.{11 + k}", host=h, service=svc))
    return res


VMS = vms()
HOST_OF = {v["addr"]: v["host"] for v in VMS}
WEIGHT = {h: w for h, _, w in HOSTS}
CAP = {h: c for h, c, _ in HOSTS}
HNAMES = [h for h, _, _ in HOSTS]
# Each host's own address on its VM bridge: its host-agent listens there.
AGENT_ADDR = {h: f"10.1.{i}.1" for i, h in enumerate(HNAMES, 1)}

def run(cmd, timeout=60, input=None):
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, input=input)
    except subprocess.TimeoutExpired:
        raise LabError(f"{' '.join(cmd)}: no answer in {timeout} s")
    if r.returncode != 0:
        raise LabError(f"{' '.join(cmd)} failed ({r.returncode}): {r.stderr.strip()[:500]}")
    return r.stdout


def send_json(proc, name, cmd):
    """One JSON command line to a helper process's stdin."""
    try:
        proc.stdin.write(json.dumps(cmd) + "\n")
        proc.stdin.flush()
    except (OSError, ValueError) as e:
        raise LabError(f"{name} is gone ({e})")


async def json_lines(proc):
    """The JSON values a helper process prints, one a line, until it ends
    (read in a thread: its stdout is a blocking pipe)."""
    loop = asyncio.get_running_loop()
    while True:
        line = await loop.run_in_executor(None, proc.stdout.readline)
        if not line:
            return
        try:
            yield json.loads(line)
        except ValueError:
            pass


def write(path, value):
    with open(path, "w") as f:
        f.write(str(value))


# A fixed piece of Python work and what it took (median ms, 2026-12-06) in the test VM on
# the development machine, with the active-active lab's load running, when
# the lab's time bounds were set. Bounds on times measured in an emulated VM
# scale with how much slower this run executes the same work (never below
# 1): a slower host or a busier VM stretches every reaction alike.
SPEED_REF_MS = 1690.0


def speed_factor(runs=5):
    """(median ms of the fixed work over RUNS, factor against SPEED_REF_MS)."""
    took = []
    for _ in range(runs):
        t = time.perf_counter()
        x = 0
        for k in range(200_000):
            x ^= k * 7
        took.append(1000 * (time.perf_counter() - t))
    ms = sorted(took)[len(took) // 2]
    return round(ms, 1), round(max(1.0, ms / SPEED_REF_MS), 2)
