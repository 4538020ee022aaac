#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Several processes on ONE RoCE v1 device (AF_PACKET, src/host/io/afpacket.c): each process's socket
# carries a classic BPF filter that keeps the frames of its own QPNs (share_prog.h,
# uroce_v1_filter_prog), and frames sent to the interface's own MAC are delivered locally, taken
# from the kernel as they leave the interface (they never come back from the wire).
#   v1.sh CASE UROCE [TEST_PROGRAM]   TEST_PROGRAM: test_share_v1self for self, test_share_gsi
#                                     for gsi; none for the other cases
#   CASE rc:   unmodified ibv_rc_pingpong, server and client as two processes on the device,
#              each under `uroce run`, -n 200 -c;
#   CASE ud:   the same with ibv_ud_pingpong;
#   CASE self: `test_share_v1self v1dev`: two RC QPs of one process talk through the device;
#   CASE gsi:  `test_share_gsi v1dev v1a`: three processes on the device, two of them claiming
#              CM services; crafted QP1 frames (tagged and untagged) reach the right one only;
#   CASE rc-lo, ud-lo: rc and ud with v1dev on the namespace's loopback device instead (its MAC
#              is all zeros and it brings every frame back up as received: the socket must not
#              also take the outgoing copy, or every packet would arrive twice).
# Afterwards (but for gsi) `uroce stats v1dev` (both processes' counters) must show every packet sent
# received exactly once (sent_pkts == rcvd_pkts, no duplicate) and drop_no_qp 0: no process got
# a frame for another's QP.
#
# A network namespace of its own with a veth pair v1a <-> v1b (198.18.70.1/24 on v1a; nothing
# listens on v1b), device v1dev defined with `uroce link add v1dev netdev v1a roce v1` (netdev
# lo for rc-lo and ud-lo) in a temporary UROCE_RUNDIR, the GID index of the IPv4 RoCE v1 entry
# from `uroce gids`. The client
# starts once the server listens (a bounded poll of `ss -ltn`, no fixed sleeps); every program
# runs under `timeout`. Exits 0 pass, 1 fail, 77 skip (not root, no netns/veth, no
# ibverbs-utils).
set -u -o pipefail

CASE=$1 UROCE=$2 TEST_PROGRAM=${3:-}

# shellcheck source=../lib/verdict.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/verdict.sh"
[ "$(id -u)" -eq 0 ] || skip "needs root (a network namespace, AF_PACKET)"
command -v ip >/dev/null || skip "no ip command (iproute2)"
command -v ss >/dev/null || skip "no ss command (iproute2)"
IF=v1a ADDR=198.18.70.1 GIDV4=0000:0000:0000:0000:0000:ffff:c612:4601
case $CASE in
rc) PROG=ibv_rc_pingpong PORT=18631 ;;
ud) PROG=ibv_ud_pingpong PORT=18632 ;;
rc-lo | ud-lo)
	PROG=ibv_${CASE%-lo}_pingpong PORT=18633
	IF=lo ADDR=127.0.0.1 GIDV4=0000:0000:0000:0000:0000:ffff:7f00:0001
	;;
self | gsi) PROG= ;;
*)
	echo "usage: v1.sh rc|ud|self|gsi|rc-lo|ud-lo UROCE [TEST_PROGRAM]" >&2
	exit 2
	;;
esac
[ -z "$PROG" ] || command -v "$PROG" >/dev/null || skip "$PROG is not installed (ibverbs-utils)"

T=$(mktemp -d "${TMPDIR:-/tmp}/uroce-sv1.XXXXXX") || exit 1
NS=uroce-sv1-$$
cleanup() {
	for pid in $(jobs -p); do kill "$pid" 2>/dev/null; done
	wait 2>/dev/null
	ip netns del "$NS" 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 143' TERM INT HUP PIPE

export UROCE_RUNDIR=$T/run
mkdir "$UROCE_RUNDIR" || exit 1
# A sanitizer build: `uroce run` preloads the runtime itself (run.c).
if ldd "$(dirname "$UROCE")/lib/libibverbs.so.1" 2>/dev/null | grep -E 'lib(asan|ubsan)\.so' >/dev/null; then
	export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0:exitcode=99"
	export UBSAN_OPTIONS="${UBSAN_OPTIONS:+$UBSAN_OPTIONS:}exitcode=98:print_stacktrace=1"
fi

ip netns add "$NS" 2>/dev/null || skip "cannot create a network namespace"
inns() { ip netns exec "$NS" "$@"; }
ip -n "$NS" link set lo up || exit 1
ip -n "$NS" link add v1a type veth peer name v1b 2>/dev/null || skip "no veth support"
ip -n "$NS" link set v1a mtu 9000 addrgenmode none up || exit 1
ip -n "$NS" link set v1b mtu 9000 addrgenmode none up || exit 1
ip -n "$NS" addr add 198.18.70.1/24 dev v1a || exit 1
MAC=$(inns ip -br link show v1a | awk '{ print $3 }')
[ -n "$MAC" ] || fail "no MAC for v1a"
# The device's own IPv4 address has no neighbour entry; the device sends frames for its own
# addresses to its own MAC (ctx.c v1_dmac), so no entry is added here.

inns "$UROCE" link add v1dev netdev $IF roce v1 || fail "uroce link add v1dev netdev $IF roce v1"
GID=$(inns "$UROCE" gids v1dev 2>"$T/gid.err" |
	awk -F'\t' -v g=$GIDV4 '$4 == g && $(NF - 1) == "v1" { print $3; exit }')
[ -n "$GID" ] || {
	cat "$T/gid.err" >&2
	inns "$UROCE" gids v1dev >&2
	fail "v1dev: no RoCE v1 GID for $ADDR"
}

loader_clean() { # FILE WHAT
	if grep -qE 'version .* not found|no version information|symbol lookup error|Sanitizer|runtime error' "$1"; then
		cat "$1" >&2
		fail "$2: loader or sanitizer messages"
	fi
}

wait_listen() { # PORT SERVER-PID
	for _ in $(seq 200); do
		inns ss -ltnH "sport = :$1" | grep . >/dev/null && return 0
		kill -0 "$2" 2>/dev/null || return 1
		sleep 0.05
	done
	return 1
}

counter() { # NAME: from `uroce stats v1dev`
	awk -v n="$1" '$1 == n { print $2; found = 1 } END { if (!found) print "missing" }' "$T/stats"
}

if [ -n "$PROG" ]; then
	ITERS=200
	inns timeout 60 "$UROCE" run -- "$PROG" -d v1dev -g "$GID" -p "$PORT" -n $ITERS -c \
		>"$T/srv.out" 2>"$T/srv.err" &
	spid=$!
	wait_listen "$PORT" "$spid" || {
		cat "$T/srv.out" "$T/srv.err" >&2
		fail "$PROG server did not listen on port $PORT"
	}
	inns timeout 60 "$UROCE" run -- "$PROG" -d v1dev -g "$GID" -p "$PORT" -n $ITERS -c $ADDR \
		>"$T/cli.out" 2>"$T/cli.err"
	cst=$?
	[ "$cst" -eq 0 ] || kill "$spid" 2>/dev/null
	wait "$spid"
	sst=$?
	echo "--- server: uroce run -- $PROG -d v1dev -g $GID -p "$PORT" -n $ITERS -c: status $sst"
	cat "$T/srv.out" "$T/srv.err"
	echo "--- client: uroce run -- $PROG -d v1dev -g $GID -p "$PORT" -n $ITERS -c $ADDR: status $cst"
	cat "$T/cli.out" "$T/cli.err"
	loader_clean "$T/srv.err" "$PROG server"
	loader_clean "$T/cli.err" "$PROG client"
	[ "$sst" -eq 0 ] || fail "$PROG server exited with $sst"
	[ "$cst" -eq 0 ] || fail "$PROG client exited with $cst"
	for side in srv cli; do
		grep -q "^$ITERS iters in" "$T/$side.out" || fail "$PROG $side: no '$ITERS iters in'"
		! grep -qiE 'invalid data|failed|error' "$T/$side.out" "$T/$side.err" ||
			fail "$PROG $side: data validation (-c) or other errors reported"
	done
elif [ "$CASE" = gsi ]; then
	inns timeout 100 "$TEST_PROGRAM" v1dev v1a || fail "test_share_gsi v1dev v1a"
	echo "PASS: v1 gsi"
	exit 0
else
	inns timeout 60 "$TEST_PROGRAM" v1dev || fail "test_share_v1self v1dev"
fi

# Both processes (or the one) have closed the device: their counters are in the run-time
# directory.
inns "$UROCE" stats v1dev >"$T/stats" 2>&1 || {
	cat "$T/stats" >&2
	fail "uroce stats v1dev"
}
sent=$(counter sent_pkts) rcvd=$(counter rcvd_pkts) noqp=$(counter drop_no_qp)
dup=$(counter duplicate_request) dupr=$(counter drop_duplicate_resp)
echo "uroce stats v1dev: sent_pkts $sent rcvd_pkts $rcvd drop_no_qp $noqp duplicate_request $dup drop_duplicate_resp $dupr"
[ "$noqp" = 0 ] || fail "drop_no_qp is $noqp: a process received frames for another's QPs"
[ "$dup" = 0 ] && [ "$dupr" = 0 ] || fail "duplicates received (local delivery twice?)"
[ "$sent" != missing ] && [ "$sent" -gt 0 ] && [ "$sent" = "$rcvd" ] ||
	fail "sent $sent packets, received $rcvd: each should arrive exactly once"
echo "PASS: v1 $CASE"
exit 0
