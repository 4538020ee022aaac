#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# The interop suite's kernel peer, as a ctest fixture:
#   vm.sh up     build the harness image if it is missing, boot the VM, put the host namespace on
#                its bridge, give both IPv6 addresses, turn checksum and UDP segmentation offload
#                off on the host side (so each RoCE packet crosses the bridge, and its capture,
#                as itself, with its checksums),
#                and record both sides' GID indices for the cases.
#   vm.sh down   stop the VM and remove the suite's namespaces.
# Exits 0, 1 (the harness's error is printed) or 77 (not root).
set -u -o pipefail
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

UROCE=${UROCE:-$IX_ROOT/build/release/uroce}

# The index of the RoCE v2 GID holding ADDR in a table printed one "INDEX GID" per line (GIDs
# in full, as sysfs and `uroce gids` print them).
gid_of() { # ADDR < "INDEX GID" lines
	local full
	full=$(/usr/bin/python3 -c 'import ipaddress, sys
a = ipaddress.ip_address(sys.argv[1])
if a.version == 4:
    a = ipaddress.ip_address("::ffff:" + str(a))
print(a.exploded)' "$1")
	awk -v g="$full" '$2 == g { print $1; exit }'
}

up() {
	ix_need
	"$IX_HARNESS/build.sh" || ix_fail "rxe-vm build.sh failed"
	if ! ix_vm_running; then
		"$IX_HARNESS/start.sh" "$IX_VM" "$IX_VM4" || ix_fail "rxe-vm start.sh failed"
	fi
	ip netns list | awk '{print $1}' | grep -qx "$IX_HOSTNS" ||
		"$IX_HARNESS/net.sh" hostns "$IX_HOST4" || ix_fail "rxe-vm net.sh hostns failed"
	ix_host ip addr replace "$IX_HOST6/64" dev eth0 nodad || exit 1
	ix_host ethtool -K eth0 tx off tx-udp-segmentation off gso off tso off >/dev/null ||
		ix_fail "cannot turn checksum and segmentation offload off on the host side"
	ix_vm -t 60 "$IX_VM" "ip addr replace $IX_VM6/64 dev eth0 nodad" || ix_fail "VM: ip addr"

	# The kernel adds the IPv6 GID when the address appears; the host namespace's neighbour
	# entries settle on the first packets.
	local kg ug k4 k6 u4 u6
	for _ in $(seq 40); do
		kg=$(ix_vm -t 30 "$IX_VM" 'cd /sys/class/infiniband/rxe0/ports/1/gids && for i in *; do echo "$i $(cat $i)"; done')
		k6=$(gid_of "$IX_VM6" <<<"$kg")
		[ -n "$k6" ] && break
		timeout 0.25 tail -f /dev/null
	done
	k4=$(gid_of "$IX_VM4" <<<"$kg")
	[ -n "$k4" ] && [ -n "$k6" ] || {
		echo "$kg" >&2
		ix_fail "VM: no RoCE v2 GID for $IX_VM4 or $IX_VM6 on rxe0"
	}
	ug=$(ix_host env UROCE_RUNDIR="$RXEVM_RUN/uroce-rundir" "$UROCE" gids uroce_eth0 |
		awk -F'\t' '$NF == "eth0" && $(NF - 1) == "v2" { print $3, $4 }')
	u4=$(gid_of "$IX_HOST4" <<<"$ug")
	u6=$(gid_of "$IX_HOST6" <<<"$ug")
	[ -n "$u4" ] && [ -n "$u6" ] || {
		echo "$ug" >&2
		ix_fail "host: no RoCE v2 GID for $IX_HOST4 or $IX_HOST6 on uroce_eth0"
	}
	printf 'K_GID4=%s\nK_GID6=%s\nU_GID4=%s\nU_GID6=%s\n' "$k4" "$k6" "$u4" "$u6" >"$IX_STATE"
	echo "kernel rxe0 GIDs: IPv4 $k4, IPv6 $k6; uroce_eth0 GIDs: IPv4 $u4, IPv6 $u6"
	ix_vm -t 30 "$IX_VM" 'uname -r; rdma link show'
}

down() {
	[ "$(id -u)" -eq 0 ] || ix_skip "needs root"
	[ -x "$IX_HARNESS/stop.sh" ] || exit 0
	"$IX_HARNESS/capture.sh" stop >/dev/null 2>&1
	# Every VM of the suite's run directory, then the suite's namespaces.
	"$IX_HARNESS/stop.sh" --all || ix_fail "rxe-vm stop.sh failed"
	rm -rf "$RXEVM_RUN/uroce-rundir" "$IX_STATE"
}

case ${1:-} in
up) up ;;
down) down ;;
*)
	echo "usage: vm.sh up|down" >&2
	exit 2
	;;
esac
