#!/usr/bin/env bash
# Two keepalive routers (priority 100 and 200) elect the higher priority;
# the VIP is on exactly one router, states and metrics agree.
source "$(dirname "$0")/../lib.sh"
source "$REPO/tests/keepalive/netns.sh"
ka_need
ka_topology 2

ka_conf 1 100 > "$KA_DIR/1.yaml"
ka_conf 2 200 > "$KA_DIR/2.yaml"
ka_start 1 "$KA_DIR/1.yaml"
ka_start 2 "$KA_DIR/2.yaml"

ka_wait_owner 2 "2" 5 || fail "VIP not on router 2 (owners: '$(ka_owners 2)')"
sleep 1
assert_eq "2" "$(ka_owners 2)" "VIP owners after 1 s"
assert_eq master "$(ka_state 2)" "router 2 state"
assert_eq backup "$(ka_state 1)" "router 1 state"
rx=$(ka_metric 1 'keepalive_vrrp_adverts_received_total{instance="VI_1"}')
[ "${rx:-0}" -ge 5 ] || fail "backup received only '${rx}' adverts"
# the client reaches the VIP
ip netns exec "$KA_CLIENT" ping -c1 -W1 "$KA_VIP" >/dev/null || fail "VIP does not answer"
KA_OK=1
log "pass"
