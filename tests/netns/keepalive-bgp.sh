#!/usr/bin/env bash
# BGP announcement through BIRD: a router namespace runs its own BIRD
# (multipath import into its kernel table) with an eBGP session (director 2:
# with BFD) to each of two directors running keepalive with a `bgp:`
# section, each on its own veth pair:
#   router eth1 10.0.1.254/24 <-> director 1 eth0 10.0.1.1/24
#   router eth2 10.0.2.254/24 <-> director 2 eth0 10.0.2.1/24
#               fd00:2::254/64               fd00:2::1/64 (IPv6 session)
# Asserts, on the router's kernel route to the VIP: an ECMP route via both
# directors (and director 2's IPv6 VIP over its IPv6 session); director 1's nexthop leaves when its tracked script fails and
# comes back when it passes; SIGUSR1 (drain) withdraws, SIGUSR2 resumes; a
# killed BIRD is restarted by keepalive and the route returns; SIGTERM
# withdraws before keepalive exits (and its BIRD stops); a SIGKILLed
# keepalive's BIRD stops too (parent-death signal).
source "$(dirname "$0")/../lib.sh"
source "$REPO/tests/keepalive/netns.sh"
ka_need
command -v bird >/dev/null || skip "bird missing (apt-get install bird2)"
command -v birdc >/dev/null || skip "birdc missing (apt-get install bird2)"
command -v curl >/dev/null || skip "curl missing"

VIP=198.51.100.10
VIP6=2001:db8:10::10
R="${KA_TAG}r"
RSOCK="$KA_DIR/router.ctl"
mkns "$R"
for i in 1 2; do
    mkns "$(ka_node "$i")"
    ip link add "${KA_TAG}v$i" type veth peer name eth0 netns "$(ka_node "$i")"
    ip link set "${KA_TAG}v$i" netns "$R"
    ip -n "$R" link set "${KA_TAG}v$i" name "eth$i"
    ip -n "$R" addr add "10.0.$i.254/24" dev "eth$i"
    ip -n "$R" link set "eth$i" up
    ip -n "$(ka_node "$i")" addr add "10.0.$i.1/24" dev eth0
    ip -n "$(ka_node "$i")" link set eth0 up
done
ip -n "$R" addr add fd00:2::254/64 dev eth2 nodad
ip -n "$(ka_node 2)" addr add fd00:2::1/64 dev eth0 nodad

cat > "$KA_DIR/router.conf" <<CONF
router id 10.0.1.254;
protocol device {}
protocol kernel {
  ipv4 { import none; export all; };
  merge paths yes;
}
protocol kernel { ipv6 { import none; export all; }; }
protocol bfd { interface "*" { min rx interval 100 ms; min tx interval 100 ms; }; }
protocol bgp d1 {
  local as 65000; neighbor 10.0.1.1 as 65001;
  connect retry time 2; error wait time 1, 5;
  ipv4 { import all; export none; };
}
protocol bgp d2 {
  local as 65000; neighbor 10.0.2.1 as 65001; bfd on;
  connect retry time 2; error wait time 1, 5;
  ipv4 { import all; export none; };
}
protocol bgp d2v6 {
  local as 65000; neighbor fd00:2::1 as 65001;
  connect retry time 2; error wait time 1, 5;
  ipv6 { import all; export none; };
}
CONF
ip netns exec "$R" bird -c "$KA_DIR/router.conf" -s "$RSOCK" -f >>"$KA_DIR/router.log" 2>&1 &
RBIRD=$!
on_exit "kill $RBIRD 2>/dev/null; wait $RBIRD 2>/dev/null || true"

# dir_conf I [bfd [v6]]: director I's configuration (v6: with an IPv6
# neighbor and VIP); its script follows a flag file.
dir_conf() {
    local n6="" v6=""
    if [ -n "${3:-}" ]; then
        n6="    - { address: \"fd00:$1::254\", remote_as: 65000 }"
        v6=", \"$VIP6\""
    fi
    cat <<YAML
global:
  metrics_listen: 127.0.0.1:9650
bgp:
  runtime_dir: $KA_DIR/bird$1
  local_as: 65001
  router_id: 10.0.$1.1
  withdraw_delay_ms: 2000
  neighbors:
    - { address: 10.0.$1.254, remote_as: 65000, bfd: ${2:-false} }
$n6
  groups:
    - name: web
      vips: [$VIP$v6]
      track_scripts:
        - { name: flag, command: "test -e $KA_DIR/healthy$1", interval_ms: 200, timeout_ms: 200 }
YAML
}
touch "$KA_DIR/healthy1" "$KA_DIR/healthy2"
dir_conf 1 > "$KA_DIR/1.yaml"
dir_conf 2 true v6 > "$KA_DIR/2.yaml"
ka_start 1 "$KA_DIR/1.yaml"
ka_start 2 "$KA_DIR/2.yaml"

# The router's kernel route to the VIP has a nexthop via director I.
via() { ip -n "$R" route show "$VIP/32" | grep -q "via 10.0.$1.1 "; }
no_via() { ! via "$1"; }
via6() { ip -n "$R" -6 route show "$VIP6/128" | grep -q "via fd00:2::1 "; }
no_via6() { ! via6; }
neighbor_up() { [ "$(ka_metric 1 'keepalive_bgp_neighbor_up{neighbor="10.0.1.254"}')" = 1 ]; }
route() { ip -n "$R" route show "$VIP/32"; }
announced() { [ "$(ka_metric 1 'keepalive_bgp_announced{group="web"}')" = "$1" ]; }
bfd_up() { birdc -s "$RSOCK" show bfd sessions | grep -q '^10\.0\.2\.1 .* Up '; }
no_bird() { [ -z "$(bird_pid "$1")" ]; }
bird_restarted() { local p; p=$(bird_pid 1); [ -n "$p" ] && [ "$p" != "$old" ]; }
bird_pid() {
    local p
    for p in $(ip netns pids "$(ka_node "$1")"); do
        [ "$(cat "/proc/$p/comm" 2>/dev/null)" = bird ] && echo "$p"
    done
    return 0
}

wait_until 30 via 1 || fail "no route via director 1: $(route)"
wait_until 30 via 2 || fail "no route via director 2: $(route)"
route | grep -q nexthop || fail "not an ECMP route: $(route)"
wait_until 30 via6 || fail "no IPv6 route via director 2: $(ip -n "$R" -6 route show "$VIP6/128")"
wait_until 5 announced 1 || fail "announced metric not 1"
# (polled from birdc every 0.5 s: may lag the route)
wait_until 5 neighbor_up || fail "neighbor metric not 1"
wait_until 10 bfd_up ||
    fail "no BFD session with director 2: $(birdc -s "$RSOCK" show bfd sessions)"
log "ECMP route via both directors; IPv6 VIP; BFD up with director 2"

rm -f "$KA_DIR/healthy1"
wait_until 10 no_via 1 || fail "route via director 1 stayed with its check failing: $(route)"
via 2 || fail "route via director 2 lost: $(route)"
wait_until 5 announced 0 || fail "announced metric not 0 with the check failing"
touch "$KA_DIR/healthy1"
wait_until 10 via 1 || fail "route via director 1 did not return: $(route)"
log "tracked check: withdrawn and back"

kill -USR1 "${KA_PID[1]}"
wait_until 10 no_via 1 || fail "drain did not withdraw: $(route)"
assert_eq 1 "$(ka_metric 1 'keepalive_bgp_drained')" "drained metric"
kill -USR2 "${KA_PID[1]}"
wait_until 10 via 1 || fail "resume did not announce: $(route)"
log "drain and resume"

old=$(bird_pid 1)
[ -n "$old" ] || fail "no bird in director 1"
kill -KILL "$old"
wait_until 10 bird_restarted || fail "keepalive did not restart bird"
wait_until 30 via 1 || fail "route via director 1 did not return after bird restart: $(route)"
wait_until 5 announced 1 || fail "announced metric not back after bird restart"
grep -q "BIRD exited; restarting it" "$KA_DIR/ka1.log" || fail "bird death not logged"
log "bird killed: restarted, route back"

kill -TERM "${KA_PID[1]}"
wait_until 5 no_via 1 || fail "SIGTERM did not withdraw: $(route)"
kill -0 "${KA_PID[1]}" 2>/dev/null || fail "keepalive exited before the withdrawal was seen"
ka_wait_exit 1 10
no_bird 1 || fail "bird left running after keepalive stopped"
via 2 || fail "route via director 2 lost: $(route)"
grep -q "BGP routes withdrawn" "$KA_DIR/ka1.log" || fail "withdrawal not logged"
log "SIGTERM: withdrawn before exit, bird stopped"

# A killed keepalive takes its BIRD with it (no announcement left unchecked).
ka_kill 2
wait_until 10 no_via 2 || fail "route via a killed keepalive's director stayed: $(route)"
wait_until 10 no_via6 || fail "IPv6 route via a killed keepalive's director stayed"
wait_until 5 no_bird 2 || fail "bird outlived keepalive 2"
log "SIGKILL: bird stopped with keepalive, route gone"
KA_OK=1
log "pass"
