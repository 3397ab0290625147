# shellcheck shell=bash
# Body of the keepalived interop tests; set KA_HIGH=ka|kd before sourcing.
# Router 1 has priority 200 and runs $KA_HIGH, router 2 has 100 and runs the other.
ka_need
[ -x "$KEEPALIVED" ] || skip "keepalived not installed"
ka_topology 2
ka_conf 1 200 > "$KA_DIR/ka200.yaml"; ka_conf 2 100 > "$KA_DIR/ka100.yaml"
kd_conf 200 > "$KA_DIR/kd200.conf"; kd_conf 100 > "$KA_DIR/kd100.conf"
start_high() { if [ "$KA_HIGH" = ka ]; then ka_start 1 "$KA_DIR/ka200.yaml"; else kd_start 1 "$KA_DIR/kd200.conf"; fi; }
kill_high() { if [ "$KA_HIGH" = ka ]; then ka_kill 1 KILL; ka_wait_exit 1; else kd_kill 1; fi; }
if [ "$KA_HIGH" = ka ]; then kd_start 2 "$KA_DIR/kd100.conf"; ka=1; else ka_start 2 "$KA_DIR/ka100.yaml"; ka=2; fi
start_high

ka_wait_owner 2 "1" 6 || fail "higher priority not elected (owners '$(ka_owners 2)')"
sleep 1
assert_eq "1" "$(ka_owners 2)" "single owner"
bad=$(ip netns exec "$(ka_node $ka)" curl -s --max-time 2 http://127.0.0.1:9650/metrics |
    awk '/^keepalive_vrrp_adverts_invalid_total/ { s += $2 } END { print s + 0 }')
assert_eq 0 "$bad" "invalid adverts counted by keepalive"
if [ $ka = 2 ]; then
    rx=$(ka_metric 2 'keepalive_vrrp_adverts_received_total{instance="VI_1"}')
    [ "${rx:-0}" -ge 5 ] || fail "keepalive received '${rx}' adverts from keepalived"
    assert_eq backup "$(ka_state 2)" "keepalive state"
fi

# shellcheck disable=SC2034 # read by ka_time_until_vip (netns.sh)
START_MS=$(ka_now_ms)
kill_high
took=$(ka_time_until_vip 2 3000) || fail "backup did not take over"
log "master killed -> VIP on backup in ${took} ms"
sleep 0.3
# SIGKILL leaves the VIP on the dead router; remove it as a reboot would
ip -n "$(ka_node 1)" addr del "$KA_VIP/24" dev eth0 2>/dev/null || true
start_high
ka_wait_owner 2 "1" 6 || fail "no preemption back (owners '$(ka_owners 2)')"
sleep 0.5
assert_eq "1" "$(ka_owners 2)" "single owner after preempting back"
ip netns exec "$KA_CLIENT" ping -c1 -W1 "$KA_VIP" >/dev/null || fail "VIP does not answer"
# shellcheck disable=SC2034 # read by netns.sh's exit trap
KA_OK=1
log "pass"
