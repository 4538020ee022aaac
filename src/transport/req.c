/* SPDX-License-Identifier: MIT */
/*
 * Requester: turns send WQEs into request packets (IBTA 9.5, 9.7.2; rxe_req.c). One packet per
 * call, from sq.cur at req.offset; segmentation at the path MTU; PSN assignment; AckReq.
 */
#include <errno.h>
#include <string.h>

#include "transport/internal.h"
#include "wire/bytes.h"

static bool wqe_is_rd_atomic(const struct uroce_swqe *w)
{
	return w->wr.opcode == UROCE_WR_RDMA_READ || w->wr.opcode == UROCE_WR_ATOMIC_CMP_AND_SWP ||
	       w->wr.opcode == UROCE_WR_ATOMIC_FETCH_AND_ADD;
}

/* BIND_MW and LOCAL_INV: done by the requester itself, no packet. */
static bool wqe_is_local(const struct uroce_swqe *w)
{
	return w->wr.opcode == UROCE_WR_BIND_MW || w->wr.opcode == UROCE_WR_LOCAL_INV;
}

bool uroce_req_has_work(const struct uroce_qp *qp)
{
	const struct uroce_sq *sq = &qp->sq;

	if (sq->cur == sq->tail)
		return false;
	if (qp->attr.qp_state != UROCE_QPS_RTS &&
	    !(qp->attr.qp_state == UROCE_QPS_SQD && qp->req.offset))
		return false;
	if (qp->init.type != UROCE_QPT_RC)
		return true;
	if (qp->req.rnr_until)
		return false;
	if (uroce_psn_diff(qp->req.psn, qp->comp.psn) >= uroce_req_window(qp))
		return false;

	const struct uroce_swqe *w = &sq->ring[sq->cur & (sq->size - 1)];

	if (qp->req.offset == 0) {
		if (wqe_is_rd_atomic(w) && qp->req.rd_atomic >= qp->attr.max_rd_atomic)
			return false;
		/* A fenced WQE waits for outstanding reads and atomics (IBTA 10.8.3.3). */
		if ((w->wr.send_flags & UROCE_SEND_FENCE) && qp->req.rd_atomic)
			return false;
	}
	return true;
}

/* The opcode for the packet of w at offset off that carries n bytes. */
static uint8_t req_opcode(const struct uroce_qp *qp, const struct uroce_swqe *w, uint32_t off,
			  uint32_t n)
{
	uint8_t cls = qp->init.type == UROCE_QPT_UC ? UROCE_OPCLASS_UC : UROCE_OPCLASS_RC;
	bool first = off == 0, last = off + n >= w->length;

	switch (w->wr.opcode) {
	case UROCE_WR_SEND:
	case UROCE_WR_SEND_WITH_IMM:
	case UROCE_WR_SEND_WITH_INV: {
		bool imm = w->wr.opcode == UROCE_WR_SEND_WITH_IMM;
		bool inv = w->wr.opcode == UROCE_WR_SEND_WITH_INV; /* RC only (post checks) */

		if (qp->init.type == UROCE_QPT_UD || qp->init.type == UROCE_QPT_GSI)
			return imm ? UROCE_OP_UD_SEND_ONLY_IMM : UROCE_OP_UD_SEND_ONLY;
		if (first && last)
			return inv ? UROCE_OP_RC_SEND_ONLY_INV : cls | (imm ? 0x05 : 0x04);
		if (first)
			return cls | 0x00;
		if (last)
			return inv ? UROCE_OP_RC_SEND_LAST_INV : cls | (imm ? 0x03 : 0x02);
		return cls | 0x01;
	}
	case UROCE_WR_RDMA_WRITE:
	case UROCE_WR_RDMA_WRITE_WITH_IMM: {
		bool imm = w->wr.opcode == UROCE_WR_RDMA_WRITE_WITH_IMM;

		if (first && last)
			return cls | (imm ? 0x0B : 0x0A);
		if (first)
			return cls | 0x06;
		if (last)
			return cls | (imm ? 0x09 : 0x08);
		return cls | 0x07;
	}
	case UROCE_WR_RDMA_READ:
		return UROCE_OP_RC_READ_REQ;
	case UROCE_WR_ATOMIC_CMP_AND_SWP:
		return UROCE_OP_RC_CMP_SWAP;
	case UROCE_WR_ATOMIC_FETCH_AND_ADD:
		return UROCE_OP_RC_FETCH_ADD;
	case UROCE_WR_LOCAL_INV:
	case UROCE_WR_BIND_MW:
		break;
	}
	return 0xFF; /* not reached: local operations send nothing */
}

/* The payload of this packet: in place when contiguous, else gathered into a bounce buffer. */
static int req_payload(struct uroce_qp *qp, struct uroce_swqe *w, uint32_t off, uint32_t n,
		       const uint8_t **out)
{
	struct uroce_eng *e = qp->eng;
	bool bad;

	if (w->wr.send_flags & UROCE_SEND_INLINE) {
		*out = w->inline_data + off;
		return 0;
	}
	*out = uroce_sge_contig(e, qp->pd, w->sge, (uint32_t)w->wr.num_sge, off, n, &bad);
	/* Sent in place: its pages are read once here, so that memory gone under the region is a
	 * local protection error (rxe: finish_packet's failed copy) and not a fault in the host's
	 * send. */
	if (*out)
		return uroce_mem_readable(e, *out, n);
	if (bad)
		return -EFAULT;
	if (e->bounce_used == UROCE_TX_BOUNCE || n > UROCE_TX_BOUNCE_SIZE)
		return -EAGAIN;
	uint8_t *b = e->bounce + (size_t)e->bounce_used * UROCE_TX_BOUNCE_SIZE;

	if (uroce_sge_gather(e, qp->pd, w->sge, (uint32_t)w->wr.num_sge, off, b, n))
		return -EFAULT;
	e->bounce_used++;
	*out = b;
	return 0;
}

/*
 * RC: does this packet ask for an ACK (AckReq)? A responder ACKs only such packets (rxe's and
 * ours), and an ACK covers every PSN before its own. Asked for: at least every
 * UROCE_MAX_PKT_PER_ACK-th packet (the window moves on), and the last packet of a WQE whose
 * completion the application wants (signaled; a READ's or an atomic's response is its ACK
 * anyway), of a WQE sent again, or of the WQE that makes half the send queue sent since the
 * last AckReq (their slots come back before the queue fills). An unsignaled WQE's last packet
 * asks for nothing: a ping-pong of unsignaled SENDs (UCX asks for a completion every 64th)
 * costs one datagram per message instead of two (the message and its ACK). What a burst leaves
 * unasked is asked for UROCE_ACK_ASK_NS after its last WQE (uroce_comp_timer: the last packet
 * again, with AckReq), so that the WQEs retire and later completions come.
 */
static bool ack_due(struct uroce_qp *qp, const struct uroce_swqe *w, bool last, bool again)
{
	if (++qp->req.noack_pkts >= UROCE_MAX_PKT_PER_ACK ||
	    (last && (w->signaled || again || wqe_is_rd_atomic(w) ||
		      ++qp->req.noack_wqes >= (qp->sq.max_wr + 1) / 2))) {
		qp->req.noack_pkts = 0;
		qp->req.noack_wqes = 0;
		qp->comp.ask_at = UROCE_NEVER;
		return true;
	}
	if (last) {
		qp->comp.ask_at = qp->eng->now + UROCE_ACK_ASK_NS;
		uroce_qp_timed(qp);
	}
	return false;
}

/* The packet at qp->req.psn is out: n PSNs further (an RC packet below psn_max is a resend). */
static void psn_step(struct uroce_qp *qp, bool rc, uint32_t n)
{
	if (rc && uroce_psn_before(qp->req.psn, qp->req.psn_max))
		uroce_count(qp->eng, UROCE_CNT_RETRANSMITTED_PKTS);
	qp->req.psn = uroce_psn_add(qp->req.psn, n);
	if (rc && uroce_psn_after(qp->req.psn, qp->req.psn_max))
		qp->req.psn_max = qp->req.psn;
}

/*
 * Run the local operation at sq.cur (IBTA 10.6.7.2, 10.6.7.4; rxe_do_local_ops): it takes effect
 * now, in its turn, and completes in order with the WQEs before it. After a go-back-N the
 * requester walks over it again: done already, it is passed over.
 */
static void req_local(struct uroce_qp *qp, struct uroce_swqe *w)
{
	enum uroce_wc_status st = UROCE_WC_SUCCESS;

	qp->sq.cur++;
	if (w->state == UROCE_WQE_DONE)
		return;
	if (w->wr.opcode == UROCE_WR_BIND_MW)
		st = uroce_mw_bind(qp, w);
	else if (uroce_mw_invalidate(qp, w->wr.invalidate_rkey))
		st = UROCE_WC_LOC_QP_OP_ERR;
	uroce_comp_wqe(qp, w, st);
}

int uroce_req_next(struct uroce_qp *qp, struct uroce_tx_pkt *out)
{
	struct uroce_sq *sq = &qp->sq;

	while (uroce_req_has_work(qp) && wqe_is_local(uroce_sq_at(sq, sq->cur)))
		req_local(qp, uroce_sq_at(sq, sq->cur));
	if (!uroce_req_has_work(qp))
		return 0;

	struct uroce_swqe *w = uroce_sq_at(sq, sq->cur);
	bool rc = qp->init.type == UROCE_QPT_RC;
	bool ud = qp->init.type == UROCE_QPT_UD || qp->init.type == UROCE_QPT_GSI;
	uint32_t off = qp->req.offset;
	bool rd_atomic = wqe_is_rd_atomic(w);
	uint32_t n = rd_atomic ? 0 : w->length - off;

	if (n > qp->mtu)
		n = qp->mtu;

	/* Not memset: at this size it compiles to rep stos, a third of this function's time. */
	static const struct uroce_tpkt zero;
	struct uroce_tpkt t = zero;

	t.bth.opcode = req_opcode(qp, w, off, n);
	t.bth.pkey = UROCE_DEFAULT_PKEY;
	t.bth.dqpn = ud ? w->wr.wr.ud.remote_qpn : qp->attr.dest_qp_num;

	if (off == 0 && w->state == UROCE_WQE_POSTED && !(rc && w->npkts)) {
		w->first_psn = qp->req.psn;
		w->npkts = w->wr.opcode == UROCE_WR_RDMA_READ ? uroce_npkts(w->length, qp->mtu)
				: rd_atomic ? 1
					    : uroce_npkts(w->length, qp->mtu);
		w->last_psn = uroce_psn_add(w->first_psn, w->npkts - 1);
	}
	t.bth.psn = qp->req.psn;

	const uint8_t *payload = NULL;

	if (n) {
		int r = req_payload(qp, w, off, n, &payload);

		if (r == -EAGAIN)
			return 0;
		if (r) {
			/* Local protection error: complete in error, the QP goes to ERR. */
			sq->cur++;
			qp->req.offset = 0;
			uroce_comp_wqe(qp, w, UROCE_WC_LOC_PROT_ERR);
			return 0;
		}
	}

	uint32_t psns = 1;

	switch (w->wr.opcode) {
	case UROCE_WR_RDMA_WRITE:
	case UROCE_WR_RDMA_WRITE_WITH_IMM:
		t.reth.va = w->wr.wr.rdma.remote_addr;
		t.reth.rkey = w->wr.wr.rdma.rkey;
		t.reth.len = w->length;
		break;
	case UROCE_WR_RDMA_READ: {
		/* A retried read asks only for what is still missing (IBTA 9.7.4.1.4). */
		uint32_t done = uroce_psn_diff(qp->req.psn, w->first_psn) > 0
					? (uint32_t)uroce_psn_diff(qp->req.psn, w->first_psn) * qp->mtu
					: 0;

		if (done > w->length)
			done = w->length;
		t.reth.va = w->wr.wr.rdma.remote_addr + done;
		t.reth.rkey = w->wr.wr.rdma.rkey;
		t.reth.len = w->length - done;
		psns = uroce_npkts(t.reth.len, qp->mtu);
		break;
	}
	case UROCE_WR_ATOMIC_CMP_AND_SWP:
	case UROCE_WR_ATOMIC_FETCH_AND_ADD:
		t.atmeth.va = w->wr.wr.atomic.remote_addr;
		t.atmeth.rkey = w->wr.wr.atomic.rkey;
		t.atmeth.swap_add = w->wr.opcode == UROCE_WR_ATOMIC_CMP_AND_SWP
					    ? w->wr.wr.atomic.swap
					    : w->wr.wr.atomic.compare_add;
		t.atmeth.compare = w->wr.wr.atomic.compare_add;
		break;
	case UROCE_WR_SEND_WITH_INV:
		t.ieth = w->wr.invalidate_rkey;
		break;
	case UROCE_WR_SEND:
	case UROCE_WR_SEND_WITH_IMM:
	case UROCE_WR_LOCAL_INV:
	case UROCE_WR_BIND_MW:
		break;
	}
	t.imm = w->wr.imm_data;
	if (ud) {
		/* IBTA 10.2.4: a Q_Key with the high bit set means "use the QP's". */
		t.deth.qkey = w->wr.wr.ud.remote_qkey & 0x80000000u ? qp->attr.qkey
								    : w->wr.wr.ud.remote_qkey;
		t.deth.src_qp = qp->qpn;
	}

	bool last = rd_atomic || off + n >= w->length;

	if (last && (w->wr.send_flags & UROCE_SEND_SOLICITED) &&
	    (w->wr.opcode == UROCE_WR_SEND || w->wr.opcode == UROCE_WR_SEND_WITH_IMM ||
	     w->wr.opcode == UROCE_WR_SEND_WITH_INV ||
	     w->wr.opcode == UROCE_WR_RDMA_WRITE_WITH_IMM))
		t.bth.se = true;
	if (rc)
		t.bth.ackreq = ack_due(qp, w, last,
				       uroce_psn_before(qp->req.psn, qp->req.psn_max));
	t.payload_len = n;

	int hl = uroce_tpkt_hdr_encode(out->hdr, sizeof(out->hdr), &t);

	if (hl < 0)
		return 0; /* cannot happen: the opcode comes from the table */
	out->hdr_len = (uint16_t)hl;
	out->pad = uroce_pad_len(n);
	out->payload = payload;
	out->payload_len = n;
	out->av = ud ? &w->av : &qp->attr.av;
	out->src_qpn = qp->qpn;
	out->dst_qpn = t.bth.dqpn;

	psn_step(qp, rc, psns);
	if (!last) {
		qp->req.offset = off + n;
		if (rc)
			uroce_comp_arm(qp);
		return 1;
	}
	/* The WQE's last packet is out. */
	qp->req.offset = 0;
	sq->cur++;
	if (rc) {
		w->state = UROCE_WQE_SENT;
		if (rd_atomic)
			qp->req.rd_atomic++;
		uroce_comp_arm(qp);
	} else {
		/* UC and UD complete when sent (IBTA 9.8.2). */
		uroce_comp_wqe(qp, w, UROCE_WC_SUCCESS);
	}
	if (qp->attr.qp_state == UROCE_QPS_SQD && sq->cur == sq->tail &&
	    qp->attr.en_sqd_async_notify)
		uroce_eng_event(qp->eng, UROCE_EVENT_SQ_DRAINED, qp, qp->init.user);
	return 1;
}

/*
 * After uroce_req_next() gave prev, a packet of a SEND or RDMA WRITE that is not its last: up to
 * max more of that WQE's MIDDLE packets, built from prev's BTH with the opcode, AckReq and PSN
 * changed (uroce_req_next() would build each from scratch: most of the requester's time per
 * packet with 64 KiB messages). Stops before the WQE's last packet, at the window, or where the
 * payload is not one contiguous piece of registered memory (there uroce_req_next() goes on, one
 * packet at a time). Returns the packets written to out.
 */
int uroce_req_middles(struct uroce_qp *qp, const struct uroce_tx_pkt *prev,
		      struct uroce_tx_pkt *out, int max)
{
	struct uroce_sq *sq = &qp->sq;
	bool rc = qp->init.type == UROCE_QPT_RC;
	uint32_t off = qp->req.offset, mtu = qp->mtu;

	if (max <= 0 || off == 0 || sq->cur == sq->tail || !uroce_req_has_work(qp) ||
	    (!rc && qp->init.type != UROCE_QPT_UC))
		return 0;
	struct uroce_swqe *w = uroce_sq_at(sq, sq->cur);

	/* SENDs and WRITEs (reads and atomics are one request packet; the rest never posts). */
	if (wqe_is_rd_atomic(w) || w->wr.send_flags & UROCE_SEND_INLINE || off >= w->length)
		return 0;
	uint8_t op = req_opcode(qp, w, off, mtu); /* a MIDDLE: not the first, not the last */

	if (op == 0xFF)
		return 0;
	/* MIDDLE packets left before the last one, within the window. */
	uint32_t k = (w->length - off - 1) / mtu;

	if (k > (uint32_t)max)
		k = (uint32_t)max;
	if (rc) {
		int32_t room = uroce_req_window(qp) - uroce_psn_diff(qp->req.psn, qp->comp.psn);

		if (room <= 0)
			return 0;
		if (k > (uint32_t)room)
			k = (uint32_t)room;
	}
	if (k == 0)
		return 0;
	bool bad;
	const uint8_t *base = uroce_sge_contig(qp->eng, qp->pd, w->sge, (uint32_t)w->wr.num_sge,
					       off, k * mtu, &bad);

	/* Several pieces, a protection error or memory gone: uroce_req_next() sorts it out. */
	if (!base || uroce_mem_readable(qp->eng, base, (size_t)k * mtu))
		return 0;
	for (uint32_t i = 0; i < k; i++) {
		struct uroce_tx_pkt *o = &out[i];

		memcpy(o->hdr, prev->hdr, UROCE_BTH_LEN);
		o->hdr[0] = op;
		o->hdr[1] &= 0x0F; /* no SE, no MigReq, pad 0: a MIDDLE is a full MTU */
		o->hdr[8] &= 0x7F;
		if (rc && ack_due(qp, w, false, false))
			o->hdr[8] |= 0x80;
		uroce_put_be24(o->hdr + 9, qp->req.psn);
		o->hdr_len = UROCE_BTH_LEN;
		o->pad = 0;
		o->payload = base + (size_t)i * mtu;
		o->payload_len = mtu;
		o->av = prev->av;
		o->src_qpn = prev->src_qpn;
		o->dst_qpn = prev->dst_qpn;
		psn_step(qp, rc, 1);
	}
	qp->req.offset = off + k * mtu;
	return (int)k;
}

/*
 * Go back to PSN psn (IBTA 9.7.5.2.8 go-back-N): the first WQE whose PSN range holds psn is sent
 * again from that packet; every later WQE is sent again whole.
 */
void uroce_req_retry(struct uroce_qp *qp, uint32_t psn)
{
	struct uroce_sq *sq = &qp->sq;
	uint32_t i;

	/* WQEs in [head, cur] may hold psn; cur only if partly sent. */
	uint32_t end = qp->req.offset ? sq->cur + 1 : sq->cur;

	for (i = sq->head; i != end; i++) {
		struct uroce_swqe *w = uroce_sq_at(sq, i);

		if (w->state == UROCE_WQE_DONE)
			continue;
		if (!uroce_psn_after(psn, w->last_psn))
			break;
	}
	if (i == end)
		return; /* nothing outstanding at or after psn */

	struct uroce_swqe *w = uroce_sq_at(sq, i);
	int32_t into = uroce_psn_diff(psn, w->first_psn);

	if (into < 0)
		into = 0;
	/* Everything from i on is sent again. */
	for (uint32_t k = i; k != end; k++) {
		struct uroce_swqe *x = uroce_sq_at(sq, k);

		if (x->state == UROCE_WQE_SENT) {
			x->state = UROCE_WQE_POSTED;
			if (wqe_is_rd_atomic(x) && qp->req.rd_atomic)
				qp->req.rd_atomic--;
		}
	}
	sq->cur = i;
	if (w->wr.opcode == UROCE_WR_RDMA_READ || wqe_is_rd_atomic(w)) {
		qp->req.offset = 0;
		qp->req.psn = w->wr.opcode == UROCE_WR_RDMA_READ
				      ? uroce_psn_add(w->first_psn, (uint32_t)into)
				      : w->first_psn;
	} else {
		qp->req.offset = (uint32_t)into * qp->mtu;
		qp->req.psn = uroce_psn_add(w->first_psn, (uint32_t)into);
	}
	qp->req.noack_pkts = 0;
	qp->req.noack_wqes = 0;
	uroce_qp_schedule(qp);
}
