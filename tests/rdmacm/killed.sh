#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# A peer killed mid-transfer (SIGKILL): its CM's watchdog sends the DREQs the kernel would have
# sent (src/compat/rdmacm/will.h), so the other side's unmodified rping sees DISCONNECTED and
# exits within a bounded time; nothing hangs.
#   killed.sh UROCE server|client [lo]
# lo: both in one namespace on one device (two processes sharing it; the watchdog's DREQ must
# reach the survivor through the device's steering).
# server: the rping server is killed during a long run; the client must exit non-zero.
# client: the rping client is killed; the server must exit (rping -s without -P serves one
#         client and then exits).
set -u -o pipefail

UROCE=$1 WHO=$2 MODE=${3:-}
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
wait_cm_listen "$RUNB" 0x0106 $PORT $spid || {
	cat "$T/srv.out" "$T/srv.err" >&2
	fail "rping server did not listen"
}
incli() { if [ "$MODE" = lo ]; then inb "$@"; else ina "$@"; fi; }
incli timeout 120 "$UROCE" run -- rping -c -v -a $B4 -p $PORT -C 100000 \
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

# The rping process itself (uroce run execs it), found in its namespace: kill it, not the
# wrappers our test started it with.
victim=$([ "$WHO" = server ] && echo $spid || echo $cpid)
other=$([ "$WHO" = server ] && echo $cpid || echo $spid)
ns=$([ "$WHO" = server ] || [ "$MODE" = lo ] && echo "$NSB" || echo "$NSA")
# In one namespace, the server is the rping with -s.
want=$([ "$WHO" = server ] && echo ' -s ' || echo ' -c ')
rpid=
for p in $(ip netns pids "$ns"); do
	[ "$(cat /proc/"$p"/comm 2>/dev/null)" = rping ] &&
		tr '\0' ' ' </proc/"$p"/cmdline | grep -q -- "$want" && rpid=$p
done
[ -n "$rpid" ] || fail "no rping process in $ns"
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
# The survivor heard of it (the dead process's DREQ, sent by its watchdog): rping prints its
# DISCONNECT EVENT line, or an error.
surv=$([ "$WHO" = server ] && echo cli || echo srv)
grep -qE 'DISCONNECT EVENT|error|fail' "$T/$surv.out" "$T/$surv.err" ||
	fail "the surviving rping reported neither a disconnection nor an error"
echo PASS
