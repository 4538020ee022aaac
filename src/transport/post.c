/* SPDX-License-Identifier: MIT */
/* Posting work requests: validation (as rxe and rdma-core report errors) and queueing. */
#include <errno.h>
#include <string.h>

#include "transport/internal.h"

static bool opcode_ok(enum uroce_qp_type type, enum uroce_wr_opcode op)
{
	switch (op) {
	case UROCE_WR_SEND:
	case UROCE_WR_SEND_WITH_IMM:
		return true;
	case UROCE_WR_RDMA_WRITE:
	case UROCE_WR_RDMA_WRITE_WITH_IMM:
		return type == UROCE_QPT_RC || type == UROCE_QPT_UC;
	case UROCE_WR_RDMA_READ:
	case UROCE_WR_ATOMIC_CMP_AND_SWP:
	case UROCE_WR_ATOMIC_FETCH_AND_ADD:
		return type == UROCE_QPT_RC;
	case UROCE_WR_LOCAL_INV:
	case UROCE_WR_BIND_MW:
		return type == UROCE_QPT_RC || type == UROCE_QPT_UC;
	case UROCE_WR_SEND_WITH_INV:
		return type == UROCE_QPT_RC; /* IETH opcodes exist for RC only (IBTA 9.2) */
	}
	return false;
}

static uint64_t sge_total(const struct uroce_sge *sge, int n)
{
	uint64_t t = 0;

	for (int i = 0; i < n; i++)
		t += sge[i].length;
	return t;
}

static int check_send_wr(struct uroce_qp *qp, const struct uroce_send_wr *wr)
{
	const struct uroce_sq *sq = &qp->sq;

	if (!opcode_ok(qp->init.type, wr->opcode))
		return -EINVAL;
	if (wr->num_sge < 0 || (uint32_t)wr->num_sge > sq->max_sge || (wr->num_sge && !wr->sg_list))
		return -EINVAL;
	uint64_t len = sge_total(wr->sg_list, wr->num_sge);

	if (len > UROCE_MAX_MSG)
		return -EINVAL;
	if (wr->send_flags & UROCE_SEND_INLINE) {
		if (len > sq->max_inline || wr->opcode == UROCE_WR_RDMA_READ ||
		    wr->opcode == UROCE_WR_ATOMIC_CMP_AND_SWP ||
		    wr->opcode == UROCE_WR_ATOMIC_FETCH_AND_ADD)
			return -EINVAL;
	}
	if ((wr->opcode == UROCE_WR_ATOMIC_CMP_AND_SWP ||
	     wr->opcode == UROCE_WR_ATOMIC_FETCH_AND_ADD) &&
	    (len != 8 || wr->wr.atomic.remote_addr & 7))
		return -EINVAL;
	if (wr->opcode == UROCE_WR_BIND_MW) {
		const struct uroce_mw *mw = wr->wr.bind_mw.mw;
		const struct uroce_mr *mr = wr->wr.bind_mw.mr;

		/* The rest is checked when the bind runs (uroce_mw_bind). */
		if (!mw || mw->eng != qp->eng || (mr && mr->eng != qp->eng) ||
		    (!mr && wr->wr.bind_mw.length) || (wr->send_flags & UROCE_SEND_INLINE))
			return -EINVAL;
	}
	if (qp->init.type == UROCE_QPT_UD || qp->init.type == UROCE_QPT_GSI) {
		if (!wr->wr.ud.ah || wr->wr.ud.ah->pd->eng != qp->eng || len > qp->mtu ||
		    wr->wr.ud.remote_qpn > 0xFFFFFF)
			return -EINVAL;
	}
	return 0;
}

int uroce_post_send(struct uroce_qp *qp, struct uroce_send_wr *wr, struct uroce_send_wr **bad)
{
	struct uroce_sq *sq = &qp->sq;
	enum uroce_qp_state st = qp->attr.qp_state;
	int rc = 0;

	if (st == UROCE_QPS_RESET || st == UROCE_QPS_INIT || st == UROCE_QPS_RTR) {
		*bad = wr;
		return -EINVAL;
	}
	for (; wr; wr = wr->next) {
		rc = check_send_wr(qp, wr);
		if (rc)
			break;
		if (st == UROCE_QPS_ERR) {
			uroce_qp_flush_wc(qp, qp->init.send_cq, wr->wr_id, UROCE_WC_SEND);
			continue;
		}
		if (sq->tail - sq->head >= sq->max_wr) {
			rc = -ENOMEM;
			break;
		}
		struct uroce_swqe *w = uroce_sq_at(sq, sq->tail);
		struct uroce_sge *sge = w->sge;
		uint8_t *inl = w->inline_data;

		static const struct uroce_swqe zero; /* not memset: see uroce_req_next */

		*w = zero;
		w->sge = sge;
		w->inline_data = inl;
		w->wr = *wr;
		w->wr.next = NULL;
		w->wr.sg_list = sge;
		w->length = (uint32_t)sge_total(wr->sg_list, wr->num_sge);
		if (wr->num_sge)
			memcpy(sge, wr->sg_list, (size_t)wr->num_sge * sizeof(*sge));
		if (wr->send_flags & UROCE_SEND_INLINE) {
			uint32_t off = 0;

			for (int i = 0; i < wr->num_sge; i++) {
				memcpy(inl + off, (const void *)(uintptr_t)sge[i].addr,
				       sge[i].length);
				off += sge[i].length;
			}
		}
		if (qp->init.type == UROCE_QPT_UD || qp->init.type == UROCE_QPT_GSI)
			w->av = wr->wr.ud.ah->av;
		if (wr->opcode == UROCE_WR_BIND_MW) {
			/* Kept by index and key, not by pointer: uroce_mw_bind finds them again. */
			w->mw_idx = wr->wr.bind_mw.mw->idx;
			w->mw_serial = wr->wr.bind_mw.mw->serial;
			w->mr_key = wr->wr.bind_mw.mr ? wr->wr.bind_mw.mr->key : 0;
			w->wr.wr.bind_mw.mw = NULL;
			w->wr.wr.bind_mw.mr = NULL;
		}
		w->signaled = qp->init.sq_sig_all || (wr->send_flags & UROCE_SEND_SIGNALED);
		w->state = UROCE_WQE_POSTED;
		w->status = UROCE_WC_SUCCESS;
		sq->tail++;
	}
	if (st == UROCE_QPS_RTS)
		uroce_qp_schedule(qp);
	if (rc)
		*bad = wr;
	return rc;
}

static int rq_post(struct uroce_rq *rq, struct uroce_recv_wr *wr)
{
	if (wr->num_sge < 0 || (uint32_t)wr->num_sge > rq->max_sge || (wr->num_sge && !wr->sg_list))
		return -EINVAL;
	if (sge_total(wr->sg_list, wr->num_sge) > UROCE_MAX_MSG)
		return -EINVAL;
	if (rq->tail - rq->head >= rq->max_wr)
		return -ENOMEM;
	struct uroce_rwqe *w = &rq->ring[rq->tail & (rq->size - 1)];

	w->wr_id = wr->wr_id;
	w->num_sge = (uint32_t)wr->num_sge;
	w->length = (uint32_t)sge_total(wr->sg_list, wr->num_sge);
	if (wr->num_sge)
		memcpy(w->sge, wr->sg_list, (size_t)wr->num_sge * sizeof(*w->sge));
	rq->tail++;
	return 0;
}

int uroce_post_recv(struct uroce_qp *qp, struct uroce_recv_wr *wr, struct uroce_recv_wr **bad)
{
	int rc = 0;

	if (qp->init.srq || qp->attr.qp_state == UROCE_QPS_RESET) {
		*bad = wr;
		return -EINVAL;
	}
	for (; wr; wr = wr->next) {
		if (qp->attr.qp_state == UROCE_QPS_ERR) {
			if (wr->num_sge < 0 || (uint32_t)wr->num_sge > qp->own_rq.max_sge) {
				rc = -EINVAL;
				break;
			}
			uroce_qp_flush_wc(qp, qp->init.recv_cq, wr->wr_id, UROCE_WC_RECV);
			continue;
		}
		rc = rq_post(&qp->own_rq, wr);
		if (rc)
			break;
	}
	/* A responder waiting in RNR for a receive can now make progress on the retry. */
	if (rc)
		*bad = wr;
	return rc;
}

int uroce_post_srq_recv(struct uroce_srq *srq, struct uroce_recv_wr *wr,
			struct uroce_recv_wr **bad)
{
	int rc = 0;

	for (; wr; wr = wr->next) {
		rc = rq_post(&srq->rq, wr);
		if (rc)
			break;
	}
	if (rc)
		*bad = wr;
	return rc;
}
