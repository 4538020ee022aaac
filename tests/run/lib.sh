# SPDX-License-Identifier: MIT
# Shared by the tests/run scripts (sourced, not run): two network namespaces joined by a veth pair
# a0 <-> b0 (MTU 9000, 198.18.10.1/.2 and fd00:198:18::1/::2), each with a run-time directory of
# its own, and unmodified programs run in them under `uroce run`.
# The sourcing script sets UROCE (the uroce binary) and calls netns_setup; cleanup runs on exit.
# Needs root (else exit 77, a skip). No fixed sleeps: waits are bounded polls.

# shellcheck source=../lib/tshark.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/tshark.sh"

# shellcheck source=../lib/verdict.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/verdict.sh"

A4=198.18.10.1 B4=198.18.10.2
A6=fd00:198:18::1 B6=fd00:198:18::2

need_root_netns() {
	[ "$(id -u)" -eq 0 ] || skip "needs root for network namespaces (and AF_PACKET for RoCE v1)"
	command -v ip >/dev/null || skip "no ip command (iproute2)"
	command -v ss >/dev/null || skip "no ss command (iproute2)"
}

need_ibverbs_utils() {
	command -v ibv_rc_pingpong >/dev/null || skip "ibverbs-utils is not installed"
}

T=$(mktemp -d "${TMPDIR:-/tmp}/uroce-run.XXXXXX") || exit 1
NSA=uroce-ra-$$ NSB=uroce-rb-$$
RUNA=$T/run-a RUNB=$T/run-b
cleanup() {
	for pid in $(jobs -p); do kill "$pid" 2>/dev/null; done
	# What our jobs started inside our namespaces (the programs under `ip netns exec`).
	for ns in "$NSA" "$NSB"; do
		for pid in $(ip netns pids "$ns" 2>/dev/null); do kill "$pid" 2>/dev/null; done
	done
	wait 2>/dev/null
	ip netns del "$NSA" 2>/dev/null
	ip netns del "$NSB" 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT
# Killed (ctest's timeout, a closed pipe): still remove the namespaces.
trap 'exit 143' TERM INT HUP PIPE
mkdir "$RUNA" "$RUNB" || exit 1

# A sanitizer build of the library: `uroce run` preloads the runtime itself (run.c); the Debian
# programs do not free everything before they exit, and our own leaks show in the C tests.
sanitized() {
	ldd "$(dirname "$UROCE")/lib/libibverbs.so.1" 2>/dev/null | grep -E 'lib(asan|ubsan)\.so' >/dev/null
}
if sanitized; then
	export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0:exitcode=99"
	export UBSAN_OPTIONS="${UBSAN_OPTIONS:+$UBSAN_OPTIONS:}exitcode=98:print_stacktrace=1"
fi

netns_setup() {
	ip netns add "$NSA" 2>/dev/null || skip "cannot create a network namespace"
	ip netns add "$NSB" 2>/dev/null || skip "cannot create a second network namespace"
	ip -n "$NSA" link set lo up || exit 1
	ip -n "$NSB" link set lo up || exit 1
	ip -n "$NSA" link add a0 type veth peer name b0 2>/dev/null || skip "no veth support"
	ip -n "$NSA" link set b0 netns "$NSB" || exit 1
	# MTU 9000: active MTU 4096. No IPv6 link-local address (while tentative the device cannot
	# bind it); the IPv6 addresses skip DAD for the same reason.
	ip -n "$NSA" link set a0 mtu 9000 addrgenmode none up || exit 1
	ip -n "$NSB" link set b0 mtu 9000 addrgenmode none up || exit 1
	ip -n "$NSA" addr add $A4/24 dev a0 || exit 1
	ip -n "$NSB" addr add $B4/24 dev b0 || exit 1
	ip -n "$NSA" addr add $A6/64 dev a0 nodad || exit 1
	ip -n "$NSB" addr add $B6/64 dev b0 nodad || exit 1
}

ina() { ip netns exec "$NSA" env UROCE_RUNDIR="$RUNA" "$@"; }
inb() { ip netns exec "$NSB" env UROCE_RUNDIR="$RUNB" "$@"; }

# The loader found every symbol at its version, and no sanitizer spoke.
loader_clean() { # FILE WHAT
	if grep -qE 'version .* not found|no version information|symbol lookup error|Sanitizer|runtime error' "$1"; then
		cat "$1" >&2
		fail "$2: loader or sanitizer messages"
	fi
}

# The index of GID ADDR (::ffff:a.b.c.d or an IPv6 address) of type VER (v1 or v2) in DEV's
# table, from `ibv_devinfo -v` under `uroce run` (which prints RoCE v2 GIDs compressed and RoCE v1
# GIDs in full, as rdma-core's does); cross-checked with `uroce gids` (the same table seen
# without libibverbs; GIDs in full).
gid_index() { # a|b DEV ADDR VER
	local in=in$1 dev=$2 addr=$3 ver=$4 i j full
	full=$(/usr/bin/python3 -c 'import ipaddress, sys; print(ipaddress.ip_address(sys.argv[1]).exploded)' "$addr")
	i=$($in timeout 30 "$UROCE" run -- ibv_devinfo -v -d "$dev" 2>"$T/gid.err" |
		awk -v a="$addr, RoCE $ver" -v b="$full, RoCE $ver" '
			/GID\[ *[0-9]+\]:/ {
				line = $0; sub(/^[ \t]*GID\[ */, "", line); idx = line; sub(/\].*/, "", idx)
				sub(/^[^:]*\]:[ \t]*/, "", line)
				if (line == a || line == b) { print idx; exit }
			}')
	j=$($in "$UROCE" gids "$dev" 2>>"$T/gid.err" |
		awk -F'\t' -v g="$full" -v v="$ver" '$4 == g && $(NF - 1) == v { print $3; exit }')
	if [ -z "$i" ] || [ "$i" != "$j" ]; then
		cat "$T/gid.err" >&2
		$in "$UROCE" gids "$dev" >&2
		fail "$dev: GID $addr RoCE $ver: index '$i' from ibv_devinfo -v, '$j' from uroce gids"
	fi
	echo "$i"
}

# Wait (bounded) until a process of run-time directory RUNDIR listens with rdma_cm on port space
# PS (0x0106 TCP, 0x0111 UDP) and PORT: its claim of the service ID (PS << 16 | PORT) is in a
# membership file of the device's sharing group (src/host/io/share_members.h). Fails when PID
# ends first.
wait_cm_listen() { # RUNDIR PS PORT PID
	local sid
	sid=$(printf '0x%x' $((($2 << 16) | $3)))
	for _ in $(seq 400); do
		grep -rqsw -- "$sid" "$1/share" && return 0
		kill -0 "$4" 2>/dev/null || return 1
		timeout 0.05 tail -f /dev/null
	done
	return 1
}

# Wait (bounded) for background job PID to end; its status, or 124 when it is still running
# after SECONDS (then the stacks of the rdma-core programs still running are printed, for the
# log, and the job is left to the cleanup).
wait_exit() { # PID SECONDS
	local n=$(($2 * 20))
	while [ $n -gt 0 ] && kill -0 "$1" 2>/dev/null; do
		timeout 0.05 tail -f /dev/null
		n=$((n - 1))
	done
	if kill -0 "$1" 2>/dev/null; then
		echo "--- still running after $2 s:" >&2
		for p in $(pgrep -x 'rping|ucmatose|udaddy|rdma_server|rdma_client|uroce_ownqp' || true); do
			echo "== $p: $(tr '\0' ' ' </proc/"$p"/cmdline)" >&2
			command -v gdb >/dev/null &&
				gdb -p "$p" -batch -ex 'thread apply all bt 10' 2>/dev/null |
				grep -E '^#|^Thread' >&2
		done
		return 124
	fi
	wait "$1"
}

wait_listen() { # a|b PORT SERVER-PID
	for _ in $(seq 200); do
		in$1 ss -ltnH "sport = :$2" | grep . >/dev/null && return 0
		kill -0 "$3" 2>/dev/null || return 1
		sleep 0.05
	done
	return 1
}

# Check a capture: `uroce pcap-check` (every ICRC valid, nothing malformed), tshark (every frame
# decodes as InfiniBand in the expected encapsulation; no malformed frame or expert error, with IP
# and UDP checksum validation on), and scapy (tests/io/scapy_icrc.py: scapy's ICRC for v2/IPv4,
# the zlib reference for v2/IPv6 and v1). At least MIN RoCE frames.
# Capture b0 (in B, both directions) into FILE, classic pcap, with dumpcap: FILTER, and the
# datagrams to B's UDP port 9. dumpcap says "Capturing on" before its filter is in place, so the
# capture counts as started once it has written such a probe, sent from A (the file growing past
# its header); waited for, bounded (10 s). Sets CAP, the capture's job. Readers leave the probes
# out (udp.dstport == 9).
capture_b0() { # FILE FILTER [DUMPCAP-OPTION...]
	local f=$1 filt=$2
	shift 2
	inb dumpcap -q -P "$@" -i b0 -f "($filt) or (udp dst port 9)" -w "$f" 2>"$T/dumpcap.err" &
	CAP=$!
	for _ in $(seq 200); do
		[ "$(stat -c %s "$f" 2>/dev/null || echo 0)" -gt 24 ] && return 0
		kill -0 $CAP 2>/dev/null || break
		grep -q "Capturing on" "$T/dumpcap.err" 2>/dev/null &&
			ina bash -c "echo probe >/dev/udp/$B4/9" 2>/dev/null
		timeout 0.05 tail -f /dev/null
	done
	cat "$T/dumpcap.err" >&2
	fail "dumpcap did not start capturing on b0"
}

check_capture() { # FILE ENCAP(v2v4|v2v6|v1) MIN
	local f=$1 enc=$2 min=$3 out st total ib inenc bad filt
	out=$("$UROCE" pcap-check -q "$f" 2>&1)
	st=$?
	echo "$out" | tail -n 1
	[ "$st" -eq 0 ] || {
		echo "$out" | head -20 >&2
		fail "$f: uroce pcap-check exited $st"
	}
	local roce ok
	roce=$(echo "$out" | sed -nE 's/.*: ([0-9]+) packets, ([0-9]+) RoCE \(([0-9]+) ICRC ok.*/\2/p')
	ok=$(echo "$out" | sed -nE 's/.*: ([0-9]+) packets, ([0-9]+) RoCE \(([0-9]+) ICRC ok.*/\3/p')
	[ -n "$roce" ] && [ "$roce" -ge "$min" ] && [ "$roce" = "$ok" ] ||
		fail "$f: $roce RoCE frames, $ok with a valid ICRC; expected all of at least $min"

	case $enc in
	v2v4) filt='ip && udp.dstport == 4791 && infiniband.bth' ;;
	v2v6) filt='ipv6 && udp.dstport == 4791 && infiniband.bth' ;;
	v1) filt='eth.type == 0x8915 && infiniband.grh && infiniband.bth' ;;
	esac
	local topt=("${TSHARK_CHECK[@]}")
	total=$(tshark "${topt[@]}" -r "$f" -T fields -e frame.number 2>/dev/null | wc -l)
	ib=$(tshark "${topt[@]}" -r "$f" -Y infiniband -T fields -e frame.number 2>/dev/null | wc -l)
	inenc=$(tshark "${topt[@]}" -r "$f" -Y "$filt" -T fields -e frame.number 2>/dev/null | wc -l)
	bad=$(tshark "${topt[@]}" -r "$f" -Y '_ws.malformed || _ws.expert.severity >= "Warning"' \
		-T fields -e frame.number -e _ws.expert.message 2>/dev/null)
	echo "tshark: $total frames, $ib InfiniBand, $inenc as $enc, $(echo -n "$bad" | grep -c .) with errors or warnings"
	[ "$total" -eq "$roce" ] && [ "$ib" -eq "$total" ] && [ "$inenc" -eq "$total" ] ||
		fail "$f: tshark decodes $ib of $total frames as InfiniBand, $inenc as $enc (pcap-check: $roce RoCE)"
	[ -z "$bad" ] || {
		echo "$bad" | head -10 >&2
		fail "$f: tshark reports malformed frames or expert warnings/errors"
	}

	local mins
	case $enc in
	v2v4) mins="$min 0 0" ;;
	v2v6) mins="0 $min 0" ;;
	v1) mins="0 0 $min" ;;
	esac
	# shellcheck disable=SC2086
	/usr/bin/python3 "$SCAPY_ICRC" "$f" 4791 $mins >"$T/scapy.out" 2>&1
	st=$?
	tail -n 1 "$T/scapy.out"
	[ "$st" -eq 0 ] || {
		head -20 "$T/scapy.out" >&2
		fail "$f: scapy_icrc.py exited $st"
	}
}
