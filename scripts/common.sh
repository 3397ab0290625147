# shellcheck shell=bash
# Shared settings for the project's scripts. Source it; it defines no side effects.

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE="${VMWLCH_CACHE:-/var/cache/vmwlch}"
KFRAG="$REPO/kernel/vmwlch-test.config"
# VMWLCH_KERNEL_VARIANT=bench selects the benchmark kernel (no KASAN/lockdep/kCFI),
# built by scripts/setup.sh --bench-kernel.
KVARIANT="${VMWLCH_KERNEL_VARIANT:-test}"
KFRAGS=("$KFRAG")
[ "$KVARIANT" = test ] || KFRAGS+=("$REPO/kernel/vmwlch-$KVARIANT.config")
# shellcheck disable=SC2034 # used by setup.sh, which sources this
KSRC_TARBALL=/usr/src/linux-source-6.12.tar.xz
TOOLS="$CACHE/tools"
export PATH="$TOOLS/bin:$PATH"

# Kernel builds use Debian's rustc (it has the core/alloc sources the kernel needs);
# user-space crates keep using rustup's cargo/rustc. Clang 19, not bookworm's
# default 14: kCFI with Rust (CONFIG_CFI_CLANG) needs clang >= 19.1.3 under KASAN.
KLLVM=-19
# shellcheck disable=SC2034 # used by setup.sh, which sources this
KMAKE_ARGS=("LLVM=$KLLVM" RUSTC=/usr/bin/rustc BINDGEN="$TOOLS/bin/bindgen")

kernel_src_version() {
    dpkg-query -W -f='${Version}' linux-source-6.12 2>/dev/null || echo unknown
}

# The cache key: everything the kernel build depends on.
kernel_key() {
    {
        kernel_src_version
        cat "${KFRAGS[@]}" | sha256sum | cut -d' ' -f1
        /usr/bin/rustc --version 2>/dev/null
        clang$KLLVM --version 2>/dev/null | head -1
        "$TOOLS/bin/bindgen" --version 2>/dev/null
    } | sha256sum | cut -c1-16
}

kernel_src_dir() { echo "$CACHE/src/linux-source-6.12-$(kernel_src_version)"; }
kernel_build_dir() {
    local v=""
    [ "$KVARIANT" = test ] || v="-$KVARIANT"
    echo "$CACHE/kernel/$(kernel_src_version)-$(kernel_key)$v"
}

log() { printf '\033[1m[%s]\033[0m %s\n' "$(basename "$0")" "$*" >&2; }
die() { printf '\033[31m[%s] error:\033[0m %s\n' "$(basename "$0")" "$*" >&2; exit 1; }

# Build the module (optionally with extra make variables) against the kernel of
# the current variant, in a private copy under the cache; prints the .ko path.
build_module_copy() { # name [VAR=value...]; MODSRC: another copy of ipvs-sched-vmwlch
    local dir="$CACHE/module-$1-$KVARIANT" M="${MODSRC:-$REPO/ipvs-sched-vmwlch}"; shift
    rm -rf "$dir"; mkdir -p "$dir"
    # Sources only: objects and the generated src/layout.rs belong to the
    # kernel they were built for.
    cp -r "$M/Kbuild" "$M/Makefile" "$M/include" "$dir/"
    mkdir "$dir/src"
    find "$M/src" -maxdepth 1 -type f \( -name '*.c' -o -name '*.h' -o -name '*.rs' \) \
        ! -name layout.rs -exec cp {} "$dir/src/" \;
    make -s -C "$dir" KDIR="$(kernel_build_dir)" BINDGEN="$TOOLS/bin/bindgen" "$@" >&2 || return 1
    echo "$dir/ip_vs_vmwlch.ko"
}
