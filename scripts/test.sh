#!/usr/bin/env bash
# Every test of the project: formatting and lints, cargo test, the network
# namespace tests on the host and the VM tests, then one summary line.
#
#   scripts/test.sh                 everything (runs scripts/setup.sh first)
#   TEST_FILTER=regex scripts/test.sh   only the shell tests whose path matches
#   SKIP_SETUP=1 scripts/test.sh    do not run setup first
#   TEST_NO_KERNEL=1 scripts/test.sh    only what needs no test kernel (setup --no-kernel;
#                                   the module, package and VM steps count as skipped)
set -uo pipefail
source "$(dirname "$0")/common.sh"
cd "$REPO" || exit 1

T0=$SECONDS
if [ "${SKIP_SETUP:-0}" != 1 ]; then
    setup_args=()
    [ "${TEST_NO_KERNEL:-0}" != 1 ] || setup_args=(--no-kernel)
    scripts/setup.sh ${setup_args[@]+"${setup_args[@]}"} || die "setup failed"
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
    if [ "${TEST_NO_KERNEL:-0}" = 1 ] && [ "${STEP_NEEDS_KERNEL:-0}" = 1 ]; then
        record "$name" 77 0; echo "        (TEST_NO_KERNEL=1: needs the test kernel)"; return 0
    fi
    local logf
    logf="$RESULTS/$(echo "$name" | tr -c 'A-Za-z0-9._-' _).log"
    "$@" > "$logf" 2>&1; rc=$?
    record "$name" "$rc" $((SECONDS - t))
    [ "$rc" = 0 ] || [ "$rc" = 77 ] || tail -40 "$logf" | sed 's/^/      /'
}

# Per-group times for the summary (which group grew is what CI's limit needs).
GROUP_TIMES=() GROUP_NAME=setup GROUP_T0=$T0
group() { # short-name [heading]: close the running group's timer, start the next
    GROUP_TIMES+=("$GROUP_NAME $((SECONDS - GROUP_T0))s")
    GROUP_NAME=$1 GROUP_T0=$SECONDS
    [ $# -lt 2 ] || echo "== $2"
}

group static "static checks"
step "cargo fmt --check" cargo fmt --all -- --check
step "rustfmt --check (kernel module)" rustfmt --check --edition 2021 ipvs-sched-vmwlch/src/vmwlch.rs
step "cargo clippy -D warnings" cargo clippy --workspace --all-targets --quiet -- -D warnings
# The API docs: broken or ambiguous intra-doc links, stray HTML.
step "cargo doc -D warnings" env RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --quiet
# Shell: shellcheck's warnings and errors (its style notes are left out);
# -x follows `source` so a variable set by a sourced library counts as used.
shopt -s globstar nullglob
LINT_SH=(scripts/*.sh tests/**/*.sh lab/*.sh .ci/run)
LINT_PY=(tests/py tests/keepalive lab/*.py lab/labkit lab/bench/*.py)
shopt -u globstar nullglob
step "shellcheck -S warning" shellcheck -x -P SCRIPTDIR -S warning -f gcc "${LINT_SH[@]}"
# The module's stack frames (Rust gets no -Wframe-larger-than; a 2 KB frame in
# a recursive sort overflowed a 16 KB kernel stack once).
STEP_NEEDS_KERNEL=1 step "module stack frames <= 1024 bytes" python3 tests/py/module_frames.py ipvs-sched-vmwlch/ip_vs_vmwlch.ko 1024
# Python: pyflakes reports real bugs only (undefined names, unused imports and variables).
step "pyflakes" pyflakes3 "${LINT_PY[@]}"

group cargo "cargo test"
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
step "vmwlch fallback wlc = C wlc at weight INT_MAX (tests/host/wlc-oracle.sh)" bash tests/host/wlc-oracle.sh

match() { [ -z "${TEST_FILTER:-}" ] || [[ "$1" =~ $TEST_FILTER ]]; }

# Steps marked STEP_NEEDS_KERNEL=1 need the test kernel: DKMS builds for it,
# the bed and VM steps boot it; the others run on the host's kernel.
group packages "Debian packages (built and installed here, checked by tests/vm/packages.sh)"
# Builds target/debian/*.deb (reusing the release build), twice: the same
# bytes both times; lintian's output is in the step's log. Then installs
# them into an overlay of this machine's root, DKMS building the module for
# the test kernel (at the host's speed); the VM test boots with the result.
if match scripts/package.sh || match tests/vm/packages.sh; then
    step "scripts/package.sh --lintian --reproducible" scripts/package.sh --lintian --reproducible
    STEP_NEEDS_KERNEL=1 step "tests/pkg/install-root.sh" tests/pkg/install-root.sh
fi

STEP_NEEDS_KERNEL=1
group bed "test bed (host side of the VM runner)"
for t in tests/bed/*.sh; do
    { [ -e "$t" ] && match "$t"; } || continue
    step "$t" bash "$t"
done

STEP_NEEDS_KERNEL=0
group netns "network namespace tests (host kernel)"
for t in tests/netns/*.sh; do
    { [ -e "$t" ] && match "$t"; } || continue
    step "$t" timeout -k 10 600 bash "$t"
done

STEP_NEEDS_KERNEL=1
group VM "VM tests (test kernel under qemu)"
# A test's "# vm-env: VAR=VALUE ..." line sets vm.sh's environment for it
# (e.g. VM_CPU_QUOTA=50: the demo smoke runs on a VM slowed down on purpose).
# A "# vm-opt-in: VAR reason" line: the test runs only with VAR=1 (counted
# as skipped otherwise, with the reason).
for t in tests/vm/*.sh; do
    { [ -e "$t" ] && match "$t"; } || continue
    read -r opt_var opt_why <<< "$(sed -n 's/^# vm-opt-in: //p' "$t" | head -1)"
    if [ -n "$opt_var" ] && [ "${!opt_var:-0}" != 1 ]; then
        record "$t" 77 0; echo "        (opt-in: $opt_var=1; $opt_why)"; continue
    fi
    read -ra vm_env <<< "$(sed -n 's/^# vm-env: //p' "$t" | head -1)"
    step "$t" env ${vm_env[@]+"${vm_env[@]}"} scripts/vm.sh -- "$REPO/$t"
done

group end
echo
times=$(printf '%s, ' "${GROUP_TIMES[@]}")
echo "took $((SECONDS - T0))s (${times%, }); logs in $RESULTS"
[ ${#FAILED[@]} = 0 ] || printf 'failed: %s\n' "${FAILED[@]}"
echo "$PASS passed, $FAIL failed, $SKIP skipped"
[ "$FAIL" = 0 ]
