#!/usr/bin/env bash
# The module's fallback wlc against the kernel's wlc loop in C, at weight
# INT_MAX with 10^6 simulated connections per scenario: same choice at every
# arrival, no overflow (built with overflow checks, as
# CONFIG_RUST_OVERFLOW_CHECKS builds the module). See
# ipvs-sched-vmwlch/bench/wlc_oracle.rs.
set -euo pipefail
B="$(cd "$(dirname "$0")/../../ipvs-sched-vmwlch/bench" && pwd)"
T="$(mktemp -d)"
trap 'rm -rf "$T"' EXIT
# -fno-strict-overflow: the kernel's; wlc's int overhead wraps as it does there.
gcc -O2 -fno-strict-overflow -Wall -Werror -c "$B/wlc.c" -o "$T/wlc.o"
ar rcs "$T/libwlc.a" "$T/wlc.o"
rustc --edition 2021 -C opt-level=2 -C overflow-checks=on -C debug-assertions=on \
    -D warnings -L "$T" -l static=wlc "$B/wlc_oracle.rs" -o "$T/wlc_oracle"
"$T/wlc_oracle"
