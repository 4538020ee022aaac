/* SPDX-License-Identifier: MIT */
/*
 * Exports of libibverbs.so.1 that no installed header declares: the IBVERBS_PRIVATE_34 provider
 * interface (rdma-core's driver.h, not shipped in libibverbs-dev) and the IBVERBS_1.0 kernel
 * struct copy helpers (marshall.h).
 *
 * Only ibv_query_gid_type is used by an application (ibv_devinfo). The rest exist because
 * Debian's libmlx5 and libefa, which perftest and UCX link, import them with BIND_NOW and call
 * verbs_register_driver_34() from their constructors; they never reach the others with a
 * uroce device. So the prototypes below keep only what matters for the call: the return type
 * (int 0/errno for ibv_cmd_*, NULL + errno for pointers).
 */
#ifndef UROCE_COMPAT_RDMA_CORE_DRIVER_H
#define UROCE_COMPAT_RDMA_CORE_DRIVER_H

#include <infiniband/verbs.h>
#include <stdbool.h>
#include <stddef.h>

/* rdma-core's enum ibv_gid_type_sysfs (driver.h): what ibv_query_gid_type reports. */
enum ibv_gid_type_sysfs {
	IBV_GID_TYPE_SYSFS_IB_ROCE_V1,
	IBV_GID_TYPE_SYSFS_ROCE_V2,
};

struct verbs_sysfs_dev;

int ibv_query_gid_type(struct ibv_context *context, uint8_t port_num, unsigned int index,
		       enum ibv_gid_type_sysfs *type);
/* IBVERBS_1.1 fork range calls (driver.h; libmlx5 imports them). */
int ibv_dontfork_range(void *base, size_t size);
int ibv_dofork_range(void *base, size_t size);

/* IBVERBS_1.0 sysfs helpers (driver.h). */
const char *ibv_get_sysfs_path(void);
int ibv_read_sysfs_file(const char *dir, const char *file, char *buf, size_t size);
int ibv_read_ibdev_sysfs_file(char *buf, size_t size, struct verbs_sysfs_dev *sysfs_dev,
			      const char *fnfmt, ...);

extern bool verbs_allow_disassociate_destroy;

void verbs_register_driver_34(const void *ops);
void __verbs_log(struct verbs_context *ctx, uint32_t level, const char *fmt, ...);
void *_verbs_init_and_alloc_context(void *device, int cmd_fd, size_t alloc_size,
				    void *context_offset, uint32_t driver_id);
void verbs_uninit_context(void *context);
void verbs_set_ops(void *vctx, const void *ops);
int verbs_open_device(void *device, void *private_data);
int verbs_init_cq(void *cq, void *context, void *channel, void *cq_context);
unsigned int __ioctl_final_num_attrs(unsigned int num_attrs, void *link);
int execute_ioctl(void *context, void *cmd);

/* clang-format off */
#define COMPAT_IBV_CMDS(X)                                                                         \
	X(advise_mr) X(alloc_dm) X(alloc_mw) X(alloc_pd) X(attach_mcast) X(close_xrcd)             \
	X(create_ah) X(create_counters) X(create_cq) X(create_cq_ex) X(create_flow)                \
	X(create_flow_action_esp) X(create_qp) X(create_qp_ex) X(create_qp_ex2)                    \
	X(create_rwq_ind_table) X(create_srq) X(create_srq_ex) X(create_wq) X(dealloc_mw)          \
	X(dealloc_pd) X(dereg_mr) X(destroy_ah) X(destroy_counters) X(destroy_cq)                  \
	X(destroy_flow) X(destroy_flow_action) X(destroy_qp) X(destroy_rwq_ind_table)              \
	X(destroy_srq) X(destroy_wq) X(detach_mcast) X(free_dm) X(get_context) X(modify_cq)        \
	X(modify_flow_action_esp) X(modify_qp) X(modify_qp_ex) X(modify_srq) X(modify_wq)          \
	X(open_qp) X(open_xrcd) X(poll_cq) X(post_recv) X(post_send) X(post_srq_recv)              \
	X(query_context) X(query_device_any) X(query_mr) X(query_port) X(query_qp)                 \
	X(query_srq) X(read_counters) X(reg_dm_mr) X(reg_dmabuf_mr) X(reg_mr)                      \
	X(req_notify_cq) X(rereg_mr) X(resize_cq)
/* clang-format on */

#define COMPAT_IBV_CMD_DECL(name) int ibv_cmd_##name(void);
COMPAT_IBV_CMDS(COMPAT_IBV_CMD_DECL)
#undef COMPAT_IBV_CMD_DECL

/* IBVERBS_1.0 / 1.1 kernel struct copies (only Debian's librdmacm imports them). */
struct ib_uverbs_qp_attr;
struct ib_uverbs_ah_attr;
struct ib_user_path_rec;
struct ibv_sa_path_rec;
void ibv_copy_qp_attr_from_kern(struct ibv_qp_attr *dst, struct ib_uverbs_qp_attr *src);
void ibv_copy_ah_attr_from_kern(struct ibv_ah_attr *dst, struct ib_uverbs_ah_attr *src);
void ibv_copy_path_rec_from_kern(struct ibv_sa_path_rec *dst, struct ib_user_path_rec *src);
void ibv_copy_path_rec_to_kern(struct ib_user_path_rec *dst, struct ibv_sa_path_rec *src);

#endif
