#!/usr/bin/env bash
# Regenerates the simulation report: builds the simulator (release) and runs the
# study's scenarios (sensor only, web only, hybrid; 150-450 sensors; three VM
# placements; sensitivity variants; several seeds) for WLC, VMWLC and VMWLC/H
# with the kernel module's own selection code.
#
#   scripts/sim.sh [extra report options, e.g. --threads 4]
#
# Writes docs/simulation.md and target/sim/results.csv (one row per run) and
# prints the hybrid table and the headline. Deterministic; well under a minute.
set -euo pipefail
REPO="$(cd "$(dirname "$0")/.." && pwd)"
cd "$REPO"
cargo build --release -q -p vmwlch-sim
exec "$REPO/target/release/vmwlch-sim" report \
    --md "$REPO/docs/simulation.md" \
    --csv "$REPO/target/sim/results.csv" "$@"
