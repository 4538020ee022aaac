#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# mcast_netns.sh PROGRAM: run PROGRAM uroce_v0 198.18.0.1 in a network namespace of its own
# where v0 (one end of a veth pair, multicast-capable unlike lo) carries 198.18.0.1/24, with a
# run-time directory of its own (automatic devices: uroce_v0). Needs root, else 77 (skip).
set -u -o pipefail

if [ "$(id -u)" -ne 0 ] || ! command -v ip >/dev/null; then
	echo "SKIP: needs root for a network namespace"
	exit 77
fi
NS=uroce-mc-$$
T=$(mktemp -d "${TMPDIR:-/tmp}/uroce-mcast-ns.XXXXXX") || exit 1
trap 'ip netns del "$NS" 2>/dev/null; rm -rf "$T"' EXIT
export UROCE_RUNDIR=$T/run
mkdir "$UROCE_RUNDIR" || exit 1
ip netns add "$NS" 2>/dev/null || {
	echo "SKIP: cannot create a network namespace"
	exit 77
}
ip -n "$NS" link set lo up || exit 1
ip -n "$NS" link add v0 type veth peer name v1 2>/dev/null || {
	echo "SKIP: no veth support"
	exit 77
}
ip -n "$NS" link set v0 addrgenmode none up || exit 1
ip -n "$NS" link set v1 addrgenmode none up || exit 1
ip -n "$NS" addr add 198.18.0.1/24 dev v0 || exit 1
ip netns exec "$NS" "$1" uroce_v0 198.18.0.1
