#!/usr/bin/env bash
# A partition makes both routers master (each holds the VIP on its side);
# healing converges to exactly one master, the higher priority.
source "$(dirname "$0")/../lib.sh"
source "$REPO/tests/keepalive/netns.sh"
ka_need
ka_topology 2

ka_conf 1 100 > "$KA_DIR/1.yaml"
ka_conf 2 200 > "$KA_DIR/2.yaml"
ka_start 1 "$KA_DIR/1.yaml"
ka_start 2 "$KA_DIR/2.yaml"
ka_wait_owner 2 "2" 5 || fail "router 2 never became master"

ka_partition 1
ka_wait_owner 2 "1 2" 3 || fail "partitioned backup did not become master (owners '$(ka_owners 2)')"
sleep 0.5
ka_heal 1
ka_wait_owner 2 "2" 3 || fail "no convergence after heal (owners '$(ka_owners 2)')"
sleep 1
assert_eq "2" "$(ka_owners 2)" "owners 1 s after heal"
assert_eq backup "$(ka_state 1)" "router 1 state"
assert_eq master "$(ka_state 2)" "router 2 state"

# and the other way: partition the master; heal; still one master
ka_partition 2
ka_wait_owner 2 "1 2" 3 || fail "second partition: no takeover (owners '$(ka_owners 2)')"
ka_heal 2
ka_wait_owner 2 "2" 3 || fail "second heal: no convergence (owners '$(ka_owners 2)')"
KA_OK=1
log "pass"
