#!/usr/bin/env python3
"""Send crafted VRRPv3 packets (valid or deliberately broken) to 224.0.0.18.

usage: vrrp_inject.py IFACE SRC KIND COUNT [PRIO] [VRID] [DST] [VIP]
KIND: valid | ttl | checksum | vrid | short | version | count
  version: a well-formed VRRPv2 advert (RFC 3768: 1 s, no authentication),
  which a version 3 instance must not take for one of its own.
"""
import socket
import struct
import sys
import time


def csum(b):
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return (~s) & 0xFFFF


def vrrp(src, dst, vrid, prio, addrs, intv=10):
    a = b"".join(socket.inet_aton(x) for x in addrs)
    m = bytes([0x31, vrid, prio, len(addrs)]) + struct.pack("!HH", intv, 0) + a
    ph = socket.inet_aton(src) + socket.inet_aton(dst) + bytes([0, 112]) + struct.pack("!H", len(m))
    return m[:6] + struct.pack("!H", csum(ph + m)) + m[8:]


def vrrp2(vrid, prio, addrs, secs=1):
    a = b"".join(socket.inet_aton(x) for x in addrs)
    m = bytes([0x21, vrid, prio, len(addrs), 0, secs, 0, 0]) + a + bytes(8)
    return m[:6] + struct.pack("!H", csum(m)) + m[8:]


def ip(src, dst, payload, ttl=255):
    h = bytes([0x45, 0xC0]) + struct.pack("!H", 20 + len(payload)) + bytes(4)
    h += bytes([ttl, 112, 0, 0]) + socket.inet_aton(src) + socket.inet_aton(dst)
    h = h[:10] + struct.pack("!H", csum(h)) + h[12:]
    return h + payload


def main():
    iface, src, kind, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    prio = int(sys.argv[5]) if len(sys.argv) > 5 else 255
    vrid = int(sys.argv[6]) if len(sys.argv) > 6 else 51
    dst = sys.argv[7] if len(sys.argv) > 7 else "224.0.0.18"
    vip = [sys.argv[8] if len(sys.argv) > 8 else "192.0.2.100"]
    ttl = 255
    if kind == "vrid":
        vrid = 52 if vrid == 51 else 51
    m = vrrp(src, dst, vrid, prio, vip)
    if kind == "ttl":
        ttl = 64
    elif kind == "checksum":
        m = m[:6] + bytes([m[6] ^ 0xFF, m[7]]) + m[8:]
    elif kind == "short":
        m = m[:6]
    elif kind == "version":
        m = vrrp2(vrid, prio, vip)
    elif kind == "count":
        m = m[:3] + bytes([5]) + m[4:]
    elif kind != "valid" and kind != "vrid":
        sys.exit("unknown kind " + kind)
    s = socket.socket(socket.AF_INET, socket.SOCK_RAW, 112)
    s.setsockopt(socket.IPPROTO_IP, socket.IP_HDRINCL, 1)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_BINDTODEVICE, iface.encode())
    pkt = ip(src, dst, m, ttl)
    for _ in range(count):
        s.sendto(pkt, (dst, 0))
        time.sleep(0.01)


if __name__ == "__main__":
    main()
