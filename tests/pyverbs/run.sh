#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# run.sh UROCE PASS_LIST: rdma-core's own test suite (Debian's python3-pyverbs, unmodified)
# over uroce, scored by score.py against the committed PASS_LIST.
#
# Set-up, all of it the test's own and removed on exit:
# - a network namespace with a veth pair, 198.18.0.1/24 and 198.18.0.2/24, and a uroce device
#   pvN (RoCE v2) on the first end, in a run-time directory of its own;
# - 2 MiB huge pages for test_odp's huge-page tests: at least 16 reserved while it runs, the
#   old count put back after;
# - a copy of the suite with its gzipped files unpacked (Debian ships some of them gzipped).
# The suite runs under `uroce run`, whose /sys/class view gives pyverbs the device's interface
# (its rdma_cm tests skip without one).
#
# Exit status: 0 passed, 1 failed, 77 skipped (not root, no python3-pyverbs, no netns).
set -u -o pipefail

UROCE=$(realpath -e "$1") PASS_LIST=$(realpath -e "$2") || exit 1
SUITE=/usr/share/doc/rdma-core/tests
HERE=$(cd "$(dirname "$0")" && pwd)
PY=/usr/bin/python3 # Debian's modules import only in Debian's interpreter

[ "$(id -u)" -eq 0 ] || { echo "skip: needs root (network namespace, huge pages)"; exit 77; }
[ -f "$SUITE/run_tests.py" ] && "$PY" -c 'import pyverbs' 2>/dev/null ||
	{ echo "skip: no python3-pyverbs (scripts/setup installs it)"; exit 77; }

NS=uroce-pv-$$ DEV=pv$$
T=$(mktemp -d "${TMPDIR:-/tmp}/uroce-pyverbs.XXXXXX") || exit 1
HP=/proc/sys/vm/nr_hugepages
hp_old=$(cat "$HP" 2>/dev/null || echo)
cleanup() {
	ip netns del "$NS" 2>/dev/null
	[ -n "$hp_old" ] && echo "$hp_old" >"$HP" 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT

ip netns add "$NS" || { echo "skip: cannot make a network namespace"; exit 77; }
ip -n "$NS" link add v0 type veth peer name v1 &&
	ip -n "$NS" addr add 198.18.0.1/24 dev v0 &&
	ip -n "$NS" addr add 198.18.0.2/24 dev v1 &&
	ip -n "$NS" link set lo up && ip -n "$NS" link set v0 up && ip -n "$NS" link set v1 up ||
	exit 1
[ -n "$hp_old" ] && [ "$hp_old" -lt 16 ] && echo 16 >"$HP"

cp -r "$SUITE" "$T/tests" && gunzip -f "$T"/tests/*.gz || exit 1
export UROCE_RUNDIR=$T/run
mkdir "$UROCE_RUNDIR" || exit 1
ip netns exec "$NS" "$UROCE" link add "$DEV" netdev v0 || exit 1
# The suite forks processes (rdma_cm tests) that leak by design: no leak report from them.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
cd "$T"
ip netns exec "$NS" "$UROCE" run -- "$PY" "$HERE/score.py" "$T/tests" "$PASS_LIST" \
	"${PYVERBS_RESULTS:-$T/results}" -- --dev "$DEV" 2>&1 | tee "$T/out"
status=${PIPESTATUS[0]}
[ $status -eq 0 ] || [ $status -eq 1 ] || echo "score.py ended with status $status"
# A sanitizer build's report (the suite's processes go on after a UBSan one) fails the run.
if grep -qE 'ERROR: AddressSanitizer|runtime error:' "$T/out"; then
	echo "FAIL: a sanitizer report (above)"
	status=1
fi
exit $status
