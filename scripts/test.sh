#!/usr/bin/env bash
# Every test of the project: formatting and lints, cargo test, the network
# namespace tests on the host and the VM tests, then one summary line.
#
#   scripts/test.sh                 everything (runs scripts/setup.sh first)
#   TEST_FILTER=regex scripts/test.sh   only the shell tests whose path matches
#   SKIP_SETUP=1 scripts/test.sh    do not run setup first
set -uo pipefail
source "$(dirname "$0")/common.sh"
cd "$REPO"

T0=$SECONDS
if [ "${SKIP_SETUP:-0}" != 1 ]; then
    scripts/setup.sh || die "setup failed"
fi

PASS=0 FAIL=0 SKIP=0
FAILED=()
RESULTS="$REPO/target/test-results"
mkdir -p "$RESULTS"

record() { # name status(0 pass, 77 skip, else fail) seconds
    case "$2" in
        0) PASS=$((PASS + 1)); printf '  \033[32mpass\033[0m  %-50s %4ss\n' "$1" "$3" ;;
        77) SKIP=$((SKIP + 1)); printf '  \033[33mskip\033[0m  %-50s %4ss\n' "$1" "$3" ;;
        *) FAIL=$((FAIL + 1)); FAILED+=("$1"); printf '  \033[31mFAIL\033[0m  %-50s %4ss (status %s)\n' "$1" "$3" "$2" ;;
    esac
}

step() { # name cmd...: a step counted as one test, output kept in a log
    local name=$1 t=$SECONDS rc; shift
    local logf="$RESULTS/$(echo "$name" | tr -c 'A-Za-z0-9._-' _).log"
    "$@" > "$logf" 2>&1; rc=$?
    record "$name" "$rc" $((SECONDS - t))
    [ "$rc" = 0 ] || [ "$rc" = 77 ] || tail -40 "$logf" | sed 's/^/      /'
}

echo "== static checks"
step "cargo fmt --check" cargo fmt --all -- --check
step "rustfmt --check (kernel module)" rustfmt --check --edition 2021 ipvs-sched-vmwlch/src/vmwlch.rs
step "cargo clippy -D warnings" cargo clippy --workspace --all-targets --quiet -- -D warnings

echo "== cargo test"
t=$SECONDS
cargo test --workspace --no-fail-fast 2>&1 | tee "$RESULTS/cargo-test.log" | grep -E '^test result:|FAILED|panicked' | sed 's/^/  /'
ct_rc=${PIPESTATUS[0]}
cp=$(grep -E '^test result:' "$RESULTS/cargo-test.log" | sed -E 's/.* ([0-9]+) passed.*/\1/' | paste -sd+ | bc)
cf=$(grep -E '^test result:' "$RESULTS/cargo-test.log" | sed -E 's/.* ([0-9]+) failed.*/\1/' | paste -sd+ | bc)
ci=$(grep -E '^test result:' "$RESULTS/cargo-test.log" | sed -E 's/.* ([0-9]+) ignored.*/\1/' | paste -sd+ | bc)
PASS=$((PASS + ${cp:-0})); FAIL=$((FAIL + ${cf:-0})); SKIP=$((SKIP + ${ci:-0}))
if [ "$ct_rc" != 0 ] && [ "${cf:-0}" = 0 ]; then
    FAIL=$((FAIL + 1)); FAILED+=("cargo test (build or harness failure)")
    tail -30 "$RESULTS/cargo-test.log" | sed 's/^/      /'
fi
echo "  cargo test: ${cp:-0} passed, ${cf:-0} failed, ${ci:-0} ignored in $((SECONDS - t))s"

match() { [ -z "${TEST_FILTER:-}" ] || [[ "$1" =~ $TEST_FILTER ]]; }

echo "== test bed (host side of the VM runner)"
for t in tests/bed/*.sh; do
    [ -e "$t" ] && match "$t" || continue
    step "$t" bash "$t"
done

echo "== network namespace tests (host kernel)"
for t in tests/netns/*.sh; do
    [ -e "$t" ] && match "$t" || continue
    step "$t" timeout -k 10 600 bash "$t"
done

echo "== VM tests (test kernel under qemu)"
for t in tests/vm/*.sh; do
    [ -e "$t" ] && match "$t" || continue
    step "$t" scripts/vm.sh -- "$REPO/$t"
done

echo
echo "took $((SECONDS - T0))s; logs in $RESULTS"
[ ${#FAILED[@]} = 0 ] || printf 'failed: %s\n' "${FAILED[@]}"
echo "$PASS passed, $FAIL failed, $SKIP skipped"
[ "$FAIL" = 0 ]
