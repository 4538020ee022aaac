#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# libfabric over uroce against libfabric's own TCP path, on the same veth (issue 20), for
# bench/apps.sh. Debian's unmodified fi_pingpong (libfabric-bin) between two network namespaces
# (tests/run/lib.sh: veth MTU 9000, each side with its own run-time directory):
#   pingpong_rdm  -p "verbs;ofi_rxm" -e rdm (what MPIs use) over uroce, -p tcp -e rdm over TCP
#   pingpong_msg  -p verbs -e msg over uroce, -p tcp -e msg over TCP
# Latency is fi_pingpong's usec/xfer, half a round trip, busy-polling, for 8 B, 4 KiB and 64 KiB.
# fi_pingpong times the connection with its first size (ofi_rxm connects when the first message
# goes), so each run takes -S all, whose first size (0 B) pays for it, and keeps the rows of
# those three sizes. No bandwidth: libfabric-bin has no streaming test (fabtests is not packaged).
# Each figure is the median of RUNS runs (default 3) of ITERS round trips per size (default 1000:
# at 200, a size's run is a few milliseconds, within reach of one scheduling hiccup).
#
#   UROCE=/path/to/uroce bench/apps/libfabric.sh [-r RUNS]
# stdout: one line per figure, tab-separated:
#   libfabric<TAB>TEST<TAB>SIZE_BYTES<TAB>lat_us<TAB>uroce|tcp<TAB>VALUE
# stderr: progress. Needs root; exit 0 done (a failed run leaves its figures out, said on
# stderr), 1 cannot run here.
set -u -o pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
UROCE=${UROCE:-$REPO/build/release/uroce}
RUNS=${RUNS:-3}
ITERS=${ITERS:-1000}
[ "${1:-}" = -r ] && RUNS=${2:?-r needs a count}
SIZES="8 4096 65536"

[ -x "$UROCE" ] || {
	echo "libfabric.sh: no uroce binary at $UROCE (set UROCE)" >&2
	exit 1
}
command -v fi_pingpong >/dev/null || {
	echo "libfabric.sh: fi_pingpong not installed (libfabric-bin)" >&2
	exit 1
}
# lib.sh's skip and fail print to stdout and exit 77 or 1; here stdout is for results only.
exec 3>&1 1>&2
# shellcheck source=../../tests/run/lib.sh
. "$REPO/tests/run/lib.sh"
need_root_netns
netns_setup

# fi_pingpong's size column: bytes below 1 KiB, then 4k, 64k, 1m.
size_label() {
	case $1 in
	4096) echo 4k ;;
	65536) echo 64k ;;
	*) echo "$1" ;;
	esac
}

# One run: PATH PROVIDER EP; prints "SIZE USEC" for each size of SIZES, nothing on failure.
PORT=47600
run_once() {
	local path=$1 prov=$2 ep=$3 da=() db=() wrap=() spid cst sz
	PORT=$((PORT + 1))
	if [ "$path" = uroce ]; then
		da=(-d uroce_a0) db=(-d uroce_b0) wrap=("$UROCE" run --)
	fi
	inb timeout 300 "${wrap[@]}" fi_pingpong -p "$prov" -e "$ep" "${db[@]}" -S all -I "$ITERS" \
		-B $PORT >"$T/srv.out" 2>&1 &
	spid=$!
	wait_listen b $PORT $spid || {
		echo "  server did not start: $(tail -n 2 "$T/srv.out")"
		return
	}
	ina timeout 300 "${wrap[@]}" fi_pingpong -p "$prov" -e "$ep" "${da[@]}" -S all -I "$ITERS" \
		-P $PORT "$B4" >"$T/cli.out" 2>&1
	cst=$?
	wait_exit $spid 30 >/dev/null 2>&1
	if [ "$cst" -ne 0 ]; then
		echo "  client exited $cst: $(grep -v '^libfabric' "$T/cli.out" | tail -n 2)"
		return
	fi
	for sz in $SIZES; do
		awk -v l="$(size_label "$sz")" -v s="$sz" '$1 == l && $3 ~ /^=/ { print s, $7; exit }' \
			"$T/cli.out"
	done
}

median() { sort -g | awk '{ v[NR] = $1 } END { if (NR) print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# TEST PATH PROVIDER EP
bench() {
	local test=$1 path=$2 prov=$3 ep=$4 r sz v
	: >"$T/runs"
	for r in $(seq "$RUNS"); do
		echo "libfabric: $test over $path (-p \"$prov\" -e $ep), run $r of $RUNS"
		run_once "$path" "$prov" "$ep" >>"$T/runs"
	done
	for sz in $SIZES; do
		v=$(awk -v s="$sz" '$1 == s { print $2 }' "$T/runs" | median)
		[ -n "$v" ] && printf 'libfabric\t%s\t%s\tlat_us\t%s\t%s\n' "$test" "$sz" "$path" "$v" >&3
	done
}

bench pingpong_rdm uroce "verbs;ofi_rxm" rdm
bench pingpong_rdm tcp tcp rdm
bench pingpong_msg uroce verbs msg
bench pingpong_msg tcp tcp msg
exit 0
