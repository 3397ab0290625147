#!/usr/bin/env bash
# Run a command as root in the test VM: the cached 6.12 Rust+IPVS kernel booted
# under qemu over the host's root filesystem (9p, read-only, with tmpfs where
# tools write); the repository is at the same path.
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
# (default 1200), VM_ALLOW_KERNEL_LOG=1 to skip the log check, VM_OUTDIR=DIR a
# host directory the guest can write (mounted at the same path), VM_CPU_QUOTA=P
# the VM gets only P % of the CPU time of its VM_CPUS vCPUs (a cgroup CPU
# quota: a machine slowed down on purpose, e.g. 50).
set -euo pipefail
source "$(dirname "$0")/common.sh"

[ "${1:-}" = "--" ] && shift
[ $# -gt 0 ] || die "usage: scripts/vm.sh [--] CMD [ARGS...]"
[ "$(id -u)" = 0 ] || die "run as root (qemu, and the guest runs as root)"

KB="$(kernel_build_dir)"
IMG="$KB/arch/x86/boot/bzImage"
[ -f "$KB/.built" ] && [ -f "$IMG" ] || die "no test kernel at $KB: run scripts/setup.sh first"
touch "$KB/.last-used" 2>/dev/null || true   # keeps setup.sh from pruning it
command -v qemu-system-x86_64 >/dev/null || die "qemu missing: run scripts/setup.sh first"

WORK="$(mktemp -d /tmp/vmwlch-vm.XXXXXX)"
CPU_CG=""
trap 'rm -rf "$WORK"; cpu_quota_leave' EXIT

# VM_CPU_QUOTA=P: this script (and so qemu, one host thread per vCPU) moves
# into a cgroup of its own whose CPU quota is P % of VM_CPUS CPUs (cgroup v2
# cpu.max, else v1 CFS). The period is 20 ms, not the default 100: a guest
# stopped for 50 ms at a time would see its timers jump, not a slower CPU.
cpu_quota_enter() {
    local pct=$1 quota cpus=${VM_CPUS:-2}
    [[ "$pct" =~ ^[0-9]+$ ]] && [ "$pct" -ge 1 ] && [ "$pct" -le 100 ] ||
        die "VM_CPU_QUOTA must be a percentage from 1 to 100, not '$pct'"
    [[ "$cpus" =~ ^[1-9][0-9]*$ ]] || die "VM_CPUS must be a number of CPUs, not '$cpus'"
    quota=$((20000 * cpus * pct / 100))
    if [ -f /sys/fs/cgroup/cgroup.controllers ]; then
        CPU_CG=/sys/fs/cgroup/vmwlch-vm.$$
        mkdir "$CPU_CG" && echo "$quota 20000" > "$CPU_CG/cpu.max" ||
            die "VM_CPU_QUOTA: cannot set cpu.max in $CPU_CG (is the cpu controller enabled in /sys/fs/cgroup/cgroup.subtree_control?)"
    elif [ -d /sys/fs/cgroup/cpu ]; then
        CPU_CG=/sys/fs/cgroup/cpu/vmwlch-vm.$$
        mkdir "$CPU_CG" && echo 20000 > "$CPU_CG/cpu.cfs_period_us" && echo "$quota" > "$CPU_CG/cpu.cfs_quota_us" ||
            die "VM_CPU_QUOTA: cannot set the CFS quota in $CPU_CG"
    else
        die "VM_CPU_QUOTA: no cgroup CPU controller under /sys/fs/cgroup"
    fi
    echo $$ > "$CPU_CG/cgroup.procs" || die "VM_CPU_QUOTA: cannot move into $CPU_CG"
    log "the VM gets $pct % of $cpus CPUs (cgroup $CPU_CG)"
}
cpu_quota_leave() {
    [ -n "$CPU_CG" ] || return 0
    echo $$ > "$(dirname "$CPU_CG")/cgroup.procs" 2>/dev/null
    rmdir "$CPU_CG" 2>/dev/null || true
}
[ -z "${VM_CPU_QUOTA:-}" ] || cpu_quota_enter "$VM_CPU_QUOTA"
LOGDIR="${VMWLCH_LOGDIR:-$REPO/target/vm-logs}"
mkdir -p "$LOGDIR"

# The guest runs scripts/vm-init.sh as PID 1 over the host's root filesystem
# (9p, read-only), with the work directory shared writable for the command
# script, its exit status and the kernel log.
{
    printf 'export VMWLCH_IN_VM=1 VMWLCH_KBUILD=%q VMWLCH_KERNEL_VARIANT=%q PATH=%q:"$PATH"\n' \
        "$KB" "$KVARIANT" "$REPO/target/release"
    printf 'exec %q %q' "$REPO/scripts/vm-guest.sh" "$KB"
    printf ' %q' "$@"
    printf '\n'
} > "$WORK/run.sh"

# VM_OUTDIR=DIR: a host directory the guest may write (same path), e.g. for
# results the host plots afterwards.
OUTDEV=() OUTARG=""
if [ -n "${VM_OUTDIR:-}" ]; then
    mkdir -p "$VM_OUTDIR"
    VM_OUTDIR="$(cd "$VM_OUTDIR" && pwd)"
    # shellcheck disable=SC2054 # the commas belong to qemu's option values
    OUTDEV=(-fsdev "local,id=out,path=$VM_OUTDIR,security_model=none,multidevs=remap"
        -device virtio-9p-pci,fsdev=out,mount_tag=vmout)
    OUTARG=" vmwlch.out=$VM_OUTDIR"
fi

# shellcheck disable=SC2054 # the commas belong to qemu's option values
QEMU=(qemu-system-x86_64 -machine q35 -m "${VM_MEM:-2G}" -smp "${VM_CPUS:-2}"
    -nographic -no-reboot -nodefaults -serial stdio -serial "file:$WORK/console"
    -kernel "$IMG"
    -append "console=ttyS1 loglevel=6 panic=-1 no_timer_check kasan_multi_shot rootfstype=9p root=/dev/root rootflags=version=9p2000.L,trans=virtio,msize=512000,cache=loose ro init=$REPO/scripts/vm-init.sh vmwlch.work=$WORK vmwlch.cwd=$PWD vmwlch.repo=$REPO$OUTARG"
    -fsdev "local,id=root,path=/,security_model=none,readonly=on,multidevs=remap"
    -device virtio-9p-pci,fsdev=root,mount_tag=/dev/root
    -fsdev "local,id=work,path=$WORK,security_model=none,multidevs=remap"
    -device virtio-9p-pci,fsdev=work,mount_tag=vmwork
    -device virtio-rng-pci
    ${OUTDEV[@]+"${OUTDEV[@]}"}
    -fw_cfg name=etc/sercon-port,string=0)

# KVM cannot boot a normal kernel on some nested hosts (qemu asserts or hangs),
# so probe it once per kernel build and remember; else software emulation.
kvm_works() {
    case "${VM_KVM:-auto}" in 0) return 1 ;; 1) return 0 ;; esac
    [ -w /dev/kvm ] || return 1
    local stamp="$KB/.kvm-probe"
    if [ ! -f "$stamp" ]; then
        local pw; pw="$(mktemp -d /tmp/vmwlch-kvm.XXXXXX)"
        echo true > "$pw/run.sh"
        local probe=("${QEMU[@]}")
        probe=("${probe[@]//$WORK/$pw}")
        if (timeout 60 "${probe[@]}" -enable-kvm -cpu host </dev/null >/dev/null 2>&1) 2>/dev/null && [ -f "$pw/rc" ]; then
            echo yes > "$stamp"
        else
            echo no > "$stamp"
        fi
        rm -rf "$pw"
    fi
    [ "$(cat "$stamp")" = yes ]
}
# shellcheck disable=SC2054 # the commas belong to qemu's option values
if kvm_works; then QEMU+=(-enable-kvm -cpu host); else QEMU+=(-accel tcg -cpu max,la57=off); fi

# A kernel that has not started init after VM_BOOT_TIMEOUT seconds is stuck
# in early boot (seen under emulation, before any test code runs): kill it
# so the run can be retried instead of waiting for VM_TIMEOUT.
boot_watchdog() {
    local i
    for ((i = 0; i < ${VM_BOOT_TIMEOUT:-180}; i++)); do
        sleep 1
        # vm-init's first mark (printed at the default level, unlike the
        # kernel's own "Run ... as init process", which is KERN_INFO)
        grep -q 'vm-init: start' "$WORK/console" 2>/dev/null && return
    done
    touch "$WORK/boot-hung"
    kill "$(cat "$WORK/qemu.pid" 2>/dev/null)" 2>/dev/null
}
run_qemu() {
    rm -f "$WORK/console" "$WORK/boot-hung" "$WORK/qemu.pid"
    boot_watchdog & local wd=$!
    # ttyS0 carries the command's output only (the kernel logs to ttyS1);
    # drop qemu's own chatter from stderr.
    timeout --foreground -k 10 "${VM_TIMEOUT:-1200}" "${QEMU[@]}" -pidfile "$WORK/qemu.pid" </dev/null \
        2> >(grep -v -e 'fw_cfg item names should be prefixed' -e 'terminating on signal' >&2)
    qemu_rc=$?
    kill "$wd" 2>/dev/null; wait "$wd" 2>/dev/null
}
set +e
run_qemu
if [ -f "$WORK/boot-hung" ] && [ ! -f "$WORK/rc" ]; then
    cp "$WORK/console" "$LOGDIR/$(date +%Y%m%d-%H%M%S)-boot-hung.console" 2>/dev/null
    log "the kernel hung in early boot (no init after ${VM_BOOT_TIMEOUT:-180}s; console saved in $LOGDIR); booting again"
    run_qemu
fi
set -e

name="$(date +%Y%m%d-%H%M%S)-$(basename "$1" | tr -c 'A-Za-z0-9._-' _)"
[ -f "$WORK/dmesg" ] && cp "$WORK/dmesg" "$LOGDIR/$name.dmesg"

if [ ! -f "$WORK/rc" ]; then
    # No dmesg from the guest: its console (ttyS1) shows how far it got.
    [ -f "$WORK/dmesg" ] || cp "$WORK/console" "$LOGDIR/$name.dmesg" 2>/dev/null || true
    log "the VM did not finish the command (qemu status $qemu_rc); kernel log: $LOGDIR/$name.dmesg"
    tail -40 "$LOGDIR/$name.dmesg" >&2 2>/dev/null || true
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
    # Reports from before PID 1 started come from the kernel's own early boot,
    # before any test code ran (under emulation with 5-level paging, now
    # disabled above, an early interrupt in identify_boot_cpu gave KASAN
    # reports): show them, but judge the run by what happened from init on.
    init_line=$(grep -n -m1 'Run .* as init process' "$WORK/dmesg" | cut -d: -f1)
    init_line=${init_line:-1}
    if head -n "$init_line" "$WORK/dmesg" | grep -E -q "$pat"; then
        log "note: the kernel log shows a problem during early boot, before any test code ran (not counted):"
        head -n "$init_line" "$WORK/dmesg" | grep -E "$pat" | head -3 >&2
    fi
    if tail -n "+$init_line" "$WORK/dmesg" | grep -E -n "$pat" > "$WORK/bad"; then
        log "kernel log of the VM shows problems (full log: $LOGDIR/$name.dmesg):"
        # Show each offending line with some context.
        while IFS=: read -r n _; do
            n=$((n + init_line - 1))
            sed -n "$((n > 3 ? n - 3 : 1)),$((n + 25))p" "$WORK/dmesg"
            echo ---
        done < <(head -3 "$WORK/bad") >&2
        exit 99
    fi
fi
exit "$rc"
