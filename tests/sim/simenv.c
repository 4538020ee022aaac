/* SPDX-License-Identifier: MIT */
/* Test set-up over the simulated network: see simenv.h. */
#include "simenv.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../wr.h"

#define CANARY 0xA5

int simenv_init(struct simenv *s, uint64_t seed, uint32_t frames, uint32_t max_ip)
{
	int rc;

	memset(s, 0, sizeof(*s));
	rc = sim_net_init(&s->net, seed, frames, max_ip);
	if (rc)
		return rc;
	for (int i = 0; i < SIMENV_NODES; i++) {
		struct uroce_eng_cfg cfg;

		uroce_eng_cfg_default(&cfg);
		cfg.qpn_base = 0x11 + 0x200 * (uint32_t)i;
		cfg.max_qp = 64;
		cfg.key_seed = (uint8_t)(0x10 + 0x70 * i);
		rc = uroce_eng_create(&s->eng[i], &cfg);
		if (rc)
			return rc;
		rc = uroce_pd_alloc(s->eng[i], &s->pd[i]);
		if (rc)
			return rc;
		sim_node_add(&s->net, s->eng[i], SIM_GID_INDEX);
		s->n++;
	}
	return 0;
}

void simenv_fini(struct simenv *s)
{
	for (int i = 0; i < s->n; i++)
		if (s->eng[i])
			uroce_eng_destroy(s->eng[i]);
	sim_net_free(&s->net);
	memset(s, 0, sizeof(*s));
}

void simqp_cfg_default(struct simqp_cfg *c, enum uroce_qp_type type)
{
	memset(c, 0, sizeof(*c));
	c->type = type;
	c->mtu = UROCE_MTU_1024;
	c->timeout = 10; /* 4.096 us << 10 = 4.2 ms */
	c->retry_cnt = 7;
	c->rnr_retry = 7;
	c->min_rnr_timer = 1; /* 10 us */
	c->max_rd_atomic = 16;
	c->access = UROCE_ACCESS_LOCAL_WRITE | UROCE_ACCESS_REMOTE_WRITE |
		    UROCE_ACCESS_REMOTE_READ | UROCE_ACCESS_REMOTE_ATOMIC;
	c->qkey = 0x11111111;
	c->psn[0] = 0x100;
	c->psn[1] = 0xFFFFF0; /* wraps soon */
	c->cap.max_send_wr = 256;
	c->cap.max_recv_wr = 256;
	c->cap.max_send_sge = 8;
	c->cap.max_recv_sge = 8;
	c->cap.max_inline_data = 128;
}

int simqp_create(struct simenv *s, int node, const struct simqp_cfg *c, uint32_t cqe,
		 struct uroce_srq *srq, struct simqp *q)
{
	struct uroce_qp_init init;
	int rc;

	memset(q, 0, sizeof(*q));
	q->node = node;
	q->srq = srq;
	rc = uroce_cq_create(s->eng[node], cqe, q, &q->scq);
	if (rc)
		return rc;
	rc = uroce_cq_create(s->eng[node], cqe, q, &q->rcq);
	if (rc)
		return rc;
	memset(&init, 0, sizeof(init));
	init.type = c->type;
	init.send_cq = q->scq;
	init.recv_cq = q->rcq;
	init.srq = srq;
	init.cap = c->cap;
	init.sq_sig_all = c->sq_sig_all;
	init.user = q;
	return uroce_qp_create(s->pd[node], &init, &q->qp);
}

void simqp_destroy(struct simqp *q)
{
	if (q->qp)
		uroce_qp_destroy(q->qp);
	if (q->scq)
		uroce_cq_destroy(q->scq);
	if (q->rcq)
		uroce_cq_destroy(q->rcq);
	memset(q, 0, sizeof(*q));
}

int simqp_to_init(struct simqp *q, const struct simqp_cfg *c)
{
	struct uroce_qp_attr a;
	unsigned mask = UROCE_QP_STATE | UROCE_QP_PKEY_INDEX | UROCE_QP_PORT;

	memset(&a, 0, sizeof(a));
	a.qp_state = UROCE_QPS_INIT;
	a.pkey_index = 0;
	a.port_num = 1;
	if (c->type == UROCE_QPT_UD || c->type == UROCE_QPT_GSI) {
		a.qkey = c->qkey;
		mask |= UROCE_QP_QKEY;
		if (c->type == UROCE_QPT_GSI)
			mask &= ~(unsigned)UROCE_QP_PORT;
	} else {
		a.qp_access_flags = c->access;
		mask |= UROCE_QP_ACCESS_FLAGS;
	}
	return uroce_qp_modify(q->qp, &a, mask);
}

int simqp_to_rtr(struct simenv *s, struct simqp *q, int peer_node, uint32_t dest_qpn,
		 uint32_t rq_psn, const struct simqp_cfg *c)
{
	struct uroce_qp_attr a;
	unsigned mask = UROCE_QP_STATE;

	memset(&a, 0, sizeof(a));
	a.qp_state = UROCE_QPS_RTR;
	if (c->type == UROCE_QPT_RC || c->type == UROCE_QPT_UC) {
		sim_av(&s->net, q->node, peer_node, &a.av);
		a.path_mtu = c->mtu;
		a.dest_qp_num = dest_qpn;
		a.rq_psn = rq_psn;
		mask |= UROCE_QP_AV | UROCE_QP_PATH_MTU | UROCE_QP_DEST_QPN | UROCE_QP_RQ_PSN;
		if (c->type == UROCE_QPT_RC) {
			a.max_dest_rd_atomic = c->max_rd_atomic;
			a.min_rnr_timer = c->min_rnr_timer;
			mask |= UROCE_QP_MAX_DEST_RD_ATOMIC | UROCE_QP_MIN_RNR_TIMER;
		}
	}
	return uroce_qp_modify(q->qp, &a, mask);
}

int simqp_to_rts(struct simqp *q, uint32_t sq_psn, const struct simqp_cfg *c)
{
	struct uroce_qp_attr a;
	unsigned mask = UROCE_QP_STATE | UROCE_QP_SQ_PSN;

	memset(&a, 0, sizeof(a));
	a.qp_state = UROCE_QPS_RTS;
	a.sq_psn = sq_psn;
	if (c->type == UROCE_QPT_RC) {
		a.timeout = c->timeout;
		a.retry_cnt = c->retry_cnt;
		a.rnr_retry = c->rnr_retry;
		a.max_rd_atomic = c->max_rd_atomic;
		mask |= UROCE_QP_TIMEOUT | UROCE_QP_RETRY_CNT | UROCE_QP_RNR_RETRY |
			UROCE_QP_MAX_QP_RD_ATOMIC;
	}
	return uroce_qp_modify(q->qp, &a, mask);
}

int simqp_to_err(struct simqp *q)
{
	struct uroce_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.qp_state = UROCE_QPS_ERR;
	return uroce_qp_modify(q->qp, &a, UROCE_QP_STATE);
}

int simqp_connect(struct simenv *s, struct simqp *a, struct simqp *b, const struct simqp_cfg *c)
{
	int rc;

	rc = simqp_to_init(a, c);
	if (!rc)
		rc = simqp_to_init(b, c);
	if (!rc)
		rc = simqp_to_rtr(s, a, b->node, uroce_qp_num(b->qp), c->psn[1], c);
	if (!rc)
		rc = simqp_to_rtr(s, b, a->node, uroce_qp_num(a->qp), c->psn[0], c);
	if (!rc)
		rc = simqp_to_rts(a, c->psn[0], c);
	if (!rc)
		rc = simqp_to_rts(b, c->psn[1], c);
	return rc;
}

/* ---- memory ------------------------------------------------------------------------------ */

int simmr_reg_iova(struct uroce_pd *pd, size_t len, uint64_t iova, unsigned access, struct simmr *m)
{
	int rc;

	memset(m, 0, sizeof(*m));
	m->base = malloc(len + 2 * SIMMR_GUARD);
	if (!m->base)
		return -ENOMEM;
	memset(m->base, CANARY, len + 2 * SIMMR_GUARD);
	m->buf = m->base + SIMMR_GUARD;
	m->len = len;
	m->iova = iova ? iova : (uint64_t)(uintptr_t)m->buf;
	rc = uroce_mr_reg(pd, m->buf, len, m->iova, access, &m->mr);
	if (rc) {
		free(m->base);
		m->base = NULL;
		return rc;
	}
	m->lkey = uroce_mr_lkey(m->mr);
	m->rkey = uroce_mr_rkey(m->mr);
	return 0;
}

int simmr_reg(struct simenv *s, int node, size_t len, unsigned access, struct simmr *m)
{
	return simmr_reg_iova(s->pd[node], len, 0, access, m);
}

void simmr_free(struct simmr *m)
{
	if (m->mr)
		uroce_mr_dereg(m->mr);
	free(m->base);
	memset(m, 0, sizeof(*m));
}

bool simmr_guard_ok(const struct simmr *m)
{
	for (size_t i = 0; i < SIMMR_GUARD; i++)
		if (m->base[i] != CANARY || m->buf[m->len + i] != CANARY)
			return false;
	return true;
}

static uint8_t pattern_byte(size_t i, uint64_t seed)
{
	uint64_t x = (i + 1) * 0x9E3779B97F4A7C15ull ^ seed * 0xBF58476D1CE4E5B9ull;

	x ^= x >> 29;
	return (uint8_t)(x ^ (x >> 17) ^ (x >> 40));
}

void sim_pattern(uint8_t *p, size_t len, uint64_t seed)
{
	for (size_t i = 0; i < len; i++)
		p[i] = pattern_byte(i, seed);
}

bool sim_pattern_ok(const uint8_t *p, size_t len, uint64_t seed)
{
	for (size_t i = 0; i < len; i++)
		if (p[i] != pattern_byte(i, seed))
			return false;
	return true;
}

int simcq_drain(struct uroce_cq *cq, struct uroce_wc *wc, int max)
{
	int n = 0;

	while (n < max) {
		int k = uroce_cq_poll(cq, max - n, wc + n);

		if (k <= 0)
			break;
		n += k;
	}
	return n;
}

/* ---- posting ----------------------------------------------------------------------------- */

int sim_post_send1(struct uroce_qp *qp, uint64_t wr_id, enum uroce_wr_opcode op,
		   const struct simmr *m, size_t off, uint32_t len, unsigned flags)
{
	struct uroce_sge sge = wr_sge(simmr_va(m, off), len, m->lkey);
	struct uroce_send_wr wr = wr_op(op, wr_id, &sge, len ? 1 : 0, flags), *bad = NULL;

	wr.imm_data = (uint32_t)wr_id ^ 0xC0FFEE00u;
	return uroce_post_send(qp, &wr, &bad);
}

int sim_post_recv1(struct uroce_qp *qp, uint64_t wr_id, const struct simmr *m, size_t off,
		   uint32_t len)
{
	struct uroce_sge sge = wr_sge(simmr_va(m, off), len, m->lkey);
	struct uroce_recv_wr wr = wr_recv(wr_id, &sge, 1), *bad = NULL;

	return uroce_post_recv(qp, &wr, &bad);
}

int sim_post_write(struct uroce_qp *qp, uint64_t wr_id, enum uroce_wr_opcode op,
		   const struct simmr *m, size_t off, uint32_t len, uint64_t raddr, uint32_t rkey,
		   unsigned flags, uint32_t imm)
{
	struct uroce_sge sge = wr_sge(simmr_va(m, off), len, m->lkey);
	struct uroce_send_wr wr = wr_rdma(op, wr_id, &sge, len ? 1 : 0, raddr, rkey, flags),
			     *bad = NULL;

	wr.imm_data = imm;
	return uroce_post_send(qp, &wr, &bad);
}

int sim_post_atomic(struct uroce_qp *qp, uint64_t wr_id, enum uroce_wr_opcode op,
		    const struct simmr *m, size_t off, uint64_t raddr, uint32_t rkey,
		    uint64_t compare_add, uint64_t swap, unsigned flags)
{
	struct uroce_sge sge = wr_sge(simmr_va(m, off), 8, m->lkey);
	struct uroce_send_wr wr = wr_atomic(op, wr_id, &sge, raddr, rkey, compare_add, swap, flags),
			     *bad = NULL;

	return uroce_post_send(qp, &wr, &bad);
}

void sim_events_take(struct uroce_eng *e, struct sim_evtally *t)
{
	struct uroce_event ev;

	while (uroce_eng_poll_event(e, &ev) == 1) {
		unsigned i = (unsigned)ev.type < 16 ? (unsigned)ev.type : 15;

		t->n[i]++;
		t->last[i] = ev;
	}
}

const char *sim_wc_status_name(enum uroce_wc_status s)
{
	static const char *const names[] = {
		"SUCCESS",	    "LOC_LEN_ERR",	 "LOC_QP_OP_ERR",     "LOC_EEC_OP_ERR",
		"LOC_PROT_ERR",	    "WR_FLUSH_ERR",	 "MW_BIND_ERR",	      "BAD_RESP_ERR",
		"LOC_ACCESS_ERR",   "REM_INV_REQ_ERR",	 "REM_ACCESS_ERR",    "REM_OP_ERR",
		"RETRY_EXC_ERR",    "RNR_RETRY_EXC_ERR", "LOC_RDD_VIOL_ERR",  "REM_INV_RD_REQ_ERR",
		"REM_ABORT_ERR",    "INV_EECN_ERR",	 "INV_EEC_STATE_ERR", "FATAL_ERR",
		"RESP_TIMEOUT_ERR", "GENERAL_ERR",
	};

	if ((unsigned)s < sizeof(names) / sizeof(names[0]))
		return names[s];
	return "?";
}
