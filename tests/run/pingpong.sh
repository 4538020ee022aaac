#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# An unmodified Debian pingpong between two network namespaces joined by veth, each side under
# `uroce run --pcap`, then both captures checked (lib.sh check_capture: uroce pcap-check, tshark,
# scapy):
#   pingpong.sh UROCE SCAPY_ICRC ENCAP PROGRAM ARGS...
# ENCAP: v2v4 (RoCE v2 over IPv4), v2v6 (RoCE v2 over IPv6), v1 (RoCE v1, Ethertype 0x8915, the
# GID of the IPv4 address). v2 uses the automatic devices uroce_a0/uroce_b0; v1 defines
# urv1_a0/urv1_b0 with `uroce link add ... roce v1` in each namespace's run-time directory.
# ARGS are the program's (-n, -s, -m, ...); -c (validate the received buffer) is always added,
# and -d, -g and the server address. Exits 0 pass, 1 fail, 77 skip (not root, no netns/veth, no
# ibverbs-utils).
set -u -o pipefail

UROCE=$1 SCAPY_ICRC=$2 ENC=$3 PROG=$4
shift 4
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

need_root_netns
need_ibverbs_utils
command -v "$PROG" >/dev/null || skip "$PROG is not installed"
command -v tshark >/dev/null || fail "tshark is not installed: run scripts/setup"
netns_setup

case $ENC in
v2v4) DEVA=uroce_a0 DEVB=uroce_b0 GA_ADDR=::ffff:$A4 GB_ADDR=::ffff:$B4 VER=v2 ;;
v2v6) DEVA=uroce_a0 DEVB=uroce_b0 GA_ADDR=$A6 GB_ADDR=$B6 VER=v2 ;;
v1)
	DEVA=urv1_a0 DEVB=urv1_b0 GA_ADDR=::ffff:$A4 GB_ADDR=::ffff:$B4 VER=v1
	ina "$UROCE" link add $DEVA netdev a0 roce v1 || fail "uroce link add $DEVA"
	inb "$UROCE" link add $DEVB netdev b0 roce v1 || fail "uroce link add $DEVB"
	;;
*) fail "unknown encapsulation '$ENC' (v2v4, v2v6 or v1)" ;;
esac
GA=$(gid_index a $DEVA "$GA_ADDR" $VER) || exit 1
GB=$(gid_index b $DEVB "$GB_ADDR" $VER) || exit 1

iters=1000 # the programs' default
prev=
for a in "$@"; do
	[ "$prev" = -n ] && iters=$a
	prev=$a
done
PORT=18515

ina timeout 120 "$UROCE" run --pcap "$T/a.pcap" -- "$PROG" -d $DEVA -g "$GA" -p $PORT -c "$@" \
	>"$T/srv.out" 2>"$T/srv.err" &
spid=$!
wait_listen a $PORT $spid || {
	cat "$T/srv.out" "$T/srv.err" >&2
	fail "$PROG server did not listen on port $PORT"
}
inb timeout 120 "$UROCE" run --pcap "$T/b.pcap" -- "$PROG" -d $DEVB -g "$GB" -p $PORT -c "$@" $A4 \
	>"$T/cli.out" 2>"$T/cli.err"
cst=$?
# A client that failed leaves the server waiting for it: stop it now rather than at its timeout.
[ "$cst" -eq 0 ] || kill "$spid" 2>/dev/null
wait "$spid"
sst=$?
echo "--- server: uroce run --pcap a.pcap -- $PROG -d $DEVA -g $GA -p $PORT -c $*: status $sst"
cat "$T/srv.out" "$T/srv.err"
echo "--- client: uroce run --pcap b.pcap -- $PROG -d $DEVB -g $GB -p $PORT -c $* $A4: status $cst"
cat "$T/cli.out" "$T/cli.err"
loader_clean "$T/srv.err" "$PROG server"
loader_clean "$T/cli.err" "$PROG client"
[ "$sst" -eq 0 ] || fail "$PROG server exited with $sst"
[ "$cst" -eq 0 ] || fail "$PROG client exited with $cst"
for side in srv cli; do
	grep -q "^$iters iters in" "$T/$side.out" || fail "$PROG $side: no '$iters iters in'"
	! grep -qiE 'invalid data|failed|error' "$T/$side.out" "$T/$side.err" ||
		fail "$PROG $side: data validation (-c) or other errors reported"
done

# Each side sends iters messages and receives as many (plus ACKs on RC): at least 2 x iters
# frames in each capture.
for side in a b; do
	echo "--- capture $side.pcap"
	check_capture "$T/$side.pcap" "$ENC" $((2 * iters)) || exit 1
done
echo "PASS: $ENC $PROG $*"
exit 0
