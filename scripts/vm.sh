#!/usr/bin/env bash
# Run a command as root in the test VM (the cached 6.12 Rust+IPVS kernel, booted
# with virtme-ng over the host's root filesystem; the repository is at the same path).
#
#   scripts/vm.sh [--] CMD [ARGS...]
#
# Exits with CMD's exit status. The guest's kernel log is saved (under
# target/vm-logs/) and checked: if it shows a BUG, WARNING, Oops, KASAN report,
# lockdep splat or RCU stall, the offending lines are printed and the run fails
# with status 99 (even if CMD succeeded). 98 = the guest died before CMD finished.
#
# Environment: VM_KVM=auto|0|1 (default auto: use KVM only where it was seen to
# boot this kernel), VM_MEM (default 2G), VM_CPUS (default 2), VM_TIMEOUT seconds
# (default 1200), VM_ALLOW_KERNEL_LOG=1 to skip the log check.
set -euo pipefail
source "$(dirname "$0")/common.sh"

[ "${1:-}" = "--" ] && shift
[ $# -gt 0 ] || die "usage: scripts/vm.sh [--] CMD [ARGS...]"
[ "$(id -u)" = 0 ] || die "run as root (qemu, and the guest runs as root)"

KB="$(kernel_build_dir)"
IMG="$KB/arch/x86/boot/bzImage"
[ -f "$KB/.built" ] && [ -f "$IMG" ] || die "no test kernel at $KB: run scripts/setup.sh first"
command -v vng >/dev/null || die "virtme-ng missing: run scripts/setup.sh first"

WORK="$(mktemp -d /tmp/vmwlch-vm.XXXXXX)"
trap 'rm -rf "$WORK"' EXIT
LOGDIR="${VMWLCH_LOGDIR:-$REPO/target/vm-logs}"
mkdir -p "$LOGDIR"

# The guest command: the wrapper sets the guest up, runs CMD, saves status and log.
{
    printf 'exec %q %q %q' "$REPO/scripts/vm-guest.sh" "$WORK" "$KB"
    printf ' %q' "$@"
    printf '\n'
} > "$WORK/run.sh"

# KVM cannot boot a normal kernel on some nested hosts (qemu asserts or hangs), so
# probe it once per kernel build and remember; fall back to software emulation.
kvm_works() {
    case "${VM_KVM:-auto}" in 0) return 1 ;; 1) return 0 ;; esac
    [ -w /dev/kvm ] || return 1
    local stamp="$KB/.kvm-probe"
    if [ ! -f "$stamp" ]; then
        if timeout 60 vng -r "$IMG" --user root -m 1G -- true </dev/null >/dev/null 2>&1; then
            echo yes > "$stamp"
        else
            echo no > "$stamp"
        fi
    fi
    [ "$(cat "$stamp")" = yes ]
}

VNG=(vng -r "$IMG" --user root --cwd "$PWD" --rwdir "$WORK" -m "${VM_MEM:-2G}" -p "${VM_CPUS:-2}")
kvm_works || VNG+=(--disable-kvm)

set +e
timeout --foreground -k 10 "${VM_TIMEOUT:-1200}" "${VNG[@]}" -- bash "$WORK/run.sh" </dev/null
vng_rc=$?
set -e

name="$(date +%Y%m%d-%H%M%S)-$(basename "$1" | tr -c 'A-Za-z0-9._-' _)"
[ -f "$WORK/dmesg" ] && cp "$WORK/dmesg" "$LOGDIR/$name.dmesg"

if [ ! -f "$WORK/rc" ]; then
    log "the VM did not finish the command (vng status $vng_rc); kernel log: $LOGDIR/$name.dmesg"
    [ -f "$WORK/dmesg" ] && tail -40 "$WORK/dmesg" >&2
    exit 98
fi
rc="$(cat "$WORK/rc")"

if [ "${VM_ALLOW_KERNEL_LOG:-0}" != 1 ]; then
    # Kernel bug detectors: WARN/BUG/Oops, KASAN, lockdep, RCU, sleeping in atomic.
    pat='WARNING:|BUG:|BUG kmalloc|kernel BUG|Oops|general protection fault|KASAN|UBSAN'
    pat+='|possible circular locking|possible recursive locking|inconsistent lock state'
    pat+='|suspicious RCU usage|rcu_.*detected stall|RCU stall|DEBUG_LOCKS_WARN_ON'
    pat+='|sleeping function called from invalid context|list_(add|del) corruption'
    pat+='|ODEBUG:|refcount_t:|Kernel panic|hung_task|INFO: task .* blocked'
    if grep -E -n "$pat" "$WORK/dmesg" > "$WORK/bad" 2>/dev/null; then
        log "kernel log of the VM shows problems (full log: $LOGDIR/$name.dmesg):"
        # Show each offending line with some context.
        while IFS=: read -r n _; do
            sed -n "$((n > 3 ? n - 3 : 1)),$((n + 25))p" "$WORK/dmesg"
            echo ---
        done < <(head -3 "$WORK/bad") >&2
        exit 99
    fi
fi
exit "$rc"
