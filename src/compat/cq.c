/* SPDX-License-Identifier: MIT */
/* Completion channels and completion queues (poll and arm are in post.c, the data path). */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "compat/compat.h"

struct ibv_comp_channel *ibv_create_comp_channel(struct ibv_context *context)
{
	struct compat_channel *ch = calloc(1, sizeof(*ch));

	if (!ch) {
		errno = ENOMEM;
		return NULL;
	}
	ch->ch.fd = eventfd(0, EFD_CLOEXEC | EFD_SEMAPHORE);
	if (ch->ch.fd < 0) {
		int err = errno;

		free(ch);
		errno = err;
		return NULL;
	}
	pthread_mutex_init(&ch->lock, NULL);
	ch->ch.context = context;
	ch->ch.refcnt = 0;
	return &ch->ch;
}

int ibv_destroy_comp_channel(struct ibv_comp_channel *channel)
{
	struct compat_channel *ch = compat_container_of(channel, struct compat_channel, ch);

	pthread_mutex_lock(&ch->lock);
	if (channel->refcnt) {
		pthread_mutex_unlock(&ch->lock);
		return EBUSY;
	}
	pthread_mutex_unlock(&ch->lock);
	uroce_compat_forget_linger(ch);
	close(channel->fd);
	pthread_mutex_destroy(&ch->lock);
	free(ch);
	return 0;
}

/* A CQ of cqe entries, plain or (ex) extended with wc_flags and flags. NULL with errno. */
static struct compat_cq *cq_new(struct ibv_context *context, int cqe, void *cq_context,
				struct ibv_comp_channel *channel, int comp_vector, bool ex,
				uint64_t wc_flags, uint32_t flags)
{
	struct uroce_ctx *uc = compat_uc(context);
	struct compat_cq *cq;
	int err;

	if (cqe < 1 || cqe > UROCE_MAX_CQE || comp_vector < 0 ||
	    comp_vector >= context->num_comp_vectors) {
		errno = EINVAL;
		return NULL;
	}
	cq = calloc(1, sizeof(*cq));
	if (!cq) {
		errno = ENOMEM;
		return NULL;
	}
	uroce_ctx_lock(uc);
	err = uroce_cq_create(uroce_ctx_eng(uc), (uint32_t)cqe, cq, &cq->ecq);
	uroce_ctx_unlock(uc);
	if (err) {
		free(cq);
		errno = -err;
		return NULL;
	}
	cq->cq.context = context;
	cq->cq.channel = channel;
	cq->cq.cq_context = cq_context;
	cq->cq.cqe = cqe;
	pthread_mutex_init(&cq->cq.mutex, NULL);
	pthread_cond_init(&cq->cq.cond, NULL);
	if (ex) {
		uroce_compat_cq_ex_init(cq, wc_flags);
		cq->single_threaded = flags & IBV_CREATE_CQ_ATTR_SINGLE_THREADED;
		pthread_mutex_init(&cq->poll_lock, NULL);
	}
	if (channel) {
		struct compat_channel *ch = compat_container_of(channel, struct compat_channel, ch);

		pthread_mutex_lock(&ch->lock);
		channel->refcnt++;
		pthread_mutex_unlock(&ch->lock);
	}
	return cq;
}

struct ibv_cq *ibv_create_cq(struct ibv_context *context, int cqe, void *cq_context,
			     struct ibv_comp_channel *channel, int comp_vector)
{
	struct compat_cq *cq =
		cq_new(context, cqe, cq_context, channel, comp_vector, false, 0, 0);

	return cq ? &cq->cq : NULL;
}

/*
 * verbs_context.create_cq_ex (the inline ibv_create_cq_ex). As rdma-core and rxe: an unknown
 * comp_mask bit, a wc_flag uroce does not honour (timestamps, CVLAN, flow tag, tag matching)
 * and IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN (the kernel's rxe refuses CQ flags) are EOPNOTSUPP, as
 * is a parent domain (uroce has none); a CQ size or completion vector out of range is EINVAL.
 */
struct ibv_cq_ex *uroce_compat_create_cq_ex(struct ibv_context *context,
					    struct ibv_cq_init_attr_ex *a)
{
	uint32_t flags = 0;
	struct compat_cq *cq;

	if (a->comp_mask & ~(uint32_t)IBV_CQ_INIT_ATTR_MASK_FLAGS) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (a->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS)
		flags = a->flags;
	if ((a->wc_flags & ~COMPAT_CQ_EX_WC_FLAGS) ||
	    (flags & ~(uint32_t)IBV_CREATE_CQ_ATTR_SINGLE_THREADED)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (a->cqe > UROCE_MAX_CQE || a->comp_vector > INT32_MAX) {
		errno = EINVAL;
		return NULL;
	}
	cq = cq_new(context, (int)a->cqe, a->cq_context, a->channel, (int)a->comp_vector, true,
		    a->wc_flags, flags);
	return cq ? &cq->ex : NULL;
}

int ibv_destroy_cq(struct ibv_cq *ibcq)
{
	struct compat_cq *cq = compat_container_of(ibcq, struct compat_cq, cq);
	struct compat_ctx *ctx = compat_ctx_of(ibcq->context);
	int err;

	uroce_ctx_lock(ctx->uc);
	uroce_compat_drain_events(ctx); /* no engine event may name the CQ afterwards */
	err = uroce_cq_destroy(cq->ecq);
	if (!err) {
		uroce_compat_forget_comp(cq);
		uroce_compat_forget_async(ctx, ibcq);
	}
	uroce_ctx_unlock(ctx->uc);
	if (err)
		return -err;
	/* As rdma-core: wait until every event handed out was acked. */
	uroce_compat_wait_acked(&ibcq->mutex, &ibcq->cond, &ibcq->comp_events_completed,
				&cq->comp_reported);
	uroce_compat_wait_acked(&ibcq->mutex, &ibcq->cond, &ibcq->async_events_completed,
				&cq->async_reported);
	if (ibcq->channel) {
		struct compat_channel *ch =
			compat_container_of(ibcq->channel, struct compat_channel, ch);

		pthread_mutex_lock(&ch->lock);
		ibcq->channel->refcnt--;
		pthread_mutex_unlock(&ch->lock);
	}
	pthread_cond_destroy(&ibcq->cond);
	pthread_mutex_destroy(&ibcq->mutex);
	if (cq->is_ex)
		pthread_mutex_destroy(&cq->poll_lock);
	free(cq);
	return 0;
}

/*
 * Completions queued stay queued, those an extended CQ's poll API has taken from the engine
 * included. EINVAL for a size out of range or below that count, as rxe; ibv_cq.cqe becomes the
 * new size.
 */
int ibv_resize_cq(struct ibv_cq *ibcq, int cqe)
{
	struct compat_cq *cq = compat_container_of(ibcq, struct compat_cq, cq);
	struct uroce_ctx *uc = compat_uc(ibcq->context);
	bool lock = cq->is_ex && !cq->single_threaded;
	int err;

	if (cqe < 1 || cqe > UROCE_MAX_CQE)
		return EINVAL;
	if (lock)
		pthread_mutex_lock(&cq->poll_lock);
	uroce_ctx_lock(uc);
	if ((uint32_t)cqe < uroce_cq_count(cq->ecq) + (uint32_t)(cq->n - cq->pos))
		err = -EINVAL;
	else
		err = uroce_cq_resize(cq->ecq, (uint32_t)cqe);
	uroce_ctx_unlock(uc);
	if (!err)
		ibcq->cqe = cqe;
	if (lock)
		pthread_mutex_unlock(&cq->poll_lock);
	return -err;
}

/* Has the channel an event queued (its eventfd is readable)? */
static bool channel_has_event(struct compat_channel *ch)
{
	pthread_mutex_lock(&ch->lock);
	bool has = ch->head != NULL;

	pthread_mutex_unlock(&ch->lock);
	return has;
}

int ibv_get_cq_event(struct ibv_comp_channel *channel, struct ibv_cq **cq_out, void **cq_context)
{
	struct compat_channel *ch = compat_container_of(channel, struct compat_channel, ch);
	struct compat_cq *cq;
	uint64_t v;

	for (;;) {
		/* An event a waiting thread's round made: taken without the fd. */
		cq = uroce_compat_take_unsignalled(ch);
		if (cq)
			break;
		/* A blocking channel with no event queued: the thread receives while it waits
		 * (uroce_ctx_channel_wait); after a signal, the read below blocks or fails as
		 * read(2) does. */
		if (!channel_has_event(ch)) {
			int fl = fcntl(channel->fd, F_GETFL);

			if (fl >= 0 && !(fl & O_NONBLOCK)) {
				uroce_compat_waiting = ch;
				while (!channel_has_event(ch) &&
				       uroce_ctx_channel_wait(compat_uc(channel->context),
							      channel->fd) == 0)
					;
				uroce_compat_waiting = NULL;
				cq = uroce_compat_take_unsignalled(ch);
				if (cq)
					break;
			}
		}
		/* EAGAIN on a non-blocking channel; EINTR on a signal whose handler lacks
		 * SA_RESTART, as rdma-core's read(2) of the uverbs event file. */
		if (read(channel->fd, &v, sizeof(v)) != sizeof(v))
			return -1;
		cq = uroce_compat_take_signalled(ch);
		if (cq)
			break;
	}
	pthread_mutex_lock(&cq->cq.mutex);
	cq->comp_reported++;
	pthread_mutex_unlock(&cq->cq.mutex);
	*cq_out = &cq->cq;
	*cq_context = cq->cq.cq_context;
	return 0;
}

void ibv_ack_cq_events(struct ibv_cq *cq, unsigned int nevents)
{
	pthread_mutex_lock(&cq->mutex);
	cq->comp_events_completed += nevents;
	pthread_cond_signal(&cq->cond);
	pthread_mutex_unlock(&cq->mutex);
}
