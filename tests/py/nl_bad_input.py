#!/usr/bin/env python3
"""The VMWLCH netlink family rejects bad input with an error and a reason
(extack) and leaves the map unchanged; good input round-trips."""
import errno
import os
import socket
import struct
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from vmwlch_nl import C, NLA_F_NESTED, NetlinkError, Vmwlch, host_attrs, members, nla, nla_str, nla_u32  # noqa

FAILS = []
N = {"ok": 0}


def check(cond, what):
    if cond:
        N["ok"] += 1
    else:
        FAILS.append(what)
        print("FAIL:", what, flush=True)


nl = Vmwlch()
# root may exceed wmem_max: allow the 1.3 MB over-limit message below
nl.s.setsockopt(socket.SOL_SOCKET, 32, 8 << 20)  # SO_SNDBUFFORCE

# --- good input round-trips ---------------------------------------------------
nl.cmd("FLUSH")
nl.set_host("hostA", weight=5, vms=["10.2.0.1", "10.2.0.2", "fd02::1"])
nl.set_host("host-b.rack:1", vms=["10.2.0.3"])
nl.set_host("hostA", vms=["10.2.0.3"])  # moves 10.2.0.3 from host-b to hostA
h = nl.hosts()
check(h["hostA"]["weight"] == 5 and sorted(h["hostA"]["members"]) == ["10.2.0.1", "10.2.0.2", "10.2.0.3", "fd02::1"],
      f"hostA after set/move: {h.get('hostA')}")
check(h["host-b.rack:1"]["weight"] == 1 and h["host-b.rack:1"]["members"] == [], f"host-b defaults: {h}")
nl.cmd("DEL_MEMBERS", members(["10.2.0.2"]))
nl.cmd("ADD_MEMBERS", host_attrs("host-b.rack:1", vms=["10.2.0.9"]))
nl.cmd("DEL_HOST", host_attrs("host-b.rack:1"))
h = nl.hosts()
check(list(h) == ["hostA"] and "10.2.0.2" not in h["hostA"]["members"], f"after del: {h}")
# A large map (1000 hosts x 60 VMs) replaces atomically and dumps completely (multi-part).
big = {f"n{i}": (1 + i % 7, [f"10.{100 + i // 250}.{i % 250}.{j}" for j in range(1, 61)]) for i in range(1000)}
nl.replace(big)
h = nl.hosts()
check(len(h) == 1000 and sum(len(v["members"]) for v in h.values()) == 60000, "big map dump size")
check(h["n999"]["weight"] == 1 + 999 % 7 and len(h["n999"]["members"]) == 60, "big map entry")
baseline_info = nl.info()
check(baseline_info["hosts"] == 1000 and baseline_info["members"] == 60000, f"info {baseline_info}")
nl.replace({"h1": (2, ["10.3.0.1", "fd03::1"]), "h2": (0, ["10.3.0.2"])})
baseline = nl.hosts()


def expect_reject(label, fn, err, msg_part=None, need_msg=True):
    try:
        fn()
    except NetlinkError as e:
        errs = err if isinstance(err, tuple) else (err,)
        check(e.errno in errs, f"{label}: errno {errno.errorcode.get(e.errno)} (want {[errno.errorcode[x] for x in errs]}), msg {e.msg!r}")
        check(bool(e.msg) or not need_msg, f"{label}: no extack message")
        if msg_part:
            check(msg_part in e.msg, f"{label}: message {e.msg!r} lacks {msg_part!r}")
        print(f"ok   {label}: {errno.errorcode.get(e.errno)} {e.msg!r}", flush=True)
    else:
        check(False, f"{label}: accepted")
    check(nl.hosts() == baseline, f"{label}: state changed")


EINVAL, ERANGE = errno.EINVAL, errno.ERANGE
POLICY = (EINVAL, ERANGE)  # rejected by the netlink policy (core validation)
expect_reject("SET_HOST without name", lambda: nl.cmd("SET_HOST", nla_u32(C["VMWLCH_A_HOST_WEIGHT"], 3)),
              EINVAL, "missing HOST_NAME")
expect_reject("name too long", lambda: nl.set_host("x" * 64), POLICY)
expect_reject("empty name", lambda: nl.set_host(""), EINVAL, "host name")
expect_reject("name with a space", lambda: nl.set_host("a b"), EINVAL, "host name")
expect_reject("name not NUL-terminated",
              lambda: nl.cmd("SET_HOST", nla(C["VMWLCH_A_HOST_NAME"], b"abcd")), EINVAL)
expect_reject("weight above 65535", lambda: nl.set_host("h1", weight=65536), POLICY)
expect_reject("weight of 2 bytes",
              lambda: nl.cmd("SET_HOST", host_attrs("h1") + nla(C["VMWLCH_A_HOST_WEIGHT"], b"\1\0")), POLICY)
expect_reject("5-byte member address",
              lambda: nl.cmd("SET_HOST", host_attrs("h1") + nla(C["VMWLCH_A_HOST_MEMBERS"] | NLA_F_NESTED,
                                                                 nla(C["VMWLCH_MEMBER_A_ADDR"], b"12345"))),
              EINVAL, "4 (IPv4) or 16 (IPv6)")
expect_reject("17-byte member address",
              lambda: nl.cmd("SET_HOST", host_attrs("h1") + nla(C["VMWLCH_A_HOST_MEMBERS"] | NLA_F_NESTED,
                                                                 nla(C["VMWLCH_MEMBER_A_ADDR"], b"1" * 17))),
              POLICY)
expect_reject("unknown member attribute",
              lambda: nl.cmd("SET_HOST", host_attrs("h1") + nla(C["VMWLCH_A_HOST_MEMBERS"] | NLA_F_NESTED,
                                                                 nla(7, b"1234"))), EINVAL)
expect_reject("unknown attribute", lambda: nl.cmd("SET_HOST", host_attrs("h1") + nla(200, b"xxxx")), EINVAL)
expect_reject("output-only attribute", lambda: nl.cmd("SET_HOST", host_attrs("h1") + nla(C["VMWLCH_A_HOST_ACTIVECONNS"], b"\0" * 8)),
              EINVAL)
expect_reject("attribute length past the message",
              lambda: nl.raw(struct.pack("=BBH", C["VMWLCH_CMD_SET_HOST"], 1, 0) + struct.pack("=HH", 200, 1) + b"ab\0\0"),
              EINVAL)
expect_reject("ADD_MEMBERS to unknown host", lambda: nl.cmd("ADD_MEMBERS", host_attrs("nope", vms=["10.9.9.9"])),
              errno.ENOENT, "no such host")
expect_reject("ADD_MEMBERS without members", lambda: nl.cmd("ADD_MEMBERS", host_attrs("h1")), EINVAL, "HOST_MEMBERS")
expect_reject("DEL_HOST unknown", lambda: nl.cmd("DEL_HOST", host_attrs("nope")), errno.ENOENT, "no such host")
expect_reject("DEL_HOST with extra attributes", lambda: nl.cmd("DEL_HOST", host_attrs("h1", weight=3)), EINVAL)
expect_reject("DEL_MEMBERS of an unmapped address", lambda: nl.cmd("DEL_MEMBERS", members(["10.3.0.1", "10.9.9.9"])),
              errno.ENOENT, "not mapped")
expect_reject("FLUSH with an attribute", lambda: nl.cmd("FLUSH", host_attrs("h1")), EINVAL)
expect_reject("REPLACE_MAP with a bare name", lambda: nl.cmd("REPLACE_MAP", nla_str(C["VMWLCH_A_HOST_NAME"], "x")),
              EINVAL, "only HOST")
expect_reject("REPLACE_MAP duplicate names", lambda: nl.replace_raw([("a", 1, []), ("a", 2, [])])
              if hasattr(nl, "replace_raw") else nl.cmd("REPLACE_MAP", b"".join(
                  nla(C["VMWLCH_A_HOST"] | NLA_F_NESTED, host_attrs(n, w, v)) for n, w, v in [("a", 1, []), ("a", 2, [])])),
              EINVAL, "duplicate host name")
expect_reject("REPLACE_MAP address under two hosts", lambda: nl.replace({"a": (1, ["10.5.0.1"]), "b": (1, ["10.5.0.1"])}),
              EINVAL, "two hosts")
expect_reject("REPLACE_MAP host without name",
              lambda: nl.cmd("REPLACE_MAP", nla(C["VMWLCH_A_HOST"] | NLA_F_NESTED, nla_u32(C["VMWLCH_A_HOST_WEIGHT"], 1))),
              EINVAL, "missing HOST_NAME")
expect_reject("too many hosts", lambda: nl.replace({f"h{i}": (1, []) for i in range(C["VMWLCH_MAX_HOSTS"] + 1)}),
              errno.ENOSPC, "too many hosts")
# A nest is limited to 64 KiB, so the member limit is reached across hosts.
over = {f"m{i}": (1, [f"10.{40 + i // 250}.{i % 250}.{j}" for j in range(1, 67)]) for i in range(1000)}
expect_reject("too many members", lambda: nl.replace(over), errno.ENOSPC, "too many mapped")
# Each command has its own policy: what it does not take is refused, not ignored.
expect_reject("ADD_MEMBERS with a weight",
              lambda: nl.cmd("ADD_MEMBERS", host_attrs("h1", weight=3, vms=["10.3.0.9"])),
              EINVAL, "does not change the weight")
expect_reject("GET_INFO with an attribute",
              lambda: nl._request(nl.family, C["VMWLCH_CMD_GET_INFO"], host_attrs("h1"), 0), EINVAL)
expect_reject("DEL_MEMBERS with a weight",
              lambda: nl.cmd("DEL_MEMBERS", nla_u32(C["VMWLCH_A_HOST_WEIGHT"], 1) + members(["10.3.0.1"])), EINVAL,
              "takes no weight")
# genetlink itself refuses a command the family does not have (no extack text).
expect_reject("unknown command", lambda: nl._request(nl.family, 99, b""), errno.EOPNOTSUPP, need_msg=False)
expect_reject("GET_HOST of an unknown host", lambda: nl._request(nl.family, C["VMWLCH_CMD_GET_HOST"], host_attrs("nope"), 0),
              errno.ENOENT, "no such host")

def run_as(prefix, body):
    """`body` (after `from vmwlch_nl import *`) in a fresh Python under `prefix`
    (another user, another namespace); its stdout and stderr."""
    code = "import sys; sys.path.insert(0, %r)\nfrom vmwlch_nl import *\n" % os.path.dirname(__file__) + body
    r = subprocess.run(prefix + [sys.executable, "-c", code], capture_output=True, text=True)
    return r.stdout, r.stderr


# --- unprivileged callers are refused --------------------------------------------
out, err = run_as(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"],
                  "import errno\nnl = Vmwlch()\n"
                  "for name, f in [('set', lambda: nl.set_host('evil')), ('dump', nl.hosts), ('info', nl.info)]:\n"
                  "    try:\n        f()\n        print(name, 'accepted')\n"
                  "    except NetlinkError as e:\n        print(name, errno.errorcode.get(e.errno))\n")
print("unprivileged:", out.strip().replace("\n", "; "), err.strip()[-200:])
check(out.split() == ["set", "EPERM", "dump", "EPERM", "info", "EPERM"], f"unprivileged results: {out!r}")
check(nl.hosts() == baseline, "unprivileged caller changed the state")

# --- a namespace's own administrator (GENL_UNS_ADMIN_PERM) -----------------------
# root of a new user namespace that owns a new network namespace: CAP_NET_ADMIN
# there and nowhere else. It manages that namespace's map, not the initial one's.
out, err = run_as(["unshare", "--user", "--map-root-user", "--net"],
                  "nl = Vmwlch()\nnl.set_host('own', weight=4, vms=['10.7.0.1'])\n"
                  "h = nl.hosts()\nprint('hosts', sorted(h), h['own']['weight'], h['own']['members'])\n"
                  "print('info', nl.info()['hosts'])\n")
print("user namespace root:", out.strip().replace("\n", "; "), err.strip()[-300:])
check(out.split() == ["hosts", "['own']", "4", "['10.7.0.1']", "info", "1"],
      f"user namespace root results: {out!r} {err[-300:]!r}")
check(nl.hosts() == baseline, "a user namespace's root changed the initial namespace's map")


def raw_dump(between=None):
    """A host dump read one part per recv; `between` runs after the first
    part. Returns (parts, the OR of every message's flags)."""
    nl.seq += 1
    nl.s.send(struct.pack("=IHHII", 20, nl.family, 0x301, nl.seq, 0)  # REQUEST | DUMP
              + struct.pack("=BBH", C["VMWLCH_CMD_GET_HOST"], 1, 0))
    parts, flags, done = 0, 0, False
    while not done:
        data = nl.s.recv(1 << 16)
        parts += 1
        i = 0
        while i + 16 <= len(data):
            ln, t, f, sq, _ = struct.unpack_from("=IHHII", data, i)
            i += (ln + 3) & ~3
            if sq == nl.seq:
                flags |= f
                done |= t == 3  # NLMSG_DONE
        if parts == 1 and between:
            between()
    return parts, flags


# --- a dump interrupted by a change is flagged (NLM_F_DUMP_INTR) ------------------
# 300 hosts x 60 members take several parts; a change between two parts must
# flag the next message so that the client dumps again.
nl.replace({f"d{i}": (1, [f"10.{60 + i // 250}.{i % 250}.{j}" for j in range(1, 61)]) for i in range(300)})
other = Vmwlch()
parts, flags = raw_dump(between=lambda: other.set_host("d0", weight=2))
check(parts > 2, f"the dump took {parts} parts (several wanted)")
check(flags & 0x10, "a dump with a change between its parts was not flagged NLM_F_DUMP_INTR")
print(f"interrupted dump: {parts} parts, NLM_F_DUMP_INTR {'set' if flags & 0x10 else 'NOT set'}", flush=True)
_, flags = raw_dump()
check(not flags & 0x10, "a dump without a change was flagged NLM_F_DUMP_INTR")
nl.cmd("FLUSH")

print(f"{N['ok']} checks passed, {len(FAILS)} failed")
sys.exit(1 if FAILS else 0)
