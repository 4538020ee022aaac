#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# The soak (issue 21, item 5):
#   soak.sh UROCE SOAK SECONDS
# Eight processes of SOAK (tests/soak/soak.c), four in each of two network namespaces joined by
# veth (tests/run/lib.sh), the four of a namespace sharing its device (uroce_a0, uroce_b0). Each
# talks RC, UC and UD to the seven others (RoCE v2/IPv4) for SECONDS under `uroce run --faults`:
# loss, duplication, reordering and corruption, each process its own seed. The processes check
# every byte of every message they receive (RC: every message, in order; UC and UD: what
# arrives), then this script checks:
#   - every process exited 0, with no loader or sanitizer message;
#   - RC messages sent == received, over all processes;
#   - the devices' counters (`uroce stats`, both namespaces) agree with what the processes
#     counted: rdma_sends == the SENDs completed, rdma_recvs == the receive completions; faults
#     of every kind were injected (fault_*), corrupted packets were ICRC drops, RC retransmitted;
#     every UC or UD message lost has a fault or a counted drop behind it;
#   - each process's resident set and open descriptors, sampled once warmed up and at the end of
#     its traffic, are flat: descriptors equal, RSS grown by at most RSS_TOL_KB (not under a
#     sanitizer, whose quarantine holds freed memory for a while).
# Under a sanitizer build (ASan) leaks are reported (detect_leaks=1) and fail the process.
# Prints the figures (totals, counters, per process RSS/fd) and exits 0 pass, 1 fail, 77 skip.
set -u -o pipefail

UROCE=$1 SOAK=$2 SECS=$3
# shellcheck source=../run/lib.sh
. "$(dirname "$0")/../run/lib.sh"

NPROC=8
RSS_TOL_KB=1024
FAULTS=loss=0.02,dup=0.02,reorder=0.02,corrupt=0.01

need_root_netns
if sanitized; then
	# lib.sh turns leak reports off for Debian's programs; every process here is ours.
	export ASAN_OPTIONS="$ASAN_OPTIONS:detect_leaks=1"
fi
netns_setup
OOB=$T/oob
mkdir "$OOB" || exit 1

start=$(date +%s)
pids=()
for i in $(seq 0 $((NPROC - 1))); do
	if [ "$i" -lt $((NPROC / 2)) ]; then
		side=a dev=uroce_a0 addr=$A4
	else
		side=b dev=uroce_b0 addr=$B4
	fi
	in$side timeout $((SECS + 300)) "$UROCE" run --faults "$FAULTS,seed=$((i + 1))" -- \
		"$SOAK" -i "$i" -n $NPROC -d $dev -a "$addr" -D "$OOB" -t "$SECS" \
		>"$T/$i.out" 2>"$T/$i.err" &
	pids+=($!)
done
status=0
for i in $(seq 0 $((NPROC - 1))); do
	wait_exit "${pids[$i]}" $((SECS + 240))
	st=$?
	if [ "$st" -ne 0 ]; then
		echo "--- process $i exited $st"
		cat "$T/$i.out" "$T/$i.err"
		status=1
	fi
	loader_clean "$T/$i.err" "process $i"
done
# SOAK_LOG=DIR keeps each process's output (its stderr has a line every 10 s: RSS, descriptors).
[ -z "${SOAK_LOG:-}" ] || cp "$T"/[0-9]*.out "$T"/[0-9]*.err "$SOAK_LOG"/ || fail "copy to $SOAK_LOG"
echo "--- $NPROC processes, $SECS s of traffic, faults $FAULTS (seeds 1..$NPROC): $(($(date +%s) - start)) s"
[ "$status" -eq 0 ] || fail "a soak process failed (above)"

# The processes' result lines, added up.
cat "$T"/[0-9]*.out | grep '^result ' >"$T/results" || fail "no result lines"
[ "$(wc -l <"$T/results")" -eq $NPROC ] || fail "$(wc -l <"$T/results") result lines, not $NPROC"
sum() { sed -nE "s/.* $1=([0-9]+).*/\1/p" "$T/results" | awk '{ s += $1 } END { printf "%.0f\n", s }'; }
for k in rc_sent rc_recv uc_sent uc_recv uc_lost uc_dup uc_reord ud_sent ud_recv ud_lost ud_dup \
	ud_reord recv_wc bytes_sent bytes_recv; do
	eval "$k=$(sum $k)"
done
# shellcheck disable=SC2154 # set by the eval above
{
	echo "RC: $rc_sent messages sent, $rc_recv received in order"
	echo "UC: $uc_sent sent, $uc_recv arrived ($uc_lost lost, $uc_dup duplicates, $uc_reord reordered)"
	echo "UD: $ud_sent sent, $ud_recv arrived ($ud_lost lost, $ud_dup duplicates, $ud_reord reordered)"
	echo "bytes: $bytes_sent sent, $bytes_recv received and verified"
	[ "$rc_sent" -gt 0 ] && [ "$uc_recv" -gt 0 ] && [ "$ud_recv" -gt 0 ] ||
		fail "some transport carried nothing"
	[ "$rc_sent" -eq "$rc_recv" ] || fail "RC: $rc_sent messages sent, $rc_recv received"
}

# The devices' counters, as the processes flushed them when they closed the devices.
ina "$UROCE" stats uroce_a0 >"$T/stats.a" || fail "uroce stats (a)"
inb "$UROCE" stats uroce_b0 >"$T/stats.b" || fail "uroce stats (b)"
cnt() { awk -v k="$1" '$1 == k { s += $2 } END { printf "%.0f\n", s }' "$T/stats.a" "$T/stats.b"; }
echo "--- counters (uroce_a0 + uroce_b0)"
for k in rdma_sends rdma_recvs retransmitted_pkts duplicate_request out_of_seq_request sent_naks \
	rcvd_seq_err drop_uc_seq drop_no_recv drop_cq_overflow io_rx_drop_icrc fault_lost fault_dup \
	fault_reordered fault_corrupted; do
	printf '  %-20s %s\n' "$k" "$(cnt $k)"
done
# shellcheck disable=SC2154
{
	sends=$((rc_sent + uc_sent + ud_sent))
	[ "$(cnt rdma_sends)" -eq "$sends" ] ||
		fail "rdma_sends $(cnt rdma_sends), the processes completed $sends SENDs"
	[ "$(cnt rdma_recvs)" -eq "$recv_wc" ] ||
		fail "rdma_recvs $(cnt rdma_recvs), the processes had $recv_wc receive completions"
	for k in retransmitted_pkts fault_lost fault_dup fault_reordered fault_corrupted \
		io_rx_drop_icrc; do
		[ "$(cnt $k)" -gt 0 ] || fail "$k is 0: were the faults injected?"
	done
	# A corrupted packet that is also duplicated goes out twice with its bad ICRC.
	[ "$(cnt io_rx_drop_icrc)" -le $((2 * $(cnt fault_corrupted))) ] ||
		fail "ICRC drops ($(cnt io_rx_drop_icrc)) beyond the corrupted packets sent"
	causes=$(($(cnt fault_lost) + $(cnt fault_dup) + $(cnt fault_reordered) +
		$(cnt fault_corrupted) + $(cnt drop_no_recv) + $(cnt drop_cq_overflow)))
	[ $((uc_lost + ud_lost)) -le "$causes" ] ||
		fail "$((uc_lost + ud_lost)) UC/UD messages lost, only $causes faults and counted drops"
}

# Resident set and descriptors, once warmed up and at the end of the traffic.
echo "--- per process: RSS kB (warmed up -> end), descriptors"
flat=0
while read -r line; do
	id=$(echo "$line" | sed -nE 's/.* id=([0-9]+).*/\1/p')
	r0=$(echo "$line" | sed -nE 's/.* rss_kb_start=([0-9-]+).*/\1/p')
	r1=$(echo "$line" | sed -nE 's/.* rss_kb_end=([0-9-]+).*/\1/p')
	f0=$(echo "$line" | sed -nE 's/.* fd_start=([0-9-]+).*/\1/p')
	f1=$(echo "$line" | sed -nE 's/.* fd_end=([0-9-]+).*/\1/p')
	echo "  $id: rss $r0 -> $r1 ($((r1 - r0)) kB), fds $f0 -> $f1"
	[ "$r0" -gt 0 ] && [ "$f0" -gt 0 ] || fail "process $id: no RSS or descriptor sample"
	[ "$f0" -eq "$f1" ] || flat=1
	sanitized || [ $((r1 - r0)) -le $RSS_TOL_KB ] || flat=1
done <"$T/results"
[ "$flat" -eq 0 ] || fail "a process's descriptors changed or its RSS grew by more than $RSS_TOL_KB kB"
echo "PASS: soak, $NPROC processes, $SECS s"
exit 0
