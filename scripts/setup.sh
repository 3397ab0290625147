#!/usr/bin/env bash
# Idempotent, cached setup for a Debian 12 machine: packages, kernel toolchain,
# the Rust+IPVS test kernel, the kernel module and the release binaries.
#
# Expensive results live outside the clone under $VMWLCH_CACHE (/var/cache/vmwlch),
# keyed by their inputs, so a second run finishes in seconds.
#
#   scripts/setup.sh            everything
#   scripts/setup.sh --no-cargo skip the user-space release build
#   scripts/setup.sh --bench-kernel  also build the benchmark kernel (no KASAN/lockdep/kCFI)
#   scripts/setup.sh --no-kernel     packages, bindgen and cargo only: no kernel source,
#                                    test kernel or module (scripts/check-fresh.sh)
set -euo pipefail
source "$(dirname "$0")/common.sh"

DO_CARGO=1
DO_BENCH_KERNEL=0
DO_KERNEL=1
for a in "$@"; do
    case "$a" in
        --no-cargo) DO_CARGO=0 ;;
        --bench-kernel) DO_BENCH_KERNEL=1 ;;
        --no-kernel) DO_KERNEL=0 ;;
        -h|--help) sed -n '2,11p' "$0"; exit 0 ;;
        *) die "unknown option '$a' (try --help)" ;;
    esac
done

[ "$(id -u)" = 0 ] || die "run as root (it installs packages and builds into $CACHE)"
mkdir -p "$CACHE"
exec 9>"$CACHE/setup.lock"
flock 9

# Everything the build and the tests run that is not in a minimal Debian 12
# (scripts/check-fresh.sh proves the list in a debootstrapped root).
PACKAGES=(
    # C toolchain for the crates that build C (ring) and the linker cargo calls;
    # build-essential: dpkg-buildpackage (package.sh) requires it by name
    build-essential gcc libc6-dev pkg-config git ca-certificates
    # kernel toolchain (Rust-for-Linux on 6.12: Debian's rustc-web has core/alloc sources)
    rustc-web rust-web-src linux-source-6.12 clang lld llvm libclang-dev
    # clang 19 for the test kernel (kCFI with Rust; see common.sh)
    clang-19 lld-19 llvm-19 libclang-19-dev
    flex bison bc libelf-dev libssl-dev cpio kmod make xz-utils
    # test VM: qemu (the guest runs scripts/vm-init.sh over the host's root
    # filesystem), busybox for its reboot, python3 for the test drivers
    qemu-system-x86 busybox-static python3
    # reference tools and traffic helpers for the tests
    ipvsadm keepalived socat iproute2 iputils-ping procps psmisc curl tcpdump
    # the demo's plot
    gnuplot-nox
    # lints run by scripts/test.sh (shell, Python)
    shellcheck pyflakes3
    # Debian packages (scripts/package.sh) and their test: debhelper, DKMS, lintian
    dpkg-dev debhelper dh-dkms dkms fakeroot lintian
    # Debian's bindgen: what the DKMS package's module build uses (its
    # Depends); the kernel build itself needs the newer one in $TOOLS
    bindgen
    # the cluster state in etcd (crates/cluster-etcd): the server its tests
    # start, etcdctl to look at it, and protoc for etcd-client's build.rs
    # with the well-known .proto files (google/protobuf/*.proto), which are
    # in libprotobuf-dev, only recommended by protobuf-compiler
    etcd-server etcd-client protobuf-compiler libprotobuf-dev
    # keepalive's `bgp:` section runs BIRD 2 (bird, birdc); its netns test
    # (tests/netns/keepalive-bgp.sh) also runs one as the router
    bird2
)

install_packages() {
    local missing=()
    for p in "${PACKAGES[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
    done
    if [ ${#missing[@]} -gt 0 ]; then
        log "installing Debian packages: ${missing[*]}"
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -q
        apt-get install -y -q --no-install-recommends "${missing[@]}"
    fi
}

install_bindgen() {
    # Debian's bindgen 0.60 is too old for 6.12 (needs >= 0.65.1).
    if ! "$TOOLS/bin/bindgen" --version >/dev/null 2>&1; then
        log "installing bindgen-cli into $TOOLS"
        cargo install --locked --root "$TOOLS" bindgen-cli@0.73.2
    fi
}

extract_kernel() {
    local src; src="$(kernel_src_dir)"
    if [ ! -f "$src/.extracted" ]; then
        log "extracting $KSRC_TARBALL"
        rm -rf "$src" "$src.tmp"
        mkdir -p "$src.tmp"
        tar -C "$src.tmp" -xJf "$KSRC_TARBALL"
        mv "$src.tmp/linux-source-6.12" "$src"
        rmdir "$src.tmp"
        touch "$src/.extracted"
    fi
}

build_kernel() {
    local src out; src="$(kernel_src_dir)"; out="$(kernel_build_dir)"
    if [ -f "$out/.built" ]; then
        touch "$out/.last-used"
        return 0
    fi
    log "building the test kernel into $out (cold build: ~10 min on 2 cores)"
    rm -rf "$out"; mkdir -p "$out"
    touch "$out/.last-used"   # a build in use is never pruned by another checkout
    local t0=$SECONDS
    make -s -C "$src" O="$out" "${KMAKE_ARGS[@]}" tinyconfig
    "$src/scripts/kconfig/merge_config.sh" -m -O "$out" "$out/.config" "${KFRAGS[@]}" >/dev/null
    make -s -C "$src" O="$out" "${KMAKE_ARGS[@]}" olddefconfig
    # olddefconfig silently drops options whose dependencies fail (RUST above all).
    local lost=0 opt
    declare -A want=()
    while IFS= read -r line; do          # later fragments override earlier ones
        case "$line" in CONFIG_*=*) want["${line%%=*}"]="$line" ;; esac
    done < <(cat "${KFRAGS[@]}")
    for opt in "${!want[@]}"; do
        case "${want[$opt]}" in *=y|*=m) ;; *) continue ;; esac
        grep -qx "${want[$opt]}" "$out/.config" || { echo "  not set: ${want[$opt]}" >&2; lost=1; }
    done
    [ $lost = 0 ] || die "the kernel config lost options above (is 'make rustavailable' happy?)"
    make -s -C "$src" O="$out" "${KMAKE_ARGS[@]}" -j"$(nproc)" bzImage modules
    touch "$out/.built" "$out/.last-used"
    log "kernel built in $((SECONDS - t0)) s: $(cat "$out/include/config/kernel.release")"
}

build_module() {
    local out; out="$(kernel_build_dir)"
    if [ -f "$REPO/ipvs-sched-vmwlch/Kbuild" ]; then
        log "building ip_vs_vmwlch.ko"
        # Warnings are errors here (the kernel's -W flags, missing_docs, etc.).
        make -s -C "$REPO/ipvs-sched-vmwlch" KDIR="$out" BINDGEN="$TOOLS/bin/bindgen" \
            KCFLAGS=-Werror KRUSTFLAGS=-Dwarnings
    fi
}

build_cargo() {
    log "building release binaries (cargo build --release)"
    (cd "$REPO" && cargo build --release --workspace --quiet)
}

prune_kernels() {
    # Keep only the builds the current inputs would use (each is ~1-2 GB).
    local keep=("$(kernel_build_dir)")
    keep+=("$(VMWLCH_KERNEL_VARIANT=bench bash -c "source '$REPO/scripts/common.sh'; kernel_build_dir")")
    # Builds used within the last 3 days stay too: other checkouts on this
    # machine (branches, CI's clean clone) may run with other kernel inputs.
    local d
    for d in "$CACHE"/kernel/*; do
        [ -d "$d" ] || continue
        [[ " ${keep[*]} " == *" $d "* ]] && continue
        [ -n "$(find "$d/.last-used" -mtime -3 2>/dev/null)" ] && continue
        log "removing stale kernel build $d"; rm -rf "$d"
    done
}

# The workspace's Rust comes from rustup (the README's requirement): say so
# before an hour of work fails on it.
command -v cargo >/dev/null ||
    die "cargo not found in PATH: install Rust with rustup (https://rustup.rs, the stable toolchain), open a new shell, run this again"
install_packages
install_bindgen
if [ $DO_KERNEL = 1 ]; then
    extract_kernel
    prune_kernels
    build_kernel
    build_module
fi
if [ $DO_BENCH_KERNEL = 1 ]; then
    (KVARIANT=bench; KFRAGS=("$KFRAG" "$REPO/kernel/vmwlch-bench.config"); build_kernel)
fi
[ $DO_CARGO = 0 ] || build_cargo
if [ $DO_KERNEL = 1 ]; then log "ready: kernel $(kernel_build_dir)"; else log "ready (no kernel)"; fi
