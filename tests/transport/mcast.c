/* SPDX-License-Identifier: MIT */
/*
 * Multicast groups of UD QPs (engine.h, "multicast"): attach and detach and their errors, a
 * packet to a group copied to every attached QP of the receiving engine with each QP's own
 * Q_Key check, the sender's engine getting what the network loops back, detaching and
 * destroying QPs taking them out of the group, and the table's limits.
 */
#include <errno.h>
#include <string.h>

#include "../check.h"
#include "../wr.h"
#include "transport/engine.h"

#define QKEY 0x01234567u

struct node {
	struct uroce_eng *e;
	struct uroce_pd *pd;
	struct uroce_cq *cq;
	struct uroce_mr *mr;
	uint8_t gid[16];
	uint8_t buf[16384];
};

static uint64_t now;

/* 239.1.2.3 as the v4-mapped MGID RoCE v2 uses, and an IPv6 group. */
static const uint8_t mgid4[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF, 239, 1, 2, 3};
static const uint8_t mgid6[16] = {0xFF, 0x0E, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x42};

static void node_init(struct node *n, uint8_t last)
{
	struct uroce_eng_cfg cfg;

	uroce_eng_cfg_default(&cfg);
	CHECK_EQ(uroce_eng_create(&n->e, &cfg), 0);
	CHECK_EQ(uroce_pd_alloc(n->e, &n->pd), 0);
	CHECK_EQ(uroce_cq_create(n->e, 256, NULL, &n->cq), 0);
	CHECK_EQ(uroce_mr_reg(n->pd, n->buf, sizeof(n->buf), (uintptr_t)n->buf,
			      UROCE_ACCESS_LOCAL_WRITE, &n->mr),
		 0);
	memset(n->gid, 0, 16);
	n->gid[10] = n->gid[11] = 0xFF;
	n->gid[12] = 198;
	n->gid[13] = 18;
	n->gid[15] = last;
}

/* A UD QP in RTS with Q_Key qkey (or an RC QP in RESET). */
static struct uroce_qp *qp_make(struct node *n, enum uroce_qp_type type, uint32_t qkey)
{
	struct uroce_qp_init init = {
		.type = type,
		.send_cq = n->cq,
		.recv_cq = n->cq,
		.cap = {.max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 1, .max_recv_sge = 1},
	};
	struct uroce_qp *qp = NULL;

	CHECK_EQ(uroce_qp_create(n->pd, &init, &qp), 0);
	if (type != UROCE_QPT_UD)
		return qp;
	struct uroce_qp_attr at = {.qp_state = UROCE_QPS_INIT, .port_num = 1, .qkey = qkey};

	CHECK_EQ(uroce_qp_modify(qp, &at, UROCE_QP_STATE | UROCE_QP_PKEY_INDEX | UROCE_QP_PORT |
						  UROCE_QP_QKEY),
		 0);
	at.qp_state = UROCE_QPS_RTR;
	CHECK_EQ(uroce_qp_modify(qp, &at, UROCE_QP_STATE), 0);
	at.qp_state = UROCE_QPS_RTS;
	CHECK_EQ(uroce_qp_modify(qp, &at, UROCE_QP_STATE | UROCE_QP_SQ_PSN), 0);
	return qp;
}

/* Post a receive into slot k (1 KiB each) of n's buffer, wr_id k. */
static void post_recv(struct node *n, struct uroce_qp *qp, int k)
{
	struct uroce_sge s = wr_sge((uintptr_t)n->buf + 1024u * (unsigned)k, 1024,
				    uroce_mr_lkey(n->mr));
	struct uroce_recv_wr w = wr_recv((uint64_t)k, &s, 1), *bad;

	CHECK_EQ(uroce_post_recv(qp, &w, &bad), 0);
}

/*
 * Send msg from qp on a to the group mgid, and hand every packet a makes to each engine of
 * to[0..n) as arriving for the group address (the network's copies, a's own loop-back among
 * them when a is listed). Returns the packets sent.
 */
static int send_to_group(struct node *a, struct uroce_qp *qp, const uint8_t mgid[16],
			 const char *msg, struct node **to, int n)
{
	struct uroce_av av = {.sgid_index = 1, .is_global = true, .hop_limit = 1};
	struct uroce_ah *ah;
	size_t len = strlen(msg);

	memcpy(av.dgid, mgid, 16);
	CHECK_EQ(uroce_ah_create(a->pd, &av, &ah), 0);
	memcpy(a->buf + 15 * 1024, msg, len);
	struct uroce_sge s = wr_sge((uintptr_t)a->buf + 15 * 1024, (uint32_t)len,
				    uroce_mr_lkey(a->mr));
	struct uroce_send_wr w = wr_ud_send(77, &s, 1, ah, UROCE_MCAST_QPN, QKEY,
					    UROCE_SEND_SIGNALED),
			     *bad;

	CHECK_EQ(uroce_post_send(qp, &w, &bad), 0);
	struct uroce_tx_pkt tx[4];
	int m = uroce_eng_tx(a->e, now, tx, 4);

	for (int i = 0; i < m; i++) {
		uint8_t pkt[2048];
		uint32_t plen = tx[i].hdr_len;

		CHECK_EQ(tx[i].dst_qpn, UROCE_MCAST_QPN);
		CHECK_MEM_EQ(tx[i].av->dgid, mgid, 16);
		memcpy(pkt, tx[i].hdr, tx[i].hdr_len);
		memcpy(pkt + plen, tx[i].payload, tx[i].payload_len);
		plen += tx[i].payload_len;
		memset(pkt + plen, 0, tx[i].pad + 4u);
		plen += tx[i].pad + 4u;
		for (int k = 0; k < n; k++) {
			struct uroce_rx_pkt rx = {.data = pkt, .len = plen,
						  .encap = UROCE_ENCAP_V2_IPV4, .sgid_index = 1};

			memcpy(rx.sgid, a->gid, 16);
			memcpy(rx.dgid, mgid, 16);
			uroce_eng_rx(to[k]->e, now, &rx);
		}
	}
	struct uroce_wc wc;

	CHECK(uroce_cq_poll(a->cq, 1, &wc) == 1 && wc.wr_id == 77 && wc.status == UROCE_WC_SUCCESS);
	uroce_ah_destroy(ah);
	return m;
}

/* n's next completion is the receive into slot k by qp of msg, from src_qp. */
static void check_recv(struct node *n, struct uroce_qp *qp, int k, const char *msg,
		       uint32_t src_qp)
{
	struct uroce_wc wc;
	size_t len = strlen(msg);

	CHECK_EQ(uroce_cq_poll(n->cq, 1, &wc), 1);
	CHECK_EQ(wc.status, UROCE_WC_SUCCESS);
	CHECK_EQ(wc.wr_id, (uint64_t)k);
	CHECK_EQ(wc.qp_num, uroce_qp_num(qp));
	CHECK_EQ(wc.src_qp, src_qp);
	CHECK_EQ(wc.byte_len, 40 + len);
	CHECK_MEM_EQ(n->buf + 1024 * k + 40, msg, len);
}

static void attach_errors(void)
{
	struct node a;

	node_init(&a, 1);
	struct uroce_qp *ud = qp_make(&a, UROCE_QPT_UD, QKEY);
	struct uroce_qp *rc = qp_make(&a, UROCE_QPT_RC, 0);
	uint8_t groups[4][16];

	/* Only UD QPs, only multicast GIDs (ib_attach_mcast's checks). */
	CHECK_EQ(uroce_mcast_attach(rc, mgid4), -EINVAL);
	CHECK_EQ(uroce_mcast_attach(ud, a.gid), -EINVAL);
	uint8_t not224[16];

	memcpy(not224, mgid4, 16);
	not224[12] = 240; /* 240.0.0.0/4 is not multicast */
	CHECK_EQ(uroce_mcast_attach(ud, not224), -EINVAL);
	CHECK(uroce_gid_is_mcast(mgid4) && uroce_gid_is_mcast(mgid6));
	CHECK(!uroce_gid_is_mcast(a.gid) && !uroce_gid_is_mcast(not224));
	CHECK_EQ(uroce_mcast_detach(ud, mgid4), -EINVAL); /* not attached */
	CHECK_EQ(uroce_mcast_groups(a.e, groups, 4), 0);

	/* Attaching twice attaches once: one detach takes it out. */
	CHECK_EQ(uroce_mcast_attach(ud, mgid4), 0);
	CHECK_EQ(uroce_mcast_attach(ud, mgid4), 0);
	CHECK_EQ(uroce_mcast_attach(ud, mgid6), 0);
	CHECK_EQ(uroce_mcast_groups(a.e, groups, 4), 2);
	CHECK_MEM_EQ(groups[0], mgid4, 16);
	CHECK_MEM_EQ(groups[1], mgid6, 16);
	CHECK_EQ(uroce_mcast_detach(ud, mgid4), 0);
	CHECK_EQ(uroce_mcast_detach(ud, mgid4), -EINVAL);
	CHECK_EQ(uroce_mcast_groups(a.e, groups, 4), 1);
	CHECK_MEM_EQ(groups[0], mgid6, 16);
	CHECK_EQ(uroce_mcast_detach(ud, mgid6), 0);

	/* The limits: groups per engine, QPs per group. */
	uint8_t g[16];

	memcpy(g, mgid6, 16);
	for (int i = 0; i < UROCE_MAX_MCAST_GRP; i++) {
		g[14] = (uint8_t)i;
		CHECK_EQ(uroce_mcast_attach(ud, g), 0);
	}
	g[14] = 0xFF;
	CHECK_EQ(uroce_mcast_attach(ud, g), -ENOMEM);
	CHECK_EQ(uroce_mcast_groups(a.e, groups, 4), UROCE_MAX_MCAST_GRP);
	/* Destroying the QP detaches it from every group. */
	CHECK_EQ(uroce_qp_destroy(ud), 0);
	CHECK_EQ(uroce_mcast_groups(a.e, groups, 4), 0);

	struct uroce_qp *qps[UROCE_MAX_MCAST_QP_ATTACH + 1];

	for (int i = 0; i <= UROCE_MAX_MCAST_QP_ATTACH; i++) {
		struct uroce_qp_init init = {.type = UROCE_QPT_UD, .send_cq = a.cq, .recv_cq = a.cq,
					     .cap = {.max_send_wr = 1, .max_recv_wr = 1,
						     .max_send_sge = 1, .max_recv_sge = 1}};

		CHECK_EQ(uroce_qp_create(a.pd, &init, &qps[i]), 0);
		CHECK_EQ(uroce_mcast_attach(qps[i], mgid4),
			 i < UROCE_MAX_MCAST_QP_ATTACH ? 0 : -ENOMEM);
	}
	CHECK_EQ(uroce_mcast_groups(a.e, groups, 4), 1);
	uroce_eng_destroy(a.e); /* with QPs still attached */
}

static void delivery(void)
{
	struct node a, b;
	uint8_t groups[4][16];

	node_init(&a, 1);
	node_init(&b, 2);
	struct uroce_qp *qa = qp_make(&a, UROCE_QPT_UD, QKEY);
	struct uroce_qp *qb1 = qp_make(&b, UROCE_QPT_UD, QKEY);
	struct uroce_qp *qb2 = qp_make(&b, UROCE_QPT_UD, QKEY);
	struct uroce_qp *qbad = qp_make(&b, UROCE_QPT_UD, QKEY + 1); /* another Q_Key */
	struct uroce_qp *qout = qp_make(&b, UROCE_QPT_UD, QKEY);     /* not attached */
	struct node *both[2] = {&b, &a};

	CHECK_EQ(uroce_mcast_attach(qb1, mgid4), 0);
	CHECK_EQ(uroce_mcast_attach(qb2, mgid4), 0);
	CHECK_EQ(uroce_mcast_attach(qbad, mgid4), 0);
	CHECK_EQ(uroce_mcast_attach(qa, mgid4), 0);
	post_recv(&b, qb1, 1);
	post_recv(&b, qb2, 2);
	post_recv(&b, qbad, 3);
	post_recv(&b, qout, 4);
	post_recv(&a, qa, 5);

	/* One packet, a copy for each attached QP whose Q_Key matches; the sender's engine gets
	 * the network's loop-back copy into its own attached QP. */
	CHECK_EQ(send_to_group(&a, qa, mgid4, "to the group", both, 2), 1);
	check_recv(&b, qb1, 1, "to the group", uroce_qp_num(qa));
	check_recv(&b, qb2, 2, "to the group", uroce_qp_num(qa));
	check_recv(&a, qa, 5, "to the group", uroce_qp_num(qa));
	struct uroce_wc wc;

	CHECK_EQ(uroce_cq_poll(b.cq, 1, &wc), 0); /* qbad dropped, qout not attached */
	CHECK_EQ(uroce_eng_counter(b.e, UROCE_CNT_DROP_BAD_QKEY), 1);
	CHECK_EQ(uroce_eng_counter(b.e, UROCE_CNT_RCVD_PKTS), 1);

	/* Detached, qb1 gets nothing more; qb2 still does. */
	CHECK_EQ(uroce_mcast_detach(qb1, mgid4), 0);
	post_recv(&b, qb1, 6);
	post_recv(&b, qb2, 7);
	send_to_group(&a, qa, mgid4, "second", both, 1);
	check_recv(&b, qb2, 7, "second", uroce_qp_num(qa));
	CHECK_EQ(uroce_cq_poll(b.cq, 1, &wc), 0);

	/* Another group's packet reaches none of them; a group with no QP left is gone and its
	 * packets are counted as for no QP. */
	uint64_t noqp = uroce_eng_counter(b.e, UROCE_CNT_DROP_NO_QP);

	send_to_group(&a, qa, mgid6, "elsewhere", both, 1);
	CHECK_EQ(uroce_eng_counter(b.e, UROCE_CNT_DROP_NO_QP), noqp + 1);
	CHECK_EQ(uroce_qp_destroy(qb2), 0);
	CHECK_EQ(uroce_mcast_detach(qbad, mgid4), 0);
	CHECK_EQ(uroce_mcast_groups(b.e, groups, 4), 0);
	send_to_group(&a, qa, mgid4, "nobody", both, 1);
	CHECK_EQ(uroce_eng_counter(b.e, UROCE_CNT_DROP_NO_QP), noqp + 2);
	CHECK_EQ(uroce_cq_poll(b.cq, 1, &wc), 0);

	uroce_eng_destroy(a.e);
	uroce_eng_destroy(b.e);
}

int main(void)
{
	attach_errors();
	delivery();
	return check_exit("transport_mcast");
}
