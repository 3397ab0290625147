#!/usr/bin/env bash
# Health checks (without IPVS): a TCP and an HTTP check against a server in
# the client namespace go up, go down after `fall` failures when the server
# stops, and come back after `rise` successes; an exec check follows a flag
# file. States and counters are read from the metrics endpoint; the VRRP
# master keeps advertising on time throughout (checks never block timers).
source "$(dirname "$0")/../lib.sh"
source "$REPO/tests/keepalive/netns.sh"
ka_need
command -v python3 >/dev/null || skip "python3 missing"
ka_topology 1
FLAG="$KA_DIR/healthy"
touch "$FLAG"

ka_conf 1 200 > "$KA_DIR/1.yaml"
cat >> "$KA_DIR/1.yaml" <<YAML
health_checks:
  - real_server: 192.0.2.200:8080
    type: tcp
    interval_ms: 100
    timeout_ms: 100
    rise: 2
    fall: 2
  - real_server: 192.0.2.200:8080
    type: http
    path: /
    expected_status: 200
    interval_ms: 100
    timeout_ms: 100
    rise: 2
    fall: 2
  - real_server: 192.0.2.201:80
    type: exec
    command: "test -e $FLAG"
    interval_ms: 100
    timeout_ms: 100
    rise: 1
    fall: 1
YAML

serve() {
    ip netns exec "$KA_CLIENT" python3 -m http.server 8080 --bind 192.0.2.200 --directory "$KA_DIR" \
        >/dev/null 2>&1 &
    SRV=$!
    wait_until 5 ip netns exec "$KA_CLIENT" bash -c 'echo > /dev/tcp/192.0.2.200/8080' || fail "test HTTP server did not start"
}
serve
on_exit 'kill $SRV 2>/dev/null || true'
ka_start 1 "$KA_DIR/1.yaml"
ka_wait_owner 1 "1" 5 || fail "no master"

up() { [ "$(ka_metric 1 "keepalive_check_up{check=\"$1\"}")" = "$2" ]; }
sleep 0.6
up tcp:192.0.2.200:8080 1 || fail "tcp check not up"
up http:192.0.2.200:8080 1 || fail "http check not up"
up exec:192.0.2.201:80 1 || fail "exec check not up"

kill "$SRV"; wait "$SRV" 2>/dev/null || true
rm -f "$FLAG"
wait_until 3 up tcp:192.0.2.200:8080 0 || fail "tcp check did not go down"
wait_until 3 up http:192.0.2.200:8080 0 || fail "http check did not go down"
wait_until 3 up exec:192.0.2.201:80 0 || fail "exec check did not go down"
grep -q "real server down" "$KA_DIR/ka1.log" || fail "down not logged"

serve
touch "$FLAG"
wait_until 3 up tcp:192.0.2.200:8080 1 || fail "tcp check did not come back"
wait_until 3 up http:192.0.2.200:8080 1 || fail "http check did not come back"
wait_until 3 up exec:192.0.2.201:80 1 || fail "exec check did not come back"
tr=$(ka_metric 1 'keepalive_check_transitions_total{check="http:192.0.2.200:8080"}')
[ "$tr" = 2 ] || fail "http transitions: expected 2, got '$tr' (a probe of the test server timed out at 100 ms?)"
assert_eq master "$(ka_state 1)" "VRRP state"
KA_OK=1
log "pass"
