#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Connection storms between two network namespaces (issue 21 item 4), everything under
# `uroce run`, with the kernel's CM timing (no shortened timeouts: a lost or stalled exchange
# shows as a slow cycle or a failure, not as a quick retry):
#   storm.sh UROCE STORM serial|fanin|rping
# serial: one uroce_storm client process runs CYCLES connect/transfer/disconnect cycles (4
#   checked messages each way, every other cycle disconnected by the server) against one
#   long-lived uroce_storm server.
# fanin:  10 client processes hold 10 connections each, all 100 open at once (the server
#   counts them and releases them together), ROUNDS times.
# rping:  RPING_CLIENTS unmodified rping clients, one after the other, each its own process
#   (`rping -c -V -C 4 -S 100`), against one persistent unmodified rping server
#   (`rping -s -P -S 100`). Each client is a new process under `uroce run` (mount namespace,
#   device open, CM thread), about 10 a second: 200 here (STORM_RPING_CLIENTS), 1,000 in
#   scripts/storm.
# Every cycle must succeed: no REJECTED (stale connection or any other reason), UNREACHABLE
# or error event, every message intact. The server's file descriptors (/proc/PID/fd) and
# resident set (VmRSS) are measured after a warm-up and at the end: the descriptors must be
# the same, the RSS may grow by RSS_SLACK_KB at most, the threads the same. The server's IB CM
# must hold no connection once time-wait is over (namespace b's `uroce stats`:
# cm_conns_created - cm_conns_freed; the server is the only process on its device), and no CM
# on either side may have sent a stale-connection REJ (cm_stale_rejects). The clients' side is
# reported only: a client process that ends holds its last second's connections in time-wait.
# Figures for the README: cycles/s, fds and RSS before/after.
# Exits 0 pass, 1 fail, 77 skip (not root, no netns/veth, rdmacm-utils not installed).
set -u -o pipefail

UROCE=$1 STORM=$2 MODE=$3
# shellcheck source=../run/lib.sh
. "$(dirname "$0")/../run/lib.sh"

need_root_netns
command -v rping >/dev/null || skip "rdmacm-utils is not installed"
netns_setup

PORT=7180
CYCLES=${STORM_CYCLES:-1000}
WARMUP=20
ROUNDS=${STORM_ROUNDS:-3}
RPING_CLIENTS=${STORM_RPING_CLIENTS:-200}
RSS_SLACK_KB=${STORM_RSS_SLACK_KB:-1024}
DEV_A=uroce_a0 DEV_B=uroce_b0

# The pid of the process named COMM (its comm, 15 characters) in namespace NS.
pid_in() { # NS COMM
	local p
	for p in $(ip netns pids "$1"); do
		[ "$(cat /proc/"$p"/comm 2>/dev/null)" = "$2" ] && {
			echo "$p"
			return 0
		}
	done
	return 1
}
fds() { find /proc/"$1"/fd -mindepth 1 -maxdepth 1 2>/dev/null | wc -l; }
rss() { awk '/^VmRSS:/ { print $2 }' /proc/"$1"/status; }
threads() { awk '/^Threads:/ { print $2 }' /proc/"$1"/status; }

# A device's IB CM connections alive: created - freed, from its counters (uroce stats).
cm_alive() { # a|b DEV
	in$1 "$UROCE" stats "$2" 2>/dev/null |
		awk '$1 == "cm_conns_created" { c = $2 } $1 == "cm_conns_freed" { f = $2 }
			END { print c - f }'
}
cm_counter() { # a|b DEV NAME
	in$1 "$UROCE" stats "$2" 2>/dev/null | awk -v n="$3" '$1 == n { print $2 }'
}

case $MODE in
serial | fanin)
	hold=0
	[ "$MODE" = fanin ] && hold=100
	inb timeout 300 "$UROCE" run -- "$STORM" server $B4 $PORT $hold >"$T/srv.out" 2>"$T/srv.err" &
	spid=$!
	SCOMM=uroce_storm
	;;
rping)
	inb timeout 300 "$UROCE" run -- rping -s -P -S 100 -a $B4 -p $PORT >"$T/srv.out" 2>"$T/srv.err" &
	spid=$!
	SCOMM=rping
	;;
*) fail "unknown mode $MODE" ;;
esac
wait_cm_listen "$RUNB" 0x0106 $PORT $spid || {
	cat "$T/srv.out" "$T/srv.err" >&2
	fail "the server did not listen"
}
srv=$(pid_in "$NSB" $SCOMM) || fail "no $SCOMM process in $NSB"

# A failed cycle: the server's counts and messages, then fail.
storm_fail() { # MESSAGE
	kill -USR1 "$srv" 2>/dev/null
	timeout 0.5 tail -f /dev/null
	echo "--- server" >&2
	tail -n 5 "$T/srv.out" >&2
	tail -n 20 "$T/srv.err" >&2
	echo "--- counters (non-zero) of the clients' and the server's devices" >&2
	ina "$UROCE" stats $DEV_A 2>&1 | awk 'NF == 2 && $2 != 0' | paste -sd' ' >&2
	inb "$UROCE" stats $DEV_B 2>&1 | awk 'NF == 2 && $2 != 0' | paste -sd' ' >&2
	fail "$1"
}

# The client side of each mode: COUNT cycles from FIRST on. Prints nothing; fails the test on
# a failed cycle.
run_clients() { # FIRST COUNT
	local first=$1 n=$2 i st
	case $MODE in
	serial)
		ina timeout 240 "$UROCE" run -- "$STORM" client $B4 $PORT "$n" "$first" \
			>>"$T/cli.out" 2>>"$T/cli.err"
		st=$?
		[ $st -eq 0 ] || {
			tail -n 20 "$T/cli.err" >&2
			tail -n 1 "$T/cli.out" >&2
			storm_fail "uroce_storm client exited $st"
		}
		;;
	fanin)
		local pids=()
		for i in $(seq 0 9); do
			ina timeout 240 "$UROCE" run -- "$STORM" client $B4 $PORT "$n" $((first * 10 + i)) 10 \
				>"$T/cli.$first.$i.out" 2>"$T/cli.$first.$i.err" &
			pids+=($!)
		done
		local failed=
		for i in $(seq 0 9); do
			wait "${pids[$i]}"
			st=$?
			cat "$T/cli.$first.$i.out" >>"$T/cli.out"
			cat "$T/cli.$first.$i.err" >>"$T/cli.err"
			[ $st -eq 0 ] || {
				tail -n 20 "$T/cli.$first.$i.err" >&2
				cat "$T/cli.$first.$i.out" >&2
				failed="$failed $i"
			}
		done
		[ -z "$failed" ] || storm_fail "uroce_storm clients$failed failed"
		;;
	rping)
		for i in $(seq "$first" $((first + n - 1))); do
			ina timeout 60 "$UROCE" run --no-sysfs -- rping -c -V -a $B4 -p $PORT -C 4 -S 100 \
				>"$T/rping.out" 2>"$T/rping.err"
			st=$?
			cat "$T/rping.out" "$T/rping.err" >>"$T/cli.out"
			if [ $st -eq 255 ] && rping_cm_thread_race "$T/rping.err"; then
				rping_races=$((rping_races + 1))
				continue
			fi
			[ $st -eq 0 ] && ! grep -qiE 'error|fail|reject|unreachable' "$T/rping.out" "$T/rping.err" || {
				cat "$T/rping.out" "$T/rping.err" >&2
				storm_fail "rping client $i exited $st"
			}
		done
		;;
	esac
}

# rping's own race (rdma-core's rping before its fix of 2025, "rping: Fix spurious failure
# return codes", Debian 12 has 44.0): its CM thread loops on rdma_get_cm_event while the main
# thread, done, destroys the channel; a thread that re-enters the call after that gets EBADF
# and exits 255, with the kernel's librdmacm as with ours. Recognized only when the client was
# done: its DISCONNECTED event handled, nothing else on stderr (a failed ping, a rejected or
# unreachable connection, data that does not compare all print their own lines).
rping_races=0
rping_cm_thread_race() {
	[ "$(grep -vxF -e 'client DISCONNECT EVENT...' -e 'rdma_get_cm_event: Bad file descriptor' "$1")" = "" ] &&
		grep -qxF 'client DISCONNECT EVENT...' "$1" &&
		grep -qxF 'rdma_get_cm_event: Bad file descriptor' "$1"
}

# Warm-up: the server's first connections open its device, CM thread and buffers for good.
case $MODE in
serial) run_clients 0 $WARMUP ;;
fanin) run_clients 0 1 ;;
rping) run_clients 0 10 ;;
esac
fd0=$(fds "$srv") rss0=$(rss "$srv") thr0=$(threads "$srv")
echo "after warm-up: server fds $fd0, RSS $rss0 kB, threads $thr0"

t0=$(date +%s%N)
case $MODE in
serial) run_clients 1 "$CYCLES" ;;
fanin) run_clients 1 "$ROUNDS" ;;
rping) run_clients 10 "$RPING_CLIENTS" ;;
esac
t1=$(date +%s%N)
ms=$(((t1 - t0) / 1000000))

# Time-wait (1 s by default) ends, then the server's IB CM connections must all be gone.
alive_b=
for _ in $(seq 100); do
	alive_b=$(cm_alive b $DEV_B)
	[ "$alive_b" = 0 ] && break
	timeout 0.05 tail -f /dev/null
done
alive_a=$(cm_alive a $DEV_A)
created_b=$(cm_counter b $DEV_B cm_conns_created)
fd1=$(fds "$srv") rss1=$(rss "$srv") thr1=$(threads "$srv")

case $MODE in
serial) total=$CYCLES conns=$CYCLES ;;
fanin) total=$ROUNDS conns=$((ROUNDS * 100)) ;;
rping) total=$RPING_CLIENTS conns=$RPING_CLIENTS ;;
esac
if [ "$MODE" != rping ]; then
	kill -USR1 "$srv"
	for _ in $(seq 100); do
		[ "$(grep -c '^server: requests' "$T/srv.out")" -ge 1 ] && break
		timeout 0.05 tail -f /dev/null
	done
fi
echo "--- server"
cat "$T/srv.out"
tail -n 20 "$T/srv.err"
echo "--- clients"
grep -E '^client' "$T/cli.out" | tail -n 12
stale_a=$(cm_counter a $DEV_A cm_stale_rejects) stale_b=$(cm_counter b $DEV_B cm_stale_rejects)
echo "storm $MODE: $conns connections in $total cycles, $ms ms, $(awk -v c="$conns" -v ms="$ms" 'BEGIN { printf "%.0f", c * 1000 / ms }') connections/s"
echo "server fds $fd0 -> $fd1, RSS $rss0 -> $rss1 kB, threads $thr0 -> $thr1"
[ "$MODE" = rping ] && echo "rping clients that ended in rping's own CM thread race (exit 255 after a clean disconnect): $rping_races"
echo "IB CM connections: server side $created_b created, $alive_b alive; left in time-wait by the ended clients $alive_a; stale-connection REJs sent: $stale_a, $stale_b"

loader_clean "$T/srv.err" "server"
loader_clean "$T/cli.err" "clients" 2>/dev/null || true
[ "$fd1" -eq "$fd0" ] || fail "the server's descriptors went from $fd0 to $fd1"
# A sanitizer build keeps freed memory in quarantine (ASan: up to 256 MiB): RSS says nothing.
if sanitized; then
	echo "sanitizer build: the RSS is not checked"
else
	[ $((rss1 - rss0)) -le "$RSS_SLACK_KB" ] ||
		fail "the server's RSS grew by $((rss1 - rss0)) kB (more than $RSS_SLACK_KB)"
fi
[ "$thr1" -eq "$thr0" ] || fail "the server's threads went from $thr0 to $thr1"
[ -n "$created_b" ] && [ "$created_b" -ge "$conns" ] ||
	fail "the server's device counted '$created_b' CM connections (uroce stats cm_conns_created), expected $conns or more"
[ "$alive_b" = 0 ] || fail "the server's CM still has $alive_b connections after time-wait"
[ "$stale_a" = 0 ] && [ "$stale_b" = 0 ] || fail "stale-connection REJs were sent: '$stale_a', '$stale_b'"
if [ "$MODE" != rping ]; then
	line=$(grep '^server: requests' "$T/srv.out" | tail -n 1)
	read -r req est disc msgs bad errs live peak rel <<<"$(echo "$line" |
		awk '{ print $3, $5, $7, $9, $11, $13, $15, $17, $19 }')"
	warm=$([ "$MODE" = serial ] && echo $WARMUP || echo 100)
	want=$((conns + warm))
	[ "$req" -eq "$want" ] && [ "$est" -eq "$want" ] && [ "$disc" -eq "$want" ] ||
		fail "server: $req requests, $est established, $disc disconnected; expected $want each"
	[ "$msgs" -eq $((want * 4)) ] || fail "server: $msgs messages checked, expected $((want * 4))"
	[ "$bad" -eq 0 ] && [ "$errs" -eq 0 ] || fail "server: $bad bad messages, $errs errors"
	[ "$live" -eq 0 ] || fail "server: $live connections still open"
	if [ "$MODE" = fanin ]; then
		[ "$peak" -ge 100 ] && [ "$rel" -eq $((ROUNDS + 1)) ] ||
			fail "server: peak $peak connections open at once, $rel releases"
	fi
	bad=$(grep -E '^client' "$T/cli.out" | awk '$6 != $4 || $12 != 0 || $17 != 0' | head -n 3)
	[ -z "$bad" ] || fail "clients: $bad"
fi
echo PASS
