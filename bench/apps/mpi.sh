#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# MPI ping-pong (NetPIPE) between two ranks in two network namespaces, for Debian's Open MPI and
# MPICH, over uroce (UCX on rc_verbs) and over each MPI's TCP path on the same veth (Open MPI's
# btl tcp, MPICH's UCX on tcp): 8 B latency (half round trip) and 1 MiB bandwidth. Prints result
# lines (bench/apps.sh's format); progress on stderr. Needs root.
#   UROCE=PATH bench/apps/mpi.sh
set -u -o pipefail

REPO=$(cd "$(dirname "$0")/../.." && pwd)
UROCE=${UROCE:-$REPO/build/release/uroce}
# shellcheck source=../../tests/run/lib.sh
. "$REPO/tests/run/lib.sh"
# shellcheck source=../../tests/apps/lib.sh
. "$REPO/tests/apps/lib.sh"
need_root_netns
netns_setup

# NetPIPE's result for one size, from its output file (rank 0's own, where no other process's
# warning can land, as on the terminal): "BYTES MBPS SECONDS", SECONDS the half round trip (its
# Mbps are 2^20 bit/s: the bandwidth is computed from BYTES and SECONDS).
netpipe() { # MPI PROGRAM SIZE REPS
	local mpi=$1 np=$2 size=$3 reps=$4
	echo "$mpi NetPIPE $size B over $MPI_PATH" >&2
	rm -f "$T/np.out"
	mpi_job "$mpi" 2 $np -l "$size" -u "$size" -p 0 -n "$reps" -o "$T/np.out" \
		>"$T/job.out" 2>&1 || { echo "$mpi failed: $(tail -n 3 "$T/job.out")" >&2; return 1; }
	awk -v s="$size" '$1 == s' "$T/np.out" | tail -n 1 | grep .
}

for mpi in openmpi mpich; do
	np=NPopenmpi
	[ $mpi = mpich ] && np=NPmpich2
	command -v $np >/dev/null || { echo "no $np: $mpi skipped" >&2; continue; }
	for MPI_PATH in uroce tcp; do
		line=$(netpipe $mpi $np 8 50000) &&
			printf 'mpi_%s\tpingpong\t8\tlat_us\t%s\t%s\n' $mpi $MPI_PATH \
				"$(echo "$line" | awk '{ printf "%.3f", $3 * 1e6 }')"
		line=$(netpipe $mpi $np 1048576 1000) &&
			printf 'mpi_%s\tpingpong\t1048576\tbw_gbps\t%s\t%s\n' $mpi $MPI_PATH \
				"$(echo "$line" | awk '{ printf "%.3f", $1 * 8 / $3 / 1e9 }')"
	done
done
