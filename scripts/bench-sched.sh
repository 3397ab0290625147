#!/usr/bin/env bash
# Benchmark (not a test): in-kernel cost of one scheduling decision of vmwlch
# against wlc, with 20 and with 1000 tracked destinations, side by side in one
# VM run; prints the ratios. Uses a benchmark build of the module (debugfs timer).
#
# Under qemu's software emulation absolute times are inflated; the ratios are
# what this measures.
set -euo pipefail
# The benchmark kernel: the test kernel without KASAN and lockdep, whose
# instrumentation would dominate the timings.
export VMWLCH_KERNEL_VARIANT="${VMWLCH_KERNEL_VARIANT:-bench}"
source "$(dirname "$0")/common.sh"
[ "${SKIP_SETUP:-0}" = 1 ] || "$REPO/scripts/setup.sh" --no-cargo --bench-kernel >&2
KB="$(kernel_build_dir)"
KO="$(build_module_copy bench VMWLCH_BENCH=1)"
accel=tcg; [ "$(cat "$KB/.kvm-probe" 2>/dev/null)" = yes ] && accel=kvm
echo "# vmwlch vs wlc scheduling cost ($(date -u +%F), kernel $(cat "$KB/include/config/kernel.release") $KVARIANT variant, qemu $accel, $(nproc) host cores)"
"$REPO/scripts/vm.sh" -- sh -c "insmod $KO && python3 $REPO/tests/py/bench_sched.py"

# The same selection code natively, in user space, against wlc's loop compiled
# by gcc (ipvs-sched-vmwlch/bench/): emulation weighs every instruction alike,
# a CPU does not (wlc's list walk is a chain of dependent loads; the first
# pass of vmwlch reads an array). Kernel-like code generation: no vector
# instructions, no runtime unrolling (as the module's Kbuild).
NB="$(mktemp -d)"
trap 'rm -rf "$NB"' EXIT
gcc -O2 -fno-tree-vectorize -Wall -c "$REPO/ipvs-sched-vmwlch/bench/wlc.c" -o "$NB/wlc.o"
ar rcs "$NB/libwlc.a" "$NB/wlc.o"
rustc --edition 2021 -C opt-level=2 -C panic=abort -C no-vectorize-loops -C no-vectorize-slp \
    -C llvm-args=-unroll-runtime=false -L "$NB" -l static=wlc \
    "$REPO/ipvs-sched-vmwlch/bench/native.rs" -o "$NB/native"
echo
echo "# the same decisions natively, in user space ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'))"
"$NB/native"
