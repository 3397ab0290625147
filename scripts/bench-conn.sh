#!/usr/bin/env bash
# Benchmark (not a test): new-connection throughput through IPVS (NAT, 20 real
# servers) with rr, wlc, vmwlc and vmwlch, in alternating rounds in one VM run
# of the benchmark kernel; prints the rates and the ratios against wlc.
set -euo pipefail
export VMWLCH_KERNEL_VARIANT="${VMWLCH_KERNEL_VARIANT:-bench}"
source "$(dirname "$0")/common.sh"
[ "${SKIP_SETUP:-0}" = 1 ] || "$REPO/scripts/setup.sh" --bench-kernel >&2
KO="$(build_module_copy conn)"
echo "# connection throughput through IPVS per scheduler ($(date -u +%F), kernel $KVARIANT variant, $(nproc) host cores)"
"$REPO/scripts/vm.sh" -- sh -c "insmod $KO && python3 $REPO/tests/py/bench_conn.py"
