/* SPDX-License-Identifier: MIT */
/*
 * ibv_attach_mcast / ibv_detach_mcast: a UD QP joins or leaves a multicast group (the engine's
 * groups, transport/engine.h), and the device's sockets follow the groups that have QPs
 * (uroce_ctx_mcast_sync: IGMP/MLD membership on the interface). The LID is not used on RoCE.
 * Errors as rdma-core returns them: a positive errno, EINVAL for a QP that is not UD or a GID
 * that is not multicast (ib_attach_mcast's checks), ENOMEM past the limits that
 * ibv_query_device reports (max_mcast_grp, max_mcast_qp_attach).
 */
#include <errno.h>

#include "compat/compat.h"

int ibv_attach_mcast(struct ibv_qp *ibqp, const union ibv_gid *gid, uint16_t lid)
{
	struct compat_qp *qp = compat_container_of(ibqp, struct compat_qp, qp);
	struct uroce_ctx *uc = compat_uc(ibqp->context);
	int err;

	(void)lid;
	if (!gid)
		return EINVAL;
	uroce_ctx_lock(uc);
	err = uroce_mcast_attach(qp->eqp, gid->raw);
	if (!err) {
		err = uroce_ctx_mcast_sync(uc);
		/* Not joined on the network: the QP would never hear the group. */
		if (err) {
			uroce_mcast_detach(qp->eqp, gid->raw);
			uroce_ctx_mcast_sync(uc);
		}
	}
	uroce_ctx_unlock(uc);
	return -err;
}

int ibv_detach_mcast(struct ibv_qp *ibqp, const union ibv_gid *gid, uint16_t lid)
{
	struct compat_qp *qp = compat_container_of(ibqp, struct compat_qp, qp);
	struct uroce_ctx *uc = compat_uc(ibqp->context);
	int err;

	(void)lid;
	if (!gid)
		return EINVAL;
	uroce_ctx_lock(uc);
	err = uroce_mcast_detach(qp->eqp, gid->raw);
	if (!err)
		uroce_ctx_mcast_sync(uc);
	uroce_ctx_unlock(uc);
	return -err;
}
