#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Tests of `uroce link`, `gids`, `mode` and `stats` on the host's own interfaces (loopback),
# run by ctest one case at a time:  cli.sh CASE UROCE
# Exits 0 when the case passes, 1 when it fails. Each case gets an empty run-time directory
# (UROCE_RUNDIR, mktemp -d), removed on exit. Every run of uroce must end with status 0, 1 or 2
# and without a sanitizer report.
set -u -o pipefail

case_name=$1 UROCE=$2

T=$(mktemp -d "${TMPDIR:-/tmp}/uroce-host-cli.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT
export UROCE_RUNDIR=$T/run
mkdir "$UROCE_RUNDIR" || exit 1

export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}exitcode=99"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:+$UBSAN_OPTIONS:}exitcode=98:print_stacktrace=1"

failures=0
fail() {
	echo "FAIL [$case_name]: $*" >&2
	failures=$((failures + 1))
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

expect() { # STATUS ARGS...: run, and check the status
	local want=$1
	shift
	run "$@"
	if [ "$st" -ne "$want" ]; then
		fail "uroce $*: status $st, expected $want"
		sed 's/^/  stdout: /' "$T/out" | tail -5 >&2
		sed 's/^/  stderr: /' "$T/err" | tail -5 >&2
	fi
}

has() { # FILE FIXED-STRING DESCRIPTION
	grep -qF -- "$2" "$1" || fail "$3: no \"$2\" in $(basename "$1"): $(head -c 300 "$1")"
}

hasnt() { # FILE FIXED-STRING DESCRIPTION
	! grep -qF -- "$2" "$1" || fail "$3: unexpected \"$2\" in $(basename "$1")"
}

empty() { # FILE DESCRIPTION
	[ ! -s "$1" ] || fail "$2: $(basename "$1") not empty: $(head -c 300 "$1")"
}

# The `link show` row of a device, with runs of blanks squeezed: "NAME NETDEV STATE ROCE MTU ORIGIN".
row() { grep -E "^$1 " "$T/out" | tr -s ' ' ' '; }

expect_row() { # DEVICE EXPECTED-ROW DESCRIPTION
	local r
	r=$(row "$1")
	[ "$r" = "$2" ] || fail "$3: row of $1 is '$r', expected '$2'"
}

# The interface MTU as the kernel reports it, and the active MTU rxe would compute from it.
lo_mtu=$(cat /sys/class/net/lo/mtu 2>/dev/null || echo 65536)
active_of() {
	local m=$(($1 - 80))
	for v in 4096 2048 1024 512 256; do
		if [ "$m" -ge "$v" ]; then
			echo "$v"
			return
		fi
	done
	echo 256
}
lo_active=$(active_of "$lo_mtu")

case_link() {
	expect 0 link add t0 netdev lo
	empty "$T/out" "link add prints nothing"
	empty "$T/err" "link add"
	[ -f "$UROCE_RUNDIR/devices/t0" ] || fail "no definition file devices/t0"
	expect 0 link show
	has "$T/out" "DEVICE" "header"
	expect_row t0 "t0 lo ACTIVE v2 $lo_active configured" "default roce v2"
	hasnt "$T/out" "uroce_lo" "defined devices only"
	expect 0 link show t0
	expect_row t0 "t0 lo ACTIVE v2 $lo_active configured" "show NAME"
	expect 1 link show nosuch
	has "$T/err" "no device 'nosuch'" "show unknown"
	expect 0 link del t0
	empty "$T/out" "link del prints nothing"
	[ ! -e "$UROCE_RUNDIR/devices/t0" ] || fail "definition left after del"
	expect 0 link add t1 netdev lo roce v1,v2
	expect 0 link show
	expect_row t1 "t1 lo ACTIVE v1,v2 $lo_active configured" "roce v1,v2"
	expect 0 link del t1
	expect 0 link add t2 roce v1 netdev lo
	expect 0 link show -d
	expect_row t2 "t2 lo ACTIVE v1 $lo_active configured" "roce v1, keywords in any order"
	has "$T/out" "    node_guid " "details: GUID"
	has "$T/out" "hashed from the device name" "loopback has no MAC"
	has "$T/out" "    mtu $lo_mtu (interface), active $lo_active" "details: MTU"
	has "$T/out" "    rate 100 Gb/sec (4X EDR), the interface reports no link speed" \
		"details: lo's assumed rate"
	has "$T/out" "    default_roce_mode IB/RoCE v1" "details: mode of a v1 device"
	expect 0 link list
	expect_row t2 "t2 lo ACTIVE v1 $lo_active configured" "list = show"
}

case_link_errors() {
	expect 1 link add t0 netdev uroce-nosuch0
	has "$T/err" "uroce: link: interface 'uroce-nosuch0' does not exist" "unknown netdev"
	[ ! -e "$UROCE_RUNDIR/devices/t0" ] || fail "definition written for an unknown netdev"
	for bad in 'a/b' '.hidden' '..' 'a b' 'x:y' "$(printf 'a%.0s' {1..64})"; do
		expect 2 link add "$bad" netdev lo
		has "$T/err" "invalid device name" "bad name '$bad'"
		has "$T/err" "usage: uroce link add" "bad name '$bad': usage"
	done
	expect 0 link add "$(printf 'a%.0s' {1..63})" netdev lo
	expect 0 link del "$(printf 'a%.0s' {1..63})"
	expect 2 link add '' netdev lo
	expect 2 link add t0 netdev lo roce v3
	has "$T/err" "invalid RoCE versions 'v3': use v1, v2 or v1,v2" "bad roce"
	expect 2 link add t0 netdev lo roce v1,v2,v3
	expect 2 link add t0 netdev lo roce
	has "$T/err" "'roce' needs a value" "roce without a value"
	expect 2 link add t0 netdev
	expect 2 link add t0
	has "$T/err" "missing 'netdev IFNAME'" "no netdev"
	expect 2 link add t0 netdev lo type rxe
	has "$T/err" "unknown keyword 'type'" "unknown keyword"
	expect 2 link add t0 netdev lo netdev lo
	expect 2 link add
	expect 2 link
	has "$T/err" "missing subcommand" "no subcommand"
	expect 2 link frob
	has "$T/err" "unknown subcommand 'frob'" "unknown subcommand"
	[ -z "$(ls -A "$UROCE_RUNDIR/devices" 2>/dev/null)" ] || fail "definitions after errors"

	expect 0 link add t0 netdev lo
	expect 1 link add t0 netdev lo
	has "$T/err" "device 't0' already exists" "duplicate"
	expect 1 link add t1 netdev lo
	has "$T/err" "interface 'lo' already carries device 't0'" "second device on a netdev"
	expect 1 link del nosuch
	has "$T/err" "no device 'nosuch' is defined" "del unknown"
	expect 2 link del
	expect 2 link del t0 t1
	expect 0 link del t0
	expect 1 link del t0
	expect 1 link del uroce_lo
	has "$T/err" "'uroce_lo' is an automatic device" "del of an automatic device"

	# A run-time directory that cannot be one (a file): status 1, naming it.
	: >"$T/file"
	UROCE_RUNDIR=$T/file expect 1 link add t0 netdev lo
	has "$T/err" "run-time directory $T/file" "unusable rundir"
}

case_persist() {
	expect 0 link add ta netdev lo roce v1,v2
	# A second, separate invocation sees the first one's definition.
	expect 0 link show
	expect_row ta "ta lo ACTIVE v1,v2 $lo_active configured" "persists"
	has "$UROCE_RUNDIR/devices/ta" "netdev lo" "definition file content"
	has "$UROCE_RUNDIR/devices/ta" "roce v1,v2" "definition file content"
	# A netdev other than lo, if the host has one with an address: two devices coexist.
	other=$(ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | sed 's/@.*//' | grep -vx lo | head -1)
	if [ -n "$other" ]; then
		expect 0 link add tb netdev "$other"
		expect 0 link del ta
		expect 0 link show
		[ -n "$(row tb)" ] || fail "tb gone after deleting ta"
		[ -z "$(row ta)" ] || fail "ta still listed after del"
		expect 0 link del tb
	else
		expect 0 link del ta
	fi
	expect 0 link show
	has "$T/out" "uroce_lo" "automatic devices back when none is defined"
	# Files of a mode and of counters go with the device.
	expect 0 link add tc netdev lo roce v1,v2
	expect 0 mode -d tc -m 1
	[ -f "$UROCE_RUNDIR/rdma_cm/tc/ports/1/default_roce_mode" ] || fail "no mode file"
	expect 0 link del tc
	[ ! -e "$UROCE_RUNDIR/rdma_cm/tc" ] || fail "mode directory left after del"
	expect 0 link add tc netdev lo roce v1,v2
	expect 0 mode -d tc
	[ "$(cat "$T/out")" = "RoCE v2" ] || fail "re-created device inherited the old mode"
}

case_auto() {
	expect 0 link show
	expect_row uroce_lo "uroce_lo lo ACTIVE v2 $lo_active auto" "loopback device"
	# Every interface that is up with an address has one, and no other (oracle: ip).
	if command -v ip >/dev/null; then
		want=$(ip -o addr show up | awk '{print $2}' | sed 's/@.*//' | sort -u | sed 's/^/uroce_/')
		got=$(tail -n +2 "$T/out" | awk '{print $1}' | sort)
		[ "$want" = "$got" ] || fail "automatic devices: '$got', expected '$want'"
	fi
	tail -n +2 "$T/out" | awk '$6 != "auto" { exit 1 }' || fail "a device not marked auto"
	expect 0 link add mine netdev lo
	expect 0 link show
	[ "$(tail -n +2 "$T/out" | awk '{print $1}')" = "mine" ] || fail "automatic devices while one is defined"
	expect 1 gids uroce_lo
	expect 0 link del mine
	expect 0 link show
	expect_row uroce_lo "uroce_lo lo ACTIVE v2 $lo_active auto" "automatic again"
}

case_mode() {
	expect 0 mode -d uroce_lo -p 1
	[ "$(cat "$T/out")" = "RoCE v2" ] || fail "default of an automatic device: '$(cat "$T/out")'"
	expect 0 link add td netdev lo roce v1,v2
	expect 0 mode -d td -p 1
	[ "$(cat "$T/out")" = "RoCE v2" ] || fail "default: '$(cat "$T/out")'"
	[ ! -e "$UROCE_RUNDIR/rdma_cm" ] || fail "showing the mode wrote a file"
	f=$UROCE_RUNDIR/rdma_cm/td/ports/1/default_roce_mode
	expect 0 mode -d td -p 1 -m 1
	[ "$(cat "$T/out")" = "IB/RoCE v1" ] || fail "set 1 prints '$(cat "$T/out")'"
	printf 'IB/RoCE v1\n' | cmp -s - "$f" || fail "file after -m 1: '$(od -c "$f" | head -3)'"
	expect 0 mode -d td
	[ "$(cat "$T/out")" = "IB/RoCE v1" ] || fail "show after set 1 (-p defaults to 1)"
	expect 0 mode --device td --port 1 --mode 2
	printf 'RoCE v2\n' | cmp -s - "$f" || fail "file after -m 2"
	expect 0 mode -d td -m 1
	# configfs takes the string with or without a newline; so do we.
	printf 'RoCE v2' >"$f"
	expect 0 mode -d td
	[ "$(cat "$T/out")" = "RoCE v2" ] || fail "file without newline"
	printf 'RoCE v9\n' >"$f"
	expect 1 mode -d td
	has "$T/err" "holds neither 'IB/RoCE v1' nor 'RoCE v2'" "garbage in the file"
	expect 0 mode -d td -m 1
	# Clearing the run-time directory's modes restores the default.
	rm -rf "$UROCE_RUNDIR/rdma_cm"
	expect 0 mode -d td
	[ "$(cat "$T/out")" = "RoCE v2" ] || fail "default after clearing rdma_cm"
	expect 0 mode -d td -m 1
	rm -rf "${UROCE_RUNDIR:?}"/*
	expect 1 mode -d td
	has "$T/err" "no device 'td'" "device gone with the run-time directory"
	expect 0 mode -d uroce_lo
	[ "$(cat "$T/out")" = "RoCE v2" ] || fail "default after clearing everything"
}

case_mode_errors() {
	expect 0 link add t_v1 netdev lo roce v1
	expect 0 mode -d t_v1 -p 1
	[ "$(cat "$T/out")" = "IB/RoCE v1" ] || fail "default of a v1-only device: '$(cat "$T/out")'"
	expect 1 mode -d t_v1 -p 1 -m 2
	has "$T/err" "uroce: mode: device t_v1 supports only RoCE v1 (IB/RoCE v1); cannot set RoCE v2" \
		"unsupported mode"
	empty "$T/out" "failed set prints no mode"
	[ ! -e "$UROCE_RUNDIR/rdma_cm/t_v1" ] || fail "failed set wrote a file"
	expect 0 link del t_v1
	expect 0 link add t_v2 netdev lo roce v2
	expect 1 mode -d t_v2 -m 1
	has "$T/err" "device t_v2 supports only RoCE v2 (RoCE v2); cannot set IB/RoCE v1" "v1 on v2-only"
	expect 1 mode -d t_v2 -p 2
	has "$T/err" "device t_v2 has no port 2" "bad port"
	expect 1 mode -d t_v2 -p 0 -m 2
	expect 2 mode -d t_v2 -p abc
	has "$T/err" "invalid port 'abc'" "port not a number"
	expect 2 mode -d t_v2 -p -1
	for m in 0 3 x 1x ''; do
		expect 2 mode -d t_v2 -m "$m"
		has "$T/err" "invalid mode '$m': use 1 (IB/RoCE v1) or 2 (RoCE v2)" "bad mode '$m'"
	done
	expect 2 mode -d t_v2 -m
	expect 1 mode -d nosuch
	has "$T/err" "no device 'nosuch'" "unknown device"
	expect 1 mode -d nosuch -m 2
	expect 2 mode
	has "$T/err" "missing -d DEV" "no device given"
	expect 2 mode -d t_v2 extra
	expect 2 mode -x
	expect 0 mode -d t_v2
	[ "$(cat "$T/out")" = "RoCE v2" ] || fail "mode changed by the failed calls"
}

case_gids() {
	expect 0 gids
	tr -s '\t ' ' ' <"$T/out" >"$T/norm"
	[ "$(head -1 "$T/out")" = "$(printf 'DEV\tPORT\tINDEX\tGID\t\t\t\t\tIPv4 \t\tVER\tNETDEV')" ] ||
		fail "header: '$(head -1 "$T/out")'"
	# Loopback: MAC 00:00:00:00:00:00 gives fe80::200:ff:fe00:0 (the U/L bit flipped).
	has "$T/norm" "uroce_lo 1 0 fe80:0000:0000:0000:0200:00ff:fe00:0000 v2 lo" "default GID of lo"
	has "$T/norm" " 0000:0000:0000:0000:0000:ffff:7f00:0001 127.0.0.1 v2 lo" "127.0.0.1"
	n=$(grep -c '^uroce_' "$T/out")
	has "$T/out" "n_gids_found=$n" "count"
	expect 0 link add td netdev lo roce v1,v2
	expect 0 gids td
	tr -s '\t ' ' ' <"$T/out" >"$T/norm"
	has "$T/norm" "td 1 0 fe80:0000:0000:0000:0200:00ff:fe00:0000 v1 lo" "dual: index 0 v1"
	has "$T/norm" "td 1 1 fe80:0000:0000:0000:0200:00ff:fe00:0000 v2 lo" "dual: index 1 v2"
	has "$T/norm" "td 1 2 0000:0000:0000:0000:0000:ffff:7f00:0001 127.0.0.1 v1 lo" "dual: IPv4 v1"
	has "$T/norm" "td 1 3 0000:0000:0000:0000:0000:ffff:7f00:0001 127.0.0.1 v2 lo" "dual: IPv4 v2"
	expect 1 gids nosuch
	has "$T/err" "no device 'nosuch'" "unknown device"
	expect 2 gids td td
	expect 2 gids -x
}

case_stats() {
	expect 0 stats
	has "$T/out" "uroce_lo: no counters yet" "no counters"
	expect 0 stats uroce_lo
	[ "$(cat "$T/out")" = "uroce_lo: no counters yet" ] || fail "stats NAME: '$(cat "$T/out")'"
	expect 1 stats nosuch
	has "$T/err" "no device 'nosuch'" "unknown device"
	expect 2 stats a b
	: >"$UROCE_RUNDIR/stats" # not a directory: the counters cannot be read
	expect 1 stats uroce_lo
}

# `uroce run`'s view of /sys/class: the kernel's files for uroce's devices, equal to what
# `uroce gids` and `uroce link show -d` say; --no-sysfs runs without it.
case_sysfs() {
	expect 0 link add sv0 netdev lo roce v1,v2
	expect 0 gids sv0
	# index, GID, version (v1/v2): the version is the next to last field
	tr -s '\t ' ' ' <"$T/out" | awk '$1 == "sv0" { print $3, $4, $(NF - 1) }' >"$T/gids"
	local d=/sys/class/infiniband/sv0 n=0 had_ib=no
	[ -e /dev/infiniband ] && had_ib=yes
	# One program prints every file the check needs, so one view is compared with one table.
	run run -- sh -c "cat $d/node_type $d/ports/1/state $d/ports/1/link_layer $d/ports/1/rate \
		/sys/class/infiniband_verbs/uverbs0/ibdev; ls $d/device/net; \
		ls $d/ports/1/gids | wc -l; ls /sys/class/net >/dev/null && echo net-ok; \
		touch /sys/class/x 2>/dev/null || echo read-only; \
		[ -c /dev/infiniband/uverbs0 ] && [ -r /dev/infiniband/uverbs0 ] && \
			[ -w /dev/infiniband/uverbs0 ] && echo uverbs0-chr-rw; \
		[ -c /dev/infiniband/rdma_cm ] && echo rdma_cm-chr; [ -c /dev/null ] && echo null-ok; \
		for i in \$(seq 0 15); do [ -e $d/ports/1/gid_attrs/types/\$i ] && echo \"\$i \$(cat $d/ports/1/gids/\$i) \$(cat $d/ports/1/gid_attrs/types/\$i) \$(cat $d/ports/1/gid_attrs/ndevs/\$i)\"; done; true"
	if grep -q "no /sys/class/infiniband view" "$T/err"; then
		echo "no view here: $(cat "$T/err")"
		return
	fi
	[ "$st" -eq 0 ] || fail "uroce run: status $st: $(cat "$T/err")"
	# lo reports no link speed: the rate assumed for it (host/config/device.h)
	for want in "1: CA" "4: ACTIVE" "Ethernet" "100 Gb/sec (4X EDR)" "sv0" "lo" "1024" "net-ok" \
		"read-only" "uverbs0-chr-rw" "rdma_cm-chr" "null-ok"; do
		grep -qxF -- "$want" "$T/out" || fail "view: no line '$want' in: $(head -c 400 "$T/out")"
	done
	while read -r idx gid ver; do
		local ty="RoCE v2"
		[ "$ver" = v1 ] && ty="IB/RoCE v1"
		grep -qxF "$idx $gid $ty lo" "$T/out" || fail "view: GID $idx is not '$gid $ty lo'"
		n=$((n + 1))
	done <"$T/gids"
	[ "$n" -ge 4 ] || fail "uroce gids sv0 listed $n GIDs, expected at least 4"
	# and no more in the view than in the table
	[ "$(grep -c ' lo$' "$T/out")" -eq "$n" ] || fail "view: GIDs other than uroce gids's"
	# the program's /dev/infiniband is its own
	[ "$had_ib" = yes ] || [ ! -e /dev/infiniband ] || fail "uroce run left /dev/infiniband behind"
	run run --no-sysfs -- sh -c "ls /sys/class/infiniband 2>/dev/null | grep -x sv0"
	[ "$st" -ne 0 ] || fail "--no-sysfs: sv0 is in /sys/class/infiniband"
}

# rdma_cm's configfs under `uroce run` (tools/run_configfs.c): Red Hat's procedure for the
# default RoCE mode, as root and, when root, as nobody; what is written is what `uroce mode`
# writes (the same file, through the same uroce_mode_set), which is what rdma_cm reads.
CFS=/sys/kernel/config/rdma_cm

# configfs_script DEV: the shell script the program runs; prints one line per step.
configfs_script() {
	local d=$CFS/$1 m=$CFS/$1/ports/1/default_roce_mode t=$CFS/$1/ports/1/default_roce_tos
	cat <<-EOF
		ls -d $CFS >/dev/null && echo "cfs-exists"
		mkdir $d && echo "mkdir-ok"
		ls $d/ports/1 | tr '\n' ' '; echo
		echo "before: \$(cat $m)"
		echo "IB/RoCE v1" > $m && echo "write-v1-ok"
		echo "after: \$(cat $m)"
		"$UROCE" mode -d $1 | sed 's/^/uroce-mode: /'
		echo "RoCE v3" > $m 2>/dev/null || echo "bad-string-refused"
		printf 'RoCE v2\n\n' > $m 2>/dev/null || echo "two-newlines-refused"
		echo "still: \$(cat $m)"
		echo 96 > $t && echo "tos: \$(cat $t)"
		echo 256 > $t 2>/dev/null || echo "tos-256-refused"
		mkdir $CFS/nosuch_dev 2>&1 | grep -q 'No such device' && echo "unknown-dev-enodev"
		mkdir $d/x 2>&1 | grep -q 'not permitted' && echo "mkdir-in-group-eperm"
		rmdir $d/ports 2>&1 | grep -q 'not permitted' && echo "rmdir-ports-eperm"
		touch $CFS/x 2>/dev/null || echo "create-refused"
		rmdir $d && echo "rmdir-ok"
		[ -e $d ] || echo "gone"
		mkdir $d && echo "again: \$(cat $m)" && rmdir $d
	EOF
}

# check_configfs_out WHO: the lines the script printed ($T/out), and the files it left.
check_configfs_out() {
	local want
	for want in "cfs-exists" "mkdir-ok" "default_roce_mode default_roce_tos " \
		"before: RoCE v2" "write-v1-ok" "after: IB/RoCE v1" "uroce-mode: IB/RoCE v1" \
		"bad-string-refused" "two-newlines-refused" "still: IB/RoCE v1" "tos: 96" \
		"tos-256-refused" "unknown-dev-enodev" "mkdir-in-group-eperm" "rmdir-ports-eperm" \
		"create-refused" "rmdir-ok" "gone" "again: IB/RoCE v1"; do
		grep -qxF -- "$want" "$T/out" || fail "$1: no line '$want' in: $(head -c 600 "$T/out")"
	done
}

case_configfs() {
	expect 0 link add cf12 netdev lo roce v1,v2
	configfs_script cf12 >"$T/script"
	run run -- sh "$T/script"
	if grep -q "no /sys/kernel/config/rdma_cm\|no /sys/class/infiniband view" "$T/err"; then
		echo "no configfs here: $(cat "$T/err")"
		return
	fi
	[ "$st" -eq 0 ] || fail "uroce run: status $st: $(cat "$T/err")"
	check_configfs_out "$(id -un)"
	# Outside: the mode that `uroce mode` and rdma_cm read, byte for byte what `mode -m 1` writes.
	expect 0 mode -d cf12
	[ "$(cat "$T/out")" = "IB/RoCE v1" ] || fail "uroce mode after configfs: '$(cat "$T/out")'"
	printf 'IB/RoCE v1\n' | cmp -s - "$UROCE_RUNDIR/rdma_cm/cf12/ports/1/default_roce_mode" ||
		fail "the mode file differs from what 'uroce mode -m 1' writes"
	printf '96\n' | cmp -s - "$UROCE_RUNDIR/rdma_cm/cf12/ports/1/default_roce_tos" ||
		fail "the TOS file is not '96'"
	# `uroce mode` changes what configfs shows, and the group is the mount's: a new run has none.
	expect 0 mode -d cf12 -m 2
	run run -- sh -c "ls $CFS | wc -l; mkdir $CFS/cf12 && cat $CFS/cf12/ports/1/default_roce_mode"
	[ "$(tr '\n' ' ' <"$T/out")" = "0 RoCE v2 " ] || fail "second run: '$(cat "$T/out")'"

	# A RoCE v1-only device (a netdev carries one device: cf12 goes first).
	expect 0 link del cf12
	expect 0 link add cf1 netdev lo roce v1
	run run -- bash -c "mkdir $CFS/cf1; cat $CFS/cf1/ports/1/default_roce_mode; \
		echo 'RoCE v2' > $CFS/cf1/ports/1/default_roce_mode || echo v2-refused"
	has "$T/out" "IB/RoCE v1" "v1-only device shows IB/RoCE v1"
	has "$T/out" "v2-refused" "v1-only device takes no RoCE v2"
	has "$T/err" "Invalid argument" "v1-only device: the error"
	expect 0 link del cf1

	# The program ends: so does the server, the other process in its mount namespace (a bounded
	# poll: the server sees the end through a pidfd).
	run run -- sh -c 'ls /sys/kernel/config >/dev/null; readlink /proc/self/ns/mnt'
	local ns pat left=yes
	ns=$(cat "$T/out")
	[ -n "$ns" ] && [ "$ns" != "$(readlink /proc/self/ns/mnt)" ] || fail "no namespace of its own: '$ns'"
	pat=$(printf '%s' "$ns" | sed 's/[][*?\\]/\\&/g') # "mnt:[N]" as a find pattern
	for _ in $(seq 100); do
		left=$(find /proc -mindepth 3 -maxdepth 3 -path '/proc/[0-9]*/ns/mnt' -lname "$pat" \
			2>/dev/null)
		[ -z "$left" ] && break
		timeout 0.05 tail -f /dev/null
	done
	[ -z "$left" ] || fail "processes left in the program's mount namespace: $left"

	if [ "$(id -u)" -ne 0 ]; then
		return
	fi
	# FUSE unusable (/dev/null at /dev/fuse, in a mount namespace of the test's own): the view
	# works without configfs, and one line says why.
	if command -v unshare >/dev/null; then
		unshare -m sh -c "mount --make-rprivate / && mount --bind /dev/null /dev/fuse &&
			exec '$UROCE' run -- sh -c 'ls -d /sys/kernel/config 2>&1; ls /sys/class/infiniband'" \
			>"$T/out" 2>"$T/err"
		has "$T/err" "uroce: run: note: no /sys/kernel/config/rdma_cm (mount FUSE on" "no FUSE"
		[ "$(wc -l <"$T/err")" -eq 1 ] || fail "no FUSE: not one line: $(cat "$T/err")"
		grep -qx uroce_lo "$T/out" || fail "no FUSE: no view: $(cat "$T/out")"
		has "$T/out" "No such file" "no FUSE: a /sys/kernel/config is left"
	fi

	# As an ordinary user: nobody, with a run-time directory of its own.
	if ! command -v su >/dev/null || ! id nobody >/dev/null 2>&1; then
		echo "as nobody: skipped (no su or no user nobody)"
		return
	fi
	if ! su nobody -s /bin/sh -c "test -x '$UROCE'" 2>/dev/null; then
		echo "as nobody: skipped ($UROCE is not executable by nobody)"
		return
	fi
	chmod 711 "$T"
	mkdir "$T/nobody" && chown nobody "$T/nobody" || {
		fail "cannot make nobody's directory"
		return
	}
	su nobody -s /bin/sh -c "UROCE_RUNDIR=$T/nobody/run '$UROCE' link add cf12 netdev lo roce v1,v2" ||
		fail "nobody: link add"
	configfs_script cf12 >"$T/nobody/script"
	su nobody -s /bin/sh -c "UROCE_RUNDIR=$T/nobody/run '$UROCE' run -- sh $T/nobody/script" \
		>"$T/out" 2>"$T/err"
	if grep -q "no /sys/class/infiniband view" "$T/err"; then
		echo "as nobody: skipped, user namespaces are not available: $(cat "$T/err")"
		return
	fi
	check_configfs_out nobody
	su nobody -s /bin/sh -c "UROCE_RUNDIR=$T/nobody/run '$UROCE' mode -d cf12" >"$T/out" 2>&1
	[ "$(cat "$T/out")" = "IB/RoCE v1" ] || fail "nobody: uroce mode after configfs: '$(cat "$T/out")'"
}

case_help() {
	expect 0 --help
	for c in link gids mode stats; do
		has "$T/out" "  $c " "--help lists $c"
	done
	expect 0 help link
	has "$T/out" "uroce_lo" "link help names automatic devices"
	has "$T/out" "only the defined devices exist" "link help: defined devices replace automatic ones"
	expect 0 link --help
	expect 0 help gids
	has "$T/out" "show_gids" "gids help"
	expect 0 help mode
	has "$T/out" "cma_roce_mode" "mode help"
	expect 0 mode -h
	expect 0 help stats
	expect 0 stats --help
	expect 0 gids -h
	expect 0 help run
	has "$T/out" "/sys/kernel/config/rdma_cm" "run help names the configfs"
}

if ! declare -F "case_$case_name" >/dev/null; then
	echo "cli.sh: unknown case '$case_name'" >&2
	exit 2
fi
"case_$case_name"
[ "$failures" -eq 0 ] || {
	echo "$case_name: $failures failure(s)" >&2
	exit 1
}
echo "$case_name: ok"
