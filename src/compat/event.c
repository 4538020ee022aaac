/* SPDX-License-Identifier: MIT */
/*
 * Engine events to verbs: completion notifications into completion channels, everything else
 * into the context's async event queue (ibv_get_async_event).
 *
 * Both are an eventfd in semaphore mode (one count per event: pollable, blocking or not as the
 * application set O_NONBLOCK) plus a queue. The count is written after the entry is queued, so
 * a reader that got a count finds an entry, except when the object was destroyed in between
 * and its entries were removed; the reader then waits for the next count (or returns EAGAIN on
 * a non-blocking fd), so a poll() may be woken once for nothing. A completion event made by the
 * round of the thread that waits for it in ibv_get_cq_event is queued without a count (struct
 * compat_channel): that thread takes it next, and a write and a read are saved per event.
 */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "compat/compat.h"
#include "host/os/nocancel.h"

_Thread_local struct compat_channel *uroce_compat_waiting;

/* Add n counts to an eventfd. */
static void fd_signal_n(int fd, uint64_t n)
{
	ssize_t r;

	do
		r = uroce_write(fd, &n, sizeof(n));
	while (r < 0 && errno == EINTR);
}

static void fd_signal(int fd)
{
	fd_signal_n(fd, 1);
}

/*
 * One count off fd: 0, or -1 with errno (EAGAIN on a non-blocking fd with none; EINTR when a
 * signal whose handler lacks SA_RESTART arrives while it blocks, as the kernel's uverbs event
 * file read does: programs such as qperf end a blocked wait with a timer signal).
 */
static int fd_wait(int fd)
{
	uint64_t v;

	return read(fd, &v, sizeof(v)) == sizeof(v) ? 0 : -1;
}

/* Put cq at the back of ch's queue (ch's lock held). */
static void enqueue(struct compat_channel *ch, struct compat_cq *cq)
{
	cq->ch_next = NULL;
	if (ch->tail)
		ch->tail->ch_next = cq;
	else
		ch->head = cq;
	ch->tail = cq;
}

static void comp_event(struct compat_cq *cq)
{
	struct ibv_comp_channel *ibch = cq->cq.channel;
	struct compat_channel *ch;

	if (!ibch)
		return; /* armed without a channel: nobody to tell */
	ch = compat_container_of(ibch, struct compat_channel, ch);
	/* The thread waiting on this channel made it in its own round: it takes it next. */
	bool mine = ch == uroce_compat_waiting;

	pthread_mutex_lock(&ch->lock);
	if (cq->ch_pending++ == 0)
		enqueue(ch, cq);
	ch->queued++;
	ch->unsignalled += mine;
	pthread_mutex_unlock(&ch->lock);
	if (!mine)
		fd_signal(ibch->fd);
}

/* Take the event at the head of ch's queue (lock held, queue not empty); returns its CQ. */
static struct compat_cq *take_head(struct compat_channel *ch)
{
	struct compat_cq *cq = ch->head;

	/* One event per call; a CQ with more goes to the back of the queue. */
	ch->head = cq->ch_next;
	if (!ch->head)
		ch->tail = NULL;
	if (--cq->ch_pending)
		enqueue(ch, cq);
	ch->queued--;
	return cq;
}

struct compat_cq *uroce_compat_take_unsignalled(struct compat_channel *ch)
{
	struct compat_cq *cq = NULL;
	bool rest = false;

	pthread_mutex_lock(&ch->lock);
	if (ch->unsignalled) {
		/* Counts are not tied to events: any queued event stands for the one taken. */
		cq = take_head(ch);
		rest = --ch->unsignalled > 0;
	}
	pthread_mutex_unlock(&ch->lock);
	if (rest) {
		struct compat_ctx *ctx = compat_ctx_of(ch->ch.context);

		pthread_mutex_lock(&ctx->linger_lock);
		if (!ch->lingers) {
			ch->lingers = true;
			ch->linger_next = ctx->linger;
			ctx->linger = ch;
			atomic_store_explicit(&ctx->lingering, true, memory_order_relaxed);
		}
		pthread_mutex_unlock(&ctx->linger_lock);
	}
	return cq;
}

void uroce_compat_on_round(void *arg)
{
	struct compat_ctx *ctx = arg;

	if (!atomic_load_explicit(&ctx->lingering, memory_order_relaxed))
		return;
	pthread_mutex_lock(&ctx->linger_lock);
	for (struct compat_channel *ch = ctx->linger; ch; ch = ch->linger_next) {
		pthread_mutex_lock(&ch->lock);
		unsigned n = ch->unsignalled;

		ch->unsignalled = 0;
		ch->lingers = false;
		pthread_mutex_unlock(&ch->lock);
		if (n)
			fd_signal_n(ch->ch.fd, n);
	}
	ctx->linger = NULL;
	atomic_store_explicit(&ctx->lingering, false, memory_order_relaxed);
	pthread_mutex_unlock(&ctx->linger_lock);
}

void uroce_compat_forget_linger(struct compat_channel *ch)
{
	struct compat_ctx *ctx = compat_ctx_of(ch->ch.context);

	pthread_mutex_lock(&ctx->linger_lock);
	for (struct compat_channel **pp = &ctx->linger; *pp; pp = &(*pp)->linger_next)
		if (*pp == ch) {
			*pp = ch->linger_next;
			break;
		}
	ch->lingers = false;
	pthread_mutex_unlock(&ctx->linger_lock);
}

struct compat_cq *uroce_compat_take_signalled(struct compat_channel *ch)
{
	struct compat_cq *cq = NULL;

	pthread_mutex_lock(&ch->lock);
	/* The count read may have been an unsignalled event's that another thread took: the
	 * events left are then all signalled. */
	if (ch->queued > ch->unsignalled)
		cq = take_head(ch);
	pthread_mutex_unlock(&ch->lock);
	return cq;
}

static void async_event(struct compat_ctx *ctx, enum ibv_event_type type, void *obj)
{
	struct compat_async *a = calloc(1, sizeof(*a));

	if (!a)
		return; /* lost, as a full device event queue loses events */
	a->ev.event_type = type;
	a->ev.element.cq = obj; /* the union's pointers are interchangeable here */
	pthread_mutex_lock(&ctx->ev_lock);
	if (ctx->ev_tail)
		ctx->ev_tail->next = a;
	else
		ctx->ev_head = a;
	ctx->ev_tail = a;
	pthread_mutex_unlock(&ctx->ev_lock);
	fd_signal(ctx->vctx.context.async_fd);
}

void uroce_compat_on_event(void *arg, const struct uroce_event *ev)
{
	struct compat_ctx *ctx = arg;
	struct compat_cq *cq = ev->user;
	struct compat_qp *qp = ev->user;
	struct compat_srq *srq = ev->user;

	switch (ev->type) {
	case UROCE_EVENT_COMP:
		comp_event(cq);
		break;
	case UROCE_EVENT_CQ_ERR:
		async_event(ctx, IBV_EVENT_CQ_ERR, &cq->cq);
		break;
	case UROCE_EVENT_QP_FATAL:
		async_event(ctx, IBV_EVENT_QP_FATAL, &qp->qp);
		break;
	case UROCE_EVENT_QP_REQ_ERR:
		async_event(ctx, IBV_EVENT_QP_REQ_ERR, &qp->qp);
		break;
	case UROCE_EVENT_QP_ACCESS_ERR:
		async_event(ctx, IBV_EVENT_QP_ACCESS_ERR, &qp->qp);
		break;
	case UROCE_EVENT_COMM_EST:
		async_event(ctx, IBV_EVENT_COMM_EST, &qp->qp);
		break;
	case UROCE_EVENT_SQ_DRAINED:
		async_event(ctx, IBV_EVENT_SQ_DRAINED, &qp->qp);
		break;
	case UROCE_EVENT_QP_LAST_WQE_REACHED:
		async_event(ctx, IBV_EVENT_QP_LAST_WQE_REACHED, &qp->qp);
		break;
	case UROCE_EVENT_SRQ_LIMIT_REACHED:
		async_event(ctx, IBV_EVENT_SRQ_LIMIT_REACHED, &srq->srq);
		break;
	}
}

void uroce_compat_drain_events(struct compat_ctx *ctx)
{
	struct uroce_eng *e = uroce_ctx_eng(ctx->uc);
	struct uroce_event ev;

	while (uroce_eng_poll_event(e, &ev) == 1)
		uroce_compat_on_event(ctx, &ev);
}

void uroce_compat_forget_async(struct compat_ctx *ctx, const void *obj)
{
	struct compat_async **pp, *prev = NULL;

	pthread_mutex_lock(&ctx->ev_lock);
	pp = &ctx->ev_head;
	while (*pp) {
		struct compat_async *a = *pp;

		if ((const void *)a->ev.element.cq == obj) {
			*pp = a->next;
			free(a);
			continue;
		}
		prev = a;
		pp = &a->next;
	}
	ctx->ev_tail = prev;
	pthread_mutex_unlock(&ctx->ev_lock);
}

void uroce_compat_forget_comp(struct compat_cq *cq)
{
	struct compat_channel *ch;
	struct compat_cq **pp, *prev = NULL;

	if (!cq->cq.channel)
		return;
	ch = compat_container_of(cq->cq.channel, struct compat_channel, ch);
	pthread_mutex_lock(&ch->lock);
	if (cq->ch_pending) {
		pp = &ch->head;
		while (*pp) {
			if (*pp == cq) {
				*pp = cq->ch_next;
				continue;
			}
			prev = *pp;
			pp = &(*pp)->ch_next;
		}
		ch->tail = prev;
		ch->queued -= cq->ch_pending;
		cq->ch_pending = 0;
		/* Which of the removed events were unsignalled is not known: as many as are left
		 * at most, and a count too many wakes a reader once for nothing (see above). */
		if (ch->unsignalled > ch->queued)
			ch->unsignalled = ch->queued;
	}
	pthread_mutex_unlock(&ch->lock);
}

void uroce_compat_wait_acked(pthread_mutex_t *m, pthread_cond_t *c, const uint32_t *completed,
			     const unsigned *reported)
{
	pthread_mutex_lock(m);
	while (*completed != *reported)
		pthread_cond_wait(c, m);
	pthread_mutex_unlock(m);
}

/* ---- async events ---------------------------------------------------------------------------- */

int ibv_get_async_event(struct ibv_context *context, struct ibv_async_event *event)
{
	struct compat_ctx *ctx = compat_ctx_of(context);
	struct compat_async *a;

	for (;;) {
		if (fd_wait(context->async_fd))
			return -1;
		pthread_mutex_lock(&ctx->ev_lock);
		a = ctx->ev_head;
		if (a) {
			ctx->ev_head = a->next;
			if (!ctx->ev_head)
				ctx->ev_tail = NULL;
		}
		pthread_mutex_unlock(&ctx->ev_lock);
		if (a)
			break;
	}
	*event = a->ev;
	free(a);
	switch (event->event_type) {
	case IBV_EVENT_CQ_ERR: {
		struct compat_cq *cq = compat_container_of(event->element.cq, struct compat_cq, cq);

		pthread_mutex_lock(&cq->cq.mutex);
		cq->async_reported++;
		pthread_mutex_unlock(&cq->cq.mutex);
		break;
	}
	case IBV_EVENT_SRQ_ERR:
	case IBV_EVENT_SRQ_LIMIT_REACHED: {
		struct compat_srq *srq =
			compat_container_of(event->element.srq, struct compat_srq, srq);

		pthread_mutex_lock(&srq->srq.mutex);
		srq->async_reported++;
		pthread_mutex_unlock(&srq->srq.mutex);
		break;
	}
	case IBV_EVENT_QP_FATAL:
	case IBV_EVENT_QP_REQ_ERR:
	case IBV_EVENT_QP_ACCESS_ERR:
	case IBV_EVENT_COMM_EST:
	case IBV_EVENT_SQ_DRAINED:
	case IBV_EVENT_PATH_MIG:
	case IBV_EVENT_PATH_MIG_ERR:
	case IBV_EVENT_QP_LAST_WQE_REACHED: {
		struct compat_qp *qp = compat_container_of(event->element.qp, struct compat_qp, qp);

		pthread_mutex_lock(&qp->qp.mutex);
		qp->async_reported++;
		pthread_mutex_unlock(&qp->qp.mutex);
		break;
	}
	case IBV_EVENT_DEVICE_FATAL:
	case IBV_EVENT_PORT_ACTIVE:
	case IBV_EVENT_PORT_ERR:
	case IBV_EVENT_LID_CHANGE:
	case IBV_EVENT_PKEY_CHANGE:
	case IBV_EVENT_SM_CHANGE:
	case IBV_EVENT_CLIENT_REREGISTER:
	case IBV_EVENT_GID_CHANGE:
	case IBV_EVENT_WQ_FATAL:
		break;
	}
	return 0;
}

void ibv_ack_async_event(struct ibv_async_event *event)
{
	switch (event->event_type) {
	case IBV_EVENT_CQ_ERR: {
		struct ibv_cq *cq = event->element.cq;

		pthread_mutex_lock(&cq->mutex);
		cq->async_events_completed++;
		pthread_cond_signal(&cq->cond);
		pthread_mutex_unlock(&cq->mutex);
		return;
	}
	case IBV_EVENT_SRQ_ERR:
	case IBV_EVENT_SRQ_LIMIT_REACHED: {
		struct ibv_srq *srq = event->element.srq;

		pthread_mutex_lock(&srq->mutex);
		srq->events_completed++;
		pthread_cond_signal(&srq->cond);
		pthread_mutex_unlock(&srq->mutex);
		return;
	}
	case IBV_EVENT_QP_FATAL:
	case IBV_EVENT_QP_REQ_ERR:
	case IBV_EVENT_QP_ACCESS_ERR:
	case IBV_EVENT_COMM_EST:
	case IBV_EVENT_SQ_DRAINED:
	case IBV_EVENT_PATH_MIG:
	case IBV_EVENT_PATH_MIG_ERR:
	case IBV_EVENT_QP_LAST_WQE_REACHED: {
		struct ibv_qp *qp = event->element.qp;

		pthread_mutex_lock(&qp->mutex);
		qp->events_completed++;
		pthread_cond_signal(&qp->cond);
		pthread_mutex_unlock(&qp->mutex);
		return;
	}
	case IBV_EVENT_DEVICE_FATAL:
	case IBV_EVENT_PORT_ACTIVE:
	case IBV_EVENT_PORT_ERR:
	case IBV_EVENT_LID_CHANGE:
	case IBV_EVENT_PKEY_CHANGE:
	case IBV_EVENT_SM_CHANGE:
	case IBV_EVENT_CLIENT_REREGISTER:
	case IBV_EVENT_GID_CHANGE:
	case IBV_EVENT_WQ_FATAL:
		return;
	}
}
