#!/usr/bin/env bash
# The main demo: the reference cluster in the test VM (see docs/demo.md).
#
#   scripts/demo.sh [lab.py options]     e.g. --sensors 150 --measure 40
#   scripts/demo.sh --active-active [active_active.py options]
#
# The plain demo is the active/standby study below. --active-active runs
# the other lab instead (lab/active_active.py): 3 directors behind a BGP
# router with ECMP, the sync mesh, the cluster in etcd; one director killed
# and brought back, a drain, etcd stopped; it ends with the line
#   active-active: directors 3 killed 1 established N kept K lost L ...
#
# 1. scripts/setup.sh (idempotent, cached; SKIP_SETUP=1 skips it);
# 2. in the test VM (scripts/vm.sh): two front ends with keepalive, 5 hosts,
#    20 VMs, sensor + web traffic under wlc, vmwlc and vmwlch in turn, then
#    the active front end killed under load (lab/run.sh -> lab/lab.py);
# 3. on this machine: the plot (gnuplot) of per-host load over time.
# Results go to DEMO_OUT (default target/demo): summary.txt, summary.json,
# samples-*.dat, hosts.png. Exit status: 0 done, non-zero if a step failed.
set -euo pipefail
source "$(dirname "$0")/common.sh"
cd "$REPO"

[ "$(id -u)" = 0 ] || die "run as root (setup installs packages; the VM runner needs qemu as root)"
if [ "${SKIP_SETUP:-0}" != 1 ]; then
    log "setup (cached after the first run)"
    "$REPO/scripts/setup.sh"
fi
command -v gnuplot >/dev/null || die "gnuplot missing: run scripts/setup.sh"

OUT="${DEMO_OUT:-$REPO/target/demo}"
mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"
rm -f "$OUT"/summary.* "$OUT"/samples-*.dat "$OUT"/labels.gp "$OUT"/hosts.png

if [ "${1:-}" = --active-active ]; then
    log "booting the test VM and running the active-active lab (about 5 minutes under emulation)"
    rc=0
    VM_OUTDIR="$OUT" VM_TIMEOUT="${VM_TIMEOUT:-1800}" "$REPO/scripts/vm.sh" -- lab/run.sh "$1" --out "$OUT" \
        "${@:2}" || rc=$?
    [ -f "$OUT/summary.txt" ] && grep "^active-active: " "$OUT/summary.txt" || log "the lab wrote no final line"
    log "results: $OUT/summary.txt, $OUT/summary.json, the directors' logs in $OUT/d*.log"
    exit $rc
fi

log "booting the test VM and running the lab (about 4-5 minutes under emulation)"
rc=0
VM_OUTDIR="$OUT" VM_TIMEOUT="${VM_TIMEOUT:-1800}" "$REPO/scripts/vm.sh" -- lab/run.sh --out "$OUT" "$@" || rc=$?
if [ $rc != 0 ]; then
    case $rc in
        99) log "the lab ran, but the VM's kernel log shows a problem (see above)" ;;
        98) log "the VM died before the lab finished" ;;
        *) log "the lab failed (status $rc)" ;;
    esac
    [ -f "$OUT/summary.json" ] || exit $rc
fi
[ -f "$OUT/summary.json" ] || die "the lab wrote no results to $OUT"

if gnuplot -e "dir='$OUT'" "$REPO/lab/plot.gp" 2> "$OUT/gnuplot.log" && [ -s "$OUT/hosts.png" ]; then
    log "plot of per-host load over time: $OUT/hosts.png"
else
    log "gnuplot failed: $(tail -3 "$OUT/gnuplot.log")"
    rc=${rc:-1}; [ $rc != 0 ] || rc=1
fi
log "results: $OUT/summary.txt (table), $OUT/summary.json, $OUT/samples-*.dat"
log "the other lab: scripts/demo.sh --active-active (3 directors behind ECMP, sync mesh, etcd)"
exit $rc
