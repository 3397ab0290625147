#!/usr/bin/env bash
# Inside the test VM: load the module and run the lab (lab/lab.py) with the
# given arguments. scripts/demo.sh and tests/vm/demo-smoke.sh call it as
#   VM_OUTDIR=DIR scripts/vm.sh -- lab/run.sh --out DIR [lab.py options]
# and, for the active-active lab (lab/active_active.py),
#   VM_OUTDIR=DIR scripts/vm.sh -- lab/run.sh --active-active --out DIR [options]
set -euo pipefail
REPO="$(cd "$(dirname "$0")/.." && pwd)"
[ "${VMWLCH_IN_VM:-0}" = 1 ] || { echo "lab/run.sh: run it in the test VM (scripts/vm.sh -- lab/run.sh ...)" >&2; exit 2; }
for b in keepalive ipvsctl lab-serve lab-load host-agent; do
    [ -x "$REPO/target/release/$b" ] || { echo "lab/run.sh: target/release/$b missing (scripts/setup.sh)" >&2; exit 1; }
done
command -v python3 >/dev/null || { echo "lab/run.sh: python3 missing" >&2; exit 1; }
timeout 60 modprobe ip_vs_vmwlch || { echo "lab/run.sh: cannot load ip_vs_vmwlch" >&2; exit 1; }
# Everything the lab starts lives in namespaces named lab-*, in this VM only.
prog=lab.py
if [ "${1:-}" = --active-active ]; then
    shift
    prog=active_active.py
fi
exec timeout -k 10 "${LAB_TIMEOUT:-1500}" python3 "$REPO/lab/$prog" "$@"
