#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# MPI jobs over uroce, started by the MPI's own launcher across two network namespaces that stand
# for two hosts (tests/apps/netns_rsh.sh is the launcher's remote shell: each namespace's
# processes run under `uroce run` with that namespace's run-time directory), for Debian's Open
# MPI (pml ucx) and MPICH (ch4:ucx):
#   - mpi_check.c with 2 ranks (one per namespace) and 4 ranks (two per namespace): allreduce,
#     a 1 MiB ring exchange and a broadcast, every element checked;
#   - NetPIPE's ping-pong in its integrity mode (-i), 1 B to 1 MiB, 2 ranks.
# UCX is limited to rc_verbs and ud_verbs (and self): no shared memory or TCP path exists between
# the ranks, so everything they exchange crosses the veth as RoCE; both devices' packet counters
# must grow by each job.
#   mpi.sh UROCE openmpi|mpich
set -u -o pipefail

UROCE=$1 MPI=$2
# shellcheck source=../run/lib.sh
. "$(dirname "$0")/../run/lib.sh"
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

need_root_netns
case $MPI in
openmpi) CC=mpicc.openmpi RUN=mpirun.openmpi NP=NPopenmpi ;;
mpich) CC=mpicc.mpich RUN=mpiexec.mpich NP=NPmpich2 ;;
*) fail "unknown MPI '$MPI' (openmpi or mpich)" ;;
esac
command -v $CC >/dev/null && command -v $RUN >/dev/null || skip "$MPI is not installed"
command -v $NP >/dev/null || skip "NetPIPE for $MPI ($NP) is not installed"
netns_setup

$CC -O2 -Wall -Werror -o "$T/mpi_check" "$(dirname "$0")/mpi_check.c" ||
	fail "$CC cannot build mpi_check.c"
sent() { # a|b
	in$1 "$UROCE" stats "uroce_${1}0" | awk '$1 == "sent_pkts" { print $2 }'
}

# Run a job; it must exit 0, print WANT, and send RoCE packets from both namespaces.
job() { # WANT RANKS PROGRAM ARGS...
	local want=$1 a0 b0 a1 b1 st
	shift
	a0=$(sent a) b0=$(sent b)
	mpi_job "$MPI" "$@" >"$T/job.out" 2>&1
	st=$?
	a1=$(sent a) b1=$(sent b)
	grep -v 'UCX  WARN  network device' "$T/job.out" | tail -n 3
	loader_clean "$T/job.out" "$MPI $*"
	[ $st -eq 0 ] || {
		tail -n 20 "$T/job.out" >&2
		fail "$MPI, $1 ranks, $2: exit status $st"
	}
	grep -q -- "$want" "$T/job.out" || fail "$MPI, $1 ranks, $2: no '$want' in its output"
	echo "RoCE packets sent: a $((a1 - a0)), b $((b1 - b0))"
	[ $((a1 - a0)) -ge 100 ] && [ $((b1 - b0)) -ge 100 ] ||
		fail "$MPI, $1 ranks, $2: the ranks did not talk over uroce"
}

echo "--- $MPI: mpi_check, 2 ranks"
job "mpi_check: 2 ranks: allreduce, ring and bcast ok" 2 "$T/mpi_check"
echo "--- $MPI: mpi_check, 4 ranks"
job "mpi_check: 4 ranks: allreduce, ring and bcast ok" 4 "$T/mpi_check"
echo "--- $MPI: NetPIPE integrity check, 1 B to 1 MiB"
job "Integrity check passed" 2 $NP -i -u 1048576
grep -q -i "fail" "$T/job.out" && fail "NetPIPE: an integrity check failed"
echo PASS
