/* SPDX-License-Identifier: MIT */
/* Queue pairs: creation, the IBTA state machine (11.2.4.1 / ib_modify_qp_is_ok), flush. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "transport/internal.h"

enum qpt_idx { T_RC, T_UC, T_UD, T_GSI, T_MAX };

struct qp_trans {
	bool valid;
	unsigned req[T_MAX];
	unsigned opt[T_MAX];
};

#define S(x) UROCE_QPS_##x
#define M(x) UROCE_QP_##x

/* Every transition the IBTA allows, with its required and optional attributes per QP type. */
static const struct qp_trans trans[7][7] = {
	[S(RESET)] = {
		[S(RESET)] = { .valid = true },
		[S(INIT)] = {
			.valid = true,
			.req = {
				[T_RC] = M(PKEY_INDEX) | M(PORT) | M(ACCESS_FLAGS),
				[T_UC] = M(PKEY_INDEX) | M(PORT) | M(ACCESS_FLAGS),
				[T_UD] = M(PKEY_INDEX) | M(PORT) | M(QKEY),
				[T_GSI] = M(PKEY_INDEX) | M(QKEY),
			},
		},
	},
	[S(INIT)] = {
		[S(INIT)] = {
			.valid = true,
			.opt = {
				[T_RC] = M(PKEY_INDEX) | M(PORT) | M(ACCESS_FLAGS),
				[T_UC] = M(PKEY_INDEX) | M(PORT) | M(ACCESS_FLAGS),
				[T_UD] = M(PKEY_INDEX) | M(PORT) | M(QKEY),
				[T_GSI] = M(PKEY_INDEX) | M(QKEY),
			},
		},
		[S(RTR)] = {
			.valid = true,
			.req = {
				[T_RC] = M(AV) | M(PATH_MTU) | M(DEST_QPN) | M(RQ_PSN) |
					 M(MAX_DEST_RD_ATOMIC) | M(MIN_RNR_TIMER),
				[T_UC] = M(AV) | M(PATH_MTU) | M(DEST_QPN) | M(RQ_PSN),
			},
			.opt = {
				[T_RC] = M(ALT_PATH) | M(ACCESS_FLAGS) | M(PKEY_INDEX),
				[T_UC] = M(ALT_PATH) | M(ACCESS_FLAGS) | M(PKEY_INDEX),
				[T_UD] = M(PKEY_INDEX) | M(QKEY),
				[T_GSI] = M(PKEY_INDEX) | M(QKEY),
			},
		},
	},
	[S(RTR)] = {
		[S(RTS)] = {
			.valid = true,
			.req = {
				[T_RC] = M(TIMEOUT) | M(RETRY_CNT) | M(RNR_RETRY) | M(SQ_PSN) |
					 M(MAX_QP_RD_ATOMIC),
				[T_UC] = M(SQ_PSN),
				[T_UD] = M(SQ_PSN),
				[T_GSI] = M(SQ_PSN),
			},
			.opt = {
				[T_RC] = M(CUR_STATE) | M(ALT_PATH) | M(ACCESS_FLAGS) |
					 M(MIN_RNR_TIMER) | M(PATH_MIG_STATE),
				[T_UC] = M(CUR_STATE) | M(ALT_PATH) | M(ACCESS_FLAGS) |
					 M(PATH_MIG_STATE),
				[T_UD] = M(CUR_STATE) | M(QKEY),
				[T_GSI] = M(CUR_STATE) | M(QKEY),
			},
		},
	},
	[S(RTS)] = {
		[S(RTS)] = {
			.valid = true,
			.opt = {
				[T_RC] = M(CUR_STATE) | M(ACCESS_FLAGS) | M(ALT_PATH) |
					 M(PATH_MIG_STATE) | M(MIN_RNR_TIMER),
				[T_UC] = M(CUR_STATE) | M(ACCESS_FLAGS) | M(ALT_PATH) |
					 M(PATH_MIG_STATE),
				[T_UD] = M(CUR_STATE) | M(QKEY),
				[T_GSI] = M(CUR_STATE) | M(QKEY),
			},
		},
		[S(SQD)] = {
			.valid = true,
			.opt = {
				[T_RC] = M(EN_SQD_ASYNC_NOTIFY),
				[T_UC] = M(EN_SQD_ASYNC_NOTIFY),
				[T_UD] = M(EN_SQD_ASYNC_NOTIFY),
				[T_GSI] = M(EN_SQD_ASYNC_NOTIFY),
			},
		},
	},
	[S(SQD)] = {
		[S(RTS)] = {
			.valid = true,
			.opt = {
				[T_RC] = M(CUR_STATE) | M(ALT_PATH) | M(ACCESS_FLAGS) |
					 M(MIN_RNR_TIMER) | M(PATH_MIG_STATE),
				[T_UC] = M(CUR_STATE) | M(ALT_PATH) | M(ACCESS_FLAGS) |
					 M(PATH_MIG_STATE),
				[T_UD] = M(CUR_STATE) | M(QKEY),
				[T_GSI] = M(CUR_STATE) | M(QKEY),
			},
		},
		[S(SQD)] = {
			.valid = true,
			.opt = {
				[T_RC] = M(PORT) | M(AV) | M(TIMEOUT) | M(RETRY_CNT) | M(RNR_RETRY) |
					 M(MAX_QP_RD_ATOMIC) | M(MAX_DEST_RD_ATOMIC) | M(ALT_PATH) |
					 M(ACCESS_FLAGS) | M(PKEY_INDEX) | M(MIN_RNR_TIMER) |
					 M(PATH_MIG_STATE),
				[T_UC] = M(AV) | M(ALT_PATH) | M(ACCESS_FLAGS) | M(PKEY_INDEX) |
					 M(PATH_MIG_STATE),
				[T_UD] = M(PKEY_INDEX) | M(QKEY),
				[T_GSI] = M(PKEY_INDEX) | M(QKEY),
			},
		},
	},
	[S(SQE)] = {
		[S(RTS)] = {
			.valid = true,
			.opt = {
				[T_UC] = M(CUR_STATE) | M(ACCESS_FLAGS),
				[T_UD] = M(CUR_STATE) | M(QKEY),
				[T_GSI] = M(CUR_STATE) | M(QKEY),
			},
		},
	},
};

#undef S
#undef M

static enum qpt_idx qpt_index(enum uroce_qp_type t)
{
	switch (t) {
	case UROCE_QPT_RC:
		return T_RC;
	case UROCE_QPT_UC:
		return T_UC;
	case UROCE_QPT_UD:
		return T_UD;
	case UROCE_QPT_GSI:
		return T_GSI;
	}
	return T_MAX;
}

/* Is cur -> next with this mask legal for the type? (Any state may go to RESET or ERR.) */
static bool modify_ok(enum uroce_qp_state cur, enum uroce_qp_state next, enum uroce_qp_type type,
		      unsigned mask)
{
	enum qpt_idx t = qpt_index(type);

	if (t == T_MAX || cur > UROCE_QPS_ERR || next > UROCE_QPS_ERR)
		return false;
	if (next == UROCE_QPS_RESET || next == UROCE_QPS_ERR) {
		/* Only the state (and the current state) may be given. */
		return !(mask & ~(unsigned)(UROCE_QP_STATE | UROCE_QP_CUR_STATE));
	}
	const struct qp_trans *tr = &trans[cur][next];

	if (!tr->valid)
		return false;
	unsigned req = tr->req[t] | UROCE_QP_STATE;
	unsigned allowed = req | tr->opt[t];

	if (cur == next && !(mask & UROCE_QP_STATE))
		req &= ~(unsigned)UROCE_QP_STATE;
	return (mask & req) == req && !(mask & ~allowed);
}

struct uroce_qp *uroce_qp_lookup(struct uroce_eng *e, uint32_t qpn)
{
	if (qpn == UROCE_GSI_QPN)
		return e->gsi;
	if (qpn < e->cfg.qpn_base || qpn - e->cfg.qpn_base >= e->cfg.max_qp)
		return NULL;
	return e->qps[qpn - e->cfg.qpn_base];
}

static int sq_init(struct uroce_sq *sq, const struct uroce_qp_cap *cap)
{
	sq->max_wr = cap->max_send_wr ? cap->max_send_wr : 1;
	sq->max_sge = cap->max_send_sge ? cap->max_send_sge : 1;
	sq->max_inline = cap->max_inline_data;
	sq->size = uroce_pow2(sq->max_wr);
	sq->ring = calloc(sq->size, sizeof(*sq->ring));
	sq->sges = calloc((size_t)sq->size * sq->max_sge, sizeof(*sq->sges));
	sq->inline_buf = sq->max_inline ? calloc(sq->size, sq->max_inline) : NULL;
	if (!sq->ring || !sq->sges || (sq->max_inline && !sq->inline_buf))
		return -ENOMEM;
	for (uint32_t i = 0; i < sq->size; i++) {
		sq->ring[i].sge = &sq->sges[(size_t)i * sq->max_sge];
		if (sq->inline_buf)
			sq->ring[i].inline_data = &sq->inline_buf[(size_t)i * sq->max_inline];
	}
	return 0;
}

static int rq_init(struct uroce_rq *rq, const struct uroce_qp_cap *cap)
{
	rq->max_wr = cap->max_recv_wr ? cap->max_recv_wr : 1;
	rq->max_sge = cap->max_recv_sge ? cap->max_recv_sge : 1;
	rq->size = uroce_pow2(rq->max_wr);
	rq->ring = calloc(rq->size, sizeof(*rq->ring));
	rq->sges = calloc((size_t)rq->size * rq->max_sge, sizeof(*rq->sges));
	if (!rq->ring || !rq->sges)
		return -ENOMEM;
	for (uint32_t i = 0; i < rq->size; i++)
		rq->ring[i].sge = &rq->sges[(size_t)i * rq->max_sge];
	return 0;
}

static void qp_free(struct uroce_qp *qp)
{
	free(qp->sq.ring);
	free(qp->sq.sges);
	free(qp->sq.inline_buf);
	free(qp->own_rq.ring);
	free(qp->own_rq.sges);
	free(qp->resp.res);
	free(qp);
}

/* Responder, requester and completer state as after RESET. */
static void qp_reset(struct uroce_qp *qp)
{
	struct uroce_rd_res *res = qp->resp.res;
	uint32_t nres = qp->resp.nres;

	memset(&qp->req, 0, sizeof(qp->req));
	memset(&qp->comp, 0, sizeof(qp->comp));
	memset(&qp->resp, 0, sizeof(qp->resp));
	qp->resp.res = res;
	qp->resp.nres = nres;
	if (res)
		memset(res, 0, nres * sizeof(*res));
	qp->comp.timeout_at = UROCE_NEVER;
	qp->comp.ask_at = UROCE_NEVER;
	qp->sq.head = qp->sq.cur = qp->sq.tail = 0;
	qp->own_rq.head = qp->own_rq.tail = 0;
	qp->comm_est_sent = false;
	qp->last_wqe_sent = false;
	uroce_qp_unschedule(qp);
}

int uroce_qp_create(struct uroce_pd *pd, const struct uroce_qp_init *init, struct uroce_qp **out)
{
	struct uroce_eng *e = pd->eng;
	const struct uroce_qp_cap *cap = &init->cap;

	if (qpt_index(init->type) == T_MAX || !init->send_cq || !init->recv_cq)
		return -EINVAL;
	if (cap->max_send_wr > UROCE_MAX_QP_WR || cap->max_recv_wr > UROCE_MAX_QP_WR ||
	    cap->max_send_sge > UROCE_MAX_SGE || cap->max_recv_sge > UROCE_MAX_SGE ||
	    cap->max_inline_data > UROCE_MAX_INLINE)
		return -EINVAL;
	if (init->srq && init->srq->pd != pd)
		return -EINVAL;
	if (init->type == UROCE_QPT_GSI && e->gsi)
		return -EBUSY;

	uint32_t slot = 0;

	if (init->type != UROCE_QPT_GSI) {
		uint32_t i;

		for (i = 0; i < e->cfg.max_qp; i++) {
			slot = (e->qp_next + i) % e->cfg.max_qp;
			if (!e->qps[slot])
				break;
		}
		if (i == e->cfg.max_qp)
			return -ENOMEM;
	}
	struct uroce_qp *qp = calloc(1, sizeof(*qp));

	if (!qp)
		return -ENOMEM;
	qp->eng = e;
	qp->pd = pd;
	qp->init = *init;
	if (sq_init(&qp->sq, cap) || (!init->srq && rq_init(&qp->own_rq, cap))) {
		qp_free(qp);
		return -ENOMEM;
	}
	/* Report what was actually granted. */
	qp->init.cap.max_send_wr = qp->sq.max_wr;
	qp->init.cap.max_send_sge = qp->sq.max_sge;
	if (!init->srq) {
		qp->init.cap.max_recv_wr = qp->own_rq.max_wr;
		qp->init.cap.max_recv_sge = qp->own_rq.max_sge;
	} else {
		qp->init.cap.max_recv_wr = 0;
		qp->init.cap.max_recv_sge = 0;
	}
	qp->rq = init->srq ? &init->srq->rq : &qp->own_rq;
	qp->attr.qp_state = UROCE_QPS_RESET;
	/* Connected QPs get their path MTU at RTR; UD and GSI use the port's (as rxe does). */
	qp->attr.path_mtu = init->type == UROCE_QPT_UD || init->type == UROCE_QPT_GSI
				    ? (enum uroce_mtu)e->cfg.port_mtu
				    : UROCE_MTU_1024;
	qp->mtu = uroce_mtu_bytes(qp->attr.path_mtu);
	qp->attr.cap = qp->init.cap;
	qp->attr.max_rd_atomic = 1;
	qp->attr.max_dest_rd_atomic = 1;
	qp->comp.timeout_at = UROCE_NEVER;
	qp->comp.ask_at = UROCE_NEVER;
	qp->timed_idx = UROCE_NOT_TIMED;
	if (init->type == UROCE_QPT_GSI) {
		qp->qpn = UROCE_GSI_QPN;
		qp->attr.qkey = UROCE_GSI_QKEY;
		e->gsi = qp;
	} else {
		qp->qpn = e->cfg.qpn_base + slot;
		qp->idx = slot;
		e->qps[slot] = qp;
		e->qp_next = (slot + 1) % e->cfg.max_qp;
	}
	qp->live_idx = e->nqps;
	e->live[e->nqps++] = qp;
	pd->refs++;
	init->send_cq->refs++;
	init->recv_cq->refs++;
	if (init->srq)
		init->srq->refs++;
	*out = qp;
	return 0;
}

int uroce_qp_destroy(struct uroce_qp *qp)
{
	struct uroce_eng *e = qp->eng;

	uroce_qp_unschedule(qp);
	uroce_qp_untimed(qp);
	uroce_mcast_detach_all(qp);
	uroce_mw_forget_qp(qp);
	if (qp == e->gsi)
		e->gsi = NULL;
	else
		e->qps[qp->idx] = NULL;
	e->live[qp->live_idx] = e->live[--e->nqps];
	e->live[qp->live_idx]->live_idx = qp->live_idx;
	qp->pd->refs--;
	qp->init.send_cq->refs--;
	qp->init.recv_cq->refs--;
	if (qp->init.srq)
		qp->init.srq->refs--;
	qp_free(qp);
	return 0;
}

uint32_t uroce_qp_num(const struct uroce_qp *qp)
{
	return qp->qpn;
}

enum uroce_qp_state uroce_qp_state(const struct uroce_qp *qp)
{
	return qp->attr.qp_state;
}

int uroce_qp_query(const struct uroce_qp *qp, struct uroce_qp_attr *attr,
		   struct uroce_qp_init *init)
{
	if (attr) {
		*attr = qp->attr;
		attr->cur_qp_state = qp->attr.qp_state;
		attr->sq_draining = qp->attr.qp_state == UROCE_QPS_SQD && qp->sq.cur != qp->sq.head;
		/* The PSNs as they are now, not as last set (rxe_qp_to_attr, and a NIC's query
		 * too): the responder's expected PSN once it receives, the requester's next PSN
		 * once it sends. */
		enum uroce_qp_state st = qp->attr.qp_state;
		bool connected = qp->init.type == UROCE_QPT_RC || qp->init.type == UROCE_QPT_UC;

		if (connected && st != UROCE_QPS_RESET && st != UROCE_QPS_INIT)
			attr->rq_psn = qp->resp.epsn;
		if (connected && st != UROCE_QPS_RESET && st != UROCE_QPS_INIT &&
		    st != UROCE_QPS_RTR)
			attr->sq_psn = qp->req.psn;
	}
	if (init)
		*init = qp->init;
	return 0;
}

/* Check attribute values before anything changes. */
static int attr_check(const struct uroce_qp *qp, const struct uroce_qp_attr *a, unsigned mask)
{
	if ((mask & UROCE_QP_PKEY_INDEX) && a->pkey_index >= UROCE_MAX_PKEYS)
		return -EINVAL;
	if ((mask & UROCE_QP_PORT) && a->port_num != 1)
		return -EINVAL;
	if ((mask & UROCE_QP_PATH_MTU) &&
	    (a->path_mtu < UROCE_MTU_256 || a->path_mtu > UROCE_MTU_4096))
		return -EINVAL;
	if ((mask & UROCE_QP_RETRY_CNT) && a->retry_cnt > 7)
		return -EINVAL;
	if ((mask & UROCE_QP_RNR_RETRY) && a->rnr_retry > 7)
		return -EINVAL;
	if ((mask & UROCE_QP_MIN_RNR_TIMER) && a->min_rnr_timer > 31)
		return -EINVAL;
	if ((mask & UROCE_QP_TIMEOUT) && a->timeout > 31)
		return -EINVAL;
	if ((mask & UROCE_QP_MAX_QP_RD_ATOMIC) && a->max_rd_atomic > UROCE_MAX_RD_ATOMIC)
		return -EINVAL;
	if ((mask & UROCE_QP_MAX_DEST_RD_ATOMIC) && a->max_dest_rd_atomic > UROCE_MAX_RD_ATOMIC)
		return -EINVAL;
	if ((mask & UROCE_QP_DEST_QPN) && (a->dest_qp_num > 0xFFFFFF || a->dest_qp_num == 0))
		return -EINVAL;
	/* ON_DEMAND grants a QP nothing; accepted, as the kernel's drivers ignore it (pyverbs sets a
	 * QP's flags to its regions' access flags). */
	if ((mask & UROCE_QP_ACCESS_FLAGS) &&
	    (a->qp_access_flags & ~(unsigned)(UROCE_ACCESS_LOCAL_WRITE | UROCE_ACCESS_REMOTE_WRITE |
					      UROCE_ACCESS_REMOTE_READ |
					      UROCE_ACCESS_REMOTE_ATOMIC | UROCE_ACCESS_MW_BIND |
					      UROCE_ACCESS_ON_DEMAND)))
		return -EINVAL;
	if (mask & UROCE_QP_ALT_PATH)
		return -EOPNOTSUPP; /* no automatic path migration on RoCE */
	if ((mask & UROCE_QP_CUR_STATE) && a->cur_qp_state != qp->attr.qp_state)
		return -EINVAL;
	if (mask & UROCE_QP_CAP)
		return -EINVAL; /* resizing is not supported (nor by rxe) */
	return 0;
}

int uroce_qp_modify(struct uroce_qp *qp, const struct uroce_qp_attr *a, unsigned mask)
{
	enum uroce_qp_state cur = qp->attr.qp_state;
	enum uroce_qp_state next = mask & UROCE_QP_STATE ? a->qp_state : cur;
	int rc;

	if (!modify_ok(cur, next, qp->init.type, mask))
		return -EINVAL;
	rc = attr_check(qp, a, mask);
	if (rc)
		return rc;
	uint8_t nres = (mask & UROCE_QP_MAX_DEST_RD_ATOMIC) && a->max_dest_rd_atomic
			       ? a->max_dest_rd_atomic
			       : 1;

	if (qp->init.type == UROCE_QPT_RC && (mask & UROCE_QP_MAX_DEST_RD_ATOMIC) &&
	    nres != qp->resp.nres) {
		struct uroce_rd_res *res = calloc(nres, sizeof(*res));

		if (!res)
			return -ENOMEM;
		free(qp->resp.res);
		qp->resp.res = res;
		qp->resp.nres = nres;
		qp->resp.res_next = 0;
		qp->resp.res_send = 0;
		qp->resp.n_sending = 0;
	}

	/* Apply. */
	struct uroce_qp_attr *q = &qp->attr;

	if (mask & UROCE_QP_ACCESS_FLAGS)
		q->qp_access_flags = a->qp_access_flags;
	if (mask & UROCE_QP_PKEY_INDEX)
		q->pkey_index = a->pkey_index;
	if (mask & UROCE_QP_PORT)
		q->port_num = a->port_num;
	if (mask & UROCE_QP_QKEY)
		q->qkey = a->qkey;
	if (mask & UROCE_QP_AV)
		q->av = a->av;
	if (mask & UROCE_QP_PATH_MTU) {
		q->path_mtu = a->path_mtu;
		qp->mtu = uroce_mtu_bytes(a->path_mtu);
	}
	if (mask & UROCE_QP_TIMEOUT)
		q->timeout = a->timeout;
	if (mask & UROCE_QP_RETRY_CNT) {
		q->retry_cnt = a->retry_cnt;
		qp->comp.retry_left = a->retry_cnt;
	}
	if (mask & UROCE_QP_RNR_RETRY) {
		q->rnr_retry = a->rnr_retry;
		qp->comp.rnr_retry_left = a->rnr_retry;
	}
	if (mask & UROCE_QP_RQ_PSN) {
		q->rq_psn = uroce_psn(a->rq_psn);
		qp->resp.epsn = q->rq_psn;
	}
	if (mask & UROCE_QP_SQ_PSN) {
		q->sq_psn = uroce_psn(a->sq_psn);
		qp->req.psn = q->sq_psn;
		qp->req.psn_max = q->sq_psn;
		qp->comp.psn = q->sq_psn;
	}
	if (mask & UROCE_QP_MAX_QP_RD_ATOMIC)
		q->max_rd_atomic = a->max_rd_atomic;
	if (mask & UROCE_QP_MAX_DEST_RD_ATOMIC)
		q->max_dest_rd_atomic = a->max_dest_rd_atomic;
	if (mask & UROCE_QP_MIN_RNR_TIMER)
		q->min_rnr_timer = a->min_rnr_timer;
	if (mask & UROCE_QP_DEST_QPN)
		q->dest_qp_num = a->dest_qp_num;
	if (mask & UROCE_QP_EN_SQD_ASYNC_NOTIFY)
		q->en_sqd_async_notify = a->en_sqd_async_notify;

	q->qp_state = next;
	switch (next) {
	case UROCE_QPS_RESET:
		qp_reset(qp);
		/* Completions of the QP's previous life (flushes, errors) go with it, as libmlx5
		 * and libmlx4 clean their CQs on RESET: a QP brought back from ERR must not hand
		 * them out as its new work's. */
		uroce_cq_clean(qp->init.send_cq, uroce_qp_num(qp));
		if (qp->init.recv_cq != qp->init.send_cq)
			uroce_cq_clean(qp->init.recv_cq, uroce_qp_num(qp));
		break;
	case UROCE_QPS_ERR:
		if (cur != UROCE_QPS_ERR)
			uroce_qp_flush(qp);
		break;
	case UROCE_QPS_RTS:
		/* Leaving SQD or SQE: the requester resumes. */
		uroce_qp_schedule(qp);
		break;
	case UROCE_QPS_SQD:
		if (q->en_sqd_async_notify && qp->sq.cur == qp->sq.head)
			uroce_eng_event(qp->eng, UROCE_EVENT_SQ_DRAINED, qp, qp->init.user);
		break;
	case UROCE_QPS_INIT:
	case UROCE_QPS_RTR:
	case UROCE_QPS_SQE:
		break;
	}
	return 0;
}

void uroce_qp_flush_wc(struct uroce_qp *qp, struct uroce_cq *cq, uint64_t wr_id,
		       enum uroce_wc_opcode op)
{
	struct uroce_wc wc = {
		.wr_id = wr_id,
		.status = UROCE_WC_WR_FLUSH_ERR,
		.opcode = op,
		.qp_num = qp->qpn,
	};

	uroce_cq_push(cq, &wc, false);
}

/* Complete every outstanding send and receive WQE with a flush error (IBTA 10.3.1 / 11.4.1.1). */
void uroce_qp_flush(struct uroce_qp *qp)
{
	struct uroce_sq *sq = &qp->sq;

	for (; sq->head != sq->tail; sq->head++) {
		struct uroce_swqe *w = uroce_sq_at(sq, sq->head);

		if (w->state == UROCE_WQE_DONE) {
			/* Completed with an error already, or waiting to be retired in order. */
			if (w->signaled || w->status != UROCE_WC_SUCCESS) {
				struct uroce_wc wc = {
					.wr_id = w->wr.wr_id,
					.status = w->status,
					.qp_num = qp->qpn,
				};

				uroce_cq_push(qp->init.send_cq, &wc, false);
			}
			continue;
		}
		uroce_qp_flush_wc(qp, qp->init.send_cq, w->wr.wr_id, UROCE_WC_SEND);
	}
	sq->cur = sq->head;
	if (qp->req.rd_atomic)
		qp->req.rd_atomic = 0;
	qp->comp.timeout_at = UROCE_NEVER;
	qp->comp.ask_at = UROCE_NEVER;
	qp->req.rnr_until = 0;
	qp->resp.ack = UROCE_ACK_NONE;
	for (uint32_t i = 0; i < qp->resp.nres; i++)
		qp->resp.res[i].valid = false;
	qp->resp.n_sending = 0;
	if (qp->resp.have_wqe) {
		uroce_qp_flush_wc(qp, qp->init.recv_cq, qp->resp.wqe.wr_id, UROCE_WC_RECV);
		qp->resp.have_wqe = false;
	}
	if (!qp->init.srq) {
		struct uroce_rq *rq = &qp->own_rq;

		for (; rq->head != rq->tail; rq->head++)
			uroce_qp_flush_wc(qp, qp->init.recv_cq, rq->ring[rq->head & (rq->size - 1)].wr_id,
				 UROCE_WC_RECV);
	} else if (!qp->last_wqe_sent) {
		qp->last_wqe_sent = true;
		uroce_eng_event(qp->eng, UROCE_EVENT_QP_LAST_WQE_REACHED, qp, qp->init.user);
	}
	uroce_qp_unschedule(qp);
}

/* The QP moves to ERR by itself (a fatal transport error). */
void uroce_qp_to_error(struct uroce_qp *qp)
{
	if (qp->attr.qp_state == UROCE_QPS_ERR)
		return;
	qp->attr.qp_state = UROCE_QPS_ERR;
	uroce_qp_flush(qp);
}
