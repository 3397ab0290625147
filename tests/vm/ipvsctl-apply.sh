#!/usr/bin/env bash
# Inside the VM: `ipvsctl apply` - a file converges the kernel, re-applying is a
# no-op, save -> apply is a no-op, a changed file converges with the minimal
# steps, bad files are rejected with a located error and the kernel untouched,
# drains; the `hosts:` section when the ip_vs_vmwlch module is available.
source "$(dirname "$0")/../lib.sh"
set +e
in_vm || skip "run through scripts/vm.sh"
need_root
[ -x "$BIN/ipvsctl" ] || skip "build target/release/ipvsctl first"
W="$(mktemp -d)"
on_exit "rm -rf '$W'"
NS=ipvsctl-apply
mkns "$NS"
ip -n "$NS" link add d0 type dummy
ip -n "$NS" link set d0 up
ip -n "$NS" addr add 10.0.0.254/8 dev d0
ip -n "$NS" addr add 192.168.0.254/16 dev d0
ip -n "$NS" -6 addr add 2001:db8::fe/64 dev d0 nodad
C() { ip netns exec "$NS" "$BIN/ipvsctl" "$@"; }

HOSTS=""
if ip netns exec "$NS" "$BIN/ipvsctl" host info >/dev/null 2>&1 || { modprobe ip_vs_vmwlch 2>/dev/null && C host info >/dev/null 2>&1; }; then
    HOSTS="hosts:
  - name: h1
    weight: 2
    vms: [192.168.1.10, 192.168.1.11]
  - name: h2
    vms: [192.168.1.12]"
    log "VMWLCH family available: testing hosts too"
else
    log "VMWLCH family not available: services only"
fi

cat >"$W/c1.yaml" <<Y
services:
  - protocol: tcp
    address: 10.0.0.1
    port: 80
    scheduler: wlc
    persistent: 300
    netmask: 255.255.255.0
    dests:
      - {address: 192.168.1.10, weight: 2}
      - {address: 192.168.1.11}
      - {address: 192.168.1.12, forward: masq, port: 8080, u_threshold: 100, l_threshold: 10}
  - protocol: udp
    address: 2001:db8::1
    port: 53
    scheduler: sh
    sched_flags: [sh-fallback, sh-port]
    one_packet: true
    dests:
      - {address: 2001:db8::10, forward: masq, weight: 5}
  - fwmark: 7
    scheduler: rr
    dests:
      - address: 192.168.1.20
        forward: tunnel
        tunnel: {type: gue, port: 6080, csum: remcsum}
$HOSTS
Y

C apply -f "$W/c1.yaml" >"$W/out" 2>&1 || { cat "$W/out" >&2; fail "first apply"; }
C plan -f "$W/c1.yaml" >"$W/plan" 2>&1
assert_eq "No changes." "$(cat "$W/plan")" "plan after apply"
C -Sn >"$W/s1"
grep -q -- '-a -f 7 -r 192.168.1.20:0 -i -w 1 --tun-type gue --tun-port 6080 --tun-remcsum' "$W/s1" || fail "gue dest not applied: $(cat "$W/s1")"
grep -q -- '-A -u \[2001:db8::1\]:53 -s sh -o -b sh-fallback,sh-port' "$W/s1" || fail "udp service: $(cat "$W/s1")"
C -Ln --thresholds | grep -Eq "192.168.1.12:8080 +100 +10 " || fail "thresholds not applied: $(C -Ln --thresholds)"

# save -> apply is a no-op.
C save -o yaml >"$W/saved.yaml" || fail "save -o yaml"
C plan -f "$W/saved.yaml" >"$W/plan"
assert_eq "No changes." "$(cat "$W/plan")" "plan of the saved file"
C apply -f "$W/saved.yaml" >"$W/out" || fail "apply saved"
assert_eq "No changes." "$(cat "$W/out")" "apply of the saved file"

# A changed file converges with the minimal steps.
sed -e 's/{address: 192.168.1.10, weight: 2}/{address: 192.168.1.10, weight: 3}/' \
    -e 's/- {address: 192.168.1.11}/- {address: 192.168.1.13}/' \
    -e 's/scheduler: rr/scheduler: wrr/' "$W/c1.yaml" >"$W/c2.yaml"
C plan -f "$W/c2.yaml" >"$W/plan"
n="$(grep -c '^[-+~]' "$W/plan")"
assert_eq 4 "$n" "steps for 4 changes ($(cat "$W/plan"))"
# Order: service edit and new dest before the deletion.
[ "$(grep -n '^-' "$W/plan" | cut -d: -f1)" -gt "$(grep -n '^+' "$W/plan" | cut -d: -f1)" ] || fail "deletion planned before addition"
C apply -f "$W/c2.yaml" >"$W/out" || fail "apply c2: $(cat "$W/out")"
C plan -f "$W/c2.yaml" >"$W/plan"
assert_eq "No changes." "$(cat "$W/plan")" "plan after apply c2"
C -Sn | grep -q -- "-a -t 10.0.0.1:80 -r 192.168.1.13:80 -g -w 1" || fail "new dest missing"
C -Sn | grep -q -- "192.168.1.11" && fail "removed dest still present"

# Bad files: located errors, exit 2, kernel untouched.
C -Sn >"$W/before"
printf 'services:\n  - protocol: tcp\n    address: 10.0.0.1\n    port: 99999\n' >"$W/bad1.yaml"
C apply -f "$W/bad1.yaml" >"$W/out" 2>&1; rc=$?
assert_eq 2 "$rc" "syntax error status"
grep -q "bad1.yaml:4:11" "$W/out" || fail "no location in: $(cat "$W/out")"
printf 'services:\n  - protocol: tcp\n    address: 10.0.0.9\n    port: 80\n    dests:\n      - address: 192.168.1.1\n        l_threshold: 5\n' >"$W/bad2.yaml"
C apply -f "$W/bad2.yaml" >"$W/out" 2>&1; rc=$?
assert_eq 2 "$rc" "semantic error status"
grep -q "bad2.yaml:7:9: services\[0\].dests\[0\].l_threshold" "$W/out" || fail "semantic error location: $(cat "$W/out")"
C -Sn >"$W/after"
cmp -s "$W/before" "$W/after" || fail "a rejected file changed the kernel"

# Drain: a removed real server gets weight 0 first.
sed -e '/192.168.1.13/d' "$W/c2.yaml" >"$W/c3.yaml"
C apply --drain -f "$W/c3.yaml" >"$W/out" || fail "drain apply"
C -Sn | grep -q -- "-r 192.168.1.13:80 -g -w 0" || fail "drained dest should have weight 0: $(C -Sn)"
C apply --drain -f "$W/c3.yaml" >"$W/out" || fail "second drain apply"
C -Sn | grep -q "192.168.1.13" && fail "idle drained dest should be deleted on the next apply"

if [ -n "$HOSTS" ]; then
    C host list -o json | grep -q '"name": "h1"' || fail "host h1 missing"
    C save -o yaml | grep -q "name: h2" || fail "save lacks hosts"
    sed -e 's/vms: \[192.168.1.12\]/vms: [192.168.1.12, 192.168.1.11]/' -e 's/vms: \[192.168.1.10, 192.168.1.11\]/vms: [192.168.1.10]/' "$W/c3.yaml" >"$W/c4.yaml"
    C apply -f "$W/c4.yaml" >"$W/out" || fail "host move: $(cat "$W/out")"
    C plan -f "$W/c4.yaml" | grep -qx "No changes." || fail "hosts not converged"
    C host flush
fi

# Empty services list empties the table.
printf 'services: []\n' >"$W/empty.yaml"
C apply -f "$W/empty.yaml" >/dev/null || fail "apply empty"
assert_eq "" "$(C -Sn)" "table empty"
log "apply round trips, convergence, errors and drain OK"
