#!/usr/bin/env bash
# SIGTERM of the master sends priority 0: the backup (priority 100, 100 ms
# adverts) takes over after Skew_Time = (256-100)*100/256 = 60.9 ms plus a
# margin for this polling test; the stopping master removes its VIP and exits 0.
source "$(dirname "$0")/../lib.sh"
source "$REPO/tests/keepalive/netns.sh"
ka_need
ka_topology 2
MARGIN_MS=${MARGIN_MS:-60}

ka_conf 1 100 > "$KA_DIR/1.yaml"
ka_conf 2 200 > "$KA_DIR/2.yaml"
ka_start 1 "$KA_DIR/1.yaml"
ka_start 2 "$KA_DIR/2.yaml"
ka_wait_owner 2 "2" 5 || fail "router 2 never became master"
sleep 0.5

START_MS=$(ka_now_ms)
ka_kill 2 TERM
took=$(ka_time_until_vip 1 3000) || fail "backup did not take over within 3 s"
log "SIGTERM -> VIP on backup: ${took} ms (limit $((61 + MARGIN_MS)) ms)"
[ "$took" -le $((61 + MARGIN_MS)) ] || fail "hand-over took ${took} ms"
wait_until 3 bash -c "! kill -0 ${KA_PID[2]}" || fail "router 2 did not exit on SIGTERM"
rc=0; wait "${KA_PID[2]}" || rc=$?
assert_eq 0 "$rc" "exit status after SIGTERM"
assert_eq "1" "$(ka_owners 2)" "owners after hand-over"
KA_OK=1
log "pass"
