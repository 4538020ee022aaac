#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# mw_capture.sh TEST_COMPAT_MW UROCE: run test_compat_mw (in_netns.sh) with a capture, then check
# the capture with decoders other than ours: tshark decodes the SEND Only with Invalidate the
# program sent, with the R_Key it printed in the IETH, and no frame is malformed or draws an
# expert warning; `uroce pcap-check` finds every ICRC valid. A missing tshark fails the test.
set -u -o pipefail
HERE=$(dirname "${BASH_SOURCE[0]}")
# shellcheck source=../lib/tshark.sh
. "$HERE/../lib/tshark.sh"
PROG=$1 UROCE=$2
fail() {
	echo "FAIL: $*" >&2
	exit 1
}
command -v tshark >/dev/null || fail "tshark not found: run scripts/setup"
T=$(mktemp -d "${TMPDIR:-/tmp}/uroce-mw.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT

UROCE_PCAP=$T/mw.pcap bash "$HERE/in_netns.sh" "$PROG" >"$T/out" 2>&1
st=$?
cat "$T/out"
[ "$st" -eq 77 ] && exit 77
[ "$st" -eq 0 ] || fail "test_compat_mw exited $st"
key=$(sed -nE 's/^SEND_WITH_INV R_Key 0x([0-9a-f]{8})$/\1/p' "$T/out")
[ -n "$key" ] || fail "the program printed no SEND_WITH_INV R_Key"

"$UROCE" pcap-check -q "$T/mw.pcap" | tail -n 1 || fail "uroce pcap-check rejects the capture"
# Opcode 23: RC SEND Only with Invalidate; infiniband.ieth is the IETH's R_Key, as bytes.
got=$(tshark "${TSHARK_CHECK[@]}" -r "$T/mw.pcap" -Y 'infiniband.bth.opcode == 23' \
	-T fields -E occurrence=f -e infiniband.ieth 2>/dev/null | tr -d ':' | sort -u)
echo "tshark: SEND Only with Invalidate, IETH R_Key: ${got:-none}"
[ "$got" = "$key" ] || fail "tshark reads IETH R_Key '${got}', the program sent $key"
bad=$(tshark "${TSHARK_CHECK[@]}" -r "$T/mw.pcap" \
	-Y '_ws.malformed || _ws.expert.severity >= "Warning"' \
	-T fields -e frame.number -e _ws.expert.message 2>/dev/null)
[ -z "$bad" ] || fail "tshark reports malformed frames or warnings: $bad"
echo "ok"
