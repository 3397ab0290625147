#!/usr/bin/env bash
# SIGKILL of the master: the backup (priority 100, 100 ms adverts) takes the
# VIP within Master_Down_Interval = 3*100 + (256-100)*100/256 = 360.9 ms
# (counted from the master's last advert, so at most that after the kill),
# plus a margin for this polling test. Then the old master comes back and
# preempts.
source "$(dirname "$0")/../lib.sh"
source "$REPO/tests/keepalive/netns.sh"
ka_need
ka_topology 2
MARGIN_MS=${MARGIN_MS:-80}

ka_conf 1 100 > "$KA_DIR/1.yaml"
ka_conf 2 200 > "$KA_DIR/2.yaml"
ka_start 1 "$KA_DIR/1.yaml"
ka_start 2 "$KA_DIR/2.yaml"
ka_wait_owner 2 "2" 5 || fail "router 2 never became master"
sleep 0.5

START_MS=$(ka_now_ms)
ka_kill 2 KILL
took=$(ka_time_until_vip 1 3000) || fail "backup did not take over within 3 s"
log "SIGKILL -> VIP on backup: ${took} ms (limit $((361 + MARGIN_MS)) ms)"
[ "$took" -le $((361 + MARGIN_MS)) ] || fail "takeover took ${took} ms"
ka_wait_exit 2
# the killed master left its VIP behind (no cleanup on SIGKILL); a restart
# removes it before starting as backup, then preempts back.
ka_start 2 "$KA_DIR/2.yaml"
ka_wait_owner 2 "2" 5 || fail "restarted router 2 did not preempt back (owners: '$(ka_owners 2)')"
sleep 0.5
assert_eq "2" "$(ka_owners 2)" "single owner after preempting back"
ip netns exec "$KA_CLIENT" ping -c1 -W1 "$KA_VIP" >/dev/null || fail "VIP does not answer"
KA_OK=1
log "pass"
