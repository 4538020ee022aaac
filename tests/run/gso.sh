#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# UDP segmentation offload on the wire (src/host/io/udp.c): uroce sends runs of RoCE v2 packets as
# one UDP GSO send and computes the ICRC of segment k with IPv4 ID k, trusting the kernel to
# number the segments so. This checks that trust against what the kernel really puts on the
# wire: with the veth ends' UDP segmentation offload off (ethtool), the kernel cuts every GSO
# send in software before the device, so a capture on the veth holds the real datagrams with
# the IDs the kernel gave them; scapy then checks every ICRC (tests/io/scapy_icrc.py, its IPv4
# checksums aside: on veth the kernel leaves them to an offload that never runs).
#   gso.sh UROCE SCAPY_ICRC
# Traffic: unmodified ibv_rc_pingpong, 64 KiB messages at path MTU 1024 (64 packets each), both
# ways, data validated (-c). Passes when the pingpong passes, every ICRC in the capture is
# valid, and packets with IPv4 IDs other than 0 are among them (segments 1, 2, ... of GSO sends;
# without GSO every packet has ID 0). Exits 0 pass, 1 fail, 77 skip (not root, no veth).
set -u -o pipefail

UROCE=$1 SCAPY_ICRC=$2
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

need_root_netns
need_ibverbs_utils
command -v ethtool >/dev/null || fail "ethtool is not installed: run scripts/setup"
command -v dumpcap >/dev/null || fail "dumpcap (tshark) is not installed: run scripts/setup"
netns_setup

# Software segmentation before the wire, on both ends.
ina ethtool -K a0 tx-udp-segmentation off >/dev/null || fail "ethtool -K a0 tx-udp-segmentation off"
inb ethtool -K b0 tx-udp-segmentation off >/dev/null || fail "ethtool -K b0 tx-udp-segmentation off"
ina ethtool -k a0 | grep -q '^tx-udp-segmentation: off' || fail "a0 still segments UDP in 'hardware'"

GA=$(gid_index a uroce_a0 "::ffff:$A4" v2) || exit 1
GB=$(gid_index b uroce_b0 "::ffff:$B4" v2) || exit 1

# The capture, on b0: both directions (capture_b0).
capture_b0 "$T/wire.pcap" "udp port 4791" -B 64
cap=$CAP

PORT=18515
ARGS=(-s 65536 -n 20 -m 1024 -c)
ina timeout 60 "$UROCE" run -- ibv_rc_pingpong -d uroce_a0 -g "$GA" -p $PORT "${ARGS[@]}" \
	>"$T/srv.out" 2>&1 &
spid=$!
wait_listen a $PORT $spid || {
	cat "$T/srv.out" >&2
	fail "ibv_rc_pingpong server did not listen"
}
inb timeout 60 "$UROCE" run -- ibv_rc_pingpong -d uroce_b0 -g "$GB" -p $PORT "${ARGS[@]}" $A4 \
	>"$T/cli.out" 2>&1
cst=$?
[ "$cst" -eq 0 ] || kill "$spid" 2>/dev/null
wait "$spid"
sst=$?
kill -TERM $cap # background jobs ignore SIGINT
wait $cap
cat "$T/dumpcap.err"
cat "$T/srv.out" "$T/cli.out"
[ "$sst" -eq 0 ] && [ "$cst" -eq 0 ] || fail "ibv_rc_pingpong: server $sst, client $cst"
for side in srv cli; do
	grep -q "^20 iters in" "$T/$side.out" || fail "ibv_rc_pingpong $side: no '20 iters in'"
done

# 20 x 64 KiB each way at MTU 1024: at least 2 x 20 x 64 data packets.
/usr/bin/python3 "$SCAPY_ICRC" --skip-csum --skip-other "$T/wire.pcap" 4791 2560 >"$T/scapy.out" 2>&1
st=$?
tail -n 3 "$T/scapy.out"
[ "$st" -eq 0 ] || {
	head -20 "$T/scapy.out" >&2
	fail "scapy_icrc.py: invalid ICRCs on the wire"
}
ids=$(tshark -n -r "$T/wire.pcap" -Y 'udp.dstport == 4791 && ip.id > 0' -T fields -e ip.id 2>/dev/null | wc -l)
maxid=$(tshark -n -r "$T/wire.pcap" -Y 'udp.dstport == 4791' -T fields -e ip.id 2>/dev/null |
	sort -u | tail -n 1)
echo "wire: $ids packets with an IPv4 ID other than 0 (GSO segments 1..; highest $maxid)"
[ "$ids" -ge 1000 ] || fail "only $ids packets with IPv4 ID > 0: were the 64 KiB messages not sent with GSO?"
echo PASS
