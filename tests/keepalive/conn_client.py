#!/usr/bin/env python3
"""Hold one TCP connection to ADDR:PORT and exchange a line every INTERVAL s
for DURATION s against an echo server. Prints one line per second with the
count of good round trips; exits 0 if every round trip succeeded (the
connection survived), 1 otherwise. Writes 'ready' to READY_FILE once the
connection is established and has exchanged a few lines."""
import socket
import sys
import time

addr, port, duration, interval, ready = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
s = socket.create_connection((addr, port), timeout=5)
s.settimeout(5)
end = time.time() + duration
n = 0
buf = b""
while time.time() < end:
    msg = b"line %d\n" % n
    try:
        s.sendall(msg)
        while not buf.endswith(b"\n"):
            chunk = s.recv(4096)
            if not chunk:
                print("connection closed after %d round trips" % n, flush=True)
                sys.exit(1)
            buf += chunk
    except OSError as e:
        print("error after %d round trips: %s" % (n, e), flush=True)
        sys.exit(1)
    if buf != msg:
        print("bad echo %r" % buf, flush=True)
        sys.exit(1)
    buf = b""
    n += 1
    if n == 20:
        open(ready, "w").write("ready\n")
    time.sleep(interval)
print("ok: %d round trips on one connection" % n, flush=True)
