/* SPDX-License-Identifier: MIT */
/*
 * Responder: executes SEND (with Invalidate too), WRITE, READ and atomic requests (IBTA 9.7.3-9.7.5, 9.9.3; rxe_resp.c);
 * builds ACKs, NAKs, read responses and atomic ACKs; answers duplicates; UD and UC receives.
 */
#include <assert.h>
#include <errno.h>
#include <string.h>

#include "transport/internal.h"

static void queue_ack(struct uroce_qp *qp, enum uroce_ack_kind kind, uint8_t syndrome, uint32_t psn)
{
	struct uroce_resp_state *r = &qp->resp;

	/* A NAK is not replaced by a later ACK before it goes out. */
	if (r->ack == UROCE_ACK_NAK && kind == UROCE_ACK_ACK)
		return;
	if (r->ack == UROCE_ACK_ACK && kind == UROCE_ACK_ACK)
		uroce_count(qp->eng, UROCE_CNT_ACK_DEFERRED);
	r->ack = kind;
	r->ack_syndrome = syndrome;
	r->ack_psn = psn;
	uroce_qp_schedule(qp);
}

/* Class C/D errors: NAK, then the responder's QP goes to ERR (IBTA 9.9.3.1.2, 10.3.1). */
static void nak_fatal(struct uroce_qp *qp, uint8_t syndrome, uint32_t psn,
		      enum uroce_event_type ev)
{
	queue_ack(qp, UROCE_ACK_NAK, syndrome, psn);
	qp->resp.goto_error = true;
	uroce_count(qp->eng, syndrome == UROCE_NAK_REM_ACCESS ? UROCE_CNT_REM_ACCESS_ERR_SENT
							       : UROCE_CNT_REM_INV_REQ_SENT);
	uroce_eng_event(qp->eng, ev, qp, qp->init.user);
}

static void recv_complete(struct uroce_qp *qp, enum uroce_wc_status st, enum uroce_wc_opcode op,
			  uint32_t len, const struct uroce_tpkt *t, uint32_t src_qp)
{
	struct uroce_wc wc = {
		.wr_id = qp->resp.wqe.wr_id,
		.status = st,
		.opcode = op,
		.byte_len = len,
		.qp_num = qp->qpn,
		.src_qp = src_qp,
	};

	if (t && (uroce_opinfo[t->bth.opcode].hdrs & UROCE_HDR_IMMDT)) {
		wc.imm_data = t->imm;
		wc.wc_flags |= UROCE_WC_WITH_IMM;
	}
	if (t && (uroce_opinfo[t->bth.opcode].hdrs & UROCE_HDR_IETH) && st == UROCE_WC_SUCCESS) {
		wc.invalidated_rkey = t->ieth;
		wc.wc_flags |= UROCE_WC_WITH_INV;
	}
	if (qp->init.type == UROCE_QPT_UD || qp->init.type == UROCE_QPT_GSI)
		wc.wc_flags |= UROCE_WC_GRH;
	qp->resp.have_wqe = false;
	uroce_cq_push(qp->init.recv_cq, &wc, t && t->bth.se);
	if (st == UROCE_WC_SUCCESS)
		uroce_count(qp->eng, UROCE_CNT_RDMA_RECVS);
}

/*
 * No receive WQE: RC answers an RNR NAK (IBTA 9.7.5.2.8) and, as after a sequence NAK, drops the
 * packets that follow silently until the requester comes back to this PSN; UC drops.
 */
static void rnr_nak(struct uroce_qp *qp, uint32_t psn)
{
	if (qp->init.type != UROCE_QPT_RC) {
		uroce_count(qp->eng, UROCE_CNT_DROP_NO_RECV);
		return;
	}
	queue_ack(qp, UROCE_ACK_NAK, UROCE_AETH_RNR_NAK | qp->attr.min_rnr_timer, psn);
	qp->resp.nak_seq_sent = true;
}

/* Take the next receive WQE into resp.wqe. */
static bool take_wqe(struct uroce_qp *qp)
{
	if (qp->resp.have_wqe)
		return true;
	if (uroce_rq_pop(qp->rq, &qp->resp.wqe, qp->resp.wqe_sge))
		return false;
	qp->resp.have_wqe = true;
	qp->resp.offset = 0;
	if (qp->init.srq)
		uroce_srq_check_limit(qp->init.srq);
	return true;
}

/* ---- UD and GSI -------------------------------------------------------------------------- */

static void ud_rx(struct uroce_qp *qp, const struct uroce_tpkt *t, const struct uroce_rx_pkt *rx)
{
	if (!take_wqe(qp)) {
		uroce_count(qp->eng, UROCE_CNT_DROP_NO_RECV);
		return;
	}
	struct uroce_rwqe *w = &qp->resp.wqe;
	uint32_t len = 40 + t->payload_len;

	if (len > w->length) {
		recv_complete(qp, UROCE_WC_LOC_LEN_ERR, UROCE_WC_RECV, 0, t, t->deth.src_qp);
		return;
	}
	if (uroce_sge_scatter(qp->eng, qp->pd, w->sge, w->num_sge, 0, rx->grh, 40) ||
	    uroce_sge_scatter(qp->eng, qp->pd, w->sge, w->num_sge, 40, t->payload,
			      t->payload_len)) {
		recv_complete(qp, UROCE_WC_LOC_PROT_ERR, UROCE_WC_RECV, 0, t, t->deth.src_qp);
		return;
	}
	recv_complete(qp, UROCE_WC_SUCCESS, UROCE_WC_RECV, len, t, t->deth.src_qp);
}

/* ---- RC and UC: SEND and WRITE data ------------------------------------------------------ */

/* Payload size rule: FIRST and MIDDLE carry exactly an MTU, LAST and ONLY at most one. */
static bool size_ok(const struct uroce_qp *qp, unsigned flags, uint32_t n)
{
	if (flags & UROCE_OPF_LAST)
		return n <= qp->mtu;
	return n == qp->mtu;
}

/* Returns 0, or the NAK syndrome to answer with (0xFF: drop silently / RNR already queued). */
static int do_send(struct uroce_qp *qp, const struct uroce_tpkt *t, unsigned flags)
{
	struct uroce_resp_state *r = &qp->resp;

	if (!take_wqe(qp)) {
		uroce_count(qp->eng, UROCE_CNT_SEND_RNR_ERR);
		rnr_nak(qp, t->bth.psn);
		return 0xFF;
	}
	if (flags & UROCE_OPF_FIRST)
		r->offset = 0;
	if (r->offset + (uint64_t)t->payload_len > r->wqe.length) {
		recv_complete(qp, UROCE_WC_LOC_LEN_ERR, UROCE_WC_RECV, 0, t, qp->attr.dest_qp_num);
		return UROCE_NAK_INVALID_REQ;
	}
	if (t->payload_len && uroce_sge_scatter(qp->eng, qp->pd, r->wqe.sge, r->wqe.num_sge,
						r->offset, t->payload, t->payload_len)) {
		recv_complete(qp, UROCE_WC_LOC_PROT_ERR, UROCE_WC_RECV, 0, t, qp->attr.dest_qp_num);
		return UROCE_NAK_REM_OP_ERR;
	}
	r->offset += t->payload_len;
	/* Send with Invalidate (IBTA 9.4.4.2, 10.6.7.2.5; rxe invalidate_rkey): the window goes
	 * before the receive completes; a key that names no type 2 window bound through this QP
	 * is an invalid request (rxe: class J, the receive completes in error). */
	if ((flags & UROCE_OPF_INV) && uroce_mw_invalidate(qp, t->ieth)) {
		recv_complete(qp, UROCE_WC_REM_INV_REQ_ERR, UROCE_WC_RECV, 0, t,
			      qp->attr.dest_qp_num);
		return UROCE_NAK_INVALID_REQ;
	}
	if (flags & UROCE_OPF_LAST)
		recv_complete(qp, UROCE_WC_SUCCESS, UROCE_WC_RECV, r->offset, t,
			      qp->attr.dest_qp_num);
	return 0;
}

static int do_write(struct uroce_qp *qp, const struct uroce_tpkt *t, unsigned flags)
{
	struct uroce_resp_state *r = &qp->resp;

	if (flags & UROCE_OPF_FIRST) {
		if (!(qp->attr.qp_access_flags & UROCE_ACCESS_REMOTE_WRITE))
			return UROCE_NAK_REM_ACCESS;
		/* A zero-length write does not check the R_Key (IBTA 9.7.4.1.3). */
		if (t->reth.len && !uroce_rkey_ptr(qp, t->reth.rkey, t->reth.va, t->reth.len,
						   UROCE_ACCESS_REMOTE_WRITE))
			return UROCE_NAK_REM_ACCESS;
		r->wr_rkey = t->reth.rkey;
		r->wr_va = t->reth.va;
		r->wr_remaining = t->reth.len;
		r->wr_total = t->reth.len;
	}
	if (t->payload_len > r->wr_remaining ||
	    ((flags & UROCE_OPF_LAST) && t->payload_len != r->wr_remaining))
		return UROCE_NAK_INVALID_REQ;
	/* WRITE with immediate consumes a receive: check before touching memory (RNR). */
	if ((flags & UROCE_OPF_IMM) && !take_wqe(qp)) {
		uroce_count(qp->eng, UROCE_CNT_SEND_RNR_ERR);
		rnr_nak(qp, t->bth.psn);
		return 0xFF;
	}
	if (t->payload_len) {
		/* Checked again per packet: the region may have been deregistered, the window
		 * invalidated, meanwhile. */
		uint8_t *dst = uroce_rkey_ptr(qp, r->wr_rkey, r->wr_va, t->payload_len,
					      UROCE_ACCESS_REMOTE_WRITE);

		if (!dst || uroce_mem_to(qp->eng, dst, t->payload, t->payload_len))
			return UROCE_NAK_REM_ACCESS;
	}
	r->wr_va += t->payload_len;
	r->wr_remaining -= t->payload_len;
	if ((flags & UROCE_OPF_LAST) && (flags & UROCE_OPF_IMM))
		recv_complete(qp, UROCE_WC_SUCCESS, UROCE_WC_RECV_RDMA_WITH_IMM, r->wr_total, t,
			      qp->attr.dest_qp_num);
	return 0;
}

/* ---- RC: READ and atomics ---------------------------------------------------------------- */

/*
 * Mark res as having responses to send or not. Every change of a resource's `sending` goes
 * through here, so that resp.n_sending counts the valid resources that send: the engine asks
 * whether a QP has responses to send several times per round and per post, and UCX and
 * libfabric ask for the device's maximum of max_dest_rd_atomic slots (128), over which a walk
 * costs thousands of instructions per round trip.
 */
static void res_set_sending(struct uroce_resp_state *r, struct uroce_rd_res *res, bool on)
{
	if (res->valid && res->sending != on)
		r->n_sending += on ? 1u : (uint32_t)-1;
	res->sending = on;
}

static struct uroce_rd_res *res_alloc(struct uroce_qp *qp)
{
	struct uroce_resp_state *r = &qp->resp;
	struct uroce_rd_res *res = &r->res[r->res_next];

	/* Still sending its first responses: more outstanding than max_dest_rd_atomic. Sending
	 * them again for a duplicate: the requester, within its limit, has had them all and moved
	 * on (this request is its next), so the oldest slot is taken, as rxe does. */
	if (res->valid && res->sending && !res->sent_once)
		return NULL;
	uint32_t slot = r->res_next;

	r->res_next = (r->res_next + 1) % r->nres;
	/* The slot becomes the newest: res_sending must not start there, ahead of older ones. */
	if (r->res_send == slot)
		r->res_send = r->res_next;
	res_set_sending(r, res, false);
	memset(res, 0, sizeof(*res));
	return res;
}

static int do_read(struct uroce_qp *qp, const struct uroce_tpkt *t)
{
	if (!(qp->attr.qp_access_flags & UROCE_ACCESS_REMOTE_READ))
		return UROCE_NAK_REM_ACCESS;
	if (t->reth.len &&
	    !uroce_rkey_ptr(qp, t->reth.rkey, t->reth.va, t->reth.len, UROCE_ACCESS_REMOTE_READ))
		return UROCE_NAK_REM_ACCESS;
	if (t->reth.len > UROCE_MAX_MSG)
		return UROCE_NAK_INVALID_REQ;
	struct uroce_rd_res *res = res_alloc(qp);

	if (!res)
		return UROCE_NAK_INVALID_REQ;
	uint32_t n = uroce_npkts(t->reth.len, qp->mtu);

	res->valid = true;
	res->first_psn = t->bth.psn;
	res->last_psn = uroce_psn_add(t->bth.psn, n - 1);
	res->next_psn = t->bth.psn;
	res->orig_va = res->va = t->reth.va;
	res->len = res->remaining = t->reth.len;
	res->rkey = t->reth.rkey;
	res->msn = ++qp->resp.msn;
	res_set_sending(&qp->resp, res, true);
	qp->resp.epsn = uroce_psn_add(t->bth.psn, n);
	uroce_qp_schedule(qp);
	return 0;
}

static int do_atomic(struct uroce_qp *qp, const struct uroce_tpkt *t)
{
	if (!(qp->attr.qp_access_flags & UROCE_ACCESS_REMOTE_ATOMIC))
		return UROCE_NAK_REM_ACCESS;
	if (t->atmeth.va & 7)
		return UROCE_NAK_INVALID_REQ;
	uint8_t *p = uroce_rkey_ptr(qp, t->atmeth.rkey, t->atmeth.va, 8, UROCE_ACCESS_REMOTE_ATOMIC);

	if (!p)
		return UROCE_NAK_REM_ACCESS;
	struct uroce_rd_res *res = res_alloc(qp);

	if (!res)
		return UROCE_NAK_INVALID_REQ;
	uint64_t orig;

	/* Pages gone under the region: a remote access error, as a bad R_Key (rxe's
	 * RESPST_ERR_RKEY_VIOLATION for a failed atomic). The slot stays invalid. */
	if (uroce_mem_atomic(qp->eng, p, t->bth.opcode, t->atmeth.compare, t->atmeth.swap_add,
			     &orig))
		return UROCE_NAK_REM_ACCESS;
	res->valid = true;
	res->atomic = true;
	res->first_psn = res->last_psn = res->next_psn = t->bth.psn;
	res->orig = orig;
	res->msn = ++qp->resp.msn;
	res_set_sending(&qp->resp, res, true);
	qp->resp.epsn = uroce_psn_add(t->bth.psn, 1);
	uroce_qp_schedule(qp);
	return 0;
}

/* A request before the expected PSN (IBTA 9.9.3.1.3): answer it again, execute nothing twice. */
static void duplicate(struct uroce_qp *qp, const struct uroce_tpkt *t, unsigned flags)
{
	struct uroce_resp_state *r = &qp->resp;
	uint32_t psn = t->bth.psn;

	uroce_count(qp->eng, UROCE_CNT_DUPLICATE_REQUEST);
	if (flags & (UROCE_OPF_READ | UROCE_OPF_ATOMIC)) {
		for (uint32_t i = 0; i < r->nres; i++) {
			struct uroce_rd_res *res = &r->res[i];

			if (!res->valid || uroce_psn_before(psn, res->first_psn) ||
			    uroce_psn_after(psn, res->last_psn))
				continue;
			if (res->atomic) {
				if (psn != res->first_psn)
					continue;
				uroce_count(qp->eng, UROCE_CNT_ATOMIC_REPLAYED);
			} else {
				/* Send the responses again from the requested one. */
				uint32_t skip = (uint32_t)uroce_psn_diff(psn, res->first_psn) * qp->mtu;

				if (skip > res->len)
					continue;
				res->va = res->orig_va + skip;
				res->remaining = res->len - skip;
				uroce_count(qp->eng, UROCE_CNT_READ_REPLAYED);
			}
			res->next_psn = psn;
			res_set_sending(r, res, true);
			/* An older one may send again: res_sending looks from the oldest. */
			r->res_send = r->res_next;
			uroce_qp_schedule(qp);
			return;
		}
		uroce_count(qp->eng, UROCE_CNT_DROP_UNEXPECTED);
		return;
	}
	/* SEND or WRITE: acknowledge again what we have (the last PSN before the expected one). */
	queue_ack(qp, UROCE_ACK_ACK, UROCE_AETH_ACK_UNLIMITED, uroce_psn_sub(r->epsn, 1));
}

/* Opcode sequence (IBTA 9.8.3.1): a message's packets must follow FIRST, MIDDLE.., LAST. */
static bool sequence_ok(const struct uroce_qp *qp, unsigned flags)
{
	unsigned kind = flags & (UROCE_OPF_SEND | UROCE_OPF_WRITE);

	if (flags & UROCE_OPF_FIRST)
		return qp->resp.in_msg == 0;
	if (!kind)
		return qp->resp.in_msg == 0; /* READ or atomic: only between messages */
	return qp->resp.in_msg == kind;
}

static void rc_request(struct uroce_qp *qp, const struct uroce_tpkt *t)
{
	struct uroce_resp_state *r = &qp->resp;
	unsigned flags = uroce_opinfo[t->bth.opcode].flags;
	int32_t d = uroce_psn_diff(t->bth.psn, r->epsn);
	int nak;

	if (d > 0) {
		/* Gap: NAK once per sequence error (IBTA 9.9.3.1.2). */
		uroce_count(qp->eng, UROCE_CNT_OUT_OF_SEQ_REQUEST);
		if (!r->nak_seq_sent) {
			r->nak_seq_sent = true;
			queue_ack(qp, UROCE_ACK_NAK, UROCE_NAK_PSN_SEQ_ERR, r->epsn);
		}
		return;
	}
	if (d < 0) {
		duplicate(qp, t, flags);
		return;
	}
	r->nak_seq_sent = false;
	if (!sequence_ok(qp, flags)) {
		nak_fatal(qp, UROCE_NAK_INVALID_REQ, t->bth.psn, UROCE_EVENT_QP_REQ_ERR);
		return;
	}
	if ((flags & (UROCE_OPF_SEND | UROCE_OPF_WRITE)) && !size_ok(qp, flags, t->payload_len)) {
		nak_fatal(qp, UROCE_NAK_INVALID_REQ, t->bth.psn, UROCE_EVENT_QP_REQ_ERR);
		return;
	}
	if (flags & UROCE_OPF_SEND)
		nak = do_send(qp, t, flags);
	else if (flags & UROCE_OPF_WRITE)
		nak = do_write(qp, t, flags);
	else if (flags & UROCE_OPF_READ)
		nak = do_read(qp, t);
	else if (flags & UROCE_OPF_ATOMIC)
		nak = do_atomic(qp, t);
	else
		nak = UROCE_NAK_INVALID_REQ; /* FLUSH, ATOMIC_WRITE: not supported */

	if (nak == 0xFF)
		return; /* RNR: the packet is not accepted; the requester sends it again */
	if (nak) {
		nak_fatal(qp, (uint8_t)nak, t->bth.psn,
			  nak == UROCE_NAK_REM_ACCESS ? UROCE_EVENT_QP_ACCESS_ERR
						      : UROCE_EVENT_QP_REQ_ERR);
		return;
	}
	if (flags & (UROCE_OPF_READ | UROCE_OPF_ATOMIC))
		return; /* the response acknowledges */
	r->in_msg = flags & UROCE_OPF_LAST ? 0 : flags & (UROCE_OPF_SEND | UROCE_OPF_WRITE);
	r->epsn = uroce_psn_add(t->bth.psn, 1);
	if (flags & UROCE_OPF_LAST)
		r->msn++;
	if (t->bth.ackreq)
		queue_ack(qp, UROCE_ACK_ACK, UROCE_AETH_ACK_UNLIMITED, t->bth.psn);
}

static void uc_request(struct uroce_qp *qp, const struct uroce_tpkt *t)
{
	struct uroce_resp_state *r = &qp->resp;
	unsigned flags = uroce_opinfo[t->bth.opcode].flags;

	/* UC: a lost packet drops the rest of its message; the next FIRST/ONLY resyncs. */
	if (t->bth.psn != r->epsn || r->uc_drop) {
		if (!(flags & UROCE_OPF_FIRST)) {
			r->uc_drop = true;
			r->epsn = uroce_psn_add(t->bth.psn, 1);
			uroce_count(qp->eng, UROCE_CNT_DROP_UC_SEQ);
			return;
		}
		r->in_msg = 0;
		r->offset = 0;
	}
	/* A FIRST or ONLY in sequence while a message is open: that message lost its end (a
	 * LAST the requester never sent, or a stray FIRST). UC retransmits nothing, so it is
	 * dropped (counted) and this packet begins the next one, as after a lost packet; left
	 * open, it would drop every later message of the QP. rxe drops the new packet too. */
	if ((flags & UROCE_OPF_FIRST) && r->in_msg) {
		uroce_count(qp->eng, UROCE_CNT_DROP_UC_SEQ);
		r->in_msg = 0;
		r->offset = 0;
	}
	r->uc_drop = false;
	r->epsn = uroce_psn_add(t->bth.psn, 1);
	if (!sequence_ok(qp, flags) || !size_ok(qp, flags, t->payload_len)) {
		r->uc_drop = !(flags & UROCE_OPF_LAST);
		r->in_msg = 0;
		uroce_count(qp->eng, UROCE_CNT_DROP_UC_SEQ);
		return;
	}
	int rc = flags & UROCE_OPF_SEND ? do_send(qp, t, flags) : do_write(qp, t, flags);

	if (rc) {
		/* UC has no NAKs: the message is dropped (a failed receive already completed). */
		r->uc_drop = !(flags & UROCE_OPF_LAST);
		r->in_msg = 0;
		if (rc != 0xFF)
			uroce_count(qp->eng, UROCE_CNT_DROP_UNEXPECTED);
		return;
	}
	r->in_msg = flags & UROCE_OPF_LAST ? 0 : flags & (UROCE_OPF_SEND | UROCE_OPF_WRITE);
}

void uroce_resp_rx(struct uroce_qp *qp, const struct uroce_tpkt *t, const struct uroce_rx_pkt *rx)
{
	switch (qp->init.type) {
	case UROCE_QPT_UD:
	case UROCE_QPT_GSI:
		ud_rx(qp, t, rx);
		break;
	case UROCE_QPT_UC:
		uc_request(qp, t);
		break;
	case UROCE_QPT_RC:
		if (!qp->resp.goto_error)
			rc_request(qp, t);
		break;
	}
}

/* ---- transmit ---------------------------------------------------------------------------- */

#ifndef NDEBUG
/* What resp.n_sending must equal: the walk it replaces (checked in debug builds). */
static uint32_t count_sending(const struct uroce_resp_state *r)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < r->nres; i++)
		n += r->res[i].valid && r->res[i].sending;
	return n;
}
#endif

bool uroce_resp_has_data(const struct uroce_qp *qp)
{
	assert(qp->resp.n_sending == count_sending(&qp->resp));
	return qp->init.type == UROCE_QPT_RC && qp->resp.n_sending > 0;
}

bool uroce_resp_has_ack(const struct uroce_qp *qp)
{
	return qp->init.type == UROCE_QPT_RC && qp->resp.ack != UROCE_ACK_NONE;
}

bool uroce_resp_has_work(const struct uroce_qp *qp)
{
	return uroce_resp_has_ack(qp) || uroce_resp_has_data(qp);
}

static void resp_bth(struct uroce_qp *qp, struct uroce_tpkt *t, uint8_t opcode, uint32_t psn)
{
	static const struct uroce_tpkt zero; /* not memset: see uroce_req_next */

	*t = zero;
	t->bth.opcode = opcode;
	t->bth.pkey = UROCE_DEFAULT_PKEY;
	t->bth.dqpn = qp->attr.dest_qp_num;
	t->bth.psn = psn;
}

static int emit(struct uroce_qp *qp, struct uroce_tpkt *t, const uint8_t *payload, uint32_t n,
		struct uroce_tx_pkt *out)
{
	t->payload_len = n;
	int hl = uroce_tpkt_hdr_encode(out->hdr, sizeof(out->hdr), t);

	if (hl < 0)
		return 0;
	out->hdr_len = (uint16_t)hl;
	out->pad = uroce_pad_len(n);
	out->payload = payload;
	out->payload_len = n;
	out->av = &qp->attr.av;
	out->src_qpn = qp->qpn;
	out->dst_qpn = qp->attr.dest_qp_num;
	return 1;
}

/* The oldest resource with responses to send. */
static struct uroce_rd_res *res_sending(struct uroce_qp *qp)
{
	struct uroce_resp_state *r = &qp->resp;
	uint32_t i = r->res_send < r->nres ? r->res_send : r->res_next;

	if (!r->n_sending) {
		r->res_send = r->res_next;
		return NULL;
	}
	/* From res_send on in ring order: the slots from res_next up to it hold none that sends,
	 * so the first found is the oldest (the one being sent, for a stream of READs: one look
	 * per packet instead of a walk over max_dest_rd_atomic slots). */
	for (uint32_t k = 0; k < r->nres; k++, i = i + 1 == r->nres ? 0 : i + 1) {
		struct uroce_rd_res *res = &r->res[i];

		if (res->valid && res->sending) {
			r->res_send = i;
			return res;
		}
	}
	r->res_send = r->res_next;
	return NULL;
}

int uroce_resp_next(struct uroce_qp *qp, struct uroce_tx_pkt *out)
{
	struct uroce_resp_state *r = &qp->resp;
	struct uroce_tpkt t;

	if (qp->init.type != UROCE_QPT_RC)
		return 0;
	if (qp->attr.qp_state == UROCE_QPS_RESET || qp->attr.qp_state == UROCE_QPS_INIT ||
	    qp->attr.qp_state == UROCE_QPS_ERR)
		return 0;

	/* Responses first: an ACK for a later PSN must not overtake them. */
	struct uroce_rd_res *res = res_sending(qp);

	if (res && !(r->ack == UROCE_ACK_NAK && r->goto_error)) {
		if (res->atomic) {
			resp_bth(qp, &t, UROCE_OP_RC_ATOMIC_ACK, res->first_psn);
			t.aeth.syndrome = UROCE_AETH_ACK_UNLIMITED;
			t.aeth.msn = res->msn & UROCE_PSN_MASK;
			t.atmack = res->orig;
			res_set_sending(r, res, false);
			res->sent_once = true;
			return emit(qp, &t, NULL, 0, out);
		}
		uint32_t total = uroce_npkts(res->len, qp->mtu);
		uint32_t idx = (uint32_t)uroce_psn_diff(res->next_psn, res->first_psn);
		uint32_t n = res->remaining < qp->mtu ? res->remaining : qp->mtu;
		bool first = idx == 0, last = idx + 1 == total;
		uint8_t op = first && last ? UROCE_OP_RC_READ_RESP_ONLY
			     : first	   ? UROCE_OP_RC_READ_RESP_FIRST
			     : last	   ? UROCE_OP_RC_READ_RESP_LAST
					   : UROCE_OP_RC_READ_RESP_MIDDLE;
		const uint8_t *src = NULL;

		if (n) {
			/* Zero-copy from the registered region; checked again per packet, and its
			 * pages read once, so that a region whose memory is gone answers a remote
			 * access error (rxe read_reply) instead of faulting in the host's send. */
			src = uroce_rkey_ptr(qp, res->rkey, res->va, n, UROCE_ACCESS_REMOTE_READ);
			if (!src || uroce_mem_readable(qp->eng, src, n)) {
				res_set_sending(r, res, false);
				nak_fatal(qp, UROCE_NAK_REM_ACCESS, res->next_psn,
					  UROCE_EVENT_QP_ACCESS_ERR);
				return 0;
			}
		}
		resp_bth(qp, &t, op, res->next_psn);
		t.aeth.syndrome = UROCE_AETH_ACK_UNLIMITED;
		t.aeth.msn = res->msn & UROCE_PSN_MASK;
		res->next_psn = uroce_psn_add(res->next_psn, 1);
		res->va += n;
		res->remaining -= n;
		if (last) {
			res_set_sending(r, res, false);
			res->sent_once = true;
		}
		return emit(qp, &t, src, n, out);
	}
	if (r->ack == UROCE_ACK_NONE)
		return 0;
	resp_bth(qp, &t, UROCE_OP_RC_ACK, r->ack_psn);
	t.aeth.syndrome = r->ack_syndrome;
	t.aeth.msn = r->msn & UROCE_PSN_MASK;
	uroce_count(qp->eng, r->ack == UROCE_ACK_ACK ? UROCE_CNT_SENT_ACKS : UROCE_CNT_SENT_NAKS);
	r->ack = UROCE_ACK_NONE;
	int rc = emit(qp, &t, NULL, 0, out);

	if (r->goto_error) {
		/* The NAK is out (its bytes are in out->hdr); now the QP fails. */
		r->goto_error = false;
		qp->attr.qp_state = UROCE_QPS_ERR;
		uroce_qp_flush(qp);
		uroce_eng_event(qp->eng, UROCE_EVENT_QP_FATAL, qp, qp->init.user);
	}
	return rc;
}
