# SPDX-License-Identifier: MIT
# Shared by tests/apps/*.sh and bench/apps/*.sh (sourced, after tests/run/lib.sh and
# netns_setup): how UCX programs and MPI jobs are started in the two namespaces, over uroce or
# over TCP on the same veth.

# CMD: the command that runs PROGRAM in a|b with UCX limited to TLS on that side's DEVICE (or
# its uroce device when DEVICE is empty); run "${CMD[@]}" (in the background its pid is that of
# `timeout`, which passes a kill on to the program). AS: a prefix that runs it as another user.
AS=()
ucx_cmd() { # a|b TLS DEVICE PROGRAM ARGS...
	local side=$1 tls=$2 dev=${3:-uroce_${1}0:1} ns=$NSA run=$RUNA
	shift 3
	[ "$side" = b ] && ns=$NSB run=$RUNB
	CMD=(ip netns exec "$ns" "${AS[@]}" env UROCE_RUNDIR="$run" UCX_NET_DEVICES="$dev"
		UCX_TLS="$tls" UCX_SOCKADDR_TLS_PRIORITY=rdmacm timeout 60 "$UROCE" run -- "$@")
}

# An MPI job of RANKS ranks, half in each namespace, started by the MPI's own launcher in
# namespace a (itself under `uroce run`; the ranks of b start through netns_rsh.sh, under
# `uroce run` there). MPI_PATH: uroce (UCX on rc_verbs and ud_verbs only: no shared memory or
# TCP path exists between the ranks) or tcp (Open MPI's ob1 with btl tcp; MPICH's UCX on tcp).
# Open MPI runs with --bind-to none: each namespace's launcher would bind its first rank to the
# same first core, as if the namespaces were two hosts.
MPI_PATH=uroce
mpi_job() { # openmpi|mpich RANKS PROGRAM ARGS...
	local mpi=$1 n=$2 rsh
	shift 2
	rsh=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/netns_rsh.sh
	export RSH_UROCE=$UROCE RSH_HOSTS="$A4=$NSA=$RUNA $B4=$NSB=$RUNB"
	local tls=rc_verbs,ud_verbs,self devs=uroce_a0:1,uroce_b0:1
	[ "$MPI_PATH" = tcp ] && tls=tcp,self devs=a0,b0
	case $mpi in
	openmpi)
		local pml=(--mca pml ucx -x UCX_TLS=$tls -x UCX_NET_DEVICES=$devs)
		[ "$MPI_PATH" = tcp ] && pml=(--mca pml ob1 --mca btl tcp,self
			--mca btl_tcp_if_include 198.18.10.0/24)
		printf '%s slots=%d\n%s slots=%d\n' "$A4" $((n / 2)) "$B4" $((n / 2)) >"$T/hosts"
		ina timeout 120 "$UROCE" run -- mpirun.openmpi --allow-run-as-root --hostfile "$T/hosts" \
			-np "$n" --map-by node --bind-to none --mca plm_rsh_agent "$rsh" \
			--mca oob_tcp_if_include 198.18.10.0/24 "${pml[@]}" "$@"
		;;
	mpich)
		# -genvnone: each rank keeps the environment of its own side (its run-time directory).
		ina timeout 120 "$UROCE" run -- mpiexec.mpich -launcher ssh -launcher-exec "$rsh" \
			-genvnone -hosts "$A4:$((n / 2)),$B4:$((n / 2))" -n "$n" \
			-genv UCX_TLS $tls -genv UCX_NET_DEVICES $devs "$@"
		;;
	esac
}
