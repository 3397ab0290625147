#!/usr/bin/env bash
# The VM runs the cached 6.12 test kernel with Rust, IPVS and the bug detectors.
source "$(dirname "$0")/../lib.sh"
need_root
rel="$("$REPO/scripts/vm.sh" -- uname -r)" || fail "vm.sh -- uname -r failed"
log "guest kernel: $rel"
[[ "$rel" =~ ^6\.12\. ]] || fail "expected a 6.12 kernel, got '$rel'"
[ "$rel" != "$(uname -r)" ] || fail "guest reports the host's kernel release"
