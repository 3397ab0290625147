#!/usr/bin/env bash
# Invalid adverts change nothing: a third host floods priority-255 and
# priority-0 adverts that are broken in one way each (TTL 64, bad checksum,
# wrong VRID, truncated, version 2, address count beyond the packet). The
# master stays master, the backup stays backup, and each kind is counted by
# reason in the metrics. A valid priority-255 advert then does preempt, which
# shows the injected packets did reach the routers.
source "$(dirname "$0")/../lib.sh"
source "$REPO/tests/keepalive/netns.sh"
ka_need
command -v python3 >/dev/null || skip "python3 missing"
ka_topology 2
INJ="$REPO/tests/keepalive/vrrp_inject.py"

ka_conf 1 100 > "$KA_DIR/1.yaml"
ka_conf 2 200 > "$KA_DIR/2.yaml"
ka_start 1 "$KA_DIR/1.yaml"
ka_start 2 "$KA_DIR/2.yaml"
ka_wait_owner 2 "2" 5 || fail "router 2 never became master"
t1=$(ka_metric 1 'keepalive_vrrp_transitions_total{instance="VI_1"}')
t2=$(ka_metric 2 'keepalive_vrrp_transitions_total{instance="VI_1"}')

for kind in ttl checksum vrid short version count; do
    for prio in 255 0; do
        ip netns exec "$KA_CLIENT" python3 "$INJ" eth0 192.0.2.200 "$kind" 40 "$prio"
    done
done
sleep 0.5
assert_eq "2" "$(ka_owners 2)" "VIP owners after invalid packets"
assert_eq "$t1" "$(ka_metric 1 'keepalive_vrrp_transitions_total{instance="VI_1"}')" "router 1 transitions"
assert_eq "$t2" "$(ka_metric 2 'keepalive_vrrp_transitions_total{instance="VI_1"}')" "router 2 transitions"
for i in 1 2; do
    for r in bad_ttl bad_checksum too_short bad_version; do
        v=$(ka_metric "$i" "keepalive_vrrp_adverts_invalid_total{instance=\"VI_1\",reason=\"$r\"}")
        [ "${v:-0}" -ge 80 ] || fail "router $i: invalid{$r} = '${v}', expected >= 80"
    done
    v=$(ka_metric "$i" 'keepalive_vrrp_adverts_invalid_total{interface="eth0",reason="unknown_vrid"}')
    [ "${v:-0}" -ge 80 ] || fail "router $i: unknown_vrid = '${v}'"
done

# control: valid priority-255 adverts from the client make router 2 yield
ip netns exec "$KA_CLIENT" python3 "$INJ" eth0 192.0.2.200 valid 30 255 &
inj=$!
wait_until 3 ka_owner_is 2 "" || fail "valid priority-255 adverts were not honoured (owners '$(ka_owners 2)')"
wait "$inj"
ka_wait_owner 2 "2" 5 || fail "router 2 did not come back after the fake owner went quiet"
KA_OK=1
log "pass"
