#!/usr/bin/env bash
# The Debian packages' life cycle on a copy of this machine: dpkg -i of
# target/debian/*.deb into an overlay of the root (a private mount
# namespace and a chroot: the host is untouched), with two kernels in
# /lib/modules - the test kernel with its build tree (what linux-headers
# gives a Debian kernel) and one without CONFIG_RUST. Checks: dpkg replaces
# Debian's ipvsadm; DKMS builds and installs ip_vs_vmwlch for the test
# kernel and skips the one without Rust with a message (installation
# succeeds; asked explicitly, dkms says "skipped"); then dpkg -r and
# --purge leave nothing behind. Between the two, the installed system (the
# overlay's upper layer) is saved to target/debian/installed.tar: the VM
# test tests/vm/packages.sh boots the test kernel with it and checks what
# needs that kernel (modprobe, IPVS's autoload, the listings, keepalive
# --check). Installing here rather than in the VM: DKMS's Rust build under
# emulation took half an hour.
#
# Usage: tests/pkg/install-root.sh   (as root; scripts/test.sh runs it)
set -euo pipefail
REPO="$(cd "$(dirname "$0")/../.." && pwd)"
source "$REPO/scripts/common.sh"
[ "$(id -u)" = 0 ] || die "needs root (mount namespaces, chroot)"
OUT="$REPO/target/debian"
shopt -s nullglob
debs=("$OUT"/*.deb)
shopt -u nullglob
[ ${#debs[@]} = 5 ] || die "expected the 5 packages in $OUT, found ${#debs[@]}: scripts/package.sh builds them"
KB="$(kernel_build_dir)"
[ -f "$KB/.built" ] || die "no test kernel build at $KB: scripts/setup.sh builds it"
rel="$(cat "$KB/include/config/kernel.release")"
norust=6.12.999-norust   # a newer kernel without Rust: dkms's postinst considers it too
# The directories the VM test overlays (the rest of its root is read-only),
# and where changes are looked for.
OVL="usr etc var/lib var/cache boot"
[ -x /usr/sbin/ipvsadm ] || die "Debian's ipvsadm is not installed here (scripts/setup.sh installs it)"

if [ "${1:-}" != --in-ns ]; then
    rm -f "$OUT/installed.tar"
    exec unshare --mount --propagation private "$0" --in-ns
fi

T="$(mktemp -d /tmp/pkgroot.XXXXXX)"
trap 'umount -R "$T" 2>/dev/null; rmdir "$T"' EXIT
# The upper layer on a tmpfs: a layer on the root's own file system would
# overlap the lower one (the root), which overlayfs refuses.
mount -t tmpfs tmpfs "$T"
mkdir "$T/upper" "$T/work" "$T/root"
mount -t overlay overlay -o "lowerdir=/,upperdir=$T/upper,workdir=$T/work" "$T/root"
R="$T/root"
for m in proc sys dev; do mount --rbind "/$m" "$R/$m"; done
mount -t tmpfs tmpfs "$R/tmp"
mount -t tmpfs tmpfs "$R/run"
# The packages and the kernel's build tree, at the same paths inside.
for d in "$OUT" "$KB"; do mkdir -p "$R$d" && mount --bind "$d" "$R$d"; done

in_root() {
    chroot "$R" env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
        DEBIAN_FRONTEND=noninteractive HOME=/root "$@"
}

# Files and new directories in the upper layer (what changed on the root);
# directories merely copied up for a file below them are not changes, nor
# are dpkg's database and debconf's (Debian's ipvsadm, which dpkg removes in
# favour of ours, keeps its answers there).
changes() {
    local d type path
    for d in $OVL; do
        [ -d "$T/upper/$d" ] || continue
        find "$T/upper/$d" -mindepth 1 -printf '%y %P\n' | while read -r type path; do
            [ "$type" = d ] && [ -e "/$d/$path" ] && continue
            case "$d/$path" in var/lib/dpkg/* | var/cache/debconf/*) continue ;; esac
            echo "$type /$d/$path"
        done
    done | sort
}

in_root /bin/bash -euo pipefail -c "
    mkdir -p /lib/modules/$rel /lib/modules/$norust/build/include
    cp $KB/modules.order $KB/modules.builtin $KB/modules.builtin.modinfo /lib/modules/$rel/
    ln -s $KB /lib/modules/$rel/build
    printf 'CONFIG_IP_VS=m\n# CONFIG_RUST is not set\n' | tee /lib/modules/$norust/build/.config > /boot/config-$norust
    depmod -a $rel
    rm -f /var/lib/man-db/auto-update  # man-db's trigger would index every manual page
"
changes > "$T/before"

log "dpkg -i ${debs[*]##*/}"
t=$SECONDS
rc=0
in_root dpkg -i "${debs[@]}" > "$T/install.log" 2>&1 || rc=$?
cat "$T/install.log"
if [ "$rc" != 0 ]; then
    # DKMS's build log is the only place that says why a module build failed.
    for f in "$R"/var/lib/dkms/ip_vs_vmwlch/*/build/make.log; do
        [ -f "$f" ] && { echo "--- ${f#"$R"}"; tail -40 "$f"; }
    done
    die "dpkg -i failed (status $rc)"
fi
log "installed in $((SECONDS - t)) s"
grep -q "Removing ipvsadm" "$T/install.log" || die "dpkg did not replace Debian's ipvsadm (Conflicts/Replaces)"
grep -q "Building for $rel.* $norust" "$T/install.log" || die "dkms did not consider both kernels"
grep -q "kernel $norust is not built with CONFIG_RUST=y" "$T/install.log" ||
    die "no message about the kernel without Rust"
status="$(in_root dkms status ip_vs_vmwlch)"
log "dkms status: $status"
[[ "$status" == *"$rel, x86_64: installed"* ]] || die "dkms did not install the module for $rel"
[[ "$status" != *"$norust"* ]] || die "dkms built for $norust, which has no CONFIG_RUST"
ko="/lib/modules/$rel/updates/dkms/ip_vs_vmwlch.ko"
[ "$(in_root modinfo -k "$rel" -n ip_vs_vmwlch)" = "$ko" ] || die "modinfo does not find the DKMS module at $ko"
[ "$(in_root modinfo -k "$rel" -F vermagic ip_vs_vmwlch | cut -d' ' -f1)" = "$rel" ] ||
    die "the DKMS module was not built for $rel"
# Asked explicitly, dkms refuses the kernel without Rust with its "skipped"
# status (77). (Its autoinstall, the kernel hook, reports that skip as an
# error in bookworm's dkms 3.0.10: dkms-project/dkms#302, see README.md.)
modver="$(sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' "$R"/usr/src/ip_vs_vmwlch-*/dkms.conf)"
rc=0; out="$(in_root dkms install -m ip_vs_vmwlch -v "$modver" -k "$norust" 2>&1)" || rc=$?
log "dkms install -k $norust (status $rc): $out"
[ "$rc" = 77 ] || die "dkms install -k $norust: status $rc, expected 77 (skipped)"
[[ "$out" == *"BUILD_EXCLUSIVE directive which does not match this kernel"* ]] || die "dkms did not say why it skipped $norust"
[ ! -e "$R/lib/modules/$norust/updates" ] || die "something was installed for $norust"

# The installed system, for the VM test (the archive holds only what the
# installation changed). Whiteouts are character devices; an opaque
# directory is an xattr.
dirs=()
for d in $OVL; do [ -d "$T/upper/$d" ] && dirs+=("$d"); done
tar -C "$T/upper" --numeric-owner --xattrs --xattrs-include='trusted.overlay.*' \
    -cpf "$OUT/installed.tar.tmp" "${dirs[@]}"
mv "$OUT/installed.tar.tmp" "$OUT/installed.tar"
log "the installed system's changes: $OUT/installed.tar ($(du -h "$OUT/installed.tar" | cut -f1))"

log "dpkg -r"
in_root dpkg -r ipvsctl-ipvsadm keepalive host-agent ipvsctl ip-vs-vmwlch-dkms
in_root modinfo -k "$rel" ip_vs_vmwlch >/dev/null 2>&1 && die "the module is still installed after dpkg -r"
[ -z "$(in_root dkms status ip_vs_vmwlch)" ] || die "dkms still knows the module: $(in_root dkms status ip_vs_vmwlch)"
# What removal may leave (everything else must go): Debian's ipvsadm's files,
# which dpkg removed in favour of ours (whiteouts; its conffiles stay, as
# after any dpkg -r), and DKMS's own module-signing key (made on its first
# build, for every module: dkms's, not this package's).
ipvsadm_files="$(dpkg-query -L ipvsadm)"
left() { # extra-allowed-regex
    changes > "$T/after"
    comm -13 "$T/before" "$T/after" | while read -r type path; do
        [ "$type" = c ] && grep -qx -e "$path" -e "${path/#\/usr\/sbin\//\/sbin\/}" <<< "$ipvsadm_files" && continue
        [[ "$type $path" =~ ^f\ /var/lib/dkms/mok\.(key|pub)$ ]] && continue
        [[ "$type $path" =~ $1 ]] && continue
        echo "$type $path"
    done
}
# After dpkg -r also the conffiles, and the units' enablement (debhelper
# keeps it until purge, as for every Debian service).
after_r='^(f /etc/keepalive/keepalive\.example\.yaml|d /etc/keepalive|f /etc/default/host-agent|l /etc/systemd/system/(multi-user\.target\.wants/)?(keepalive|host-agent)\.service|[fd] /var/lib/systemd/deb-systemd-helper-(enabled|masked)(/.*)?)$'
removed="$(left "$after_r")"
[ -z "$removed" ] || die "left after dpkg -r (besides the conffiles and the units' enablement):
$removed"
for f in /etc/keepalive/keepalive.example.yaml /etc/default/host-agent; do
    [ -e "$R$f" ] || die "dpkg -r removed the conffile $f (only --purge may)"
done
log "dpkg --purge"
in_root dpkg --purge ipvsctl-ipvsadm keepalive host-agent ipvsctl ip-vs-vmwlch-dkms
purged="$(left '^$')"
[ -z "$purged" ] || die "left after dpkg --purge:
$purged"
log "removal and purge left nothing behind (whole life cycle: $SECONDS s)"
