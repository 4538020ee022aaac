#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# bench/udp_ceiling over the host's loopback: a 300 ms run arrives with every CRC good; a run
# whose sender corrupts every 7th segment after its CRC has those caught; bad arguments exit 2.
#   test_udp_ceiling.sh UDP_CEILING
# The receiver is started first and the sender once it listens (a bounded poll of its output).
set -u -o pipefail

BIN=$1
# shellcheck source-path=SCRIPTDIR source=wait_listening.sh
. "$(dirname "$0")/wait_listening.sh"
T=$(mktemp -d "${TMPDIR:-/tmp}/uroce-udp-ceiling.XXXXXX") || exit 1
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT
failures=0
fail() {
	echo "FAIL: $*" >&2
	failures=$((failures + 1))
}

# run NAME PORT SEG [sender options]: receiver and sender; the receiver's line in $T/NAME.rx
run() {
	local name=$1 port=$2 seg=$3
	shift 3
	"$BIN" recv 127.0.0.1 "$port" "$seg" >"$T/$name.rx" 2>&1 &
	local rx=$!
	pids+=("$rx")
	if ! wait_listening "$T/$name.rx" "$rx" 200 0.01; then
		fail "$name: receiver did not start: $(cat "$T/$name.rx")"
		return
	fi
	"$BIN" send 127.0.0.1 "$port" "$seg" 300 "$@" >"$T/$name.tx" 2>&1 ||
		fail "$name: sender: $(cat "$T/$name.tx")"
	wait "$rx"
	echo "$name: $(tail -n 1 "$T/$name.rx")"
}
field() { sed -nE "s/.*$1 ([0-9]+).*/\\1/p" "$2"; }
segments() { sed -nE 's/.*\), ([0-9]+) segments.*/\1/p' "$1"; }

port=$((20000 + $$ % 20000))
run clean "$port" 1040
[ "$(field crc_bad "$T/clean.rx")" = 0 ] || fail "clean: CRC mismatches"
[ "$(segments "$T/clean.rx")" -gt 0 ] 2>/dev/null || fail "clean: no segment received"

run corrupt $((port + 1)) 4112 --corrupt-every 7
bad=$(field crc_bad "$T/corrupt.rx") good=$(segments "$T/corrupt.rx")
[ "${bad:-0}" -gt 0 ] || fail "corrupt: no CRC mismatch counted"
# One segment in 7 is corrupted: about 6 good ones per bad one (loss may shift it a little).
[ -n "$good" ] && [ "$good" -ge $((bad * 4)) ] && [ "$good" -le $((bad * 8)) ] ||
	fail "corrupt: $good good and $bad bad segments, expected about 6 to 1"

for args in "" "recv 127.0.0.1 1 16" "send 127.0.0.1 99999 1040 10" "send 127.0.0.1 9 1040 0" \
	"recv 127.0.0.1 9 1040 --corrupt-every 3" "send x 9 1040 10"; do
	# shellcheck disable=SC2086
	"$BIN" $args >/dev/null 2>&1
	st=$?
	[ $st -eq 2 ] || fail "'udp_ceiling $args': status $st, expected 2"
done

[ $failures -eq 0 ] && echo "udp_ceiling: ok"
exit $((failures > 0))
