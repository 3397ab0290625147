#!/usr/bin/env bash
# Inside the VM: two IPVS front ends run keepalive (VRRPv3, 100 ms adverts)
# with the same `services:` (direct routing to two real servers) applied
# through the ipvsctl library and the kernel sync daemon bound to the role.
# A client holds an established TCP connection through the VIP; the master
# front end is killed (keepalive SIGKILLed and its link cut, as if the host
# died). The connection keeps flowing through the new master (its IPVS
# connection entry came from the sync daemon), and new connections are served.
source "$(dirname "$0")/../lib.sh"
in_vm || skip "run through scripts/vm.sh"
source "$REPO/keepalive/testlib/netns.sh"
ka_need
modprobe ip_vs 2>/dev/null || true
modprobe ip_vs_rr 2>/dev/null || true
command -v socat >/dev/null || skip "socat missing"
command -v python3 >/dev/null || skip "python3 missing"

ka_topology 2
# two real servers on the same LAN (direct routing): the VIP on lo, no ARP for it
for r in 11 12; do
    ns="${KA_TAG}rs$r"
    mkns "$ns"
    ip link add "${KA_TAG}v$r" type veth peer name eth0 netns "$ns"
    ip link set "${KA_TAG}v$r" netns "$KA_BR"
    ip -n "$KA_BR" link set "${KA_TAG}v$r" master br0 up
    ip -n "$ns" link set eth0 up
    ip -n "$ns" addr add "192.0.2.$r/24" dev eth0
    ip -n "$ns" addr add "$KA_VIP/32" dev lo
    ip netns exec "$ns" sysctl -qw net.ipv4.conf.all.arp_ignore=1 net.ipv4.conf.all.arp_announce=2
    ip netns exec "$ns" socat TCP-LISTEN:80,reuseaddr,fork EXEC:cat >/dev/null 2>&1 &
    on_exit "kill $! 2>/dev/null || true"
done
for i in 1 2; do
    ip netns exec "$(ka_node $i)" sysctl -qw net.ipv4.vs.conntrack=0 2>/dev/null || true
    prio=$([ $i = 1 ] && echo 200 || echo 100)
    cat > "$KA_DIR/$i.yaml" <<YAML
global:
  metrics_listen: 127.0.0.1:9650
vrrp:
  - name: VI_1
    interface: eth0
    vrid: 51
    priority: $prio
    advert_interval_ms: 100
    virtual_ips: [$KA_VIP/24]
    ipvs_sync: { interface: eth0, syncid: 51 }
services:
  - protocol: tcp
    address: $KA_VIP
    port: 80
    scheduler: rr
    dests:
      - { address: 192.0.2.11, forward: route }
      - { address: 192.0.2.12, forward: route }
YAML
    ka_start $i "$KA_DIR/$i.yaml"
done
ka_wait_owner 2 "1" 8 || fail "front end 1 never became master"
# both front ends have the service (warm standby)
for i in 1 2; do
    wait_until 5 grep -q "TCP.*0064:0050\|TCP  C0000264:0050" "/proc/net/ip_vs" 2>/dev/null || true
    n=$(ip netns exec "$(ka_node $i)" cat /proc/net/ip_vs | grep -c "^  -> ")
    [ "$n" -ge 2 ] || fail "front end $i has $n destinations (services not applied)"
done

# an established connection through the VIP
ip netns exec "$KA_CLIENT" python3 "$REPO/keepalive/testlib/conn_client.py" "$KA_VIP" 80 10 0.05 "$KA_DIR/ready" \
    > "$KA_DIR/client.out" 2>&1 &
client=$!
wait_until 5 test -s "$KA_DIR/ready" || fail "client connection not established: $(cat "$KA_DIR/client.out")"
# let the sync daemon ship the entry (threshold 3 packets, flushed within 2 s)
wait_until 5 bash -c "ip netns exec $(ka_node 2) cat /proc/net/ip_vs_conn | grep -q ESTABLISHED" ||
    fail "backup has no synced connection entry"

START_MS=$(ka_now_ms)
ka_kill 1 KILL
ka_partition 1
took=$(ka_time_until_vip 2 3000) || fail "front end 2 did not take over"
log "master killed -> VIP on front end 2 in ${took} ms"
rc=0; wait "$client" || rc=$?
log "client: $(cat "$KA_DIR/client.out")"
assert_eq 0 "$rc" "established connection survived failover"
# new connections are served by the new master
out=$(ip netns exec "$KA_CLIENT" bash -c "echo hello | socat -t2 - TCP:$KA_VIP:80,connect-timeout=3") || true
assert_eq hello "$out" "new connection through the new master"
KA_OK=1
log "pass"
