#!/usr/bin/env python3
"""Allocation failures during configuration churn under traffic.

Service A (vmwlch) keeps four mapped real servers of positive weight the
whole time, and gains and loses others; service B (vmwlch) is churned
harder, with scheduler switches; the host map's weights change. The changes
come from one worker process (this script with --worker) that speaks IPVS's
and VMWLCH's generic netlink itself, with every message built before it
flags itself (/proc/self/make-it-fail): its slab allocations and page
allocations of order 1 and up then fail at random (failslab and
fail_page_alloc with task-filter), in the kernel's handling of its requests,
so the module's synchronous rebuilds and add_dest tracking run out of
memory, while the module's rebuild work (a kworker, not filtered) retries.
(Flagging an ipvsadm process instead also fails its reads of the VM's 9p
root file system, which breaks other programs.)

Checks: no connection to A is refused (it always has eligible
destinations, whatever the snapshot's state); GET_INFO counted failures and
retries; once the injection stops, the snapshot becomes current and the
module tracks exactly the destinations IPVS has (a destination whose
add_dest ran out of memory is tracked after all); then every decision again
matches the algorithm. Then map commands one at a time under the same
injection: each takes effect with a new snapshot, or fails with ENOMEM
and changes nothing. The kernel log check of scripts/vm.sh catches any
splat. Bounded in count and time.
"""
import errno
import json
import os
import random
import socket
import struct
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(__file__))
from decisions import allowed  # noqa: E402
from ipvslab import Lab, wait_total  # noqa: E402
from vmwlch_nl import C, NetlinkError, Vmwlch, host_attrs, nla_str, parse_attrs  # noqa: E402

DBG = "/sys/kernel/debug"
DURATION = float(os.environ.get("FAULT_SECONDS", "30"))
A, B = "10.0.0.1:80", "10.0.0.1:81"
CORE = ["10.1.1.1", "10.1.1.2", "10.1.2.1", "10.1.2.2"]
EXTRA = [f"10.1.{h}.{v}" for h in (1, 2, 3) for v in range(3, 9)]


def knobs(name, **kv):
    for k, v in kv.items():
        with open(f"{DBG}/{name}/{k.replace('_', '-')}", "w") as f:
            f.write(f"{v}\n")


def inject(on, probability=15):
    """Random failures of the flagged tasks' allocations (or none): every
    slab allocation, and page allocations of order 1 and more (kmalloc of
    large tables; not page tables or user pages, nor vmalloc's highmem
    pages: failing those only makes user space retry its page faults)."""
    if on:
        knobs("failslab", task_filter="Y", ignore_gfp_wait="N", probability=probability, interval=1,
              times=-1, space=0, verbose=0)
        knobs("fail_page_alloc", task_filter="Y", ignore_gfp_wait="N", ignore_gfp_highmem="Y",
              min_order=1, probability=probability, interval=1, times=-1, space=0, verbose=0)
    else:
        for name in ("failslab", "fail_page_alloc"):
            knobs(name, probability=0, times=0)


IPVS_CMD = {"NEW_DEST": 5, "SET_DEST": 6, "DEL_DEST": 7, "SET_SERVICE": 2}


def _nla(t, payload):
    return struct.pack("=HH", 4 + len(payload), t) + payload + b"\0" * (-len(payload) % 4)


def _ipvs_svc(vip, sched=None):
    """IPVS_CMD_ATTR_SERVICE for TCP vip ("a.b.c.d:port"), full if sched is given."""
    a, port = vip.split(":")
    body = (_nla(1, struct.pack("=H", socket.AF_INET)) + _nla(2, struct.pack("=H", socket.IPPROTO_TCP))
            + _nla(3, socket.inet_aton(a) + b"\0" * 12) + _nla(4, struct.pack("!H", int(port))))
    if sched:
        body += (_nla(6, sched.encode() + b"\0") + _nla(7, struct.pack("=II", 0, 0))
                 + _nla(8, struct.pack("=I", 300)) + _nla(9, struct.pack("=I", 0xffffffff)))
    return _nla(1 | 0x8000, body)


def _ipvs_dest(addr, weight=None):
    """IPVS_CMD_ATTR_DEST (NAT); full if weight is given."""
    body = _nla(1, socket.inet_aton(addr) + b"\0" * 12) + _nla(2, struct.pack("!H", 80))
    if weight is not None:
        body += (_nla(3, struct.pack("=I", 0)) + _nla(4, struct.pack("=I", weight))
                 + _nla(5, struct.pack("=I", 0)) + _nla(6, struct.pack("=I", 0)))
    return _nla(2 | 0x8000, body)


def _ops(rng, n):
    """n random changes as (family, cmd, attrs): A's core servers and the
    hosts' positive weights are never touched."""
    out = []
    for _ in range(n):
        r, a = rng.random(), rng.choice(EXTRA)
        w = rng.randint(0, 3)
        if r < 0.30:
            out.append(("IPVS", IPVS_CMD["NEW_DEST"], _ipvs_svc(A) + _ipvs_dest(a, w)))
        elif r < 0.45:
            out.append(("IPVS", IPVS_CMD["DEL_DEST"], _ipvs_svc(A) + _ipvs_dest(a)))
        elif r < 0.60:
            out.append(("IPVS", IPVS_CMD["NEW_DEST"], _ipvs_svc(B) + _ipvs_dest(a, w)))
        elif r < 0.70:
            out.append(("IPVS", IPVS_CMD["SET_DEST"], _ipvs_svc(B) + _ipvs_dest(a, w)))
        elif r < 0.80:
            out.append(("IPVS", IPVS_CMD["DEL_DEST"], _ipvs_svc(B) + _ipvs_dest(a)))
        elif r < 0.88:
            sched = rng.choice(["vmwlch", "vmwlc", "wlc"])
            out.append(("IPVS", IPVS_CMD["SET_SERVICE"], _ipvs_svc(B, sched)))
        else:
            h = rng.choice(["h1", "h2"])
            out.append(("VMWLCH", C["VMWLCH_CMD_SET_HOST"], host_attrs(h, rng.randint(1, 3))))
    return out


def worker(ns, seed, seconds):
    """The flagged process: every message built first, then sent with its
    allocations failing; errors (ENOMEM, lost acks) are expected."""
    nl = Vmwlch(ns)
    fam = {"VMWLCH": nl.family}
    for t, v in parse_attrs(nl._request(0x10, 3, nla_str(2, "IPVS"), 0)[0]):
        if t == 1:
            fam["IPVS"] = struct.unpack("=H", v)[0]
    msgs = []
    for i, (f, cmd, attrs) in enumerate(_ops(random.Random(seed), 4000)):
        payload = struct.pack("=BBH", cmd, 1, 0) + attrs
        msgs.append((100000 + i, struct.pack("=IHHII", 16 + len(payload), fam[f], 0x5, 100000 + i, 0)
                     + payload))
    buf = bytearray(1 << 16)
    nl.s.settimeout(2.0)
    sent = ok = failed = lost = 0
    end = time.time() + seconds
    # Opened before the flag is set: opening it while flagged can fail
    # (ENOMEM), and so can anything else that allocates, such as reading this
    # script's source for a traceback over 9p, which leaves the VM's root
    # file system unusable. So nothing but the netlink loop runs flagged, and
    # the flag is cleared whatever happens in it.
    flag = os.open("/proc/self/make-it-fail", os.O_WRONLY)
    os.write(flag, b"1")
    try:
        for seq, m in msgs:
            if time.time() > end:
                break
            try:
                nl.s.send(m)
                sent += 1
                while True:
                    n = nl.s.recv_into(buf)
                    if n >= 20 and struct.unpack_from("=I", buf, 8)[0] == seq:
                        break
                if struct.unpack_from("=H", buf, 4)[0] == 2 and struct.unpack_from("=i", buf, 16)[0]:
                    failed += 1
                else:
                    ok += 1
            except OSError:
                lost += 1  # an ack lost to a failed allocation (ENOBUFS, timeout)
    finally:
        os.write(flag, b"0")
        os.close(flag)
    print(f"worker: {sent} requests, {ok} ok, {failed} rejected, {lost} without an answer", flush=True)


def map_worker(ns, tries):
    """SET_HOST commands one at a time, each with the allocations of this
    (flagged) task failing at random: each must either take effect with a
    new snapshot, or fail and change nothing (the map as before, no snapshot
    published). Prints the outcome as JSON for main()."""
    nl = Vmwlch(ns)
    nl.s.settimeout(2.0)
    res = {"ok": 0, "enomem": 0, "build_enomem": 0, "lost": 0, "bad": []}
    flag = os.open("/proc/self/make-it-fail", os.O_WRONLY)
    for i in range(tries):
        before, old = nl.info(), nl.hosts()["h3"]["weight"]
        new = old % 9 + 1
        os.write(flag, b"1")
        try:
            nl.set_host("h3", new)
            err = 0
        except NetlinkError as e:
            err = e.errno
        except OSError:
            err = None  # the ack itself was lost to a failed allocation
        finally:
            os.write(flag, b"0")
        after, now = nl.info(), nl.hosts()["h3"]["weight"]
        published = after["rebuilds"] - before["rebuilds"]
        if err is None:
            res["lost"] += 1
            err = 0 if now == new else errno.ENOMEM
        if err == 0:
            res["ok"] += 1
            if now != new or published != 1:
                res["bad"].append(f"{i}: succeeded, weight {now} (want {new}), {published} snapshots published")
        elif err == errno.ENOMEM:
            res["enomem"] += 1
            res["build_enomem"] += after["rebuild_failures"] > before["rebuild_failures"]
            if now != old or published:
                res["bad"].append(f"{i}: ENOMEM, yet weight {now} (was {old}), {published} snapshots published")
        else:
            res["bad"].append(f"{i}: unexpected error {errno.errorcode.get(err, err)}")
        if after["snapshot_current"] != 1:
            res["bad"].append(f"{i}: the snapshot is not current after a map command")
    os.close(flag)
    print(json.dumps(res), flush=True)


def map_commands_all_or_nothing(lab, nl):
    """A map command whose snapshot build runs out of memory fails with
    ENOMEM and leaves map and snapshot as they were (see map_worker)."""
    nl.set_host("h3", 1, [a for a in EXTRA if a.startswith("10.1.3.")])
    end = time.time() + 10
    while nl.info()["snapshot_current"] != 1 and time.time() < end:
        time.sleep(0.1)
    inject(True, probability=10)
    try:
        w = subprocess.run([sys.executable, __file__, "--map-worker", lab.lb, "300"],
                           capture_output=True, text=True, timeout=300)
    finally:
        inject(False)
    print("map commands under allocation failures:", w.stdout.strip(), w.stderr.strip()[-500:])
    try:
        res = json.loads(w.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return ["the map worker gave no result"]
    fails = [f"map command not all-or-nothing: {b}" for b in res["bad"][:5]]
    if not res["build_enomem"]:
        fails.append(f"no map command failed in its snapshot build ({res}): injection ineffective?")
    if not res["ok"]:
        fails.append("no map command succeeded under injection")
    return fails


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
    inject(True)
    try:
        w = subprocess.run([sys.executable, __file__, "--worker", lab.lb, "5", str(DURATION)],
                           capture_output=True, text=True, timeout=DURATION + 120)
    finally:
        inject(False)
    print(w.stdout.strip(), w.stderr.strip()[-500:])
    t.join()
    during = nl.info()
    print(f"faults: {conns['ok']} connections served, {conns['refused']} refused; info {during}")

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
    # The worker changed the hosts' weights (SET_HOST): how far it got
    # depends on the machine's speed, so the map is read back, not assumed.
    sched = {A: "vmwlch"}
    now = nl.hosts()
    hostmap = {a: h for h, e in now.items() for a in e["members"]}
    hostw = {h: e["weight"] for h, e in now.items()}
    print("map after the churn:", {h: (e["weight"], len(e["members"])) for h, e in now.items()})
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
    fails += map_commands_all_or_nothing(lab, nl)
    lab.ipvsadm("-C")
    lab.close()
    for f in fails:
        print("FAIL:", f)
    return 1 if fails else 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["--map-worker"]:
        map_worker(sys.argv[2], int(sys.argv[3]))
        sys.exit(0)
    if sys.argv[1:2] == ["--worker"]:
        worker(sys.argv[2], int(sys.argv[3]), float(sys.argv[4]))
        sys.exit(0)
    sys.exit(main())
