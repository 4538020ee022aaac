#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# fio 3.33 over uroce (its rdma ioengine) against fio over TCP (its net ioengine) on the same
# veth between two network namespaces (tests/run/lib.sh: MTU 9000, RoCE v2 over IPv4), in one run:
#   UROCE=/path/to/uroce bench/apps/fio.sh [-r N] [-t SECONDS]
# As root. Prints one tab-separated line per figure on stdout (progress and errors on stderr):
#   fio <TAB> test <TAB> size_bytes <TAB> lat_us|bw_gbps <TAB> uroce|tcp <TAB> value
# Each value is the median of -r runs (default 3); a figure with no successful run is left out.
#
# Tests (the server job, rw=read, in namespace a; the client job, rw=write, drives it from b):
# - write, read, send at 65536 B, depth 16: bw_gbps of the client's job. fio's client sleeps
#   0.5 s after connecting and fio counts it in the job's time, so the first 0.75 s are left
#   out (ramp_time). write and read run -t seconds; send moves a fixed 512 MiB (the server
#   counts messages), with 512 receives posted on the server: fio accepts with
#   rnr_retry_count 0, so one RNR NAK fails the sender (a failed run is tried again, twice).
# - write, read, send at 4096 B, depth 1: lat_us, fio's mean latency (submission to completion:
#   one round trip carrying the 4 KiB one way). send moves 20000 messages.
# - tcp: fio's net engine over TCP: one stream of 64 KiB writes (-t seconds, the same ramp),
#   printed beside each bw test; and 4 KiB pingpong=1 (the client's write, then the server's
#   echo of it: one round trip carrying 4 KiB each way), printed beside each lat test.
# Exit status: 0 done (a failed figure is reported on stderr and left out), 1 cannot run here.
set -u -o pipefail

# shellcheck disable=SC2034 # APP is read by common.sh
APP=fio
# shellcheck source=common.sh
. "$(dirname "$0")/common.sh"
command -v fio >/dev/null || skip "fio is not installed (Debian package fio)"
fio --enghelp 2>/dev/null | grep -qw rdma || skip "this fio has no rdma ioengine"
netns_setup

PORT=19766
log() { echo "fio.sh: $*" >&2; }

# A value from fio's JSON output (the text before the first '{' is fio's notes).
jget() { # FILE EXPRESSION-ON-j
	/usr/bin/python3 -c '
import json, sys
s = open(sys.argv[1]).read()
j = json.loads(s[s.index("{"):])
print(eval(sys.argv[2], {"j": j}))' "$1" "$2" 2>/dev/null
}

# One rdma run; prints the client's figure (Gbit/s or us), or nothing when it failed.
rdma_run() { # VERB BS DEPTH SERVER_DEPTH lat|bw
	local verb=$1 bs=$2 cd=$3 sd=$4 kind=$5 spid cst size amount
	if [ "$verb" = send ]; then
		# A fixed amount, the same on both sides: the server ends on its count.
		if [ "$kind" = bw ]; then size=$((512 << 20)); else size=$((20000 * bs)); fi
		amount=("--size=$size")
	else
		# The server ends on the client's finishing message; its size is only a bound.
		size=$((1 << 40))
		amount=("--size=$size" --time_based --runtime="$SECS")
	fi
	local common=(--ioengine=rdma "--port=$PORT" --verb="$verb" --bs="$bs" --thread=1
		--hostname="$A4" --output-format=json)
	ip netns exec "$NSA" env UROCE_RUNDIR="$RUNA" timeout -k 5 $((SECS + 60)) \
		"$UROCE" run -- fio --name=srv "${common[@]}" --size=$size --iodepth="$sd" --rw=read \
		>"$T/srv.out" 2>"$T/srv.err" &
	spid=$!
	if ! wait_cm_listen "$RUNA" $((0x0106)) $PORT $spid; then
		log "rdma $verb $bs: the server did not listen: $(cat "$T/srv.err")"
		kill $spid 2>/dev/null
		wait $spid 2>/dev/null
		return
	fi
	local ramp=()
	[ "$kind" = bw ] && ramp=(--ramp_time=750ms)
	inb timeout -k 5 $((SECS + 50)) "$UROCE" run -- fio --name=cli "${common[@]}" \
		"${amount[@]}" "${ramp[@]}" --iodepth="$cd" --rw=write >"$T/cli.out" 2>"$T/cli.err"
	cst=$?
	[ "$cst" -eq 0 ] || kill $spid 2>/dev/null
	wait_exit $spid 30 >/dev/null 2>&1 || cst=1
	if [ "$cst" -ne 0 ] || [ "$(jget "$T/cli.out" 'j["jobs"][0]["error"]')" != 0 ]; then
		log "rdma $verb $bs: failed: $(grep -h '^fio:' "$T/cli.err" "$T/srv.err" | tr '\n' ' ')"
		return
	fi
	if [ "$kind" = bw ]; then
		jget "$T/cli.out" 'j["jobs"][0]["write"]["bw_bytes"] * 8 / 1e9'
	else
		jget "$T/cli.out" 'j["jobs"][0]["write"]["lat_ns"]["mean"] / 1000'
	fi
}

# One net (TCP) run; prints the client's figure.
tcp_run() { # lat|bw
	local kind=$1 spid bs=65536 pp=() ramp=(--ramp_time=750ms)
	if [ "$kind" = lat ]; then
		bs=4096 pp=(--pingpong=1) ramp=()
	fi
	ip netns exec "$NSA" timeout -k 5 $((SECS + 60)) fio --name=srv --ioengine=net --listen \
		--port=$PORT --protocol=tcp --bs=$bs --size=1t --rw=read "${pp[@]}" \
		--output-format=json >"$T/tsrv.out" 2>"$T/tsrv.err" &
	spid=$!
	if ! wait_listen a $PORT $spid; then
		log "tcp $kind: the server did not listen"
		kill $spid 2>/dev/null
		wait $spid 2>/dev/null
		return
	fi
	if ! inb timeout -k 5 $((SECS + 50)) fio --name=cli --ioengine=net --hostname="$A4" \
		--port=$PORT --protocol=tcp --bs=$bs --size=1t --time_based --runtime="$SECS" \
		"${ramp[@]}" "${pp[@]}" --rw=write --output-format=json >"$T/tcli.out" 2>"$T/tcli.err"; then
		log "tcp $kind: failed: $(cat "$T/tcli.err")"
		kill $spid 2>/dev/null
		wait $spid 2>/dev/null
		return
	fi
	wait_exit $spid 30 >/dev/null 2>&1
	if [ "$kind" = bw ]; then
		jget "$T/tcli.out" 'j["jobs"][0]["write"]["bw_bytes"] * 8 / 1e9'
	else
		jget "$T/tcli.out" 'j["jobs"][0]["write"]["lat_ns"]["mean"] / 1000'
	fi
}

# Figures by key "path test size metric": one value per successful run.
declare -A VALS
add() { # KEY VALUE
	[ -n "$2" ] || return
	VALS[$1]="${VALS[$1]:-} $2"
	log "$1: $2"
}
median() { tr ' ' '\n' | grep . | sort -g | awk '{ v[NR] = $1 } END {
	if (NR) printf "%.4g\n", NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

for rep in $(seq "$REPS"); do
	log "run $rep of $REPS"
	for verb in write read send; do
		sd=16
		[ $verb = send ] && sd=512
		for _ in 1 2 3; do
			v=$(rdma_run $verb 65536 16 $sd bw)
			[ -n "$v" ] && break
			[ $verb = send ] || break
		done
		add "uroce $verb 65536 bw_gbps" "$v"
		sd=1
		[ $verb = send ] && sd=512
		add "uroce $verb 4096 lat_us" "$(rdma_run $verb 4096 1 $sd lat)"
	done
	add "tcp - 65536 bw_gbps" "$(tcp_run bw)"
	add "tcp - 4096 lat_us" "$(tcp_run lat)"
done

tcp_bw=$(echo "${VALS["tcp - 65536 bw_gbps"]:-}" | median)
tcp_lat=$(echo "${VALS["tcp - 4096 lat_us"]:-}" | median)
for verb in write read send; do
	for m in "65536 bw_gbps" "4096 lat_us"; do
		v=$(echo "${VALS["uroce $verb $m"]:-}" | median)
		set -- $m
		[ -n "$v" ] && printf 'fio\t%s\t%s\t%s\turoce\t%s\n' $verb "$1" "$2" "$v"
		t=$tcp_lat
		[ "$2" = bw_gbps ] && t=$tcp_bw
		[ -n "$t" ] && printf 'fio\t%s\t%s\t%s\ttcp\t%s\n' $verb "$1" "$2" "$t"
	done
done
exit 0
