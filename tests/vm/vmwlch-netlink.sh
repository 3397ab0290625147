#!/usr/bin/env bash
# The VMWLCH netlink family: good input round-trips, bad input is rejected
# with a reason and leaves the state unchanged, unprivileged callers get EPERM.
source "$(dirname "$0")/../lib.sh"
in_vm || skip "run through scripts/vm.sh"
modprobe ip_vs_vmwlch || fail "modprobe ip_vs_vmwlch"
python3 "$REPO/tests/py/nl_bad_input.py"
