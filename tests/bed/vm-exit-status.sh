#!/usr/bin/env bash
# scripts/vm.sh returns the guest command's exit status and its output.
source "$(dirname "$0")/../lib.sh"
need_root
VM="$REPO/scripts/vm.sh"

# Each boot costs about half a minute under emulation: three boots (and the
# watchdog's two short ones) cover 0, a non-zero status with output, a hung
# boot and a command outlasting the watchdog. (A `false` boot proved less
# than 7: 1 is also what vm.sh itself returns on its own errors.)
"$VM" -- true || fail "vm.sh -- true returned $?"
# A kernel stuck before init is killed by the boot watchdog, booted once more,
# and reported as 98 (here forced with a watchdog shorter than any boot).
set +e
out="$(VM_BOOT_TIMEOUT=1 "$VM" -- true 2>&1)"; rc=$?
set -e
assert_eq 98 "$rc" "vm.sh with a boot that never reaches init"
[ "$(echo "$out" | grep -c 'hung in early boot')" = 1 ] || fail "expected one retry notice: $out"
echo "$out" | grep -q 'did not finish' || fail "expected the unfinished-command report: $out"
# The guest's status and output come back, and a command that runs longer
# than the boot watchdog is not taken for a hung boot.
set +e
out="$(VM_BOOT_TIMEOUT=40 "$VM" -- sh -c 'sleep 45; echo hello-from-guest; exit 7')"; rc=$?
set -e
assert_eq 7 "$rc" "vm.sh with a command outlasting VM_BOOT_TIMEOUT, exit 7"
echo "$out" | grep -qx hello-from-guest || fail "guest output missing: $out"
