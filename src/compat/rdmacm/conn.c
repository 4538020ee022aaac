/* SPDX-License-Identifier: MIT */
/*
 * Connections: connect, accept, reject, establish, disconnect, the QP transitions rdma_cm makes
 * for the application, and the IB CM engine's events turned into rdma_cm events (core/cma.c
 * cma_ib_handler, cma_req_handler, cma_sidr_rep_handler; roce-reference.md 2.4, 2.5).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cm/cma.h"
#include "compat/rdmacm/addr.h"
#include "compat/rdmacm/rdmacm.h"
#include "host/config/gid.h"
#include "host/os/v4mapped.h"


#define CMA_CM_RESPONSE_TIMEOUT 20
#define CMA_CM_MRA_TIMEOUT	24
#define CMA_ACK_TIMEOUT		19 /* what Linux puts in a RoCE REQ (the captures) */
/* The RNR NAK timer a connected QP gets: 0 (655.36 ms), Linux ib_cm's cm_init_qp_rtr_attr value;
 * a responder with no receive posted asks the requester to wait that long before it retries. */
#define CMA_MIN_RNR_TIMER	0
#define CMA_IBOE_PKT_RATE	0  /* IB_RATE_PORT_CURRENT (cma_resolve_iboe_route) */
#define IB_SIDR_SUCCESS		0
#define IB_SIDR_UNSUPPORTED	1
#define IB_SIDR_REJECT		2

static uint32_t rand_psn(void)
{
	static uint32_t x;

	if (!x)
		x = (uint32_t)cma_now() | 1;
	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	return x & 0xFFFFFF;
}

/* Hand id's IB CM connection back to the engine, which sends what its state calls for. */
static void release_conn(struct cma_id *id)
{
	if (!id->conn)
		return;
	uroce_ibcm_conn_set_user(id->conn, NULL);
	uroce_ibcm_conn_destroy(id->conn, cma_now());
	id->conn = NULL;
}

void cma_id_drop_conn(struct cma_id *id)
{
	cma_will_disarm(id);
	release_conn(id);
}

void cma_close_all(void)
{
	/* The wills stay armed: the watchdog's copies back up these DREQs, which nobody will
	 * retry once the process is gone. A connection the peer is disconnecting gets its DREP
	 * (the kernel's cm_destroy_id in DREQ_RCVD), so that the peer's rdma_disconnect ends now
	 * rather than after its DREQ retries: qperf's server answers its client's DREQ only by
	 * exiting. */
	for (struct cma_id *i = cma_all_ids(); i; i = i->next_id) {
		enum uroce_ibcm_state st;

		if (!i->conn)
			continue;
		st = uroce_ibcm_conn_state(i->conn);
		if (st == UROCE_IBCM_ESTABLISHED || st == UROCE_IBCM_DREQ_RCVD)
			release_conn(i); /* sends the DREQ, or the DREP */
	}
}

static void addr_of(const struct cma_id *id, struct uroce_ibcm_addr *a)
{
	memset(a, 0, sizeof(*a));
	a->sgid_index = (uint8_t)id->gid_index;
	memcpy(a->dgid, id->dgid, 16);
	a->hop_limit = id->hop_limit ? id->hop_limit : 64;
	a->traffic_class = id->tos;
}

/* ---- QP attributes ------------------------------------------------------------------------ */

int cma_init_qp_attr(struct cma_id *id, struct ibv_qp_attr *a, int *mask)
{
	enum ibv_qp_state s = a->qp_state;

	memset(a, 0, sizeof(*a));
	a->qp_state = s;
	switch (s) {
	case IBV_QPS_INIT:
		a->pkey_index = 0;
		a->port_num = 1;
		*mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;
		if (id->id.qp_type == IBV_QPT_UD) {
			a->qkey = id->id.ps == RDMA_PS_UDP ? RDMA_UDP_QKEY : id->qkey;
			*mask |= IBV_QP_QKEY;
		} else {
			/* cm_init_qp_init_attr: remote write, plus read and atomics when this
			 * side accepts reads (responder resources). */
			a->qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
			if (id->responder_resources)
				a->qp_access_flags |= IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
			*mask |= IBV_QP_ACCESS_FLAGS;
		}
		return 0;
	case IBV_QPS_RTR:
		*mask = IBV_QP_STATE;
		if (id->id.qp_type == IBV_QPT_UD)
			return 0;
		if (!id->conn && id->state != CMA_ESTABLISHED)
			return -EINVAL;
		a->path_mtu = (enum ibv_mtu)id->mtu;
		a->dest_qp_num = id->remote_qpn;
		a->rq_psn = id->rq_psn;
		a->max_dest_rd_atomic = id->responder_resources;
		a->min_rnr_timer = CMA_MIN_RNR_TIMER;
		a->ah_attr.is_global = 1;
		a->ah_attr.port_num = 1;
		a->ah_attr.grh.sgid_index = (uint8_t)id->gid_index;
		a->ah_attr.grh.hop_limit = id->hop_limit;
		a->ah_attr.grh.traffic_class = id->tos;
		memcpy(a->ah_attr.grh.dgid.raw, id->dgid, 16);
		*mask |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
		if (id->id.qp_type == IBV_QPT_RC)
			*mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
		return 0;
	case IBV_QPS_RTS:
		*mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
		a->sq_psn = id->sq_psn;
		if (id->id.qp_type == IBV_QPT_UD) {
			a->sq_psn = 0;
			return 0;
		}
		if (id->id.qp_type == IBV_QPT_RC) {
			a->timeout = id->ack_timeout_set ? id->ack_timeout : CMA_ACK_TIMEOUT;
			a->retry_cnt = id->retry_count;
			a->rnr_retry = id->rnr_retry_count;
			a->max_rd_atomic = id->initiator_depth;
			*mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
				 IBV_QP_MAX_QP_RD_ATOMIC;
		}
		return 0;
	case IBV_QPS_ERR:
	case IBV_QPS_RESET:
		*mask = IBV_QP_STATE;
		return 0;
	case IBV_QPS_SQD:
	case IBV_QPS_SQE:
	case IBV_QPS_UNKNOWN:
		break;
	}
	return -EINVAL;
}

int cma_qp_modify(struct cma_id *id, enum ibv_qp_state s)
{
	struct ibv_qp_attr a = {.qp_state = s};
	int mask, err = cma_init_qp_attr(id, &a, &mask);

	if (err)
		return err;
	return -ibv_modify_qp(id->id.qp, &a, mask);
}

int cma_qp_to_rts(struct cma_id *id)
{
	int err;

	if (!id->id.qp)
		return 0;
	/* rdma-core first refreshes INIT (access flags now that the resources are known). */
	err = cma_qp_modify(id, IBV_QPS_INIT);
	if (!err)
		err = cma_qp_modify(id, IBV_QPS_RTR);
	if (!err)
		err = cma_qp_modify(id, IBV_QPS_RTS);
	return err;
}

int cma_qp_to_err(struct cma_id *id)
{
	return id->id.qp ? cma_qp_modify(id, IBV_QPS_ERR) : 0;
}

int rdma_init_qp_attr(struct rdma_cm_id *cid, struct ibv_qp_attr *qp_attr, int *qp_attr_mask)
{
	struct cma_id *id;
	int err;

	pthread_mutex_lock(&cma_lock);
	id = cma_id_find(cid);
	err = id && qp_attr && qp_attr_mask ? cma_init_qp_attr(id, qp_attr, qp_attr_mask) : -EINVAL;
	pthread_mutex_unlock(&cma_lock);
	return cma_err(err);
}

/* ---- active side ------------------------------------------------------------------------- */

static int clamp(int v, int max)
{
	return v > max ? max : v;
}

static int cma_hdr_of(const struct cma_id *id, uint8_t *p)
{
	const struct sockaddr *s = &id->id.route.addr.src_addr, *d = &id->id.route.addr.dst_addr;
	struct uroce_cma_hdr h = {.port = cma_sa_port(s)};

	if (s->sa_family == AF_INET) {
		h.ip_version = 4;
		h.src.ip4 = ntohl(((const struct sockaddr_in *)(const void *)s)->sin_addr.s_addr);
		h.dst.ip4 = ntohl(((const struct sockaddr_in *)(const void *)d)->sin_addr.s_addr);
	} else {
		h.ip_version = 6;
		memcpy(h.src.ip6, &((const struct sockaddr_in6 *)(const void *)s)->sin6_addr, 16);
		memcpy(h.dst.ip6, &((const struct sockaddr_in6 *)(const void *)d)->sin6_addr, 16);
	}
	return uroce_cma_hdr_encode(p, UROCE_CMA_HDR_LEN, &h);
}

/*
 * cma_get_roce_udp_flow_label: a RoCE v2 path's flow label is the IPv6 source's own, else
 * (source port * 31 + destination port) in 20 bits; RoCE v1 paths have none. A Linux passive
 * side takes it into its QP's address vector (NICs derive the UDP source port from it).
 */
static uint32_t cma_flow_label(const struct cma_id *id)
{
	const struct sockaddr *s = &id->id.route.addr.src_addr;
	uint32_t fl = 0;

	if (id->gid_type != IBV_GID_TYPE_ROCE_V2)
		return 0;
	if (s->sa_family == AF_INET6)
		fl = ntohl(((const struct sockaddr_in6 *)(const void *)s)->sin6_flowinfo) & 0xFFFFFu;
	if (!fl)
		fl = ((uint32_t)cma_sa_port(s) * 31 + cma_sa_port(&id->id.route.addr.dst_addr)) &
		     0xFFFFFu;
	return fl;
}

static int connect_ud(struct cma_id *id, struct rdma_conn_param *p)
{
	struct uroce_cm_sidr_req req;
	struct uroce_ibcm_timing t;
	struct uroce_ibcm_addr a;
	int err;

	if (p && p->private_data_len > UROCE_CM_SIDR_REQ_PRIV_LEN - UROCE_CMA_HDR_LEN)
		return -EINVAL;
	memset(&req, 0, sizeof(req));
	req.pkey = 0xFFFF;
	req.service_id =
		uroce_cma_service_id((uint16_t)id->id.ps, cma_sa_port(&id->id.route.addr.dst_addr));
	err = cma_hdr_of(id, req.private_data);
	if (err < 0)
		return err;
	if (p && p->private_data_len)
		memcpy(req.private_data + UROCE_CMA_HDR_LEN, p->private_data, p->private_data_len);
	cma_timing(&t);
	addr_of(id, &a);
	err = uroce_ibcm_send_sidr_req(id->dev->cm, &a, &req, &t, id, cma_now(), &id->conn);
	if (!err)
		id->state = CMA_CONNECT;
	return err;
}

static int connect_locked(struct cma_id *id, struct rdma_conn_param *p)
{
	struct rdma_conn_param dflt = {0};
	struct uroce_cm_req req;
	struct uroce_ibcm_timing t;
	struct uroce_ibcm_addr a;
	int err;

	if (id->state != CMA_ROUTE_RESOLVED)
		return -EINVAL;
	if (!id->dev->gsi_ready)
		return -ENODEV; /* the device's CM agent could not start (logged at open) */
	if (id->id.qp_type == IBV_QPT_UD)
		return connect_ud(id, p);
	if (!p) {
		/* rdma-core's defaults (ucma_copy_conn_param_to_kern): the device's limits and
		 * retries 7. */
		dflt.responder_resources = RDMA_MAX_RESP_RES;
		dflt.initiator_depth = RDMA_MAX_INIT_DEPTH;
		dflt.retry_count = 7;
		dflt.rnr_retry_count = 7;
		p = &dflt;
	}
	if (p->private_data_len > UROCE_CM_REQ_PRIV_LEN - UROCE_CMA_HDR_LEN)
		return -EINVAL;
	id->responder_resources = (uint8_t)clamp(p->responder_resources,
						 id->dev->attr.max_qp_rd_atom);
	id->initiator_depth = (uint8_t)clamp(p->initiator_depth, id->dev->attr.max_qp_init_rd_atom);
	id->retry_count = p->retry_count & 7;
	id->rnr_retry_count = p->rnr_retry_count & 7;
	id->rq_psn = rand_psn();
	memset(&req, 0, sizeof(req));
	req.service_id =
		uroce_cma_service_id((uint16_t)id->id.ps, cma_sa_port(&id->id.route.addr.dst_addr));
	req.local_qpn = id->id.qp ? id->id.qp->qp_num : p->qp_num;
	req.responder_resources = id->responder_resources;
	req.initiator_depth = id->initiator_depth;
	req.remote_cm_resp_timeout = CMA_CM_RESPONSE_TIMEOUT;
	req.transport_type = id->id.qp_type == IBV_QPT_UC ? UROCE_CM_TRANSPORT_UC
							  : UROCE_CM_TRANSPORT_RC;
	req.e2e_flow_control = p->flow_control ? 1 : 0;
	req.starting_psn = id->rq_psn;
	req.local_cm_resp_timeout = CMA_CM_RESPONSE_TIMEOUT;
	req.retry_count = id->retry_count;
	req.pkey = 0xFFFF;
	req.path_mtu = id->mtu;
	req.rnr_retry_count = id->rnr_retry_count;
	cma_timing(&t);
	req.max_cm_retries = t.max_retries;
	req.srq = (id->id.qp ? id->id.qp->srq != NULL : p->srq) ? 1 : 0;
	req.primary.local_lid = id->hop_limit > 1 ? 0xFFFF : 0;
	req.primary.remote_lid = id->hop_limit > 1 ? 0xFFFF : 0;
	memcpy(req.primary.local_gid, id->sgid, 16);
	memcpy(req.primary.remote_gid, id->dgid, 16);
	req.primary.flow_label = cma_flow_label(id);
	req.primary.packet_rate = CMA_IBOE_PKT_RATE;
	req.primary.traffic_class = id->tos;
	req.primary.hop_limit = id->hop_limit;
	req.primary.subnet_local = id->hop_limit <= 1;
	req.primary.local_ack_timeout = id->ack_timeout_set ? id->ack_timeout : CMA_ACK_TIMEOUT;
	err = cma_hdr_of(id, req.private_data);
	if (err < 0)
		return err;
	if (p->private_data_len)
		memcpy(req.private_data + UROCE_CMA_HDR_LEN, p->private_data, p->private_data_len);
	addr_of(id, &a);
	err = uroce_ibcm_send_req(id->dev->cm, &a, &req, &t, id, cma_now(), &id->conn);
	if (!err)
		id->state = CMA_CONNECT;
	return err;
}

int rdma_connect(struct rdma_cm_id *cid, struct rdma_conn_param *conn_param)
{
	struct cma_id *id;
	int err;

	pthread_mutex_lock(&cma_lock);
	id = cma_id_find(cid);
	if (!id) {
		pthread_mutex_unlock(&cma_lock);
		return cma_err(-EINVAL);
	}
	err = connect_locked(id, conn_param);
	cma_will_sync(id); /* REQ_SENT: a REJ */
	pthread_mutex_unlock(&cma_lock);
	cma_kick();
	if (err)
		return cma_err(err);
	return id->sync ? cma_err(cma_sync_wait(id)) : 0;
}

int rdma_establish(struct rdma_cm_id *cid)
{
	struct cma_id *id;
	int err = -EINVAL;

	pthread_mutex_lock(&cma_lock);
	id = cma_id_find(cid);
	if (id && id->conn && uroce_ibcm_conn_state(id->conn) == UROCE_IBCM_REP_RCVD) {
		err = uroce_ibcm_send_rtu(id->conn, NULL, 0, cma_now());
		if (!err) {
			id->state = CMA_ESTABLISHED;
			cma_will_sync(id);
		}
	}
	pthread_mutex_unlock(&cma_lock);
	return cma_err(err);
}

/* ---- passive side ------------------------------------------------------------------------ */

static int accept_ud(struct cma_id *id, struct rdma_conn_param *p)
{
	struct uroce_cm_sidr_rep rep;
	int err;

	if (p && p->private_data_len > UROCE_CM_SIDR_REP_PRIV_LEN)
		return -EINVAL;
	memset(&rep, 0, sizeof(rep));
	rep.status = IB_SIDR_SUCCESS;
	rep.qpn = id->id.qp ? id->id.qp->qp_num : (p ? p->qp_num : 0);
	rep.qkey = id->id.ps == RDMA_PS_UDP ? RDMA_UDP_QKEY : id->qkey;
	rep.service_id = uroce_cma_service_id((uint16_t)id->id.ps,
					      cma_sa_port(&id->id.route.addr.src_addr));
	if (p && p->private_data_len)
		memcpy(rep.private_data, p->private_data, p->private_data_len);
	err = uroce_ibcm_send_sidr_rep(id->conn, &rep, cma_now());
	cma_id_drop_conn(id);
	id->state = CMA_ESTABLISHED;
	return err;
}

static void uncount(struct cma_id *id)
{
	if (id->counted && id->listener) {
		id->listener->pending--;
		id->counted = false;
	}
}

static int accept_locked(struct cma_id *id, struct rdma_conn_param *p)
{
	struct uroce_cm_rep rep;
	struct uroce_ibcm_timing t;
	uint8_t rep_rnr_retry = 7;
	int err;

	if (!id->conn || id->state != CMA_CONNECT || !id->listener)
		return -EINVAL;
	uncount(id);
	if (id->id.qp_type == IBV_QPT_UD)
		return accept_ud(id, p);
	if (p) {
		if (p->private_data_len > UROCE_CM_REP_PRIV_LEN)
			return -EINVAL;
		id->responder_resources =
			(uint8_t)clamp(p->responder_resources, id->dev->attr.max_qp_rd_atom);
		id->initiator_depth =
			(uint8_t)clamp(p->initiator_depth, id->dev->attr.max_qp_init_rd_atom);
		rep_rnr_retry = p->rnr_retry_count & 7;
	} else {
		/* rdma-core's defaults: what the peer asked, within the device's limits. */
		id->responder_resources =
			(uint8_t)clamp(id->responder_resources, id->dev->attr.max_qp_rd_atom);
		id->initiator_depth =
			(uint8_t)clamp(id->initiator_depth, id->dev->attr.max_qp_init_rd_atom);
	}
	/* The RNR retry count a REQ or REP carries is how often its sender's peer resends after
	 * an RNR NAK from the sender: this QP keeps the REQ's (cm_req_handler), the REP asks the
	 * active side's QP for ours. The REP's Starting PSN is the rq_psn chosen when the REQ
	 * came (an application's own QP may have gone to RTR with it already). */
	err = cma_qp_to_rts(id);
	if (err)
		return err;
	memset(&rep, 0, sizeof(rep));
	rep.local_qpn = id->id.qp ? id->id.qp->qp_num : (p ? p->qp_num : 0);
	rep.starting_psn = id->rq_psn;
	rep.responder_resources = id->responder_resources;
	rep.initiator_depth = id->initiator_depth;
	rep.target_ack_delay = 15;
	rep.e2e_flow_control = p && p->flow_control ? 1 : 0;
	rep.rnr_retry_count = rep_rnr_retry;
	rep.srq = (id->id.qp ? id->id.qp->srq != NULL : (p && p->srq)) ? 1 : 0;
	if (p && p->private_data_len)
		memcpy(rep.private_data, p->private_data, p->private_data_len);
	cma_timing(&t);
	return uroce_ibcm_send_rep(id->conn, &rep, &t, cma_now());
}

int rdma_accept(struct rdma_cm_id *cid, struct rdma_conn_param *conn_param)
{
	struct cma_id *id;
	bool wait;
	int err;

	pthread_mutex_lock(&cma_lock);
	id = cma_id_find(cid);
	if (!id) {
		pthread_mutex_unlock(&cma_lock);
		return cma_err(-EINVAL);
	}
	err = accept_locked(id, conn_param);
	cma_will_sync(id); /* REP_SENT: a REJ */
	wait = id->sync && id->id.qp_type != IBV_QPT_UD;
	pthread_mutex_unlock(&cma_lock);
	cma_kick();
	if (err)
		return cma_err(err);
	return wait ? cma_err(cma_sync_wait(id)) : 0;
}

static int reject_locked(struct cma_id *id, const void *pdata, uint8_t len)
{
	int err;

	if (!id->conn || id->state != CMA_CONNECT)
		return -EINVAL;
	uncount(id);
	if (id->id.qp_type == IBV_QPT_UD) {
		struct uroce_cm_sidr_rep rep;

		if (len > UROCE_CM_SIDR_REP_PRIV_LEN)
			return -EINVAL;
		memset(&rep, 0, sizeof(rep));
		rep.status = IB_SIDR_REJECT;
		if (len)
			memcpy(rep.private_data, pdata, len);
		err = uroce_ibcm_send_sidr_rep(id->conn, &rep, cma_now());
	} else {
		if (len > UROCE_CM_REJ_PRIV_LEN)
			return -EINVAL;
		err = uroce_ibcm_send_rej(id->conn, UROCE_CM_REJ_CONSUMER_DEFINED, NULL, 0, pdata,
					  len, cma_now());
	}
	cma_id_drop_conn(id);
	id->state = CMA_DISCONNECT;
	return err;
}

int rdma_reject(struct rdma_cm_id *cid, const void *private_data, uint8_t private_data_len)
{
	struct cma_id *id;
	int err;

	pthread_mutex_lock(&cma_lock);
	id = cma_id_find(cid);
	if (!id || (private_data_len && !private_data))
		err = -EINVAL;
	else
		err = reject_locked(id, private_data, private_data_len);
	if (!err && id->dev)
		cma_dev_flush(id->dev);
	pthread_mutex_unlock(&cma_lock);
	cma_kick();
	return cma_err(err);
}

int rdma_reject_ece(struct rdma_cm_id *cid, const void *private_data, uint8_t private_data_len)
{
	return rdma_reject(cid, private_data, private_data_len);
}

int rdma_notify(struct rdma_cm_id *cid, enum ibv_event_type event)
{
	struct cma_id *id;
	int err = 0;

	pthread_mutex_lock(&cma_lock);
	id = cma_id_find(cid);
	if (!id || event != IBV_EVENT_COMM_EST)
		err = -EINVAL;
	else if (id->conn) {
		err = uroce_ibcm_establish(id->conn);
		cma_will_sync(id);
	}
	pthread_mutex_unlock(&cma_lock);
	return cma_err(err);
}

int rdma_disconnect(struct rdma_cm_id *cid)
{
	struct cma_id *id;
	struct uroce_ibcm_timing t;
	int err = 0;

	pthread_mutex_lock(&cma_lock);
	id = cma_id_find(cid);
	if (!id) {
		pthread_mutex_unlock(&cma_lock);
		return cma_err(-EINVAL);
	}
	cma_qp_to_err(id);
	if (!id->conn) {
		err = id->state == CMA_DISCONNECT || id->state == CMA_ESTABLISHED ? 0 : -EINVAL;
		goto out;
	}
	cma_timing(&t);
	switch (uroce_ibcm_conn_state(id->conn)) {
	case UROCE_IBCM_REP_SENT:
	case UROCE_IBCM_MRA_REP_RCVD:
		/* Accepted, and the RTU not handled yet: the CM thread may not have read it while
		 * the application already got data from the peer (the RTU goes before the active
		 * side's first data, but through another thread). The connection is established
		 * (the kernel's ib_cm_notify COMM_EST, which the data would raise): report it and
		 * disconnect it, rather than leave the peer connected. */
		if (id->state != CMA_CONNECT || !id->passive) {
			err = -EINVAL;
			break;
		}
		err = uroce_ibcm_establish(id->conn);
		if (err)
			break;
		id->state = CMA_ESTABLISHED;
		cma_event_post(id, NULL, RDMA_CM_EVENT_ESTABLISHED, 0, NULL, 0, NULL);
		err = uroce_ibcm_send_dreq(id->conn, NULL, 0, &t, cma_now());
		break;
	case UROCE_IBCM_ESTABLISHED:
		err = uroce_ibcm_send_dreq(id->conn, NULL, 0, &t, cma_now());
		break;
	case UROCE_IBCM_DREQ_RCVD:
		err = uroce_ibcm_send_drep(id->conn, NULL, 0, cma_now());
		break;
	case UROCE_IBCM_DREQ_SENT:
	case UROCE_IBCM_TIMEWAIT:
		break;
	case UROCE_IBCM_IDLE:
	case UROCE_IBCM_REQ_SENT:
	case UROCE_IBCM_REQ_RCVD:
	case UROCE_IBCM_MRA_REQ_SENT:
	case UROCE_IBCM_MRA_REQ_RCVD:
	case UROCE_IBCM_REP_RCVD:
	case UROCE_IBCM_MRA_REP_SENT:
	case UROCE_IBCM_SIDR_REQ_SENT:
	case UROCE_IBCM_SIDR_REQ_RCVD:
		err = -EINVAL;
		break;
	}
	cma_will_sync(id); /* DREQ_SENT or TIMEWAIT: none */
out:
	if (!err && id->dev)
		cma_dev_flush(id->dev); /* the DREQ or DREP, before the caller may exit */
	pthread_mutex_unlock(&cma_lock);
	cma_kick();
	return cma_err(err);
}

/* ---- IB CM events -> rdma_cm events -------------------------------------------------------- */

static struct cma_id *find_listener(struct cma_dev *d, uint64_t sid, const struct uroce_cma_hdr *h,
				    int family)
{
	uint16_t ps, port;

	if (uroce_cma_service_id_split(sid, &ps, &port))
		return NULL;
	for (struct cma_id *i = cma_all_ids(); i; i = i->next_id) {
		const struct sockaddr *s = &i->id.route.addr.src_addr;

		if (i->state != CMA_LISTEN || (uint16_t)i->id.ps != ps || cma_sa_port(s) != port)
			continue;
		if (i->dev && i->dev != d)
			continue;
		if (!cma_sa_wildcard(s)) {
			uint8_t a[16], b[16];

			cma_gid_of_sa(s, a);
			if (h->ip_version == 4) {
				uint32_t v = htonl(h->dst.ip4);

				uroce_gid_from_v4(b, &v);
			} else {
				memcpy(b, h->dst.ip6, 16);
			}
			if (memcmp(a, b, 16))
				continue;
		} else if (i->afonly && s->sa_family != family) {
			continue;
		}
		return i;
	}
	return NULL;
}

static void set_addrs(struct cma_id *id, const struct uroce_cma_hdr *h, uint16_t lport)
{
	struct rdma_addr *a = &id->id.route.addr;

	memset(&a->src_storage, 0, sizeof(a->src_storage));
	memset(&a->dst_storage, 0, sizeof(a->dst_storage));
	if (h->ip_version == 4) {
		a->src_sin.sin_family = AF_INET;
		a->src_sin.sin_addr.s_addr = htonl(h->dst.ip4);
		a->src_sin.sin_port = htons(lport);
		a->dst_sin.sin_family = AF_INET;
		a->dst_sin.sin_addr.s_addr = htonl(h->src.ip4);
		a->dst_sin.sin_port = htons(h->port);
	} else {
		a->src_sin6.sin6_family = AF_INET6;
		memcpy(&a->src_sin6.sin6_addr, h->dst.ip6, 16);
		a->src_sin6.sin6_port = htons(lport);
		a->dst_sin6.sin6_family = AF_INET6;
		memcpy(&a->dst_sin6.sin6_addr, h->src.ip6, 16);
		a->dst_sin6.sin6_port = htons(h->port);
	}
}

/* A REQ or SIDR_REQ: find the listener, make the passive id, report CONNECT_REQUEST. */
static void on_request(struct cma_dev *d, const struct uroce_ibcm_event *ev, bool sidr)
{
	const uint8_t *priv = sidr ? ev->msg->u.sidr_req.private_data : ev->msg->u.req.private_data;
	uint64_t sid = sidr ? ev->msg->u.sidr_req.service_id : ev->msg->u.req.service_id;
	size_t plen = sidr ? UROCE_CM_SIDR_REQ_PRIV_LEN : UROCE_CM_REQ_PRIV_LEN;
	struct uroce_cma_hdr h;
	struct cma_id *l, *id;
	struct cma_event *e;
	uint16_t lport;

	if (uroce_cma_hdr_decode(&h, priv, plen) < 0) {
		uroce_ibcm_conn_destroy(ev->conn, cma_now()); /* not rdma_cm's: as the kernel */
		return;
	}
	l = find_listener(d, sid, &h, h.ip_version == 4 ? AF_INET : AF_INET6);
	if (!l || l->pending >= l->backlog) {
		if (sidr) {
			struct uroce_cm_sidr_rep rep;

			memset(&rep, 0, sizeof(rep));
			rep.status = l ? IB_SIDR_REJECT : IB_SIDR_UNSUPPORTED;
			uroce_ibcm_send_sidr_rep(ev->conn, &rep, cma_now());
		} else {
			uroce_ibcm_send_rej(ev->conn,
					    l ? UROCE_CM_REJ_CONSUMER_DEFINED
					      : UROCE_CM_REJ_INVALID_SERVICE_ID,
					    NULL, 0, NULL, 0, cma_now());
		}
		uroce_ibcm_conn_destroy(ev->conn, cma_now());
		return;
	}
	if (cma_id_new_passive(l, &id)) {
		uroce_ibcm_conn_destroy(ev->conn, cma_now());
		return;
	}
	lport = cma_sa_port(&l->id.route.addr.src_addr);
	id->dev = d;
	id->id.verbs = d->verbs;
	id->id.pd = d->pd;
	id->id.port_num = 1;
	id->conn = ev->conn;
	uroce_ibcm_conn_set_user(ev->conn, id);
	set_addrs(id, &h, lport);
	id->gid_index = ev->from->sgid_index;
	memcpy(id->dgid, ev->from->dgid, 16);
	cma_gid_of_sa(&id->id.route.addr.src_addr, id->sgid);
	memcpy(id->id.route.addr.addr.ibaddr.sgid.raw, id->sgid, 16);
	memcpy(id->id.route.addr.addr.ibaddr.dgid.raw, id->dgid, 16);
	id->id.route.addr.addr.ibaddr.pkey = htons(0xFFFF);
	{
		struct ibv_gid_entry ge;

		id->gid_type = ibv_query_gid_ex(d->verbs, 1, (uint32_t)id->gid_index, &ge, 0) == 0
				       ? (int)ge.gid_type
				       : IBV_GID_TYPE_ROCE_V2;
	}
	if (!sidr) {
		const struct uroce_cm_req *r = &ev->msg->u.req;

		id->hop_limit = r->primary.hop_limit ? r->primary.hop_limit : 64;
		if (!id->tos_set)
			id->tos = r->primary.traffic_class;
		id->remote_qpn = r->local_qpn;
		id->sq_psn = r->starting_psn;
		/* Ours, chosen now and not at accept: an application that owns its QP takes RTR's
		 * rq_psn from rdma_init_qp_attr before rdma_accept, and the REP must carry the same
		 * (the kernel's id seq_num, which its rdma_init_qp_attr always gives for RTR). */
		id->rq_psn = rand_psn();
		id->mtu = r->path_mtu < d->active_mtu ? r->path_mtu : d->active_mtu;
		/* cm_req_handler: this side's resources are the peer's, crossed. */
		id->responder_resources = r->initiator_depth;
		id->initiator_depth = r->responder_resources;
		id->retry_count = r->retry_count;
		id->rnr_retry_count = r->rnr_retry_count;
		if (!id->ack_timeout_set)
			id->ack_timeout = r->primary.local_ack_timeout;
		id->ack_timeout_set = true;
	} else {
		id->hop_limit = 64;
		id->mtu = d->active_mtu;
	}
	cma_fill_path(id);
	l->pending++;
	id->counted = true;
	/* cma_req_handler: an MRA (CMA_CM_MRA_SETTING: delayed, service timeout 24, about 69 s)
	 * kept for a repeated REQ, so a client whose server application is slow to accept waits
	 * instead of timing out. */
	if (!sidr)
		uroce_ibcm_send_mra(ev->conn, UROCE_IBCM_MRA_FLAG_DELAY | CMA_CM_MRA_TIMEOUT, NULL, 0,
				    cma_now());
	if (cma_event_post(id, l, RDMA_CM_EVENT_CONNECT_REQUEST, 0, priv + UROCE_CMA_HDR_LEN,
			   plen - UROCE_CMA_HDR_LEN, &e) == 0 &&
	    e) {
		/* On the listener's channel, counted against the listener (chan.c). */
		if (!sidr) {
			const struct uroce_cm_req *r = &ev->msg->u.req;

			e->ev.param.conn.responder_resources = r->initiator_depth;
			e->ev.param.conn.initiator_depth = r->responder_resources;
			e->ev.param.conn.flow_control = r->e2e_flow_control;
			e->ev.param.conn.retry_count = r->retry_count;
			e->ev.param.conn.rnr_retry_count = r->rnr_retry_count;
			e->ev.param.conn.srq = r->srq;
			e->ev.param.conn.qp_num = r->local_qpn;
		} else {
			struct rdma_ud_param *u = &e->ev.param.ud;

			u->private_data = e->pdata;
			u->private_data_len = (uint8_t)(plen - UROCE_CMA_HDR_LEN);
		}
	}
}

static void on_rep(struct cma_id *id, const struct uroce_cm_rep *r)
{
	struct cma_event *e = NULL;
	int err;

	id->remote_qpn = r->local_qpn;
	id->sq_psn = r->starting_psn;
	id->rnr_retry_count = r->rnr_retry_count; /* cm_rep_handler: the QP retries as asked */
	/* cm_rep_handler: the resources cross over. */
	id->initiator_depth = r->responder_resources < id->initiator_depth ? r->responder_resources
									  : id->initiator_depth;
	id->responder_resources = r->initiator_depth < id->responder_resources
					  ? r->initiator_depth
					  : id->responder_resources;
	if (!id->id.qp) {
		cma_event_post(id, NULL, RDMA_CM_EVENT_CONNECT_RESPONSE, 0, r->private_data,
			       UROCE_CM_REP_PRIV_LEN, &e);
	} else {
		err = cma_qp_to_rts(id);
		if (err) {
			uroce_ibcm_send_rej(id->conn, UROCE_CM_REJ_CONSUMER_DEFINED, NULL, 0, NULL, 0,
					    cma_now());
			cma_id_drop_conn(id);
			id->state = CMA_DISCONNECT;
			cma_event_post(id, NULL, RDMA_CM_EVENT_CONNECT_ERROR, err, NULL, 0, NULL);
			return;
		}
		uroce_ibcm_send_rtu(id->conn, NULL, 0, cma_now());
		id->state = CMA_ESTABLISHED;
		cma_event_post(id, NULL, RDMA_CM_EVENT_ESTABLISHED, 0, r->private_data,
			       UROCE_CM_REP_PRIV_LEN, &e);
	}
	if (e) {
		e->ev.param.conn.responder_resources = r->initiator_depth;
		e->ev.param.conn.initiator_depth = r->responder_resources;
		e->ev.param.conn.flow_control = r->e2e_flow_control;
		e->ev.param.conn.rnr_retry_count = r->rnr_retry_count;
		e->ev.param.conn.srq = r->srq;
		e->ev.param.conn.qp_num = r->local_qpn;
	}
}

static void on_sidr_rep(struct cma_id *id, const struct uroce_ibcm_event *ev)
{
	const struct uroce_cm_sidr_rep *r = &ev->msg->u.sidr_rep;
	struct cma_event *e = NULL;

	cma_id_drop_conn(id);
	if (r->status != IB_SIDR_SUCCESS) {
		id->state = CMA_ROUTE_RESOLVED;
		cma_event_post(id, NULL, RDMA_CM_EVENT_UNREACHABLE, r->status, r->private_data,
			       UROCE_CM_SIDR_REP_PRIV_LEN, NULL);
		return;
	}
	id->state = CMA_ESTABLISHED;
	id->remote_qpn = r->qpn;
	id->qkey = r->qkey;
	if (cma_event_post(id, NULL, RDMA_CM_EVENT_ESTABLISHED, 0, r->private_data,
			   UROCE_CM_SIDR_REP_PRIV_LEN, &e) == 0 &&
	    e) {
		struct rdma_ud_param *u = &e->ev.param.ud;

		u->private_data = e->pdata;
		u->private_data_len = UROCE_CM_SIDR_REP_PRIV_LEN;
		memset(&u->ah_attr, 0, sizeof(u->ah_attr));
		u->ah_attr.is_global = 1;
		u->ah_attr.port_num = 1;
		u->ah_attr.grh.sgid_index = (uint8_t)id->gid_index;
		u->ah_attr.grh.hop_limit = id->hop_limit;
		u->ah_attr.grh.traffic_class = id->tos;
		memcpy(u->ah_attr.grh.dgid.raw, id->dgid, 16);
		u->qp_num = r->qpn;
		u->qkey = r->qkey;
	}
}

/* DREQ received, DREP received or DREQ timed out: DISCONNECTED once (cma_ib_handler). */
static void on_disconnect(struct cma_id *id, int status)
{
	if (id->state != CMA_ESTABLISHED && id->state != CMA_CONNECT)
		return;
	id->state = CMA_DISCONNECT;
	cma_event_post(id, NULL, RDMA_CM_EVENT_DISCONNECTED, status, NULL, 0, NULL);
}

void cma_on_ibcm_event(void *arg, const struct uroce_ibcm_event *ev)
{
	struct cma_dev *d = arg;
	struct cma_id *id = ev->conn ? uroce_ibcm_conn_user(ev->conn) : NULL;

	if (ev->type == UROCE_IBCM_EV_REQ_RECEIVED || ev->type == UROCE_IBCM_EV_SIDR_REQ_RECEIVED) {
		on_request(d, ev, ev->type == UROCE_IBCM_EV_SIDR_REQ_RECEIVED);
		/* The new passive id (unless it was rejected at once): a REJ (SIDR_REP) until the
		 * application answers. The conn's memory lasts until this call returns. */
		id = uroce_ibcm_conn_user(ev->conn);
		if (id)
			cma_will_sync(id);
		return;
	}
	if (!id) {
		/* Nobody holds the connection any more: finish what the kernel would. */
		if (ev->type == UROCE_IBCM_EV_DREQ_RECEIVED)
			uroce_ibcm_send_drep(ev->conn, NULL, 0, cma_now());
		else if (ev->type == UROCE_IBCM_EV_REP_RECEIVED)
			uroce_ibcm_send_rej(ev->conn, UROCE_CM_REJ_CONSUMER_DEFINED, NULL, 0, NULL, 0,
					    cma_now());
		return;
	}
	switch (ev->type) {
	case UROCE_IBCM_EV_REQ_RECEIVED: /* handled above */
	case UROCE_IBCM_EV_SIDR_REQ_RECEIVED:
	case UROCE_IBCM_EV_MRA_RECEIVED:
		break;
	case UROCE_IBCM_EV_REP_RECEIVED:
		on_rep(id, &ev->msg->u.rep);
		break;
	case UROCE_IBCM_EV_RTU_RECEIVED:
		if (id->state == CMA_CONNECT) {
			id->state = CMA_ESTABLISHED;
			cma_event_post(id, NULL, RDMA_CM_EVENT_ESTABLISHED, 0,
				       ev->msg->u.rtu.private_data, UROCE_CM_RTU_PRIV_LEN, NULL);
		}
		break;
	case UROCE_IBCM_EV_REJ_RECEIVED:
		cma_qp_to_err(id);
		cma_id_drop_conn(id);
		id->state = CMA_DISCONNECT;
		cma_event_post(id, NULL, RDMA_CM_EVENT_REJECTED, ev->msg->u.rej.reason,
			       ev->msg->u.rej.private_data, UROCE_CM_REJ_PRIV_LEN, NULL);
		break;
	case UROCE_IBCM_EV_REQ_ERROR:
	case UROCE_IBCM_EV_REP_ERROR:
	case UROCE_IBCM_EV_SIDR_REQ_ERROR:
		cma_qp_to_err(id);
		cma_id_drop_conn(id);
		id->state = CMA_DISCONNECT;
		cma_event_post(id, NULL, RDMA_CM_EVENT_UNREACHABLE, -ETIMEDOUT, NULL, 0, NULL);
		break;
	case UROCE_IBCM_EV_DREQ_RECEIVED:
		on_disconnect(id, 0);
		break;
	case UROCE_IBCM_EV_DREP_RECEIVED:
		on_disconnect(id, 0);
		break;
	case UROCE_IBCM_EV_DREQ_ERROR:
		on_disconnect(id, -ETIMEDOUT);
		break;
	case UROCE_IBCM_EV_TIMEWAIT_EXIT:
		cma_id_drop_conn(id);
		cma_event_post(id, NULL, RDMA_CM_EVENT_TIMEWAIT_EXIT, 0, NULL, 0, NULL);
		break;
	case UROCE_IBCM_EV_SIDR_REP_RECEIVED:
		on_sidr_rep(id, ev);
		break;
	}
	/* Every event may have moved the conn: the will follows (a DREP after a DREQ, none after
	 * time-wait, a REJ while a REP waits for the application's rdma_establish). */
	cma_will_sync(id);
}
