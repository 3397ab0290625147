#!/usr/bin/env bash
# Tracking and sync groups (keepalived's semantics). Each router has two
# instances in one sync group: VI_1 (the VIP, on the bridge) and VI_2 (the
# real servers' gateway, on a veth between the routers). Router 2 (200)
# tracks an interface of its own (trk0, no weight: down means FAULT) and a
# script (weight -150, failing while a flag file exists).
# - trk0 down: VI_1 FAULT, VI_2 follows to BACKUP: router 1 (100) holds both;
# - trk0 up: router 2 holds both again;
# - the script fails: both priorities drop to 50 (the weight moves the whole
#   group), router 1 holds both; the script passes again: back to router 2.
# One group notify per group transition besides the instances'.
source "$(dirname "$0")/../lib.sh"
source "$REPO/tests/keepalive/netns.sh"
ka_need
ka_topology 2
GW=10.9.0.100
FLAG="$KA_DIR/sick"
ip link add eth1 netns "$(ka_node 1)" type veth peer name eth1 netns "$(ka_node 2)"
for i in 1 2; do
    ip -n "$(ka_node $i)" addr add "10.9.0.$i/24" dev eth1
    ip -n "$(ka_node $i)" link set eth1 up
done
ip -n "$(ka_node 2)" link add trk0 type veth peer name trk0p
ip -n "$(ka_node 2)" link set trk0p up
ip -n "$(ka_node 2)" link set trk0 up
# the kernel reports carrier (operstate UP) up to a second after a link is set up
# shellcheck disable=SC2317 # called through wait_until
oper_up() { ip -n "$(ka_node "$1")" link show "$2" | grep -q "state UP"; }
for l in "1 eth1" "2 eth1" "2 trk0"; do
    # shellcheck disable=SC2086 # two words: router and interface
    wait_until 3 oper_up $l || fail "link $l not up"
done

for i in 1 2; do
    prio=$([ $i = 1 ] && echo 100 || echo 200)
    track=""
    [ $i = 2 ] && track="
    track_interfaces: [{ interface: trk0 }]"
    scripts=""
    [ $i = 2 ] && scripts="
    track_scripts:
      - { name: flag, command: [sh, -c, 'test ! -e $FLAG'], interval_ms: 100, timeout_ms: 100, weight: -150, rise: 1, fall: 1 }"
    ka_conf "$i" "$prio" "$track" > "$KA_DIR/$i.yaml"
    cat >> "$KA_DIR/$i.yaml" <<YAML
  - name: VI_2
    interface: eth1
    vrid: 52
    priority: $prio
    advert_interval_ms: 100
    virtual_ips: [$GW/24]$scripts
sync_groups:
  - name: G
    instances: [VI_1, VI_2]
    notify:
      any: [sh, -c, 'echo "\$@" >> $KA_DIR/group$i.log', hook]
YAML
done
sed -i '/^    $/d' "$KA_DIR/2.yaml"
ka_start 1 "$KA_DIR/1.yaml"
ka_start 2 "$KA_DIR/2.yaml"

has_gw() { [[ "$(ip -n "$(ka_node "$1")" -4 addr show dev eth1)" == *"inet $GW/"* ]]; }
# both_on I: router I holds the VIP and the gateway, the other neither
both_on() {
    local o=$(( 3 - $1 ))
    ka_has_vip "$1" && has_gw "$1" && ! ka_has_vip "$o" && ! has_gw "$o"
}
wait_until 5 both_on 2 || fail "router 2 never held both (VIP on '$(ka_owners 2)')"
grp() { [ "$(ka_metric "$1" "keepalive_sync_group_state{group=\"G\",state=\"$2\"}")" = 1 ]; }
grp 2 master || fail "router 2: group not MASTER"
grp 1 backup || fail "router 1: group not BACKUP"

ip -n "$(ka_node 2)" link set trk0 down
wait_until 3 both_on 1 || fail "tracked interface down: router 1 did not take both"
grp 2 fault || fail "router 2: group not FAULT with its tracked interface down"
log "tracked interface down: both instances moved to router 1"
ip -n "$(ka_node 2)" link set trk0 up
# the kernel reports carrier (operstate UP) up to a second after a link is set up
# shellcheck disable=SC2317 # called through wait_until
oper_up() { ip -n "$(ka_node "$1")" link show "$2" | grep -q "state UP"; }
for l in "1 eth1" "2 eth1" "2 trk0"; do
    # shellcheck disable=SC2086 # two words: router and interface
    wait_until 3 oper_up $l || fail "link $l not up"
done
wait_until 3 both_on 2 || fail "tracked interface up: router 2 did not take both back"

touch "$FLAG"
wait_until 3 both_on 1 || fail "failing script (weight -150): router 1 did not take both"
assert_eq 50 "$(ka_metric 2 'keepalive_vrrp_priority{instance="VI_1"}')" "VI_1 priority with the script failing"
assert_eq 50 "$(ka_metric 2 'keepalive_vrrp_priority{instance="VI_2"}')" "VI_2 priority with the script failing"
assert_eq 0 "$(ka_metric 2 'keepalive_track_up{instance="VI_2",object="script:flag"}')" "script tracking metric"
log "tracked script failing: both instances moved to router 1 through the priority"
rm -f "$FLAG"
wait_until 3 both_on 2 || fail "script healthy: router 2 did not take both back"
assert_eq 200 "$(ka_metric 2 'keepalive_vrrp_priority{instance="VI_1"}')" "VI_1 priority restored"
sleep 0.3
both_on 2 || fail "not stable on router 2"

# one notify per group transition (hooks run concurrently: counted, not
# ordered): BACKUP at start, MASTER, FAULT, BACKUP, MASTER, BACKUP, MASTER
n() { grep -c "^GROUP G $1 0\$" "$KA_DIR/group2.log" || true; }
wait_until 2 bash -c "[ \$(wc -l < $KA_DIR/group2.log) -ge 7 ]" || true
assert_eq "3 1 3 7" "$(n MASTER) $(n FAULT) $(n BACKUP) $(wc -l < "$KA_DIR/group2.log")" \
    "router 2's group notifications (MASTER FAULT BACKUP total): $(tr '\n' ',' < "$KA_DIR/group2.log")"
KA_OK=1
log "pass"
