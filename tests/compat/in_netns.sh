#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# in_netns.sh PROGRAM ARGS...: run PROGRAM in a network namespace of its own with only lo up,
# and a run-time directory of its own (automatic devices: uroce_lo), so it binds 127.0.0.1:4791
# without meeting another test or uroce process. Without root, PROGRAM runs on the host as is.
# The program's status is passed on (77: skip).
set -u -o pipefail

if [ "$(id -u)" -ne 0 ] || ! command -v ip >/dev/null; then
	exec "$@"
fi
NS=uroce-cv-$$
T=$(mktemp -d "${TMPDIR:-/tmp}/uroce-compat-ns.XXXXXX") || exit 1
trap 'ip netns del "$NS" 2>/dev/null; rm -rf "$T"' EXIT
export UROCE_RUNDIR=$T/run
mkdir "$UROCE_RUNDIR" || exit 1
ip netns add "$NS" 2>/dev/null || {
	echo "no network namespace: running on the host"
	"$@"
	exit $?
}
ip -n "$NS" link set lo up || exit 1
ip netns exec "$NS" "$@"
