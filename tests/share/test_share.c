/* SPDX-License-Identifier: MIT */
/*
 * Several processes on one device (src/host/io/share_*.h).
 *
 *   test_share unit    the pure parts: compaction, the steering program and the RoCE v1 socket
 *                      filter (run by a small classic BPF interpreter written here from the
 *                      kernel's semantics) on data packets and crafted CM MADs (claimed and
 *                      unclaimed service IDs, replies to each member's comm IDs, other QP1
 *                      traffic, truncated and VLAN-tagged frames), the programs' length limits,
 *                      the membership file format with claims, QPN slot collisions.
 *   test_share gsi     three forked processes on uroce_lo, two of them claiming services
 *                      (uroce_ctx_gsi_steer): crafted QP1 datagrams sent to the device's address
 *                      reach exactly the process the claims and comm ID slots name (counted by
 *                      its backend: their ICRC is bad), conflicts are refused, and a leaving CM
 *                      hands its MADs on.
 *   test_share v1self DEV   two QPs of one process on a RoCE v1 device (run by v1.sh).
 *   test_share v1gsi DEV IF the gsi test on a RoCE v1 device, frames sent on IF (run by v1.sh).
 *   test_share procs   forked processes open uroce_lo (127.0.0.1) at once, each binding the same
 *                      (address, port); RC QPs in different processes exchange SEND and RDMA
 *                      WRITE, and no packet reaches a process that does not own its QP
 *                      (DROP_NO_QP stays 0). Then a member in the middle of the group leaves
 *                      (the kernel moves the last socket into its place), one joins, one is
 *                      killed without leaving (the survivors re-steer), and one process opens
 *                      the device twice (a QPN slot collision). Each phase checks the
 *                      membership file against the kernel's group order and runs traffic.
 *
 * As root the test makes a network namespace of its own (unshare, lo up) and uses port 4791;
 * otherwise it uses UROCE_PORT 24797 on the host's loopback. UROCE_RUNDIR is a fresh temporary
 * directory. Waits are bounded polls (completion eventfd, inotify on the membership file).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../check.h"
#include "host/config/io_counters.h"
#include "host/config/rundir.h"
#include "host/ctx.h"
#include "host/io/share_members.h"
#include "host/io/share_prog.h"
#include "host/io/share_slots.h"

#define FILE_MAX_TEST (128 << 10)

/* ---- unit: a classic BPF interpreter for what uroce_share_prog() and uroce_v1_filter_prog()
 * emit ---------------------------------------------------------------------------------------- */

/*
 * Runs prog over pkt as the kernel's reuseport hook (the UDP payload) or socket filter (the
 * frame) does; returns A on ret, 0 on a load beyond the end (the kernel's "drop").
 */
static uint32_t bpf_run(const struct sock_filter *p, int len, const uint8_t *pkt, uint32_t plen)
{
	uint32_t a = 0, x = 0;

	for (int pc = 0; pc < len; pc++) {
		const struct sock_filter *f = &p[pc];
		uint64_t at = (uint64_t)f->k + (BPF_MODE(f->code) == BPF_IND ? x : 0);

		switch (f->code) {
		case BPF_LD | BPF_W | BPF_ABS:
		case BPF_LD | BPF_W | BPF_IND:
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

/*
 * A RoCE v1 frame to QP qpn: Ethernet (with an 802.1Q tag when vlan), GRH, BTH (12 bytes), 4
 * bytes of payload or ICRC; len bytes of it (0: all) go to the filter.
 */
static uint32_t v1_filter(const struct sock_filter *p, int plen, uint32_t qpn, bool vlan,
			  uint16_t ethertype, uint32_t len)
{
	uint8_t f[18 + 40 + 12 + 4] = {0};
	uint32_t e = vlan ? 18 : 14;

	memcpy(f, "\x02\0\0\0\0\1\x02\0\0\0\0\2", 12);
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

/* ---- GSI (QP1) datagrams ------------------------------------------------------------------- */

#define GSI_LEN (12 + 8 + 256 + 4) /* BTH, DETH, MAD, ICRC: a RoCE v2 UDP payload */

static void put_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

/*
 * A UD SEND to QP1 carrying a MAD of class cls, attribute attr, whose CM message has w0 at
 * offset 0 (local comm ID, SIDR request ID), w4 at 4 (remote comm ID) and sid at 8 (service ID).
 * The ICRC is not computed (0xDEADBEEF: a receiving process counts an ICRC drop).
 */
static void gsi_payload(uint8_t *p, uint8_t cls, uint16_t attr, uint32_t w0, uint32_t w4,
			uint64_t sid)
{
	memset(p, 0, GSI_LEN);
	p[0] = 0x64; /* UD SEND only */
	p[2] = p[3] = 0xFF;
	p[7] = 1;		      /* destination QP 1 */
	put_be32(p + 8, 0x123456);    /* PSN */
	put_be32(p + 12, 0x80010000); /* DETH Q_Key */
	p[19] = 1;		      /* DETH source QP 1 */
	p[20] = 1;		      /* MAD base version */
	p[21] = cls;		      /* management class */
	p[22] = 2;		      /* class version */
	p[23] = 3;		      /* method: Send */
	put_be32(p + 28, 0xA1B2C3D4); /* TID */
	p[36] = (uint8_t)(attr >> 8); /* attribute ID */
	p[37] = (uint8_t)attr;
	put_be32(p + 44, w0);
	put_be32(p + 48, w4);
	put_be32(p + 52, (uint32_t)(sid >> 32));
	put_be32(p + 56, (uint32_t)sid);
	put_be32(p + GSI_LEN - 4, 0xDEADBEEF); /* ICRC */
}

/* The same as a RoCE v1 frame: Ethernet (802.1Q tagged when vlan), GRH, then payload. */
static uint32_t v1_frame(uint8_t *f, bool vlan, const uint8_t *payload, uint32_t plen)
{
	uint32_t e = vlan ? 18 : 14;

	memset(f, 0, e + 40);
	memcpy(f, "\x02\0\0\0\0\1\x02\0\0\0\0\2", 12);
	if (vlan) {
		f[12] = 0x81;
		f[15] = 0x07;
	}
	f[e - 2] = 0x89;
	f[e - 1] = 0x15;
	f[e] = 0x60;
	f[e + 4] = (uint8_t)(plen >> 8);
	f[e + 5] = (uint8_t)plen;
	f[e + 6] = 0x1B;
	f[e + 7] = 1;
	memcpy(f + e + 40, payload, plen);
	return e + 40 + plen;
}

#define CM_REQ	    0x10
#define CM_MRA	    0x11
#define CM_REJ	    0x12
#define CM_REP	    0x13
#define CM_RTU	    0x14
#define CM_DREQ	    0x15
#define CM_DREP	    0x16
#define CM_SIDR_REQ 0x17
#define CM_SIDR_REP 0x18
#define CM_LAP	    0x19

/* RDMA CM's service ID for a TCP port space port. */
#define SID_TCP(port) (0x0000000001060000ull | (port))

/* A comm ID as the CM of slot issues it. */
static uint32_t comm_id(uint32_t slot, uint32_t low)
{
	return slot << 20 | (low & 0xFFFFF);
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
	/* Data QPNs are steered as before, whatever follows the BTH. */
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

	/* Nobody runs a CM: QP1 to index 0 (v2) and to every process (v1), as before claims. */
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
	/* Lines without a CM are what files held before claims; the others add to them. */
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

	/* QPN slots: pid-derived first; a second take by the same process collides, gets the
	 * next; a released slot is free again. */
	int a = -1, b = -1, d = -1;

	CHECK(uroce_share_slot_take(tmp, &a) == 0 && a == (getpid() & 0xFFF));
	CHECK(uroce_share_slot_take(tmp, &b) == 0 && b == ((a + 1) & 0xFFF));
	uroce_share_slot_put(tmp, a);
	CHECK(uroce_share_slot_take(tmp, &d) == 0 && d == a);
	uroce_share_slot_put(tmp, b);
	uroce_share_slot_put(tmp, d);
	/* A slot held by a dead process is free. */
	char path[512], line[64];

	snprintf(path, sizeof(path), "%s/share/slots", tmp);
	snprintf(line, sizeof(line), "%d %d %llu\n", getpid() & 0xFFF, (int)z,
		 (unsigned long long)s1);
	int fd = open(path, O_WRONLY | O_TRUNC);

	CHECK(fd >= 0 && write(fd, line, strlen(line)) == (ssize_t)strlen(line));
	close(fd);
	CHECK(uroce_share_slot_take(tmp, &a) == 0 && a == (getpid() & 0xFFF));
	uroce_share_slot_put(tmp, a);
}

/* ---- procs: a worker process driven over a socketpair ------------------------------------ */

enum op {
	OP_OPEN,
	OP_QP,
	OP_CONNECT,
	OP_RECV,
	OP_SEND,
	OP_WRITE,
	OP_WAIT_RECV,
	OP_CHECK,
	OP_CNT,
	OP_STEER,
	OP_IO,
	OP_EXIT
};

struct cmd {
	enum op op;
	int c;	/* context (OP_OPEN, OP_QP) */
	int qp; /* local QP index */
	uint32_t qpn, len, seed, rkey;
	uint64_t raddr;
	int nids; /* OP_STEER: ids[0..nids), more than 4: that many made-up ones */
	uint64_t ids[4];
};

struct rep {
	int rc;
	uint32_t qpn, rkey;
	uint64_t addr;
	uint64_t drop_no_qp, rcvd, retrans;
	uint64_t gro;	/* OP_CNT: datagrams of several packets received (UDP GRO) */
	uint64_t io_rx; /* OP_IO: datagrams or frames context 0's backends took in */
	uint32_t slot;	/* OP_IO: uroce_ctx_slot */
};

#define WQ     8
#define WMEM   65536
#define RX_OFF 0
#define WR_OFF 16384 /* RDMA WRITE target */
#define TX_OFF 32768
#define WS_OFF 49152 /* RDMA WRITE source */

struct worker {
	struct uroce_ctx *ctx[2];
	struct uroce_pd *pd[2];
	int gid_idx[2];
	uint8_t gid[2][16];
	int evfd;
	struct {
		int c;
		struct uroce_qp *qp;
		struct uroce_cq *scq, *rcq;
		struct uroce_mr *mr;
	} q[WQ];
	uint8_t mem[WQ][WMEM];
};

static struct worker *W;
/* The device and the GID type workers use: uroce_lo and RoCE v2, or v1self's. */
static const char *w_dev = "uroce_lo";
static enum uroce_gid_type w_gtype = UROCE_GID_V2;

static void on_event(void *arg, const struct uroce_event *ev)
{
	uint64_t one = 1;

	(void)arg;
	if (ev->type == UROCE_EVENT_COMP && write(W->evfd, &one, 8) != 8)
		abort();
}

static void fill(uint8_t *p, uint32_t len, uint32_t seed)
{
	for (uint32_t i = 0; i < len; i++)
		p[i] = (uint8_t)(i * 131 + seed * 7 + (i >> 8));
}

static int same(const uint8_t *p, uint32_t len, uint32_t seed)
{
	for (uint32_t i = 0; i < len; i++)
		if (p[i] != (uint8_t)(i * 131 + seed * 7 + (i >> 8)))
			return 0;
	return 1;
}

/* One completion of cq within 5 s; returns its status (or -ETIMEDOUT), length into *blen. */
static int wait_wc(struct uroce_ctx *c, struct uroce_cq *cq, uint32_t *blen)
{
	for (int i = 0; i < 50; i++) {
		struct uroce_wc wc;

		uroce_ctx_lock(c);
		int n = uroce_cq_poll(cq, 1, &wc);

		if (n == 0) {
			uroce_cq_req_notify(cq, false);
			n = uroce_cq_poll(cq, 1, &wc);
		}
		uroce_ctx_unlock(c);
		if (n == 1) {
			if (blen)
				*blen = wc.byte_len;
			return (int)wc.status;
		}
		struct pollfd p = {.fd = W->evfd, .events = POLLIN};
		uint64_t v;

		if (poll(&p, 1, 100) > 0 && read(W->evfd, &v, 8) != 8)
			return -EIO;
	}
	return -ETIMEDOUT;
}

static int w_open(int k)
{
	struct uroce_ctx_cfg cfg = {.on_event = on_event};
	struct uroce_gid_entry g[64];
	int rc = uroce_ctx_open(w_dev, &cfg, &W->ctx[k]);

	if (rc)
		return rc;
	int n = uroce_ctx_gids(W->ctx[k], g, 64);

	W->gid_idx[k] = -1;
	for (int i = 0; i < n; i++)
		if (g[i].ipv4 && g[i].type == w_gtype) {
			W->gid_idx[k] = i;
			memcpy(W->gid[k], g[i].gid, 16);
		}
	if (W->gid_idx[k] < 0)
		return -EADDRNOTAVAIL;
	uroce_ctx_lock(W->ctx[k]);
	rc = uroce_pd_alloc(uroce_ctx_eng(W->ctx[k]), &W->pd[k]);
	uroce_ctx_unlock(W->ctx[k]);
	return rc;
}

static int w_qp(int k, int c, struct rep *r)
{
	struct uroce_ctx *x = W->ctx[c];
	struct uroce_eng *e = uroce_ctx_eng(x);
	int rc;

	W->q[k].c = c;
	uroce_ctx_lock(x);
	rc = uroce_cq_create(e, 64, NULL, &W->q[k].scq);
	rc = rc ? rc : uroce_cq_create(e, 64, NULL, &W->q[k].rcq);
	rc = rc ? rc
		: uroce_mr_reg(W->pd[c], W->mem[k], WMEM, (uintptr_t)W->mem[k], 15, &W->q[k].mr);
	if (rc == 0) {
		struct uroce_qp_init init = {.type = UROCE_QPT_RC,
					     .send_cq = W->q[k].scq,
					     .recv_cq = W->q[k].rcq,
					     .cap = {16, 16, 1, 1, 0}};

		rc = uroce_qp_create(W->pd[c], &init, &W->q[k].qp);
	}
	if (rc == 0) {
		r->qpn = uroce_qp_num(W->q[k].qp);
		r->rkey = uroce_mr_rkey(W->q[k].mr);
		r->addr = (uintptr_t)W->mem[k];
	}
	uroce_ctx_unlock(x);
	return rc;
}

static int w_connect(int k, uint32_t dqpn)
{
	int c = W->q[k].c;
	struct uroce_ctx *x = W->ctx[c];
	struct uroce_qp *qp = W->q[k].qp;
	struct uroce_qp_attr a = {.qp_state = UROCE_QPS_INIT, .port_num = 1, .qp_access_flags = 15};
	int rc;

	uroce_ctx_lock(x);
	rc = uroce_qp_modify(qp, &a,
			     UROCE_QP_STATE | UROCE_QP_PKEY_INDEX | UROCE_QP_PORT |
				     UROCE_QP_ACCESS_FLAGS);
	a.qp_state = UROCE_QPS_RTR;
	a.path_mtu = UROCE_MTU_1024;
	a.dest_qp_num = dqpn;
	a.rq_psn = 100;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 1;
	a.av.is_global = true;
	a.av.sgid_index = (uint8_t)W->gid_idx[c];
	a.av.hop_limit = 1;
	memcpy(a.av.dgid, W->gid[c], 16); /* the peer is on this host, this address */
	rc = rc ? rc
		: uroce_qp_modify(qp, &a,
				  UROCE_QP_STATE | UROCE_QP_AV | UROCE_QP_PATH_MTU |
					  UROCE_QP_DEST_QPN | UROCE_QP_RQ_PSN |
					  UROCE_QP_MAX_DEST_RD_ATOMIC | UROCE_QP_MIN_RNR_TIMER);
	a.qp_state = UROCE_QPS_RTS;
	a.sq_psn = 100;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 1;
	rc = rc ? rc
		: uroce_qp_modify(qp, &a,
				  UROCE_QP_STATE | UROCE_QP_SQ_PSN | UROCE_QP_TIMEOUT |
					  UROCE_QP_RETRY_CNT | UROCE_QP_RNR_RETRY |
					  UROCE_QP_MAX_QP_RD_ATOMIC);
	uroce_ctx_unlock(x);
	return rc;
}

static int w_post(const struct cmd *m)
{
	int k = m->qp;
	struct uroce_ctx *x = W->ctx[W->q[k].c];
	int rc;

	if (m->op == OP_RECV) {
		struct uroce_sge s = {(uintptr_t)W->mem[k] + RX_OFF, m->len,
				      uroce_mr_lkey(W->q[k].mr)};
		struct uroce_recv_wr wr = {.wr_id = 1, .sg_list = &s, .num_sge = 1}, *bad;

		memset(W->mem[k] + RX_OFF, 0, m->len);
		uroce_ctx_lock(x);
		rc = uroce_post_recv(W->q[k].qp, &wr, &bad);
		uroce_ctx_unlock(x);
		return rc;
	}
	uint32_t off = m->op == OP_SEND ? TX_OFF : WS_OFF;
	struct uroce_sge s = {(uintptr_t)W->mem[k] + off, m->len, uroce_mr_lkey(W->q[k].mr)};
	struct uroce_send_wr wr = {.wr_id = 2,
				   .sg_list = &s,
				   .num_sge = 1,
				   .opcode = m->op == OP_SEND ? UROCE_WR_SEND : UROCE_WR_RDMA_WRITE,
				   .send_flags = UROCE_SEND_SIGNALED},
			     *bad;

	wr.wr.rdma.remote_addr = m->raddr;
	wr.wr.rdma.rkey = m->rkey;
	fill(W->mem[k] + off, m->len, m->seed);
	uroce_ctx_lock(x);
	rc = uroce_post_send(W->q[k].qp, &wr, &bad);
	uroce_ctx_unlock(x);
	if (rc)
		return rc;
	uroce_ctx_kick(x);
	return wait_wc(x, W->q[k].scq, NULL);
}

static void worker_main(int sk)
{
	struct cmd m;
	struct rep r;

	W = calloc(1, sizeof(*W));
	W->evfd = eventfd(0, EFD_NONBLOCK);
	while (read(sk, &m, sizeof(m)) == (ssize_t)sizeof(m)) {
		memset(&r, 0, sizeof(r));
		switch (m.op) {
		case OP_OPEN:
			r.rc = w_open(m.c);
			break;
		case OP_QP:
			r.rc = w_qp(m.qp, m.c, &r);
			break;
		case OP_CONNECT:
			r.rc = w_connect(m.qp, m.qpn);
			break;
		case OP_RECV:
		case OP_SEND:
		case OP_WRITE:
			r.rc = w_post(&m);
			break;
		case OP_WAIT_RECV: {
			uint32_t blen = 0;

			r.rc = wait_wc(W->ctx[W->q[m.qp].c], W->q[m.qp].rcq, &blen);
			if (r.rc == 0 &&
			    (blen != m.len || !same(W->mem[m.qp] + RX_OFF, m.len, m.seed)))
				r.rc = -EBADMSG;
			break;
		}
		case OP_CHECK:
			r.rc = same(W->mem[m.qp] + WR_OFF, m.len, m.seed) ? 0 : -EBADMSG;
			break;
		case OP_STEER: {
			uint64_t many[UROCE_SHARE_MAX_CLAIMS + 1];

			for (int i = 0; i < UROCE_SHARE_MAX_CLAIMS + 1; i++)
				many[i] = 0x7700000000000000ull + (uint64_t)i;
			r.rc = uroce_ctx_gsi_steer(W->ctx[0], m.nids > 4 ? many : m.ids, m.nids);
			break;
		}
		case OP_IO:
			/* Crafted MADs carry a bad ICRC: counted, never passed to the engine. */
			for (int k = UROCE_IO_RX_PKTS; k <= UROCE_IO_RX_DROP_NOT_FOR_US; k++)
				if (k != UROCE_IO_RX_BYTES)
					r.io_rx += uroce_ctx_io_counter(W->ctx[0],
									(enum uroce_io_counter)k);
			r.slot = uroce_ctx_slot(W->ctx[0]);
			break;
		case OP_CNT:
			for (int c = 0; c < 2; c++) {
				if (!W->ctx[c])
					continue;
				uroce_ctx_lock(W->ctx[c]);
				struct uroce_eng *e = uroce_ctx_eng(W->ctx[c]);

				r.drop_no_qp += uroce_eng_counter(e, UROCE_CNT_DROP_NO_QP);
				r.rcvd += uroce_eng_counter(e, UROCE_CNT_RCVD_PKTS);
				r.retrans += uroce_eng_counter(e, UROCE_CNT_RETRANSMITTED_PKTS);
				uroce_ctx_unlock(W->ctx[c]);
				r.gro += uroce_ctx_io_counter(W->ctx[c], UROCE_IO_RX_GRO);
			}
			break;
		case OP_EXIT:
			for (int k = 0; k < WQ; k++) {
				if (!W->q[k].qp)
					continue;
				struct uroce_ctx *x = W->ctx[W->q[k].c];

				uroce_ctx_lock(x);
				uroce_qp_destroy(W->q[k].qp);
				uroce_ctx_unlock(x);
			}
			for (int c = 0; c < 2; c++)
				uroce_ctx_close(W->ctx[c]);
			if (write(sk, &r, sizeof(r)) != (ssize_t)sizeof(r))
				_exit(3);
			_exit(0);
		}
		if (write(sk, &r, sizeof(r)) != (ssize_t)sizeof(r))
			_exit(3);
	}
	_exit(2);
}

struct proc {
	pid_t pid;
	int sk;
	char name;
};

static struct rep call(struct proc *p, struct cmd m)
{
	struct rep r = {.rc = -EPIPE};
	struct pollfd pf = {.fd = p->sk, .events = POLLIN};

	if (write(p->sk, &m, sizeof(m)) != (ssize_t)sizeof(m) || poll(&pf, 1, 20000) != 1 ||
	    read(p->sk, &r, sizeof(r)) != (ssize_t)sizeof(r))
		r.rc = -EPIPE;
	return r;
}

static struct proc spawn(char name)
{
	struct proc p = {.name = name, .sk = -1};
	int sv[2];

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		return p;
	p.pid = fork();
	if (p.pid == 0) {
		close(sv[0]);
		worker_main(sv[1]);
	}
	close(sv[1]);
	p.sk = sv[0];
	struct rep r = call(&p, (struct cmd){.op = OP_OPEN, .c = 0});

	CHECKF(r.rc == 0, "%c: open uroce_lo: %d", name, r.rc);
	return p;
}

/* A connected RC QP pair between x (its QP index kx, context cx) and y. */
struct pair {
	struct proc *x, *y;
	int kx, ky;
	struct rep qx, qy;
};

static struct pair connect_pair(struct proc *x, int kx, int cx, struct proc *y, int ky, int cy)
{
	struct pair p = {.x = x, .y = y, .kx = kx, .ky = ky};

	p.qx = call(x, (struct cmd){.op = OP_QP, .qp = kx, .c = cx});
	p.qy = call(y, (struct cmd){.op = OP_QP, .qp = ky, .c = cy});
	CHECK(p.qx.rc == 0 && p.qy.rc == 0);
	CHECK(call(x, (struct cmd){.op = OP_CONNECT, .qp = kx, .qpn = p.qy.qpn}).rc == 0);
	CHECK(call(y, (struct cmd){.op = OP_CONNECT, .qp = ky, .qpn = p.qx.qpn}).rc == 0);
	return p;
}

/* SEND both ways (3000 bytes: three 1024-MTU packets) and an RDMA WRITE each way. */
static void exchange(const struct pair *p, uint32_t seed)
{
	struct proc *end[2] = {p->x, p->y};
	int k[2] = {p->kx, p->ky};
	const struct rep *q[2] = {&p->qx, &p->qy};

	for (int d = 0; d < 2; d++) {
		struct proc *s = end[d], *r = end[!d];
		int ks = k[d], kr = k[!d];
		uint32_t len = 3000 + 100 * (uint32_t)d;

		CHECK(call(r, (struct cmd){.op = OP_RECV, .qp = kr, .len = len}).rc == 0);
		int rc =
			call(s, (struct cmd){.op = OP_SEND, .qp = ks, .len = len, .seed = seed}).rc;

		CHECKF(rc == 0, "SEND %c -> %c: %d", s->name, r->name, rc);
		rc = call(r, (struct cmd){.op = OP_WAIT_RECV, .qp = kr, .len = len, .seed = seed})
			     .rc;
		CHECKF(rc == 0, "RECV %c <- %c: %d", r->name, s->name, rc);
		rc = call(s, (struct cmd){.op = OP_WRITE,
					  .qp = ks,
					  .len = 5000,
					  .seed = seed + 1,
					  .raddr = q[!d]->addr + WR_OFF,
					  .rkey = q[!d]->rkey})
			     .rc;
		CHECKF(rc == 0, "WRITE %c -> %c: %d", s->name, r->name, rc);
		rc = call(r, (struct cmd){.op = OP_CHECK, .qp = kr, .len = 5000, .seed = seed + 1})
			     .rc;
		CHECKF(rc == 0, "WRITE data at %c: %d", r->name, rc);
		seed += 2;
	}
}

static void no_strays(struct proc **ps, int n, const char *when)
{
	for (int i = 0; i < n; i++) {
		struct rep r = call(ps[i], (struct cmd){.op = OP_CNT});

		CHECKF(r.rc == 0 && r.drop_no_qp == 0 && r.retrans == 0,
		       "%s: %c: drop_no_qp %llu, retransmitted %llu", when, ps[i]->name,
		       (unsigned long long)r.drop_no_qp, (unsigned long long)r.retrans);
		CHECKF(r.rcvd > 0, "%s: %c received nothing", when, ps[i]->name);
	}
}

static char path[512];

/* The membership file lists exactly these pids, in this order. */
static int members_are(const pid_t *want, int n)
{
	struct uroce_share_member m[UROCE_SHARE_MAX_MEMBERS];
	uint64_t gen;
	int got = uroce_share_read(path, &gen, m, UROCE_SHARE_MAX_MEMBERS);

	if (got != n)
		return 0;
	for (int i = 0; i < n; i++)
		if (m[i].pid != want[i])
			return 0;
	return 1;
}

/* Wait (5 s at most) until the membership file lists want: inotify, bounded polls. */
static int wait_members(const pid_t *want, int n)
{
	int in = inotify_init1(IN_NONBLOCK | IN_CLOEXEC), ok = 0;

	if (in >= 0)
		inotify_add_watch(in, path, IN_MODIFY | IN_DELETE_SELF);
	for (int i = 0; i < 50 && !(ok = members_are(want, n)); i++) {
		struct pollfd p = {.fd = in, .events = POLLIN};
		char buf[1024];

		if (poll(&p, 1, 100) > 0)
			while (read(in, buf, sizeof(buf)) > 0) {
			}
	}
	if (in >= 0)
		close(in);
	return ok;
}

static void show_members(const char *when)
{
	struct uroce_share_member m[UROCE_SHARE_MAX_MEMBERS];
	uint64_t gen;
	int n = uroce_share_read(path, &gen, m, UROCE_SHARE_MAX_MEMBERS);

	fprintf(stderr, "%s: gen %llu:", when, (unsigned long long)gen);
	for (int i = 0; i < n; i++)
		fprintf(stderr, " [%d] pid %d qpn %#x..%#x", i, m[i].pid, m[i].qpn_lo, m[i].qpn_hi);
	fputc('\n', stderr);
}

static int bye(struct proc *p)
{
	int st = -1;

	CHECK(call(p, (struct cmd){.op = OP_EXIT}).rc == 0);
	CHECK(waitpid(p->pid, &st, 0) == p->pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
	close(p->sk);
	return st;
}

static int lo_up(void)
{
	struct ifreq ifr = {0};
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), rc = -1;

	strcpy(ifr.ifr_name, "lo");
	if (s >= 0 && ioctl(s, SIOCGIFFLAGS, &ifr) == 0) {
		ifr.ifr_flags |= IFF_UP;
		rc = ioctl(s, SIOCSIFFLAGS, &ifr);
	}
	if (s >= 0)
		close(s);
	return rc;
}

/* As root, a network namespace of its own (lo up) and port 4791; else the host's, port 24797. */
static unsigned net_setup(void)
{
	if (geteuid() == 0 && unshare(CLONE_NEWNET) == 0 && lo_up() == 0) {
		unsetenv("UROCE_PORT");
		fprintf(stderr, "a network namespace of its own, port 4791\n");
		return 4791;
	}
	setenv("UROCE_PORT", "24797", 1);
	fprintf(stderr, "no network namespace: the host's loopback, port 24797\n");
	return 24797;
}

static void test_procs(const char *rundir)
{
	unsigned port = net_setup();
	struct sockaddr_in a = {.sin_family = AF_INET,
				.sin_port = htons((uint16_t)port),
				.sin_addr.s_addr = htonl(INADDR_LOOPBACK)};

	CHECK(uroce_share_path(path, sizeof(path), rundir, (struct sockaddr *)&a) == 0);

	/* Three processes, one group; the file lists them in joining order. */
	struct proc A = spawn('A'), B = spawn('B'), C = spawn('C');

	CHECK(members_are((pid_t[]){A.pid, B.pid, C.pid}, 3));
	show_members("A B C joined");
	struct pair ab = connect_pair(&A, 0, 0, &B, 0, 0);
	struct pair bc = connect_pair(&B, 1, 0, &C, 0, 0);
	struct pair ca = connect_pair(&C, 1, 0, &A, 1, 0);

	for (int round = 0; round < 3; round++) {
		exchange(&ab, 10 + (uint32_t)round * 10);
		exchange(&bc, 11 + (uint32_t)round * 10);
		exchange(&ca, 12 + (uint32_t)round * 10);
	}
	no_strays((struct proc *[]){&A, &B, &C}, 3, "three processes");
	/*
	 * On loopback GRO stays on while the group is shared (src/host/udp.c): each process took
	 * in some of the others' multi-packet GSO sends (a 5000-byte WRITE is five packets) whole.
	 */
	struct proc *abc[] = {&A, &B, &C};

	for (int i = 0; i < 3; i++) {
		struct rep r = call(abc[i], (struct cmd){.op = OP_CNT});

		CHECKF(r.rc == 0 && r.gro > 0, "%c: no GRO datagram received while shared",
		       abc[i]->name);
	}

	/* B (index 1) leaves: C moves from index 2 into index 1. */
	bye(&B);
	CHECK(members_are((pid_t[]){A.pid, C.pid}, 2));
	show_members("B left");
	exchange(&ca, 40);
	no_strays((struct proc *[]){&A, &C}, 2, "after B left");

	/* D joins at index 2 and talks to both. */
	struct proc D = spawn('D');

	CHECK(members_are((pid_t[]){A.pid, C.pid, D.pid}, 3));
	show_members("D joined");
	struct pair ad = connect_pair(&A, 2, 0, &D, 0, 0);
	struct pair cd = connect_pair(&C, 2, 0, &D, 1, 0);

	exchange(&ad, 50);
	exchange(&cd, 51);
	exchange(&ca, 52);
	no_strays((struct proc *[]){&A, &C, &D}, 3, "after D joined");

	/* A (index 0) is killed without leaving: the kernel moves D into index 0, and a
	 * survivor notices (pidfd) and re-attaches the program. */
	kill(A.pid, SIGKILL);
	waitpid(A.pid, NULL, 0);
	close(A.sk);
	CHECKF(wait_members((pid_t[]){D.pid, C.pid}, 2), "survivors did not prune A");
	show_members("A killed");
	exchange(&cd, 60);
	no_strays((struct proc *[]){&C, &D}, 2, "after A was killed");

	/* E opens the device twice: one process, two sockets in the group, two QPN slots. */
	struct proc E = spawn('E');

	CHECK(call(&E, (struct cmd){.op = OP_OPEN, .c = 1}).rc == 0);
	struct uroce_share_member m[8];
	uint64_t gen;

	CHECK(uroce_share_read(path, &gen, m, 8) == 4);
	CHECK(m[2].pid == E.pid && m[3].pid == E.pid && m[2].qpn_lo != m[3].qpn_lo);
	show_members("E opened twice");
	struct pair ee = connect_pair(&E, 0, 0, &E, 1, 1);
	struct pair ec = connect_pair(&E, 2, 1, &C, 3, 0);

	exchange(&ee, 70);
	exchange(&ec, 71);
	exchange(&cd, 72);
	no_strays((struct proc *[]){&C, &D, &E}, 3, "E twice");

	bye(&C);
	bye(&E);
	CHECK(members_are((pid_t[]){D.pid}, 1));
	bye(&D);
	struct stat st;

	CHECKF(stat(path, &st) < 0 && errno == ENOENT, "%s outlives the last member", path);
	/* Every slot was given back. */
	char slots[512], buf[64];

	snprintf(slots, sizeof(slots), "%s/share/slots", rundir);
	int fd = open(slots, O_RDONLY);

	CHECK(fd >= 0 && read(fd, buf, sizeof(buf)) == 0);
	if (fd >= 0)
		close(fd);
}

/* ---- gsi: CM MADs reach the process that claims them ----------------------------------------- */

/*
 * How crafted QP1 MADs are sent: a UDP datagram to (127.0.0.1, port) (RoCE v2), or a RoCE v1
 * frame sent on interface ifindex to its own MAC, which the device's processes take from the
 * kernel as it leaves (afpacket.c's local delivery).
 */
struct mad_tx {
	int fd;
	struct sockaddr_in to;	 /* v2 */
	int ifindex;		 /* v1, else 0 */
	uint8_t mac[6], gid[16]; /* v1: the interface's MAC, the device's IPv4 GID */
};

static int mad_send(const struct mad_tx *t, const uint8_t *pl, bool vlan)
{
	uint8_t f[18 + 40 + GSI_LEN];

	if (!t->ifindex)
		return sendto(t->fd, pl, GSI_LEN, 0, (const struct sockaddr *)&t->to,
			      sizeof(t->to)) == GSI_LEN
			       ? 0
			       : -errno;
	uint32_t len = v1_frame(f, vlan, pl, GSI_LEN), e = vlan ? 18 : 14;
	struct sockaddr_ll ll = {
		.sll_family = AF_PACKET, .sll_ifindex = t->ifindex, .sll_halen = 6};

	memcpy(f, t->mac, 6);
	memcpy(f + 6, t->mac, 6);
	memcpy(f + e + 8, t->gid, 16);	/* source GID */
	memcpy(f + e + 24, t->gid, 16); /* destination GID */
	memcpy(ll.sll_addr, t->mac, 6);
	return sendto(t->fd, f, len, 0, (const struct sockaddr *)&ll, sizeof(ll)) == (ssize_t)len
		       ? 0
		       : -errno;
}

/*
 * Send one MAD and see which of ps[0..n) takes it in (2 s at most): exactly ps[want], nobody
 * else (waiting a little longer so that a duplicate would be seen).
 */
static void mad_expect(const struct mad_tx *t, struct proc **ps, int n, const uint8_t *pl,
		       bool vlan, int want, const char *what)
{
	uint64_t before[8], now[8];
	int got = -1, settle = 0;

	for (int i = 0; i < n; i++)
		before[i] = call(ps[i], (struct cmd){.op = OP_IO}).io_rx;
	int rc = mad_send(t, pl, vlan);

	CHECKF(rc == 0, "%s: send: %s", what, strerror(-rc));
	for (int round = 0; round < 200 && settle < 5; round++) {
		int moved = 0;

		poll(NULL, 0, 10);
		for (int i = 0; i < n; i++) {
			now[i] = call(ps[i], (struct cmd){.op = OP_IO}).io_rx;
			if (now[i] != before[i]) {
				moved++;
				got = i;
			}
		}
		if (moved > 1 || (moved == 1 && now[got] - before[got] > 1)) {
			got = -2;
			break;
		}
		settle += moved == 1;
	}
	CHECKF(got == want, "%s: taken by %c, want %c", what,
	       got == -2 ? '*'
	       : got < 0 ? '-'
			 : ps[got]->name,
	       ps[want]->name);
}

/* The line of pid in the membership file at p: its CM flag and claim count (-1: absent). */
static int claims_of(const char *p, pid_t pid, bool *cm)
{
	static struct uroce_share_member m[UROCE_SHARE_MAX_MEMBERS];
	uint64_t gen;
	int n = uroce_share_read(p, &gen, m, UROCE_SHARE_MAX_MEMBERS);

	for (int i = 0; i < n; i++) {
		if (m[i].pid == pid) {
			*cm = m[i].cm;
			return m[i].nids;
		}
	}
	return -1;
}

/*
 * Three processes on one device: A runs no CM, B claims two services, C one, and joined after
 * B (B is the designated CM). Crafted MADs (bad ICRC: each process counts what reaches it)
 * go where the claims and comm ID slots say; claims conflict and overflow are refused; leaves
 * hand the designated role on. v1: the same through each process's filter, tagged or not.
 */
static void test_gsi_procs(const struct mad_tx *t, const char *file)
{
	struct proc A = spawn('A'), B = spawn('B'), C = spawn('C');
	uint8_t pl[GSI_LEN];
	uint32_t sA, sB, sC;
	bool cm = true;

	sA = call(&A, (struct cmd){.op = OP_IO}).slot;
	sB = call(&B, (struct cmd){.op = OP_IO}).slot;
	sC = call(&C, (struct cmd){.op = OP_IO}).slot;
	CHECK(sA != sB && sB != sC && sA != sC);
	CHECK(call(&B,
		   (struct cmd){.op = OP_STEER, .nids = 2, .ids = {SID_TCP(5002), SID_TCP(5003)}})
		      .rc == 0);
	CHECK(call(&C, (struct cmd){.op = OP_STEER, .nids = 1, .ids = {SID_TCP(7000)}}).rc == 0);
	CHECK(call(&C,
		   (struct cmd){.op = OP_STEER, .nids = 2, .ids = {SID_TCP(7001), SID_TCP(5003)}})
		      .rc == -EADDRINUSE);
	CHECK(call(&C, (struct cmd){.op = OP_STEER, .nids = UROCE_SHARE_MAX_CLAIMS + 1}).rc ==
	      -ENOSPC);
	CHECK(claims_of(file, A.pid, &cm) == 0 && !cm);
	CHECK(claims_of(file, B.pid, &cm) == 2 && cm);
	CHECK(claims_of(file, C.pid, &cm) == 1 && cm); /* the refused calls changed nothing */

	struct proc *all[3] = {&A, &B, &C};

	for (int v = 0; v < (t->ifindex ? 2 : 1); v++) {
		bool vl = v == 1;

		gsi_payload(pl, 0x07, CM_REQ, comm_id(77, 1), 0, SID_TCP(5002));
		mad_expect(t, all, 3, pl, vl, 1, "REQ 5002");
		gsi_payload(pl, 0x07, CM_REQ, comm_id(77, 2), 0, SID_TCP(5003));
		mad_expect(t, all, 3, pl, vl, 1, "REQ 5003");
		gsi_payload(pl, 0x07, CM_REQ, comm_id(77, 3), 0, SID_TCP(7000));
		mad_expect(t, all, 3, pl, vl, 2, "REQ 7000");
		gsi_payload(pl, 0x07, CM_SIDR_REQ, comm_id(77, 4), 0, SID_TCP(7000));
		mad_expect(t, all, 3, pl, vl, 2, "SIDR_REQ 7000");
		gsi_payload(pl, 0x07, CM_REQ, comm_id(77, 5), 0, SID_TCP(7001));
		mad_expect(t, all, 3, pl, vl, 1, "REQ 7001 (unclaimed)");
		gsi_payload(pl, 0x07, CM_REP, comm_id(77, 6), comm_id(sC, 6), 0);
		mad_expect(t, all, 3, pl, vl, 2, "REP to C's comm ID");
		gsi_payload(pl, 0x07, CM_RTU, comm_id(77, 7), comm_id(sB, 7), 0);
		mad_expect(t, all, 3, pl, vl, 1, "RTU to B's comm ID");
		gsi_payload(pl, 0x07, CM_DREQ, comm_id(77, 8), comm_id(sA, 8), 0);
		mad_expect(t, all, 3, pl, vl, 1, "DREQ to A's slot (no CM there)");
		gsi_payload(pl, 0x07, CM_SIDR_REP, comm_id(sC, 9), 0, 0);
		mad_expect(t, all, 3, pl, vl, 2, "SIDR_REP to C's request ID");
		gsi_payload(pl, 0x04, 0x0001, 0, 0, 0);
		mad_expect(t, all, 3, pl, vl, 1, "PerfMgt");
	}
	/* B leaves: C is the only CM, and takes what B's claims named. */
	bye(&B);
	struct proc *ac[2] = {&A, &C};

	CHECK(claims_of(file, C.pid, &cm) == 1 && cm);
	gsi_payload(pl, 0x07, CM_REQ, comm_id(77, 10), 0, SID_TCP(5002));
	mad_expect(t, ac, 2, pl, false, 1, "REQ 5002 after B left");
	gsi_payload(pl, 0x07, CM_DREQ, comm_id(77, 11), comm_id(sB, 11), 0);
	mad_expect(t, ac, 2, pl, false, 1, "DREQ to B's slot after B left");
	/* Claims can be dropped; the CM stays the designated one. */
	CHECK(call(&C, (struct cmd){.op = OP_STEER, .nids = 0}).rc == 0);
	CHECK(claims_of(file, C.pid, &cm) == 0 && cm);
	gsi_payload(pl, 0x07, CM_REQ, comm_id(77, 12), 0, SID_TCP(7000));
	mad_expect(t, ac, 2, pl, false, 1, "REQ 7000 after C dropped its claims");
	/* No CM left: QP1 goes to A as before any claim. */
	bye(&C);
	struct proc *a[1] = {&A};

	gsi_payload(pl, 0x07, CM_REQ, comm_id(77, 13), 0, SID_TCP(7000));
	mad_expect(t, a, 1, pl, false, 0, "REQ with no CM left");
	bye(&A);
}

static void test_gsi_v2(const char *rundir)
{
	unsigned port = net_setup();
	struct mad_tx t = {.fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0),
			   .to = {.sin_family = AF_INET,
				  .sin_port = htons((uint16_t)port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK)}};

	CHECK(t.fd >= 0);
	CHECK(uroce_share_path(path, sizeof(path), rundir, (struct sockaddr *)&t.to) == 0);
	test_gsi_procs(&t, path);
	close(t.fd);
}

/* test_share v1gsi DEV IFNAME (run by v1.sh in its namespace): the same over RoCE v1. */
static int test_gsi_v1(const char *dev, const char *ifname)
{
	struct mad_tx t = {.fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0),
			   .ifindex = (int)if_nametoindex(ifname)};
	struct ifreq ifr = {0};
	char rundir[256];

	w_dev = dev;
	w_gtype = UROCE_GID_V1;
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	CHECK(t.fd >= 0 && t.ifindex > 0 && ioctl(t.fd, SIOCGIFHWADDR, &ifr) == 0);
	memcpy(t.mac, ifr.ifr_hwaddr.sa_data, 6);
	memcpy(t.gid, "\0\0\0\0\0\0\0\0\0\0\xff\xff\xc6\x12\x46\x01", 16); /* 198.18.70.1 */
	CHECK(uroce_rundir_path(rundir, sizeof(rundir)) == 0);
	CHECK(uroce_share_v1_path(path, sizeof(path), rundir, t.ifindex) == 0);
	if (check_failures == 0)
		test_gsi_procs(&t, path);
	close(t.fd);
	return check_exit("v1gsi");
}

/*
 * test_share v1self DEV (run by v1.sh, in its namespace and run-time directory): two RC QPs of
 * ONE process on RoCE v1 device DEV, connected through its IPv4 GID, exchange SENDs both ways.
 * Local delivery takes the frames from the kernel as they leave the interface (afpacket.c); each
 * must arrive exactly once: no duplicate, no loss, nothing for no QP.
 */
static int test_v1self(const char *dev)
{
	struct rep r[2];
	const int iters = 200;

	w_dev = dev;
	w_gtype = UROCE_GID_V1;
	W = calloc(1, sizeof(*W));
	if (!W)
		return 1;
	W->evfd = eventfd(0, EFD_NONBLOCK);
	int rc = w_open(0);

	CHECKF(rc == 0, "open %s: %s", dev, strerror(-rc));
	if (rc)
		return check_exit("v1self");
	CHECK(w_qp(0, 0, &r[0]) == 0);
	CHECK(w_qp(1, 0, &r[1]) == 0);
	CHECK(w_connect(0, r[1].qpn) == 0);
	CHECK(w_connect(1, r[0].qpn) == 0);
	for (int i = 0; i < iters && check_failures == 0; i++) {
		int to = i & 1, from = !to;
		uint32_t len = 64 + (uint32_t)i * 37 % 3000, blen = 0; /* 1 to 3 packets */

		CHECK(w_post(&(struct cmd){.op = OP_RECV, .qp = to, .len = len}) == 0);
		CHECK(w_post(&(struct cmd){
			      .op = OP_SEND, .qp = from, .len = len, .seed = (uint32_t)i}) == 0);
		CHECKF(wait_wc(W->ctx[0], W->q[to].rcq, &blen) == 0, "SEND %d not received", i);
		CHECKF(blen == len && same(W->mem[to] + RX_OFF, len, (uint32_t)i),
		       "SEND %d: %u bytes, %u expected, or other data", i, blen, len);
	}
	/* Nothing more arrives: post a receive and look again after a while. */
	CHECK(w_post(&(struct cmd){.op = OP_RECV, .qp = 0, .len = 64}) == 0);
	uint32_t blen;

	CHECK(wait_wc(W->ctx[0], W->q[0].rcq, &blen) == -ETIMEDOUT);
	struct uroce_ctx *x = W->ctx[0];
	struct uroce_eng *e = uroce_ctx_eng(x);

	uroce_ctx_lock(x);
	uint64_t sent = uroce_eng_counter(e, UROCE_CNT_SENT_PKTS),
		 rcvd = uroce_eng_counter(e, UROCE_CNT_RCVD_PKTS),
		 dup = uroce_eng_counter(e, UROCE_CNT_DUPLICATE_REQUEST),
		 dupr = uroce_eng_counter(e, UROCE_CNT_DROP_DUPLICATE_RESP),
		 noqp = uroce_eng_counter(e, UROCE_CNT_DROP_NO_QP),
		 retr = uroce_eng_counter(e, UROCE_CNT_RETRANSMITTED_PKTS);
	uroce_ctx_unlock(x);
	printf("v1self: sent_pkts %llu rcvd_pkts %llu duplicate_request %llu "
	       "drop_duplicate_resp %llu drop_no_qp %llu retransmitted_pkts %llu\n",
	       (unsigned long long)sent, (unsigned long long)rcvd, (unsigned long long)dup,
	       (unsigned long long)dupr, (unsigned long long)noqp, (unsigned long long)retr);
	CHECKF(sent == rcvd, "sent %llu packets, received %llu", (unsigned long long)sent,
	       (unsigned long long)rcvd);
	CHECK(sent >= (uint64_t)iters * 2);
	CHECK(dup == 0 && dupr == 0 && noqp == 0 && retr == 0);
	for (int k = 0; k < 2; k++) {
		uroce_ctx_lock(x);
		uroce_qp_destroy(W->q[k].qp);
		uroce_ctx_unlock(x);
	}
	uroce_ctx_close(x);
	close(W->evfd);
	free(W);
	return check_exit("v1self");
}

int main(int argc, char **argv)
{
	char tmp[] = "/tmp/uroce-share.XXXXXX";

	if (argc == 3 && strcmp(argv[1], "v1self") == 0)
		return test_v1self(argv[2]);
	if (argc == 4 && strcmp(argv[1], "v1gsi") == 0)
		return test_gsi_v1(argv[2], argv[3]);
	if (argc != 2 || !mkdtemp(tmp)) {
		fprintf(stderr, "usage: test_share unit|procs|gsi|v1self DEV|v1gsi DEV IFNAME\n");
		return 2;
	}
	setenv("UROCE_RUNDIR", tmp, 1);
	if (strcmp(argv[1], "unit") == 0)
		test_unit(tmp);
	else if (strcmp(argv[1], "gsi") == 0)
		test_gsi_v2(tmp);
	else
		test_procs(tmp);
	char cmd[600];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", tmp);
	return check_exit(argv[1]);
}
