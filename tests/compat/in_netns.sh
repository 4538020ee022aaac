#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# in_netns.sh [--veth] PROGRAM ARGS...: run PROGRAM in a network namespace of its own with only lo
# up, and a run-time directory of its own (automatic devices: uroce_lo), so it binds
# 127.0.0.1:4791 without meeting another test or uroce process. Without root, PROGRAM runs on the
# host as is.
# --veth: the namespace also holds v0, one end of a veth pair (multicast-capable, unlike lo),
# carrying 198.18.0.1/24 (automatic device uroce_v0); it needs root and veth support, else 77
# (skip).
# The program's status is passed on (77: skip).
set -u -o pipefail

VETH=0
if [ "${1:-}" = --veth ]; then
	VETH=1
	shift
fi
skip() {
	echo "SKIP: $*"
	exit 77
}
if [ "$(id -u)" -ne 0 ] || ! command -v ip >/dev/null; then
	[ "$VETH" -eq 1 ] && skip "needs root for a network namespace"
	exec "$@"
fi
NS=uroce-cv-$$
T=$(mktemp -d "${TMPDIR:-/tmp}/uroce-compat-ns.XXXXXX") || exit 1
trap 'ip netns del "$NS" 2>/dev/null; rm -rf "$T"' EXIT
export UROCE_RUNDIR=$T/run
mkdir "$UROCE_RUNDIR" || exit 1
if ! ip netns add "$NS" 2>/dev/null; then
	[ "$VETH" -eq 1 ] && skip "cannot create a network namespace"
	echo "no network namespace: running on the host"
	"$@"
	exit $?
fi
ip -n "$NS" link set lo up || exit 1
if [ "$VETH" -eq 1 ]; then
	ip -n "$NS" link add v0 type veth peer name v1 2>/dev/null || skip "no veth support"
	ip -n "$NS" link set v0 addrgenmode none up || exit 1
	ip -n "$NS" link set v1 addrgenmode none up || exit 1
	ip -n "$NS" addr add 198.18.0.1/24 dev v0 || exit 1
fi
ip netns exec "$NS" "$@"
