/* SPDX-License-Identifier: MIT */
/*
 * RDMA CM ids: create, bind, resolve, listen, options, ports, migrate, destroy (rdmacm.h).
 * Connection set-up and teardown are in conn.c.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cm/cma.h"
#include "compat/rdmacm/addr.h"
#include "compat/rdmacm/rdmacm.h"
#include "compat/ibverbs_for_rdmacm.h"
#include "host/os/neigh.h"
#include "host/os/route.h"

static struct cma_id *all_ids; /* every live id, for port allocation (lock held) */

void cma_ids_forget(void)
{
	all_ids = NULL;
}

struct cma_id *cma_all_ids(void)
{
	return all_ids;
}

struct cma_id *cma_id_find(const struct rdma_cm_id *cid)
{
	for (struct cma_id *i = all_ids; i; i = i->next_id)
		if (&i->id == cid)
			return i;
	return NULL;
}

int cma_id_check(const struct rdma_cm_id *cid)
{
	bool live;

	pthread_mutex_lock(&cma_lock);
	live = cma_id_find(cid) != NULL;
	pthread_mutex_unlock(&cma_lock);
	return live ? 0 : -EINVAL;
}

/*
 * Whether another id owns port. Passive ids never do, even once their listener is gone: the
 * kernel puts only bound, resolved and listening ids on a port's bind list, so a server may
 * destroy its listen id and bind the port again while the accepted connection lives (perftest
 * -R does this).
 */
static bool port_used(enum rdma_port_space ps, uint16_t port, const struct cma_id *self)
{
	for (struct cma_id *i = all_ids; i; i = i->next_id)
		if (i != self && i->id.ps == ps && i->state != CMA_IDLE && !i->passive &&
		    cma_sa_port(&i->id.route.addr.src_addr) == port)
			return true;
	return false;
}

/* An ephemeral port (the kernel's ip_local_port_range), not used by another id here. */
static uint16_t ephemeral_port(enum rdma_port_space ps)
{
	static uint32_t next;

	if (!next)
		next = (uint32_t)getpid() * 2654435761u ^ (uint32_t)cma_now();
	for (int tries = 0; tries < 28232; tries++) {
		uint16_t p = (uint16_t)(32768 + (next++ % 28232));

		if (!port_used(ps, p, NULL))
			return p;
	}
	return 0;
}

int cma_steer_update(void)
{
	uint64_t ids[64];
	int n = 0, err = 0;

	for (struct cma_id *i = all_ids; i; i = i->next_id)
		if (i->state == CMA_LISTEN && n < 64)
			ids[n++] = uroce_cma_service_id((uint16_t)i->id.ps,
							cma_sa_port(&i->id.route.addr.src_addr));
	for (int d = 0; d < cma_ndevs(); d++) {
		int e;

		if (!cma_devs(d)->gsi_ready)
			continue;
		e = uroce_ibv_gsi_steer(cma_devs(d)->verbs, ids, n);
		if (e && !err)
			err = e;
	}
	return err;
}

/* A new id on chan, or on a channel of its own (synchronous) when chan is NULL. Lock held. */
static int id_alloc(struct cma_chan *chan, void *context, enum rdma_port_space ps,
		    enum ibv_qp_type qp_type, struct cma_id **out)
{
	struct cma_id *id = calloc(1, sizeof(*id));

	if (!id)
		return -ENOMEM;
	if (!chan) {
		chan = cma_chan_new();
		if (!chan) {
			int err = errno ? -errno : -ENOMEM; /* never 0: the caller reads *out */

			free(id);
			return err;
		}
		id->sync = true;
	}
	id->chan = chan;
	id->chan->ids++;
	id->id.channel = &chan->ch;
	id->id.context = context;
	id->id.ps = ps;
	id->id.qp_type = qp_type;
	id->gid_index = -1;
	id->will_slot = -1;
	pthread_cond_init(&id->acked, NULL);
	id->next_id = all_ids;
	all_ids = id;
	*out = id;
	return 0;
}

/* A passive id for a connection request on listen (lock held). */
int cma_id_new_passive(struct cma_id *listen, struct cma_id **out)
{
	struct cma_id *id = NULL;
	int err = id_alloc(listen->sync ? NULL : listen->chan, listen->id.context,
			   listen->id.ps, listen->id.qp_type, &id);

	if (err)
		return err;
	id->listener = listen;
	id->passive = true;
	id->state = CMA_CONNECT;
	id->tos = listen->tos;
	id->tos_set = listen->tos_set;
	id->ack_timeout = listen->ack_timeout;
	id->ack_timeout_set = listen->ack_timeout_set;
	*out = id;
	return 0;
}

int rdma_create_id(struct rdma_event_channel *channel, struct rdma_cm_id **id, void *context,
		   enum rdma_port_space ps)
{
	enum ibv_qp_type t;
	struct cma_id *c = NULL;
	struct cma_chan *ch;
	int err;

	if (!id)
		return cma_err(-EINVAL);
	switch (ps) {
	case RDMA_PS_TCP:
	case RDMA_PS_IB:
		t = IBV_QPT_RC;
		break;
	case RDMA_PS_UDP:
	case RDMA_PS_IPOIB:
		t = IBV_QPT_UD;
		break;
	default:
		return cma_err(-EINVAL);
	}
	err = cma_init();
	if (err)
		return cma_err(err);
	pthread_mutex_lock(&cma_lock);
	ch = channel ? cma_chan_find(channel) : NULL;
	if (channel && !ch)
		err = -EBADF; /* a dead channel: rdma-core's write(2) on its closed fd */
	else
		err = id_alloc(ch, context, ps, t, &c);
	pthread_mutex_unlock(&cma_lock);
	if (err)
		return cma_err(err);
	*id = &c->id;
	return 0;
}

/* rdma-core's rdma_create_id2 is internal; rdma_create_ep and others use this. */
int cma_create_id_qpt(struct rdma_event_channel *channel, struct rdma_cm_id **id, void *context,
		      enum rdma_port_space ps, enum ibv_qp_type qpt)
{
	int err = rdma_create_id(channel, id, context, ps);

	if (!err)
		(*id)->qp_type = qpt;
	return err;
}


static void unlink_id(struct cma_id *id)
{
	for (struct cma_id **pp = &all_ids; *pp; pp = &(*pp)->next_id)
		if (*pp == id) {
			*pp = id->next_id;
			return;
		}
}

/* The end of an id (lock held): off the list and its channel, its own channel freed. */
static void id_free(struct cma_id *id)
{
	unlink_id(id);
	cma_chan_unuse(id->chan, id->sync);
	pthread_cond_destroy(&id->acked);
	free(id);
}

void cma_id_drop_unreported(struct cma_id *id)
{
	id->destroying = true;
	cma_id_drop_conn(id);
	id_free(id);
}

int rdma_destroy_id(struct rdma_cm_id *cid)
{
	struct cma_id *id;
	bool listening;

	pthread_mutex_lock(&cma_lock);
	id = cma_id_find(cid);
	if (!id) {
		pthread_mutex_unlock(&cma_lock);
		return cma_err(-EINVAL);
	}
	if (id->sync && cid->event) {
		cma_event_ack(cma_container_of(cid->event, struct cma_event, ev));
		cid->event = NULL;
	}
	id->destroying = true;
	if (id->conn) {
		cma_id_drop_conn(id);
		if (id->dev)
			cma_dev_flush(id->dev); /* the REJ or DREQ it may have sent */
	}
	if (id->counted && id->listener) {
		id->listener->pending--;
		id->counted = false;
	}
	/* Passive ids that still point at a listener being destroyed forget it. */
	for (struct cma_id *i = all_ids; i; i = i->next_id)
		if (i->listener == id)
			i->listener = NULL;
	cma_event_forget(id);
	while (id->events_acked < id->events_reported)
		pthread_cond_wait(&id->acked, &cma_lock);
	cma_mc_free_all(id);
	listening = id->state == CMA_LISTEN;
	id_free(id);
	if (listening)
		cma_steer_update();
	pthread_mutex_unlock(&cma_lock);
	cma_kick();
	return 0;
}

/* Bind to src: the device that holds the address, or none when wildcard (the caller's choice:
 * cma_sa_wildcard for the application's binds, cma_sa_any for a route's source). Lock held. */
static int bind_locked(struct cma_id *id, const struct sockaddr *src, bool wildcard)
{
	uint8_t gid[16];
	uint16_t port;
	socklen_t len = cma_sa_len(src);

	if (!len)
		return -EAFNOSUPPORT;
	if (id->state != CMA_IDLE)
		return -EINVAL;
	port = cma_sa_port(src);
	if (port && port_used(id->id.ps, port, id) && !id->reuseaddr)
		return -EADDRINUSE;
	if (!port) {
		port = ephemeral_port(id->id.ps);
		if (!port)
			return -EADDRNOTAVAIL;
	}
	id->dev = NULL;
	if (!wildcard) {
		cma_gid_of_sa(src, gid);
		id->dev = cma_dev_with_gid(gid);
		if (!id->dev)
			return -EADDRNOTAVAIL;
		memcpy(id->sgid, gid, 16);
		memcpy(id->id.route.addr.addr.ibaddr.sgid.raw, gid, 16);
	}
	memset(&id->id.route.addr.src_storage, 0, sizeof(id->id.route.addr.src_storage));
	memcpy(&id->id.route.addr.src_storage, src, len);
	cma_sa_set_port(&id->id.route.addr.src_addr, port);
	id->id.verbs = id->dev ? id->dev->verbs : NULL;
	id->id.pd = id->dev ? id->dev->pd : NULL; /* the device's PD until a QP names another */
	id->id.port_num = id->dev ? 1 : 0;
	id->id.route.addr.addr.ibaddr.pkey = htons(0xFFFF);
	id->state = CMA_ADDR_BOUND;
	return 0;
}

int rdma_bind_addr(struct rdma_cm_id *cid, struct sockaddr *addr)
{
	struct cma_id *id;
	int err;

	pthread_mutex_lock(&cma_lock);
	id = cma_id_find(cid);
	err = id && addr ? bind_locked(id, addr, cma_sa_wildcard(addr)) : -EINVAL;
	pthread_mutex_unlock(&cma_lock);
	return cma_err(err);
}

/*
 * Address resolution (core/addr.c, core/cma.c): the route gives the source address (when the
 * id is not bound), whether a gateway is on the way and the hop limit; the source address
 * gives the device; the device's default RoCE mode gives the GID type, except that a gateway
 * forces RoCE v2 (cma_route_gid_type).
 */
static int resolve_locked(struct cma_id *id, const struct sockaddr *src,
			  const struct sockaddr *dst)
{
	struct uroce_route rt;
	const struct sockaddr *bound = NULL;
	int type, idx, err;

	if (!cma_sa_len(dst))
		return -EAFNOSUPPORT;
	if (id->state == CMA_ADDR_BOUND && id->dev)
		bound = &id->id.route.addr.src_addr;
	else if (src && !cma_sa_wildcard(src))
		bound = src;
	if (cma_sa_mcast(dst)) {
		/* A group (rdma_join_multicast follows): it leaves by the device of the source
		 * address, as the kernel routes a multicast destination with a source address
		 * (no neighbour: the MAC is the group's). Without one, no route. */
		if (!bound || bound->sa_family != dst->sa_family)
			return -ENETUNREACH;
		memset(&rt, 0, sizeof(rt));
		memcpy(&rt.src, bound, cma_sa_len(bound));
		rt.hop_limit = 1;
		rt.local = true; /* on_link false: no neighbour to wait for */
	} else {
		err = uroce_route_lookup(dst, bound, &rt);
		if (err)
			return err;
	}
	if (id->state == CMA_IDLE || (id->state == CMA_ADDR_BOUND && !id->dev)) {
		struct sockaddr_storage s = rt.src;
		uint16_t port = id->state == CMA_ADDR_BOUND
					? cma_sa_port(&id->id.route.addr.src_addr)
					: (src ? cma_sa_port(src) : 0);

		cma_sa_set_port((struct sockaddr *)&s, port);
		id->state = CMA_IDLE;
		err = bind_locked(id, (struct sockaddr *)&s, cma_sa_any((struct sockaddr *)&s));
		if (err)
			return err;
	} else if (id->state != CMA_ADDR_BOUND) {
		return -EINVAL;
	}
	type = rt.gateway ? IBV_GID_TYPE_ROCE_V2 : cma_default_gid_type(id->dev->name);
	idx = cma_gid_find(id->dev->verbs, id->sgid, type);
	if (idx < 0) {
		id->state = CMA_ADDR_BOUND;
		return rt.gateway ? -ENETUNREACH : -EADDRNOTAVAIL;
	}
	id->gid_index = idx;
	id->gid_type = type;
	id->hop_limit = rt.hop_limit;
	id->ifindex = rt.ifindex;
	id->on_link = !rt.gateway && !rt.local;
	memset(&id->id.route.addr.dst_storage, 0, sizeof(id->id.route.addr.dst_storage));
	memcpy(&id->id.route.addr.dst_storage, dst, cma_sa_len(dst));
	cma_gid_of_sa(dst, id->dgid);
	memcpy(id->id.route.addr.addr.ibaddr.dgid.raw, id->dgid, 16);
	id->state = CMA_ADDR_RESOLVED;
	return 0;
}

/*
 * The neighbour's MAC, as the kernel's addr_resolve waits for it (dst_fetch_ha; roce-reference
 * 2.7): looked up, resolution started when missing (host/neigh.h), then waited for on the
 * neighbour table's change notifications until timeout_ms. 0, -ETIMEDOUT, or -EHOSTUNREACH
 * (the kernel marked it failed). Called without the lock: it blocks up to timeout_ms.
 */
static int neigh_wait(int ifindex, const uint8_t gid[16], int timeout_ms)
{
	uint64_t end = cma_now() + (uint64_t)(timeout_ms > 0 ? timeout_ms : 2000) * 1000000ull;
	int fd = uroce_neigh_monitor_open();
	uint8_t mac[6];
	int err = uroce_neigh_lookup(ifindex, gid, mac);

	while (err == -EAGAIN || err == -EHOSTUNREACH) {
		uint64_t now = cma_now();
		struct pollfd p = {.fd = fd, .events = POLLIN};

		if (now >= end)
			break;
		/* Woken by any neighbour change; at most every 10 ms without the monitor. */
		poll(&p, fd >= 0 ? 1 : 0,
		     fd >= 0 ? (int)((end - now + 999999) / 1000000) : 10);
		if (fd >= 0)
			uroce_neigh_monitor_drain(fd);
		err = uroce_neigh_lookup(ifindex, gid, mac);
	}
	if (fd >= 0)
		close(fd);
	if (err == -EAGAIN)
		return -ETIMEDOUT;
	return err;
}

int rdma_resolve_addr(struct rdma_cm_id *cid, struct sockaddr *src_addr, struct sockaddr *dst_addr,
		      int timeout_ms)
{
	struct cma_id *id;
	uint8_t dgid[16];
	int ifindex = 0, err;
	bool on_link = false;

	pthread_mutex_lock(&cma_lock);
	id = cma_id_find(cid); /* before the addresses: perftest passes freed ones with a dead id */
	if (!id || !dst_addr || (id->state != CMA_IDLE && id->state != CMA_ADDR_BOUND)) {
		pthread_mutex_unlock(&cma_lock);
		return cma_err(-EINVAL);
	}
	err = resolve_locked(id, src_addr, dst_addr);
	if (err == -EINVAL || err == -EAFNOSUPPORT) {
		/* Bad arguments or state fail the call; what the network says (no route, no
		 * device with that source address or RoCE version, no neighbour) comes as
		 * ADDR_ERROR, as the kernel's asynchronous resolution reports it. */
		pthread_mutex_unlock(&cma_lock);
		return cma_err(err);
	}
	if (!err) {
		on_link = id->on_link;
		ifindex = id->ifindex;
		memcpy(dgid, id->dgid, 16);
	}
	pthread_mutex_unlock(&cma_lock);
	/* Without the lock: this waits up to timeout_ms for the neighbour (ARP or ND). */
	if (!err && on_link)
		err = neigh_wait(ifindex, dgid, timeout_ms);
	pthread_mutex_lock(&cma_lock);
	if (err && id->state == CMA_ADDR_RESOLVED)
		id->state = CMA_ADDR_BOUND;
	err = cma_event_post(id, NULL,
			     err ? RDMA_CM_EVENT_ADDR_ERROR : RDMA_CM_EVENT_ADDR_RESOLVED, err,
			     NULL, 0, NULL);
	pthread_mutex_unlock(&cma_lock);
	if (err)
		return cma_err(err);
	return id->sync ? cma_err(cma_sync_wait(id)) : 0;
}

/* The path record the kernel fills for RoCE (cma_resolve_iboe_route; roce-reference 2.4). */
void cma_fill_path(struct cma_id *id)
{
	struct ibv_sa_path_rec *p = &id->path;

	memset(p, 0, sizeof(*p));
	memcpy(p->sgid.raw, id->sgid, 16);
	memcpy(p->dgid.raw, id->dgid, 16);
	p->hop_limit = id->hop_limit;
	p->traffic_class = id->tos;
	p->reversible = 1;
	p->pkey = htons(0xFFFF);
	p->mtu_selector = 2;
	p->mtu = id->mtu;
	p->rate_selector = 2;
	p->rate = 3;
	p->packet_life_time_selector = 2;
	p->packet_life_time = 16;
	p->numb_path = 1;
	id->id.route.path_rec = p;
	id->id.route.num_paths = 1;
}

int rdma_resolve_route(struct rdma_cm_id *cid, int timeout_ms)
{
	struct cma_id *id;
	int err;

	(void)timeout_ms;
	pthread_mutex_lock(&cma_lock);
	id = cma_id_find(cid);
	if (!id || id->state != CMA_ADDR_RESOLVED) {
		pthread_mutex_unlock(&cma_lock);
		return cma_err(-EINVAL);
	}
	/* The path MTU: the port's active MTU (iboe_get_mtu of the interface MTU). */
	id->mtu = id->dev->active_mtu;
	/* The device's default TOS for an id without its own (cma_resolve_iboe_route). */
	if (!id->tos_set)
		id->tos = (uint8_t)cma_default_tos(id->dev->name);
	cma_fill_path(id);
	id->state = CMA_ROUTE_RESOLVED;
	err = cma_event_post(id, NULL, RDMA_CM_EVENT_ROUTE_RESOLVED, 0, NULL, 0, NULL);
	pthread_mutex_unlock(&cma_lock);
	if (err)
		return cma_err(err);
	return id->sync ? cma_err(cma_sync_wait(id)) : 0;
}

int rdma_listen(struct rdma_cm_id *cid, int backlog)
{
	struct cma_id *id;
	int err;

	pthread_mutex_lock(&cma_lock);
	id = cma_id_find(cid);
	if (!id) {
		err = -EINVAL;
		goto out;
	}
	if (id->state == CMA_IDLE) {
		struct sockaddr_in any = {.sin_family = AF_INET};

		err = bind_locked(id, (struct sockaddr *)&any, true);
		if (err)
			goto out;
	}
	if (id->state != CMA_ADDR_BOUND) {
		err = -EINVAL;
		goto out;
	}
	if (!id->dev)
		cma_dev_open_all(); /* a wildcard listen takes requests on every device */
	id->state = CMA_LISTEN;
	id->backlog = backlog > 0 ? backlog : 1024;
	err = cma_steer_update();
	if (err == -EADDRINUSE)
		id->state = CMA_ADDR_BOUND, cma_steer_update();
	else
		err = 0; /* other steering failures only cost the sharing of the device */
out:
	pthread_mutex_unlock(&cma_lock);
	return cma_err(err);
}

int rdma_set_option(struct rdma_cm_id *cid, int level, int optname, void *optval, size_t optlen)
{
	struct cma_id *id;

	pthread_mutex_lock(&cma_lock);
	id = cma_id_find(cid);
	if (!id || !optval)
		goto inval;
	if (level != RDMA_OPTION_ID) {
		pthread_mutex_unlock(&cma_lock);
		return cma_err(level == RDMA_OPTION_IB ? -ENOSYS : -EINVAL);
	}
	switch (optname) {
	case RDMA_OPTION_ID_TOS:
		if (optlen != sizeof(uint8_t))
			goto inval;
		id->tos = *(uint8_t *)optval;
		id->tos_set = true;
		break;
	case RDMA_OPTION_ID_REUSEADDR:
		if (optlen != sizeof(int))
			goto inval;
		id->reuseaddr = *(int *)optval != 0;
		break;
	case RDMA_OPTION_ID_AFONLY:
		if (optlen != sizeof(int))
			goto inval;
		id->afonly = *(int *)optval != 0;
		break;
	case RDMA_OPTION_ID_ACK_TIMEOUT:
		if (optlen != sizeof(uint8_t) || *(uint8_t *)optval > 31)
			goto inval;
		id->ack_timeout = *(uint8_t *)optval;
		id->ack_timeout_set = true;
		break;
	default:
		pthread_mutex_unlock(&cma_lock);
		return cma_err(-ENOSYS);
	}
	pthread_mutex_unlock(&cma_lock);
	return 0;
inval:
	pthread_mutex_unlock(&cma_lock);
	return cma_err(-EINVAL);
}

/* A dead id has no port: 0, what rdma-core's ucma_get_port gives an address it does not know. */
uint16_t rdma_get_src_port(struct rdma_cm_id *id)
{
	return cma_id_check(id) ? 0 : htons(cma_sa_port(&id->route.addr.src_addr));
}

uint16_t rdma_get_dst_port(struct rdma_cm_id *id)
{
	return cma_id_check(id) ? 0 : htons(cma_sa_port(&id->route.addr.dst_addr));
}

/* A dead id: EINVAL; a dead channel: EBADF (rdma-core writes to its closed fd). */
int rdma_migrate_id(struct rdma_cm_id *cid, struct rdma_event_channel *channel)
{
	struct cma_id *id;
	struct cma_chan *to, *from;
	int err = 0;

	pthread_mutex_lock(&cma_lock);
	id = cma_id_find(cid);
	if (!id) {
		err = -EINVAL;
		goto out;
	}
	to = channel ? cma_chan_find(channel) : cma_chan_new();
	if (!to) {
		err = channel ? -EBADF : (errno ? -errno : -ENOMEM);
		goto out;
	}
	/* A synchronous id's last event (kept in cid->event for the caller to read) is acked
	 * here, as rdma-core does: it was reported, and nothing would ack it once the id has
	 * a channel (rdma_destroy_id would wait for it forever). */
	if (id->sync && cid->event) {
		cma_event_ack(cma_container_of(cid->event, struct cma_event, ev));
		cid->event = NULL;
	}
	from = id->chan;
	cma_event_move(id, to);
	to->ids++;
	cma_chan_unuse(from, id->sync); /* a synchronous id's own channel goes */
	id->chan = to;
	id->sync = !channel;
	cid->channel = &to->ch;
out:
	pthread_mutex_unlock(&cma_lock);
	return cma_err(err);
}
