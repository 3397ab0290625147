#!/usr/bin/env bash
# Inside the VM: Debian's ipvsadm creates a service with every in-kernel scheduler.
source "$(dirname "$0")/../lib.sh"
in_vm || skip "run through scripts/vm.sh"
mkns vmt-sched
for s in rr wrr lc wlc lblc lblcr dh sh sed nq fo ovf mh twos; do
    ip netns exec vmt-sched ipvsadm -A -t 10.0.0.1:80 -s "$s" || fail "ipvsadm -A -s $s"
    ip netns exec vmt-sched ipvsadm -a -t 10.0.0.1:80 -r 10.0.1.1:80 -m || fail "ipvsadm -a ($s)"
    got="$(ip netns exec vmt-sched ipvsadm -Ln | awk '/^TCP/ {print $3}')"
    assert_eq "$s" "$got" "scheduler listed"
    ip netns exec vmt-sched ipvsadm -D -t 10.0.0.1:80 || fail "ipvsadm -D ($s)"
done
log "all 14 in-kernel schedulers work"
