#!/usr/bin/env bash
# Runs inside the test VM (called by scripts/vm-init.sh via scripts/vm.sh):
# makes our kernel module loadable by name, then runs the command.
KB="$1"; shift
REPO="$(cd "$(dirname "$0")/.." && pwd)"

# IPVS autoloads schedulers with request_module("ip_vs_<name>"): give this
# kernel a private modules tree with our module (the host's /lib/modules is
# read-only and for another kernel; vm-init.sh made /usr/lib writable).
rel="$(uname -r)"
ko="$REPO/ipvs-sched-vmwlch/ip_vs_vmwlch.ko"
# busybox (static) starts much faster under emulation than coreutils.
busybox mkdir -p "/lib/modules/$rel/extra"
for f in modules.order modules.builtin modules.builtin.modinfo; do
    [ -f "$KB/$f" ] && busybox cp "$KB/$f" "/lib/modules/$rel/"
done
# The repository's module is built for the test kernel; other variants
# (the benchmark kernel) load their own build explicitly.
[ "${VMWLCH_KERNEL_VARIANT:-test}" = test ] && [ -f "$ko" ] && busybox cp "$ko" "/lib/modules/$rel/extra/"
depmod -a "$rel" 2>/dev/null

exec "$@"
