#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# UCX's ucx_perftest between two network namespaces over uroce (rc_verbs, with ud_verbs for
# connecting) and over UCX's own tcp transport on the same veth. Prints result lines
# (bench/apps.sh's format); progress on stderr. Needs root.
#   UROCE=PATH bench/apps/ucx.sh
set -u -o pipefail

REPO=$(cd "$(dirname "$0")/../.." && pwd)
UROCE=${UROCE:-$REPO/build/release/uroce}
# shellcheck source=../../tests/run/lib.sh
. "$REPO/tests/run/lib.sh"
# shellcheck source=../../tests/apps/lib.sh
. "$REPO/tests/apps/lib.sh"
need_root_netns
command -v ucx_perftest >/dev/null || skip "ucx-utils is not installed"
netns_setup

PORT=14337
# One ucx_perftest run; prints the result line (latency: the run's 50th percentile, us, the
# typical figure as bench/compare.sh reports it; bandwidth: overall, Gbit/s from UCX's MB/s of
# 2^20 bytes).
run() { # PATH TEST SIZE ITERS
	local path=$1 test=$2 size=$3 iters=$4 tls=rc_verbs,ud_verbs dev_a='' dev_b='' spid line
	[ "$path" = tcp ] && tls=tcp dev_a=a0 dev_b=b0
	PORT=$((PORT + 1))
	echo "ucx $test $size over $path" >&2
	ucx_cmd b "$tls" "$dev_b" ucx_perftest -p $PORT
	"${CMD[@]}" >"$T/srv.out" 2>&1 &
	spid=$!
	wait_listen b $PORT $spid || { echo "ucx $test: no server" >&2; return; }
	ucx_cmd a "$tls" "$dev_a" ucx_perftest "$B4" -p $PORT -t "$test" -s "$size" -n "$iters"
	line=$("${CMD[@]}" 2>"$T/cli.err" | grep '^Final:')
	wait_exit $spid 20 >/dev/null 2>&1
	[ -n "$line" ] || { echo "ucx $test $size over $path failed: $(tail -n 2 "$T/cli.err")" >&2; return; }
	case $test in
	*_lat) printf 'ucx\t%s\t%s\tlat_us\t%s\t%s\n' "$test" "$size" "$path" \
		"$(echo "$line" | awk '{ print $3 }')" ;;
	*) printf 'ucx\t%s\t%s\tbw_gbps\t%s\t%s\n' "$test" "$size" "$path" \
		"$(echo "$line" | awk '{ printf "%.3f", $7 * 1048576 * 8 / 1e9 }')" ;;
	esac
}

# Bandwidth runs of 20000 messages of 64 KiB (1.3 GB: a third of a second to a second and a half
# here); runs of 5000, a tenth of a second over uroce, moved by a third from run to run.
for path in uroce tcp; do
	run $path tag_lat 8 20000
	run $path ucp_put_lat 8 20000
	run $path tag_bw 65536 20000
	run $path ucp_put_bw 65536 20000
	run $path stream_bw 65536 20000
done
