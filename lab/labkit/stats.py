"""Statistics over the samples, and one scheduler's run (a phase)."""
import math

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


# ---------------------------------------------------------------- the lab

class Phase:
    def __init__(self, sched):
        self.sched = sched
        self.t0 = self.m0 = self.m1 = None
        self.samples = []  # dicts
        self.rt = {"sensor": [], "web": []}  # (t_sent, seconds)
        self.errors = {"sensor": 0, "web": 0}
        self.stopping = False
        self.lag = []  # sampler lateness per second (s)
        self.gen_lag = []  # lab-load's own timer lateness per second (ms)
        self.connect_timeouts = 0  # lab-load's connects that never opened


