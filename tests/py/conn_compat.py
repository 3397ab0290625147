"""ipvsctl's connection listing (-c) against Debian's ipvsadm on a live IPVS
connection table: established, closing and persistence-template entries, IPv4
and IPv6. Run inside the test VM by tests/vm/ipvsctl-conn.sh."""
import os
import re
import subprocess
import sys

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
ATTEMPTS = 10


def conn_listing(args):
    """Does the command list connections (-c, possibly bundled: -Lcn)?"""
    return any("c" in a[1:] for a in args if a.startswith("-") and not a.startswith("--"))


def run(tool, args, stdin):
    # Both tools run as "ipvsadm" (usage texts and program names agree).
    r = subprocess.run(["ipvsadm"] + args, executable=tool, capture_output=True, text=True, timeout=60,
                       input=stdin or "")
    return r.returncode, r.stdout, r.stderr


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
            # The expiry column ticks every second: a difference is only real
            # if it persists over back-to-back runs.
            # Both run from this process, inside the director's namespace,
            # one right after the other, in alternating order.
            with netns(lab.lb):
                for attempt in range(ATTEMPTS):
                    if attempt % 2 == 0:
                        a = run("/usr/sbin/ipvsadm", args, stdin)
                        b = run(IPVSCTL, args, stdin)
                    else:
                        b = run(IPVSCTL, args, stdin)
                        a = run("/usr/sbin/ipvsadm", args, stdin)
                    if a == b:
                        break
            lines = a[1].count("\n")
            if a != b:
                failures += 1
                print(f"MISMATCH ipvsadm {' '.join(args)} (status {a[0]} vs {b[0]}):\n"
                      f"--- ipvsadm\n{a[1]}{a[2]}--- ipvsctl\n{b[1]}{b[2]}", file=sys.stderr)
            elif conn_listing(args) and lines < 2 + 7:
                failures += 1
                print(f"ipvsadm {' '.join(args)}: only {lines} lines, expected 6 connections and "
                      f"a template:\n{a[1]}", file=sys.stderr)
            elif "--stats" in args and not re.search(r"->\s+\S+\s+[1-9]", a[1]):
                failures += 1
                print(f"ipvsadm {' '.join(args)}: no real server counted a connection:\n{a[1]}",
                      file=sys.stderr)
            else:
                print(f"same: ipvsadm {' '.join(args)} ({lines} lines, attempt {attempt + 1})")
        sys.exit(1 if failures else 0)
    finally:
        lab.close()


if __name__ == "__main__":
    main()
