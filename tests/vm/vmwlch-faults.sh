#!/usr/bin/env bash
# Allocation failures (failslab, fail_page_alloc) during configuration churn
# under traffic: no splat, no connection refused while eligible destinations
# exist, the failures and retries counted, and exact decisions once the
# snapshot is current again. Needs a kernel with CONFIG_FAILSLAB,
# CONFIG_FAIL_PAGE_ALLOC and CONFIG_FAULT_INJECTION_DEBUG_FS.
source "$(dirname "$0")/../lib.sh"
in_vm || skip "run through scripts/vm.sh"
[ -d /sys/kernel/debug/failslab ] || skip "kernel without failslab (CONFIG_FAILSLAB, CONFIG_FAULT_INJECTION_DEBUG_FS)"
modprobe ip_vs_vmwlch || fail "modprobe ip_vs_vmwlch"
python3 "$REPO/tests/py/faults.py" || fail "faults"
rmmod ip_vs_vmwlch || fail "rmmod after the fault test"
