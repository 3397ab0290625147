#!/usr/bin/env bash
# vm-env: VM_TIMEOUT=900
# The Debian packages installed, on the test kernel. The installation ran on
# the host (tests/pkg/install-root.sh: dpkg -i of the five packages into an
# overlay of the host's root, DKMS building ip_vs_vmwlch for this kernel
# from its build tree; the same script checks dpkg -r and --purge), because
# the Rust build under emulation takes half an hour. What the installation
# changed (target/debian/installed.tar) becomes this VM's root's upper
# layer; here the installed system must work: the module DKMS built loads
# (modprobe; IPVS's autoload by scheduler name, vmwlch and the vmwlc alias),
# our ipvsadm lists byte-identically to Debian's, keepalive --check accepts
# the installed example and the README's first configuration, host-agent
# answers as its unit runs it (unprivileged, no capabilities) while its
# installed options file leaves the unit unstarted, and the manual pages,
# completions, units and modprobe files are in place.
#
# The guest's root is the host's, read-only: /usr, /etc, /var/lib,
# /var/cache and /boot get an overlay (upper layers in /run, a tmpfs, filled
# from installed.tar), so nothing reaches the host.
set -euo pipefail
source "$(dirname "$0")/../lib.sh"
in_vm || skip "runs in the test VM (scripts/vm.sh -- $0)"
DEBS="$REPO/target/debian"
[ -s "$DEBS/installed.tar" ] || fail "$DEBS/installed.tar is missing: tests/pkg/install-root.sh makes it (scripts/test.sh runs it after scripts/package.sh)"
[ -n "${VMWLCH_KBUILD:-}" ] || fail "VMWLCH_KBUILD (the test kernel's build tree) is not set: run through scripts/vm.sh"
# The packaged tools, not the repository's build (vm.sh puts it first in PATH).
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive
# dkms uses <(...): the guest's /dev has no /dev/fd of its own.
[ -e /dev/fd ] || ln -s /proc/self/fd /dev/fd
HOSTROOT=/dev/shm/hostroot   # vm-init.sh's view of the host's root, read-only
DEB_IPVSADM="$HOSTROOT/usr/sbin/ipvsadm"
[ -x "$DEB_IPVSADM" ] || fail "Debian's ipvsadm is not installed on the host (scripts/setup.sh installs it)"
rel="$(uname -r)"
OVL=(usr etc var/lib var/cache boot)
WORKDIR="$(mktemp -d /run/pkgtest.XXXXXX)"

# Each upper layer starts as the installation left it on the host.
mkdir "$WORKDIR/all"
tar -C "$WORKDIR/all" --numeric-owner --xattrs --xattrs-include='trusted.overlay.*' \
    -xpf "$DEBS/installed.tar" || fail "unpacking installed.tar"
for d in "${OVL[@]}"; do
    u="$WORKDIR/${d//\//_}"
    mkdir -p "$u/work"
    if [ -d "$WORKDIR/all/$d" ]; then mv "$WORKDIR/all/$d" "$u/upper"; else mkdir "$u/upper"; fi
    mount -t overlay overlay -o "lowerdir=$HOSTROOT/$d,upperdir=$u/upper,workdir=$u/work" "/$d"
done

[ -d "/lib/modules/$rel/updates" ] || fail "installed.tar has no module for $rel (made for another kernel? run tests/pkg/install-root.sh again)"
t=$SECONDS
ko="/lib/modules/$rel/updates/dkms/ip_vs_vmwlch.ko"
[ "$(modinfo -n ip_vs_vmwlch)" = "$ko" ] || fail "modinfo does not find the DKMS module at $ko"
modprobe ip_vs_vmwlch
grep -q '^ip_vs_vmwlch ' /proc/modules || fail "modprobe ip_vs_vmwlch did not load it"
rmmod ip_vs_vmwlch
# /sbin/ipvsadm is ours (the path Debian's package used: not lost when dpkg
# removed that package, although /sbin is /usr/sbin on disk).
[ "$(readlink -f /sbin/ipvsadm)" = /usr/sbin/ipvsctl ] || fail "/sbin/ipvsadm is $(readlink -f /sbin/ipvsadm), not ipvsctl"
# IPVS accepts real servers only at addresses it can route to.
ip link set lo up
ip route add 10.1.0.0/24 dev lo
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
[ "$(grep -c '^-a' "$WORKDIR/debian")" = 3 ] || fail "ipvsadm-restore did not add the 3 real servers: $(cat "$WORKDIR/debian")"
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
    /usr/share/man/man8/keepalive.8.gz /lib/systemd/system/keepalive.service /lib/modprobe.d/ip-vs-vmwlch.conf \
    /usr/share/man/man8/host-agent.8.gz /lib/systemd/system/host-agent.service /etc/default/host-agent; do
    [ -s "$f" ] || fail "$f is missing"
done

# host-agent: the unit runs the installed binary with the options file's
# HOST_AGENT_OPTS, which the package leaves empty (its ExecCondition then
# skips the start: no agent on 0.0.0.0 unconfigured).
[ -x /usr/sbin/host-agent ] || fail "/usr/sbin/host-agent is missing"
unit=$'\n'"$(< /lib/systemd/system/host-agent.service)"$'\n'
for l in 'EnvironmentFile=-/etc/default/host-agent' 'ExecStart=/usr/sbin/host-agent $HOST_AGENT_OPTS' \
    "ExecCondition=/bin/sh -c 'test -n \"\$\$HOST_AGENT_OPTS\"'" 'DynamicUser=yes' 'CapabilityBoundingSet='; do
    [[ "$unit" == *$'\n'"$l"$'\n'* ]] || fail "host-agent.service has no line $l"
done
(HOST_AGENT_OPTS=x; . /etc/default/host-agent; [ -z "$HOST_AGENT_OPTS" ]) ||
    fail "/etc/default/host-agent does not leave HOST_AGENT_OPTS empty (the unit would start unconfigured)"
host-agent --help > /dev/null || fail "host-agent --help failed"
rc=0; host-agent --host t1 --no-such-option 2>/dev/null || rc=$?
[ "$rc" = 2 ] || fail "host-agent with a bad option: status $rc, expected 2"
# As the unit runs it: another user than root (DynamicUser=), no capabilities
# (CapabilityBoundingSet=), NoNewPrivileges=; it reads /proc and answers.
port=17070
setpriv --reuid=65534 --regid=65534 --clear-groups --no-new-privs --bounding-set=-all --inh-caps=-all \
    host-agent --host t1 --listen "127.0.0.1:$port" --vm 10.9.9.9 --period-ms 100 2> "$WORKDIR/agent.log" &
agent=$!
on_exit "kill $agent 2>/dev/null"
exec {nap}<> <(:)   # read -t on it: a 100 ms wait without starting a process
for ((i = 0; ; i++)); do
    { exec {conn}<>"/dev/tcp/127.0.0.1/$port"; } 2>/dev/null && break
    kill -0 "$agent" 2>/dev/null || fail "host-agent exited: $(< "$WORKDIR/agent.log")"
    [ "$i" -lt 300 ] || fail "host-agent does not answer on 127.0.0.1:$port after 30 s: $(< "$WORKDIR/agent.log")"
    read -rt 0.1 -u "$nap" || true
done
echo >&"$conn"   # not "report": the agent-check line
IFS= read -rt 10 -u "$conn" line || fail "no agent-check line from host-agent"
exec {conn}<&-
[[ "$line" =~ ^[0-9]+%$ ]] || fail "host-agent's agent-check line is '$line', not a percentage"
exec {conn}<>"/dev/tcp/127.0.0.1/$port"
echo report >&"$conn"
IFS= read -rt 10 -u "$conn" report || fail "no report from host-agent"
exec {conn}<&-
[[ "$report" == '{"host":"t1",'*'"addrs":["10.9.9.9"]'*'}' ]] || fail "host-agent's report is not t1's with VM 10.9.9.9: '$report'"
kill "$agent"
rc=0; wait "$agent" || rc=$?
[ "$rc" = 143 ] || fail "host-agent exited with status $rc before SIGTERM: $(< "$WORKDIR/agent.log")"
log "host-agent (uid 65534, no capabilities): agent-check '$line', report $report"

log "the installed system works (checks took $((SECONDS - t)) s; whole test $SECONDS s)"
