/* SPDX-License-Identifier: MIT */
/* Steering programs and RoCE v1 socket filters (share_prog.h). */
#include <errno.h>
#include <linux/if_packet.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "host/io/share_members.h"
#include "host/io/share_prog.h"

#define ACCEPT 0xFFFFFFFFu /* socket filter: the whole frame */
#define DROP   0u

/* CM attribute IDs (IBTA 16.7.2.3). */
#define CM_CLASS    0x07
#define CM_REQ	    0x10
#define CM_MRA	    0x11 /* MRA, REJ, REP, RTU, DREQ, DREP: 0x11..0x16 */
#define CM_DREP	    0x16
#define CM_SIDR_REQ 0x17
#define CM_SIDR_REP 0x18

/*
 * An instruction sink that only counts when out is NULL (or full), so that one function gives
 * both a program's length and the program.
 */
struct emitter {
	struct sock_filter *out;
	int cap;
	int k;
};

static void emit(struct emitter *e, uint16_t code, uint8_t jt, uint8_t jf, uint32_t k)
{
	if (e->out && e->k < e->cap)
		e->out[e->k] = (struct sock_filter){.code = code, .jt = jt, .jf = jf, .k = k};
	e->k++;
}

static void stmt(struct emitter *e, uint16_t code, uint32_t k)
{
	emit(e, code, 0, 0, k);
}

/* Where the GSI fields are: the UDP payload (v2, absolute) or the frame + X (v1, indexed). */
struct gsi_at {
	uint32_t shift; /* 0 or UROCE_SHARE_V1_MAD_SHIFT */
	uint16_t mode;	/* BPF_ABS or BPF_IND */
};

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * "The service ID is one of m's claims: return r", falling through otherwise. The claims are
 * sorted so that those with one high word form one group (RDMA CM's all have 0 there):
 *   A = sid high; A != high: skip the group; A = sid low; A == low_1..low_c: return r.
 * c <= UROCE_SHARE_MAX_CLAIMS keeps every jump short.
 */
static void emit_claims(struct emitter *e, const struct gsi_at *at,
			const struct uroce_share_member *m, uint32_t r)
{
	uint64_t ids[UROCE_SHARE_MAX_CLAIMS];
	int n = m->nids;

	memcpy(ids, m->ids, sizeof(ids[0]) * (size_t)n);
	qsort(ids, (size_t)n, sizeof(ids[0]), cmp_u64);
	for (int i = 0; i < n;) {
		uint32_t hi = (uint32_t)(ids[i] >> 32);
		int c = 1;

		while (i + c < n && (uint32_t)(ids[i + c] >> 32) == hi)
			c++;
		stmt(e, BPF_LD | BPF_W | at->mode, at->shift + UROCE_SHARE_OFF_SID);
		emit(e, BPF_JMP | BPF_JEQ | BPF_K, 0, (uint8_t)(c + 2), hi);
		stmt(e, BPF_LD | BPF_W | at->mode, at->shift + UROCE_SHARE_OFF_SID + 4);
		for (int k = 1; k <= c; k++)
			emit(e, BPF_JMP | BPF_JEQ | BPF_K, (uint8_t)(c - k), k == c ? 1 : 0,
			     (uint32_t)ids[i + k - 1]);
		stmt(e, BPF_RET | BPF_K, r);
		i += c;
	}
}

/*
 * The QP1 part, entered with nothing assumed about A. Member i counts when use[i]; a MAD that
 * names it returns ret[i]; everything else returns dflt:
 *   g0  A = class           g5  A == SIDR_REQ ? g6 : g7    g10 A >= MRA ? g11 : g14
 *   g1  A == CM ? g3 : g2   g6  goto req                   g11 A > DREP ? g14 : g12
 *   g2  return dflt         g7  A == SIDR_REP ? g8 : g10   g12 A = remote comm ID
 *   g3  A = attribute       g8  A = request ID             g13 goto comm
 *   g4  A == REQ ? g6 : g5  g9  goto comm                  g14 return dflt
 *   comm: A >>= 20; each CM member: A == slot ? return ret; return dflt
 *   req:  each member's claims (emit_claims); return dflt
 */
static void emit_gsi(struct emitter *e, const struct gsi_at *at, const struct uroce_share_member *m,
		     int n, const bool *use, const uint32_t *ret, uint32_t dflt)
{
	int comm_len = 2;

	for (int i = 0; i < n; i++)
		if (use[i] && m[i].cm)
			comm_len += 2;
	stmt(e, BPF_LD | BPF_B | at->mode, at->shift + UROCE_SHARE_OFF_CLASS);
	emit(e, BPF_JMP | BPF_JEQ | BPF_K, 1, 0, CM_CLASS);
	stmt(e, BPF_RET | BPF_K, dflt);
	stmt(e, BPF_LD | BPF_H | at->mode, at->shift + UROCE_SHARE_OFF_ATTR);
	emit(e, BPF_JMP | BPF_JEQ | BPF_K, 1, 0, CM_REQ);
	emit(e, BPF_JMP | BPF_JEQ | BPF_K, 0, 1, CM_SIDR_REQ);
	stmt(e, BPF_JMP | BPF_JA, (uint32_t)(8 + comm_len)); /* g6 -> req */
	emit(e, BPF_JMP | BPF_JEQ | BPF_K, 0, 2, CM_SIDR_REP);
	stmt(e, BPF_LD | BPF_W | at->mode, at->shift + UROCE_SHARE_OFF_REQ_ID);
	stmt(e, BPF_JMP | BPF_JA, 5); /* g9 -> comm */
	emit(e, BPF_JMP | BPF_JGE | BPF_K, 0, 3, CM_MRA);
	emit(e, BPF_JMP | BPF_JGT | BPF_K, 2, 0, CM_DREP);
	stmt(e, BPF_LD | BPF_W | at->mode, at->shift + UROCE_SHARE_OFF_REMOTE);
	stmt(e, BPF_JMP | BPF_JA, 1); /* g13 -> comm */
	stmt(e, BPF_RET | BPF_K, dflt);
	/* comm: the comm ID's top 12 bits are its issuer's QPN slot. */
	stmt(e, BPF_ALU | BPF_RSH | BPF_K, 20);
	for (int i = 0; i < n; i++) {
		if (!use[i] || !m[i].cm)
			continue;
		emit(e, BPF_JMP | BPF_JEQ | BPF_K, 0, 1, UROCE_SHARE_SLOT_OF(m[i].qpn_lo));
		stmt(e, BPF_RET | BPF_K, ret[i]);
	}
	stmt(e, BPF_RET | BPF_K, dflt);
	/* req */
	for (int i = 0; i < n; i++)
		if (use[i])
			emit_claims(e, at, &m[i], ret[i]);
	stmt(e, BPF_RET | BPF_K, dflt);
}

static bool members_ok(const struct uroce_share_member *m, int n)
{
	if (n < 0 || n > UROCE_SHARE_MAX_MEMBERS)
		return false;
	for (int i = 0; i < n; i++)
		if (m[i].nids < 0 || m[i].nids > UROCE_SHARE_MAX_CLAIMS)
			return false;
	return true;
}

/* The first member that runs a CM, or -1. */
static int first_cm(const struct uroce_share_member *m, int n)
{
	for (int i = 0; i < n; i++)
		if (m[i].cm)
			return i;
	return -1;
}

static void build_prog(struct emitter *e, const struct uroce_share_member *m, int n)
{
	static const struct gsi_at v2 = {.shift = 0, .mode = BPF_ABS};
	bool use[UROCE_SHARE_MAX_MEMBERS];
	uint32_t ret[UROCE_SHARE_MAX_MEMBERS];
	int d = first_cm(m, n);

	/* The UDP payload starts with the BTH; its bytes 5..7 are the destination QP. */
	stmt(e, BPF_LD | BPF_W | BPF_ABS, 4);
	stmt(e, BPF_ALU | BPF_AND | BPF_K, 0xFFFFFF);
	for (int i = 0; i < n; i++) {
		emit(e, BPF_JMP | BPF_JGE | BPF_K, 0, 2, m[i].qpn_lo);
		emit(e, BPF_JMP | BPF_JGT | BPF_K, 1, 0, m[i].qpn_hi);
		stmt(e, BPF_RET | BPF_K, (uint32_t)i);
	}
	/* QPNs of no member go to index 0, QP1 to its CM. */
	emit(e, BPF_JMP | BPF_JEQ | BPF_K, 1, 0, 1);
	stmt(e, BPF_RET | BPF_K, 0);
	for (int i = 0; i < n; i++) {
		use[i] = true;
		ret[i] = (uint32_t)i;
	}
	emit_gsi(e, &v2, m, n, use, ret, d < 0 ? 0 : (uint32_t)d);
}

int uroce_share_prog_len(const struct uroce_share_member *m, int n)
{
	struct emitter e = {0};

	if (!members_ok(m, n))
		return -EINVAL;
	build_prog(&e, m, n);
	return e.k;
}

/* What a member that joins later costs at most: its QPN test, and its slot once it runs a CM. */
#define MEMBER_INSNS 5

bool uroce_share_prog_fits(const struct uroce_share_member *m, int n)
{
	int len = uroce_share_prog_len(m, n);

	return len >= 0 && len + MEMBER_INSNS * (UROCE_SHARE_MAX_MEMBERS - n) <= BPF_MAXINSNS;
}

int uroce_share_prog(struct sock_filter *out, int cap, const struct uroce_share_member *m, int n)
{
	int len = uroce_share_prog_len(m, n);
	struct emitter e = {.out = out, .cap = cap};

	if (len < 0)
		return len;
	if (len > BPF_MAXINSNS)
		return -E2BIG;
	if (cap < len)
		return -ENOSPC;
	build_prog(&e, m, n);
	return e.k;
}

static void build_v1(struct emitter *e, uint32_t lo, uint32_t hi,
		     const struct uroce_share_member *m, int n, int self)
{
	/* Ethernet 14 (+ 802.1Q 4 in X), GRH 40, then BTH bytes 4..7: reserved, destination QP. */
	static const struct gsi_at v1 = {.shift = UROCE_SHARE_V1_MAD_SHIFT, .mode = BPF_IND};
	const uint32_t bth4 = 14 + 40 + 4;
	int d = first_cm(m, n);
	/* QP1: to every process (jump to the accept), to none (the drop), or ours. */
	uint8_t qp1 = d < 0 || self < 0 ? 2 : !m[self].cm ? 3 : 4;

	/*
	 * A frame leaving the interface (ETH_P_ALL shows the socket every one, afpacket.c) is ours
	 * only when sent to this host (local delivery): its destination MAC is its source's. The
	 * others go before the QPN test, which a peer's QPs, numbered from the same slots on
	 * another host or namespace, would pass.
	 */
	stmt(e, BPF_LD | BPF_W | BPF_ABS, (uint32_t)(SKF_AD_OFF + SKF_AD_PKTTYPE));
	emit(e, BPF_JMP | BPF_JEQ | BPF_K, 0, 11, PACKET_OUTGOING); /* else to the QPN part */
	stmt(e, BPF_LD | BPF_W | BPF_ABS, 6);			    /* source MAC, bytes 0..3 */
	stmt(e, BPF_ST, 0);
	stmt(e, BPF_LD | BPF_W | BPF_ABS, 0); /* destination MAC, bytes 0..3 */
	stmt(e, BPF_LDX | BPF_W | BPF_MEM, 0);
	emit(e, BPF_JMP | BPF_JEQ | BPF_X, 0, 5, 0);
	stmt(e, BPF_LD | BPF_H | BPF_ABS, 10); /* source MAC, bytes 4..5 */
	stmt(e, BPF_ST, 0);
	stmt(e, BPF_LD | BPF_H | BPF_ABS, 4); /* destination MAC, bytes 4..5 */
	stmt(e, BPF_LDX | BPF_W | BPF_MEM, 0);
	emit(e, BPF_JMP | BPF_JEQ | BPF_X, 1, 0, 0);
	stmt(e, BPF_RET | BPF_K, DROP);
	/* The QPN part; the accept and drop below are its 11th and 12th instructions. */
	stmt(e, BPF_LDX | BPF_W | BPF_IMM, 0);
	stmt(e, BPF_LD | BPF_H | BPF_ABS, 12);
	emit(e, BPF_JMP | BPF_JEQ | BPF_K, 0, 2, 0x8100);
	stmt(e, BPF_LDX | BPF_W | BPF_IMM, 4);
	stmt(e, BPF_LD | BPF_H | BPF_ABS, 16);
	/* 5: A = the Ethertype after the tag, if any */
	emit(e, BPF_JMP | BPF_JEQ | BPF_K, 0, 6, 0x8915);
	stmt(e, BPF_LD | BPF_W | BPF_IND, bth4);
	stmt(e, BPF_ALU | BPF_AND | BPF_K, 0xFFFFFF);
	emit(e, BPF_JMP | BPF_JEQ | BPF_K, qp1, 0, 1);
	emit(e, BPF_JMP | BPF_JGE | BPF_K, 0, 2, lo);
	emit(e, BPF_JMP | BPF_JGT | BPF_K, 1, 0, hi);
	stmt(e, BPF_RET | BPF_K, ACCEPT); /* the QPN part's 11 */
	stmt(e, BPF_RET | BPF_K, DROP);	  /* 12 */
	if (qp1 != 4)
		return;
	/*
	 * The designated member (d) takes what names no other member; the others take what names
	 * them only.
	 */
	bool use[UROCE_SHARE_MAX_MEMBERS];
	uint32_t ret[UROCE_SHARE_MAX_MEMBERS];

	for (int i = 0; i < n; i++) {
		use[i] = d == self ? i != self : i == self;
		ret[i] = d == self ? DROP : ACCEPT;
	}
	emit_gsi(e, &v1, m, n, use, ret, d == self ? ACCEPT : DROP);
}

int uroce_v1_filter_len(const struct uroce_share_member *m, int n, int self)
{
	struct emitter e = {0};

	if (self >= n || !members_ok(m, n))
		return -EINVAL;
	build_v1(&e, 0, 0, m, n, self);
	return e.k;
}

int uroce_v1_filter_prog(struct sock_filter *out, int cap, uint32_t lo, uint32_t hi,
			 const struct uroce_share_member *m, int n, int self)
{
	struct emitter e = {.out = out, .cap = cap};
	int len = uroce_v1_filter_len(m, n, self);

	if (len < 0 || lo > hi || hi > 0xFFFFFF)
		return len < 0 ? len : -EINVAL;
	if (len > BPF_MAXINSNS)
		return -E2BIG;
	if (cap < len)
		return -ENOSPC;
	build_v1(&e, lo, hi, m, n, self);
	return e.k;
}
