/* SPDX-License-Identifier: MIT */
/*
 * uroce_post_send_all, what ibv_wr_complete() posts a batch with: a chain goes in whole or not
 * at all. Nothing posted shows on the wire (no packet leaves) and in the send queue (its whole
 * depth is still free afterwards).
 */
#include <errno.h>
#include <string.h>

#include "../check.h"
#include "../wr.h"
#include "transport/engine.h"

#define DEPTH 4

static uint8_t buf[4096];

/* Packets the engine sends now (a UD SEND is one packet). */
static int tx_now(struct uroce_eng *e)
{
	struct uroce_tx_pkt tx[16];

	return uroce_eng_tx(e, 0, tx, 16);
}

static void ud_to(struct uroce_qp *qp, enum uroce_qp_state st)
{
	struct uroce_qp_attr at = {.qp_state = UROCE_QPS_INIT, .port_num = 1, .qkey = 0x11};

	CHECK_EQ(uroce_qp_modify(qp, &at,
				 UROCE_QP_STATE | UROCE_QP_PKEY_INDEX | UROCE_QP_PORT | UROCE_QP_QKEY),
		 0);
	if (st == UROCE_QPS_INIT)
		return;
	at.qp_state = UROCE_QPS_RTR;
	CHECK_EQ(uroce_qp_modify(qp, &at, UROCE_QP_STATE), 0);
	at.qp_state = UROCE_QPS_RTS;
	CHECK_EQ(uroce_qp_modify(qp, &at, UROCE_QP_STATE | UROCE_QP_SQ_PSN), 0);
}

/* n UD SENDs to QP 0x99 chained in w[0..n), each of the 16 bytes sge points at. */
static struct uroce_send_wr *chain(struct uroce_send_wr *w, int n, struct uroce_sge *sge,
				   struct uroce_ah *ah)
{
	for (int i = 0; i < n; i++) {
		w[i] = wr_ud_send((uint64_t)i, sge, 1, ah, 0x99, 0x11, UROCE_SEND_SIGNALED);
		w[i].next = i + 1 < n ? &w[i + 1] : NULL;
	}
	return w;
}

int main(void)
{
	struct uroce_eng_cfg cfg;
	struct uroce_eng *e;
	struct uroce_pd *pd;
	struct uroce_cq *cq;
	struct uroce_mr *mr;
	struct uroce_ah *ah;
	struct uroce_qp *qp;
	struct uroce_av av = {.sgid_index = 1, .is_global = true, .dgid = {[10] = 0xff, [11] = 0xff}};
	struct uroce_send_wr w[8], *bad;
	struct uroce_wc wc[8];

	uroce_eng_cfg_default(&cfg);
	CHECK_EQ(uroce_eng_create(&e, &cfg), 0);
	CHECK_EQ(uroce_pd_alloc(e, &pd), 0);
	CHECK_EQ(uroce_cq_create(e, 64, NULL, &cq), 0);
	CHECK_EQ(uroce_mr_reg(pd, buf, sizeof(buf), (uintptr_t)buf, UROCE_ACCESS_LOCAL_WRITE, &mr),
		 0);
	CHECK_EQ(uroce_ah_create(pd, &av, &ah), 0);
	struct uroce_qp_init init = {
		.type = UROCE_QPT_UD,
		.send_cq = cq,
		.recv_cq = cq,
		.cap = {.max_send_wr = DEPTH, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1},
	};
	CHECK_EQ(uroce_qp_create(pd, &init, &qp), 0);
	CHECK_BAIL();
	struct uroce_sge sge = wr_sge((uintptr_t)buf, 16, uroce_mr_lkey(mr));
	struct uroce_sge two[2] = {sge, sge};

	/* Before RTS nothing can be posted: EINVAL at the first request. */
	CHECK_EQ(uroce_post_send_all(qp, chain(w, 2, &sge, ah), &bad), -EINVAL);
	CHECK(bad == &w[0]);
	ud_to(qp, UROCE_QPS_INIT);
	CHECK_EQ(uroce_post_send_all(qp, chain(w, 2, &sge, ah), &bad), -EINVAL);
	CHECK(bad == &w[0]);
	ud_to(qp, UROCE_QPS_RTS);

	/* The third request is bad (two SGEs, max_send_sge 1): the two before it stay out too. */
	chain(w, 3, &sge, ah);
	w[2].sg_list = two;
	w[2].num_sge = 2;
	CHECK_EQ(uroce_post_send_all(qp, w, &bad), -EINVAL);
	CHECK(bad == &w[2]);
	CHECK_EQ(tx_now(e), 0);
	/* A UD request without an address handle, last in the chain. */
	chain(w, 2, &sge, ah)[1].wr.ud.ah = NULL;
	CHECK_EQ(uroce_post_send_all(qp, w, &bad), -EINVAL);
	CHECK(bad == &w[1]);
	CHECK_EQ(tx_now(e), 0);

	/* More than the queue holds: ENOMEM at the first that does not fit, nothing queued. */
	CHECK_EQ(uroce_post_send_all(qp, chain(w, DEPTH + 1, &sge, ah), &bad), -ENOMEM);
	CHECK(bad == &w[DEPTH]);
	CHECK_EQ(tx_now(e), 0);
	/* Room counts what is queued already: 3 of 4 taken, a chain of 2 does not fit. */
	CHECK_EQ(uroce_post_send(qp, chain(w, 3, &sge, ah), &bad), 0);
	struct uroce_send_wr more[2];

	CHECK_EQ(uroce_post_send_all(qp, chain(more, 2, &sge, ah), &bad), -ENOMEM);
	CHECK(bad == &more[1]);
	CHECK_EQ(tx_now(e), 3);
	CHECK_EQ(uroce_cq_poll(cq, 8, wc), 3);

	/* A chain as deep as the queue goes in whole. */
	CHECK_EQ(uroce_post_send_all(qp, chain(w, DEPTH, &sge, ah), &bad), 0);
	CHECK_EQ(tx_now(e), DEPTH);
	CHECK_EQ(uroce_cq_poll(cq, 8, wc), DEPTH);
	for (int i = 0; i < DEPTH; i++)
		CHECK(wc[i].wr_id == (uint64_t)i && wc[i].status == UROCE_WC_SUCCESS);

	/* In ERR every request completes at once as flushed and takes no room: a chain deeper
	 * than the queue is accepted. */
	struct uroce_qp_attr err = {.qp_state = UROCE_QPS_ERR};

	CHECK_EQ(uroce_qp_modify(qp, &err, UROCE_QP_STATE), 0);
	CHECK_EQ(uroce_post_send_all(qp, chain(w, DEPTH + 2, &sge, ah), &bad), 0);
	CHECK_EQ(uroce_cq_poll(cq, 8, wc), DEPTH + 2);
	for (int i = 0; i < DEPTH + 2; i++)
		CHECK(wc[i].wr_id == (uint64_t)i && wc[i].status == UROCE_WC_WR_FLUSH_ERR);
	CHECK_EQ(tx_now(e), 0);

	uroce_eng_destroy(e);
	return check_exit("transport_post_all");
}
