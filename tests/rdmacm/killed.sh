#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# A peer killed mid-transfer (SIGKILL: nothing of its CM survives to send a DREQ): the other
# side's unmodified rping sees errors and exits within a bounded time, nothing hangs.
#   killed.sh UROCE server|client
# server: the rping server is killed during a long run; the client must exit non-zero.
# client: the rping client is killed; the server must exit (rping -s without -P serves one
#         client and then exits).
set -u -o pipefail

UROCE=$1 WHO=$2
# shellcheck source=../run/lib.sh
. "$(dirname "$0")/../run/lib.sh"

need_root_netns
command -v rping >/dev/null || skip "rdmacm-utils is not installed"
netns_setup

export UROCE_CM_TIMEOUT_MS=200 UROCE_CM_RETRIES=3
PORT=7174
LIMIT_S=15

inb timeout 120 "$UROCE" run -- rping -s -v -a $B4 -p $PORT -C 100000 \
	>"$T/srv.out" 2>"$T/srv.err" &
spid=$!
sid=$(printf '0x%x' $(((0x0106 << 16) | PORT)))
for _ in $(seq 400); do
	grep -rqsw -- "$sid" "$RUNB/share" && break
	kill -0 $spid 2>/dev/null || break
	timeout 0.05 tail -f /dev/null
done
ina timeout 120 "$UROCE" run -- rping -c -v -a $B4 -p $PORT -C 100000 \
	>"$T/cli.out" 2>"$T/cli.err" &
cpid=$!
# Mid-transfer: wait (bounded) until the client has printed 50 pings.
for _ in $(seq 600); do
	[ "$(grep -c '^ping data' "$T/cli.out" 2>/dev/null)" -ge 50 ] && break
	kill -0 $cpid 2>/dev/null || break
	timeout 0.05 tail -f /dev/null
done
[ "$(grep -c '^ping data' "$T/cli.out")" -ge 50 ] || {
	cat "$T/srv.out" "$T/srv.err" "$T/cli.err" >&2
	fail "the transfer did not start"
}

# The rping process itself (timeout's child, exec'd by uroce run): kill it, not the wrappers.
victim=$([ "$WHO" = server ] && echo $spid || echo $cpid)
other=$([ "$WHO" = server ] && echo $cpid || echo $spid)
rpid=$(pgrep -P "$victim" -x rping || true)
[ -n "$rpid" ] || fail "no rping process under $victim"
t0=$(date +%s)
kill -KILL "$rpid"
wait "$other"
st=$?
secs=$(($(date +%s) - t0))
wait "$victim" 2>/dev/null
echo "--- the $WHO was killed; the other side exited with $st after ${secs}s"
tail -n 3 "$T/srv.out" "$T/srv.err" "$T/cli.out" "$T/cli.err"
[ "$st" -ne 124 ] || fail "the surviving rping hung until its timeout"
[ "$secs" -le $LIMIT_S ] || fail "the surviving rping took ${secs}s to notice (limit ${LIMIT_S}s)"
if [ "$WHO" = server ]; then
	[ "$st" -ne 0 ] || fail "the client exited 0 although its server was killed"
fi
echo PASS
