/* SPDX-License-Identifier: MIT */
/*
 * Exports uroce does not implement. They exist because Debian's binaries and libraries are
 * linked with BIND_NOW: every imported symbol must resolve at load time, whether or not it is
 * called. They fail as rdma-core does without the feature: NULL with errno EOPNOTSUPP, or an
 * EOPNOTSUPP return (never (void *)-1: UCX took one for an object).
 */
#include <errno.h>

#include "compat/compat.h"
#include "compat/rdma_core_driver.h"

/* ---- public verbs ---------------------------------------------------------------------------- */

struct ibv_mr *ibv_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t offset, size_t length, uint64_t iova,
				 int fd, int access)
{
	(void)pd;
	(void)offset;
	(void)length;
	(void)iova;
	(void)fd;
	(void)access;
	errno = EOPNOTSUPP;
	return NULL;
}

int ibv_resolve_eth_l2_from_gid(struct ibv_context *context, struct ibv_ah_attr *attr,
				uint8_t eth_mac[6], uint16_t *vid)
{
	(void)context;
	(void)attr;
	(void)eth_mac;
	(void)vid;
	return EOPNOTSUPP;
}

struct ibv_context *ibv_import_device(int cmd_fd)
{
	(void)cmd_fd;
	errno = EOPNOTSUPP;
	return NULL;
}

struct ibv_pd *ibv_import_pd(struct ibv_context *context, uint32_t pd_handle)
{
	(void)context;
	(void)pd_handle;
	errno = EOPNOTSUPP;
	return NULL;
}

void ibv_unimport_pd(struct ibv_pd *pd)
{
	(void)pd;
}

struct ibv_mr *ibv_import_mr(struct ibv_pd *pd, uint32_t mr_handle)
{
	(void)pd;
	(void)mr_handle;
	errno = EOPNOTSUPP;
	return NULL;
}

void ibv_unimport_mr(struct ibv_mr *mr)
{
	(void)mr;
}

struct ibv_dm *ibv_import_dm(struct ibv_context *context, uint32_t dm_handle)
{
	(void)context;
	(void)dm_handle;
	errno = EOPNOTSUPP;
	return NULL;
}

void ibv_unimport_dm(struct ibv_dm *dm)
{
	(void)dm;
}

int ibv_query_ece(struct ibv_qp *qp, struct ibv_ece *ece)
{
	(void)qp;
	(void)ece;
	return EOPNOTSUPP;
}

int ibv_set_ece(struct ibv_qp *qp, struct ibv_ece *ece)
{
	(void)qp;
	(void)ece;
	return EOPNOTSUPP;
}

int ibv_query_qp_data_in_order(struct ibv_qp *qp, enum ibv_wr_opcode op, uint32_t flags)
{
	/* 0: no in-order data placement promise (the safe answer). */
	(void)qp;
	(void)op;
	(void)flags;
	return 0;
}

/* ---- IBVERBS_PRIVATE_34: the provider interface (libmlx5/libefa import it) ------------------ */

bool verbs_allow_disassociate_destroy;

void verbs_register_driver_34(const void *ops)
{
	(void)ops; /* uroce loads no providers: a registered driver never matches a device */
}

void __verbs_log(struct verbs_context *ctx, uint32_t level, const char *fmt, ...)
{
	(void)ctx;
	(void)level;
	(void)fmt;
}

void *_verbs_init_and_alloc_context(void *device, int cmd_fd, size_t alloc_size,
				    void *context_offset, uint32_t driver_id)
{
	(void)device;
	(void)cmd_fd;
	(void)alloc_size;
	(void)context_offset;
	(void)driver_id;
	errno = EOPNOTSUPP;
	return NULL;
}

void verbs_uninit_context(void *context)
{
	(void)context;
}

void verbs_set_ops(void *vctx, const void *ops)
{
	(void)vctx;
	(void)ops;
}

int verbs_open_device(void *device, void *private_data)
{
	(void)device;
	(void)private_data;
	return EOPNOTSUPP;
}

int verbs_init_cq(void *cq, void *context, void *channel, void *cq_context)
{
	(void)cq;
	(void)context;
	(void)channel;
	(void)cq_context;
	return EOPNOTSUPP;
}

unsigned int __ioctl_final_num_attrs(unsigned int num_attrs, void *link)
{
	(void)link;
	return num_attrs;
}

int execute_ioctl(void *context, void *cmd)
{
	(void)context;
	(void)cmd;
	return EOPNOTSUPP;
}

#define COMPAT_IBV_CMD_DEF(name)   \
	int ibv_cmd_##name(void)   \
	{                          \
		return EOPNOTSUPP; \
	}
COMPAT_IBV_CMDS(COMPAT_IBV_CMD_DEF)
#undef COMPAT_IBV_CMD_DEF
