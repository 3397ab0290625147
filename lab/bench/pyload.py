#!/usr/bin/env python3
"""The lab's former Python clients (asyncio sensors and web users, as lab.py
ran them before lab-load), kept only for scripts/bench-lab.sh.

    pyload.py HOST SENSOR_PORT WEB_PORT SENSORS WEB_USERS SECONDS

Runs for SECONDS, then prints {"requests": N, "errors": E} on stdout.
"""
import asyncio
import json
import random
import sys
import time

PERIOD = 5.0


async def sensor(host, port, i, stats, end):
    seq = 0
    while time.time() < end:
        try:
            r, w = await asyncio.wait_for(asyncio.open_connection(host, port), 5)
            nxt = time.time() + random.uniform(0, PERIOD)
            while time.time() < end:
                await asyncio.sleep(max(0.0, nxt - time.time()))
                nxt += PERIOD
                seq += 1
                w.write(b"R %d %d %.2f\n" % (i, seq, random.uniform(15, 25)))
                line = await asyncio.wait_for(r.readline(), 20)
                if line.split()[:2] != [b"OK", b"%d" % seq]:
                    raise ConnectionError(f"bad answer {line!r}")
                stats["requests"] += 1
            w.close()
        except (OSError, asyncio.TimeoutError, ConnectionError):
            stats["errors"] += 1
            await asyncio.sleep(1.0)


async def web_user(host, port, stats, end):
    await asyncio.sleep(random.uniform(0, 3.0))
    while time.time() < end:
        try:
            r, w = await asyncio.wait_for(asyncio.open_connection(host, port), 5)
            for _ in range(random.randint(3, 8)):
                w.write(b"GET /dashboard HTTP/1.1\r\nHost: %s\r\n\r\n" % host.encode())
                head = await asyncio.wait_for(r.readuntil(b"\r\n\r\n"), 20)
                n = 0
                for h in head.split(b"\r\n"):
                    if h.lower().startswith(b"content-length:"):
                        n = int(h.split(b":")[1])
                await r.readexactly(n)
                stats["requests"] += 1
                await asyncio.sleep(random.uniform(0.5, 1.5))
            w.close()
        except (OSError, asyncio.TimeoutError, asyncio.IncompleteReadError):
            stats["errors"] += 1
        await asyncio.sleep(random.expovariate(1 / 3.0))


async def main(host, sport, wport, ns, nw, secs):
    stats = {"requests": 0, "errors": 0}
    end = time.time() + secs
    tasks = [asyncio.create_task(sensor(host, sport, i, stats, end)) for i in range(ns)]
    tasks += [asyncio.create_task(web_user(host, wport, stats, end)) for _ in range(nw)]
    await asyncio.sleep(secs)
    for t in tasks:
        t.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    print(json.dumps(stats), flush=True)


if __name__ == "__main__":
    h, sp, wp, ns, nw, secs = sys.argv[1:7]
    random.seed(1)
    asyncio.run(main(h, int(sp), int(wp), int(ns), int(nw), float(secs)))
