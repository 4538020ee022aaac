#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Unmodified perftest `ib_write_bw -R` as a client whose rdma_cm connection is rejected (issue
# 17): it must end with perftest's error and a non-zero status, never a signal.
#   rejected.sh UROCE CM_ECHO
# perftest 4.5 reacts to a REJECTED by destroying its ids and its event channel and then trying
# again with the same, destroyed, pointers (rdma_cm_client_connection, rdma_cm_destroy_cma): each
# call on them must fail (uroce's librdmacm looks them up among the live ones first) rather than
# read freed memory, which would crash rdma_resolve_addr.
#
# Namespace b: in place of perftest's server, cm_echo (built here): it accepts perftest's first
# rdma_cm connection on PORT (the communication phase of -R), stops listening and echoes the
# handshake's messages back. The client's second connection to PORT, for the test, finds nobody
# listening: b's CM (cm_echo's process) answers REJ INVALID_SERVICE_ID (8), as Linux answered a
# perftest server that had not listened again yet.
#
# Exits 0 pass, 1 fail, 77 skip (not root, no netns/veth, perftest not installed).
set -u -o pipefail

UROCE=$1 CM_ECHO=$2
# shellcheck source=../run/lib.sh
. "$(dirname "$0")/../run/lib.sh"

need_root_netns
command -v ib_write_bw >/dev/null || skip "perftest is not installed"
netns_setup
# Short CM timeouts: a REQ that goes unanswered fails in seconds, not minutes.
export UROCE_CM_TIMEOUT_MS=500 UROCE_CM_RETRIES=4

PORT=7174
inb timeout 120 "$CM_ECHO" "$B4" $PORT >"$T/srv.out" 2>&1 &
spid=$!
wait_cm_listen "$RUNB" $((0x0106)) $PORT $spid || {
	cat "$T/srv.out" >&2
	fail "cm_echo did not listen"
}

ina timeout 60 "$UROCE" run -- ib_write_bw -R -d uroce_a0 -D 1 -p $PORT "$B4" \
	>"$T/cli.out" 2>"$T/cli.err"
cst=$?
wait_exit "$spid" 10 # the client's DREQ ends it
sst=$?
echo "--- cm_echo: status $sst"
cat "$T/srv.out"
echo "--- ib_write_bw -R: status $cst"
cat "$T/cli.out" "$T/cli.err"
echo "client exited with $cst"
[ "$cst" -ne 124 ] || fail "ib_write_bw did not end within 60 s"
[ "$cst" -lt 128 ] || fail "ib_write_bw was killed by signal $((cst - 128))"
loader_clean "$T/cli.err" "ib_write_bw client"
[ "$cst" -ne 0 ] || fail "ib_write_bw exited 0"
grep -q 'RDMA_CM_EVENT_REJECTED; error: 8' "$T/cli.out" "$T/cli.err" ||
	fail "ib_write_bw did not report REJECTED with reason 8 (invalid service ID)"
grep -q 'Failed to create RDMA CM connection' "$T/cli.err" ||
	fail "ib_write_bw did not end with its own error"
grep -q 'messages echoed' "$T/srv.out" || fail "cm_echo did not see the handshake through"
echo PASS
