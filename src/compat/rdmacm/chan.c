/* SPDX-License-Identifier: MIT */
/*
 * Event channels and events (rdmacm.h). The eventfd counts queued events: rdma_get_cm_event
 * reads one count (blocking, or EAGAIN when the application made the fd non-blocking) and then
 * takes the head of the queue, so an fd that polls readable always has an event behind it.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "compat/rdmacm/rdmacm.h"

static struct cma_chan *all_chans; /* every live channel (lock held) */

/*
 * Threads inside rdma_get_cm_event that have not yet taken cma_lock to become their channel's
 * reader. rdma_destroy_event_channel lets them in first (entered, under cma_lock). In rdma-core
 * a thread that loops on rdma_get_cm_event is back in its write(2) to the ucma file right after
 * acknowledging an event, and another thread's destroy of the channel leaves it blocked there;
 * here it must take cma_lock first, and a destroying thread that holds the lock through its
 * teardown (rdma_destroy_id waits for the acknowledgement under it) would take it again and
 * again ahead of the waiting reader, which would then find the channel gone (EBADF; rping's
 * event thread exits the program with 255 on that).
 */
static atomic_uint entering;
static pthread_cond_t entered = PTHREAD_COND_INITIALIZER;

struct cma_chan *cma_chan_new(void)
{
	struct cma_chan *c = calloc(1, sizeof(*c));

	if (!c) {
		errno = ENOMEM;
		return NULL;
	}
	c->ch.fd = eventfd(0, EFD_SEMAPHORE | EFD_CLOEXEC);
	if (c->ch.fd < 0) {
		free(c);
		return NULL;
	}
	c->next_chan = all_chans;
	all_chans = c;
	return c;
}

void cma_chans_forget(void)
{
	all_chans = NULL;
	/* The parent's threads are not the child's, nor are any waiting on the condition. */
	atomic_store(&entering, 0);
	entered = (pthread_cond_t)PTHREAD_COND_INITIALIZER;
}

struct cma_chan *cma_chan_find(const struct rdma_event_channel *ch)
{
	for (struct cma_chan *c = all_chans; c; c = c->next_chan)
		if (&c->ch == ch)
			return c;
	return NULL;
}

struct rdma_event_channel *rdma_create_event_channel(void)
{
	struct cma_chan *c;
	int err = cma_init();

	if (err) {
		errno = -err;
		return NULL;
	}
	pthread_mutex_lock(&cma_lock);
	c = cma_chan_new();
	pthread_mutex_unlock(&cma_lock);
	return c ? &c->ch : NULL;
}

/* Off the live list: the application's calls on it fail from now on. */
static void chan_close(struct cma_chan *c)
{
	for (struct cma_chan **pp = &all_chans; *pp; pp = &(*pp)->next_chan)
		if (*pp == c) {
			*pp = c->next_chan;
			break;
		}
	c->closed = true;
}

/* Free a closed channel and its queued events, closing its fd. */
static void chan_free(struct cma_chan *c)
{
	while (c->head) {
		struct cma_event *e = c->head;

		c->head = e->next;
		free(e);
	}
	close(c->ch.fd);
	free(c);
}

/* Free c if it is closed and nothing uses it any more. */
static void chan_release(struct cma_chan *c)
{
	if (c->closed && !c->ids && !c->readers)
		chan_free(c);
}

void cma_chan_unuse(struct cma_chan *c, bool own)
{
	c->ids--;
	if (own)
		chan_close(c);
	chan_release(c);
}

/*
 * rdma-core closes the fd and frees the channel, whatever still uses it (the kernel then
 * destroys the ids of that fd). Here the ids may still use it: it is closed, so the
 * application's calls on it fail, and freed with the last of them. A thread blocked in
 * rdma_get_cm_event on it stays blocked, as one blocked in rdma-core's write(2) to the ucma
 * file does (the file lives until that call returns). A dead channel (destroyed before, never
 * created): nothing is touched; rdma-core's close(2) would fail with EBADF.
 */
void rdma_destroy_event_channel(struct rdma_event_channel *channel)
{
	struct cma_chan *c;

	if (!channel)
		return;
	pthread_mutex_lock(&cma_lock);
	while (atomic_load(&entering))
		pthread_cond_wait(&entered, &cma_lock);
	c = cma_chan_find(channel);
	if (c) {
		chan_close(c);
		chan_release(c);
	}
	pthread_mutex_unlock(&cma_lock);
	if (!c)
		errno = EBADF;
}

/* Append e to ch's queue and count it on the eventfd. */
static void enqueue(struct cma_chan *ch, struct cma_event *e)
{
	uint64_t one = 1;

	e->next = NULL;
	if (ch->tail)
		ch->tail->next = e;
	else
		ch->head = e;
	ch->tail = e;
	if (write(ch->ch.fd, &one, sizeof(one)) < 0) {
		/* an eventfd write fails only when the count would overflow */
	}
}

/*
 * Take back n counts of withdrawn events from ch's eventfd, so that a poller is not woken for
 * an event that is gone, as the kernel's ucma removes a destroyed id's events from its file.
 * Only with no reader inside rdma_get_cm_event (the lock held keeps new ones out): then the
 * count is at least the queue's length before the withdrawal, so each read finds a count and
 * none blocks; the zero-timeout poll guards that all the same. With a reader, the counts stay:
 * it may already hold one, finds the queue shorter and reads again.
 */
static void uncount(struct cma_chan *ch, unsigned n)
{
	struct pollfd p = {.fd = ch->ch.fd, .events = POLLIN};
	uint64_t v;

	if (ch->readers)
		return;
	while (n-- && poll(&p, 1, 0) == 1 && (p.revents & POLLIN))
		if (read(ch->ch.fd, &v, sizeof(v)) < 0)
			return;
}

/* Unlink the events owner counts from ch's queue, in order, and take back their counts. */
static struct cma_event *take(struct cma_chan *ch, const struct cma_id *owner)
{
	struct cma_event *taken = NULL, **tail = &taken, **pp = &ch->head, *e;
	unsigned n = 0;

	ch->tail = NULL;
	while ((e = *pp) != NULL) {
		if (e->owner == owner) {
			*pp = e->next;
			e->next = NULL;
			*tail = e;
			tail = &e->next;
			n++;
			continue;
		}
		ch->tail = e;
		pp = &e->next;
	}
	uncount(ch, n);
	return taken;
}

int cma_event_post(struct cma_id *id, struct cma_id *listen, enum rdma_cm_event_type type,
		   int status, const void *pdata, size_t len, struct cma_event **out)
{
	struct cma_event *e;
	struct cma_chan *ch;

	if (id->destroying || !id->chan)
		return 0;
	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	/* Whose event count it is, as in rdma-core: a connection request counts against the
	 * listener (the new id does not exist for rdma-core until the event is read), so the new
	 * id can be destroyed before the request is acked, and the listener cannot. */
	e->owner = type == RDMA_CM_EVENT_CONNECT_REQUEST && listen ? listen : id;
	e->ev.id = &id->id;
	e->ev.listen_id = listen ? &listen->id : NULL;
	e->ev.event = type;
	e->ev.status = status;
	if (pdata && len) {
		if (len > sizeof(e->pdata))
			len = sizeof(e->pdata);
		memcpy(e->pdata, pdata, len);
		e->ev.param.conn.private_data = e->pdata;
		e->ev.param.conn.private_data_len = (uint8_t)len;
	}
	/* A connection request waits on the listener's channel (a synchronous listener's new
	 * id gets a channel of its own for what follows). */
	ch = type == RDMA_CM_EVENT_CONNECT_REQUEST && listen ? listen->chan : id->chan;
	e->owner->events_reported++;
	enqueue(ch, e);
	if (out)
		*out = e;
	return 0;
}

static void forget_on(struct cma_id *id, struct cma_chan *ch)
{
	struct cma_event *e = take(ch, id);

	while (e) {
		struct cma_event *next = e->next;

		id->events_acked++;
		/* A connection request nobody read: its new id goes with it, as the kernel
		 * destroys the ids of a listener's pending requests. */
		if (e->ev.event == RDMA_CM_EVENT_CONNECT_REQUEST && e->ev.id != &id->id)
			cma_id_drop_unreported(cma_id_of(e->ev.id));
		free(e);
		e = next;
	}
}

void cma_event_forget(struct cma_id *id)
{
	if (id->chan)
		forget_on(id, id->chan);
	if (id->listener && id->listener->chan != id->chan)
		forget_on(id, id->listener->chan);
}

void cma_event_forget_mc(struct cma_id *id, const struct cma_mc *mc)
{
	struct cma_event **pp, *e;
	unsigned n = 0;

	if (!id->chan)
		return;
	id->chan->tail = NULL;
	for (pp = &id->chan->head; (e = *pp) != NULL;) {
		if (e->mc == mc) {
			*pp = e->next;
			id->events_acked++;
			free(e);
			n++;
			continue;
		}
		id->chan->tail = e;
		pp = &e->next;
	}
	uncount(id->chan, n);
}

void cma_event_move(struct cma_id *id, struct cma_chan *to)
{
	struct cma_event *e = take(id->chan, id);

	while (e) {
		struct cma_event *next = e->next;

		enqueue(to, e);
		e = next;
	}
}

/* A reader leaves the channel: the last one frees a closed channel. Also the cleanup of a
 * reader cancelled in read(2) (a cancellation point, as rdma-core's write(2) is). */
static void reader_leave(void *arg)
{
	struct cma_chan *c = arg;

	pthread_mutex_lock(&cma_lock);
	c->readers--;
	chan_release(c);
	pthread_mutex_unlock(&cma_lock);
}

/* Read counts from c's eventfd until one has an event behind it: the event, or NULL (errno). */
static struct cma_event *next_event(struct cma_chan *c)
{
	struct cma_event *e = NULL;
	uint64_t v;

	while (!e) {
		/* EAGAIN on a non-blocking channel; EINTR on a signal whose handler lacks
		 * SA_RESTART, as rdma-core's write(2) to the ucma file. */
		if (read(c->ch.fd, &v, sizeof(v)) < 0)
			return NULL;
		pthread_mutex_lock(&cma_lock);
		e = c->head;
		if (e) {
			c->head = e->next;
			if (!c->head)
				c->tail = NULL;
			if (e->mc) {
				e->mc->reported++;
				cma_mc_deliver(e);
			}
		}
		pthread_mutex_unlock(&cma_lock);
		/* No event: the count of one withdrawn while a reader was in: read again, or
		 * tell a non-blocking caller there is nothing (EAGAIN). */
	}
	e->next = NULL;
	return e;
}

/*
 * The caller is a reader of the channel until it returns, so the channel and its fd outlive
 * the wait even when another thread destroys the channel meanwhile: the wait then goes on (an
 * event of an id still on it ends it), as a thread blocked in rdma-core's write(2) to the
 * ucma file stays blocked. A channel already destroyed: EBADF, as rdma-core's write(2) to its
 * closed fd.
 */
int rdma_get_cm_event(struct rdma_event_channel *channel, struct rdma_cm_event **event)
{
	struct cma_chan *c;
	struct cma_event *e;
	int saved;

	if (!channel || !event) {
		errno = EINVAL;
		return -1;
	}
	atomic_fetch_add(&entering, 1);
	pthread_mutex_lock(&cma_lock);
	c = cma_chan_find(channel);
	if (c)
		c->readers++;
	if (atomic_fetch_sub(&entering, 1) == 1)
		pthread_cond_broadcast(&entered);
	pthread_mutex_unlock(&cma_lock);
	if (!c) {
		errno = EBADF;
		return -1;
	}
	pthread_cleanup_push(reader_leave, c);
	e = next_event(c);
	pthread_cleanup_pop(0);
	saved = errno;
	reader_leave(c);
	errno = saved;
	if (!e)
		return -1;
	*event = &e->ev;
	return 0;
}

void cma_event_ack(struct cma_event *e)
{
	if (e->mc)
		e->mc->acked++;
	e->owner->events_acked++;
	pthread_cond_broadcast(&e->owner->acked);
	free(e);
}

int rdma_ack_cm_event(struct rdma_cm_event *event)
{
	if (!event) {
		errno = EINVAL;
		return -1;
	}
	pthread_mutex_lock(&cma_lock);
	cma_event_ack(cma_container_of(event, struct cma_event, ev));
	pthread_mutex_unlock(&cma_lock);
	return 0;
}

int cma_sync_wait(struct cma_id *id)
{
	struct rdma_cm_event *ev;
	int err;

	if (id->id.event) {
		rdma_ack_cm_event(id->id.event);
		id->id.event = NULL;
	}
	if (rdma_get_cm_event(id->id.channel, &ev))
		return -errno;
	id->id.event = ev;
	err = ev->status;
	if (err > 0)
		return -ECONNREFUSED; /* a REJ reason: rdma-core reports ECONNREFUSED */
	if (ev->event == RDMA_CM_EVENT_DISCONNECTED || ev->event == RDMA_CM_EVENT_DEVICE_REMOVAL)
		return -ECONNRESET;
	if (ev->event == RDMA_CM_EVENT_REJECTED || ev->event == RDMA_CM_EVENT_ADDR_ERROR ||
	    ev->event == RDMA_CM_EVENT_ROUTE_ERROR || ev->event == RDMA_CM_EVENT_CONNECT_ERROR ||
	    ev->event == RDMA_CM_EVENT_UNREACHABLE)
		return err < 0 ? err : -ECONNREFUSED;
	return err;
}
