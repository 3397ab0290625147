#!/usr/bin/env bash
# Benchmark (not a test): new-connection throughput through IPVS (NAT, 20 real
# servers) with rr, wlc, vmwlc and vmwlch, in alternating rounds in one VM run
# of the benchmark kernel; prints the rates and the ratios against wlc.
set -euo pipefail
source "$(dirname "$0")/common.sh"
[ "${SKIP_SETUP:-0}" = 1 ] || "$REPO/scripts/setup.sh" --bench-kernel >&2
export VMWLCH_KERNEL_VARIANT="${VMWLCH_KERNEL_VARIANT:-bench}"
KVARIANT=$VMWLCH_KERNEL_VARIANT; KFRAGS=("$KFRAG"); [ "$KVARIANT" = test ] || KFRAGS+=("$REPO/kernel/vmwlch-$KVARIANT.config")
KB="$(kernel_build_dir)"
M="$CACHE/module-$KVARIANT"
rm -rf "$M"; mkdir -p "$M"
cp -r "$REPO/ipvs-sched-vmwlch/Kbuild" "$REPO/ipvs-sched-vmwlch/Makefile" \
    "$REPO/ipvs-sched-vmwlch/src" "$REPO/ipvs-sched-vmwlch/include" "$M/"
make -s -C "$M" KDIR="$KB" BINDGEN="$TOOLS/bin/bindgen" >&2
echo "# connection throughput through IPVS per scheduler ($(date -u +%F), kernel $KVARIANT variant, $(nproc) host cores)"
"$REPO/scripts/vm.sh" -- sh -c "insmod $M/ip_vs_vmwlch.ko && python3 $REPO/tests/py/bench_conn.py"
