/* SPDX-License-Identifier: MIT */
/*
 * Extended CQs and ibv_resize_cq through uroce's libibverbs.so.1, compiled against Debian's
 * <infiniband/verbs.h> so ibv_create_cq_ex, ibv_start_poll, ibv_wc_read_* ... are the header
 * inlines an application calls.
 *
 * ibv_create_cq_ex's refusals (rdma-core's and rxe's errnos); UD datagrams with immediate data
 * between two QPs of one context on the device's IPv4 address (default uroce_lo and 127.0.0.1;
 * argv[1], argv[2] override them), more of them than the CQ takes from the engine at a time,
 * received into an extended CQ and read with the poll API; on an extended CQ with a completion
 * channel, a poll session ended half way, then ibv_resize_cq and ibv_poll_cq, which see what
 * the session left, in order; and ibv_resize_cq on a plain CQ holding completions.
 * Exit 77 (skip) when the device does not exist or cannot be opened here.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <infiniband/verbs.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "verbs_kit.h"

#define MSGS	40 /* more than one batch of the poll API (16) */
#define LEN	64
#define GRH	40
#define QKEY	0x11111111u

struct ud {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	uint8_t *buf;
	struct ibv_cq *scq; /* plain: the sender's */
	struct ibv_qp *q[2]; /* q[0] sends, q[1] receives */
	struct ibv_ah *ah;
};

static struct ibv_cq_ex *cq_ex(struct ibv_context *ctx, uint32_t cqe, uint64_t wc_flags,
			       uint32_t comp_mask, uint32_t flags)
{
	struct ibv_cq_init_attr_ex a = {
		.cqe = cqe, .wc_flags = wc_flags, .comp_mask = comp_mask, .flags = flags};

	return ibv_create_cq_ex(ctx, &a);
}

/* What ibv_create_cq_ex refuses, and what it gives. */
static void create(struct ibv_context *ctx)
{
	struct ibv_cq_init_attr_ex a = {.cqe = 8, .comp_vector = (uint32_t)ctx->num_comp_vectors};

	CHECK(ibv_create_cq_ex(ctx, &a) == NULL && errno == EINVAL);
	CHECK(cq_ex(ctx, 0, 0, 0, 0) == NULL && errno == EINVAL);
	CHECK(cq_ex(ctx, (1u << 20) + 1, 0, 0, 0) == NULL && errno == EINVAL); /* > max_cqe */
	CHECK(cq_ex(ctx, 8, IBV_WC_EX_WITH_COMPLETION_TIMESTAMP, 0, 0) == NULL &&
	      errno == EOPNOTSUPP);
	CHECK(cq_ex(ctx, 8, IBV_WC_EX_WITH_CVLAN, 0, 0) == NULL && errno == EOPNOTSUPP);
	CHECK(cq_ex(ctx, 8, 1u << 20, 0, 0) == NULL && errno == EOPNOTSUPP);
	CHECK(cq_ex(ctx, 8, 0, 1u << 5, 0) == NULL && errno == EOPNOTSUPP);
	CHECK(cq_ex(ctx, 8, 0, IBV_CQ_INIT_ATTR_MASK_PD, 0) == NULL && errno == EOPNOTSUPP);
	CHECK(cq_ex(ctx, 8, 0, IBV_CQ_INIT_ATTR_MASK_FLAGS, IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN) ==
		      NULL &&
	      errno == EOPNOTSUPP);
	CHECK(cq_ex(ctx, 8, 0, IBV_CQ_INIT_ATTR_MASK_FLAGS, 1u << 7) == NULL &&
	      errno == EOPNOTSUPP);
	/* Flags outside the mask are not looked at. */
	struct ibv_cq_ex *cq = cq_ex(ctx, 8, IBV_WC_EX_WITH_BYTE_LEN, 0, 0xFF);

	CHECK(cq != NULL);
	if (!cq)
		return;
	CHECK(cq->context == ctx && cq->cqe >= 8);
	CHECK(cq->start_poll && cq->next_poll && cq->end_poll && cq->read_opcode &&
	      cq->read_vendor_err && cq->read_wc_flags && cq->read_byte_len);
	CHECK(!cq->read_imm_data && !cq->read_completion_ts); /* not asked for */
	struct ibv_poll_cq_attr pa = {0};

	CHECK_EQ(ibv_start_poll(cq, &pa), ENOENT);
	ibv_end_poll(cq); /* after ENOENT: harmless (pyverbs does it) */
	CHECK_EQ(ibv_start_poll(cq, &pa), ENOENT);
	pa.comp_mask = 1;
	CHECK_EQ(ibv_start_poll(cq, &pa), EINVAL);
	CHECK_EQ(ibv_destroy_cq(ibv_cq_ex_to_cq(cq)), 0);

	cq = cq_ex(ctx, 8, IBV_WC_STANDARD_FLAGS, IBV_CQ_INIT_ATTR_MASK_FLAGS,
		   IBV_CREATE_CQ_ATTR_SINGLE_THREADED);
	CHECK(cq != NULL);
	if (!cq)
		return;
	CHECK(cq->read_imm_data && cq->read_qp_num && cq->read_src_qp && cq->read_slid &&
	      cq->read_sl && cq->read_dlid_path_bits);
	CHECK_EQ(ibv_destroy_cq(ibv_cq_ex_to_cq(cq)), 0);
}

/* Two UD QPs: q[0] sends with the plain CQ scq, q[1] receives into rcq. */
static int ud_make(struct ud *u, struct ibv_context *ctx, struct ibv_pd *pd, int gid_idx,
		   struct ibv_cq *rcq)
{
	struct ibv_qp_init_attr init = {
		.qp_type = IBV_QPT_UD,
		.cap = {.max_send_wr = MSGS, .max_recv_wr = MSGS, .max_send_sge = 1,
			.max_recv_sge = 1}};
	struct ibv_ah_attr ah = {.is_global = 1, .port_num = 1};

	memset(u, 0, sizeof(*u));
	u->ctx = ctx;
	u->pd = pd;
	u->buf = calloc(MSGS + 1, GRH + LEN);
	u->mr = ibv_reg_mr(pd, u->buf, (MSGS + 1) * (GRH + LEN), IBV_ACCESS_LOCAL_WRITE);
	u->scq = ibv_create_cq(ctx, 2 * MSGS, NULL, NULL, 0);
	CHECK(u->buf && u->mr && u->scq);
	if (!u->buf || !u->mr || !u->scq)
		return -1;
	for (int i = 0; i < 2; i++) {
		init.send_cq = i ? rcq : u->scq;
		init.recv_cq = i ? rcq : u->scq;
		u->q[i] = ibv_create_qp(pd, &init);
		CHECK(u->q[i] != NULL);
		if (!u->q[i])
			return -1;
		ud_to_rts(u->q[i], QKEY);
	}
	ah.grh.sgid_index = (uint8_t)gid_idx;
	ah.grh.hop_limit = 64;
	CHECK_EQ(ibv_query_gid(ctx, 1, gid_idx, &ah.grh.dgid), 0);
	u->ah = ibv_create_ah(pd, &ah);
	CHECK(u->ah != NULL);
	return u->ah ? 0 : -1;
}

static void ud_free(struct ud *u)
{
	if (u->ah)
		CHECK_EQ(ibv_destroy_ah(u->ah), 0);
	for (int i = 0; i < 2; i++)
		if (u->q[i])
			CHECK_EQ(ibv_destroy_qp(u->q[i]), 0);
	if (u->scq)
		CHECK_EQ(ibv_destroy_cq(u->scq), 0);
	if (u->mr)
		CHECK_EQ(ibv_dereg_mr(u->mr), 0);
	free(u->buf);
}

/*
 * n receives with wr_id first.., then n SENDs with immediate data 0x5000 + wr_id to q[1], the
 * last one solicited; waits for the n send completions on the plain CQ.
 */
static void ud_send(struct ud *u, uint64_t first, int n)
{
	for (int i = 0; i < n; i++) {
		uint64_t id = first + (uint64_t)i;
		struct ibv_sge rs = {(uintptr_t)u->buf + (id % MSGS) * (GRH + LEN), GRH + LEN,
				     u->mr->lkey};
		struct ibv_recv_wr rwr = {.wr_id = id, .sg_list = &rs, .num_sge = 1}, *rbad;

		CHECK_EQ(ibv_post_recv(u->q[1], &rwr, &rbad), 0);
	}
	for (int i = 0; i < n; i++) {
		uint64_t id = first + (uint64_t)i;
		uint8_t *src = u->buf + MSGS * (GRH + LEN);
		struct ibv_sge ss = {(uintptr_t)src, LEN, u->mr->lkey};
		struct ibv_send_wr swr = {.wr_id = id,
					  .sg_list = &ss,
					  .num_sge = 1,
					  .opcode = IBV_WR_SEND_WITH_IMM,
					  .send_flags = IBV_SEND_SIGNALED,
					  .imm_data = htonl(0x5000u + (uint32_t)id)},
				   *sbad;

		if (i == n - 1)
			swr.send_flags |= IBV_SEND_SOLICITED;
		memset(src, (int)id, LEN);
		swr.wr.ud.ah = u->ah;
		swr.wr.ud.remote_qpn = u->q[1]->qp_num;
		swr.wr.ud.remote_qkey = QKEY;
		CHECK_EQ(ibv_post_send(u->q[0], &swr, &sbad), 0);
	}
	uint64_t end = now_ms() + WAIT_MS;
	int got = 0;

	while (got < n && now_ms() < end) {
		struct ibv_wc wc[8];
		int k = ibv_poll_cq(u->scq, 8, wc);

		for (int i = 0; i < k; i++)
			CHECK_EQ(wc[i].status, IBV_WC_SUCCESS);
		got += k;
	}
	CHECK_EQ(got, n);
}

/*
 * The completion event of cq (armed for solicited completions before ud_send) within WAIT_MS:
 * the last datagram arrived, and with it every one before it (one QP, in order).
 */
static void wait_event(struct ibv_comp_channel *ch, struct ibv_cq *cq)
{
	struct pollfd pfd = {.fd = ch->fd, .events = POLLIN};
	struct ibv_cq *ev_cq = NULL;
	void *ev_ctx;

	CHECK_EQ(poll(&pfd, 1, WAIT_MS), 1);
	CHECK_EQ(ibv_get_cq_event(ch, &ev_cq, &ev_ctx), 0);
	CHECK(ev_cq == cq);
	if (ev_cq)
		ibv_ack_cq_events(ev_cq, 1);
}

/* The current completion of cq is the receive of datagram id, every field as sent. */
static void check_recv(struct ibv_cq_ex *cq, const struct ud *u, uint64_t id)
{
	CHECK_EQ(cq->status, IBV_WC_SUCCESS);
	CHECK_EQ(cq->wr_id, id);
	CHECK_EQ(ibv_wc_read_opcode(cq), IBV_WC_RECV);
	CHECK_EQ(ibv_wc_read_vendor_err(cq), 0);
	CHECK_EQ(ibv_wc_read_byte_len(cq), GRH + LEN);
	CHECK_EQ(ntohl(ibv_wc_read_imm_data(cq)), 0x5000u + id);
	CHECK_EQ(ibv_wc_read_qp_num(cq), u->q[1]->qp_num);
	CHECK_EQ(ibv_wc_read_src_qp(cq), u->q[0]->qp_num);
	CHECK_EQ(ibv_wc_read_wc_flags(cq), IBV_WC_GRH | IBV_WC_WITH_IMM);
	CHECK_EQ(ibv_wc_read_slid(cq), 0);
	CHECK_EQ(ibv_wc_read_sl(cq), 0);
	CHECK_EQ(ibv_wc_read_dlid_path_bits(cq), 0);
	CHECK_EQ(u->buf[(id % MSGS) * (GRH + LEN) + GRH], (uint8_t)id);
}

/* Read want receives (wr_ids first..) in one poll session, in order, within WAIT_MS. Returns
 * how many were read. */
static int read_ex(struct ibv_cq_ex *cq, const struct ud *u, uint64_t first, int want)
{
	struct ibv_poll_cq_attr pa = {0};
	uint64_t end = now_ms() + WAIT_MS;
	int got = 0, err;

	while ((err = ibv_start_poll(cq, &pa)) == ENOENT && now_ms() < end)
		;
	CHECK_EQ(err, 0);
	if (err)
		return 0;
	for (;;) {
		check_recv(cq, u, first + (uint64_t)got);
		if (++got == want)
			break;
		while ((err = ibv_next_poll(cq)) == ENOENT && now_ms() < end)
			;
		CHECK_EQ(err, 0);
		if (err)
			break;
	}
	ibv_end_poll(cq);
	return got;
}

/* Datagrams into an extended CQ, read with the poll API. */
static void traffic(struct ibv_context *ctx, struct ibv_pd *pd, int gid_idx)
{
	struct ibv_cq_ex *cq = cq_ex(ctx, 2 * MSGS, IBV_WC_STANDARD_FLAGS, 0, 0);
	struct ibv_poll_cq_attr pa = {0};
	struct ud u;

	CHECK(cq != NULL);
	if (!cq)
		return;
	if (ud_make(&u, ctx, pd, gid_idx, ibv_cq_ex_to_cq(cq)) == 0) {
		ud_send(&u, 0, MSGS);
		CHECK_EQ(read_ex(cq, &u, 0, MSGS), MSGS);
		CHECK_EQ(ibv_start_poll(cq, &pa), ENOENT);
	}
	ud_free(&u);
	CHECK_EQ(ibv_destroy_cq(ibv_cq_ex_to_cq(cq)), 0);
}

/*
 * An extended CQ with a completion channel; a poll session ended half way, then ibv_resize_cq
 * and ibv_poll_cq, which count and hand out what the session took from the engine but left.
 */
static void half_session(struct ibv_context *ctx, struct ibv_pd *pd, int gid_idx)
{
	struct ibv_comp_channel *ch = ibv_create_comp_channel(ctx);
	struct ibv_cq_init_attr_ex ea = {.cqe = 20, .wc_flags = IBV_WC_STANDARD_FLAGS, .channel = ch};
	struct ibv_cq_ex *cq = ch ? ibv_create_cq_ex(ctx, &ea) : NULL;
	struct ibv_cq *ibcq = cq ? ibv_cq_ex_to_cq(cq) : NULL;
	struct ibv_wc wc[20];
	struct ud u;

	CHECK(ch && cq);
	if (!cq)
		goto out;
	if (ud_make(&u, ctx, pd, gid_idx, ibcq) == 0) {
		CHECK_EQ(ibv_req_notify_cq(ibcq, 1), 0);
		ud_send(&u, 100, 20);
		wait_event(ch, ibcq);
		/* Read 5 of 20: the rest stay queued, partly in the CQ's buffer. */
		CHECK_EQ(read_ex(cq, &u, 100, 5), 5);
		CHECK_EQ(ibv_resize_cq(ibcq, 14), EINVAL);
		CHECK_EQ(cq->cqe, 20);
		CHECK_EQ(ibv_resize_cq(ibcq, 15), 0);
		CHECK_EQ(cq->cqe, 15);
		/* The next session goes on where the last ended. */
		CHECK_EQ(read_ex(cq, &u, 105, 3), 3);
		/* ibv_poll_cq takes the rest in order, what the session took first. */
		CHECK_EQ(ibv_poll_cq(ibcq, 20, wc), 12);
		for (int i = 0; i < 12; i++) {
			CHECK_EQ(wc[i].wr_id, 108u + (unsigned)i);
			CHECK_EQ(wc[i].status, IBV_WC_SUCCESS);
			CHECK_EQ(ntohl(wc[i].imm_data), 0x5000u + 108u + (unsigned)i);
		}
		CHECK_EQ(ibv_resize_cq(ibcq, 1), 0);
		CHECK_EQ(ibv_resize_cq(ibcq, 20), 0);
	}
	ud_free(&u);
	CHECK_EQ(ibv_destroy_cq(ibcq), 0);
out:
	if (ch)
		CHECK_EQ(ibv_destroy_comp_channel(ch), 0);
}

/* ibv_resize_cq on a plain CQ holding completions. */
static void resize(struct ibv_context *ctx, struct ibv_pd *pd, int gid_idx)
{
	struct ibv_comp_channel *ch = ibv_create_comp_channel(ctx);
	struct ibv_cq *cq = ch ? ibv_create_cq(ctx, 4, NULL, ch, 0) : NULL;
	struct ibv_wc wc[MSGS];
	struct ud u;

	CHECK(ch && cq);
	if (!cq)
		goto out;
	CHECK_EQ(ibv_resize_cq(cq, 0), EINVAL);
	CHECK_EQ(ibv_resize_cq(cq, (1 << 20) + 1), EINVAL);
	if (ud_make(&u, ctx, pd, gid_idx, cq) == 0) {
		uint64_t end = now_ms() + WAIT_MS;
		int n = 0;

		CHECK_EQ(ibv_req_notify_cq(cq, 1), 0);
		ud_send(&u, 0, 3);
		wait_event(ch, cq); /* three receives queued */
		CHECK_EQ(ibv_resize_cq(cq, 2), EINVAL);
		CHECK_EQ(cq->cqe, 4);
		CHECK_EQ(ibv_resize_cq(cq, 3), 0);
		CHECK_EQ(cq->cqe, 3);
		CHECK_EQ(ibv_resize_cq(cq, MSGS), 0);
		CHECK_EQ(cq->cqe, MSGS);
		ud_send(&u, 3, MSGS - 3); /* fills it exactly */
		while (n < MSGS && now_ms() < end)
			n += ibv_poll_cq(cq, MSGS - n, wc + n);
		CHECK_EQ(n, MSGS);
		for (int i = 0; i < n; i++) {
			CHECK_EQ(wc[i].wr_id, (uint64_t)i);
			CHECK_EQ(wc[i].status, IBV_WC_SUCCESS);
		}
	}
	ud_free(&u);
	CHECK_EQ(ibv_destroy_cq(cq), 0);
out:
	if (ch)
		CHECK_EQ(ibv_destroy_comp_channel(ch), 0);
}

int main(int argc, char **argv)
{
	const char *devname = argc > 1 ? argv[1] : "uroce_lo";
	const char *ip4 = argc > 2 ? argv[2] : "127.0.0.1";
	struct ibv_context *ctx = open_device(devname);
	int gid_idx = find_gid(ctx, ip4);
	struct ibv_pd *pd = ibv_alloc_pd(ctx);

	CHECK(pd != NULL);
	create(ctx);
	if (pd && gid_idx >= 0) {
		traffic(ctx, pd, gid_idx);
		half_session(ctx, pd, gid_idx);
		resize(ctx, pd, gid_idx);
	}
	if (pd)
		CHECK_EQ(ibv_dealloc_pd(pd), 0);
	CHECK_EQ(ibv_close_device(ctx), 0);
	return check_exit_with("compat_cq_ex", verbs_kit_checks);
}
