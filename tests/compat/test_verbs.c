/* SPDX-License-Identifier: MIT */
/*
 * uroce's libibverbs.so.1 through the public verbs API, compiled against Debian's
 * <infiniband/verbs.h> so the header inlines (ibv_post_send, ibv_poll_cq, ibv_query_port, ...)
 * go through our ops tables exactly as in an application.
 *
 * Two RC QPs of one context are connected to each other over RoCE v2 on the IPv4 address of
 * the device (default uroce_lo and 127.0.0.1; argv[1], argv[2] override them), then SEND/RECV
 * with immediate data, RDMA WRITE, RDMA READ, both atomics, completion channels (blocking,
 * non-blocking, interrupted by a signal), rdma-core's error conventions and the UD path with an AH.
 * Exit 77 (skip) when the device does not exist or cannot be opened here.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#include "eintr_alarm.h"
#include "verbs_kit.h"

#define ACCESS_ALL                                                                   \
	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | \
	 IBV_ACCESS_REMOTE_ATOMIC)

/* The kit's RC bring-up, and on the way RoCE's rule: RTR without a GRH is refused (EINVAL), as
 * the kernel refuses it. */
static void to_rts(struct ibv_qp *qp, uint32_t dest_qpn, int gid_idx, const union ibv_gid *dgid)
{
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_RTR,
				.path_mtu = IBV_MTU_1024,
				.dest_qp_num = dest_qpn,
				.rq_psn = 100,
				.max_dest_rd_atomic = 4,
				.min_rnr_timer = 12,
				.ah_attr = {.port_num = 1}};

	rc_init(qp, ACCESS_ALL);
	CHECK_EQ(ibv_modify_qp(qp, &a, RC_RTR_MASK), EINVAL);
	rc_rtr_rts(qp, dest_qpn, gid_idx, dgid, 100);
}

/* An end whose MR takes optional access bits (RELAXED_ORDERING), which must be ignored, as
 * perftest sets them; its CQ on channel ch. */
static void make_end(struct ibv_context *ctx, struct ibv_pd *pd, struct ibv_comp_channel *ch,
		     struct end *e)
{
	const struct ibv_qp_cap cap = {.max_send_wr = 32,
				       .max_recv_wr = 32,
				       .max_send_sge = 2,
				       .max_recv_sge = 2,
				       .max_inline_data = 64};

	end_make(e, ctx, pd, ch, ACCESS_ALL | IBV_ACCESS_RELAXED_ORDERING, cap);
}

static void test_rc(struct ibv_context *ctx, struct ibv_pd *pd, int gid_idx)
{
	struct ibv_comp_channel *ch = ibv_create_comp_channel(ctx);
	struct end a, b;
	union ibv_gid gid;
	struct ibv_wc wc;
	struct ibv_sge sge;
	struct ibv_recv_wr rwr = {0}, *rbad;
	struct ibv_send_wr swr = {0}, *sbad;
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr qi;

	CHECK(ch != NULL);
	if (!ch)
		return;
	make_end(ctx, pd, ch, &a);
	make_end(ctx, pd, NULL, &b);
	if (!a.qp || !b.qp || !a.mr || !b.mr)
		return;
	CHECK_EQ(ibv_destroy_comp_channel(ch), EBUSY); /* a CQ uses it */
	CHECK_EQ(ibv_query_gid(ctx, 1, gid_idx, &gid), 0);
	to_rts(a.qp, b.qp->qp_num, gid_idx, &gid);
	to_rts(b.qp, a.qp->qp_num, gid_idx, &gid);

	CHECK_EQ(ibv_query_qp(a.qp, &qa, IBV_QP_STATE | IBV_QP_CAP | IBV_QP_AV, &qi), 0);
	CHECK_EQ(qa.qp_state, IBV_QPS_RTS);
	CHECK_EQ(qa.dest_qp_num, b.qp->qp_num);
	CHECK(qa.ah_attr.is_global && qa.ah_attr.grh.sgid_index == gid_idx);
	CHECK(qi.cap.max_send_sge >= 2 && qi.qp_type == IBV_QPT_RC);

	/* SEND with immediate: b receives; a's completion arrives through the channel. */
	memcpy(a.buf, "hello uroce", 12);
	sge = (struct ibv_sge){(uintptr_t)b.buf + 1024, 64, b.mr->lkey};
	rwr.wr_id = 7;
	rwr.sg_list = &sge;
	rwr.num_sge = 1;
	CHECK_EQ(ibv_post_recv(b.qp, &rwr, &rbad), 0);
	CHECK_EQ(ibv_req_notify_cq(a.cq, 0), 0);
	struct ibv_sge ssge = {(uintptr_t)a.buf, 12, a.mr->lkey};

	swr.wr_id = 9;
	swr.sg_list = &ssge;
	swr.num_sge = 1;
	swr.opcode = IBV_WR_SEND_WITH_IMM;
	swr.send_flags = IBV_SEND_SIGNALED;
	swr.imm_data = htonl(0x12345678);
	CHECK_EQ(ibv_post_send(a.qp, &swr, &sbad), 0);
	CHECK_EQ(poll_one(b.cq, &wc), IBV_WC_SUCCESS);
	CHECK(wc.wr_id == 7 && wc.opcode == IBV_WC_RECV && wc.byte_len == 12);
	CHECK((wc.wc_flags & IBV_WC_WITH_IMM) && ntohl(wc.imm_data) == 0x12345678);
	CHECK_EQ(wc.qp_num, b.qp->qp_num);
	CHECK_MEM_EQ(b.buf + 1024, "hello uroce", 12);

	struct pollfd pfd = {.fd = ch->fd, .events = POLLIN};
	struct ibv_cq *ev_cq = NULL;
	void *ev_ctx = NULL;

	CHECK_EQ(poll(&pfd, 1, WAIT_MS), 1);
	CHECK_EQ(ibv_get_cq_event(ch, &ev_cq, &ev_ctx), 0);
	CHECK(ev_cq == a.cq && ev_ctx == &a);
	ibv_ack_cq_events(ev_cq, 1);
	CHECK_EQ(ibv_poll_cq(a.cq, 1, &wc), 1);
	CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == 9 && wc.opcode == IBV_WC_SEND);
	/* Non-blocking channel with nothing pending: -1, EAGAIN. */
	CHECK_EQ(fcntl(ch->fd, F_SETFL, fcntl(ch->fd, F_GETFL) | O_NONBLOCK), 0);
	errno = 0;
	CHECK(ibv_get_cq_event(ch, &ev_cq, &ev_ctx) == -1 && errno == EAGAIN);
	/* Blocking again, nothing pending: a signal whose handler lacks SA_RESTART ends the wait
	 * with EINTR (as the kernel's read of the event file), and so does the async event wait.
	 * qperf ends its timed loops this way. */
	CHECK_EQ(fcntl(ch->fd, F_SETFL, fcntl(ch->fd, F_GETFL) & ~O_NONBLOCK), 0);
	CHECK_EQ(ibv_req_notify_cq(a.cq, 0), 0);
	eintr_alarm_start("ibv_get_cq_event");
	errno = 0;
	CHECK(ibv_get_cq_event(ch, &ev_cq, &ev_ctx) == -1 && errno == EINTR);
	eintr_alarm_stop();
	struct ibv_async_event aev;

	eintr_alarm_start("ibv_get_async_event");
	errno = 0;
	CHECK(ibv_get_async_event(ctx, &aev) == -1 && errno == EINTR);
	eintr_alarm_stop();

	/* RDMA WRITE (inline), then RDMA READ it back into another part of a's buffer. */
	memcpy(a.buf + 100, "written by a", 13);
	ssge = (struct ibv_sge){(uintptr_t)a.buf + 100, 13, a.mr->lkey};
	swr.wr_id = 10;
	swr.opcode = IBV_WR_RDMA_WRITE;
	swr.send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE;
	swr.wr.rdma.remote_addr = (uintptr_t)b.buf + 2000;
	swr.wr.rdma.rkey = b.mr->rkey;
	CHECK_EQ(ibv_post_send(a.qp, &swr, &sbad), 0);
	CHECK_EQ(poll_one(a.cq, &wc), IBV_WC_SUCCESS);
	CHECK(wc.wr_id == 10 && wc.opcode == IBV_WC_RDMA_WRITE);
	CHECK_MEM_EQ(b.buf + 2000, "written by a", 13);

	for (int i = 0; i < 4000; i++)
		b.buf[4096 + i] = (uint8_t)(i * 7);
	ssge = (struct ibv_sge){(uintptr_t)a.buf + 4096, 4000, a.mr->lkey};
	swr.wr_id = 11;
	swr.opcode = IBV_WR_RDMA_READ;
	swr.send_flags = IBV_SEND_SIGNALED;
	swr.wr.rdma.remote_addr = (uintptr_t)b.buf + 4096;
	CHECK_EQ(ibv_post_send(a.qp, &swr, &sbad), 0);
	CHECK_EQ(poll_one(a.cq, &wc), IBV_WC_SUCCESS);
	CHECK(wc.wr_id == 11 && wc.opcode == IBV_WC_RDMA_READ && wc.byte_len == 4000);
	CHECK_MEM_EQ(a.buf + 4096, b.buf + 4096, 4000);

	/* Atomics on an 8-byte aligned word of b. */
	uint64_t *word = (uint64_t *)(void *)(b.buf + 3000 - 3000 % 8);

	*word = 40;
	ssge = (struct ibv_sge){(uintptr_t)a.buf + 8, 8, a.mr->lkey};
	swr.wr_id = 12;
	swr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
	swr.wr.atomic.remote_addr = (uintptr_t)word;
	swr.wr.atomic.compare_add = 2;
	swr.wr.atomic.rkey = b.mr->rkey;
	CHECK_EQ(ibv_post_send(a.qp, &swr, &sbad), 0);
	CHECK_EQ(poll_one(a.cq, &wc), IBV_WC_SUCCESS);
	CHECK_EQ(wc.opcode, IBV_WC_FETCH_ADD);
	uint64_t old;

	memcpy(&old, a.buf + 8, 8);
	CHECK(old == 40 && *word == 42);
	swr.wr_id = 13;
	swr.opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
	swr.wr.atomic.compare_add = 42;
	swr.wr.atomic.swap = 7;
	CHECK_EQ(ibv_post_send(a.qp, &swr, &sbad), 0);
	CHECK_EQ(poll_one(a.cq, &wc), IBV_WC_SUCCESS);
	CHECK_EQ(wc.opcode, IBV_WC_COMP_SWAP);
	CHECK_EQ(*word, 7);

	/* rdma-core's conventions: a positive errno, *bad_wr at the first one not posted. */
	struct ibv_send_wr w2 = swr, w1 = swr;

	w1.next = &w2;
	w1.opcode = IBV_WR_RDMA_WRITE;
	w1.send_flags = 0;
	w1.wr.rdma.remote_addr = (uintptr_t)b.buf;
	w1.wr.rdma.rkey = b.mr->rkey;
	w2.num_sge = 1000;
	sbad = NULL;
	CHECK_EQ(ibv_post_send(a.qp, &w1, &sbad), EINVAL);
	CHECK(sbad == &w2);
	rwr.num_sge = 1000;
	rbad = NULL;
	CHECK(ibv_post_recv(b.qp, &rwr, &rbad) == EINVAL && rbad == &rwr);

	/* Error to flush: a's posted receive completes with WR_FLUSH_ERR. */
	rwr.num_sge = 1;
	sge = (struct ibv_sge){(uintptr_t)a.buf, 16, a.mr->lkey};
	rwr.wr_id = 77;
	CHECK_EQ(ibv_post_recv(a.qp, &rwr, &rbad), 0);
	qa.qp_state = IBV_QPS_ERR;
	CHECK_EQ(ibv_modify_qp(a.qp, &qa, IBV_QP_STATE), 0);
	CHECK_EQ(a.qp->state, IBV_QPS_ERR);
	/* The unsignaled WRITE posted before the bad request may complete first (flushed). */
	int flushed = 0;

	while (!flushed && poll_one(a.cq, &wc) >= 0) {
		CHECKF(wc.status == IBV_WC_WR_FLUSH_ERR || wc.status == IBV_WC_SUCCESS,
		       "wr %llu: %s", (unsigned long long)wc.wr_id, ibv_wc_status_str(wc.status));
		flushed = wc.wr_id == 77 && wc.status == IBV_WC_WR_FLUSH_ERR;
	}
	CHECK(flushed);

	end_free(&a);
	end_free(&b);
	CHECK_EQ(ibv_destroy_comp_channel(ch), 0);
}

/* UD: an AH made from the address, a datagram to the other QP, the GRH slot and an AH back. */
static void test_ud(struct ibv_context *ctx, struct ibv_pd *pd, int gid_idx)
{
	struct ibv_qp_init_attr init = {
		.qp_type = IBV_QPT_UD,
		.cap = {.max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 1, .max_recv_sge = 1}};
	struct ibv_cq *cq = ibv_create_cq(ctx, 32, NULL, NULL, 0);
	uint8_t *buf = calloc(1, 4096);
	struct ibv_mr *mr = ibv_reg_mr(pd, buf, 4096, IBV_ACCESS_LOCAL_WRITE);
	struct ibv_qp *q[2];
	struct ibv_ah_attr ah_attr = {0};
	struct ibv_wc wc;

	CHECK(cq && mr);
	if (!cq || !mr)
		return;
	init.send_cq = init.recv_cq = cq;
	for (int i = 0; i < 2; i++) {
		q[i] = ibv_create_qp(pd, &init);
		CHECK(q[i] != NULL);
		if (!q[i])
			return;
		ud_to_rts(q[i], 0x11111111);
	}
	ah_attr.port_num = 1;
	CHECK(ibv_create_ah(pd, &ah_attr) == NULL && errno == EINVAL); /* RoCE: GRH required */
	ah_attr.is_global = 1;
	ah_attr.grh.sgid_index = (uint8_t)gid_idx;
	ah_attr.grh.hop_limit = 64;
	CHECK_EQ(ibv_query_gid(ctx, 1, gid_idx, &ah_attr.grh.dgid), 0);
	struct ibv_ah *ah = ibv_create_ah(pd, &ah_attr);

	CHECK(ah != NULL);
	struct ibv_sge rs = {(uintptr_t)buf, 40 + 100, mr->lkey};
	struct ibv_recv_wr rwr = {.wr_id = 1, .sg_list = &rs, .num_sge = 1}, *rbad;
	struct ibv_sge ss = {(uintptr_t)buf + 2048, 100, mr->lkey};
	struct ibv_send_wr swr = {.wr_id = 2,
				  .sg_list = &ss,
				  .num_sge = 1,
				  .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED},
			   *sbad;

	memset(buf + 2048, 0x5a, 100);
	swr.wr.ud.ah = ah;
	swr.wr.ud.remote_qpn = q[1]->qp_num;
	swr.wr.ud.remote_qkey = 0x11111111;
	CHECK_EQ(ibv_post_recv(q[1], &rwr, &rbad), 0);
	CHECK_EQ(ibv_post_send(q[0], &swr, &sbad), 0);
	int got_send = 0, got_recv = 0;

	for (int i = 0; i < 2; i++) {
		if (poll_one(cq, &wc) < 0) {
			CHECKF(0, "no UD completion");
			break;
		}
		CHECKF(wc.status == IBV_WC_SUCCESS, "UD %s", ibv_wc_status_str(wc.status));
		if (wc.opcode == IBV_WC_SEND) {
			got_send = 1;
			continue;
		}
		got_recv = 1;
		CHECK(wc.wr_id == 1 && wc.byte_len == 140 && (wc.wc_flags & IBV_WC_GRH));
		CHECK_EQ(wc.src_qp, q[0]->qp_num);
		CHECK(buf[40] == 0x5a && buf[139] == 0x5a);
		struct ibv_ah_attr back;

		CHECK_EQ(ibv_init_ah_from_wc(ctx, 1, &wc, (struct ibv_grh *)(void *)buf, &back), 0);
		CHECK(back.is_global && back.grh.sgid_index == gid_idx);
		CHECK_MEM_EQ(back.grh.dgid.raw, ah_attr.grh.dgid.raw, 16);
		struct ibv_ah *ah2 =
			ibv_create_ah_from_wc(pd, &wc, (struct ibv_grh *)(void *)buf, 1);

		CHECK(ah2 != NULL);
		if (ah2)
			CHECK_EQ(ibv_destroy_ah(ah2), 0);
	}
	CHECK(got_send && got_recv);
	CHECK_EQ(ibv_destroy_ah(ah), 0);
	for (int i = 0; i < 2; i++)
		CHECK_EQ(ibv_destroy_qp(q[i]), 0);
	CHECK_EQ(ibv_destroy_cq(cq), 0);
	CHECK_EQ(ibv_dereg_mr(mr), 0);
	free(buf);
}

/*
 * Two events in one round: UD QPs b[0] and b[1], whose receive CQs share a blocking channel, get
 * one datagram each in one burst, received by the thread that waits on the channel (it holds the
 * lease from its polls, so the progress thread leaves the sockets to it). It is given one event;
 * its next ibv_get_cq_event returns the other at once, or, when it polls the channel's fd
 * instead (poll_fd), the fd shows it after the progress thread's next round. Either way the fd
 * counts nothing more afterwards.
 */
static void two_events_in_a_round(struct ibv_context *ctx, struct ibv_pd *pd, int gid_idx,
				  bool poll_fd)
{
	struct ibv_qp_init_attr init = {
		.qp_type = IBV_QPT_UD,
		.cap = {.max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 1, .max_recv_sge = 1}};
	struct ibv_comp_channel *ch = ibv_create_comp_channel(ctx);
	struct ibv_cq *scq = ibv_create_cq(ctx, 32, NULL, NULL, 0);
	struct ibv_cq *rcq[2];
	uint8_t *buf = calloc(1, 4096);
	struct ibv_mr *mr = ibv_reg_mr(pd, buf, 4096, IBV_ACCESS_LOCAL_WRITE);
	struct ibv_qp *a, *b[2];
	struct ibv_ah_attr ah_attr = {.is_global = 1, .port_num = 1};
	struct ibv_wc wc;

	CHECK(ch && scq && mr);
	if (!ch || !scq || !mr)
		return;
	init.send_cq = init.recv_cq = scq;
	a = ibv_create_qp(pd, &init);
	CHECK(a != NULL);
	for (int i = 0; i < 2; i++) {
		rcq[i] = ibv_create_cq(ctx, 32, &rcq[i], ch, 0);
		CHECK(rcq[i] != NULL);
		init.recv_cq = rcq[i];
		b[i] = ibv_create_qp(pd, &init);
		CHECK(b[i] != NULL);
		if (!rcq[i] || !b[i] || !a)
			return;
		ud_to_rts(b[i], 0x11111111);
	}
	ud_to_rts(a, 0x11111111);
	ah_attr.grh.sgid_index = (uint8_t)gid_idx;
	ah_attr.grh.hop_limit = 64;
	CHECK_EQ(ibv_query_gid(ctx, 1, gid_idx, &ah_attr.grh.dgid), 0);
	struct ibv_ah *ah = ibv_create_ah(pd, &ah_attr);

	CHECK(ah != NULL);
	if (!ah)
		return;
	struct ibv_sge rs[2] = {{(uintptr_t)buf, 40 + 64, mr->lkey},
				{(uintptr_t)buf + 1024, 40 + 64, mr->lkey}};
	struct ibv_sge ss = {(uintptr_t)buf + 2048, 64, mr->lkey};
	struct ibv_send_wr swr[2], *sbad;

	for (int i = 0; i < 2; i++) {
		struct ibv_recv_wr rwr = {.wr_id = (uint64_t)i, .sg_list = &rs[i], .num_sge = 1};
		struct ibv_recv_wr *rbad;

		CHECK_EQ(ibv_post_recv(b[i], &rwr, &rbad), 0);
		CHECK_EQ(ibv_req_notify_cq(rcq[i], 0), 0);
		swr[i] = (struct ibv_send_wr){.wr_id = 10 + (uint64_t)i,
					      .next = i == 0 ? &swr[1] : NULL,
					      .sg_list = &ss,
					      .num_sge = 1,
					      .opcode = IBV_WR_SEND,
					      .send_flags = IBV_SEND_SIGNALED};
		swr[i].wr.ud.ah = ah;
		swr[i].wr.ud.remote_qpn = b[i]->qp_num;
		swr[i].wr.ud.remote_qkey = 0x11111111;
	}
	/* Polls in a row take the lease (pace.h); one post sends both datagrams at once. */
	for (int i = 0; i < 20; i++)
		CHECK_EQ(ibv_poll_cq(scq, 1, &wc), 0);
	CHECK_EQ(ibv_post_send(a, &swr[0], &sbad), 0);

	struct ibv_cq *got[2] = {NULL, NULL};
	void *got_ctx[2] = {NULL, NULL};
	struct pollfd pfd = {.fd = ch->fd, .events = POLLIN};

	CHECK_EQ(ibv_get_cq_event(ch, &got[0], &got_ctx[0]), 0);
	if (poll_fd)
		CHECK_EQ(poll(&pfd, 1, WAIT_MS), 1);
	CHECK_EQ(ibv_get_cq_event(ch, &got[1], &got_ctx[1]), 0);
	CHECK(got[0] != got[1] && (got[0] == rcq[0] || got[0] == rcq[1]) &&
	      (got[1] == rcq[0] || got[1] == rcq[1]));
	for (int i = 0; i < 2; i++)
		CHECK(got_ctx[i] == (got[i] == rcq[0] ? (void *)&rcq[0] : (void *)&rcq[1]));
	for (int i = 0; i < 2; i++) {
		if (got[i])
			ibv_ack_cq_events(got[i], 1);
		CHECK_EQ(poll_one(rcq[i], &wc), IBV_WC_SUCCESS);
		CHECK(wc.wr_id == (uint64_t)i && wc.byte_len == 40 + 64);
		CHECK_EQ(poll_one(scq, &wc), IBV_WC_SUCCESS);
	}
	CHECK_EQ(poll(&pfd, 1, 0), 0); /* both events taken: the fd counts none */
	CHECK_EQ(ibv_destroy_ah(ah), 0);
	CHECK_EQ(ibv_destroy_qp(a), 0);
	for (int i = 0; i < 2; i++) {
		CHECK_EQ(ibv_destroy_qp(b[i]), 0);
		CHECK_EQ(ibv_destroy_cq(rcq[i]), 0);
	}
	CHECK_EQ(ibv_destroy_cq(scq), 0);
	CHECK_EQ(ibv_destroy_comp_channel(ch), 0);
	CHECK_EQ(ibv_dereg_mr(mr), 0);
	free(buf);
}

int main(int argc, char **argv)
{
	const char *devname = argc > 1 ? argv[1] : "uroce_lo";
	const char *ip4 = argc > 2 ? argv[2] : "127.0.0.1";
	struct ibv_context *ctx = open_device(devname);

	CHECK(!strcmp(ibv_get_device_name(ctx->device), devname));

	struct ibv_device_attr_ex dx;
	struct ibv_port_attr pa;

	CHECK_EQ(ibv_query_device_ex(ctx, NULL, &dx), 0);
	CHECK(dx.orig_attr.vendor_id == 0xFFFFFF && dx.orig_attr.vendor_part_id == 0);
	CHECK(dx.orig_attr.phys_port_cnt == 1 && dx.orig_attr.atomic_cap == IBV_ATOMIC_HCA);
	CHECK_EQ(ibv_query_port(ctx, 1, &pa), 0);
	CHECK(pa.link_layer == IBV_LINK_LAYER_ETHERNET && pa.state == IBV_PORT_ACTIVE);
	CHECK_EQ(ibv_query_port(ctx, 2, &pa), EINVAL);
	__be16 pkey;

	CHECK(ibv_query_pkey(ctx, 1, 0, &pkey) == 0 && pkey == htons(0xFFFF));

	int gid_idx = find_gid(ctx, ip4);
	struct ibv_pd *pd = ibv_alloc_pd(ctx);

	CHECK(pd != NULL);
	if (pd && gid_idx >= 0) {
		test_rc(ctx, pd, gid_idx);
		CHECK_BAIL();
		test_ud(ctx, pd, gid_idx);
		two_events_in_a_round(ctx, pd, gid_idx, false);
		two_events_in_a_round(ctx, pd, gid_idx, true);
		CHECK_EQ(ibv_dealloc_pd(pd), 0);
	}
	CHECK_EQ(ibv_close_device(ctx), 0);
	return check_exit_with("compat_verbs", verbs_kit_checks);
}
