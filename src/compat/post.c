/* SPDX-License-Identifier: MIT */
/*
 * The data path: what the header inlines ibv_post_send/recv/srq_recv, ibv_poll_cq and
 * ibv_req_notify_cq reach through ibv_context.ops.
 *
 * Work requests are converted into engine work requests in batches on the stack (the engine
 * copies what it keeps at post time), so posting allocates nothing. The SGE arrays are copied
 * too: struct ibv_sge and struct uroce_sge have the same layout, but the engine reading an
 * application's ibv_sge through a uroce_sge pointer would break C's aliasing rules.
 * Errors follow rdma-core: a positive errno and *bad_wr at the first request not posted (the
 * requests before it are posted).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdbool.h>

#include "compat/compat.h"

#define BATCH 8

_Static_assert(sizeof(struct ibv_sge) == sizeof(struct uroce_sge), "SGE size");
_Static_assert(IBV_WR_RDMA_WRITE == (int)UROCE_WR_RDMA_WRITE &&
		       IBV_WR_RDMA_WRITE_WITH_IMM == (int)UROCE_WR_RDMA_WRITE_WITH_IMM &&
		       IBV_WR_SEND == (int)UROCE_WR_SEND &&
		       IBV_WR_SEND_WITH_IMM == (int)UROCE_WR_SEND_WITH_IMM &&
		       IBV_WR_RDMA_READ == (int)UROCE_WR_RDMA_READ &&
		       IBV_WR_ATOMIC_CMP_AND_SWP == (int)UROCE_WR_ATOMIC_CMP_AND_SWP &&
		       IBV_WR_ATOMIC_FETCH_AND_ADD == (int)UROCE_WR_ATOMIC_FETCH_AND_ADD &&
		       IBV_WR_LOCAL_INV == (int)UROCE_WR_LOCAL_INV &&
		       IBV_WR_BIND_MW == (int)UROCE_WR_BIND_MW &&
		       IBV_WR_SEND_WITH_INV == (int)UROCE_WR_SEND_WITH_INV,
	       "work request opcodes");
_Static_assert(IBV_SEND_FENCE == (int)UROCE_SEND_FENCE &&
		       IBV_SEND_SIGNALED == (int)UROCE_SEND_SIGNALED &&
		       IBV_SEND_SOLICITED == (int)UROCE_SEND_SOLICITED &&
		       IBV_SEND_INLINE == (int)UROCE_SEND_INLINE,
	       "send flags");
_Static_assert(IBV_WC_SUCCESS == (int)UROCE_WC_SUCCESS &&
		       IBV_WC_WR_FLUSH_ERR == (int)UROCE_WC_WR_FLUSH_ERR &&
		       IBV_WC_RETRY_EXC_ERR == (int)UROCE_WC_RETRY_EXC_ERR &&
		       IBV_WC_RNR_RETRY_EXC_ERR == (int)UROCE_WC_RNR_RETRY_EXC_ERR &&
		       IBV_WC_REM_ACCESS_ERR == (int)UROCE_WC_REM_ACCESS_ERR &&
		       IBV_WC_GENERAL_ERR == (int)UROCE_WC_GENERAL_ERR,
	       "completion status");
_Static_assert(IBV_WC_SEND == (int)UROCE_WC_SEND && IBV_WC_RDMA_WRITE == (int)UROCE_WC_RDMA_WRITE &&
		       IBV_WC_RDMA_READ == (int)UROCE_WC_RDMA_READ &&
		       IBV_WC_COMP_SWAP == (int)UROCE_WC_COMP_SWAP &&
		       IBV_WC_FETCH_ADD == (int)UROCE_WC_FETCH_ADD &&
		       IBV_WC_BIND_MW == (int)UROCE_WC_BIND_MW &&
		       IBV_WC_LOCAL_INV == (int)UROCE_WC_LOCAL_INV &&
		       IBV_WC_RECV == (int)UROCE_WC_RECV &&
		       IBV_WC_RECV_RDMA_WITH_IMM == (int)UROCE_WC_RECV_RDMA_WITH_IMM,
	       "completion opcodes");
_Static_assert(IBV_WC_GRH == (int)UROCE_WC_GRH && IBV_WC_WITH_IMM == (int)UROCE_WC_WITH_IMM &&
		       IBV_WC_WITH_INV == (int)UROCE_WC_WITH_INV,
	       "completion flags");
_Static_assert(sizeof(struct ibv_wc) == 48 && sizeof(struct ibv_send_wr) == 128, "v44 WR/WC");

static int copy_sges(const struct ibv_sge *in, int n, struct uroce_sge *out)
{
	if (n < 0 || n > UROCE_MAX_SGE)
		return -EINVAL;
	for (int i = 0; i < n; i++) {
		out[i].addr = in[i].addr;
		out[i].length = in[i].length;
		out[i].lkey = in[i].lkey;
	}
	return 0;
}

static int send_wr_from_ibv(const struct ibv_qp *qp, const struct ibv_send_wr *w,
			    struct uroce_send_wr *u, struct uroce_sge *sges)
{
	if ((unsigned)w->opcode > IBV_WR_SEND_WITH_INV)
		return -EINVAL; /* TSO, driver opcodes, atomic write */
	if (copy_sges(w->sg_list, w->num_sge, sges))
		return -EINVAL;
	u->wr_id = w->wr_id;
	u->next = NULL;
	u->sg_list = sges;
	u->num_sge = w->num_sge;
	u->opcode = (enum uroce_wr_opcode)w->opcode;
	u->send_flags = w->send_flags &
			(IBV_SEND_FENCE | IBV_SEND_SIGNALED | IBV_SEND_SOLICITED | IBV_SEND_INLINE);
	u->imm_data = 0;
	u->invalidate_rkey = 0;
	if (w->opcode == IBV_WR_SEND_WITH_INV || w->opcode == IBV_WR_LOCAL_INV)
		u->invalidate_rkey = w->invalidate_rkey;
	else
		u->imm_data =
			ntohl(w->imm_data); /* the engine wants the wire value in host order */
	if (qp->qp_type == IBV_QPT_UD) {
		if (!w->wr.ud.ah)
			return -EINVAL;
		u->wr.ud.ah = compat_container_of(w->wr.ud.ah, struct compat_ah, ah)->eah;
		u->wr.ud.remote_qpn = w->wr.ud.remote_qpn;
		u->wr.ud.remote_qkey = w->wr.ud.remote_qkey;
		return 0;
	}
	switch (w->opcode) {
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
	case IBV_WR_RDMA_READ:
		u->wr.rdma.remote_addr = w->wr.rdma.remote_addr;
		u->wr.rdma.rkey = w->wr.rdma.rkey;
		break;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		u->wr.atomic.remote_addr = w->wr.atomic.remote_addr;
		u->wr.atomic.compare_add = w->wr.atomic.compare_add;
		u->wr.atomic.swap = w->wr.atomic.swap;
		u->wr.atomic.rkey = w->wr.atomic.rkey;
		break;
	case IBV_WR_BIND_MW: {
		const struct ibv_mw_bind_info *b = &w->bind_mw.bind_info;

		if (!w->bind_mw.mw)
			return -EINVAL;
		u->wr.bind_mw.mw = compat_container_of(w->bind_mw.mw, struct compat_mw, mw)->emw;
		u->wr.bind_mw.mr =
			b->mr ? compat_container_of(b->mr, struct compat_mr, mr)->emr : NULL;
		u->wr.bind_mw.addr = b->addr;
		u->wr.bind_mw.length = b->length;
		u->wr.bind_mw.rkey = w->bind_mw.rkey;
		u->wr.bind_mw.access = b->mw_access_flags;
		break;
	}
	case IBV_WR_SEND:
	case IBV_WR_SEND_WITH_IMM:
	case IBV_WR_SEND_WITH_INV:
	case IBV_WR_LOCAL_INV:
	case IBV_WR_TSO:
	case IBV_WR_DRIVER1:
	case IBV_WR_ATOMIC_WRITE:
		break;
	}
	return 0;
}

int uroce_compat_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	struct compat_qp *qp = compat_container_of(ibqp, struct compat_qp, qp);
	struct uroce_ctx *uc = compat_uc(ibqp->context);
	struct uroce_send_wr uw[BATCH], *ubad;
	struct uroce_sge sges[BATCH][UROCE_MAX_SGE];
	struct ibv_send_wr *src[BATCH], *w = wr;
	size_t bytes = 0;
	int err = 0;

	uroce_ctx_lock(uc);
	while (w && !err) {
		int n = 0;

		for (; w && n < BATCH; w = w->next, n++) {
			err = send_wr_from_ibv(ibqp, w, &uw[n], sges[n]);
			if (err)
				break;
			src[n] = w;
			if (n)
				uw[n - 1].next = &uw[n];
		}
		if (n) {
			int r = uroce_post_send(qp->eqp, uw, &ubad);

			if (r) {
				n = (int)(ubad - uw);
				w = src[n];
				err = r;
			}
			for (int i = 0; i < n; i++)
				for (int k = 0; k < uw[i].num_sge; k++)
					bytes += uw[i].sg_list[k].length;
		}
	}
	/* The doorbell: what can go out goes now, from this thread (or with the rest of a busy
	 * poller's burst of posts). */
	uroce_ctx_post_unlock(uc, bytes);
	if (err)
		*bad = w;
	return -err;
}

/* Post a chain of receives to a QP (qp) or an SRQ (srq). */
static int post_recv(struct uroce_ctx *uc, struct uroce_qp *qp, struct uroce_srq *srq,
		     struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	struct uroce_recv_wr uw[BATCH], *ubad;
	struct uroce_sge sges[BATCH][UROCE_MAX_SGE];
	struct ibv_recv_wr *src[BATCH], *w = wr;
	int err = 0;

	uroce_ctx_lock(uc);
	while (w && !err) {
		int n = 0;

		for (; w && n < BATCH; w = w->next, n++) {
			err = copy_sges(w->sg_list, w->num_sge, sges[n]);
			if (err)
				break;
			uw[n].wr_id = w->wr_id;
			uw[n].next = NULL;
			uw[n].sg_list = sges[n];
			uw[n].num_sge = w->num_sge;
			src[n] = w;
			if (n)
				uw[n - 1].next = &uw[n];
		}
		if (n) {
			int r = qp ? uroce_post_recv(qp, uw, &ubad)
				   : uroce_post_srq_recv(srq, uw, &ubad);

			if (r) {
				w = src[ubad - uw];
				err = r;
			}
		}
	}
	uroce_ctx_unlock(uc);
	if (err)
		*bad = w;
	return -err;
}

int uroce_compat_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	struct compat_qp *qp = compat_container_of(ibqp, struct compat_qp, qp);

	return post_recv(compat_uc(ibqp->context), qp->eqp, NULL, wr, bad);
}

int uroce_compat_post_srq_recv(struct ibv_srq *ibsrq, struct ibv_recv_wr *wr,
			       struct ibv_recv_wr **bad)
{
	struct compat_srq *srq = compat_container_of(ibsrq, struct compat_srq, srq);

	return post_recv(compat_uc(ibsrq->context), NULL, srq->esrq, wr, bad);
}

static void wc_to_ibv(const struct uroce_wc *u, struct ibv_wc *w)
{
	w->wr_id = u->wr_id;
	w->status = (enum ibv_wc_status)u->status;
	w->opcode = (enum ibv_wc_opcode)u->opcode;
	w->vendor_err = u->vendor_err;
	w->byte_len = u->byte_len;
	if (u->wc_flags & UROCE_WC_WITH_INV)
		w->invalidated_rkey = u->invalidated_rkey;
	else
		w->imm_data = htonl(u->imm_data);
	w->qp_num = u->qp_num;
	w->src_qp = u->src_qp;
	w->wc_flags = u->wc_flags;
	w->pkey_index = u->pkey_index;
	w->slid = 0;
	w->sl = u->sl;
	w->dlid_path_bits = 0;
}

/*
 * Up to num completions from the engine CQ, into wc (converted) or, when wc is NULL, into raw
 * as they are. Takes and releases the context lock.
 */
static int poll_paced(struct compat_cq *cq, int num, struct ibv_wc *wc, struct uroce_wc *raw)
{
	struct uroce_ctx *uc = compat_uc(cq->cq.context);
	struct uroce_wc uwc[BATCH];
	int total = 0;

	uroce_ctx_lock(uc);
	for (bool progressed = false;;) {
		int want = num - total < BATCH ? num - total : BATCH;
		int n = uroce_cq_poll(cq->ecq, want, wc ? uwc : raw + total);

		for (int i = 0; wc && i < n; i++)
			wc_to_ibv(&uwc[i], &wc[total + i]);
		total += n;
		if (n == want && total < num)
			continue;
		/*
		 * Nothing there: an application polling in a loop does the progress thread's work
		 * itself (receive, timers, transmit) in one round, instead of spinning on the lock
		 * while that thread waits for a CPU, and polls again (uroce_ctx_polled).
		 */
		if (!num)
			break;
		enum uroce_ctx_poll what = UROCE_CTX_POLL_EMPTY;

		if (total)
			what = UROCE_CTX_POLL_FOUND;
		else if (progressed)
			what = UROCE_CTX_POLL_STILL_EMPTY;
		if (!uroce_ctx_polled(uc, what))
			break;
		progressed = true;
	}
	uroce_ctx_unlock(uc);
	return total;
}

int uroce_compat_cq_take(struct compat_cq *cq, int num, struct uroce_wc *uwc)
{
	return poll_paced(cq, num, NULL, uwc);
}

int uroce_compat_poll_cq(struct ibv_cq *ibcq, int num, struct ibv_wc *wc)
{
	struct compat_cq *cq = compat_container_of(ibcq, struct compat_cq, cq);
	int total = 0;

	if (num < 0)
		return -1;
	if (!cq->is_ex)
		return poll_paced(cq, num, wc, NULL);
	/* An extended CQ hands out what its poll API took from the engine first: order holds. */
	if (!cq->single_threaded)
		pthread_mutex_lock(&cq->poll_lock);
	for (; total < num && cq->pos < cq->n; total++)
		wc_to_ibv(&cq->buf[cq->pos++], &wc[total]);
	if (total < num)
		total += poll_paced(cq, num - total, wc + total, NULL);
	if (!cq->single_threaded)
		pthread_mutex_unlock(&cq->poll_lock);
	return total;
}

int uroce_compat_req_notify_cq(struct ibv_cq *ibcq, int solicited_only)
{
	struct compat_cq *cq = compat_container_of(ibcq, struct compat_cq, cq);
	struct uroce_ctx *uc = compat_uc(ibcq->context);
	int err;

	uroce_ctx_lock(uc);
	err = uroce_cq_req_notify(cq->ecq, solicited_only != 0);
	/* About to sleep on the channel: the progress thread must watch the sockets again. */
	uroce_ctx_arm_unlock(uc);
	return -err;
}
