#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# `uroce run` itself: cli.sh CASE UROCE REL_LIBDIR
# CASE:
#   usage    --help, and every argument error with its status (125) and message
#   exec     missing program (127), not executable (126), the program's own status, the
#            environment it gets (LD_LIBRARY_PATH first, UROCE_PCAP absolute, UROCE_FAULTS,
#            UROCE_BUSY_POLL, LD_PRELOAD of the sanitizer runtime in a sanitizer build)
#   libdir   where the library is found: UROCE_LIBDIR, a copied build layout (<dir>/uroce +
#            <dir>/lib), an installed layout (<prefix>/bin/uroce + REL_LIBDIR from there), and
#            the error when UROCE_LIBDIR holds none
#   devices  `uroce run -- ibv_devices` lists the automatic devices of an empty run-time
#            directory (in a network namespace with only lo when root: uroce_lo)
#   pcap     `uroce run --pcap F -- ibv_devinfo -d uroce_lo`: F is a capture (header only: no
#            traffic) that pcap-check and tshark read; an unwritable --pcap is refused
# Exits 0 pass, 1 fail, 77 skip (a tool the case needs is missing).
set -u -o pipefail

CASE=$1 UROCE=$(realpath "$2") REL=$3
T=$(mktemp -d "${TMPDIR:-/tmp}/uroce-run-cli.XXXXXX") || exit 1
NS=
cleanup() {
	[ -n "$NS" ] && ip netns del "$NS" 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT
failed=0
fail() {
	echo "FAIL: $*" >&2
	failed=1
}
skip() {
	echo "SKIP: $*"
	exit 77
}
export UROCE_RUNDIR=$T/run
mkdir "$UROCE_RUNDIR" || exit 1
unset UROCE_LIBDIR UROCE_PCAP UROCE_FAULTS UROCE_BUSY_POLL
LIB=$(cd "$(dirname "$UROCE")/lib" 2>/dev/null && pwd -P)
# grep reads everything: with pipefail, grep -q would leave ldd to die of SIGPIPE, and the
# pipeline would fail although it matched.
sanitized() { ldd "$LIB/libibverbs.so.1" 2>/dev/null | grep -E 'lib(asan|ubsan)\.so' >/dev/null; }
if sanitized; then
	export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
fi

run() { # ARGS...: run uroce, status in $st, output in $T/out and $T/err
	"$UROCE" "$@" >"$T/out" 2>"$T/err"
	st=$?
}
expect() { # STATUS ERR-REGEX WHAT
	if [ "$st" -ne "$1" ]; then
		fail "$3: status $st, expected $1"
		cat "$T/out" "$T/err" >&2
	elif [ -n "$2" ] && ! grep -qE -- "$2" "$T/err"; then
		fail "$3: no message matching '$2' on stderr"
		cat "$T/err" >&2
	else
		echo "ok: $3 (status $st)${2:+: $(head -n 1 "$T/err")}"
	fi
}

# In a network namespace with only lo when root (a device opened there binds 127.0.0.1:4791
# without meeting anyone); otherwise on the host.
in_lo_ns() {
	if [ "$(id -u)" -eq 0 ] && command -v ip >/dev/null; then
		NS=uroce-rc-$$
		ip netns add "$NS" 2>/dev/null || skip "cannot create a network namespace"
		ip -n "$NS" link set lo up || exit 1
		PFX=(ip netns exec "$NS")
	else
		PFX=()
		export UROCE_PORT=24795 # not 4791: another uroce process may be using it
	fi
}

case $CASE in
usage)
	run help run
	expect 0 '' "uroce help run"
	grep -q '^usage: uroce run \[--pcap FILE\] \[--faults SPEC\] \[--busy-poll\] \[--no-sysfs\] -- PROGRAM' "$T/out" ||
		fail "uroce help run: no usage line"
	run run --help
	expect 0 '' "uroce run --help"
	run --help
	grep -qE '^  run -- PROGRAM \[ARGS...\] +run an rdma-core program over uroce' "$T/out" ||
		fail "uroce --help does not list run"
	run run
	expect 125 "^uroce: run: missing '--' and the program to run$" "no arguments"
	grep -q '^usage: uroce run' "$T/err" || fail "no arguments: no usage on stderr"
	run run ibv_devices
	expect 125 "^uroce: run: put '--' before the program: uroce run \[OPTIONS\] -- ibv_devices" "no --"
	run run --pcap x.pcap ibv_devices -l
	expect 125 "put '--' before the program" "no -- after an option"
	run run --
	expect 125 "^uroce: run: missing the program after '--'$" "-- without a program"
	run run --frobnicate -- true
	expect 125 "^uroce: run: unknown option '--frobnicate'$" "unknown option"
	run run --pcap
	expect 125 "^uroce: run: '--pcap' needs a value$" "--pcap without a value"
	run run --pcap -- true
	expect 125 "^uroce: run: '--pcap' needs a value$" "--pcap followed by --"
	run run --pcap= -- true
	expect 125 "^uroce: run: --pcap needs a file name$" "--pcap="
	run run --faults -- true
	expect 125 "^uroce: run: '--faults' needs a value$" "--faults without a value"
	run run --faults loss=2 -- true
	expect 125 "^uroce: run: --faults 'loss=2': .*loss=2" "--faults loss=2"
	run run --faults bogus=1 -- true
	expect 125 "^uroce: run: --faults 'bogus=1': .*bogus" "--faults bogus=1"
	run run --pcap "$T/no/such/dir/x.pcap" -- true
	expect 125 "^uroce: run: --pcap $T/no/such/dir/x.pcap: cannot write it: No such file or directory$" \
		"--pcap in a missing directory"
	;;
exec)
	run run -- uroce-no-such-program-$$
	expect 127 "^uroce: run: uroce-no-such-program-$$: command not found \(not in PATH\)$" \
		"program not in PATH"
	run run -- "$T/nothere"
	expect 127 "^uroce: run: $T/nothere: command not found$" "program path missing"
	printf '#!/bin/sh\necho hi\n' >"$T/noexec"
	chmod 644 "$T/noexec"
	if [ "$(id -u)" -ne 0 ]; then
		run run -- "$T/noexec"
		expect 126 "^uroce: run: $T/noexec: cannot execute: Permission denied$" "not executable"
	else
		# root may execute anything with an x bit; a directory is never executable.
		run run -- "$T"
		expect 126 "^uroce: run: $T: cannot execute: Permission denied$" "a directory"
	fi
	run run -- sh -c 'exit 42'
	expect 42 '' "the program's exit status passes through"
	run run -- sh -c 'kill -TERM $$'
	expect 143 '' "killed by a signal (exec: the shell sees the program's own death)"
	mkdir "$T/cwd"
	(cd "$T/cwd" && LD_LIBRARY_PATH=/old/a:/old/b "$UROCE" run --pcap rel.pcap \
		--faults loss=0.01,seed=3 --busy-poll -- \
		sh -c 'printf "%s\n" "$LD_LIBRARY_PATH" "$UROCE_PCAP" "$UROCE_FAULTS" "$UROCE_BUSY_POLL" "${LD_PRELOAD-}"' \
		>"$T/out" 2>"$T/err")
	st=$?
	expect 0 '' "environment"
	mapfile -t env <"$T/out"
	[ "${env[0]}" = "$LIB:/old/a:/old/b" ] || fail "LD_LIBRARY_PATH is '${env[0]}', expected '$LIB:/old/a:/old/b'"
	[ "${env[1]}" = "$T/cwd/rel.pcap" ] || fail "UROCE_PCAP is '${env[1]}', expected '$T/cwd/rel.pcap'"
	[ -f "$T/cwd/rel.pcap" ] || fail "--pcap rel.pcap was not created"
	[ "${env[2]}" = loss=0.01,seed=3 ] || fail "UROCE_FAULTS is '${env[2]}'"
	[ "${env[3]}" = 1 ] || fail "UROCE_BUSY_POLL is '${env[3]}'"
	if sanitized; then
		echo "${env[4]}" | grep -qE '^/[^:]*libasan\.so' || fail "sanitizer build: LD_PRELOAD is '${env[4]}', expected libasan first"
	else
		[ -z "${env[4]}" ] || fail "LD_PRELOAD is '${env[4]}', expected nothing"
	fi
	# Without options nothing but LD_LIBRARY_PATH is set.
	env -u LD_LIBRARY_PATH "$UROCE" run -- sh -c 'printf "%s|%s|%s|%s\n" "$LD_LIBRARY_PATH" "${UROCE_PCAP-unset}" "${UROCE_FAULTS-unset}" "${UROCE_BUSY_POLL-unset}"' >"$T/out" 2>"$T/err"
	st=$?
	expect 0 '' "environment without options"
	[ "$(cat "$T/out")" = "$LIB|unset|unset|unset" ] || fail "environment without options: '$(cat "$T/out")'"
	;;
libdir)
	# UROCE_LIBDIR wins; a wrong one is an error, not a silent fall-back.
	UROCE_LIBDIR=$LIB "$UROCE" run -- sh -c 'echo "$LD_LIBRARY_PATH"' >"$T/out" 2>"$T/err"
	st=$?
	expect 0 '' "UROCE_LIBDIR"
	[ "$(cat "$T/out")" = "$LIB" ] || fail "UROCE_LIBDIR: LD_LIBRARY_PATH is '$(cat "$T/out")'"
	UROCE_LIBDIR=$T "$UROCE" run -- true >"$T/out" 2>"$T/err"
	st=$?
	expect 125 "^uroce: run: UROCE_LIBDIR=$T holds no libibverbs.so.1; point it at the lib/ directory of a uroce build, or unset it$" \
		"UROCE_LIBDIR without the library"
	# A copied build tree: <dir>/uroce and <dir>/lib.
	mkdir -p "$T/b/lib" "$T/i/bin" "$T/i/bin/$REL"
	cp "$UROCE" "$T/b/uroce"
	cp "$LIB/libibverbs.so.1" "$T/b/lib/"
	"$T/b/uroce" run -- sh -c 'echo "$LD_LIBRARY_PATH"' >"$T/out" 2>"$T/err"
	st=$?
	expect 0 '' "build layout"
	[ "$(cat "$T/out")" = "$T/b/lib" ] || fail "build layout: LD_LIBRARY_PATH is '$(cat "$T/out")', expected '$T/b/lib'"
	# An installed layout: <prefix>/bin/uroce and <prefix>/bin/REL (<prefix>/lib/uroce).
	cp "$UROCE" "$T/i/bin/uroce"
	cp "$LIB/libibverbs.so.1" "$T/i/bin/$REL/"
	want=$(cd "$T/i/bin/$REL" && pwd -P)
	"$T/i/bin/uroce" run -- sh -c 'echo "$LD_LIBRARY_PATH"' >"$T/out" 2>"$T/err"
	st=$?
	expect 0 '' "installed layout ($REL from the binary)"
	[ "$(cat "$T/out")" = "$want" ] || fail "installed layout: LD_LIBRARY_PATH is '$(cat "$T/out")', expected '$want'"
	;;
devices)
	command -v ibv_devices >/dev/null || skip "ibverbs-utils is not installed"
	in_lo_ns
	"${PFX[@]}" "$UROCE" run -- ibv_devices >"$T/out" 2>"$T/err"
	st=$?
	cat "$T/out" "$T/err"
	expect 0 '' "uroce run -- ibv_devices"
	grep -qE '^[[:space:]]+uroce_lo[[:space:]]+[0-9a-f]{16}$' "$T/out" ||
		fail "ibv_devices does not list uroce_lo with a GUID"
	# Every device listed is one of uroce's (the automatic devices of the run-time directory).
	"${PFX[@]}" "$UROCE" link show >"$T/links" 2>&1 || fail "uroce link show"
	n=$(awk 'NR > 2 && NF == 2 { print $1 }' "$T/out" | while read -r d; do
		grep -q "^$d[[:space:]]" "$T/links" || echo "$d"
	done | wc -l)
	[ "$n" -eq 0 ] || fail "ibv_devices lists $n devices that uroce link show does not"
	;;
pcap)
	command -v ibv_devinfo >/dev/null || skip "ibverbs-utils is not installed"
	in_lo_ns
	"${PFX[@]}" "$UROCE" run --pcap "$T/lo.pcap" -- ibv_devinfo -d uroce_lo >"$T/out" 2>"$T/err"
	st=$?
	expect 0 '' "uroce run --pcap F -- ibv_devinfo -d uroce_lo"
	grep -q 'hca_id:[[:space:]]*uroce_lo' "$T/out" || fail "ibv_devinfo: no uroce_lo"
	# A pcap header (microsecond or nanosecond magic), link type 1 (Ethernet), nothing else.
	hdr=$(od -An -tx1 -v "$T/lo.pcap" | tr -d ' \n')
	case $hdr in
	d4c3b2a1????????????????????????????????01000000 | 4d3cb2a1????????????????????????????????01000000) ;;
	*) fail "$T/lo.pcap is not an empty Ethernet pcap: $hdr" ;;
	esac
	"$UROCE" pcap-check "$T/lo.pcap" >"$T/out" 2>&1
	st=$?
	expect 0 '' "pcap-check of the capture"
	grep -q ': 0 packets, 0 RoCE' "$T/out" || fail "pcap-check: $(cat "$T/out")"
	if command -v capinfos >/dev/null; then
		capinfos -t -E "$T/lo.pcap" | grep -E 'Ethernet' >/dev/null || fail "capinfos: not an Ethernet pcap"
	fi
	chmod 500 "$T"
	if [ "$(id -u)" -ne 0 ]; then
		run run --pcap "$T/new.pcap" -- true
		expect 125 "cannot write it: Permission denied" "--pcap in a read-only directory"
	fi
	chmod 700 "$T"
	;;
*)
	echo "usage: cli.sh usage|exec|libdir|devices|pcap UROCE REL_LIBDIR" >&2
	exit 2
	;;
esac
[ "$failed" -eq 0 ] || exit 1
echo "PASS: $CASE"
