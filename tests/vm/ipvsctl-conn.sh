#!/usr/bin/env bash
# Inside the VM: ipvsctl's connection listing (-c) is byte for byte Debian
# ipvsadm's on a live connection table (IPv4, IPv6, closing connections,
# persistence templates).
source "$(dirname "$0")/../lib.sh"
in_vm || skip "run through scripts/vm.sh"
need_root
[ -x /usr/sbin/ipvsadm ] || skip "Debian's ipvsadm is not installed"
[ -x "$BIN/ipvsctl" ] || skip "build target/release/ipvsctl first"
python3 "$REPO/tests/py/conn_compat.py" "$BIN/ipvsctl"
