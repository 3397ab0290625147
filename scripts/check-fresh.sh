#!/usr/bin/env bash
# Proves that setup.sh installs everything the build and the host-side tests
# need: a clean Debian 12 root made by mmdebstrap (variant minbase, this
# machine's apt sources), the working tree copied in, then inside it
#   scripts/setup.sh --no-kernel && TEST_NO_KERNEL=1 scripts/test.sh
# A package that is on this machine by accident is missing there, and the
# step that needs it fails.
#
#   scripts/check-fresh.sh           build the root, run the check, remove the root
#   scripts/check-fresh.sh --keep    leave the root in $CACHE/fresh/root to look at
#
# What comes from this machine, because a fresh machine of this kind has it
# without setup.sh: rustup's toolchain (read-only; the README's requirement),
# the running kernel's modules (read-only), the network's TLS trust (its CA
# bundle), and, to save downloads only,
# cargo's registry cache and apt's .deb cache. Skipped there (counted as
# skipped): the test kernel's build and every step that boots or builds for it.
set -euo pipefail
source "$(dirname "$0")/common.sh"

KEEP=0
for a in "$@"; do
    case "$a" in
        --keep) KEEP=1 ;;
        -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
        *) die "unknown option '$a' (try --help)" ;;
    esac
done
[ "$(id -u)" = 0 ] || die "run as root (mmdebstrap, chroot and the netns tests need it)"
command -v mmdebstrap >/dev/null || {
    log "installing mmdebstrap"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends mmdebstrap >/dev/null
}

RUSTUP_DIR="${RUSTUP_HOME:-$HOME/.rustup}"
CARGO_DIR="${CARGO_HOME:-$HOME/.cargo}"
if [ ! -x "$CARGO_DIR/bin/cargo" ] || [ ! -d "$RUSTUP_DIR/toolchains" ]; then
    die "rustup's toolchain not found in $CARGO_DIR and $RUSTUP_DIR (the README's requirement)"
fi

# apt's sources as this machine has them (the same mirrors and suites, no others).
SOURCES=()
for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
    [ -s "$f" ] && grep -qv '^\s*\(#\|$\)' "$f" && SOURCES+=("$f")
done
[ ${#SOURCES[@]} -gt 0 ] || die "no apt sources in /etc/apt"

WORK="$CACHE/fresh"
ROOT="$WORK/root"
mkdir -p "$WORK"
exec 8>"$WORK/lock"
flock -n 8 || die "another check-fresh.sh is running"

umount_root() { # everything mounted below $ROOT, deepest first
    findmnt -rn -o TARGET | { grep "^$ROOT/" || true; } | sort -r | xargs -r umount -l
}
cleanup() {
    umount_root
    if [ $KEEP = 0 ]; then rm -rf "$ROOT"; else log "root kept in $ROOT"; fi
}
umount_root
rm -rf "$ROOT"
trap cleanup EXIT

t0=$SECONDS
log "mmdebstrap: a minimal Debian 12 root in $ROOT"
mmdebstrap --variant=minbase --quiet bookworm "$ROOT" "${SOURCES[@]}"
t_root=$((SECONDS - t0))

# A clone (package.sh takes the version from the commit), with the working
# tree's changes and new files on top; nothing ignored, no build outputs.
DEST="$ROOT/src/vmwlch"
mkdir -p "$ROOT/src"
git clone --quiet --no-hardlinks "$REPO" "$DEST"
git -C "$REPO" ls-files -z --cached --others --exclude-standard |
    tar -c -C "$REPO" --null -T - --ignore-failed-read 2>/dev/null | tar -x -C "$DEST"

mkdir -p "$ROOT/root/.rustup" "$ROOT/root/.cargo/registry" "$ROOT/var/cache/apt/archives"
cp -a "$CARGO_DIR/bin" "$ROOT/root/.cargo/"
mkdir -p "$ROOT/lib/modules"

inner() { # runs in a private mount namespace
    set -euo pipefail
    # The root a mount point, as / is on a machine (ip netns exec remounts it).
    mount --bind "$ROOT" "$ROOT"
    mount -t proc proc "$ROOT/proc"
    mount --rbind /sys "$ROOT/sys"
    mount --rbind /dev "$ROOT/dev"
    mount -t tmpfs tmpfs "$ROOT/run"
    mkdir -m 1777 "$ROOT/run/lock" # made at boot on a Debian machine
    mount -t tmpfs tmpfs "$ROOT/tmp"
    mount --bind -o ro "$RUSTUP_DIR" "$ROOT/root/.rustup"
    mount --bind "$CARGO_DIR/registry" "$ROOT/root/.cargo/registry"
    mount --bind /var/cache/apt/archives "$ROOT/var/cache/apt/archives"
    if [ -d /lib/modules ]; then mount --bind -o ro /lib/modules "$ROOT/lib/modules"; fi
    cp /etc/resolv.conf "$ROOT/etc/resolv.conf"
    # The network's TLS trust as this machine has it (its CA bundle may hold
    # a CA a stock ca-certificates does not): where cargo, curl and git look.
    cp /etc/ssl/certs/ca-certificates.crt "$ROOT/etc/host-ca.crt"
    local ca=/etc/host-ca.crt
    # A fresh machine's environment: no variables of this session's.
    chroot "$ROOT" /usr/bin/env -i HOME=/root TERM=dumb CI="${CI:-}" \
        SSL_CERT_FILE=$ca CARGO_HTTP_CAINFO=$ca CURL_CA_BUNDLE=$ca GIT_SSL_CAINFO=$ca \
        PATH=/root/.cargo/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
        bash -c 'cd /src/vmwlch && TEST_NO_KERNEL=1 scripts/test.sh'
}
export -f inner
export ROOT RUSTUP_DIR CARGO_DIR
log "running setup.sh --no-kernel and TEST_NO_KERNEL=1 scripts/test.sh in the root"
rc=0
unshare --mount --propagation private bash -c inner || rc=$?
log "root made in ${t_root}s; the whole check took $((SECONDS - t0))s"
[ $rc = 0 ] || die "the check failed in the fresh root (status $rc): see the output above"
log "fresh root: setup and the host-side tests passed"
