/* SPDX-License-Identifier: MIT */
/*
 * Memory regions beyond plain registration, between two engines on a direct lossless wire:
 * implicit on-demand regions and the host's memory probe, ibv_advise_mr's checks
 * (uroce_mr_advise_range), changing a region in place (uroce_mr_rereg), and the CQ cleaning a
 * QP's RESET does.
 */
#include <errno.h>
#include <string.h>

#include "../check.h"
#include "../wr.h"
#include "transport/engine.h"

struct node {
	struct uroce_eng *e;
	struct uroce_pd *pd;
	struct uroce_cq *cq;
	struct uroce_qp *qp;
	uint8_t gid[16];
};

static uint64_t now;

static void deliver(struct node *a, struct node *b, const struct uroce_tx_pkt *p)
{
	uint8_t buf[8192];
	uint32_t len = p->hdr_len;

	memcpy(buf, p->hdr, p->hdr_len);
	if (p->payload_len)
		memcpy(buf + len, p->payload, p->payload_len);
	len += p->payload_len;
	memset(buf + len, 0, p->pad + 4u);
	len += p->pad + 4u;

	struct uroce_rx_pkt rx = {.data = buf, .len = len, .encap = UROCE_ENCAP_V2_IPV4};

	memcpy(rx.sgid, a->gid, 16);
	memcpy(rx.dgid, b->gid, 16);
	rx.sgid_index = 1;
	uroce_eng_rx(b->e, now, &rx);
}

static int pump(struct node *a, struct node *b)
{
	struct uroce_tx_pkt tx[32];
	int n = uroce_eng_tx(a->e, now, tx, 32);

	for (int i = 0; i < n; i++)
		deliver(a, b, &tx[i]);
	return n;
}

/* Until both engines are quiet; timers run in virtual time. */
static void run(struct node *a, struct node *b)
{
	for (int i = 0; i < 100000; i++) {
		if (pump(a, b) + pump(b, a))
			continue;
		uint64_t d = uroce_eng_next_deadline(a->e), d2 = uroce_eng_next_deadline(b->e);

		if (d2 < d)
			d = d2;
		if (d == UROCE_NEVER)
			return;
		now = d;
		uroce_eng_advance(a->e, now);
		uroce_eng_advance(b->e, now);
	}
}

static void node_init(struct node *n, uint8_t last)
{
	struct uroce_eng_cfg cfg;
	struct uroce_qp_init init = {
		.type = UROCE_QPT_RC,
		.cap = { .max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 2,
			 .max_recv_sge = 2 },
	};

	memset(n, 0, sizeof(*n));
	uroce_eng_cfg_default(&cfg);
	CHECK_EQ(uroce_eng_create(&n->e, &cfg), 0);
	CHECK_EQ(uroce_pd_alloc(n->e, &n->pd), 0);
	CHECK_EQ(uroce_cq_create(n->e, 64, NULL, &n->cq), 0);
	init.send_cq = init.recv_cq = n->cq;
	CHECK_EQ(uroce_qp_create(n->pd, &init, &n->qp), 0);
	n->gid[10] = n->gid[11] = 0xFF;
	n->gid[12] = 198;
	n->gid[13] = 18;
	n->gid[15] = last;
}

/* RESET -> INIT -> RTR -> RTS towards peer. */
static void connect(struct node *n, struct node *peer)
{
	struct uroce_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.qp_state = UROCE_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = UROCE_ACCESS_LOCAL_WRITE | UROCE_ACCESS_REMOTE_WRITE |
			    UROCE_ACCESS_REMOTE_READ | UROCE_ACCESS_REMOTE_ATOMIC |
			    UROCE_ACCESS_ON_DEMAND;
	CHECK_EQ(uroce_qp_modify(n->qp, &a,
				 UROCE_QP_STATE | UROCE_QP_PKEY_INDEX | UROCE_QP_PORT |
					 UROCE_QP_ACCESS_FLAGS),
		 0);
	a.qp_state = UROCE_QPS_RTR;
	a.path_mtu = UROCE_MTU_1024;
	a.dest_qp_num = uroce_qp_num(peer->qp);
	a.max_dest_rd_atomic = 4;
	a.min_rnr_timer = 1;
	a.av.sgid_index = 1;
	a.av.is_global = true;
	memcpy(a.av.dgid, peer->gid, 16);
	CHECK_EQ(uroce_qp_modify(n->qp, &a,
				 UROCE_QP_STATE | UROCE_QP_AV | UROCE_QP_PATH_MTU |
					 UROCE_QP_DEST_QPN | UROCE_QP_RQ_PSN |
					 UROCE_QP_MAX_DEST_RD_ATOMIC | UROCE_QP_MIN_RNR_TIMER),
		 0);
	a.qp_state = UROCE_QPS_RTS;
	a.timeout = 10;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 4;
	CHECK_EQ(uroce_qp_modify(n->qp, &a,
				 UROCE_QP_STATE | UROCE_QP_SQ_PSN | UROCE_QP_TIMEOUT |
					 UROCE_QP_RETRY_CNT | UROCE_QP_RNR_RETRY |
					 UROCE_QP_MAX_QP_RD_ATOMIC),
		 0);
}

/* Back from ERR: RESET, then RTS again. */
static void restate(struct node *n, struct node *peer)
{
	struct uroce_qp_attr a = {.qp_state = UROCE_QPS_RESET};

	CHECK_EQ(uroce_qp_modify(n->qp, &a, UROCE_QP_STATE), 0);
	connect(n, peer);
}

static void pair(struct node *a, struct node *b)
{
	node_init(a, 1);
	node_init(b, 2);
	connect(a, b);
	connect(b, a);
}

static void unpair(struct node *a, struct node *b)
{
	uroce_eng_destroy(a->e);
	uroce_eng_destroy(b->e);
}

/* The one completion on n's CQ. */
static struct uroce_wc wc1(struct node *n)
{
	struct uroce_wc wc[2];

	memset(wc, 0, sizeof(wc));
	CHECK_EQ(uroce_cq_poll(n->cq, 2, wc), 1);
	return wc[0];
}

static int write_to(struct node *a, struct node *b, void *src, uint32_t len, uint32_t lkey,
		    uint64_t va, uint32_t rkey)
{
	struct uroce_sge s = wr_sge((uintptr_t)src, len, lkey);
	struct uroce_send_wr w = wr_write(1, &s, 1, va, rkey, UROCE_SEND_SIGNALED), *bad;

	CHECK_EQ(uroce_post_send(a->qp, &w, &bad), 0);
	run(a, b);
	return (int)wc1(a).status;
}

/* A probe that refuses [poison, poison + sizeof(poison)) and records what it was asked. */
static uint8_t poison[4096];
static int probes, probe_writes;

static int probe(void *arg, const void *addr, size_t len, bool write)
{
	const uint8_t *p = addr;

	CHECK(arg == &probes);
	probes++;
	probe_writes += write;
	if (p < poison + sizeof(poison) && p + len > poison)
		return -EFAULT;
	return 0;
}

static uint8_t abuf[65536], bbuf[65536], cbuf[65536];

static void implicit(void)
{
	struct node a, b;
	struct uroce_mr *ami, *bmi, *mr;
	const unsigned acc = UROCE_ACCESS_LOCAL_WRITE | UROCE_ACCESS_REMOTE_WRITE |
			     UROCE_ACCESS_ON_DEMAND;

	pair(&a, &b);
	/* The whole address space needs ON_DEMAND, SIZE_MAX and iova 0; other NULLs are bad. */
	CHECK_EQ(uroce_mr_reg(a.pd, NULL, SIZE_MAX, 0, acc & ~(unsigned)UROCE_ACCESS_ON_DEMAND,
			      &mr),
		 -EINVAL);
	CHECK_EQ(uroce_mr_reg(a.pd, NULL, 4096, 0, acc, &mr), -EINVAL);
	CHECK_EQ(uroce_mr_reg(a.pd, NULL, SIZE_MAX, 4096, acc, &mr), -EINVAL);
	CHECK_EQ(uroce_mr_reg(a.pd, NULL, SIZE_MAX, 0, acc, &ami), 0);
	CHECK_EQ(uroce_mr_reg(b.pd, NULL, SIZE_MAX, 0, acc, &bmi), 0);
	CHECK(uroce_mr_implicit(ami) && uroce_mr_implicit(bmi));
	CHECK_EQ(uroce_mr_reg(a.pd, abuf, sizeof(abuf), (uintptr_t)abuf, acc, &mr), 0);
	CHECK(!uroce_mr_implicit(mr));

	/* SEND from anywhere to anywhere through the implicit keys (no probe set yet). */
	for (uint32_t i = 0; i < 3000; i++)
		abuf[i] = (uint8_t)(i * 3 + 1);
	struct uroce_sge rs = wr_sge((uintptr_t)bbuf + 100, 4000, uroce_mr_lkey(bmi));
	struct uroce_recv_wr rw = wr_recv(7, &rs, 1), *rbad;
	struct uroce_sge ss = wr_sge((uintptr_t)abuf, 3000, uroce_mr_lkey(ami));
	struct uroce_send_wr sw = wr_send(8, &ss, 1, UROCE_SEND_SIGNALED), *sbad;

	CHECK_EQ(uroce_post_recv(b.qp, &rw, &rbad), 0);
	CHECK_EQ(uroce_post_send(a.qp, &sw, &sbad), 0);
	run(&a, &b);
	CHECK_EQ(wc1(&a).status, UROCE_WC_SUCCESS);
	struct uroce_wc wc = wc1(&b);

	CHECK(wc.status == UROCE_WC_SUCCESS && wc.byte_len == 3000);
	CHECK_MEM_EQ(bbuf + 100, abuf, 3000);

	/* With the probe: a WRITE is checked for writing, and lands where the VA says. */
	uroce_eng_set_mem_probe(b.e, probe, &probes);
	CHECK_EQ(write_to(&a, &b, abuf, 2500, uroce_mr_lkey(ami), (uintptr_t)cbuf + 7,
			  uroce_mr_rkey(bmi)),
		 UROCE_WC_SUCCESS);
	CHECK_MEM_EQ(cbuf + 7, abuf, 2500);
	CHECK_GE(probes, 1);
	CHECK_EQ(probe_writes, probes);

	/* Memory the probe refuses (not mapped, to the host) is a remote access error, untouched. */
	memset(poison, 0x5A, sizeof(poison));
	CHECK_EQ(write_to(&a, &b, abuf, 64, uroce_mr_lkey(ami), (uintptr_t)poison + 100,
			  uroce_mr_rkey(bmi)),
		 UROCE_WC_REM_ACCESS_ERR);
	CHECK(poison[100] == 0x5A && poison[163] == 0x5A);
	CHECK_EQ(uroce_qp_state(a.qp), UROCE_QPS_ERR);
	restate(&a, &b);
	restate(&b, &a);

	/* Address 0 is never memory, and a range may not wrap, probe or not. */
	CHECK_EQ(write_to(&a, &b, abuf, 8, uroce_mr_lkey(ami), 0, uroce_mr_rkey(bmi)),
		 UROCE_WC_REM_ACCESS_ERR);
	restate(&a, &b);
	restate(&b, &a);
	CHECK_EQ(write_to(&a, &b, abuf, 64, uroce_mr_lkey(ami), UINT64_MAX - 8,
			  uroce_mr_rkey(bmi)),
		 UROCE_WC_REM_ACCESS_ERR);
	restate(&a, &b);
	restate(&b, &a);

	/* A receive into refused memory: local protection error there, REM_OP_ERR here. */
	rs = wr_sge((uintptr_t)poison, 64, uroce_mr_lkey(bmi));
	CHECK_EQ(uroce_post_recv(b.qp, &rw, &rbad), 0);
	ss.length = 64;
	CHECK_EQ(uroce_post_send(a.qp, &sw, &sbad), 0);
	probe_writes = probes = 0;
	run(&a, &b);
	CHECK_EQ(wc1(&a).status, UROCE_WC_REM_OP_ERR);
	CHECK_EQ(wc1(&b).status, UROCE_WC_LOC_PROT_ERR);
	CHECK(probes >= 1 && probe_writes == probes);
	CHECK_EQ(poison[0], 0x5A);
	unpair(&a, &b);
}

static void advise(void)
{
	struct node a, b;
	struct uroce_mr *odp, *ro, *plain, *imp, *other;
	void *p = NULL;

	pair(&a, &b);
	CHECK_EQ(uroce_mr_reg(a.pd, abuf, 8192, 0x100000,
			      UROCE_ACCESS_ON_DEMAND | UROCE_ACCESS_LOCAL_WRITE, &odp),
		 0);
	CHECK_EQ(uroce_mr_reg(a.pd, bbuf, 8192, (uintptr_t)bbuf, UROCE_ACCESS_ON_DEMAND, &ro), 0);
	CHECK_EQ(uroce_mr_reg(a.pd, cbuf, 8192, (uintptr_t)cbuf, UROCE_ACCESS_LOCAL_WRITE, &plain),
		 0);
	CHECK_EQ(uroce_mr_reg(a.pd, NULL, SIZE_MAX, 0, UROCE_ACCESS_ON_DEMAND, &imp), 0);
	CHECK_EQ(uroce_mr_reg(b.pd, bbuf, 8192, (uintptr_t)bbuf, UROCE_ACCESS_ON_DEMAND, &other),
		 0);

	/* In range: the host address the iova maps to, for reading and for writing. */
	CHECK_EQ(uroce_mr_advise_range(a.pd, uroce_mr_lkey(odp), 0x100000 + 100, 8000, true, &p),
		 0);
	CHECK(p == abuf + 100);
	CHECK_EQ(uroce_mr_advise_range(a.pd, uroce_mr_lkey(ro), (uintptr_t)bbuf, 8192, false, &p),
		 0);
	CHECK(p == bbuf);
	/* Implicit: any address but 0, without wrapping. */
	CHECK_EQ(uroce_mr_advise_range(a.pd, uroce_mr_lkey(imp), (uintptr_t)cbuf + 3, 10, false,
				       &p),
		 0);
	CHECK(p == cbuf + 3);
	CHECK_EQ(uroce_mr_advise_range(a.pd, uroce_mr_lkey(imp), 0, 10, false, &p), -EFAULT);
	CHECK_EQ(uroce_mr_advise_range(a.pd, uroce_mr_lkey(imp), UINT64_MAX - 4, 10, false, &p),
		 -EFAULT);

	/* The man page's errors. */
	p = NULL;
	CHECK_EQ(uroce_mr_advise_range(a.pd, uroce_mr_lkey(odp) ^ 0x100, 0x100000, 8, false, &p),
		 -ENOENT);
	CHECK_EQ(uroce_mr_advise_range(a.pd, uroce_mr_lkey(odp) + 1, 0x100000, 8, false, &p),
		 -ENOENT);
	CHECK_EQ(uroce_mr_advise_range(a.pd, uroce_mr_lkey(plain), (uintptr_t)cbuf, 8, false, &p),
		 -EINVAL);
	CHECK_EQ(uroce_mr_advise_range(a.pd, uroce_mr_lkey(ro), (uintptr_t)bbuf, 8, true, &p),
		 -EPERM);
	CHECK_EQ(uroce_mr_advise_range(a.pd, uroce_mr_lkey(odp), 0x100000 + 8000, 193, false, &p),
		 -EFAULT);
	CHECK_EQ(uroce_mr_advise_range(a.pd, uroce_mr_lkey(odp), 0x100000 - 1, 8, false, &p),
		 -EFAULT);
	CHECK(p == NULL);

	/* A region of another PD of the same engine. */
	struct uroce_pd *pd2;
	struct uroce_mr *mr2;

	CHECK_EQ(uroce_pd_alloc(a.e, &pd2), 0);
	CHECK_EQ(uroce_mr_reg(pd2, abuf, 64, (uintptr_t)abuf, UROCE_ACCESS_ON_DEMAND, &mr2), 0);
	CHECK_EQ(uroce_mr_advise_range(a.pd, uroce_mr_lkey(mr2), (uintptr_t)abuf, 8, false, &p),
		 -EPERM);
	CHECK(p == NULL);
	unpair(&a, &b);
}

static void rereg(void)
{
	struct node a, b;
	struct uroce_mr *amr, *bmr;
	struct uroce_pd *pd2;
	const unsigned rw = UROCE_ACCESS_LOCAL_WRITE | UROCE_ACCESS_REMOTE_WRITE;

	pair(&a, &b);
	CHECK_EQ(uroce_mr_reg(a.pd, abuf, 4096, (uintptr_t)abuf, UROCE_ACCESS_LOCAL_WRITE, &amr), 0);
	CHECK_EQ(uroce_mr_reg(b.pd, bbuf, 4096, (uintptr_t)bbuf, rw, &bmr), 0);
	uint32_t key = uroce_mr_rkey(bmr);

	memset(abuf, 0x11, 4096);
	CHECK_EQ(write_to(&a, &b, abuf, 100, uroce_mr_lkey(amr), (uintptr_t)bbuf, key),
		 UROCE_WC_SUCCESS);

	/* Refused changes change nothing. */
	CHECK_EQ(uroce_mr_rereg(bmr, 0, NULL, NULL, 0, 0, 0), -EINVAL);
	CHECK_EQ(uroce_mr_rereg(bmr, 8, NULL, NULL, 0, 0, 0), -EINVAL);
	CHECK_EQ(uroce_mr_rereg(bmr, UROCE_REREG_ACCESS | UROCE_REREG_TRANSLATION, NULL, NULL, 0,
				0, UROCE_ACCESS_LOCAL_WRITE),
		 -EINVAL);
	CHECK_EQ(uroce_mr_rereg(bmr, UROCE_REREG_TRANSLATION, NULL, cbuf, 0, (uintptr_t)cbuf, 0),
		 -EINVAL);
	CHECK_EQ(uroce_mr_rereg(bmr, UROCE_REREG_TRANSLATION, NULL, cbuf, 64, UINT64_MAX - 8, 0),
		 -EINVAL);
	CHECK_EQ(uroce_mr_rereg(bmr, UROCE_REREG_ACCESS, NULL, NULL, 0, 0,
				UROCE_ACCESS_REMOTE_WRITE),
		 -EINVAL); /* remote write without local write */
	CHECK_EQ(uroce_mr_rereg(bmr, UROCE_REREG_ACCESS, NULL, NULL, 0, 0, rw | 0x1000), -EINVAL);
	CHECK_EQ(uroce_mr_rereg(bmr, UROCE_REREG_ACCESS, NULL, NULL, 0, 0,
				rw | UROCE_ACCESS_ZERO_BASED),
		 -EINVAL);
	CHECK_EQ(uroce_mr_rereg(bmr, UROCE_REREG_PD | UROCE_REREG_ACCESS, a.pd, NULL, 0, 0,
				UROCE_ACCESS_LOCAL_WRITE),
		 -EINVAL); /* a's PD is another engine's */
	CHECK_EQ(uroce_mr_rereg(bmr, UROCE_REREG_PD, NULL, NULL, 0, 0, 0), -EINVAL);
	CHECK_EQ(uroce_mr_rkey(bmr), key);
	memset(abuf, 0x22, 4096);
	CHECK_EQ(write_to(&a, &b, abuf, 100, uroce_mr_lkey(amr), (uintptr_t)bbuf, key),
		 UROCE_WC_SUCCESS);
	CHECK_EQ(bbuf[99], 0x22);

	/* ACCESS: without remote write the same key is refused, nothing written. */
	CHECK_EQ(uroce_mr_rereg(bmr, UROCE_REREG_ACCESS, NULL, NULL, 0, 0,
				UROCE_ACCESS_LOCAL_WRITE),
		 0);
	CHECK_EQ(uroce_mr_rkey(bmr), key);
	memset(abuf, 0x33, 4096);
	CHECK_EQ(write_to(&a, &b, abuf, 100, uroce_mr_lkey(amr), (uintptr_t)bbuf, key),
		 UROCE_WC_REM_ACCESS_ERR);
	CHECK_EQ(bbuf[0], 0x22);
	restate(&a, &b);
	restate(&b, &a);
	CHECK_EQ(uroce_mr_rereg(bmr, UROCE_REREG_ACCESS, NULL, NULL, 0, 0, rw), 0);
	CHECK_EQ(write_to(&a, &b, abuf, 100, uroce_mr_lkey(amr), (uintptr_t)bbuf, key),
		 UROCE_WC_SUCCESS);
	CHECK_EQ(bbuf[0], 0x33);

	/* PD: a receive through a region of another PD fails; moved back, it works. */
	CHECK_EQ(uroce_pd_alloc(b.e, &pd2), 0);
	CHECK_EQ(uroce_mr_rereg(bmr, UROCE_REREG_PD, pd2, NULL, 0, 0, 0), 0);
	CHECK_EQ(uroce_pd_free(pd2), -EBUSY);
	struct uroce_sge rs = wr_sge((uintptr_t)bbuf, 4096, uroce_mr_lkey(bmr));
	struct uroce_recv_wr rwr = wr_recv(9, &rs, 1), *rbad;
	struct uroce_sge ss = wr_sge((uintptr_t)abuf, 64, uroce_mr_lkey(amr));
	struct uroce_send_wr sw = wr_send(10, &ss, 1, UROCE_SEND_SIGNALED), *sbad;

	CHECK_EQ(uroce_post_recv(b.qp, &rwr, &rbad), 0);
	CHECK_EQ(uroce_post_send(a.qp, &sw, &sbad), 0);
	run(&a, &b);
	CHECK_EQ(wc1(&a).status, UROCE_WC_REM_OP_ERR);
	CHECK_EQ(wc1(&b).status, UROCE_WC_LOC_PROT_ERR);
	restate(&a, &b);
	restate(&b, &a);
	CHECK_EQ(uroce_mr_rereg(bmr, UROCE_REREG_PD, b.pd, NULL, 0, 0, 0), 0);
	CHECK_EQ(uroce_pd_free(pd2), 0);
	memset(abuf, 0x44, 64);
	CHECK_EQ(uroce_post_recv(b.qp, &rwr, &rbad), 0);
	CHECK_EQ(uroce_post_send(a.qp, &sw, &sbad), 0);
	run(&a, &b);
	CHECK_EQ(wc1(&a).status, UROCE_WC_SUCCESS);
	CHECK_EQ(wc1(&b).status, UROCE_WC_SUCCESS);
	CHECK_EQ(bbuf[63], 0x44);

	/* TRANSLATION: the same key now reaches cbuf at a new iova; the old range is gone. */
	CHECK_EQ(uroce_mr_rereg(bmr, UROCE_REREG_TRANSLATION, NULL, cbuf, 2048, 0x700000, 0), 0);
	CHECK_EQ(uroce_mr_rkey(bmr), key);
	memset(abuf, 0x55, 4096);
	CHECK_EQ(write_to(&a, &b, abuf, 100, uroce_mr_lkey(amr), 0x700000 + 1948, key),
		 UROCE_WC_SUCCESS);
	CHECK_EQ(cbuf[1948], 0x55);
	CHECK_EQ(cbuf[2047], 0x55);
	CHECK_EQ(write_to(&a, &b, abuf, 100, uroce_mr_lkey(amr), 0x700000 + 1949, key),
		 UROCE_WC_REM_ACCESS_ERR);
	restate(&a, &b);
	restate(&b, &a);
	CHECK_EQ(write_to(&a, &b, abuf, 8, uroce_mr_lkey(amr), (uintptr_t)bbuf, key),
		 UROCE_WC_REM_ACCESS_ERR);
	CHECK_EQ(bbuf[0], 0x44);
	restate(&a, &b);
	restate(&b, &a);

	/* An implicit region keeps its range and its ON_DEMAND. */
	struct uroce_mr *imp;

	CHECK_EQ(uroce_mr_reg(b.pd, NULL, SIZE_MAX, 0, UROCE_ACCESS_ON_DEMAND | rw, &imp), 0);
	CHECK_EQ(uroce_mr_rereg(imp, UROCE_REREG_TRANSLATION, NULL, cbuf, 64, (uintptr_t)cbuf, 0),
		 -EINVAL);
	CHECK_EQ(uroce_mr_rereg(imp, UROCE_REREG_ACCESS, NULL, NULL, 0, 0, rw), -EINVAL);
	CHECK_EQ(uroce_mr_rereg(imp, UROCE_REREG_ACCESS, NULL, NULL, 0, 0,
				UROCE_ACCESS_ON_DEMAND | UROCE_ACCESS_LOCAL_WRITE),
		 0);
	CHECK(uroce_mr_implicit(imp));
	CHECK_EQ(write_to(&a, &b, abuf, 8, uroce_mr_lkey(amr), (uintptr_t)cbuf,
			  uroce_mr_rkey(imp)),
		 UROCE_WC_REM_ACCESS_ERR);
	unpair(&a, &b);
}

/* RESET removes the QP's completions (here: flushes) from its CQ, and only the QP's. */
static void reset_cleans_cq(void)
{
	struct node a, b;
	struct uroce_mr *mr;
	struct uroce_qp *other;
	struct uroce_qp_init init = {
		.type = UROCE_QPT_RC,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1 },
	};

	pair(&a, &b);
	init.send_cq = init.recv_cq = a.cq;
	CHECK_EQ(uroce_qp_create(a.pd, &init, &other), 0);
	CHECK_EQ(uroce_mr_reg(a.pd, abuf, 4096, (uintptr_t)abuf, UROCE_ACCESS_LOCAL_WRITE, &mr), 0);
	struct uroce_sge s = wr_sge((uintptr_t)abuf, 64, uroce_mr_lkey(mr));
	struct uroce_recv_wr r1 = wr_recv(1, &s, 1), r2 = wr_recv(2, &s, 1), *bad;
	struct uroce_qp_attr err = {.qp_state = UROCE_QPS_ERR};

	/* Flushes from both QPs, interleaved: a's, other's, a's. */
	CHECK_EQ(uroce_post_recv(a.qp, &r1, &bad), 0);
	CHECK_EQ(uroce_qp_modify(a.qp, &err, UROCE_QP_STATE), 0);
	CHECK_EQ(uroce_qp_modify(other, &err, UROCE_QP_STATE), 0);
	CHECK_EQ(uroce_post_recv(other, &r2, &bad), 0);
	CHECK_EQ(uroce_post_recv(a.qp, &r1, &bad), 0);
	CHECK_EQ(uroce_cq_count(a.cq), 3);

	restate(&a, &b);
	CHECK_EQ(uroce_cq_count(a.cq), 1);
	struct uroce_wc wc = wc1(&a);

	CHECK(wc.wr_id == 2 && wc.qp_num == uroce_qp_num(other) &&
	      wc.status == UROCE_WC_WR_FLUSH_ERR);
	unpair(&a, &b);
}

int main(void)
{
	implicit();
	advise();
	rereg();
	reset_cleans_cq();
	return check_exit("transport_mr");
}
