#!/usr/bin/env python3
"""A new connection to VIP:PORT every INTERVAL seconds for DURATION seconds,
each asking GET /ping; one process of its own, so that the lab's busy event
loop does not delay the attempts.

    prober.py VIP PORT DURATION INTERVAL CONNECT_TIMEOUT

Prints {"ready": true} once running, then one line per attempt:
{"t": start (wall clock), "ok": bool, "err": text or null}. An attempt
fails if it is refused, gets no answer within CONNECT_TIMEOUT, or needed a
SYN retransmission (the socket's TCP_INFO counts it): a lost SYN is what a
client notices, while a connect that is merely slow in a starved emulated VM
is not a failure of the director."""
import asyncio
import json
import socket
import struct
import sys
import time

# struct tcp_info: 8 bytes of u8 fields, then u32s; tcpi_total_retrans is the
# 24th u32 (include/uapi/linux/tcp.h, stable since 2.6)
TCPI_TOTAL_RETRANS = 8 + 23 * 4


def retransmissions(w):
    sock = w.get_extra_info("socket")
    info = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 104)
    return struct.unpack_from("I", info, TCPI_TOTAL_RETRANS)[0]


async def attempt(vip, port, connect_timeout):
    t = time.time()
    w = None
    try:
        r, w = await asyncio.wait_for(asyncio.open_connection(vip, port), connect_timeout)
        if retransmissions(w):
            raise ConnectionError("SYN retransmitted")
        w.write(b"GET /ping HTTP/1.1\r\nHost: lab\r\nConnection: close\r\n\r\n")
        head = await asyncio.wait_for(r.readuntil(b"\r\n\r\n"), 5)
        if not head.startswith(b"HTTP/1.1 200"):
            raise ConnectionError(f"bad answer {head[:30]!r}")
        res = dict(t=t, ok=True, err=None)
    except Exception as e:  # noqa: BLE001 - every failure is a failed attempt
        res = dict(t=t, ok=False, err=repr(e)[:80])
    finally:
        if w is not None:
            w.close()
    print(json.dumps(res), flush=True)


async def main(vip, port, duration, interval, connect_timeout):
    print(json.dumps({"ready": True}), flush=True)
    tasks = []
    end = time.time() + duration
    nxt = time.time()
    while nxt < end:
        tasks.append(asyncio.create_task(attempt(vip, port, connect_timeout)))
        nxt += interval
        await asyncio.sleep(max(0.0, nxt - time.time()))
    await asyncio.gather(*tasks)


if __name__ == "__main__":
    if len(sys.argv) != 6:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    a = sys.argv[1:]
    asyncio.run(main(a[0], int(a[1]), float(a[2]), float(a[3]), float(a[4])))
