#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# bench/afpacket_ceiling over the loopback device of a network namespace the test creates: a
# 300 ms run arrives with every CRC good; a run whose sender corrupts every 7th frame after its
# CRC has those caught; bad arguments exit 2.
#   test_afpacket_ceiling.sh AFPACKET_CEILING
# Needs root (a network namespace, AF_PACKET); skips (77) without. The receiver is started first
# and the sender once it listens (a bounded poll of its output).
set -u -o pipefail

BIN=$1
# shellcheck source-path=SCRIPTDIR source=wait_listening.sh
. "$(dirname "$0")/wait_listening.sh"
[ "$(id -u)" -eq 0 ] || { echo "skip: needs root"; exit 77; }
NS=uroce-afc-$$
T=$(mktemp -d "${TMPDIR:-/tmp}/uroce-afpacket-ceiling.XXXXXX") || exit 1
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	ip netns del "$NS" 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT
ip netns add "$NS" 2>/dev/null || { echo "skip: cannot create a network namespace"; exit 77; }
ip -n "$NS" link set lo up || exit 1
failures=0
fail() {
	echo "FAIL: $*" >&2
	failures=$((failures + 1))
}

# run NAME PAYLOAD [sender options]: receiver and sender on lo; the receiver's line in $T/NAME.rx
run() {
	local name=$1 pay=$2
	shift 2
	ip netns exec "$NS" "$BIN" recv lo "$pay" >"$T/$name.rx" 2>&1 &
	local rx=$!
	pids+=("$rx")
	if ! wait_listening "$T/$name.rx" "$rx" 200 0.01; then
		fail "$name: receiver did not start: $(cat "$T/$name.rx")"
		return
	fi
	ip netns exec "$NS" "$BIN" send lo 00:00:00:00:00:00 "$pay" 300 "$@" >"$T/$name.tx" 2>&1 ||
		fail "$name: sender: $(cat "$T/$name.tx")"
	wait "$rx"
	echo "$name: $(tail -n 1 "$T/$name.rx")"
}
field() { sed -nE "s/.*$1 ([0-9]+).*/\\1/p" "$2"; }
frames() { sed -nE 's/.*\), ([0-9]+) frames.*/\1/p' "$1"; }

run clean 1024
[ "$(field crc_bad "$T/clean.rx")" = 0 ] || fail "clean: CRC mismatches"
[ "$(frames "$T/clean.rx")" -gt 0 ] 2>/dev/null || fail "clean: no frame received"

run corrupt 4096 --corrupt-every 7
bad=$(field crc_bad "$T/corrupt.rx") good=$(frames "$T/corrupt.rx")
[ "${bad:-0}" -gt 0 ] || fail "corrupt: no CRC mismatch counted"
# One frame in 7 is corrupted: about 6 good ones per bad one (loss may shift it a little).
[ -n "$good" ] && [ "$good" -ge $((bad * 4)) ] && [ "$good" -le $((bad * 8)) ] ||
	fail "corrupt: $good good and $bad bad frames, expected about 6 to 1"

for args in "" "recv lo 0" "recv lo 1024 --corrupt-every 3" "send lo 00:00:00:00:00 1024 10" \
	"send lo 00:00:00:00:00:00 1024 0" "send lo 0:0:0:0:0:100 1024 10" "send lo x 1024 10" \
	"send lo 00:00:00:00:00:00 9999 10"; do
	# shellcheck disable=SC2086
	"$BIN" $args >/dev/null 2>&1
	st=$?
	[ $st -eq 2 ] || fail "'afpacket_ceiling $args': status $st, expected 2"
done
"$BIN" recv no-such-if0 1024 >/dev/null 2>&1
[ $? -eq 1 ] || fail "an unknown interface: status not 1"

[ $failures -eq 0 ] && echo "afpacket_ceiling: ok"
exit $((failures > 0))
