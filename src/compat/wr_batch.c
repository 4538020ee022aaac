/* SPDX-License-Identifier: MIT */
/* The ibv_wr_* batch of an extended QP: its storage (wr_batch.h). */
#include <stdlib.h>

#include "compat/wr_batch.h"

struct compat_wr_batch *uroce_compat_wr_batch_new(enum ibv_qp_type type, uint64_t ops,
						  const struct ibv_qp_cap *cap)
{
	struct compat_wr_batch *b = calloc(1, sizeof(*b));

	if (!b)
		return NULL;
	b->ops = ops;
	b->type = type;
	b->max_wr = cap->max_send_wr;
	b->max_sge = cap->max_send_sge ? cap->max_send_sge : 1;
	b->max_inline = cap->max_inline_data;
	b->wr = calloc(b->max_wr, sizeof(*b->wr));
	b->sge = calloc((size_t)b->max_wr * b->max_sge, sizeof(*b->sge));
	b->inl = b->max_inline ? calloc(b->max_wr, b->max_inline) : NULL;
	pthread_mutex_init(&b->lock, NULL);
	if (!b->wr || !b->sge || (b->max_inline && !b->inl)) {
		uroce_compat_wr_batch_free(b);
		return NULL;
	}
	return b;
}

void uroce_compat_wr_batch_free(struct compat_wr_batch *b)
{
	if (!b)
		return;
	pthread_mutex_destroy(&b->lock);
	free(b->wr);
	free(b->sge);
	free(b->inl);
	free(b);
}
