#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# One interop case: an unmodified rdma-core or perftest program over uroce in the host namespace
# against the same program over Linux's kernel Soft-RoCE in the VM (vm.sh up first):
#   case.sh UROCE CASE
# CASE is PROGRAM-ROLE-NET[-loss]:
#   PROGRAM  rping, rping64k (-S 65535), ucmatose, udaddy, rdmaserver (rdma_server/rdma_client),
#            ownqp (uroce's side runs tests/interop/ownqp.c, which owns its QP: ibv_create_qp,
#            conn_param.qp_num, rdma_init_qp_attr; the kernel's side runs ucmatose),
#            mckey (UD multicast through rdma_cm: the receiver is the server, the sender the
#            client; group 239.18.0.1; v4 only: Linux refuses an IPv6 group on RoCE v2),
#            mwinv (tests/interop/mwinv.c on both sides: the server owns a type 2 memory window,
#            the client WRITEs through it, invalidates it with SEND with Invalidate, and its next
#            WRITE must be NAKed),
#            rc, uc, ud, srq (ibv_*_pingpong), ib_{write,read,send,atomic}_bw and
#            ib_{send,write,read}_lat, each of those also with -R (rdma_cm): ib_write_bw_R, ...;
#            ib_send_bw_rnr: ib_send_bw with one receive posted at a time (-r 1), so the
#            kernel's responder sends RNR NAKs (ks); uroce's requester must wait each NAK's timer,
#            ucx_tag_lat, ucx_tag_bw (1 MiB: UCX's rendezvous, an RDMA READ), ucx_put_bw (RDMA
#            WRITE), ucx_stream_bw: Debian's ucx_perftest over rc_verbs (with ud_verbs, UCX's
#            auxiliary transport for connecting), ucx_ud: tag_lat over ud_verbs alone; UCX's
#            GID is each side's GID of the case's family,
#            fi_msg, fi_rdm: Debian's fi_pingpong over libfabric's verbs provider (-e msg) and
#            over verbs;ofi_rxm (-e rdm, what MPIs use), every byte checked (-c); IPv4 only
#            (libfabric 1.17's verbs provider connects to the interface's IPv4 address).
#            UCX and libfabric are copied into the VM from this host's Debian packages (apps_in_vm)
#   ROLE     us: uroce serves, the kernel is the client; ks: the kernel serves, uroce is the client
#   NET      v4 or v6: RoCE v2 over IPv4 or IPv6 (the GID, or the rdma_cm address, of that family)
#   loss     uroce drops 2 % of what it sends (`uroce run --faults`): uroce's requester
#            retransmits to the kernel's responder (ks), or the kernel retransmits and uroce's
#            responder answers the duplicates (us); the capture must show the retransmissions
# The bridge is captured during the run. Both programs must exit 0 with their output; every packet
# must pass the harness's independent ICRC check and decode in tshark with no malformed frame or
# expert warning, and every CM MAD must follow Linux's rules (cm_fields.py). mckey's and mwinv's
# captures are checked further (below: the group's addresses, QPN and Q_Key; the IETH's R_Key and
# the NAK).
# UROCE_IX_KEEP=DIR keeps the capture as DIR/CASE.pcap; IX_ATTEMPTS="1 2" limits the reruns of
# perftest -R's race (below). Exits 0, 1 (fail) or 77 (skip: not root).
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
# shellcheck disable=SC1090
. "$IX_STATE"

T=$(mktemp -d "${TMPDIR:-/tmp}/uroce-ix.XXXXXX") || exit 1
SRV_PID= VM_DELAY=
cleanup() {
	[ -n "$VM_DELAY" ] && ix_vm -t 30 "$IX_VM" 'tc qdisc del dev eth0 ingress; ip link del ifb0' >/dev/null
	"$IX_HARNESS/capture.sh" stop >/dev/null 2>&1
	# UROCE_IX_KEEP=DIR keeps each case's capture there, passed or failed.
	[ -n "${UROCE_IX_KEEP:-}" ] && [ -f "$T/bridge.pcap" ] && cp "$T/bridge.pcap" "$UROCE_IX_KEEP/$CASE.pcap"
	[ -n "$SRV_PID" ] && kill "$SRV_PID" 2>/dev/null
	wait 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 143' TERM INT HUP PIPE

IFS=- read -r PROG ROLE NET LOSS <<<"$CASE"
case $ROLE in us | ks) ;; *) ix_fail "role '$ROLE': us or ks" ;; esac
case $NET in
v4) K_ADDR=$IX_VM4 U_ADDR=$IX_HOST4 KG=$K_GID4 UG=$U_GID4 ;;
v6) K_ADDR=$IX_VM6 U_ADDR=$IX_HOST6 KG=$K_GID6 UG=$U_GID6 ;;
*) ix_fail "network '$NET': v4 or v6" ;;
esac
FAULTS=()
case ${LOSS:-} in
'') ;;
loss) FAULTS=(--faults loss=0.02,seed=7) ;;
*) ix_fail "'$LOSS': only 'loss' may follow the network" ;;
esac
if [ "$ROLE" = us ]; then SADDR=$U_ADDR; else SADDR=$K_ADDR; fi
# perftest's and the pingpongs' own TCP exchange runs over IPv4; the GID picks the RoCE network.
if [ "$ROLE" = us ]; then SADDR4=$IX_HOST4; else SADDR4=$IX_VM4; fi

# Each program as server (S) and client (C); @DEV@, @GID@ and @ADDR@ are each side's own. WAIT:
# what the server's readiness looks like (cm: an rdma_cm listen; tcp: its exchange port; mckey:
# its "receiving" line, printed once it has joined). PORT: both. WANT and SWANT: a line the
# client's and the server's output must hold.
PORT=7174 CM=1 WANT= SWANT= PS=0x0106 APPS= # rdma_cm's port space: TCP (UDP 0x0111 for udaddy)
case $PROG in
rping | rping64k)
	sz=()
	[ "$PROG" = rping64k ] && sz=(-S 65535)
	S=(rping -s -v -a "$SADDR" -p $PORT -C 10 "${sz[@]}")
	C=(rping -c -v -a "$SADDR" -p $PORT -C 10 "${sz[@]}")
	WAIT=cm WANT='^ping data: rdma-ping-9:'
	;;
ucmatose)
	S=(ucmatose -b "$SADDR" -p $PORT -c 2 -C 10)
	C=(ucmatose -s "$SADDR" -p $PORT -c 2 -C 10)
	WAIT=cm WANT='^test complete'
	;;
udaddy)
	S=(udaddy -b "$SADDR" -c 2 -C 10)
	C=(udaddy -s "$SADDR" -c 2 -C 10)
	WAIT=cm WANT='^test complete' PS=0x0111
	;;
mckey)
	# Linux's cma refuses an IPv6 group on a RoCE v2 port: rdma_join_multicast fails with
	# errno 524 (the kernel's ENOTSUPP; mckey: "failure joining: Unknown error 524").
	[ "$NET" = v4 ] || ix_fail "mckey: Linux joins no IPv6 group on RoCE v2 (errno 524, ENOTSUPP)"
	# No rdma_cm connection: the join makes the MGID from the group and needs no SA; the
	# kernel's side needs no multicast route either (rxe sends by the GID's device, and joins
	# the IP group on eth0 itself).
	GROUP=239.18.0.1 CM=0
	S=(stdbuf -oL mckey -m "$GROUP" -b @ADDR@ -C 10)
	C=(mckey -m "$GROUP" -b @ADDR@ -s -C 10)
	WAIT=mckey WANT='^test complete' SWANT='^data transfers complete'
	;;
mwinv)
	# Filled in below: the binary is ours (and copied into the VM).
	S=() C=()
	WAIT=cm WANT='^test complete' SWANT='^test complete'
	;;
ownqp)
	# Filled in below: each side runs a different program.
	S=() C=()
	WAIT=cm WANT='^test complete'
	;;
rdmaserver)
	S=(rdma_server -s "$SADDR" -p $PORT)
	C=(rdma_client -s "$SADDR" -p $PORT)
	WAIT=cm WANT='^rdma_client: end 0'
	;;
rc | uc | srq | ud)
	CM=0 PORT=18515
	sz=()
	[ "$PROG" = ud ] && sz=(-s 1024) # the path MTU (1024 on a 1500-byte link)
	S=("ibv_${PROG}_pingpong" -d @DEV@ -g @GID@ -p $PORT -n 20 "${sz[@]}")
	C=("${S[@]}" "$SADDR4")
	WAIT=tcp WANT=' iters in '
	;;
ib_*_bw | ib_*_lat | ib_*_bw_R | ib_*_lat_R | ib_send_bw_rnr)
	CM=0 PORT=18515
	bin=${PROG%_R}
	bin=${bin%_rnr}
	case $bin in
	ib_write_bw | ib_read_bw | ib_send_bw | ib_atomic_bw | ib_send_lat | ib_write_lat | ib_read_lat) ;;
	*) ix_fail "unknown perftest program '$bin'" ;;
	esac
	iters=(-n 20)
	case $bin in *_bw) iters=(-n 5) ;; esac
	[ -n "${LOSS:-}" ] && iters=(-n 20)
	# One receive posted at a time: the sender outruns it and gets RNR NAKs.
	[ "$PROG" = ib_send_bw_rnr ] && iters=(-n 50 -r 1)
	if [[ $PROG == *_R ]]; then
		# perftest 4.5's rdma_cm path resolves IPv4 addresses only.
		[ "$NET" = v4 ] || ix_fail "$bin -R: perftest's rdma_cm path is IPv4 only"
		CM=1
		S=("$bin" -d @DEV@ -R -F -p $PORT "${iters[@]}")
		WAIT=cm
	else
		S=("$bin" -d @DEV@ -x @GID@ -F -p $PORT "${iters[@]}")
		WAIT=tcp
	fi
	C=("${S[@]}" "$SADDR4")
	WANT='^ *#bytes'
	;;
ucx_*)
	CM=0 PORT=13337 WANT='^Final:'
	tls=rc_verbs,ud_verbs test=${PROG#ucx_} args=(-n 1000)
	case $test in
	tag_lat) ;;
	put_bw | stream_bw) args=(-s 65536 -n 100) ;;
	tag_bw) args=(-s 1048576 -n 20) ;;
	ud) tls=ud_verbs test=tag_lat ;;
	*) ix_fail "unknown UCX test '$PROG'" ;;
	esac
	[ "$test" = put_bw ] && test=ucp_put_bw
	# Linux's rxe, like uroce, does not fill the completion field UCX before 1.19 reads a UD
	# datagram's IP version from (`uroce run` sets the same on its side).
	S=(env UCX_NET_DEVICES=@DEV@:1 UCX_TLS=$tls UCX_IB_GID_INDEX=@GID@
		UCX_UD_VERBS_ETH_DGID_CHECK=n ucx_perftest -p $PORT)
	C=("${S[@]}" "$SADDR4" -t "$test" "${args[@]}")
	WAIT=tcp APPS=1
	;;
fi_msg | fi_rdm)
	[ "$NET" = v4 ] || ix_fail "$PROG: libfabric's verbs provider connects over IPv4 here"
	PORT=$((47000 + RANDOM % 500)) # the control connection (TCP); a rerun's is not in TIME_WAIT
	prov=verbs ep=msg
	[ "$PROG" = fi_rdm ] && prov="verbs;ofi_rxm" ep=rdm
	# ofi_rxm sizes its completion queue for FI_UNIVERSE_SIZE peers (256: 65,536 entries), more
	# than rxe's limit (32,767; rxm's fi_enable fails with EINVAL there); 32 peers suffice.
	S=(env FI_UNIVERSE_SIZE=32 fi_pingpong -p "$prov" -e $ep -d @DEV@ -I 10 -c -B $PORT)
	C=("${S[@]}" -P $PORT "$SADDR4")
	WAIT=tcp WANT='^1m +10 +=10 ' SWANT='^1m +10 +=10 ' APPS=1
	;;
*) ix_fail "unknown program '$PROG'" ;;
esac
side() { # DEV GID ADDR WORDS...: the words with @DEV@, @GID@ and @ADDR@ filled in
	local d=$1 g=$2 a=$3
	shift 3
	local w
	for w in "$@"; do
		w=${w//@DEV@/$d}
		w=${w//@ADDR@/$a}
		printf '%s\n' "${w//@GID@/$g}"
	done
}
mapfile -t KS < <(side rxe0 "$KG" "$K_ADDR" "${S[@]}")
mapfile -t KC < <(side rxe0 "$KG" "$K_ADDR" "${C[@]}")
mapfile -t US < <(side uroce_eth0 "$UG" "$U_ADDR" "${S[@]}")
mapfile -t UC < <(side uroce_eth0 "$UG" "$U_ADDR" "${C[@]}")
if [ "$PROG" = ownqp ]; then
	OWNQP=$(dirname "$UROCE")/tests/rdmacm/uroce_ownqp
	[ -x "$OWNQP" ] || ix_fail "no $OWNQP (built with the tests when librdmacm-dev is installed)"
	US=("$OWNQP" -b "$U_ADDR" -p $PORT) UC=("$OWNQP" -s "$K_ADDR" -p $PORT)
	KS=(ucmatose -b "$K_ADDR" -c 1 -p $PORT) KC=(ucmatose -s "$U_ADDR" -c 1 -p $PORT)
fi
if [ "$PROG" = mwinv ]; then
	MWINV=$(dirname "$UROCE")/tests/rdmacm/uroce_mwinv
	[ -x "$MWINV" ] || ix_fail "no $MWINV (built with the tests when librdmacm-dev is installed)"
	# The VM has no sanitizer runtimes: the program of a sanitizer build cannot run there.
	! ldd "$MWINV" | grep -qE 'lib(a|ub|t)san' ||
		ix_fail "$MWINV is a sanitizer build, which the VM cannot run: use the release build's"
	# The same binary in the VM (both Debian 12, libibverbs.so.1 and librdmacm.so.1).
	ix_vm -t 60 -i "$IX_VM" 'cat >/tmp/mwinv && chmod +x /tmp/mwinv' <"$MWINV" ||
		ix_fail "VM: cannot copy $MWINV in"
	US=("$MWINV" -b "$U_ADDR" -p $PORT) UC=("$MWINV" -s "$K_ADDR" -p $PORT)
	# -K: the owner on rxe reads an invalidate's wc_flags as rxe writes them (mwinv.c).
	KS=(/tmp/mwinv -K -b "$K_ADDR" -p $PORT) KC=(/tmp/mwinv -s "$U_ADDR" -p $PORT)
fi
# UCX and libfabric in the VM, which its image lacks: the files of this host's Debian packages
# (the VM runs the same Debian 12), with the libraries they need that the image does not have,
# unpacked into the VM's root once per boot (its disk is an overlay dropped when it stops).
apps_in_vm() {
	local pkgs=(libucx0 ucx-utils libfabric1 libfabric-bin libgomp1 libatomic1
		libpsm-infinipath1 libpsm2-2) missing=() p f files=()
	ix_vm -t 30 "$IX_VM" 'command -v ucx_perftest && command -v fi_pingpong' >/dev/null && return
	for p in "${pkgs[@]}"; do
		dpkg-query -W -f '${Status}' "$p" 2>/dev/null | grep -q ' installed$' || missing+=("$p")
	done
	[ ${#missing[@]} -eq 0 ] ||
		ix_fail "this host lacks ${missing[*]} (scripts/setup installs them) to copy into the VM"
	while read -r f; do
		[ -f "$f" ] && files+=("$f")
	done < <(dpkg -L "${pkgs[@]}" | grep -v '^/usr/share/')
	# libpsm_infinipath.so.1 is an alternative (/etc/alternatives), not a file of the package.
	local psm=/usr/lib/x86_64-linux-gnu/libpsm_infinipath.so.1
	tar czf "$T/apps.tgz" -P "${files[@]}" || ix_fail "cannot pack UCX and libfabric"
	ix_vm -t 120 -i "$IX_VM" "tar xzf - -P && ln -sf $(readlink -f $psm) $psm && ldconfig" \
		<"$T/apps.tgz" || ix_fail "VM: cannot unpack UCX and libfabric"
	echo "copied into the VM: ${pkgs[*]} (${#files[@]} files)"
}
[ -z "$APPS" ] || apps_in_vm

# uroce's side: a run-time directory of its own; a short CM timer (a lost MAD costs 0.5 s, not
# 4.6; it leaves the REQ's fields as they are).
RUNDIR=$T/run
mkdir "$RUNDIR" || exit 1
uroce_side() { # WORDS...
	ix_host env UROCE_RUNDIR="$RUNDIR" UROCE_CM_TIMEOUT_MS=500 \
		timeout 120 "$UROCE" run "${FAULTS[@]}" -- "$@"
}
# The kernel's side, in the VM: one command string; its exit status in a file next to its log.
q() { printf '%q ' "$@"; }

# The programs of this suite in the VM: nothing of a previous case or attempt may still run there
# when one starts (run_once).
PROGS='^(rping|ucmatose|udaddy|rdma_server|rdma_client|mckey|/tmp/mwinv|ibv_[a-z]+_pingpong|ib_[a-z]+_(bw|lat)|ucx_perftest|fi_pingpong)( |$)'

kernel_listens() {
	if [ "$WAIT" = mckey ]; then
		ix_vm -t 20 "$IX_VM" 'grep -q "^receiving data transfers" /tmp/ix.srv'
	elif [ "$WAIT" = cm ]; then
		ix_vm -t 20 "$IX_VM" 'rdma res show cm_id | grep -q "state LISTEN"'
	else
		ix_vm -t 20 "$IX_VM" "ss -Hltn 'sport = :$PORT' | grep -q ."
	fi
}
uroce_listens() {
	if [ "$WAIT" = mckey ]; then
		grep -q '^receiving data transfers' "$T/srv.out"
	elif [ "$WAIT" = cm ]; then
		# Its claim of the rdma_cm service ID is in a membership file of the device's group.
		grep -rqsw -- "$(printf '0x%x' $(((PS << 16) | PORT)))" "$RUNDIR/share"
	else
		ix_host ss -Hltn "sport = :$PORT" | grep -q .
	fi
}

what="uroce client against the kernel's server"
[ "$ROLE" = us ] && what="the kernel's client against uroce's server"
[ -n "${LOSS:-}" ] && what="$what, 2 % loss on uroce's side"
echo "=== $CASE: $what, RoCE v2 over IP$NET"
echo "kernel: $(q "${KS[@]}") / $(q "${KC[@]}")"
echo "uroce:  $(q "${US[@]}") / $(q "${UC[@]}")"
# One run of the case, the bridge captured: sets sst and cst (server's and client's status).
run_once() {
	"$IX_HARNESS/capture.sh" start "$T/bridge.pcap" 2>"$T/capture.err" || {
		cat "$T/capture.err" >&2
		ix_fail "capture.sh start failed"
	}
	local ok= n=0 wait_rc
	ix_vm -t 30 "$IX_VM" "pkill -f '$PROGS'; rm -f /tmp/ix.*; true" >/dev/null
	if [ "$ROLE" = us ]; then
		uroce_side "${US[@]}" >"$T/srv.out" 2>&1 &
		SRV_PID=$!
		for _ in $(seq 600); do
			uroce_listens && ok=1 && break
			kill -0 "$SRV_PID" 2>/dev/null || break
			timeout 0.05 tail -f /dev/null
		done
		[ -n "$ok" ] || {
			cat "$T/srv.out" >&2
			ix_fail "uroce's ${US[0]} server did not listen"
		}
		ix_vm -t 150 "$IX_VM" "$(q "${KC[@]}")" >"$T/cli.out" 2>&1
		cst=$?
		# A client that failed leaves the server waiting for it: 2 s, else 30.
		[ "$cst" -eq 0 ] && n=600 || n=40
		while kill -0 "$SRV_PID" 2>/dev/null && [ $n -gt 0 ]; do
			timeout 0.05 tail -f /dev/null
			n=$((n - 1))
		done
		kill "$SRV_PID" 2>/dev/null
		wait "$SRV_PID"
		sst=$?
		SRV_PID=
	else
		ix_vm -t 30 -d "$IX_VM" "$(q "${KS[@]}") >/tmp/ix.srv 2>&1; echo \$? >/tmp/ix.rc" \
			>/dev/null || ix_fail "VM: cannot start ${KS[0]}"
		for _ in $(seq 60); do
			kernel_listens && ok=1 && break
			timeout 0.2 tail -f /dev/null
		done
		[ -n "$ok" ] || {
			ix_vm -t 20 "$IX_VM" 'cat /tmp/ix.srv' >&2
			ix_fail "the kernel's ${KS[0]} server did not listen"
		}
		uroce_side "${UC[@]}" >"$T/cli.out" 2>&1
		cst=$?
		# The server's status, polled in the VM (one round trip): 30 s, or 2 s after a failed
		# client; then it is stopped (124).
		[ "$cst" -eq 0 ] && n=120 || n=8
		wait_rc="for i in \$(seq $n); do [ -s /tmp/ix.rc ] && exec cat /tmp/ix.rc; sleep 0.25; done"
		sst=$(ix_vm -t 60 "$IX_VM" "$wait_rc")
		ix_vm -t 20 "$IX_VM" 'cat /tmp/ix.srv' >"$T/srv.out" 2>&1
		[ -n "$sst" ] || {
			ix_vm -t 20 "$IX_VM" "pkill -f '$PROGS'; true"
			sst=124
		}
	fi
	"$IX_HARNESS/capture.sh" stop 2>/dev/null
}

# perftest 4.5's -R has a race of its own (tests/perftest/perftest.sh): its client connects again
# right after the rdma_cm handshake, and wins against a server that has not listened again yet:
# REJECTED (IB CM reason 8, as the kernel's CM answers), and its retry loop then fails on the ids
# it has destroyed. A server in the emulated VM needs milliseconds to listen again after the ACK
# of its last handshake message, and uroce's client sends its REQ together with that ACK: with the
# kernel serving, the CM's MADs into the VM (UDP 4791 to QP 1) take 100 ms more (ifb and netem in
# the VM), so the REQ comes after the server has had the time. The REJ outcome alone runs again.
CM_DELAY='ip link add ifb0 type ifb && ip link set ifb0 up &&
	tc qdisc add dev ifb0 root netem delay 100ms && tc qdisc add dev eth0 handle ffff: ingress &&
	tc filter add dev eth0 parent ffff: protocol ip prio 1 u32 match ip protocol 17 0xff \
		match ip dport 4791 0xffff match u32 0x00000001 0x00ffffff at 32 \
		action mirred egress redirect dev ifb0'
if [[ $PROG == *_R ]] && [ "$ROLE" = ks ]; then
	VM_DELAY=1
	ix_vm -t 30 "$IX_VM" "$CM_DELAY" || ix_fail "VM: cannot delay the CM's MADs (ifb, netem)"
fi
t0=$(date +%s)
for attempt in ${IX_ATTEMPTS:-1 2 3 4 5}; do
	run_once
	[ "$cst" -ne 0 ] && [[ $PROG == *_R ]] &&
		grep -q 'RDMA_CM_EVENT_REJECTED; error: 8' "$T/cli.out" || break
	echo "attempt $attempt: perftest's client connected before its server listened again; again"
done
secs=$(($(date +%s) - t0))

echo "--- server ($([ "$ROLE" = us ] && echo uroce || echo kernel)): status $sst"
tail -n 8 "$T/srv.out"
echo "--- client ($([ "$ROLE" = us ] && echo kernel || echo uroce)): status $cst"
tail -n 8 "$T/cli.out"
echo "--- ${secs} s"
[ "$sst" = 0 ] || ix_fail "the server exited with $sst"
[ "$cst" = 0 ] || ix_fail "the client exited with $cst"
if [ -n "$WANT" ]; then
	grep -qE "$WANT" "$T/cli.out" || ix_fail "the client's output has no line matching '$WANT'"
fi
if [ -n "$SWANT" ]; then
	grep -qE "$SWANT" "$T/srv.out" || ix_fail "the server's output has no line matching '$SWANT'"
fi
! grep -qiE 'error|fail' "$T/srv.out" "$T/cli.out" || ix_fail "a side reported an error"

# The capture: every packet's ICRC (the harness's checker, independent of uroce's code), tshark's
# decode with IP and UDP checksums checked, and the CM fields.
echo "--- bridge capture"
/usr/bin/python3 "$IX_HARNESS/icrc_check.py" "$T/bridge.pcap" | tail -n 1
[ "${PIPESTATUS[0]}" -eq 0 ] || ix_fail "rxe-vm icrc_check.py: a packet with a bad ICRC"
enc=v2v4
[ "$NET" = v6 ] && enc=v2v6
topt=("${TSHARK_CHECK[@]}")
# One pass for the decode: each frame's IP source (of the case's family), BTH opcode, QP, PSN.
[ "$NET" = v4 ] && src=ip.src || src=ipv6.src
tshark "${topt[@]}" -r "$T/bridge.pcap" -T fields -E separator='|' -e frame.number -e "$src" \
	-e udp.dstport -e infiniband.bth.opcode -e infiniband.bth.destqp -e infiniband.bth.psn \
	-e infiniband.reth.dmalen -e infiniband.aeth.syndrome -e frame.time_relative \
	>"$T/frames" 2>"$T/tshark.err" || {
	cat "$T/tshark.err" >&2
	ix_fail "tshark cannot read the capture"
}
total=$(wc -l <"$T/frames")
inenc=$(awk -F'|' '$2 != "" && $3 == 4791 && $4 != ""' "$T/frames" | wc -l)
# Linux's rxe sends RoCE v2 over IPv6 with a UDP checksum of 0 (as UDP tunnels may, RFC 6935),
# which tshark calls illegal; uroce accepts it (UDP_NO_CHECK6_RX) and sends real checksums. That
# one finding on the kernel's frames is expected; any other finding, or any on uroce's, fails.
bad=$(tshark "${topt[@]}" -r "$T/bridge.pcap" -Y '_ws.malformed || _ws.expert.severity >= "Warning"' \
	-T fields -E separator='|' -e frame.number -e "$src" -e _ws.expert.message 2>/dev/null |
	awk -F'|' -v k="$K_ADDR" '!($2 == k && $3 == "Illegal checksum value (0)")')
echo "tshark: $total frames, $inenc InfiniBand over $enc, $(echo -n "$bad" | grep -c .) with errors or warnings"
[ "$total" -ge 5 ] && [ "$inenc" -eq "$total" ] ||
	ix_fail "tshark decodes $inenc of $total frames as InfiniBand over $enc"
[ -z "$bad" ] || {
	echo "$bad" | head -10 >&2
	ix_fail "tshark reports malformed frames or expert warnings"
}
if [ "$CM" = 1 ]; then
	# Both sides at 1024-byte path MTU (a 1500-byte link).
	/usr/bin/python3 "$HERE/cm_fields.py" --path-mtu 3 "$T/bridge.pcap" ||
		ix_fail "cm_fields.py: a CM field differs from Linux's rules"
fi
if [ -n "${LOSS:-}" ]; then
	# Retransmissions from uroce (ks) or from the kernel (us): a request packet whose PSN that
	# source has already covered for that QP (a READ request covers one PSN per response packet
	# of its DMA length, at the path MTU of 1024; every other request packet one).
	[ "$ROLE" = ks ] && from=$U_ADDR || from=$K_ADDR
	again=$(awk -F'|' -v f="$from" '$2 == f && $4 != "" && ($4 < 13 || $4 == 18 || $4 == 19) {
		q = $5; p = $6 + 0; span = 1
		if ($4 == 12) span = $7 + 0 > 0 ? int(($7 + 1023) / 1024) : 1
		if (q in hi && (hi[q] - p + 16777216) % 16777216 > 0 &&
		    (hi[q] - p + 16777216) % 16777216 < 8388608) n++
		e = (p + span) % 16777216
		if (!(q in hi) || ((e - hi[q] + 16777216) % 16777216) < 8388608) hi[q] = e
	} END { print n + 0 }' "$T/frames")
	echo "request packets sent again by $from: $again"
	[ "$again" -gt 0 ] || ix_fail "no retransmission from $from in the capture: the loss did not bite"
fi
if [ "$PROG" = ib_send_bw_rnr ]; then
	# RNR NAKs (AETH syndrome 001xxxxx) from the responder; uroce as requester resends an RNR'd
	# PSN no sooner than the NAK's timer (IBTA 9.7.5.2.8's table, in ms).
	[ "$ROLE" = ks ] && resp=$K_ADDR req=$U_ADDR || resp=$U_ADDR req=$K_ADDR
	out=$(awk -F'|' -v rs="$resp" -v rq="$req" -v check="$([ "$ROLE" = ks ] && echo 1)" '
	BEGIN { split("655.36 0.01 0.02 0.03 0.04 0.06 0.08 0.12 0.16 0.24 0.32 0.48 0.64 0.96 1.28 " \
		"1.92 2.56 3.84 5.12 7.68 10.24 15.36 20.48 30.72 40.96 61.44 81.92 122.88 163.84 " \
		"245.76 327.68 491.52", ms, " ") }
	$2 == rs && $4 == 17 && int($8 / 32) == 1 {
		n++; at[$6 + 0] = $9; wait[$6 + 0] = ms[$8 % 32 + 1] / 1000; next }
	check && $2 == rq && ($6 + 0) in at {
		d = $9 - at[$6 + 0]
		if (d < wait[$6 + 0]) { early++; printf "PSN %d resent %.3f ms after its RNR NAK\n", $6, d * 1000 > "/dev/stderr" }
		delete at[$6 + 0] }
	END { print n + 0, early + 0 }' "$T/frames")
	read -r rnr early <<<"$out"
	echo "RNR NAKs from $resp: $rnr; resent before the timer: $early"
	[ "$rnr" -gt 0 ] || ix_fail "no RNR NAK from $resp: the receiver kept up"
	[ "$early" -eq 0 ] || ix_fail "uroce resent $early RNR NAK'd packets before the NAK's timer"
fi
if [[ $PROG == ucx_* ]]; then
	# UCX took the path the case names: RC (opcodes below 32) for rc_verbs, its rendezvous as RDMA
	# READ requests (12), ucp_put as RDMA WRITEs (6 to 11); ud_verbs alone: UD SENDs only (100,
	# 101), no RC packet.
	rc=$(awk -F'|' '$4 != "" && $4 < 32' "$T/frames" | wc -l)
	read=$(awk -F'|' '$4 == 12' "$T/frames" | wc -l)
	write=$(awk -F'|' '$4 >= 6 && $4 <= 11' "$T/frames" | wc -l)
	ud=$(awk -F'|' '$4 == 100 || $4 == 101' "$T/frames" | wc -l)
	echo "RC packets $rc (READ requests $read, WRITE packets $write), UD SENDs $ud"
	case $PROG in
	ucx_ud) [ "$rc" -eq 0 ] && [ "$ud" -gt 1000 ] || ix_fail "ud_verbs alone: expected UD SENDs only" ;;
	ucx_tag_bw) [ "$read" -ge 20 ] || ix_fail "tag_bw 1 MiB: expected UCX's rendezvous as RDMA READs" ;;
	ucx_put_bw) [ "$write" -ge 100 ] || ix_fail "ucp_put_bw: expected RDMA WRITEs" ;;
	*) [ "$rc" -gt 1000 ] || ix_fail "rc_verbs: expected RC traffic" ;;
	esac
fi
count() { # FILTER: how many frames of the capture it matches
	tshark "${topt[@]}" -r "$T/bridge.pcap" -Y "$1" -T fields -e frame.number 2>/dev/null | wc -l
}
if [ "$PROG" = mckey ]; then
	# The sender's messages, as Linux and uroce must both send them: to the group's IP address
	# and its MAC (01:00:5e and the group's low 23 bits, RFC 1112), UD SEND Only with Immediate
	# (opcode 0x65: mckey sends IBV_WR_SEND_WITH_IMM) to QPN 0xFFFFFF (IBTA 10.5.1: the multicast
	# DQPN) with the rdma_cm UDP port space's Q_Key 0x01234567 (RDMA_UDP_QKEY), every one of the
	# 10. On RoCE v2 over IPv4 the DGID,
	# ::ffff:GROUP, travels as the IPv4 destination (there is no GRH on the wire, and the ICRC
	# covers it); each side's mckey printed the DGID its rdma_cm made of the group.
	[ "$ROLE" = us ] && from=$K_ADDR || from=$U_ADDR
	IFS=. read -r _ g2 g3 g4 <<<"$GROUP"
	mac=$(printf '01:00:5e:%02x:%02x:%02x' $((g2 & 127)) "$g3" "$g4")
	want="ip.src == $from && ip.dst == $GROUP && eth.dst == $mac && infiniband.bth.opcode == 0x65"
	want="$want && infiniband.bth.destqp == 0xffffff && infiniband.deth.q_key == 0x01234567"
	n=$(count "$want")
	all=$(count "ip.dst == $GROUP")
	echo "to $GROUP ($mac) from $from: $all packets, $n UD SEND Only with Immediate to QPN" \
		"0xFFFFFF with Q_Key 0x01234567"
	[ "$n" -eq 10 ] && [ "$all" -eq 10 ] ||
		ix_fail "expected the sender's 10 messages to $GROUP, each to $mac, QPN 0xFFFFFF, Q_Key 0x01234567"
	for f in srv cli; do
		grep -q "^mckey: joined dgid: ::ffff:$GROUP " "$T/$f.out" ||
			ix_fail "the $f's mckey did not join with DGID ::ffff:$GROUP"
	done
fi
if [ "$PROG" = mwinv ]; then
	# The writer's SEND Only with Invalidate (opcode 0x17) carries, in its IETH, the R_Key that
	# the owner bound and reports invalidated; both WRITEs through the window carry it in their
	# RETH; the late one draws the owner's NAK for a remote access error (AETH syndrome 0x62).
	# us: uroce owns the window and the kernel writes; ks: the reverse.
	[ "$ROLE" = us ] && wr=$K_ADDR ow=$U_ADDR || wr=$U_ADDR ow=$K_ADDR
	key=$(sed -nE 's/^mwinv: writer: SEND with Invalidate of R_Key 0x([0-9a-f]{8}) .*/\1/p' \
		"$T/cli.out")
	okey=$(sed -nE 's/^mwinv: owner: receive with .*, invalidated R_Key 0x([0-9a-f]{8})$/\1/p' \
		"$T/srv.out")
	[ -n "$key" ] && [ "$key" = "$okey" ] ||
		ix_fail "the writer invalidated R_Key '$key', the owner reports '$okey'"
	ieth=$(tshark "${topt[@]}" -r "$T/bridge.pcap" -Y "$src == $wr && infiniband.bth.opcode == 0x17" \
		-T fields -E occurrence=f -e infiniband.ieth 2>/dev/null | tr -d ':' | sort -u)
	echo "SEND Only with Invalidate from $wr, IETH R_Key: ${ieth:-none} (the programs': $key)"
	[ "$ieth" = "$key" ] || ix_fail "the IETH R_Key in the capture is '${ieth}', not $key"
	w=$(count "$src == $wr && infiniband.reth.r_key == 0x$key")
	nak=$(count "$src == $ow && infiniband.aeth.syndrome == 0x62")
	echo "WRITEs with RETH R_Key 0x$key: $w; remote access NAKs from $ow: $nak"
	[ "$w" -ge 2 ] || ix_fail "expected the 2 WRITEs through the window in the capture, found $w"
	[ "$nak" -ge 1 ] || ix_fail "no remote access NAK from the owner $ow"
fi
echo PASS
