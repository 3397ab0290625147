#!/usr/bin/env bash
# scripts/vm.sh returns the guest command's exit status and its output.
source "$(dirname "$0")/../lib.sh"
need_root
VM="$REPO/scripts/vm.sh"

"$VM" -- true || fail "vm.sh -- true returned $?"
set +e
"$VM" -- false; rc=$?
set -e
assert_eq 1 "$rc" "vm.sh -- false"
set +e
out="$("$VM" -- sh -c 'echo hello-from-guest; exit 7')"; rc=$?
set -e
assert_eq 7 "$rc" "vm.sh -- sh -c 'exit 7'"
echo "$out" | grep -qx hello-from-guest || fail "guest output missing: $out"
