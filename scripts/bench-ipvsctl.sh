#!/usr/bin/env bash
# Benchmark (not a test): ipvsadm vs ipvsctl side by side in one VM run on
# N services (default 10,000) with 4 real servers each: restore (-R), full
# listing (-Ln) and flush (-C). Prints the times and the ratios.
# IPVSCTL_BASE=PATH (a file under the repository, which the VM sees) adds a
# third column: that ipvsctl binary (e.g. an older commit's), in the same
# run, with the ratio base/current, for before/after comparisons; then
# BENCH_ROUNDS=R (default 3) more rounds of current and base alternately,
# each in fresh namespaces, and the medians (one run each is noise-bound).
#
#   scripts/bench-ipvsctl.sh [N]        (runs itself inside the VM)
set -euo pipefail
REPO="$(cd "$(dirname "$0")/.." && pwd)"
N="${1:-10000}"
if [ "${VMWLCH_IN_VM:-0}" != 1 ]; then
    # The benchmark kernel (no KASAN/lockdep/kCFI): the debug kernel's
    # instrumentation would add the same large kernel time to both tools.
    export VMWLCH_KERNEL_VARIANT="${VMWLCH_KERNEL_VARIANT:-bench}"
    [ "${SKIP_SETUP:-0}" = 1 ] || "$REPO/scripts/setup.sh" --no-cargo --bench-kernel >&2
    [ -x "$REPO/target/release/ipvsctl" ] || (cd "$REPO" && cargo build --release -p ipvsctl)
    if [ -n "${IPVSCTL_BASE:-}" ]; then
        IPVSCTL_BASE="$(realpath "$IPVSCTL_BASE")"
        case "$IPVSCTL_BASE" in "$REPO"/*) ;; *) echo "IPVSCTL_BASE must be under $REPO (the VM sees only that)" >&2; exit 2 ;; esac
        [ -x "$IPVSCTL_BASE" ] || { echo "IPVSCTL_BASE=$IPVSCTL_BASE is not an executable" >&2; exit 2; }
    fi
    exec "$REPO/scripts/vm.sh" -- env IPVSCTL_BASE="${IPVSCTL_BASE:-}" BENCH_ROUNDS="${BENCH_ROUNDS:-3}" \
        "$REPO/scripts/bench-ipvsctl.sh" "$N"
fi
TOOLS=(real ours)
[ -n "${IPVSCTL_BASE:-}" ] && TOOLS+=(base)

W="$(mktemp -d)"
# shellcheck disable=SC2154 # n is the trap's own loop variable
trap 'for n in $(ip netns list | awk "/^ipvsctl-bench-/ {print \$1}"); do ip netns del "$n"; done; rm -rf "$W"' EXIT
# One fresh network namespace per tool. IPVS keeps removed real servers in a
# per-namespace "trash" list for 2-3 minutes and every new real server is
# first looked up there, one list entry at a time: a tool restoring shortly
# after the other one's flush would walk 40,000 entries per `-a` and pay
# seconds of kernel time that have nothing to do with the tool.
mkns_bench() {
    local NS=ipvsctl-bench-$1
    ip netns del "$NS" 2>/dev/null || true
    ip netns add "$NS"
    ip -n "$NS" link add d0 type dummy
    ip -n "$NS" link set d0 up
    # IPVS accepts a real server whose address the namespace's local routing
    # table calls unicast; that table exists once an address does (lo's).
    ip -n "$NS" link set lo up
}
for tool in "${TOOLS[@]}"; do mkns_bench "$tool"; done

mkdir -p "$W/real" "$W/ours" "$W/base"
ln -s /usr/sbin/ipvsadm "$W/real/ipvsadm"
ln -s "$REPO/target/release/ipvsctl" "$W/ours/ipvsadm"
[ -n "${IPVSCTL_BASE:-}" ] && ln -s "$IPVSCTL_BASE" "$W/base/ipvsadm"

# The rules: N TCP services 10.x.y.z:80 with 4 NAT real servers each.
awk -v n="$N" 'BEGIN {
    for (i = 0; i < n; i++) {
        v = sprintf("10.%d.%d.%d:80", int(i / 62500) % 250, int(i / 250) % 250, i % 250 + 1);
        printf "-A -t %s -s wlc\n", v;
        for (j = 1; j <= 4; j++)
            printf "-a -t %s -r 172.%d.%d.%d:8080 -m -w %d\n", v, 16 + (i % 16), int(i / 256) % 256, (i % 63) * 4 + j, j;
    }
}' >"$W/rules"

t() { # t TOOL ARGS... < stdin: elapsed seconds of the tool's own run
    # Timed by bash inside the namespace, around the tool alone: the execs of
    # `ip netns exec` and of the timer itself cost a good part of a second
    # under emulation and would hide the difference on quick commands. Both
    # tools run as "ipvsadm" (the symlinks' name).
    ip netns exec "ipvsctl-bench-$1" bash -c \
        'TIMEFORMAT=%R; { time "$0" "${@:3}" >"$1" 2>"$2"; } 2>&1' \
        "$W/$1/ipvsadm" "$W/out.$1" "$W/err.$1" "${@:2}" || true
}

declare -A R
for tool in "${TOOLS[@]}"; do
    R[$tool.restore]=$(t "$tool" -R <"$W/rules")
    [ -s "$W/err.$tool" ] && { echo "errors during $tool restore:"; head -3 "$W/err.$tool"; }
    R[$tool.list]=$(t "$tool" -Ln </dev/null)
    lines=$(wc -l <"$W/out.$tool")
    R[$tool.lines]=$lines
    cp "$W/out.$tool" "$W/list.$tool"
    R[$tool.flush]=$(t "$tool" -C </dev/null)
done
cmp -s "$W/list.real" "$W/list.ours" && same=identical || same=DIFFERENT

printf '\n%d services x 4 real servers (%d rules)\n' "$N" "$(wc -l <"$W/rules")"
printf '%-10s %12s %12s %10s\n' "" "ipvsadm(s)" "ipvsctl(s)" "speedup"
for op in restore list flush; do
    a=${R[real.$op]} b=${R[ours.$op]}
    ratio=$(echo "scale=1; if ($b > 0) $a / $b else 0" | bc)
    printf '%-10s %12s %12s %9sx\n' "$op" "$a" "$b" "$ratio"
done
printf 'listing: %s lines each, outputs %s\n' "${R[real.lines]}" "$same"
if [ -n "${IPVSCTL_BASE:-}" ]; then
    cmp -s "$W/list.real" "$W/list.base" && same=identical || same=DIFFERENT
    printf '\nbefore/after: %s (base) vs target/release/ipvsctl (current)\n' "${IPVSCTL_BASE#"$REPO"/}"
    printf '%-10s %12s %12s %10s\n' "" "base(s)" "current(s)" "base/cur"
    for op in restore list flush; do
        a=${R[base.$op]} b=${R[ours.$op]}
        printf '%-10s %12s %12s %9sx\n' "$op" "$a" "$b" "$(echo "scale=2; if ($b > 0) $a / $b else 0" | bc)"
    done
    printf 'base listing outputs %s to ipvsadm'"'"'s\n' "$same"
fi
if [ -n "${IPVSCTL_BASE:-}" ] && [ "${BENCH_ROUNDS:-0}" -gt 0 ]; then
    # More rounds, current and base alternately, each in fresh namespaces (a
    # flushed namespace keeps its real servers in IPVS's trash list for
    # minutes, which would slow the next restore): medians of all rounds.
    declare -A ALL
    for tool in ours base; do for op in restore list flush; do ALL[$tool.$op]=${R[$tool.$op]}; done; done
    for ((r = 1; r <= BENCH_ROUNDS; r++)); do
        for tool in ours base; do
            mkns_bench "$tool"
            ALL[$tool.restore]+=" $(t "$tool" -R <"$W/rules")"
            ALL[$tool.list]+=" $(t "$tool" -Ln </dev/null)"
            ALL[$tool.flush]+=" $(t "$tool" -C </dev/null)"
        done
    done
    median() { printf '%s\n' "$@" | sort -g | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
    printf '\nbefore/after, medians of %d runs each (alternating)\n' "$((BENCH_ROUNDS + 1))"
    printf '%-10s %12s %12s %10s   %s\n' "" "base(s)" "current(s)" "base/cur" "runs current | base"
    for op in restore list flush; do
        # shellcheck disable=SC2086 # the runs are one word each
        a=$(median ${ALL[base.$op]}); b=$(median ${ALL[ours.$op]})
        printf '%-10s %12s %12s %9sx   %s | %s\n' "$op" "$a" "$b" "$(echo "scale=2; if ($b > 0) $a / $b else 0" | bc)" \
            "${ALL[ours.$op]}" "${ALL[base.$op]}"
    done
fi
