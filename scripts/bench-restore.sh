#!/usr/bin/env bash
# Benchmark (not a test): the cost of configuring IPVS with every service on
# vmwlch against the same on wlc, side by side in one VM run. For each size
# N (default 2500 5000 10000 services, 4 real servers each) and each tool
# (ipvsadm -R, ipvsctl -R): restore then flush (-C) on wlc and on vmwlch,
# each in a fresh namespace. Prints the times, the ratios vmwlch/wlc and the
# growth from the smallest to the largest N (per service: 1.00 = linear).
# BENCH_TOOLS (default "ipvsadm ipvsctl") selects the tools; each pair runs
# BENCH_ROUNDS times with ipvsctl (default 3) and BENCH_ADM_ROUNDS with
# ipvsadm (default 1: it is ~10x slower), and the medians are compared (the
# machine's load varies: single runs are noise-bound). Then the large
# case: BENCH_BIG tracked destinations (default 150000; 0 skips it) restored with ipvsctl on vmwlch into a director that also has
# a small mapped service with real servers: the restore must succeed, and
# new connections to that service are checked against the algorithm.
#
#   scripts/bench-restore.sh [N...]        (runs itself inside the VM)
#
# The benchmark kernel (no KASAN/lockdep/kCFI) is used when it has been built
# (scripts/setup.sh --bench-kernel); otherwise the test kernel, whose
# instrumentation adds the same kernel time to both schedulers.
set -euo pipefail
REPO="$(cd "$(dirname "$0")/.." && pwd)"
SIZES="${*:-${BENCH_SIZES:-2500 5000 10000}}"
BIG="${BENCH_BIG:-150000}"
BTOOLS="${BENCH_TOOLS:-ipvsadm ipvsctl}"
ROUNDS="${BENCH_ROUNDS:-3}" ADM_ROUNDS="${BENCH_ADM_ROUNDS:-1}"
if [ "${VMWLCH_IN_VM:-0}" != 1 ]; then
    if [ -z "${VMWLCH_KERNEL_VARIANT:-}" ]; then
        bench_kb="$(VMWLCH_KERNEL_VARIANT=bench bash -c "source '$REPO/scripts/common.sh'; kernel_build_dir")"
        if [ -f "$bench_kb/.built" ]; then export VMWLCH_KERNEL_VARIANT=bench
        else echo "no benchmark kernel built: using the test kernel (KASAN, lockdep)" >&2; export VMWLCH_KERNEL_VARIANT=test; fi
    fi
    source "$REPO/scripts/common.sh"
    KO=""
    if [ "$VMWLCH_KERNEL_VARIANT" = test ]; then
        [ -f "$REPO/ipvs-sched-vmwlch/ip_vs_vmwlch.ko" ] || die "build the module first (scripts/setup.sh)"
    else
        KO="$(build_module_copy restore)"
    fi
    [ -x "$REPO/target/release/ipvsctl" ] || (cd "$REPO" && cargo build --release -p ipvsctl)
    KB="$(kernel_build_dir)"
    echo "# restore with vmwlch vs wlc ($(date -u +%F), kernel $(cat "$KB/include/config/kernel.release") $VMWLCH_KERNEL_VARIANT variant, $(nproc) host cores)"
    VM_TIMEOUT="${VM_TIMEOUT:-7200}" VM_MEM="${VM_MEM:-3G}" exec "$REPO/scripts/vm.sh" -- \
        env BENCH_KO="$KO" BENCH_BIG="$BIG" BENCH_TOOLS="$BTOOLS" BENCH_ROUNDS="$ROUNDS" \
        BENCH_ADM_ROUNDS="$ADM_ROUNDS" "$REPO/scripts/bench-restore.sh" $SIZES
fi

if [ -n "${BENCH_KO:-}" ]; then insmod "$BENCH_KO"; else modprobe ip_vs_vmwlch; fi
W="$(mktemp -d)"
# shellcheck disable=SC2154 # n is the trap's own loop variable
trap 'for n in $(ip netns list | awk "/^rst-/ {print \$1}"); do ip netns del "$n"; done; rm -rf "$W"' EXIT

# A fresh namespace per run: IPVS keeps removed real servers in a
# per-namespace trash list for minutes and looks every new one up there.
# Namespaces are deleted only at the end, so that their teardown does not
# run in the background of a later measurement.
mkns() {
    ip netns add "$1"
    ip -n "$1" link set lo up
    ip -n "$1" link add d0 type dummy
    ip -n "$1" link set d0 up
}
rules() { # rules N SCHED PER-SERVICE: the restore input
    awk -v n="$1" -v s="$2" -v k="$3" 'BEGIN {
        for (i = 0; i < n; i++) {
            v = sprintf("10.%d.%d.%d:80", 100 + int(i / 62500) % 150, int(i / 250) % 250, i % 250 + 1);
            printf "-A -t %s -s %s\n", v, s;
            for (j = 1; j <= k; j++)
                printf "-a -t %s -r 172.%d.%d.%d:8080 -m -w %d\n", v, 16 + (i % 16), int(i / 256) % 256, (i * k + j) % 250 + 1, j;
        }
    }'
}
t() { # t NS TOOL ARGS... < stdin: seconds of the tool's own run (timed inside the namespace)
    ip netns exec "$1" bash -c 'TIMEFORMAT=%R; { time "$0" "${@:2}" >/dev/null 2>"$1"; } 2>&1' \
        "$2" "$W/err" "${@:3}" || true
}
tool_bin() { case $1 in ipvsadm) echo /usr/sbin/ipvsadm ;; ipvsctl) echo "$REPO/target/release/ipvsctl" ;; esac; }

median() { printf '%s\n' "$@" | sort -g | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
info() { # info NS: the module's snapshot counters in NS, one line
    ip netns exec "$1" "$REPO/target/release/ipvsctl" host info |
        awk '/^(rebuilds|deferred|fallbacks|rebuild_failures|build_ms) / {printf "%s=%s ", $1, $2}'
}

declare -A R
run=0
for n in $SIZES; do
    for sched in wlc vmwlch; do rules "$n" "$sched" 4 >"$W/rules.$n.$sched"; done
    for tool in $BTOOLS; do
        rounds=$ROUNDS; [ "$tool" = ipvsadm ] && rounds=$ADM_ROUNDS
        for ((r = 1; r <= rounds; r++)); do
            # wlc and vmwlch alternate, so that drift affects both alike.
            for sched in wlc vmwlch; do
                run=$((run + 1)); ns="rst-$run"; mkns "$ns"
                x=$(t "$ns" "$(tool_bin "$tool")" -R <"$W/rules.$n.$sched")
                R[$n.$tool.$sched.restore]+=" $x"
                [ -s "$W/err" ] && { echo "errors in $tool -R ($sched, $n):"; head -3 "$W/err"; }
                got=$(ip netns exec "$ns" ipvsadm -Ln | grep -c '^  -> [0-9]' || true)
                [ "$got" = $((n * 4)) ] || echo "warning: $got real servers after $tool -R ($sched, $n), expected $((n * 4))"
                extra=""; [ "$sched" = vmwlch ] && extra="; $(info "$ns")"
                y=$(t "$ns" "$(tool_bin "$tool")" -C </dev/null)
                R[$n.$tool.$sched.flush]+=" $y"
                echo "  $n services, $tool, $sched: restore $x s, flush $y s$extra" >&2
            done
        done
    done
done

ratio() { echo "scale=2; if ($2 > 0) $1 / $2 else 0" | bc; }
printf '\n%-8s %-8s %-8s %10s %10s %8s   (medians of %s rounds for ipvsctl, %s for ipvsadm)\n' \
    services tool op "wlc(s)" "vmwlch(s)" ratio "$ROUNDS" "$ADM_ROUNDS"
declare -A M
for n in $SIZES; do for tool in $BTOOLS; do for op in restore flush; do
    # shellcheck disable=SC2086 # the runs are one word each
    a=$(median ${R[$n.$tool.wlc.$op]}) b=$(median ${R[$n.$tool.vmwlch.$op]})
    M[$n.$tool.wlc.$op]=$a M[$n.$tool.vmwlch.$op]=$b
    printf '%-8s %-8s %-8s %10s %10s %7sx\n' "$n" "$tool" "$op" "$a" "$b" "$(ratio "$b" "$a")"
done; done; done
# shellcheck disable=SC2086 # one size per word
lo=$(printf '%s\n' $SIZES | sort -n | head -1) hi=$(printf '%s\n' $SIZES | sort -n | tail -1)
if [ "$lo" != "$hi" ]; then
    printf '\ngrowth %s -> %s services: restore time ratio (per service; 1.00 = linear)\n' "$lo" "$hi"
    for tool in $BTOOLS; do for sched in wlc vmwlch; do
        a=${M[$lo.$tool.$sched.restore]} b=${M[$hi.$tool.$sched.restore]}
        printf '%-8s %-7s %6sx (%s)\n' "$tool" "$sched" "$(ratio "$b" "$a")" \
            "$(echo "scale=2; if ($a > 0) $b * $lo / ($a * $hi) else 0" | bc)"
    done; done
fi

[ "$BIG" -gt 0 ] || exit 0
echo
echo "large case: $BIG tracked destinations on vmwlch (ipvsctl -R), plus a small mapped service with real servers"
python3 "$REPO/tests/py/restore_big.py" "$BIG" "$W"
