#!/usr/bin/env bash
# Benchmark (not a test): in-kernel cost of one scheduling decision of vmwlch
# against wlc, with 20 and with 1000 tracked destinations, side by side in one
# VM run; prints the ratios. Uses a benchmark build of the module (debugfs timer).
#
# Under qemu's software emulation absolute times are inflated; the ratios are
# what this measures.
set -euo pipefail
# The benchmark kernel: the test kernel without KASAN, lockdep and kCFI, whose
# instrumentation would dominate the timings.
export VMWLCH_KERNEL_VARIANT="${VMWLCH_KERNEL_VARIANT:-bench}"
source "$(dirname "$0")/common.sh"
#
#   scripts/bench-sched.sh                 the figures of this tree
#   scripts/bench-sched.sh --against REV   the in-kernel ratios of REV's module
#                                          and this tree's, side by side in one boot
AGAINST=
case "${1:-}" in
    --against) AGAINST="${2:?--against needs a git revision}" ;;
    "") ;;
    *) die "usage: scripts/bench-sched.sh [--against REV]" ;;
esac
[ "${SKIP_SETUP:-0}" = 1 ] || "$REPO/scripts/setup.sh" --no-cargo --bench-kernel >&2
KB="$(kernel_build_dir)"
# Services configured besides the timed one in the last row (0: no such row).
OTHERS="${BENCH_OTHER_SERVICES:-10000}"
# Every function of the benchmark build starts a page of its own. Under
# qemu's software emulation a jump to another guest page is looked up rather
# than chained to the next translated block, so where page boundaries fall in
# a build's hot loops moved these ratios by up to 1.9x between builds of
# the same code; a CPU has no such cost. Aligned, every hot function below
# 4 KB sits in one page, in every build and every revision alike.
ALIGN=(KCFLAGS=-falign-functions=4096 KRUSTFLAGS=-Cllvm-args=-align-all-functions=12)
KO="$(build_module_copy bench VMWLCH_BENCH=1 "${ALIGN[@]}")" || die "the module does not build"
accel=tcg; [ "$(cat "$KB/.kvm-probe" 2>/dev/null)" = yes ] && accel=kvm
echo "# vmwlch vs wlc scheduling cost ($(date -u +%F), kernel $(cat "$KB/include/config/kernel.release") $KVARIANT variant, qemu $accel, $(nproc) host cores, module functions page-aligned)"
if [ -n "$AGAINST" ]; then
    REV="$(git -C "$REPO" rev-parse --short "$AGAINST^{commit}")" || die "not a revision: $AGAINST"
    SRC="$(mktemp -d)"
    trap 'rm -rf "$SRC"' EXIT
    git -C "$REPO" archive "$REV" ipvs-sched-vmwlch | tar -x -C "$SRC"
    # Built as "bench-REV" and "bench-tree", the names the comparison prints.
    # The kernel's compiler named explicitly: older Makefiles did not read it
    # from the kernel's config.
    OLD="$(MODSRC="$SRC/ipvs-sched-vmwlch" build_module_copy "bench-$REV" VMWLCH_BENCH=1 "${ALIGN[@]}" \
        LLVM="$KLLVM" CC="clang$KLLVM" LD="ld.lld$KLLVM")" || die "$REV's module does not build on this kernel"
    NEW="$(build_module_copy bench-tree VMWLCH_BENCH=1 "${ALIGN[@]}")" || die "this tree's module does not build"
    # BENCH_OTHER_SERVICES=0 leaves out the row with 10,000 services (modules
    # before b95b079 overflow the kernel stack sorting that many).
    "$REPO/scripts/vm.sh" -- env BENCH_OTHER_SERVICES="$OTHERS" \
        python3 "$REPO/tests/py/bench_sched.py" --modules "$OLD" "$NEW"
    exit
fi
"$REPO/scripts/vm.sh" -- sh -c "insmod $KO && BENCH_OTHER_SERVICES=$OTHERS python3 $REPO/tests/py/bench_sched.py"

# The same selection code natively, in user space, against wlc's loop compiled
# by gcc (ipvs-sched-vmwlch/bench/): emulation weighs every instruction alike,
# a CPU does not (wlc's list walk is a chain of dependent loads; the first
# pass of vmwlch reads an array). Kernel-like code generation: no vector
# instructions, no runtime unrolling (as the module's Kbuild).
NB="$(mktemp -d)"
trap 'rm -rf "$NB"' EXIT
gcc -O2 -fno-strict-overflow -fno-tree-vectorize -Wall -c "$REPO/ipvs-sched-vmwlch/bench/wlc.c" -o "$NB/wlc.o"
ar rcs "$NB/libwlc.a" "$NB/wlc.o"
rustc --edition 2021 -C opt-level=2 -C panic=abort -C no-vectorize-loops -C no-vectorize-slp \
    -C llvm-args=-unroll-runtime=false -L "$NB" -l static=wlc \
    "$REPO/ipvs-sched-vmwlch/bench/native.rs" -o "$NB/native"
echo
echo "# the same decisions natively, in user space ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'))"
"$NB/native"
