#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# The software people run on RDMA, over uroce against its own TCP path on the same veth, in one
# run: each bench/apps/<consumer>.sh (UCX's ucx_perftest, MPI ping-pong, libfabric, fio, qperf:
# whichever exist) is run -r times; every run's result lines go to results.tsv, and
# bench/apps_report.py writes results.md (medians, the uroce/TCP ratio per row and the issue's
# target where one applies) and apps.png. Needs root and the packages of scripts/setup.
#
# A consumer script (run as `UROCE=PATH bench/apps/<consumer>.sh -r 1`; scripts that repeat
# nothing themselves ignore -r) prints only result lines, tab-separated:
#   consumer  test  size_bytes  metric  path  value
# metric lat_us (lower is better) or bw_gbps (higher is better); path uroce or tcp.
# Exit status: 0 done (a consumer that failed is named in results.md), 1 cannot run, 2 bad
# arguments.
set -u -o pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/.." && pwd)
REPS=3 OUT= ONLY= PLOT=1
UROCE=$REPO/build/release/uroce

usage() {
	cat <<USAGE
usage: ${0##*/} [-r N] [-o DIR] [--only LIST] [--uroce PATH] [--no-plot]

  -r N          runs of every consumer; the report gives medians (default 3)
  -o DIR        output directory: results.md, results.tsv, apps.png, logs/ (default: a new
                directory under \${TMPDIR:-/tmp})
  --only LIST   comma-separated consumers (default: every bench/apps/*.sh:
                $(cd "$HERE/apps" && ls -- *.sh | sed 's/\.sh$//' | paste -sd, -))
  --uroce PATH  the uroce binary (default: build/release/uroce of this repository)
  --no-plot     no apps.png (no matplotlib needed)
USAGE
}

while [ $# -gt 0 ]; do
	case $1 in
	-r) REPS=${2:?}; shift 2 ;;
	-o) OUT=${2:?}; shift 2 ;;
	--only) ONLY=${2:?}; shift 2 ;;
	--uroce) UROCE=${2:?}; shift 2 ;;
	--no-plot) PLOT=0; shift ;;
	-h | --help) usage; exit 0 ;;
	*) usage >&2; exit 2 ;;
	esac
done
[[ $REPS =~ ^[1-9][0-9]*$ ]] || { echo "-r: a positive number, not '$REPS'" >&2; exit 2; }
[ "$(id -u)" -eq 0 ] || { echo "${0##*/}: needs root (network namespaces)" >&2; exit 1; }
[ -x "$UROCE" ] || { echo "${0##*/}: no uroce at $UROCE (scripts/build release)" >&2; exit 1; }
UROCE=$(cd "$(dirname "$UROCE")" && pwd)/$(basename "$UROCE")
[ -n "$OUT" ] || OUT=$(mktemp -d "${TMPDIR:-/tmp}/uroce-apps.XXXXXX")
mkdir -p "$OUT/logs" || exit 1

consumers=()
for f in "$HERE"/apps/*.sh; do
	c=$(basename "$f" .sh)
	if [ -z "$ONLY" ] || [[ ",$ONLY," == *",$c,"* ]]; then consumers+=("$c"); fi
done
[ ${#consumers[@]} -gt 0 ] || { echo "no consumer matches --only $ONLY" >&2; exit 2; }

commit=$(git -C "$REPO" rev-parse --short HEAD 2>/dev/null || echo unknown)
printf 'rep\tconsumer\ttest\tsize\tmetric\tpath\tvalue\n' >"$OUT/results.tsv"
: >"$OUT/failed.txt"
for rep in $(seq "$REPS"); do
	for c in "${consumers[@]}"; do
		echo "== run $rep/$REPS: $c" >&2
		log=$OUT/logs/$c.$rep.log
		# -r 1: a consumer script that repeats its runs itself runs each once here.
		UROCE=$UROCE bash "$HERE/apps/$c.sh" -r 1 >"$OUT/logs/$c.$rep.out" 2>"$log"
		st=$?
		[ $st -eq 0 ] || echo "$c	run $rep exited $st: $(tail -n 1 "$log")" >>"$OUT/failed.txt"
		awk -F'\t' -v r="$rep" 'NF == 6 { print r "\t" $0 }' "$OUT/logs/$c.$rep.out" \
			>>"$OUT/results.tsv"
	done
done
plot=()
[ $PLOT -eq 1 ] && plot=(--plot "$OUT/apps.png")
/usr/bin/python3 "$HERE/apps_report.py" "$OUT/results.tsv" --failed "$OUT/failed.txt" \
	--commit "$commit" --reps "$REPS" "${plot[@]}" >"$OUT/results.md" || exit 1
cat "$OUT/results.md"
echo "results: $OUT" >&2
