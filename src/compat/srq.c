/* SPDX-License-Identifier: MIT */
/* Shared receive queues (ibv_post_srq_recv is in post.c). */
#include <errno.h>
#include <stdlib.h>

#include "compat/compat.h"

_Static_assert(IBV_SRQ_MAX_WR == (int)UROCE_SRQ_MAX_WR && IBV_SRQ_LIMIT == (int)UROCE_SRQ_LIMIT,
	       "SRQ attribute mask bits");

struct ibv_srq *ibv_create_srq(struct ibv_pd *ibpd, struct ibv_srq_init_attr *attr)
{
	struct compat_pd *pd = compat_container_of(ibpd, struct compat_pd, pd);
	struct uroce_ctx *uc = compat_uc(ibpd->context);
	struct uroce_srq_attr a = {
		.max_wr = attr->attr.max_wr,
		.max_sge = attr->attr.max_sge,
		.srq_limit = attr->attr.srq_limit,
	};
	struct compat_srq *srq = calloc(1, sizeof(*srq));
	int err;

	if (!srq) {
		errno = ENOMEM;
		return NULL;
	}
	uroce_ctx_lock(uc);
	err = uroce_srq_create(pd->epd, &a, srq, &srq->esrq);
	if (!err)
		err = uroce_srq_query(srq->esrq, &a);
	uroce_ctx_unlock(uc);
	if (err) {
		free(srq);
		errno = -err;
		return NULL;
	}
	attr->attr.max_wr = a.max_wr; /* what was granted */
	attr->attr.max_sge = a.max_sge;
	srq->srq.context = ibpd->context;
	srq->srq.srq_context = attr->srq_context;
	srq->srq.pd = ibpd;
	pthread_mutex_init(&srq->srq.mutex, NULL);
	pthread_cond_init(&srq->srq.cond, NULL);
	return &srq->srq;
}

int ibv_modify_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr, int attr_mask)
{
	struct compat_srq *srq = compat_container_of(ibsrq, struct compat_srq, srq);
	struct uroce_ctx *uc = compat_uc(ibsrq->context);
	struct uroce_srq_attr a = {
		.max_wr = attr->max_wr,
		.max_sge = attr->max_sge,
		.srq_limit = attr->srq_limit,
	};
	int err;

	if (attr_mask & ~(IBV_SRQ_MAX_WR | IBV_SRQ_LIMIT))
		return EINVAL;
	uroce_ctx_lock(uc);
	err = uroce_srq_modify(srq->esrq, &a, (unsigned)attr_mask);
	uroce_ctx_unlock(uc);
	return -err;
}

int ibv_query_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr)
{
	struct compat_srq *srq = compat_container_of(ibsrq, struct compat_srq, srq);
	struct uroce_ctx *uc = compat_uc(ibsrq->context);
	struct uroce_srq_attr a;
	int err;

	uroce_ctx_lock(uc);
	err = uroce_srq_query(srq->esrq, &a);
	uroce_ctx_unlock(uc);
	if (err)
		return -err;
	attr->max_wr = a.max_wr;
	attr->max_sge = a.max_sge;
	attr->srq_limit = a.srq_limit;
	return 0;
}

int ibv_destroy_srq(struct ibv_srq *ibsrq)
{
	struct compat_srq *srq = compat_container_of(ibsrq, struct compat_srq, srq);
	struct compat_ctx *ctx = compat_ctx_of(ibsrq->context);
	int err;

	uroce_ctx_lock(ctx->uc);
	uroce_compat_drain_events(ctx); /* no engine event may name the SRQ afterwards */
	err = uroce_srq_destroy(srq->esrq);
	if (!err)
		uroce_compat_forget_async(ctx, ibsrq);
	uroce_ctx_unlock(ctx->uc);
	if (err)
		return -err;
	uroce_compat_wait_acked(&ibsrq->mutex, &ibsrq->cond, &ibsrq->events_completed,
				&srq->async_reported);
	pthread_cond_destroy(&ibsrq->cond);
	pthread_mutex_destroy(&ibsrq->mutex);
	free(srq);
	return 0;
}
