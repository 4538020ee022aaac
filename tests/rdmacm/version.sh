#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# The RoCE version configuration scenario (issue 5), with unmodified rping, between two
# namespaces:
#   version.sh UROCE SCAPY_ICRC CASE
# v1server  A dual-mode client device (RoCE v1 and v2, default mode v2) against a RoCE v1-only
#           server device: the connection fails with UNREACHABLE within the configured CM
#           timeout, rping exits non-zero, the server logs the ignored RoCE v2 request with the
#           fix; after `uroce mode -d <client dev> -p 1 -m 1` the same client connects over RoCE v1
#           and transfers data (capture: RoCE v1 frames). Clearing the run-time directory (the
#           analogue of a reboot) restores the default mode, RoCE v2.
# v2server  A client in RoCE v1 mode against a RoCE v2-only server: UNREACHABLE, symmetrically.
# gateway   A client in RoCE v1 mode whose route to the server goes through a gateway: RoCE v2 is
#           used anyway (v1 cannot be routed), and the connection works.
set -u -o pipefail

UROCE=$1 SCAPY_ICRC=$2 CASE=$3
# shellcheck source=../run/lib.sh
. "$(dirname "$0")/../run/lib.sh"

need_root_netns
command -v rping >/dev/null || skip "rdmacm-utils is not installed"
netns_setup

export UROCE_CM_TIMEOUT_MS=200 UROCE_CM_RETRIES=3
# The bound the failure must come within: 4 tries of 200 ms, plus start-up.
LIMIT_S=10
PORT=7174

start_server() { # ADDR
	inb timeout 120 "$UROCE" run --pcap "$T/srv.pcap" -- rping -s -v -a "$1" -p $PORT -C 10 \
		>"$T/srv.out" 2>"$T/srv.err" &
	spid=$!
	wait_cm_listen "$RUNB" 0x0106 $PORT $spid || {
		cat "$T/srv.out" "$T/srv.err" >&2
		fail "rping server did not listen"
	}
}

client() { # NAME ADDR: runs rping -c, sets cst and secs
	local t0
	t0=$(date +%s%N)
	ina timeout 60 "$UROCE" run --pcap "$T/$1.pcap" -- rping -c -v -a "$2" -p $PORT -C 10 \
		>"$T/$1.out" 2>"$T/$1.err"
	cst=$?
	secs=$((($(date +%s%N) - t0) / 1000000000))
	echo "--- client $1 (rping -c -a $2): status $cst after ${secs}s"
	tail -n 4 "$T/$1.out" "$T/$1.err"
	loader_clean "$T/$1.err" "rping client"
}

expect_unreachable() { # NAME WHAT
	[ "$cst" -ne 0 ] || fail "$2: rping client succeeded; expected a failure"
	[ "$cst" -ne 124 ] || fail "$2: rping client hung (killed by timeout)"
	[ "$secs" -le $LIMIT_S ] || fail "$2: the failure took ${secs}s (limit ${LIMIT_S}s)"
	grep -q 'RDMA_CM_EVENT_UNREACHABLE' "$T/$1.out" "$T/$1.err" ||
		fail "$2: rping did not report RDMA_CM_EVENT_UNREACHABLE"
}

expect_data() { # NAME WHAT
	[ "$cst" -eq 0 ] || fail "$2: rping client exited with $cst"
	n=$(grep -c '^ping data: rdma-ping-' "$T/$1.out")
	[ "$n" -eq 10 ] || fail "$2: $n ping data lines, expected 10"
}

mode() { # a|b DEV
	in$1 "$UROCE" mode -d "$2" -p 1
}

case $CASE in
v1server)
	inb "$UROCE" link add urv1_b0 netdev b0 roce v1 || fail "uroce link add urv1_b0"
	ina "$UROCE" link add ura_a0 netdev a0 roce v1,v2 || fail "uroce link add ura_a0"
	echo "client device ura_a0 default mode: $(mode a ura_a0)"
	mode a ura_a0 | grep -qx 'RoCE v2' || fail "ura_a0 does not start in RoCE v2 mode"
	start_server "$B4"
	client v2 "$B4"
	expect_unreachable v2 "RoCE v2 client, v1-only server"
	grep -q 'urv1_b0: ignored a RoCE v2 connection request from 198.18.10.1' "$T/srv.err" ||
		fail "the server did not log the ignored RoCE v2 request"
	grep -q 'uroce mode -d <device> -p 1 -m 1' "$T/srv.err" || fail "the server's log names no fix"
	grep 'ignored a RoCE v2' "$T/srv.err" | head -1
	ina "$UROCE" mode -d ura_a0 -p 1 -m 1 || fail "uroce mode -m 1"
	mode a ura_a0 | grep -qx 'IB/RoCE v1' || fail "ura_a0 mode is not RoCE v1 after -m 1"
	client v1 "$B4"
	expect_data v1 "RoCE v1 client, v1-only server"
	wait_exit "$spid" 30 || fail "rping server exited with $? (124: still running)"
	check_capture "$T/v1.pcap" v1 10 || exit 1
	# The analogue of a reboot: a fresh run-time directory, the device defined again.
	rm -rf "${RUNA:?}"/*
	ina "$UROCE" link add ura_a0 netdev a0 roce v1,v2 || fail "uroce link add ura_a0 (again)"
	mode a ura_a0 | grep -qx 'RoCE v2' || fail "the default mode did not come back after clearing"
	echo "after clearing the run-time directory: $(mode a ura_a0)"
	;;
v2server)
	inb "$UROCE" link add urv2_b0 netdev b0 roce v2 || fail "uroce link add urv2_b0"
	ina "$UROCE" link add ura_a0 netdev a0 roce v1,v2 || fail "uroce link add ura_a0"
	ina "$UROCE" mode -d ura_a0 -p 1 -m 1 || fail "uroce mode -m 1"
	start_server "$B4"
	client v1 "$B4"
	expect_unreachable v1 "RoCE v1 client, v2-only server"
	ina "$UROCE" mode -d ura_a0 -p 1 -m 2 || fail "uroce mode -m 2"
	client v2 "$B4"
	expect_data v2 "RoCE v2 client, v2-only server"
	wait_exit "$spid" 30 || fail "rping server exited with $? (124: still running)"
	;;
gateway)
	# 198.18.20.2 is B's, reached from A through the gateway 198.18.10.2.
	ip -n "$NSB" addr add 198.18.20.2/32 dev b0 || exit 1
	ip -n "$NSA" route add 198.18.20.0/24 via $B4 || exit 1
	inb "$UROCE" link add urb_b0 netdev b0 roce v1,v2 || fail "uroce link add urb_b0"
	ina "$UROCE" link add ura_a0 netdev a0 roce v1,v2 || fail "uroce link add ura_a0"
	ina "$UROCE" mode -d ura_a0 -p 1 -m 1 || fail "uroce mode -m 1"
	start_server 198.18.20.2
	client gw 198.18.20.2
	expect_data gw "RoCE v1-mode client through a gateway"
	wait_exit "$spid" 30 || fail "rping server exited with $? (124: still running)"
	check_capture "$T/gw.pcap" v2v4 10 || exit 1
	;;
*) fail "unknown case '$CASE'" ;;
esac
echo PASS
