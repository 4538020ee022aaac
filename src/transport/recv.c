/* SPDX-License-Identifier: MIT */
/*
 * Receive: validate a transport packet and dispatch it to the responder or the completer
 * (IBTA 9.6; rxe_recv.c). Every drop is counted.
 */
#include <errno.h>
#include <string.h>

#include "transport/internal.h"

/* P_Key match (IBTA 10.9.3): low 15 bits equal and non-zero, one of them a full member. */
static bool pkey_match(uint16_t a, uint16_t b)
{
	return (a & 0x7FFF) && (a & 0x7FFF) == (b & 0x7FFF) && ((a | b) & 0x8000);
}

static int drop(struct uroce_eng *e, enum uroce_counter c, int err)
{
	uroce_count(e, c);
	return err;
}

static bool class_ok(enum uroce_qp_type type, uint8_t opcode)
{
	switch (type) {
	case UROCE_QPT_RC:
		return uroce_op_class(opcode) == UROCE_OPCLASS_RC;
	case UROCE_QPT_UC:
		return uroce_op_class(opcode) == UROCE_OPCLASS_UC;
	case UROCE_QPT_UD:
	case UROCE_QPT_GSI:
		return uroce_op_class(opcode) == UROCE_OPCLASS_UD;
	}
	return false;
}

static int mcast_rx(struct uroce_eng *e, const struct uroce_tpkt *t,
		    const struct uroce_rx_pkt *rx);

int uroce_eng_rx(struct uroce_eng *e, uint64_t now, const struct uroce_rx_pkt *rx)
{
	struct uroce_tpkt t;
	const char *why;

	e->now = now;
	uroce_count(e, UROCE_CNT_RCVD_PKTS);
	if (uroce_tpkt_decode(&t, rx->data, rx->len, &why))
		return drop(e, UROCE_CNT_DROP_BAD_HEADER, -EBADMSG);
	if (t.bth.tver != 0)
		return drop(e, UROCE_CNT_DROP_BAD_HEADER, -EBADMSG);
	if (t.bth.opcode == UROCE_OP_CNP) {
		/* Congestion notification: counted; no rate limiter acts on it (yet). */
		uroce_count(e, UROCE_CNT_CNP_RCVD);
		return 0;
	}
	if (t.bth.dqpn == UROCE_MCAST_QPN)
		return mcast_rx(e, &t, rx);
	if (t.bth.dqpn == 0) /* QP0: not on RoCE */
		return drop(e, UROCE_CNT_DROP_NO_QP, -ENOENT);

	struct uroce_qp *qp = uroce_qp_lookup(e, t.bth.dqpn);

	if (!qp)
		return drop(e, UROCE_CNT_DROP_NO_QP, -ENOENT);
	return uroce_qp_rx(qp, &t, rx);
}

/*
 * A multicast packet (IBTA 10.5.2.2: DQPN 0xFFFFFF, the MGID as destination address): a copy
 * to each QP attached to the group, each checked on its own (rxe_rcv_mcast_pkt). Only UD
 * sends are multicast. Returns 0 when at least one QP took it, else the last drop's reason.
 */
static int mcast_rx(struct uroce_eng *e, const struct uroce_tpkt *t, const struct uroce_rx_pkt *rx)
{
	struct uroce_mcg *g = uroce_mcg_lookup(e, rx->dgid);
	int r = -ENOENT;
	bool taken = false;

	if (!g)
		return drop(e, UROCE_CNT_DROP_NO_QP, -ENOENT);
	if (uroce_op_class(t->bth.opcode) != UROCE_OPCLASS_UD)
		return drop(e, UROCE_CNT_DROP_BAD_OPCODE, -EPROTO);
	for (uint32_t i = 0; i < g->nqp; i++) {
		r = uroce_qp_rx(g->qp[i], t, rx);
		taken = taken || r == 0;
	}
	return taken ? 0 : r;
}

int uroce_qp_rx(struct uroce_qp *qp, const struct uroce_tpkt *t, const struct uroce_rx_pkt *rx)
{
	struct uroce_eng *e = qp->eng;

	if (!class_ok(qp->init.type, t->bth.opcode))
		return drop(e, UROCE_CNT_DROP_BAD_OPCODE, -EPROTO);
	if (!pkey_match(t->bth.pkey, UROCE_DEFAULT_PKEY))
		return drop(e, UROCE_CNT_DROP_BAD_PKEY, -EBADMSG);

	enum uroce_qp_state st = qp->attr.qp_state;
	unsigned flags = uroce_opinfo[t->bth.opcode].flags;

	if (flags & UROCE_OPF_RESP) {
		/* Responses go to the requester's completer: RTS, SQD or SQE (RC only). */
		if (st != UROCE_QPS_RTS && st != UROCE_QPS_SQD && st != UROCE_QPS_SQE)
			return drop(e, UROCE_CNT_DROP_BAD_STATE, -EPROTO);
	} else if (st != UROCE_QPS_RTR && st != UROCE_QPS_RTS && st != UROCE_QPS_SQD &&
		   st != UROCE_QPS_SQE) {
		return drop(e, UROCE_CNT_DROP_BAD_STATE, -EPROTO);
	}

	if (qp->init.type == UROCE_QPT_UD || qp->init.type == UROCE_QPT_GSI) {
		uint32_t qkey = qp->init.type == UROCE_QPT_GSI ? UROCE_GSI_QKEY : qp->attr.qkey;

		if (t->deth.qkey != qkey)
			return drop(e, UROCE_CNT_DROP_BAD_QKEY, -EBADMSG);
	} else {
		/* Connected QPs take packets only from their peer, to the address they use
		 * (rxe check_addr). */
		if (memcmp(rx->sgid, qp->attr.av.dgid, 16) != 0 ||
		    rx->sgid_index != qp->attr.av.sgid_index)
			return drop(e, UROCE_CNT_DROP_BAD_ADDR, -EBADMSG);
	}

	if (st == UROCE_QPS_RTR && !qp->comm_est_sent) {
		qp->comm_est_sent = true;
		uroce_eng_event(e, UROCE_EVENT_COMM_EST, qp, qp->init.user);
	}
	if (flags & UROCE_OPF_RESP)
		uroce_comp_rx(qp, t);
	else
		uroce_resp_rx(qp, t, rx);
	return 0;
}
