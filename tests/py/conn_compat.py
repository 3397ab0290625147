"""ipvsctl's connection listing (-c) against Debian's ipvsadm on a live IPVS
connection table: established, closing and persistence-template entries, IPv4
and IPv6. Run inside the test VM by tests/vm/ipvsctl-conn.sh."""
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from ipvslab import Lab, wait_total  # noqa: E402
from netns import netns  # noqa: E402

IPVSCTL = sys.argv[1]
# (arguments, standard input): the connection table, then the counters of
# real servers that carried traffic (also asked from within one restore
# stream, after a listing that does not print them).
VARIANTS = [
    (["-Lcn"], None), (["-lnc"], None), (["-L", "-n", "-c", "--persistent-conn"], None),
    (["-L", "-c", "-n", "--exact"], None),
    (["-Ln", "--stats", "--exact"], None), (["-Ln", "--stats"], None), (["-Ln", "--rate"], None),
    (["-R"], "-L -n\n-L -n --stats --exact -t 10.0.0.1:80\n"),
]
# Bounded retries: the rate estimator ticks every 2 s, so --rate may move
# between the runs (it settles as the idle connections' rates decay).
ATTEMPTS = 10
# A connection's expiry, "MM:SS", after the protocol column.
EXPIRY = re.compile(r"^(\S+ +)(\d+):(\d\d)(?= )")


def conn_listing(args):
    """Does the command list connections (-c, possibly bundled: -Lcn)?"""
    return any("c" in a[1:] for a in args if a.startswith("-") and not a.startswith("--"))


def run(tool, args, stdin):
    # Both tools run as "ipvsadm" (usage texts and program names agree).
    r = subprocess.run(["ipvsadm"] + args, executable=tool, capture_output=True, text=True, timeout=60,
                       input=stdin or "")
    return r.returncode, r.stdout, r.stderr


def expiry_diff(a_out, b_out, elapsed):
    """Compare two -c listings taken one after the other (a first): every
    column exactly except the expiry, which may only have counted down, by at
    most the wall time between the start of a and the end of b (+1 s for the
    whole-second rounding). Returns None if they agree, else why not."""
    a_lines, b_lines = a_out.split("\n"), b_out.split("\n")
    if len(a_lines) != len(b_lines):
        return f"{len(a_lines)} vs {len(b_lines)} lines"
    bound = int(elapsed) + 1
    for la, lb in zip(a_lines, b_lines):
        ma, mb = EXPIRY.match(la), EXPIRY.match(lb)
        if not ma or not mb:
            if la != lb:
                return f"line differs: {la!r} vs {lb!r}"
            continue
        if EXPIRY.sub(r"\1MM:SS", la) != EXPIRY.sub(r"\1MM:SS", lb):
            return f"line differs beyond the expiry: {la!r} vs {lb!r}"
        ea = int(ma.group(2)) * 60 + int(ma.group(3))
        eb = int(mb.group(2)) * 60 + int(mb.group(3))
        if not 0 <= ea - eb <= bound:
            return f"expiry {ea}s then {eb}s, {elapsed:.1f}s apart: {la!r} vs {lb!r}"
    return None


def compare(args, stdin):
    """Run ipvsadm then ipvsctl (bounded retries); returns (ipvsadm's result,
    why they differ or None, attempts used)."""
    why = None
    for attempt in range(ATTEMPTS):
        t0 = time.monotonic()
        a = run("/usr/sbin/ipvsadm", args, stdin)
        b = run(IPVSCTL, args, stdin)
        elapsed = time.monotonic() - t0
        if a[0] != b[0] or a[2] != b[2]:
            why = f"status {a[0]} vs {b[0]}, stderr {a[2]!r} vs {b[2]!r}"
        elif conn_listing(args):
            why = expiry_diff(a[1], b[1], elapsed)
        else:
            why = None if a[1] == b[1] else "output differs"
        if why is None:
            return a, None, attempt + 1
    why += f"\n--- ipvsadm\n{a[1]}{a[2]}--- ipvsctl\n{b[1]}{b[2]}"
    return a, why, ATTEMPTS


def main():
    lab = Lab("cc", rs_addrs4=["10.1.1.1", "10.1.1.2"], rs_addrs6=["fd01::11"])
    try:
        lab.ipvsadm("-A", "-t", "10.0.0.1:80", "-s", "rr")
        for a in ("10.1.1.1", "10.1.1.2"):
            lab.ipvsadm("-a", "-t", "10.0.0.1:80", "-r", f"{a}:80", "-m")
        # Persistent: every connection also makes a template entry.
        lab.ipvsadm("-A", "-t", "[fd00::1]:80", "-s", "wlc", "-p", "120")
        lab.ipvsadm("-a", "-t", "[fd00::1]:80", "-r", "[fd01::11]:80", "-m")
        conns = [lab.connect("10.0.0.1", 80) for _ in range(4)]
        conns += [lab.connect("fd00::1", 80) for _ in range(2)]
        lab.close_one(conns[0])  # one connection in a closing state
        wait_total(lab, 6)
        failures = 0
        for args, stdin in VARIANTS:
            # Both run from this process, inside the director's namespace,
            # one right after the other.
            with netns(lab.lb):
                a, why, attempts = compare(args, stdin)
            lines = a[1].count("\n")
            if why:
                failures += 1
                print(f"MISMATCH ipvsadm {' '.join(args)}: {why}", file=sys.stderr)
            elif conn_listing(args) and lines < 2 + 7:
                failures += 1
                print(f"ipvsadm {' '.join(args)}: only {lines} lines, expected 6 connections and "
                      f"a template:\n{a[1]}", file=sys.stderr)
            elif "--stats" in args and not re.search(r"->\s+\S+\s+[1-9]", a[1]):
                failures += 1
                print(f"ipvsadm {' '.join(args)}: no real server counted a connection:\n{a[1]}",
                      file=sys.stderr)
            else:
                print(f"same: ipvsadm {' '.join(args)} ({lines} lines, attempt {attempts})")
        sys.exit(1 if failures else 0)
    finally:
        lab.close()


if __name__ == "__main__":
    main()
