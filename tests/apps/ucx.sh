#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# UCX (Debian's 1.13) over uroce between two network namespaces, each side an unmodified UCX
# program under `uroce run`:
#   - ucx_info -d lists rc_verbs and ud_verbs on the namespace's uroce device, and UCX picks the
#     device's RoCE v2 IPv4 GID;
#   - ucx_perftest tag_lat, tag_bw, ucp_put_lat, ucp_put_bw and stream_bw over rc_verbs (with
#     ud_verbs, UCX's auxiliary transport for connecting rc) and over ud_verbs alone; each run
#     completes and reports a latency or a bandwidth above zero;
#   - io_demo, UCX's client/server by address (its rdmacm connection manager only), reads and
#     writes with its data integrity check (-q) over rc_verbs and over ud_verbs;
#   - as an ordinary user: one ucx_perftest and one io_demo run.
#   ucx.sh UROCE
set -u -o pipefail

UROCE=$1
# shellcheck source=../run/lib.sh
. "$(dirname "$0")/../run/lib.sh"
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

need_root_netns
command -v ucx_perftest >/dev/null && command -v io_demo >/dev/null ||
	skip "ucx-utils is not installed"
netns_setup

PORT=13337

# One ucx_perftest: the server in b, the client in a; prints the client's Final line.
perftest() { # TLS TEST ARGS...
	local tls=$1 test=$2 spid st
	shift 2
	PORT=$((PORT + 1))
	ucx_cmd b "$tls" '' ucx_perftest -p $PORT
	"${CMD[@]}" >"$T/srv.out" 2>&1 &
	spid=$!
	wait_listen b $PORT $spid || {
		cat "$T/srv.out" >&2
		fail "ucx_perftest server ($tls $test) did not listen"
	}
	ucx_cmd a "$tls" '' ucx_perftest "$B4" -p $PORT -t "$test" "$@"
	"${CMD[@]}" >"$T/cli.out" 2>&1
	st=$?
	wait_exit $spid 20 >/dev/null 2>&1
	local sst=$?
	[ $st -eq 0 ] && [ $sst -eq 0 ] || {
		grep -h "uroce: run:" "$T/srv.out" "$T/cli.out" >&2
		tail -n 5 "$T/srv.out" "$T/cli.out" >&2
		fail "ucx_perftest $tls $test $*: client exited $st, server $sst"
	}
	loader_clean "$T/cli.out" "ucx_perftest $test"
	# Final: iterations, latency 50%/avg/overall (us), bandwidth avg/overall (MB/s), rates
	local line
	line=$(grep '^Final:' "$T/cli.out") || fail "ucx_perftest $tls $test: no Final line"
	echo "$tls $test $*: $line"
	echo "$line" | awk '{ exit !($4 > 0 && $6 > 0) }' ||
		fail "ucx_perftest $tls $test: a zero in '$line'"
}

# io_demo: server in b, client in a, reads and writes of 1 KiB..64 KiB, data checked (-q).
io_demo_run() { # TLS ITERATIONS
	local tls=$1 spid st opts=(-d 1024:65536 -o read,write -q)
	PORT=$((PORT + 1))
	ucx_cmd b "$tls" '' io_demo -p $PORT "${opts[@]}"
	"${CMD[@]}" >"$T/iosrv.out" 2>&1 &
	spid=$!
	# It listens with rdma_cm (TCP port space) only: no TCP socket.
	wait_cm_listen "$RUNB" 0x0106 $PORT $spid || {
		tail -n 5 "$T/iosrv.out" >&2
		fail "io_demo server ($tls) did not listen"
	}
	ucx_cmd a "$tls" '' io_demo -p $PORT "${opts[@]}" -i "$2" -P 100s "$B4"
	"${CMD[@]}" >"$T/iocli.out" 2>&1
	st=$?
	kill $spid 2>/dev/null
	wait_exit $spid 20 >/dev/null 2>&1
	grep -E '\[DEMO\] total' "$T/iocli.out" | tail -n 1
	[ $st -eq 0 ] || {
		tail -n 8 "$T/iosrv.out" "$T/iocli.out" >&2
		fail "io_demo over $tls: client exited $st"
	}
	# -q: io_demo checks every buffer it receives and logs "data corruption" on a mismatch.
	# (Its "Request canceled" and "Connection reset" lines are the client's disconnection.)
	local bad='corruption|Assertion|Aborted|UCX  ERROR|Sanitizer'
	grep -qE "$bad" "$T/iocli.out" "$T/iosrv.out" && {
		grep -E "$bad" "$T/iocli.out" "$T/iosrv.out" | head >&2
		fail "io_demo over $tls reported errors"
	}
	grep -qE 'read [0-9.]+ MBs.*write [0-9.]+ MBs' "$T/iocli.out" ||
		fail "io_demo over $tls: no read and write rates"
}

echo "--- ucx_info -d"
ucx_cmd a rc_verbs,ud_verbs '' ucx_info -d
"${CMD[@]}" >"$T/info.out" 2>&1 || fail "ucx_info -d failed"
for tl in rc_verbs ud_verbs; do
	grep -A1 "Transport: $tl" "$T/info.out" | grep -q "Device: uroce_a0:1" ||
		fail "ucx_info -d: no $tl on uroce_a0:1"
done
# The GID UCX uses: the device's RoCE v2 GID of A4 (UCX's default is RoCE v2, IPv4 first).
want=$(gid_index a uroce_a0 "::ffff:$A4" v2)
ucx_cmd a ud_verbs '' env UCX_LOG_LEVEL=debug ucx_info -e -u t
"${CMD[@]}" >"$T/gid.out" 2>&1
grep -q "uroce_a0:1 using gid_index $want" "$T/gid.out" ||
	fail "UCX did not pick GID $want (RoCE v2, $A4): $(grep -m1 'gid_index' "$T/gid.out")"

echo "--- ucx_perftest, rc_verbs"
perftest rc_verbs,ud_verbs tag_lat -n 2000
perftest rc_verbs,ud_verbs tag_bw -s 65536 -n 500
perftest rc_verbs,ud_verbs ucp_put_lat -n 2000
perftest rc_verbs,ud_verbs ucp_put_bw -s 65536 -n 500
perftest rc_verbs,ud_verbs stream_bw -s 65536 -n 500
echo "--- ucx_perftest, ud_verbs"
perftest ud_verbs tag_lat -n 2000
perftest ud_verbs tag_bw -s 65536 -n 500
perftest ud_verbs ucp_put_lat -n 2000
perftest ud_verbs ucp_put_bw -s 65536 -n 500
perftest ud_verbs stream_bw -s 65536 -n 500
echo "--- io_demo (rdmacm connection manager), data checked"
io_demo_run rc_verbs,ud_verbs 500
io_demo_run ud_verbs 300

echo "--- as an ordinary user"
if command -v setpriv >/dev/null && id nobody >/dev/null 2>&1; then
	chmod 755 "$T"
	RUNA=$T/user-a RUNB=$T/user-b
	mkdir "$RUNA" "$RUNB" && chown nobody "$RUNA" "$RUNB" || exit 1
	AS=(setpriv --reuid=nobody --regid=nogroup --clear-groups)
	perftest rc_verbs,ud_verbs tag_lat -n 1000
	io_demo_run rc_verbs,ud_verbs 200
	grep -q "no /sys/class/infiniband view" "$T/iocli.out" &&
		echo "note: no view as an ordinary user here: $(grep -m1 'no /sys' "$T/iocli.out")"
else
	echo "no setpriv or no user nobody: the ordinary user's run is skipped"
fi
echo PASS
