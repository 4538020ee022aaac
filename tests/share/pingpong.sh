#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Unmodified Debian pingpongs (ibverbs-utils) with server and client as two processes on ONE
# host and ONE device: both bind 127.0.0.1:4791, and the kernel's SO_REUSEPORT steering program
# hands each datagram to the process that owns its destination QP (src/host/io/share_group.h).
#   pingpong.sh CASE LIBDIR       CASE: rc | rc_events | uc | ud | srq
#
# Runs in a network namespace of its own with only lo up (port 4791 of the host is not touched),
# with a run-time directory of its own. Both programs use device uroce_lo and the GID index of
# ::ffff:127.0.0.1 read from `ibv_devinfo -v`; the client starts once the server listens (a
# bounded poll of `ss -ltn`, no fixed sleeps); every program runs under `timeout`. Afterwards
# the membership file of the group must be gone (both left it).
# Exits 0 pass, 1 fail, 77 skip (not root, no netns, no ibverbs-utils).
set -u -o pipefail

CASE=$1 LIBDIR=$2

# shellcheck source=../lib/verdict.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/verdict.sh"
[ "$(id -u)" -eq 0 ] || skip "needs root for a network namespace"
command -v ip >/dev/null || skip "no ip command"
command -v ss >/dev/null || skip "no ss command"
command -v ibv_devinfo >/dev/null || skip "ibverbs-utils is not installed"
[ -e "$LIBDIR/libibverbs.so.1" ] || fail "no $LIBDIR/libibverbs.so.1"

T=$(mktemp -d "${TMPDIR:-/tmp}/uroce-share.XXXXXX") || exit 1
NS=uroce-sh-$$
cleanup() {
	for pid in $(jobs -p); do kill "$pid" 2>/dev/null; done
	wait 2>/dev/null
	ip netns del "$NS" 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT

export UROCE_RUNDIR=$T/run # automatic devices only
mkdir "$UROCE_RUNDIR" || exit 1
unset UROCE_PORT # the real port, 4791, shared by both processes
export LD_LIBRARY_PATH=$LIBDIR
san=$(ldd "$LIBDIR/libibverbs.so.1" | awk '/lib(asan|ubsan)\.so/ { print $3 }' | tr '\n' ':')
if [ -n "$san" ]; then
	export LD_PRELOAD=${san%:}
	export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0:exitcode=99"
	export UBSAN_OPTIONS="${UBSAN_OPTIONS:+$UBSAN_OPTIONS:}exitcode=98:print_stacktrace=1"
fi

ip netns add "$NS" 2>/dev/null || skip "cannot create a network namespace"
ip -n "$NS" link set lo up || exit 1
inns() { ip netns exec "$NS" "$@"; }

loader_clean() { # FILE WHAT
	if grep -qE 'version .* not found|no version information|symbol lookup error|Sanitizer|runtime error' "$1"; then
		cat "$1" >&2
		fail "$2: loader or sanitizer messages"
	fi
}

gid=$(inns timeout 20 ibv_devinfo -v -d uroce_lo 2>"$T/gid.err" |
	awk -v want="::ffff:127.0.0.1, RoCE v2" '
		/GID\[ *[0-9]+\]:/ {
			line = $0; sub(/^[ \t]*GID\[ */, "", line); idx = line; sub(/\].*/, "", idx)
			sub(/^[^:]*\]:[ \t]*/, "", line)
			if (line == want) { print idx; exit }
		}')
[ -n "$gid" ] || {
	cat "$T/gid.err" >&2
	fail "no RoCE v2 GID for 127.0.0.1 on uroce_lo"
}

wait_listen() { # PORT SERVER-PID
	for _ in $(seq 100); do
		inns ss -ltnH "sport = :$1" | grep . >/dev/null && return 0
		kill -0 "$2" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}

pingpong() { # PROGRAM PORT EXTRA-ARGS...
	local prog=$1 port=$2
	shift 2
	inns timeout 60 "$prog" -d uroce_lo -g "$gid" -p "$port" -n 500 "$@" \
		>"$T/srv.out" 2>"$T/srv.err" &
	local spid=$!
	wait_listen "$port" "$spid" || {
		cat "$T/srv.out" "$T/srv.err" >&2
		fail "$prog server did not listen on port $port"
	}
	inns timeout 60 "$prog" -d uroce_lo -g "$gid" -p "$port" -n 500 "$@" 127.0.0.1 \
		>"$T/cli.out" 2>"$T/cli.err"
	local cst=$?
	wait "$spid"
	local sst=$?
	echo "--- server ($prog -d uroce_lo -g $gid $*): status $sst"
	cat "$T/srv.out" "$T/srv.err"
	echo "--- client ($prog -d uroce_lo -g $gid $* 127.0.0.1): status $cst"
	cat "$T/cli.out" "$T/cli.err"
	loader_clean "$T/srv.err" "$prog server"
	loader_clean "$T/cli.err" "$prog client"
	[ "$sst" -eq 0 ] || fail "$prog server exited with $sst"
	[ "$cst" -eq 0 ] || fail "$prog client exited with $cst"
	grep -q "500 iters in" "$T/srv.out" || fail "$prog server: no '500 iters in'"
	grep -q "500 iters in" "$T/cli.out" || fail "$prog client: no '500 iters in'"
	# Both left the group: no member remains in any membership file.
	local left
	left=$(find "$UROCE_RUNDIR/share" -path '*/net*/*' -type f 2>/dev/null)
	[ -z "$left" ] || {
		cat $left >&2
		fail "membership file left behind: $left"
	}
}

case $CASE in
rc) pingpong ibv_rc_pingpong 18621 ;;
rc_events) pingpong ibv_rc_pingpong 18622 -e ;;
uc) pingpong ibv_uc_pingpong 18623 ;;
ud) pingpong ibv_ud_pingpong 18624 ;;
srq) pingpong ibv_srq_pingpong 18625 ;;
*)
	echo "usage: pingpong.sh rc|rc_events|uc|ud|srq LIBDIR" >&2
	exit 2
	;;
esac
echo "PASS: $CASE"
exit 0
