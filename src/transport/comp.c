/* SPDX-License-Identifier: MIT */
/*
 * Completer: ACKs, NAKs, read responses and atomic ACKs for the requester's WQEs
 * (IBTA 9.7.5, 9.9; rxe_comp.c); the local ACK timer and RNR waits; completions in order.
 */
#include <string.h>

#include "transport/internal.h"

/* RNR NAK timer codes -> microseconds (IBTA table 45; rxe_comp.c rnrnak_usec). */
static const uint32_t rnr_usec[32] = {
	655360, 10,    20,    30,    40,    60,    80,    120,   160,	  240,	 320,
	480,	640,   960,   1280,  1920,  2560,  3840,  5120,  7680,	  10240, 15360,
	20480,	30720, 40960, 61440, 81920, 122880, 163840, 245760, 327680, 491520,
};

static uint64_t ack_timeout_ns(const struct uroce_qp *qp)
{
	/* 4.096 us * 2^timeout; 0 means infinite. */
	return qp->attr.timeout ? 4096ull << qp->attr.timeout : UROCE_NEVER;
}

static bool outstanding(const struct uroce_qp *qp)
{
	return qp->comp.psn != qp->req.psn || qp->sq.head != qp->sq.cur;
}

void uroce_comp_arm(struct uroce_qp *qp)
{
	if (qp->comp.timeout_at != UROCE_NEVER || !qp->attr.timeout)
		return;
	qp->comp.timeout_at = qp->eng->now + ack_timeout_ns(qp);
	uroce_qp_timed(qp);
}

/* Forward progress: restart the timer and refill the retry budgets (IBTA 9.7.6.1.2). */
static void progress(struct uroce_qp *qp)
{
	qp->comp.retry_left = qp->attr.retry_cnt;
	qp->comp.rnr_retry_left = qp->attr.rnr_retry;
	qp->comp.rd_retry_armed = false;
	qp->comp.started_retry = false;
	qp->comp.timeout_at = UROCE_NEVER;
	if (outstanding(qp))
		uroce_comp_arm(qp);
	uroce_qp_schedule(qp); /* the window may have opened */
}

static enum uroce_wc_opcode wc_opcode(enum uroce_wr_opcode op)
{
	switch (op) {
	case UROCE_WR_RDMA_WRITE:
	case UROCE_WR_RDMA_WRITE_WITH_IMM:
		return UROCE_WC_RDMA_WRITE;
	case UROCE_WR_RDMA_READ:
		return UROCE_WC_RDMA_READ;
	case UROCE_WR_ATOMIC_CMP_AND_SWP:
		return UROCE_WC_COMP_SWAP;
	case UROCE_WR_ATOMIC_FETCH_AND_ADD:
		return UROCE_WC_FETCH_ADD;
	case UROCE_WR_LOCAL_INV:
		return UROCE_WC_LOCAL_INV;
	case UROCE_WR_BIND_MW:
		return UROCE_WC_BIND_MW;
	case UROCE_WR_SEND:
	case UROCE_WR_SEND_WITH_IMM:
	case UROCE_WR_SEND_WITH_INV:
		break;
	}
	return UROCE_WC_SEND;
}

/* Retire finished WQEs from the head, in order, generating their completions. */
void uroce_comp_retire(struct uroce_qp *qp)
{
	struct uroce_sq *sq = &qp->sq;

	while (sq->head != sq->tail) {
		struct uroce_swqe *w = uroce_sq_at(sq, sq->head);

		if (w->state != UROCE_WQE_DONE)
			break;
		sq->head++;
		if (w->signaled || w->status != UROCE_WC_SUCCESS) {
			struct uroce_wc wc = {
				.wr_id = w->wr.wr_id,
				.status = w->status,
				.opcode = wc_opcode(w->wr.opcode),
				.qp_num = qp->qpn,
			};

			if (w->wr.opcode == UROCE_WR_RDMA_READ)
				wc.byte_len = w->length;
			else if (w->wr.opcode == UROCE_WR_ATOMIC_CMP_AND_SWP ||
				 w->wr.opcode == UROCE_WR_ATOMIC_FETCH_AND_ADD)
				wc.byte_len = 8;
			uroce_cq_push(qp->init.send_cq, &wc, false);
		}
		if (w->status != UROCE_WC_SUCCESS) {
			/* An error completion moves the QP to ERR; the rest is flushed. */
			qp->attr.qp_state = UROCE_QPS_ERR;
			uroce_qp_flush(qp);
			uroce_eng_event(qp->eng, UROCE_EVENT_QP_FATAL, qp, qp->init.user);
			return;
		}
	}
	if (qp->attr.qp_state == UROCE_QPS_SQD && qp->attr.en_sqd_async_notify && sq->head == sq->tail)
		uroce_eng_event(qp->eng, UROCE_EVENT_SQ_DRAINED, qp, qp->init.user);
}

void uroce_comp_wqe(struct uroce_qp *qp, struct uroce_swqe *w, enum uroce_wc_status st)
{
	if (w->state == UROCE_WQE_SENT &&
	    (w->wr.opcode == UROCE_WR_RDMA_READ || w->wr.opcode == UROCE_WR_ATOMIC_CMP_AND_SWP ||
	     w->wr.opcode == UROCE_WR_ATOMIC_FETCH_AND_ADD) &&
	    qp->req.rd_atomic)
		qp->req.rd_atomic--;
	w->state = UROCE_WQE_DONE;
	w->status = st;
	/* rdma_sends counts SENDs completed, as rxe's do_complete does: once per WQE, however often
	 * a go-back-N sent its packets again. */
	if (st == UROCE_WC_SUCCESS &&
	    (w->wr.opcode == UROCE_WR_SEND || w->wr.opcode == UROCE_WR_SEND_WITH_IMM ||
	     w->wr.opcode == UROCE_WR_SEND_WITH_INV))
		uroce_count(qp->eng, UROCE_CNT_RDMA_SENDS);
	if (st != UROCE_WC_SUCCESS) {
		/* Stop sending: nothing after an error WQE goes out. */
		uint32_t idx = (uint32_t)(w - qp->sq.ring);
		uint32_t i;

		for (i = qp->sq.head; i != qp->sq.tail; i++)
			if ((i & (qp->sq.size - 1)) == idx)
				break;
		/* Everything between the head and w is retired first, in order. */
		for (uint32_t k = qp->sq.head; k != i; k++) {
			struct uroce_swqe *x = uroce_sq_at(&qp->sq, k);

			if (x->state != UROCE_WQE_DONE) {
				x->state = UROCE_WQE_DONE;
				x->status = UROCE_WC_WR_FLUSH_ERR;
			}
		}
	}
	uroce_comp_retire(qp);
}

/* The oldest WQE that has been (at least partly) sent and is not done, or NULL. */
static struct uroce_swqe *oldest_sent(struct uroce_qp *qp)
{
	struct uroce_sq *sq = &qp->sq;
	uint32_t end = qp->req.offset ? sq->cur + 1 : sq->cur;

	for (uint32_t i = sq->head; i != end; i++) {
		struct uroce_swqe *w = uroce_sq_at(sq, i);

		if (w->state != UROCE_WQE_DONE)
			return w;
	}
	return NULL;
}

static bool is_rd_atomic(const struct uroce_swqe *w)
{
	return w->wr.opcode == UROCE_WR_RDMA_READ || w->wr.opcode == UROCE_WR_ATOMIC_CMP_AND_SWP ||
	       w->wr.opcode == UROCE_WR_ATOMIC_FETCH_AND_ADD;
}

/* The PSN of the first response a read or atomic still waits for. */
static uint32_t read_resume_psn(const struct uroce_qp *qp, const struct uroce_swqe *w)
{
	return w->wr.opcode == UROCE_WR_RDMA_READ
		       ? uroce_psn_add(w->first_psn, w->resp_bytes / qp->mtu)
		       : w->first_psn;
}

/*
 * Everything before psn is acknowledged. Sends and writes that end before psn complete; a read
 * or atomic the ACK passes over had its response lost: it is retried (IBTA 9.7.5.1.5).
 * Returns false when such a retry was started.
 */
static bool ack_before(struct uroce_qp *qp, uint32_t psn)
{
	struct uroce_swqe *w;
	bool moved = false;

	while ((w = oldest_sent(qp)) && w->state == UROCE_WQE_SENT &&
	       uroce_psn_before(w->last_psn, psn)) {
		if (is_rd_atomic(w)) {
			uint32_t at = read_resume_psn(qp, w);

			if (uroce_psn_after(at, qp->comp.psn))
				qp->comp.psn = at;
			if (moved)
				progress(qp);
			/* Go back once per lost response, not once per later ACK. */
			if (!(qp->comp.rd_retry_armed && qp->comp.rd_retry_psn == at)) {
				qp->comp.rd_retry_armed = true;
				qp->comp.rd_retry_psn = at;
				uroce_count(qp->eng, UROCE_CNT_COMPLETER_RETRY_ERR);
				uroce_req_retry(qp, at);
			}
			return false;
		}
		uroce_comp_wqe(qp, w, UROCE_WC_SUCCESS);
		if (qp->attr.qp_state == UROCE_QPS_ERR)
			return false;
		moved = true;
	}
	/* The oldest unacknowledged PSN moves up to psn, but never past a read or atomic whose
	 * responses have not all arrived. */
	uint32_t upto = psn;

	if (w && w->state == UROCE_WQE_SENT && is_rd_atomic(w) &&
	    uroce_psn_before(read_resume_psn(qp, w), upto))
		upto = read_resume_psn(qp, w);
	if (uroce_psn_after(upto, qp->comp.psn)) {
		qp->comp.psn = upto;
		moved = true;
	}
	if (moved)
		progress(qp);
	return true;
}

static void fail_at(struct uroce_qp *qp, uint32_t psn, enum uroce_wc_status st)
{
	struct uroce_swqe *w = oldest_sent(qp);

	(void)psn;
	if (w)
		uroce_comp_wqe(qp, w, st);
}

static void on_ack(struct uroce_qp *qp, const struct uroce_tpkt *t)
{
	uint32_t psn = t->bth.psn;
	uint8_t syn = t->aeth.syndrome;

	/* An ACK for a PSN never sent is a ghost (IBTA 9.9.3.1.1): ignore it. */
	if (!uroce_psn_before(psn, qp->req.psn)) {
		uroce_count(qp->eng, UROCE_CNT_DROP_UNEXPECTED);
		return;
	}
	switch (syn & UROCE_AETH_TYPE_MASK) {
	case UROCE_AETH_ACK:
		uroce_count(qp->eng, UROCE_CNT_RCVD_ACKS);
		if (uroce_psn_before(psn, qp->comp.psn))
			return; /* old, duplicate ACK */
		ack_before(qp, uroce_psn_add(psn, 1));
		return;
	case UROCE_AETH_RNR_NAK:
		uroce_count(qp->eng, UROCE_CNT_RCVD_RNR_ERR);
		if (uroce_psn_before(psn, qp->comp.psn))
			return;
		if (!ack_before(qp, psn))
			return;
		if (qp->comp.rnr_retry_left == 0) {
			uroce_count(qp->eng, UROCE_CNT_RNR_RETRY_EXCEEDED_ERR);
			fail_at(qp, psn, UROCE_WC_RNR_RETRY_EXC_ERR);
			return;
		}
		if (qp->comp.rnr_retry_left != 7)
			qp->comp.rnr_retry_left--;
		qp->req.rnr_until = qp->eng->now + 1000ull * rnr_usec[syn & UROCE_AETH_VALUE_MASK];
		qp->comp.timeout_at = UROCE_NEVER;
		uroce_qp_timed(qp);
		uroce_req_retry(qp, psn);
		return;
	case UROCE_AETH_NAK:
		uroce_count(qp->eng, UROCE_CNT_RCVD_NAKS);
		if (uroce_psn_before(psn, qp->comp.psn))
			return;
		if (!ack_before(qp, psn))
			return;
		switch (syn) {
		case UROCE_NAK_PSN_SEQ_ERR:
			uroce_count(qp->eng, UROCE_CNT_RCVD_SEQ_ERR);
			/* Already going back to psn (RNR wait, or a retry not yet sent): once. */
			if (qp->req.psn == psn || qp->comp.started_retry)
				return;
			if (qp->comp.retry_left == 0) {
				uroce_count(qp->eng, UROCE_CNT_RETRY_EXCEEDED_ERR);
				fail_at(qp, psn, UROCE_WC_RETRY_EXC_ERR);
				return;
			}
			if (qp->comp.retry_left != 7) /* 7: retry forever, as rxe does */
				qp->comp.retry_left--;
			qp->comp.started_retry = true;
			uroce_req_retry(qp, psn);
			return;
		case UROCE_NAK_INVALID_REQ:
			fail_at(qp, psn, UROCE_WC_REM_INV_REQ_ERR);
			return;
		case UROCE_NAK_REM_ACCESS:
			fail_at(qp, psn, UROCE_WC_REM_ACCESS_ERR);
			return;
		case UROCE_NAK_REM_OP_ERR:
			fail_at(qp, psn, UROCE_WC_REM_OP_ERR);
			return;
		default:
			fail_at(qp, psn, UROCE_WC_REM_INV_RD_REQ_ERR);
			return;
		}
	default:
		uroce_count(qp->eng, UROCE_CNT_DROP_BAD_HEADER);
		return;
	}
}

static void on_read_resp(struct uroce_qp *qp, const struct uroce_tpkt *t)
{
	uint32_t psn = t->bth.psn;
	unsigned flags = uroce_opinfo[t->bth.opcode].flags;

	if (uroce_psn_before(psn, qp->comp.psn) || !uroce_psn_before(psn, qp->req.psn)) {
		uroce_count(qp->eng, UROCE_CNT_DROP_DUPLICATE_RESP);
		return;
	}
	/* The response implicitly acknowledges everything before it. */
	if (!ack_before(qp, psn))
		return;
	struct uroce_swqe *w = oldest_sent(qp);

	if (!w || w->wr.opcode != UROCE_WR_RDMA_READ || w->state != UROCE_WQE_SENT) {
		uroce_count(qp->eng, UROCE_CNT_DROP_UNEXPECTED);
		return;
	}
	uint32_t expect = uroce_psn_add(w->first_psn, w->resp_bytes / qp->mtu);

	if (psn != expect) {
		/* A response was lost: ask again from the first missing one, once. */
		if (uroce_psn_after(psn, expect) &&
		    !(qp->comp.rd_retry_armed && qp->comp.rd_retry_psn == expect)) {
			qp->comp.rd_retry_armed = true;
			qp->comp.rd_retry_psn = expect;
			uroce_count(qp->eng, UROCE_CNT_COMPLETER_RETRY_ERR);
			uroce_req_retry(qp, expect);
		}
		return;
	}
	uint32_t left = w->length - w->resp_bytes;
	bool first = w->resp_bytes == 0;
	bool last = flags & UROCE_OPF_LAST;
	bool ok = (first == !!(flags & UROCE_OPF_FIRST)) &&
		  (last ? t->payload_len == left && t->payload_len <= qp->mtu
			: t->payload_len == qp->mtu && left > qp->mtu);

	if (!ok) {
		fail_at(qp, psn, UROCE_WC_BAD_RESP_ERR);
		return;
	}
	if (t->payload_len &&
	    uroce_sge_scatter(qp->eng, qp->pd, w->sge, (uint32_t)w->wr.num_sge, w->resp_bytes,
			      t->payload, t->payload_len)) {
		fail_at(qp, psn, UROCE_WC_LOC_PROT_ERR);
		return;
	}
	w->resp_bytes += t->payload_len;
	qp->comp.psn = uroce_psn_add(psn, 1);
	if (last)
		uroce_comp_wqe(qp, w, UROCE_WC_SUCCESS);
	progress(qp);
}

static void on_atomic_ack(struct uroce_qp *qp, const struct uroce_tpkt *t)
{
	uint32_t psn = t->bth.psn;

	if (uroce_psn_before(psn, qp->comp.psn) || !uroce_psn_before(psn, qp->req.psn)) {
		uroce_count(qp->eng, UROCE_CNT_DROP_DUPLICATE_RESP);
		return;
	}
	if (!ack_before(qp, psn))
		return;
	struct uroce_swqe *w = oldest_sent(qp);

	if (!w || w->state != UROCE_WQE_SENT || w->first_psn != psn ||
	    (w->wr.opcode != UROCE_WR_ATOMIC_CMP_AND_SWP &&
	     w->wr.opcode != UROCE_WR_ATOMIC_FETCH_AND_ADD)) {
		uroce_count(qp->eng, UROCE_CNT_DROP_UNEXPECTED);
		return;
	}
	/* The original value lands in the local buffer in host order, as verbs define it. */
	uint64_t v = t->atmack;
	uint8_t b[8];

	memcpy(b, &v, 8);
	if (uroce_sge_scatter(qp->eng, qp->pd, w->sge, (uint32_t)w->wr.num_sge, 0, b, 8)) {
		fail_at(qp, psn, UROCE_WC_LOC_PROT_ERR);
		return;
	}
	qp->comp.psn = uroce_psn_add(psn, 1);
	uroce_comp_wqe(qp, w, UROCE_WC_SUCCESS);
	progress(qp);
}

void uroce_comp_rx(struct uroce_qp *qp, const struct uroce_tpkt *t)
{
	switch (t->bth.opcode) {
	case UROCE_OP_RC_ACK:
		on_ack(qp, t);
		break;
	case UROCE_OP_RC_ATOMIC_ACK:
		if ((t->aeth.syndrome & UROCE_AETH_TYPE_MASK) != UROCE_AETH_ACK)
			on_ack(qp, t);
		else
			on_atomic_ack(qp, t);
		break;
	case UROCE_OP_RC_READ_RESP_FIRST:
	case UROCE_OP_RC_READ_RESP_LAST:
	case UROCE_OP_RC_READ_RESP_ONLY:
		if ((t->aeth.syndrome & UROCE_AETH_TYPE_MASK) != UROCE_AETH_ACK) {
			on_ack(qp, t);
			break;
		}
		on_read_resp(qp, t);
		break;
	case UROCE_OP_RC_READ_RESP_MIDDLE:
		on_read_resp(qp, t);
		break;
	default:
		uroce_count(qp->eng, UROCE_CNT_DROP_UNEXPECTED);
		break;
	}
}

/*
 * The WQEs sent last asked for no ACK (req.c ack_due) and nothing asked since: send the last
 * packet sent again, asking; the responder ACKs the duplicate with everything it received. No
 * retry is spent: nothing is known to be lost. Not while a go-back-N is under way (it would be
 * cut short); its WQEs ask when sent again.
 */
static void ask(struct uroce_qp *qp)
{
	if (!outstanding(qp) || qp->req.psn != qp->req.psn_max ||
	    (qp->attr.qp_state != UROCE_QPS_RTS && qp->attr.qp_state != UROCE_QPS_SQD))
		return;
	uroce_req_retry(qp, uroce_psn_sub(qp->req.psn_max, 1));
}

void uroce_comp_timer(struct uroce_qp *qp, uint64_t now)
{
	if (qp->req.rnr_until && qp->req.rnr_until <= now) {
		qp->req.rnr_until = 0;
		uroce_qp_schedule(qp);
	}
	if (qp->comp.ask_at <= now) { /* set only while the last WQEs sent are unasked */
		qp->comp.ask_at = UROCE_NEVER;
		ask(qp);
	}
	if (qp->comp.timeout_at > now)
		return;
	qp->comp.timeout_at = UROCE_NEVER;
	if (qp->attr.qp_state != UROCE_QPS_RTS && qp->attr.qp_state != UROCE_QPS_SQD)
		return;
	if (!outstanding(qp))
		return;
	uroce_count(qp->eng, UROCE_CNT_LOCAL_ACK_TIMEOUT_ERR);
	if (qp->comp.retry_left == 0) {
		uroce_count(qp->eng, UROCE_CNT_RETRY_EXCEEDED_ERR);
		fail_at(qp, qp->comp.psn, UROCE_WC_RETRY_EXC_ERR);
		return;
	}
	/* IBTA reserves "infinite" for rnr_retry; rxe (rxe_comp.c) also retries forever when
	 * retry_cnt is 7, and so do we, so that applications behave as on Soft-RoCE. */
	if (qp->comp.retry_left != 7)
		qp->comp.retry_left--;
	uroce_req_retry(qp, qp->comp.psn);
	uroce_comp_arm(qp);
}
