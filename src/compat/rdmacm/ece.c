/* SPDX-License-Identifier: MIT */
/*
 * Enhanced Connection Establishment (ECE, RDMACM_1.3): not supported by uroce, whose CM sends
 * no ECE fields (uroce's ibv_query_ece fails likewise). Both calls fail with -1 and errno
 * EOPNOTSUPP. rdma_reject_ece is not here: it is rdma_reject's (cma code).
 */
#include <errno.h>

#include <rdma/rdma_cma.h>

int rdma_set_local_ece(struct rdma_cm_id *id, struct ibv_ece *ece)
{
	(void)id;
	(void)ece;
	errno = EOPNOTSUPP;
	return -1;
}

int rdma_get_remote_ece(struct rdma_cm_id *id, struct ibv_ece *ece)
{
	(void)id;
	(void)ece;
	errno = EOPNOTSUPP;
	return -1;
}
