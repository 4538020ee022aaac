#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Unmodified Debian binaries (ibverbs-utils) over uroce's libibverbs.so.1:
#   binaries.sh CASE LIBDIR
# CASE: devices | devinfo | rc | rc_events | uc | ud | srq
#
# Each case runs in network namespaces of its own, so it neither sees nor disturbs the host's
# interfaces or another test's UDP port 4791: "devices"/"devinfo" in one namespace with only lo
# up; the pingpongs as two processes in two namespaces joined by a veth pair (198.18.10.1 and
# .2), the server on device uroce_a0 and the client on uroce_b0, each with the GID index of its
# IPv4 address read from `ibv_devinfo -v`. Every program runs under `timeout`; the client starts
# once the server listens (a bounded poll of `ss -ltn`, no fixed sleeps).
# Exits 0 pass, 1 fail, 77 skip (not root, no netns/veth, no ibverbs-utils).
set -u -o pipefail

CASE=$1 LIBDIR=$2

# shellcheck source=../lib/verdict.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/verdict.sh"
[ "$(id -u)" -eq 0 ] || skip "needs root for network namespaces"
command -v ip >/dev/null || skip "no ip command"
command -v ss >/dev/null || skip "no ss command"
command -v ibv_devinfo >/dev/null || skip "ibverbs-utils is not installed"
[ -e "$LIBDIR/libibverbs.so.1" ] || fail "no $LIBDIR/libibverbs.so.1"

T=$(mktemp -d "${TMPDIR:-/tmp}/uroce-compat.XXXXXX") || exit 1
NSA=uroce-ca-$$ NSB=uroce-cb-$$
cleanup() {
	for pid in $(jobs -p); do kill "$pid" 2>/dev/null; done
	wait 2>/dev/null
	ip netns del "$NSA" 2>/dev/null
	ip netns del "$NSB" 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT

export UROCE_RUNDIR=$T/run # automatic devices only, whatever the host has defined
mkdir "$UROCE_RUNDIR" || exit 1
export LD_LIBRARY_PATH=$LIBDIR
# A sanitizer build of the library needs its runtime loaded first into a program built without.
san=$(ldd "$LIBDIR/libibverbs.so.1" | awk '/lib(asan|ubsan)\.so/ { print $3 }' | tr '\n' ':')
if [ -n "$san" ]; then
	export LD_PRELOAD=${san%:}
	# The Debian programs do not free everything before exit; our own leaks show in the C tests.
	export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0:exitcode=99"
	export UBSAN_OPTIONS="${UBSAN_OPTIONS:+$UBSAN_OPTIONS:}exitcode=98:print_stacktrace=1"
fi

ip netns add "$NSA" 2>/dev/null || skip "cannot create a network namespace"
ip -n "$NSA" link set lo up || exit 1

inns() { # NS CMD...: run in a namespace
	local ns=$1
	shift
	ip netns exec "$ns" "$@"
}

# The loader must find every symbol at its version: no "version ... not found", no
# "no version information available", no "symbol lookup error".
loader_clean() { # FILE WHAT
	if grep -qE 'version .* not found|no version information|symbol lookup error|Sanitizer|runtime error' "$1"; then
		cat "$1" >&2
		fail "$2: loader or sanitizer messages"
	fi
}

gid_index() { # NS DEV IPV4: the index of ::ffff:IPV4 (RoCE v2) in DEV's table, from ibv_devinfo -v
	inns "$1" timeout 20 ibv_devinfo -v -d "$2" 2>"$T/gid.err" |
		awk -v want="::ffff:$3, RoCE v2" '
			/GID\[ *[0-9]+\]:/ {
				line = $0; sub(/^[ \t]*GID\[ */, "", line); idx = line; sub(/\].*/, "", idx)
				sub(/^[^:]*\]:[ \t]*/, "", line)
				if (line == want) { print idx; exit }
			}'
}

veth_pair() {
	ip netns add "$NSB" 2>/dev/null || skip "cannot create a second network namespace"
	ip -n "$NSB" link set lo up || exit 1
	ip -n "$NSA" link add a0 type veth peer name b0 2>/dev/null || skip "no veth support"
	ip -n "$NSA" link set b0 netns "$NSB" || exit 1
	# MTU 9000: active MTU 4096, so ibv_ud_pingpong's default 2048-byte messages fit.
	# No IPv6 link-local address: while it is tentative (DAD) the device cannot bind it.
	ip -n "$NSA" link set a0 mtu 9000 addrgenmode none up || exit 1
	ip -n "$NSB" link set b0 mtu 9000 addrgenmode none up || exit 1
	ip -n "$NSA" addr add 198.18.10.1/24 dev a0 || exit 1
	ip -n "$NSB" addr add 198.18.10.2/24 dev b0 || exit 1
}

wait_listen() { # NS PORT SERVER-PID
	for _ in $(seq 100); do
		inns "$1" ss -ltnH "sport = :$2" | grep . >/dev/null && return 0
		kill -0 "$3" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}

pingpong() { # PROGRAM PORT EXTRA-ARGS...
	local prog=$1 port=$2
	shift 2
	veth_pair
	local ga gb
	ga=$(gid_index "$NSA" uroce_a0 198.18.10.1)
	gb=$(gid_index "$NSB" uroce_b0 198.18.10.2)
	[ -n "$ga" ] && [ -n "$gb" ] || {
		cat "$T/gid.err" >&2
		fail "no RoCE v2 GID for the veth addresses"
	}
	inns "$NSA" timeout 60 "$prog" -d uroce_a0 -g "$ga" -p "$port" -n 100 "$@" \
		>"$T/srv.out" 2>"$T/srv.err" &
	local spid=$!
	wait_listen "$NSA" "$port" "$spid" || {
		cat "$T/srv.out" "$T/srv.err" >&2
		fail "$prog server did not listen on port $port"
	}
	inns "$NSB" timeout 60 "$prog" -d uroce_b0 -g "$gb" -p "$port" -n 100 "$@" 198.18.10.1 \
		>"$T/cli.out" 2>"$T/cli.err"
	local cst=$?
	wait "$spid"
	local sst=$?
	echo "--- server ($prog -d uroce_a0 -g $ga $*): status $sst"
	cat "$T/srv.out" "$T/srv.err"
	echo "--- client ($prog -d uroce_b0 -g $gb $* 198.18.10.1): status $cst"
	cat "$T/cli.out" "$T/cli.err"
	loader_clean "$T/srv.err" "$prog server"
	loader_clean "$T/cli.err" "$prog client"
	[ "$sst" -eq 0 ] || fail "$prog server exited with $sst"
	[ "$cst" -eq 0 ] || fail "$prog client exited with $cst"
	grep -q "100 iters in" "$T/srv.out" || fail "$prog server: no '100 iters in'"
	grep -q "100 iters in" "$T/cli.out" || fail "$prog client: no '100 iters in'"
}

case $CASE in
devices)
	inns "$NSA" timeout 20 ibv_devices >"$T/out" 2>"$T/err"
	st=$?
	cat "$T/out" "$T/err"
	loader_clean "$T/err" ibv_devices
	[ "$st" -eq 0 ] || fail "ibv_devices exited with $st"
	grep -qE '^[[:space:]]+uroce_lo[[:space:]]+[0-9a-f]{16}$' "$T/out" ||
		fail "ibv_devices does not list uroce_lo with a GUID"
	;;
devinfo)
	inns "$NSA" timeout 20 ibv_devinfo -v -d uroce_lo >"$T/out" 2>"$T/err"
	st=$?
	cat "$T/out" "$T/err"
	loader_clean "$T/err" ibv_devinfo
	[ "$st" -eq 0 ] || fail "ibv_devinfo exited with $st"
	for want in 'hca_id:[[:space:]]+uroce_lo$' 'transport:[[:space:]]+InfiniBand \(0\)$' \
		'vendor_id:[[:space:]]+0xffffff$' 'vendor_part_id:[[:space:]]+0$' \
		'phys_port_cnt:[[:space:]]+1$' 'atomic_cap:[[:space:]]+ATOMIC_HCA' \
		'state:[[:space:]]+PORT_ACTIVE \(4\)$' 'active_mtu:[[:space:]]+4096 \(5\)$' \
		'link_layer:[[:space:]]+Ethernet$' 'GID\[ *[0-9]+\]:[[:space:]]+fe80::.*, RoCE v2$' \
		'GID\[ *[0-9]+\]:[[:space:]]+::ffff:127\.0\.0\.1, RoCE v2$' \
		'GID\[ *[0-9]+\]:[[:space:]]+::1, RoCE v2$'; do
		grep -qE "$want" "$T/out" || fail "ibv_devinfo -v: no line matching '$want'"
	done
	;;
rc) pingpong ibv_rc_pingpong 18611 ;;
rc_events) pingpong ibv_rc_pingpong 18612 -e ;;
uc) pingpong ibv_uc_pingpong 18613 ;;
ud) pingpong ibv_ud_pingpong 18614 ;;
srq) pingpong ibv_srq_pingpong 18615 ;;
*)
	echo "usage: binaries.sh devices|devinfo|rc|rc_events|uc|ud|srq LIBDIR" >&2
	exit 2
	;;
esac
echo "PASS: $CASE"
exit 0
