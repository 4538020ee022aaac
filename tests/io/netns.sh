#!/bin/bash
# SPDX-License-Identifier: MIT
# Two network namespaces joined by a veth pair (198.18.0.1/.2 and fd00:198:18::1/::2), created
# here and removed on exit. test_io_netns runs RoCE v1 over AF_PACKET (with neighbour resolution)
# and v2 over UDP, IPv4 and IPv6, across them; the pcap tap capture of the v1 traffic is then
# decoded by tshark (as InfiniBand, every frame) and verified by `uroce pcap-check`.
# Needs root (exit 77 otherwise: ctest reports a skip). Usage: netns.sh TEST_IO_NETNS UROCE TMPDIR
set -u
test_io_netns=$1 uroce=$2 tmp=$3
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root (network namespaces, AF_PACKET)"; exit 77; }
command -v ip >/dev/null || { echo "SKIP: iproute2 (ip) is not installed"; exit 77; }
command -v tshark >/dev/null || { echo "FAIL: tshark is not installed: run scripts/setup"; exit 1; }

A=uroce-io-a-$$ B=uroce-io-b-$$
dir=$(mktemp -d "$tmp/io_netns.XXXXXX") || exit 1
cleanup() {
	ip netns del "$A" 2>/dev/null
	ip netns del "$B" 2>/dev/null
	rm -rf "$dir"
}
trap cleanup EXIT
set -e
ip netns add "$A"
ip netns add "$B"
ip link add va netns "$A" type veth peer name vb netns "$B"
ip -n "$A" link set lo up
ip -n "$B" link set lo up
ip -n "$A" addr add 198.18.0.1/24 dev va
ip -n "$B" addr add 198.18.0.2/24 dev vb
ip -n "$A" addr add fd00:198:18::1/64 dev va nodad
ip -n "$B" addr add fd00:198:18::2/64 dev vb nodad
ip -n "$A" link set va mtu 9000 up
ip -n "$B" link set vb mtu 9000 up
set +e

"$test_io_netns" "$A" "$B" va vb "$dir/v1.pcap"; rc=$?
[ $rc -eq 0 ] || { echo "FAIL: test_io_netns exited $rc"; exit 1; }

"$uroce" pcap-check -q "$dir/v1.pcap"; rc=$?
[ $rc -eq 0 ] || { echo "FAIL: uroce pcap-check exited $rc"; exit 1; }
total=$(tshark -n -r "$dir/v1.pcap" -T fields -e frame.number 2>/dev/null | wc -l)
ib=$(tshark -n -r "$dir/v1.pcap" -Y 'eth.type == 0x8915 && infiniband.grh && infiniband.bth.opcode' \
	-T fields -e frame.number 2>/dev/null | wc -l)
echo "tshark: $ib of $total frames decoded as InfiniBand (RoCE v1: GRH + BTH)"
[ "$total" -ge 100 ] || { echo "FAIL: only $total frames in the capture"; exit 1; }
[ "$ib" -eq "$total" ] || { echo "FAIL: tshark decoded $ib of $total frames as InfiniBand"; exit 1; }
# tshark's view of one frame, for the log.
tshark -n -r "$dir/v1.pcap" -c 1 2>/dev/null
echo PASS
