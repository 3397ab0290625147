#!/usr/bin/env bash
# The VM runner fails a run whose kernel log shows a WARNING, even when the
# command itself succeeds: provoke one through lkdtm.
source "$(dirname "$0")/../lib.sh"
need_root
set +e
out="$("$REPO/scripts/vm.sh" -- sh -c 'echo WARNING > /sys/kernel/debug/provoke-crash/DIRECT; true' 2>&1)"
rc=$?
set -e
assert_eq 99 "$rc" "vm.sh status after a provoked WARNING"
echo "$out" | grep -q "WARNING:" || fail "offending kernel log lines not printed: $out"
echo "$out" | grep -q "lkdtm" || fail "expected the lkdtm frame in the printed lines"
# The same VM run without a provoked warning passes (no false positive at boot).
"$REPO/scripts/vm.sh" -- true || fail "a clean run failed the kernel-log check"
