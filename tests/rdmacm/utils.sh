#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Unmodified rdmacm-utils (Debian's rping, ucmatose, udaddy, rdma_server/rdma_client) over uroce's
# librdmacm.so.1 and libibverbs.so.1, each side under `uroce run --pcap`:
#   utils.sh UROCE SCAPY_ICRC CASE [OURS]
# CASE is PROGRAM-ENCAP[-VARIANT]:
#   PROGRAM rping, rping64k (-S 65536), ucmatose (-c 10), udaddy, rdmaserver;
#           mwinv: OURS is tests/interop/mwinv.c's program on both sides (the server owns a type
#           2 memory window, the client writes through it and invalidates it with SEND with
#           Invalidate; the client's capture must hold the IETH with the window's R_Key);
#           ownqpclient, ownqpserver: OURS is tests/interop/ownqp.c's program (whose application
#           owns its QP: ibv_create_qp, conn_param.qp_num, rdma_init_qp_attr, rdma_establish) as
#           the client against `ucmatose -c 1`, or as the server against `ucmatose -s ADDR -c 1`;
#   ENCAP   v2v4, v2v6 (two namespaces joined by veth), v1 (RoCE v1-only devices, two
#           namespaces), lo (server and client in one namespace on one device: two processes
#           share it, CM MADs steered between them).
# Both captures are checked like the pingpongs' (pcap-check, tshark, scapy), and tshark must see
# the CM exchange (REQ, REP, RTU; SIDR for udaddy) with valid ICRCs. Exits 0, 1 (fail) or 77
# (skip: not root, no netns, rdmacm-utils missing).
set -u -o pipefail

UROCE=$1 SCAPY_ICRC=$2 CASE=$3 OURS=${4:-}
# shellcheck source=../run/lib.sh
. "$(dirname "$0")/../run/lib.sh"

need_root_netns
command -v rping >/dev/null || skip "rdmacm-utils is not installed"
command -v tshark >/dev/null || fail "tshark is not installed: run scripts/setup"
netns_setup

PROG=${CASE%%-*}
ENC=${CASE#*-}
ENC=${ENC%%-*}
# Short CM timeouts: nothing here should need a retry, and a failure must not take 100 s.
export UROCE_CM_TIMEOUT_MS=500 UROCE_CM_RETRIES=4
# Every CM field of both captures against Linux's rules (docs/cm-fields.md), with the REQ's
# max CM retries that UROCE_CM_RETRIES sets.
CM_FIELDS=(/usr/bin/python3 "$(dirname "$0")/../interop/cm_fields.py" --cm-retries 4)
cm_fields() {
	echo "--- cm_fields.py $*"
	"${CM_FIELDS[@]}" "$@" || fail "CM fields differ from Linux's (docs/cm-fields.md)"
}

SRV=b CLI=a ADDR=$B4 CAPENC=$ENC
case $ENC in
v2v4) ;;
v2v6) ADDR=$B6 ;;
v1)
	CAPENC=v1
	ina "$UROCE" link add urv1_a0 netdev a0 roce v1 || fail "uroce link add urv1_a0"
	inb "$UROCE" link add urv1_b0 netdev b0 roce v1 || fail "uroce link add urv1_b0"
	;;
lo)
	# One namespace, one device (uroce_b0 on b0 and its address), two processes.
	CLI=b CAPENC=v2v4
	;;
*) fail "unknown encapsulation '$ENC'" ;;
esac
in_srv() { in$SRV "$@"; }
in_cli() { in$CLI "$@"; }
RUNSRV=$RUNB
PORT=7174

if [ "$PROG" = nohost ]; then
	# Nobody has the address: rdma_resolve_addr waits for ARP (or ND) within rping's 2000 ms
	# and reports ADDR_ERROR, as the kernel's address resolution does.
	case $ENC in v2v6) far=fd00:198:18::99 ;; *) far=198.18.10.99 ;; esac
	t0=$(date +%s%N)
	in_cli timeout 60 "$UROCE" run -- rping -c -v -a $far -p $PORT -C 1 >"$T/cli.out" 2>&1
	cst=$?
	ms=$((($(date +%s%N) - t0) / 1000000))
	cat "$T/cli.out"
	echo "client exited with $cst after ${ms} ms"
	grep -q 'RDMA_CM_EVENT_ADDR_ERROR' "$T/cli.out" || fail "rping did not report ADDR_ERROR"
	[ "$cst" -ne 0 ] && [ "$cst" -ne 124 ] || fail "rping exited with $cst"
	[ "$ms" -lt 8000 ] || fail "ADDR_ERROR took ${ms} ms (rping's resolution timeout: 2000 ms)"
	echo PASS
	exit 0
fi

case $PROG in
rping | rping64k)
	size=()
	[ "$PROG" = rping64k ] && size=(-S 65535) # rping's largest
	srv=(rping -s -v -a "$ADDR" -p $PORT -C 100 "${size[@]}")
	cli=(rping -c -v -a "$ADDR" -p $PORT -C 100 "${size[@]}")
	ps=0x0106 want_lines=100
	;;
ucmatose)
	srv=(ucmatose -c 10 -p $PORT)
	cli=(ucmatose -s "$ADDR" -c 10 -p $PORT)
	ps=0x0106 want_lines=0
	;;
ownqpclient | ownqpserver)
	[ -x "$OURS" ] || fail "no ownqp program given (argument 4)"
	# ucmatose's defaults on both sides: 10 messages of 100 bytes each way.
	if [ "$PROG" = ownqpclient ]; then
		srv=(ucmatose -c 1 -p $PORT -C 10 -S 100)
		cli=("$OURS" -s "$ADDR" -p $PORT -C 10 -S 100)
	else
		srv=("$OURS" -b "$ADDR" -p $PORT -C 10 -S 100)
		cli=(ucmatose -s "$ADDR" -c 1 -p $PORT -C 10 -S 100)
	fi
	ps=0x0106 want_lines=0
	;;
mwinv)
	[ -x "$OURS" ] || fail "no mwinv program given (argument 4)"
	srv=("$OURS" -b "$ADDR" -p $PORT)
	cli=("$OURS" -s "$ADDR" -p $PORT)
	ps=0x0106 want_lines=0
	;;
udaddy)
	# udaddy's -p is the port space; its port is 7174, PORT.
	srv=(udaddy)
	cli=(udaddy -s "$ADDR")
	ps=0x0111 want_lines=0
	;;
rdmaserver)
	srv=(rdma_server -s "$ADDR" -p $PORT)
	cli=(rdma_client -s "$ADDR" -p $PORT)
	ps=0x0106 want_lines=0
	;;
noport)
	# A server listens on PORT; the client asks for PORT + 1, where nobody listens: the
	# server's CM answers REJ INVALID_SERVICE_ID (8) at once.
	srv=(rping -s -v -a "$ADDR" -p $PORT -C 1)
	cli=(rping -c -v -a "$ADDR" -p $((PORT + 1)) -C 1)
	ps=0x0106 want_lines=0
	;;
*) fail "unknown program '$PROG'" ;;
esac

in_srv timeout 120 "$UROCE" run --pcap "$T/srv.pcap" -- "${srv[@]}" >"$T/srv.out" 2>"$T/srv.err" &
spid=$!
wait_cm_listen "$RUNSRV" $((ps)) $PORT $spid || {
	cat "$T/srv.out" "$T/srv.err" >&2
	fail "${srv[0]} server did not listen"
}
t0=$(date +%s%N)
in_cli timeout 120 "$UROCE" run --pcap "$T/cli.pcap" -- "${cli[@]}" >"$T/cli.out" 2>"$T/cli.err"
cst=$?
if [ "$PROG" = noport ]; then
	ms=$((($(date +%s%N) - t0) / 1000000))
	kill "$spid" 2>/dev/null
	wait "$spid" 2>/dev/null
	cat "$T/cli.out" "$T/cli.err"
	echo "client exited with $cst after ${ms} ms"
	grep -q 'RDMA_CM_EVENT_REJECTED, error 8' "$T/cli.out" "$T/cli.err" ||
		fail "rping did not report REJECTED with reason 8 (invalid service ID)"
	[ "$cst" -ne 0 ] || fail "rping exited 0"
	[ "$ms" -lt 5000 ] || fail "the rejection took ${ms} ms"
	check_capture "$T/cli.pcap" "$CAPENC" 2 || exit 1
	tshark -n -r "$T/cli.pcap" -Y 'infiniband.mad.attributeid == 0x0012' -T fields \
		-e infiniband.cm.rej.reason 2>/dev/null | grep -xE "8|0x0*8" >/dev/null ||
		fail "tshark finds no ConnectReject with reason 8 in the capture"
	cm_fields "$T/cli.pcap"
	echo PASS
	exit 0
fi
[ "$cst" -eq 0 ] || kill "$spid" 2>/dev/null
wait_exit "$spid" 30
sst=$?
echo "--- server: ${srv[*]}: status $sst"
tail -n 5 "$T/srv.out"
cat "$T/srv.err"
echo "--- client: ${cli[*]}: status $cst"
tail -n 5 "$T/cli.out"
cat "$T/cli.err"
loader_clean "$T/srv.err" "${srv[0]} server"
loader_clean "$T/cli.err" "${cli[0]} client"
[ "$sst" -eq 0 ] || fail "server exited with $sst"
[ "$cst" -eq 0 ] || fail "client exited with $cst"
if [ "$want_lines" -gt 0 ]; then
	n=$(grep -c '^ping data: rdma-ping-' "$T/cli.out")
	[ "$n" -eq "$want_lines" ] || fail "rping client printed $n ping data lines, expected $want_lines"
fi
! grep -qiE 'error|fail' "$T/srv.out" "$T/cli.out" || fail "errors reported"
case $PROG in ownqp*)
	for side in srv cli; do
		grep -qx 'test complete' "$T/$side.out" || fail "$side: no 'test complete'"
	done
	grep -q "(the application's) connected" "$T/srv.out" "$T/cli.out" ||
		fail "ownqp did not report its connection"
	;;
mwinv)
	for side in srv cli; do
		grep -qx 'test complete' "$T/$side.out" || fail "$side: no 'test complete'"
	done
	key=$(sed -nE 's/^mwinv: writer: SEND with Invalidate of R_Key 0x([0-9a-f]{8}) .*/\1/p' \
		"$T/cli.out")
	grep -q "^mwinv: owner: receive with IBV_WC_WITH_INV, invalidated R_Key 0x$key\$" "$T/srv.out" ||
		fail "the owner did not report R_Key 0x$key invalidated"
	# Opcode 0x17: RC SEND Only with Invalidate; infiniband.ieth is its R_Key, as bytes.
	ieth=$(tshark -n -r "$T/cli.pcap" -Y 'infiniband.bth.opcode == 0x17' -T fields \
		-E occurrence=f -e infiniband.ieth 2>/dev/null | tr -d ':' | sort -u)
	echo "SEND Only with Invalidate, IETH R_Key: ${ieth:-none} (sent: $key)"
	[ -n "$key" ] && [ "$ieth" = "$key" ] || fail "the capture's IETH R_Key is '$ieth', not '$key'"
	;;
esac

# The captures: every frame a valid RoCE frame; tshark sees the CM exchange.
for side in srv cli; do
	echo "--- capture $side.pcap"
	check_capture "$T/$side.pcap" "$CAPENC" 3 || exit 1
	if [ "$ps" = 0x0111 ]; then
		need="ServiceIDResReq ServiceIDResReqResp"
	else
		need="ConnectRequest ConnectReply ReadyToUse"
	fi
	seen=$(tshark -n -r "$T/$side.pcap" -Y infiniband.mad -T fields -e infiniband.mad.attributeid \
		2>/dev/null | sort | uniq -c | tr '\n' ' ')
	echo "CM attributes: $seen"
	for a in $need; do
		id=$(case $a in
			ConnectRequest) echo 0x0010 ;; ConnectReply) echo 0x0013 ;;
			ReadyToUse) echo 0x0014 ;; ServiceIDResReq) echo 0x0017 ;;
			ServiceIDResReqResp) echo 0x0018 ;; esac)
		echo "$seen" | grep -qi "$id" || fail "$side.pcap: no $a ($id) decoded by tshark"
	done
done
cm_fields "$T/srv.pcap" "$T/cli.pcap"
echo PASS
