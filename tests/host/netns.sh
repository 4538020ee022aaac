#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# GID tables, devices and MTUs on interfaces the test controls: a network namespace of its own
# (uroce-t-PID) with two veth pairs, explicit MACs, and addresses only from 198.18.0.0/15 and
# fd00:198:18::/48 (plus two link-local ones). Run by ctest:  netns.sh UROCE TEST_HOST_NETNS
# Exits 0 pass, 1 fail, 77 skip (not root, or no ip / netns / veth). The namespace and the
# run-time directory are removed on exit.
set -u -o pipefail

UROCE=$1 HELPER=$2

# shellcheck source=../lib/verdict.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/verdict.sh"
[ "$(id -u)" -eq 0 ] || skip "needs root to create a network namespace"
command -v ip >/dev/null || skip "no ip command"

NS=uroce-t-$$
T=$(mktemp -d "${TMPDIR:-/tmp}/uroce-host-netns.XXXXXX") || exit 1
cleanup() {
	ip netns del "$NS" 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT
export UROCE_RUNDIR=$T/run
mkdir "$UROCE_RUNDIR" || exit 1
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}exitcode=99"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:+$UBSAN_OPTIONS:}exitcode=98:print_stacktrace=1"

ip netns add "$NS" 2>/dev/null || skip "cannot create a network namespace"
nsip() { ip -n "$NS" "$@"; }
nsip link add v0 type veth peer name v1 2>/dev/null || skip "no veth support"
nsip link add w0 type veth peer name w1 || exit 1
# No automatic link-local addresses: the test adds exactly the addresses it expects.
set -e
nsip link set v0 address 02:00:00:00:00:01 addrgenmode none mtu 9000
nsip link set v1 address 02:00:00:00:00:02 addrgenmode none mtu 1500
nsip link set w0 address 02:00:00:00:00:03 addrgenmode none
nsip link set w1 address 02:00:00:00:00:04 mtu 300 # below 1280: no IPv6 at all
for i in v0 v1 w0 w1; do nsip link set "$i" up; done
nsip addr add 198.18.0.1/24 dev v0
nsip addr add fd00:198:18::1/64 dev v0 nodad
nsip addr add fe80::ff:fe00:1/64 dev v0 nodad # the EUI-64 one: same as the default GID
nsip addr add fe80::1234/64 dev v0 nodad      # another link-local: a GID of its own
nsip addr add 198.18.1.1/24 dev v1
nsip addr add fd00:198:18:1::1/64 dev v1 nodad
nsip addr add 198.18.2.1/24 dev w0
set +e

failures=0
fail() {
	echo "FAIL: $*" >&2
	failures=$((failures + 1))
}

run() { # ARGS...: uroce inside the namespace; $T/out, $T/err, $st
	ip netns exec "$NS" "$UROCE" "$@" >"$T/out" 2>"$T/err"
	st=$?
	if grep -qE 'Sanitizer|runtime error' "$T/err"; then
		fail "uroce $*: sanitizer report"
		cat "$T/err" >&2
	fi
}

expect() { # STATUS ARGS...
	local want=$1
	shift
	run "$@"
	[ "$st" -eq "$want" ] || fail "uroce $*: status $st, expected $want: $(cat "$T/err")"
}

same() { # EXPECTED-FILE DESCRIPTION: $T/out with blanks squeezed must equal it
	tr -s '\t ' ' ' <"$T/out" >"$T/norm"
	if ! diff -u "$1" "$T/norm" >"$T/diff"; then
		fail "$2:"
		cat "$T/diff" >&2
	fi
}

LL1=fe80:0000:0000:0000:0000:00ff:fe00:0001
LL2=fe80:0000:0000:0000:0000:00ff:fe00:0002
LL3=fe80:0000:0000:0000:0000:00ff:fe00:0003
LLX=fe80:0000:0000:0000:0000:0000:0000:1234
A0=0000:0000:0000:0000:0000:ffff:c612:0001
A0b=0000:0000:0000:0000:0000:ffff:c612:0002
A1=0000:0000:0000:0000:0000:ffff:c612:0101
A2=0000:0000:0000:0000:0000:ffff:c612:0201
G0=fd00:0198:0018:0000:0000:0000:0000:0001
G1=fd00:0198:0018:0001:0000:0000:0000:0001
HDR='DEV PORT INDEX GID IPv4 VER NETDEV
--- ---- ----- --- ------------ --- ------'

# Automatic devices first: lo is down in a new namespace, and so (for now) is w1, which has an
# address: neither has a device.
nsip addr add 198.18.3.1/24 dev w1
nsip link set w1 down
expect 0 link show
nsip link set w1 up
cat >"$T/want" <<EOF2
DEVICE NETDEV STATE ROCE MTU ORIGIN
uroce_v0 v0 $(awk '/^uroce_v0 /{print $3}' "$T/out") v2 4096 auto
uroce_v1 v1 $(awk '/^uroce_v1 /{print $3}' "$T/out") v2 1024 auto
uroce_w0 w0 $(awk '/^uroce_w0 /{print $3}' "$T/out") v2 1024 auto
EOF2
# (in interface-index order; the order of a veth pair's indexes is the kernel's business)
{ head -1 "$T/out"; tail -n +2 "$T/out" | sort; } >"$T/sorted" && mv "$T/sorted" "$T/out"
same "$T/want" "automatic devices in the namespace"

expect 0 link add t_dual netdev v0 roce v1,v2
expect 0 link add t_v2 netdev v1
expect 0 link add t_v1 netdev w0 roce v1
expect 0 gids
cat >"$T/want" <<EOF2
$HDR
t_dual 1 0 $LL1 v1 v0
t_dual 1 1 $LL1 v2 v0
t_dual 1 2 $A0 198.18.0.1 v1 v0
t_dual 1 3 $A0 198.18.0.1 v2 v0
t_dual 1 4 $G0 v1 v0
t_dual 1 5 $G0 v2 v0
t_dual 1 6 $LLX v1 v0
t_dual 1 7 $LLX v2 v0
t_v1 1 0 $LL3 v1 w0
t_v1 1 1 $A2 198.18.2.1 v1 w0
t_v2 1 0 $LL2 v2 v1
t_v2 1 1 $A1 198.18.1.1 v2 v1
t_v2 1 2 $G1 v2 v1
n_gids_found=13
EOF2
same "$T/want" "GID tables: mlx5 layout (v1,v2), v1 only, rxe layout (v2)"

# An address added while nothing runs shows on the next build; removed, it goes.
nsip addr add 198.18.0.2/24 dev v0
expect 0 gids t_dual
cat >"$T/want" <<EOF2
$HDR
t_dual 1 0 $LL1 v1 v0
t_dual 1 1 $LL1 v2 v0
t_dual 1 2 $A0 198.18.0.1 v1 v0
t_dual 1 3 $A0 198.18.0.1 v2 v0
t_dual 1 4 $A0b 198.18.0.2 v1 v0
t_dual 1 5 $A0b 198.18.0.2 v2 v0
t_dual 1 6 $G0 v1 v0
t_dual 1 7 $G0 v2 v0
t_dual 1 8 $LLX v1 v0
t_dual 1 9 $LLX v2 v0
n_gids_found=10
EOF2
same "$T/want" "table after adding 198.18.0.2"
nsip addr del 198.18.0.2/24 dev v0
nsip addr del fe80::1234/64 dev v0
expect 0 gids t_dual
grep -c "^t_dual" "$T/out" | grep -qx 6 || fail "table after deleting two addresses: $(cat "$T/out")"
grep -q "198.18.0.2" "$T/out" && fail "deleted address still listed"

# Changing the MAC changes the default GID (and the node GUID).
nsip link set w0 address 02:00:00:00:00:33
expect 0 gids t_v1
grep -q "fe80:0000:0000:0000:0000:00ff:fe00:0033" "$T/out" || fail "default GID after a MAC change"
expect 0 link show -d t_v1
grep -q "node_guid 0000:00ff:fe00:0033$" "$T/out" || fail "node GUID after a MAC change: $(cat "$T/out")"

# MTUs as rxe (active) and iboe_get_mtu (path) compute them; too small an interface MTU.
expect 0 link show -d t_dual
grep -q "mtu 9000 (interface), active 4096, path 4096 (rdma_cm)" "$T/out" || fail "MTU 9000: $(cat "$T/out")"
expect 0 link show -d t_v2
grep -q "mtu 1500 (interface), active 1024, path 1024 (rdma_cm)" "$T/out" || fail "MTU 1500"
grep -q "node_guid 0000:00ff:fe00:0002$" "$T/out" || fail "node GUID = EUI-64 of the MAC"
expect 0 link del t_v2
expect 0 link add t_small netdev w1
expect 0 link show -d t_small
grep -q "^t_small .* 256 .*configured" "$T/out" || fail "MTU 300: active 256 as rxe: $(cat "$T/out")"
grep -q "too small" "$T/out" || fail "MTU 300: not flagged as too small"
grep -q "path none" "$T/out" || fail "MTU 300: a path MTU"

# State follows the interface; a vanished interface leaves the device DOWN, with no GIDs.
nsip link set v0 down
expect 0 link show t_dual
grep -q "^t_dual  *v0  *DOWN " "$T/out" || fail "state of a down interface: $(cat "$T/out")"
nsip link set v0 up
nsip link del w0
expect 0 link show t_v1
grep -q "^t_v1  *w0  *DOWN .* - " "$T/out" || fail "device of a deleted interface: $(cat "$T/out")"
expect 1 gids t_v1
grep -q "interface 'w0' of device 't_v1' does not exist" "$T/err" || fail "gids of a deleted interface"
expect 0 gids
grep -q "^t_v1" "$T/out" && fail "GIDs listed for a deleted interface"

# An interface without a link-layer address (tun): it exists, with or without an address of its
# own; RoCE v1, whose frames are Ethernet frames, is refused there with a clear error.
if nsip tuntap add mode tun name tn0 2>/dev/null; then
	expect 0 link add t_tun netdev tn0
	expect 0 link show -d t_tun
	grep -q "^t_tun  *tn0 " "$T/out" || fail "device on a tun interface: $(cat "$T/out")"
	expect 0 link del t_tun
	for r in v1 v1,v2; do
		expect 1 link add t_tun netdev tn0 roce $r
		grep -q "RoCE v1 needs an Ethernet (or loopback) interface, and 'tn0' is neither" \
			"$T/err" || fail "roce $r on a tun interface: $(cat "$T/err")"
	done
	expect 0 link show
	grep -q "^t_tun " "$T/out" && fail "a refused device was defined"
else
	echo "no tun device (/dev/net/tun): tun cases not run"
fi

# The API: the change watch and rebuilds inside the namespace.
ip netns exec "$NS" "$HELPER" || fail "test_host_netns"

[ "$failures" -eq 0 ] || {
	echo "$failures failure(s)" >&2
	exit 1
}
echo "netns: ok"
