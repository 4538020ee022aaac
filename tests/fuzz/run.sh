#!/bin/sh
# Build the libFuzzer configuration (clang, -DUROCE_FUZZ=ON) and fuzz one target: uroce's wire
# decoders (fuzz_decode, the default) or the connection manager (fuzz_cm).
#
# usage: tests/fuzz/run.sh [SECONDS] [extra libFuzzer flags...]     (default 60 s)
#
# Fuzzes a copy of tests/fuzz/corpus/TARGET in a fresh /tmp directory, so the committed corpus
# stays small. Crashes are written there as crash-*; reproduce one with
#   build/h-fuzz/tests/fuzz/fuzz_TARGET CRASH_FILE
# At the end the copy is merged (-merge=1) against the committed corpus into a third directory,
# and the files that add coverage are listed: copy the few worth keeping into the corpus as
# found-<name> (keep the corpus under 1 MB).
# Environment: UROCE_FUZZ_TARGET (decode or cm; default decode), UROCE_FUZZ_BUILD (default
# build/h-fuzz).
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
secs=${1:-60}
[ $# -gt 0 ] && shift
build=${UROCE_FUZZ_BUILD:-$root/build/h-fuzz}
target=${UROCE_FUZZ_TARGET:-decode}
corpus=$root/tests/fuzz/corpus/$target
dict=
[ -f "$root/tests/fuzz/$target.dict" ] && dict=-dict=$root/tests/fuzz/$target.dict

if [ ! -f "$build/CMakeCache.txt" ]; then
	CC=clang cmake -S "$root" -B "$build" -DUROCE_FUZZ=ON -DUROCE_WERROR=ON \
		-DCMAKE_BUILD_TYPE=RelWithDebInfo
fi
cmake --build "$build" --target "fuzz_$target" -j"$(nproc)"
fuzzer=$build/tests/fuzz/fuzz_$target

work=$(mktemp -d /tmp/uroce-fuzz.XXXXXX)
mkdir "$work/corpus" "$work/merged"
cp "$corpus"/* "$work/corpus/"
echo "fuzzing for $secs s in $work"
"$fuzzer" -max_total_time="$secs" -print_final_stats=1 $dict \
	-artifact_prefix="$work/" "$@" "$work/corpus" >"$work/fuzz.log" 2>&1 || true
grep -E 'INITED|DONE|^stat::|ERROR|SUMMARY|invariant broken|Test unit written' "$work/fuzz.log" | \
	tail -n 40

# Edges the committed corpus lacks: merge into a copy of it (edges only, no hit counts, so the
# set stays small) and list what was added.
cp "$corpus"/* "$work/merged/"
"$fuzzer" -merge=1 -use_counters=0 "$work/merged" "$work/corpus" >"$work/merge.log" 2>&1
grep 'MERGE-OUTER: [0-9]* new files' "$work/merge.log" || true
echo "files adding edges beyond the committed corpus (in $work/merged):"
(cd "$work/merged" && for f in *; do [ -e "$corpus/$f" ] || echo "  $f $(wc -c <"$f") bytes"; done)
if ls "$work"/crash-* "$work"/leak-* "$work"/timeout-* "$work"/oom-* >/dev/null 2>&1; then
	echo "FAILURES:"; ls -l "$work"/crash-* "$work"/leak-* "$work"/timeout-* "$work"/oom-* 2>/dev/null
	exit 1
fi
