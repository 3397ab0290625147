#!/usr/bin/env bash
# A failing IPVS apply (a service with a scheduler no kernel has; on a
# kernel without IPVS every apply fails) is retried with back-off and
# counted; with ipvs_apply_failure: demote the instance stays BACKUP
# although nobody else advertises. Reloaded with a state that applies (no
# services), it becomes MASTER. Without demote, the same failure keeps
# the role (router 2, alone on its VRID).
source "$(dirname "$0")/../lib.sh"
source "$REPO/tests/keepalive/netns.sh"
ka_need
ka_topology 2
svc() {
    cat <<YAML
services:
  - protocol: tcp
    address: $KA_VIP
    port: 80
    scheduler: nosuchsched
    dests:
      - address: 10.1.0.11
YAML
}
KA_GLOBAL="ipvs_apply_failure: demote" ka_conf 1 100 > "$KA_DIR/1.yaml"
svc >> "$KA_DIR/1.yaml"
ka_conf 2 100 > "$KA_DIR/2.yaml"
sed -i 's/vrid: 51/vrid: 52/; s/192.0.2.100/192.0.2.101/' "$KA_DIR/2.yaml"
svc >> "$KA_DIR/2.yaml"
ka_start 1 "$KA_DIR/1.yaml"
ka_start 2 "$KA_DIR/2.yaml"

ka_wait_owner 2 "2" 5 192.0.2.101 || fail "router 2 (keep_role) did not become master despite the failing apply"
sleep 2
assert_eq backup "$(ka_state 1)" "router 1 (demote) with the apply failing"
assert_eq "" "$(ka_owners 2)" "owners of router 1's VIP while its apply fails"
assert_eq 0 "$(ka_metric 1 keepalive_ipvs_applied)" "applied gauge"
f=$(ka_metric 1 keepalive_ipvs_apply_failures_total)
r=$(ka_metric 1 keepalive_ipvs_apply_retries_total)
# attempts at 0, 0.25, 0.75, 1.75 s (back-off 250 ms doubling)
if [ "${f:-0}" -lt 3 ] || [ "${r:-0}" -lt 2 ]; then fail "apply failures '$f', retries '$r' after 2 s"; fi
grep -q "held in BACKUP" "$KA_DIR/ka1.log" || fail "the hold is not logged"
log "failing apply: ${f} failures, ${r} retries, router 1 held in BACKUP"

ka_conf 1 100 > "$KA_DIR/1.yaml.new"
sed -i 's/^  metrics_listen.*/&\n  ipvs_apply_failure: demote/' "$KA_DIR/1.yaml.new"
mv "$KA_DIR/1.yaml.new" "$KA_DIR/1.yaml"
kill -HUP "${KA_PID[1]}"
ka_wait_owner 2 "1" 3 || fail "router 1 did not become master once the state applied (owners '$(ka_owners 2)')"
assert_eq 1 "$(ka_metric 1 keepalive_ipvs_applied)" "applied gauge after the reload"
KA_OK=1
log "pass"
