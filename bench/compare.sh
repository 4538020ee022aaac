#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# uroce vs TCP, side by side, in one run (issue 6). Unmodified perftest programs over uroce
# (RoCE v2 and RoCE v1) and iperf3 / sockperf over the kernel's TCP, on the same paths:
#   mtu1500   two network namespaces joined by veth, MTU 1500 (RoCE active MTU 1024)
#   mtu9000   the same at MTU 9000 (active MTU 4096)
#   lo        loopback inside one namespace (client and server share the device)
# With the throughput tests it also measures the ceilings of uroce's data paths on each path:
# kernel UDP with GSO/GRO doing a RoCE v2 packet's unavoidable work per byte (udp_ceiling.c), and
# AF_PACKET doing a RoCE v1 frame's (afpacket_ceiling.c).
# Each figure is measured -r times; the report gives medians, the uroce/TCP ratio per row, CPU
# per side (getrusage of each process through /usr/bin/time) and uroce's memory per QP (RSS with
# 8 QPs against 1). Writes results.md (Markdown tables), results.tsv (every run), compare.png and
# the raw output of each run (logs/) to the output directory. Run `compare.sh --help`.
#
# Needs root (network namespaces; AF_PACKET for RoCE v1), a Release build (scripts/build
# release) and the packages of scripts/setup. Namespaces are named ubench-*-$$, addresses are
# taken from 198.18.0.0/15 only; all is removed on exit. Waits are bounded polls. A failed case is
# recorded ("n/a (error)" in the table, its error text under "Failures") and the run goes on.
# Exit status: 0 done (whatever failed inside), 1 cannot run here, 2 bad arguments.
set -u -o pipefail

ME=${0##*/}
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/.." && pwd)

ALL_PATHS="mtu1500 mtu9000 lo"
ALL_TRANSPORTS="v2 v1 tcp udp packet"
ALL_TESTS="write_bw read_bw send_bw send_lat write_lat"
ALL_MODES="busy event"

usage() {
	cat <<EOF
usage: $ME [OPTIONS]

Throughput and latency of uroce (RoCE v2, RoCE v1; perftest) against TCP (iperf3, sockperf) on
veth at MTU 1500, veth at MTU 9000 and loopback. Needs root.

  -r N                repetitions of every figure; the report gives medians (default 3)
  -o DIR              output directory: results.md, results.tsv, compare.png, logs/
                      (default: a new directory under \${TMPDIR:-/tmp})
  -D SECONDS          duration of each throughput run (perftest -D, iperf3 -t; default 4)
  -n ITERS            iterations of each perftest latency run (default 20000); sockperf
                      runs for -D seconds
  --quick             a smoke run of about a minute: -r 1 -D 2 -n 5000, write_bw and
                      send_lat only, 64 KiB, busy-poll (options after it still apply)
  --paths LIST        comma-separated subset of: ${ALL_PATHS// /,}
  --transports LIST   subset of: ${ALL_TRANSPORTS// /,}  (tcp: iperf3 and sockperf; udp:
                      the ceiling of uroce's RoCE v2 data path, bench/udp_ceiling; packet:
                      that of its RoCE v1 path, bench/afpacket_ceiling; both with *_bw)
  --tests LIST        subset of: ${ALL_TESTS// /,}
                      (ib_<test>; TCP throughput runs with any *_bw, latency with any *_lat)
  --sizes LIST        message sizes in bytes for the *_bw tests (default 4096,65536)
  --qps LIST          QP counts for the *_bw tests (default 1,8; memory per QP needs 1 and
                      another count)
  --modes LIST        latency completion modes, subset of: ${ALL_MODES// /,}
                      (busy: poll the CQ, perftest's default; event: perftest -e)
  --progress-busy-poll
                      also let uroce's progress thread spin (uroce run --busy-poll)
  --uroce PATH        the uroce binary (default: build/release/uroce of this repository)
  --no-plot           do not write compare.png (no matplotlib needed)
  --list              print the runs that would be made, then exit (no root needed)
  -h, --help          this text

Latencies are half round trips, as both perftest and sockperf print them: perftest's
t_typical and 99/99.9 % percentiles, sockperf's 50/99/99.9 % percentiles. sockperf's smallest
message is 14 bytes (its header), so TCP latency uses 14 B against perftest's 8 B; its busy-poll
variant is a client spinning on a non-blocking recvfrom() (--nonblocked), the server blocking.
TCP throughput is one iperf3 stream writing -l SIZE, compared with every QP count.
EOF
}

bad() {
	echo "$ME: $*" >&2
	echo "Try '$ME --help'." >&2
	exit 2
}

# A comma-separated LIST, every item one of ALLOWED; prints the items space-separated.
pick() { # OPTION LIST ALLOWED
	local opt=$1 list=$2 allowed=" $3 " item out=
	[ -n "$list" ] || bad "$opt: empty list"
	for item in ${list//,/ }; do
		[[ $allowed == *" $item "* ]] || bad "$opt: unknown item '$item' (one of:${allowed% })"
		[[ " $out " == *" $item "* ]] || out+="${out:+ }$item"
	done
	echo "$out"
}
# A comma-separated list of integers in [MIN, MAX].
numbers() { # OPTION LIST MIN MAX
	local opt=$1 list=$2 item out=
	[ -n "$list" ] || bad "$opt: empty list"
	for item in ${list//,/ }; do
		if ! [[ $item =~ ^[0-9]+$ ]] || [ "$item" -lt "$3" ] || [ "$item" -gt "$4" ]; then
			bad "$opt: '$item' is not an integer from $3 to $4"
		fi
		out+="${out:+ }$item"
	done
	echo "$out"
}
integer() { # OPTION VALUE MIN MAX
	if ! [[ $2 =~ ^[0-9]+$ ]] || [ "$2" -lt "$3" ] || [ "$2" -gt "$4" ]; then
		bad "$1: '$2' is not an integer from $3 to $4"
	fi
}

REPS=3 OUT='' DUR=4 LAT_ITERS=20000 LIST_ONLY=0 PLOT=1
PATHS=$ALL_PATHS TRANSPORTS=$ALL_TRANSPORTS TESTS=$ALL_TESTS MODES=$ALL_MODES
SIZES="4096 65536" QPS="1 8"
UROCE=$REPO/build/release/uroce
RUN_OPTS=()
CMDLINE="bench/compare.sh${*:+ $*}"

while [ $# -gt 0 ]; do
	opt=$1
	case $opt in
	-h | --help)
		usage
		exit 0
		;;
	--quick)
		REPS=1 DUR=2 LAT_ITERS=5000 TESTS="write_bw send_lat" SIZES=65536 MODES=busy
		shift
		continue
		;;
	--progress-busy-poll)
		RUN_OPTS=(--busy-poll)
		shift
		continue
		;;
	--no-plot)
		PLOT=0
		shift
		continue
		;;
	--list)
		LIST_ONLY=1
		shift
		continue
		;;
	-r | -o | -D | -n | --paths | --transports | --tests | --sizes | --qps | --modes | --uroce) ;;
	--*=*) # --opt=value
		set -- "${opt%%=*}" "${opt#*=}" "${@:2}"
		continue
		;;
	-*) bad "unknown option '$opt'" ;;
	*) bad "unexpected argument '$opt' (no positional arguments)" ;;
	esac
	[ $# -ge 2 ] || bad "$opt needs a value"
	val=$2
	shift 2
	case $opt in
	-r) integer -r "$val" 1 100 && REPS=$val ;;
	-D) integer -D "$val" 1 3600 && DUR=$val ;;
	-n) integer -n "$val" 5 100000000 && LAT_ITERS=$val ;;
	-o)
		[ -n "$val" ] || bad "-o: empty directory name"
		OUT=$val
		;;
	--paths) PATHS=$(pick "$opt" "$val" "$ALL_PATHS") || exit 2 ;;
	--transports) TRANSPORTS=$(pick "$opt" "$val" "$ALL_TRANSPORTS") || exit 2 ;;
	--tests) TESTS=$(pick "$opt" "$val" "$ALL_TESTS") || exit 2 ;;
	--modes) MODES=$(pick "$opt" "$val" "$ALL_MODES") || exit 2 ;;
	--sizes) SIZES=$(numbers "$opt" "$val" 1 67108864) || exit 2 ;;
	--qps) QPS=$(numbers "$opt" "$val" 1 64) || exit 2 ;;
	--uroce) UROCE=$val ;;
	esac
done

# The RoCE versions run on a path (every path carries both).
roce_on() {
	local tr
	for tr in v2 v1; do
		has "$TRANSPORTS" $tr && echo $tr
	done
	return 0
}

# The plan: one line per run, "KIND PATH TRANSPORT TEST SIZE QPS MODE REP", repetitions
# outermost within a path so that drift (other load on the machine) spreads over all cases.
has() { [[ " $1 " == *" $2 "* ]]; }
plan() {
	local path rep t tr s q m any_bw=0 any_lat=0
	for t in $TESTS; do
		case $t in
		*_bw) any_bw=1 ;;
		*_lat) any_lat=1 ;;
		esac
	done
	for path in $PATHS; do
		for rep in $(seq "$REPS"); do
			for t in $TESTS; do
				case $t in
				*_bw)
					for s in $SIZES; do
						for q in $QPS; do
							for tr in $(roce_on "$path"); do
								echo "perftest $path $tr $t $s $q - $rep"
							done
						done
					done
					;;
				*_lat)
					for m in $MODES; do
						for tr in $(roce_on "$path"); do echo "perftest $path $tr $t 8 1 $m $rep"; done
					done
					;;
				esac
			done
			if [ $any_bw = 1 ]; then
				for tr in udp packet; do
					has "$TRANSPORTS" $tr && echo "ceiling $path $tr ceiling 0 1 - $rep"
				done
			fi
			has "$TRANSPORTS" tcp || continue
			if [ $any_bw = 1 ]; then
				for s in $SIZES; do echo "iperf3 $path tcp iperf3 $s 1 - $rep"; done
			fi
			if [ $any_lat = 1 ]; then
				for m in $MODES; do echo "sockperf $path tcp sockperf 14 1 $m $rep"; done
			fi
		done
	done
}

PLAN=$(plan)
[ -n "$PLAN" ] || bad "nothing to run with these --transports/--tests/--paths"
if [ $LIST_ONLY = 1 ]; then
	echo "$PLAN"
	exit 0
fi

# ---- what the machine must have -------------------------------------------------------------
cannot() {
	echo "$ME: $*" >&2
	exit 1
}
[ "$(id -u)" -eq 0 ] || cannot "needs root (network namespaces, AF_PACKET for RoCE v1)"
[ -x "$UROCE" ] || cannot "no uroce binary at $UROCE: run scripts/build release (or pass --uroce)"
UROCE=$(cd "$(dirname "$UROCE")" && pwd)/${UROCE##*/}
need=(ip ss pgrep timeout /usr/bin/time /usr/bin/python3)
for t in $TESTS; do has "$TRANSPORTS" v2 || has "$TRANSPORTS" v1 && need+=("ib_$t"); done
if has "$TRANSPORTS" tcp; then
	[[ $TESTS == *_bw* ]] && need+=(iperf3)
	[[ $TESTS == *_lat* ]] && need+=(sockperf)
fi
for c in "${need[@]}"; do
	command -v "$c" >/dev/null || cannot "'$c' is not installed: run scripts/setup"
done
CEILING=$(dirname "$UROCE")/bench/udp_ceiling PKT_CEILING=$(dirname "$UROCE")/bench/afpacket_ceiling
if [[ $TESTS == *_bw* ]]; then
	if has "$TRANSPORTS" udp && [ ! -x "$CEILING" ]; then
		cannot "no $CEILING: run scripts/build release (or leave out --transports udp)"
	fi
	if has "$TRANSPORTS" packet && [ ! -x "$PKT_CEILING" ]; then
		cannot "no $PKT_CEILING: run scripts/build release (or leave out --transports packet)"
	fi
fi
if [ $PLOT = 1 ]; then
	/usr/bin/python3 -c 'import matplotlib' 2>/dev/null ||
		cannot "python3-matplotlib is not installed: run scripts/setup (or pass --no-plot)"
fi

if [ -z "$OUT" ]; then
	OUT=$(mktemp -d "${TMPDIR:-/tmp}/uroce-compare.XXXXXX") || cannot "cannot create an output directory"
fi
mkdir -p "$OUT/logs" || cannot "cannot create $OUT/logs"
OUT=$(cd "$OUT" && pwd)
RES=$OUT/results.tsv
W=$(mktemp -d "${TMPDIR:-/tmp}/uroce-compare-work.XXXXXX") || cannot "cannot create a work directory"

# ---- namespaces, cleanup --------------------------------------------------------------------
NAMESPACES=()
SERVER= # the /usr/bin/time process of the server running now, if any
stop_server() { # PID of the server's /usr/bin/time: end its child (timeout(1)), then reap it
	local c
	c=$(pgrep -P "$1" 2>/dev/null)
	if [ -n "$c" ]; then
		# shellcheck disable=SC2086
		kill $c 2>/dev/null
	else
		kill "$1" 2>/dev/null
	fi
	wait "$1" 2>/dev/null
}
cleanup() {
	[ -n "$SERVER" ] && stop_server "$SERVER"
	local ns
	for ns in "${NAMESPACES[@]}"; do ip netns del "$ns" 2>/dev/null; done
	rm -rf "$W"
}
trap cleanup EXIT
trap 'exit 143' TERM INT HUP PIPE

# Per path: NSA/NSB (the same namespace on loopback), the server address SRV, devices and GID
# indexes per transport in DEV_<tr>_<a|b>, GID_<tr>_<a|b>, run-time directories RUN_<tr>_<a|b>.
in_ns() { # NS RUNDIR CMD...
	local ns=$1 rd=$2
	shift 2
	ip netns exec "$ns" env UROCE_RUNDIR="$rd" "$@"
}

add_ns() {
	ip netns add "$1" 2>/dev/null || return 1
	NAMESPACES+=("$1")
	ip -n "$1" link set lo up
}

# The index of GID ::ffff:ADDR of RoCE version VER in DEV's table (`uroce gids`).
gid_index() { # NS RUNDIR DEV ADDR VER
	local full
	full=$(/usr/bin/python3 -c 'import ipaddress, sys; print(ipaddress.ip_address("::ffff:" + sys.argv[1]).exploded)' "$4")
	in_ns "$1" "$2" "$UROCE" gids "$3" 2>/dev/null |
		awk -F'\t' -v g="$full" -v v="$5" '$4 == g && $(NF - 1) == v { print $3; exit }'
}

SETUP_ERR=
path_setup() { # PATH: prints nothing; sets the variables above or SETUP_ERR
	local path=$1 mtu a b tr side ns ifc dev
	SETUP_ERR=
	case $path in
	mtu1500 | mtu9000)
		mtu=${path#mtu}
		if [ "$mtu" = 1500 ]; then a=198.18.15.1 b=198.18.15.2; else a=198.18.90.1 b=198.18.90.2; fi
		NSA=ubench-$path-a-$$ NSB=ubench-$path-b-$$
		add_ns "$NSA" || cannot "cannot create a network namespace"
		add_ns "$NSB" || cannot "cannot create a second network namespace"
		ip -n "$NSA" link add a0 type veth peer name b0 || cannot "no veth support"
		# No IPv6 link-local address: a tentative one keeps a device from binding it.
		if ! { ip -n "$NSA" link set b0 netns "$NSB" &&
			ip -n "$NSA" link set a0 mtu "$mtu" addrgenmode none up &&
			ip -n "$NSB" link set b0 mtu "$mtu" addrgenmode none up &&
			ip -n "$NSA" addr add $a/24 dev a0 &&
			ip -n "$NSB" addr add $b/24 dev b0; }; then
			cannot "cannot configure the veth pair"
		fi
		IF_a=a0 IF_b=b0 ADDR_a=$a ADDR_b=$b
		MAC_a=$(ip -n "$NSA" -br link show a0 | awk '{ print $3 }')
		;;
	lo)
		a=198.18.127.1
		NSA=ubench-lo-$$ NSB=$NSA
		add_ns "$NSA" || cannot "cannot create a network namespace"
		ip -n "$NSA" addr add $a/32 dev lo || cannot "cannot add $a to lo"
		IF_a=lo IF_b=lo ADDR_a=$a ADDR_b=$a MAC_a=00:00:00:00:00:00
		;;
	esac
	SRV=$a
	local rd g addr
	for tr in $(roce_on "$path"); do
		for side in a b; do
			if [ "$path" = lo ] && [ $side = b ]; then
				# One namespace: both sides share the device and its run-time directory.
				printf -v "RUN_${tr}_b" %s "$rd"
				printf -v "DEV_${tr}_b" %s "$dev"
				printf -v "GID_${tr}_b" %s "$g"
				continue
			fi
			ns=$NSA ifc=$IF_a addr=$ADDR_a
			[ $side = b ] && ns=$NSB ifc=$IF_b addr=$ADDR_b
			rd=$W/run-$path-$tr-$side
			mkdir -p "$rd"
			dev=uroce_$ifc # the automatic device
			if [ "$tr" = v1 ]; then
				dev=urv1_$ifc
				in_ns "$ns" "$rd" "$UROCE" link add "$dev" netdev "$ifc" roce v1 >"$W/link.err" 2>&1 ||
					SETUP_ERR+="$tr: uroce link add $dev: $(head -n 1 "$W/link.err"); "
			fi
			g=$(gid_index "$ns" "$rd" "$dev" "$addr" "$tr")
			[ -n "$g" ] || SETUP_ERR+="$tr: no RoCE $tr GID for $addr on $dev; "
			printf -v "RUN_${tr}_$side" %s "$rd"
			printf -v "DEV_${tr}_$side" %s "$dev"
			printf -v "GID_${tr}_$side" %s "$g"
		done
	done
}

# ---- one run --------------------------------------------------------------------------------
PORT=20000
wait_listen() { # NS PORT SERVER-PID: bounded poll (20 s) for a TCP listener (LISTEN_UDP=1: UDP)
	local _ opt=-ltnH
	[ "$LISTEN_UDP" = 1 ] && opt=-lunH
	for _ in $(seq 400); do
		ip netns exec "$1" ss $opt "sport = :$2" | grep . >/dev/null && return 0
		kill -0 "$3" 2>/dev/null || return 1
		sleep 0.05
	done
	return 1
}

# A server without a port (afpacket_ceiling) says "listening": wait_listening polls its output.
# shellcheck source-path=SCRIPTDIR source=wait_listening.sh
. "$HERE/wait_listening.sh"

# From /usr/bin/time -f '%e %U %S %M' (its last line): "CPU% RSS-KiB".
cpu_rss() { # FILE
	tail -n 1 "$1" 2>/dev/null |
		awk 'NF == 4 && $1 > 0 { printf "%.0f %d\n", 100 * ($2 + $3) / $1, $4; exit } { print "- -" }'
}

# A short error text from the logs of a failed run.
error_text() { # PREFIX STATUS-CLIENT STATUS-SERVER
	local p=$1 txt
	txt=$(cat "$p".cli.out "$p".cli.err "$p".srv.out "$p".srv.err 2>/dev/null |
		grep -iE '^uroce:|error|fail|unable|couldn|could not|cannot|not (available|supported)|invalid|refused|unreachable|timed? ?out|abort|unsupported' |
		grep -v '^ *Command exited' | sed -E 's/^[[:space:]]+//; s/[[:space:]]+/ /g; s/\x1b\[[0-9;]*m//g' |
		awk '!seen[$0]++' | head -n 3 | paste -sd '|' | sed 's/|/ \/ /g')
	[ -n "$txt" ] || txt=$(grep -h 'did not listen' "$p".srv.err 2>/dev/null)
	if [ "$2" = 124 ] || [ "$3" = 124 ]; then txt="timed out${txt:+: $txt}"; fi
	[ -n "$txt" ] || txt="client exit $2, server exit $3, no result line"
	echo "${txt:0:240}"
}

record() { # KIND PATH TR TEST SIZE QPS MODE REP STATUS V1 V2 V3 CPU-CLI CPU-SRV RSS-CLI RSS-SRV ERROR
	local IFS=$'\t'
	echo "$*" >>"$RES"
}

# Start SERVER_CMD in the background, wait for its port, run CLIENT_CMD; each under getrusage
# (/usr/bin/time) and bounded by timeout(1). Sets CST and SST, the statuses. STOP=1: the server
# runs until stopped (sockperf), so it is stopped once the client is done.
SERVER_CMD=() CLIENT_CMD=() LISTEN_UDP=0 LISTEN_LINE=0
client_server() { # PREFIX NS-SERVER RUNDIR-SERVER NS-CLIENT RUNDIR-CLIENT TIMEOUT STOP
	local p=$1 nss=$2 rds=$3 nsc=$4 rdc=$5 tmo=$6 stop=$7
	# Not through a shell function: $! is then /usr/bin/time itself (ip and env exec), whose
	# child timeout(1) is what stop_server ends, so that time(1) still reports.
	ip netns exec "$nss" env UROCE_RUNDIR="$rds" /usr/bin/time -o "$p.srv.time" -f '%e %U %S %M' \
		timeout -k 5 "$tmo" "${SERVER_CMD[@]}" >"$p.srv.out" 2>"$p.srv.err" &
	SERVER=$!
	local ready=(wait_listen "$nss" "$PORT" "$SERVER")
	[ "$LISTEN_LINE" = 1 ] && ready=(wait_listening "$p.srv.out" "$SERVER" 400 0.05)
	if ! "${ready[@]}"; then
		echo "server did not listen on port $PORT" >>"$p.srv.err"
		stop_server "$SERVER"
		SST=$? CST=-1 SERVER=
		return
	fi
	in_ns "$nsc" "$rdc" /usr/bin/time -o "$p.cli.time" -f '%e %U %S %M' \
		timeout -k 5 "$tmo" "${CLIENT_CMD[@]}" >"$p.cli.out" 2>"$p.cli.err"
	CST=$?
	if [ "$stop" = 1 ]; then
		stop_server "$SERVER"
		SST=0
	else
		# A failed client leaves the server waiting for it: stop it now, not at its timeout.
		[ "$CST" -eq 0 ] || stop_server "$SERVER"
		wait "$SERVER"
		SST=$?
	fi
	SERVER=
}

run_case() { # KIND PATH TR TEST SIZE QPS MODE REP
	local kind=$1 path=$2 tr=$3 test=$4 size=$5 qps=$6 mode=$7 rep=$8
	local id="$path-$tr-$test-$size-q$qps-$mode-r$rep" p vals cc cs st=ok err=
	p=$OUT/logs/$id
	: >"$p.cli.out"
	PORT=$((PORT + 1))
	local tmo=$((DUR + 120))
	case $kind in
	perftest)
		if [ -n "$SETUP_ERR" ] && [[ $SETUP_ERR == *"$tr: "* ]]; then
			record "$@" error - - - - - - - "setup: $SETUP_ERR"
			return
		fi
		local args=(-p "$PORT" -s "$size")
		case $test in
		*_bw) args+=(-q "$qps" -D "$DUR" --report_gbits) ;;
		*_lat)
			args+=(-n "$LAT_ITERS")
			[ "$mode" = event ] && args+=(-e)
			;;
		esac
		local da=DEV_${tr}_a db=DEV_${tr}_b ga=GID_${tr}_a gb=GID_${tr}_b ra=RUN_${tr}_a rb=RUN_${tr}_b
		SERVER_CMD=("$UROCE" run "${RUN_OPTS[@]}" -- "ib_$test" -d "${!da}" -x "${!ga}" "${args[@]}")
		CLIENT_CMD=("$UROCE" run "${RUN_OPTS[@]}" -- "ib_$test" -d "${!db}" -x "${!gb}" "${args[@]}" "$SRV")
		client_server "$p" "$NSA" "${!ra}" "$NSB" "${!rb}" "$tmo" 0
		case $test in
		*_bw) vals=$(awk -v s="$size" '$1 == s && NF >= 5 && $4 ~ /^[0-9.]+$/ { v = $4 " - -" } END { print v }' "$p.cli.out") ;;
		*_lat) vals=$(awk -v s="$size" '$1 == s && NF >= 9 && $5 ~ /^[0-9.]+$/ { v = $5 " " $8 " " $9 } END { print v }' "$p.cli.out") ;;
		esac
		;;
	iperf3)
		# -O 1: leave TCP's slow start out, as perftest's -D leaves out its warm-up.
		SERVER_CMD=(iperf3 -s -1 -B "$SRV" -p "$PORT")
		CLIENT_CMD=(iperf3 -c "$SRV" -p "$PORT" -t "$DUR" -O 1 -l "$size" -J)
		client_server "$p" "$NSA" "$W" "$NSB" "$W" "$tmo" 0
		vals=$(/usr/bin/python3 -c '
import json, sys
try:
    print("%.3f - -" % (json.load(open(sys.argv[1]))["end"]["sum_received"]["bits_per_second"] / 1e9))
except Exception:
    pass' "$p.cli.out")
		;;
	ceiling)
		# RoCE-sized packets (BTH, payload of the path's RoCE MTU, ICRC) with a CRC on each
		# side and a copy on receive: uroce's data path without uroce. RoCE v2: datagrams over
		# UDP GSO/GRO; RoCE v1: Ethernet frames over AF_PACKET, to the server interface's MAC.
		local pay=4096
		[ "$path" = mtu1500 ] && pay=1024
		if [ "$tr" = udp ]; then
			SERVER_CMD=("$CEILING" recv "$SRV" "$PORT" $((pay + 16)))
			CLIENT_CMD=("$CEILING" send "$SRV" "$PORT" $((pay + 16)) $((DUR * 1000)))
			LISTEN_UDP=1
		else
			SERVER_CMD=("$PKT_CEILING" recv "$IF_a" "$pay")
			CLIENT_CMD=("$PKT_CEILING" send "$IF_b" "$MAC_a" "$pay" $((DUR * 1000)))
			LISTEN_LINE=1
		fi
		client_server "$p" "$NSA" "$W" "$NSB" "$W" "$tmo" 0
		LISTEN_UDP=0 LISTEN_LINE=0
		vals=$(sed -nE 's/^received ([0-9.]+) Gbit\/s.*crc_bad 0,.*/\1 - -/p' "$p.srv.out")
		;;
	sockperf)
		# The server runs until stopped: the client's status is the run's.
		local bp=()
		[ "$mode" = busy ] && bp=(--nonblocked)
		SERVER_CMD=(sockperf sr --tcp -i "$SRV" -p "$PORT")
		CLIENT_CMD=(sockperf pp --tcp -i "$SRV" -p "$PORT" -m "$size" -t "$DUR" "${bp[@]}")
		client_server "$p" "$NSA" "$W" "$NSB" "$W" "$tmo" 1
		vals=$(sed -E 's/\x1b\[[0-9;]*m//g' "$p.cli.out" | awk '
			/percentile 50.000 =/ { a = $NF } /percentile 99.000 =/ { b = $NF }
			/percentile 99.900 =/ { c = $NF } END { if (a != "") print a, b, c }')
		;;
	esac
	read -r cc rc < <(cpu_rss "$p.cli.time")
	read -r cs rs < <(cpu_rss "$p.srv.time")
	if [ "$CST" -ne 0 ] || [ "$SST" -ne 0 ] || [ -z "$vals" ]; then
		st=error
		err=$(error_text "$p" "$CST" "$SST")
		vals="- - -"
	fi
	# shellcheck disable=SC2086
	record "$@" "$st" $vals "$cc" "$cs" "$rc" "$rs" "$err"
	printf '  %-9s %-4s %-10s %6s B %2s QP %-5s #%s: %s\n' "$path" "$tr" "$test" "$size" "$qps" \
		"$mode" "$rep" "$([ $st = ok ] && echo "${vals%% *} (CPU $cc/$cs %)" || echo "n/a ($err)")"
}

# ---- the run --------------------------------------------------------------------------------
COMMIT=$(git -C "$REPO" rev-parse --short HEAD 2>/dev/null || echo unknown)
[ -n "$(git -C "$REPO" status --porcelain --untracked-files=no 2>/dev/null)" ] && COMMIT+="-dirty"
START=$(date -u +%Y-%m-%dT%H:%M:%SZ)
LOAD=$(cut -d' ' -f1-3 /proc/loadavg)
printf 'kind\tpath\ttransport\ttest\tsize\tqps\tmode\trep\tstatus\tv1\tv2\tv3\tcpu_cli\tcpu_srv\trss_cli_kib\trss_srv_kib\terror\n' >"$RES"
echo "$ME: $(echo "$PLAN" | wc -l) runs, output in $OUT"
echo "$ME: commit $COMMIT, $(nproc) CPUs, load average $LOAD"

current=
while read -r kind path tr test size qps mode rep; do
	if [ "$path" != "$current" ]; then
		# One path's namespaces at a time.
		for ns in "${NAMESPACES[@]}"; do ip netns del "$ns" 2>/dev/null; done
		NAMESPACES=()
		path_setup "$path"
		current=$path
		echo "== $path${SETUP_ERR:+ (setup: $SETUP_ERR)}"
	fi
	run_case "$kind" "$path" "$tr" "$test" "$size" "$qps" "$mode" "$rep"
done <<<"$PLAN"
for ns in "${NAMESPACES[@]}"; do ip netns del "$ns" 2>/dev/null; done
NAMESPACES=()

plot_opt=()
[ $PLOT = 1 ] && plot_opt=(--plot "$OUT/compare.png")
/usr/bin/python3 "$HERE/compare_report.py" "$RES" --out "$OUT/results.md" "${plot_opt[@]}" \
	--command "$CMDLINE" --commit "$COMMIT" --date "$START" --reps "$REPS" --duration "$DUR" \
	--lat-iters "$LAT_ITERS" \
	--machine "$(nproc) vCPUs, $(uname -r), load average $LOAD at start, $(cut -d' ' -f1-3 /proc/loadavg) at the end" \
	${RUN_OPTS[0]:+--progress-busy-poll} || cannot "the report failed (results.tsv is in $OUT)"
echo "$ME: wrote $OUT/results.md${plot_opt[1]:+, ${plot_opt[1]}}, results.tsv, logs/"
