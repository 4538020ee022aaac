#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Tests of `uroce pcap-check` and of the command line, run by ctest one case at a time:
#   pcap_check.sh CASE UROCE MKCAP VECTORS_DIR
# Exits 0 when the case passes, 1 when it fails, 77 when it needs a tool that is missing
# (tshark, editcap). Temporary files live in a mktemp -d directory, removed on exit.
# Each run of uroce must end with status 0, 1 or 2 and without a sanitizer report.
set -u -o pipefail

case_name=$1 UROCE=$2 MKCAP=$3 VECTORS=$4

T=$(mktemp -d "${TMPDIR:-/tmp}/uroce-pcap-check.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT

# Under ASan/UBSan a report must not pass for an expected status 1.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}exitcode=99"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:+$UBSAN_OPTIONS:}exitcode=98:print_stacktrace=1"

failures=0
fail() {
	echo "FAIL [$case_name]: $*" >&2
	failures=$((failures + 1))
}
skip() {
	echo "SKIP [$case_name]: $*"
	exit 77
}

# run ARGS...: run uroce; stdout in $T/out, stderr in $T/err, status in $st.
run() {
	"$UROCE" "$@" >"$T/out" 2>"$T/err"
	st=$?
	if grep -qE 'Sanitizer|runtime error' "$T/err"; then
		fail "uroce $*: sanitizer report:"
		cat "$T/err" >&2
	fi
	if [ "$st" -gt 2 ]; then
		fail "uroce $*: status $st (crash or unexpected status)"
		cat "$T/err" >&2
	fi
}

expect_status() { # WANT DESCRIPTION
	if [ "$st" -ne "$1" ]; then
		fail "$2: status $st, expected $1"
		sed 's/^/  stdout: /' "$T/out" | tail -5 >&2
		sed 's/^/  stderr: /' "$T/err" | tail -5 >&2
	fi
}

has() { # FILE FIXED-STRING DESCRIPTION
	grep -qF -- "$2" "$1" || fail "$3: no \"$2\" in $(basename "$1")"
}

hasnt() { # FILE FIXED-STRING DESCRIPTION
	! grep -qF -- "$2" "$1" || fail "$3: unexpected \"$2\" in $(basename "$1")"
}

# The per-packet lines of a pcap-check output: "   0.000123 #12     v2/IPv4 ...".
PKT_RE='^ *-?[0-9]+\.[0-9]{6} #[0-9]+ '
packet_lines() { grep -E "$PKT_RE" "$1"; }
count_packet_lines() { grep -cE "$PKT_RE" "$1"; }

# "RoCE" count of a summary line "NAME: N packets, N RoCE (...": summary_field FILE NAME WORD
summary_field() {
	grep -F -- "$2: " "$1" | grep -F ' packets, ' |
		sed -E "s/.* ([0-9]+) $3.*/\1/" | tail -1
}

vectors=("$VECTORS"/*.pcap)
# The Soft-RoCE captures of tests/vectors/README.md: 459 RoCE packets between them.
golden=(ib_atomic_bw_fadd ib_read_bw ib_send_bw ib_send_bw_ud ib_write_bw ib_write_bw_rdmacm
	ibv_rc_pingpong ibv_uc_pingpong ibv_ud_pingpong rping ucmatose)
golden=("${golden[@]/#/$VECTORS/}")
golden=("${golden[@]/%/.pcap}")

# tshark's view of a capture, "FRAME QP PSN" per RoCE packet; and ours.
tshark_qp_psn() {
	tshark -r "$1" -Y infiniband -T fields -e frame.number -e infiniband.bth.destqp \
		-e infiniband.bth.psn 2>/dev/null || echo "tshark failed on $1"
}
our_qp_psn() {
	packet_lines "$1" | grep -v 'MALFORMED\|CUT:' |
		sed -E 's/^ *[^ ]+ #([0-9]+) .* QP=(0x[0-9a-f]+) PSN=([0-9]+) .*/\1\t\2\t\3/'
}

case $case_name in
cli)
	run
	expect_status 2 "no arguments"
	has "$T/err" "usage: uroce COMMAND" "no arguments"
	has "$T/err" "pcap-check" "no arguments"
	for h in --help -h help; do
		run $h
		expect_status 0 "uroce $h"
		has "$T/out" "usage: uroce COMMAND" "uroce $h"
		has "$T/out" "pcap-check [-q] FILE..." "uroce $h"
	done
	run --version
	expect_status 0 "--version"
	grep -qE '^uroce [0-9]+\.[0-9]+\.[0-9]+$' "$T/out" || fail "--version: $(cat "$T/out")"
	run frobnicate
	expect_status 2 "unknown command"
	has "$T/err" "uroce: 'frobnicate' is not a uroce command" "unknown command"
	has "$T/err" "uroce --help" "unknown command"
	[ -s "$T/out" ] && fail "unknown command: wrote to stdout"
	run --frobnicate
	expect_status 2 "unknown option"
	has "$T/err" "unknown option '--frobnicate'" "unknown option"
	run help frobnicate
	expect_status 2 "help for an unknown command"
	has "$T/err" "'frobnicate' is not a uroce command" "help for an unknown command"
	run pcap-check
	expect_status 2 "pcap-check without files"
	has "$T/err" "no capture file given" "pcap-check without files"
	has "$T/err" "usage: uroce pcap-check" "pcap-check without files"
	run pcap-check -q
	expect_status 2 "pcap-check -q without files"
	run pcap-check --frobnicate "${vectors[0]}"
	expect_status 2 "pcap-check with an unknown option"
	has "$T/err" "unknown option '--frobnicate'" "pcap-check with an unknown option"
	for h in "pcap-check --help" "pcap-check -h" "help pcap-check"; do
		run $h
		expect_status 0 "uroce $h"
		has "$T/out" "usage: uroce pcap-check" "uroce $h"
		has "$T/out" "Exit status" "uroce $h"
	done
	# Output that cannot be written is an error.
	if [ -w /dev/full ]; then
		"$UROCE" pcap-check "${vectors[0]}" >/dev/full 2>"$T/err"
		st=$?
		expect_status 2 "stdout on /dev/full"
		has "$T/err" "uroce: error writing the output: " "stdout on /dev/full"
	fi
	# "--" ends the options: a file named like an option is a file.
	cp "${vectors[0]}" "$T/-q"
	run pcap-check -- "$T/-q"
	expect_status 0 "pcap-check -- FILE"
	;;

vectors)
	run pcap-check "${golden[@]}"
	expect_status 0 "golden vectors"
	n=$(count_packet_lines "$T/out")
	[ "$n" -eq 459 ] || fail "golden vectors: $n packet lines, expected 459"
	want="459 packets, 459 RoCE (459 ICRC ok, 0 ICRC bad, 0 malformed), 0 non-RoCE skipped"
	has "$T/out" "total: 11 files, $want" "golden vectors"
	# Whatever else tests/vectors holds passes too.
	run pcap-check "${vectors[@]}"
	expect_status 0 "all vectors"
	n=$(count_packet_lines "$T/out")
	[ "$n" -ge 459 ] || fail "all vectors: $n packet lines"
	bad=$(packet_lines "$T/out" | grep -cv ' ICRC ok$')
	[ "$bad" -eq 0 ] || fail "all vectors: $bad packet lines without \"ICRC ok\""
	[ -s "$T/err" ] && fail "all vectors: wrote to stderr: $(head -3 "$T/err")"
	# Each file's summary agrees with the lines printed for it.
	for f in "${vectors[@]}"; do
		run pcap-check "$f"
		expect_status 0 "$f"
		lines=$(count_packet_lines "$T/out")
		roce=$(summary_field "$T/out" "$f" RoCE)
		[ "$lines" = "$roce" ] || fail "$f: $lines packet lines, summary says $roce RoCE"
		has "$T/out" "$f: pcap" "$f heading"
	done
	# The CM exchange of rping is named.
	run pcap-check "$VECTORS/rping.pcap"
	for m in "ConnectRequest (REQ)" "ConnectReply (REP)" "ReadyToUse (RTU)" \
		"DisconnectRequest (DREQ)" "DisconnectReply (DREP)"; do
		has "$T/out" "CM $m ICRC ok" "rping.pcap"
	done
	# Every decoded header kind of the vectors shows up.
	run pcap-check "${vectors[@]}"
	for s in "v2/IPv4 198.18.0.3 > 198.18.0.2" "RETH(va=0x" "AETH(ACK credits=unlimited msn=" \
		"AtomicETH(va=0x" "AtomicAckETH(orig=0x" "DETH(qkey=0x80010000 srcqp=0x000001)" \
		"RC RDMA Read Response Middle" "UC Send First" "payload=1024"; do
		has "$T/out" "$s" "all vectors"
	done
	;;

tshark)
	command -v tshark >/dev/null || skip "tshark is not installed"
	total=0
	for f in "${golden[@]}"; do
		run pcap-check "$f"
		expect_status 0 "$f"
		# tshark -Y infiniband: one line per packet it decodes as RoCE.
		tshark_qp_psn "$f" >"$T/want"
		want=$(wc -l <"$T/want")
		got=$(summary_field "$T/out" "$f" RoCE)
		[ "$got" = "$want" ] || fail "$f: $got RoCE packets, tshark counts $want"
		total=$((total + want))
		# Packet by packet: the same frames, destination QPs and PSNs.
		our_qp_psn "$T/out" >"$T/got"
		diff "$T/want" "$T/got" >"$T/diff" || {
			fail "$f: frame/QP/PSN differ from tshark's"
			head -5 "$T/diff" >&2
		}
	done
	[ "$total" -eq 459 ] || fail "tshark counts $total RoCE packets in the vectors, not 459"
	;;

corrupt)
	# Invert one payload byte: that packet, and only it, fails its ICRC.
	src="$VECTORS/rping.pcap"
	idx=$("$MKCAP" flip "$src" "$T/corrupt.pcap") || { fail "mkcap flip"; exit 1; }
	run pcap-check "$T/corrupt.pcap"
	expect_status 1 "corrupt payload"
	n=$(grep -c 'ICRC BAD' "$T/out")
	[ "$n" -eq 1 ] || fail "corrupt payload: $n ICRC BAD lines, expected 1"
	grep -qE "^ *[0-9.]+ #$idx +v2/IPv4 .* ICRC BAD \(carried [0-9a-f]{8}, computed [0-9a-f]{8}\)$" \
		"$T/out" || fail "corrupt payload: no ICRC BAD line for packet #$idx"
	line=$(grep 'ICRC BAD' "$T/out")
	carried=$(sed -E 's/.*carried ([0-9a-f]+).*/\1/' <<<"$line")
	computed=$(sed -E 's/.*computed ([0-9a-f]+).*/\1/' <<<"$line")
	[ "$carried" != "$computed" ] || fail "corrupt payload: carried = computed = $carried"
	all=$(count_packet_lines "$T/out")
	ok=$(packet_lines "$T/out" | grep -c ' ICRC ok$')
	[ "$ok" -eq $((all - 1)) ] || fail "corrupt payload: $ok ICRC ok of $all"
	has "$T/out" "$((all - 1)) ICRC ok, 1 ICRC bad, 0 malformed" "corrupt payload summary"
	;;

malformed)
	"$MKCAP" malformed "$T/malformed.pcap" || { fail "mkcap malformed"; exit 1; }
	run pcap-check "$T/malformed.pcap"
	expect_status 1 "malformed packets"
	grep -qE '#1 +v2/IPv4 198\.18\.0\.1 > 198\.18\.0\.2 RC Send Only .* ICRC ok$' "$T/out" ||
		fail "malformed: the good packet #1"
	grep -qE '#2 +v2/IPv4 198\.18\.0\.1 > 198\.18\.0\.2 MALFORMED: too short for a BTH and an ICRC$' "$T/out" ||
		fail "malformed: too short for a BTH and an ICRC in #2"
	grep -qE '#3 +v2/IPv6 2001:db8::1 > 2001:db8::2 MALFORMED: unknown opcode$' "$T/out" ||
		fail "malformed: unknown opcode in #3"
	grep -qE '#4 +v1 MALFORMED: truncated GRH$' "$T/out" || fail "malformed: truncated GRH in #4"
	has "$T/out" "4 packets, 4 RoCE (1 ICRC ok, 0 ICRC bad, 3 malformed), 0 non-RoCE skipped" \
		"malformed summary"
	;;

unreadable)
	v="$VECTORS/ibv_ud_pingpong.pcap"
	# missing
	run pcap-check "$T/missing.pcap"
	expect_status 2 "missing file"
	has "$T/err" "uroce: $T/missing.pcap: No such file or directory" "missing file"
	# a directory
	mkdir "$T/dir.pcap"
	run pcap-check "$T/dir.pcap"
	expect_status 2 "directory"
	has "$T/err" "uroce: $T/dir.pcap: Is a directory" "directory"
	# empty
	: >"$T/empty.pcap"
	run pcap-check "$T/empty.pcap"
	expect_status 2 "empty file"
	has "$T/err" "uroce: $T/empty.pcap: empty file, not a capture" "empty file"
	# garbage
	printf 'This is not a packet capture, just some text.\n' >"$T/garbage.pcap"
	run pcap-check "$T/garbage.pcap"
	expect_status 2 "garbage"
	has "$T/err" "uroce: $T/garbage.pcap: not a pcap or pcapng file" "garbage"
	# 3 bytes
	printf 'abc' >"$T/short.pcap"
	run pcap-check "$T/short.pcap"
	expect_status 2 "3-byte file"
	has "$T/err" "uroce: $T/short.pcap: " "3-byte file"
	# pcap magic, then the file header cut short
	head -c 10 "$v" >"$T/hdrcut.pcap"
	run pcap-check "$T/hdrcut.pcap"
	expect_status 2 "truncated file header"
	has "$T/err" "truncated pcap file header" "truncated file header"
	# pcapng magic and nothing valid after it
	printf '\n\r\r\n\377\377\377\377garbage!' >"$T/ng.pcapng"
	run pcap-check "$T/ng.pcapng"
	expect_status 2 "garbage pcapng"
	has "$T/err" "uroce: $T/ng.pcapng: bad pcapng byte-order magic" "garbage pcapng"
	# the file header only: a valid capture without packets
	head -c 24 "$v" >"$T/hdronly.pcap"
	run pcap-check "$T/hdronly.pcap"
	expect_status 0 "header only"
	want="0 packets, 0 RoCE (0 ICRC ok, 0 ICRC bad, 0 malformed), 0 non-RoCE skipped"
	has "$T/out" "$T/hdronly.pcap: $want" "header only"
	[ -s "$T/err" ] && fail "header only: wrote to stderr"
	# a record header cut short
	head -c 30 "$v" >"$T/rechdr.pcap"
	run pcap-check "$T/rechdr.pcap"
	expect_status 2 "truncated record header"
	has "$T/err" "uroce: $T/rechdr.pcap: truncated pcap record header (after packet 0)" \
		"truncated record header"
	# a record whose caplen runs past the end of the file
	head -c 100 "$v" >"$T/reccut.pcap"
	run pcap-check "$T/reccut.pcap"
	expect_status 2 "record past the end"
	has "$T/err" "pcap record longer than the rest of the file (after packet 0)" \
		"record past the end"
	# a caplen of 4 GiB - 1
	cp "$v" "$T/huge.pcap"
	chmod u+w "$T/huge.pcap"
	printf '\377\377\377\377' | dd of="$T/huge.pcap" bs=1 seek=32 conv=notrunc status=none
	run pcap-check "$T/huge.pcap"
	expect_status 2 "huge caplen"
	has "$T/err" "pcap record longer than the rest of the file (after packet 0)" "huge caplen"
	# an unsupported version
	cp "$v" "$T/version.pcap"
	chmod u+w "$T/version.pcap"
	printf '\011\000' | dd of="$T/version.pcap" bs=1 seek=4 conv=notrunc status=none
	run pcap-check "$T/version.pcap"
	expect_status 2 "pcap version 9"
	has "$T/err" "unsupported pcap major version" "pcap version 9"
	# none of these printed packets
	for f in missing empty garbage rechdr reccut huge; do
		run pcap-check "$T/$f.pcap"
		n=$(count_packet_lines "$T/out")
		[ "$n" -eq 0 ] || fail "$f: printed $n packet lines"
	done
	;;

midway)
	# A capture whose structure breaks after some packets: those are reported, then the error.
	v="$VECTORS/rping.pcap"
	run pcap-check "$v"
	full=$(summary_field "$T/out" "$v" packets)
	size=$(stat -c %s "$v")
	head -c $((size - 10)) "$v" >"$T/cut.pcap"
	run pcap-check "$T/cut.pcap"
	expect_status 2 "cut in the last record"
	n=$(count_packet_lines "$T/out")
	before=$((full - 1))
	[ "$n" -eq $before ] || fail "cut in the last record: $n packet lines, expected $before"
	has "$T/out" "$T/cut.pcap: $before packets, $before RoCE" "cut in the last record"
	has "$T/out" "non-RoCE skipped, incomplete" "cut in the last record"
	has "$T/err" \
		"uroce: $T/cut.pcap: pcap record longer than the rest of the file (after packet $before)" \
		"cut in the last record"
	# Trailing garbage after the last record.
	{ cat "$v"; printf 'junk!'; } >"$T/junk.pcap"
	run pcap-check "$T/junk.pcap"
	expect_status 2 "trailing junk"
	n=$(count_packet_lines "$T/out")
	[ "$n" -eq "$full" ] || fail "trailing junk: $n packet lines, expected $full"
	has "$T/err" "truncated pcap record header (after packet $full)" "trailing junk"
	;;

pcapng)
	command -v editcap >/dev/null || skip "editcap is not installed"
	for f in "${vectors[@]}"; do
		b=$(basename "$f" .pcap)
		if ! editcap -F pcapng "$f" "$T/$b.pcapng" 2>/dev/null; then
			fail "editcap $f"
			continue
		fi
		run pcap-check "$f"
		packet_lines "$T/out" >"$T/a"
		sed -n 's/^[^:]*: \([0-9]* packets,\)/\1/p' "$T/out" >"$T/a.sum"
		run pcap-check "$T/$b.pcapng"
		expect_status 0 "$b.pcapng"
		has "$T/out" "$T/$b.pcapng: pcapng" "$b.pcapng heading"
		packet_lines "$T/out" >"$T/b"
		sed -n 's/^[^:]*: \([0-9]* packets,\)/\1/p' "$T/out" >"$T/b.sum"
		[ -s "$T/a" ] || fail "$f: no packet lines"
		cmp -s "$T/a" "$T/b" || {
			fail "$b: pcapng lines differ from pcap"
			diff "$T/a" "$T/b" | head -5 >&2
		}
		cmp -s "$T/a.sum" "$T/b.sum" || fail "$b: pcapng summary differs: $(cat "$T/b.sum")"
	done
	;;

synth)
	"$MKCAP" synth "$T/synth.pcap" || { fail "mkcap synth"; exit 1; }
	run pcap-check "$T/synth.pcap"
	expect_status 0 "synthetic capture"
	while IFS= read -r want; do
		grep -qE -- "$want" "$T/out" || fail "synthetic capture: no line matching: $want"
	done <<'EOF'
^ +0\.000004 #4 +v1 
^ +0\.000006 #5 +v2/IPv6 
#4 +v1 vlan 100 pcp 3 fe80::1 > fe80::2 RC Send Only QP=0x000012 PSN=100 SE payload=5 ICRC ok$
#5 +v2/IPv6 2001:db8::1 > 2001:db8::2 RC Acknowledge QP=0x000013 PSN=200 AETH\(NAK code=1 \(invalid request\) msn=7\) ICRC ok$
#6 +v2/IPv4 198\.18\.0\.1 > 198\.18\.0\.2 RC Acknowledge QP=0x000011 PSN=500 AETH\(RNR NAK timer=14 \(1\.28 ms\) msn=8\) ICRC ok$
#7 .* AETH\(ACK credits=6 msn=9\) ICRC ok$
#8 .* AETH\(NAK code=0 \(PSN sequence error\) msn=10\) ICRC ok$
#9 .* RC CmpSwap QP=0x000014 PSN=300 AckReq AtomicETH\(va=0x0000000000001000 rkey=0x00000abc swap=0x0000000000000002 compare=0x0000000000000001\) ICRC ok$
#10 .* RC Send Only Immediate QP=0x000015 PSN=301 ImmDt\(0xdeadbeef\) payload=8 ICRC ok$
#11 .* RC Send Only Invalidate QP=0x000015 PSN=302 IETH\(rkey=0x00001234\) payload=4 ICRC ok$
#12 .* UC RDMA Write Only Immediate QP=0x000016 PSN=303 RETH\(va=0x00007f0000001000 rkey=0x00000042 len=64\) ImmDt\(0x01020304\) payload=64 ICRC ok$
#13 .* CNP QP=0x000017 PSN=0 BECN pkey=0x8001 ICRC ok$
#14 .* UD Send Only QP=0x000001 PSN=1 DETH\(qkey=0x80010000 srcqp=0x000001\) payload=256 CM DisconnectRequest \(DREQ\) ICRC ok$
#15 .* payload=256 MAD class=0x03 attr=0x0011 ICRC ok$
#16 .* payload=256 CM attr=0x0099 ICRC ok$
synth\.pcap: 17 packets, 13 RoCE \(13 ICRC ok, 0 ICRC bad, 0 malformed\), 4 non-RoCE skipped$
EOF
	n=$(count_packet_lines "$T/out")
	[ "$n" -eq 13 ] || fail "synthetic capture: $n packet lines, expected 13 (non-RoCE is quiet)"
	# tshark, where present, finds the same RoCE packets with the same QPs and PSNs.
	if command -v tshark >/dev/null; then
		tshark_qp_psn "$T/synth.pcap" >"$T/want"
		our_qp_psn "$T/out" >"$T/got"
		diff "$T/want" "$T/got" >"$T/diff" || {
			fail "synthetic capture: frame/QP/PSN differ from tshark's"
			cat "$T/diff" >&2
		}
	else
		echo "tshark not installed: comparison skipped"
	fi
	;;

linktype)
	"$MKCAP" linktype "$T/raw.pcap" 101 || { fail "mkcap linktype"; exit 1; }
	run pcap-check "$T/raw.pcap"
	expect_status 0 "raw IP link type"
	n=$(grep -c 'is not Ethernet' "$T/out")
	[ "$n" -eq 1 ] || fail "raw IP link type: $n notes, expected 1"
	grep -qE '#1 +link type 101 \(raw IP\) is not Ethernet: its packets are skipped$' "$T/out" ||
		fail "raw IP link type: note"
	want="2 packets, 0 RoCE (0 ICRC ok, 0 ICRC bad, 0 malformed), 2 non-RoCE skipped (2 not Ethernet)"
	has "$T/out" "$want" "raw IP link type summary"
	"$MKCAP" linktype "$T/sll.pcap" 113 || { fail "mkcap linktype"; exit 1; }
	run pcap-check "$T/sll.pcap"
	expect_status 0 "Linux cooked link type"
	has "$T/out" "link type 113 (Linux cooked capture) is not Ethernet" "Linux cooked link type"
	has "$T/out" "not on \"any\"" "Linux cooked link type"
	;;

cut)
	# Packets cut by a snap length are reported, not checked, and fail the run.
	command -v editcap >/dev/null || skip "editcap is not installed"
	v="$VECTORS/ib_write_bw.pcap"
	editcap -s 100 "$v" "$T/snap.pcap" 2>/dev/null || { fail "editcap -s"; exit 1; }
	run pcap-check "$T/snap.pcap"
	expect_status 1 "snap length 100"
	ncut=$(grep -cE ' CUT: 100 of [0-9]+ bytes captured, not checked$' "$T/out")
	nok=$(packet_lines "$T/out" | grep -c ' ICRC ok$')
	all=$(count_packet_lines "$T/out")
	if [ "$ncut" -eq 0 ] || [ "$nok" -eq 0 ]; then fail "snap length 100: $ncut cut, $nok ok"; fi
	[ $((ncut + nok)) -eq "$all" ] || fail "snap length 100: $ncut cut + $nok ok != $all"
	has "$T/out" "0 malformed, $ncut cut short by the capture, not checked)" "snap length 100"
	hasnt "$T/out" "MALFORMED" "snap length 100"
	;;

multi)
	# Several files: each is checked whatever happened to the others; the worst status wins.
	good1="$VECTORS/ib_send_bw_ud.pcap" good2="$VECTORS/ucmatose.pcap"
	"$MKCAP" flip "$good1" "$T/bad.pcap" >/dev/null || { fail "mkcap flip"; exit 1; }
	run pcap-check "$good1" "$good2"
	expect_status 0 "two good files"
	has "$T/out" "total: 2 files, " "two good files"
	run pcap-check "$good1" "$T/bad.pcap" "$good2"
	expect_status 1 "good, bad ICRC, good"
	has "$T/out" "$good2: " "good, bad ICRC, good"
	run pcap-check "$good1" "$T/missing.pcap" "$T/bad.pcap" "$good2"
	expect_status 2 "good, missing, bad ICRC, good"
	has "$T/err" "uroce: $T/missing.pcap: No such file or directory" "good, missing, bad, good"
	has "$T/out" "ICRC BAD" "good, missing, bad, good"
	for f in "$good1" "$T/bad.pcap" "$good2"; do
		grep -F -- "$f: " "$T/out" | grep -F ' packets, ' >/dev/null ||
			fail "good, missing, bad, good: no summary for $f"
	done
	has "$T/out" "total: 4 files (1 unreadable or incomplete), " "good, missing, bad, good"
	n1=$(summary_field "$T/out" "$good1" RoCE)
	n2=$(summary_field "$T/out" "$good2" RoCE)
	nb=$(summary_field "$T/out" "$T/bad.pcap" RoCE)
	sum=$((n1 + n2 + nb))
	has "$T/out" ", $sum RoCE ($((sum - 1)) ICRC ok, 1 ICRC bad, 0 malformed)" \
		"good, missing, bad, good: total"
	;;

quiet)
	v="$VECTORS/ibv_ud_pingpong.pcap"
	"$MKCAP" flip "$v" "$T/bad.pcap" >/dev/null || { fail "mkcap flip"; exit 1; }
	run pcap-check -q "$v"
	expect_status 0 "-q, good file"
	n=$(count_packet_lines "$T/out")
	[ "$n" -eq 0 ] || fail "-q, good file: $n packet lines"
	has "$T/out" "$v: " "-q, good file: summary"
	run pcap-check --quiet "$T/bad.pcap"
	expect_status 1 "-q, bad file"
	n=$(count_packet_lines "$T/out")
	[ "$n" -eq 1 ] || fail "-q, bad file: $n packet lines, expected the bad one"
	has "$T/out" "ICRC BAD" "-q, bad file"
	# "-" is standard input.
	"$UROCE" pcap-check - <"$v" >"$T/out" 2>"$T/err"
	st=$?
	expect_status 0 "standard input"
	has "$T/out" "-: pcap" "standard input"
	;;

*)
	echo "unknown case $case_name" >&2
	exit 1
	;;
esac

if [ "$failures" -gt 0 ]; then
	echo "$case_name: $failures failures"
	exit 1
fi
echo "$case_name: ok"
exit 0
