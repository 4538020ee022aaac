#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Unmodified mckey (rdmacm-utils) over uroce: RDMA CM multicast over RoCE v2.
#   mckey.sh UROCE SCAPY_ICRC CASE
# CASE:
#   v2v4  two namespaces joined by veth: two receivers in b, the sender in a (group 239.18.0.1);
#   v2v6  the same over IPv6 (group ff0e::1:8:1);
#   lo    one namespace, one device shared by three processes: two receivers and the sender.
# Each receiver must get every message; the capture of the sender holds the messages to the
# group (destination QPN 0xFFFFFF, every ICRC valid); while the receivers are joined, the
# interface is a member of the IP group (IGMP/MLD: /proc/net/igmp, /proc/net/igmp6), and it
# is not any more once they are gone. Exits 0, 1 (fail) or 77 (skip: not root, no netns,
# rdmacm-utils missing).
set -u -o pipefail

UROCE=$1 SCAPY_ICRC=$2 CASE=$3
# shellcheck source=../run/lib.sh
. "$(dirname "$0")/../run/lib.sh"

need_root_netns
command -v mckey >/dev/null || skip "rdmacm-utils is not installed"
command -v tshark >/dev/null || fail "tshark is not installed: run scripts/setup"
netns_setup

COUNT=20
case $CASE in
v2v4) GROUP=239.18.0.1 SND=a SADDR=$A4 RADDR=$B4 CAPENC=v2v4 ;;
v2v6) GROUP=ff0e::1:8:1 SND=a SADDR=$A6 RADDR=$B6 CAPENC=v2v6 ;;
lo) GROUP=239.18.0.2 SND=b SADDR=$B4 RADDR=$B4 CAPENC=v2v4 ;;
*) fail "unknown case '$CASE'" ;;
esac

# Is the group a membership of b0 in namespace b? The IPv4 list shows the group as the hex of
# its 32 bits in host (little-endian) order; the IPv6 one as 32 hex digits.
member() {
	if [ "$CAPENC" = v2v6 ]; then
		local hex
		hex=$(/usr/bin/python3 -c 'import ipaddress, sys; print(ipaddress.ip_address(sys.argv[1]).packed.hex())' "$GROUP")
		ip netns exec "$NSB" cat /proc/net/igmp6 | awk -v g="$hex" '$2 == "b0" && $3 == g { f = 1 } END { exit !f }'
	else
		local hex
		hex=$(/usr/bin/python3 -c 'import ipaddress, sys; print(ipaddress.ip_address(sys.argv[1]).packed[::-1].hex().upper())' "$GROUP")
		ip netns exec "$NSB" cat /proc/net/igmp | awk -v g="$hex" '
			/^[0-9]/ { dev = $2 } dev == "b0" && $1 == g { f = 1 } END { exit !f }'
	fi
}

# stdbuf: mckey's progress lines reach the files as they are printed (the waits read them).
pids=()
for r in 1 2; do
	inb timeout 60 "$UROCE" run -- stdbuf -oL mckey -m "$GROUP" -b "$RADDR" -C $COUNT \
		>"$T/r$r.out" 2>&1 &
	pids+=($!)
done
for r in 1 2; do
	for _ in $(seq 400); do
		grep -q 'receiving data transfers' "$T/r$r.out" && break
		kill -0 "${pids[$((r - 1))]}" 2>/dev/null || break
		timeout 0.05 tail -f /dev/null
	done
	grep -q 'receiving data transfers' "$T/r$r.out" || {
		cat "$T/r$r.out"
		fail "receiver $r did not join"
	}
done
member || fail "b0 is not a member of $GROUP while the receivers are joined"
echo "b0 joined $GROUP"

in$SND timeout 60 "$UROCE" run --pcap "$T/snd.pcap" -- stdbuf -oL mckey -m "$GROUP" -b "$SADDR" \
	-s -C $COUNT >"$T/snd.out" 2>&1
sst=$?
echo "--- sender (exit $sst)"
cat "$T/snd.out"
loader_clean "$T/snd.out" sender
[ "$sst" -eq 0 ] || fail "the sender exited with $sst"
for r in 1 2; do
	wait "${pids[$((r - 1))]}"
	st=$?
	echo "--- receiver $r (exit $st)"
	cat "$T/r$r.out"
	loader_clean "$T/r$r.out" "receiver $r"
	[ "$st" -eq 0 ] || fail "receiver $r exited with $st"
	grep -q 'data transfers complete' "$T/r$r.out" || fail "receiver $r did not get its $COUNT messages"
done
member && fail "b0 is still a member of $GROUP after the receivers are gone"
echo "b0 left $GROUP"

echo "--- capture snd.pcap"
check_capture "$T/snd.pcap" "$CAPENC" $COUNT || exit 1
n=$(tshark -n -r "$T/snd.pcap" -Y 'infiniband.bth.destqp == 0xffffff' -T fields -e frame.number |
	wc -l)
[ "$n" -ge $COUNT ] || fail "snd.pcap: $n packets to QPN 0xFFFFFF, expected $COUNT"
echo "$n packets to QPN 0xFFFFFF"
echo PASS
