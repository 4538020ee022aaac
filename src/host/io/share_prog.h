/* SPDX-License-Identifier: MIT */
/*
 * Steering programs (classic BPF) for the processes that share a device (share_group.h): the
 * RoCE v2 group's SO_ATTACH_REUSEPORT_CBPF program, and each RoCE v1 process's AF_PACKET socket
 * filter. Pure functions of the membership (share_members.h), unit-tested.
 *
 * Design notes
 * - The program (uroce_share_prog; d = the index of the first member that runs a CM, else 0):
 *     A = BTH bytes 4..7 & 0xFFFFFF (the UDP payload is at offset 0), then for each member
 *     "qpn_lo <= A <= qpn_hi: return its index" (3 instructions each), then A != 1: return 0.
 *     QP1: management class (payload 21) not CM (0x07): return d. Switch on the attribute ID
 *     (payload 36):
 *       REQ 0x10, SIDR_REQ 0x17: the service ID (payload 52 = BTH 12 + DETH 8 + MAD header 24
 *         + 8) against each member's claims, grouped by its high word: "A = word 52;
 *         A == high: A = word 56; A == low_1: return i; ... A == low_c: return i" (4 + c
 *         instructions for c claims that share a high word, as RDMA CM's do); none: return d;
 *       REP, REJ, MRA, RTU, DREQ, DREP (0x11..0x16): A = remote comm ID (payload 48) >> 20;
 *         SIDR_REP 0x18: A = request ID (payload 44) >> 20; then for each member that runs a CM
 *         "A == its slot: return i" (2 instructions each); none: return d;
 *       anything else (LAP, APR, ClassPortInfo, ...): return d.
 *     Unconditional jumps (BPF_JA, 32-bit offsets) link the blocks, so no conditional jump is
 *     longer than 2 + UROCE_SHARE_MAX_CLAIMS whatever the member count. A load beyond the
 *     datagram's end makes the kernel return index 0: datagrams shorter than 8 bytes, and QP1
 *     datagrams too short for the field switched on, go to member 0. The program must fit in
 *     BPF_MAXINSNS (4096): a claim is refused (-ENOSPC) unless the program would still fit
 *     with UROCE_SHARE_MAX_MEMBERS members (uroce_share_prog_fits), so joins never fail on
 *     length. In practice that is about 2700 claims per address.
 * - A process that never claimed (a verbs program without CM) gets no CM MAD once some member
 *   runs a CM; while none does, QP1 goes to index 0.
 */
#ifndef UROCE_HOST_IO_SHARE_PROG_H
#define UROCE_HOST_IO_SHARE_PROG_H

#include <linux/filter.h>
#include <stdbool.h>
#include <stdint.h>

#include "host/io/share_members.h"

/*
 * QP1 MAD fields, as offsets into the RoCE v2 UDP payload (BTH 12, DETH 8, then the MAD; the
 * CM message follows the 24-byte MAD header). RoCE v1 frames have them UROCE_SHARE_V1_MAD_SHIFT
 * bytes further (Ethernet 14 + GRH 40; + 4 with an 802.1Q tag).
 */
#define UROCE_SHARE_OFF_CLASS	 21 /* MAD management class, 0x07: CM */
#define UROCE_SHARE_OFF_ATTR	 36 /* attribute ID, 16 bits */
#define UROCE_SHARE_OFF_REQ_ID	 44 /* SIDR_REP request ID (CM offset 0) */
#define UROCE_SHARE_OFF_REMOTE	 48 /* REP..DREP remote comm ID (CM offset 4) */
#define UROCE_SHARE_OFF_SID	 52 /* REQ, SIDR_REQ service ID, 64 bits (CM offset 8) */
#define UROCE_SHARE_V1_MAD_SHIFT 54

/*
 * The length of the steering program for members m[0..n) (it may exceed BPF_MAXINSNS), or
 * -EINVAL (n out of 0..UROCE_SHARE_MAX_MEMBERS, or a member's nids out of
 * 0..UROCE_SHARE_MAX_CLAIMS).
 */
int uroce_share_prog_len(const struct uroce_share_member *m, int n);

/*
 * Whether the program for m[0..n) leaves room, within BPF_MAXINSNS, for members joining up to
 * UROCE_SHARE_MAX_MEMBERS and running a CM without claims. Claims are refused unless it does.
 */
bool uroce_share_prog_fits(const struct uroce_share_member *m, int n);

/*
 * Build the steering program for members m[0..n) (index i = m[i]) into out[0..cap).
 * Returns the instruction count (uroce_share_prog_len), or -ENOSPC (cap too small), -E2BIG
 * (longer than BPF_MAXINSNS), -EINVAL (as uroce_share_prog_len).
 */
int uroce_share_prog(struct sock_filter *out, int cap, const struct uroce_share_member *m, int n);

/*
 * RoCE v1 (AF_PACKET, afpacket.c): the socket filter that keeps a process's frames only. It accepts
 * a frame with Ethertype 0x8915 (after an optional 802.1Q tag) whose BTH destination QP
 * (Ethernet 14 [+ 4] + GRH 40, BTH bytes 5..7) is in [lo, hi], and drops anything else in the
 * kernel, including frames too short to hold the QPN, and frames leaving the interface
 * (PACKET_OUTGOING) to a destination MAC other than their source MAC (sent to another host).
 * QP1 frames, with m[0..n) the v1 members of the interface and self this process's index in it:
 * - self < 0 (no membership list), or no member runs a CM: accepted (every process gets them);
 * - m[self] does not run a CM: dropped;
 * - m[self] runs a CM: what uroce_share_prog would steer to index self, with d the first member
 *   that runs a CM (the designated one; it also takes non-CM classes and unknown attributes).
 *   Frames too short for the field looked at are dropped.
 * Returns the instruction count (uroce_v1_filter_len; UROCE_V1_FILTER_LEN unless m[self] runs a
 * CM), or -ENOSPC (cap), -E2BIG (beyond BPF_MAXINSNS), -EINVAL (lo > hi, hi beyond 24 bits,
 * self >= n, n or a nids out of range).
 */
#define UROCE_V1_FILTER_LEN 26
int uroce_v1_filter_len(const struct uroce_share_member *m, int n, int self);
int uroce_v1_filter_prog(struct sock_filter *out, int cap, uint32_t lo, uint32_t hi,
			 const struct uroce_share_member *m, int n, int self);

#endif
