#!/usr/bin/env bash
# Interop with Debian's keepalived (VRRPv3, 100 ms adverts): keepalived has
# the higher priority. keepalive stays backup (receiving valid adverts), takes
# over when keepalived is killed, and yields when keepalived returns.
source "$(dirname "$0")/../lib.sh"
source "$REPO/tests/keepalive/netns.sh"
KA_HIGH=kd
source "$REPO/tests/keepalive/interop.sh"
