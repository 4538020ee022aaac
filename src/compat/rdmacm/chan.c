/* SPDX-License-Identifier: MIT */
/*
 * Event channels and events (rdmacm.h). The eventfd counts queued events: rdma_get_cm_event
 * reads one count (blocking, or EAGAIN when the application made the fd non-blocking) and then
 * takes the head of the queue, so an fd that polls readable always has an event behind it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "compat/rdmacm/rdmacm.h"

static struct cma_chan *all_chans; /* every live channel (lock held) */

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

void cma_chan_unuse(struct cma_chan *c, bool own)
{
	c->ids--;
	if (own)
		chan_close(c);
	if (c->closed && !c->ids)
		chan_free(c);
}

/*
 * rdma-core closes the fd and frees the channel, whatever still uses it (the kernel then
 * destroys the ids of that fd). Here the ids may still use it: it is closed, so the
 * application's calls on it fail, and freed with the last of them. A dead channel (destroyed
 * before, never created): nothing is touched; rdma-core's close(2) would fail with EBADF.
 */
void rdma_destroy_event_channel(struct rdma_event_channel *channel)
{
	struct cma_chan *c;

	if (!channel)
		return;
	pthread_mutex_lock(&cma_lock);
	c = cma_chan_find(channel);
	if (c) {
		chan_close(c);
		if (!c->ids)
			chan_free(c);
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
 * Unlink the events owner counts from ch's queue, in order. The eventfd keeps their counts: a
 * reader then finds the queue shorter and reads again (rdma_get_cm_event), a poller wakes once
 * for nothing. Taking the counts back here could block, or race with a reader of the same fd.
 */
static struct cma_event *take(struct cma_chan *ch, const struct cma_id *owner)
{
	struct cma_event *taken = NULL, **tail = &taken, **pp = &ch->head, *e;

	ch->tail = NULL;
	while ((e = *pp) != NULL) {
		if (e->owner == owner) {
			*pp = e->next;
			e->next = NULL;
			*tail = e;
			tail = &e->next;
			continue;
		}
		ch->tail = e;
		pp = &e->next;
	}
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

	if (!id->chan)
		return;
	id->chan->tail = NULL;
	for (pp = &id->chan->head; (e = *pp) != NULL;) {
		if (e->mc == mc) {
			*pp = e->next;
			id->events_acked++;
			free(e);
			continue;
		}
		id->chan->tail = e;
		pp = &e->next;
	}
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

/*
 * The channel is looked up again after each wait (another thread may destroy it meanwhile): a
 * dead one fails with EBADF, as rdma-core's read(2) on a destroyed channel's closed fd does.
 */
int rdma_get_cm_event(struct rdma_event_channel *channel, struct rdma_cm_event **event)
{
	struct cma_chan *c;
	struct cma_event *e;
	uint64_t v;
	int fd;

	if (!channel || !event) {
		errno = EINVAL;
		return -1;
	}
	pthread_mutex_lock(&cma_lock);
	c = cma_chan_find(channel);
	fd = c ? c->ch.fd : -1;
	pthread_mutex_unlock(&cma_lock);
	if (!c) {
		errno = EBADF;
		return -1;
	}
	for (;;) {
		/* EAGAIN on a non-blocking channel; EINTR on a signal whose handler lacks
		 * SA_RESTART, as rdma-core's write(2) to the ucma file. */
		if (read(fd, &v, sizeof(v)) < 0)
			return -1;
		pthread_mutex_lock(&cma_lock);
		c = cma_chan_find(channel);
		e = c ? c->head : NULL;
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
		if (!c) {
			errno = EBADF;
			return -1;
		}
		if (e)
			break;
		/* The count of a withdrawn event (destroyed or migrated id): read again, or tell
		 * a non-blocking caller there is nothing (EAGAIN). */
	}
	e->next = NULL;
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
