/* SPDX-License-Identifier: MIT */
/*
 * Local delivery on RoCE v1 (run by v1.sh, in its namespace and run-time directory): two RC QPs
 * of ONE process on a RoCE v1 device, connected through its IPv4 GID, exchange SENDs both ways.
 * The frames are taken from the kernel as they leave the interface (afpacket.c); each must arrive
 * exactly once: no duplicate, no loss, nothing for no QP.
 *
 *   test_share_v1self DEV
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "workers.h"

static int test_v1self(const char *dev)
{
	struct rep r[2];
	const int iters = 200;

	w_dev = dev;
	w_gtype = UROCE_GID_V1;
	W = calloc(1, sizeof(*W));
	if (!W)
		return 1;
	W->evfd = eventfd(0, EFD_NONBLOCK);
	int rc = w_open(0);

	CHECKF(rc == 0, "open %s: %s", dev, strerror(-rc));
	if (rc)
		return check_exit_with("v1self", workers_checks);
	CHECK(w_qp(0, 0, &r[0]) == 0);
	CHECK(w_qp(1, 0, &r[1]) == 0);
	CHECK(w_connect(0, r[1].qpn) == 0);
	CHECK(w_connect(1, r[0].qpn) == 0);
	for (int i = 0; i < iters && check_failures == 0; i++) {
		int to = i & 1, from = !to;
		uint32_t len = 64 + (uint32_t)i * 37 % 3000, blen = 0; /* 1 to 3 packets */

		CHECK(w_post(&(struct cmd){.op = OP_RECV, .qp = to, .len = len}) == 0);
		CHECK(w_post(&(struct cmd){
			      .op = OP_SEND, .qp = from, .len = len, .seed = (uint32_t)i}) == 0);
		CHECKF(wait_wc(W->ctx[0], W->q[to].rcq, &blen) == 0, "SEND %d not received", i);
		CHECKF(blen == len && same(W->mem[to] + RX_OFF, len, (uint32_t)i),
		       "SEND %d: %u bytes, %u expected, or other data", i, blen, len);
	}
	/* Nothing more arrives: post a receive and look again after a while. */
	CHECK(w_post(&(struct cmd){.op = OP_RECV, .qp = 0, .len = 64}) == 0);
	uint32_t blen;

	CHECK(wait_wc(W->ctx[0], W->q[0].rcq, &blen) == -ETIMEDOUT);
	struct uroce_ctx *x = W->ctx[0];
	struct uroce_eng *e = uroce_ctx_eng(x);

	uroce_ctx_lock(x);
	uint64_t sent = uroce_eng_counter(e, UROCE_CNT_SENT_PKTS),
		 rcvd = uroce_eng_counter(e, UROCE_CNT_RCVD_PKTS),
		 dup = uroce_eng_counter(e, UROCE_CNT_DUPLICATE_REQUEST),
		 dupr = uroce_eng_counter(e, UROCE_CNT_DROP_DUPLICATE_RESP),
		 noqp = uroce_eng_counter(e, UROCE_CNT_DROP_NO_QP),
		 retr = uroce_eng_counter(e, UROCE_CNT_RETRANSMITTED_PKTS);
	uroce_ctx_unlock(x);
	printf("v1self: sent_pkts %llu rcvd_pkts %llu duplicate_request %llu "
	       "drop_duplicate_resp %llu drop_no_qp %llu retransmitted_pkts %llu\n",
	       (unsigned long long)sent, (unsigned long long)rcvd, (unsigned long long)dup,
	       (unsigned long long)dupr, (unsigned long long)noqp, (unsigned long long)retr);
	CHECKF(sent == rcvd, "sent %llu packets, received %llu", (unsigned long long)sent,
	       (unsigned long long)rcvd);
	CHECK(sent >= (uint64_t)iters * 2);
	CHECK(dup == 0 && dupr == 0 && noqp == 0 && retr == 0);
	for (int k = 0; k < 2; k++) {
		uroce_ctx_lock(x);
		uroce_qp_destroy(W->q[k].qp);
		uroce_ctx_unlock(x);
	}
	uroce_ctx_close(x);
	close(W->evfd);
	free(W);
	return check_exit_with("v1self", workers_checks);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: test_share_v1self DEV\n");
		return 2;
	}
	return test_v1self(argv[1]);
}
