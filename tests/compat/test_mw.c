/* SPDX-License-Identifier: MIT */
/*
 * Memory windows through uroce's libibverbs.so.1, compiled against Debian's <infiniband/verbs.h>
 * so that the inlines ibv_alloc_mw, ibv_bind_mw and ibv_dealloc_mw reach our ops as in an
 * application: what ibv_query_device says of windows, a type 1 window bound with ibv_bind_mw and
 * written through, a type 2 window bound with IBV_WR_BIND_MW, invalidated by the peer's
 * IBV_WR_SEND_WITH_INV (IBV_WC_WITH_INV, invalidated_rkey), bound again, invalidated with
 * IBV_WR_LOCAL_INV, and then refused to the peer (IBV_WC_REM_ACCESS_ERR).
 *
 * Two RC QPs of one context on the device's IPv4 address (default uroce_lo and 127.0.0.1;
 * argv[1], argv[2] override them); a writes into b's memory through b's windows.
 * Exit 77 (skip) when the device does not exist or cannot be opened here.
 */
#include <errno.h>
#include <infiniband/verbs.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "verbs_kit.h"

static void make_end(struct ibv_context *ctx, struct ibv_pd *pd, int access, struct end *e)
{
	const struct ibv_qp_cap cap = {
		.max_send_wr = 32, .max_recv_wr = 32, .max_send_sge = 1, .max_recv_sge = 1};

	end_make(e, ctx, pd, NULL, access, cap);
}

static void to_rts(struct ibv_qp *qp, uint32_t dest_qpn, int gid_idx, const union ibv_gid *dgid)
{
	rc_to_rts(qp, IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_LOCAL_WRITE,
		  dest_qpn, gid_idx, dgid, 100);
}

/* a writes len bytes of its buffer to remote address raddr under rkey; the status. */
static int a_write(struct end *a, uint64_t raddr, uint32_t rkey, uint32_t len)
{
	struct ibv_sge sge = {(uintptr_t)a->buf, len, a->mr->lkey};
	struct ibv_send_wr wr = {0}, *bad;
	struct ibv_wc wc;

	wr.wr_id = 0xA;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	CHECK_EQ(ibv_post_send(a->qp, &wr, &bad), 0);
	int st = poll_one(a->cq, &wc);

	if (st >= 0)
		CHECK_EQ(wc.opcode, IBV_WC_RDMA_WRITE);
	return st;
}

/* A type 2 bind of [b.buf + 1024, + 2048) with remote write, posted on b's QP; the new R_Key. */
static uint32_t bind_type2(struct end *b, struct ibv_mw *mw)
{
	struct ibv_send_wr wr = {0}, *bad;
	struct ibv_wc wc;

	wr.wr_id = 0xB2;
	wr.opcode = IBV_WR_BIND_MW;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.bind_mw.mw = mw;
	wr.bind_mw.rkey = ibv_inc_rkey(mw->rkey);
	wr.bind_mw.bind_info = (struct ibv_mw_bind_info){
		.mr = b->mr,
		.addr = (uintptr_t)b->buf + 1024,
		.length = 2048,
		.mw_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_LOCAL_WRITE,
	};
	CHECK_EQ(ibv_post_send(b->qp, &wr, &bad), 0);
	CHECK_EQ(poll_one(b->cq, &wc), IBV_WC_SUCCESS);
	CHECK(wc.wr_id == 0xB2 && wc.opcode == IBV_WC_BIND_MW);
	return wr.bind_mw.rkey;
}

static void test_mw(struct ibv_context *ctx, struct ibv_pd *pd, int gid_idx)
{
	struct end a, b;
	union ibv_gid gid;
	struct ibv_wc wc;

	make_end(ctx, pd, IBV_ACCESS_LOCAL_WRITE, &a);
	/* b's region gives no remote rights of its own: only its windows do. */
	make_end(ctx, pd, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND, &b);
	if (!a.qp || !b.qp || !a.mr || !b.mr)
		return;
	CHECK_EQ(ibv_query_gid(ctx, 1, gid_idx, &gid), 0);
	to_rts(a.qp, b.qp->qp_num, gid_idx, &gid);
	to_rts(b.qp, a.qp->qp_num, gid_idx, &gid);
	uint64_t win = (uintptr_t)b.buf + 1024;

	/* Type 1: ibv_bind_mw posts the bind and hands out the new R_Key at once. */
	struct ibv_mw *mw1 = ibv_alloc_mw(pd, IBV_MW_TYPE_1);

	CHECK(mw1 != NULL);
	if (!mw1)
		return;
	CHECK(mw1->type == IBV_MW_TYPE_1 && mw1->pd == pd && mw1->context == ctx);
	uint32_t k0 = mw1->rkey;
	struct ibv_mw_bind bind = {
		.wr_id = 0xB1,
		.send_flags = IBV_SEND_SIGNALED,
		.bind_info = {.mr = b.mr, .addr = win, .length = 2048,
			      .mw_access_flags = IBV_ACCESS_REMOTE_WRITE},
	};

	CHECK_EQ(ibv_bind_mw(b.qp, mw1, &bind), 0);
	CHECK_EQ(mw1->rkey, ibv_inc_rkey(k0));
	CHECK_EQ(poll_one(b.cq, &wc), IBV_WC_SUCCESS);
	CHECK(wc.wr_id == 0xB1 && wc.opcode == IBV_WC_BIND_MW);
	memcpy(a.buf, "through window 1", 17);
	CHECK_EQ(a_write(&a, win + 8, mw1->rkey, 17), IBV_WC_SUCCESS);
	CHECK_MEM_EQ(b.buf + 1024 + 8, "through window 1", 17);
	/* A zero-based type 1 window does not exist (o10-36.2.2): refused before posting. */
	bind.bind_info.mw_access_flags |= IBV_ACCESS_ZERO_BASED;
	CHECK_EQ(ibv_bind_mw(b.qp, mw1, &bind), EINVAL);
	CHECK_EQ(mw1->rkey, ibv_inc_rkey(k0));
	/* A region with a window bound is not deregistered. */
	CHECK_EQ(ibv_dereg_mr(b.mr), EBUSY);
	CHECK_EQ(ibv_dealloc_mw(mw1), 0);

	/* Type 2: bound by a work request; ibv_bind_mw is for type 1 only (the inline says so). */
	struct ibv_mw *mw2 = ibv_alloc_mw(pd, IBV_MW_TYPE_2);

	CHECK(mw2 != NULL);
	if (!mw2)
		return;
	CHECK_EQ(ibv_bind_mw(b.qp, mw2, &bind), EINVAL);
	uint32_t k2 = bind_type2(&b, mw2);

	memcpy(a.buf, "through window 2", 17);
	CHECK_EQ(a_write(&a, win + 100, k2, 17), IBV_WC_SUCCESS);
	CHECK_MEM_EQ(b.buf + 1024 + 100, "through window 2", 17);

	/* a's SEND with Invalidate closes it; b's receive names the key. */
	struct ibv_sge rsge = {(uintptr_t)b.buf + 4096, 64, b.mr->lkey};
	struct ibv_recv_wr rwr = {.wr_id = 0xC, .sg_list = &rsge, .num_sge = 1}, *rbad;
	struct ibv_sge ssge = {(uintptr_t)a.buf, 17, a.mr->lkey};
	struct ibv_send_wr swr = {0}, *sbad;

	CHECK_EQ(ibv_post_recv(b.qp, &rwr, &rbad), 0);
	swr.wr_id = 0xD;
	swr.sg_list = &ssge;
	swr.num_sge = 1;
	swr.opcode = IBV_WR_SEND_WITH_INV;
	swr.send_flags = IBV_SEND_SIGNALED;
	swr.invalidate_rkey = k2;
	CHECK_EQ(ibv_post_send(a.qp, &swr, &sbad), 0);
	printf("SEND_WITH_INV R_Key 0x%08x\n", k2); /* mw_capture.sh finds it in the capture */
	CHECK_EQ(poll_one(b.cq, &wc), IBV_WC_SUCCESS);
	CHECK(wc.wr_id == 0xC && wc.opcode == IBV_WC_RECV && wc.byte_len == 17);
	CHECK((wc.wc_flags & IBV_WC_WITH_INV) && !(wc.wc_flags & IBV_WC_WITH_IMM));
	CHECK_EQ(wc.invalidated_rkey, k2);
	CHECK_EQ(poll_one(a.cq, &wc), IBV_WC_SUCCESS);
	CHECK(wc.wr_id == 0xD && wc.opcode == IBV_WC_SEND);

	/* Free again: bound again, then invalidated locally by b. */
	k2 = bind_type2(&b, mw2);
	CHECK_EQ(a_write(&a, win, k2, 8), IBV_WC_SUCCESS);
	memset(&swr, 0, sizeof(swr));
	swr.wr_id = 0xE;
	swr.opcode = IBV_WR_LOCAL_INV;
	swr.send_flags = IBV_SEND_SIGNALED;
	swr.invalidate_rkey = k2;
	CHECK_EQ(ibv_post_send(b.qp, &swr, &sbad), 0);
	CHECK_EQ(poll_one(b.cq, &wc), IBV_WC_SUCCESS);
	CHECK(wc.wr_id == 0xE && wc.opcode == IBV_WC_LOCAL_INV);
	/* The key is dead: a's write fails with a remote access error. */
	CHECK_EQ(a_write(&a, win, k2, 8), IBV_WC_REM_ACCESS_ERR);
	CHECK_EQ(ibv_dealloc_mw(mw2), 0);
	end_free(&a);
	end_free(&b);
}

int main(int argc, char **argv)
{
	const char *devname = argc > 1 ? argv[1] : "uroce_lo";
	const char *ip4 = argc > 2 ? argv[2] : "127.0.0.1";
	struct ibv_context *ctx = open_device(devname);
	struct ibv_device_attr da;

	CHECK_EQ(ibv_query_device(ctx, &da), 0);
	CHECK_GT(da.max_mw, 0);
	CHECK(da.device_cap_flags & IBV_DEVICE_MEM_WINDOW);
	CHECK(da.device_cap_flags & IBV_DEVICE_MEM_WINDOW_TYPE_2B);

	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	int gid_idx = find_gid(ctx, ip4);

	CHECK(pd != NULL);
	if (pd) {
		errno = 0;
		CHECK(ibv_alloc_mw(pd, (enum ibv_mw_type)3) == NULL && errno == EINVAL);
		struct ibv_mw *mw = ibv_alloc_mw(pd, IBV_MW_TYPE_2);

		CHECK(mw != NULL);
		CHECK_EQ(ibv_dealloc_pd(pd), EBUSY); /* the window holds it */
		if (mw)
			CHECK_EQ(ibv_dealloc_mw(mw), 0);
	}
	if (pd && gid_idx >= 0)
		test_mw(ctx, pd, gid_idx);
	if (pd)
		CHECK_EQ(ibv_dealloc_pd(pd), 0);
	CHECK_EQ(ibv_close_device(ctx), 0);
	return check_exit_with("compat_mw", verbs_kit_checks);
}
