/* SPDX-License-Identifier: MIT */
/*
 * The ibv_wr_* batch of an extended QP (qpex.c builds into it): engine work requests, with room
 * for each one's SGEs and inline bytes, as many as the QP's send queue holds. It is allocated
 * when the QP is made, so that posting allocates nothing, and freed with the QP (qp.c).
 */
#ifndef UROCE_COMPAT_WR_BATCH_H
#define UROCE_COMPAT_WR_BATCH_H

#include <infiniband/verbs.h>
#include <pthread.h>
#include <stdint.h>

#include "transport/engine.h"

struct compat_wr_batch {
	pthread_mutex_t lock; /* held from wr_start to wr_complete or wr_abort */
	uint64_t ops;	      /* send_ops_flags the QP was created with */
	enum ibv_qp_type type;
	uint32_t max_wr;     /* requests per batch: the send queue's depth */
	uint32_t max_sge;    /* SGEs per request */
	uint32_t max_inline; /* inline bytes per request */
	uint32_t n;	     /* requests built since wr_start */
	int err;	     /* the batch's first error (positive errno), 0 for none */
	struct uroce_send_wr *wr; /* [max_wr] */
	struct uroce_sge *sge;	  /* [max_wr * max_sge] */
	uint8_t *inl;		  /* [max_wr * max_inline] */
};

/* A batch for a QP of type with send ops ops and the capabilities cap (max_send_wr requests of
 * max_send_sge SGEs, at least 1, and max_inline_data bytes each). NULL when out of memory. */
struct compat_wr_batch *uroce_compat_wr_batch_new(enum ibv_qp_type type, uint64_t ops,
						  const struct ibv_qp_cap *cap);

/* Free b (NULL is allowed). */
void uroce_compat_wr_batch_free(struct compat_wr_batch *b);

#endif
