# shellcheck shell=bash
# Helpers for the shell tests (tests/netns/*.sh run on the host, tests/vm/*.sh in the VM).
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck disable=SC2034 # used by the tests that source this
BIN="$REPO/target/release"
TEST_NAME="$(basename "$0" .sh)"

log() { printf '[%s] %s\n' "$TEST_NAME" "$*" >&2; }
# The failure is said again after the cleanups' log dumps (a runner that
# keeps only the output's tail still shows why).
_FAILED=""
fail() { _FAILED="$*"; printf '[%s] FAIL: %s\n' "$TEST_NAME" "$*" >&2; exit 1; }
skip() { printf '[%s] SKIP: %s\n' "$TEST_NAME" "$*" >&2; exit 77; }
need_root() { [ "$(id -u)" = 0 ] || skip "needs root"; }
in_vm() { [ "${VMWLCH_IN_VM:-0}" = 1 ]; }

# assert_eq EXPECTED ACTUAL MESSAGE
assert_eq() { [ "$1" = "$2" ] || fail "$3: expected '$1', got '$2'"; }

# wait_until TIMEOUT_SECONDS CMD...: poll CMD every 50 ms until it succeeds.
wait_until() {
    local t=$1; shift
    local end=$(( $(date +%s%N) + t * 1000000000 ))
    until "$@" 2>/dev/null; do
        [ "$(date +%s%N)" -lt "$end" ] || return 1
        sleep 0.05
    done
}

# Namespaces created with mkns are deleted on exit.
_NETNS=()
mkns() {
    local n
    # Host-side namespace tests measure timings (elections, failover): one at
    # a time per machine (other checkouts, a CI run), until the script exits.
    if ! in_vm && [ -z "${VMWLCH_NETNS_LOCKED:-}" ]; then
        exec 8>/run/lock/vmwlch-netns.lock
        flock 8
        export VMWLCH_NETNS_LOCKED=1
    fi
    for n in "$@"; do
        ip netns add "$n"
        ip -n "$n" link set lo up
        _NETNS+=("$n")
    done
}
_cleanup_netns() {
    local n
    for n in "${_NETNS[@]}"; do
        ip netns pids "$n" 2>/dev/null | xargs -r kill -9 2>/dev/null || true
        ip netns del "$n" 2>/dev/null || true
    done
}
_CLEANUPS=()
on_exit() { _CLEANUPS+=("$*"); }
_run_cleanups() {
    local c
    for c in "${_CLEANUPS[@]}"; do eval "$c" || true; done
    _cleanup_netns
    [ -z "$_FAILED" ] || printf '[%s] FAIL (said above, before the logs): %s\n' "$TEST_NAME" "$_FAILED" >&2
}
trap _run_cleanups EXIT
