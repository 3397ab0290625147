#!/usr/bin/env bash
# VRRPv2 interop with Debian's keepalived in its default configuration (no
# vrrp_version: VRRPv2 for IPv4, 1 s adverts), both ways round on one
# topology: the higher priority (200) is elected, the other takes over when
# it is SIGKILLed (master-down interval 3 + (256-100)/256 s = 3.61 s), and
# it preempts back when it returns. keepalive counts no invalid adverts.
source "$(dirname "$0")/../lib.sh"
source "$REPO/tests/keepalive/netns.sh"
ka_need
[ -x "$KEEPALIVED" ] || skip "keepalived not installed"
ka_topology 2
export KA_INTERVAL=1000 KA_VERSION=2 KD_DEFAULT_VERSION=1
ka_conf 1 200 > "$KA_DIR/ka200.yaml"; ka_conf 2 100 > "$KA_DIR/ka100.yaml"
kd_conf 200 > "$KA_DIR/kd200.conf"; kd_conf 100 > "$KA_DIR/kd100.conf"
grep -q vrrp_version "$KA_DIR/kd200.conf" && fail "keepalived's configuration is not the default one"

# round HIGH: router 1 (priority 200) runs HIGH (ka or kd), router 2 the other.
round() {
    local high=$1 ka took
    start_high() { if [ "$high" = ka ]; then ka_start 1 "$KA_DIR/ka200.yaml"; else kd_start 1 "$KA_DIR/kd200.conf"; fi; }
    if [ "$high" = ka ]; then kd_start 2 "$KA_DIR/kd100.conf"; ka=1; else ka_start 2 "$KA_DIR/ka100.yaml"; ka=2; fi
    start_high
    ka_wait_owner 2 "1" 10 || fail "$high high: priority 200 not elected (owners '$(ka_owners 2)')"
    sleep 2.5
    assert_eq "1" "$(ka_owners 2)" "$high high: single owner"
    local bad
    bad=$(ip netns exec "$(ka_node $ka)" curl -s --max-time 2 http://127.0.0.1:9650/metrics |
        awk '/^keepalive_vrrp_adverts_invalid_total/ { s += $2 } END { print s + 0 }')
    assert_eq 0 "$bad" "$high high: invalid adverts counted by keepalive"
    if [ "$high" = kd ]; then
        rx=$(ka_metric $ka 'keepalive_vrrp_adverts_received_total{instance="VI_1"}')
        [ "${rx:-0}" -ge 2 ] || fail "kd high: keepalive received '${rx}' adverts from keepalived"
        assert_eq backup "$(ka_state $ka)" "kd high: keepalive's state"
    fi
    START_MS=$(ka_now_ms)
    if [ "$high" = ka ]; then ka_kill 1 KILL; ka_wait_exit 1; else kd_kill 1; fi
    took=$(ka_time_until_vip 2 6000) || fail "$high high: the backup did not take over"
    log "$high high: master killed -> VIP on the backup in ${took} ms"
    [ "$took" -ge 2000 ] || fail "$high high: takeover after ${took} ms, before a VRRPv2 master-down interval"
    ip -n "$(ka_node 1)" addr del "$KA_VIP/24" dev eth0 2>/dev/null || true
    start_high
    ka_wait_owner 2 "1" 10 || fail "$high high: no preemption back (owners '$(ka_owners 2)')"
    sleep 1
    assert_eq "1" "$(ka_owners 2)" "$high high: single owner after preempting back"
    ip netns exec "$KA_CLIENT" ping -c1 -W1 "$KA_VIP" >/dev/null || fail "$high high: VIP does not answer"
    ka_stop_all
    for n in 1 2; do ip netns pids "$(ka_node $n)" | xargs -r kill -KILL 2>/dev/null || true; done
    for n in 1 2; do ip -n "$(ka_node $n)" addr del "$KA_VIP/24" dev eth0 2>/dev/null || true; done
    KA_PID=()
}
round ka
round kd
KA_OK=1
log "pass"
