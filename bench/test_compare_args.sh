#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# bench/compare.sh's command line only (no measurement, no root): --help, every argument error
# (status 2 and a message naming the option), and the plan that --list prints for --quick and
# for subsets. Usage: test_compare_args.sh COMPARE_SH
set -u -o pipefail

C=$1
T=$(mktemp -d "${TMPDIR:-/tmp}/uroce-compare-args.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT
failed=0 n=0
fail() {
	echo "FAIL: $*" >&2
	failed=$((failed + 1))
}
ok() {
	echo "ok: $*"
	n=$((n + 1))
}

run() { # ARGS...: status in $st, output in $T/out, $T/err
	bash "$C" "$@" >"$T/out" 2>"$T/err"
	st=$?
}

run --help
if [ $st -eq 0 ] && grep -q '^usage: compare.sh' "$T/out" && grep -q -- '--quick' "$T/out"; then
	ok "--help"
else
	fail "--help: status $st"
fi
run -h
if [ $st -eq 0 ] && grep -q '^usage:' "$T/out"; then ok "-h"; else fail "-h: status $st"; fi

# ARGS... | STDERR-REGEX: status 2, the message on stderr, nothing on stdout.
bad() {
	local args=() re
	while [ "$1" != "|" ]; do
		args+=("$1")
		shift
	done
	re=$2
	run "${args[@]}"
	if [ $st -ne 2 ]; then
		fail "${args[*]}: status $st, expected 2"
	elif ! grep -qE -- "$re" "$T/err"; then
		fail "${args[*]}: no message matching '$re'"
		cat "$T/err" >&2
	elif [ -s "$T/out" ]; then
		fail "${args[*]}: printed on stdout"
	else
		ok "${args[*]}: $(head -n 1 "$T/err")"
	fi
}
bad --bogus "|" "unknown option '--bogus'"
bad extra "|" "unexpected argument 'extra'"
bad -r "|" "-r needs a value"
bad -r 0 "|" "-r: '0' is not an integer from 1 to 100"
bad -r x "|" "-r: 'x' is not an integer"
bad -D 0 "|" "-D: '0' is not an integer"
bad -n 4 "|" "-n: '4' is not an integer from 5"
bad -o "" "|" "-o: empty directory name"
bad --paths foo "|" "--paths: unknown item 'foo'"
bad --paths= "|" "--paths: empty list"
bad --transports v3 "|" "--transports: unknown item 'v3'"
bad --tests write_bw,atomic_bw "|" "--tests: unknown item 'atomic_bw'"
bad --modes poll "|" "--modes: unknown item 'poll'"
bad --sizes 4096,0 "|" "--sizes: '0' is not an integer"
bad --qps 65 "|" "--qps: '65' is not an integer from 1 to 64"
bad --transports tcp --tests write_bw --sizes 1x "|" "--sizes: '1x'"
bad --help-me "|" "unknown option '--help-me'"

# The plan (--list): KIND PATH TRANSPORT TEST SIZE QPS MODE REP per run.
plan() { # EXPECTED-LINES ARGS...
	local want=$1
	shift
	run --list "$@"
	local got
	got=$(wc -l <"$T/out")
	if [ $st -ne 0 ]; then
		fail "--list $*: status $st"
		cat "$T/err" >&2
	elif [ "$got" -ne "$want" ]; then
		fail "--list $*: $got runs, expected $want"
	else
		ok "--list $*: $got runs"
	fi
}
# 3 reps x (3 paths x (3 bw x 2 sizes x 2 QP counts + 2 lat x 2 modes) x (RoCE v2 and v1),
# 3 paths x (2 iperf3 + 2 sockperf + 1 UDP ceiling + 1 AF_PACKET ceiling))
plan 342
plan 30 --quick
plan 60 --quick -r 2
plan 10 --quick --paths lo
plan 3 --transports udp --tests write_bw,send_lat -r 1
plan 6 --transports udp,packet --tests read_bw -r 1
bad --transports udp --tests send_lat "|" "nothing to run"
bad --transports packet --tests send_lat "|" "nothing to run"
plan 3 --quick --paths lo --transports v1
plan 6 --quick --transports tcp
plan 2 --tests=send_lat --transports=tcp --paths lo --modes busy,event -r 1
plan 4 --paths mtu9000 --transports v1 --tests read_bw --sizes 4096,65536 --qps 1,8 -r 1
run --list --quick
if grep -qvE '^(perftest (mtu1500|mtu9000|lo) v[12] (write_bw 65536 [18] -|send_lat 8 1 busy)|iperf3 (mtu1500|mtu9000|lo) tcp iperf3 65536 1 -|sockperf (mtu1500|mtu9000|lo) tcp sockperf 14 1 busy|ceiling (mtu1500|mtu9000|lo) (udp|packet) ceiling 0 1 -) 1$' "$T/out"; then
	fail "--quick: unexpected runs"
	cat "$T/out" >&2
else
	ok "--quick: write_bw 64 KiB 1 and 8 QPs, send_lat busy-poll, iperf3, sockperf, both ceilings; one repetition"
fi
bad --transports tcp --tests write_bw --sizes 4096 --qps 1 --paths lo -r 1 --list --modes x "|" "--modes"

echo "$n passed, $failed failed"
[ $failed -eq 0 ]
