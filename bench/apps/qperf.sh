#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# qperf 0.4.11 over uroce against qperf over TCP on the same veth between two network namespaces
# (tests/run/lib.sh: MTU 9000, RoCE v2 over IPv4), in one run:
#   UROCE=/path/to/uroce bench/apps/qperf.sh [-r N] [-t SECONDS]
# As root. Prints one tab-separated line per figure on stdout (progress and errors on stderr):
#   qperf <TAB> test <TAB> size_bytes <TAB> lat_us|bw_gbps <TAB> uroce|tcp <TAB> value
# Each value is the median of -r runs (default 3) of -t seconds each (default 3); a figure
# with no successful run is left out.
#
# uroce: rc_lat at 8 B (qperf's latency: half the round trip), rc_bw and rc_rdma_write_bw at
# 64 KiB, with -cm1 (rdma_cm sets the QPs up; qperf's other way addresses the peer by LID only,
# which RoCE refuses). qperf waits for completions through a completion channel (its default).
# tcp: qperf's tcp_lat (8 B), printed beside rc_lat, and tcp_bw (64 KiB), printed beside each
# bw test. ud_lat cannot run on RoCE with this qperf (its UD tests never use rdma_cm, so their
# address handles have no GRH): it is left out, with a note on stderr.
# Exit status: 0 done (a failed figure is reported on stderr and left out), 1 cannot run here.
set -u -o pipefail

# shellcheck disable=SC2034 # APP is read by common.sh
APP=qperf
# shellcheck source=common.sh
. "$(dirname "$0")/common.sh"
command -v qperf >/dev/null || skip "qperf is not installed (Debian package qperf)"
netns_setup

PORT=19765
log() { echo "qperf.sh: $*" >&2; }
log "ud_lat left out: qperf 0.4.11 addresses UD peers by LID, which RoCE refuses (EINVAL)"

ip netns exec "$NSA" env UROCE_RUNDIR="$RUNA" timeout -k 5 $((REPS * (SECS + 10) * 6 + 60)) \
	"$UROCE" run -- qperf -lp $PORT >"$T/srv.out" 2>&1 &
spid=$!
wait_listen a $PORT $spid || fail "the qperf server did not listen: $(cat "$T/srv.out")"

# One qperf test; prints its figure in us (latency) or Gbit/s (bw), or nothing when it failed.
one() { # TEST SIZE ARGS...
	local test=$1 size=$2
	shift 2
	if ! inb timeout -k 5 $((SECS + 30)) "$UROCE" run -- qperf -lp $PORT -t "$SECS" \
		-m "$size" "$A4" "$@" "$test" >"$T/cli.out" 2>&1; then
		log "$test: failed: $(tr '\n' ' ' <"$T/cli.out")"
		return
	fi
	awk '
		$2 == "=" && $1 == "latency" {
			v = $3; u = $4
			if (u == "ns") v /= 1000; else if (u == "ms") v *= 1000; else if (u == "sec") v *= 1e6
			print v; exit
		}
		$2 == "=" && $1 == "bw" {
			v = $3; u = $4
			if (u == "KB/sec") v /= 1000; else if (u == "GB/sec") v *= 1000
			print v * 8 / 1000; exit
		}' "$T/cli.out"
}

declare -A VALS
add() { # KEY VALUE
	[ -n "$2" ] || return
	VALS[$1]="${VALS[$1]:-} $2"
	log "$1: $2"
}
median() { tr ' ' '\n' | grep . | sort -g | awk '{ v[NR] = $1 } END {
	if (NR) printf "%.4g\n", NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

for rep in $(seq "$REPS"); do
	log "run $rep of $REPS"
	add rc_lat "$(one rc_lat 8 -cm1)"
	add tcp_lat "$(one tcp_lat 8)"
	add rc_bw "$(one rc_bw 65536 -cm1)"
	add rc_rdma_write_bw "$(one rc_rdma_write_bw 65536 -cm1)"
	add tcp_bw "$(one tcp_bw 65536)"
done

row() { # TEST SIZE METRIC PATH KEY
	local v
	v=$(echo "${VALS[$5]:-}" | median)
	[ -n "$v" ] && printf 'qperf\t%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" "$v"
}
row rc_lat 8 lat_us uroce rc_lat
row rc_lat 8 lat_us tcp tcp_lat
row rc_bw 65536 bw_gbps uroce rc_bw
row rc_bw 65536 bw_gbps tcp tcp_bw
row rc_rdma_write_bw 65536 bw_gbps uroce rc_rdma_write_bw
row rc_rdma_write_bw 65536 bw_gbps tcp tcp_bw
exit 0
