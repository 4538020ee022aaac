#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# UDP GRO on a device several processes share (src/host/io/udp.c): a datagram holding several
# RoCE v2 packets reaches the member the steering program picks from its first packet, so with
# several members GRO may be on only where every such datagram is one of uroce's own GSO sends
# (one member's packets): on an interface that merges nothing itself.
#   gro_shared.sh UROCE
# Scenario, namespace b sharing uroce_b0 between two ibv_rc_pingpong servers (one waits idle, a
# member of the group all along), 64 KiB messages at path MTU 4096 from namespace a:
#  1. b0's own GRO off (veth's default): the second server receives whole GSO sends
#     (io_rx_gro_recvs grows) and its pingpong validates.
#  2. `ethtool -K b0 gro on`, a third server: the group has members again, and now its sockets
#     take one datagram per packet (io_rx_gro_recvs does not grow); the pingpong validates.
# Exits 0 pass, 1 fail, 77 skip (not root, no veth).
set -u -o pipefail

UROCE=$1
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

need_root_netns
need_ibverbs_utils
command -v ethtool >/dev/null || fail "ethtool is not installed: run scripts/setup"
netns_setup

inb ethtool -k b0 | grep -q '^generic-receive-offload: off' ||
	fail "b0 (veth) does GRO from the start: $(inb ethtool -k b0 | grep generic-receive)"
GA=$(gid_index a uroce_a0 "::ffff:$A4" v2) || exit 1
GB=$(gid_index b uroce_b0 "::ffff:$B4" v2) || exit 1
ARGS=(-s 65536 -n 200 -m 4096 -c)

gro_recvs() { inb "$UROCE" stats uroce_b0 | awk '$1 == "io_rx_gro_recvs" { print $2 }'; }

server() { # PORT: starts a server in b, sets SPID
	inb timeout 60 "$UROCE" run -- ibv_rc_pingpong -d uroce_b0 -g "$GB" -p "$1" "${ARGS[@]}" \
		>"$T/srv.$1.out" 2>&1 &
	SPID=$!
	wait_listen b "$1" $SPID || {
		cat "$T/srv.$1.out" >&2
		fail "ibv_rc_pingpong server on port $1 did not listen"
	}
}

pingpong() { # PORT SERVER-PID
	local cst sst
	ina timeout 60 "$UROCE" run -- ibv_rc_pingpong -d uroce_a0 -g "$GA" -p "$1" "${ARGS[@]}" \
		"$B4" >"$T/cli.$1.out" 2>&1
	cst=$?
	[ "$cst" -eq 0 ] || kill "$2" 2>/dev/null
	wait "$2"
	sst=$?
	cat "$T/srv.$1.out" "$T/cli.$1.out"
	[ "$sst" -eq 0 ] && [ "$cst" -eq 0 ] || fail "ibv_rc_pingpong on port $1: server $sst, client $cst"
}

# A second server on PORT shares the device with the idle one; one pingpong with it, and
# io_rx_gro_recvs before and after must compare with OP (-gt: grew, -eq: unchanged).
shared_pingpong() { # PORT WHAT OP FAILURE
	local before after
	server "$1"
	before=$(gro_recvs)
	pingpong "$1" $SPID
	after=$(gro_recvs)
	echo "$2, two members: io_rx_gro_recvs $before -> $after"
	[ "$after" "$3" "$before" ] || fail "$4"
}

server 18601
idle=$SPID
shared_pingpong 18602 "interface GRO off" -gt \
	"GSO sends were not received whole by a member of a shared group"
inb ethtool -K b0 gro on >/dev/null || fail "ethtool -K b0 gro on"
shared_pingpong 18603 "interface GRO on" -eq \
	"GRO stayed on in a shared group on an interface that merges packets"

kill "$idle"
wait "$idle" 2>/dev/null
echo "PASS"
