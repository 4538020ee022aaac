/* SPDX-License-Identifier: MIT */
/*
 * Extended QPs: ibv_create_qp_ex (verbs_context.create_qp_ex) and the ibv_wr_* post-send API
 * (man ibv_wr_post(3)).
 *
 * A QP made with IBV_QP_INIT_ATTR_SEND_OPS_FLAGS gets a batch (struct compat_wr_batch): engine
 * work requests as many as its send queue holds, each with room for its SGEs and its inline
 * bytes, allocated at creation so that posting allocates nothing. ibv_wr_start() takes the
 * batch's lock; each builder (ibv_wr_send, ibv_wr_rdma_write, ...) fills the next request from
 * the QP's wr_id and wr_flags, and the setters (ibv_wr_set_sge, ibv_wr_set_ud_addr, ...) fill
 * in the request built last. ibv_wr_complete() posts the whole batch through the engine all or
 * nothing and rings the doorbell as ibv_post_send() does; ibv_wr_abort() drops the batch. Both
 * release the lock.
 *
 * The builders and setters return nothing, so the batch keeps its first error and
 * ibv_wr_complete() returns it with nothing posted, as rxe does. The errors are those
 * ibv_post_send() gives for the same requests (EINVAL; ENOMEM when the send queue has no room
 * for the batch; EINVAL in RESET, INIT or RTR), and EOPNOTSUPP for an operation the QP was not
 * created with. Every function pointer of the ibv_qp_ex is set, so an operation that is not
 * enabled fails the batch instead of jumping to NULL.
 *
 * The batch lock is the QP's own, not the device's: between wr_start and wr_complete the
 * application may call other verbs (pyverbs allocates the window it binds in between).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "compat/compat.h"
#include "compat/wr_batch.h"

/* rdma-core v44's layout: the header inlines (ibv_wr_send, ...) call through these slots. */
_Static_assert(sizeof(struct ibv_qp_ex) == 352, "v44 ibv_qp_ex size");
_Static_assert(offsetof(struct ibv_qp_ex, qp_base) == 0 &&
		       offsetof(struct ibv_qp_ex, comp_mask) == 160 &&
		       offsetof(struct ibv_qp_ex, wr_id) == 168 &&
		       offsetof(struct ibv_qp_ex, wr_flags) == 176 &&
		       offsetof(struct ibv_qp_ex, wr_atomic_cmp_swp) == 184 &&
		       offsetof(struct ibv_qp_ex, wr_send) == 240 &&
		       offsetof(struct ibv_qp_ex, wr_set_ud_addr) == 272 &&
		       offsetof(struct ibv_qp_ex, wr_set_sge) == 304 &&
		       offsetof(struct ibv_qp_ex, wr_start) == 320 &&
		       offsetof(struct ibv_qp_ex, wr_complete) == 328 &&
		       offsetof(struct ibv_qp_ex, wr_abort) == 336 &&
		       offsetof(struct ibv_qp_ex, wr_atomic_write) == 344,
	       "v44 ibv_qp_ex layout");
_Static_assert(offsetof(struct compat_qp, qpx.qp_base) == offsetof(struct compat_qp, qp),
	       "qp_base is the QP");
_Static_assert(IBV_ACCESS_LOCAL_WRITE == (int)UROCE_ACCESS_LOCAL_WRITE &&
		       IBV_ACCESS_REMOTE_WRITE == (int)UROCE_ACCESS_REMOTE_WRITE &&
		       IBV_ACCESS_MW_BIND == (int)UROCE_ACCESS_MW_BIND,
	       "access flags");

/* What ibv_create_qp_ex takes. XRCD, TSO headers and RSS are not supported. */
#define COMP_MASK_SUPPORTED                                                                  \
	(IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_CREATE_FLAGS | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS)

/* The operations per QP type, as rxe allows them (without ATOMIC_WRITE: no engine opcode). */
#define OPS_UD (IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM)
#define OPS_UC                                                                               \
	(OPS_UD | IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |              \
	 IBV_QP_EX_WITH_BIND_MW | IBV_QP_EX_WITH_SEND_WITH_INV)
#define OPS_RC                                                                               \
	(OPS_UC | IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |                \
	 IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD | IBV_QP_EX_WITH_LOCAL_INV)

static struct compat_wr_batch *batch_of(struct ibv_qp_ex *q)
{
	return compat_container_of(q, struct compat_qp, qpx)->wrs;
}

static void batch_fail(struct compat_wr_batch *b, int err)
{
	if (!b->err)
		b->err = err;
}

/* The batch's next request, started from wr_id and wr_flags; NULL when the batch has failed. */
static struct uroce_send_wr *build(struct ibv_qp_ex *q, uint64_t op_flag, enum uroce_wr_opcode op)
{
	struct compat_wr_batch *b = batch_of(q);

	if (b->err)
		return NULL;
	if (!(b->ops & op_flag)) {
		batch_fail(b, EOPNOTSUPP);
		return NULL;
	}
	if (b->n == b->max_wr) {
		batch_fail(b, ENOMEM); /* more than the send queue holds */
		return NULL;
	}
	struct uroce_send_wr *w = &b->wr[b->n];

	/* IBV_SEND_INLINE comes from wr_set_inline_data*, not from wr_flags. */
	*w = (struct uroce_send_wr){
		.wr_id = q->wr_id,
		.sg_list = &b->sge[(size_t)b->n * b->max_sge],
		.opcode = op,
		.send_flags = q->wr_flags & (IBV_SEND_FENCE | IBV_SEND_SIGNALED | IBV_SEND_SOLICITED),
	};
	if (b->n)
		b->wr[b->n - 1].next = w;
	b->n++;
	return w;
}

/* The request built last, for a setter; NULL when the batch has failed or has none (EINVAL). */
static struct uroce_send_wr *current(struct compat_wr_batch *b)
{
	if (b->err)
		return NULL;
	if (!b->n) {
		batch_fail(b, EINVAL);
		return NULL;
	}
	return &b->wr[b->n - 1];
}

/* ---- builders ------------------------------------------------------------------------------ */

static void wr_atomic_cmp_swp(struct ibv_qp_ex *q, uint32_t rkey, uint64_t remote_addr,
			      uint64_t compare, uint64_t swap)
{
	struct uroce_send_wr *w =
		build(q, IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP, UROCE_WR_ATOMIC_CMP_AND_SWP);

	if (!w)
		return;
	w->wr.atomic.remote_addr = remote_addr;
	w->wr.atomic.compare_add = compare;
	w->wr.atomic.swap = swap;
	w->wr.atomic.rkey = rkey;
}

static void wr_atomic_fetch_add(struct ibv_qp_ex *q, uint32_t rkey, uint64_t remote_addr,
				uint64_t add)
{
	struct uroce_send_wr *w =
		build(q, IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD, UROCE_WR_ATOMIC_FETCH_AND_ADD);

	if (!w)
		return;
	w->wr.atomic.remote_addr = remote_addr;
	w->wr.atomic.compare_add = add;
	w->wr.atomic.rkey = rkey;
}

static void wr_bind_mw(struct ibv_qp_ex *q, struct ibv_mw *mw, uint32_t rkey,
		       const struct ibv_mw_bind_info *info)
{
	struct uroce_send_wr *w = build(q, IBV_QP_EX_WITH_BIND_MW, UROCE_WR_BIND_MW);

	if (!w)
		return;
	if (uroce_compat_bind_wr(w, mw, rkey, info))
		batch_fail(batch_of(q), EINVAL);
}

static void wr_local_inv(struct ibv_qp_ex *q, uint32_t invalidate_rkey)
{
	struct uroce_send_wr *w = build(q, IBV_QP_EX_WITH_LOCAL_INV, UROCE_WR_LOCAL_INV);

	if (w)
		w->invalidate_rkey = invalidate_rkey;
}

static void wr_rdma(struct ibv_qp_ex *q, uint64_t op_flag, enum uroce_wr_opcode op, uint32_t rkey,
		    uint64_t remote_addr, uint32_t imm)
{
	struct uroce_send_wr *w = build(q, op_flag, op);

	if (!w)
		return;
	w->wr.rdma.remote_addr = remote_addr;
	w->wr.rdma.rkey = rkey;
	w->imm_data = imm;
}

static void wr_rdma_read(struct ibv_qp_ex *q, uint32_t rkey, uint64_t remote_addr)
{
	wr_rdma(q, IBV_QP_EX_WITH_RDMA_READ, UROCE_WR_RDMA_READ, rkey, remote_addr, 0);
}

static void wr_rdma_write(struct ibv_qp_ex *q, uint32_t rkey, uint64_t remote_addr)
{
	wr_rdma(q, IBV_QP_EX_WITH_RDMA_WRITE, UROCE_WR_RDMA_WRITE, rkey, remote_addr, 0);
}

static void wr_rdma_write_imm(struct ibv_qp_ex *q, uint32_t rkey, uint64_t remote_addr,
			      __be32 imm_data)
{
	/* The engine takes the immediate as the host-order value of the wire field. */
	wr_rdma(q, IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM, UROCE_WR_RDMA_WRITE_WITH_IMM, rkey,
		remote_addr, ntohl(imm_data));
}

static void wr_send(struct ibv_qp_ex *q)
{
	build(q, IBV_QP_EX_WITH_SEND, UROCE_WR_SEND);
}

static void wr_send_imm(struct ibv_qp_ex *q, __be32 imm_data)
{
	struct uroce_send_wr *w = build(q, IBV_QP_EX_WITH_SEND_WITH_IMM, UROCE_WR_SEND_WITH_IMM);

	if (w)
		w->imm_data = ntohl(imm_data);
}

static void wr_send_inv(struct ibv_qp_ex *q, uint32_t invalidate_rkey)
{
	struct uroce_send_wr *w = build(q, IBV_QP_EX_WITH_SEND_WITH_INV, UROCE_WR_SEND_WITH_INV);

	if (w)
		w->invalidate_rkey = invalidate_rkey;
}

/* TSO is for raw packet QPs, which uroce does not have. */
static void wr_send_tso(struct ibv_qp_ex *q, void *hdr, uint16_t hdr_sz, uint16_t mss)
{
	(void)hdr;
	(void)hdr_sz;
	(void)mss;
	batch_fail(batch_of(q), EOPNOTSUPP);
}

/* The engine has no atomic write (create_qp_ex refuses IBV_QP_EX_WITH_ATOMIC_WRITE). */
static void wr_atomic_write(struct ibv_qp_ex *q, uint32_t rkey, uint64_t remote_addr,
			    const void *atomic_wr)
{
	(void)rkey;
	(void)remote_addr;
	(void)atomic_wr;
	batch_fail(batch_of(q), EOPNOTSUPP);
}

/* ---- setters ------------------------------------------------------------------------------- */

static void wr_set_ud_addr(struct ibv_qp_ex *q, struct ibv_ah *ah, uint32_t remote_qpn,
			   uint32_t remote_qkey)
{
	struct compat_wr_batch *b = batch_of(q);
	struct uroce_send_wr *w = current(b);

	if (!w)
		return;
	if (b->type != IBV_QPT_UD || !ah) {
		batch_fail(b, EINVAL);
		return;
	}
	w->wr.ud.ah = compat_container_of(ah, struct compat_ah, ah)->eah;
	w->wr.ud.remote_qpn = remote_qpn;
	w->wr.ud.remote_qkey = remote_qkey;
}

/* XRC is not supported: no XRC QP has this API, so any call is a mistake. */
static void wr_set_xrc_srqn(struct ibv_qp_ex *q, uint32_t remote_srqn)
{
	(void)remote_srqn;
	batch_fail(batch_of(q), EOPNOTSUPP);
}

static void wr_set_inline_data_list(struct ibv_qp_ex *q, size_t num_buf,
				    const struct ibv_data_buf *buf_list)
{
	struct compat_wr_batch *b = batch_of(q);
	struct uroce_send_wr *w = current(b);

	if (!w)
		return;
	/* Copied now, into the request's own bytes: the application may reuse its buffers as
	 * soon as the call returns (ibv_wr_post(3)). */
	uint8_t *inl = b->inl ? b->inl + (size_t)(b->n - 1) * b->max_inline : NULL;
	size_t len = 0;

	for (size_t i = 0; i < num_buf; i++) {
		if (buf_list[i].length > b->max_inline - len) {
			batch_fail(b, EINVAL); /* longer than max_inline_data */
			return;
		}
		if (buf_list[i].length)
			memcpy(inl + len, buf_list[i].addr, buf_list[i].length);
		len += buf_list[i].length;
	}
	w->sg_list[0] = (struct uroce_sge){.addr = (uintptr_t)inl, .length = (uint32_t)len};
	w->num_sge = len ? 1 : 0;
	w->send_flags |= UROCE_SEND_INLINE;
}

static void wr_set_inline_data(struct ibv_qp_ex *q, void *addr, size_t length)
{
	const struct ibv_data_buf buf = {.addr = addr, .length = length};

	wr_set_inline_data_list(q, 1, &buf);
}

static void wr_set_sge_list(struct ibv_qp_ex *q, size_t num_sge, const struct ibv_sge *sg_list)
{
	struct compat_wr_batch *b = batch_of(q);
	struct uroce_send_wr *w = current(b);

	if (!w)
		return;
	if (num_sge > b->max_sge || (num_sge && !sg_list)) {
		batch_fail(b, EINVAL); /* as ibv_post_send with more than max_send_sge */
		return;
	}
	for (size_t i = 0; i < num_sge; i++)
		w->sg_list[i] = (struct uroce_sge){
			.addr = sg_list[i].addr,
			.length = sg_list[i].length,
			.lkey = sg_list[i].lkey,
		};
	w->num_sge = (int)num_sge;
	w->send_flags &= ~(unsigned)UROCE_SEND_INLINE;
}

static void wr_set_sge(struct ibv_qp_ex *q, uint32_t lkey, uint64_t addr, uint32_t length)
{
	const struct ibv_sge sge = {.addr = addr, .length = length, .lkey = lkey};

	/* A zero-length SGE is no data at all (as rxe): its lkey is not checked. */
	wr_set_sge_list(q, length ? 1 : 0, &sge);
}

/* ---- the batch ----------------------------------------------------------------------------- */

static void wr_start(struct ibv_qp_ex *q)
{
	struct compat_wr_batch *b = batch_of(q);

	pthread_mutex_lock(&b->lock);
	b->n = 0;
	b->err = 0;
}

static int wr_complete(struct ibv_qp_ex *q)
{
	struct compat_qp *qp = compat_container_of(q, struct compat_qp, qpx);
	struct compat_wr_batch *b = qp->wrs;
	int err = b->err;

	if (!err && b->n) {
		struct uroce_ctx *uc = compat_uc(qp->qp.context);
		struct uroce_send_wr *bad;
		size_t bytes = 0;

		uroce_ctx_lock(uc);
		err = -uroce_post_send_all(qp->eqp, b->wr, &bad);
		for (uint32_t i = 0; !err && i < b->n; i++)
			for (int k = 0; k < b->wr[i].num_sge; k++)
				bytes += b->wr[i].sg_list[k].length;
		/* The doorbell, as uroce_compat_post_send rings it. */
		uroce_ctx_post_unlock(uc, bytes);
	}
	b->n = 0;
	pthread_mutex_unlock(&b->lock);
	return err;
}

static void wr_abort(struct ibv_qp_ex *q)
{
	struct compat_wr_batch *b = batch_of(q);

	b->n = 0;
	pthread_mutex_unlock(&b->lock);
}

/* ---- creation ------------------------------------------------------------------------------ */

static int check_init_attr(struct ibv_context *c, const struct ibv_qp_init_attr_ex *a)
{
	uint64_t ops;

	if (a->comp_mask & ~(uint32_t)COMP_MASK_SUPPORTED)
		return -EOPNOTSUPP;
	if (!(a->comp_mask & IBV_QP_INIT_ATTR_PD) || !a->pd || a->pd->context != c)
		return -EINVAL;
	/* rxe accepts no creation flag (BLOCK_SELF_MCAST_LB, SOURCE_QPN, ... are mlx5's). */
	if ((a->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) && a->create_flags)
		return -EOPNOTSUPP;
	if (!(a->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS))
		return 0;
	switch (a->qp_type) {
	case IBV_QPT_RC:
		ops = OPS_RC;
		break;
	case IBV_QPT_UC:
		ops = OPS_UC;
		break;
	case IBV_QPT_UD:
		ops = OPS_UD;
		break;
	case IBV_QPT_RAW_PACKET:
	case IBV_QPT_XRC_SEND:
	case IBV_QPT_XRC_RECV:
	case IBV_QPT_DRIVER:
	default:
		return -EOPNOTSUPP;
	}
	return a->send_ops_flags & ~ops ? -EOPNOTSUPP : 0;
}

/* Give qp its batch and its ibv_qp_ex ops. 0 or -ENOMEM. */
static int batch_new(struct compat_qp *qp, uint64_t ops, const struct ibv_qp_cap *cap)
{
	qp->wrs = uroce_compat_wr_batch_new(qp->qp.qp_type, ops, cap);
	if (!qp->wrs)
		return -ENOMEM;

	struct ibv_qp_ex *q = &qp->qpx;

	q->comp_mask = 0;
	q->wr_id = 0;
	q->wr_flags = 0;
	q->wr_atomic_cmp_swp = wr_atomic_cmp_swp;
	q->wr_atomic_fetch_add = wr_atomic_fetch_add;
	q->wr_bind_mw = wr_bind_mw;
	q->wr_local_inv = wr_local_inv;
	q->wr_rdma_read = wr_rdma_read;
	q->wr_rdma_write = wr_rdma_write;
	q->wr_rdma_write_imm = wr_rdma_write_imm;
	q->wr_send = wr_send;
	q->wr_send_imm = wr_send_imm;
	q->wr_send_inv = wr_send_inv;
	q->wr_send_tso = wr_send_tso;
	q->wr_set_ud_addr = wr_set_ud_addr;
	q->wr_set_xrc_srqn = wr_set_xrc_srqn;
	q->wr_set_inline_data = wr_set_inline_data;
	q->wr_set_inline_data_list = wr_set_inline_data_list;
	q->wr_set_sge = wr_set_sge;
	q->wr_set_sge_list = wr_set_sge_list;
	q->wr_start = wr_start;
	q->wr_complete = wr_complete;
	q->wr_abort = wr_abort;
	q->wr_atomic_write = wr_atomic_write;
	return 0;
}

/*
 * ibv_create_qp_ex with more than a PD lands here (the header inline calls ibv_create_qp for
 * comp_mask == PD). Checked as rxe checks it; then the QP is ibv_create_qp's, and with
 * IBV_QP_INIT_ATTR_SEND_OPS_FLAGS it gets its batch and ibv_qp_to_qp_ex() returns it.
 */
struct ibv_qp *uroce_compat_create_qp_ex(struct ibv_context *c, struct ibv_qp_init_attr_ex *a)
{
	int err = check_init_attr(c, a);

	if (err) {
		errno = -err;
		return NULL;
	}
	struct ibv_qp_init_attr init = {
		.qp_context = a->qp_context,
		.send_cq = a->send_cq,
		.recv_cq = a->recv_cq,
		.srq = a->srq,
		.cap = a->cap,
		.qp_type = a->qp_type,
		.sq_sig_all = a->sq_sig_all,
	};
	struct ibv_qp *ibqp = ibv_create_qp(a->pd, &init);

	if (!ibqp)
		return NULL;
	a->cap = init.cap;
	if (!(a->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS))
		return ibqp;

	struct compat_qp *qp = compat_container_of(ibqp, struct compat_qp, qp);

	err = batch_new(qp, a->send_ops_flags, &init.cap);
	if (err) {
		ibv_destroy_qp(ibqp);
		errno = -err;
		return NULL;
	}
	return ibqp;
}

/* As rdma-core: the ibv_qp_ex of a QP made with IBV_QP_INIT_ATTR_SEND_OPS_FLAGS, else NULL. */
struct ibv_qp_ex *ibv_qp_to_qp_ex(struct ibv_qp *ibqp)
{
	struct compat_qp *qp = compat_container_of(ibqp, struct compat_qp, qp);

	return qp->wrs ? &qp->qpx : NULL;
}
