/* SPDX-License-Identifier: MIT */
/* Protection domains, memory regions, memory windows and their checks, address handles, CQs,
 * SRQs. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "transport/internal.h"

/*
 * Find the lowest free slot in a table of n pointers; -ENOMEM when full. *lo is the table's
 * lowest index that may be free (none below it is), so that making thousands of objects one
 * after the other costs a step each, not a scan of those before.
 */
static int slot_alloc(void **table, uint32_t n, uint32_t *lo)
{
	for (uint32_t i = *lo; i < n; i++) {
		if (!table[i]) {
			*lo = i; /* filled by the caller, or still free if it fails */
			return (int)i;
		}
	}
	*lo = n;
	return -ENOMEM;
}

/* Empty slot i of a table whose lowest maybe-free index is *lo. */
static void slot_free(void **table, uint32_t i, uint32_t *lo)
{
	table[i] = NULL;
	if (i < *lo)
		*lo = i;
}

/* ---- PD ---------------------------------------------------------------------------------- */

int uroce_pd_alloc(struct uroce_eng *e, struct uroce_pd **out)
{
	int i = slot_alloc((void **)e->pds, e->cfg.max_pd, &e->lo.pds);

	if (i < 0)
		return i;
	struct uroce_pd *pd = calloc(1, sizeof(*pd));

	if (!pd)
		return -ENOMEM;
	pd->eng = e;
	pd->idx = (uint32_t)i;
	e->pds[i] = pd;
	*out = pd;
	return 0;
}

int uroce_pd_free(struct uroce_pd *pd)
{
	if (pd->refs)
		return -EBUSY;
	slot_free((void **)pd->eng->pds, pd->idx, &pd->eng->lo.pds);
	free(pd);
	return 0;
}

/* ---- MR ---------------------------------------------------------------------------------- */

/* The access flags a region may have: refused ones are -EINVAL. */
static int mr_access_check(unsigned access)
{
	const unsigned known = UROCE_ACCESS_LOCAL_WRITE | UROCE_ACCESS_REMOTE_WRITE |
			       UROCE_ACCESS_REMOTE_READ | UROCE_ACCESS_REMOTE_ATOMIC |
			       UROCE_ACCESS_MW_BIND | UROCE_ACCESS_ZERO_BASED |
			       UROCE_ACCESS_ON_DEMAND;

	if (access & ~known)
		return -EINVAL;
	/* IBTA 10.6.3.1: remote write or atomic requires local write. */
	if ((access & (UROCE_ACCESS_REMOTE_WRITE | UROCE_ACCESS_REMOTE_ATOMIC)) &&
	    !(access & UROCE_ACCESS_LOCAL_WRITE))
		return -EINVAL;
	return 0;
}

static bool mr_is_implicit(const void *addr, size_t len, uint64_t iova, unsigned access)
{
	return !addr && len == SIZE_MAX && iova == 0 && (access & UROCE_ACCESS_ON_DEMAND);
}

/* A range [addr, addr + len) at iova that an explicit registration may name. */
static bool mr_range_ok(const void *addr, size_t len, uint64_t iova)
{
	return (addr || !len) && iova + len >= iova;
}

int uroce_mr_reg(struct uroce_pd *pd, void *addr, size_t len, uint64_t iova, unsigned access,
		 struct uroce_mr **out)
{
	struct uroce_eng *e = pd->eng;
	bool implicit = mr_is_implicit(addr, len, iova, access);
	int err = mr_access_check(access);

	if (err)
		return err;
	if (!implicit && !mr_range_ok(addr, len, iova))
		return -EINVAL;
	int i = slot_alloc((void **)e->mrs, e->cfg.max_mr, &e->lo.mrs);

	if (i < 0)
		return i;
	struct uroce_mr *mr = calloc(1, sizeof(*mr));

	if (!mr)
		return -ENOMEM;
	mr->eng = e;
	mr->pd = pd;
	mr->addr = addr;
	mr->iova = access & UROCE_ACCESS_ZERO_BASED ? 0 : iova;
	mr->len = len;
	mr->access = access;
	mr->implicit = implicit;
	mr->idx = (uint32_t)i;
	/* Key: slot index in the upper 24 bits, a generation byte below, never 0. */
	e->mr_gen++;
	mr->key = (uint32_t)(i + 1) << 8 | e->mr_gen;
	e->mrs[i] = mr;
	pd->refs++;
	*out = mr;
	return 0;
}

int uroce_mr_dereg(struct uroce_mr *mr)
{
	/* IBTA 10.6.7.2.6, as rxe: a region does not go while windows are bound to it. */
	if (mr->nmw)
		return -EBUSY;
	mr->pd->refs--;
	slot_free((void **)mr->eng->mrs, mr->idx, &mr->eng->lo.mrs);
	free(mr);
	return 0;
}

uint32_t uroce_mr_lkey(const struct uroce_mr *mr)
{
	return mr->key;
}

uint32_t uroce_mr_rkey(const struct uroce_mr *mr)
{
	return mr->key;
}

bool uroce_mr_implicit(const struct uroce_mr *mr)
{
	return mr->implicit;
}

int uroce_mr_rereg(struct uroce_mr *mr, unsigned flags, struct uroce_pd *pd, void *addr,
		   size_t len, uint64_t iova, unsigned access)
{
	const unsigned known = UROCE_REREG_TRANSLATION | UROCE_REREG_PD | UROCE_REREG_ACCESS;
	int err;

	if (!flags || (flags & ~known))
		return -EINVAL;
	if (flags & UROCE_REREG_PD) {
		if (!pd || pd->eng != mr->eng)
			return -EINVAL;
	} else {
		pd = mr->pd;
	}
	if (flags & UROCE_REREG_ACCESS) {
		err = mr_access_check(access);
		if (err)
			return err;
		if ((access ^ mr->access) & UROCE_ACCESS_ZERO_BASED)
			return -EINVAL;
		if (mr->implicit && ((access ^ mr->access) & UROCE_ACCESS_ON_DEMAND))
			return -EINVAL;
	} else {
		access = mr->access;
	}
	if (flags & UROCE_REREG_TRANSLATION) {
		if (mr->implicit || !addr || !len || !mr_range_ok(addr, len, iova))
			return -EINVAL;
	}
	if (pd != mr->pd) {
		mr->pd->refs--;
		pd->refs++;
		mr->pd = pd;
	}
	mr->access = access;
	if (flags & UROCE_REREG_TRANSLATION) {
		mr->addr = addr;
		mr->len = len;
		mr->iova = access & UROCE_ACCESS_ZERO_BASED ? 0 : iova;
	}
	return 0;
}

void uroce_eng_set_mem_probe(struct uroce_eng *e, uroce_mem_probe_fn fn, void *arg)
{
	e->mem_probe = fn;
	e->mem_probe_arg = arg;
}

struct uroce_mr *uroce_mr_lookup(struct uroce_eng *e, uint32_t key)
{
	uint32_t i = key >> 8; /* a window's key (top bit set) is beyond max_mr */

	if (i == 0 || i > e->cfg.max_mr)
		return NULL;
	struct uroce_mr *mr = e->mrs[i - 1];

	return mr && mr->key == key ? mr : NULL;
}

/* [va, va + len) of mr as a host pointer, or NULL when mr does not cover it. An implicit region
 * covers any range that does not wrap and does not start at address 0 (NULL means failure to
 * the callers). */
static uint8_t *mr_range_ptr(const struct uroce_mr *mr, uint64_t va, uint64_t len)
{
	if (mr->implicit) {
		if (va == 0 || va > UINTPTR_MAX || len > UINTPTR_MAX - va)
			return NULL;
		return (uint8_t *)(uintptr_t)va;
	}
	/* [va, va + len) inside [iova, iova + mr->len), without overflow. */
	if (va < mr->iova || va - mr->iova > mr->len || len > mr->len - (va - mr->iova))
		return NULL;
	return mr->addr + (va - mr->iova);
}

/* ---- MW (IBTA 10.6.7; rxe_mw.c) ---------------------------------------------------------- */

/* The access rights a window may carry. */
#define MW_ACCESS_KNOWN                                                                  \
	(UROCE_ACCESS_LOCAL_WRITE | UROCE_ACCESS_REMOTE_WRITE | UROCE_ACCESS_REMOTE_READ | \
	 UROCE_ACCESS_REMOTE_ATOMIC | UROCE_ACCESS_ZERO_BASED)

int uroce_mw_alloc(struct uroce_pd *pd, enum uroce_mw_type type, struct uroce_mw **out)
{
	struct uroce_eng *e = pd->eng;

	if (type != UROCE_MW_TYPE_1 && type != UROCE_MW_TYPE_2)
		return -EINVAL;
	int i = e->cfg.max_mw ? slot_alloc((void **)e->mws, e->cfg.max_mw, &e->lo.mws) : -ENOMEM;

	if (i < 0)
		return i;
	struct uroce_mw *mw = calloc(1, sizeof(*mw));

	if (!mw)
		return -ENOMEM;
	mw->eng = e;
	mw->pd = pd;
	mw->type = type;
	mw->idx = (uint32_t)i;
	mw->serial = ++e->mw_serial;
	e->mr_gen++;
	mw->key = UROCE_MW_KEY_BIT | (uint32_t)(i + 1) << 8 | e->mr_gen;
	e->mws[i] = mw;
	pd->refs++;
	*out = mw;
	return 0;
}

static void mw_unbind(struct uroce_mw *mw)
{
	if (mw->mr)
		mw->mr->nmw--;
	if (mw->qp)
		mw->qp->nmw--;
	mw->mr = NULL;
	mw->qp = NULL;
	mw->addr = 0;
	mw->len = 0;
	mw->access = 0;
}

int uroce_mw_dealloc(struct uroce_mw *mw)
{
	mw_unbind(mw);
	mw->pd->refs--;
	slot_free((void **)mw->eng->mws, mw->idx, &mw->eng->lo.mws);
	free(mw);
	return 0;
}

uint32_t uroce_mw_rkey(const struct uroce_mw *mw)
{
	return mw->key;
}

/* The window whose R_Key is key (key byte included), or NULL. */
static struct uroce_mw *mw_lookup(struct uroce_eng *e, uint32_t key)
{
	if (!(key & UROCE_MW_KEY_BIT))
		return NULL;
	uint32_t i = (key & ~UROCE_MW_KEY_BIT) >> 8;

	if (i == 0 || i > e->cfg.max_mw)
		return NULL;
	struct uroce_mw *mw = e->mws[i - 1];

	return mw && mw->key == key ? mw : NULL;
}

uint8_t *uroce_rkey_ptr(struct uroce_qp *qp, uint32_t rkey, uint64_t va, uint64_t len,
			unsigned access)
{
	if (!(rkey & UROCE_MW_KEY_BIT))
		return uroce_mr_ptr(uroce_mr_lookup(qp->eng, rkey), qp->pd, va, len, access);
	struct uroce_mw *mw = mw_lookup(qp->eng, rkey);

	/* Bound, same PD, the rights asked for, and a type 2B window only through its QP
	 * (rxe_lookup_mw). The region's own remote rights do not matter: the window's do. */
	if (!mw || !mw->mr || mw->pd != qp->pd || (mw->access & access) != access ||
	    (mw->type == UROCE_MW_TYPE_2 && mw->qp != qp))
		return NULL;
	/* [va, va + len) inside the window; a zero-based window takes offsets. */
	uint64_t off;

	if (mw->access & UROCE_ACCESS_ZERO_BASED) {
		off = va;
	} else {
		if (va < mw->addr)
			return NULL;
		off = va - mw->addr;
	}
	if (off > mw->len || len > mw->len - off)
		return NULL;
	return uroce_mr_ptr(mw->mr, mw->pd, mw->addr + off, len, 0);
}

/* The checks of a bind (IBTA 10.6.7.2, rxe_check_bind_mw): 0 or -EINVAL. */
static int mw_bind_check(const struct uroce_qp *qp, const struct uroce_mw *mw,
			 const struct uroce_mr *mr, uint64_t addr, uint64_t len, unsigned access)
{
	if (access & ~(unsigned)MW_ACCESS_KNOWN)
		return -EINVAL;
	if (mw->type == UROCE_MW_TYPE_1) {
		/* o10-36.2.2: no zero-based type 1 windows. */
		if (access & UROCE_ACCESS_ZERO_BASED)
			return -EINVAL;
	} else {
		/* o10-37.2.30: a type 2 window is bound only when free; C10-72: through a QP of
		 * its PD; o10-37.2.40: never to nothing (that is what invalidation is for). */
		if (mw->mr || qp->pd != mw->pd || !mr || !len)
			return -EINVAL;
	}
	if (!mr)
		return 0;
	if (mr->pd != mw->pd || (mr->access & UROCE_ACCESS_ZERO_BASED))
		return -EINVAL;
	/* C10-73: the region allows binding; C10-74: remote write and atomic rights need
	 * local write on the region. */
	if (!(mr->access & UROCE_ACCESS_MW_BIND))
		return -EINVAL;
	if ((access & (UROCE_ACCESS_REMOTE_WRITE | UROCE_ACCESS_REMOTE_ATOMIC)) &&
	    !(mr->access & UROCE_ACCESS_LOCAL_WRITE))
		return -EINVAL;
	/* C10-75: the window lies inside the region. */
	if (addr < mr->iova || addr - mr->iova > mr->len || len > mr->len - (addr - mr->iova))
		return -EINVAL;
	return 0;
}

enum uroce_wc_status uroce_mw_bind(struct uroce_qp *qp, const struct uroce_swqe *w)
{
	struct uroce_eng *e = qp->eng;
	uint64_t len = w->wr.wr.bind_mw.length;
	struct uroce_mw *mw = w->mw_idx < e->cfg.max_mw ? e->mws[w->mw_idx] : NULL;
	struct uroce_mr *mr = NULL;

	if (!mw || mw->serial != w->mw_serial)
		return UROCE_WC_MW_BIND_ERR; /* deallocated since the post */
	if (len) {
		mr = uroce_mr_lookup(e, w->mr_key);
		if (!mr)
			return UROCE_WC_MW_BIND_ERR;
	}
	if (mw_bind_check(qp, mw, mr, w->wr.wr.bind_mw.addr, len, w->wr.wr.bind_mw.access))
		return UROCE_WC_MW_BIND_ERR;
	mw_unbind(mw);
	mw->key = (mw->key & ~0xFFu) | (w->wr.wr.bind_mw.rkey & 0xFFu);
	if (mr) {
		mw->mr = mr;
		mr->nmw++;
		mw->addr = w->wr.wr.bind_mw.addr;
		mw->len = len;
		mw->access = w->wr.wr.bind_mw.access;
		if (mw->type == UROCE_MW_TYPE_2) {
			mw->qp = qp;
			qp->nmw++;
		}
	}
	return UROCE_WC_SUCCESS;
}

int uroce_mw_invalidate(struct uroce_qp *qp, uint32_t rkey)
{
	struct uroce_mw *mw = mw_lookup(qp->eng, rkey);

	/* o10-37.2.26: type 1 windows are not invalidated; a region's key names no window (uroce
	 * has no fast-registration regions, the only ones rxe invalidates). A type 2B window is
	 * invalidated only through the QP it is bound to. */
	if (!mw || mw->type != UROCE_MW_TYPE_2 || !mw->mr || mw->qp != qp)
		return -EINVAL;
	mw_unbind(mw);
	return 0;
}

void uroce_mw_forget_qp(struct uroce_qp *qp)
{
	struct uroce_eng *e = qp->eng;

	/* Most QPs have no window bound through them: no scan of the table for those. */
	for (uint32_t i = 0; qp->nmw && i < e->cfg.max_mw; i++)
		if (e->mws[i] && e->mws[i]->qp == qp)
			mw_unbind(e->mws[i]);
}

uint8_t *uroce_mr_ptr(struct uroce_mr *mr, struct uroce_pd *pd, uint64_t va, uint64_t len,
		      unsigned access)
{
	const unsigned write = UROCE_ACCESS_LOCAL_WRITE | UROCE_ACCESS_REMOTE_WRITE |
			       UROCE_ACCESS_REMOTE_ATOMIC;

	if (!mr || mr->pd != pd || (mr->access & access) != access)
		return NULL;
	uint8_t *p = mr_range_ptr(mr, va, len);
	struct uroce_eng *e = mr->eng;

	/* An implicit registration bounds nothing: ask the host whether the pages are there. */
	if (p && mr->implicit && len && e->mem_probe &&
	    e->mem_probe(e->mem_probe_arg, p, (size_t)len, (access & write) != 0))
		return NULL;
	return p;
}

int uroce_mr_advise_range(struct uroce_pd *pd, uint32_t lkey, uint64_t va, uint64_t len,
			  bool write, void **out)
{
	struct uroce_mr *mr = uroce_mr_lookup(pd->eng, lkey);

	if (!mr)
		return -ENOENT;
	if (mr->pd != pd)
		return -EPERM;
	if (!(mr->access & UROCE_ACCESS_ON_DEMAND))
		return -EINVAL;
	if (write && !(mr->access & UROCE_ACCESS_LOCAL_WRITE))
		return -EPERM;
	uint8_t *p = mr_range_ptr(mr, va, len);

	if (!p)
		return -EFAULT;
	*out = p;
	return 0;
}

/* Walk the SGE list to offset off; calls fn on each contiguous piece of [off, off + len). */
typedef int (*sge_piece_fn)(struct uroce_eng *e, uint8_t *mem, uint8_t *buf, uint32_t n);

static int sge_walk(struct uroce_eng *e, struct uroce_pd *pd, const struct uroce_sge *sge,
		    uint32_t nsge, uint32_t off, uint8_t *buf, uint32_t len, unsigned access,
		    sge_piece_fn fn)
{
	for (uint32_t i = 0; i < nsge && len; i++) {
		if (off >= sge[i].length) {
			off -= sge[i].length;
			continue;
		}
		uint32_t n = sge[i].length - off;

		if (n > len)
			n = len;
		uint8_t *mem = uroce_mr_ptr(uroce_mr_lookup(e, sge[i].lkey), pd, sge[i].addr + off,
					    n, access);

		if (!mem || fn(e, mem, buf, n))
			return -EFAULT;
		buf += n;
		len -= n;
		off = 0;
	}
	return len ? -EMSGSIZE : 0;
}

static int piece_gather(struct uroce_eng *e, uint8_t *mem, uint8_t *buf, uint32_t n)
{
	return uroce_mem_from(e, buf, mem, n);
}

static int piece_scatter(struct uroce_eng *e, uint8_t *mem, uint8_t *buf, uint32_t n)
{
	return uroce_mem_to(e, mem, buf, n);
}

int uroce_sge_gather(struct uroce_eng *e, struct uroce_pd *pd, const struct uroce_sge *sge,
		     uint32_t nsge, uint32_t off, uint8_t *dst, uint32_t len)
{
	return sge_walk(e, pd, sge, nsge, off, dst, len, 0, piece_gather);
}

int uroce_sge_scatter(struct uroce_eng *e, struct uroce_pd *pd, const struct uroce_sge *sge,
		      uint32_t nsge, uint32_t off, const uint8_t *src, uint32_t len)
{
	/* sge_walk only reads through buf for scatter; the cast keeps one walker for both. */
	return sge_walk(e, pd, sge, nsge, off, (uint8_t *)(uintptr_t)src, len,
			UROCE_ACCESS_LOCAL_WRITE, piece_scatter);
}

const uint8_t *uroce_sge_contig(struct uroce_eng *e, struct uroce_pd *pd,
				const struct uroce_sge *sge, uint32_t nsge, uint32_t off,
				uint32_t len, bool *bad)
{
	*bad = false;
	for (uint32_t i = 0; i < nsge; i++) {
		if (off >= sge[i].length && !(len == 0 && off == 0)) {
			off -= sge[i].length;
			continue;
		}
		if (len > sge[i].length - off)
			return NULL; /* spans SGEs: the caller gathers */
		const uint8_t *p = uroce_mr_ptr(uroce_mr_lookup(e, sge[i].lkey), pd,
						sge[i].addr + off, len, 0);

		if (!p)
			*bad = true;
		return p;
	}
	if (len == 0)
		return (const uint8_t *)"";
	*bad = true;
	return NULL;
}

/* ---- AH ---------------------------------------------------------------------------------- */

int uroce_ah_create(struct uroce_pd *pd, const struct uroce_av *av, struct uroce_ah **out)
{
	struct uroce_eng *e = pd->eng;
	int i = slot_alloc((void **)e->ahs, e->cfg.max_ah, &e->lo.ahs);

	if (i < 0)
		return i;
	struct uroce_ah *ah = calloc(1, sizeof(*ah));

	if (!ah)
		return -ENOMEM;
	ah->pd = pd;
	ah->av = *av;
	ah->idx = (uint32_t)i;
	e->ahs[i] = ah;
	pd->refs++;
	*out = ah;
	return 0;
}

int uroce_ah_destroy(struct uroce_ah *ah)
{
	ah->pd->refs--;
	slot_free((void **)ah->pd->eng->ahs, ah->idx, &ah->pd->eng->lo.ahs);
	free(ah);
	return 0;
}

/* ---- CQ ---------------------------------------------------------------------------------- */

int uroce_cq_create(struct uroce_eng *e, uint32_t cqe, void *user, struct uroce_cq **out)
{
	if (cqe == 0 || cqe > UROCE_MAX_CQE)
		return -EINVAL;
	int i = slot_alloc((void **)e->cqs, e->cfg.max_cq, &e->lo.cqs);

	if (i < 0)
		return i;
	struct uroce_cq *cq = calloc(1, sizeof(*cq));

	if (!cq)
		return -ENOMEM;
	cq->size = uroce_pow2(cqe);
	cq->ring = calloc(cq->size, sizeof(*cq->ring));
	if (!cq->ring) {
		free(cq);
		return -ENOMEM;
	}
	cq->eng = e;
	cq->cqe = cqe;
	cq->user = user;
	cq->idx = (uint32_t)i;
	e->cqs[i] = cq;
	*out = cq;
	return 0;
}

int uroce_cq_destroy(struct uroce_cq *cq)
{
	if (cq->refs)
		return -EBUSY;
	slot_free((void **)cq->eng->cqs, cq->idx, &cq->eng->lo.cqs);
	free(cq->ring);
	free(cq);
	return 0;
}

bool uroce_cq_push(struct uroce_cq *cq, const struct uroce_wc *wc, bool solicited)
{
	if (cq->tail - cq->head >= cq->cqe) {
		uroce_count(cq->eng, UROCE_CNT_DROP_CQ_OVERFLOW);
		uroce_eng_event(cq->eng, UROCE_EVENT_CQ_ERR, cq, cq->user);
		return false;
	}
	cq->ring[cq->tail++ & (cq->size - 1)] = *wc;
	if (cq->armed &&
	    (!cq->solicited_only || solicited || wc->status != UROCE_WC_SUCCESS)) {
		cq->armed = false;
		uroce_eng_event(cq->eng, UROCE_EVENT_COMP, cq, cq->user);
	}
	return true;
}

int uroce_cq_poll(struct uroce_cq *cq, int n, struct uroce_wc *wc)
{
	int i = 0;

	while (i < n && cq->head != cq->tail)
		wc[i++] = cq->ring[cq->head++ & (cq->size - 1)];
	return i;
}

void uroce_cq_clean(struct uroce_cq *cq, uint32_t qpn)
{
	uint32_t keep = cq->head;

	for (uint32_t i = cq->head; i != cq->tail; i++) {
		const struct uroce_wc *wc = &cq->ring[i & (cq->size - 1)];

		if (wc->qp_num != qpn)
			cq->ring[keep++ & (cq->size - 1)] = *wc;
	}
	cq->tail = keep;
}

int uroce_cq_req_notify(struct uroce_cq *cq, bool solicited_only)
{
	/* A solicited-only request does not weaken an armed "any" request (IBTA 11.4.2.2). */
	if (!cq->armed)
		cq->solicited_only = solicited_only;
	else if (!solicited_only)
		cq->solicited_only = false;
	cq->armed = true;
	return 0;
}

uint32_t uroce_cq_count(const struct uroce_cq *cq)
{
	return cq->tail - cq->head;
}

int uroce_cq_resize(struct uroce_cq *cq, uint32_t cqe)
{
	uint32_t count = cq->tail - cq->head;
	uint32_t size = uroce_pow2(cqe);

	if (cqe == 0 || cqe > UROCE_MAX_CQE || cqe < count)
		return -EINVAL;
	if (size != cq->size) {
		struct uroce_wc *ring = calloc(size, sizeof(*ring));

		if (!ring)
			return -ENOMEM;
		/* The queued completions move to the start of the new ring, in order. */
		for (uint32_t i = 0; i < count; i++)
			ring[i] = cq->ring[(cq->head + i) & (cq->size - 1)];
		free(cq->ring);
		cq->ring = ring;
		cq->size = size;
		cq->head = 0;
		cq->tail = count;
	}
	cq->cqe = cqe;
	return 0;
}

/* ---- receive queues and SRQs ----------------------------------------------------------- */

int uroce_rq_pop(struct uroce_rq *rq, struct uroce_rwqe *out, struct uroce_sge *sge_out)
{
	if (rq->head == rq->tail)
		return -ENOENT;
	struct uroce_rwqe *w = &rq->ring[rq->head & (rq->size - 1)];

	*out = *w;
	memcpy(sge_out, w->sge, w->num_sge * sizeof(*sge_out));
	out->sge = sge_out;
	rq->head++;
	return 0;
}

int uroce_srq_create(struct uroce_pd *pd, const struct uroce_srq_attr *attr, void *user,
		     struct uroce_srq **out)
{
	struct uroce_eng *e = pd->eng;

	if (!attr->max_wr || attr->max_wr > UROCE_MAX_QP_WR || attr->max_sge > UROCE_MAX_SGE ||
	    attr->srq_limit > attr->max_wr)
		return -EINVAL;
	int i = slot_alloc((void **)e->srqs, e->cfg.max_srq, &e->lo.srqs);

	if (i < 0)
		return i;
	struct uroce_srq *srq = calloc(1, sizeof(*srq));

	if (!srq)
		return -ENOMEM;
	struct uroce_rq *rq = &srq->rq;

	rq->max_wr = attr->max_wr;
	rq->max_sge = attr->max_sge ? attr->max_sge : 1;
	rq->size = uroce_pow2(attr->max_wr);
	rq->ring = calloc(rq->size, sizeof(*rq->ring));
	rq->sges = calloc((size_t)rq->size * rq->max_sge, sizeof(*rq->sges));
	if (!rq->ring || !rq->sges) {
		free(rq->ring);
		free(rq->sges);
		free(srq);
		return -ENOMEM;
	}
	for (uint32_t k = 0; k < rq->size; k++)
		rq->ring[k].sge = &rq->sges[(size_t)k * rq->max_sge];
	srq->pd = pd;
	srq->limit = attr->srq_limit;
	srq->user = user;
	srq->idx = (uint32_t)i;
	e->srqs[i] = srq;
	pd->refs++;
	*out = srq;
	return 0;
}

int uroce_srq_modify(struct uroce_srq *srq, const struct uroce_srq_attr *attr, unsigned mask)
{
	if (mask & ~(unsigned)(UROCE_SRQ_MAX_WR | UROCE_SRQ_LIMIT))
		return -EINVAL;
	if (mask & UROCE_SRQ_MAX_WR)
		return -EOPNOTSUPP;
	if (mask & UROCE_SRQ_LIMIT) {
		if (attr->srq_limit > srq->rq.max_wr)
			return -EINVAL;
		srq->limit = attr->srq_limit;
	}
	return 0;
}

int uroce_srq_query(const struct uroce_srq *srq, struct uroce_srq_attr *attr)
{
	attr->max_wr = srq->rq.max_wr;
	attr->max_sge = srq->rq.max_sge;
	attr->srq_limit = srq->limit;
	return 0;
}

int uroce_srq_destroy(struct uroce_srq *srq)
{
	if (srq->refs)
		return -EBUSY;
	srq->pd->refs--;
	slot_free((void **)srq->pd->eng->srqs, srq->idx, &srq->pd->eng->lo.srqs);
	free(srq->rq.ring);
	free(srq->rq.sges);
	free(srq);
	return 0;
}

/* The limit event fires once when the queue drops below the limit, then disarms (IBTA 10.2.9.4). */
void uroce_srq_check_limit(struct uroce_srq *srq)
{
	if (srq->limit && srq->rq.tail - srq->rq.head < srq->limit) {
		srq->limit = 0;
		uroce_eng_event(srq->pd->eng, UROCE_EVENT_SRQ_LIMIT_REACHED, srq, srq->user);
	}
}
