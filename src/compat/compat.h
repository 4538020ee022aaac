/* SPDX-License-Identifier: MIT */
/*
 * uroce's libibverbs.so.1: the objects behind the rdma-core v44 ABI (Debian 12).
 *
 * Every object handed to an application is one of the structs below; the public rdma-core
 * struct is a member, and container_of() finds ours. Header-inline verbs in the applications
 * (ibv_post_send, ibv_poll_cq, ibv_query_port, ibv_query_device_ex, ...) jump through
 * ctx->ops and the verbs_context ops, so those tables are complete (stubs where uroce has no
 * feature) and the struct layouts are exactly rdma-core's (docs/rdma-core-abi.md §5, §6).
 *
 * Locking
 * - Every engine call is made under uroce_ctx_lock(). Engine events reach compat_on_event()
 *   with that lock held (from the progress thread or from an engine call of ours).
 * - A completion channel's queue has its own mutex, and so has a context's async event queue;
 *   both are taken inside the context lock (ctx lock, then channel or event lock), never the
 *   other way round.
 * - Event accounting (ibv_ack_*_events, and destroy waiting for the acks, as rdma-core does)
 *   uses the mutex and cond inside the public objects.
 *
 * Errors: internal functions return 0 or a negative errno (STYLE.md); the exported verbs turn
 * that into what rdma-core returns (positive errno, or NULL with errno set).
 */
#ifndef UROCE_COMPAT_COMPAT_H
#define UROCE_COMPAT_COMPAT_H

#include <infiniband/verbs.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "host/ctx.h"
#include "host/config/device.h"
#include "transport/engine.h"

#define compat_container_of(ptr, type, member) \
	((type *)(void *)((char *)(ptr)-offsetof(type, member)))

/*
 * A device. The first 712 bytes have the shape of rdma-core's private struct verbs_device:
 * libmlx5/libefa (loaded by perftest and UCX) read the pointer at +664 to recognise their own
 * devices, so it must be there and point at neither of theirs.
 * Reference counted: the list holds one reference until ibv_free_device_list(), every open
 * context one more (applications free the list right after opening a device).
 */
struct compat_device {
	struct ibv_device dev;
	const void *ops; /* +664: verbs_device.ops */
	int vd_refcount; /* the rest of verbs_device, unused */
	void *vd_entry[2];
	void *vd_sysfs;
	uint64_t vd_core_support;
	/* ours */
	atomic_int refs;
	int index; /* position in the device list: ibv_get_device_index() */
	struct uroce_devdef def;
	uint8_t node_guid[8];
};

struct compat_async {
	struct compat_async *next;
	struct ibv_async_event ev;
};

/* An open device. vctx.context is what the application holds. */
struct compat_ctx {
	struct uroce_ctx *uc;
	struct compat_device *dev;
	pthread_mutex_t ev_lock; /* the async event queue */
	struct compat_async *ev_head, *ev_tail;
	/* Channels that may hold events left unsignalled (struct compat_channel), for the
	 * progress thread to count into their fds (uroce_compat_on_round). */
	pthread_mutex_t linger_lock;
	struct compat_channel *linger;
	atomic_bool lingering;	   /* linger is not empty */
	struct verbs_context vctx; /* last: the inlines find it at ctx - 320 */
};

struct compat_pd {
	struct ibv_pd pd;
	struct uroce_pd *epd;
};

struct compat_mr {
	struct ibv_mr mr;
	struct uroce_mr *emr;
};

struct compat_mw {
	struct ibv_mw mw;
	struct uroce_mw *emw;
};

struct compat_ah {
	struct ibv_ah ah;
	struct uroce_ah *eah;
};

/*
 * A completion channel: an eventfd in semaphore mode and a queue of the CQs with events (event.c).
 * The fd counts the queued events but those a thread waiting in ibv_get_cq_event made in its own
 * progress round (unsignalled): it takes one of them without the fd, and the next call of
 * ibv_get_cq_event takes the others, as a program that sleeps on its channel calls it again
 * within microseconds. The progress thread counts what is left into the fd after its next round
 * (uroce_compat_on_round), a lease's time at most after the thread's last sleep or poll: a
 * program that polls the fd instead sees those events that much later, none is lost.
 */
struct compat_channel {
	struct ibv_comp_channel ch;
	pthread_mutex_t lock; /* the queue below and the CQs' ch_* fields */
	struct compat_cq *head, *tail;
	unsigned queued;      /* events queued (the CQs' ch_pending summed) */
	unsigned unsignalled; /* of those, not counted in the fd (<= queued) */
	/* On its context's linger list (the context's linger_lock). */
	bool lingers;
	struct compat_channel *linger_next;
};

/* The channel the calling thread waits on in ibv_get_cq_event, watching the sockets itself
 * (uroce_ctx_channel_wait); NULL when it does not. Events its own rounds make for that channel
 * are queued unsignalled. */
extern _Thread_local struct compat_channel *uroce_compat_waiting;

/* Completions an extended CQ takes from the engine at a time for start_poll/next_poll. */
#define COMPAT_CQ_EX_BATCH 16

/*
 * A CQ, plain (ibv_create_cq) or extended (ibv_create_cq_ex). struct ibv_cq is the first part
 * of struct ibv_cq_ex, so both are the same object to the verbs that take an ibv_cq
 * (ibv_cq_ex_to_cq is a cast) and container_of() on member cq finds this struct for either.
 */
struct compat_cq {
	union {
		struct ibv_cq cq;
		struct ibv_cq_ex ex; /* extended CQs only */
	};
	struct uroce_cq *ecq;
	/* Completion events waiting in the channel (channel lock). A CQ is queued once however
	 * many events it has pending; ibv_get_cq_event() takes one at a time. */
	struct compat_cq *ch_next;
	unsigned ch_pending;
	/* Events handed out (cq.mutex): destroy waits until the application acked them all. */
	unsigned comp_reported;
	unsigned async_reported;
	/*
	 * Extended CQs: the poll API (cq_ex.c) reads completions from buf, which it fills from
	 * the engine COMPAT_CQ_EX_BATCH at a time; buf[pos..n) are taken from the engine but not
	 * yet consumed, and ibv_poll_cq and ibv_resize_cq count them as queued. poll_lock is held
	 * from a start_poll that finds a completion to end_poll, and by ibv_poll_cq and
	 * ibv_resize_cq on the CQ (before the context lock), as rxe holds its CQ lock; not with
	 * IBV_CREATE_CQ_ATTR_SINGLE_THREADED.
	 */
	bool is_ex;
	bool single_threaded;
	bool in_poll; /* between a start_poll that returned 0 and end_poll */
	bool has_cur; /* buf[pos] is the current completion, which the read_* ops report */
	int pos, n;
	pthread_mutex_t poll_lock;
	struct uroce_wc buf[COMPAT_CQ_EX_BATCH];
};

struct compat_srq {
	struct ibv_srq srq;
	struct uroce_srq *esrq;
	unsigned async_reported;
};

/* A QP. qpx.qp_base is qp: ibv_qp_to_qp_ex() hands out qpx for QPs made with
 * IBV_QP_INIT_ATTR_SEND_OPS_FLAGS, which have their ibv_wr_* batch in wrs (wr_batch.h; qpex.c). */
struct compat_qp {
	union {
		struct ibv_qp qp;
		struct ibv_qp_ex qpx;
	};
	struct uroce_qp *eqp;
	unsigned async_reported;
	struct compat_wr_batch *wrs; /* NULL: not an extended QP */
};

static inline struct compat_ctx *compat_ctx_of(struct ibv_context *c)
{
	return compat_container_of(c, struct compat_ctx, vctx.context);
}

static inline struct uroce_ctx *compat_uc(struct ibv_context *c)
{
	return compat_ctx_of(c)->uc;
}

/* context.c: the ops tables */
void uroce_compat_ctx_set_ops(struct compat_ctx *ctx);

/* event.c: engine events into completion channels and the async queue */
void uroce_compat_on_event(void *arg, const struct uroce_event *ev);
/* Deliver every event the engine holds now (context lock held). Called before destroying an
 * object, so no stale event can name it later. */
void uroce_compat_drain_events(struct compat_ctx *ctx);
/* Remove queued, not yet reported async events for obj (context lock held). */
void uroce_compat_forget_async(struct compat_ctx *ctx, const void *obj);
/* Remove cq's pending completion events from its channel (context lock held). */
void uroce_compat_forget_comp(struct compat_cq *cq);
/* Take the channel's next event, if one is queued unsignalled (the caller's own round made it,
 * or an earlier call's): the CQ whose event it is, or NULL. Others left unsignalled put the
 * channel on its context's linger list. */
struct compat_cq *uroce_compat_take_unsignalled(struct compat_channel *ch);
/* The progress thread's round ended (uroce_ctx_cfg.on_round; context lock held): count the
 * events left unsignalled into their channels' fds. */
void uroce_compat_on_round(void *arg);
/* Take the channel off its context's linger list (before it is destroyed). */
void uroce_compat_forget_linger(struct compat_channel *ch);
/* Take the channel's next event after a count was read off its fd: the CQ, or NULL when the
 * event was removed meanwhile (its CQ destroyed). */
struct compat_cq *uroce_compat_take_signalled(struct compat_channel *ch);
/* Wait until the application has acked every event it was given for an object. */
void uroce_compat_wait_acked(pthread_mutex_t *m, pthread_cond_t *c, const uint32_t *completed,
			     const unsigned *reported);

/* qpex.c: ibv_create_qp_ex (verbs_context.create_qp_ex) and the ibv_wr_* post-send API. */
struct ibv_qp *uroce_compat_create_qp_ex(struct ibv_context *c, struct ibv_qp_init_attr_ex *a);

/* post.c: the data-path ops */
int uroce_compat_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad);
int uroce_compat_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad);
int uroce_compat_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr,
			       struct ibv_recv_wr **bad);
int uroce_compat_poll_cq(struct ibv_cq *cq, int num, struct ibv_wc *wc);
/* A BIND_MW request's fields from ibv_send_wr.bind_mw or ibv_wr_bind_mw()'s arguments: bind mw
 * (its R_Key to become rkey) as b says. 0, or -EINVAL when mw or b is NULL. */
int uroce_compat_bind_wr(struct uroce_send_wr *u, struct ibv_mw *mw, uint32_t rkey,
			 const struct ibv_mw_bind_info *b);
/* Up to num completions from cq's engine CQ into uwc, with the pacing calls ibv_poll_cq makes
 * (a progress round in this thread when there are none). Takes the context lock. */
int uroce_compat_cq_take(struct compat_cq *cq, int num, struct uroce_wc *uwc);
int uroce_compat_req_notify_cq(struct ibv_cq *cq, int solicited_only);

/* cq.c: verbs_context.create_cq_ex */
struct ibv_cq_ex *uroce_compat_create_cq_ex(struct ibv_context *context,
					    struct ibv_cq_init_attr_ex *attr);

/* cq_ex.c: the ibv_cq_ex poll API of an extended CQ; fills cq->ex's ops for wc_flags. */
void uroce_compat_cq_ex_init(struct compat_cq *cq, uint64_t wc_flags);
/* The wc_flags (IBV_WC_EX_WITH_*) uroce honours. */
#define COMPAT_CQ_EX_WC_FLAGS                                                             \
	((uint64_t)(IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_IMM | IBV_WC_EX_WITH_QP_NUM |     \
		    IBV_WC_EX_WITH_SRC_QP | IBV_WC_EX_WITH_SLID | IBV_WC_EX_WITH_SL |          \
		    IBV_WC_EX_WITH_DLID_PATH_BITS))
/* mw.c: the memory window ops */
struct ibv_mw *uroce_compat_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type);
int uroce_compat_dealloc_mw(struct ibv_mw *mw);
int uroce_compat_bind_mw(struct ibv_qp *qp, struct ibv_mw *mw, struct ibv_mw_bind *mw_bind);
/* pd_mr.c: the verbs_context advise_mr op */
int uroce_compat_advise_mr(struct ibv_pd *pd, enum ibv_advise_mr_advice advice, uint32_t flags,
			   struct ibv_sge *sg, uint32_t n);

/* query.c */
int uroce_compat_query_port_op(struct ibv_context *c, uint8_t port, struct ibv_port_attr *attr,
			       size_t len);
int uroce_compat_query_device_ex_op(struct ibv_context *c,
				    const struct ibv_query_device_ex_input *input,
				    struct ibv_device_attr_ex *attr, size_t attr_size);
/* The GID table entry idx of port 1 into *out. 0, -EINVAL (bad port or index beyond the table
 * size), -ENODATA (an empty slot: the index is past the current entries). */
int uroce_compat_gid(struct ibv_context *c, uint32_t port, uint32_t idx,
		     struct uroce_gid_entry *out);

/* ah.c: ibv_ah_attr to an engine address vector. 0 or -EINVAL (no GRH: RoCE needs one; an
 * sgid_index that names no GID). */
int uroce_compat_av_from_ah_attr(struct ibv_context *c, const struct ibv_ah_attr *a,
				 struct uroce_av *av);
void uroce_compat_ah_attr_from_av(const struct uroce_av *av, struct ibv_ah_attr *a);

/* Turn a negative engine error into rdma-core's conventions. */
static inline int compat_err(int neg)
{
	return neg < 0 ? -neg : neg;
}

#endif
