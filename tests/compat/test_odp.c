/* SPDX-License-Identifier: MIT */
/*
 * On-demand paging, ibv_advise_mr and ibv_rereg_mr through uroce's libibverbs.so.1, compiled
 * against Debian's <infiniband/verbs.h> (ibv_advise_mr is a header inline through the
 * verbs_context op, as in an application).
 *
 * Two RC QPs of one context, connected to each other over RoCE v2 on the device's IPv4 address
 * (default uroce_lo and 127.0.0.1; argv[1], argv[2] override them): the ODP capabilities;
 * implicit regions carrying SEND and RDMA WRITE to any address, and refusing memory that is not
 * mapped or not writable without crashing; advise_mr's errors and its prefetch seen by mincore;
 * rereg's error returns, then a new range, PD and access with the same keys.
 * Exit 77 (skip) when the device does not exist or cannot be opened here.
 */
#include <errno.h>
#include <infiniband/verbs.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "verbs_kit.h"

#define RW (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE)

static int gid_idx;
static union ibv_gid gid;
static size_t pg;

/* An end without a buffer: the regions are the cases' own. */
static void make_end(struct ibv_context *ctx, struct ibv_pd *pd, struct end *e)
{
	const struct ibv_qp_cap cap = {
		.max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 1, .max_recv_sge = 1};

	end_make(e, ctx, pd, NULL, 0, cap);
}

/* RESET, then the kit's bring-up towards dest_qpn on our own GID. */
static void to_rts(struct ibv_qp *qp, uint32_t dest_qpn)
{
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_RESET};

	CHECK_EQ(ibv_modify_qp(qp, &a, IBV_QP_STATE), 0);
	rc_to_rts(qp, RW | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_ON_DEMAND, dest_qpn, gid_idx, &gid,
		  0);
}

/* Both QPs (back) to RTS, connected to each other. */
static void pair_up(struct end *a, struct end *b)
{
	to_rts(a->qp, b->qp->qp_num);
	to_rts(b->qp, a->qp->qp_num);
}

/* RDMA WRITE of len bytes from src (lkey) to va (rkey): the requester's completion status. */
static int write_to(struct end *a, const void *src, uint32_t len, uint32_t lkey, uint64_t va,
		    uint32_t rkey)
{
	struct ibv_sge s = {.addr = (uintptr_t)src, .length = len, .lkey = lkey};
	struct ibv_send_wr w = {.sg_list = &s, .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE,
				.send_flags = IBV_SEND_SIGNALED},
			   *bad;
	struct ibv_wc wc;

	w.wr.rdma.remote_addr = va;
	w.wr.rdma.rkey = rkey;
	CHECK_EQ(ibv_post_send(a->qp, &w, &bad), 0);
	return poll_one(a->cq, &wc);
}

/* A fresh anonymous mapping of n pages, none of them touched. */
static uint8_t *fresh(size_t n)
{
	void *p = mmap(NULL, n * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	CHECK(p != MAP_FAILED);
	return p == MAP_FAILED ? NULL : p;
}

/* How many of the n pages at p are resident. */
static int resident(uint8_t *p, size_t n)
{
	unsigned char v[16];
	int r = 0;

	CHECK(n <= sizeof(v));
	CHECK_EQ(mincore(p, n * pg, v), 0);
	for (size_t i = 0; i < n; i++)
		r += v[i] & 1;
	return r;
}

static void caps(struct ibv_context *ctx)
{
	struct ibv_device_attr_ex dx;
	const uint32_t rc = IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV | IBV_ODP_SUPPORT_WRITE |
			    IBV_ODP_SUPPORT_READ | IBV_ODP_SUPPORT_ATOMIC |
			    IBV_ODP_SUPPORT_SRQ_RECV;

	CHECK_EQ(ibv_query_device_ex(ctx, NULL, &dx), 0);
	CHECK_EQ(dx.odp_caps.general_caps, IBV_ODP_SUPPORT | IBV_ODP_SUPPORT_IMPLICIT);
	CHECK_EQ(dx.odp_caps.per_transport_caps.rc_odp_caps, rc);
	CHECK_EQ(dx.odp_caps.per_transport_caps.uc_odp_caps,
		 IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV | IBV_ODP_SUPPORT_WRITE |
			 IBV_ODP_SUPPORT_SRQ_RECV);
	CHECK_EQ(dx.odp_caps.per_transport_caps.ud_odp_caps,
		 IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV | IBV_ODP_SUPPORT_SRQ_RECV);
	CHECK_EQ(dx.xrc_odp_caps, 0);
}

static void implicit(struct ibv_pd *pd, struct end *a, struct end *b)
{
	struct ibv_mr *imp, *mr;
	uint8_t *src = calloc(1, 8192), *dst = calloc(1, 8192), *hole, *ro;

	/* Without ON_DEMAND the whole address space is no region. */
	errno = 0;
	CHECK(ibv_reg_mr(pd, NULL, SIZE_MAX, RW) == NULL);
	CHECK_EQ(errno, EINVAL);
	/* HUGETLB is a hint: any memory takes it. */
	mr = ibv_reg_mr(pd, src, 8192, RW | IBV_ACCESS_ON_DEMAND | IBV_ACCESS_HUGETLB);
	CHECK(mr != NULL);
	CHECK_EQ(ibv_dereg_mr(mr), 0);

	imp = ibv_reg_mr(pd, NULL, SIZE_MAX, RW | IBV_ACCESS_ON_DEMAND);
	CHECK(imp != NULL);
	if (!imp || !src || !dst)
		return;
	CHECK(imp->addr == NULL && imp->length == SIZE_MAX && imp->lkey == imp->rkey);

	/* SEND from one malloc'd buffer into another through the one implicit key. */
	for (int i = 0; i < 5000; i++)
		src[i] = (uint8_t)(i * 7 + 3);
	struct ibv_sge rs = {.addr = (uintptr_t)dst + 10, .length = 8000, .lkey = imp->lkey};
	struct ibv_recv_wr rw = {.wr_id = 1, .sg_list = &rs, .num_sge = 1}, *rbad;
	struct ibv_sge ss = {.addr = (uintptr_t)src, .length = 5000, .lkey = imp->lkey};
	struct ibv_send_wr sw = {.sg_list = &ss, .num_sge = 1, .opcode = IBV_WR_SEND,
				 .send_flags = IBV_SEND_SIGNALED},
			   *sbad;
	struct ibv_wc wc;

	CHECK_EQ(ibv_post_recv(b->qp, &rw, &rbad), 0);
	CHECK_EQ(ibv_post_send(a->qp, &sw, &sbad), 0);
	CHECK_EQ(poll_one(a->cq, &wc), IBV_WC_SUCCESS);
	CHECK_EQ(poll_one(b->cq, &wc), IBV_WC_SUCCESS);
	CHECK_MEM_EQ(dst + 10, src, 5000);

	/* RDMA WRITE to any address. */
	CHECK_EQ(write_to(a, src + 100, 3000, imp->lkey, (uintptr_t)dst + 4000, imp->rkey),
		 IBV_WC_SUCCESS);
	CHECK_MEM_EQ(dst + 4000, src + 100, 3000);

	/* A hole in the address space and a read-only page: refused, and the process lives. */
	hole = fresh(2);
	ro = fresh(1);
	if (!hole || !ro)
		return;
	CHECK_EQ(munmap(hole + pg, pg), 0);
	CHECK_EQ(write_to(a, src, 64, imp->lkey, (uintptr_t)hole + pg + 8, imp->rkey),
		 IBV_WC_REM_ACCESS_ERR);
	pair_up(a, b);
	CHECK_EQ(write_to(a, src, 64, imp->lkey, (uintptr_t)hole + pg - 32, imp->rkey),
		 IBV_WC_REM_ACCESS_ERR); /* straddles the hole */
	pair_up(a, b);
	CHECK_EQ(mprotect(ro, pg, PROT_READ), 0);
	CHECK_EQ(write_to(a, src, 64, imp->lkey, (uintptr_t)ro, imp->rkey),
		 IBV_WC_REM_ACCESS_ERR);
	pair_up(a, b);
	/* The requester's own SGE in the hole: its local error, before anything is sent. */
	CHECK_EQ(write_to(a, hole + pg, 64, imp->lkey, (uintptr_t)dst, imp->rkey),
		 IBV_WC_LOC_PROT_ERR);
	pair_up(a, b);
	CHECK_EQ(write_to(a, src, 64, imp->lkey, (uintptr_t)hole + 8, imp->rkey), IBV_WC_SUCCESS);
	CHECK_MEM_EQ(hole + 8, src, 64);

	CHECK_EQ(ibv_dereg_mr(imp), 0);
	munmap(hole, pg);
	munmap(ro, pg);
	free(src);
	free(dst);
}

static void advise(struct ibv_pd *pd)
{
	uint8_t *mem = fresh(8), *hole = fresh(2);
	struct ibv_mr *odp, *ro, *plain, *imp;
	struct ibv_sge sg;

	if (!mem || !hole)
		return;
	CHECK_EQ(munmap(hole + pg, pg), 0);
	odp = ibv_reg_mr(pd, mem, 4 * pg, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_ON_DEMAND);
	ro = ibv_reg_mr(pd, mem + 4 * pg, 4 * pg, IBV_ACCESS_ON_DEMAND);
	plain = ibv_reg_mr(pd, mem, 4 * pg, IBV_ACCESS_LOCAL_WRITE);
	imp = ibv_reg_mr(pd, NULL, SIZE_MAX, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_ON_DEMAND);
	CHECK(odp && ro && plain && imp);
	if (!odp || !ro || !plain || !imp)
		return;

	/* The errors, nothing touched. */
	sg = (struct ibv_sge){.addr = (uintptr_t)mem, .length = (uint32_t)pg, .lkey = odp->lkey};
	CHECK_EQ(ibv_advise_mr(pd, (enum ibv_advise_mr_advice)7, IBV_ADVISE_MR_FLAG_FLUSH, &sg, 1),
		 EOPNOTSUPP);
	CHECK_EQ(ibv_advise_mr(pd, IBV_ADVISE_MR_ADVICE_PREFETCH, 2, &sg, 1), EINVAL);
	CHECK_EQ(ibv_advise_mr(pd, IBV_ADVISE_MR_ADVICE_PREFETCH, 0, &sg, 0), EINVAL);
	sg.lkey = odp->lkey ^ 0x100;
	CHECK_EQ(ibv_advise_mr(pd, IBV_ADVISE_MR_ADVICE_PREFETCH, 0, &sg, 1), ENOENT);
	sg.lkey = plain->lkey;
	CHECK_EQ(ibv_advise_mr(pd, IBV_ADVISE_MR_ADVICE_PREFETCH, 0, &sg, 1), EINVAL);
	sg = (struct ibv_sge){.addr = (uintptr_t)mem + 4 * pg, .length = 8, .lkey = ro->lkey};
	CHECK_EQ(ibv_advise_mr(pd, IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE, IBV_ADVISE_MR_FLAG_FLUSH,
			       &sg, 1),
		 EPERM);
	sg = (struct ibv_sge){.addr = (uintptr_t)mem + 3 * pg, .length = (uint32_t)pg + 1,
			      .lkey = odp->lkey};
	CHECK_EQ(ibv_advise_mr(pd, IBV_ADVISE_MR_ADVICE_PREFETCH, IBV_ADVISE_MR_FLAG_FLUSH, &sg,
			       1),
		 EFAULT);
	CHECK_EQ(resident(mem, 8), 0);

	/* Implicit: memory that is not mapped is EFAULT, whatever the advice. */
	sg = (struct ibv_sge){.addr = (uintptr_t)hole + pg - 8, .length = 16, .lkey = imp->lkey};
	CHECK_EQ(ibv_advise_mr(pd, IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE, IBV_ADVISE_MR_FLAG_FLUSH,
			       &sg, 1),
		 EFAULT);
	CHECK_EQ(ibv_advise_mr(pd, IBV_ADVISE_MR_ADVICE_PREFETCH, 0, &sg, 1), EFAULT);
	CHECK_EQ(ibv_advise_mr(pd, IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT, 0, &sg, 1), EFAULT);

	/* NO_FAULT faults nothing in; PREFETCH_WRITE with FLUSH does, SGE by SGE. */
	struct ibv_sge two[2] = {
		{.addr = (uintptr_t)mem + 10, .length = 20, .lkey = odp->lkey},
		{.addr = (uintptr_t)mem + 2 * pg, .length = (uint32_t)pg + 1, .lkey = imp->lkey},
	};

	CHECK_EQ(ibv_advise_mr(pd, IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT, IBV_ADVISE_MR_FLAG_FLUSH,
			       two, 2),
		 0);
	CHECK_EQ(resident(mem, 8), 0);
	CHECK_EQ(ibv_advise_mr(pd, IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE, IBV_ADVISE_MR_FLAG_FLUSH,
			       two, 2),
		 0);
	CHECK_EQ(resident(mem, 8), 3); /* pages 0, 2 and 3: the second SGE spans two */
	CHECK_EQ(resident(mem + pg, 1), 0);
	/* Without FLUSH: a hint the kernel may act on later, so only the result is checked. */
	two[0].addr = (uintptr_t)mem + 5 * pg;
	two[0].lkey = ro->lkey;
	CHECK_EQ(ibv_advise_mr(pd, IBV_ADVISE_MR_ADVICE_PREFETCH, 0, two, 1), 0);

	CHECK_EQ(ibv_dereg_mr(imp), 0);
	CHECK_EQ(ibv_dereg_mr(plain), 0);
	CHECK_EQ(ibv_dereg_mr(ro), 0);
	CHECK_EQ(ibv_dereg_mr(odp), 0);
	munmap(mem, 8 * pg);
	munmap(hole, pg);
}

static void rereg(struct ibv_context *ctx, struct ibv_pd *pd, struct end *a, struct end *b)
{
	uint8_t *src = calloc(1, 4096), *m1 = calloc(1, 4096), *m2 = calloc(1, 4096);
	struct ibv_mr *smr = ibv_reg_mr(pd, src, 4096, RW);
	struct ibv_mr *mr = ibv_reg_mr(pd, m1, 4096, RW);
	struct ibv_pd *pd2 = ibv_alloc_pd(ctx);

	CHECK(src && m1 && m2 && smr && mr && pd2);
	if (!src || !m1 || !m2 || !smr || !mr || !pd2)
		return;
	uint32_t lkey = mr->lkey, rkey = mr->rkey;

	/* rdma-core's own input checks. */
	errno = 0;
	CHECK_EQ(ibv_rereg_mr(mr, 8, NULL, NULL, 0, 0), IBV_REREG_MR_ERR_INPUT);
	CHECK_EQ(errno, EINVAL);
	errno = 0;
	CHECK_EQ(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_TRANSLATION, NULL, NULL, 64, 0),
		 IBV_REREG_MR_ERR_INPUT);
	CHECK_EQ(errno, EINVAL);
	errno = 0;
	CHECK_EQ(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_TRANSLATION, NULL, m2, 0, 0),
		 IBV_REREG_MR_ERR_INPUT);
	CHECK_EQ(errno, EINVAL);
	errno = 0;
	CHECK_EQ(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_PD, pd2, NULL, 0, RW), IBV_REREG_MR_ERR_INPUT);
	CHECK_EQ(errno, EINVAL);
	/* Then what the kernel would refuse. */
	errno = 0;
	CHECK_EQ(ibv_rereg_mr(mr, 0, NULL, NULL, 0, 0), IBV_REREG_MR_ERR_CMD);
	CHECK_EQ(errno, EINVAL);
	errno = 0;
	CHECK_EQ(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
			      IBV_ACCESS_REMOTE_WRITE),
		 IBV_REREG_MR_ERR_CMD);
	CHECK_EQ(errno, EINVAL);
	errno = 0;
	CHECK_EQ(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0, RW | (1 << 9)),
		 IBV_REREG_MR_ERR_CMD);
	CHECK_EQ(errno, EOPNOTSUPP);
	errno = 0;
	CHECK_EQ(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_PD, NULL, NULL, 0, 0), IBV_REREG_MR_ERR_CMD);
	CHECK_EQ(errno, EINVAL);
	CHECK(mr->addr == m1 && mr->length == 4096 && mr->pd == pd);

	/* TRANSLATION: the same keys reach m2; m1 is no longer the region. */
	CHECK_EQ(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_TRANSLATION, NULL, m2, 2048, 0), 0);
	CHECK(mr->addr == m2 && mr->length == 2048 && mr->lkey == lkey && mr->rkey == rkey);
	memset(src, 0x61, 4096);
	CHECK_EQ(write_to(a, src, 100, smr->lkey, (uintptr_t)m2 + 1948, rkey), IBV_WC_SUCCESS);
	CHECK(m2[1948] == 0x61 && m2[2047] == 0x61);
	CHECK_EQ(write_to(a, src, 100, smr->lkey, (uintptr_t)m1, rkey), IBV_WC_REM_ACCESS_ERR);
	CHECK_EQ(m1[0], 0);
	pair_up(a, b);

	/* ACCESS: local write only, and the remote write is refused. */
	CHECK_EQ(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
			      IBV_ACCESS_LOCAL_WRITE),
		 0);
	memset(src, 0x62, 4096);
	CHECK_EQ(write_to(a, src, 100, smr->lkey, (uintptr_t)m2, rkey), IBV_WC_REM_ACCESS_ERR);
	CHECK_EQ(m2[0], 0);
	pair_up(a, b);

	/* PD (and ACCESS back): in another PD than the QP's, then in the QP's again. */
	CHECK_EQ(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_PD | IBV_REREG_MR_CHANGE_ACCESS, pd2, NULL,
			      0, RW),
		 0);
	CHECK(mr->pd == pd2);
	CHECK_EQ(ibv_dealloc_pd(pd2), EBUSY);
	CHECK_EQ(write_to(a, src, 100, smr->lkey, (uintptr_t)m2, rkey), IBV_WC_REM_ACCESS_ERR);
	pair_up(a, b);
	CHECK_EQ(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_PD, pd, NULL, 0, 0), 0);
	CHECK_EQ(write_to(a, src, 100, smr->lkey, (uintptr_t)m2, rkey), IBV_WC_SUCCESS);
	CHECK_EQ(m2[0], 0x62);

	CHECK_EQ(ibv_dereg_mr(mr), 0);
	CHECK_EQ(ibv_dereg_mr(smr), 0);
	CHECK_EQ(ibv_dealloc_pd(pd2), 0);
	free(src);
	free(m1);
	free(m2);
}

int main(int argc, char **argv)
{
	const char *devname = argc > 1 ? argv[1] : "uroce_lo";
	const char *ip4 = argc > 2 ? argv[2] : "127.0.0.1";

	pg = (size_t)sysconf(_SC_PAGESIZE);
	struct ibv_context *ctx = open_device(devname);

	gid_idx = find_gid(ctx, ip4);
	struct ibv_pd *pd = ibv_alloc_pd(ctx);

	CHECK(pd != NULL);
	if (pd && gid_idx >= 0 && ibv_query_gid(ctx, 1, gid_idx, &gid) == 0) {
		struct end a, b;

		caps(ctx);
		make_end(ctx, pd, &a);
		make_end(ctx, pd, &b);
		CHECK_BAIL();
		pair_up(&a, &b);
		implicit(pd, &a, &b);
		advise(pd);
		rereg(ctx, pd, &a, &b);
		end_free(&a);
		end_free(&b);
		CHECK_EQ(ibv_dealloc_pd(pd), 0);
	}
	CHECK_EQ(ibv_close_device(ctx), 0);
	return check_exit_with("compat_odp", verbs_kit_checks);
}
