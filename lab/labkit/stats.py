"""Statistics over the samples, and one scheduler's run (a phase)."""
import math
import os

# ---------------------------------------------------------------- statistics

def pct(xs, q):
    if not xs:
        return float("nan")
    xs = sorted(xs)
    return xs[min(len(xs) - 1, max(0, math.ceil(q * len(xs)) - 1))]


def mean(xs):
    return sum(xs) / len(xs) if xs else float("nan")


def measured(v):
    return v is not None and not (isinstance(v, float) and math.isnan(v))


def fmtv(v, spec, why="nothing to measure in the window"):
    """V formatted, or "not measured (why)": a figure the run lacks must never crash the report."""
    return format(v, spec) if measured(v) else f"not measured ({why})"


def imbalance(vals):
    m = mean(vals)
    return max(vals) / m if m > 0 else None


def proc_cpu():
    """CPU seconds used so far by every process, summed by command name, and
    the kernel's softirq time ("[softirq]": the packet path, IPVS)."""
    tick = os.sysconf("SC_CLK_TCK")
    out = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat") as f:
                st = f.read()
        except OSError:
            continue  # gone meanwhile
        comm = st[st.index("(") + 1:st.rindex(")")]
        fields = st[st.rindex(")") + 2:].split()
        out[comm] = out.get(comm, 0.0) + (int(fields[11]) + int(fields[12])) / tick
    with open("/proc/stat") as f:
        cpu = f.readline().split()
    out["[softirq]"] = int(cpu[7]) / tick
    return out


def cpu_share(before, after, seconds, top=6):
    """The biggest CPU users between two proc_cpu() snapshots, in CPU seconds per second (a
    process that ended meanwhile is missing: its time is not in after)."""
    d = {k: after[k] - before.get(k, 0.0) for k in after}
    best = sorted(((v, k) for k, v in d.items() if v > 0), reverse=True)[:top]
    return {k: round(v / seconds, 3) for v, k in best}


# ---------------------------------------------------------------- the lab

class Phase:
    def __init__(self, sched):
        self.sched = sched
        self.t0 = self.m0 = self.m1 = None
        self.samples = []  # dicts
        self.cpu = {}  # command -> CPU s per s in the measured window
        self.rt = {"sensor": [], "web": []}  # (t_sent, seconds)
        self.errors = {"sensor": 0, "web": 0}
        self.stopping = False
        self.lag = []  # sampler lateness per second (s)
        self.gen_lag = []  # lab-load's own timer lateness per second (ms)
        self.connect_timeouts = 0  # lab-load's connects that never opened


