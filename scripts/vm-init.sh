#!/bin/bash
# PID 1 of the test VM (see scripts/vm.sh): the host's root filesystem is
# mounted read-only over 9p; give the guest writable tmpfs where tools need
# them, run the command, leave its status and the kernel log in the shared
# work directory, and reboot (which qemu -no-reboot turns into exit).
# Every exec is slow under emulation: keep the process count low.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root TERM=dumb LANG=C.UTF-8
export PYTHONDONTWRITEBYTECODE=1
# busybox is static: under emulation it starts in a fifth of the time of
# the dynamically linked util-linux/coreutils tools.
mount() { busybox mount "$@"; }
mkdir() { busybox mkdir "$@"; }
mount -t proc proc /proc
read -r cmdline < /proc/cmdline
work="" cwd="/" out="" repo=""
for a in $cmdline; do
    case "$a" in
        vmwlch.work=*) work="${a#vmwlch.work=}" ;;
        vmwlch.cwd=*) cwd="${a#vmwlch.cwd=}" ;;
        vmwlch.repo=*) repo="${a#vmwlch.repo=}" ;;
        vmwlch.out=*) out="${a#vmwlch.out=}" ;;
    esac
done
mark() { echo "vm-init: $*" > /dev/kmsg; }
mount -t sysfs sysfs /sys
mark start
mkdir -p /dev/pts /dev/shm
mount -t devpts -o gid=5,mode=620,ptmxmode=666 devpts /dev/pts
mount -t tmpfs -o mode=1777 tmpfs /dev/shm
# Writable tmpfs where tools write. The repository (and the working
# directory) may live below one of them on the host (a CI clone in /tmp, say):
# keep a view of the host's root and bind them back after mounting.
mkdir -p /dev/shm/hostroot
mount --bind / /dev/shm/hostroot
for d in /run /tmp /var/tmp /var/lib /var/log /root /home; do
    mount -t tmpfs -o mode=1777 tmpfs "$d"
    for p in "$repo" "$cwd"; do
        case "$p/" in
            "$d"/*) [ -d "$p" ] && continue   # already bound back
                    mkdir -p "$p" && mount --bind "/dev/shm/hostroot$p" "$p" ;;
        esac
    done
done
mount -t debugfs debugfs /sys/kernel/debug
# /lib/modules does not exist on the host: an overlay over /usr/lib makes room
# for this kernel's modules (see vm-guest.sh).
mkdir -p /run/ovl/lib /run/ovl/work /run/netns /run/lock
mount -t overlay overlay -o lowerdir=/usr/lib,upperdir=/run/ovl/lib,workdir=/run/ovl/work /usr/lib
mkdir -p "$work"
mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000 vmwork "$work"
# The output directory may lie below a tmpfs just mounted (e.g. in /tmp).
[ -z "$out" ] || { mkdir -p "$out" && mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000 vmout "$out"; }
echo vmwlch-vm > /proc/sys/kernel/hostname
busybox stty -opost < /dev/ttyS0
mark "ready to run"

ulimit -n 65536
cd "$cwd" || cd /
bash "$work/run.sh" </dev/null >/dev/ttyS0 2>&1
echo $? > "$work/rc"
mark "command done"
dmesg > "$work/dmesg" 2>&1
sync
busybox reboot -f 2>/dev/null || echo b > /proc/sysrq-trigger
sleep 10
