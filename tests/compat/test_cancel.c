/* SPDX-License-Identifier: MIT */
/*
 * A thread cancelled while it busy-polls a CQ, through uroce's libibverbs.so.1. Applications end
 * polling threads with pthread_cancel (deferred cancellation, the default): with rdma-core,
 * ibv_poll_cq and ibv_post_send make no system call, so the thread exits at its own
 * cancellation point. uroce receives and sends inside those verbs with the context's lock held;
 * were its system calls cancellation points, the thread would exit there, lock held, and every
 * other thread using the device would wait for it forever.
 *
 * Ten times: a thread polls a CQ in a loop (with pthread_testcancel between polls), is cancelled
 * once it has polled a while, and is joined; then a poll from another thread must return within
 * WAIT_MS. Afterwards a SEND between two RC QPs of the context still arrives. Two RC QPs of one
 * context over RoCE v2 on the device's IPv4 address (default uroce_lo and 127.0.0.1; argv[1],
 * argv[2] override them). Exit 77 (skip) when the device does not exist or cannot be opened.
 */
#include <infiniband/verbs.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "verbs_kit.h"

#define ACC		    (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE)
#define ROUNDS		    10
#define POLLS_BEFORE_CANCEL 2000

struct poller {
	struct ibv_cq *cq;
	atomic_long polls;
	struct ibv_wc wc;
};

/*
 * Nothing of the thread's own on its stack: the cancellation unwinds this frame without its
 * epilogue, and AddressSanitizer would find a local's redzones still poisoned when the thread's
 * exit reuses the stack.
 */
static void *poll_forever(void *arg)
{
	struct poller *p = arg;

	for (;;) {
		ibv_poll_cq(p->cq, 1, &p->wc);
		atomic_fetch_add(&p->polls, 1);
		pthread_testcancel();
	}
	return NULL;
}

static void *poll_once(void *arg)
{
	struct poller *p = arg;
	struct ibv_wc wc;

	ibv_poll_cq(p->cq, 1, &wc);
	atomic_store(&p->polls, 1);
	return NULL;
}

/* Does a poll of cq from a new thread return within WAIT_MS? A thread that does not is left
 * behind: the program cannot end cleanly then, and the caller exits. */
static int poll_returns(struct ibv_cq *cq)
{
	struct poller p = {.cq = cq};
	pthread_t t;
	struct timespec until;

	if (pthread_create(&t, NULL, poll_once, &p))
		return 0;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += WAIT_MS / 1000;
	return pthread_timedjoin_np(t, NULL, &until) == 0 && atomic_load(&p.polls) == 1;
}

static void cancel_pollers(struct ibv_cq *cq)
{
	for (int round = 0; round < ROUNDS; round++) {
		struct poller p = {.cq = cq};
		pthread_t t;
		uint64_t deadline = now_ms() + WAIT_MS;

		CHECK_EQ(pthread_create(&t, NULL, poll_forever, &p), 0);
		while (atomic_load(&p.polls) < POLLS_BEFORE_CANCEL && now_ms() < deadline)
			;
		CHECK_GE(atomic_load(&p.polls), POLLS_BEFORE_CANCEL);
		CHECK_EQ(pthread_cancel(t), 0);
		void *ret = NULL;

		CHECK_EQ(pthread_join(t, &ret), 0);
		CHECK(ret == PTHREAD_CANCELED);
		if (!poll_returns(cq)) {
			CHECKF(0,
			       "round %d: a poll after the cancelled poller never returned (the "
			       "context's lock is held by a thread that is gone)",
			       round);
			check_exit_with("compat_cancel", verbs_kit_checks);
			fflush(NULL);
			_exit(1);
		}
	}
}

static void send_one(struct end *a, struct end *b)
{
	struct ibv_sge rs = {(uintptr_t)b->buf, 64, b->mr->lkey};
	struct ibv_sge ss = {(uintptr_t)a->buf, 16, a->mr->lkey};
	struct ibv_recv_wr rwr = {.wr_id = 1, .sg_list = &rs, .num_sge = 1}, *rbad;
	struct ibv_send_wr swr = {.wr_id = 2,
				  .sg_list = &ss,
				  .num_sge = 1,
				  .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED},
			   *sbad;
	struct ibv_wc wc;

	memcpy(a->buf, "after the cancel", 16);
	CHECK_EQ(ibv_post_recv(b->qp, &rwr, &rbad), 0);
	CHECK_EQ(ibv_post_send(a->qp, &swr, &sbad), 0);
	CHECK_EQ(poll_one(b->cq, &wc), IBV_WC_SUCCESS);
	CHECK(wc.wr_id == 1 && wc.byte_len == 16);
	CHECK_MEM_EQ(b->buf, "after the cancel", 16);
	CHECK_EQ(poll_one(a->cq, &wc), IBV_WC_SUCCESS);
	CHECK_EQ(wc.wr_id, 2u);
}

int main(int argc, char **argv)
{
	const char *devname = argc > 1 ? argv[1] : "uroce_lo";
	const char *ip4 = argc > 2 ? argv[2] : "127.0.0.1";
	struct ibv_context *ctx = open_device(devname);
	int gid_idx = find_gid(ctx, ip4);
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	struct ibv_qp_cap cap = {
		.max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 1, .max_recv_sge = 1};
	struct end a, b;
	union ibv_gid gid;

	CHECK(pd != NULL);
	if (!pd || gid_idx < 0)
		return check_exit_with("compat_cancel", verbs_kit_checks);
	end_make(&a, ctx, pd, NULL, ACC, cap);
	end_make(&b, ctx, pd, NULL, ACC, cap);
	CHECK_BAIL();
	CHECK_EQ(ibv_query_gid(ctx, 1, gid_idx, &gid), 0);
	rc_to_rts(a.qp, ACC, b.qp->qp_num, gid_idx, &gid, 100);
	rc_to_rts(b.qp, ACC, a.qp->qp_num, gid_idx, &gid, 100);
	CHECK_BAIL();

	cancel_pollers(a.cq);
	send_one(&a, &b);

	end_free(&a);
	end_free(&b);
	CHECK_EQ(ibv_dealloc_pd(pd), 0);
	CHECK_EQ(ibv_close_device(ctx), 0);
	return check_exit_with("compat_cancel", verbs_kit_checks);
}
