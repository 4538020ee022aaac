#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# in_netns.sh PORT PROGRAM ARGS...: run PROGRAM with a run-time directory of its own (automatic
# devices: uroce_lo) in a network namespace of its own with only lo up, so that it binds
# 127.0.0.1:4791 without meeting another test or uroce process. Without root (or without
# network namespaces) it runs on the host with UROCE_PORT=PORT instead of 4791.
# The program's status is passed on.
set -u -o pipefail

PORT=$1
shift
T=$(mktemp -d "${TMPDIR:-/tmp}/uroce-run-ns.XXXXXX") || exit 1
NS=uroce-rn-$$
trap 'ip netns del "$NS" 2>/dev/null; rm -rf "$T"' EXIT
export UROCE_RUNDIR=$T/run
mkdir "$UROCE_RUNDIR" || exit 1
if [ "$(id -u)" -eq 0 ] && command -v ip >/dev/null && ip netns add "$NS" 2>/dev/null; then
	ip -n "$NS" link set lo up || exit 1
	ip netns exec "$NS" "$@"
	exit $?
fi
echo "not root or no network namespace: on the host, UDP port $PORT"
UROCE_PORT=$PORT "$@"
