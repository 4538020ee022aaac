#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Debian's unmodified qperf 0.4.11 over uroce between two network namespaces (tests/run/lib.sh):
# the server (`qperf`) in a, each client run in b, both under `uroce run`.
#   qperf.sh UROCE
#
# qperf's RDMA tests set their QPs up in one of two ways:
# - with -cm1 (RC tests only), through rdma_cm: the client resolves the server's address, so the
#   QPs carry a GRH with RoCE GIDs. rc_lat (8 B), rc_bw, rc_rdma_write_bw and rc_rdma_read_bw
#   (64 KiB) must each complete, print a non-zero figure and exit 0, and the client must end
#   its connection (DREQ, and the DREP from the server's child process as it exits) promptly.
# - without it (every UD and UC test, and RC without -cm1), from the exchanged LIDs alone: an
#   address without a GRH, which a RoCE port refuses (the kernel's rdma_check_ah_attr, EINVAL),
#   so ud_lat and uc_lat cannot run on any RoCE device. They must fail at once with qperf's
#   message for that EINVAL, as they do on Linux's Soft-RoCE and RoCE NICs, not hang.
# tcp_lat runs too, as the reference path on the same veth.
#
# Each test runs 1 s (-t 1). Exits 0 pass, 1 fail, 77 skip (not root, no netns/veth, no qperf).
set -u -o pipefail

UROCE=$1
# shellcheck source=../run/lib.sh
. "$(dirname "$0")/../run/lib.sh"

need_root_netns
command -v qperf >/dev/null || skip "qperf is not installed (Debian package qperf)"
netns_setup

PORT=19765
# The server forks a child per test; the child opens the device. Not through ina: $! must be
# the server's own process, for the kill below.
ip netns exec "$NSA" env UROCE_RUNDIR="$RUNA" timeout -k 5 120 \
	"$UROCE" run -- qperf -lp $PORT >"$T/srv.out" 2>&1 &
spid=$!
wait_listen a $PORT $spid || {
	cat "$T/srv.out" >&2
	fail "the qperf server did not listen on port $PORT"
}

# One client run: qperf ARGS, with a deadline; its output in $T/cli.out, its status in $st.
client() {
	inb timeout -k 5 30 "$UROCE" run -- qperf -lp $PORT -t 1 "$A4" "$@" >"$T/cli.out" 2>&1
	st=$?
	echo "--- qperf $*: status $st"
	cat "$T/cli.out"
	loader_clean "$T/cli.out" "qperf $*"
}

# The figure of a test's "latency =" or "bw =" line, in us or MB/s, from the last client run.
figure() { # latency|bw
	awk -v k="$1" '
		$1 == k && $2 == "=" {
			v = $3; u = $4
			if (u == "ns") v /= 1000; else if (u == "ms") v *= 1000; else if (u == "sec") v *= 1e6
			if (u == "KB/sec") v /= 1000; else if (u == "GB/sec") v *= 1000
			print v; exit
		}' "$T/cli.out"
}

# A test that must complete with a non-zero figure.
must_run() { # KIND(latency|bw) TEST ARGS...
	local kind=$1 test=$2 v
	shift 2
	client "$@" "$test"
	[ "$st" -eq 0 ] || fail "qperf $test exited $st (124: it did not end within 30 s)"
	v=$(figure "$kind")
	[ -n "$v" ] || fail "qperf $test printed no $kind"
	awk -v v="$v" 'BEGIN { exit !(v > 0) }' || fail "qperf $test: $kind $v"
	grep -qiE 'failed|error|timed out' "$T/cli.out" && fail "qperf $test reports an error"
	echo "result: $test $kind $v $([ "$kind" = latency ] && echo us || echo MB/s)"
}

must_run latency rc_lat -cm1 -m 8
must_run bw rc_bw -cm1 -m 64k
must_run bw rc_rdma_write_bw -cm1 -m 64k
must_run bw rc_rdma_read_bw -cm1 -m 64k
must_run latency tcp_lat -m 8

# Tests qperf addresses by LID: refused as RoCE refuses them, quickly and by name.
for t in ud_lat uc_lat; do
	t0=$(date +%s)
	client -m 8 "$t"
	el=$(($(date +%s) - t0))
	[ "$st" -ne 0 ] || fail "qperf $t over RoCE exited 0 (it addresses the peer by LID only)"
	if [ "$st" -eq 124 ] || [ "$el" -ge 20 ]; then
		fail "qperf $t did not fail promptly (${el} s)"
	fi
	case $t in
	ud_lat) want='failed to create address handle: Invalid argument' ;;
	uc_lat) want='failed to modify QP to RTR' ;;
	esac
	grep -qF "$want" "$T/cli.out" || fail "qperf $t: expected \"$want\""
done

# The server survived every test, its children included, and still listens.
kill -0 $spid 2>/dev/null || {
	cat "$T/srv.out" >&2
	fail "the qperf server ended"
}
loader_clean "$T/srv.out" "qperf server"
echo "PASS: qperf rc_lat rc_bw rc_rdma_write_bw rc_rdma_read_bw tcp_lat; ud_lat and uc_lat refused"
exit 0
