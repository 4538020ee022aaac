#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Process death in every phase (issue 21 item 3): a uroce process is killed with SIGKILL and its
# peer must learn of it within the configured time, and a device it shared must stay clean for
# the processes that remain.
#   death.sh UROCE CM_DEATH SCAPY_ICRC ENC [PHASE...]
# ENC: v2v4, v2v6 (RoCE v2 between two namespaces joined by a veth), v1 (RoCE v1-only devices).
# PHASE (all by default), each with tests/rdmacm/cm_death.c stopped where it is killed:
#   connect-srv  the server dies after the REQ, before its REP: the client's connect ends with
#                REJECTED or UNREACHABLE within the CM's retry time
#   connect-cli  the client dies after the REP, before its RTU: the server's pending connection
#                ends likewise (the REP's retries)
#   transfer-srv, transfer-cli  one side dies mid-transfer: the other gets DISCONNECTED from the
#                dead process's last will (the DREQ its watchdog sends, src/compat/rdmacm/will.h)
#                within a second
#   disc         the server dies after the client's DREQ, before its DREP: the client's
#                DISCONNECTED comes within the DREQ's retry time
#   verbs        the view of a raw verbs peer (no last will): the server, its watchdog ended
#                first, dies while the client streams RDMA WRITEs (retry count 6, ACK timeout
#                14); the client's next completion is "transport retry counter exceeded" within
#                the QP's timeout x (retries + 1). (uroce, like the kernel's rxe, retries for
#                ever with retry count 7, which perftest and ibv_*_pingpong use.)
#   shared       three processes on one device: a server whose client runs on the same device,
#                and a second server with a client in the other namespace; the first server
#                dies: its client gets DISCONNECTED (the will's DREQ through the device's own
#                steering), the second pair goes on transferring, the membership files and the
#                QPN slots lose the dead process, the device's counters still read, and a new
#                pair joins the device and transfers
# The veth's CM MADs are captured for the whole run: every one (the watchdogs' among them) has a
# valid ICRC and decodes in tshark (check_capture), and tshark sees the REJs and DREQs that only
# the wills can have sent. Exits 0, 1 (fail) or 77 (skip).
set -u -o pipefail

# SCAPY_ICRC is read by lib.sh's check_capture.
# shellcheck disable=SC2034
UROCE=$1 CM_DEATH=$2 SCAPY_ICRC=$3 ENC=$4
shift 4
PHASES=${*:-connect-srv connect-cli transfer-srv transfer-cli disc verbs shared}
# shellcheck source=../run/lib.sh
. "$(dirname "$0")/../run/lib.sh"

need_root_netns
command -v tshark >/dev/null || fail "tshark is not installed: run scripts/setup"
command -v dumpcap >/dev/null || fail "dumpcap is not installed: run scripts/setup"
netns_setup
# Checksums computed when sent, not left to the veth: the capture then shows them final.
ina ethtool -K a0 tx off >/dev/null || fail "ethtool -K a0 tx off"
inb ethtool -K b0 tx off >/dev/null || fail "ethtool -K b0 tx off"

# The CM's retry time: 200 ms per try, 3 retries (0.8 s before UNREACHABLE or a DREQ's timeout).
export UROCE_CM_TIMEOUT_MS=200 UROCE_CM_RETRIES=3
# Up to five programs at once on a machine of two cores: no progress thread spins.
export UROCE_SPIN=0
CM_LIMIT_MS=3000   # the CM's retry time, with room for a loaded machine
WILL_LIMIT_MS=2000 # a will's DREQ: milliseconds, with the same room
QP_LIMIT_MS=3000   # cm_death -m verbs: timeout 14 (67 ms) x (6 retries + 1) = 470 ms, with room

ADDR=$B4 DEVA=uroce_a0 DEVB=uroce_b0
case $ENC in
v2v4) ;;
v2v6) ADDR=$B6 ;;
v1)
	DEVA=urv1_a0 DEVB=urv1_b0
	ina "$UROCE" link add $DEVA netdev a0 roce v1 || fail "uroce link add $DEVA"
	inb "$UROCE" link add $DEVB netdev b0 roce v1 || fail "uroce link add $DEVB"
	;;
*) fail "unknown encapsulation '$ENC'" ;;
esac
# The CM's MADs on the veth (UD SEND Only, opcode 0x64, to QP1: nothing else is a UD SEND here),
# captured in B for the whole run. Only those: a capture of a veth shows each UDP GSO send as one
# frame of several packets, whose ICRC no checker can match.
case $ENC in
v2v4) CAPF='ip and udp port 4791 and udp[8] = 0x64' ;;
v2v6) CAPF='ip6 and udp port 4791 and ip6[48] = 0x64' ;;
v1) CAPF='ether proto 0x8915 and ether[54] = 0x64' ;;
esac
capture_b0 "$T/veth.pcap" "$CAPF" # the probes are left out before the capture is checked
cap=$CAP

ms() { echo $(($(date +%s%N) / 1000000)); }

# Wait (bounded: 10 s) until FILE has a line matching RE; fails when PID ends first.
wait_line() { # FILE RE PID WHAT
	for _ in $(seq 200); do
		grep -qE "$2" "$1" 2>/dev/null && return 0
		kill -0 "$3" 2>/dev/null || break
		timeout 0.05 tail -f /dev/null
	done
	grep -qE "$2" "$1" 2>/dev/null && return 0
	tail -n 5 "$T"/*.out "$T"/*.err >&2 2>/dev/null
	fail "$4: no line '$2' in $(basename "$1")"
}

# The pid of the program started as background job JOB (uroce run execs it inside `ip netns
# exec`, `env` and `timeout`): the process named NAME among JOB's descendants.
prog_pid() { # JOB NAME
	local p=$1 c
	for _ in 1 2 3 4 5 6; do
		[ "$(cat /proc/"$p"/comm 2>/dev/null)" = "$2" ] && { echo "$p"; return 0; }
		c=$(cat /proc/"$p"/task/*/children 2>/dev/null | awk '{ print $1; exit }')
		[ -n "$c" ] || break
		p=$c
	done
	fail "no process $2 under job $1"
}

N=0 # programs started, for unique file names and ports
# Start cm_death in namespace a|b; sets $job and $out.
start() { # a|b ARGS...
	local ns=$1
	shift
	N=$((N + 1))
	out=$T/p$N.out
	in$ns timeout 60 "$UROCE" run --no-sysfs -- "$CM_DEATH" "$@" >"$out" 2>"$T/p$N.err" &
	job=$!
}

# The survivor (job PID, output FILE) reports a line matching RE within LIMIT ms of T0 (the
# time on cm_death's "event ... at T" line; for other programs the time the test saw it end),
# and exits with status WANT.
survivor() { # WHAT PID FILE T0 LIMIT WANT RE
	local what=$1 pid=$2 f=$3 t0=$4 limit=$5 want=$6 re=$7 st el at
	wait_exit "$pid" 20
	st=$?
	el=$(($(ms) - t0))
	at=$(grep -E "$re" "$f" | head -n 1 | sed -nE 's/.* at ([0-9]+)$/\1/p')
	[ -z "$at" ] || el=$((at - t0))
	echo "$what: $(grep -E "$re" "$f" | head -n 1 | sed -E 's/ at [0-9]+$//') ${el} ms after the kill; exit $st"
	[ "$st" -eq "$want" ] || { tail -n 5 "$f" "${f%.out}.err" >&2; fail "$what: exit $st, want $want"; }
	grep -qE "$re" "$f" || { cat "$f" >&2; fail "$what: no line '$re'"; }
	[ "$el" -le "$limit" ] || fail "$what: took $el ms (limit $limit ms)"
}

# SIGKILL the program NAME of background job JOB; T0 is the time of the kill (ms).
kill_job() { # JOB NAME
	local p
	p=$(prog_pid "$1" "$2") || exit 1
	T0=$(ms)
	kill -KILL "$p"
	wait "$1" 2>/dev/null
}

PORT=7200
# On a new port, a server in b (mode SMODE) and, once it listens, a client in a (mode CMODE):
# s/so the server's job and output, c/co the client's.
start_pair() { # SMODE CMODE PHASE
	PORT=$((PORT + 1))
	start b -l "$ADDR" -p $PORT -m "$1"
	s=$job so=$out
	wait_line "$so" '^listening' $s "$3"
	start a -c "$ADDR" -p $PORT -m "$2"
	c=$job co=$out
}

phase_connect_srv() {
	start_pair hold run connect-srv
	wait_line "$so" '^request' $s "connect-srv"
	kill_job $s cm_death
	survivor connect-srv $c "$co" "$T0" $CM_LIMIT_MS 3 'event RDMA_CM_EVENT_(REJECTED|UNREACHABLE)'
	REJ_WILLS=$((REJ_WILLS + 1))
}

phase_connect_cli() {
	start_pair run nortu connect-cli
	wait_line "$co" '^response' $c "connect-cli"
	kill_job $c cm_death
	survivor connect-cli $s "$so" "$T0" $CM_LIMIT_MS 3 'event RDMA_CM_EVENT_(REJECTED|UNREACHABLE|CONNECT_ERROR)'
	! grep -q '^established' "$so" || fail "connect-cli: the server saw ESTABLISHED without an RTU"
	REJ_WILLS=$((REJ_WILLS + 1))
}

WILLS=0     # DREQs only a will can have sent
REJ_WILLS=0 # REJs likewise
phase_transfer() { # srv|cli
	start_pair run run "transfer-$1"
	wait_line "$co" '^rounds 100$' $c "transfer-$1"
	local v=$s w=$c wo=$co
	[ "$1" = cli ] && v=$c w=$s wo=$so
	kill_job $v cm_death
	survivor "transfer-$1" $w "$wo" "$T0" $WILL_LIMIT_MS 0 'event RDMA_CM_EVENT_DISCONNECTED'
	WILLS=$((WILLS + 1))
}

phase_disc() {
	start_pair nodrep disc disc
	wait_line "$so" 'event RDMA_CM_EVENT_DISCONNECTED' $s "disc"
	kill_job $s cm_death
	survivor disc $c "$co" "$T0" $CM_LIMIT_MS 0 'event RDMA_CM_EVENT_DISCONNECTED'
}

# The counter NAME of device DEV in namespace a|b (uroce stats).
counter() { # a|b DEV NAME
	in$1 "$UROCE" stats "$2" 2>/dev/null | awk -v n="$3" '$1 == n { print $2; exit }'
}

# The last-will watchdog (uroce-cm-will) of process PID in namespace NS: the one whose pipe
# (fd 4) PID holds the other end of.
will_of() { # NS PID
	local w pipe
	for w in $(ip netns pids "$1"); do
		[ "$(cat /proc/"$w"/comm 2>/dev/null)" = uroce-cm-will ] || continue
		pipe=$(readlink /proc/"$w"/fd/4) || continue
		for f in /proc/"$2"/fd/*; do
			[ "$(readlink "$f")" = "$pipe" ] && { echo "$w"; return 0; }
		done
	done
	return 1
}

phase_verbs() {
	start_pair verbs verbs verbs
	wait_line "$co" '^rounds 100$' $c "verbs"
	# A raw verbs program has no last will: the server's is ended first (it is the test's, as
	# a child of the server), so that only the client's QP can tell.
	local v w
	v=$(prog_pid $s cm_death) || exit 1
	w=$(will_of "$NSB" "$v") || fail "verbs: no watchdog for the server $v"
	kill -KILL "$w"
	kill_job $s cm_death
	survivor verbs $c "$co" "$T0" $QP_LIMIT_MS 4 '^wc transport retry counter exceeded'
	! grep -q 'event RDMA_CM_EVENT_DISCONNECTED' "$co" ||
		fail "verbs: the client was disconnected (no will should have spoken)"
}

# The members of the membership files under RUNB/share, one pid a line.
share_pids() {
	cat "$RUNB"/share/net*/* 2>/dev/null | awk '$1 != "gen" { print $1 }'
}

phase_shared() {
	PORT=$((PORT + 1))
	local p1=$PORT p2=$((PORT + 1))
	PORT=$((PORT + 2))
	start b -l "$ADDR" -p $p1 -m run
	local s1=$job s1o=$out
	wait_line "$s1o" '^listening' $s1 "shared"
	start b -c "$ADDR" -p $p1 -m run
	local c1=$job c1o=$out
	start b -l "$ADDR" -p $p2 -m run
	local s2=$job s2o=$out
	wait_line "$s2o" '^listening' $s2 "shared"
	start a -c "$ADDR" -p $p2 -m run
	local c2=$job c2o=$out
	wait_line "$c1o" '^rounds 100$' $c1 "shared"
	wait_line "$c2o" '^rounds 100$' $c2 "shared"
	local victim
	victim=$(prog_pid $s1 cm_death) || exit 1
	share_pids | grep -qx "$victim" || fail "shared: the server is in no membership file"
	kill_job $s1 cm_death
	survivor "shared (client on the same device)" $c1 "$c1o" "$T0" $WILL_LIMIT_MS 0 \
		'event RDMA_CM_EVENT_DISCONNECTED'
	# The other pair goes on: the next thousand rounds after the kill.
	local r0
	r0=$(awk '/^rounds/ { r = $2 } END { print r + 0 }' "$c2o")
	wait_line "$c2o" "^rounds $(((r0 / 1000 + 1) * 1000))\$" $c2 "shared: the surviving pair"
	# No trace of the dead server: its pid leaves the membership files (the survivors prune it
	# when its pidfd fires).
	for _ in $(seq 200); do
		share_pids | grep -qx "$victim" || break
		timeout 0.05 tail -f /dev/null
	done
	! share_pids | grep -qx "$victim" || {
		cat "$RUNB"/share/net*/* >&2
		fail "shared: the dead server $victim is still in a membership file"
	}
	# A new pair joins the device and transfers.
	start b -l "$ADDR" -p $PORT -m run
	local s3=$job s3o=$out
	wait_line "$s3o" '^listening' $s3 "shared: a new server"
	start b -c "$ADDR" -p $PORT -m run
	local c3=$job c3o=$out
	wait_line "$c3o" '^rounds 100$' $c3 "shared: a new client"
	# Its QPN slot was taken again from a file without the dead server's.
	! awk '{ print $2 }' "$RUNB/share/slots" | grep -qx "$victim" ||
		fail "shared: the dead server $victim still holds a QPN slot"
	# The device's counters still read, and count the survivors' traffic (each process adds
	# its counts to the shared file every second: host/ctx.c).
	local a b
	a=$(counter b $DEVB io_rx_pkts)
	[ -n "$a" ] || fail "shared: $DEVB's counters do not read"
	for _ in $(seq 100); do
		b=$(counter b $DEVB io_rx_pkts)
		[ "${b:-0}" -gt "$a" ] && break
		kill -0 $c2 2>/dev/null || break
		timeout 0.05 tail -f /dev/null
	done
	[ "${b:-0}" -gt "$a" ] || fail "shared: $DEVB's io_rx_pkts did not grow ($a, then $b)"
	echo "shared: the second pair at $(tail -n 1 "$c2o"), $DEVB io_rx_pkts $a -> $b"
	# Everyone else ends: the servers' clients are killed; their servers get DISCONNECTED.
	kill_job $c2 cm_death
	survivor "shared: end" $s2 "$s2o" "$T0" $WILL_LIMIT_MS 0 'event RDMA_CM_EVENT_DISCONNECTED'
	kill_job $c3 cm_death
	survivor "shared: end" $s3 "$s3o" "$T0" $WILL_LIMIT_MS 0 'event RDMA_CM_EVENT_DISCONNECTED'
	WILLS=$((WILLS + 1)) # c2's (the others' stayed in B)
}

for p in $PHASES; do
	echo "--- $ENC: $p"
	case $p in
	connect-srv) phase_connect_srv ;;
	connect-cli) phase_connect_cli ;;
	transfer-srv) phase_transfer srv ;;
	transfer-cli) phase_transfer cli ;;
	disc) phase_disc ;;
	verbs) phase_verbs ;;
	shared) phase_shared ;;
	*) fail "unknown phase '$p'" ;;
	esac
done

# The capture: every frame valid, and the wills' messages on the wire (each will sends its
# message twice): REJs that only the dead can have sent (connect-*), DREQs (transfer-*, shared).
kill -TERM "$(prog_pid $cap dumpcap)"
wait $cap 2>/dev/null
tshark -r "$T/veth.pcap" -Y '!(udp.dstport == 9)' -F pcap -w "$T/veth.roce.pcap" 2>/dev/null ||
	fail "tshark cannot read the capture"
check_capture "$T/veth.roce.pcap" $ENC 1
tshark -r "$T/veth.roce.pcap" -Y infiniband.mad -T fields -e infiniband.mad.attributeid \
	>"$T/mads.txt" 2>/dev/null
rejs=$(grep -c '^0x0012$' "$T/mads.txt") dreqs=$(grep -c '^0x0015$' "$T/mads.txt")
echo "on the veth: $rejs REJs (at least $((2 * REJ_WILLS)) from wills), $dreqs DREQs (at least $((2 * WILLS)) from wills)"
[ "$rejs" -ge $((2 * REJ_WILLS)) ] || fail "expected at least $((2 * REJ_WILLS)) REJs on the veth"
[ "$dreqs" -ge $((2 * WILLS)) ] || fail "expected at least $((2 * WILLS)) DREQs on the veth"
echo PASS
