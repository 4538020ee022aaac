/* SPDX-License-Identifier: MIT */
/*
 * Scripted tests of the transport engine over the simulated link: the QP state machine, every
 * operation, and every reliability path provoked deterministically by link rules (drop / dup the
 * Nth packet of an opcode), checked through completions, memory and counters.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"
#include "../wr.h"
#include "simenv.h"
#include "transport/internal.h" /* UROCE_ACK_ASK_NS, UROCE_MAX_PKT_PER_ACK */
#include "wire/bytes.h"

#define A     0
#define B     1
#define MAXWC 1024
#define MRLEN (256 * 1024)
#define SEC   1000000000ull
#define MS    1000000ull
#define US    1000ull

static const char *cur_test;

/* A two-node fixture with one QP pair, a 256 KiB region on each side, and a step callback that
 * drains the CQs into arrays with the virtual time of each completion. */
struct fx {
	struct simenv s;
	struct simqp_cfg c;
	struct simqp q[2];
	struct simmr m[2];
	bool collect;
	struct uroce_wc swc[2][MAXWC], rwc[2][MAXWC];
	uint64_t st[2][MAXWC], rt[2][MAXWC];
	int ns[2], nr[2];
	int failures_at_start;
};

static void fx_step(void *arg, uint64_t now)
{
	struct fx *f = arg;

	if (!f->collect)
		return;
	for (int i = 0; i < 2; i++) {
		int k;

		if (!f->q[i].qp)
			continue;
		while (f->ns[i] < MAXWC &&
		       (k = uroce_cq_poll(f->q[i].scq, 1, &f->swc[i][f->ns[i]])) > 0)
			f->st[i][f->ns[i]++] = now;
		while (f->nr[i] < MAXWC &&
		       (k = uroce_cq_poll(f->q[i].rcq, 1, &f->rwc[i][f->nr[i]])) > 0)
			f->rt[i][f->nr[i]++] = now;
	}
}

/* UROCE_SIM_TRACE=1 prints every frame entering a link. */
static void trace_tap(void *arg, const struct sim_pkt_info *pi)
{
	const struct uroce_tpkt *t = pi->t;
	const char *name = uroce_opinfo[t->bth.opcode].name;

	(void)arg;
	fprintf(stderr, "  %10llu ns %d->%d %-32s qp %#x psn %u%s", (unsigned long long)pi->now,
		pi->src, pi->dst, name ? name : "?", t->bth.dqpn, t->bth.psn,
		t->bth.ackreq ? " A" : "");
	if (uroce_opinfo[t->bth.opcode].hdrs & UROCE_HDR_AETH)
		fprintf(stderr, " syn %#x msn %u", t->aeth.syndrome, t->aeth.msn);
	if (uroce_opinfo[t->bth.opcode].hdrs & UROCE_HDR_RETH)
		fprintf(stderr, " va %#llx len %u", (unsigned long long)t->reth.va, t->reth.len);
	fprintf(stderr, " payload %u\n", t->payload_len);
}

static void fx_init_cfg(struct fx *f, const struct simqp_cfg *c, unsigned mr_access)
{
	memset(f, 0, sizeof(*f));
	f->c = *c;
	CHECK_EQ(simenv_init(&f->s, 1, 8192, 9000), 0);
	f->s.net.step = fx_step;
	f->s.net.step_arg = f;
	f->collect = true;
	f->failures_at_start = check_failures;
	if (getenv("UROCE_SIM_TRACE"))
		f->s.net.tap = trace_tap;
	for (int i = 0; i < 2; i++) {
		CHECK_EQ(simqp_create(&f->s, i, c, 512, NULL, &f->q[i]), 0);
		CHECK_EQ(simmr_reg(&f->s, i, MRLEN, mr_access, &f->m[i]), 0);
	}
	CHECK_EQ(simqp_connect(&f->s, &f->q[A], &f->q[B], c), 0);
	CHECK_EQ(uroce_qp_state(f->q[A].qp), UROCE_QPS_RTS);
}

static void fx_init(struct fx *f, enum uroce_qp_type t)
{
	struct simqp_cfg c;

	simqp_cfg_default(&c, t);
	fx_init_cfg(f, &c, c.access | UROCE_ACCESS_LOCAL_WRITE);
}

static void fx_fini(struct fx *f)
{
	for (int i = 0; i < 2; i++) {
		CHECKF(simmr_guard_ok(&f->m[i]), "%s: guard of node %d", cur_test, i);
		CHECKF(f->s.net.node[i].tx_malformed == 0, "%s: node %d sent malformed packets",
		       cur_test, i);
		CHECKF(f->s.net.node[i].bad_av == 0, "%s: node %d sent without a route", cur_test,
		       i);
		CHECKF(f->s.net.node[i].bad_sgid == 0, "%s: node %d used another GID index",
		       cur_test, i);
	}
	if (check_failures != f->failures_at_start) {
		/* what the engines counted, to help read the failure */
		for (int i = 0; i < 2; i++) {
			fprintf(stderr, "  %s: node %d counters:", cur_test, i);
			for (int c = 0; c < UROCE_CNT_MAX; c++)
				if (uroce_eng_counter(f->s.eng[i], (enum uroce_counter)c))
					fprintf(stderr, " %s=%llu", uroce_counter_names[c],
						(unsigned long long)uroce_eng_counter(
							f->s.eng[i], (enum uroce_counter)c));
			fputc('\n', stderr);
		}
		sim_stats_print(&f->s.net, stderr);
	}
	for (int i = 0; i < 2; i++) {
		simqp_destroy(&f->q[i]);
		simmr_free(&f->m[i]);
	}
	simenv_fini(&f->s);
	CHECK_BAIL();
}

static uint64_t cnt(struct fx *f, int node, enum uroce_counter c)
{
	return uroce_eng_counter(f->s.eng[node], c);
}

/* Run until quiescent (or the virtual limit), complaining about a stuck engine. */
static enum sim_result fx_run(struct fx *f, uint64_t limit)
{
	enum sim_result r = sim_run_for(&f->s.net, limit);

	CHECKF(r != SIM_STUCK, "%s: simulation stuck: %s", cur_test,
	       f->s.net.stuck_reason ? f->s.net.stuck_reason : "");
	if (r == SIM_STUCK)
		sim_trace_print(&f->s.net, stderr);
	return r;
}

static void fx_run_idle(struct fx *f)
{
	enum sim_result r = fx_run(f, 10 * SEC);

	CHECKF(r == SIM_QUIESCENT, "%s: not quiescent after 10 s: %s", cur_test,
	       sim_result_name(r));
}

static void dump_wc(const char *what, const struct uroce_wc *w)
{
	fprintf(stderr,
		"  %s: wr_id %llu status %s opcode %d len %u imm %#x flags %#x qp %#x src %#x\n",
		what, (unsigned long long)w->wr_id, sim_wc_status_name(w->status), w->opcode,
		w->byte_len, w->imm_data, w->wc_flags, w->qp_num, w->src_qp);
}

static bool wc_is(const struct uroce_wc *w, uint64_t wr_id, enum uroce_wc_status st,
		  enum uroce_wc_opcode op)
{
	bool ok =
		w->wr_id == wr_id && w->status == st && (st != UROCE_WC_SUCCESS || w->opcode == op);

	if (!ok) {
		fprintf(stderr, "  %s: expected wr_id %llu %s opcode %d\n", cur_test,
			(unsigned long long)wr_id, sim_wc_status_name(st), op);
		dump_wc("got", w);
	}
	return ok;
}

/* ================================================================================ */
/* QP state machine                                                                  */

static int modify(struct uroce_qp *qp, enum uroce_qp_state s, unsigned mask,
		  const struct uroce_qp_attr *base)
{
	struct uroce_qp_attr a = *base;

	a.qp_state = s;
	return uroce_qp_modify(qp, &a, mask | UROCE_QP_STATE);
}

static void test_state_machine_rc(enum uroce_qp_type type)
{
	struct simenv s;
	struct simqp_cfg c;
	struct simqp q;
	struct uroce_qp_attr a, qa;
	struct uroce_qp_init qi;
	bool rc = type == UROCE_QPT_RC;
	unsigned init_m = UROCE_QP_PKEY_INDEX | UROCE_QP_PORT | UROCE_QP_ACCESS_FLAGS;
	unsigned rtr_m = UROCE_QP_AV | UROCE_QP_PATH_MTU | UROCE_QP_DEST_QPN | UROCE_QP_RQ_PSN |
			 (rc ? UROCE_QP_MAX_DEST_RD_ATOMIC | UROCE_QP_MIN_RNR_TIMER : 0);
	unsigned rts_m =
		UROCE_QP_SQ_PSN | (rc ? UROCE_QP_TIMEOUT | UROCE_QP_RETRY_CNT | UROCE_QP_RNR_RETRY |
						   UROCE_QP_MAX_QP_RD_ATOMIC
				      : 0);

	cur_test = rc ? "state machine RC" : "state machine UC";
	CHECK_EQ(simenv_init(&s, 1, 64, 0), 0);
	simqp_cfg_default(&c, type);
	CHECK_EQ(simqp_create(&s, A, &c, 64, NULL, &q), 0);
	memset(&a, 0, sizeof(a));
	a.port_num = 1;
	a.qp_access_flags = c.access;
	sim_av(&s.net, A, B, &a.av);
	a.path_mtu = UROCE_MTU_1024;
	a.dest_qp_num = 0x211;
	a.rq_psn = 5;
	a.sq_psn = 7;
	a.max_dest_rd_atomic = 4;
	a.max_rd_atomic = 4;
	a.min_rnr_timer = 3;
	a.timeout = 14;
	a.retry_cnt = 5;
	a.rnr_retry = 6;

	CHECK_EQ(uroce_qp_state(q.qp), UROCE_QPS_RESET);
	/* RESET -> INIT: each required attribute missing, an extra one, illegal targets */
	for (unsigned bit = 1; bit <= UROCE_QP_DEST_QPN; bit <<= 1) {
		if (init_m & bit) {
			CHECK_EQ(modify(q.qp, UROCE_QPS_INIT, init_m & ~bit, &a), -EINVAL);
			CHECK_EQ(uroce_qp_state(q.qp), UROCE_QPS_RESET);
		}
	}
	CHECK_EQ(modify(q.qp, UROCE_QPS_INIT, init_m | UROCE_QP_PATH_MTU, &a), -EINVAL);
	CHECK_EQ(modify(q.qp, UROCE_QPS_INIT, init_m | UROCE_QP_QKEY, &a), -EINVAL);
	CHECK_EQ(modify(q.qp, UROCE_QPS_RTR, init_m | rtr_m, &a), -EINVAL);
	CHECK_EQ(modify(q.qp, UROCE_QPS_RTS, init_m | rtr_m | rts_m, &a), -EINVAL);
	CHECK_EQ(modify(q.qp, UROCE_QPS_SQD, 0, &a), -EINVAL);
	CHECK_EQ(uroce_qp_state(q.qp), UROCE_QPS_RESET);
	CHECK_EQ(modify(q.qp, UROCE_QPS_RESET, 0, &a), 0);
	CHECK_EQ(modify(q.qp, UROCE_QPS_INIT, init_m, &a), 0);
	CHECK_EQ(uroce_qp_state(q.qp), UROCE_QPS_INIT);
	/* INIT -> INIT with optional attributes; INIT -> RTS illegal */
	CHECK_EQ(modify(q.qp, UROCE_QPS_INIT, UROCE_QP_ACCESS_FLAGS, &a), 0);
	CHECK_EQ(modify(q.qp, UROCE_QPS_INIT, UROCE_QP_SQ_PSN, &a), -EINVAL);
	CHECK_EQ(modify(q.qp, UROCE_QPS_RTS, rts_m, &a), -EINVAL);
	CHECK_EQ(uroce_qp_state(q.qp), UROCE_QPS_INIT);
	/* INIT -> RTR */
	for (unsigned bit = 1; bit <= UROCE_QP_DEST_QPN; bit <<= 1) {
		if (rtr_m & bit) {
			CHECKF(modify(q.qp, UROCE_QPS_RTR, rtr_m & ~bit, &a) == -EINVAL,
			       "INIT->RTR without %#x", bit);
			CHECK_EQ(uroce_qp_state(q.qp), UROCE_QPS_INIT);
		}
	}
	CHECK_EQ(modify(q.qp, UROCE_QPS_RTR, rtr_m | UROCE_QP_SQ_PSN, &a), -EINVAL);
	CHECK_EQ(modify(q.qp, UROCE_QPS_RTR, rtr_m | UROCE_QP_TIMEOUT, &a), -EINVAL);
	CHECK_EQ(uroce_qp_state(q.qp), UROCE_QPS_INIT);
	CHECK_EQ(modify(q.qp, UROCE_QPS_RTR, rtr_m, &a), 0);
	CHECK_EQ(uroce_qp_state(q.qp), UROCE_QPS_RTR);
	CHECK_EQ(modify(q.qp, UROCE_QPS_INIT, init_m, &a), -EINVAL); /* RTR -> INIT */
	/* RTR -> RTS */
	for (unsigned bit = 1; bit <= UROCE_QP_DEST_QPN; bit <<= 1) {
		if (rts_m & bit) {
			CHECKF(modify(q.qp, UROCE_QPS_RTS, rts_m & ~bit, &a) == -EINVAL,
			       "RTR->RTS without %#x", bit);
			CHECK_EQ(uroce_qp_state(q.qp), UROCE_QPS_RTR);
		}
	}
	CHECK_EQ(modify(q.qp, UROCE_QPS_RTS, rts_m | UROCE_QP_DEST_QPN, &a), -EINVAL);
	CHECK_EQ(modify(q.qp, UROCE_QPS_RTS, rts_m | UROCE_QP_PATH_MTU, &a), -EINVAL);
	CHECK_EQ(modify(q.qp, UROCE_QPS_RTS, rts_m, &a), 0);
	CHECK_EQ(uroce_qp_state(q.qp), UROCE_QPS_RTS);
	/* query */
	memset(&qa, 0, sizeof(qa));
	CHECK_EQ(uroce_qp_query(q.qp, &qa, &qi), 0);
	CHECK_EQ(qa.qp_state, UROCE_QPS_RTS);
	CHECK(qa.dest_qp_num == 0x211 && qa.path_mtu == UROCE_MTU_1024);
	CHECK(qa.rq_psn == 5 && qa.sq_psn == 7);
	if (rc)
		CHECK(qa.timeout == 14 && qa.retry_cnt == 5 && qa.rnr_retry == 6 &&
		      qa.min_rnr_timer == 3 && qa.max_rd_atomic == 4 && qa.max_dest_rd_atomic == 4);
	CHECK(qi.type == type && qi.send_cq == q.scq && qi.recv_cq == q.rcq);
	/* RTS -> RTS, SQD and back */
	CHECK_EQ(modify(q.qp, UROCE_QPS_RTS, UROCE_QP_ACCESS_FLAGS, &a), 0);
	CHECK_EQ(modify(q.qp, UROCE_QPS_RTS, UROCE_QP_PATH_MTU, &a), -EINVAL);
	CHECK_EQ(modify(q.qp, UROCE_QPS_RTS, UROCE_QP_RQ_PSN, &a), -EINVAL);
	CHECK_EQ(modify(q.qp, UROCE_QPS_INIT, init_m, &a), -EINVAL);
	CHECK_EQ(modify(q.qp, UROCE_QPS_RTR, rtr_m, &a), -EINVAL);
	CHECK_EQ(uroce_qp_state(q.qp), UROCE_QPS_RTS);
	CHECK_EQ(modify(q.qp, UROCE_QPS_SQD, 0, &a), 0);
	CHECK_EQ(uroce_qp_state(q.qp), UROCE_QPS_SQD);
	CHECK_EQ(modify(q.qp, UROCE_QPS_RTS, 0, &a), 0);
	CHECK_EQ(uroce_qp_state(q.qp), UROCE_QPS_RTS);
	/* RTS -> SQE is not a user transition for RC */
	if (rc)
		CHECK_EQ(modify(q.qp, UROCE_QPS_SQE, 0, &a), -EINVAL);
	/* -> ERR: only the state may be given */
	CHECK_EQ(modify(q.qp, UROCE_QPS_ERR, UROCE_QP_SQ_PSN, &a), -EINVAL);
	CHECK_EQ(uroce_qp_state(q.qp), UROCE_QPS_RTS);
	CHECK_EQ(modify(q.qp, UROCE_QPS_ERR, 0, &a), 0);
	CHECK_EQ(uroce_qp_state(q.qp), UROCE_QPS_ERR);
	CHECK_EQ(modify(q.qp, UROCE_QPS_RTS, rts_m, &a), -EINVAL);
	CHECK_EQ(modify(q.qp, UROCE_QPS_INIT, init_m, &a), -EINVAL);
	CHECK_EQ(uroce_qp_state(q.qp), UROCE_QPS_ERR);
	/* -> RESET and around again */
	CHECK_EQ(modify(q.qp, UROCE_QPS_RESET, 0, &a), 0);
	CHECK_EQ(uroce_qp_state(q.qp), UROCE_QPS_RESET);
	CHECK_EQ(modify(q.qp, UROCE_QPS_INIT, init_m, &a), 0);
	CHECK_EQ(modify(q.qp, UROCE_QPS_RTR, rtr_m, &a), 0);
	CHECK_EQ(modify(q.qp, UROCE_QPS_RTS, rts_m, &a), 0);
	CHECK_EQ(uroce_qp_state(q.qp), UROCE_QPS_RTS);
	simqp_destroy(&q);
	simenv_fini(&s);
}

static void test_state_machine_ud(void)
{
	struct simenv s;
	struct simqp_cfg c;
	struct simqp q;
	struct uroce_qp_attr a;
	unsigned init_m = UROCE_QP_PKEY_INDEX | UROCE_QP_PORT | UROCE_QP_QKEY;

	cur_test = "state machine UD";
	CHECK_EQ(simenv_init(&s, 1, 64, 0), 0);
	simqp_cfg_default(&c, UROCE_QPT_UD);
	CHECK_EQ(simqp_create(&s, A, &c, 64, NULL, &q), 0);
	memset(&a, 0, sizeof(a));
	a.port_num = 1;
	a.qkey = 0x1234;
	a.sq_psn = 9;
	CHECK_EQ(modify(q.qp, UROCE_QPS_INIT, init_m & ~(unsigned)UROCE_QP_QKEY, &a), -EINVAL);
	CHECK_EQ(modify(q.qp, UROCE_QPS_INIT, init_m | UROCE_QP_ACCESS_FLAGS, &a), -EINVAL);
	CHECK_EQ(uroce_qp_state(q.qp), UROCE_QPS_RESET);
	CHECK_EQ(modify(q.qp, UROCE_QPS_INIT, init_m, &a), 0);
	CHECK_EQ(modify(q.qp, UROCE_QPS_RTR, UROCE_QP_AV, &a), -EINVAL);
	CHECK_EQ(modify(q.qp, UROCE_QPS_RTR, UROCE_QP_DEST_QPN, &a), -EINVAL);
	CHECK_EQ(modify(q.qp, UROCE_QPS_RTR, 0, &a), 0);
	CHECK_EQ(modify(q.qp, UROCE_QPS_RTS, 0, &a), -EINVAL); /* no SQ_PSN */
	CHECK_EQ(modify(q.qp, UROCE_QPS_RTS, UROCE_QP_SQ_PSN | UROCE_QP_TIMEOUT, &a), -EINVAL);
	CHECK_EQ(uroce_qp_state(q.qp), UROCE_QPS_RTR);
	CHECK_EQ(modify(q.qp, UROCE_QPS_RTS, UROCE_QP_SQ_PSN, &a), 0);
	CHECK_EQ(modify(q.qp, UROCE_QPS_RTS, UROCE_QP_QKEY, &a), 0);
	CHECK_EQ(uroce_qp_state(q.qp), UROCE_QPS_RTS);
	simqp_destroy(&q);
	simenv_fini(&s);
}

/* Moving to ERR flushes everything posted, in order; posting in ERR completes at once. */
static void test_flush(void)
{
	struct fx f;

	cur_test = "flush";
	fx_init(&f, UROCE_QPT_RC);
	f.s.net.cfg[A][B].down = true;
	f.s.net.cfg[B][A].down = true;
	for (int i = 0; i < 3; i++)
		CHECK(sim_post_send1(f.q[A].qp, 10 + (uint64_t)i, UROCE_WR_SEND, &f.m[A], 0, 100,
				     UROCE_SEND_SIGNALED) == 0);
	for (int i = 0; i < 2; i++)
		CHECK_EQ(sim_post_recv1(f.q[A].qp, 20 + (uint64_t)i, &f.m[A], 4096, 100), 0);
	fx_run(&f, 100 * US);
	CHECK(f.ns[A] == 0 && f.nr[A] == 0);
	CHECK_EQ(simqp_to_err(&f.q[A]), 0);
	CHECK_EQ(uroce_qp_state(f.q[A].qp), UROCE_QPS_ERR);
	fx_run(&f, 100 * US);
	CHECK(f.ns[A] == 3 && f.nr[A] == 2);
	for (int i = 0; i < f.ns[A]; i++)
		CHECK(wc_is(&f.swc[A][i], 10 + (uint64_t)i, UROCE_WC_WR_FLUSH_ERR, UROCE_WC_SEND));
	for (int i = 0; i < f.nr[A]; i++) {
		CHECK(wc_is(&f.rwc[A][i], 20 + (uint64_t)i, UROCE_WC_WR_FLUSH_ERR, UROCE_WC_RECV));
		CHECK_EQ(f.rwc[A][i].qp_num, uroce_qp_num(f.q[A].qp));
	}
	/* posting to a QP in ERR completes with a flush error (unsignaled ones too: errors
	 * always complete) */
	CHECK_EQ(sim_post_send1(f.q[A].qp, 30, UROCE_WR_SEND, &f.m[A], 0, 8, 0), 0);
	CHECK_EQ(sim_post_recv1(f.q[A].qp, 31, &f.m[A], 0, 8), 0);
	fx_run(&f, 10 * US);
	CHECK(f.ns[A] == 4 && f.nr[A] == 3);
	if (f.ns[A] == 4)
		CHECK(wc_is(&f.swc[A][3], 30, UROCE_WC_WR_FLUSH_ERR, UROCE_WC_SEND));
	if (f.nr[A] == 3)
		CHECK(wc_is(&f.rwc[A][2], 31, UROCE_WC_WR_FLUSH_ERR, UROCE_WC_RECV));
	fx_fini(&f);
}

/* ================================================================================ */
/* Data operations                                                                   */

/* Post a send of len bytes from m[from] at soff split into nsge pieces, and a receive on the
 * other side into 3 SGEs at roff (with slack). */
static void post_split_send(struct fx *f, int from, uint64_t wr_id, enum uroce_wr_opcode op,
			    size_t soff, uint32_t len, int nsge, size_t roff, uint32_t rslack)
{
	struct uroce_sge sg[8], rg[3];
	struct uroce_send_wr wr, *bad;
	struct uroce_recv_wr rw, *rbad;
	int to = !from;
	uint32_t left = len, total = len + rslack;

	for (int i = 0; i < nsge; i++) {
		uint32_t piece = i == nsge - 1 ? left : len / (uint32_t)nsge;

		/* pieces with gaps between them in the source */
		sg[i] = wr_sge(simmr_va(&f->m[from], soff + (size_t)i * 64 + (len - left)), piece,
			       f->m[from].lkey);
		left -= piece;
	}
	wr = wr_op(op, wr_id, sg, nsge, UROCE_SEND_SIGNALED);
	wr.imm_data = 0xA1B2C3D4u ^ (uint32_t)wr_id;
	for (int i = 0; i < 3; i++) {
		uint32_t piece = i == 2 ? total - 2 * (total / 3) : total / 3;

		rg[i] = wr_sge(simmr_va(&f->m[to], roff + (size_t)i * 32 + (size_t)i * (total / 3)),
			       piece, f->m[to].lkey);
	}
	rw = wr_recv(wr_id + 1000, rg, 3);
	CHECK_EQ(uroce_post_recv(f->q[to].qp, &rw, &rbad), 0);
	CHECK_EQ(uroce_post_send(f->q[from].qp, &wr, &bad), 0);
}

/* Compare the gathered source with the scattered destination of post_split_send. */
static bool split_data_ok(struct fx *f, int from, size_t soff, uint32_t len, int nsge, size_t roff,
			  uint32_t rslack)
{
	uint8_t *src = malloc(len + 1), *dst = malloc(len + 1);
	uint32_t left = len, total = len + rslack, o = 0;
	bool ok;

	for (int i = 0; i < nsge; i++) {
		uint32_t piece = i == nsge - 1 ? left : len / (uint32_t)nsge;

		memcpy(src + (len - left), f->m[from].buf + soff + (size_t)i * 64 + (len - left),
		       piece);
		left -= piece;
	}
	for (int i = 0; i < 3 && o < len; i++) {
		uint32_t piece = i == 2 ? total - 2 * (total / 3) : total / 3;
		uint32_t n = piece < len - o ? piece : len - o;

		memcpy(dst + o, f->m[!from].buf + roff + (size_t)i * 32 + (size_t)i * (total / 3),
		       n);
		o += n;
	}
	ok = !memcmp(src, dst, len);
	free(src);
	free(dst);
	return ok;
}

static void test_send_sizes(enum uroce_qp_type type)
{
	uint32_t mtu = 1024;
	uint32_t sizes[] = {0, 1, mtu - 1, mtu, mtu + 1, 3 * mtu + 5, 65536};
	int ns = (int)(sizeof(sizes) / sizeof(sizes[0]));

	cur_test = type == UROCE_QPT_RC ? "RC send sizes" : "UC send sizes";
	for (int dir = 0; dir < 2; dir++) {
		for (int imm = 0; imm < 2; imm++) {
			struct fx f;
			int from = dir, to = !dir;

			fx_init(&f, type);
			sim_pattern(f.m[from].buf, MRLEN, 77 + (uint64_t)imm);
			for (int i = 0; i < ns; i++) {
				int nsge = sizes[i] < 4 ? (sizes[i] ? 1 : 0) : 1 + i % 4;

				post_split_send(&f, from, (uint64_t)i,
						imm ? UROCE_WR_SEND_WITH_IMM : UROCE_WR_SEND, 0,
						sizes[i], nsge, 0, 7);
				fx_run_idle(&f);
				CHECKF(f.ns[from] == i + 1 && f.nr[to] == i + 1,
				       "%s dir %d imm %d size %u: %d send, %d recv completions",
				       cur_test, dir, imm, sizes[i], f.ns[from], f.nr[to]);
				if (f.ns[from] != i + 1 || f.nr[to] != i + 1)
					break;
				CHECK(wc_is(&f.swc[from][i], (uint64_t)i, UROCE_WC_SUCCESS,
					    UROCE_WC_SEND));
				struct uroce_wc *w = &f.rwc[to][i];

				CHECK(wc_is(w, (uint64_t)i + 1000, UROCE_WC_SUCCESS,
					    UROCE_WC_RECV));
				CHECKF(w->byte_len == sizes[i], "byte_len %u want %u", w->byte_len,
				       sizes[i]);
				CHECK_EQ(w->qp_num, uroce_qp_num(f.q[to].qp));
				if (imm) {
					CHECK(w->wc_flags & UROCE_WC_WITH_IMM);
					CHECK_EQ(w->imm_data, (0xA1B2C3D4u ^ (uint32_t)i));
				} else {
					CHECK(!(w->wc_flags & UROCE_WC_WITH_IMM));
				}
				CHECKF(split_data_ok(&f, from, 0, sizes[i], nsge, 0, 7),
				       "%s: data of size %u dir %d", cur_test, sizes[i], dir);
			}
			CHECK_EQ(cnt(&f, to, UROCE_CNT_DUPLICATE_REQUEST), 0);
			CHECK_EQ(cnt(&f, from, UROCE_CNT_RETRANSMITTED_PKTS), 0);
			CHECK_EQ(cnt(&f, to, UROCE_CNT_OUT_OF_SEQ_REQUEST), 0);
			if (type == UROCE_QPT_RC)
				CHECK_GT(cnt(&f, from, UROCE_CNT_RCVD_ACKS), 0);
			fx_fini(&f);
		}
	}
}

/* A receive too small for the message: the responder reports a local length error
 * (LOC_LEN_ERR) and the requester gets REM_INV_REQ_ERR (IBTA 9.9.3.1.2; rxe does the same). */
static void test_send_too_long(void)
{
	struct fx f;

	cur_test = "send longer than the receive";
	fx_init(&f, UROCE_QPT_RC);
	CHECK_EQ(sim_post_recv1(f.q[B].qp, 1, &f.m[B], 0, 100), 0);
	CHECK(sim_post_send1(f.q[A].qp, 2, UROCE_WR_SEND, &f.m[A], 0, 101, UROCE_SEND_SIGNALED) ==
	      0);
	fx_run_idle(&f);
	CHECK(f.ns[A] == 1 && f.nr[B] == 1);
	if (f.ns[A] == 1)
		CHECK(wc_is(&f.swc[A][0], 2, UROCE_WC_REM_INV_REQ_ERR, UROCE_WC_SEND));
	if (f.nr[B] == 1)
		CHECK(wc_is(&f.rwc[B][0], 1, UROCE_WC_LOC_LEN_ERR, UROCE_WC_RECV));
	CHECK_EQ(cnt(&f, B, UROCE_CNT_REM_INV_REQ_SENT), 1);
	fx_fini(&f);
}

static void test_write(void)
{
	uint32_t sizes[] = {0, 1, 1023, 1024, 1025, 65536};
	struct fx f;

	cur_test = "RDMA WRITE";
	fx_init(&f, UROCE_QPT_RC);
	sim_pattern(f.m[A].buf, MRLEN, 5);
	for (int i = 0; i < 6; i++) {
		size_t roff = 1000 + (size_t)i * 70000 % (MRLEN - 70000);
		uint32_t len = sizes[i];

		sim_pattern(f.m[B].buf, MRLEN, 900 + (uint64_t)i);
		CHECK(sim_post_write(f.q[A].qp, (uint64_t)i, UROCE_WR_RDMA_WRITE, &f.m[A], 3, len,
				     simmr_va(&f.m[B], roff), f.m[B].rkey, UROCE_SEND_SIGNALED,
				     0) == 0);
		fx_run_idle(&f);
		CHECK_EQ(f.ns[A], i + 1);
		if (f.ns[A] == i + 1)
			CHECK(wc_is(&f.swc[A][i], (uint64_t)i, UROCE_WC_SUCCESS,
				    UROCE_WC_RDMA_WRITE));
		CHECKF(!memcmp(f.m[B].buf + roff, f.m[A].buf + 3, len), "write %u data", len);
		/* nothing around it touched */
		uint8_t *ref = malloc(MRLEN);

		sim_pattern(ref, MRLEN, 900 + (uint64_t)i);
		CHECKF(!memcmp(f.m[B].buf, ref, roff) &&
			       !memcmp(f.m[B].buf + roff + len, ref + roff + len,
				       MRLEN - roff - len),
		       "write %u touched memory around the target", len);
		free(ref);
	}
	CHECK_EQ(f.nr[B], 0); /* plain writes consume no receive */
	/* WRITE_WITH_IMM consumes a receive; its byte_len is the write's length */
	CHECK_EQ(sim_post_recv1(f.q[B].qp, 77, &f.m[B], 0, 16), 0);
	CHECK(sim_post_write(f.q[A].qp, 50, UROCE_WR_RDMA_WRITE_WITH_IMM, &f.m[A], 0, 3000,
			     simmr_va(&f.m[B], 100000), f.m[B].rkey, UROCE_SEND_SIGNALED,
			     0xDEADBEEF) == 0);
	fx_run_idle(&f);
	CHECK_EQ(f.nr[B], 1);
	if (f.nr[B] == 1) {
		CHECK(wc_is(&f.rwc[B][0], 77, UROCE_WC_SUCCESS, UROCE_WC_RECV_RDMA_WITH_IMM));
		CHECK_EQ(f.rwc[B][0].imm_data, 0xDEADBEEF);
		CHECK(f.rwc[B][0].wc_flags & UROCE_WC_WITH_IMM);
		CHECK_EQ(f.rwc[B][0].byte_len, 3000);
	}
	CHECK_MEM_EQ(f.m[B].buf + 100000, f.m[A].buf, 3000);
	CHECK_EQ(f.ns[A], 7);
	/* zero-length WRITE_WITH_IMM */
	CHECK_EQ(sim_post_recv1(f.q[B].qp, 78, &f.m[B], 0, 16), 0);
	CHECK(sim_post_write(f.q[A].qp, 51, UROCE_WR_RDMA_WRITE_WITH_IMM, &f.m[A], 0, 0, 0, 0,
			     UROCE_SEND_SIGNALED, 0x1234) == 0);
	fx_run_idle(&f);
	CHECK(f.nr[B] == 2 && f.ns[A] == 8);
	if (f.nr[B] == 2)
		CHECK(wc_is(&f.rwc[B][1], 78, UROCE_WC_SUCCESS, UROCE_WC_RECV_RDMA_WITH_IMM) &&
		      f.rwc[B][1].imm_data == 0x1234 && f.rwc[B][1].byte_len == 0);
	fx_fini(&f);
}

/* A region registered at an IOVA unrelated to its address. */
static void test_write_iova(void)
{
	struct fx f;
	struct simmr z;

	cur_test = "WRITE/READ with an IOVA";
	fx_init(&f, UROCE_QPT_RC);
	CHECK(simmr_reg_iova(f.s.pd[B], 8192, 0x7000000000ull,
			     UROCE_ACCESS_LOCAL_WRITE | UROCE_ACCESS_REMOTE_WRITE |
				     UROCE_ACCESS_REMOTE_READ,
			     &z) == 0);
	sim_pattern(f.m[A].buf, 8192, 3);
	CHECK(sim_post_write(f.q[A].qp, 1, UROCE_WR_RDMA_WRITE, &f.m[A], 0, 5000,
			     0x7000000000ull + 100, z.rkey, UROCE_SEND_SIGNALED, 0) == 0);
	CHECK(sim_post_write(f.q[A].qp, 2, UROCE_WR_RDMA_READ, &f.m[A], 10000, 5000,
			     0x7000000000ull + 100, z.rkey, UROCE_SEND_SIGNALED, 0) == 0);
	fx_run_idle(&f);
	CHECK_EQ(f.ns[A], 2);
	CHECK_MEM_EQ(z.buf + 100, f.m[A].buf, 5000);
	CHECK_MEM_EQ(f.m[A].buf + 10000, f.m[A].buf, 5000);
	CHECK(simmr_guard_ok(&z));
	simmr_free(&z);
	fx_fini(&f);
}

static void test_read(void)
{
	struct fx f;
	uint32_t sizes[] = {0, 1, 1024, 1025, 10000, 65536};
	struct uroce_sge sg[2];
	struct uroce_send_wr wr, *bad;

	cur_test = "RDMA READ";
	fx_init(&f, UROCE_QPT_RC);
	sim_pattern(f.m[B].buf, MRLEN, 11);
	for (int i = 0; i < 6; i++) {
		uint32_t len = sizes[i];

		memset(f.m[A].buf, 0, MRLEN);
		/* two SGEs with a gap */
		sg[0] = wr_sge(simmr_va(&f.m[A], 100), len / 3, f.m[A].lkey);
		sg[1] = wr_sge(simmr_va(&f.m[A], 100 + len / 3 + 50), len - len / 3, f.m[A].lkey);
		wr = wr_read((uint64_t)i, sg, len ? 2 : 0, simmr_va(&f.m[B], 333), f.m[B].rkey,
			     UROCE_SEND_SIGNALED);
		CHECK_EQ(uroce_post_send(f.q[A].qp, &wr, &bad), 0);
		fx_run_idle(&f);
		CHECK_EQ(f.ns[A], i + 1);
		if (f.ns[A] != i + 1)
			break;
		CHECK(wc_is(&f.swc[A][i], (uint64_t)i, UROCE_WC_SUCCESS, UROCE_WC_RDMA_READ));
		CHECKF(f.swc[A][i].byte_len == len, "read byte_len %u want %u",
		       f.swc[A][i].byte_len, len);
		CHECKF(!memcmp(f.m[A].buf + 100, f.m[B].buf + 333, len / 3) &&
			       !memcmp(f.m[A].buf + 100 + len / 3 + 50, f.m[B].buf + 333 + len / 3,
				       len - len / 3),
		       "read %u data", len);
		CHECK(f.m[A].buf[100 + len / 3] == 0 && f.m[A].buf[99] == 0);
	}
	CHECK_EQ(f.nr[B], 0);
	fx_fini(&f);
}

static void test_atomics(void)
{
	struct fx f;
	uint64_t *rem, *loc;

	cur_test = "atomics";
	fx_init(&f, UROCE_QPT_RC);
	rem = (uint64_t *)(void *)(f.m[B].buf + 4096);
	loc = (uint64_t *)(void *)(f.m[A].buf + 64);
	rem[0] = 1000;
	rem[1] = 0x1122334455667788ull;
	CHECK(sim_post_atomic(f.q[A].qp, 1, UROCE_WR_ATOMIC_FETCH_AND_ADD, &f.m[A], 64,
			      simmr_va(&f.m[B], 4096), f.m[B].rkey, 5, 0,
			      UROCE_SEND_SIGNALED) == 0);
	CHECK(sim_post_atomic(f.q[A].qp, 2, UROCE_WR_ATOMIC_FETCH_AND_ADD, &f.m[A], 72,
			      simmr_va(&f.m[B], 4096), f.m[B].rkey, UINT64_MAX, 0,
			      UROCE_SEND_SIGNALED) == 0);
	/* compare fails */
	CHECK(sim_post_atomic(f.q[A].qp, 3, UROCE_WR_ATOMIC_CMP_AND_SWP, &f.m[A], 80,
			      simmr_va(&f.m[B], 4096 + 8), f.m[B].rkey, 1, 2,
			      UROCE_SEND_SIGNALED) == 0);
	/* compare succeeds */
	CHECK(sim_post_atomic(f.q[A].qp, 4, UROCE_WR_ATOMIC_CMP_AND_SWP, &f.m[A], 88,
			      simmr_va(&f.m[B], 4096 + 8), f.m[B].rkey, 0x1122334455667788ull,
			      0xCAFEF00DDEADBEEFull, UROCE_SEND_SIGNALED) == 0);
	fx_run_idle(&f);
	CHECK_EQ(f.ns[A], 4);
	for (int i = 0; i < f.ns[A]; i++)
		CHECK(wc_is(&f.swc[A][i], (uint64_t)i + 1, UROCE_WC_SUCCESS,
			    i < 2 ? UROCE_WC_FETCH_ADD : UROCE_WC_COMP_SWAP));
	for (int i = 0; i < f.ns[A]; i++)
		CHECK_EQ(f.swc[A][i].byte_len, 8);
	CHECK_EQ(loc[0], 1000);
	CHECK_EQ(loc[1], 1005);
	CHECK_EQ(rem[0], 1004);
	CHECK_EQ(loc[2], 0x1122334455667788ull);
	CHECK_EQ(loc[3], 0x1122334455667788ull);
	CHECK_EQ(rem[1], 0xCAFEF00DDEADBEEFull);
	/* misaligned atomic: refused at post time, or an invalid request NAK (either is fine) */
	int prc = sim_post_atomic(f.q[A].qp, 9, UROCE_WR_ATOMIC_FETCH_AND_ADD, &f.m[A], 64,
				  simmr_va(&f.m[B], 4100), f.m[B].rkey, 1, 0, UROCE_SEND_SIGNALED);

	CHECK(prc == 0 || prc == -EINVAL);
	fx_run_idle(&f);
	if (prc == 0) {
		CHECK_EQ(f.ns[A], 5);
		if (f.ns[A] == 5)
			CHECKF(f.swc[A][4].status == UROCE_WC_REM_INV_REQ_ERR,
			       "misaligned atomic: %s", sim_wc_status_name(f.swc[A][4].status));
	}
	CHECK_EQ(rem[0], 1004);
	fx_fini(&f);
}

static void test_inline(void)
{
	struct fx f;
	uint8_t data[200];
	struct uroce_sge sg[2];
	struct uroce_send_wr wr, *bad;

	cur_test = "inline";
	fx_init(&f, UROCE_QPT_RC);
	sim_pattern(data, sizeof(data), 8);
	CHECK_EQ(sim_post_recv1(f.q[B].qp, 1, &f.m[B], 0, 1000), 0);
	CHECK_EQ(sim_post_recv1(f.q[B].qp, 2, &f.m[B], 1000, 1000), 0);
	/* inline data needs no lkey */
	sg[0] = wr_sge((uint64_t)(uintptr_t)data, 50, 0);
	sg[1] = wr_sge((uint64_t)(uintptr_t)(data + 60), 78, 0);
	wr = wr_send(5, sg, 2, UROCE_SEND_INLINE | UROCE_SEND_SIGNALED);
	CHECK_EQ(uroce_post_send(f.q[A].qp, &wr, &bad), 0);
	memset(data, 0, sizeof(data)); /* the data was copied at post time */
	fx_run_idle(&f);
	sim_pattern(data, sizeof(data), 8);
	CHECK(f.nr[B] == 1 && f.ns[A] == 1);
	if (f.nr[B] == 1)
		CHECK_EQ(f.rwc[B][0].byte_len, 128);
	CHECK(!memcmp(f.m[B].buf, data, 50) && !memcmp(f.m[B].buf + 50, data + 60, 78));
	/* inline RDMA WRITE */
	wr.opcode = UROCE_WR_RDMA_WRITE;
	wr.wr.rdma.remote_addr = simmr_va(&f.m[B], 5000);
	wr.wr.rdma.rkey = f.m[B].rkey;
	wr.num_sge = 1;
	sg[0].length = 128;
	CHECK_EQ(uroce_post_send(f.q[A].qp, &wr, &bad), 0);
	fx_run_idle(&f);
	CHECK_MEM_EQ(f.m[B].buf + 5000, data, 128);
	/* too long for max_inline_data (128) */
	sg[0].length = 129;
	bad = NULL;
	CHECK_EQ(uroce_post_send(f.q[A].qp, &wr, &bad), -EINVAL);
	CHECK(bad == &wr);
	fx_fini(&f);
}

static void test_unsignaled(void)
{
	struct fx f;

	cur_test = "unsignaled";
	fx_init(&f, UROCE_QPT_RC);
	for (int i = 0; i < 5; i++)
		CHECK_EQ(sim_post_recv1(f.q[B].qp, 100 + (uint64_t)i, &f.m[B], 0, 4096), 0);
	for (int i = 0; i < 5; i++)
		CHECK(sim_post_send1(f.q[A].qp, (uint64_t)i, UROCE_WR_SEND, &f.m[A], 0, 3000,
				     i == 4 ? UROCE_SEND_SIGNALED : 0) == 0);
	CHECK(sim_post_write(f.q[A].qp, 9, UROCE_WR_RDMA_WRITE, &f.m[A], 0, 10,
			     simmr_va(&f.m[B], 0), f.m[B].rkey, 0, 0) == 0);
	fx_run_idle(&f);
	CHECK_EQ(f.nr[B], 5); /* receives always complete */
	CHECK_EQ(f.ns[A], 1);
	if (f.ns[A] >= 1)
		CHECK(wc_is(&f.swc[A][0], 4, UROCE_WC_SUCCESS, UROCE_WC_SEND));
	/* the send queue slots of unsignaled WRs are reused: post more than the queue holds */
	for (int round = 0; round < 3; round++) {
		for (int i = 0; i < 200; i++)
			CHECK(sim_post_write(f.q[A].qp, 1000 + (uint64_t)i, UROCE_WR_RDMA_WRITE,
					     &f.m[A], 0, 8, simmr_va(&f.m[B], 0), f.m[B].rkey,
					     i == 199 ? UROCE_SEND_SIGNALED : 0, 0) == 0);
		fx_run_idle(&f);
	}
	CHECK_EQ(f.ns[A], 4);
	/* an unsignaled WR that fails completes anyway */
	CHECK(sim_post_write(f.q[A].qp, 66, UROCE_WR_RDMA_WRITE, &f.m[A], 0, 8,
			     simmr_va(&f.m[B], 0), f.m[B].rkey + 1, 0, 0) == 0);
	fx_run_idle(&f);
	CHECK_EQ(f.ns[A], 5);
	if (f.ns[A] == 5)
		CHECK(wc_is(&f.swc[A][4], 66, UROCE_WC_REM_ACCESS_ERR, UROCE_WC_RDMA_WRITE));
	fx_fini(&f);
}

/* What the AckReq test counts: the requests node A sends, those of them that ask for an ACK,
 * and the ACKs node B sends. */
struct ack_tally {
	unsigned requests, asked, acks;
};

static void tally_tap(void *arg, const struct sim_pkt_info *pi)
{
	struct ack_tally *t = arg;
	unsigned flags = uroce_opinfo[pi->t->bth.opcode].flags;

	if (pi->src == A && !(flags & UROCE_OPF_RESP)) {
		t->requests++;
		t->asked += pi->t->bth.ackreq;
	}
	if (pi->src == B && pi->t->bth.opcode == UROCE_OP_RC_ACK)
		t->acks++;
}

/*
 * A requester asks for an ACK (AckReq) only where it needs one: a ping-pong of unsignaled SENDs
 * costs one packet per message, no ACK; what is left unasked is asked for UROCE_ACK_ASK_NS
 * later (the last packet again, with AckReq, not counted as a retry) so that the WQEs retire; a
 * signaled WQE asks at once, and so does the WQE that fills half the send queue.
 */
static void test_ack_requests(void)
{
	struct fx f;
	struct ack_tally t = {0};

	cur_test = "ack_requests";
	fx_init(&f, UROCE_QPT_RC);
	f.s.net.tap = tally_tap;
	f.s.net.tap_arg = &t;
	for (int i = 0; i < 10; i++)
		CHECK_EQ(sim_post_recv1(f.q[B].qp, 100 + (uint64_t)i, &f.m[B], 0, 4096), 0);
	/* Ten unsignaled SENDs of two packets each, one at a time, each received within 5 us. */
	for (int i = 0; i < 10; i++) {
		CHECK(sim_post_send1(f.q[A].qp, (uint64_t)i, UROCE_WR_SEND, &f.m[A], 0, 2000, 0) ==
		      0);
		fx_run(&f, 5 * US);
		CHECK_EQ(f.nr[B], i + 1);
	}
	CHECK_EQ(t.requests, 20u);
	CHECK_EQ(t.asked, 0u);
	CHECK_EQ(t.acks, 0u);
	/* Left alone, the last packet goes again with AckReq after UROCE_ACK_ASK_NS: one ACK
	 * retires the ten WQEs; the receiver took no duplicate as a new message. */
	fx_run_idle(&f);
	CHECK_EQ(t.requests, 21u);
	CHECK_EQ(t.asked, 1u);
	CHECK_EQ(t.acks, 1u);
	CHECK_EQ(f.nr[B], 10);
	CHECK_EQ(f.ns[A], 0);
	CHECK_EQ(cnt(&f, A, UROCE_CNT_LOCAL_ACK_TIMEOUT_ERR), 0u);
	/* A signaled SEND asks at once: its completion comes a round trip later. */
	CHECK_EQ(sim_post_recv1(f.q[B].qp, 200, &f.m[B], 0, 4096), 0);
	uint64_t t0 = f.s.net.now;

	CHECK(sim_post_send1(f.q[A].qp, 50, UROCE_WR_SEND, &f.m[A], 0, 100,
			     UROCE_SEND_SIGNALED) == 0);
	fx_run_idle(&f);
	CHECK_EQ(f.ns[A], 1);
	if (f.ns[A] == 1) {
		CHECK(wc_is(&f.swc[A][0], 50, UROCE_WC_SUCCESS, UROCE_WC_SEND));
		CHECK(f.st[A][0] - t0 < UROCE_ACK_ASK_NS / 10);
	}
	CHECK_EQ(t.asked, 2u);
	CHECK_EQ(t.acks, 2u);
	/* Unsignaled WRITEs of one packet posted in one go: every UROCE_MAX_PKT_PER_ACK-th asks
	 * (before the 128th, half the 256-entry send queue, would), and the last after a while. */
	for (int i = 0; i < 200; i++)
		CHECK(sim_post_write(f.q[A].qp, 1000 + (uint64_t)i, UROCE_WR_RDMA_WRITE, &f.m[A], 0,
				     8, simmr_va(&f.m[B], 0), f.m[B].rkey, 0, 0) == 0);
	fx_run_idle(&f);
	CHECK_EQ(t.asked, 2u + 200 / UROCE_MAX_PKT_PER_ACK + 1);
	CHECK_EQ(f.ns[A], 1);
	fx_fini(&f);

	/* A send queue of 8: every 4th unsignaled WRITE asks, so a full queue retires in a round
	 * trip and the next 8 can be posted at once. */
	struct simqp_cfg c;

	simqp_cfg_default(&c, UROCE_QPT_RC);
	c.cap.max_send_wr = 8;
	fx_init_cfg(&f, &c, c.access | UROCE_ACCESS_LOCAL_WRITE);
	t = (struct ack_tally){0};
	f.s.net.tap = tally_tap;
	f.s.net.tap_arg = &t;
	for (int round = 0; round < 2; round++) {
		for (int i = 0; i < 8; i++)
			CHECK(sim_post_write(f.q[A].qp, (uint64_t)i, UROCE_WR_RDMA_WRITE, &f.m[A], 0,
					     8, simmr_va(&f.m[B], 0), f.m[B].rkey, 0, 0) == 0);
		fx_run(&f, 20 * US);
		CHECK_EQ(t.asked, 2u * (round + 1));
	}
	fx_run_idle(&f);
	CHECK_EQ(f.ns[A], 0);
	fx_fini(&f);
}

/* ---- UD -------------------------------------------------------------------------------- */

static void test_ud(void)
{
	struct fx f;
	struct uroce_ah *ah;
	struct uroce_av av;
	struct uroce_sge sge;
	struct uroce_send_wr wr, *bad;
	uint32_t sizes[] = {0, 1, 100, 1024};

	cur_test = "UD";
	fx_init(&f, UROCE_QPT_UD);
	sim_av(&f.s.net, A, B, &av);
	CHECK_EQ(uroce_ah_create(f.s.pd[A], &av, &ah), 0);
	sim_pattern(f.m[A].buf, MRLEN, 12);
	for (int i = 0; i < 4; i++) {
		memset(f.m[B].buf, 0, 4096);
		CHECK_EQ(sim_post_recv1(f.q[B].qp, 100 + (uint64_t)i, &f.m[B], 0, 40 + 1024), 0);
		sge = wr_sge(simmr_va(&f.m[A], 17), sizes[i], f.m[A].lkey);
		wr = wr_ud_send((uint64_t)i, &sge, 1, ah, uroce_qp_num(f.q[B].qp), f.c.qkey,
				UROCE_SEND_SIGNALED);
		wr.opcode = i & 1 ? UROCE_WR_SEND_WITH_IMM : UROCE_WR_SEND;
		wr.imm_data = 0x55AA0000u + (uint32_t)i;
		CHECK_EQ(uroce_post_send(f.q[A].qp, &wr, &bad), 0);
		fx_run_idle(&f);
		CHECK(f.ns[A] == i + 1 && f.nr[B] == i + 1);
		if (f.nr[B] != i + 1)
			break;
		struct uroce_wc *w = &f.rwc[B][i];
		const uint8_t *grh = f.m[B].buf;

		CHECK(wc_is(w, 100 + (uint64_t)i, UROCE_WC_SUCCESS, UROCE_WC_RECV));
		CHECKF(w->byte_len == 40 + sizes[i], "UD byte_len %u", w->byte_len);
		CHECK(w->wc_flags & UROCE_WC_GRH);
		CHECK_EQ(w->src_qp, uroce_qp_num(f.q[A].qp));
		CHECK_EQ(w->qp_num, uroce_qp_num(f.q[B].qp));
		if (i & 1)
			CHECK((w->wc_flags & UROCE_WC_WITH_IMM) &&
			      w->imm_data == 0x55AA0000u + (uint32_t)i);
		/* the GRH slot: IPv4 header in the last 20 bytes (roce-reference 1.1) */
		CHECK_EQ(grh[20], 0x45);
		CHECK_EQ(grh[29], 17);
		CHECK_EQ(uroce_ipv4_csum(grh + 20), uroce_get_be16(grh + 30));
		CHECK_MEM_EQ(grh + 32, f.s.net.node[A].ip, 4);
		CHECK_MEM_EQ(grh + 36, f.s.net.node[B].ip, 4);
		CHECK(uroce_get_be16(grh + 22) ==
		      20 + 8 + 12 + 8 + (i & 1 ? 4 : 0) + sizes[i] + ((4 - sizes[i] % 4) % 4) + 4);
		CHECKF(!memcmp(f.m[B].buf + 40, f.m[A].buf + 17, sizes[i]), "UD data %u", sizes[i]);
	}
	/* Q_Key mismatch: dropped and counted, the receive stays posted */
	uint64_t qk0 = cnt(&f, B, UROCE_CNT_DROP_BAD_QKEY);

	CHECK_EQ(sim_post_recv1(f.q[B].qp, 200, &f.m[B], 0, 40 + 1024), 0);
	wr.wr_id = 50;
	wr.wr.ud.remote_qkey = f.c.qkey ^ 1;
	wr.opcode = UROCE_WR_SEND;
	CHECK_EQ(uroce_post_send(f.q[A].qp, &wr, &bad), 0);
	fx_run_idle(&f);
	CHECK_EQ(cnt(&f, B, UROCE_CNT_DROP_BAD_QKEY), qk0 + 1);
	CHECK_EQ(f.nr[B], 4);
	CHECK_EQ(f.ns[A], 5); /* UD sends complete locally */
	/* a good one lands in the receive still posted */
	wr.wr_id = 51;
	wr.wr.ud.remote_qkey = f.c.qkey;
	CHECK_EQ(uroce_post_send(f.q[A].qp, &wr, &bad), 0);
	fx_run_idle(&f);
	CHECK_EQ(f.nr[B], 5);
	if (f.nr[B] == 5)
		CHECK(f.rwc[B][4].wr_id == 200 && f.rwc[B][4].status == UROCE_WC_SUCCESS);
	/* no receive posted: UD drops silently (no RNR), the sender still completes */
	wr.wr_id = 52;
	CHECK_EQ(uroce_post_send(f.q[A].qp, &wr, &bad), 0);
	fx_run_idle(&f);
	CHECK(f.nr[B] == 5 && f.ns[A] == 7);
	/* RC-only operations are refused on UD */
	wr.opcode = UROCE_WR_RDMA_WRITE;
	CHECK_EQ(uroce_post_send(f.q[A].qp, &wr, &bad), -EINVAL);
	/* an RC opcode sent to a UD QP: wrong transport class, dropped and counted */
	{
		struct uroce_tpkt t;
		uint8_t hdr[UROCE_TX_HDR_MAX], pl[8] = {0};
		uint64_t bad0 = cnt(&f, B, UROCE_CNT_DROP_BAD_OPCODE);
		int hl;

		CHECK_EQ(sim_post_recv1(f.q[B].qp, 300, &f.m[B], 0, 40 + 1024), 0);
		memset(&t, 0, sizeof(t));
		t.bth.opcode = UROCE_OP_RC_SEND_ONLY;
		t.bth.pkey = 0xFFFF;
		t.bth.dqpn = uroce_qp_num(f.q[B].qp);
		t.payload_len = 8;
		hl = uroce_tpkt_hdr_encode(hdr, sizeof(hdr), &t);
		CHECK(sim_send(&f.s.net, A, &av, hdr, (uint32_t)hl, pl, 8, 0,
			       uroce_qp_num(f.q[A].qp), t.bth.dqpn) == 0);
		fx_run_idle(&f);
		CHECK_EQ(cnt(&f, B, UROCE_CNT_DROP_BAD_OPCODE), bad0 + 1);
		CHECK_EQ(f.nr[B], 5);
		CHECK_EQ(f.s.net.node[B].rx_err[2], 1); /* -EPROTO */
	}
	uroce_ah_destroy(ah);
	fx_fini(&f);
}

/* ---- UC -------------------------------------------------------------------------------- */

static void test_uc(void)
{
	struct fx f;

	cur_test = "UC";
	fx_init(&f, UROCE_QPT_UC);
	sim_pattern(f.m[A].buf, MRLEN, 21);
	/* a write spanning packets */
	CHECK(sim_post_write(f.q[A].qp, 1, UROCE_WR_RDMA_WRITE, &f.m[A], 0, 5000,
			     simmr_va(&f.m[B], 10), f.m[B].rkey, UROCE_SEND_SIGNALED, 0) == 0);
	fx_run_idle(&f);
	CHECK(f.ns[A] == 1 && !memcmp(f.m[B].buf + 10, f.m[A].buf, 5000));
	/* a lost middle packet loses the whole message; the receive stays for the next one */
	CHECK_EQ(sim_post_recv1(f.q[B].qp, 10, &f.m[B], 20000, 8000), 0);
	sim_rule_nth(&f.s.net, A, UROCE_OP_UC_SEND_MIDDLE, 1, SIM_DROP);
	CHECK(sim_post_send1(f.q[A].qp, 2, UROCE_WR_SEND, &f.m[A], 100, 4000,
			     UROCE_SEND_SIGNALED) == 0);
	fx_run_idle(&f);
	CHECK_EQ(f.ns[A], 2); /* UC completes at the sender regardless */
	CHECK_EQ(f.nr[B], 0);
	CHECK_GT(cnt(&f, B, UROCE_CNT_DROP_UC_SEQ), 0);
	CHECK(sim_post_send1(f.q[A].qp, 3, UROCE_WR_SEND_WITH_IMM, &f.m[A], 200, 3000,
			     UROCE_SEND_SIGNALED) == 0);
	fx_run_idle(&f);
	CHECK_EQ(f.nr[B], 1);
	if (f.nr[B] == 1) {
		CHECK(wc_is(&f.rwc[B][0], 10, UROCE_WC_SUCCESS, UROCE_WC_RECV));
		CHECK_EQ(f.rwc[B][0].byte_len, 3000);
	}
	CHECK_MEM_EQ(f.m[B].buf + 20000, f.m[A].buf + 200, 3000);
	/* reads and atomics are not UC operations */
	CHECK(sim_post_write(f.q[A].qp, 4, UROCE_WR_RDMA_READ, &f.m[A], 0, 8, simmr_va(&f.m[B], 0),
			     f.m[B].rkey, 0, 0) == -EINVAL);
	CHECK(sim_post_atomic(f.q[A].qp, 5, UROCE_WR_ATOMIC_FETCH_AND_ADD, &f.m[A], 0,
			      simmr_va(&f.m[B], 0), f.m[B].rkey, 1, 0, 0) == -EINVAL);
	fx_fini(&f);
}

/* ---- SRQ ------------------------------------------------------------------------------- */

static void test_srq(void)
{
	struct simenv s;
	struct simqp_cfg c;
	struct simqp a[2], b[2];
	struct uroce_srq *srq;
	struct uroce_srq_attr sa = {.max_wr = 16, .max_sge = 2, .srq_limit = 0};
	struct simmr ma, mb;
	struct sim_evtally ev;
	struct uroce_wc wc[32];
	struct uroce_recv_wr rw, *bad;
	struct uroce_sge sge;

	cur_test = "SRQ";
	CHECK_EQ(simenv_init(&s, 1, 1024, 0), 0);
	simqp_cfg_default(&c, UROCE_QPT_RC);
	CHECK_EQ(uroce_srq_create(s.pd[B], &sa, &s, &srq), 0);
	for (int i = 0; i < 2; i++) {
		CHECK_EQ(simqp_create(&s, A, &c, 64, NULL, &a[i]), 0);
		CHECK_EQ(simqp_create(&s, B, &c, 64, srq, &b[i]), 0);
		CHECK_EQ(simqp_connect(&s, &a[i], &b[i], &c), 0);
	}
	CHECK_EQ(simmr_reg(&s, A, 65536, c.access, &ma), 0);
	CHECK_EQ(simmr_reg(&s, B, 65536, c.access, &mb), 0);
	sim_pattern(ma.buf, 65536, 4);
	for (int i = 0; i < 10; i++) {
		sge = wr_sge(simmr_va(&mb, (size_t)i * 2048), 2048, mb.lkey);
		rw = wr_recv(500 + (uint64_t)i, &sge, 1);
		CHECK_EQ(uroce_post_srq_recv(srq, &rw, &bad), 0);
	}
	/* posting to the QP's own receive queue is refused when it uses an SRQ */
	CHECK_EQ(sim_post_recv1(b[0].qp, 1, &mb, 0, 8), -EINVAL);
	sa.srq_limit = 8;
	CHECK_EQ(uroce_srq_modify(srq, &sa, UROCE_SRQ_LIMIT), 0);
	CHECK_EQ(uroce_srq_modify(srq, &sa, UROCE_SRQ_MAX_WR), -EOPNOTSUPP);
	memset(&ev, 0, sizeof(ev));
	sim_events_take(s.eng[B], &ev);
	CHECK_EQ(ev.n[UROCE_EVENT_SRQ_LIMIT_REACHED], 0);
	/* two messages on each QP: 10 -> 6 receives left, below the limit of 8 */
	for (int i = 0; i < 4; i++)
		CHECK(sim_post_send1(a[i & 1].qp, (uint64_t)i, UROCE_WR_SEND, &ma, (size_t)i * 100,
				     1500, UROCE_SEND_SIGNALED) == 0);
	CHECK_EQ(sim_run_for(&s.net, SEC), SIM_QUIESCENT);
	memset(&ev, 0, sizeof(ev));
	sim_events_take(s.eng[B], &ev);
	CHECK_EQ(ev.n[UROCE_EVENT_SRQ_LIMIT_REACHED], 1);
	CHECK(ev.last[UROCE_EVENT_SRQ_LIMIT_REACHED].obj.srq == srq);
	CHECK(ev.last[UROCE_EVENT_SRQ_LIMIT_REACHED].user == &s);
	CHECK_EQ(uroce_srq_query(srq, &sa), 0);
	CHECK_EQ(sa.srq_limit, 0); /* the event disarms the limit */
	int n = 0;

	for (int i = 0; i < 2; i++) {
		int k = simcq_drain(b[i].rcq, wc + n, 32 - n);

		for (int j = n; j < n + k; j++) {
			CHECK(wc[j].status == UROCE_WC_SUCCESS && wc[j].byte_len == 1500);
			CHECK_EQ(wc[j].qp_num, uroce_qp_num(b[i].qp));
			/* the first four receives were consumed */
			CHECK(wc[j].wr_id >= 500 && wc[j].wr_id < 504);
		}
		n += k;
	}
	CHECK_EQ(n, 4);
	/* each message is in one of the first four buffers */
	for (int i = 0; i < 4; i++) {
		bool found = false;

		for (int j = 0; j < 4; j++)
			found |= !memcmp(mb.buf + (size_t)j * 2048, ma.buf + (size_t)i * 100, 1500);
		CHECKF(found, "SRQ message %d", i);
	}
	/* more messages: no second event while disarmed */
	for (int i = 0; i < 4; i++)
		CHECK(sim_post_send1(a[0].qp, 10 + (uint64_t)i, UROCE_WR_SEND, &ma, 0, 10,
				     UROCE_SEND_SIGNALED) == 0);
	CHECK_EQ(sim_run_for(&s.net, SEC), SIM_QUIESCENT);
	memset(&ev, 0, sizeof(ev));
	sim_events_take(s.eng[B], &ev);
	CHECK_EQ(ev.n[UROCE_EVENT_SRQ_LIMIT_REACHED], 0);
	CHECK_EQ(simcq_drain(b[0].rcq, wc, 32), 4);
	/* the SRQ is in use */
	CHECK_EQ(uroce_srq_destroy(srq), -EBUSY);
	for (int i = 0; i < 2; i++) {
		simqp_destroy(&a[i]);
		simqp_destroy(&b[i]);
	}
	CHECK_EQ(uroce_srq_destroy(srq), 0);
	CHECK(simmr_guard_ok(&ma) && simmr_guard_ok(&mb));
	simmr_free(&ma);
	simmr_free(&mb);
	simenv_fini(&s);
}

/* ---- CQ overflow and notification --------------------------------------------------- */

static void test_cq_overflow(void)
{
	struct simenv s;
	struct simqp_cfg c;
	struct simqp a, b;
	struct simmr ma, mb;
	struct sim_evtally ev;
	struct uroce_wc wc[16];

	cur_test = "CQ overflow";
	CHECK_EQ(simenv_init(&s, 1, 1024, 0), 0);
	simqp_cfg_default(&c, UROCE_QPT_RC);
	CHECK_EQ(simqp_create(&s, A, &c, 64, NULL, &a), 0);
	CHECK_EQ(simqp_create(&s, B, &c, 4, NULL, &b), 0);
	CHECK_EQ(simqp_connect(&s, &a, &b, &c), 0);
	CHECK_EQ(simmr_reg(&s, A, 4096, c.access, &ma), 0);
	CHECK_EQ(simmr_reg(&s, B, 4096, c.access, &mb), 0);
	for (int i = 0; i < 8; i++)
		CHECK_EQ(sim_post_recv1(b.qp, (uint64_t)i, &mb, 0, 64), 0);
	for (int i = 0; i < 8; i++)
		CHECK(sim_post_send1(a.qp, (uint64_t)i, UROCE_WR_SEND, &ma, 0, 8,
				     UROCE_SEND_SIGNALED) == 0);
	sim_run_for(&s.net, SEC);
	memset(&ev, 0, sizeof(ev));
	sim_events_take(s.eng[B], &ev);
	CHECK_GE(ev.n[UROCE_EVENT_CQ_ERR], 1);
	CHECK(ev.last[UROCE_EVENT_CQ_ERR].obj.cq == b.rcq);
	CHECK(ev.last[UROCE_EVENT_CQ_ERR].user == &b);
	CHECK_LE(uroce_cq_count(b.rcq), 4);
	CHECK_GE(uroce_eng_counter(s.eng[B], UROCE_CNT_DROP_CQ_OVERFLOW), 1);
	int n = simcq_drain(b.rcq, wc, 16);

	CHECK_EQ(n, 4);
	for (int i = 0; i < n; i++)
		CHECK_EQ(wc[i].wr_id, (uint64_t)i);
	CHECK_EQ(simcq_drain(a.scq, wc, 16), 8);
	simqp_destroy(&a);
	simqp_destroy(&b);
	simmr_free(&ma);
	simmr_free(&mb);
	simenv_fini(&s);
}

static void test_notify(void)
{
	struct simenv s;
	struct simqp_cfg c;
	struct simqp a, b;
	struct simmr ma, mb;
	struct sim_evtally ev;
	struct uroce_wc wc[16];

	cur_test = "CQ notification";
	CHECK_EQ(simenv_init(&s, 1, 1024, 0), 0);
	simqp_cfg_default(&c, UROCE_QPT_RC);
	CHECK_EQ(simqp_create(&s, A, &c, 64, NULL, &a), 0);
	CHECK_EQ(simqp_create(&s, B, &c, 64, NULL, &b), 0);
	CHECK_EQ(simqp_connect(&s, &a, &b, &c), 0);
	CHECK_EQ(simmr_reg(&s, A, 4096, c.access, &ma), 0);
	CHECK_EQ(simmr_reg(&s, B, 4096, c.access, &mb), 0);
	for (int i = 0; i < 8; i++)
		CHECK_EQ(sim_post_recv1(b.qp, (uint64_t)i, &mb, 0, 64), 0);
	/* not armed: no event */
	CHECK_EQ(sim_post_send1(a.qp, 0, UROCE_WR_SEND, &ma, 0, 8, UROCE_SEND_SIGNALED), 0);
	sim_run_for(&s.net, SEC);
	memset(&ev, 0, sizeof(ev));
	sim_events_take(s.eng[B], &ev);
	CHECK_EQ(ev.n[UROCE_EVENT_COMP], 0);
	/* solicited only: an unsolicited send raises nothing, a solicited one raises one event */
	CHECK_EQ(uroce_cq_req_notify(b.rcq, true), 0);
	CHECK_EQ(sim_post_send1(a.qp, 1, UROCE_WR_SEND, &ma, 0, 8, UROCE_SEND_SIGNALED), 0);
	sim_run_for(&s.net, SEC);
	sim_events_take(s.eng[B], &ev);
	CHECK_EQ(ev.n[UROCE_EVENT_COMP], 0);
	CHECK(sim_post_send1(a.qp, 2, UROCE_WR_SEND, &ma, 0, 8,
			     UROCE_SEND_SIGNALED | UROCE_SEND_SOLICITED) == 0);
	sim_run_for(&s.net, SEC);
	sim_events_take(s.eng[B], &ev);
	CHECK_EQ(ev.n[UROCE_EVENT_COMP], 1);
	CHECK(ev.last[UROCE_EVENT_COMP].obj.cq == b.rcq);
	/* the arm is one-shot */
	CHECK(sim_post_send1(a.qp, 3, UROCE_WR_SEND_WITH_IMM, &ma, 0, 8,
			     UROCE_SEND_SIGNALED | UROCE_SEND_SOLICITED) == 0);
	sim_run_for(&s.net, SEC);
	sim_events_take(s.eng[B], &ev);
	CHECK_EQ(ev.n[UROCE_EVENT_COMP], 1);
	/* any completion when armed for all: the send CQ of A */
	CHECK_EQ(uroce_cq_req_notify(a.scq, false), 0);
	CHECK_EQ(sim_post_send1(a.qp, 4, UROCE_WR_SEND, &ma, 0, 8, UROCE_SEND_SIGNALED), 0);
	sim_run_for(&s.net, SEC);
	memset(&ev, 0, sizeof(ev));
	sim_events_take(s.eng[A], &ev);
	CHECK_EQ(ev.n[UROCE_EVENT_COMP], 1);
	CHECK(ev.last[UROCE_EVENT_COMP].obj.cq == a.scq);
	CHECK_EQ(simcq_drain(b.rcq, wc, 16), 5);
	simqp_destroy(&a);
	simqp_destroy(&b);
	simmr_free(&ma);
	simmr_free(&mb);
	simenv_fini(&s);
}

/* ================================================================================ */
/* Reliability                                                                      */

/* A lost request packet: the next one is out of sequence, the responder NAKs (PSN sequence
 * error) once, the requester goes back N. No timeout is needed. */
static void test_lost_request(void)
{
	struct fx f;

	cur_test = "lost request: NAK and go-back-N";
	fx_init(&f, UROCE_QPT_RC);
	sim_pattern(f.m[A].buf, MRLEN, 31);
	for (int i = 0; i < 4; i++)
		CHECK(sim_post_recv1(f.q[B].qp, 100 + (uint64_t)i, &f.m[B], (size_t)i * 8192,
				     8192) == 0);
	sim_rule_nth(&f.s.net, A, UROCE_OP_RC_SEND_MIDDLE, 2, SIM_DROP);
	for (int i = 0; i < 4; i++)
		CHECK(sim_post_send1(f.q[A].qp, (uint64_t)i, UROCE_WR_SEND, &f.m[A],
				     (size_t)i * 8192, 4000, UROCE_SEND_SIGNALED) == 0);
	fx_run_idle(&f);
	CHECK_EQ(f.s.net.rule[0].hits, 1);
	CHECK(f.ns[A] == 4 && f.nr[B] == 4);
	for (int i = 0; i < f.nr[B]; i++) {
		CHECK(wc_is(&f.swc[A][i], (uint64_t)i, UROCE_WC_SUCCESS, UROCE_WC_SEND));
		CHECK(wc_is(&f.rwc[B][i], 100 + (uint64_t)i, UROCE_WC_SUCCESS, UROCE_WC_RECV));
		CHECK_MEM_EQ(f.m[B].buf + (size_t)i * 8192, f.m[A].buf + (size_t)i * 8192, 4000);
	}
	CHECK_GE(cnt(&f, B, UROCE_CNT_OUT_OF_SEQ_REQUEST), 1);
	CHECK_EQ(cnt(&f, B, UROCE_CNT_SENT_NAKS), 1);
	CHECK_EQ(cnt(&f, A, UROCE_CNT_RCVD_SEQ_ERR), 1);
	CHECK_EQ(cnt(&f, A, UROCE_CNT_RCVD_NAKS), 1);
	CHECK_GE(cnt(&f, A, UROCE_CNT_RETRANSMITTED_PKTS), 1);
	CHECK_EQ(cnt(&f, A, UROCE_CNT_LOCAL_ACK_TIMEOUT_ERR), 0);
	/* SENDs count once each, however often go-back-N sent their last packets */
	CHECK_EQ(cnt(&f, A, UROCE_CNT_RDMA_SENDS), 4);
	CHECK_EQ(cnt(&f, B, UROCE_CNT_RDMA_RECVS), 4);
	/* recovered well before a local ACK timeout (4.2 ms) */
	if (f.ns[A] == 4)
		CHECKF(f.st[A][3] < 1 * MS, "completed at %llu ns", (unsigned long long)f.st[A][3]);
	fx_fini(&f);
}

/* A lost ACK: the requester times out after 4.096 us << timeout and resends; the responder sees
 * a duplicate, re-ACKs, and delivers once. */
static void test_lost_ack(void)
{
	struct fx f;
	uint64_t to = 4096ull << 10; /* timeout 10 */

	cur_test = "lost ACK: local ACK timeout";
	fx_init(&f, UROCE_QPT_RC);
	CHECK_EQ(sim_post_recv1(f.q[B].qp, 100, &f.m[B], 0, 8192), 0);
	CHECK_EQ(sim_post_recv1(f.q[B].qp, 101, &f.m[B], 8192, 8192), 0);
	sim_rule_nth(&f.s.net, B, UROCE_OP_RC_ACK, 1, SIM_DROP);
	uint64_t t0 = f.s.net.now;

	CHECK(sim_post_send1(f.q[A].qp, 1, UROCE_WR_SEND, &f.m[A], 0, 500, UROCE_SEND_SIGNALED) ==
	      0);
	fx_run_idle(&f);
	CHECK(f.ns[A] == 1 && f.nr[B] == 1);
	if (f.ns[A] == 1) {
		uint64_t dt = f.st[A][0] - t0;

		CHECKF(dt >= to && dt < to + to / 2, "completed after %llu ns, timeout %llu ns",
		       (unsigned long long)dt, (unsigned long long)to);
	}
	CHECK_EQ(cnt(&f, A, UROCE_CNT_LOCAL_ACK_TIMEOUT_ERR), 1);
	CHECK_EQ(cnt(&f, A, UROCE_CNT_RETRANSMITTED_PKTS), 1);
	CHECK_EQ(cnt(&f, B, UROCE_CNT_DUPLICATE_REQUEST), 1);
	CHECK_EQ(cnt(&f, A, UROCE_CNT_RDMA_SENDS), 1); /* the resent SEND counts once */
	CHECK_EQ(cnt(&f, B, UROCE_CNT_RDMA_RECVS), 1);
	CHECK_EQ(cnt(&f, A, UROCE_CNT_RETRY_EXCEEDED_ERR), 0);
	/* a second message lands in the second receive */
	CHECK(sim_post_send1(f.q[A].qp, 2, UROCE_WR_SEND, &f.m[A], 0, 500, UROCE_SEND_SIGNALED) ==
	      0);
	fx_run_idle(&f);
	CHECK_EQ(f.nr[B], 2);
	if (f.nr[B] == 2)
		CHECK_EQ(f.rwc[B][1].wr_id, 101);
	fx_fini(&f);
}

/* Peer gone: retry_cnt + 1 timeouts, then RETRY_EXC_ERR, ERR, and the rest flushed. */
static void test_retry_exceeded(void)
{
	struct fx f;
	struct simqp_cfg c;
	struct sim_evtally ev;
	uint64_t to = 4096ull << 12;

	cur_test = "retry exceeded";
	simqp_cfg_default(&c, UROCE_QPT_RC);
	c.retry_cnt = 2;
	c.timeout = 12;
	fx_init_cfg(&f, &c, c.access);
	f.s.net.cfg[A][B].down = true;
	uint64_t t0 = f.s.net.now;

	for (int i = 0; i < 3; i++)
		CHECK(sim_post_send1(f.q[A].qp, (uint64_t)i, UROCE_WR_SEND, &f.m[A], 0, 100,
				     UROCE_SEND_SIGNALED) == 0);
	fx_run_idle(&f);
	CHECK_EQ(f.ns[A], 3);
	if (f.ns[A] == 3) {
		CHECK(wc_is(&f.swc[A][0], 0, UROCE_WC_RETRY_EXC_ERR, UROCE_WC_SEND));
		CHECK(wc_is(&f.swc[A][1], 1, UROCE_WC_WR_FLUSH_ERR, UROCE_WC_SEND));
		CHECK(wc_is(&f.swc[A][2], 2, UROCE_WC_WR_FLUSH_ERR, UROCE_WC_SEND));
		uint64_t dt = f.st[A][0] - t0;

		CHECKF(dt >= 3 * to && dt < 4 * to, "failed after %llu ns, 3 timeouts = %llu",
		       (unsigned long long)dt, (unsigned long long)(3 * to));
	}
	CHECK_EQ(uroce_qp_state(f.q[A].qp), UROCE_QPS_ERR);
	CHECK_EQ(cnt(&f, A, UROCE_CNT_RETRY_EXCEEDED_ERR), 1);
	CHECK_EQ(cnt(&f, A, UROCE_CNT_LOCAL_ACK_TIMEOUT_ERR), 3);
	CHECK(f.s.net.st[A][B].sent == 3 + 2 * 3 || f.s.net.st[A][B].sent == 3 * 3);
	memset(&ev, 0, sizeof(ev));
	sim_events_take(f.s.eng[A], &ev);
	CHECK_LE(ev.n[UROCE_EVENT_QP_FATAL], 1);
	fx_fini(&f);
}

static const uint32_t rnr_us[32] = {
	655360, 10,    20,    30,    40,    60,	    80,	    120,    160,    240,    320,
	480,	640,   960,   1280,  1920,  2560,   3840,   5120,   7680,   10240,  15360,
	20480,	30720, 40960, 61440, 81920, 122880, 163840, 245760, 327680, 491520,
};

/* RNR: no receive posted; the responder answers RNR NAKs, the requester waits the timer of the
 * NAK each time; with rnr_retry 7 forever. Once a receive is posted, it succeeds. */
static void test_rnr(void)
{
	struct fx f;
	struct simqp_cfg c;
	uint8_t code = 14; /* 1.28 ms */
	uint64_t wait = rnr_us[code] * US;

	cur_test = "RNR wait and infinite retry";
	simqp_cfg_default(&c, UROCE_QPT_RC);
	c.min_rnr_timer = code;
	c.rnr_retry = 7;
	fx_init_cfg(&f, &c, c.access);
	CHECK(sim_post_send1(f.q[A].qp, 1, UROCE_WR_SEND, &f.m[A], 0, 3000, UROCE_SEND_SIGNALED) ==
	      0);
	fx_run(&f, 20 * wait + wait / 2);
	CHECK_EQ(f.ns[A], 0);
	uint64_t naks = cnt(&f, B, UROCE_CNT_SEND_RNR_ERR);

	CHECKF(naks >= 20 && naks <= 21, "%llu RNR NAKs in 20.5 RNR waits",
	       (unsigned long long)naks);
	CHECK_EQ(cnt(&f, A, UROCE_CNT_RCVD_RNR_ERR), naks);
	CHECK_EQ(uroce_qp_state(f.q[A].qp), UROCE_QPS_RTS);
	CHECK_EQ(uroce_qp_state(f.q[B].qp), UROCE_QPS_RTS);
	CHECK_EQ(cnt(&f, A, UROCE_CNT_RNR_RETRY_EXCEEDED_ERR), 0);
	CHECK_EQ(sim_post_recv1(f.q[B].qp, 100, &f.m[B], 0, 4096), 0);
	fx_run_idle(&f);
	CHECK(f.ns[A] == 1 && f.nr[B] == 1);
	if (f.ns[A] == 1)
		CHECK(wc_is(&f.swc[A][0], 1, UROCE_WC_SUCCESS, UROCE_WC_SEND));
	CHECK_MEM_EQ(f.m[B].buf, f.m[A].buf, 3000);
	CHECK_EQ(cnt(&f, A, UROCE_CNT_LOCAL_ACK_TIMEOUT_ERR), 0);
	fx_fini(&f);

	/* rnr_retry 2: three RNR NAKs, then RNR_RETRY_EXC_ERR */
	cur_test = "RNR retry exceeded";
	simqp_cfg_default(&c, UROCE_QPT_RC);
	c.min_rnr_timer = 2;
	c.rnr_retry = 2;
	fx_init_cfg(&f, &c, c.access);
	uint64_t t0 = f.s.net.now;

	CHECK(sim_post_send1(f.q[A].qp, 1, UROCE_WR_SEND, &f.m[A], 0, 10, UROCE_SEND_SIGNALED) ==
	      0);
	CHECK(sim_post_send1(f.q[A].qp, 2, UROCE_WR_SEND, &f.m[A], 0, 10, UROCE_SEND_SIGNALED) ==
	      0);
	fx_run_idle(&f);
	CHECK_EQ(f.ns[A], 2);
	if (f.ns[A] == 2) {
		CHECK(wc_is(&f.swc[A][0], 1, UROCE_WC_RNR_RETRY_EXC_ERR, UROCE_WC_SEND));
		CHECK(wc_is(&f.swc[A][1], 2, UROCE_WC_WR_FLUSH_ERR, UROCE_WC_SEND));
		CHECKF(f.st[A][0] - t0 >= 2 * 20 * US, "RNR failure after %llu ns",
		       (unsigned long long)(f.st[A][0] - t0));
	}
	CHECK_GE(cnt(&f, B, UROCE_CNT_SEND_RNR_ERR), 3);
	CHECK_EQ(cnt(&f, A, UROCE_CNT_RNR_RETRY_EXCEEDED_ERR), 1);
	CHECK_EQ(uroce_qp_state(f.q[A].qp), UROCE_QPS_ERR);
	fx_fini(&f);
}

/* A duplicated SEND: the responder re-ACKs and delivers once. */
static void test_dup_request(void)
{
	struct fx f;

	cur_test = "duplicate request";
	fx_init(&f, UROCE_QPT_RC);
	CHECK_EQ(sim_post_recv1(f.q[B].qp, 100, &f.m[B], 0, 8192), 0);
	CHECK_EQ(sim_post_recv1(f.q[B].qp, 101, &f.m[B], 8192, 8192), 0);
	sim_rule_nth(&f.s.net, A, UROCE_OP_RC_SEND_ONLY, 1, SIM_DUP);
	CHECK(sim_post_send1(f.q[A].qp, 1, UROCE_WR_SEND, &f.m[A], 0, 700, UROCE_SEND_SIGNALED) ==
	      0);
	fx_run_idle(&f);
	CHECK(f.ns[A] == 1 && f.nr[B] == 1);
	CHECK_EQ(cnt(&f, B, UROCE_CNT_DUPLICATE_REQUEST), 1);
	/* a multi-packet send duplicated in the middle */
	sim_rule_nth(&f.s.net, A, UROCE_OP_RC_SEND_MIDDLE, 1, SIM_DUP);
	CHECK(sim_post_send1(f.q[A].qp, 2, UROCE_WR_SEND, &f.m[A], 0, 5000, UROCE_SEND_SIGNALED) ==
	      0);
	fx_run_idle(&f);
	CHECK(f.ns[A] == 2 && f.nr[B] == 2);
	if (f.nr[B] == 2)
		CHECK(wc_is(&f.rwc[B][1], 101, UROCE_WC_SUCCESS, UROCE_WC_RECV) &&
		      f.rwc[B][1].byte_len == 5000);
	CHECK_MEM_EQ(f.m[B].buf + 8192, f.m[A].buf, 5000);
	CHECK_EQ(cnt(&f, B, UROCE_CNT_DUPLICATE_REQUEST), 2);
	/* a duplicated WRITE writes the same bytes again: harmless, no extra completion */
	sim_rule_nth(&f.s.net, A, UROCE_OP_RC_WRITE_ONLY, 1, SIM_DUP);
	CHECK(sim_post_write(f.q[A].qp, 3, UROCE_WR_RDMA_WRITE, &f.m[A], 0, 100,
			     simmr_va(&f.m[B], 20000), f.m[B].rkey, UROCE_SEND_SIGNALED, 0) == 0);
	fx_run_idle(&f);
	CHECK(f.ns[A] == 3 && f.nr[B] == 2);
	CHECK_EQ(cnt(&f, B, UROCE_CNT_DUPLICATE_REQUEST), 3);
	fx_fini(&f);
}

/* A lost read response packet: the requester re-reads from the gap; the responder replays. */
static void test_lost_read_response(void)
{
	struct fx f;

	cur_test = "lost read response";
	fx_init(&f, UROCE_QPT_RC);
	sim_pattern(f.m[B].buf, MRLEN, 41);
	sim_rule_nth(&f.s.net, B, UROCE_OP_RC_READ_RESP_MIDDLE, 2, SIM_DROP);
	CHECK(sim_post_write(f.q[A].qp, 1, UROCE_WR_RDMA_READ, &f.m[A], 0, 5000,
			     simmr_va(&f.m[B], 7), f.m[B].rkey, UROCE_SEND_SIGNALED, 0) == 0);
	fx_run_idle(&f);
	CHECK_EQ(f.ns[A], 1);
	if (f.ns[A] == 1)
		CHECK(wc_is(&f.swc[A][0], 1, UROCE_WC_SUCCESS, UROCE_WC_RDMA_READ));
	CHECK_MEM_EQ(f.m[A].buf, f.m[B].buf + 7, 5000);
	CHECK_GE(cnt(&f, B, UROCE_CNT_READ_REPLAYED), 1);
	/* the last response lost: only the timeout notices */
	sim_rules_clear(&f.s.net);
	sim_rule_nth(&f.s.net, B, UROCE_OP_RC_READ_RESP_LAST, 1, SIM_DROP);
	uint64_t rr = cnt(&f, B, UROCE_CNT_READ_REPLAYED);

	CHECK(sim_post_write(f.q[A].qp, 2, UROCE_WR_RDMA_READ, &f.m[A], 10000, 3000,
			     simmr_va(&f.m[B], 20000), f.m[B].rkey, UROCE_SEND_SIGNALED, 0) == 0);
	fx_run_idle(&f);
	CHECK_EQ(f.ns[A], 2);
	CHECK_MEM_EQ(f.m[A].buf + 10000, f.m[B].buf + 20000, 3000);
	CHECK_EQ(cnt(&f, B, UROCE_CNT_READ_REPLAYED), rr + 1);
	CHECK_EQ(cnt(&f, A, UROCE_CNT_LOCAL_ACK_TIMEOUT_ERR), 1);
	/* a lost single-packet read response */
	sim_rules_clear(&f.s.net);
	sim_rule_nth(&f.s.net, B, UROCE_OP_RC_READ_RESP_ONLY, 1, SIM_DROP);
	CHECK(sim_post_write(f.q[A].qp, 3, UROCE_WR_RDMA_READ, &f.m[A], 30000, 100,
			     simmr_va(&f.m[B], 40000), f.m[B].rkey, UROCE_SEND_SIGNALED, 0) == 0);
	fx_run_idle(&f);
	CHECK_EQ(f.ns[A], 3);
	CHECK_MEM_EQ(f.m[A].buf + 30000, f.m[B].buf + 40000, 100);
	CHECK_EQ(cnt(&f, B, UROCE_CNT_READ_REPLAYED), rr + 2);
	fx_fini(&f);
}

/* A lost read response followed by ACKs of later writes: the first such ACK implies the read
 * responses were lost (IBTA 9.7.5.1.x: implied NAK), so the requester re-reads and goes back
 * once; the other ACKs must not start the go-back again each time. */
static void test_read_implied_nak(void)
{
	struct fx f;

	cur_test = "read then writes, read response lost";
	fx_init(&f, UROCE_QPT_RC);
	/* 1 Gb/s: the writes arrive one by one, each gets its own ACK */
	struct sim_link_cfg lc;

	sim_link_cfg_default(&lc);
	lc.bandwidth_bps = 1000000000ull;
	sim_link_set_all(&f.s.net, &lc);
	sim_pattern(f.m[B].buf, MRLEN, 43);
	sim_pattern(f.m[A].buf, MRLEN, 44);
	sim_rule_nth(&f.s.net, B, UROCE_OP_RC_READ_RESP_ONLY, 1, SIM_DROP);
	CHECK(sim_post_write(f.q[A].qp, 1, UROCE_WR_RDMA_READ, &f.m[A], 0, 500,
			     simmr_va(&f.m[B], 0), f.m[B].rkey, UROCE_SEND_SIGNALED, 0) == 0);
	for (int i = 0; i < 10; i++)
		CHECK(sim_post_write(f.q[A].qp, 10 + (uint64_t)i, UROCE_WR_RDMA_WRITE, &f.m[A],
				     1000 + (size_t)i * 100, 100,
				     simmr_va(&f.m[B], 10000 + (size_t)i * 100), f.m[B].rkey,
				     UROCE_SEND_SIGNALED, 0) == 0);
	fx_run_idle(&f);
	CHECK_EQ(f.ns[A], 11);
	for (int i = 0; i < f.ns[A]; i++)
		CHECK_EQ(f.swc[A][i].status, UROCE_WC_SUCCESS);
	CHECK_MEM_EQ(f.m[A].buf, f.m[B].buf, 500);
	CHECK_MEM_EQ(f.m[B].buf + 10000, f.m[A].buf + 1000, 1000);
	CHECKF(f.s.net.st[A][B].sent <= 2 * 11 + 2, "%llu request packets for 11 WRs and one loss",
	       (unsigned long long)f.s.net.st[A][B].sent);
	CHECK_EQ(cnt(&f, B, UROCE_CNT_READ_REPLAYED), 1);
	fx_fini(&f);
}

/* A duplicated atomic (or a lost atomic ACK) is answered from the saved result: executed once. */
static void test_atomic_replay(void)
{
	struct fx f;
	uint64_t *rem, *loc;

	cur_test = "atomic replay";
	fx_init(&f, UROCE_QPT_RC);
	rem = (uint64_t *)(void *)(f.m[B].buf + 8192);
	loc = (uint64_t *)(void *)(f.m[A].buf);
	*rem = 10;
	/* the duplicate arrives after the original was executed and answered */
	struct sim_rule r = {.src = A,
			     .dst = -1,
			     .opcode = UROCE_OP_RC_FETCH_ADD,
			     .nth = 1,
			     .count = 1,
			     .verdict = SIM_DUP};

	sim_rule_add(&f.s.net, &r);
	CHECK(sim_post_atomic(f.q[A].qp, 1, UROCE_WR_ATOMIC_FETCH_AND_ADD, &f.m[A], 0,
			      simmr_va(&f.m[B], 8192), f.m[B].rkey, 7, 0,
			      UROCE_SEND_SIGNALED) == 0);
	fx_run_idle(&f);
	CHECK_EQ(f.ns[A], 1);
	CHECK_EQ(*rem, 17);
	CHECK_EQ(loc[0], 10);
	CHECK_EQ(cnt(&f, B, UROCE_CNT_ATOMIC_REPLAYED), 1);
	CHECK_EQ(cnt(&f, B, UROCE_CNT_DUPLICATE_REQUEST), 1);
	/* lost ATOMIC_ACK: timeout, resend, replay from the saved original value */
	sim_rules_clear(&f.s.net);
	sim_rule_nth(&f.s.net, B, UROCE_OP_RC_ATOMIC_ACK, 1, SIM_DROP);
	CHECK(sim_post_atomic(f.q[A].qp, 2, UROCE_WR_ATOMIC_FETCH_AND_ADD, &f.m[A], 8,
			      simmr_va(&f.m[B], 8192), f.m[B].rkey, 100, 0,
			      UROCE_SEND_SIGNALED) == 0);
	fx_run_idle(&f);
	CHECK_EQ(f.ns[A], 2);
	CHECK_EQ(*rem, 117);
	CHECK_EQ(loc[1], 17);
	CHECK_EQ(cnt(&f, B, UROCE_CNT_ATOMIC_REPLAYED), 2);
	CHECK_EQ(cnt(&f, A, UROCE_CNT_LOCAL_ACK_TIMEOUT_ERR), 1);
	/* CMP_SWAP duplicated: swapped once, the replay returns the original */
	sim_rules_clear(&f.s.net);
	sim_rule_nth(&f.s.net, A, UROCE_OP_RC_CMP_SWAP, 1, SIM_DUP);
	CHECK(sim_post_atomic(f.q[A].qp, 3, UROCE_WR_ATOMIC_CMP_AND_SWP, &f.m[A], 16,
			      simmr_va(&f.m[B], 8192), f.m[B].rkey, 117, 5,
			      UROCE_SEND_SIGNALED) == 0);
	CHECK(sim_post_atomic(f.q[A].qp, 4, UROCE_WR_ATOMIC_CMP_AND_SWP, &f.m[A], 24,
			      simmr_va(&f.m[B], 8192), f.m[B].rkey, 117, 6,
			      UROCE_SEND_SIGNALED) == 0);
	fx_run_idle(&f);
	CHECK_EQ(f.ns[A], 4);
	CHECK_EQ(*rem, 5);
	CHECK(loc[2] == 117 && loc[3] == 5);
	CHECK_EQ(cnt(&f, B, UROCE_CNT_ATOMIC_REPLAYED), 3);
	/* two atomics in flight, the first one's ATOMIC_ACK lost: the second one's response does
	 * not complete the first (it carries no result for it): the first is replayed */
	sim_rules_clear(&f.s.net);
	sim_rule_nth(&f.s.net, B, UROCE_OP_RC_ATOMIC_ACK, 1, SIM_DROP);
	rem[1] = 1;
	rem[2] = 2;
	loc[4] = loc[5] = 0;
	CHECK(sim_post_atomic(f.q[A].qp, 5, UROCE_WR_ATOMIC_FETCH_AND_ADD, &f.m[A], 32,
			      simmr_va(&f.m[B], 8200), f.m[B].rkey, 10, 0,
			      UROCE_SEND_SIGNALED) == 0);
	CHECK(sim_post_atomic(f.q[A].qp, 6, UROCE_WR_ATOMIC_FETCH_AND_ADD, &f.m[A], 40,
			      simmr_va(&f.m[B], 8208), f.m[B].rkey, 20, 0,
			      UROCE_SEND_SIGNALED) == 0);
	fx_run_idle(&f);
	CHECK_EQ(f.ns[A], 6);
	for (int i = 4; i < f.ns[A]; i++)
		CHECK(wc_is(&f.swc[A][i], 1 + (uint64_t)i, UROCE_WC_SUCCESS, UROCE_WC_FETCH_ADD));
	CHECKF(rem[1] == 11 && rem[2] == 22, "remote %llu %llu", (unsigned long long)rem[1],
	       (unsigned long long)rem[2]);
	CHECKF(loc[4] == 1 && loc[5] == 2, "results %llu %llu", (unsigned long long)loc[4],
	       (unsigned long long)loc[5]);
	CHECK_GE(cnt(&f, B, UROCE_CNT_ATOMIC_REPLAYED), 4); /* go-back-N replays both */
	fx_fini(&f);
}

/* Remote access errors: the requester gets REM_ACCESS_ERR, nothing is written, both QPs end in
 * ERR (the responder after sending the NAK, IBTA class C). */
enum acc_case { BAD_RKEY, OUT_OF_RANGE, BEFORE_START, NO_WRITE, NO_READ, NO_ATOMIC, NCASES };

static void test_access_errors(void)
{
	static const char *const names[] = {"bad rkey",	      "out of range",
					    "before start",   "no remote write",
					    "no remote read", "no remote atomic"};

	for (int k = 0; k < NCASES; k++) {
		struct fx f;
		struct simqp_cfg c;
		unsigned acc = UROCE_ACCESS_LOCAL_WRITE | UROCE_ACCESS_REMOTE_WRITE |
			       UROCE_ACCESS_REMOTE_READ | UROCE_ACCESS_REMOTE_ATOMIC;
		struct sim_evtally ev;

		cur_test = names[k];
		if (k == NO_WRITE)
			acc &= ~(unsigned)UROCE_ACCESS_REMOTE_WRITE;
		if (k == NO_READ)
			acc &= ~(unsigned)UROCE_ACCESS_REMOTE_READ;
		if (k == NO_ATOMIC)
			acc &= ~(unsigned)UROCE_ACCESS_REMOTE_ATOMIC;
		simqp_cfg_default(&c, UROCE_QPT_RC);
		fx_init_cfg(&f, &c, acc);
		sim_pattern(f.m[B].buf, MRLEN, 51);
		sim_pattern(f.m[A].buf, MRLEN, 52);
		uint32_t rkey = f.m[B].rkey + (k == BAD_RKEY ? 0x100 : 0);
		uint64_t va = simmr_va(&f.m[B], MRLEN - 1000);
		uint32_t len = k == OUT_OF_RANGE ? 1001 : 1000;
		enum uroce_wr_opcode op = UROCE_WR_RDMA_WRITE;
		enum uroce_wc_opcode wop = UROCE_WC_RDMA_WRITE;

		if (k == BEFORE_START)
			va = simmr_va(&f.m[B], 0) - 1;
		if (k == NO_READ) {
			op = UROCE_WR_RDMA_READ;
			wop = UROCE_WC_RDMA_READ;
		}
		if (k == NO_ATOMIC) {
			CHECK(sim_post_atomic(f.q[A].qp, 1, UROCE_WR_ATOMIC_FETCH_AND_ADD, &f.m[A],
					      0, simmr_va(&f.m[B], 64), f.m[B].rkey, 1, 0,
					      UROCE_SEND_SIGNALED) == 0);
			wop = UROCE_WC_FETCH_ADD;
		} else {
			CHECK(sim_post_write(f.q[A].qp, 1, op, &f.m[A], 0, len, va, rkey,
					     UROCE_SEND_SIGNALED, 0) == 0);
		}
		CHECK(sim_post_send1(f.q[A].qp, 2, UROCE_WR_SEND, &f.m[A], 0, 10,
				     UROCE_SEND_SIGNALED) == 0);
		fx_run_idle(&f);
		CHECKF(f.ns[A] == 2, "%s: %d completions", cur_test, f.ns[A]);
		if (f.ns[A] == 2) {
			CHECK(wc_is(&f.swc[A][0], 1, UROCE_WC_REM_ACCESS_ERR, wop));
			CHECK(wc_is(&f.swc[A][1], 2, UROCE_WC_WR_FLUSH_ERR, UROCE_WC_SEND));
		}
		CHECKF(sim_pattern_ok(f.m[B].buf, MRLEN, 51), "%s: responder memory changed",
		       cur_test);
		if (k == NO_READ)
			CHECKF(sim_pattern_ok(f.m[A].buf, MRLEN, 52),
			       "%s: requester memory changed", cur_test);
		CHECKF(uroce_qp_state(f.q[A].qp) == UROCE_QPS_ERR, "%s: requester state %d",
		       cur_test, uroce_qp_state(f.q[A].qp));
		CHECKF(uroce_qp_state(f.q[B].qp) == UROCE_QPS_ERR, "%s: responder state %d",
		       cur_test, uroce_qp_state(f.q[B].qp));
		CHECK_EQ(cnt(&f, B, UROCE_CNT_REM_ACCESS_ERR_SENT), 1);
		CHECK_EQ(cnt(&f, A, UROCE_CNT_RCVD_NAKS), 1);
		memset(&ev, 0, sizeof(ev));
		sim_events_take(f.s.eng[B], &ev);
		CHECKF(ev.n[UROCE_EVENT_QP_ACCESS_ERR] == 1, "%s: responder access error events %d",
		       cur_test, ev.n[UROCE_EVENT_QP_ACCESS_ERR]);
		fx_fini(&f);
	}
}

/* Packets for the wrong transport class, an unknown QP, a bad P_Key: dropped and counted, the QP
 * carries on. */
static void test_bad_packets(void)
{
	struct fx f;
	struct uroce_tpkt t;
	uint8_t hdr[UROCE_TX_HDR_MAX], pl[16] = {0};
	struct uroce_av av;
	int hl;

	cur_test = "wrong opcode class, no QP, bad P_Key";
	fx_init(&f, UROCE_QPT_RC);
	sim_av(&f.s.net, A, B, &av);
	CHECK_EQ(sim_post_recv1(f.q[B].qp, 100, &f.m[B], 0, 100), 0);
	struct {
		uint8_t op;
		uint32_t qpn;
		uint16_t pkey;
		enum uroce_counter c;
		int rc;
	} cases[] = {
		{UROCE_OP_UC_SEND_ONLY, 0, 0xFFFF, UROCE_CNT_DROP_BAD_OPCODE, -EPROTO},
		{UROCE_OP_UD_SEND_ONLY, 0, 0xFFFF, UROCE_CNT_DROP_BAD_OPCODE, -EPROTO},
		{UROCE_OP_RC_SEND_ONLY, 0x3FF, 0xFFFF, UROCE_CNT_DROP_NO_QP, -ENOENT},
		{UROCE_OP_RC_SEND_ONLY, 0, 0x1234, UROCE_CNT_DROP_BAD_PKEY, -EBADMSG},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint64_t before = cnt(&f, B, cases[i].c);
		uint64_t rej = f.s.net.node[B].rx_err[cases[i].rc == -ENOENT	? 0
						      : cases[i].rc == -EBADMSG ? 1
										: 2];

		memset(&t, 0, sizeof(t));
		t.bth.opcode = cases[i].op;
		t.bth.pkey = cases[i].pkey;
		t.bth.dqpn = cases[i].qpn ? cases[i].qpn : uroce_qp_num(f.q[B].qp);
		t.bth.psn = f.c.psn[0];
		t.bth.ackreq = true;
		t.deth.qkey = f.c.qkey;
		t.deth.src_qp = uroce_qp_num(f.q[A].qp);
		t.payload_len = 16;
		hl = uroce_tpkt_hdr_encode(hdr, sizeof(hdr), &t);
		CHECK_GT(hl, 0);
		CHECK(sim_send(&f.s.net, A, &av, hdr, (uint32_t)hl, pl, 16, 0,
			       uroce_qp_num(f.q[A].qp), t.bth.dqpn) == 0);
		fx_run_idle(&f);
		CHECKF(cnt(&f, B, cases[i].c) == before + 1, "case %zu: counter %s", i,
		       uroce_counter_names[cases[i].c]);
		CHECKF(f.s.net.node[B].rx_err[cases[i].rc == -ENOENT	? 0
					      : cases[i].rc == -EBADMSG ? 1
									: 2] == rej + 1,
		       "case %zu: uroce_eng_rx result", i);
		CHECK_EQ(f.nr[B], 0);
		CHECK_EQ(uroce_qp_state(f.q[B].qp), UROCE_QPS_RTS);
	}
	/* the QP still works, from the PSN it expected */
	CHECK(sim_post_send1(f.q[A].qp, 1, UROCE_WR_SEND, &f.m[A], 0, 50, UROCE_SEND_SIGNALED) ==
	      0);
	fx_run_idle(&f);
	CHECK(f.ns[A] == 1 && f.nr[B] == 1);
	CHECK_EQ(cnt(&f, B, UROCE_CNT_DUPLICATE_REQUEST), 0);
	fx_fini(&f);
}

/* One packet lost in the middle of a long message: one NAK, one go-back-N pass, and no more
 * packets than the message plus the resent tail. */
static void test_lost_in_long_message(void)
{
	struct fx f;
	struct sim_link_cfg lc;

	cur_test = "lost packet in a long message";
	fx_init(&f, UROCE_QPT_RC);
	sim_link_cfg_default(&lc);
	lc.mtu = 9000;
	lc.bandwidth_bps = 25000000000ull;
	sim_link_set_all(&f.s.net, &lc);
	sim_pattern(f.m[A].buf, MRLEN, 71);
	sim_rule_nth(&f.s.net, A, UROCE_OP_RC_WRITE_MIDDLE, 100, SIM_DROP);
	CHECK(sim_post_write(f.q[A].qp, 1, UROCE_WR_RDMA_WRITE, &f.m[A], 0, 200 * 1024,
			     simmr_va(&f.m[B], 0), f.m[B].rkey, UROCE_SEND_SIGNALED, 0) == 0);
	fx_run_idle(&f);
	CHECK_EQ(f.ns[A], 1);
	CHECK_MEM_EQ(f.m[B].buf, f.m[A].buf, 200 * 1024);
	CHECK_EQ(cnt(&f, B, UROCE_CNT_SENT_NAKS), 1);
	CHECKF(f.s.net.st[A][B].sent <= 200 + 100 + 2, "%llu packets for a 200-packet message",
	       (unsigned long long)f.s.net.st[A][B].sent);
	CHECK_EQ(cnt(&f, A, UROCE_CNT_LOCAL_ACK_TIMEOUT_ERR), 0);
	fx_fini(&f);
}

/* Sending more than the requester window: everything completes in order. */
static void test_window(void)
{
	struct fx f;

	cur_test = "window and many packets";
	fx_init(&f, UROCE_QPT_RC);
	sim_pattern(f.m[A].buf, MRLEN, 61);
	for (int i = 0; i < 200; i++)
		CHECK(sim_post_write(f.q[A].qp, (uint64_t)i, UROCE_WR_RDMA_WRITE, &f.m[A],
				     (size_t)i * 1000, 5000, simmr_va(&f.m[B], (size_t)i * 1000),
				     f.m[B].rkey, UROCE_SEND_SIGNALED, 0) == 0);
	fx_run_idle(&f);
	CHECK_EQ(f.ns[A], 200);
	for (int i = 0; i < f.ns[A]; i++)
		CHECK(f.swc[A][i].wr_id == (uint64_t)i && f.swc[A][i].status == UROCE_WC_SUCCESS);
	CHECK_MEM_EQ(f.m[B].buf, f.m[A].buf, 199 * 1000 + 5000);
	fx_fini(&f);
}

int main(int argc, char **argv)
{
	const char *only = argc > 1 ? argv[1] : NULL;
	struct {
		const char *name;
		void (*fn)(void);
	} tests[] = {
		{"state_ud", test_state_machine_ud},
		{"flush", test_flush},
		{"send_too_long", test_send_too_long},
		{"write", test_write},
		{"write_iova", test_write_iova},
		{"read", test_read},
		{"atomics", test_atomics},
		{"inline", test_inline},
		{"unsignaled", test_unsignaled},
		{"ack_requests", test_ack_requests},
		{"ud", test_ud},
		{"uc", test_uc},
		{"srq", test_srq},
		{"cq_overflow", test_cq_overflow},
		{"notify", test_notify},
		{"lost_request", test_lost_request},
		{"lost_ack", test_lost_ack},
		{"retry_exceeded", test_retry_exceeded},
		{"rnr", test_rnr},
		{"dup_request", test_dup_request},
		{"lost_read_response", test_lost_read_response},
		{"read_implied_nak", test_read_implied_nak},
		{"atomic_replay", test_atomic_replay},
		{"access_errors", test_access_errors},
		{"bad_packets", test_bad_packets},
		{"window", test_window},
		{"lost_in_long_message", test_lost_in_long_message},
	};

	if (!only || !strcmp(only, "state_rc"))
		test_state_machine_rc(UROCE_QPT_RC);
	if (!only || !strcmp(only, "state_uc"))
		test_state_machine_rc(UROCE_QPT_UC);
	if (!only || !strcmp(only, "send_rc"))
		test_send_sizes(UROCE_QPT_RC);
	if (!only || !strcmp(only, "send_uc"))
		test_send_sizes(UROCE_QPT_UC);
	for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++) {
		if (only && strcmp(only, tests[i].name))
			continue;
		int before = check_failures;

		tests[i].fn();
		if (check_failures != before)
			fprintf(stderr, "-- %s: %d failures\n", tests[i].name,
				check_failures - before);
	}
	return check_exit("sim_scripted");
}
