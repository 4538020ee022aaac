/* SPDX-License-Identifier: MIT */
/* Protection domains and memory regions: registration, on-demand paging (implicit regions and
 * ibv_advise_mr), ibv_rereg_mr. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "compat/compat.h"

_Static_assert(IBV_ACCESS_LOCAL_WRITE == (int)UROCE_ACCESS_LOCAL_WRITE &&
		       IBV_ACCESS_REMOTE_WRITE == (int)UROCE_ACCESS_REMOTE_WRITE &&
		       IBV_ACCESS_REMOTE_READ == (int)UROCE_ACCESS_REMOTE_READ &&
		       IBV_ACCESS_REMOTE_ATOMIC == (int)UROCE_ACCESS_REMOTE_ATOMIC &&
		       IBV_ACCESS_MW_BIND == (int)UROCE_ACCESS_MW_BIND &&
		       IBV_ACCESS_ZERO_BASED == (int)UROCE_ACCESS_ZERO_BASED &&
		       IBV_ACCESS_ON_DEMAND == (int)UROCE_ACCESS_ON_DEMAND,
	       "access flags");
_Static_assert(IBV_REREG_MR_CHANGE_TRANSLATION == (int)UROCE_REREG_TRANSLATION &&
		       IBV_REREG_MR_CHANGE_PD == (int)UROCE_REREG_PD &&
		       IBV_REREG_MR_CHANGE_ACCESS == (int)UROCE_REREG_ACCESS,
	       "rereg flags");

/* What the engine knows; the rest of the mandatory range (RELAXED_ORDERING's neighbours,
 * FLUSH_*, ...) is refused. HUGETLB is taken off first: it says the pages are huge pages, and
 * uroce reaches every page by virtual address, whatever its size. */
#define COMPAT_ACCESS_KNOWN                                                          \
	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | \
	 IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_MW_BIND | IBV_ACCESS_ZERO_BASED |      \
	 IBV_ACCESS_ON_DEMAND)

/* The access flags an application passes, as the engine takes them: hints off, and 0 or
 * -EOPNOTSUPP for a flag uroce does not have. */
static int access_to_engine(unsigned access, unsigned *out)
{
	/* Optional bits (RELAXED_ORDERING, ...) are hints a device may ignore (verbs.h);
	 * perftest and UCX set them on every registration. */
	access &= ~(unsigned)(IBV_ACCESS_OPTIONAL_RANGE | IBV_ACCESS_HUGETLB);
	if (access & ~(unsigned)COMPAT_ACCESS_KNOWN)
		return -EOPNOTSUPP;
	*out = access;
	return 0;
}

/* Page-aligned bounds of [p, p + len): madvise takes whole pages. */
static void page_span(const void *p, size_t len, void **start, size_t *span)
{
	uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t a = (uintptr_t)p & ~(pg - 1);
	uintptr_t end = ((uintptr_t)p + len + pg - 1) & ~(pg - 1);

	*start = (void *)a;
	*span = end - a;
}

/* 0 when the whole of [start, start + span) is mapped, else -EFAULT. msync(MS_ASYNC) is a
 * no-op on every mapping (since Linux 2.6.19) except that it fails with ENOMEM on a gap. */
static int span_mapped(void *start, size_t span)
{
	return msync(start, span, MS_ASYNC) ? -EFAULT : 0;
}

/* Does the kernel have MADV_POPULATE_READ/WRITE (Linux 5.14)? Asked of the page of a local
 * variable, which is mapped, readable and writable. */
static bool populate_known(void)
{
	int here = 0;
	void *start;
	size_t span;

	page_span(&here, sizeof(here), &start, &span);
	return madvise(start, span, MADV_POPULATE_READ) == 0 || errno != EINVAL;
}

/*
 * Fault [p, p + len) in (MADV_POPULATE_READ/WRITE) or hint it (MADV_WILLNEED), as how says; 0 or
 * -EFAULT. Population fails where a memcpy would crash the process: ENOMEM for a range that is
 * not mapped, EFAULT where the access would fault, EINVAL where the mapping does not allow it
 * (POPULATE_WRITE on a read-only mapping, PROT_NONE, VM_PFNMAP/VM_IO memory). On a kernel
 * without MADV_POPULATE_* (EINVAL everywhere) the range is only checked to be mapped, which does
 * not tell a read-only mapping from a writable one.
 */
static int prefetch(const void *p, size_t len, int how)
{
	void *start;
	size_t span;

	page_span(p, len, &start, &span);
	if (madvise(start, span, how) == 0)
		return 0;
	if (errno == EINVAL && how != MADV_WILLNEED && !populate_known())
		return span_mapped(start, span);
	return -EFAULT;
}

/* The engine's memory probe for implicit regions: fault the pages in as the access would. */
static int mem_probe(void *arg, const void *addr, size_t len, bool write)
{
	(void)arg;
	return prefetch(addr, len, write ? MADV_POPULATE_WRITE : MADV_POPULATE_READ);
}

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

	err = access_to_engine(access, &access);
	if (err) {
		errno = -err;
		return NULL;
	}
	mr = calloc(1, sizeof(*mr));
	if (!mr) {
		errno = ENOMEM;
		return NULL;
	}
	uroce_ctx_lock(uc);
	err = uroce_mr_reg(pd->epd, addr, length, iova, access, &mr->emr);
	/* An implicit region reaches memory no registration vouched for: probe it. */
	if (!err && uroce_mr_implicit(mr->emr))
		uroce_eng_set_mem_probe(uroce_ctx_eng(uc), mem_probe, NULL);
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

/*
 * ibv_rereg_mr, with rdma-core's own checks first (IBV_REREG_MR_ERR_INPUT, errno EINVAL), then
 * the change itself (IBV_REREG_MR_ERR_CMD with errno as the kernel would set it). The keys stay
 * the same. No fork ranges to move: uroce pins nothing (ibv_dontfork_range is a no-op).
 */
int ibv_rereg_mr(struct ibv_mr *ibmr, int flags, struct ibv_pd *ibpd, void *addr, size_t length,
		 int access)
{
	struct compat_mr *mr = compat_container_of(ibmr, struct compat_mr, mr);
	struct uroce_ctx *uc = compat_uc(ibmr->context);
	struct uroce_pd *epd = NULL;
	unsigned eaccess = 0;
	int err;

	if (((unsigned)flags & ~(unsigned)IBV_REREG_MR_FLAGS_SUPPORTED) ||
	    ((flags & IBV_REREG_MR_CHANGE_TRANSLATION) && (!length || !addr)) ||
	    (access && !(flags & IBV_REREG_MR_CHANGE_ACCESS))) {
		errno = EINVAL;
		return IBV_REREG_MR_ERR_INPUT;
	}
	/* Past here rdma-core has asked the kernel: failures are IBV_REREG_MR_ERR_CMD. The PD is
	 * read only when it is to change (pyverbs passes garbage otherwise). */
	err = 0;
	if (flags & IBV_REREG_MR_CHANGE_PD) {
		if (!ibpd || ibpd->context != ibmr->context)
			err = -EINVAL;
		else
			epd = compat_container_of(ibpd, struct compat_pd, pd)->epd;
	}
	if (!err && (flags & IBV_REREG_MR_CHANGE_ACCESS))
		err = access_to_engine((unsigned)access, &eaccess);
	if (!err) {
		uroce_ctx_lock(uc);
		err = uroce_mr_rereg(mr->emr, (unsigned)flags, epd, addr, length, (uintptr_t)addr,
				     eaccess);
		uroce_ctx_unlock(uc);
	}
	if (err) {
		errno = -err;
		return IBV_REREG_MR_ERR_CMD;
	}
	if (flags & IBV_REREG_MR_CHANGE_PD)
		ibmr->pd = ibpd;
	if (flags & IBV_REREG_MR_CHANGE_TRANSLATION) {
		ibmr->addr = addr;
		ibmr->length = length;
	}
	return 0;
}

/* One range to prefetch, found under the lock and touched after it. */
struct advise_range {
	void *p;
	size_t len;
};

/*
 * ibv_advise_mr (the verbs_context advise_mr op). Every SGE is checked first
 * (uroce_mr_advise_range: the man page's errors); then PREFETCH and PREFETCH_WRITE fault the
 * pages in, readable or writable, at once with IBV_ADVISE_MR_FLAG_FLUSH (the synchronous
 * request: MADV_POPULATE_*) and as a read-ahead hint without it (MADV_WILLNEED, which the kernel
 * may act on later). PREFETCH_NO_FAULT makes present pages visible to the device: to uroce every
 * page already is, so it only checks. A range that is not mapped is EFAULT.
 */
int uroce_compat_advise_mr(struct ibv_pd *ibpd, enum ibv_advise_mr_advice advice, uint32_t flags,
			   struct ibv_sge *sg, uint32_t n)
{
	struct compat_pd *pd = compat_container_of(ibpd, struct compat_pd, pd);
	struct uroce_ctx *uc = compat_uc(ibpd->context);
	bool write = advice == IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE;
	struct advise_range *r;
	int err = 0;

	if (advice != IBV_ADVISE_MR_ADVICE_PREFETCH &&
	    advice != IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE &&
	    advice != IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT)
		return EOPNOTSUPP;
	if ((flags & ~(uint32_t)IBV_ADVISE_MR_FLAG_FLUSH) || !sg || !n)
		return EINVAL;
	r = calloc(n, sizeof(*r));
	if (!r)
		return ENOMEM;
	uroce_ctx_lock(uc);
	for (uint32_t i = 0; i < n && !err; i++) {
		err = uroce_mr_advise_range(pd->epd, sg[i].lkey, sg[i].addr, sg[i].length, write,
					    &r[i].p);
		r[i].len = sg[i].length;
	}
	uroce_ctx_unlock(uc);
	/* The memory is the application's: touching it needs no lock, and a page fault under the
	 * context lock would stall the progress thread. */
	for (uint32_t i = 0; i < n && !err; i++) {
		void *start;
		size_t span;

		if (!r[i].len)
			continue;
		if (advice == IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT) {
			page_span(r[i].p, r[i].len, &start, &span);
			err = span_mapped(start, span);
		} else if (!(flags & IBV_ADVISE_MR_FLAG_FLUSH)) {
			err = prefetch(r[i].p, r[i].len, MADV_WILLNEED);
		} else {
			err = prefetch(r[i].p, r[i].len,
				       write ? MADV_POPULATE_WRITE : MADV_POPULATE_READ);
		}
	}
	free(r);
	return compat_err(err);
}
