#!/usr/bin/env bash
# Debian (bookworm) packages of the project, built with debhelper from the
# recipe in packaging/debian/:
#
#   ipvsctl            the ipvsctl binary, man pages, bash/zsh/fish completions
#   ipvsctl-ipvsadm    ipvsctl as ipvsadm (replaces Debian's ipvsadm package)
#   keepalive          the daemon, its systemd unit, /etc/keepalive/ example, man page
#   host-agent         the physical hosts' load agent, its systemd unit,
#                      /etc/default/host-agent, man page
#   ip-vs-vmwlch-dkms  the kernel module's source for DKMS, modprobe alias
#
#   scripts/package.sh [--lintian] [--reproducible] [--out DIR]
#
# Versions come from the workspace (crates' Cargo.toml; dkms.conf must agree);
# a commit that is not tagged v<version> gets ~git<date>.<commit> appended.
# SOURCE_DATE_EPOCH is the commit's time, so the same commit and toolchain
# give the same bytes. The release binaries are built with the same cargo
# command as scripts/setup.sh (nothing to do if the suite built them).
# --lintian: run lintian on the packages; its warnings and errors fail.
# --reproducible: build a second time in another directory; the packages
# must be byte-identical.
set -euo pipefail
source "$(dirname "$0")/common.sh"

OUT="$REPO/target/debian"
LINTIAN=0 REPRO=0
while [ $# -gt 0 ]; do
    case "$1" in
        --lintian) LINTIAN=1 ;;
        --reproducible) REPRO=1 ;;
        --out) OUT="${2:?--out needs a directory}"; shift ;;
        -h|--help) sed -n '2,21p' "$0"; exit 0 ;;
        *) die "unknown option '$1' (try --help)" ;;
    esac
    shift
done
umask 022
export LC_ALL=C.UTF-8 TZ=UTC

for tool in dpkg-buildpackage dh dh_dkms fakeroot; do
    command -v "$tool" >/dev/null || die "$tool is missing: run scripts/setup.sh (it installs debhelper, dh-dkms, dpkg-dev)"
done
[ $LINTIAN = 0 ] || command -v lintian >/dev/null || die "lintian is missing: run scripts/setup.sh"
git -C "$REPO" rev-parse --git-dir >/dev/null 2>&1 || die "$REPO is not a git checkout (the version and build date come from its commit)"

# --- version: the workspace's, the same for every package ---
crate_version() { sed -n 's/^version = "\(.*\)"/\1/p' "$REPO/crates/$1/Cargo.toml" | head -1; }
VERSION="$(crate_version ipvsctl)"
[ -n "$VERSION" ] || die "no version in crates/ipvsctl/Cargo.toml"
for crate in keepalive host-agent; do
    [ "$(crate_version $crate)" = "$VERSION" ] ||
        die "crates/$crate/Cargo.toml has version $(crate_version $crate), ipvsctl $VERSION: the packages share one version"
done
MODVER="$(sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' "$REPO/ipvs-sched-vmwlch/dkms.conf")"
[ "$MODVER" = "$VERSION" ] ||
    die "ipvs-sched-vmwlch/dkms.conf has PACKAGE_VERSION=\"$MODVER\", the workspace $VERSION: update dkms.conf"
COMMIT="$(git -C "$REPO" rev-parse HEAD)"
: "${SOURCE_DATE_EPOCH:=$(git -C "$REPO" log -1 --format=%ct HEAD)}"
export SOURCE_DATE_EPOCH
DEBVER="$VERSION"
if [ "$(git -C "$REPO" tag --points-at HEAD --list "v$VERSION")" != "v$VERSION" ]; then
    DEBVER="$VERSION~git$(date -d "@$SOURCE_DATE_EPOCH" +%Y%m%d).${COMMIT:0:10}"
fi
[ -z "$(git -C "$REPO" status --porcelain --untracked-files=no)" ] ||
    log "warning: the checkout has uncommitted changes; they are in the packages, which carry the version of commit ${COMMIT:0:10}"

# --- the release binaries (the exact command of scripts/setup.sh) ---
log "cargo build --release --workspace"
(cd "$REPO" && cargo build --release --workspace --locked --quiet)

# --- the tree dpkg-buildpackage works in; the packages go to $2 ---
build_debs() { # staging-parent outdir
    local stage="$1/ipvs-vmwlch-$DEBVER" M="$REPO/ipvs-sched-vmwlch" maint
    mkdir -p "$stage/build/bin" "$stage/build/dkms/src" "$stage/build/keepalive" "$stage/build/host-agent" "$2"
    cp -r "$REPO/packaging/debian" "$stage/debian"
    cp "$REPO/target/release/ipvsctl" "$REPO/target/release/keepalive" "$REPO/target/release/host-agent" "$stage/build/bin/"
    # The module's sources only: objects and the generated src/layout.rs
    # belong to the kernel they were built for.
    cp -r "$M/Kbuild" "$M/Makefile" "$M/dkms.conf" "$M/README.md" "$M/include" "$stage/build/dkms/"
    find "$M/src" -maxdepth 1 -type f \( -name '*.c' -o -name '*.h' -o -name '*.rs' \) ! -name layout.rs \
        -exec cp {} "$stage/build/dkms/src/" \;
    cp "$REPO/crates/keepalive/keepalive.service" "$stage/debian/keepalive.service"
    cp "$REPO/crates/keepalive/keepalive.example.yaml" "$REPO/crates/keepalive/README.md" "$stage/build/keepalive/"
    cp "$REPO/crates/host-agent/host-agent.service" "$stage/debian/host-agent.service"
    cp "$REPO/crates/host-agent/README.md" "$stage/build/host-agent/"
    maint="$(sed -n 's/^Maintainer: //p' "$stage/debian/control")"
    printf '%s\n' "ipvs-vmwlch ($DEBVER) bookworm; urgency=medium" "" "  * Built from commit $COMMIT." "" \
        " -- $maint  $(date -R -d "@$SOURCE_DATE_EPOCH")" > "$stage/debian/changelog"
    log "dpkg-buildpackage ($DEBVER) in $1"
    (cd "$stage" && dpkg-buildpackage -b --no-sign --no-pre-clean -j1) > "$1/build.log" 2>&1 ||
        { tail -30 "$1/build.log" >&2; die "dpkg-buildpackage failed (log: $1/build.log)"; }
    mv "$1"/*.deb "$2/"
}
rm -rf "$OUT/build" "$OUT/rebuild" "$OUT/SHA256SUMS" "$OUT"/*.deb
build_debs "$OUT/build" "$OUT"

for deb in "$OUT"/*.deb; do
    printf '%s  %s\n' "$(sha256sum < "$deb" | cut -d' ' -f1)" "$(basename "$deb")"
done | tee "$OUT/SHA256SUMS"

if [ $REPRO = 1 ]; then
    build_debs "$OUT/rebuild" "$OUT/rebuild/debs"
    (cd "$OUT/rebuild/debs" && sha256sum -c --quiet "$OUT/SHA256SUMS") ||
        die "a second build (in $OUT/rebuild) gave different packages: not reproducible (compare them with diffoscope)"
    log "reproducible: a second build in another directory gave the same bytes"
fi

if [ $LINTIAN = 1 ]; then
    log "lintian"
    # --fail-on: warnings count too; info tags and the overridden tags
    # (each with its reason in packaging/debian/*.lintian-overrides) are shown.
    lintian --info --display-info --show-overrides --fail-on error,warning "$OUT"/*.deb ||
        die "lintian found errors or warnings (above)"
    log "lintian: no errors or warnings"
fi
log "packages in $OUT"
