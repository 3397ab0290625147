# shellcheck shell=bash
# Shared helpers for tests/netns/keepalive-*.sh (sourced after tests/lib.sh).
#
# Topology: a bridge namespace joins N router namespaces and one client
# namespace on 192.0.2.0/24 (TEST-NET-1, only inside these namespaces):
#   router i: eth0 192.0.2.i/24     client: eth0 192.0.2.200/24
#   VIP: 192.0.2.100/24 (IPv6: 2001:db8::100/64)

KA_BIN="${KA_BIN:-$BIN/keepalive}"
KA_TAG="ka$$"
KA_BR="${KA_TAG}br"
KA_CLIENT="${KA_TAG}c"
KA_VIP=192.0.2.100
# shellcheck disable=SC2034 # used by the tests that source this
KA_VIP6=2001:db8::100
KA_DIR="$(mktemp -d /tmp/keepalive-test.XXXXXX)"
declare -A KA_PID=()

ka_need() {
    need_root
    [ -x "$KA_BIN" ] || skip "$KA_BIN not built (cargo build --release -p keepalive)"
    command -v ip >/dev/null || skip "iproute2 missing"
}

ka_node() { echo "${KA_TAG}n$1"; }

# ka_topology N: bridge + N routers + a client.
ka_topology() {
    local n=$1 i ns
    mkns "$KA_BR"
    ip -n "$KA_BR" link add br0 type bridge
    ip -n "$KA_BR" link set br0 up
    for i in $(seq 1 "$n") c; do
        if [ "$i" = c ]; then ns=$KA_CLIENT; else ns=$(ka_node "$i"); fi
        mkns "$ns"
        ip link add "${KA_TAG}v$i" type veth peer name eth0 netns "$ns"
        ip link set "${KA_TAG}v$i" netns "$KA_BR"
        ip -n "$KA_BR" link set "${KA_TAG}v$i" master br0 up
        ip -n "$ns" link set eth0 up
        ip netns exec "$ns" sysctl -qw net.ipv6.conf.eth0.accept_dad=0
        # answer ARP only for addresses on the interface that was asked
        ip netns exec "$ns" sysctl -qw net.ipv4.conf.all.arp_ignore=1
        if [ "$i" = c ]; then
            ip -n "$ns" addr add 192.0.2.200/24 dev eth0
            ip -n "$ns" addr add 2001:db8::200/64 dev eth0 nodad
        else
            ip -n "$ns" addr add "192.0.2.$i/24" dev eth0
            ip -n "$ns" addr add "2001:db8::$i/64" dev eth0 nodad
        fi
    done
    # wait for link-local addresses (IPv6 adverts are sent from them)
    for i in $(seq 1 "$n"); do
        wait_until 5 ka_has_ll "$(ka_node "$i")" || fail "no link-local address in $(ka_node "$i")"
    done
}

ka_has_ll() {
    local a
    a=$(ip -n "$1" -6 addr show dev eth0)
    [[ "$a" == *"inet6 fe80"* && "$a" != *tentative* ]]
}

# ka_partition I: cut router I off the bridge (its link stays up: a fault
# elsewhere in the network); ka_heal I: reconnect.
ka_partition() { ip -n "$KA_BR" link set "${KA_TAG}v$1" nomaster; }
ka_heal() { ip -n "$KA_BR" link set "${KA_TAG}v$1" master br0; }
# ka_link_down I: router I loses its carrier (the bridge port goes down);
# ka_link_up I: back.
ka_link_down() { ip -n "$KA_BR" link set "${KA_TAG}v$1" down; }
ka_link_up() { ip -n "$KA_BR" link set "${KA_TAG}v$1" up; }

# ka_conf NODE PRIO [extra instance yaml lines...] > file: one IPv4 instance.
# KA_GLOBAL: an extra line for the global section (e.g. "realtime_priority: 50").
# KA_VERSION=2: a VRRPv2 instance (KA_INTERVAL then a multiple of 1000).
ka_conf() {
    local i=$1 prio=$2 interval=${KA_INTERVAL:-100}; shift 2
    cat <<YAML
global:
  metrics_listen: 127.0.0.1:9650
${KA_GLOBAL:+  $KA_GLOBAL
}vrrp:
  - name: VI_1
    interface: eth0
    vrid: 51
    priority: $prio
    advert_interval_ms: $interval
    virtual_ips: [$KA_VIP/24]
${KA_VERSION:+    version: $KA_VERSION}
YAML
    local l
    for l in "$@"; do printf '    %s\n' "$l"; done
}

# ka_start I CONFFILE: run keepalive in router I's namespace.
ka_start() {
    local i=$1 conf=$2
    "$KA_BIN" --check -c "$conf" >/dev/null || fail "config rejected: $conf"
    ip netns exec "$(ka_node "$i")" "$KA_BIN" -c "$conf" --log-level "${KA_LOG:-info}" \
        >>"$KA_DIR/ka$i.log" 2>&1 &
    KA_PID[$i]=$!
}

ka_kill() { kill "-${2:-KILL}" "${KA_PID[$1]}" 2>/dev/null || true; }
ka_wait_exit() {
    local i=$1 t=${2:-5}
    wait_until "$t" bash -c "! kill -0 ${KA_PID[$i]}" || fail "keepalive $i did not exit"
    wait "${KA_PID[$i]}" 2>/dev/null || true
}

# ka_has_vip I [ADDR]: router I holds the VIP.
ka_has_vip() {
    local a
    a=$(ip -n "$(ka_node "$1")" addr show dev eth0)
    [[ "$a" == *"inet ${2:-$KA_VIP}/"* || "$a" == *"inet6 ${2:-$KA_VIP}/"* ]]
}

# ka_owners N [ADDR]: space-separated list of routers holding the VIP.
ka_owners() {
    local n=$1 i out=""
    for i in $(seq 1 "$n"); do ka_has_vip "$i" "${2:-}" && out="$out$i "; done
    echo "${out% }"
}

# ka_metric I NAME_AND_LABELS: value of one metric of router I.
ka_metric() {
    ip netns exec "$(ka_node "$1")" curl -s --max-time 2 http://127.0.0.1:9650/metrics |
        awk -v k="$2" '$1 == k { print $2 }'
}

ka_state() {
    local i=$1 s
    for s in master backup init; do
        [ "$(ka_metric "$i" "keepalive_vrrp_state{instance=\"VI_1\",state=\"$s\"}")" = 1 ] && { echo "$s"; return; }
    done
    echo unknown
}

ka_now_ms() { echo $(( $(date +%s%N) / 1000000 )); }

# ka_wait_owner N EXPECTED SECONDS: wait until exactly EXPECTED hold the VIP.
ka_owner_is() { [ "$(ka_owners "$1" "${3:-}")" = "$2" ]; }
ka_wait_owner() { wait_until "$3" ka_owner_is "$1" "$2" "${4:-}"; }

ka_dump_logs() {
    local f
    for f in "$KA_DIR"/*.log; do
        [ -f "$f" ] || continue
        echo "---- $f" >&2
        tail -n 30 "$f" >&2
    done
}

KA_OK=0
ka_dump_logs_on_fail() { [ "$KA_OK" = 1 ] || ka_dump_logs; }

# Stop every keepalive we started (TERM, then KILL), quietly.
ka_stop_all() {
    local i
    for i in "${!KA_PID[@]}"; do kill -TERM "${KA_PID[$i]}" 2>/dev/null || true; done
    for i in "${!KA_PID[@]}"; do
        wait_until 3 bash -c "! kill -0 ${KA_PID[$i]}" || kill -KILL "${KA_PID[$i]}" 2>/dev/null || true
        wait "${KA_PID[$i]}" 2>/dev/null || true
    done
}

# ka_time_until_vip I TIMEOUT_MS: busy-poll until router I holds the VIP;
# prints the elapsed milliseconds since START_MS (global) or fails.
ka_time_until_vip() {
    local i=$1 limit=$2 addr=${3:-} now
    while :; do
        now=$(ka_now_ms)
        ka_has_vip "$i" "$addr" && { echo $(( now - START_MS )); return 0; }
        [ $(( now - START_MS )) -lt "$limit" ] || return 1
    done
}

KEEPALIVED="${KEEPALIVED:-/usr/sbin/keepalived}"

# kd_conf PRIO > file: the same IPv4 instance for Debian's keepalived.
# KD_GLOBAL: an extra line for global_defs (e.g. "vrrp_rt_priority 50").
# KD_DEFAULT_VERSION=1: no vrrp_version line (keepalived's default, VRRPv2).
kd_conf() {
    local prio=$1 interval=${KA_INTERVAL:-100} ver="vrrp_version 3"
    [ -z "${KD_DEFAULT_VERSION:-}" ] || ver=""
    cat <<CONF
global_defs {
    router_id kd$prio
${ver:+    $ver
}    vrrp_garp_master_delay 0
    vrrp_garp_master_repeat 3
    enable_script_security
${KD_GLOBAL:+    $KD_GLOBAL
}}
vrrp_instance VI_1 {
    state BACKUP
    interface eth0
    virtual_router_id 51
    priority $prio
    advert_int $(awk -v ms="$interval" 'BEGIN { printf "%g", ms / 1000 }')
    virtual_ipaddress {
        $KA_VIP/24 dev eth0
    }
}
CONF
}

# kd_start I CONFFILE: run keepalived (VRRP only, foreground) in router I.
kd_start() {
    local i=$1 conf=$2
    local d="$KA_DIR/kd$i"
    rm -rf "$d"; mkdir -p "$d"
    ip netns exec "$(ka_node "$i")" "$KEEPALIVED" -n -l -D -P -f "$conf" \
        -p "$d/keepalived.pid" -r "$d/vrrp.pid" -c "$d/checkers.pid" \
        >>"$KA_DIR/kd$i.log" 2>&1 &
    KA_PID[$i]=$!
}

# kd_kill I: SIGKILL keepalived's parent and VRRP child (everything in the namespace).
# Every process first stopped, then killed: keepalived's VRRP child gets
# SIGTERM when its parent dies (PR_SET_PDEATHSIG) and, if it runs before its
# own SIGKILL lands (a loaded machine), sends priority 0 - a hand-over, not
# the death the caller wanted.
kd_kill() {
    local pids
    pids=$(ip netns pids "$(ka_node "$1")")
    [ -n "$pids" ] || return 0
    # shellcheck disable=SC2086 # one pid per word
    kill -STOP $pids 2>/dev/null || true
    # shellcheck disable=SC2086
    kill -KILL $pids 2>/dev/null || true
}

# One cleanup, in order: stop daemons, show logs if the test failed, remove files.
ka_finish() {
    ka_stop_all
    ka_dump_logs_on_fail
    if [ "${KA_KEEP:-0}" = 1 ]; then echo "logs kept in $KA_DIR" >&2; else rm -rf "$KA_DIR"; fi
}
on_exit ka_finish
