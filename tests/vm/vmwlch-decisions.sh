#!/usr/bin/env bash
# Every vmwlc/vmwlch decision for real TCP connections matches the algorithm.
source "$(dirname "$0")/../lib.sh"
in_vm || skip "run through scripts/vm.sh"
modprobe ip_vs_vmwlch || fail "modprobe ip_vs_vmwlch"
python3 "$REPO/tests/py/decisions.py"
