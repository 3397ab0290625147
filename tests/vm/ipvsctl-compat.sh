#!/usr/bin/env bash
# Inside the VM: differential test of ipvsctl (run as `ipvsadm`) against Debian's
# ipvsadm. For a corpus of configurations covering every option (and random
# ones), configure with either tool, then list/save with both and compare the
# bytes; invalid commands must give the same message and exit status.
source "$(dirname "$0")/../lib.sh"
set +e  # the commands under test fail on purpose
in_vm || skip "run through scripts/vm.sh"
need_root
REAL=/usr/sbin/ipvsadm
[ -x "$REAL" ] || skip "Debian's ipvsadm is not installed"
[ -x "$BIN/ipvsctl" ] || skip "build target/release/ipvsctl first"

W="$(mktemp -d)"
on_exit "rm -rf '$W'"

NS=ipvsctl-compat
PART="${IPVSCTL_COMPAT_PART:-}"
if [ -z "$PART" ]; then
    # Two halves at once, each in a namespace of its own (IPVS state is per
    # namespace): each half is a sequence of process starts, which keeps one
    # of the VM's two vCPUs busy. Entering a namespace once per half also
    # saves a process per command.
    for n in corpus cli; do
        mkns "$NS-$n"
        ip -n "$NS-$n" link add d0 type dummy
        ip -n "$NS-$n" link set d0 up
        ip -n "$NS-$n" addr add 10.0.0.254/8 dev d0
        ip -n "$NS-$n" addr add 192.168.0.254/16 dev d0
        ip -n "$NS-$n" addr add 172.16.0.254/12 dev d0
        ip -n "$NS-$n" -6 addr add 2001:db8::fe/64 dev d0 nodad
    done
    IPVSCTL_COMPAT_PART=corpus ip netns exec "$NS-corpus" bash "$0" "$@" & pc=$!
    IPVSCTL_COMPAT_PART=cli ip netns exec "$NS-cli" bash "$0" "$@" & pl=$!
    wait $pc; rc=$?
    wait $pl; rl=$?
    [ "$rc" = 0 ] || fail "the corpus half found differences from Debian's ipvsadm (above)"
    [ "$rl" = 0 ] || fail "the command-line half found differences from Debian's ipvsadm (above)"
    exit 0
fi
TEST_NAME="$TEST_NAME/$PART"

# Both run with argv[0] = "ipvsadm", so usage texts agree.
A() { (exec -a ipvsadm "$REAL" "$@"); }            # Debian's
B() { (exec -a ipvsadm "$BIN/ipvsctl" "$@"); }     # ours

FAILS=0
CHECKS=0
bad() { log "MISMATCH: $*"; FAILS=$((FAILS + 1)); }

# compare_run ARGS...: same stdout, stderr and status from both tools.
compare_run() {
    local ra rb
    A "$@" >"$W/a.out" 2>"$W/a.err" </dev/null; ra=$?
    B "$@" >"$W/b.out" 2>"$W/b.err" </dev/null; rb=$?
    CHECKS=$((CHECKS + 1))
    if [ "$ra" != "$rb" ] || ! cmp -s "$W/a.out" "$W/b.out" || ! cmp -s "$W/a.err" "$W/b.err"; then
        bad "ipvsadm $* (status $ra vs $rb)"
        diff -u "$W/a.out" "$W/b.out" | head -20 >&2
        diff -u "$W/a.err" "$W/b.err" | head -20 >&2
    fi
}

LISTINGS=(
    "-Ln" "-Sn" "-Ln --stats" "-Ln --rate" "-Ln --thresholds" "-Ln --persistent-conn"
    "-Ln --tun-info" "-Ln --nosort" "-L --timeout" "-lnc" "-L -n --stats --exact --nosort"
)

compare_listings() {
    local l
    for l in "${LISTINGS[@]}"; do
        # shellcheck disable=SC2086
        compare_run $l
    done
}

# compare_listings_batch: the same listings as one restore stream per tool
# (two processes instead of 22: start-up is what costs under emulation); the
# concatenated output, stderr and status must agree.
compare_listings_batch() {
    local ra rb
    printf '%s\n' "${LISTINGS[@]}" >"$W/listings"
    A -R <"$W/listings" >"$W/a.out" 2>"$W/a.err"; ra=$?
    B -R <"$W/listings" >"$W/b.out" 2>"$W/b.err"; rb=$?
    CHECKS=$((CHECKS + 1))
    if [ "$ra" != "$rb" ] || ! cmp -s "$W/a.out" "$W/b.out" || ! cmp -s "$W/a.err" "$W/b.err"; then
        bad "listings as a restore stream (status $ra vs $rb)"
        diff -u "$W/a.out" "$W/b.out" | head -20 >&2
        diff -u "$W/a.err" "$W/b.err" | head -20 >&2
    fi
}

# apply_with TOOL FILE: run each line of FILE with TOOL, status must agree
# with the other tool's (checked separately).
apply_with() {
    local tool=$1 file=$2 line
    while IFS= read -r line; do
        [ -z "$line" ] && continue
        # shellcheck disable=SC2086
        $tool $line >>"$W/apply.out" 2>&1 </dev/null
        echo "$? $line" >>"$W/apply.$tool"
    done <"$file"
}

# apply_batch TOOL FILE: FILE as one restore stream; its status and stderr
# go where apply_with's per-line statuses go.
apply_batch() {
    local tool=$1 file=$2
    $tool -R <"$file" >>"$W/apply.out" 2>"$W/apply.err.$tool"
    echo "$? restore" >>"$W/apply.$tool"
    cat "$W/apply.err.$tool" >>"$W/apply.$tool"
}

# corpus_case NAME FILE [batch]: configure with either tool, compare. One
# process per line and per listing by default; "batch" sends the file and the
# listings as restore streams (for the random rounds, whose lines are all
# valid: the per-line error paths are the full corpus's and the invalid list's).
corpus_case() {
    local name=$1 file=$2 apply=apply_with listings=compare_listings
    [ "${3:-}" = batch ] && { apply=apply_batch; listings=compare_listings_batch; }
    : >"$W/apply.A"; : >"$W/apply.B"
    A -C; $apply A "$file"; A -Sn >"$W/state.A"
    $listings
    A -C; $apply B "$file"; B -Sn >"$W/state.B"
    $listings
    CHECKS=$((CHECKS + 1))
    cmp -s "$W/apply.A" "$W/apply.B" || { bad "$name: status differs"; diff "$W/apply.A" "$W/apply.B" >&2; }
    cmp -s "$W/state.A" "$W/state.B" || { bad "$name: state differs"; diff "$W/state.A" "$W/state.B" >&2; }
    # -S / -R round trips both ways.
    A -C; A -R <"$W/state.A" >/dev/null 2>&1; B -Sn >"$W/rt1"
    A -C; B -R <"$W/state.A" >/dev/null 2>&1; A -Sn >"$W/rt2"
    CHECKS=$((CHECKS + 2))
    cmp -s "$W/state.A" "$W/rt1" || { bad "$name: ipvsadm -R then ipvsctl -S"; diff "$W/state.A" "$W/rt1" >&2; }
    cmp -s "$W/state.A" "$W/rt2" || { bad "$name: ipvsctl -R then ipvsadm -S"; diff "$W/state.A" "$W/rt2" >&2; }
    A -C
}

part_corpus() {
# --- the corpus: every option of -A/-E/-D/-a/-e/-d/-Z/--set -----------------------
cat >"$W/c1" <<'C'
-A -t 10.0.0.1:80 -s rr
-A -t 10.0.0.1:443 -s wlc -p
-A -t 10.0.0.2:80 -s wrr -p 600 -M 255.255.255.0
-A -u 10.0.0.1:53 -s sh -b sh-fallback,sh-port -o
-A -u 10.0.0.3:53 -s mh -b mh-fallback -o
-A --sctp-service 10.0.0.4:2905 -s lc
-A -t 10.0.0.5:0 -s sed -p 30
-A -f 7 -s nq
-A -f 8 -6 -s fo -p 100 -M 64
-A -f 9 -s ovf -o
-A -t [2001:db8::1]:80 -s lblc -p 200 -M 96
-A -u [2001:db8::1]:53 -s lblcr
-A -t 10.0.0.6:80 -s dh -b flag-1,flag-2,flag-3
-A -t 10.0.0.7:80 -s twos
-A -t 10.0.0.8:80 -s rr --pe sip -p
-a -t 10.0.0.1:80 -r 192.168.1.10:80 -g -w 2
-a -t 10.0.0.1:80 -r 192.168.1.11 -m -w 0
-a -t 10.0.0.1:80 -r 192.168.1.12:8080 -m -w 3 -x 100 -y 10
-a -t 10.0.0.1:80 -r 192.168.1.13 -i -w 65535
-a -t 10.0.0.1:443 -r 10.1.0.1:443 -g
-a -t 10.0.0.1:443 -r 172.16.5.5:443 -m
-a -u 10.0.0.1:53 -r 192.168.2.1:5353 -m
-a -u 10.0.0.1:53 -r 192.168.2.2:53
-a -f 7 -r 10.1.0.5:0 -i -w 1 --tun-type gue --tun-port 6080 --tun-nocsum
-a -f 7 -r 10.1.0.6 -i --tun-type gue --tun-port 6081 --tun-csum
-a -f 7 -r 10.1.0.7 -i --tun-type gue --tun-port 6082 --tun-remcsum
-a -f 7 -r 10.1.0.8 -i --tun-type gre --tun-csum
-a -f 7 -r 10.1.0.9 -i --tun-type gre
-a -f 7 -r 10.1.0.10 -i --tun-type ipip
-a -f 7 -r 10.1.0.11 -m
-a -f 8 -6 -r [2001:db8::20]:0 -i
-a -t [2001:db8::1]:80 -r [2001:db8::10]:80 -m -w 5
-a -t [2001:db8::1]:80 -r [2001:db8::11]:8080 -m
-a -t [2001:db8::1]:80 -r 192.168.3.3 -i
-a -u [2001:db8::1]:53 -r [2001:db8::12] -g
-a --sctp-service 10.0.0.4:2905 -r 192.168.4.4 -m
-e -t 10.0.0.1:80 -r 192.168.1.11 -m -w 7
-e -t 10.0.0.1:80 -r 192.168.1.13 -i -w 4 -x 50 -y 5
-E -t 10.0.0.2:80 -s rr -p 700 -M 255.255.0.0
-E -t 10.0.0.6:80 -s sh -b sh-port
-d -t 10.0.0.1:443 -r 10.1.0.1:443
-D -t 10.0.0.7:80
-Z
-Z -t 10.0.0.1:80
-A -t 10.0.0.1:80
-a -t 10.0.0.1:80 -r 192.168.1.10:80
-D -t 10.9.9.9:80
-d -t 10.0.0.1:80 -r 192.168.9.9
-e -t 10.0.0.1:80 -r 192.168.9.9
-a -t 10.9.9.9:80 -r 192.168.9.9
-a -t 10.0.0.1:80 -r 192.168.1.20 -x 5 -y 10
-A -t 10.0.0.9:80 -s nosuchsched
-E -t 10.9.9.9:80 -s rr
-Z -t 10.9.9.9:80
-a -t 10.0.0.1:80 -r 127.0.0.1
C
corpus_case "full corpus" "$W/c1"

# --- numeric limits, accepted: every bound a number can take (Debian's ipvsadm
# accepts a weight up to INT_MAX, which ipvsctl once refused) -----------------------
cat >"$W/limits" <<'C'
-A -t 10.0.0.30:80 -s rr -p 1
-A -t 10.0.0.31:80 -s rr -p 2678400
-A -t 10.0.0.32:65535 -s wlc
-A -f 2147483647 -s rr
-A -f 1 -s rr
-A -t 10.1.1.1:80 -s rr
-a -t 10.1.1.1:80 -r 10.2.0.30 -w 70000
-a -t 10.0.0.30:80 -r 192.168.6.1 -w 0
-a -t 10.0.0.30:80 -r 192.168.6.2 -w 65536
-a -t 10.0.0.30:80 -r 192.168.6.3 -w 2147483647
-a -t 10.0.0.30:80 -r 192.168.6.4:65535 -m -x 2147483647 -y 0
-a -t 10.0.0.30:80 -r 192.168.6.5 -m -x 0 -y 2147483647
-a -f 2147483647 -r 10.1.0.12 -i --tun-type gue --tun-port 65535 --tun-csum
-a -f 2147483647 -r 10.1.0.13 -i --tun-type gue --tun-port 1 --tun-nocsum
-e -t 10.0.0.30:80 -r 192.168.6.1 -w 2147483647
C
corpus_case "numeric limits" "$W/limits" batch
# A mark above 2^31-1: ipvsadm lists and saves it signed (-1), and its own -R
# refuses that, so it has no round trip; the listings must still agree.
A -A -f 4294967295 -s rr
A -a -f 4294967295 -r 10.1.0.14 -i
compare_run -Ln
compare_run -Sn
compare_run -L -f 4294967295
A -C

# --- random configurations ----------------------------------------------------------
RANDOM=4242
SCHEDS=(rr wrr lc wlc lblc lblcr dh sh sed nq fo ovf mh twos)
for round in 1 2 3; do
    : >"$W/r$round"
    for _ in $(seq 1 $((RANDOM % 12 + 3))); do
        proto=$(( RANDOM % 3 ))
        case $proto in
            0) svc="-t 10.$((RANDOM % 256)).$((RANDOM % 256)).$((RANDOM % 255 + 1)):$((RANDOM % 65535 + 1))" ;;
            1) svc="-u [2001:db8::$(printf %x $((RANDOM)))]:$((RANDOM % 65535 + 1))" ;;
            2) svc="-f $((RANDOM * 7 + 1))" ;;
        esac
        opts="-s ${SCHEDS[RANDOM % ${#SCHEDS[@]}]}"
        [ $((RANDOM % 3)) = 0 ] && opts+=" -p $((RANDOM % 1000 + 1))"
        echo "-A $svc $opts" >>"$W/r$round"
        for _ in $(seq 0 $((RANDOM % 5))); do
            case $proto in
                1) dst="[2001:db8::$(printf %x $((RANDOM)))]:$((RANDOM % 65535 + 1))" ;;
                *) dst="192.168.$((RANDOM % 256)).$((RANDOM % 254 + 1)):$((RANDOM % 65535 + 1))" ;;
            esac
            fwd=(-g -m -i); f=${fwd[RANDOM % 3]}
            echo "-a $svc -r $dst $f -w $((RANDOM % 100))" >>"$W/r$round"
        done
    done
    corpus_case "random $round" "$W/r$round" batch
done

# --- restore with errors in the middle and a parse error at the end -----------------
printf '%s\n' "-A -t 10.0.0.20:80" "-A -t 10.0.0.20:80" "-a -t 10.0.0.20:80 -r 192.168.5.5" \
    "-a -t 10.0.0.99:80 -r 192.168.5.5" "" "ipvsadm -a -t 10.0.0.20:80 -r 192.168.5.6 -w 9" >"$W/rest1"
printf '%s\n' "-A -t 10.0.0.21:80" "-A -t 10.0.0.22:80 -b bogus" "-A -t 10.0.0.23:80" >"$W/rest2"
printf '%s\n' "-A -t 10.0.0.24:80" "-A -t 10.0.0.25:80 --bogus" "-L -n --nonsense" "-A -t 10.0.0.26:80" >"$W/rest3"
for f in rest1 rest2 rest3; do
    A -C; A -R <"$W/$f" >"$W/a.out" 2>"$W/a.err"; ra=$?; A -Sn >"$W/a.state"
    A -C; B -R <"$W/$f" >"$W/b.out" 2>"$W/b.err"; rb=$?; A -Sn >"$W/b.state"
    CHECKS=$((CHECKS + 1))
    if [ "$ra" != "$rb" ] || ! cmp -s "$W/a.err" "$W/b.err" || ! cmp -s "$W/a.state" "$W/b.state"; then
        bad "restore $f (status $ra vs $rb)"; diff "$W/a.err" "$W/b.err" >&2; diff "$W/a.state" "$W/b.state" >&2
    fi
done
}

part_cli() {
# --- invalid commands: same message, same status -----------------------------------
A -C
A -A -t 10.0.0.1:80 -s rr
A -a -t 10.0.0.1:80 -r 192.168.1.10
while IFS= read -r line; do
    # shellcheck disable=SC2086
    compare_run $line
done <<'C'
-A
-A -t
-A -t 10.0.0.1
-A -t 10.0.0.1:80 -A
-A -t 10.0.0.1:80 -r 1.1.1.1
-A -t 10.0.0.1:80 -o
-A -t 1.2.3.4:99999
-A -t 10.0.0.2:80 -s rr -s wlc
-A -t 10.0.0.2:80 -p 0
-A -t 10.0.0.2:80 -p 9999999
-A -t 10.0.0.2:80 -b foo
-A -t 10.0.0.2:80 -b sh-port
-A -t 10.0.0.2:80 -6
-A -f 0
-A -f -5
-A -f 1 -6 -M 200
-A -t 10.0.0.2:80 -M 1.2.3.4.5
-A -t 10.0.0.2:80 --mcast-group 224.0.0.1
-a -t 10.0.0.1:80 -r 5.6.7.8 -w 2147483648
-a -t 10.0.0.1:80 -r 5.6.7.8 -w -1
-a -t 10.0.0.1:80 -r 5.6.7.8 -x 2147483648
-a -t 10.0.0.1:80 -r 5.6.7.8 -y 2147483648
-A -t 10.0.0.2:80 -p 2678401
-A -f 4294967296
-A -t 10.0.0.2:65536
-a -t 10.0.0.1:80 -r 5.6.7.8 -i --tun-type gue --tun-port 65536
-a -t 10.0.0.1:80 -r 5.6.7.8 -i --tun-type gue --tun-port 0
--start-daemon master --syncid -1
--start-daemon master --mcast-port 65536
--start-daemon master --mcast-ttl 0
--start-daemon master --sync-maxlen 65508
--start-daemon master --sync-maxlen 0
--set 2678401 1 1
--set -1 1 1
-a -t 10.0.0.1:80 -r 5.6.7.8 -w x
-a -t 10.0.0.1:80 -r 5.6.7.8 -x -1
-a -t 10.0.0.1:80 -r [::1]:80 -m
-a -t 10.0.0.1:80 -r 5.6.7.8 --tun-type gue
-a -t 10.0.0.1:80 -r 5.6.7.8 -i --tun-type gue
-a -t 10.0.0.1:80 -r 5.6.7.8 -i --tun-type foo
-a -t 10.0.0.1:80 -r 5.6.7.8 -i --tun-port 5
-a -t 10.0.0.1:80 -r 5.6.7.8 -i --tun-type gue --tun-port 5 --tun-csum --tun-remcsum
-a -t 10.0.0.1:80 -r 5.6.7.8 -i --tun-type gre --tun-remcsum
-a -t 10.0.0.1:80
-d -t 10.0.0.1:80 -r 5.6.7.8 -w 3
-L -c --timeout
-L --timeout --stats
-L --daemon --persistent-conn
-L -t 10.0.0.9:80
-L foo
-Ln -n
-S -c
-C -n
-R -n
-Z -r 1.2.3.4
--set 1 2
--set 1 2 x
--set 1 2 3 4
--start-daemon foo
--stop-daemon foo
--start-daemon master --mcast-group 1.2.3.4
--start-daemon master --mcast-group ff02::1:x
--start-daemon master --syncid 256
--start-daemon master --mcast-port 0
--start-daemon master --mcast-ttl 300
--start-daemon master --sync-maxlen 70000
--stop-daemon master
-L -A
-L --bogus
--bogus
-t 1.2.3.4:80
-Lq
--list=3
-h
-v
--help
--version
-A -t 10.0.0.1:80 -s rr
-a -t 10.0.0.1:80 -r 192.168.1.10
-E -t 10.0.0.9:80
-D -t 10.0.0.9:80
C

# --- sync daemons and timeouts, set by either tool, listed by both ----------------
for tool in A B; do
    $tool --start-daemon master --mcast-interface d0 --syncid 5
    $tool --start-daemon backup --mcast-interface d0 --syncid 7 --mcast-group 224.0.0.82 \
        --mcast-port 8849 --mcast-ttl 2 --sync-maxlen 1400
    compare_run -L --daemon
    compare_run --start-daemon master --mcast-interface d0
    $tool --stop-daemon master; $tool --stop-daemon backup
    compare_run -L --daemon
    $tool --set 1000 100 200
    compare_run -L --timeout
    $tool --set 0 0 0
    compare_run -L --timeout
    $tool --set 900 120 300
done

# --- names: the default (non-numeric) listing and save ------------------------------
A -C
A -A -t 127.0.0.1:80 -s rr
A -a -t 127.0.0.1:80 -r 127.0.0.1:80
A -A -u 10.0.0.1:53 -s rr
A -A -t 10.0.0.1:22 -s rr -p
compare_run -L
compare_run -S
compare_run
}

A -C
"part_$PART"
A -C
log "$CHECKS comparisons, $FAILS mismatches"
[ "$FAILS" = 0 ] || fail "$FAILS differences from Debian's ipvsadm"
