/* SPDX-License-Identifier: MIT */
/*
 * The IB CM engine's receive side (ibcm.h): validate a MAD, find its connection, apply the
 * IBTA 12.9.6 state table as Linux core/cm.c does (cm_req_handler, cm_dup_req_handler,
 * cm_rep_handler, cm_dup_rep_handler, cm_rtu_handler, cm_dreq_handler, cm_drep_handler,
 * cm_rej_handler, cm_mra_handler, cm_sidr_req_handler, cm_sidr_rep_handler).
 *
 * Every handler changes state first and reports its event last: the callback may destroy the
 * conn or call any other function, so nothing touches the conn after uroce_ibcm_emit.
 *
 * Messages for an unknown comm ID are counted and dropped, except a DREQ, which is answered with
 * a DREP as core/cm.c cm_issue_drep does, so that a peer that lost its side of a connection ends
 * its disconnect without waiting for every retry.
 */
#include <string.h>

#include "cm/ibcm_int.h"
#include "wire/bytes.h"

static bool is_sidr(const struct uroce_ibcm_conn *c)
{
	return c->state == UROCE_IBCM_SIDR_REQ_RCVD || c->state == UROCE_IBCM_SIDR_REQ_SENT;
}

/* The conn whose local ID is local and whose remote ID is remote (core/cm.c cm_acquire_id). */
static struct uroce_ibcm_conn *find_pair(struct uroce_ibcm *cm, uint32_t local, uint32_t remote)
{
	struct uroce_ibcm_conn *c = uroce_ibcm_find_local(cm, local);

	return c && c->remote_id == remote ? c : NULL;
}

/* Duplicate REQ detection: (remote comm ID, remote CA GUID), core/cm.c remote_id_table. */
static struct uroce_ibcm_conn *find_remote(struct uroce_ibcm *cm, uint32_t remote_id, uint64_t guid)
{
	struct uroce_ibcm_conn *c = uroce_ibcm_bucket(cm, IBCM_T_REMOTE, remote_id);

	for (; c; c = c->hnext[IBCM_T_REMOTE])
		if (c->remote_id == remote_id && c->remote_ca_guid == guid && !is_sidr(c))
			return c;
	return NULL;
}

/* An established conn other than self to (remote QPN, remote GID): a stale connection. */
static struct uroce_ibcm_conn *find_stale(struct uroce_ibcm *cm, uint32_t qpn, const uint8_t *gid,
					  const struct uroce_ibcm_conn *self)
{
	struct uroce_ibcm_conn *c = uroce_ibcm_bucket(cm, IBCM_T_QP, qpn);

	for (; c; c = c->hnext[IBCM_T_QP])
		if (c != self && c->remote_qpn == qpn && c->state == UROCE_IBCM_ESTABLISHED &&
		    !memcmp(c->remote_gid, gid, sizeof(c->remote_gid)))
			return c;
	return NULL;
}

/* A REJ (or DREP) answering a received message m that matched no conn state: ids swapped. */
static void reply_to(struct uroce_ibcm *cm, const struct uroce_ibcm_addr *to,
		     const struct uroce_cm_mad *m, uint16_t attr, uint32_t local, uint32_t remote,
		     uint8_t rejected, uint16_t reason)
{
	struct uroce_cm_mad r;
	uint8_t buf[UROCE_MAD_LEN];

	uroce_ibcm_mad_init(&r, attr, m->hdr.tid);
	if (attr == UROCE_CM_ATTR_REJ) {
		r.u.rej.local_comm_id = local;
		r.u.rej.remote_comm_id = remote;
		r.u.rej.msg_rejected = rejected;
		r.u.rej.reason = reason;
	} else {
		r.u.drep.local_comm_id = local;
		r.u.drep.remote_comm_id = remote;
	}
	uroce_ibcm_encode(buf, &r);
	uroce_ibcm_tx(cm, to, buf);
}

static void resend(struct uroce_ibcm_conn *c, const struct uroce_ibcm_addr *to, uint16_t attr)
{
	if (c->reply_attr == attr)
		uroce_ibcm_tx(c->cm, to, c->reply);
}

/* core/cm.c cm_dup_req_handler, and the REP resend the header asks for. */
static void dup_req(struct uroce_ibcm_conn *c, const struct uroce_ibcm_addr *from,
		    const struct uroce_cm_mad *m)
{
	struct uroce_ibcm *cm = c->cm;

	ibcm_count(cm, UROCE_IBCM_C_RX_DUPLICATES);
	switch (c->state) {
	case UROCE_IBCM_MRA_REQ_SENT:
		resend(c, from, UROCE_CM_ATTR_MRA);
		break;
	case UROCE_IBCM_REP_SENT:
	case UROCE_IBCM_MRA_REP_RCVD:
		uroce_ibcm_tx(cm, from, c->tx);
		break;
	case UROCE_IBCM_TIMEWAIT:
		ibcm_count(cm, UROCE_IBCM_C_STALE_REJECTS);
		reply_to(cm, from, m, UROCE_CM_ATTR_REJ, c->local_id, c->remote_id, 2,
			 UROCE_CM_REJ_STALE_CONN);
		break;
	case UROCE_IBCM_REQ_RCVD: /* the user has it: drop */
	case UROCE_IBCM_IDLE:
	case UROCE_IBCM_REQ_SENT:
	case UROCE_IBCM_MRA_REQ_RCVD:
	case UROCE_IBCM_REP_RCVD:
	case UROCE_IBCM_MRA_REP_SENT:
	case UROCE_IBCM_ESTABLISHED:
	case UROCE_IBCM_DREQ_SENT:
	case UROCE_IBCM_DREQ_RCVD:
	case UROCE_IBCM_SIDR_REQ_SENT:
	case UROCE_IBCM_SIDR_REQ_RCVD:
		break;
	}
}

static void rx_req(struct uroce_ibcm *cm, const struct uroce_ibcm_addr *from,
		   const struct uroce_cm_mad *m, uint64_t now)
{
	const struct uroce_cm_req *req = &m->u.req;
	struct uroce_ibcm_conn *c;

	if (!req->local_comm_id) {
		ibcm_count(cm, UROCE_IBCM_C_RX_MALFORMED);
		return;
	}
	c = find_remote(cm, req->local_comm_id, req->local_ca_guid);
	if (c) {
		dup_req(c, from, m);
		return;
	}
	/* core/cm.c cm_match_req: a new comm ID from a QP we are connected to is stale. */
	c = find_stale(cm, req->local_qpn, req->primary.local_gid, NULL);
	if (c) {
		ibcm_count(cm, UROCE_IBCM_C_STALE_REJECTS);
		reply_to(cm, from, m, UROCE_CM_ATTR_REJ, 0, req->local_comm_id,
			 UROCE_CM_MSG_REF_REQ, UROCE_CM_REJ_STALE_CONN);
		uroce_ibcm_dreq_out(c, NULL, 0, now);
		return;
	}
	c = uroce_ibcm_conn_new(cm, UROCE_IBCM_REQ_RCVD, NULL);
	if (!c)
		return; /* -ENOMEM: the peer's retry may find memory */
	c->addr = *from;
	c->remote_id = req->local_comm_id;
	c->remote_ca_guid = req->local_ca_guid;
	c->remote_qpn = req->local_qpn;
	memcpy(c->remote_gid, req->primary.local_gid, sizeof(c->remote_gid));
	c->tid = m->hdr.tid;
	uroce_ibcm_table_add(c, IBCM_T_REMOTE);
	uroce_ibcm_table_add(c, IBCM_T_QP);
	uroce_ibcm_emit(c, UROCE_IBCM_EV_REQ_RECEIVED, from, m);
}

static void rx_rep(struct uroce_ibcm *cm, const struct uroce_ibcm_addr *from,
		   const struct uroce_cm_mad *m, uint64_t now)
{
	const struct uroce_cm_rep *rep = &m->u.rep;
	struct uroce_ibcm_conn *c, *stale;

	if (!rep->local_comm_id) {
		ibcm_count(cm, UROCE_IBCM_C_RX_MALFORMED);
		return;
	}
	c = uroce_ibcm_find_local(cm, rep->remote_comm_id);
	if (!c) {
		ibcm_count(cm, UROCE_IBCM_C_RX_UNKNOWN_ID);
		return;
	}
	if (c->state != UROCE_IBCM_REQ_SENT && c->state != UROCE_IBCM_MRA_REQ_RCVD) {
		/* core/cm.c cm_dup_rep_handler: our answer to the first copy was lost. */
		if (c->remote_id != rep->local_comm_id) {
			ibcm_count(cm, UROCE_IBCM_C_RX_BAD_STATE);
			return;
		}
		ibcm_count(cm, UROCE_IBCM_C_RX_DUPLICATES);
		if (c->state == UROCE_IBCM_ESTABLISHED)
			resend(c, from, UROCE_CM_ATTR_RTU);
		else if (c->state == UROCE_IBCM_MRA_REP_SENT)
			resend(c, from, UROCE_CM_ATTR_MRA);
		return;
	}
	if (find_remote(cm, rep->local_comm_id, rep->local_ca_guid)) {
		/* Another conn already has these remote IDs (core/cm.c: "duplicate REP"). */
		ibcm_count(cm, UROCE_IBCM_C_RX_DUPLICATES);
		return;
	}
	stale = find_stale(cm, rep->local_qpn, c->remote_gid, c);
	if (stale) {
		ibcm_count(cm, UROCE_IBCM_C_STALE_REJECTS);
		reply_to(cm, from, m, UROCE_CM_ATTR_REJ, c->local_id, rep->local_comm_id,
			 UROCE_CM_MSG_REF_REP, UROCE_CM_REJ_STALE_CONN);
		uroce_ibcm_dreq_out(stale, NULL, 0, now);
		return;
	}
	c->state = UROCE_IBCM_REP_RCVD;
	c->remote_id = rep->local_comm_id;
	c->remote_ca_guid = rep->local_ca_guid;
	c->remote_qpn = rep->local_qpn;
	uroce_ibcm_disarm(c);
	uroce_ibcm_table_add(c, IBCM_T_REMOTE);
	uroce_ibcm_table_add(c, IBCM_T_QP);
	uroce_ibcm_emit(c, UROCE_IBCM_EV_REP_RECEIVED, from, m);
}

static void rx_rtu(struct uroce_ibcm *cm, const struct uroce_ibcm_addr *from,
		   const struct uroce_cm_mad *m)
{
	struct uroce_ibcm_conn *c = find_pair(cm, m->u.rtu.remote_comm_id, m->u.rtu.local_comm_id);

	if (!c) {
		ibcm_count(cm, UROCE_IBCM_C_RX_UNKNOWN_ID);
		return;
	}
	switch (c->state) {
	case UROCE_IBCM_REP_SENT:
	case UROCE_IBCM_MRA_REP_RCVD:
		c->state = UROCE_IBCM_ESTABLISHED;
		uroce_ibcm_disarm(c);
		uroce_ibcm_emit(c, UROCE_IBCM_EV_RTU_RECEIVED, from, m);
		return;
	case UROCE_IBCM_ESTABLISHED: /* established by data first, or a copy */
	case UROCE_IBCM_DREQ_SENT:
	case UROCE_IBCM_DREQ_RCVD:
	case UROCE_IBCM_TIMEWAIT:
		ibcm_count(cm, UROCE_IBCM_C_RX_DUPLICATES);
		return;
	case UROCE_IBCM_IDLE:
	case UROCE_IBCM_REQ_SENT:
	case UROCE_IBCM_REQ_RCVD:
	case UROCE_IBCM_MRA_REQ_SENT:
	case UROCE_IBCM_MRA_REQ_RCVD:
	case UROCE_IBCM_REP_RCVD:
	case UROCE_IBCM_MRA_REP_SENT:
	case UROCE_IBCM_SIDR_REQ_SENT:
	case UROCE_IBCM_SIDR_REQ_RCVD:
		ibcm_count(cm, UROCE_IBCM_C_RX_BAD_STATE);
		return;
	}
}

static void rx_dreq(struct uroce_ibcm *cm, const struct uroce_ibcm_addr *from,
		    const struct uroce_cm_mad *m, uint64_t now)
{
	const struct uroce_cm_dreq *dreq = &m->u.dreq;
	struct uroce_ibcm_conn *c = find_pair(cm, dreq->remote_comm_id, dreq->local_comm_id);
	uint8_t buf[UROCE_MAD_LEN];

	if (!c) {
		ibcm_count(cm, UROCE_IBCM_C_RX_UNKNOWN_ID);
		reply_to(cm, from, m, UROCE_CM_ATTR_DREP, dreq->remote_comm_id, dreq->local_comm_id,
			 0, 0);
		return;
	}
	if (dreq->remote_qpn != c->local_qpn) {
		/* Not for this connection's QP (core/cm.c checks it too). */
		ibcm_count(cm, UROCE_IBCM_C_RX_BAD_STATE);
		return;
	}
	switch (c->state) {
	case UROCE_IBCM_REP_SENT:
	case UROCE_IBCM_MRA_REP_RCVD:
	case UROCE_IBCM_ESTABLISHED:
	case UROCE_IBCM_DREQ_SENT: /* both sides disconnect at once */
		break;
	case UROCE_IBCM_TIMEWAIT:
		/* Our DREP was lost: send it again, in the transaction of this DREQ. */
		ibcm_count(cm, UROCE_IBCM_C_RX_DUPLICATES);
		if (c->reply_attr == UROCE_CM_ATTR_DREP) {
			memcpy(buf, c->reply, sizeof(buf));
			uroce_put_be64(buf + 8, m->hdr.tid);
			uroce_ibcm_tx(cm, from, buf);
		} else {
			reply_to(cm, from, m, UROCE_CM_ATTR_DREP, c->local_id, c->remote_id, 0, 0);
		}
		return;
	case UROCE_IBCM_DREQ_RCVD:
		ibcm_count(cm, UROCE_IBCM_C_RX_DUPLICATES);
		return;
	case UROCE_IBCM_IDLE:
	case UROCE_IBCM_REQ_SENT:
	case UROCE_IBCM_REQ_RCVD:
	case UROCE_IBCM_MRA_REQ_SENT:
	case UROCE_IBCM_MRA_REQ_RCVD:
	case UROCE_IBCM_REP_RCVD:
	case UROCE_IBCM_MRA_REP_SENT:
	case UROCE_IBCM_SIDR_REQ_SENT:
	case UROCE_IBCM_SIDR_REQ_RCVD:
		ibcm_count(cm, UROCE_IBCM_C_RX_BAD_STATE);
		return;
	}
	uroce_ibcm_disarm(c);
	c->state = UROCE_IBCM_DREQ_RCVD;
	c->tid = m->hdr.tid;
	if (c->destroyed) {
		/* Nobody to answer: do it for the gone user (its DREQ was pending). */
		uroce_ibcm_drep_out(c, NULL, 0, now);
		return;
	}
	uroce_ibcm_emit(c, UROCE_IBCM_EV_DREQ_RECEIVED, from, m);
}

static void rx_drep(struct uroce_ibcm *cm, const struct uroce_ibcm_addr *from,
		    const struct uroce_cm_mad *m, uint64_t now)
{
	struct uroce_ibcm_conn *c =
		find_pair(cm, m->u.drep.remote_comm_id, m->u.drep.local_comm_id);

	if (!c) {
		ibcm_count(cm, UROCE_IBCM_C_RX_UNKNOWN_ID);
		return;
	}
	switch (c->state) {
	case UROCE_IBCM_DREQ_SENT:
	case UROCE_IBCM_DREQ_RCVD: /* simultaneous disconnect: the peer answered ours */
		uroce_ibcm_disarm(c);
		uroce_ibcm_enter_timewait(c, now);
		uroce_ibcm_emit(c, UROCE_IBCM_EV_DREP_RECEIVED, from, m);
		return;
	case UROCE_IBCM_TIMEWAIT:
		ibcm_count(cm, UROCE_IBCM_C_RX_DUPLICATES);
		return;
	case UROCE_IBCM_IDLE:
	case UROCE_IBCM_REQ_SENT:
	case UROCE_IBCM_REQ_RCVD:
	case UROCE_IBCM_MRA_REQ_SENT:
	case UROCE_IBCM_MRA_REQ_RCVD:
	case UROCE_IBCM_REP_SENT:
	case UROCE_IBCM_REP_RCVD:
	case UROCE_IBCM_MRA_REP_SENT:
	case UROCE_IBCM_MRA_REP_RCVD:
	case UROCE_IBCM_ESTABLISHED:
	case UROCE_IBCM_SIDR_REQ_SENT:
	case UROCE_IBCM_SIDR_REQ_RCVD:
		ibcm_count(cm, UROCE_IBCM_C_RX_BAD_STATE);
		return;
	}
}

/*
 * The conn a REJ is for (core/cm.c cm_acquire_rejected_id). Normally its remote comm ID is our
 * local ID (with the REJ's local ID as our remote ID once we know it). A REJ from an active side
 * that never saw our REP (REJ TIMEOUT from its destroy, with its CA GUID as ARI) has remote ID
 * 0: then it is the passive conn with that remote ID from that peer.
 */
static struct uroce_ibcm_conn *find_rejected(struct uroce_ibcm *cm,
					     const struct uroce_ibcm_addr *from,
					     const struct uroce_cm_rej *rej)
{
	struct uroce_ibcm_conn *c = uroce_ibcm_find_local(cm, rej->remote_comm_id);
	bool by_guid = rej->reason == UROCE_CM_REJ_TIMEOUT && rej->reject_info_len >= 8;
	uint64_t guid = uroce_get_be64(rej->ari);

	if (c)
		return !c->remote_id || c->remote_id == rej->local_comm_id ? c : NULL;
	if (!rej->local_comm_id)
		return NULL;
	c = uroce_ibcm_bucket(cm, IBCM_T_REMOTE, rej->local_comm_id);
	for (; c; c = c->hnext[IBCM_T_REMOTE]) {
		if (c->remote_id != rej->local_comm_id || is_sidr(c))
			continue;
		if (by_guid ? c->remote_ca_guid == guid
			    : !memcmp(c->addr.dgid, from->dgid, sizeof(from->dgid)))
			return c;
	}
	return NULL;
}

static void rx_rej(struct uroce_ibcm *cm, const struct uroce_ibcm_addr *from,
		   const struct uroce_cm_mad *m, uint64_t now)
{
	const struct uroce_cm_rej *rej = &m->u.rej;
	struct uroce_ibcm_conn *c = find_rejected(cm, from, rej);
	bool timewait = false; /* set by the switch; gcc 12 -O2 cannot tell */

	if (!c) {
		ibcm_count(cm, UROCE_IBCM_C_RX_UNKNOWN_ID);
		return;
	}
	switch (c->state) {
	case UROCE_IBCM_REQ_SENT:
	case UROCE_IBCM_MRA_REQ_RCVD:
	case UROCE_IBCM_REP_SENT:
	case UROCE_IBCM_MRA_REP_RCVD:
	case UROCE_IBCM_REQ_RCVD:
	case UROCE_IBCM_MRA_REQ_SENT:
		timewait = rej->reason == UROCE_CM_REJ_STALE_CONN;
		break;
	case UROCE_IBCM_DREQ_SENT:
	case UROCE_IBCM_REP_RCVD:
	case UROCE_IBCM_MRA_REP_SENT:
	case UROCE_IBCM_ESTABLISHED:
		timewait = true;
		break;
	case UROCE_IBCM_IDLE:
	case UROCE_IBCM_DREQ_RCVD:
	case UROCE_IBCM_TIMEWAIT:
	case UROCE_IBCM_SIDR_REQ_SENT:
	case UROCE_IBCM_SIDR_REQ_RCVD:
		ibcm_count(cm, UROCE_IBCM_C_RX_BAD_STATE);
		return;
	}
	uroce_ibcm_disarm(c);
	if (timewait)
		uroce_ibcm_enter_timewait(c, now);
	else
		uroce_ibcm_set_idle(c);
	uroce_ibcm_emit(c, UROCE_IBCM_EV_REJ_RECEIVED, from, m);
}

static void rx_mra(struct uroce_ibcm *cm, const struct uroce_ibcm_addr *from,
		   const struct uroce_cm_mad *m, uint64_t now)
{
	const struct uroce_cm_mra *mra = &m->u.mra;
	struct uroce_ibcm_conn *c = uroce_ibcm_find_local(cm, mra->remote_comm_id);
	enum uroce_ibcm_state waiting, next;
	uint64_t wait;

	if (!c || (c->remote_id && c->remote_id != mra->local_comm_id)) {
		ibcm_count(cm, UROCE_IBCM_C_RX_UNKNOWN_ID);
		return;
	}
	if (mra->msg_mraed == UROCE_CM_MSG_REF_REQ) {
		waiting = UROCE_IBCM_REQ_SENT;
		next = UROCE_IBCM_MRA_REQ_RCVD;
	} else if (mra->msg_mraed == UROCE_CM_MSG_REF_REP) {
		waiting = UROCE_IBCM_REP_SENT;
		next = UROCE_IBCM_MRA_REP_RCVD;
	} else {
		ibcm_count(cm, UROCE_IBCM_C_RX_BAD_STATE); /* LAP: not on RoCE */
		return;
	}
	if (c->state == next) {
		ibcm_count(cm, UROCE_IBCM_C_RX_DUPLICATES);
		return;
	}
	if (c->state != waiting) {
		ibcm_count(cm, UROCE_IBCM_C_RX_BAD_STATE);
		return;
	}
	/*
	 * The wait for the answer becomes the peer's service time (4.096 us << t) plus our
	 * timeout; it stays that long for the remaining resends (core/cm.c ib_modify_mad).
	 */
	c->state = next;
	c->wait_ns = (4096ull << (mra->service_timeout & 0x1F)) + c->timeout_ns;
	wait = c->wait_ns >= UINT64_MAX - 1 - now ? UINT64_MAX - 1 : now + c->wait_ns;
	uroce_ibcm_arm(c, wait);
	uroce_ibcm_emit(c, UROCE_IBCM_EV_MRA_RECEIVED, from, m);
}

static void rx_sidr_req(struct uroce_ibcm *cm, const struct uroce_ibcm_addr *from,
			const struct uroce_cm_mad *m)
{
	uint32_t id = m->u.sidr_req.request_id;
	struct uroce_ibcm_conn *c = uroce_ibcm_bucket(cm, IBCM_T_REMOTE, id);

	/* core/cm.c remote_sidr_table: (request ID, sender GID) being handled. */
	for (; c; c = c->hnext[IBCM_T_REMOTE]) {
		if (c->remote_id == id && c->state == UROCE_IBCM_SIDR_REQ_RCVD &&
		    !memcmp(c->addr.dgid, from->dgid, sizeof(from->dgid))) {
			ibcm_count(cm, UROCE_IBCM_C_RX_DUPLICATES);
			return;
		}
	}
	c = uroce_ibcm_conn_new(cm, UROCE_IBCM_SIDR_REQ_RCVD, NULL);
	if (!c)
		return;
	c->addr = *from;
	c->remote_id = id;
	c->tid = m->hdr.tid;
	uroce_ibcm_table_add(c, IBCM_T_REMOTE);
	uroce_ibcm_emit(c, UROCE_IBCM_EV_SIDR_REQ_RECEIVED, from, m);
}

static void rx_sidr_rep(struct uroce_ibcm *cm, const struct uroce_ibcm_addr *from,
			const struct uroce_cm_mad *m)
{
	struct uroce_ibcm_conn *c = uroce_ibcm_find_local(cm, m->u.sidr_rep.request_id);

	if (!c) {
		ibcm_count(cm, UROCE_IBCM_C_RX_UNKNOWN_ID);
		return;
	}
	if (c->state != UROCE_IBCM_SIDR_REQ_SENT) {
		ibcm_count(cm, UROCE_IBCM_C_RX_BAD_STATE);
		return;
	}
	uroce_ibcm_set_idle(c);
	uroce_ibcm_emit(c, UROCE_IBCM_EV_SIDR_REP_RECEIVED, from, m);
}

void uroce_ibcm_recv(struct uroce_ibcm *cm, const struct uroce_ibcm_addr *from, const uint8_t *mad,
		     size_t len, uint64_t now)
{
	struct uroce_cm_mad m;

	if (!cm)
		return;
	uroce_ibcm_enter(cm);
	ibcm_count(cm, UROCE_IBCM_C_RX_MADS);
	/* IBTA 13.4.2 common header: base version 1, class 7 (checked by the decoder), class
	 * version 2, method SEND; every CM message is a SEND. */
	if (!from || !mad || uroce_cm_mad_decode(&m, mad, len) != UROCE_MAD_LEN ||
	    m.hdr.base_version != 1 || m.hdr.class_version != 2 || m.hdr.method != 0x03) {
		ibcm_count(cm, UROCE_IBCM_C_RX_MALFORMED);
		goto out;
	}
	switch (m.hdr.attr_id) {
	case UROCE_CM_ATTR_REQ:
		rx_req(cm, from, &m, now);
		break;
	case UROCE_CM_ATTR_MRA:
		rx_mra(cm, from, &m, now);
		break;
	case UROCE_CM_ATTR_REJ:
		rx_rej(cm, from, &m, now);
		break;
	case UROCE_CM_ATTR_REP:
		rx_rep(cm, from, &m, now);
		break;
	case UROCE_CM_ATTR_RTU:
		rx_rtu(cm, from, &m);
		break;
	case UROCE_CM_ATTR_DREQ:
		rx_dreq(cm, from, &m, now);
		break;
	case UROCE_CM_ATTR_DREP:
		rx_drep(cm, from, &m, now);
		break;
	case UROCE_CM_ATTR_SIDR_REQ:
		rx_sidr_req(cm, from, &m);
		break;
	case UROCE_CM_ATTR_SIDR_REP:
		rx_sidr_rep(cm, from, &m);
		break;
	default: /* not reached: the decoder refuses attributes without a codec */
		ibcm_count(cm, UROCE_IBCM_C_RX_MALFORMED);
		break;
	}
out:
	uroce_ibcm_leave(cm);
}
