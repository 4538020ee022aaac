#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# A remote shell for MPI launchers (Open MPI's plm_rsh_agent, MPICH's -launcher-exec) whose
# "hosts" are network namespaces: `netns_rsh.sh [OPTIONS] HOST COMMAND...` runs COMMAND (a shell
# command line, as ssh runs it) in the namespace of HOST under `uroce run`, with that
# namespace's run-time directory. HOST is an address of RSH_HOSTS, a space-separated list of
# ADDRESS=NAMESPACE=RUNDIR; RSH_UROCE is the uroce binary. Options before HOST (ssh's -x, -q...)
# are ignored.
set -u
while [ $# -gt 0 ] && [ "${1#-}" != "$1" ]; do shift; done
host=${1:?usage: netns_rsh.sh [OPTIONS] HOST COMMAND...}
shift
for entry in $RSH_HOSTS; do
	IFS== read -r addr ns run <<<"$entry"
	if [ "$addr" = "$host" ]; then
		exec ip netns exec "$ns" env UROCE_RUNDIR="$run" "$RSH_UROCE" run -- sh -c "$*"
	fi
done
echo "netns_rsh.sh: unknown host '$host' (RSH_HOSTS: $RSH_HOSTS)" >&2
exit 255
