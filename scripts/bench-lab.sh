#!/usr/bin/env bash
# The lab's load generator's own cost (a benchmark, not a test): requests
# answered per CPU-second of lab-load (Rust) against the former Python
# clients (lab/bench/pyload.py), side by side in one test-VM run.
#
#   scripts/bench-lab.sh [--sensors N] [--web-users U] [--seconds S]
set -euo pipefail
source "$(dirname "$0")/common.sh"
cd "$REPO"
[ "$(id -u)" = 0 ] || die "run as root (the VM runner needs qemu as root)"
for b in lab-serve lab-load; do
    [ -x "$REPO/target/release/$b" ] || die "target/release/$b missing: run scripts/setup.sh"
done
"$REPO/scripts/vm.sh" -- python3 "$REPO/lab/bench/bench.py" "$@"
