/* SPDX-License-Identifier: MIT */
/*
 * fork() with registered memory and traffic running, through uroce's libibverbs.so.1 (run with
 * RDMAV_FORK_SAFE=1 and RDMAV_HUGEPAGES_SAFE=1 set, which change nothing, as on a copy-on-fork
 * kernel):
 * - ibv_fork_init() is 0 and ibv_is_fork_initialized() IBV_FORK_UNNEEDED, after registrations;
 * - the parent forks with RDMA WRITEs and SENDs of 64 KiB in flight between two RC QPs of its
 *   own; the child scribbles over its copies of the source and destination buffers, posts a
 *   WRITE and a SEND of its scribbles on its copies of the QPs, polls their CQs, closes its
 *   copy of the device, then opens the device again and moves data between two QPs of its own,
 *   and exits (exit(): the libraries' destructors run);
 * - the parent's transfers land byte for byte, nothing of the child's reaches them, and after
 *   the child is gone the parent's QPs are still in RTS with no async event and carry another
 *   round byte for byte.
 * Over RoCE v2 on the device's IPv4 address (default uroce_lo and 127.0.0.1; argv[1], argv[2]
 * override them). Exit 77 (skip) when the device does not exist or cannot be opened here.
 */
#include <infiniband/verbs.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../child_end.h"
#include "verbs_kit.h"

#define ACC (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ)
#define MSG (64 * 1024)
#define NMSG 8 /* WRITEs and SENDs each per round */

static const char *devname, *ip4;

/* Buffers of one side: NMSG messages to write, NMSG to send; the same at the other side. */
struct side {
	uint8_t *buf;
	struct ibv_mr *mr;
};

static void side_make(struct side *s, struct ibv_pd *pd)
{
	s->buf = aligned_alloc(4096, 2 * NMSG * MSG);
	CHECK(s->buf != NULL);
	if (!s->buf)
		return;
	memset(s->buf, 0, 2 * NMSG * MSG);
	s->mr = ibv_reg_mr(pd, s->buf, 2 * NMSG * MSG, ACC);
	CHECK(s->mr != NULL);
}

static void side_free(struct side *s)
{
	if (s->mr)
		CHECK_EQ(ibv_dereg_mr(s->mr), 0);
	free(s->buf);
}

static void pattern(uint8_t *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)((i * 2654435761u) >> 13 ^ seed);
}

/* Post round's NMSG WRITEs and NMSG SENDs from src to dst (receives posted at b first). */
static void post_round(struct end *a, struct end *b, struct side *src, struct side *dst)
{
	for (int i = 0; i < NMSG; i++) {
		struct ibv_sge rs = {.addr = (uintptr_t)dst->buf + (size_t)(NMSG + i) * MSG,
				     .length = MSG, .lkey = dst->mr->lkey};
		struct ibv_recv_wr rw = {.wr_id = (uint64_t)i, .sg_list = &rs, .num_sge = 1}, *rbad;

		CHECK_EQ(ibv_post_recv(b->qp, &rw, &rbad), 0);
	}
	for (int i = 0; i < 2 * NMSG; i++) {
		struct ibv_sge s = {.addr = (uintptr_t)src->buf + (size_t)i * MSG, .length = MSG,
				    .lkey = src->mr->lkey};
		struct ibv_send_wr w = {.wr_id = (uint64_t)i, .sg_list = &s, .num_sge = 1,
					.opcode = i < NMSG ? IBV_WR_RDMA_WRITE : IBV_WR_SEND,
					.send_flags = IBV_SEND_SIGNALED},
				   *bad;

		w.wr.rdma.remote_addr = (uintptr_t)dst->buf + (size_t)i * MSG;
		w.wr.rdma.rkey = dst->mr->rkey;
		CHECK_EQ(ibv_post_send(a->qp, &w, &bad), 0);
	}
}

/* The round's completions: 2 * NMSG at a, NMSG receives at b, all successful. */
static void finish_round(struct end *a, struct end *b)
{
	struct ibv_wc wc;

	for (int i = 0; i < 2 * NMSG; i++)
		CHECK_EQ(poll_one(a->cq, &wc), IBV_WC_SUCCESS);
	for (int i = 0; i < NMSG; i++) {
		CHECK_EQ(poll_one(b->cq, &wc), IBV_WC_SUCCESS);
		CHECK_EQ(wc.byte_len, MSG);
	}
}

static void pair_make(struct ibv_context *ctx, struct ibv_pd *pd, struct end *a, struct end *b,
		      int gid_idx, const union ibv_gid *gid)
{
	const struct ibv_qp_cap cap = {.max_send_wr = 4 * NMSG, .max_recv_wr = 4 * NMSG,
				       .max_send_sge = 1, .max_recv_sge = 1};

	end_make(a, ctx, pd, NULL, 0, cap);
	end_make(b, ctx, pd, NULL, 0, cap);
	CHECK_BAIL();
	rc_to_rts(a->qp, ACC, b->qp->qp_num, gid_idx, gid, 0);
	rc_to_rts(b->qp, ACC, a->qp->qp_num, gid_idx, gid, 0);
}

/* The child: its copies are its own; the device opened again is its own too. */
static int child(struct ibv_context *ctx, struct ibv_pd *pd0, struct end *a, struct end *b,
		 struct side *src, struct side *dst)
{
	struct ibv_wc wc[4];

	memset(src->buf, 0xEE, 2 * NMSG * MSG);
	memset(dst->buf, 0xDD, 2 * NMSG * MSG);
	post_round(a, b, src, dst); /* on the copies: nothing may go out */
	ibv_poll_cq(a->cq, 4, wc);
	ibv_poll_cq(b->cq, 4, wc);
	end_free(a);
	end_free(b);
	side_free(src);
	side_free(dst);
	/* Closing the copy of the device frees the copy and touches nothing of the parent's. */
	CHECK_EQ(ibv_dealloc_pd(pd0), 0);
	CHECK_EQ(ibv_close_device(ctx), 0);

	/* A device of its own. */
	struct ibv_context *mine = open_device(devname);
	int gid_idx = find_gid(mine, ip4);
	union ibv_gid gid;
	struct ibv_pd *pd = ibv_alloc_pd(mine);
	struct end x, y;
	struct side s, d;

	CHECK(pd != NULL && gid_idx >= 0);
	CHECK_EQ(ibv_query_gid(mine, 1, gid_idx, &gid), 0);
	CHECK_BAIL();
	pair_make(mine, pd, &x, &y, gid_idx, &gid);
	side_make(&s, pd);
	side_make(&d, pd);
	CHECK_BAIL();
	pattern(s.buf, 2 * NMSG * MSG, 0x5A);
	post_round(&x, &y, &s, &d);
	finish_round(&x, &y);
	CHECK_MEM_EQ(d.buf, s.buf, 2 * NMSG * MSG);
	end_free(&x);
	end_free(&y);
	side_free(&s);
	side_free(&d);
	CHECK_EQ(ibv_dealloc_pd(pd), 0);
	CHECK_EQ(ibv_close_device(mine), 0);
	return check_exit_with("verbs_fork (child)", verbs_kit_checks);
}

int main(int argc, char **argv)
{
	devname = argc > 1 ? argv[1] : "uroce_lo";
	ip4 = argc > 2 ? argv[2] : "127.0.0.1";

	struct ibv_context *ctx = open_device(devname);
	int gid_idx = find_gid(ctx, ip4);
	union ibv_gid gid;
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	struct end a, b;
	struct side src, dst;

	CHECK(pd != NULL && gid_idx >= 0);
	CHECK_EQ(ibv_query_gid(ctx, 1, gid_idx, &gid), 0);
	CHECK_BAIL();
	pair_make(ctx, pd, &a, &b, gid_idx, &gid);
	side_make(&src, pd);
	side_make(&dst, pd);
	CHECK_BAIL();
	/* After registrations, as rdma-core on a copy-on-fork kernel. */
	CHECK_EQ(ibv_fork_init(), 0);
	CHECK_EQ(ibv_is_fork_initialized(), IBV_FORK_UNNEEDED);

	pattern(src.buf, 2 * NMSG * MSG, 1);
	post_round(&a, &b, &src, &dst);
	fflush(NULL);
	pid_t pid = fork();

	CHECK(pid >= 0);
	if (pid == 0) {
		int st = child(ctx, pd, &a, &b, &src, &dst);

		exit(st);
	}
	/* The parent writes into its buffers as the child scribbles over its copies. */
	finish_round(&a, &b);
	CHECK_MEM_EQ(dst.buf, src.buf, 2 * NMSG * MSG);
	/* The child ends within the deadline (one stuck on a lock of its copy is killed). */
	int st = -1;

	CHECKF(child_end(pid, 2 * WAIT_MS, &st) == 0, "the child did not end");
	CHECKF(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status %#x", st);

	/* The child is gone: nothing of the parent's went with it. */
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr ia;
	struct pollfd p = {.fd = ctx->async_fd, .events = POLLIN};

	CHECK_EQ(ibv_query_qp(a.qp, &qa, IBV_QP_STATE, &ia), 0);
	CHECK_EQ(qa.qp_state, IBV_QPS_RTS);
	CHECK_EQ(ibv_query_qp(b.qp, &qa, IBV_QP_STATE, &ia), 0);
	CHECK_EQ(qa.qp_state, IBV_QPS_RTS);
	CHECK_EQ(poll(&p, 1, 0), 0);
	memset(dst.buf, 0, 2 * NMSG * MSG);
	pattern(src.buf, 2 * NMSG * MSG, 2);
	post_round(&a, &b, &src, &dst);
	finish_round(&a, &b);
	CHECK_MEM_EQ(dst.buf, src.buf, 2 * NMSG * MSG);

	end_free(&a);
	end_free(&b);
	side_free(&src);
	side_free(&dst);
	CHECK_EQ(ibv_dealloc_pd(pd), 0);
	CHECK_EQ(ibv_close_device(ctx), 0);
	return check_exit_with("verbs_fork", verbs_kit_checks);
}
