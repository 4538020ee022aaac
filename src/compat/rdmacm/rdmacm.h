/* SPDX-License-Identifier: MIT */
/*
 * uroce's librdmacm.so.1: the objects behind the rdma-core v44 RDMA CM ABI (Debian 12).
 *
 * What the kernel's rdma_cm and ib_cm do for rdma-core, this library does in the process:
 * - cma_id wraps the public struct rdma_cm_id; cma_chan wraps struct rdma_event_channel (an
 *   eventfd in semaphore mode counts the queued events, so the fd polls readable while events
 *   wait and a blocking read is rdma_get_cm_event's wait).
 * - One CM agent per device (cma_dev), opened when an id first needs the device: the shared
 *   ibv_context of our libibverbs, QP1 with its receive and send buffers, and the sans-I/O IB CM
 *   engine (src/cm/ibcm.h).
 * - One CM thread per process plays the kernel: it waits on every agent's completion channel,
 *   a wake-up eventfd and the CM engines' next deadline, feeds received MADs and the time to the
 *   engines, and turns their events into rdma_cm events on the ids' channels.
 *
 * Locking: one mutex (cma_lock) guards every id, channel queue, agent and CM engine. The API
 * takes it around its work; the CM thread takes it per round. Verbs calls made under it (post
 * on QP1, modify QP) take the device context's lock inside it, never the other way round; the
 * progress threads of libibverbs never take cma_lock.
 *
 * Errors: internal functions return 0 or a negative errno; the exported calls return -1 with
 * errno set (or NULL), as rdma-core does.
 *
 * Dead handles: every exported call that takes a struct rdma_cm_id * or struct
 * rdma_event_channel * first looks it up among the live ones (cma_id_find, cma_chan_find: a
 * pointer comparison under cma_lock, nothing read through the caller's pointer) and fails on one
 * that was destroyed or never created: -1 with errno EINVAL for an id, EBADF for a channel (void
 * calls just return). The ECE calls, which fail with EOPNOTSUPP whatever the id, never look at
 * it. perftest 4.5's -R client retries with the ids and channel it has just
 * destroyed (issue 17). The look-up cannot tell a destroyed id from a new one that malloc put at
 * the same address, as the kernel's handles can be reused; it keeps us from reading freed memory.
 */
#ifndef UROCE_RDMACM_RDMACM_H
#define UROCE_RDMACM_RDMACM_H

#include <infiniband/verbs.h>
#include <pthread.h>
#include <rdma/rdma_cma.h>
#include <stdbool.h>
#include <stdint.h>

#include "cm/ibcm.h"

#define cma_container_of(ptr, type, member) \
	((type *)(void *)((char *)(ptr)-offsetof(type, member)))

/* An event handed out by rdma_get_cm_event; private data lives here until the ack. */
struct cma_event {
	struct rdma_cm_event ev;
	struct cma_event *next;
	struct cma_id *owner; /* the id whose event count this is (ev.id) */
	struct cma_mc *mc;    /* MULTICAST_JOIN/ERROR: the join it reports (mcast.c) */
	uint8_t pdata[UROCE_CM_RTU_PRIV_LEN];
};

/* A multicast join of an id (mcast.c), as rdma-core's struct cma_multicast. */
struct cma_mc {
	struct cma_mc *next;
	struct cma_id *id;
	void *context;
	struct sockaddr_storage addr;
	union ibv_gid mgid;
	uint16_t join_flags;
	bool attached;		      /* id->qp attached by the JOIN event */
	unsigned reported, acked;     /* its events handed out / acked */
};

struct cma_chan {
	struct rdma_event_channel ch; /* ch.fd: eventfd (EFD_SEMAPHORE) */
	struct cma_event *head, *tail;
	unsigned ids;	  /* ids using it */
	unsigned readers; /* threads inside rdma_get_cm_event on it */
	/* Destroyed (rdma_destroy_event_channel, or its synchronous id gone) while ids or readers
	 * still use it: off the live list, so the application's new calls on it fail, and freed
	 * (its fd closed) with the last id and the last reader. */
	bool closed;
	struct cma_chan *next_chan; /* every live channel (chan.c all_chans) */
};

enum cma_state {
	CMA_IDLE,
	CMA_ADDR_BOUND,
	CMA_ADDR_RESOLVED,
	CMA_ROUTE_RESOLVED,
	CMA_CONNECT, /* REQ sent, or REQ received and not yet established */
	CMA_ESTABLISHED,
	CMA_DISCONNECT, /* DISCONNECTED reported or disconnect requested */
	CMA_LISTEN,
};

struct cma_dev {
	struct ibv_device *ibdev;
	bool opened;		   /* tried: verbs is set, or the device would not open */
	struct ibv_context *verbs; /* shared by every id on the device; NULL until opened */
	char name[64];
	struct ibv_pd *pd;
	struct ibv_comp_channel *cch;
	struct ibv_cq *cq;
	struct ibv_qp *qp1;
	struct ibv_mr *mr;
	uint8_t *buf;
	struct ibv_ah **send_ah; /* per send slot, NULL when free */
	struct uroce_ibcm *cm;
	struct ibv_device_attr attr;
	uint8_t active_mtu;
	uint64_t node_guid; /* host order */
	bool gsi_ready;
	uint64_t cm_counted[UROCE_IBCM_C_COUNT]; /* the engine's counts in the counter file */
};

struct cma_id {
	struct rdma_cm_id id;
	struct cma_chan *chan;
	bool sync; /* created without a channel: calls wait for their own events */
	enum cma_state state;
	struct cma_dev *dev;
	struct uroce_ibcm_conn *conn;
	struct cma_id *listener; /* a passive id: the listen id it came from */
	bool passive;		 /* made for a connection request: owns no port (as the kernel's) */
	struct cma_id *next_id; /* every live id (id.c all_ids) */
	int backlog, pending;	 /* listen ids: CONNECT_REQUESTs not yet accepted/rejected */
	bool counted;		 /* a passive id counted in its listener's pending */
	/* Path (ROUTE_RESOLVED or from the REQ). */
	int gid_index;
	int gid_type; /* IBV_GID_TYPE_ROCE_V1 / _V2 */
	uint8_t sgid[16], dgid[16];
	uint8_t hop_limit, tos, ack_timeout, mtu;
	int ifindex;	    /* outgoing interface of the resolved route */
	bool on_link;	    /* the destination is a neighbour (no gateway, not this host) */
	bool tos_set, ack_timeout_set, reuseaddr, afonly;
	struct ibv_sa_path_rec path;
	/* Connection parameters, as the kernel's cm_id keeps them. A REQ's or REP's Starting PSN is
	 * the PSN its sender receives on (cm.c: the REQ's sets the active side's rq_psn and the
	 * passive side's sq_psn; the REP's the other way round): rq_psn is ours, chosen here and
	 * sent; sq_psn is the peer's, read from its message. */
	uint32_t rq_psn, sq_psn, remote_qpn, qkey;
	uint8_t responder_resources, initiator_depth, retry_count, rnr_retry_count;
	/* Event accounting: destroy waits until every event handed out is acked. */
	unsigned events_reported, events_acked;
	pthread_cond_t acked;
	bool destroying;
	/* rdma_create_ep on a passive endpoint: what rdma_get_request creates for each id. */
	struct ibv_qp_init_attr *ep_qp_init;
	struct ibv_pd *ep_pd;
	bool own_cqs; /* send/recv CQs and channels made by rdma_create_qp */
	int will_slot; /* its message in the last will (will.h), -1: none */
	struct cma_mc *mc_list; /* multicast joins (mcast.c) */
};

extern pthread_mutex_t cma_lock;

/*
 * List the devices, once. A device is opened (its context, shared by every id on it, its QP1
 * agent, and with the first one the CM thread and the last will) only when an id needs it, as
 * rdma-core's librdmacm does: a process that creates a channel and uses the verbs itself (UCX,
 * MPI) then holds one context per device, not two. 0 or -ENODEV, -errno.
 */
int cma_init(void);
/* The devices in the verbs' order, opened or not. */
int cma_ndevs(void);
struct cma_dev *cma_devs(int i);
struct cma_dev *cma_dev_of_verbs(struct ibv_context *verbs);
/* Open every device (rdma_get_devices, a wildcard listen). Lock held. */
void cma_dev_open_all(void);
/* The device whose GID table holds gid, opened; NULL when none does. Unopened devices are
 * looked at through their interface (host/config/gid.h) and only the one found is opened. */
struct cma_dev *cma_dev_with_gid(const uint8_t gid[16]);
/* Wait (bounded) until the MADs posted on d's QP1 have been sent. Lock held (dropped while
 * waiting). */
void cma_dev_flush(struct cma_dev *d);
/* At exit: disconnect every established connection (DREQ) and answer every DREQ received
 * (DREP), as the kernel does for a process that goes. Lock held. */
void cma_close_all(void);
/* Wake the CM thread (new deadline). */
void cma_kick(void);
uint64_t cma_now(void);
/* Publish which service IDs this process listens on (every device). Lock held. */
int cma_steer_update(void);
/* The CM timing of this process: environment UROCE_CM_TIMEOUT_MS / UROCE_CM_RETRIES, else the
 * kernel's values for RoCE. */
void cma_timing(struct uroce_ibcm_timing *t);

/* Queue an event for id on its channel (lock held). pdata may be NULL. Returns 0 or -ENOMEM. */
int cma_event_post(struct cma_id *id, struct cma_id *listen, enum rdma_cm_event_type type,
		   int status, const void *pdata, size_t len, struct cma_event **out);
/* Remove the queued (not yet handed out) events of id from its channel (lock held). */
void cma_event_forget(struct cma_id *id);
/* Requeue id's queued events from its channel onto to, in order (rdma_migrate_id; lock held). */
void cma_event_move(struct cma_id *id, struct cma_chan *to);
/* A new channel, on the live list (lock held). NULL with errno set. */
struct cma_chan *cma_chan_new(void);
/* The live channel behind ch, or NULL (destroyed, never created, NULL): compares pointers only
 * (lock held). */
struct cma_chan *cma_chan_find(const struct rdma_event_channel *ch);
/* In a forked child: the channels are the parent's; none is live (lock held). */
void cma_chans_forget(void);
/* An id stops using c (lock held): own says c was the id's alone (a synchronous id's). c, its
 * queued events and its fd go when it is closed, or own, and no id uses it any more. */
void cma_chan_unuse(struct cma_chan *c, bool own);
/* Ack e (lock held): rdma_ack_cm_event's work. */
void cma_event_ack(struct cma_event *e);
/* Synchronous ids: wait for the next event of id's private channel and keep it in id->event
 * (acking the previous one). Returns 0, or -errno from the event's status / the wait. */
int cma_sync_wait(struct cma_id *id);

/* The IB CM engine's event handler (cm.c). */
void cma_on_ibcm_event(void *arg, const struct uroce_ibcm_event *ev);

/* Move id->qp to state s with cma_init_qp_attr's attributes (lock held). 0 or -errno. */
int cma_qp_modify(struct cma_id *id, enum ibv_qp_state s);
/* Move id->qp through INIT -> RTR -> RTS with the connection's attributes (lock held). */
int cma_qp_to_rts(struct cma_id *id);
int cma_qp_to_err(struct cma_id *id);
int cma_init_qp_attr(struct cma_id *id, struct ibv_qp_attr *a, int *mask);

/* id.c */
struct cma_id *cma_all_ids(void); /* every live id, linked by next_id (lock held) */
/* The live id behind cid, or NULL (destroyed, never created, NULL): compares cid with the ids
 * on the live list, reads nothing through it (lock held). */
struct cma_id *cma_id_find(const struct rdma_cm_id *cid);
/* cma_id_find for calls that do not otherwise take the lock: 0, or -EINVAL for a dead id. */
int cma_id_check(const struct rdma_cm_id *cid);
/* In a forked child: the ids are the parent's; none is live (lock held). */
void cma_ids_forget(void);
/* Give up id's IB CM connection (ib_destroy_cm_id: the CM sends what its state calls for) and
 * its last-will message. Lock held. */
void cma_id_drop_conn(struct cma_id *id);
int cma_id_new_passive(struct cma_id *listen, struct cma_id **out);
void cma_fill_path(struct cma_id *id);
/* Free a passive id whose connection request the application never read (its listener is
 * going): the connection is rejected. Lock held. */
void cma_id_drop_unreported(struct cma_id *id);
/* rdma_create_id with the QP type rdma_create_ep asks for. */
int cma_create_id_qpt(struct rdma_event_channel *channel, struct rdma_cm_id **id, void *context,
		      enum rdma_port_space ps, enum ibv_qp_type qpt);

/* mcast.c: a MULTICAST_JOIN event being handed out: attach id->qp to the group, as rdma-core's
 * ucma_process_join (an error turns it into MULTICAST_ERROR). Lock held. */
void cma_mc_deliver(struct cma_event *e);
/* The id is being destroyed: its joins go (their QP detached). Lock held. */
void cma_mc_free_all(struct cma_id *id);

/* chan.c: withdraw mc's queued events, not yet handed out, from id's channel (lock held). */
void cma_event_forget_mc(struct cma_id *id, const struct cma_mc *mc);

/* will.c: the CM messages a watchdog sends when this process is gone (will.h). Lock held.
 * cma_will_start: v1 says a device may have RoCE v1 GIDs (the watchdog then gets a packet socket).
 * cma_will_sync: id's will follows its connection's state (call after every change of it):
 * the message the kernel's CM would send for it on the process's death, or none. */
int cma_will_start(bool v1);
void cma_will_sync(struct cma_id *id);
void cma_will_disarm(struct cma_id *id);
/* In a forked child: the will is the parent's. Close the child's end of its pipe (so the
 * watchdog still sees the parent's death) and unmap the table; the child's CM, if it starts
 * one, starts a will of its own. */
void cma_will_forget(void);

/* addr.c: bind the id to the device holding src (NULL: any); fill gid_index for the RoCE
 * version. */
int cma_addr_bind(struct cma_id *id, const struct sockaddr *src);

static inline struct cma_id *cma_id_of(struct rdma_cm_id *id)
{
	return cma_container_of(id, struct cma_id, id);
}

static inline int cma_err(int neg)
{
	if (neg < 0) {
		errno = -neg;
		return -1;
	}
	return 0;
}

#endif
