#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# libfabric's verbs provider over uroce (issue 20): Debian's unmodified fi_pingpong (libfabric-bin)
# between two network namespaces, each side under `uroce run`, with its data checked (-c: every
# message of every size against fi_pingpong's pattern). The verbs provider skips loopback
# interfaces, so the two sides are the veth pair of tests/run/lib.sh.
#   libfabric.sh UROCE CASE
# CASE: msg  `-p verbs -e msg`, the provider's own RC connections;
#       rdm  `-p "verbs;ofi_rxm" -e rdm`, what MPIs use: ofi_rxm makes the connection when the
#            first message goes, through rdma_cm.
# Sizes: fi_pingpong's defaults, 64 B to 1 MiB, 20 round trips each.
# fi_pingpong names no address, so the verbs provider binds 127.0.0.1 to ask librdmacm which
# device that names: none, as on Linux, and then offers each device with its interface's
# address; -d picks the namespace's device.
# Exits 0 pass, 1 fail, 77 skip (not root, no netns/veth, libfabric-bin not installed).
set -u -o pipefail

UROCE=$1 CASE=$2
# shellcheck source=../run/lib.sh
. "$(dirname "$0")/../run/lib.sh"

need_root_netns
command -v fi_pingpong >/dev/null || skip "libfabric-bin (fi_pingpong) is not installed"
case $CASE in
msg) PROV=verbs EP=msg ;;
rdm) PROV="verbs;ofi_rxm" EP=rdm ;;
*) fail "unknown case $CASE" ;;
esac
netns_setup
# A connection that fails gives up in seconds, not after the kernel's minute.
export UROCE_CM_TIMEOUT_MS=500 UROCE_CM_RETRIES=4

PORT=$((47000 + $$ % 500)) # fi_pingpong's control connection (TCP)
ARGS=(-p "$PROV" -e "$EP" -I 20 -c -B "$PORT")
inb timeout 60 "$UROCE" run -- fi_pingpong "${ARGS[@]}" -d uroce_b0 >"$T/srv.out" 2>&1 &
spid=$!
wait_listen b "$PORT" $spid || {
	cat "$T/srv.out"
	fail "fi_pingpong server did not listen on its control port $PORT"
}
ina timeout 60 "$UROCE" run -- fi_pingpong "${ARGS[@]}" -d uroce_a0 -P "$PORT" "$B4" \
	>"$T/cli.out" 2>&1
cst=$?
wait_exit $spid 20
sst=$?
echo "--- server (b, status $sst)"
cat "$T/srv.out"
echo "--- client (a, status $cst)"
cat "$T/cli.out"
loader_clean "$T/srv.out" "fi_pingpong server"
loader_clean "$T/cli.out" "fi_pingpong client"
[ "$cst" -eq 0 ] || fail "fi_pingpong client exited $cst"
[ "$sst" -eq 0 ] || fail "fi_pingpong server exited $sst"
for side in srv cli; do
	! grep -q 'Error at iteration' "$T/$side.out" || fail "$side: data check failed"
	# One row per size, every message acknowledged: "SIZE 20 =20 ...".
	rows=$(grep -cE '^(64|256|1k|4k|64k|1m) +20 +=20 ' "$T/$side.out")
	[ "$rows" -eq 6 ] || fail "$side: $rows of 6 sizes completed 20 round trips"
done
echo PASS
