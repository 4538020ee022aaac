#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Debian's unmodified fio 3.33, its rdma ioengine, over uroce between two network namespaces
# (tests/run/lib.sh): the server job (rw=read, which listens) in a, the client job (rw=write,
# which connects and drives the transfer) in b, both under `uroce run`.
#   fio.sh UROCE
#
# For each verb the client moves a fixed amount and both jobs must end with status 0, fio
# error 0 and the whole amount in their counts:
# - write: RDMA WRITEs into the server's buffers (64 KiB, depth 16), then the client's
#   finishing SEND, which ends the server;
# - read: RDMA READs from them, the same way;
# - send: SEND / RECV (64 KiB). fio accepts with rnr_retry_count 0, so the client's QP fails
#   on the first RNR NAK (as on any RoCE device): the server posts more receives (depth 512)
#   than the client sends messages (256), the layout fio's own notes ask for;
# - write at 4 KiB, depth 1: the latency case of bench/apps/fio.sh.
# fio's net engine over TCP on the same veth runs once, as the reference path.
#
# About 5 s (fio's client waits 0.5 s after connecting). Exits 0 pass, 1 fail, 77 skip (not
# root, no netns/veth, no fio).
set -u -o pipefail

UROCE=$1
# shellcheck source=../run/lib.sh
. "$(dirname "$0")/../run/lib.sh"

need_root_netns
command -v fio >/dev/null || skip "fio is not installed (Debian package fio)"
fio --enghelp 2>/dev/null | grep -qw rdma || skip "this fio has no rdma ioengine"
netns_setup

PORT=19766

# A value from fio's JSON output (the text before the first '{' is fio's notes).
jget() { # FILE PYTHON-EXPRESSION-ON-j
	/usr/bin/python3 -c '
import json, sys
s = open(sys.argv[1]).read()
j = json.loads(s[s.index("{"):])
print(eval(sys.argv[2], {"j": j}))' "$1" "$2" 2>/dev/null
}

# One transfer: a server job and a client job with the same verb and block size.
run() { # NAME VERB BS COUNT CLIENT_DEPTH SERVER_DEPTH
	local name=$1 verb=$2 bs=$3 n=$4 cd=$5 sd=$6 spid cst sst bytes
	local common=(--ioengine=rdma "--port=$PORT" --verb="$verb" --bs="$bs" "--size=$((bs * n))"
		--thread=1 --hostname="$A4" --output-format=json)
	ip netns exec "$NSA" env UROCE_RUNDIR="$RUNA" timeout -k 5 40 \
		"$UROCE" run -- fio --name=srv "${common[@]}" --iodepth="$sd" --rw=read \
		>"$T/srv.out" 2>"$T/srv.err" &
	spid=$!
	wait_cm_listen "$RUNA" $((0x0106)) $PORT $spid || {
		cat "$T/srv.out" "$T/srv.err" >&2
		fail "$name: the fio server did not listen on port $PORT"
	}
	inb timeout -k 5 30 "$UROCE" run -- fio --name=cli "${common[@]}" --iodepth="$cd" \
		--rw=write >"$T/cli.out" 2>"$T/cli.err"
	cst=$?
	[ "$cst" -eq 0 ] || kill "$spid" 2>/dev/null
	wait_exit $spid 30
	sst=$?
	echo "--- $name: fio rdma verb=$verb bs=$bs x $n, depth $cd (server $sd):" \
		"client status $cst, server status $sst"
	cat "$T/cli.err" "$T/srv.err"
	loader_clean "$T/cli.err" "$name client"
	loader_clean "$T/srv.err" "$name server"
	[ "$cst" -eq 0 ] || { cat "$T/cli.out"; fail "$name: the fio client exited $cst"; }
	[ "$sst" -eq 0 ] || { cat "$T/srv.out"; fail "$name: the fio server exited $sst"; }
	grep -qE '^fio: .*(fail|error|status)' "$T/cli.err" "$T/srv.err" &&
		fail "$name: fio reports an error"
	[ "$(jget "$T/cli.out" 'j["jobs"][0]["error"]')" = 0 ] || fail "$name: client job error"
	[ "$(jget "$T/srv.out" 'j["jobs"][0]["error"]')" = 0 ] || fail "$name: server job error"
	bytes=$(jget "$T/cli.out" 'j["jobs"][0]["write"]["io_bytes"]')
	[ "$bytes" = $((bs * n)) ] || fail "$name: the client moved '$bytes' bytes of $((bs * n))"
	if [ "$verb" = send ]; then
		# The server counts what it received.
		bytes=$(jget "$T/srv.out" 'j["jobs"][0]["read"]["io_bytes"]')
		[ "$bytes" = $((bs * n)) ] || fail "$name: the server received '$bytes' of $((bs * n))"
	fi
	local bw lat
	bw=$(jget "$T/cli.out" 'j["jobs"][0]["write"]["bw_bytes"]')
	lat=$(jget "$T/cli.out" 'j["jobs"][0]["write"]["lat_ns"]["mean"]')
	awk -v b="$bw" -v l="$lat" 'BEGIN { exit !(b > 0 && l > 0) }' ||
		fail "$name: bandwidth '$bw' B/s, mean latency '$lat' ns"
	echo "result: $name $bw B/s, mean latency $lat ns"
}

run write write 65536 256 16 16
run read read 65536 256 16 16
run send send 65536 256 16 512
run write_lat4k write 4096 500 1 1

# The reference: fio's net engine over TCP on the same veth (no uroce).
ip netns exec "$NSA" timeout -k 5 30 fio --name=srv --ioengine=net --listen --port=$PORT \
	--protocol=tcp --bs=64k --size=16m --rw=read --output-format=json \
	>"$T/tsrv.out" 2>"$T/tsrv.err" &
spid=$!
wait_listen a $PORT $spid || fail "the fio net server did not listen"
inb timeout -k 5 30 fio --name=cli --ioengine=net --hostname="$A4" --port=$PORT --protocol=tcp \
	--bs=64k --size=16m --rw=write --output-format=json >"$T/tcli.out" 2>"$T/tcli.err" ||
	fail "fio net client: $(cat "$T/tcli.err")"
wait_exit $spid 30 || fail "fio net server: $(cat "$T/tsrv.err")"
[ "$(jget "$T/tcli.out" 'j["jobs"][0]["write"]["io_bytes"]')" = $((16 << 20)) ] ||
	fail "fio net: the client did not write 16 MiB"
echo "result: tcp $(jget "$T/tcli.out" 'j["jobs"][0]["write"]["bw_bytes"]') B/s"

echo "PASS: fio rdma write, read, send (64 KiB) and write (4 KiB, depth 1); fio net over TCP"
exit 0
