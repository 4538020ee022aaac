/* SPDX-License-Identifier: MIT */
/*
 * QPs, SRQs and endpoints on ids (librdmacm/cma.c rdma_create_qp_ex, rdma_create_ep,
 * rdma_get_request): the verbs objects rdma_cm makes for the application, and the QP moved to
 * INIT (RC, UC) or to RTS (UD) as rdma-core does.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/rdma_verbs.h>

#include "compat/rdmacm/addr.h"
#include "compat/rdmacm/rdmacm.h"

static void destroy_cqs(struct rdma_cm_id *id)
{
	if (id->recv_cq && id->recv_cq != id->send_cq)
		ibv_destroy_cq(id->recv_cq);
	if (id->send_cq)
		ibv_destroy_cq(id->send_cq);
	if (id->recv_cq_channel && id->recv_cq_channel != id->send_cq_channel)
		ibv_destroy_comp_channel(id->recv_cq_channel);
	if (id->send_cq_channel)
		ibv_destroy_comp_channel(id->send_cq_channel);
	id->send_cq = id->recv_cq = NULL;
	id->send_cq_channel = id->recv_cq_channel = NULL;
}

/* ucma_create_cqs: a completion channel and a CQ for each direction that has none. */
static int create_cqs(struct rdma_cm_id *id, uint32_t send_size, uint32_t recv_size)
{
	if (recv_size && !id->recv_cq) {
		id->recv_cq_channel = ibv_create_comp_channel(id->verbs);
		if (!id->recv_cq_channel)
			goto err;
		id->recv_cq = ibv_create_cq(id->verbs, (int)recv_size, id, id->recv_cq_channel, 0);
		if (!id->recv_cq)
			goto err;
	}
	if (send_size && !id->send_cq) {
		id->send_cq_channel = ibv_create_comp_channel(id->verbs);
		if (!id->send_cq_channel)
			goto err;
		id->send_cq = ibv_create_cq(id->verbs, (int)send_size, id, id->send_cq_channel, 0);
		if (!id->send_cq)
			goto err;
	}
	return 0;
err:
	destroy_cqs(id);
	return -ENOMEM;
}

static struct ibv_pd *default_pd(struct rdma_cm_id *cid)
{
	struct cma_dev *d = cma_dev_of_verbs(cid->verbs);

	return d ? d->pd : NULL;
}

int rdma_create_qp_ex(struct rdma_cm_id *cid, struct ibv_qp_init_attr_ex *attr)
{
	struct cma_id *id;
	struct ibv_qp_init_attr a;
	struct ibv_pd *pd;
	struct ibv_qp *qp;
	bool made_cqs = false;
	int err;

	if (cma_id_check(cid) || !attr || !cid->verbs || cid->qp)
		return cma_err(-EINVAL);
	if (attr->comp_mask & ~(uint32_t)IBV_QP_INIT_ATTR_PD)
		return cma_err(-EOPNOTSUPP);
	id = cma_id_of(cid);
	pd = attr->pd ? attr->pd : (cid->pd ? cid->pd : default_pd(cid));
	if (!pd || pd->context != cid->verbs)
		return cma_err(-EINVAL);
	if (!attr->send_cq || !attr->recv_cq) {
		err = create_cqs(cid, attr->send_cq ? 0 : attr->cap.max_send_wr ? attr->cap.max_send_wr : 1,
				 attr->recv_cq ? 0 : attr->cap.max_recv_wr ? attr->cap.max_recv_wr : 1);
		if (err)
			return cma_err(err);
		made_cqs = true;
		if (!attr->send_cq)
			attr->send_cq = cid->send_cq;
		if (!attr->recv_cq)
			attr->recv_cq = cid->recv_cq;
	}
	memset(&a, 0, sizeof(a));
	a.qp_context = attr->qp_context;
	a.send_cq = attr->send_cq;
	a.recv_cq = attr->recv_cq;
	a.srq = attr->srq ? attr->srq : cid->srq;
	a.cap = attr->cap;
	a.qp_type = attr->qp_type;
	a.sq_sig_all = attr->sq_sig_all;
	qp = ibv_create_qp(pd, &a);
	if (!qp) {
		err = -errno;
		goto err_cq;
	}
	attr->cap = a.cap;
	cid->qp = qp;
	cid->pd = pd; /* as librdmacm: id->pd is the QP's PD; rdma_verbs.h registers on it */
	pthread_mutex_lock(&cma_lock);
	id->own_cqs = made_cqs;
	/* ucma_init_conn_qp (INIT) / ucma_init_ud_qp (INIT, RTR, RTS) */
	err = attr->qp_type == IBV_QPT_UD ? cma_qp_to_rts(id) : cma_qp_modify(id, IBV_QPS_INIT);
	pthread_mutex_unlock(&cma_lock);
	if (err) {
		ibv_destroy_qp(qp);
		cid->qp = NULL;
		goto err_cq;
	}
	return 0;
err_cq:
	if (made_cqs)
		destroy_cqs(cid);
	return cma_err(err);
}

int rdma_create_qp(struct rdma_cm_id *id, struct ibv_pd *pd, struct ibv_qp_init_attr *qp_init_attr)
{
	struct ibv_qp_init_attr_ex ex;
	int ret;

	if (!qp_init_attr)
		return cma_err(-EINVAL);
	memset(&ex, 0, sizeof(ex));
	memcpy(&ex, qp_init_attr, sizeof(*qp_init_attr));
	ex.comp_mask = IBV_QP_INIT_ATTR_PD;
	ex.pd = pd;
	ret = rdma_create_qp_ex(id, &ex);
	if (!ret) {
		qp_init_attr->cap = ex.cap;
		qp_init_attr->send_cq = ex.send_cq;
		qp_init_attr->recv_cq = ex.recv_cq;
	}
	return ret;
}

void rdma_destroy_qp(struct rdma_cm_id *cid)
{
	struct cma_id *id = cma_id_of(cid);

	if (cma_id_check(cid) || !cid->qp)
		return;
	ibv_destroy_qp(cid->qp);
	cid->qp = NULL;
	if (id->own_cqs) {
		destroy_cqs(cid);
		id->own_cqs = false;
	}
}

int rdma_create_srq_ex(struct rdma_cm_id *cid, struct ibv_srq_init_attr_ex *attr)
{
	struct ibv_srq_init_attr a;
	struct ibv_pd *pd;
	int err;

	if (cma_id_check(cid) || !attr || !cid->verbs)
		return cma_err(-EINVAL);
	if (attr->srq_type != IBV_SRQT_BASIC && (attr->comp_mask & IBV_SRQ_INIT_ATTR_TYPE))
		return cma_err(-EOPNOTSUPP);
	pd = (attr->comp_mask & IBV_SRQ_INIT_ATTR_PD) && attr->pd ? attr->pd
			: (cid->pd ? cid->pd : default_pd(cid));
	if (!cid->recv_cq) {
		err = create_cqs(cid, 0, attr->attr.max_wr ? attr->attr.max_wr : 1);
		if (err)
			return cma_err(err);
		cma_id_of(cid)->own_cqs = true;
	}
	memset(&a, 0, sizeof(a));
	a.srq_context = attr->srq_context;
	a.attr = attr->attr;
	cid->srq = ibv_create_srq(pd, &a);
	if (!cid->srq)
		return -1;
	attr->attr = a.attr;
	return 0;
}

int rdma_create_srq(struct rdma_cm_id *id, struct ibv_pd *pd, struct ibv_srq_init_attr *attr)
{
	struct ibv_srq_init_attr_ex ex;
	int ret;

	if (!attr)
		return cma_err(-EINVAL);
	memset(&ex, 0, sizeof(ex));
	ex.srq_context = attr->srq_context;
	ex.attr = attr->attr;
	ex.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD;
	ex.srq_type = IBV_SRQT_BASIC;
	ex.pd = pd;
	ret = rdma_create_srq_ex(id, &ex);
	if (!ret)
		attr->attr = ex.attr;
	return ret;
}

void rdma_destroy_srq(struct rdma_cm_id *id)
{
	if (cma_id_check(id) || !id->srq)
		return;
	ibv_destroy_srq(id->srq);
	id->srq = NULL;
}

int rdma_get_request(struct rdma_cm_id *listen, struct rdma_cm_id **id)
{
	struct cma_id *l;
	struct rdma_cm_event *ev;
	bool sync;
	int err;

	pthread_mutex_lock(&cma_lock);
	l = cma_id_find(listen);
	sync = l && l->sync;
	pthread_mutex_unlock(&cma_lock);
	if (!sync || !id)
		return cma_err(-EINVAL);
	if (listen->event) {
		rdma_ack_cm_event(listen->event);
		listen->event = NULL;
	}
	if (rdma_get_cm_event(listen->channel, &ev))
		return -1;
	if (ev->event == RDMA_CM_EVENT_REJECTED) {
		err = -ECONNREFUSED;
		goto err;
	}
	if (ev->status) {
		err = ev->status < 0 ? ev->status : -ECONNREFUSED;
		goto err;
	}
	if (ev->event != RDMA_CM_EVENT_CONNECT_REQUEST) {
		err = -EINVAL;
		goto err;
	}
	if (l->ep_qp_init) {
		struct ibv_qp_init_attr a = *l->ep_qp_init;

		ev->id->pd = l->ep_pd;
		if (rdma_create_qp(ev->id, l->ep_pd, &a)) {
			err = -errno;
			goto err;
		}
	}
	*id = ev->id;
	(*id)->event = ev;
	return 0;
err:
	rdma_ack_cm_event(ev);
	return cma_err(err);
}

int rdma_create_ep(struct rdma_cm_id **id, struct rdma_addrinfo *res, struct ibv_pd *pd,
		   struct ibv_qp_init_attr *qp_init_attr)
{
	struct rdma_cm_id *cid;
	struct cma_id *c;
	int ret;

	if (!id || !res)
		return cma_err(-EINVAL);
	if (res->ai_route_len || res->ai_connect_len)
		return cma_err(-EOPNOTSUPP);
	ret = cma_create_id_qpt(NULL, &cid, NULL, (enum rdma_port_space)res->ai_port_space,
				(enum ibv_qp_type)res->ai_qp_type);
	if (ret)
		return ret;
	c = cma_id_of(cid);
	if (res->ai_flags & RAI_PASSIVE) {
		ret = rdma_bind_addr(cid, res->ai_src_addr);
		if (ret)
			goto err;
		if (qp_init_attr) {
			c->ep_qp_init = malloc(sizeof(*qp_init_attr));
			if (!c->ep_qp_init) {
				errno = ENOMEM;
				ret = -1;
				goto err;
			}
			*c->ep_qp_init = *qp_init_attr;
			c->ep_qp_init->qp_type = (enum ibv_qp_type)res->ai_qp_type;
			c->ep_pd = pd;
		}
		*id = cid;
		return 0;
	}
	ret = rdma_resolve_addr(cid, res->ai_src_len ? res->ai_src_addr : NULL, res->ai_dst_addr,
				2000);
	if (ret)
		goto err;
	ret = rdma_resolve_route(cid, 2000);
	if (ret)
		goto err;
	if (qp_init_attr) {
		/* rdma-core takes the QP type from the address info, not from the caller. */
		qp_init_attr->qp_type = (enum ibv_qp_type)res->ai_qp_type;
		cid->pd = pd;
		ret = rdma_create_qp(cid, pd, qp_init_attr);
		if (ret)
			goto err;
	}
	*id = cid;
	return 0;
err:
	{
		int e = errno;

		rdma_destroy_ep(cid);
		errno = e;
	}
	return -1;
}

void rdma_destroy_ep(struct rdma_cm_id *id)
{
	struct cma_id *c;

	if (cma_id_check(id))
		return;
	c = cma_id_of(id);
	if (id->qp)
		rdma_destroy_qp(id);
	if (id->srq)
		rdma_destroy_srq(id);
	free(c->ep_qp_init);
	c->ep_qp_init = NULL;
	rdma_destroy_id(id);
}
