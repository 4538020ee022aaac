/* SPDX-License-Identifier: MIT */
/*
 * Extended QPs through uroce's libibverbs.so.1, compiled against Debian's <infiniband/verbs.h>
 * so ibv_create_qp_ex and the ibv_wr_* inlines jump through our ops exactly as in an
 * application (pyverbs' test_qpex and test_qp do the same).
 *
 * - ibv_create_qp_ex: what it takes and refuses (rxe's rules), ibv_qp_to_qp_ex, and random
 *   capabilities within the device's limits always granted (pyverbs picks them so).
 * - The ibv_wr_* API between two RC QPs and two UD QPs of one context on the device's IPv4
 *   address (default uroce_lo and 127.0.0.1; argv[1], argv[2] override them): every builder
 *   and setter with its data checked on the other side; a batch posts whole or not at all
 *   (a bad request, an operation not enabled, more than the queue holds, abort, RESET);
 *   inline data is copied when it is set.
 * - The receive side's bad flows pyverbs checks: RESET, a full receive queue, too many SGEs.
 * - The context's cmd_fd is a descriptor that can be dup'ed (pyverbs' shared PD test).
 * Exit 77 (skip) when the device does not exist or cannot be opened here.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <infiniband/verbs.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "verbs_kit.h"

#define DEPTH 8 /* max_send_wr asked for */

/* The next completion on cq is wr_id's and succeeded: so nothing posted before it is there. */
static void expect_wc(struct ibv_cq *cq, uint64_t wr_id, enum ibv_wc_opcode op, struct ibv_wc *wc)
{
	int st = poll_one(cq, wc);

	CHECKF(st == IBV_WC_SUCCESS, "wr %llu: %s", (unsigned long long)wr_id,
	       st < 0 ? "no completion" : ibv_wc_status_str(wc->status));
	if (st < 0)
		return;
	CHECK_EQ(wc->wr_id, wr_id);
	CHECK_EQ(wc->opcode, op);
}

static struct ibv_qp *create_ex(struct ibv_context *ctx, struct ibv_pd *pd, struct ibv_cq *cq,
				enum ibv_qp_type type, uint32_t comp_mask, uint64_t ops)
{
	struct ibv_qp_init_attr_ex a = {
		.send_cq = cq,
		.recv_cq = cq,
		.cap = {.max_send_wr = DEPTH, .max_recv_wr = 16, .max_send_sge = 2,
			.max_recv_sge = 2, .max_inline_data = 64},
		.qp_type = type,
		.comp_mask = comp_mask,
		.pd = pd,
		.send_ops_flags = ops,
	};

	return ibv_create_qp_ex(ctx, &a);
}

/* NULL and errno err. */
static void refused(struct ibv_qp *qp, int err)
{
	CHECK(qp == NULL);
	CHECK_EQ(errno, err);
	if (qp)
		ibv_destroy_qp(qp);
}

static void test_create(struct ibv_context *ctx, struct ibv_pd *pd, struct ibv_cq *cq)
{
	const uint32_t pd_ops = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	struct ibv_qp *qp;

	/* CREATE_FLAGS with no flag is a plain QP (pyverbs sets the mask at random). */
	for (int t = 0; t < 3; t++) {
		enum ibv_qp_type type = t == 0 ? IBV_QPT_RC : t == 1 ? IBV_QPT_UC : IBV_QPT_UD;

		qp = create_ex(ctx, pd, cq, type, IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_CREATE_FLAGS,
			       0);
		CHECKF(qp != NULL, "type %d: %s", type, strerror(errno));
		if (qp) {
			CHECK(qp->qp_type == type && qp->state == IBV_QPS_RESET);
			CHECK(ibv_qp_to_qp_ex(qp) == NULL); /* no send ops flags: no ibv_qp_ex */
			CHECK_EQ(ibv_destroy_qp(qp), 0);
		}
	}
	/* rxe takes no creation flag; nor XRC, TSO headers or RSS. */
	struct ibv_qp_init_attr_ex a = {.send_cq = cq,
					.recv_cq = cq,
					.cap = {.max_send_wr = 4, .max_recv_wr = 4},
					.qp_type = IBV_QPT_UD,
					.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_CREATE_FLAGS,
					.pd = pd,
					.create_flags = IBV_QP_CREATE_BLOCK_SELF_MCAST_LB};

	refused(ibv_create_qp_ex(ctx, &a), EOPNOTSUPP);
	a.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_MAX_TSO_HEADER;
	refused(ibv_create_qp_ex(ctx, &a), EOPNOTSUPP);
	a.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_XRCD;
	refused(ibv_create_qp_ex(ctx, &a), EOPNOTSUPP);
	a.comp_mask = IBV_QP_INIT_ATTR_SEND_OPS_FLAGS; /* no PD */
	refused(ibv_create_qp_ex(ctx, &a), EINVAL);

	/* The operations per QP type, as rxe allows them. */
	refused(create_ex(ctx, pd, cq, IBV_QPT_UD, pd_ops, IBV_QP_EX_WITH_RDMA_WRITE), EOPNOTSUPP);
	refused(create_ex(ctx, pd, cq, IBV_QPT_UD, pd_ops, IBV_QP_EX_WITH_SEND_WITH_INV),
		EOPNOTSUPP);
	refused(create_ex(ctx, pd, cq, IBV_QPT_UC, pd_ops, IBV_QP_EX_WITH_RDMA_READ), EOPNOTSUPP);
	refused(create_ex(ctx, pd, cq, IBV_QPT_UC, pd_ops, IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD),
		EOPNOTSUPP);
	refused(create_ex(ctx, pd, cq, IBV_QPT_UC, pd_ops, IBV_QP_EX_WITH_LOCAL_INV), EOPNOTSUPP);
	refused(create_ex(ctx, pd, cq, IBV_QPT_RC, pd_ops, IBV_QP_EX_WITH_ATOMIC_WRITE),
		EOPNOTSUPP);
	refused(create_ex(ctx, pd, cq, IBV_QPT_RC, pd_ops, IBV_QP_EX_WITH_TSO), EOPNOTSUPP);
	const uint64_t ud = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM;
	const uint64_t uc = ud | IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |
			    IBV_QP_EX_WITH_BIND_MW | IBV_QP_EX_WITH_SEND_WITH_INV;
	const uint64_t rc = uc | IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
			    IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD | IBV_QP_EX_WITH_LOCAL_INV;

	for (int t = 0; t < 3; t++) {
		enum ibv_qp_type type = t == 0 ? IBV_QPT_RC : t == 1 ? IBV_QPT_UC : IBV_QPT_UD;

		qp = create_ex(ctx, pd, cq, type, pd_ops | IBV_QP_INIT_ATTR_CREATE_FLAGS,
			       t == 0 ? rc : t == 1 ? uc : ud);
		CHECKF(qp != NULL, "type %d: %s", type, strerror(errno));
		if (!qp)
			continue;
		struct ibv_qp_ex *qx = ibv_qp_to_qp_ex(qp);

		CHECK(qx != NULL && &qx->qp_base == qp);
		CHECK(qx && qx->wr_start && qx->wr_complete && qx->wr_abort && qx->wr_send &&
		      qx->wr_set_sge && qx->wr_atomic_write && qx->wr_send_tso);
		CHECK_EQ(ibv_destroy_qp(qp), 0);
	}

	/* Capabilities picked at random within the device's limits, as pyverbs' random_qp_cap
	 * picks them (WRs up to max_qp_wr / 8, SGEs up to max_sge / 2), always granted. */
	struct ibv_device_attr da;

	CHECK_EQ(ibv_query_device(ctx, &da), 0);
	srand(19);
	for (int i = 0; i < 60; i++) {
		enum ibv_qp_type type = i % 3 == 0 ? IBV_QPT_RC : i % 3 == 1 ? IBV_QPT_UC : IBV_QPT_UD;
		struct ibv_qp_init_attr_ex r = {
			.send_cq = cq,
			.recv_cq = cq,
			.cap = {.max_send_wr = 1 + (uint32_t)rand() % (uint32_t)(da.max_qp_wr / 8),
				.max_recv_wr = 1 + (uint32_t)rand() % (uint32_t)(da.max_qp_wr / 8),
				.max_send_sge = 1 + (uint32_t)rand() % (uint32_t)(da.max_sge / 2),
				.max_recv_sge = 1 + (uint32_t)rand() % (uint32_t)(da.max_sge / 2)},
			.qp_type = type,
			.sq_sig_all = i & 1,
			.comp_mask = IBV_QP_INIT_ATTR_PD |
				     (i & 2 ? IBV_QP_INIT_ATTR_CREATE_FLAGS : 0) |
				     (i & 4 ? IBV_QP_INIT_ATTR_SEND_OPS_FLAGS : 0),
			.pd = pd,
			.send_ops_flags = IBV_QP_EX_WITH_SEND,
		};
		struct ibv_qp_cap asked = r.cap;

		qp = ibv_create_qp_ex(ctx, &r);
		CHECKF(qp != NULL, "random caps %d (type %d wr %u/%u sge %u/%u): %s", i, type,
		       asked.max_send_wr, asked.max_recv_wr, asked.max_send_sge, asked.max_recv_sge,
		       strerror(errno));
		if (!qp)
			continue;
		CHECK(r.cap.max_send_wr >= asked.max_send_wr &&
		      r.cap.max_recv_wr >= asked.max_recv_wr &&
		      r.cap.max_send_sge >= asked.max_send_sge &&
		      r.cap.max_recv_sge >= asked.max_recv_sge);
		CHECK_EQ(ibv_qp_to_qp_ex(qp) != NULL, (i & 4) != 0);
		CHECK_EQ(ibv_destroy_qp(qp), 0);
	}
	/* A plain QP has no ibv_qp_ex. */
	struct ibv_qp_init_attr pi = {.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
				      .cap = {.max_send_wr = 1, .max_recv_wr = 1}};

	qp = ibv_create_qp(pd, &pi);
	CHECK(qp != NULL);
	if (qp) {
		CHECK(ibv_qp_to_qp_ex(qp) == NULL);
		CHECK_EQ(ibv_destroy_qp(qp), 0);
	}
}

static void post_recv(struct ibv_qp *qp, uint64_t wr_id, void *addr, uint32_t len, uint32_t lkey)
{
	struct ibv_sge sge = {(uintptr_t)addr, len, lkey};
	struct ibv_recv_wr wr = {.wr_id = wr_id, .sg_list = &sge, .num_sge = 1}, *bad;

	CHECK_EQ(ibv_post_recv(qp, &wr, &bad), 0);
}

/* A signaled SEND of len bytes at addr through the new API, alone in its batch. */
static int send_one(struct ibv_qp_ex *qx, uint64_t wr_id, void *addr, uint32_t len,
		    uint32_t lkey)
{
	ibv_wr_start(qx);
	qx->wr_id = wr_id;
	qx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(qx);
	ibv_wr_set_sge(qx, lkey, (uintptr_t)addr, len);
	return ibv_wr_complete(qx);
}

static void test_rc(struct ibv_context *ctx, struct ibv_pd *pd, int gid_idx)
{
	const uint64_t ops = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM |
			     IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |
			     IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
			     IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD;
	struct ibv_cq *acq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	struct ibv_cq *bcq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	uint8_t *abuf = calloc(1, BUF), *bbuf = calloc(1, BUF);
	const int acc = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			IBV_ACCESS_REMOTE_ATOMIC;
	struct ibv_mr *amr = ibv_reg_mr(pd, abuf, BUF, acc), *bmr = ibv_reg_mr(pd, bbuf, BUF, acc);
	/* a has every RC operation but the memory-window ones; b only SEND. */
	struct ibv_qp *a = create_ex(ctx, pd, acq, IBV_QPT_RC, IBV_QP_INIT_ATTR_PD |
						 IBV_QP_INIT_ATTR_SEND_OPS_FLAGS, ops);
	struct ibv_qp *b = create_ex(ctx, pd, bcq, IBV_QPT_RC, IBV_QP_INIT_ATTR_PD |
						 IBV_QP_INIT_ATTR_SEND_OPS_FLAGS, IBV_QP_EX_WITH_SEND);
	union ibv_gid gid;
	struct ibv_wc wc;

	CHECK(acq && bcq && amr && bmr && a && b);
	if (!acq || !bcq || !amr || !bmr || !a || !b)
		return;
	struct ibv_qp_ex *ax = ibv_qp_to_qp_ex(a), *bx = ibv_qp_to_qp_ex(b);
	uint32_t ak = amr->lkey, bk = bmr->lkey;

	/* In RESET the batch is refused whole: EINVAL, as ibv_post_send. */
	CHECK_EQ(send_one(ax, 1, abuf, 8, ak), EINVAL);
	CHECK_EQ(ibv_query_gid(ctx, 1, gid_idx, &gid), 0);
	rc_to_rts(a, acc, b->qp_num, gid_idx, &gid, 7);
	rc_to_rts(b, acc, a->qp_num, gid_idx, &gid, 7);

	/* One batch of three: SEND with immediate from two SGEs, an inline SEND, an RDMA WRITE. */
	for (int i = 0; i < 3; i++)
		post_recv(b, 100 + (uint64_t)i, bbuf + 1024 * i, 1024, bk);
	memcpy(abuf, "gather", 6);
	memcpy(abuf + 512, "ed!", 3);
	char inl[] = "inline bytes";
	const struct ibv_sge two[2] = {{(uintptr_t)abuf, 6, ak}, {(uintptr_t)abuf + 512, 3, ak}};

	memcpy(abuf + 2048, "written", 7);
	ibv_wr_start(ax);
	ax->wr_id = 1;
	ax->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send_imm(ax, htonl(0xabcd1234));
	ibv_wr_set_sge_list(ax, 2, two);
	ax->wr_id = 2;
	ibv_wr_send(ax);
	ibv_wr_set_inline_data(ax, inl, sizeof(inl));
	memset(inl, 'x', sizeof(inl)); /* copied when set: the buffer is the application's again */
	ax->wr_id = 3;
	ax->wr_flags = IBV_SEND_SIGNALED | IBV_SEND_FENCE;
	ibv_wr_rdma_write(ax, bmr->rkey, (uintptr_t)bbuf + 4096);
	ibv_wr_set_sge(ax, ak, (uintptr_t)abuf + 2048, 7);
	CHECK_EQ(ibv_wr_complete(ax), 0);
	expect_wc(acq, 1, IBV_WC_SEND, &wc);
	expect_wc(acq, 2, IBV_WC_SEND, &wc);
	expect_wc(acq, 3, IBV_WC_RDMA_WRITE, &wc);
	expect_wc(bcq, 100, IBV_WC_RECV, &wc);
	CHECK(wc.byte_len == 9 && (wc.wc_flags & IBV_WC_WITH_IMM) &&
	      ntohl(wc.imm_data) == 0xabcd1234);
	CHECK_MEM_EQ(bbuf, "gathered!", 9);
	expect_wc(bcq, 101, IBV_WC_RECV, &wc);
	CHECK_EQ(wc.byte_len, sizeof(inl));
	CHECK_MEM_EQ(bbuf + 1024, "inline bytes", sizeof(inl));
	CHECK_MEM_EQ(bbuf + 4096, "written", 7);

	/* RDMA WRITE with immediate (consumes b's third receive), READ, both atomics. */
	uint64_t *word = (uint64_t *)(void *)(bbuf + 6000);

	*word = 40;
	for (int i = 0; i < 300; i++)
		bbuf[5000 + i] = (uint8_t)(i * 3);
	ibv_wr_start(ax);
	ax->wr_flags = IBV_SEND_SIGNALED;
	ax->wr_id = 4;
	ibv_wr_rdma_write_imm(ax, bmr->rkey, (uintptr_t)bbuf + 3000, htonl(77));
	ibv_wr_set_sge(ax, ak, (uintptr_t)abuf, 6);
	ax->wr_id = 5;
	ibv_wr_rdma_read(ax, bmr->rkey, (uintptr_t)bbuf + 5000);
	ibv_wr_set_sge(ax, ak, (uintptr_t)abuf + 5000, 300);
	ax->wr_id = 6;
	ibv_wr_atomic_fetch_add(ax, bmr->rkey, (uintptr_t)word, 2);
	ibv_wr_set_sge(ax, ak, (uintptr_t)abuf + 6000, 8);
	ax->wr_id = 7;
	ibv_wr_atomic_cmp_swp(ax, bmr->rkey, (uintptr_t)word, 42, 9);
	ibv_wr_set_sge(ax, ak, (uintptr_t)abuf + 6008, 8);
	CHECK_EQ(ibv_wr_complete(ax), 0);
	expect_wc(acq, 4, IBV_WC_RDMA_WRITE, &wc);
	expect_wc(acq, 5, IBV_WC_RDMA_READ, &wc);
	CHECK_EQ(wc.byte_len, 300);
	expect_wc(acq, 6, IBV_WC_FETCH_ADD, &wc);
	expect_wc(acq, 7, IBV_WC_COMP_SWAP, &wc);
	expect_wc(bcq, 102, IBV_WC_RECV_RDMA_WITH_IMM, &wc);
	CHECK(ntohl(wc.imm_data) == 77 && (wc.wc_flags & IBV_WC_WITH_IMM));
	CHECK_MEM_EQ(bbuf + 3000, "gather", 6);
	CHECK_MEM_EQ(abuf + 5000, bbuf + 5000, 300);
	uint64_t fetched, swapped;

	memcpy(&fetched, abuf + 6000, 8);
	memcpy(&swapped, abuf + 6008, 8);
	CHECK(fetched == 40 && swapped == 42 && *word == 9);

	/*
	 * Batches that fail post nothing: each leaves its first error, and the next completion
	 * on a's CQ is the good SEND after it. A batch that had gone out would have completed
	 * first, since every request is signaled and RC completes in order.
	 */
	char big[128] = {0};
	const struct ibv_sge three[3] = {two[0], two[1], two[0]};

	post_recv(b, 200, bbuf, 1024, bk);
	for (int c = 0; c < 8; c++) {
		ibv_wr_start(ax);
		ax->wr_id = 50 + (uint64_t)c;
		ax->wr_flags = IBV_SEND_SIGNALED;
		ibv_wr_send(ax); /* a good first request, dropped with the batch */
		ibv_wr_set_sge(ax, ak, (uintptr_t)abuf, 8);
		int want = EINVAL;

		switch (c) {
		case 0: /* more SGEs than max_send_sge */
			ibv_wr_send(ax);
			ibv_wr_set_sge_list(ax, 3, three);
			break;
		case 1: /* more inline bytes than max_inline_data */
			ibv_wr_send(ax);
			ibv_wr_set_inline_data(ax, big, sizeof(big));
			break;
		case 2: /* an atomic on an unaligned address */
			ibv_wr_atomic_fetch_add(ax, bmr->rkey, (uintptr_t)word + 1, 1);
			ibv_wr_set_sge(ax, ak, (uintptr_t)abuf, 8);
			break;
		case 3: /* a UD address on an RC QP */
			ibv_wr_send(ax);
			ibv_wr_set_ud_addr(ax, NULL, 1, 1);
			break;
		case 4: /* an operation the QP was not created with, then more */
			ibv_wr_send_inv(ax, 5);
			ibv_wr_set_sge(ax, ak, (uintptr_t)abuf, 8);
			ibv_wr_send(ax);
			want = EOPNOTSUPP;
			break;
		case 5: /* XRC and TSO: not supported */
			ibv_wr_set_xrc_srqn(ax, 3);
			want = EOPNOTSUPP;
			break;
		case 6: /* more requests than the send queue holds */
			for (int i = 0; i < 64; i++) {
				ibv_wr_send(ax);
				ibv_wr_set_sge(ax, ak, (uintptr_t)abuf, 8);
			}
			want = ENOMEM;
			break;
		case 7: /* ibv_wr_atomic_write: no engine opcode */
			ibv_wr_atomic_write(ax, bmr->rkey, (uintptr_t)word, abuf);
			want = EOPNOTSUPP;
			break;
		}
		CHECKF(ibv_wr_complete(ax) == want, "case %d", c);
	}
	/* A setter with no request built before it. */
	ibv_wr_start(ax);
	ibv_wr_set_sge(ax, ak, (uintptr_t)abuf, 8);
	CHECK_EQ(ibv_wr_complete(ax), EINVAL);
	/* wr_abort drops the batch, and the lock with it. */
	ibv_wr_start(ax);
	ax->wr_id = 60;
	ibv_wr_send(ax);
	ibv_wr_set_sge(ax, ak, (uintptr_t)abuf, 8);
	ibv_wr_abort(ax);
	/* An empty batch posts nothing and succeeds. */
	ibv_wr_start(ax);
	CHECK_EQ(ibv_wr_complete(ax), 0);
	memcpy(abuf + 100, "after", 5);
	CHECK_EQ(send_one(ax, 61, abuf + 100, 5, ak), 0);
	expect_wc(acq, 61, IBV_WC_SEND, &wc);
	expect_wc(bcq, 200, IBV_WC_RECV, &wc);
	CHECK_EQ(wc.byte_len, 5);
	CHECK_MEM_EQ(bbuf, "after", 5);

	/* b was made with SEND only: RDMA WRITE fails its batch. A zero-length SEND works. */
	ibv_wr_start(bx);
	bx->wr_id = 70;
	ibv_wr_rdma_write(bx, amr->rkey, (uintptr_t)abuf);
	CHECK_EQ(ibv_wr_complete(bx), EOPNOTSUPP);
	post_recv(a, 300, abuf, 64, ak);
	CHECK_EQ(send_one(bx, 71, abuf, 0, ak), 0);
	expect_wc(bcq, 71, IBV_WC_SEND, &wc);
	expect_wc(acq, 300, IBV_WC_RECV, &wc);
	CHECK_EQ(wc.byte_len, 0);

	/* The receive side's bad flows (pyverbs' test_qpex): too many SGEs, a full receive queue,
	 * RESET. */
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr qi;

	CHECK_EQ(ibv_query_qp(b, &qa, IBV_QP_CAP, &qi), 0);
	struct ibv_sge many[33];
	struct ibv_recv_wr rw = {.wr_id = 1, .sg_list = many, .num_sge = (int)qa.cap.max_recv_sge + 1},
			   *rbad = NULL;

	for (int i = 0; i < 33; i++)
		many[i] = (struct ibv_sge){(uintptr_t)bbuf, 8, bk};
	CHECK(qa.cap.max_recv_sge < 33);
	CHECK(ibv_post_recv(b, &rw, &rbad) == EINVAL && rbad == &rw);
	rw.num_sge = 1;
	int posted = 0, r = 0;

	while (posted <= (int)qa.cap.max_recv_wr && !(r = ibv_post_recv(b, &rw, &rbad)))
		posted++;
	CHECK_EQ(r, ENOMEM);
	CHECK_EQ(posted, (int)qa.cap.max_recv_wr);
	qa.qp_state = IBV_QPS_RESET;
	CHECK_EQ(ibv_modify_qp(b, &qa, IBV_QP_STATE), 0);
	CHECK_EQ(ibv_post_recv(b, &rw, &rbad), EINVAL);
	CHECK_EQ(send_one(bx, 72, bbuf, 8, bk), EINVAL);

	CHECK_EQ(ibv_destroy_qp(a), 0);
	CHECK_EQ(ibv_destroy_qp(b), 0);
	CHECK_EQ(ibv_destroy_cq(acq), 0);
	CHECK_EQ(ibv_destroy_cq(bcq), 0);
	CHECK_EQ(ibv_dereg_mr(amr), 0);
	CHECK_EQ(ibv_dereg_mr(bmr), 0);
	free(abuf);
	free(bbuf);
}

static void test_ud(struct ibv_context *ctx, struct ibv_pd *pd, int gid_idx)
{
	struct ibv_cq *cq = ibv_create_cq(ctx, 32, NULL, NULL, 0);
	uint8_t *buf = calloc(1, 4096);
	struct ibv_mr *mr = ibv_reg_mr(pd, buf, 4096, IBV_ACCESS_LOCAL_WRITE);
	struct ibv_qp *q[2];
	struct ibv_ah_attr ah_attr = {.is_global = 1,
				      .port_num = 1,
				      .grh = {.sgid_index = (uint8_t)gid_idx, .hop_limit = 64}};
	struct ibv_wc wc;

	CHECK(cq && mr);
	if (!cq || !mr)
		return;
	for (int i = 0; i < 2; i++) {
		q[i] = create_ex(ctx, pd, cq, IBV_QPT_UD,
				 IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
				 IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM);
		CHECK(q[i] != NULL);
		if (!q[i])
			return;
		ud_to_rts(q[i], 0x11);
	}
	CHECK_EQ(ibv_query_gid(ctx, 1, gid_idx, &ah_attr.grh.dgid), 0);
	struct ibv_ah *ah = ibv_create_ah(pd, &ah_attr);
	struct ibv_qp_ex *qx = ibv_qp_to_qp_ex(q[0]);

	CHECK(ah != NULL);
	if (!ah)
		return;
	post_recv(q[1], 1, buf, 40 + 100, mr->lkey);
	post_recv(q[1], 2, buf + 200, 40 + 100, mr->lkey);
	memset(buf + 2048, 0x5a, 100);
	/* A SEND without an address: EINVAL, nothing posted. */
	ibv_wr_start(qx);
	qx->wr_id = 9;
	qx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(qx);
	ibv_wr_set_sge(qx, mr->lkey, (uintptr_t)buf + 2048, 100);
	CHECK_EQ(ibv_wr_complete(qx), EINVAL);
	/* RDMA WRITE on UD: not among its operations. */
	ibv_wr_start(qx);
	ibv_wr_rdma_write(qx, 1, 0);
	CHECK_EQ(ibv_wr_complete(qx), EOPNOTSUPP);
	/* A SEND and a SEND with immediate, addressed. */
	ibv_wr_start(qx);
	qx->wr_id = 10;
	ibv_wr_send(qx);
	ibv_wr_set_ud_addr(qx, ah, q[1]->qp_num, 0x11);
	ibv_wr_set_sge(qx, mr->lkey, (uintptr_t)buf + 2048, 100);
	qx->wr_id = 11;
	ibv_wr_send_imm(qx, htonl(5));
	ibv_wr_set_sge(qx, mr->lkey, (uintptr_t)buf + 2048, 10);
	ibv_wr_set_ud_addr(qx, ah, q[1]->qp_num, 0x11); /* setters in any order */
	CHECK_EQ(ibv_wr_complete(qx), 0);
	int sends = 0;
	uint64_t next_send = 10, next_recv = 1;

	for (int i = 0; i < 4; i++) {
		if (poll_one(cq, &wc) < 0) {
			CHECKF(0, "no UD completion");
			break;
		}
		CHECKF(wc.status == IBV_WC_SUCCESS, "UD %s", ibv_wc_status_str(wc.status));
		if (wc.opcode == IBV_WC_SEND) {
			CHECK_EQ(wc.wr_id, next_send++);
			sends++;
			continue;
		}
		CHECK_EQ(wc.wr_id, next_recv);
		CHECK_EQ(wc.src_qp, q[0]->qp_num);
		CHECK_EQ(wc.byte_len, next_recv == 1 ? 140u : 50u);
		if (next_recv == 2)
			CHECK((wc.wc_flags & IBV_WC_WITH_IMM) && ntohl(wc.imm_data) == 5);
		next_recv++;
	}
	CHECK(sends == 2 && next_recv == 3);
	CHECK(buf[40] == 0x5a && buf[139] == 0x5a && buf[240] == 0x5a);

	CHECK_EQ(ibv_destroy_ah(ah), 0);
	for (int i = 0; i < 2; i++)
		CHECK_EQ(ibv_destroy_qp(q[i]), 0);
	CHECK_EQ(ibv_destroy_cq(cq), 0);
	CHECK_EQ(ibv_dereg_mr(mr), 0);
	free(buf);
}

int main(int argc, char **argv)
{
	const char *devname = argc > 1 ? argv[1] : "uroce_lo";
	const char *ip4 = argc > 2 ? argv[2] : "127.0.0.1";
	struct ibv_context *ctx = open_device(devname);

	/* pyverbs' shared PD test, once its extended QP is made, dups cmd_fd to import the
	 * device: a real descriptor, and the import refused as unsupported. */
	int fd = dup(ctx->cmd_fd);

	CHECK_GE(fd, 0);
	errno = 0;
	CHECK(ibv_import_device(fd) == NULL && errno == EOPNOTSUPP);
	if (fd >= 0)
		close(fd);
	int gid_idx = find_gid(ctx, ip4);
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	struct ibv_cq *cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);

	CHECK(pd && cq);
	if (pd && cq && gid_idx >= 0) {
		test_create(ctx, pd, cq);
		test_rc(ctx, pd, gid_idx);
		CHECK_BAIL();
		test_ud(ctx, pd, gid_idx);
		CHECK_EQ(ibv_destroy_cq(cq), 0);
		CHECK_EQ(ibv_dealloc_pd(pd), 0);
	}
	CHECK_EQ(ibv_close_device(ctx), 0);
	return check_exit_with("compat_qpex", verbs_kit_checks);
}
