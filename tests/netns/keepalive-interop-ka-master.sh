#!/usr/bin/env bash
# Interop with Debian's keepalived (VRRPv3, 100 ms adverts): keepalive has the
# higher priority. It is elected, keepalived takes over when keepalive is
# killed, and the restarted keepalive preempts back; no invalid adverts.
source "$(dirname "$0")/../lib.sh"
source "$REPO/tests/keepalive/netns.sh"
KA_HIGH=ka
source "$REPO/tests/keepalive/interop.sh"
