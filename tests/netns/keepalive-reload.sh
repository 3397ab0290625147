#!/usr/bin/env bash
# SIGHUP reload: the master keeps its role through a reload that changes its
# priority and adds a VIP (no transition, the new VIP appears, the old one
# never goes away); an invalid file is rejected and the daemon keeps running;
# raising the backup's priority by reload makes it preempt.
source "$(dirname "$0")/../lib.sh"
source "$REPO/tests/keepalive/netns.sh"
ka_need
ka_topology 2
VIP2=192.0.2.101

ka_conf 1 100 > "$KA_DIR/1.yaml"
ka_conf 2 200 > "$KA_DIR/2.yaml"
ka_start 1 "$KA_DIR/1.yaml"
ka_start 2 "$KA_DIR/2.yaml"
ka_wait_owner 2 "2" 5 || fail "router 2 never became master"
t2=$(ka_metric 2 'keepalive_vrrp_transitions_total{instance="VI_1"}')

# watch the VIP on router 2 during the reload
( end=$(( $(ka_now_ms) + 1500 )); while [ "$(ka_now_ms)" -lt "$end" ]; do ka_has_vip 2 || echo lost; done ) > "$KA_DIR/watch" &
watch=$!
sed -e 's/priority: 200/priority: 150/' -e "s|virtual_ips: \[.*\]|virtual_ips: [$KA_VIP/24, $VIP2/24]|" "$KA_DIR/2.yaml" > "$KA_DIR/2b.yaml"
cp "$KA_DIR/2b.yaml" "$KA_DIR/2.yaml"
kill -HUP "${KA_PID[2]}"
wait_until 3 ka_has_vip 2 "$VIP2" || fail "reloaded master did not add the new VIP"
wait "$watch"
[ ! -s "$KA_DIR/watch" ] || fail "VIP disappeared during reload"
assert_eq "$t2" "$(ka_metric 2 'keepalive_vrrp_transitions_total{instance="VI_1"}')" "transitions across reload"
assert_eq 150 "$(ka_metric 2 'keepalive_vrrp_priority{instance="VI_1"}')" "priority after reload"
assert_eq 1 "$(ka_metric 2 'keepalive_reloads_total')" "reload count"

# an invalid file: rejected, daemon keeps running with the old config
echo "vrrp: [{name: x, vrid: 0}]" > "$KA_DIR/2.yaml"
kill -HUP "${KA_PID[2]}"
sleep 0.5
kill -0 "${KA_PID[2]}" || fail "daemon died on an invalid reload"
assert_eq master "$(ka_state 2)" "state after invalid reload"
grep -q "reload failed" "$KA_DIR/ka2.log" || fail "invalid reload not logged"
cp "$KA_DIR/2b.yaml" "$KA_DIR/2.yaml"

# raise the backup above the master by reload: it preempts
sed -i 's/priority: 100/priority: 250/' "$KA_DIR/1.yaml"
kill -HUP "${KA_PID[1]}"
ka_wait_owner 2 "1" 3 || fail "backup with raised priority did not preempt (owners '$(ka_owners 2)')"
wait_until 3 bash -c "! ip -n $(ka_node 2) addr show dev eth0 | grep -q $VIP2" || fail "old master kept the second VIP"
KA_OK=1
log "pass"
