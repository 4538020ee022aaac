#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Device order and port rates as unmodified rdma-core programs see them: portattr.sh UROCE
# In namespace A of tests/run/lib.sh (lo and the veth a0) with a tap device tp0 added (when the
# kernel has tun), under `uroce run`:
# - order: uroce_lo is the last device, the others by interface index, the same in
#   ibv_devices, /sys/class/infiniband_verbs/uverbsN/ibdev, `uroce link show` and `uroce gids`;
#   defined devices by name with the one on lo last, in the same four.
# - rate: for every device the sysfs rate file, ibv_devinfo -v's active_width/active_speed
#   (ibv_query_port) and `uroce link show -d` say the same: lo and the veth (no link speed of
#   their own) 4X EDR, the tap what `ethtool -s tp0 speed N` set, mapped as the kernel does.
# Needs root (else exit 77).
set -u -o pipefail

UROCE=$(realpath "$1")
# shellcheck source=tests/run/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

need_root_netns
command -v ibv_devices >/dev/null || skip "ibverbs-utils is not installed"
netns_setup

tap=no
if ip -n "$NSA" tuntap add tp0 mode tap 2>/dev/null; then
	ip -n "$NSA" addr add 198.18.11.1/24 dev tp0 || exit 1
	ip -n "$NSA" link set tp0 up || exit 1
	if ina ethtool -s tp0 speed 25000 duplex full 2>"$T/ethtool.err"; then
		tap=yes
	else
		echo "note: ethtool -s on a tap is refused here ($(cat "$T/ethtool.err")): no set speed checked"
	fi
else
	echo "note: no tun/tap device here: only lo and the veth are checked"
fi

# The device names, in order, as each listing gives them; all four must be WANT.
check_order() { # WANT WHAT
	local want=$1 what=$2 got
	# shellcheck disable=SC2016 # expanded by the program's shell
	ina "$UROCE" run -- sh -c 'ibv_devices; echo ---;
		i=0; while [ -e /sys/class/infiniband_verbs/uverbs$i ]; do
			cat /sys/class/infiniband_verbs/uverbs$i/ibdev; i=$((i + 1)); done' \
		>"$T/order.out" 2>"$T/order.err" || fail "$what: uroce run: $(cat "$T/order.err")"
	loader_clean "$T/order.err" "$what: ibv_devices"
	got=$(sed -n '/^---$/q; s/^[[:space:]]\+\([^[:space:]-][^[:space:]]*\)[[:space:]]\+[0-9a-f]\{16\}$/\1/p' \
		"$T/order.out" | xargs)
	[ "$got" = "$want" ] || fail "$what: ibv_devices lists '$got', expected '$want'"
	got=$(sed '1,/^---$/d' "$T/order.out" | xargs)
	[ "$got" = "$want" ] || fail "$what: uverbs0.. are '$got', expected '$want'"
	got=$(ina "$UROCE" link show | awk 'NR > 1 { print $1 }' | xargs)
	[ "$got" = "$want" ] || fail "$what: uroce link show lists '$got', expected '$want'"
	got=$(ina "$UROCE" gids |
		awk -F'\t' 'NR > 2 && $1 !~ /^n_gids_found=/ && !seen[$1]++ { print $1 }' | xargs)
	[ "$got" = "$want" ] || fail "$what: uroce gids lists '$got', expected '$want'"
	echo "ok: $what: $want"
}

if [ "$tap" = yes ]; then
	check_order "uroce_a0 uroce_tp0 uroce_lo" "automatic devices"
else
	check_order "uroce_a0 uroce_lo" "automatic devices"
fi
ina "$UROCE" link add aa_lo netdev lo >/dev/null || fail "link add aa_lo"
ina "$UROCE" link add zz_a0 netdev a0 >/dev/null || fail "link add zz_a0"
check_order "zz_a0 aa_lo" "defined devices"
ina "$UROCE" link del aa_lo >/dev/null || fail "link del aa_lo"
ina "$UROCE" link del zz_a0 >/dev/null || fail "link del zz_a0"

# One `uroce run` prints every device's rate file and ibv_devinfo -v; each device's three
# views are compared with the expected rate, width and speed.
check_rate() { # DEV RATE WIDTH SPEED (RATE: the sysfs text; WIDTH, SPEED: ibv_devinfo's)
	local dev=$1 rate=$2 width=$3 speed=$4 got
	got=$(sed -n "s|^rate $dev ||p" "$T/rate.out")
	[ "$got" = "$rate" ] || fail "$dev: sysfs rate '$got', expected '$rate'"
	got=$(awk -v d="$dev" '/^hca_id:/ { on = ($2 == d) }
		on && /active_width:/ { sub(/.*active_width:[ \t]*/, ""); w = $0 }
		on && /active_speed:/ { sub(/.*active_speed:[ \t]*/, ""); s = $0 }
		END { print w "|" s }' "$T/rate.out")
	[ "$got" = "$width|$speed" ] ||
		fail "$dev: ibv_devinfo active_width|active_speed '$got', expected '$width|$speed'"
	got=$(ina "$UROCE" link show -d "$dev" | sed -n 's/^    rate \([^,]*\),.*/\1/p')
	[ "$got" = "$rate" ] || fail "$dev: uroce link show -d rate '$got', expected '$rate'"
	echo "ok: $dev: $rate, ibv_devinfo $width, $speed"
}
read_rates() {
	# shellcheck disable=SC2016 # expanded by the program's shell
	ina "$UROCE" run -- sh -c 'for d in /sys/class/infiniband/*; do
			echo "rate ${d##*/} $(cat "$d/ports/1/rate")"; done; ibv_devinfo -v' \
		>"$T/rate.out" 2>"$T/rate.err" || fail "rates: uroce run: $(cat "$T/rate.err")"
	loader_clean "$T/rate.err" "ibv_devinfo -v"
}

read_rates
check_rate uroce_lo "100 Gb/sec (4X EDR)" "4X (2)" "25.0 Gbps (32)"
check_rate uroce_a0 "100 Gb/sec (4X EDR)" "4X (2)" "25.0 Gbps (32)"
if [ "$tap" = yes ]; then
	check_rate uroce_tp0 "25 Gb/sec (1X EDR)" "1X (1)" "25.0 Gbps (32)"
	# Each a row of its own in the kernel's table (ib_get_width_and_speed without lanes).
	while IFS='|' read -r mbps rate width speed; do
		ina ethtool -s tp0 speed "$mbps" duplex full || fail "ethtool -s tp0 speed $mbps"
		read_rates
		check_rate uroce_tp0 "$rate" "$width" "$speed"
	done <<-'EOF'
		1000|2.5 Gb/sec (1X SDR)|1X (1)|2.5 Gbps (1)
		40000|40 Gb/sec (4X FDR10)|4X (2)|10.0 Gbps (8)
		50000|50 Gb/sec (2X EDR)|2X (16)|25.0 Gbps (32)
		200000|200 Gb/sec (4X HDR)|4X (2)|50.0 Gbps (64)
	EOF
fi
exit 0
