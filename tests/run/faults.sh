#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Fault injection on a real backend, as an application tester uses it:
#   faults.sh UROCE SPEC_A SPEC_B ARGS...
# ibv_rc_pingpong between two namespaces joined by veth (RoCE v2/IPv4), both sides under
# `uroce run --faults SPEC` (loss, reordering, ...: each side its own seed) and the server under
# --pcap too. It must complete and validate (-c) within a bounded time: RC retransmits what was
# lost (timeout 14 as ibv_rc_pingpong sets it: 67 ms) and orders what was reordered. The device
# counters (`uroce stats`) show the retransmissions, so the faults really happened; the capture,
# taken under the fault injector, still has only valid packets.
# Exits 0 pass, 1 fail, 77 skip.
set -u -o pipefail

UROCE=$1 SPEC_A=$2 SPEC_B=$3
shift 3
SCAPY_ICRC=
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

need_root_netns
need_ibverbs_utils
netns_setup
GA=$(gid_index a uroce_a0 ::ffff:$A4 v2) || exit 1
GB=$(gid_index b uroce_b0 ::ffff:$B4 v2) || exit 1
iters=1000
prev=
for a in "$@"; do
	[ "$prev" = -n ] && iters=$a
	prev=$a
done
PORT=18515

start=$(date +%s)
ina timeout 240 "$UROCE" run --faults "$SPEC_A" --pcap "$T/a.pcap" -- ibv_rc_pingpong -d uroce_a0 \
	-g "$GA" -p $PORT -c "$@" >"$T/srv.out" 2>"$T/srv.err" &
spid=$!
wait_listen a $PORT $spid || {
	cat "$T/srv.out" "$T/srv.err" >&2
	fail "server did not listen on port $PORT"
}
inb timeout 240 "$UROCE" run --faults "$SPEC_B" -- ibv_rc_pingpong -d uroce_b0 -g "$GB" -p $PORT \
	-c "$@" $A4 >"$T/cli.out" 2>"$T/cli.err" &
cpid=$!
# Until one of the two ends (bounded by their timeouts).
while kill -0 "$cpid" 2>/dev/null && kill -0 "$spid" 2>/dev/null; do
	timeout 0.05 tail -f /dev/null
done
# A side still running 10 s after its peer ended retransmits its last SEND for ever:
# its peer's ACK was lost to the faults before the peer exited, nobody answers, and RC retries
# without end (retry_cnt 7, as ibv_rc_pingpong sets it, is unbounded on rxe and here). That is
# the protocol, not a failure of the stack: the side must then have received every message (its
# counters, flushed each second: rdma_recvs = iters) with no error printed; it is stopped and its
# own summary line is not required. Returns 0 in that case, 1 when the process ended by itself
# (its status is then the one `wait` gives).
last_send_unacked() { # NAME a|b DEVICE PID
	local recvs
	wait_exit "$4" 10 2>/dev/null
	[ $? -eq 124 ] || return 1
	recvs=$("in$2" "$UROCE" stats "$3" | awk '$1 == "rdma_recvs" { print $2 }')
	echo "--- $1 still running 10 s after its peer ended; it received ${recvs:-?} of $iters"
	[ "${recvs:-0}" -eq "$iters" ] || fail "$1 stuck before receiving all $iters messages"
	kill "$4" 2>/dev/null
}
# The client, still retransmitting after the server ended?
lastack_cli=0
last_send_unacked client b uroce_b0 "$cpid" && lastack_cli=1
wait "$cpid"
cst=$?
[ "$lastack_cli" -eq 0 ] || cst=0
# A client that failed leaves the server waiting for it: stop it now rather than at its timeout.
[ "$cst" -eq 0 ] || kill "$spid" 2>/dev/null
# A client that passed may leave the server retransmitting its last SEND.
lastack=0
[ "$cst" -eq 0 ] && last_send_unacked server a uroce_a0 "$spid" && lastack=1
wait "$spid"
sst=$?
[ "$lastack" -eq 0 ] || sst=0
echo "--- server: uroce run --faults $SPEC_A --pcap a.pcap -- ibv_rc_pingpong -g $GA -c $*: status $sst"
cat "$T/srv.out" "$T/srv.err"
echo "--- client: uroce run --faults $SPEC_B -- ibv_rc_pingpong -g $GB -c $* $A4: status $cst"
cat "$T/cli.out" "$T/cli.err"
echo "--- $(($(date +%s) - start)) s"
loader_clean "$T/srv.err" server
loader_clean "$T/cli.err" client
[ "$sst" -eq 0 ] || fail "server exited with $sst"
[ "$cst" -eq 0 ] || fail "client exited with $cst"
for side in srv cli; do
	if { [ "$side" = srv ] && [ "$lastack" -eq 1 ]; } || { [ "$side" = cli ] && [ "$lastack_cli" -eq 1 ]; }; then
		echo "$side: its last SEND unacknowledged (see above)"
	else
		grep -q "^$iters iters in" "$T/$side.out" || fail "$side: no '$iters iters in'"
	fi
	! grep -qiE 'invalid data|failed|error' "$T/$side.out" "$T/$side.err" ||
		fail "$side: data validation (-c) or other errors reported"
done

# The counters each process flushed to its run-time directory when it closed the device.
retx=0
for side in a b; do
	echo "--- uroce stats ($side)"
	in$side "$UROCE" stats >"$T/stats.$side" || fail "uroce stats ($side)"
	grep -E 'retransmitted_pkts|rcvd_seq_err|out_of_seq_request|duplicate_request|sent_naks|rcvd_naks|local_ack_timeout_err|drop_|fault_' "$T/stats.$side"
	n=$(awk '$1 == "retransmitted_pkts" { print $2 }' "$T/stats.$side")
	retx=$((retx + ${n:-0}))
done
[ "$retx" -gt 0 ] || fail "no packet was retransmitted: were faults injected?"
# The sockets' own counters: what one side's injector corrupted, the other side dropped for its
# ICRC.
icrc_drops() { awk '$1 == "io_rx_drop_icrc" { print $2 }' "$T/stats.$1"; }
case $SPEC_A in *corrupt=*)
	n=$(icrc_drops b)
	[ "${n:-0}" -gt 0 ] || fail "the server corrupts, but the client counted no io_rx_drop_icrc" ;;
esac
case $SPEC_B in *corrupt=*)
	n=$(icrc_drops a)
	[ "${n:-0}" -gt 0 ] || fail "the client corrupts, but the server counted no io_rx_drop_icrc" ;;
esac

# The tap sits under the fault injector: it records what really left (corrupted packets with
# their bad ICRC) and what the backend accepted (valid ICRCs only). So the capture has bad ICRCs
# exactly when the server's SPEC corrupts, and never a malformed packet.
"$UROCE" pcap-check -q "$T/a.pcap" >"$T/check.out" 2>&1
st=$?
tail -n 1 "$T/check.out"
summary=$(tail -n 1 "$T/check.out")
bad=$(echo "$summary" | sed -nE 's/.* ([0-9]+) ICRC bad, ([0-9]+) malformed.*/\1/p')
malformed=$(echo "$summary" | sed -nE 's/.* ([0-9]+) ICRC bad, ([0-9]+) malformed.*/\2/p')
[ "$malformed" = 0 ] || fail "a.pcap: $malformed malformed packets"
case $SPEC_A in
*corrupt=*)
	[ "$st" -eq 1 ] && [ "${bad:-0}" -gt 0 ] ||
		fail "a.pcap: server corrupts, but pcap-check exited $st with $bad bad ICRCs"
	;;
*) [ "$st" -eq 0 ] || fail "a.pcap: uroce pcap-check exited $st" ;;
esac
echo "PASS: faults $SPEC_A / $SPEC_B, ibv_rc_pingpong -c $*"
exit 0
