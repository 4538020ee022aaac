/* SPDX-License-Identifier: MIT */
/* Queue pairs: create, modify, query, destroy. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "compat/compat.h"
#include "compat/wr_batch.h"
#include "compat/ibverbs_for_rdmacm.h"

_Static_assert(IBV_QPT_RC == (int)UROCE_QPT_RC && IBV_QPT_UC == (int)UROCE_QPT_UC &&
		       IBV_QPT_UD == (int)UROCE_QPT_UD,
	       "QP types");
_Static_assert(IBV_QPS_RESET == (int)UROCE_QPS_RESET && IBV_QPS_INIT == (int)UROCE_QPS_INIT &&
		       IBV_QPS_RTR == (int)UROCE_QPS_RTR && IBV_QPS_RTS == (int)UROCE_QPS_RTS &&
		       IBV_QPS_SQD == (int)UROCE_QPS_SQD && IBV_QPS_SQE == (int)UROCE_QPS_SQE &&
		       IBV_QPS_ERR == (int)UROCE_QPS_ERR,
	       "QP states");
_Static_assert(IBV_QP_STATE == (int)UROCE_QP_STATE && IBV_QP_CUR_STATE == (int)UROCE_QP_CUR_STATE &&
		       IBV_QP_EN_SQD_ASYNC_NOTIFY == (int)UROCE_QP_EN_SQD_ASYNC_NOTIFY &&
		       IBV_QP_ACCESS_FLAGS == (int)UROCE_QP_ACCESS_FLAGS &&
		       IBV_QP_PKEY_INDEX == (int)UROCE_QP_PKEY_INDEX &&
		       IBV_QP_PORT == (int)UROCE_QP_PORT && IBV_QP_QKEY == (int)UROCE_QP_QKEY &&
		       IBV_QP_AV == (int)UROCE_QP_AV && IBV_QP_PATH_MTU == (int)UROCE_QP_PATH_MTU &&
		       IBV_QP_TIMEOUT == (int)UROCE_QP_TIMEOUT &&
		       IBV_QP_RETRY_CNT == (int)UROCE_QP_RETRY_CNT &&
		       IBV_QP_RNR_RETRY == (int)UROCE_QP_RNR_RETRY &&
		       IBV_QP_RQ_PSN == (int)UROCE_QP_RQ_PSN &&
		       IBV_QP_MAX_QP_RD_ATOMIC == (int)UROCE_QP_MAX_QP_RD_ATOMIC &&
		       IBV_QP_ALT_PATH == (int)UROCE_QP_ALT_PATH &&
		       IBV_QP_MIN_RNR_TIMER == (int)UROCE_QP_MIN_RNR_TIMER &&
		       IBV_QP_SQ_PSN == (int)UROCE_QP_SQ_PSN &&
		       IBV_QP_MAX_DEST_RD_ATOMIC == (int)UROCE_QP_MAX_DEST_RD_ATOMIC &&
		       IBV_QP_PATH_MIG_STATE == (int)UROCE_QP_PATH_MIG_STATE &&
		       IBV_QP_CAP == (int)UROCE_QP_CAP && IBV_QP_DEST_QPN == (int)UROCE_QP_DEST_QPN,
	       "QP attribute mask bits");
_Static_assert(sizeof(struct ibv_qp) == 160 && sizeof(struct ibv_qp_attr) == 144, "v44 QP structs");

#define COMPAT_QP_ATTR_KNOWN ((int)(UROCE_QP_DEST_QPN << 1) - 1)

static void cap_to_ibv(const struct uroce_qp_cap *u, struct ibv_qp_cap *c)
{
	c->max_send_wr = u->max_send_wr;
	c->max_recv_wr = u->max_recv_wr;
	c->max_send_sge = u->max_send_sge;
	c->max_recv_sge = u->max_recv_sge;
	c->max_inline_data = u->max_inline_data;
}

static void cap_from_ibv(const struct ibv_qp_cap *c, struct uroce_qp_cap *u)
{
	u->max_send_wr = c->max_send_wr;
	u->max_recv_wr = c->max_recv_wr;
	u->max_send_sge = c->max_send_sge;
	u->max_recv_sge = c->max_recv_sge;
	u->max_inline_data = c->max_inline_data;
}

static struct ibv_qp *create_qp(struct ibv_pd *ibpd, struct ibv_qp_init_attr *attr, bool gsi)
{
	struct compat_pd *pd = compat_container_of(ibpd, struct compat_pd, pd);
	struct uroce_ctx *uc = compat_uc(ibpd->context);
	struct uroce_qp_init init = {0};
	struct uroce_qp_attr qa;
	struct compat_qp *qp;
	int err;

	switch (attr->qp_type) {
	case IBV_QPT_RC:
	case IBV_QPT_UC:
	case IBV_QPT_UD:
		break;
	case IBV_QPT_RAW_PACKET:
	case IBV_QPT_XRC_SEND:
	case IBV_QPT_XRC_RECV:
	case IBV_QPT_DRIVER:
	default:
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (!attr->send_cq || !attr->recv_cq) {
		errno = EINVAL;
		return NULL;
	}
	init.type = gsi ? UROCE_QPT_GSI : (enum uroce_qp_type)attr->qp_type;
	init.send_cq = compat_container_of(attr->send_cq, struct compat_cq, cq)->ecq;
	init.recv_cq = compat_container_of(attr->recv_cq, struct compat_cq, cq)->ecq;
	init.srq = attr->srq ? compat_container_of(attr->srq, struct compat_srq, srq)->esrq : NULL;
	cap_from_ibv(&attr->cap, &init.cap);
	init.sq_sig_all = attr->sq_sig_all != 0;
	qp = calloc(1, sizeof(*qp));
	if (!qp) {
		errno = ENOMEM;
		return NULL;
	}
	init.user = qp;
	uroce_ctx_lock(uc);
	err = uroce_qp_create(pd->epd, &init, &qp->eqp);
	if (!err)
		err = uroce_qp_query(qp->eqp, &qa, &init);
	uroce_ctx_unlock(uc);
	if (err) {
		free(qp);
		errno = -err;
		return NULL;
	}
	/* What was granted (>= what was asked): rping and perftest check max_inline_data. */
	cap_to_ibv(&init.cap, &attr->cap);
	qp->qp.context = ibpd->context;
	qp->qp.qp_context = attr->qp_context;
	qp->qp.pd = ibpd;
	qp->qp.send_cq = attr->send_cq;
	qp->qp.recv_cq = attr->recv_cq;
	qp->qp.srq = attr->srq;
	qp->qp.qp_num = uroce_qp_num(qp->eqp);
	qp->qp.handle = qp->qp.qp_num;
	qp->qp.state = IBV_QPS_RESET;
	qp->qp.qp_type = attr->qp_type;
	pthread_mutex_init(&qp->qp.mutex, NULL);
	pthread_cond_init(&qp->qp.cond, NULL);
	return &qp->qp;
}

struct ibv_qp *ibv_create_qp(struct ibv_pd *ibpd, struct ibv_qp_init_attr *attr)
{
	return create_qp(ibpd, attr, false);
}

struct ibv_qp *uroce_ibv_create_gsi_qp(struct ibv_pd *ibpd, struct ibv_qp_init_attr *attr)
{
	if (attr->qp_type != IBV_QPT_UD) {
		errno = EINVAL;
		return NULL;
	}
	return create_qp(ibpd, attr, true);
}

static int attr_from_ibv(struct ibv_qp *qp, const struct ibv_qp_attr *a, int mask,
			 struct uroce_qp_attr *u)
{
	memset(u, 0, sizeof(*u));
	u->qp_state = (enum uroce_qp_state)a->qp_state;
	u->cur_qp_state = (enum uroce_qp_state)a->cur_qp_state;
	u->path_mtu = (enum uroce_mtu)a->path_mtu;
	u->qkey = a->qkey;
	u->rq_psn = a->rq_psn;
	u->sq_psn = a->sq_psn;
	u->dest_qp_num = a->dest_qp_num;
	u->qp_access_flags = a->qp_access_flags;
	cap_from_ibv(&a->cap, &u->cap);
	if (mask & IBV_QP_AV) {
		int err = uroce_compat_av_from_ah_attr(qp->context, &a->ah_attr, &u->av);

		if (err)
			return err;
	}
	u->pkey_index = a->pkey_index;
	u->en_sqd_async_notify = a->en_sqd_async_notify != 0;
	u->sq_draining = a->sq_draining != 0;
	u->max_rd_atomic = a->max_rd_atomic;
	u->max_dest_rd_atomic = a->max_dest_rd_atomic;
	u->min_rnr_timer = a->min_rnr_timer;
	u->port_num = a->port_num;
	u->timeout = a->timeout;
	u->retry_cnt = a->retry_cnt;
	u->rnr_retry = a->rnr_retry;
	return 0;
}

int ibv_modify_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr, int attr_mask)
{
	struct compat_qp *qp = compat_container_of(ibqp, struct compat_qp, qp);
	struct uroce_ctx *uc = compat_uc(ibqp->context);
	struct uroce_qp_attr u;
	int err;

	if (attr_mask & ~COMPAT_QP_ATTR_KNOWN)
		return EOPNOTSUPP; /* rate limit, ... */
	if ((attr_mask & IBV_QP_PORT) && attr->port_num != UROCE_DEV_PORT)
		return EINVAL;
	err = attr_from_ibv(ibqp, attr, attr_mask, &u);
	if (err)
		return -err;
	uroce_ctx_lock(uc);
	uroce_ctx_poll_idle(uc); /* ACKs a busy poller's round held back leave first */
	err = uroce_qp_modify(qp->eqp, &u, (unsigned)attr_mask);
	if (!err)
		ibqp->state = (enum ibv_qp_state)uroce_qp_state(qp->eqp);
	uroce_ctx_unlock(uc);
	/* Moving to ERR may have queued flush completions: let the progress thread notify. */
	if (!err && (attr_mask & IBV_QP_STATE))
		uroce_ctx_kick(uc);
	return -err;
}

int ibv_query_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr, int attr_mask,
		 struct ibv_qp_init_attr *init_attr)
{
	struct compat_qp *qp = compat_container_of(ibqp, struct compat_qp, qp);
	struct uroce_ctx *uc = compat_uc(ibqp->context);
	struct uroce_qp_init init;
	struct uroce_qp_attr u;
	int err;

	(void)attr_mask; /* everything is cheap: fill it all, as most providers do */
	uroce_ctx_lock(uc);
	err = uroce_qp_query(qp->eqp, &u, &init);
	uroce_ctx_unlock(uc);
	if (err)
		return -err;
	memset(attr, 0, sizeof(*attr));
	attr->qp_state = (enum ibv_qp_state)u.qp_state;
	attr->cur_qp_state = (enum ibv_qp_state)u.qp_state;
	attr->path_mtu = (enum ibv_mtu)u.path_mtu;
	attr->path_mig_state = IBV_MIG_MIGRATED;
	attr->qkey = u.qkey;
	attr->rq_psn = u.rq_psn;
	attr->sq_psn = u.sq_psn;
	attr->dest_qp_num = u.dest_qp_num;
	attr->qp_access_flags = u.qp_access_flags;
	cap_to_ibv(&init.cap, &attr->cap);
	uroce_compat_ah_attr_from_av(&u.av, &attr->ah_attr);
	attr->pkey_index = u.pkey_index;
	attr->en_sqd_async_notify = u.en_sqd_async_notify;
	attr->sq_draining = u.sq_draining;
	attr->max_rd_atomic = u.max_rd_atomic;
	attr->max_dest_rd_atomic = u.max_dest_rd_atomic;
	attr->min_rnr_timer = u.min_rnr_timer;
	attr->port_num = u.port_num ? u.port_num : UROCE_DEV_PORT;
	attr->timeout = u.timeout;
	attr->retry_cnt = u.retry_cnt;
	attr->rnr_retry = u.rnr_retry;
	if (init_attr) {
		memset(init_attr, 0, sizeof(*init_attr));
		init_attr->qp_context = ibqp->qp_context;
		init_attr->send_cq = ibqp->send_cq;
		init_attr->recv_cq = ibqp->recv_cq;
		init_attr->srq = ibqp->srq;
		cap_to_ibv(&init.cap, &init_attr->cap);
		init_attr->qp_type = ibqp->qp_type;
		init_attr->sq_sig_all = init.sq_sig_all;
	}
	ibqp->state = attr->qp_state;
	return 0;
}

int ibv_destroy_qp(struct ibv_qp *ibqp)
{
	struct compat_qp *qp = compat_container_of(ibqp, struct compat_qp, qp);
	struct compat_ctx *ctx = compat_ctx_of(ibqp->context);
	int err;

	uroce_ctx_lock(ctx->uc);
	uroce_ctx_poll_idle(ctx->uc); /* ACKs a busy poller's round held back leave first */
	uroce_compat_drain_events(ctx); /* no engine event may name the QP afterwards */
	err = uroce_qp_destroy(qp->eqp);
	if (!err) {
		uroce_compat_forget_async(ctx, ibqp);
		uroce_ctx_mcast_sync(ctx->uc); /* its groups may have lost their last QP */
	}
	uroce_ctx_unlock(ctx->uc);
	if (err)
		return -err;
	uroce_compat_wait_acked(&ibqp->mutex, &ibqp->cond, &ibqp->events_completed,
				&qp->async_reported);
	pthread_cond_destroy(&ibqp->cond);
	pthread_mutex_destroy(&ibqp->mutex);
	uroce_compat_wr_batch_free(qp->wrs);
	free(qp);
	return 0;
}
