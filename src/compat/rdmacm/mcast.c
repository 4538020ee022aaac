/* SPDX-License-Identifier: MIT */
/*
 * rdma_cm multicast: not supported by uroce, a known gap (no multicast QP attach in the
 * transport, no MGID join). The calls exist for mckey (BIND_NOW) and fail with -1 and errno
 * EOPNOTSUPP, rdma-core's convention for a missing feature; mckey reports the failed join.
 */
#include <errno.h>

#include <rdma/rdma_cma.h>

static int not_supported(void)
{
	errno = EOPNOTSUPP;
	return -1;
}

int rdma_join_multicast(struct rdma_cm_id *id, struct sockaddr *addr, void *context)
{
	(void)id;
	(void)addr;
	(void)context;
	return not_supported();
}

int rdma_join_multicast_ex(struct rdma_cm_id *id, struct rdma_cm_join_mc_attr_ex *mc_join_attr,
			   void *context)
{
	(void)id;
	(void)mc_join_attr;
	(void)context;
	return not_supported();
}

int rdma_leave_multicast(struct rdma_cm_id *id, struct sockaddr *addr)
{
	(void)id;
	(void)addr;
	return not_supported();
}
