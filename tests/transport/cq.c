/* SPDX-License-Identifier: MIT */
/*
 * Completion queues on one engine: uroce_cq_resize grows and shrinks a CQ and keeps what it
 * holds, in order, refuses a size below what is queued, and the new size is the capacity.
 * Completions come from receives posted to a QP in ERR, which complete at once with a flush
 * error carrying their wr_id, so the test needs no peer and no packet.
 */
#include <errno.h>

#include "../check.h"
#include "../wr.h"
#include "transport/engine.h"

struct bench {
	struct uroce_eng *e;
	struct uroce_pd *pd;
	struct uroce_cq *cq;
	struct uroce_qp *qp;
	uint64_t next_id; /* wr_id of the next completion pushed */
	uint64_t want_id; /* wr_id the next poll must return */
};

static void bench_init(struct bench *b, uint32_t cqe)
{
	struct uroce_eng_cfg cfg;
	struct uroce_qp_init init = {
		.type = UROCE_QPT_UD,
		.cap = {.max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1},
	};
	struct uroce_qp_attr a = {.qp_state = UROCE_QPS_ERR};

	uroce_eng_cfg_default(&cfg);
	CHECK_EQ(uroce_eng_create(&b->e, &cfg), 0);
	CHECK_EQ(uroce_pd_alloc(b->e, &b->pd), 0);
	CHECK_EQ(uroce_cq_create(b->e, cqe, NULL, &b->cq), 0);
	init.send_cq = init.recv_cq = b->cq;
	CHECK_EQ(uroce_qp_create(b->pd, &init, &b->qp), 0);
	CHECK_EQ(uroce_qp_modify(b->qp, &a, UROCE_QP_STATE), 0);
	b->next_id = b->want_id = 1;
}

/* Complete n receives on the CQ (flushed: the QP is in ERR). */
static void push(struct bench *b, int n)
{
	for (int i = 0; i < n; i++) {
		struct uroce_recv_wr wr = wr_recv(b->next_id++, NULL, 0), *bad;

		CHECK_EQ(uroce_post_recv(b->qp, &wr, &bad), 0);
	}
}

/* Poll n completions and check they are the oldest ones, in order. */
static void pop(struct bench *b, int n)
{
	struct uroce_wc wc;

	for (int i = 0; i < n; i++) {
		CHECK_EQ(uroce_cq_poll(b->cq, 1, &wc), 1);
		CHECK_EQ(wc.wr_id, b->want_id);
		CHECK_EQ(wc.status, UROCE_WC_WR_FLUSH_ERR);
		b->want_id++;
	}
}

static int events(struct bench *b, enum uroce_event_type type)
{
	struct uroce_event ev;
	int n = 0;

	while (uroce_eng_poll_event(b->e, &ev) == 1)
		n += ev.type == type;
	return n;
}

/* Sizes out of range, or below the queued count, are refused and change nothing. */
static void refused(void)
{
	struct bench b;

	bench_init(&b, 4);
	push(&b, 3);
	CHECK_EQ(uroce_cq_resize(b.cq, 0), -EINVAL);
	CHECK_EQ(uroce_cq_resize(b.cq, UROCE_MAX_CQE + 1), -EINVAL);
	CHECK_EQ(uroce_cq_resize(b.cq, 2), -EINVAL);
	CHECK_EQ(uroce_cq_count(b.cq), 3);
	/* Still four entries: the fourth fits, the fifth overflows. */
	push(&b, 2);
	CHECK_EQ(uroce_cq_count(b.cq), 4);
	CHECK_EQ(uroce_eng_counter(b.e, UROCE_CNT_DROP_CQ_OVERFLOW), 1);
	pop(&b, 4);
	uroce_eng_destroy(b.e);
}

/* Exactly the queued count is allowed, and is then the capacity. */
static void to_count(void)
{
	struct bench b;

	bench_init(&b, 8);
	push(&b, 3);
	CHECK_EQ(uroce_cq_resize(b.cq, 3), 0);
	push(&b, 1);
	CHECK_EQ(uroce_cq_count(b.cq), 3);
	CHECK_EQ(uroce_eng_counter(b.e, UROCE_CNT_DROP_CQ_OVERFLOW), 1);
	CHECK_EQ(events(&b, UROCE_EVENT_CQ_ERR), 1);
	pop(&b, 3);
	uroce_eng_destroy(b.e);
}

/*
 * Grow a CQ whose ring has wrapped (the oldest entry is not at the ring's start), then shrink
 * it: every completion comes out once, oldest first, and each size is the capacity.
 */
static void grow_shrink(void)
{
	struct bench b;
	struct uroce_wc wc;

	bench_init(&b, 8);
	push(&b, 6);
	pop(&b, 5);
	push(&b, 7); /* entries 6..13, wrapped around the 8-slot ring */
	CHECK_EQ(uroce_cq_count(b.cq), 8);
	CHECK_EQ(uroce_cq_resize(b.cq, 100), 0);
	push(&b, 92);
	CHECK_EQ(uroce_cq_count(b.cq), 100);
	push(&b, 1); /* the 101st */
	CHECK_EQ(uroce_eng_counter(b.e, UROCE_CNT_DROP_CQ_OVERFLOW), 1);
	b.next_id--; /* lost */
	pop(&b, 97);
	CHECK_EQ(uroce_cq_resize(b.cq, 5), 0);
	CHECK_EQ(uroce_cq_count(b.cq), 3);
	push(&b, 2);
	CHECK_EQ(uroce_cq_count(b.cq), 5);
	push(&b, 1);
	CHECK_EQ(uroce_eng_counter(b.e, UROCE_CNT_DROP_CQ_OVERFLOW), 2);
	b.next_id--;
	pop(&b, 5);
	CHECK_EQ(uroce_cq_poll(b.cq, 1, &wc), 0);
	CHECK_EQ(b.want_id, b.next_id);
	/* Empty: any size in range goes, down to 1. */
	CHECK_EQ(uroce_cq_resize(b.cq, 1), 0);
	push(&b, 2);
	CHECK_EQ(uroce_cq_count(b.cq), 1);
	pop(&b, 1);
	uroce_eng_destroy(b.e);
}

/* An armed CQ stays armed across a resize: the next completion raises the event. */
static void armed(void)
{
	struct bench b;

	bench_init(&b, 2);
	CHECK_EQ(uroce_cq_req_notify(b.cq, false), 0);
	CHECK_EQ(uroce_cq_resize(b.cq, 64), 0);
	CHECK_EQ(events(&b, UROCE_EVENT_COMP), 0);
	push(&b, 1);
	CHECK_EQ(events(&b, UROCE_EVENT_COMP), 1);
	pop(&b, 1);
	uroce_eng_destroy(b.e);
}

int main(void)
{
	refused();
	to_count();
	grow_shrink();
	armed();
	return check_exit("transport_cq");
}
