#!/usr/bin/env bash
# The host's own faults, one topology (bridge, 2 routers, a client):
# - an instance whose interface is missing at start waits in FAULT; the
#   interface created (a veth between the routers, addresses added after
#   the link comes up), both leave FAULT and elect the higher priority;
# - a VIP deleted on the master answers again within a second, one owner;
# - the master's link goes down: FAULT, its VIP removed, and the backup
#   alone holds the VIP within the master-down interval (360.9 ms) plus a
#   margin; the link back up: one owner again (the higher priority) and the
#   client's ARP entry for the VIP points at the owner's MAC.
source "$(dirname "$0")/../lib.sh"
source "$REPO/tests/keepalive/netns.sh"
ka_need
ka_topology 2
MARGIN_MS=${MARGIN_MS:-100}
GW=10.9.0.100

for i in 1 2; do
    prio=$([ $i = 1 ] && echo 100 || echo 200)
    ka_conf "$i" "$prio" > "$KA_DIR/$i.yaml"
    cat >> "$KA_DIR/$i.yaml" <<YAML
  - name: VI_2
    interface: eth1
    vrid: 52
    priority: $prio
    advert_interval_ms: 100
    virtual_ips: [$GW/24]
YAML
done
ka_start 1 "$KA_DIR/1.yaml"
ka_start 2 "$KA_DIR/2.yaml"
ka_wait_owner 2 "2" 5 || fail "VI_1: router 2 never became master (owners '$(ka_owners 2)')"

st() { [ "$(ka_metric "$1" "keepalive_vrrp_state{instance=\"$2\",state=\"$3\"}")" = 1 ]; }
for i in 1 2; do st $i VI_2 fault || fail "router $i: VI_2 not in FAULT without its interface"; done
grep -q "interface eth1 missing" "$KA_DIR/ka1.log" || fail "the missing interface is not logged"

# the interface appears: a veth between the routers, addresses after link up
ip link add eth1 netns "$(ka_node 1)" type veth peer name eth1 netns "$(ka_node 2)"
for i in 1 2; do ip -n "$(ka_node $i)" link set eth1 up; done
sleep 0.2
for i in 1 2; do ip -n "$(ka_node $i)" addr add "10.9.0.$i/24" dev eth1; done
has_gw() { [[ "$(ip -n "$(ka_node "$1")" -4 addr show dev eth1)" == *"inet $GW/"* ]]; }
gw_owner_is_2() { has_gw 2 && ! has_gw 1; }
wait_until 5 gw_owner_is_2 || fail "VI_2 did not elect router 2 once eth1 existed"
st 1 VI_2 backup || fail "router 1: VI_2 not BACKUP after eth1 appeared"
log "missing interface created: FAULT left, router 2 elected"

# a VIP deleted on the master is put back at once
ip -n "$(ka_node 2)" addr del "$KA_VIP/24" dev eth0
START_MS=$(ka_now_ms)
took=$(ka_time_until_vip 2 1000) || fail "deleted VIP not back on the master within 1 s"
log "VIP deleted on the master -> back in ${took} ms"
assert_eq "2" "$(ka_owners 2)" "owners after the VIP was put back"
ip netns exec "$KA_CLIENT" ping -c1 -W1 "$KA_VIP" >/dev/null || fail "VIP does not answer after re-add"
assert_eq 1 "$(ka_metric 2 'keepalive_vrrp_vip_readds_total{instance="VI_1"}')" "re-add counter"

# the master's link goes down
ip netns exec "$KA_CLIENT" ping -c1 -W1 "$KA_VIP" >/dev/null || true
START_MS=$(ka_now_ms)
ka_link_down 2
took=$(ka_time_until_vip 1 3000) || fail "backup did not take over after the master's link went down"
now=$(ka_now_ms)
wait_until 1 bash -c "! ip -n $(ka_node 2) addr show dev eth0 | grep -q 'inet $KA_VIP/'" ||
    fail "the old master kept the VIP on a dead link"
log "master link down -> VIP on backup in ${took} ms; old master dropped it by $(( now - START_MS )) ms"
[ "$took" -le $((361 + MARGIN_MS)) ] || fail "takeover took ${took} ms"
assert_eq "1" "$(ka_owners 2)" "owners with the master's link down"
st 2 VI_1 fault || fail "router 2: VI_1 not in FAULT with its link down"
# the new master's gratuitous ARP moved the client's entry (no ping since)
mac() { ip -n "$(ka_node "$1")" -br link show eth0 | awk '{ print $3 }'; }
arp_is() { ip -n "$KA_CLIENT" neigh show "$KA_VIP" dev eth0 | grep -qi "lladdr $1"; }
wait_until 2 arp_is "$(mac 1)" || fail "client's ARP entry did not follow to router 1: '$(ip -n "$KA_CLIENT" neigh show "$KA_VIP")'"
st 2 VI_2 master || fail "router 2: VI_2 (other link) left MASTER"
[ "$(ka_metric 2 'keepalive_vrrp_faults_total{instance="VI_1"}')" -ge 1 ] || fail "FAULT not counted"

# link back: router 2 preempts, the client's ARP entry follows
ka_link_up 2
ka_wait_owner 2 "2" 5 || fail "no single owner after the link came back (owners '$(ka_owners 2)')"
wait_until 3 arp_is "$(mac 2)" ||
    fail "client's ARP entry for the VIP: '$(ip -n "$KA_CLIENT" neigh show "$KA_VIP")', owner MAC $(mac 2)"
ip netns exec "$KA_CLIENT" ping -c1 -W1 "$KA_VIP" >/dev/null || fail "VIP does not answer after the link came back"
sleep 0.5
assert_eq "2" "$(ka_owners 2)" "owners 0.5 s after the link came back"
st 1 VI_1 backup || fail "router 1 did not yield"
KA_OK=1
log "pass"
