#!/usr/bin/env bash
# The Debian packages (scripts/package.sh, target/debian/*.deb) installed the
# way an operator installs them, on the test kernel: dpkg -i of all four;
# DKMS builds ip_vs_vmwlch for the running kernel from its build tree and
# skips a kernel without CONFIG_RUST (with a message, installation succeeds);
# modprobe and IPVS's autoload by scheduler name (vmwlch and the vmwlc alias);
# our ipvsadm lists byte-identically to Debian's; keepalive --check accepts
# the installed example; dpkg -r and --purge leave nothing behind.
#
# The guest's root is the host's, read-only: /usr, /etc, /var/lib,
# /var/cache and /boot get an overlay (upper layers in /run, a tmpfs), so
# dpkg works and the host is untouched; what a package left behind is what
# its upper layers still hold after removal.
set -euo pipefail
source "$(dirname "$0")/../lib.sh"
in_vm || skip "runs in the test VM (scripts/vm.sh -- $0)"
DEBS="$REPO/target/debian"
shopt -s nullglob
debs=("$DEBS"/*.deb)
shopt -u nullglob
[ ${#debs[@]} = 4 ] || fail "expected the 4 packages in $DEBS, found ${#debs[@]}: build them with scripts/package.sh (scripts/test.sh runs it before the VM tests)"
[ -n "${VMWLCH_KBUILD:-}" ] || fail "VMWLCH_KBUILD (the test kernel's build tree) is not set: run through scripts/vm.sh"
# The packaged tools, not the repository's build (vm.sh puts it first in PATH).
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive
# dkms uses <(...): the guest's /dev has no /dev/fd of its own.
[ -e /dev/fd ] || ln -s /proc/self/fd /dev/fd
HOSTROOT=/dev/shm/hostroot   # vm-init.sh's view of the host's root, read-only
DEB_IPVSADM="$HOSTROOT/usr/sbin/ipvsadm"
[ -x "$DEB_IPVSADM" ] || fail "Debian's ipvsadm is not installed on the host (scripts/setup.sh installs it)"
rel="$(uname -r)"
norust=6.12.999-norust   # a newer kernel without Rust: dkms's postinst considers it too
OVL=(usr etc var/lib var/cache boot)
WORKDIR="$(mktemp -d /run/pkgtest.XXXXXX)"

for d in "${OVL[@]}"; do
    u="$WORKDIR/${d//\//_}"
    mkdir -p "$u/upper" "$u/work"
    mount -t overlay overlay -o "lowerdir=$HOSTROOT/$d,upperdir=$u/upper,workdir=$u/work" "/$d"
done

# Files (and new directories) in the upper layers: what changed on the root.
# Directories merely copied up for a file below them are not changes.
changes() {
    local d u type path
    for d in "${OVL[@]}"; do
        u="$WORKDIR/${d//\//_}/upper"
        find "$u" -mindepth 1 -printf '%y %P\n' | while read -r type path; do
            [ "$type" = d ] && [ -e "$HOSTROOT/$d/$path" ] && continue
            case "$d/$path" in
                # dpkg's own database and log of what happened
                var/lib/dpkg/*) continue ;;
            esac
            echo "$type /$d/$path"
        done
    done | sort
}

# The kernels: the running one with its build tree (what linux-headers
# gives a Debian kernel), and one whose .config lacks CONFIG_RUST.
mkdir -p "/lib/modules/$rel" "/lib/modules/$norust/build/include"
cp "$VMWLCH_KBUILD"/modules.{order,builtin,builtin.modinfo} "/lib/modules/$rel/"
ln -s "$VMWLCH_KBUILD" "/lib/modules/$rel/build"
printf 'CONFIG_IP_VS=m\n# CONFIG_RUST is not set\n' | tee "/lib/modules/$norust/build/.config" > "/boot/config-$norust"
depmod -a "$rel"
# man-db's trigger would index every manual page of the host (minutes here).
rm -f /var/lib/man-db/auto-update
changes > "$WORKDIR/before"

log "dpkg -i ${debs[*]##*/}"
t=$SECONDS
if ! dpkg -i "${debs[@]}" > "$WORKDIR/install.log" 2>&1; then
    cat "$WORKDIR/install.log" >&2
    fail "dpkg -i failed"
fi
cat "$WORKDIR/install.log" >&2
log "installed in $((SECONDS - t)) s"
grep -q "Removing ipvsadm" "$WORKDIR/install.log" || fail "dpkg did not replace Debian's ipvsadm (Conflicts/Replaces)"
grep -q "Building for $rel.* $norust" "$WORKDIR/install.log" || fail "dkms did not consider both kernels"
grep -q "kernel $norust is not built with CONFIG_RUST=y" "$WORKDIR/install.log" ||
    fail "no message about the kernel without Rust"
status="$(dkms status ip_vs_vmwlch)"
log "dkms status: $status"
[[ "$status" == *"$rel, x86_64: installed"* ]] || fail "dkms did not install the module for $rel"
[[ "$status" != *"$norust"* ]] || fail "dkms built for $norust, which has no CONFIG_RUST"
# The kernel's own postinst hook on a kernel without Rust: a skip, not an error.
out="$(dkms autoinstall -k "$norust" 2>&1)" || fail "dkms autoinstall -k $norust failed: $out"
log "dkms autoinstall -k $norust: $out"
[ ! -e "/lib/modules/$norust/updates" ] || fail "something was installed for $norust"

ko="/lib/modules/$rel/updates/dkms/ip_vs_vmwlch.ko"
[ "$(modinfo -n ip_vs_vmwlch)" = "$ko" ] || fail "modinfo does not find the DKMS module at $ko"
modprobe ip_vs_vmwlch
grep -q '^ip_vs_vmwlch ' /proc/modules || fail "modprobe ip_vs_vmwlch did not load it"
rmmod ip_vs_vmwlch
# /sbin/ipvsadm is ours (the path Debian's package used: not lost when dpkg
# removed that package, although /sbin is /usr/sbin on disk).
[ "$(readlink -f /sbin/ipvsadm)" = /usr/sbin/ipvsctl ] || fail "/sbin/ipvsadm is $(readlink -f /sbin/ipvsadm), not ipvsctl"
# IPVS loads the scheduler's module on first use, by name and by alias.
ipvsadm -A -t 192.0.2.1:80 -s vmwlch
grep -q '^ip_vs_vmwlch ' /proc/modules || fail "-s vmwlch did not autoload ip_vs_vmwlch"
ipvsadm -C
rmmod ip_vs_vmwlch
ipvsadm-restore <<'EOF'
-A -t 192.0.2.1:80 -s vmwlc
-a -t 192.0.2.1:80 -r 10.1.0.1:80 -g -w 2
-a -t 192.0.2.1:80 -r 10.1.0.2:80 -m -w 1
-A -u 192.0.2.1:53 -s vmwlch -p 300
-a -u 192.0.2.1:53 -r 10.1.0.3:53 -i
-A -f 7 -s wlc
EOF
grep -q '^ip_vs_vmwlch ' /proc/modules || fail "-s vmwlc did not autoload ip_vs_vmwlch (alias)"
for args in -Ln -Sn; do
    ipvsadm "$args" > "$WORKDIR/ours"
    "$DEB_IPVSADM" "$args" > "$WORKDIR/debian"
    cmp "$WORKDIR/ours" "$WORKDIR/debian" ||
        fail "ipvsadm $args differs from Debian's: $(diff "$WORKDIR/debian" "$WORKDIR/ours")"
done
[ "$(ipvsadm-save -n)" = "$(cat "$WORKDIR/debian")" ] || fail "ipvsadm-save -n differs from ipvsadm -Sn"
ipvsadm -C
rmmod ip_vs_vmwlch

keepalive --check -c /etc/keepalive/keepalive.example.yaml || fail "keepalive --check rejects the installed example"
# The README's minimal first configuration (its first yaml block).
sed -n '/^## Install on a front end/,$p' "$REPO/README.md" | sed -n '/^```yaml/,/^```/{/^```/d;p}' > "$WORKDIR/readme.yaml"
[ -s "$WORKDIR/readme.yaml" ] || fail "README.md has no yaml block under 'Install on a front end'"
keepalive --check -c "$WORKDIR/readme.yaml" || fail "keepalive --check rejects README's minimal configuration"
for f in /usr/share/bash-completion/completions/ipvsctl /usr/share/zsh/vendor-completions/_ipvsctl \
    /usr/share/fish/vendor_completions.d/ipvsctl.fish /usr/share/man/man8/ipvsctl.8.gz \
    /usr/share/man/man8/keepalive.8.gz /lib/systemd/system/keepalive.service /lib/modprobe.d/ip-vs-vmwlch.conf; do
    [ -s "$f" ] || fail "$f is missing"
done

log "dpkg -r (checks so far took $((SECONDS - t)) s)"
dpkg -r ipvsctl-ipvsadm keepalive ipvsctl ip-vs-vmwlch-dkms >&2
modinfo ip_vs_vmwlch >/dev/null 2>&1 && fail "the module is still installed after dpkg -r"
[ -z "$(dkms status ip_vs_vmwlch)" ] || fail "dkms still knows the module: $(dkms status ip_vs_vmwlch)"
# Left after removal: the conffile and the dpkg-removed ipvsadm's files
# (whiteouts; its conffiles stay, as after any dpkg -r).
ipvsadm_files="$(dpkg-query --admindir="$HOSTROOT/var/lib/dpkg" -L ipvsadm)"
left() {
    changes > "$WORKDIR/after"
    comm -13 "$WORKDIR/before" "$WORKDIR/after" | while read -r type path; do
        [ "$type" = c ] && grep -qx -e "$path" -e "${path/#\/usr\/sbin\//\/sbin/}" <<< "$ipvsadm_files" && continue
        echo "$type $path"
    done
}
removed="$(left)"
[ "$removed" = "f /etc/keepalive/keepalive.example.yaml" ] || fail "after dpkg -r, expected only the conffile left, got:
$removed"
dpkg --purge ipvsctl-ipvsadm keepalive ipvsctl ip-vs-vmwlch-dkms >&2
purged="$(left)"
[ -z "$purged" ] || fail "left after dpkg --purge:
$purged"
log "removal and purge left nothing behind (whole test: $SECONDS s)"
