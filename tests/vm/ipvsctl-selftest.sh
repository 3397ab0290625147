#!/usr/bin/env bash
# Inside the VM: the kernel's IPVS selftest (tools/testing/selftests/net/netfilter/ipvs.sh
# from Debian's linux-source tree) with ipvsctl standing in for ipvsadm through
# a PATH symlink. Debian's ipvsadm is hidden so the test cannot fall back to it.
source "$(dirname "$0")/../lib.sh"
in_vm || skip "run through scripts/vm.sh"
need_root
[ -x "$BIN/ipvsctl" ] || skip "build target/release/ipvsctl first"
command -v socat >/dev/null || skip "socat is needed by the selftest"
SRC="$(ls -d /var/cache/vmwlch/src/*/tools/testing/selftests/net 2>/dev/null | head -1)"
[ -n "$SRC" ] && [ -f "$SRC/netfilter/ipvs.sh" ] || skip "kernel selftest sources not found under /var/cache/vmwlch/src"

W="$(mktemp -d)"
on_exit "rm -rf '$W'"
mkdir -p "$W/net/netfilter" "$W/bin"
cp "$SRC/lib.sh" "$W/net/"
cp "$SRC/netfilter/lib.sh" "$SRC/netfilter/ipvs.sh" "$W/net/netfilter/"
ln -s "$BIN/ipvsctl" "$W/bin/ipvsadm"

# A PATH where `ipvsadm` is ours; /usr/sbin/ipvsadm must not be reachable.
P="$W/bin"
for d in ${PATH//:/ }; do
    [ -x "$d/ipvsadm" ] && [ "$d" != "$W/bin" ] && continue
    P="$P:$d"
done
# /usr/sbin holds ipvsadm but also ip(8); expose only what the test needs.
mkdir -p "$W/sbin"
for t in ip sysctl modprobe; do
    p="$(command -v "$t")" && ln -sf "$p" "$W/sbin/$t"
done
P="$P:$W/sbin"
got="$(PATH="$P" command -v ipvsadm)"
assert_eq "$W/bin/ipvsadm" "$got" "ipvsadm on PATH"

cd "$W/net/netfilter"
PATH="$P" bash ./ipvs.sh
rc=$?
[ "$rc" = 4 ] && skip "selftest skipped (rc 4)"
[ "$rc" = 0 ] || fail "kernel IPVS selftest failed with ipvsctl as ipvsadm (rc $rc)"
log "kernel IPVS selftest passed with ipvsctl as ipvsadm"
