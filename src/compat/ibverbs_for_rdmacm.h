/* SPDX-License-Identifier: MIT */
/*
 * What uroce's librdmacm.so.1 needs from uroce's libibverbs.so.1 beyond the verbs: exported in
 * the version node UROCE_PRIVATE_1, which no rdma-core program imports. librdmacm is linked
 * against our libibverbs, so the host layer's state (the opened device, its engine and sockets)
 * exists once, in libibverbs.
 */
#ifndef UROCE_COMPAT_IBVERBS_FOR_RDMACM_H
#define UROCE_COMPAT_IBVERBS_FOR_RDMACM_H

#include <infiniband/verbs.h>
#include <stdbool.h>
#include <stdint.h>

/*
 * Create the device's QP1 (the GSI QP, one per context): a UD-like QP whose number is 1 and
 * whose Q_Key is 0x80010000. It reports qp_type IBV_QPT_UD to the verbs, so ibv_post_send takes
 * an AH, remote QPN 1 and Q_Key 0x80010000. NULL with errno: EBUSY when the context already
 * has one, or what ibv_create_qp sets.
 */
struct ibv_qp *uroce_ibv_create_gsi_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr);

/* host/ctx.h uroce_ctx_gsi_steer on the context's device. 0 or a negative errno. */
int uroce_ibv_gsi_steer(struct ibv_context *ctx, const uint64_t *ids, int n);

/* host/ctx.h uroce_ctx_slot: the prefix of this process's CM comm IDs on the device. */
uint32_t uroce_ibv_slot(struct ibv_context *ctx);

/* host/ctx.h uroce_ctx_count_cm: add the CM's counts since the last call (delta[k] for
 * host/config/cm_counters.h counter k) to the device's counter file. Any thread. */
void uroce_ibv_count_cm(struct ibv_context *ctx, const uint64_t *delta);

/* host/ctx.h uroce_ctxs_lockable_at_exit: may librdmacm's exit handler use the devices? */
bool uroce_ibv_lockable_at_exit(void);

#endif
