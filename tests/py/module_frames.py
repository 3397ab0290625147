#!/usr/bin/env python3
"""Static check of the built module: no function's stack frame above a limit.

The kernel stack is 16 KB (32 KB with KASAN, which the test kernel has and so
hides overflows). C gets -Wframe-larger-than from CONFIG_FRAME_WARN; Rust code
gets no such warning, and a large frame in a recursive function (core's
sort_unstable keeps ~2 KB of scratch per level) overflowed the benchmark
kernel's stack. This reads each function's frame allocation (`sub $N, %rsp`)
from the disassembly and fails on any above the limit.

Usage: module_frames.py KO [LIMIT_BYTES]   (default 1024)
"""
import re
import subprocess
import sys


def frames(ko):
    out = subprocess.run(["llvm-objdump-19", "-d", "--no-show-raw-insn", ko],
                         check=True, capture_output=True, text=True).stdout
    fn = None
    for line in out.splitlines():
        m = re.match(r"^[0-9a-f]+ <(.*)>:$", line)
        if m:
            fn = m.group(1)
            continue
        m = re.search(r"subq?\s+\$0x([0-9a-f]+), %rsp", line)
        if m and fn:
            yield int(m.group(1), 16), fn


def main():
    ko = sys.argv[1]
    limit = int(sys.argv[2]) if len(sys.argv) > 2 else 1024
    found = sorted(frames(ko), reverse=True)
    if not found:
        print(f"no stack frame allocations found in {ko}: is it an x86-64 module?")
        return 1
    big = [(n, f) for n, f in found if n > limit]
    print(f"{len(found)} frame allocations; largest {found[0][0]} bytes in {found[0][1]}")
    for n, f in big:
        print(f"too large: {n} bytes (limit {limit}) in {f}")
    return 1 if big else 0


if __name__ == "__main__":
    sys.exit(main())
