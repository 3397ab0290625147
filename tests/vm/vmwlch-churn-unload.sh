#!/usr/bin/env bash
# Churn under traffic; steady churn at a real cluster's shape (another
# service's weights every 100 ms: >= 99 % of decisions host-aware, imbalance
# unchanged); then: rmmod refused while a service uses the schedulers,
# clean after the services are gone; module reload works; both names autoload.
source "$(dirname "$0")/../lib.sh"
in_vm || skip "run through scripts/vm.sh"

# Autoload through IPVS (request_module("ip_vs_<sched>")), for both names.
lsmod | grep -q '^ip_vs_vmwlch' && fail "module loaded before the test"
mkns vmt-auto
ip netns exec vmt-auto ipvsadm -A -t 10.9.0.1:80 -s vmwlc || fail "-s vmwlc did not autoload"
lsmod | grep -q '^ip_vs_vmwlch' || fail "module not loaded by -s vmwlc"
ip netns exec vmt-auto ipvsadm -A -t 10.9.0.1:81 -s vmwlch || fail "-s vmwlch"
if rmmod ip_vs_vmwlch 2>/dev/null; then fail "rmmod succeeded while services use the schedulers"; fi
ip netns exec vmt-auto ipvsadm -C
rmmod ip_vs_vmwlch || fail "rmmod after ipvsadm -C"
ip netns exec vmt-auto ipvsadm -A -t 10.9.0.1:80 -s vmwlch || fail "-s vmwlch did not autoload"
ip netns exec vmt-auto ipvsadm -C

python3 "$REPO/tests/py/churn.py" || fail "churn"
python3 "$REPO/tests/py/steady_churn.py" || fail "steady churn"
# A namespace with services going away while the module stays loaded.
ip netns exec vmt-auto ipvsadm -A -t 10.9.0.1:80 -s vmwlch
ip netns del vmt-auto; _NETNS=()
# netns cleanup is asynchronous: the service (and its module reference) goes with it.
wait_until 60 rmmod ip_vs_vmwlch || fail "rmmod after churn and netns removal"
modprobe ip_vs_vmwlch && rmmod ip_vs_vmwlch || fail "reload"
log "unload clean"
