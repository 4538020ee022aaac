/* SPDX-License-Identifier: MIT */
/*
 * Memory windows: what the header inlines ibv_alloc_mw, ibv_dealloc_mw and ibv_bind_mw reach
 * through ibv_context.ops. Binding a type 1 window is a BIND_MW work request on the QP, as
 * rdma-core's rxe provider does it: the window's new R_Key (ibv_inc_rkey of the old) is in
 * mw->rkey as soon as the request is posted; the bind takes effect in its turn in the send
 * queue, and a failed one completes with IBV_WC_MW_BIND_ERR (the application then undoes the
 * R_Key, as with rxe). Type 2 windows are bound with IBV_WR_BIND_MW (post.c).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "compat/compat.h"

_Static_assert(IBV_MW_TYPE_1 == (int)UROCE_MW_TYPE_1 && IBV_MW_TYPE_2 == (int)UROCE_MW_TYPE_2,
	       "window types");

struct ibv_mw *uroce_compat_alloc_mw(struct ibv_pd *ibpd, enum ibv_mw_type type)
{
	struct compat_pd *pd = compat_container_of(ibpd, struct compat_pd, pd);
	struct uroce_ctx *uc = compat_uc(ibpd->context);
	struct compat_mw *mw;
	int err;

	if (type != IBV_MW_TYPE_1 && type != IBV_MW_TYPE_2) {
		errno = EINVAL;
		return NULL;
	}
	mw = calloc(1, sizeof(*mw));
	if (!mw) {
		errno = ENOMEM;
		return NULL;
	}
	uroce_ctx_lock(uc);
	err = uroce_mw_alloc(pd->epd, (enum uroce_mw_type)type, &mw->emw);
	if (!err)
		mw->mw.rkey = uroce_mw_rkey(mw->emw);
	uroce_ctx_unlock(uc);
	if (err) {
		free(mw);
		errno = -err;
		return NULL;
	}
	mw->mw.context = ibpd->context;
	mw->mw.pd = ibpd;
	mw->mw.handle = mw->mw.rkey >> 8;
	mw->mw.type = type;
	return &mw->mw;
}

int uroce_compat_dealloc_mw(struct ibv_mw *ibmw)
{
	struct compat_mw *mw = compat_container_of(ibmw, struct compat_mw, mw);
	struct uroce_ctx *uc = compat_uc(ibmw->context);
	int err;

	uroce_ctx_lock(uc);
	err = uroce_mw_dealloc(mw->emw);
	uroce_ctx_unlock(uc);
	if (err)
		return -err;
	free(mw);
	return 0;
}

int uroce_compat_bind_mw(struct ibv_qp *qp, struct ibv_mw *mw, struct ibv_mw_bind *mw_bind)
{
	struct ibv_send_wr wr, *bad;
	int err;

	/* The inline ibv_bind_mw checked the type, the PDs and a NULL region's range. */
	if (mw_bind->bind_info.mw_access_flags & IBV_ACCESS_ZERO_BASED)
		return EINVAL; /* o10-36.2.2: no zero-based type 1 windows */
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = mw_bind->wr_id;
	wr.opcode = IBV_WR_BIND_MW;
	wr.send_flags = mw_bind->send_flags;
	wr.bind_mw.mw = mw;
	wr.bind_mw.rkey = ibv_inc_rkey(mw->rkey);
	wr.bind_mw.bind_info = mw_bind->bind_info;
	err = uroce_compat_post_send(qp, &wr, &bad);
	if (err)
		return err;
	mw->rkey = wr.bind_mw.rkey;
	return 0;
}
