#!/usr/bin/env bash
# Runs inside the test VM (started by scripts/vm.sh): prepares the guest, runs the
# command, and leaves its exit status and the kernel log in the shared work dir.
WORK="$1"; KB="$2"; shift 2
REPO="$(cd "$(dirname "$0")/.." && pwd)"

mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug 2>/dev/null

# Make our module loadable by name (IPVS autoloads schedulers with
# request_module("ip_vs_<name>")): a private modules tree for this kernel.
rel="$(uname -r)"
ko="$REPO/ipvs-sched-vmwlch/ip_vs_vmwlch.ko"
if [ -f "$ko" ]; then
    mount -t tmpfs tmpfs /lib/modules 2>/dev/null
    mkdir -p "/lib/modules/$rel/extra"
    for f in modules.order modules.builtin modules.builtin.modinfo; do
        [ -f "$KB/$f" ] && cp "$KB/$f" "/lib/modules/$rel/"
    done
    cp "$ko" "/lib/modules/$rel/extra/"
    depmod -a "$rel" 2>/dev/null
fi

export PATH="$REPO/target/release:$PATH" VMWLCH_IN_VM=1
"$@"
rc=$?
dmesg > "$WORK/dmesg" 2>&1
echo "$rc" > "$WORK/rc"
exit "$rc"
