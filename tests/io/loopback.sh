#!/bin/bash
# SPDX-License-Identifier: MIT
# The UDP backend on loopback with a pcap tap, twice:
#  1. here, on a free port from 14791 (a real rxe owns 4791), the capture checked by scapy;
#  2. in a private network namespace (unshare), on port 4791, so that `uroce pcap-check` (which
#     knows RoCE v2 by port 4791) decodes and verifies every frame; scapy checks it too.
# Usage: loopback.sh TEST_IO_LOOPBACK UROCE TMPDIR
set -u
test_io_loopback=$1 uroce=$2 tmp=$3
here=$(dirname "$0")
dir=$(mktemp -d "$tmp/io_loopback.XXXXXX") || exit 1
trap 'rm -rf "$dir"' EXIT
[ -x /usr/bin/python3 ] || { echo "FAIL: /usr/bin/python3 not found: run scripts/setup"; exit 1; }

out=$("$test_io_loopback" "$dir/lo.pcap"); rc=$?
echo "$out"
[ $rc -eq 0 ] || { echo "FAIL: test_io_loopback exited $rc"; exit 1; }
port=$(echo "$out" | sed -n 's/^loopback: port \([0-9]*\)$/\1/p')
[ -n "$port" ] || { echo "FAIL: no port in the output"; exit 1; }
/usr/bin/python3 "$here/scapy_icrc.py" "$dir/lo.pcap" "$port" 200 50 || { echo "FAIL: scapy"; exit 1; }

# A private namespace: as root plain unshare -n, else a user namespace (unshare -rn).
if [ "$(id -u)" = 0 ]; then ns=(unshare -n); else ns=(unshare -rn); fi
"${ns[@]}" sh -c 'ip link set lo up && exec "$0" "$1" 4791' "$test_io_loopback" "$dir/4791.pcap" \
	>"$dir/out" 2>&1; rc=$?
cat "$dir/out"
[ $rc -eq 0 ] || { echo "FAIL: test_io_loopback in a private namespace ('${ns[*]}') exited $rc"; exit 1; }
"$uroce" pcap-check "$dir/4791.pcap" >"$dir/check" 2>&1; rc=$?
tail -n 3 "$dir/check"
[ $rc -eq 0 ] || { grep -v 'ICRC ok' "$dir/check" | head -20; echo "FAIL: uroce pcap-check exited $rc"; exit 1; }
n=$(grep -c ' ICRC ok$' "$dir/check")
echo "pcap-check: $n frames with a verified ICRC"
[ "$n" -ge 250 ] || { echo "FAIL: pcap-check verified only $n frames"; exit 1; }
grep -q 'v2/IPv6' "$dir/check" || { echo "FAIL: no IPv6 frame decoded"; exit 1; }
/usr/bin/python3 "$here/scapy_icrc.py" "$dir/4791.pcap" 4791 200 50 || { echo "FAIL: scapy (4791)"; exit 1; }
echo PASS
