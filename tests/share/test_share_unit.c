/* SPDX-License-Identifier: MIT */
/*
 * Device sharing, the parts without a second process (host/io/share_*.h):
 * - the steering program and the RoCE v1 socket filter (uroce_share_prog, uroce_v1_filter_prog),
 *   run by a small classic BPF interpreter written here from the kernel's semantics, on data
 *   packets and crafted CM MADs (claimed and unclaimed service IDs, replies to each member's comm
 *   IDs, other QP1 traffic, truncated and VLAN-tagged frames), and the programs' length limits;
 * - the membership file format with claims, compaction as the kernel does it, process identity;
 * - QPN slots: collisions, release, slots held by dead processes.
 *
 *   test_share_unit     UROCE_RUNDIR is a fresh temporary directory
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/if_packet.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "qp1_mads.h"
#include "host/io/share_members.h"
#include "host/io/share_prog.h"
#include "host/io/share_slots.h"

#define FILE_MAX_TEST (128 << 10)

/* ---- unit: a classic BPF interpreter for what uroce_share_prog() and uroce_v1_filter_prog()
 * emit ---------------------------------------------------------------------------------------- */

/* The socket filter's frame's skb->pkt_type, for its ancillary load (SKF_AD_PKTTYPE). */
static uint32_t pkt_type = PACKET_HOST;

/*
 * Runs prog over pkt as the kernel's reuseport hook (the UDP payload) or socket filter (the
 * frame) does; returns A on ret, 0 on a load beyond the end (the kernel's "drop").
 */
static uint32_t bpf_run(const struct sock_filter *p, int len, const uint8_t *pkt, uint32_t plen)
{
	uint32_t a = 0, x = 0, mem[BPF_MEMWORDS] = {0};

	for (int pc = 0; pc < len; pc++) {
		const struct sock_filter *f = &p[pc];
		uint64_t at = (uint64_t)f->k + (BPF_MODE(f->code) == BPF_IND ? x : 0);

		switch (f->code) {
		case BPF_LD | BPF_W | BPF_ABS:
		case BPF_LD | BPF_W | BPF_IND:
			if (f->code == (BPF_LD | BPF_W | BPF_ABS) &&
			    f->k == (uint32_t)(SKF_AD_OFF + SKF_AD_PKTTYPE)) {
				a = pkt_type;
				break;
			}
			if (at + 4 > plen)
				return 0;
			a = (uint32_t)pkt[at] << 24 | (uint32_t)pkt[at + 1] << 16 |
			    (uint32_t)pkt[at + 2] << 8 | pkt[at + 3];
			break;
		case BPF_LD | BPF_H | BPF_ABS:
		case BPF_LD | BPF_H | BPF_IND:
			if (at + 2 > plen)
				return 0;
			a = (uint32_t)pkt[at] << 8 | pkt[at + 1];
			break;
		case BPF_LD | BPF_B | BPF_ABS:
		case BPF_LD | BPF_B | BPF_IND:
			if (at + 1 > plen)
				return 0;
			a = pkt[at];
			break;
		case BPF_LDX | BPF_W | BPF_IMM:
			x = f->k;
			break;
		case BPF_ST:
			if (f->k >= BPF_MEMWORDS) {
				CHECKF(0, "scratch word %u", f->k);
				return 0xFFFFFFFF;
			}
			mem[f->k] = a;
			break;
		case BPF_LDX | BPF_W | BPF_MEM:
			if (f->k >= BPF_MEMWORDS) {
				CHECKF(0, "scratch word %u", f->k);
				return 0xFFFFFFFF;
			}
			x = mem[f->k];
			break;
		case BPF_JMP | BPF_JEQ | BPF_X:
			pc += a == x ? f->jt : f->jf;
			break;
		case BPF_ALU | BPF_AND | BPF_K:
			a &= f->k;
			break;
		case BPF_ALU | BPF_RSH | BPF_K:
			a >>= f->k;
			break;
		case BPF_JMP | BPF_JA:
			pc += (int)f->k;
			break;
		case BPF_JMP | BPF_JEQ | BPF_K:
			pc += a == f->k ? f->jt : f->jf;
			break;
		case BPF_JMP | BPF_JGE | BPF_K:
			pc += a >= f->k ? f->jt : f->jf;
			break;
		case BPF_JMP | BPF_JGT | BPF_K:
			pc += a > f->k ? f->jt : f->jf;
			break;
		case BPF_RET | BPF_K:
			return f->k;
		default:
			CHECKF(0, "unexpected opcode %#x", f->code);
			return 0xFFFFFFFF;
		}
	}
	CHECKF(0, "program fell off its end");
	return 0xFFFFFFFF;
}

/* What the kernel's checker (bpf_check_classic) asks: a length it takes, every jump inside. */
static bool prog_sane(const struct sock_filter *p, int len)
{
	if (len < 1 || len > BPF_MAXINSNS || BPF_CLASS(p[len - 1].code) != BPF_RET)
		return false;
	for (int i = 0; i < len; i++) {
		if (BPF_CLASS(p[i].code) != BPF_JMP)
			continue;
		if (BPF_OP(p[i].code) == BPF_JA ? (uint64_t)i + 1 + p[i].k >= (uint64_t)len
						: i + 1 + p[i].jt >= len || i + 1 + p[i].jf >= len)
			return false;
	}
	return true;
}

static uint32_t steer(const struct sock_filter *p, int len, uint32_t qpn)
{
	uint8_t bth[12] = {
		0x04,	      0,    0xFF, 0xFF, 0, (uint8_t)(qpn >> 16), (uint8_t)(qpn >> 8),
		(uint8_t)qpn, 0x80, 0,	  0,	1};

	return bpf_run(p, len, bth, sizeof(bth));
}

/* v1_filter's source MAC (its destination is 02:00:00:00:00:01). */
static uint8_t v1_src[6] = {2, 0, 0, 0, 0, 2};

/*
 * A RoCE v1 frame to QP qpn: Ethernet (with an 802.1Q tag when vlan), GRH, BTH (12 bytes), 4
 * bytes of payload or ICRC; len bytes of it (0: all) go to the filter.
 */
static uint32_t v1_filter(const struct sock_filter *p, int plen, uint32_t qpn, bool vlan,
			  uint16_t ethertype, uint32_t len)
{
	uint8_t f[18 + 40 + 12 + 4] = {0};
	uint32_t e = vlan ? 18 : 14;

	memcpy(f, "\x02\0\0\0\0\1", 6);
	memcpy(f + 6, v1_src, 6);
	if (vlan) {
		f[12] = 0x81;
		f[14] = 0x00;
		f[15] = 0x07; /* VID 7 */
	}
	f[e - 2] = (uint8_t)(ethertype >> 8);
	f[e - 1] = (uint8_t)ethertype;
	f[e] = 0x60; /* GRH: IPv6 version */
	f[e + 6] = 0x1B;
	uint8_t *bth = f + e + 40;

	bth[0] = 0x04; /* SEND only */
	bth[2] = bth[3] = 0xFF;
	bth[4] = 0xA5; /* reserved byte next to the QPN: masked off */
	bth[5] = (uint8_t)(qpn >> 16);
	bth[6] = (uint8_t)(qpn >> 8);
	bth[7] = (uint8_t)qpn;
	uint32_t full = e + 40 + 12 + 4;

	return bpf_run(p, plen, f, len ? len : full);
}

static struct uroce_share_member member(int32_t pid, int slot, bool cm, int nids,
					const uint64_t *ids)
{
	struct uroce_share_member m = {.pid = pid,
				       .start = 7,
				       .qpn_lo = UROCE_SHARE_QPN_BASE(slot),
				       .qpn_hi = UROCE_SHARE_QPN_BASE(slot) + 2047,
				       .cm = cm,
				       .nids = nids};

	if (nids)
		memcpy(m.ids, ids, sizeof(ids[0]) * (size_t)nids);
	return m;
}

static struct sock_filter prog[BPF_MAXINSNS], v1p[UROCE_SHARE_MAX_MEMBERS][BPF_MAXINSNS];

/*
 * Check one QP1 payload against the v2 program and every member's v1 filter (with and without
 * a VLAN tag): the program returns want, and exactly the filter of member want accepts (none
 * when want is negative: the program returns 0 and no filter accepts, as for a truncated one).
 */
static void gsi_case(const struct uroce_share_member *m, int n, const uint8_t *pl, uint32_t plen,
		     int want, const char *what)
{
	int len = uroce_share_prog(prog, BPF_MAXINSNS, m, n);
	uint32_t got = bpf_run(prog, len, pl, plen);
	uint8_t f[18 + 40 + GSI_LEN];

	CHECKF(got == (uint32_t)(want < 0 ? 0 : want), "%s: program says %u, want %d", what, got,
	       want);
	for (int v = 0; v < 2; v++) {
		uint32_t flen = v1_frame(f, v == 1, pl, plen);

		for (int i = 0; i < n; i++) {
			int l = uroce_v1_filter_prog(v1p[i], BPF_MAXINSNS, m[i].qpn_lo, m[i].qpn_hi,
						     m, n, i);
			uint32_t r = bpf_run(v1p[i], l, f, flen);

			CHECKF(r == (i == want ? 0xFFFFFFFFu : 0),
			       "%s: v1 member %d (vlan %d): %#x", what, i, v, r);
		}
	}
}

static void test_gsi(void)
{
	static const uint64_t b_ids[] = {SID_TCP(5002), SID_TCP(18515), 0x0000000001060000ull};
	/* Same low word as b's first, another high word; and a lone high word. */
	static const uint64_t c_ids[] = {0x000000010106138Aull, 0x123456789ABCDEF0ull,
					 SID_TCP(7000)};
	struct uroce_share_member m[4] = {
		member(100, 3, false, 0, NULL), /* a verbs program without CM */
		member(101, 9, true, 3, b_ids), /* the first CM: the designated one */
		member(102, 4095, true, 3, c_ids),
		member(103, 0, true, 0, NULL), /* a CM (a client) that claims nothing */
	};
	uint8_t pl[GSI_LEN];
	char what[96];
	int n = 4, len;

	len = uroce_share_prog(prog, BPF_MAXINSNS, m, n);
	CHECK(len == uroce_share_prog_len(m, n) && prog_sane(prog, len));
	CHECK(uroce_share_prog(prog, len - 1, m, n) == -ENOSPC);
	CHECK(uroce_share_prog_fits(m, n));
	/* Data QPNs go to their slot's member, whatever follows the BTH. */
	for (int i = 0; i < n; i++) {
		CHECK(steer(prog, len, m[i].qpn_lo + 7) == (uint32_t)i);
		gsi_payload(pl, 0x07, CM_REQ, 0, 0, b_ids[0]);
		pl[5] = (uint8_t)(m[i].qpn_hi >> 16);
		pl[6] = (uint8_t)(m[i].qpn_hi >> 8);
		pl[7] = (uint8_t)m[i].qpn_hi;
		CHECK(bpf_run(prog, len, pl, GSI_LEN) == (uint32_t)i);
	}
	CHECK(steer(prog, len, 0xFFFFFF) == 0);
	/* REQ and SIDR_REQ: the claimer, else the designated CM. */
	for (int s = 0; s < 2; s++) {
		uint16_t attr = s ? CM_SIDR_REQ : CM_REQ;

		for (int k = 0; k < 3; k++) {
			gsi_payload(pl, 0x07, attr, comm_id(0, 5), 0, b_ids[k]);
			snprintf(what, sizeof(what), "attr %#x sid %#llx", attr,
				 (unsigned long long)b_ids[k]);
			gsi_case(m, n, pl, GSI_LEN, 1, what);
			gsi_payload(pl, 0x07, attr, comm_id(0, 5), 0, c_ids[k]);
			snprintf(what, sizeof(what), "attr %#x sid %#llx", attr,
				 (unsigned long long)c_ids[k]);
			gsi_case(m, n, pl, GSI_LEN, 2, what);
		}
		static const uint64_t nobody[] = {SID_TCP(5003), 0x0000000101061389ull,
						  0x123456789ABCDEF1ull, 0x123456780106138Aull, 0};

		for (int k = 0; k < 5; k++) {
			gsi_payload(pl, 0x07, attr, 0, 0, nobody[k]);
			snprintf(what, sizeof(what), "attr %#x unclaimed sid %#llx", attr,
				 (unsigned long long)nobody[k]);
			gsi_case(m, n, pl, GSI_LEN, 1, what);
		}
	}
	/* Replies: the member whose slot issued the remote comm ID (request ID for SIDR_REP). */
	static const uint16_t replies[] = {CM_MRA,  CM_REJ,  CM_REP,	 CM_RTU,
					   CM_DREQ, CM_DREP, CM_SIDR_REP};

	for (int r = 0; r < 7; r++) {
		bool sidr = replies[r] == CM_SIDR_REP;

		for (int i = 0; i < n; i++) {
			uint32_t id = comm_id(UROCE_SHARE_SLOT_OF(m[i].qpn_lo), 0xABCDE);
			/* The other word names someone else: it must not be looked at. */
			uint32_t other = comm_id(UROCE_SHARE_SLOT_OF(m[(i + 1) % n].qpn_lo), 1);

			gsi_payload(pl, 0x07, replies[r], sidr ? id : other, sidr ? other : id,
				    b_ids[0]);
			snprintf(what, sizeof(what), "attr %#x to member %d's slot", replies[r], i);
			/* A member without a CM issues no comm ID: the designated CM answers. */
			gsi_case(m, n, pl, GSI_LEN, m[i].cm ? i : 1, what);
		}
		gsi_payload(pl, 0x07, replies[r], comm_id(77, 1), comm_id(77, 1), 0);
		snprintf(what, sizeof(what), "attr %#x to nobody's slot", replies[r]);
		gsi_case(m, n, pl, GSI_LEN, 1, what);
	}
	/* Not CM, or a CM attribute not steered (LAP, ClassPortInfo): the designated CM. */
	gsi_payload(pl, 0x04, CM_REQ, 0, 0, c_ids[0]);
	gsi_case(m, n, pl, GSI_LEN, 1, "PerfMgt class");
	gsi_payload(pl, 0x07, CM_LAP, 0, comm_id(4095, 1), 0);
	gsi_case(m, n, pl, GSI_LEN, 1, "LAP");
	gsi_payload(pl, 0x07, 0x0001, 0, comm_id(4095, 1), c_ids[0]);
	gsi_case(m, n, pl, GSI_LEN, 1, "ClassPortInfo");
	gsi_payload(pl, 0x07, 0x0010 | 0x0100, 0, 0, c_ids[0]);
	gsi_case(m, n, pl, GSI_LEN, 1, "attribute 0x110");
	/* Truncated: a failed load is index 0 (v2) and a drop (v1). Whole fields still work. */
	gsi_payload(pl, 0x07, CM_REQ, 0, 0, c_ids[1]);
	gsi_case(m, n, pl, 60, 2, "REQ cut after the service ID");
	gsi_case(m, n, pl, 59, -1, "REQ cut in the service ID");
	gsi_case(m, n, pl, 55, -1, "REQ cut after the high word");
	gsi_case(m, n, pl, 37, -1, "cut in the attribute");
	gsi_case(m, n, pl, 21, -1, "cut before the class");
	gsi_payload(pl, 0x07, CM_REP, 0, comm_id(4095, 3), 0);
	gsi_case(m, n, pl, 52, 2, "REP cut after the remote comm ID");
	gsi_case(m, n, pl, 51, -1, "REP cut in the remote comm ID");
	gsi_payload(pl, 0x07, CM_SIDR_REP, comm_id(4095, 3), 0, 0);
	gsi_case(m, n, pl, 48, 2, "SIDR_REP cut after the request ID");
	gsi_case(m, n, pl, 47, -1, "SIDR_REP cut in the request ID");

	/* Nobody runs a CM: QP1 to index 0 (v2) and to every process (v1). */
	struct uroce_share_member plain[3] = {member(200, 1, false, 0, NULL),
					      member(201, 2, false, 0, NULL),
					      member(202, 3, false, 0, NULL)};

	len = uroce_share_prog(prog, BPF_MAXINSNS, plain, 3);
	CHECK(prog_sane(prog, len));
	gsi_payload(pl, 0x07, CM_REP, 0, comm_id(2, 1), 0);
	CHECK(bpf_run(prog, len, pl, GSI_LEN) == 0);
	gsi_payload(pl, 0x07, CM_REQ, 0, 0, SID_TCP(1));
	CHECK(bpf_run(prog, len, pl, GSI_LEN) == 0);
	for (int i = 0; i < 3; i++) {
		int l = uroce_v1_filter_prog(v1p[0], BPF_MAXINSNS, plain[i].qpn_lo, plain[i].qpn_hi,
					     plain, 3, i);
		uint8_t f[18 + 40 + GSI_LEN];

		CHECK(l == UROCE_V1_FILTER_LEN && l == uroce_v1_filter_len(plain, 3, i));
		CHECK(bpf_run(v1p[0], l, f, v1_frame(f, i == 1, pl, GSI_LEN)) == 0xFFFFFFFF);
		CHECK(v1_filter(v1p[0], l, plain[i].qpn_lo, false, 0x8915, 0) == 0xFFFFFFFF);
		CHECK(v1_filter(v1p[0], l, plain[(i + 1) % 3].qpn_lo, false, 0x8915, 0) == 0);
	}
	/* Some member runs a CM: a member that does not gets no QP1 frame, its QPNs still. */
	plain[2].cm = true;
	len = uroce_v1_filter_prog(v1p[0], BPF_MAXINSNS, plain[0].qpn_lo, plain[0].qpn_hi, plain, 3,
				   0);
	CHECK(len == UROCE_V1_FILTER_LEN && prog_sane(v1p[0], len));
	CHECK(v1_filter(v1p[0], len, 1, false, 0x8915, 0) == 0);
	CHECK(v1_filter(v1p[0], len, plain[0].qpn_lo, true, 0x8915, 0) == 0xFFFFFFFF);
	CHECK(uroce_v1_filter_len(plain, 3, 3) == -EINVAL);
	/* A CM member's filter still drops other QPNs and other Ethertypes. */
	len = uroce_v1_filter_prog(v1p[0], BPF_MAXINSNS, m[2].qpn_lo, m[2].qpn_hi, m, n, 2);
	CHECK(len == uroce_v1_filter_len(m, n, 2) && prog_sane(v1p[0], len));
	CHECK(uroce_v1_filter_prog(v1p[0], len - 1, m[2].qpn_lo, m[2].qpn_hi, m, n, 2) == -ENOSPC);
	CHECK(v1_filter(v1p[0], len, m[2].qpn_lo, false, 0x8915, 0) == 0xFFFFFFFF);
	CHECK(v1_filter(v1p[0], len, m[1].qpn_lo, false, 0x8915, 0) == 0);
	CHECK(v1_filter(v1p[0], len, 1, false, 0x0800, 0) == 0);
	uint8_t f[18 + 40 + GSI_LEN];

	gsi_payload(pl, 0x07, CM_REQ, 0, 0, c_ids[1]);
	uint32_t flen = v1_frame(f, false, pl, GSI_LEN);

	f[12] = 0x86;
	f[13] = 0xDD; /* IPv6, not RoCE v1 */
	CHECK(bpf_run(v1p[0], len, f, flen) == 0);
}

/* The longest programs: every member, every claim the budget allows; the kernel's limits hold. */
static void test_prog_limits(void)
{
	static struct uroce_share_member m[UROCE_SHARE_MAX_MEMBERS];
	const int max = UROCE_SHARE_MAX_MEMBERS;
	uint8_t pl[GSI_LEN];
	int len, total = 0;

	/* Every member with every claim: far too long, refused. */
	for (int i = 0; i < max; i++) {
		m[i] = member(1 + i, i, true, 0, NULL);
		m[i].nids = UROCE_SHARE_MAX_CLAIMS;
		for (int j = 0; j < UROCE_SHARE_MAX_CLAIMS; j++)
			m[i].ids[j] = ((uint64_t)(j % 3) << 32) | (uint32_t)(i * 64 + j);
	}
	CHECK(uroce_share_prog_len(m, max) > BPF_MAXINSNS);
	CHECK(!uroce_share_prog_fits(m, max));
	CHECK(uroce_share_prog(prog, BPF_MAXINSNS, m, max) == -E2BIG);
	CHECK(uroce_share_prog_len(m, max + 1) == -EINVAL);
	m[0].nids = UROCE_SHARE_MAX_CLAIMS + 1;
	CHECK(uroce_share_prog_len(m, 1) == -EINVAL);
	m[0].nids = UROCE_SHARE_MAX_CLAIMS;
	/* Give members claims (three high words each: the costly case) while the program fits
	 * with room for everyone; then the full group must fit the kernel. */
	int n = 0;

	while (n < max) {
		m[n].nids = UROCE_SHARE_MAX_CLAIMS;
		if (!uroce_share_prog_fits(m, n + 1)) {
			m[n].nids = 0;
			break;
		}
		total += UROCE_SHARE_MAX_CLAIMS;
		n++;
	}
	fprintf(stderr, "claims budget: %d members with %d claims (3 high words) fit\n", n,
		UROCE_SHARE_MAX_CLAIMS);
	CHECK(n > 10 && n < max);
	for (int i = n; i < max; i++)
		m[i].nids = 0;
	len = uroce_share_prog(prog, BPF_MAXINSNS, m, max);
	CHECKF(len > 0 && prog_sane(prog, len), "%d", len);
	for (int i = 0; i < n; i += 5) {
		for (int j = 0; j < UROCE_SHARE_MAX_CLAIMS; j += 7) {
			gsi_payload(pl, 0x07, CM_REQ, 0, 0, m[i].ids[j]);
			CHECKF(bpf_run(prog, len, pl, GSI_LEN) == (uint32_t)i, "member %d claim %d",
			       i, j);
		}
	}
	for (int i = 0; i < max; i += 13) {
		gsi_payload(pl, 0x07, CM_RTU, 0, comm_id((uint32_t)i, 9), 0);
		CHECK(bpf_run(prog, len, pl, GSI_LEN) == (uint32_t)i);
		CHECK(steer(prog, len, m[i].qpn_hi) == (uint32_t)i);
	}
	gsi_payload(pl, 0x07, CM_REQ, 0, 0, 0x0000000300000000ull);
	CHECK(bpf_run(prog, len, pl, GSI_LEN) == 0); /* unclaimed: the first CM */
	/* The same claims on the v1 list: every member's filter fits; the designated one (0)
	 * carries everyone else's claims. */
	for (int i = 0; i < max; i += 51) {
		int l = uroce_v1_filter_prog(v1p[0], BPF_MAXINSNS, m[i].qpn_lo, m[i].qpn_hi, m, max,
					     i);

		CHECKF(l > 0 && prog_sane(v1p[0], l), "member %d: %d", i, l);
	}
	/* Claims with one high word (RDMA CM's) are cheaper: 1 instruction each plus 4. */
	for (int i = 0; i < max; i++)
		for (int j = 0; j < UROCE_SHARE_MAX_CLAIMS; j++)
			m[i].ids[j] = SID_TCP((uint32_t)(i * 64 + j));
	int n1 = 0;

	for (int i = 0; i < max; i++)
		m[i].nids = 0;
	while (n1 < max) {
		m[n1].nids = UROCE_SHARE_MAX_CLAIMS;
		if (!uroce_share_prog_fits(m, n1 + 1)) {
			m[n1].nids = 0;
			break;
		}
		n1++;
	}
	fprintf(stderr, "claims budget: %d members with %d RDMA CM claims fit\n", n1,
		UROCE_SHARE_MAX_CLAIMS);
	CHECK(n1 > n && n1 * UROCE_SHARE_MAX_CLAIMS >= 2048);
	len = uroce_share_prog(prog, BPF_MAXINSNS, m, max);
	CHECK(len > 0 && prog_sane(prog, len));
	(void)total;
}

static void test_v1_filter(void)
{
	struct sock_filter p[UROCE_V1_FILTER_LEN];
	uint32_t lo = UROCE_SHARE_QPN_BASE(77), hi = lo + UROCE_SHARE_SLOT_QPNS - 1;
	int n = uroce_v1_filter_prog(p, UROCE_V1_FILTER_LEN, lo, hi, NULL, 0, -1);

	CHECK(n == UROCE_V1_FILTER_LEN);
	CHECK(uroce_v1_filter_prog(p, n - 1, lo, hi, NULL, 0, -1) == -ENOSPC);
	CHECK(uroce_v1_filter_prog(p, n, hi, lo, NULL, 0, -1) == -EINVAL);
	CHECK(uroce_v1_filter_prog(p, n, 0, 0x1000000, NULL, 0, -1) == -EINVAL);
	CHECK(prog_sane(p, n));
	for (int v = 0; v < 2; v++) {
		bool vl = v == 1;

		CHECK(v1_filter(p, n, lo, vl, 0x8915, 0) == 0xFFFFFFFF);
		CHECK(v1_filter(p, n, hi, vl, 0x8915, 0) == 0xFFFFFFFF);
		CHECK(v1_filter(p, n, lo + 1000, vl, 0x8915, 0) == 0xFFFFFFFF);
		/* QP1 without a membership list: every process. */
		CHECK(v1_filter(p, n, 1, vl, 0x8915, 0) == 0xFFFFFFFF);
		CHECK(v1_filter(p, n, lo - 1, vl, 0x8915, 0) == 0); /* the slot before */
		CHECK(v1_filter(p, n, hi + 1, vl, 0x8915, 0) == 0); /* the slot after */
		CHECK(v1_filter(p, n, 0, vl, 0x8915, 0) == 0);
		CHECK(v1_filter(p, n, 2, vl, 0x8915, 0) == 0);
		CHECK(v1_filter(p, n, 0xFFFFFF, vl, 0x8915, 0) == 0);
		/* Not RoCE v1 (IPv4, IPv6, ARP): dropped whatever the bytes at the BTH's place. */
		CHECK(v1_filter(p, n, lo, vl, 0x0800, 0) == 0);
		CHECK(v1_filter(p, n, lo, vl, 0x86DD, 0) == 0);
		CHECK(v1_filter(p, n, 1, vl, 0x0806, 0) == 0);
		/* Too short to hold the QPN: dropped (a failed load). */
		uint32_t end = (vl ? 18u : 14u) + 40 + 8;

		CHECK(v1_filter(p, n, lo, vl, 0x8915, end) == 0xFFFFFFFF);
		CHECK(v1_filter(p, n, lo, vl, 0x8915, end - 1) == 0);
		CHECK(v1_filter(p, n, lo, vl, 0x8915, 13) == 0);
	}
	/* A range of one QPN (QP1 is still accepted). */
	n = uroce_v1_filter_prog(p, UROCE_V1_FILTER_LEN, 0x400, 0x400, NULL, 0, -1);
	CHECK(v1_filter(p, n, 0x400, false, 0x8915, 0) == 0xFFFFFFFF);
	CHECK(v1_filter(p, n, 0x3FF, false, 0x8915, 0) == 0);
	CHECK(v1_filter(p, n, 0x401, false, 0x8915, 0) == 0);
	CHECK(v1_filter(p, n, 1, false, 0x8915, 0) == 0xFFFFFFFF);
	/* Every QPN (what afpacket.c attaches without a range): RoCE v1 frames only. */
	n = uroce_v1_filter_prog(p, UROCE_V1_FILTER_LEN, 0, 0xFFFFFF, NULL, 0, -1);
	CHECK(v1_filter(p, n, 0, false, 0x8915, 0) == 0xFFFFFFFF);
	CHECK(v1_filter(p, n, 0xFFFFFF, true, 0x8915, 0) == 0xFFFFFFFF);
	CHECK(v1_filter(p, n, 5, false, 0x0800, 0) == 0);
	/* Two processes' slots side by side: a frame passes exactly one filter (or both, QP1). */
	struct sock_filter q[UROCE_V1_FILTER_LEN];
	uint32_t lo2 = UROCE_SHARE_QPN_BASE(78), hi2 = lo2 + UROCE_SHARE_SLOT_QPNS - 1;

	n = uroce_v1_filter_prog(p, UROCE_V1_FILTER_LEN, lo, hi, NULL, 0, -1);
	CHECK(uroce_v1_filter_prog(q, UROCE_V1_FILTER_LEN, lo2, hi2, NULL, 0, -1) == n);
	for (uint32_t qpn = lo - 3; qpn <= hi2 + 3; qpn += 7) {
		int a = v1_filter(p, n, qpn, false, 0x8915, 0) != 0;
		int b = v1_filter(q, n, qpn, false, 0x8915, 0) != 0;

		CHECKF(a + b == (qpn >= lo && qpn <= hi2 ? 1 : 0), "QPN %#x: %d + %d", qpn, a, b);
	}
	/*
	 * Frames leaving the interface (ETH_P_ALL shows them all): ours only when sent to this
	 * host, destination MAC = source MAC, whatever the QPN says (a peer's QPs are numbered from
	 * the same slots).
	 */
	static const uint8_t other[6] = {2, 0, 0, 0, 0, 2}, other_hi[6] = {3, 0, 0, 0, 0, 1},
			     self[6] = {2, 0, 0, 0, 0, 1};

	pkt_type = PACKET_OUTGOING;
	for (int v = 0; v < 2; v++) {
		bool vl = v == 1;

		memcpy(v1_src, other, 6); /* the MACs differ in their last byte */
		CHECK(v1_filter(p, n, lo, vl, 0x8915, 0) == 0);
		CHECK(v1_filter(p, n, 1, vl, 0x8915, 0) == 0);
		memcpy(v1_src, other_hi, 6); /* ... in their first four */
		CHECK(v1_filter(p, n, lo, vl, 0x8915, 0) == 0);
		memcpy(v1_src, self, 6);
		CHECK(v1_filter(p, n, lo, vl, 0x8915, 0) == 0xFFFFFFFF);
		CHECK(v1_filter(p, n, 1, vl, 0x8915, 0) == 0xFFFFFFFF);
		CHECK(v1_filter(p, n, lo2, vl, 0x8915, 0) == 0); /* not our QPN */
		CHECK(v1_filter(p, n, lo, vl, 0x0800, 0) == 0);
		CHECK(v1_filter(p, n, lo, vl, 0x8915, 9) == 0); /* too short for the MACs */
	}
	pkt_type = PACKET_HOST;
	memcpy(v1_src, other, 6);
	CHECK(v1_filter(p, n, lo, false, 0x8915, 0) == 0xFFFFFFFF); /* received: as before */
}

static bool same_member(const struct uroce_share_member *a, const struct uroce_share_member *b)
{
	/* Field by field: the struct has padding. */
	return a->pid == b->pid && a->start == b->start && a->qpn_lo == b->qpn_lo &&
	       a->qpn_hi == b->qpn_hi && a->cm == b->cm && a->nids == b->nids &&
	       memcmp(a->ids, b->ids, sizeof(a->ids[0]) * (size_t)a->nids) == 0;
}

static void test_format(void)
{
	static const uint64_t ids[] = {SID_TCP(5002), 0, 0xFFFFFFFFFFFFFFFFull, 0x10};
	struct uroce_share_member c[4] = {
		member(100, 3, false, 0, NULL), member(101, 4, true, 4, ids),
		member(102, 5, true, 0, NULL), member(103, 6, true, 1, ids + 2)};
	static struct uroce_share_member back[8];
	static char buf[FILE_MAX_TEST];
	uint64_t gen;
	int len;

	len = uroce_share_format(buf, sizeof(buf), 42, c, 4);
	CHECK(len > 0 && (size_t)len == strlen(buf));
	/* A member without a CM is a line of four fields; a CM adds "cm" and its claims. */
	CHECKF(strstr(buf, "gen 42\n100 7 6400 8447\n101 7 8448 10495 cm 0x106138a 0x0 "
			   "0xffffffffffffffff 0x10\n102 7 10496 12543 cm\n") == buf,
	       "%s", buf);
	CHECK(uroce_share_parse(buf, &gen, back, 8) == 4 && gen == 42);
	for (int i = 0; i < 4; i++)
		CHECKF(same_member(&back[i], &c[i]), "member %d", i);
	CHECK(uroce_share_parse(buf, &gen, back, 3) == -ENOSPC);
	CHECK(uroce_share_parse("", &gen, back, 8) == 0 && gen == 0);
	CHECK(uroce_share_parse("gen 1\n12 3 4 9\n", &gen, back, 8) == 1 && !back[0].cm &&
	      back[0].nids == 0);
	CHECK(uroce_share_parse("gen 1\n12 3 4 9 cm 0xA\n", &gen, back, 8) == 1 && back[0].cm &&
	      back[0].nids == 1 && back[0].ids[0] == 10);
	static const char *const bad[] = {
		"gen 1\n12 3 4\n",
		"gen 1\n12 3 9 4\n", /* lo > hi */
		"gen 1\n12 3 4 9",   /* no newline */
		"gen 1\n12 3 4 9 \n",
		"gen 1\n12 3 4 9 cm \n",
		"gen 1\n12 3 4 9 cmx\n",
		"gen 1\n12 3 4 9 cm 12\n",
		"gen 1\n12 3 4 9 cm 0x\n",
		"gen 1\n12 3 4 9 cm 0xG\n",
		"gen 1\n12 3 4 9 cm 0x11112222333344445\n",
		"gen 1\n12 3 4 9 0x1\n",
		"gen 1\n12 3 4 9 cm 0x1  0x2\n",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CHECKF(uroce_share_parse(bad[i], &gen, back, 8) == -EBADMSG, "%s", bad[i]);
	/* At most UROCE_SHARE_MAX_CLAIMS claims on a line. */
	struct uroce_share_member big = member(9, 9, true, UROCE_SHARE_MAX_CLAIMS,
					       (const uint64_t[UROCE_SHARE_MAX_CLAIMS]){1, 2, 3});

	len = uroce_share_format(buf, sizeof(buf), 1, &big, 1);
	CHECK(len > 0 && uroce_share_parse(buf, &gen, back, 8) == 1 && same_member(&back[0], &big));
	strcpy(buf + len - 1, " 0x5\n");
	CHECK(uroce_share_parse(buf, &gen, back, 8) == -EBADMSG);
	CHECK(uroce_share_format(buf, 10, 42, c, 3) == -ENOSPC);
	CHECK(uroce_share_format(buf, 60, 42, c, 2) == -ENOSPC); /* in the claims */
}

static void test_unit(const char *tmp)
{
	test_v1_filter();
	test_gsi();
	test_prog_limits();
	test_format();
	static struct uroce_share_member m[UROCE_SHARE_MAX_MEMBERS];
	int n = 5, len;

	for (int i = 0; i < n; i++)
		m[i] = (struct uroce_share_member){.pid = 100 + i,
						   .start = 7,
						   .qpn_lo = UROCE_SHARE_QPN_BASE(10 * i + 3),
						   .qpn_hi =
							   UROCE_SHARE_QPN_BASE(10 * i + 3) + 1023};
	len = uroce_share_prog(prog, BPF_MAXINSNS, m, n);
	CHECK(len == uroce_share_prog_len(m, n) && prog_sane(prog, len));
	CHECK(uroce_share_prog(prog, len - 1, m, n) == -ENOSPC);
	for (int i = 0; i < n; i++) {
		CHECK(steer(prog, len, m[i].qpn_lo) == (uint32_t)i);
		CHECK(steer(prog, len, m[i].qpn_hi) == (uint32_t)i);
		CHECK(steer(prog, len, m[i].qpn_lo + 500) == (uint32_t)i);
		CHECK(steer(prog, len, m[i].qpn_lo - 1) == 0); /* between slots: default */
		CHECK(steer(prog, len, m[i].qpn_hi + 1) == 0);
	}
	CHECK(steer(prog, len, 1) == 0);	/* GSI without a CM member: index 0 */
	CHECK(steer(prog, len, 0xFFFFFF) == 0); /* nobody's */
	/* The byte before the QPN (BTH byte 4, reserved) is masked off. */
	uint8_t bth[12] = {0, 0, 0, 0, 0xAB};

	bth[5] = (uint8_t)(m[2].qpn_lo >> 16);
	bth[6] = (uint8_t)(m[2].qpn_lo >> 8);
	bth[7] = (uint8_t)m[2].qpn_lo;
	CHECK(bpf_run(prog, len, bth, sizeof(bth)) == 2);
	CHECK(bpf_run(prog, len, bth, 7) == 0); /* too short to hold a QPN */

	/* Compaction as the kernel does it: the last member moves into the hole. */
	struct uroce_share_member c[5];

	memcpy(c, m, sizeof(c));
	CHECK(uroce_share_compact(c, 5, 1) == 4);
	CHECK(c[0].pid == 100 && c[1].pid == 104 && c[2].pid == 102 && c[3].pid == 103);
	CHECK(uroce_share_compact(c, 4, 3) == 3); /* the last: nothing moves */
	CHECK(c[0].pid == 100 && c[1].pid == 104 && c[2].pid == 102);
	CHECK(uroce_share_compact(c, 3, 3) == -EINVAL);
	len = uroce_share_prog(prog, BPF_MAXINSNS, c, 3);
	CHECK(steer(prog, len, m[4].qpn_lo) == 1 && steer(prog, len, m[1].qpn_lo) == 0);

	/* The longest program without claims keeps every member reachable. */
	for (int i = 0; i < UROCE_SHARE_MAX_MEMBERS; i++)
		m[i] = (struct uroce_share_member){.pid = 1 + i,
						   .qpn_lo = UROCE_SHARE_QPN_BASE(i),
						   .qpn_hi = UROCE_SHARE_QPN_BASE(i) + 2047};
	len = uroce_share_prog(prog, BPF_MAXINSNS, m, UROCE_SHARE_MAX_MEMBERS);
	CHECK(len > 0 && prog_sane(prog, len));
	for (int i = 0; i < UROCE_SHARE_MAX_MEMBERS; i += 17)
		CHECK(steer(prog, len, m[i].qpn_lo + 1) == (uint32_t)i);
	CHECK(uroce_share_prog(prog, len, m, UROCE_SHARE_MAX_MEMBERS + 1) == -EINVAL);

	/* Process identity: ourselves, and a child that is a zombie (its sockets are closed). */
	uint64_t s1, s2;

	CHECK(uroce_share_proc_start(getpid(), &s1) == 0 && s1 > 0);
	pid_t z = fork();

	if (z == 0)
		_exit(0);
	siginfo_t si;

	CHECK(waitid(P_PID, (id_t)z, &si, WEXITED | WNOWAIT) == 0);
	CHECK(uroce_share_proc_start(z, &s2) == -ESRCH);
	waitpid(z, NULL, 0);

	/* QPN slots, in blocks: pid-derived first; a second take by the same process collides,
	 * gets the next block; a released block is free again. */
	int a = -1, b = -1, d = -1;
	const int mine = (getpid() * UROCE_SHARE_PROC_SLOTS) & 0xFFF;

	CHECK(uroce_share_slot_take(tmp, &a) == 0 && a == mine);
	CHECK(uroce_share_slot_take(tmp, &b) == 0 && b == ((a + UROCE_SHARE_PROC_SLOTS) & 0xFFF));
	uroce_share_slot_put(tmp, a);
	CHECK(uroce_share_slot_take(tmp, &d) == 0 && d == a);
	uroce_share_slot_put(tmp, b);
	uroce_share_slot_put(tmp, d);
	/* A block held by a dead process is free. */
	char path[512], line[64];

	snprintf(path, sizeof(path), "%s/share/slots", tmp);
	snprintf(line, sizeof(line), "%d %d %llu\n", mine, (int)z, (unsigned long long)s1);
	int fd = open(path, O_WRONLY | O_TRUNC);

	CHECK(fd >= 0 && write(fd, line, strlen(line)) == (ssize_t)strlen(line));
	close(fd);
	CHECK(uroce_share_slot_take(tmp, &a) == 0 && a == mine);
	uroce_share_slot_put(tmp, a);
	/* A live holder's block is taken whole: a slot inside it, not its first, is not free. */
	uint64_t pstart = 0;

	CHECK(uroce_share_proc_start(getppid(), &pstart) == 0);
	snprintf(line, sizeof(line), "%d %d %llu\n", mine + 3, (int)getppid(),
		 (unsigned long long)pstart);
	fd = open(path, O_WRONLY | O_TRUNC);
	CHECK(fd >= 0 && write(fd, line, strlen(line)) == (ssize_t)strlen(line));
	close(fd);
	CHECK(uroce_share_slot_take(tmp, &a) == 0 && a == ((mine + UROCE_SHARE_PROC_SLOTS) & 0xFFF));
	uroce_share_slot_put(tmp, a);
}

int main(int argc, char **argv)
{
	char tmp[] = "/tmp/uroce-share.XXXXXX";
	char cmd[600];

	(void)argv;
	if (argc != 1 || !mkdtemp(tmp)) {
		fprintf(stderr, "usage: %s\n", "test_share_unit");
		return 2;
	}
	setenv("UROCE_RUNDIR", tmp, 1);
	test_unit(tmp);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", tmp);
	return check_exit("unit");
}
