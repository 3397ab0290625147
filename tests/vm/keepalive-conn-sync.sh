#!/usr/bin/env bash
# Inside the VM: full front-end failover with IPVS connection sync.
#
#   client 192.0.2.200 --br0-- fe1 eth0 192.0.2.1   fe1 eth1 10.1.0.1 --br1-- rs1 10.1.0.11
#                              fe2 eth0 192.0.2.2   fe2 eth1 10.1.0.2         rs2 10.1.0.12
#   VI_1 (eth0): VIP 192.0.2.100, the service address; carries ipvs_sync (on eth1)
#   VI_2 (eth1): 10.1.0.254, the real servers' default gateway
#
# Both front ends run keepalive (VRRPv3, 100 ms adverts) with the same
# `services:` applied through the ipvsctl library (warm standby); the master
# runs the kernel sync daemon as master, the backup as backup.
#
# Why NAT (masq) through a gateway address that moves with the master: every
# packet of a connection, both directions, then crosses the active front end
# and is translated there, so after the failover the new master must own
# both the client's and the servers' side of every established connection.
# It can only do so with the entry the sync daemon gave it: without one, a
# mid-stream segment to the VIP is not scheduled (IPVS creates connections on
# SYN only) and the local stack answers it with a RST, and the servers'
# replies would leave untranslated. (With direct routing the replies would
# bypass the front ends and only half of the path would be tested.)
#
# A dead front end is one that stops doing everything at once: VRRP, ARP,
# forwarding and syncing. Killing keepalive alone would leave the old
# master's IPVS forwarding for whoever still has its MAC cached (the servers'
# gateway entry, the client's VIP entry), and would hide a takeover that only
# half worked; so its links are cut as well (both bridge ports down), and
# keepalive is SIGKILLed (no priority-0 hand-over).
#
# Checks: the backup holds synced ESTABLISHED entries for every client
# connection before the failure; after it, every long-lived connection keeps
# exchanging data through the new master (no reset, same real server) and new
# connections are served; the new master runs the master sync daemon. Prints
# the takeover time per LAN (old master's last advert -> new master's first,
# from a capture) and the stall each connection saw (TCP retransmission
# timers add to the takeover: RTO 200 ms, then 400, 800 ms...).
source "$(dirname "$0")/../lib.sh"
in_vm || skip "run through scripts/vm.sh"
source "$REPO/tests/keepalive/netns.sh"
ka_need
command -v python3 >/dev/null || skip "python3 missing"
[ -x "$BIN/ipvsctl" ] || skip "$BIN/ipvsctl not built"

NCONN=${NCONN:-8}
GW=10.1.0.254
CLIENT_HEX=C00002C8 # 192.0.2.200
VIP_HEX=C0000264    # 192.0.2.100

ka_topology 2
# The back LAN: br1 in the bridge namespace, eth1 on the front ends.
ip -n "$KA_BR" link add br1 type bridge
ip -n "$KA_BR" link set br1 up
backport() { # backport NS BRIDGE_PORT ADDR DEV
    ip link add "$2" type veth peer name "$4" netns "$1"
    ip link set "$2" netns "$KA_BR"
    ip -n "$KA_BR" link set "$2" master br1 up
    ip -n "$1" addr add "$3" dev "$4"
    ip -n "$1" link set "$4" up
}
for i in 1 2; do
    ns=$(ka_node $i)
    backport "$ns" "${KA_TAG}b$i" "10.1.0.$i/24" eth1
    ip netns exec "$ns" sysctl -qw net.ipv4.ip_forward=1 net.ipv4.conf.all.arp_ignore=1 \
        net.ipv4.vs.conntrack=0
done
RS_NS=()
for r in 11 12; do
    ns="${KA_TAG}rs$r"
    mkns "$ns"
    RS_NS+=("$ns")
    backport "$ns" "${KA_TAG}b$r" "10.1.0.$r/24" eth0
    ip -n "$ns" route add default via "$GW"
done

for i in 1 2; do
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
    ipvs_sync: { interface: eth1, syncid: 51 }
  - name: VI_2
    interface: eth1
    vrid: 52
    priority: $prio
    advert_interval_ms: 100
    virtual_ips: [$GW/24]
services:
  - protocol: tcp
    address: $KA_VIP
    port: 80
    scheduler: rr
    dests:
      - { address: 10.1.0.11, forward: masq }
      - { address: 10.1.0.12, forward: masq }
YAML
    ka_start $i "$KA_DIR/$i.yaml"
done

# ka_has_addr I DEV ADDR: front end I holds ADDR on DEV.
ka_has_addr() { [[ "$(ip -n "$(ka_node "$1")" -4 addr show dev "$2")" == *"inet $3/"* ]]; }
owns_both() { ka_has_addr "$1" eth0 "$KA_VIP" && ka_has_addr "$1" eth1 "$GW"; }
wait_until 30 owns_both 1 || fail "front end 1 never became master of both instances"
ka_has_vip 2 && fail "both front ends hold the VIP"
# /proc/PID/net shows the namespace of keepalive PID: no `ip netns exec` needed.
pnet() { cat "/proc/${KA_PID[$1]}/net/$2"; }
masq_dests() { [ "$(pnet "$1" ip_vs | grep -c -- '->.*Masq')" -ge 2 ]; }
for i in 1 2; do
    wait_until 30 masq_dests $i || fail "front end $i: services not applied: $(pnet $i ip_vs)"
done
daemons() { ip netns exec "$(ka_node "$1")" "$BIN/ipvsctl" -L --daemon; }
d1=$(daemons 1); d2=$(daemons 2)
log "fe1 sync: $d1"
log "fe2 sync: $d2"
[[ "$d1" == *"master sync daemon (mcast=eth1, syncid=51"* && "$d1" != *backup* ]] ||
    fail "front end 1 (master) does not run only the master sync daemon"
[[ "$d2" == *"backup sync daemon (mcast=eth1, syncid=51"* && "$d2" != *master* ]] ||
    fail "front end 2 (backup) does not run only the backup sync daemon"

# Long-lived connections, a line echoed on each every 50 ms.
T="$KA_DIR/traffic"
mkdir -p "$T"
python3 "$REPO/tests/keepalive/conn_sync_traffic.py" --client "$KA_CLIENT" \
    --server "${RS_NS[0]}:10.1.0.11:80" --server "${RS_NS[1]}:10.1.0.12:80" \
    --vip "$KA_VIP" --port 80 --conns "$NCONN" --interval 0.05 --deadline 240 --dir "$T" \
    > "$T/out" 2> "$T/err" &
traffic=$!
on_exit "kill $traffic 2>/dev/null || true"
# Bounded generously: a slow emulated VM takes seconds to start Python and
# the 8 x 20 echoes; stuck connections show in the status's echo counts.
wait_until 90 test -e "$T/ready" ||
    fail "client connections not established: $(cat "$T/err" "$T/status" 2>/dev/null)"

# The sync daemon ships an entry after its 3rd packet and flushes every 2 s.
synced() {
    local n
    n=$(pnet 2 ip_vs_conn | grep -c "^TCP  *$CLIENT_HEX .* $VIP_HEX 0050 .* ESTABLISHED") || true
    [ "$n" -ge "$NCONN" ]
}
wait_until 45 synced || fail "backup has not all $NCONN connections synced: $(pnet 2 ip_vs_conn)"
log "backup's synced entries (before the failure):"
ip netns exec "$(ka_node 2)" "$BIN/ipvsctl" -Lnc >&2

# Timing: every exec takes long under emulation (cutting the links with one
# `ip` command can take seconds, polling `ip addr` is no clock), so the
# takeover is timed on the wire, with the kernel's capture timestamps: the
# old master's last advert to the new master's first, on each LAN.
ip netns exec "$KA_BR" tcpdump -i any -n -tt -l -Q in vrrp > "$T/vrrp" 2> "$T/tcpdump.err" &
on_exit "kill $! 2>/dev/null || true"
# tcpdump on "any" took over 10 s to start in CI (emulated VM under load).
wait_until 60 grep -q "listening on" "$T/tcpdump.err" || fail "tcpdump did not start: $(cat "$T/tcpdump.err")"
sleep 0.5

# The master dies: both links cut in one command, then keepalive SIGKILLed
# (the bash builtin, no exec). The failure lies between T0 and T1.
T0=$(ka_now_ms)
printf 'link set %s down\nlink set %s down\n' "${KA_TAG}v1" "${KA_TAG}b1" | ip -n "$KA_BR" -batch -
T1=$(ka_now_ms)
ka_kill 1 KILL
echo "$T0 $T1" > "$T/killed"
wait_until 30 owns_both 2 || fail "front end 2 did not take both addresses over"
# settled: every connection recovered, or one failed
settled() { local s; s=$(< "$T/status"); [[ "$s" == *"recovered=$NCONN"* || "$s" != *"failed=0 "* ]]; }
wait_until 20 settled || true
log "traffic: $(< "$T/status")"
d2=$(daemons 2)
log "fe2 sync after the failover: $d2"
[[ "$d2" == *"master sync daemon (mcast=eth1, syncid=51"* && "$d2" != *backup* ]] ||
    fail "front end 2 (new master) does not run only the master sync daemon"
touch "$T/stop"
gone() { ! kill -0 "$1" 2>/dev/null; }
wait_until 30 gone "$traffic" || fail "traffic driver did not finish"
rc=0; wait "$traffic" || rc=$?
summary=$(cat "$T/out")
[ -n "$summary" ] || fail "no traffic summary: $(cat "$T/err")"
[ "${KA_VERBOSE:-0}" = 1 ] && log "summary: $summary"
python3 - "$summary" "$T/vrrp" "$NCONN" "$T0" <<'PY' >&2 || fail "connections did not survive the failover"
import json, re, sys
s = json.loads(sys.argv[1])
n, t0 = int(sys.argv[3]), float(sys.argv[4])
adverts = {}  # source -> [capture times in ms]
for line in open(sys.argv[2]):
    m = re.match(r"(\d+\.\d+) .*IP (\S+) > 224\.0\.0\.18: VRRP", line)
    if m:
        adverts.setdefault(m.group(2), []).append(float(m.group(1)) * 1000)
def takeover(old, new):
    """Old master's last advert -> new master's first after the failure
    began (the failure lies in the 100 ms after that last advert)."""
    first = [t for t in adverts.get(new, []) if t >= t0]
    last = [t for t in adverts.get(old, []) if first and t < first[0]]
    early = [t for t in adverts.get(new, []) if t < t0]
    if early:
        # a loaded emulator can starve a backup past its master-down timer
        print("[keepalive-conn-sync] note: %s advertised %d times before the failure"
              " (spurious takeover, %.0f ms before it)" % (new, len(early), t0 - early[0]))
    if not first or not last:
        return None, None
    return first[0] - last[-1], last[-1]
took, last_old = takeover("192.0.2.1", "192.0.2.2")
took_gw, _ = takeover("10.1.0.1", "10.1.0.2")
conns, new = s["conns"], s["new"]
kept = [c for c in conns if c["error"] is None and c.get("after_kill", 0) >= 5]
stalls, resumed = [], []
if took is not None:
    t_new = last_old + took
    for c in kept:
        # the pause the takeover falls into: no data flows while nobody owns the VIP
        g = [(a, b) for a, b in c["gaps"] if a <= t_new <= b]
        if g:
            stalls.append(round(g[0][1] - g[0][0]))
            resumed.append(round(g[0][1] - last_old))
stalls.sort(); resumed.sort()
rs = sorted({c["rs"] for c in conns})
f = lambda v: "-" if v is None else "%.0f" % v
print("[keepalive-conn-sync] failover: old master's last advert -> new master's first: %s ms on the"
      " front LAN (VIP), %s ms on the back LAN (gateway); master-down interval 361 ms"
      % (f(took), f(took_gw)))
print("[keepalive-conn-sync] %d/%d established connections kept (real servers %s); stall per"
      " connection min/median/max %s ms, data flowing again %s ms after the old master's last"
      " advert; new connections served: %d/%d"
      % (len(kept), n, ",".join(rs),
         "/".join(str(x) for x in (stalls[0], stalls[len(stalls) // 2], stalls[-1])) if stalls else "-",
         "%d-%d" % (resumed[0], resumed[-1]) if resumed else "-",
         sum(1 for x in new if x["ok"]), len(new)))
for c in conns:
    if c not in kept:
        c.pop("gaps", None)
        print("[keepalive-conn-sync] lost: %s" % c)
for x in new:
    if not x["ok"]:
        print("[keepalive-conn-sync] new connection failed: %s" % x)
ok = len(kept) == n and len(conns) == n and new and all(x["ok"] for x in new)
if took is None or took_gw is None:
    print("[keepalive-conn-sync] no takeover seen on the wire: %s" % sorted(adverts))
    ok = False
sys.exit(0 if ok else 1)
PY
assert_eq 0 "$rc" "traffic driver status"
# The new connections went through front end 2 (front end 1 is cut off).
n=$(pnet 2 ip_vs_conn | grep -c "^TCP  *$CLIENT_HEX " ) || true
[ "$n" -gt "$NCONN" ] || fail "front end 2 shows no new connections: $(pnet 2 ip_vs_conn)"
KA_OK=1
[ "${KA_VERBOSE:-0}" = 1 ] && ka_dump_logs
log "pass"
