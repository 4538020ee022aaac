/* SPDX-License-Identifier: MIT */
/* Protection domains and memory regions. */
#include <errno.h>
#include <stdlib.h>

#include "compat/compat.h"

_Static_assert(IBV_ACCESS_LOCAL_WRITE == (int)UROCE_ACCESS_LOCAL_WRITE &&
		       IBV_ACCESS_REMOTE_WRITE == (int)UROCE_ACCESS_REMOTE_WRITE &&
		       IBV_ACCESS_REMOTE_READ == (int)UROCE_ACCESS_REMOTE_READ &&
		       IBV_ACCESS_REMOTE_ATOMIC == (int)UROCE_ACCESS_REMOTE_ATOMIC &&
		       IBV_ACCESS_MW_BIND == (int)UROCE_ACCESS_MW_BIND &&
		       IBV_ACCESS_ZERO_BASED == (int)UROCE_ACCESS_ZERO_BASED,
	       "access flags");

/* What the engine knows; the rest of the mandatory range (ON_DEMAND, HUGETLB, ...) is refused. */
#define COMPAT_ACCESS_KNOWN                                                          \
	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | \
	 IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_MW_BIND | IBV_ACCESS_ZERO_BASED)

struct ibv_pd *ibv_alloc_pd(struct ibv_context *context)
{
	struct uroce_ctx *uc = compat_uc(context);
	struct compat_pd *pd = calloc(1, sizeof(*pd));
	int err;

	if (!pd) {
		errno = ENOMEM;
		return NULL;
	}
	uroce_ctx_lock(uc);
	err = uroce_pd_alloc(uroce_ctx_eng(uc), &pd->epd);
	uroce_ctx_unlock(uc);
	if (err) {
		free(pd);
		errno = -err;
		return NULL;
	}
	pd->pd.context = context;
	return &pd->pd;
}

int ibv_dealloc_pd(struct ibv_pd *ibpd)
{
	struct compat_pd *pd = compat_container_of(ibpd, struct compat_pd, pd);
	struct uroce_ctx *uc = compat_uc(ibpd->context);
	int err;

	uroce_ctx_lock(uc);
	err = uroce_pd_free(pd->epd);
	uroce_ctx_unlock(uc);
	if (err)
		return -err;
	free(pd);
	return 0;
}

static struct ibv_mr *reg_mr(struct ibv_pd *ibpd, void *addr, size_t length, uint64_t iova,
			     unsigned access)
{
	struct compat_pd *pd = compat_container_of(ibpd, struct compat_pd, pd);
	struct uroce_ctx *uc = compat_uc(ibpd->context);
	struct compat_mr *mr;
	int err;

	/* Optional bits (RELAXED_ORDERING, ...) are hints a device may ignore (verbs.h);
	 * perftest and UCX set them on every registration. */
	access &= ~(unsigned)IBV_ACCESS_OPTIONAL_RANGE;
	if (access & ~(unsigned)COMPAT_ACCESS_KNOWN) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	mr = calloc(1, sizeof(*mr));
	if (!mr) {
		errno = ENOMEM;
		return NULL;
	}
	uroce_ctx_lock(uc);
	err = uroce_mr_reg(pd->epd, addr, length, iova, access, &mr->emr);
	uroce_ctx_unlock(uc);
	if (err) {
		free(mr);
		errno = -err;
		return NULL;
	}
	mr->mr.context = ibpd->context;
	mr->mr.pd = ibpd;
	mr->mr.addr = (void *)(uintptr_t)iova;
	mr->mr.length = length;
	mr->mr.lkey = uroce_mr_lkey(mr->emr);
	mr->mr.rkey = uroce_mr_rkey(mr->emr);
	mr->mr.handle = mr->mr.lkey;
	return &mr->mr;
}

#undef ibv_reg_mr
struct ibv_mr *ibv_reg_mr(struct ibv_pd *pd, void *addr, size_t length, int access)
{
	return reg_mr(pd, addr, length, (uintptr_t)addr, (unsigned)access);
}

#undef ibv_reg_mr_iova
struct ibv_mr *ibv_reg_mr_iova(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova,
			       int access)
{
	return reg_mr(pd, addr, length, iova, (unsigned)access);
}

struct ibv_mr *ibv_reg_mr_iova2(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova,
				unsigned int access)
{
	return reg_mr(pd, addr, length, iova, access);
}

int ibv_dereg_mr(struct ibv_mr *ibmr)
{
	struct compat_mr *mr = compat_container_of(ibmr, struct compat_mr, mr);
	struct uroce_ctx *uc = compat_uc(ibmr->context);
	int err;

	uroce_ctx_lock(uc);
	err = uroce_mr_dereg(mr->emr);
	uroce_ctx_unlock(uc);
	if (err)
		return -err;
	free(mr);
	return 0;
}
