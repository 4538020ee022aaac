/* SPDX-License-Identifier: MIT */
/*
 * rdma_cm multicast over RoCE, as the kernel's cma does it for an Ethernet port
 * (cma_iboe_join_multicast) and rdma-core's librdmacm around it:
 * - the MGID comes from the IP address (cma_iboe_set_mgid): an IPv4 group a.b.c.d is
 *   ::ffff:a.b.c.d on a port whose default RoCE mode is v2, ff0e::ffff:a.b.c.d on a RoCE v1
 *   port; an IPv6 group is its own address;
 * - there is no SA: the join completes at once, with RDMA_CM_EVENT_MULTICAST_JOIN carrying the
 *   UD parameters: an address handle to the group (the MGID as DGID, the source address's GID
 *   index, hop limit 64 for IPv4 over RoCE v2, else 1), remote QPN 0xFFFFFF and the Q_Key
 *   RDMA_UDP_QKEY for RDMA_PS_UDP ids (0 otherwise), private_data the join's context;
 * - when the event is handed out, the id's QP, if it has one and the join is not send-only, is
 *   attached to the group (ucma_process_join); a failed attach turns the event into
 *   RDMA_CM_EVENT_MULTICAST_ERROR with status -1 and errno set, as rdma-core reports it. The
 *   attach is what joins the IP group on the interface (IGMP/MLD; compat/mcast.c);
 * - rdma_leave_multicast detaches the QP, withdraws the join's events not yet handed out (as
 *   the kernel's ucma_leave_multicast does) and waits until those handed out are acked.
 * Departure: Linux refuses an IPv6 group on a RoCE v2 port (ENOTSUPP); uroce joins the IPv6
 * group whose address is the MGID.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/rdma_cma.h>

#include "compat/rdmacm/addr.h"
#include "compat/rdmacm/rdmacm.h"

#define MCAST_QPN 0xFFFFFFu

/* cma_iboe_set_mgid. */
static void mgid_of(const struct sockaddr *sa, int gid_type, uint8_t mgid[16])
{
	cma_gid_of_sa(sa, mgid); /* IPv6: the address; IPv4: ::ffff:a.b.c.d */
	if (sa->sa_family == AF_INET && gid_type == IBV_GID_TYPE_ROCE_V1) {
		mgid[0] = 0xFF;
		mgid[1] = 0x0E;
	}
}

/* The UD parameters of the JOIN event (cma_make_mc_event, ib_init_ah_from_mcmember). */
static void fill_ud(const struct cma_id *id, const struct cma_mc *mc, int gid_index,
		    struct rdma_ud_param *ud)
{
	struct ibv_ah_attr *ah = &ud->ah_attr;
	bool v2v4 = mc->addr.ss_family == AF_INET && id->gid_type == IBV_GID_TYPE_ROCE_V2;

	memset(ud, 0, sizeof(*ud));
	ud->private_data = mc->context;
	ah->is_global = 1;
	ah->grh.dgid = mc->mgid;
	ah->grh.sgid_index = (uint8_t)gid_index;
	ah->grh.hop_limit = v2v4 ? 64 : 1;
	ah->port_num = 1;
	ud->qp_num = MCAST_QPN;
	ud->qkey = id->id.ps == RDMA_PS_UDP ? RDMA_UDP_QKEY : 0;
}

static int join(struct rdma_cm_id *cid, const struct sockaddr *addr, uint16_t flags,
		void *context)
{
	struct cma_event *e = NULL;
	struct cma_mc *mc;
	struct cma_id *id;
	socklen_t len = 0;
	int err, idx;

	pthread_mutex_lock(&cma_lock);
	id = cma_id_find(cid); /* first: the address of a dead id's caller may be freed too */
	if (id && addr)
		len = cma_sa_len(addr);
	/* The kernel's rdma_join_multicast: a device, and the address bound or resolved. */
	if (!id || !len || !id->dev ||
	    (id->state != CMA_ADDR_BOUND && id->state != CMA_ADDR_RESOLVED) || cma_sa_any(addr) ||
	    !id->dev->active_mtu) {
		pthread_mutex_unlock(&cma_lock);
		return cma_err(-EINVAL);
	}
	if (id->state == CMA_ADDR_BOUND)
		id->gid_type = cma_default_gid_type(id->dev->name);
	idx = cma_gid_find(id->dev->verbs, id->sgid, id->gid_type);
	mc = calloc(1, sizeof(*mc));
	if (idx < 0 || !mc) {
		pthread_mutex_unlock(&cma_lock);
		free(mc);
		return cma_err(idx < 0 ? -ENODEV : -ENOMEM);
	}
	mc->id = id;
	mc->context = context;
	mc->join_flags = flags;
	memcpy(&mc->addr, addr, len);
	mgid_of(addr, id->gid_type, mc->mgid.raw);
	err = cma_event_post(id, NULL, RDMA_CM_EVENT_MULTICAST_JOIN, 0, NULL, 0, &e);
	if (err || !e) {
		pthread_mutex_unlock(&cma_lock);
		free(mc);
		return cma_err(err ? err : -EINVAL);
	}
	e->mc = mc;
	fill_ud(id, mc, idx, &e->ev.param.ud);
	mc->next = id->mc_list;
	id->mc_list = mc;
	pthread_mutex_unlock(&cma_lock);
	return id->sync ? cma_err(cma_sync_wait(id)) : 0;
}

void cma_mc_deliver(struct cma_event *e)
{
	struct cma_mc *mc = e->mc;
	struct rdma_cm_id *cid = &mc->id->id;
	int err;

	if (e->ev.event != RDMA_CM_EVENT_MULTICAST_JOIN || !cid->qp ||
	    mc->join_flags == RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER)
		return;
	err = ibv_attach_mcast(cid->qp, &mc->mgid, 0);
	if (err) {
		e->ev.event = RDMA_CM_EVENT_MULTICAST_ERROR;
		e->ev.status = -1;
		errno = err;
		return;
	}
	mc->attached = true;
}

int rdma_join_multicast(struct rdma_cm_id *id, struct sockaddr *addr, void *context)
{
	return join(id, addr, RDMA_MC_JOIN_FLAG_FULLMEMBER, context);
}

int rdma_join_multicast_ex(struct rdma_cm_id *id, struct rdma_cm_join_mc_attr_ex *attr,
			   void *context)
{
	if (!attr)
		return cma_err(-EINVAL);
	if (attr->comp_mask >= RDMA_CM_JOIN_MC_ATTR_RESERVED)
		return cma_err(-EOPNOTSUPP);
	if (!(attr->comp_mask & RDMA_CM_JOIN_MC_ATTR_ADDRESS) ||
	    !(attr->comp_mask & RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS) ||
	    attr->join_flags >= RDMA_MC_JOIN_FLAG_RESERVED)
		return cma_err(-EINVAL);
	return join(id, attr->addr, (uint16_t)attr->join_flags, context);
}

/* Unlink mc from its id and detach the QP when the JOIN attached it. Lock held. */
static void mc_drop(struct cma_mc *mc)
{
	struct rdma_cm_id *cid = &mc->id->id;

	for (struct cma_mc **pp = &mc->id->mc_list; *pp; pp = &(*pp)->next) {
		if (*pp == mc) {
			*pp = mc->next;
			break;
		}
	}
	if (mc->attached && cid->qp)
		ibv_detach_mcast(cid->qp, &mc->mgid, 0);
	mc->attached = false;
}

int rdma_leave_multicast(struct rdma_cm_id *cid, struct sockaddr *addr)
{
	struct cma_mc *mc = NULL;
	struct cma_id *id;
	socklen_t len = 0;

	pthread_mutex_lock(&cma_lock);
	id = cma_id_find(cid);
	if (id && addr)
		len = cma_sa_len(addr);
	if (!id || !len) {
		pthread_mutex_unlock(&cma_lock);
		return cma_err(-EINVAL);
	}
	for (mc = id->mc_list; mc; mc = mc->next)
		if (!memcmp(&mc->addr, addr, len))
			break;
	if (!mc) {
		pthread_mutex_unlock(&cma_lock);
		return cma_err(-EADDRNOTAVAIL);
	}
	mc_drop(mc);
	cma_event_forget_mc(id, mc);
	while (mc->acked < mc->reported)
		pthread_cond_wait(&id->acked, &cma_lock);
	pthread_mutex_unlock(&cma_lock);
	free(mc);
	return 0;
}

void cma_mc_free_all(struct cma_id *id)
{
	while (id->mc_list) {
		struct cma_mc *mc = id->mc_list;

		mc_drop(mc);
		free(mc);
	}
}
