#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# A uroce process killed (SIGKILL) against Linux's kernel CM in the VM (vm.sh up first): the
# kernel's side must hear of it from uroce's last will (src/compat/rdmacm/will.h) as it would from
# a kernel process that died:
#   killed.sh UROCE CASE
# CASE is PHASE-ROLE-NET:
#   PHASE  transfer: a SEND ping-pong is running (tests/rdmacm/cm_death.c -m run on both sides);
#          the uroce side dies; the kernel's side gets DISCONNECTED (the will's DREQ)
#          connect: uroce's side dies in the middle of the connect: us, uroce's server holding
#          the kernel client's REQ (-m hold); ks, uroce's client holding the kernel server's REP
#          without an RTU (-m nortu); the kernel's side gets REJECTED (the will's REJ)
#   ROLE   us: uroce serves; ks: the kernel serves
#   NET    v4 or v6: RoCE v2 over IPv4 or IPv6 (Linux's rxe has no RoCE v1)
# The kernel's side must end with that event within LIMIT_S of the kill (without a will it would
# wait out its CM's retries, about 70 s, or, established, never hear of it), and the bridge's
# capture must hold the will's message from uroce's address, twice, with every packet's ICRC
# valid (the harness's checker), tshark's decode clean and every CM field by Linux's rules.
# Exits 0, 1 (fail) or 77 (skip: not root).
set -u -o pipefail

UROCE=$1 CASE=$2
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib.sh
. "$HERE/lib.sh"
# shellcheck source=../lib/tshark.sh
. "$HERE/../lib/tshark.sh"
ix_need
[ -s "$IX_STATE" ] || ix_fail "the VM is not up (tests/interop/vm.sh up; state $IX_STATE missing)"
ix_vm_running || ix_fail "the VM $IX_VM is not running (see $RXEVM_RUN/$IX_VM/serial.log)"

T=$(mktemp -d "${TMPDIR:-/tmp}/uroce-ix.XXXXXX") || exit 1
UPID=
cleanup() {
	"$IX_HARNESS/capture.sh" stop >/dev/null 2>&1
	[ -n "${UROCE_IX_KEEP:-}" ] && [ -f "$T/bridge.pcap" ] && cp "$T/bridge.pcap" "$UROCE_IX_KEEP/killed-$CASE.pcap"
	[ -n "$UPID" ] && kill "$UPID" 2>/dev/null
	wait 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 143' TERM INT HUP PIPE

IFS=- read -r PHASE ROLE NET <<<"$CASE"
case $NET in
v4) K_ADDR=$IX_VM4 U_ADDR=$IX_HOST4 src=ip.src ;;
v6) K_ADDR=$IX_VM6 U_ADDR=$IX_HOST6 src=ipv6.src ;;
*) ix_fail "network '$NET': v4 or v6" ;;
esac
PORT=7175 LIMIT_S=5
case $PHASE-$ROLE in
transfer-us) UM=(-l "$U_ADDR" -m run) KM=(-c "$U_ADDR" -m run) UREADY='^established' KREADY='^rounds 100$' ;;
transfer-ks) UM=(-c "$K_ADDR" -m run) KM=(-l "$K_ADDR" -m run) UREADY='^rounds 100$' KREADY='^established' ;;
connect-us) UM=(-l "$U_ADDR" -m hold) KM=(-c "$U_ADDR" -m run) UREADY='^request' KREADY= ;;
connect-ks) UM=(-c "$K_ADDR" -m nortu) KM=(-l "$K_ADDR" -m run) UREADY='^response' KREADY= ;;
*) ix_fail "case '$CASE': PHASE transfer|connect, ROLE us|ks" ;;
esac
if [ "$PHASE" = transfer ]; then
	KWANT='^event RDMA_CM_EVENT_DISCONNECTED' KST=0 ATTR=0x0015 WHAT=DREQ
else
	KWANT='^event RDMA_CM_EVENT_REJECTED' KST=3 ATTR=0x0012 WHAT=REJ
fi

CMD=$(dirname "$UROCE")/tests/rdmacm/cm_death
[ -x "$CMD" ] || ix_fail "no $CMD (built with the tests when librdmacm-dev is installed)"
! ldd "$CMD" | grep -qE 'lib(a|ub|t)san' ||
	ix_fail "$CMD is a sanitizer build, which the VM cannot run: use the release build's"
ix_vm -t 60 -i "$IX_VM" 'cat >/tmp/cm_death && chmod +x /tmp/cm_death' <"$CMD" ||
	ix_fail "VM: cannot copy $CMD in"
q() { printf '%q ' "$@"; }
kvm_has() { ix_vm -t 20 "$IX_VM" "grep -qE $(q "$1") /tmp/ix.out"; }
RUNDIR=$T/run
mkdir "$RUNDIR" || exit 1

echo "=== killed-$CASE: uroce $(q "${UM[@]}"), kernel $(q "${KM[@]}"), RoCE v2 over IP$NET"
"$IX_HARNESS/capture.sh" start "$T/bridge.pcap" 2>"$T/capture.err" || {
	cat "$T/capture.err" >&2
	ix_fail "capture.sh start failed"
}
ix_vm -t 30 "$IX_VM" "pkill -f '^/tmp/cm_death'; rm -f /tmp/ix.*; true" >/dev/null
start_uroce() {
	ix_host env UROCE_RUNDIR="$RUNDIR" UROCE_CM_TIMEOUT_MS=500 timeout 120 \
		"$UROCE" run -- "$CMD" -p $PORT "${UM[@]}" >"$T/u.out" 2>&1 &
	UPID=$!
}
start_kernel() {
	ix_vm -t 30 -d "$IX_VM" "/tmp/cm_death -p $PORT $(q "${KM[@]}") >/tmp/ix.out 2>&1; echo \$? >/tmp/ix.rc" \
		>/dev/null || ix_fail "VM: cannot start cm_death"
}
# Bounded waits: a line in uroce's output (local), a line in the kernel side's (one VM round
# trip each).
wait_u() {
	for _ in $(seq 400); do
		grep -qE "$1" "$T/u.out" && return 0
		kill -0 "$UPID" 2>/dev/null || break
		timeout 0.05 tail -f /dev/null
	done
	cat "$T/u.out" >&2
	ix_fail "uroce's cm_death: no line '$1'"
}
wait_k() {
	for _ in $(seq 60); do
		kvm_has "$1" && return 0
		timeout 0.2 tail -f /dev/null
	done
	ix_vm -t 20 "$IX_VM" 'cat /tmp/ix.out' >&2
	ix_fail "the kernel's cm_death: no line '$1'"
}
if [ "$ROLE" = us ]; then
	start_uroce
	wait_u '^listening'
	start_kernel
else
	start_kernel
	wait_k '^listening'
	start_uroce
fi
wait_u "$UREADY"
[ -z "$KREADY" ] || wait_k "$KREADY"

# The program itself (uroce run execs it under timeout): in the host namespace, ours alone.
victim=
for p in $(ip netns pids "$IX_HOSTNS"); do
	[ "$(cat /proc/"$p"/comm 2>/dev/null)" = cm_death ] && victim=$p
done
[ -n "$victim" ] || ix_fail "no cm_death process of ours in $IX_HOSTNS"
t0=$(date +%s%N)
kill -KILL "$victim"
wait "$UPID" 2>/dev/null
UPID=
# The kernel side's status: polled in the VM (one round trip), LIMIT_S after the kill at most.
kst=$(ix_vm -t 60 "$IX_VM" "for i in \$(seq $((LIMIT_S * 10))); do [ -s /tmp/ix.rc ] && exec cat /tmp/ix.rc; sleep 0.1; done")
ms=$((($(date +%s%N) - t0) / 1000000))
ix_vm -t 20 "$IX_VM" 'cat /tmp/ix.out' >"$T/k.out" 2>&1
[ -n "$kst" ] || ix_vm -t 20 "$IX_VM" "pkill -f '^/tmp/cm_death'; true"
"$IX_HARNESS/capture.sh" stop 2>/dev/null
echo "--- uroce (killed):"
tail -n 3 "$T/u.out"
echo "--- kernel: status ${kst:-none} within ${ms} ms of the kill (with the VM's round trips)"
tail -n 3 "$T/k.out"
[ -n "$kst" ] || ix_fail "the kernel's side did not end within ${LIMIT_S} s of the kill"
[ "$kst" = "$KST" ] || ix_fail "the kernel's side exited with $kst, want $KST"
grep -qE "$KWANT" "$T/k.out" || ix_fail "the kernel's side has no line '$KWANT'"

echo "--- bridge capture"
/usr/bin/python3 "$IX_HARNESS/icrc_check.py" "$T/bridge.pcap" | tail -n 1
[ "${PIPESTATUS[0]}" -eq 0 ] || ix_fail "rxe-vm icrc_check.py: a packet with a bad ICRC"
topt=("${TSHARK_CHECK[@]}")
# rxe's RoCE v2 over IPv6 carries a UDP checksum of 0 (case.sh): that finding on the kernel's
# frames only.
bad=$(tshark "${topt[@]}" -r "$T/bridge.pcap" -Y '_ws.malformed || _ws.expert.severity >= "Warning"' \
	-T fields -E separator='|' -e frame.number -e "$src" -e _ws.expert.message 2>/dev/null |
	awk -F'|' -v k="$K_ADDR" '!($2 == k && $3 == "Illegal checksum value (0)")')
[ -z "$bad" ] || {
	echo "$bad" | head -10 >&2
	ix_fail "tshark reports malformed frames or expert warnings"
}
n=$(tshark "${topt[@]}" -r "$T/bridge.pcap" -Y "$src == $U_ADDR && infiniband.mad.attributeid == $ATTR" \
	-T fields -e frame.number 2>/dev/null | wc -l)
echo "${WHAT}s from uroce's $U_ADDR: $n (the will sends its message twice)"
[ "$n" -ge 2 ] || ix_fail "expected the will's $WHAT, twice, from $U_ADDR"
/usr/bin/python3 "$HERE/cm_fields.py" --path-mtu 3 "$T/bridge.pcap" ||
	ix_fail "cm_fields.py: a CM field differs from Linux's rules"
echo PASS
