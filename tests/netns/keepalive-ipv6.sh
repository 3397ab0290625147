#!/usr/bin/env bash
# IPv6 VRRPv3 (ff02::12, link-local sources, hop limit 255, pseudo-header
# checksum): the higher priority is elected, the client reaches the VIP, and
# a SIGKILLed master is replaced within the master-down interval plus margin
# (the new master sends unsolicited NAs so the client's neighbour cache follows).
source "$(dirname "$0")/../lib.sh"
source "$REPO/tests/keepalive/netns.sh"
ka_need
ka_topology 2
MARGIN_MS=${MARGIN_MS:-80}

for i in 1 2; do
    prio=$([ $i = 1 ] && echo 100 || echo 200)
    cat > "$KA_DIR/$i.yaml" <<YAML
global:
  metrics_listen: 127.0.0.1:9650
vrrp:
  - name: VI_1
    interface: eth0
    vrid: 61
    priority: $prio
    advert_interval_ms: 100
    virtual_ips: ["$KA_VIP6/64"]
YAML
done
ka_start 1 "$KA_DIR/1.yaml"
ka_start 2 "$KA_DIR/2.yaml"
ka_wait_owner 2 "2" 5 "$KA_VIP6" || fail "router 2 never became master (owners '$(ka_owners 2 "$KA_VIP6")')"
sleep 0.5
assert_eq "2" "$(ka_owners 2 "$KA_VIP6")" "single IPv6 owner"
rx=$(ka_metric 1 'keepalive_vrrp_adverts_received_total{instance="VI_1"}')
[ "${rx:-0}" -ge 3 ] || fail "backup received '${rx}' IPv6 adverts"
ip netns exec "$KA_CLIENT" ping -6 -c1 -W1 "$KA_VIP6" >/dev/null || fail "IPv6 VIP does not answer"

START_MS=$(ka_now_ms)
ka_kill 2 KILL
took=$(ka_time_until_vip 1 3000 "$KA_VIP6") || fail "backup did not take the IPv6 VIP"
log "SIGKILL -> IPv6 VIP on backup: ${took} ms (limit $((361 + MARGIN_MS)) ms)"
[ "$took" -le $((361 + MARGIN_MS)) ] || fail "takeover took ${took} ms"
ka_wait_exit 2
# the dead master's address must not answer any more: take it away as a reboot would
ip -n "$(ka_node 2)" addr del "$KA_VIP6/64" dev eth0
ping6_vip() { ip netns exec "$KA_CLIENT" ping -6 -c1 -W1 "$KA_VIP6" >/dev/null; }
wait_until 3 ping6_vip || fail "IPv6 VIP unreachable after failover"
KA_OK=1
log "pass"
