#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# few_inotify.sh PROGRAM ARGS...: run the scale program (tests/scale/scale.c) in a user and a
# network namespace of their own, where the user may hold only 4 inotify instances
# (user.max_inotify_instances, which a user namespace may lower for itself), with a run-time
# directory of its own. Every process on uroce_lo joins two groups (127.0.0.1 and ::1), so from
# the third process on the membership file watches must be timers: the run passes when every
# message arrives and the program reports timer watches. Skips (77) where user namespaces or
# the setting are unavailable.
set -u -o pipefail

skip() {
	echo "SKIP: $*"
	exit 77
}
command -v unshare >/dev/null || skip "no unshare"
command -v ip >/dev/null || skip "no ip command"
T=$(mktemp -d "${TMPDIR:-/tmp}/uroce-scale.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT
export UROCE_RUNDIR=$T/run
mkdir "$UROCE_RUNDIR" || exit 1
unshare -U -r -n true 2>/dev/null || skip "cannot create a user and network namespace"
# shellcheck disable=SC2016
unshare -U -r -n sh -c '
	echo 4 >/proc/sys/user/max_inotify_instances 2>/dev/null || exit 77
	ip link set lo up || exit 1
	exec "$@"' sh "$@" >"$T/out" 2>&1
rc=$?
cat "$T/out"
[ $rc -eq 77 ] && skip "cannot lower user.max_inotify_instances"
[ $rc -eq 0 ] || exit $rc
grep -Eq 'watches \(last run\): [0-9]+ inotify, [1-9][0-9]* timer' "$T/out" || {
	echo "FAIL: no process fell back to a timer watch"
	exit 1
}
echo "PASS: processes beyond the inotify allowance share the device through timer watches"
