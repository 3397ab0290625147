"""A minimal, independent client of the VMWLCH generic netlink family for tests.

Written from the uapi header with Python's own AF_NETLINK sockets, so tests of
the kernel module do not depend on ipvsctl (and can send deliberately bad
messages). Constants are read from the header itself.
"""
import errno
import os
import re
import socket
import struct

from netns import netns

HERE = os.path.dirname(os.path.abspath(__file__))
HEADER = os.path.join(HERE, "..", "..", "ipvs-sched-vmwlch", "include", "uapi", "linux", "vmwlch.h")

NLM_F_REQUEST, NLM_F_MULTI, NLM_F_ACK, NLM_F_DUMP = 1, 2, 4, 0x300
NLMSG_ERROR, NLMSG_DONE = 2, 3
GENL_ID_CTRL, CTRL_CMD_GETFAMILY, CTRL_ATTR_FAMILY_ID, CTRL_ATTR_FAMILY_NAME = 0x10, 3, 1, 2
NETLINK_EXT_ACK, NLMSGERR_ATTR_MSG, NLMSGERR_ATTR_OFFS = 11, 1, 2
NLA_F_NESTED = 0x8000


def _constants():
    text = open(HEADER).read()
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    c = {}
    for m in re.finditer(r"#define\s+(\w+)\s+(\d+)", text):
        c[m.group(1)] = int(m.group(2))
    for body in re.findall(r"enum\s+\w+\s*{(.*?)}", text, flags=re.S):
        n = 0
        for item in body.split(","):
            item = item.strip()
            if not item:
                continue
            if "=" in item:
                name, val = item.split("=")
                n = int(val)
                item = name.strip()
            c[item] = n
            n += 1
    return c


C = _constants()


def nla(t, payload):
    l = 4 + len(payload)
    return struct.pack("=HH", l, t) + payload + b"\0" * ((4 - l % 4) % 4)


def nla_u32(t, v):
    return nla(t, struct.pack("=I", v))


def nla_str(t, s):
    return nla(t, s.encode() + b"\0")


def addr_bytes(a):
    return socket.inet_pton(socket.AF_INET6 if ":" in a else socket.AF_INET, a)


def members(addrs):
    return nla(C["VMWLCH_A_HOST_MEMBERS"] | NLA_F_NESTED,
               b"".join(nla(C["VMWLCH_MEMBER_A_ADDR"], addr_bytes(a)) for a in addrs))


def host_attrs(name, weight=None, vms=None):
    out = nla_str(C["VMWLCH_A_HOST_NAME"], name)
    if weight is not None:
        out += nla_u32(C["VMWLCH_A_HOST_WEIGHT"], weight)
    if vms:
        out += members(vms)
    return out


def parse_attrs(buf):
    out = []
    i = 0
    while i + 4 <= len(buf):
        l, t = struct.unpack_from("=HH", buf, i)
        if l < 4:
            break
        out.append((t & 0x3FFF, buf[i + 4:i + l]))
        i += (l + 3) & ~3
    return out


class NetlinkError(Exception):
    def __init__(self, err, msg, offset):
        super().__init__(f"{errno.errorcode.get(err, err)}: {msg}")
        self.errno, self.msg, self.offset = err, msg, offset


def _netns_socket(name):
    """A NETLINK_GENERIC socket in network namespace `name` (None: ours)."""
    with netns(name):
        return socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 16)  # NETLINK_GENERIC


class Vmwlch:
    def __init__(self, netns=None):
        self.s = _netns_socket(netns)
        self.s.setsockopt(270, NETLINK_EXT_ACK, 1)  # SOL_NETLINK
        self.s.bind((0, 0))
        self.seq = 0
        self.family = self._resolve()

    def _resolve(self):
        msgs = self._request(GENL_ID_CTRL, CTRL_CMD_GETFAMILY,
                             nla_str(CTRL_ATTR_FAMILY_NAME, "VMWLCH"), 0)
        for t, v in parse_attrs(msgs[0]):
            if t == CTRL_ATTR_FAMILY_ID:
                return struct.unpack("=H", v)[0]
        raise RuntimeError("no family id")

    def raw(self, payload_after_nlhdr, msg_type=None, flags=NLM_F_REQUEST | NLM_F_ACK):
        """Send arbitrary bytes after the netlink header; returns reply payloads."""
        self.seq += 1
        t = self.family if msg_type is None else msg_type
        hdr = struct.pack("=IHHII", 16 + len(payload_after_nlhdr), t, flags, self.seq, 0)
        self.s.send(hdr + payload_after_nlhdr)
        return self._collect(self.seq, flags)

    def _request(self, family, cmd, attrs, flags_extra=NLM_F_ACK, version=1):
        self.seq += 1
        payload = struct.pack("=BBH", cmd, version, 0) + attrs
        flags = NLM_F_REQUEST | flags_extra
        hdr = struct.pack("=IHHII", 16 + len(payload), family, flags, self.seq, 0)
        self.s.send(hdr + payload)
        return self._collect(self.seq, flags)

    def _collect(self, seq, flags):
        out = []
        while True:
            data = self.s.recv(1 << 20)
            i = 0
            while i + 16 <= len(data):
                l, t, f, s, _ = struct.unpack_from("=IHHII", data, i)
                body = data[i + 16:i + l]
                i += (l + 3) & ~3
                if s != seq:
                    continue
                if t == NLMSG_DONE:
                    return out
                if t == NLMSG_ERROR:
                    err = -struct.unpack_from("=i", body)[0]
                    if err == 0:
                        return out
                    msg, off = "", None
                    # extack TLVs follow the original header (capped: 16 bytes) when NLM_F_CAPPED
                    olen = 16 if f & 0x100 else struct.unpack_from("=I", body, 4)[0]
                    for at, av in parse_attrs(body[4 + olen:]) if f & 0x200 else []:
                        if at == NLMSGERR_ATTR_MSG:
                            msg = av.rstrip(b"\0").decode()
                        elif at == NLMSGERR_ATTR_OFFS:
                            off = struct.unpack("=I", av)[0]
                    raise NetlinkError(err, msg, off)
                out.append(body[4:])  # skip genl header
                if not (f & NLM_F_MULTI) and not (flags & 0x300):
                    if not flags & NLM_F_ACK:
                        return out

    def cmd(self, name, attrs=b""):
        return self._request(self.family, C["VMWLCH_CMD_" + name], attrs)

    def set_host(self, name, weight=None, vms=None):
        self.cmd("SET_HOST", host_attrs(name, weight, vms))

    def replace(self, hosts):
        """hosts: {name: (weight, [addrs])}"""
        a = b"".join(nla(C["VMWLCH_A_HOST"] | NLA_F_NESTED, host_attrs(n, w, v))
                     for n, (w, v) in hosts.items())
        self.cmd("REPLACE_MAP", a)

    def hosts(self):
        out = {}
        for m in self._request(self.family, C["VMWLCH_CMD_GET_HOST"], b"", NLM_F_DUMP):
            h = {}
            mem = []
            for t, v in parse_attrs(m):
                if t == C["VMWLCH_A_HOST_NAME"]:
                    h["name"] = v.rstrip(b"\0").decode()
                elif t == C["VMWLCH_A_HOST_WEIGHT"]:
                    h["weight"] = struct.unpack("=I", v)[0]
                elif t in (C["VMWLCH_A_HOST_ACTIVECONNS"], C["VMWLCH_A_HOST_INACTCONNS"]):
                    key = "active" if t == C["VMWLCH_A_HOST_ACTIVECONNS"] else "inactive"
                    h[key] = struct.unpack("=Q", v)[0]
                elif t == C["VMWLCH_A_HOST_DESTS"]:
                    h["dests"] = struct.unpack("=I", v)[0]
                elif t == C["VMWLCH_A_HOST_MEMBERS"]:
                    for _, a in parse_attrs(v):
                        fam = socket.AF_INET if len(a) == 4 else socket.AF_INET6
                        mem.append(socket.inet_ntop(fam, a))
            e = out.setdefault(h["name"], {"members": []})
            for k, v in h.items():
                if k != "name":
                    e[k] = v
            e["members"] += mem
        return out

    def info(self):
        (m,) = self._request(self.family, C["VMWLCH_CMD_GET_INFO"], b"", 0)
        names = {v: k for k, v in C.items() if k.startswith("VMWLCH_A_INFO_")}
        out = {}
        for t, v in parse_attrs(m):
            k = names.get(t, str(t))[len("VMWLCH_A_INFO_"):].lower()
            out[k] = (v.rstrip(b"\0").decode() if k == "version"
                      else struct.unpack("=Q" if len(v) == 8 else "=I", v)[0])
        return out
