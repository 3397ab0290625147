#!/usr/bin/env bash
# A unicast instance and a multicast one share a socket on one interface
# (the unicast one first, so the socket is opened for it): both elect the
# higher priority, the backup receives both kinds of adverts, and both move
# when the master is killed. A unicast advert outside the TTL range is
# rejected and counted. The daemon feeds the systemd watchdog from its
# event loop (WATCHDOG_USEC).
source "$(dirname "$0")/../lib.sh"
source "$REPO/tests/keepalive/netns.sh"
ka_need
command -v python3 >/dev/null || skip "python3 missing"
ka_topology 2
VIPU=192.0.2.110

for i in 1 2; do
    prio=$([ $i = 1 ] && echo 100 || echo 200)
    peer=$(( 3 - i ))
    cat > "$KA_DIR/$i.yaml" <<YAML
global:
  metrics_listen: 127.0.0.1:9650
vrrp:
  - name: VI_U
    interface: eth0
    vrid: 61
    priority: $prio
    advert_interval_ms: 100
    virtual_ips: [$VIPU/24]
    unicast_peers: [192.0.2.$peer]
  - name: VI_1
    interface: eth0
    vrid: 51
    priority: $prio
    advert_interval_ms: 100
    virtual_ips: [$KA_VIP/24]
YAML
done
# router 1 runs under a watchdog of 300 ms: WATCHDOG=1 every 150 ms
sock="$KA_DIR/notify.sock"
python3 - "$sock" > "$KA_DIR/notify.out" <<'PY' &
import socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
s.settimeout(0.2)
end = time.time() + 4
while time.time() < end:
    try:
        print(s.recv(256).decode(), flush=True)
    except socket.timeout:
        pass
PY
listener=$!
on_exit "kill $listener 2>/dev/null || true"
wait_until 3 test -S "$sock" || fail "notify listener did not start"
NOTIFY_SOCKET="$sock" WATCHDOG_USEC=300000 ka_start 1 "$KA_DIR/1.yaml"
ka_start 2 "$KA_DIR/2.yaml"

ka_wait_owner 2 "2" 5 || fail "multicast VI_1 not on router 2 (owners '$(ka_owners 2)')"
ka_wait_owner 2 "2" 5 "$VIPU" || fail "unicast VI_U not on router 2 (owners '$(ka_owners 2 "$VIPU")')"
sleep 0.5
assert_eq "2" "$(ka_owners 2)" "multicast VIP owners"
assert_eq "2" "$(ka_owners 2 "$VIPU")" "unicast VIP owners"
for inst in VI_U VI_1; do
    rx=$(ka_metric 1 "keepalive_vrrp_adverts_received_total{instance=\"$inst\"}")
    [ "${rx:-0}" -ge 5 ] || fail "backup received '${rx}' adverts of $inst"
done

# a unicast advert with TTL 64 from the peer's address: out of range (255..255)
bad0=$(ka_metric 1 'keepalive_vrrp_adverts_invalid_total{instance="VI_U",reason="bad_ttl"}')
ip netns exec "$KA_CLIENT" python3 "$REPO/tests/keepalive/vrrp_inject.py" eth0 192.0.2.2 ttl 5 255 61 192.0.2.1 "$VIPU"
wait_until 2 bash -c "[ \"\$(ip netns exec $(ka_node 1) curl -s http://127.0.0.1:9650/metrics | awk '\$1 == \"keepalive_vrrp_adverts_invalid_total{instance=\\\"VI_U\\\",reason=\\\"bad_ttl\\\"}\" { print \$2 }')\" -ge $(( ${bad0:-0} + 5 )) ]" ||
    fail "unicast adverts with TTL 64 not rejected as bad_ttl"
assert_eq "2" "$(ka_owners 2 "$VIPU")" "unicast owners after the bad-TTL adverts"

START_MS=$(ka_now_ms)
ka_kill 2 KILL
ka_time_until_vip 1 3000 >/dev/null || fail "multicast VIP not taken over"
ka_time_until_vip 1 3000 "$VIPU" >/dev/null || fail "unicast VIP not taken over"

wait "$listener" || true
n=$(grep -c '^WATCHDOG=1$' "$KA_DIR/notify.out" || true)
grep -q '^READY=1$' "$KA_DIR/notify.out" || fail "no READY=1"
[ "$n" -ge 10 ] || fail "only $n WATCHDOG=1 in 4 s at a 300 ms watchdog"
log "watchdog: $n WATCHDOG=1 in about 4 s"
KA_OK=1
log "pass"
