/* SPDX-License-Identifier: MIT */
/*
 * Memory windows in the engine, over the simulated link: binding (type 1 and 2), access through
 * a window (WRITE, READ, atomics) within its range and rights only, the bind rules, local and
 * remote invalidation (SEND with Invalidate, checked on the wire), type 2B's QP association,
 * and what deallocating a window or destroying its QP does.
 *
 * Node A owns the region and the windows; node B reaches them with its requests.
 */
#include <errno.h>
#include <string.h>

#include "../check.h"
#include "../wr.h"
#include "../sim/simenv.h"
#include "wire/bytes.h"

#define A     0
#define B     1
#define MRLEN 8192
#define SEC   1000000000ull
#define SIG   UROCE_SEND_SIGNALED
#define MAXMW 4
#define MAXSEEN 64

/* The window most scenarios bind: [WOFF, WOFF + WLEN) of A's region. */
#define WOFF 1024
#define WLEN 2048

#define RW  (UROCE_ACCESS_REMOTE_WRITE | UROCE_ACCESS_REMOTE_READ)
#define LW  UROCE_ACCESS_LOCAL_WRITE
#define BND UROCE_ACCESS_MW_BIND

static const char *cur_test;

/* A frame B sent to A, as the tap saw it: opcode, the IETH, and the raw bytes after the BTH. */
struct seen {
	uint8_t opcode;
	uint32_t ieth;
	uint32_t after_bth; /* the 4 bytes that follow the BTH in the frame, big-endian */
	uint32_t payload_len;
};

struct fx {
	struct simenv s;
	struct simqp_cfg c;
	struct simqp q[2];
	struct simmr m[2];
	struct uroce_mw *mw[MAXMW];
	struct seen seen[MAXSEEN];
	int nseen;
};

/* RoCE v2 over IPv4 in the simulated link: Ethernet 14, IPv4 20, UDP 8, then the BTH. */
#define BTH_AT 42

static void tap(void *arg, const struct sim_pkt_info *pi)
{
	struct fx *f = arg;

	if (pi->src != B || f->nseen == MAXSEEN)
		return;
	struct seen *s = &f->seen[f->nseen++];

	s->opcode = pi->t->bth.opcode;
	s->ieth = pi->t->ieth;
	s->payload_len = pi->t->payload_len;
	CHECK_EQ(pi->frame[BTH_AT], pi->t->bth.opcode);
	if (pi->len >= BTH_AT + UROCE_BTH_LEN + 4)
		s->after_bth = uroce_get_be32(pi->frame + BTH_AT + UROCE_BTH_LEN);
}

static void fx_init(struct fx *f, unsigned a_access)
{
	memset(f, 0, sizeof(*f));
	simqp_cfg_default(&f->c, UROCE_QPT_RC);
	CHECK_EQ(simenv_init(&f->s, 1, 8192, 9000), 0);
	f->s.net.tap = tap;
	f->s.net.tap_arg = f;
	for (int i = 0; i < 2; i++)
		CHECK_EQ(simqp_create(&f->s, i, &f->c, 64, NULL, &f->q[i]), 0);
	CHECK_EQ(simmr_reg(&f->s, A, MRLEN, a_access, &f->m[A]), 0);
	CHECK_EQ(simmr_reg(&f->s, B, MRLEN, LW, &f->m[B]), 0);
	CHECK_EQ(simqp_connect(&f->s, &f->q[A], &f->q[B], &f->c), 0);
}

static void fx_fini(struct fx *f)
{
	CHECKF(simmr_guard_ok(&f->m[A]) && simmr_guard_ok(&f->m[B]), "%s: guard areas", cur_test);
	for (int i = 0; i < MAXMW; i++)
		if (f->mw[i])
			CHECK_EQ(uroce_mw_dealloc(f->mw[i]), 0);
	for (int i = 0; i < 2; i++) {
		simqp_destroy(&f->q[i]);
		simmr_free(&f->m[i]);
	}
	simenv_fini(&f->s);
	CHECK_BAIL();
}

static struct uroce_mw *fx_mw(struct fx *f, int slot, struct uroce_pd *pd, enum uroce_mw_type t)
{
	CHECK_EQ(uroce_mw_alloc(pd, t, &f->mw[slot]), 0);
	return f->mw[slot];
}

static void run(struct fx *f)
{
	CHECKF(sim_run_for(&f->s.net, SEC) == SIM_QUIESCENT, "%s: not quiescent", cur_test);
}

/* Exactly one completion on cq. */
static struct uroce_wc wc1(struct uroce_cq *cq)
{
	struct uroce_wc wc[2];

	memset(wc, 0, sizeof(wc));
	wc[0].status = UROCE_WC_GENERAL_ERR;
	CHECKF(uroce_cq_poll(cq, 2, wc) == 1, "%s: one completion", cur_test);
	return wc[0];
}

static void post(struct uroce_qp *qp, struct uroce_send_wr wr)
{
	struct uroce_send_wr *bad = NULL;

	CHECK_EQ(uroce_post_send(qp, &wr, &bad), 0);
}

/* A binds mw through qp to [off, off + len) of its region; the bind's completion status. The
 * new key byte is the old one plus one, as ibv_inc_rkey makes it. */
static enum uroce_wc_status bind_on(struct fx *f, struct simqp *q, struct uroce_mw *mw,
				    const struct simmr *m, size_t off, uint64_t len, unsigned access)
{
	uint32_t old = uroce_mw_rkey(mw);

	post(q->qp, wr_bind_mw(7, mw, m ? m->mr : NULL, m ? simmr_va(m, off) : 0, len, access,
			       old + 1, SIG));
	run(f);
	struct uroce_wc wc = wc1(q->scq);

	CHECK_EQ(wc.wr_id, 7);
	if (wc.status == UROCE_WC_SUCCESS) {
		CHECK_EQ(wc.opcode, UROCE_WC_BIND_MW);
		CHECK_EQ(uroce_mw_rkey(mw), (old & ~0xFFu) | ((old + 1) & 0xFFu));
	} else {
		CHECK_EQ(uroce_mw_rkey(mw), old);
	}
	return wc.status;
}

static enum uroce_wc_status bind(struct fx *f, struct uroce_mw *mw, uint64_t len, unsigned access)
{
	return bind_on(f, &f->q[A], mw, &f->m[A], WOFF, len, access);
}

/* A's type 2 window in slot 0, bound through A's QP over WLEN bytes of A's region with remote
 * read and write (the bind checked); its R_Key into *key. */
static struct uroce_mw *bound_window(struct fx *f, uint32_t *key)
{
	struct uroce_mw *mw = fx_mw(f, 0, f->s.pd[A], UROCE_MW_TYPE_2);

	CHECK_EQ(bind(f, mw, WLEN, RW), UROCE_WC_SUCCESS);
	*key = uroce_mw_rkey(mw);
	return mw;
}

/* B's request of opcode op (WRITE, READ or FETCH_ADD) of len bytes at raddr under rkey, through
 * B's QP q; its completion status. B's data is at offset 0 of its region (READ: lands at 4096). */
static enum uroce_wc_status b_op(struct fx *f, struct simqp *q, enum uroce_wr_opcode op,
				 uint64_t raddr, uint32_t rkey, uint32_t len)
{
	struct uroce_sge sge;

	if (op == UROCE_WR_RDMA_READ) {
		sge = wr_sge(simmr_va(&f->m[B], 4096), len, f->m[B].lkey);
		post(q->qp, wr_read(9, &sge, 1, raddr, rkey, SIG));
	} else if (op == UROCE_WR_ATOMIC_FETCH_AND_ADD) {
		sge = wr_sge(simmr_va(&f->m[B], 4096), 8, f->m[B].lkey);
		post(q->qp, wr_atomic(op, 9, &sge, raddr, rkey, 5, 0, SIG));
	} else {
		sge = wr_sge(simmr_va(&f->m[B], 0), len, f->m[B].lkey);
		post(q->qp, wr_write(9, &sge, 1, raddr, rkey, SIG));
	}
	run(f);
	return wc1(q->scq).status;
}

static uint64_t win_va(const struct fx *f, size_t off)
{
	return simmr_va(&f->m[A], WOFF + off);
}

/* ---- scenarios ----------------------------------------------------------------------------- */

/* A type 2 window on a region without remote rights: WRITE and READ through it reach the
 * window's bytes; the region's own R_Key and the window's key from before the bind do not. */
static void test_type2_write_read(void)
{
	struct fx f;

	cur_test = __func__;
	fx_init(&f, LW | BND);
	struct uroce_mw *mw = fx_mw(&f, 0, f.s.pd[A], UROCE_MW_TYPE_2);
	uint32_t before = uroce_mw_rkey(mw);

	CHECK(before & 0x80000000u); /* windows' keys and regions' never meet */
	CHECK_EQ(uroce_mw_rkey(mw) >> 8 == f.m[A].rkey >> 8, false);
	CHECK_EQ(bind(&f, mw, WLEN, RW), UROCE_WC_SUCCESS);
	uint32_t key = uroce_mw_rkey(mw);

	sim_pattern(f.m[B].buf, 512, 42);
	f.m[A].buf[WOFF + 99] = 0x5A;
	CHECK_EQ(b_op(&f, &f.q[B], UROCE_WR_RDMA_WRITE, win_va(&f, 100), key, 512),
		 UROCE_WC_SUCCESS);
	CHECK(sim_pattern_ok(f.m[A].buf + WOFF + 100, 512, 42));
	CHECK_EQ(f.m[A].buf[WOFF + 99], 0x5A);
	CHECK_EQ(b_op(&f, &f.q[B], UROCE_WR_RDMA_READ, win_va(&f, 100), key, 512),
		 UROCE_WC_SUCCESS);
	CHECK(sim_pattern_ok(f.m[B].buf + 4096, 512, 42));
	/* The key byte the bind replaced no longer opens the window. */
	CHECK_EQ(b_op(&f, &f.q[B], UROCE_WR_RDMA_WRITE, win_va(&f, 100), before, 8),
		 UROCE_WC_REM_ACCESS_ERR);
	CHECK_EQ(uroce_eng_counter(f.s.eng[A], UROCE_CNT_REM_ACCESS_ERR_SENT), 1);
	fx_fini(&f);
}

/* Each case on a fresh pair: one request by B through a window with the given rights; a remote
 * access error kills the QPs, so one request per case. */
static void test_range_and_rights(void)
{
	static const struct {
		const char *what;
		unsigned rights;
		enum uroce_wr_opcode op;
		int64_t off; /* from the window's start */
		uint32_t len;
		bool region_key;
		enum uroce_wc_status want;
	} cases[] = {
		{"write, whole window", RW, UROCE_WR_RDMA_WRITE, 0, WLEN, false, UROCE_WC_SUCCESS},
		{"write before the window", RW, UROCE_WR_RDMA_WRITE, -8, 16, false,
		 UROCE_WC_REM_ACCESS_ERR},
		{"write past the end", RW, UROCE_WR_RDMA_WRITE, WLEN - 100, 200, false,
		 UROCE_WC_REM_ACCESS_ERR},
		{"read past the end", RW, UROCE_WR_RDMA_READ, WLEN, 1, false,
		 UROCE_WC_REM_ACCESS_ERR},
		{"write, read-only window", UROCE_ACCESS_REMOTE_READ, UROCE_WR_RDMA_WRITE, 0, 64,
		 false, UROCE_WC_REM_ACCESS_ERR},
		{"read, write-only window", UROCE_ACCESS_REMOTE_WRITE, UROCE_WR_RDMA_READ, 0, 64,
		 false, UROCE_WC_REM_ACCESS_ERR},
		{"atomic, no atomic right", RW, UROCE_WR_ATOMIC_FETCH_AND_ADD, 64, 8, false,
		 UROCE_WC_REM_ACCESS_ERR},
		{"atomic, atomic window", UROCE_ACCESS_REMOTE_ATOMIC, UROCE_WR_ATOMIC_FETCH_AND_ADD,
		 64, 8, false, UROCE_WC_SUCCESS},
		{"atomic past the end", UROCE_ACCESS_REMOTE_ATOMIC, UROCE_WR_ATOMIC_FETCH_AND_ADD,
		 WLEN, 8, false, UROCE_WC_REM_ACCESS_ERR},
		{"the region's own key", RW, UROCE_WR_RDMA_WRITE, 0, 64, true,
		 UROCE_WC_REM_ACCESS_ERR},
	};

	cur_test = __func__;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct fx f;

		fx_init(&f, LW | BND);
		struct uroce_mw *mw = fx_mw(&f, 0, f.s.pd[A], UROCE_MW_TYPE_2);

		CHECK_EQ(bind(&f, mw, WLEN, cases[i].rights | LW), UROCE_WC_SUCCESS);
		uint64_t va = (uint64_t)((int64_t)win_va(&f, 0) + cases[i].off);
		uint32_t key = cases[i].region_key ? f.m[A].rkey : uroce_mw_rkey(mw);

		f.m[A].buf[WOFF + 64] = 1;
		CHECKF(b_op(&f, &f.q[B], cases[i].op, va, key, cases[i].len) == cases[i].want,
		       "%s: %s", cur_test, cases[i].what);
		if (cases[i].want == UROCE_WC_SUCCESS &&
		    cases[i].op == UROCE_WR_ATOMIC_FETCH_AND_ADD)
			CHECKF(f.m[A].buf[WOFF + 64] == 6, "%s: %s", cur_test, cases[i].what);
		fx_fini(&f);
	}
}

/* A zero-based type 2 window takes offsets from its start. */
static void test_zero_based(void)
{
	struct fx f;

	cur_test = __func__;
	fx_init(&f, LW | BND);
	struct uroce_mw *mw = fx_mw(&f, 0, f.s.pd[A], UROCE_MW_TYPE_2);

	CHECK_EQ(bind(&f, mw, WLEN, RW | UROCE_ACCESS_ZERO_BASED), UROCE_WC_SUCCESS);
	sim_pattern(f.m[B].buf, 64, 7);
	CHECK_EQ(b_op(&f, &f.q[B], UROCE_WR_RDMA_WRITE, 16, uroce_mw_rkey(mw), 64),
		 UROCE_WC_SUCCESS);
	CHECK(sim_pattern_ok(f.m[A].buf + WOFF + 16, 64, 7));
	CHECK_EQ(b_op(&f, &f.q[B], UROCE_WR_RDMA_WRITE, WLEN - 8, uroce_mw_rkey(mw), 16),
		 UROCE_WC_REM_ACCESS_ERR);
	fx_fini(&f);
}

/* LOCAL_INV frees a type 2 window: its key stops working, its region can go, it binds again. */
static void test_local_invalidate(void)
{
	struct fx f;
	struct simmr m2;

	cur_test = __func__;
	fx_init(&f, LW | BND);
	CHECK_EQ(simmr_reg(&f.s, A, 4096, LW | BND, &m2), 0);
	struct uroce_mw *mw = fx_mw(&f, 0, f.s.pd[A], UROCE_MW_TYPE_2);

	CHECK_EQ(bind_on(&f, &f.q[A], mw, &m2, 0, 4096, RW), UROCE_WC_SUCCESS);
	CHECK_EQ(uroce_mr_dereg(m2.mr), -EBUSY); /* a window is bound to it */
	CHECK_EQ(uroce_pd_free(f.s.pd[A]), -EBUSY);
	uint32_t key = uroce_mw_rkey(mw);

	CHECK_EQ(b_op(&f, &f.q[B], UROCE_WR_RDMA_WRITE, simmr_va(&m2, 0), key, 64),
		 UROCE_WC_SUCCESS);
	post(f.q[A].qp, wr_local_inv(11, key, SIG));
	run(&f);
	struct uroce_wc wc = wc1(f.q[A].scq);

	CHECK_EQ(wc.status, UROCE_WC_SUCCESS);
	CHECK_EQ(wc.opcode, UROCE_WC_LOCAL_INV);
	CHECK_EQ(wc.wr_id, 11);
	CHECK_EQ(uroce_mr_dereg(m2.mr), 0);
	m2.mr = NULL;
	simmr_free(&m2);
	/* Free again: it binds again, to the first region. */
	CHECK_EQ(bind(&f, mw, WLEN, RW), UROCE_WC_SUCCESS);
	CHECK_EQ(b_op(&f, &f.q[B], UROCE_WR_RDMA_WRITE, win_va(&f, 0), uroce_mw_rkey(mw), 64),
		 UROCE_WC_SUCCESS);
	/* Invalidated, the key is refused by the responder. */
	post(f.q[A].qp, wr_local_inv(12, uroce_mw_rkey(mw), 0));
	run(&f);
	CHECK_EQ(b_op(&f, &f.q[B], UROCE_WR_RDMA_WRITE, win_va(&f, 0), uroce_mw_rkey(mw), 64),
		 UROCE_WC_REM_ACCESS_ERR);
	fx_fini(&f);
}

/* What cannot be invalidated locally: a type 1 window, a region's key. Each fails the QP. */
static void test_local_invalidate_refused(void)
{
	cur_test = __func__;
	for (int k = 0; k < 3; k++) {
		struct fx f;

		fx_init(&f, LW | BND);
		struct uroce_mw *mw = fx_mw(&f, 0, f.s.pd[A], k == 0 ? UROCE_MW_TYPE_1
								 : UROCE_MW_TYPE_2);
		uint32_t key = uroce_mw_rkey(mw);

		if (k == 0)
			CHECK_EQ(bind(&f, mw, WLEN, RW), UROCE_WC_SUCCESS);
		if (k == 1)
			key = f.m[A].rkey;
		/* k == 2: a type 2 window that is not bound */
		post(f.q[A].qp, wr_local_inv(13, k == 0 ? uroce_mw_rkey(mw) : key, SIG));
		run(&f);
		struct uroce_wc wc = wc1(f.q[A].scq);

		CHECKF(wc.status == UROCE_WC_LOC_QP_OP_ERR, "%s: case %d", cur_test, k);
		CHECK_EQ(wc.opcode, UROCE_WC_LOCAL_INV);
		CHECK_EQ(uroce_qp_state(f.q[A].qp), UROCE_QPS_ERR);
		fx_fini(&f);
	}
}

/* B's SEND with Invalidate: FIRST, MIDDLE, LAST with Invalidate on the wire, the IETH right
 * after the BTH; A's receive reports the key; the window is closed to B afterwards. */
static void test_remote_invalidate(void)
{
	struct fx f;

	cur_test = __func__;
	fx_init(&f, LW | BND);
	uint32_t key;

	bound_window(&f, &key);
	CHECK_EQ(sim_post_recv1(f.q[A].qp, 21, &f.m[A], 4096, 4096), 0);
	sim_pattern(f.m[B].buf, 3000, 9);
	struct uroce_sge sge = wr_sge(simmr_va(&f.m[B], 0), 3000, f.m[B].lkey);

	f.nseen = 0;
	post(f.q[B].qp, wr_send_inv(22, &sge, 1, key, SIG | UROCE_SEND_SOLICITED));
	run(&f);
	CHECK_EQ(f.nseen, 3);
	CHECK_EQ(f.seen[0].opcode, UROCE_OP_RC_SEND_FIRST);
	CHECK_EQ(f.seen[1].opcode, UROCE_OP_RC_SEND_MIDDLE);
	CHECK_EQ(f.seen[2].opcode, UROCE_OP_RC_SEND_LAST_INV);
	CHECK_EQ(f.seen[2].opcode, 0x16);
	CHECK_EQ(f.seen[2].ieth, key);
	CHECK_EQ(f.seen[2].after_bth, key);
	CHECK_EQ(f.seen[2].payload_len, 3000 - 2048);

	struct uroce_wc wc = wc1(f.q[A].rcq);

	CHECK_EQ(wc.status, UROCE_WC_SUCCESS);
	CHECK_EQ(wc.opcode, UROCE_WC_RECV);
	CHECK_EQ(wc.wr_id, 21);
	CHECK_EQ(wc.byte_len, 3000);
	CHECK(wc.wc_flags & UROCE_WC_WITH_INV);
	CHECK_EQ(wc.wc_flags & UROCE_WC_WITH_IMM, 0);
	CHECK_EQ(wc.invalidated_rkey, key);
	CHECK(sim_pattern_ok(f.m[A].buf + 4096, 3000, 9));
	wc = wc1(f.q[B].scq);
	CHECK_EQ(wc.status, UROCE_WC_SUCCESS);
	CHECK_EQ(wc.opcode, UROCE_WC_SEND);
	CHECK_EQ(b_op(&f, &f.q[B], UROCE_WR_RDMA_WRITE, win_va(&f, 0), key, 8),
		 UROCE_WC_REM_ACCESS_ERR);
	fx_fini(&f);
}

/* A SEND with Invalidate whose key names no window A may invalidate (a type 1 window): one
 * Send Only with Invalidate on the wire; A's receive completes in error, B gets the NAK. */
static void test_remote_invalidate_refused(void)
{
	struct fx f;

	cur_test = __func__;
	fx_init(&f, LW | BND);
	struct uroce_mw *mw = fx_mw(&f, 0, f.s.pd[A], UROCE_MW_TYPE_1);

	CHECK_EQ(bind(&f, mw, WLEN, RW), UROCE_WC_SUCCESS);
	CHECK_EQ(sim_post_recv1(f.q[A].qp, 31, &f.m[A], 4096, 4096), 0);
	f.nseen = 0;
	post(f.q[B].qp, wr_send_inv(32, NULL, 0, uroce_mw_rkey(mw), SIG));
	run(&f);
	CHECK_EQ(f.nseen, 1);
	CHECK_EQ(f.seen[0].opcode, 0x17);
	CHECK_EQ(f.seen[0].after_bth, uroce_mw_rkey(mw));
	struct uroce_wc wc = wc1(f.q[A].rcq);

	CHECK_EQ(wc.status, UROCE_WC_REM_INV_REQ_ERR);
	CHECK_EQ(wc.wc_flags & UROCE_WC_WITH_INV, 0);
	CHECK_EQ(wc1(f.q[B].scq).status, UROCE_WC_REM_INV_REQ_ERR);
	CHECK_EQ(uroce_eng_counter(f.s.eng[A], UROCE_CNT_REM_INV_REQ_SENT), 1);
	fx_fini(&f);
}

/* Type 1: bound and rebound at will, unbound by a bind of length 0. */
static void test_type1(void)
{
	struct fx f;

	cur_test = __func__;
	fx_init(&f, LW | BND);
	struct uroce_mw *mw = fx_mw(&f, 0, f.s.pd[A], UROCE_MW_TYPE_1);

	CHECK_EQ(bind(&f, mw, WLEN, UROCE_ACCESS_REMOTE_WRITE), UROCE_WC_SUCCESS);
	CHECK_EQ(b_op(&f, &f.q[B], UROCE_WR_RDMA_WRITE, win_va(&f, 8), uroce_mw_rkey(mw), 64),
		 UROCE_WC_SUCCESS);
	/* Rebinding a bound type 1 window is allowed (a type 2 window's is not). */
	CHECK_EQ(bind(&f, mw, 128, UROCE_ACCESS_REMOTE_WRITE), UROCE_WC_SUCCESS);
	CHECK_EQ(b_op(&f, &f.q[B], UROCE_WR_RDMA_WRITE, win_va(&f, 64), uroce_mw_rkey(mw), 64),
		 UROCE_WC_SUCCESS);
	/* Unbind. */
	CHECK_EQ(bind_on(&f, &f.q[A], mw, NULL, 0, 0, 0), UROCE_WC_SUCCESS);
	CHECK_EQ(b_op(&f, &f.q[B], UROCE_WR_RDMA_WRITE, win_va(&f, 8), uroce_mw_rkey(mw), 8),
		 UROCE_WC_REM_ACCESS_ERR);
	fx_fini(&f);
}

/* The bind rules (IBTA 10.6.7.2; rxe_check_bind_mw): each broken one completes the bind with
 * MW_BIND_ERR, leaves the window as it was, and fails the QP. */
static void test_bind_rules(void)
{
	enum {
		NO_BIND_RIGHT,	 /* the region lacks MW_BIND */
		PAST_REGION,	 /* the window reaches past the region */
		TYPE2_TWICE,	 /* a bound type 2 window bound again */
		TYPE1_ZB,	 /* a zero-based type 1 window */
		WRITE_NO_LW,	 /* remote write on a region without local write (C10-74) */
		TYPE2_UNBIND,	 /* a type 2 "bind" to nothing */
		TYPE2_OTHER_PD,	 /* a type 2 window of another PD than the QP's */
		UNKNOWN_RIGHT,	 /* MW_BIND is not a window's right */
		NCASES
	};
	cur_test = __func__;
	for (int k = 0; k < NCASES; k++) {
		struct fx f;
		struct uroce_pd *pd2 = NULL;

		fx_init(&f, k == NO_BIND_RIGHT ? LW | RW : k == WRITE_NO_LW ? BND : LW | BND);
		if (k == TYPE2_OTHER_PD)
			CHECK_EQ(uroce_pd_alloc(f.s.eng[A], &pd2), 0);
		struct uroce_mw *mw = fx_mw(&f, 0, pd2 ? pd2 : f.s.pd[A],
					    k == TYPE1_ZB || k == UNKNOWN_RIGHT ? UROCE_MW_TYPE_1
										: UROCE_MW_TYPE_2);
		enum uroce_wc_status st;

		switch (k) {
		case PAST_REGION:
			st = bind_on(&f, &f.q[A], mw, &f.m[A], MRLEN - 64, 128, RW);
			break;
		case TYPE2_TWICE:
			CHECK_EQ(bind(&f, mw, WLEN, RW), UROCE_WC_SUCCESS);
			st = bind(&f, mw, WLEN, RW);
			break;
		case TYPE1_ZB:
			st = bind(&f, mw, WLEN, RW | UROCE_ACCESS_ZERO_BASED);
			break;
		case TYPE2_UNBIND:
			st = bind_on(&f, &f.q[A], mw, NULL, 0, 0, 0);
			break;
		case UNKNOWN_RIGHT:
			st = bind(&f, mw, WLEN, RW | UROCE_ACCESS_MW_BIND);
			break;
		default:
			st = bind(&f, mw, WLEN, RW);
			break;
		}
		CHECKF(st == UROCE_WC_MW_BIND_ERR, "%s: case %d: %s", cur_test, k,
		       sim_wc_status_name(st));
		CHECK_EQ(uroce_qp_state(f.q[A].qp), UROCE_QPS_ERR);
		if (pd2) {
			CHECK_EQ(uroce_pd_free(pd2), -EBUSY);
			CHECK_EQ(uroce_mw_dealloc(mw), 0);
			f.mw[0] = NULL;
			CHECK_EQ(uroce_pd_free(pd2), 0);
		}
		fx_fini(&f);
	}
}

/* What post refuses at once: a BIND_MW without a window or with a length but no region; a SEND
 * with Invalidate on UC (no such opcodes); local operations on UD. UC may bind. */
static void test_post_checks(void)
{
	struct fx f;
	struct uroce_send_wr *bad;

	cur_test = __func__;
	fx_init(&f, LW | BND);
	struct uroce_mw *mw = fx_mw(&f, 0, f.s.pd[A], UROCE_MW_TYPE_2);
	struct uroce_send_wr wr = wr_bind_mw(1, NULL, f.m[A].mr, win_va(&f, 0), 64, RW, 0, SIG);

	CHECK_EQ(uroce_post_send(f.q[A].qp, &wr, &bad), -EINVAL);
	CHECK(bad == &wr);
	wr = wr_bind_mw(1, mw, NULL, 0, 64, RW, 0, SIG);
	CHECK_EQ(uroce_post_send(f.q[A].qp, &wr, &bad), -EINVAL);
	fx_fini(&f);

	struct simqp_cfg uc;
	struct simqp u[2];
	struct simenv s;
	struct simmr m;

	CHECK_EQ(simenv_init(&s, 1, 1024, 9000), 0);
	simqp_cfg_default(&uc, UROCE_QPT_UC);
	for (int i = 0; i < 2; i++)
		CHECK_EQ(simqp_create(&s, i, &uc, 16, NULL, &u[i]), 0);
	CHECK_EQ(simqp_connect(&s, &u[A], &u[B], &uc), 0);
	CHECK_EQ(simmr_reg(&s, A, MRLEN, LW | BND, &m), 0);
	CHECK_EQ(uroce_mw_alloc(s.pd[A], UROCE_MW_TYPE_2, &mw), 0);
	wr = wr_send_inv(2, NULL, 0, uroce_mw_rkey(mw), SIG);
	CHECK_EQ(uroce_post_send(u[A].qp, &wr, &bad), -EINVAL);
	wr = wr_bind_mw(3, mw, m.mr, simmr_va(&m, 0), 64, UROCE_ACCESS_REMOTE_WRITE, 0x55, SIG);
	CHECK_EQ(uroce_post_send(u[A].qp, &wr, &bad), 0);
	CHECK_EQ(sim_run_for(&s.net, SEC), SIM_QUIESCENT);
	struct uroce_wc wc = wc1(u[A].scq);

	CHECK_EQ(wc.status, UROCE_WC_SUCCESS);
	CHECK_EQ(wc.opcode, UROCE_WC_BIND_MW);
	CHECK_EQ(uroce_mw_rkey(mw) & 0xFF, 0x55);
	CHECK_EQ(uroce_mw_dealloc(mw), 0);
	simqp_destroy(&u[A]);
	simqp_destroy(&u[B]);

	struct simqp_cfg ud;
	struct simqp d;

	simqp_cfg_default(&ud, UROCE_QPT_UD);
	CHECK_EQ(simqp_create(&s, A, &ud, 16, NULL, &d), 0);
	CHECK_EQ(simqp_to_init(&d, &ud), 0);
	CHECK_EQ(simqp_to_rtr(&s, &d, B, 0, 0, &ud), 0);
	CHECK_EQ(simqp_to_rts(&d, 0, &ud), 0);
	wr = wr_local_inv(4, 0x80000100u, SIG);
	CHECK_EQ(uroce_post_send(d.qp, &wr, &bad), -EINVAL);
	simqp_destroy(&d);
	simmr_free(&m);
	simenv_fini(&s);
}

/* Type 2B: a window bound through one QP is reached through that QP only, and invalidated only
 * there; destroying the QP frees the window, which then binds through another. */
static void test_qp_association(void)
{
	struct fx f;
	struct simqp q2[2];

	cur_test = __func__;
	fx_init(&f, LW | BND);
	for (int i = 0; i < 2; i++)
		CHECK_EQ(simqp_create(&f.s, i, &f.c, 64, NULL, &q2[i]), 0);
	CHECK_EQ(simqp_connect(&f.s, &q2[A], &q2[B], &f.c), 0);
	uint32_t key;
	struct uroce_mw *mw = bound_window(&f, &key);

	CHECK_EQ(b_op(&f, &f.q[B], UROCE_WR_RDMA_WRITE, win_va(&f, 0), key, 64),
		 UROCE_WC_SUCCESS);
	/* Another QP of the same PD may not invalidate it... */
	post(q2[A].qp, wr_local_inv(41, key, SIG));
	run(&f);
	CHECK_EQ(wc1(q2[A].scq).status, UROCE_WC_LOC_QP_OP_ERR);
	simqp_destroy(&q2[A]);
	simqp_destroy(&q2[B]);
	for (int i = 0; i < 2; i++)
		CHECK_EQ(simqp_create(&f.s, i, &f.c, 64, NULL, &q2[i]), 0);
	CHECK_EQ(simqp_connect(&f.s, &q2[A], &q2[B], &f.c), 0);
	/* ...nor reach it: a request arriving on another QP is refused. */
	CHECK_EQ(b_op(&f, &q2[B], UROCE_WR_RDMA_WRITE, win_va(&f, 0), key, 64),
		 UROCE_WC_REM_ACCESS_ERR);
	simqp_destroy(&q2[A]);
	simqp_destroy(&q2[B]);
	for (int i = 0; i < 2; i++)
		CHECK_EQ(simqp_create(&f.s, i, &f.c, 64, NULL, &q2[i]), 0);
	CHECK_EQ(simqp_connect(&f.s, &q2[A], &q2[B], &f.c), 0);
	/* The QP it was bound through goes: the window is free and binds through q2. */
	simqp_destroy(&f.q[A]);
	CHECK_EQ(bind_on(&f, &q2[A], mw, &f.m[A], WOFF, WLEN, RW), UROCE_WC_SUCCESS);
	CHECK_EQ(b_op(&f, &q2[B], UROCE_WR_RDMA_WRITE, win_va(&f, 0), uroce_mw_rkey(mw), 64),
		 UROCE_WC_SUCCESS);
	simqp_destroy(&q2[A]);
	simqp_destroy(&q2[B]);
	fx_fini(&f);
}

/* Deallocating a bound window closes it at once and releases its region. */
static void test_dealloc_bound(void)
{
	struct fx f;

	cur_test = __func__;
	fx_init(&f, LW | BND);
	uint32_t key;
	struct uroce_mw *mw = bound_window(&f, &key);

	CHECK_EQ(uroce_mr_dereg(f.m[A].mr), -EBUSY);
	CHECK_EQ(uroce_mw_dealloc(mw), 0);
	f.mw[0] = NULL;
	CHECK_EQ(b_op(&f, &f.q[B], UROCE_WR_RDMA_WRITE, win_va(&f, 0), key, 64),
		 UROCE_WC_REM_ACCESS_ERR);
	fx_fini(&f); /* deregisters the region: no window holds it now */
}

int main(void)
{
	test_type2_write_read();
	test_range_and_rights();
	test_zero_based();
	test_local_invalidate();
	test_local_invalidate_refused();
	test_remote_invalidate();
	test_remote_invalidate_refused();
	test_type1();
	test_bind_rules();
	test_post_checks();
	test_qp_association();
	test_dealloc_bound();
	return check_exit("transport_mw");
}
