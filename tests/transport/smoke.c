/* SPDX-License-Identifier: MIT */
/*
 * A direct, lossless wire between two engines (no framing, no ICRC): the smallest end-to-end
 * check of the engine's RC, UC and UD paths. The full simulation with faults is in tests/sim.
 */
#include <string.h>

#include "../check.h"
#include "../wr.h"
#include "transport/engine.h"
#include "wire/bytes.h"
#include "wire/hdr.h"

struct node {
	struct uroce_eng *e;
	struct uroce_pd *pd;
	struct uroce_cq *cq;
	uint8_t gid[16];
};

static uint64_t now;
static int rx_drops;
static enum uroce_mtu path_mtu = UROCE_MTU_1024; /* what connect() sets */

/* Hand packet p from a to b. */
static void deliver(struct node *a, struct node *b, const struct uroce_tx_pkt *p)
{
	uint8_t buf[8192];
	uint32_t len = 0;

	memcpy(buf, p->hdr, p->hdr_len);
	len += p->hdr_len;
	if (p->payload_len)
		memcpy(buf + len, p->payload, p->payload_len);
	len += p->payload_len;
	memset(buf + len, 0, p->pad + 4u);
	len += p->pad + 4u;

	struct uroce_rx_pkt rx = {.data = buf, .len = len, .encap = UROCE_ENCAP_V2_IPV4};

	memcpy(rx.sgid, a->gid, 16);
	memcpy(rx.dgid, b->gid, 16);
	rx.sgid_index = 1;
	if (uroce_eng_rx(b->e, now, &rx) != 0)
		rx_drops++;
}

/* Move every pending packet from a to b; returns how many moved. */
static int pump(struct node *a, struct node *b)
{
	struct uroce_tx_pkt tx[32];
	int n = uroce_eng_tx(a->e, now, tx, 32);

	for (int i = 0; i < n; i++)
		deliver(a, b, &tx[i]);
	return n;
}

static void run(struct node *a, struct node *b)
{
	for (int i = 0; i < 100000; i++) {
		int m = pump(a, b) + pump(b, a);

		if (m)
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

	uroce_eng_cfg_default(&cfg);
	CHECK_EQ(uroce_eng_create(&n->e, &cfg), 0);
	CHECK_EQ(uroce_pd_alloc(n->e, &n->pd), 0);
	CHECK_EQ(uroce_cq_create(n->e, 256, NULL, &n->cq), 0);
	memset(n->gid, 0, 16);
	n->gid[10] = n->gid[11] = 0xFF;
	n->gid[12] = 198;
	n->gid[13] = 18;
	n->gid[15] = last;
}

static struct uroce_qp *qp_make(struct node *n, enum uroce_qp_type type)
{
	struct uroce_qp_init init = {
		.type = type,
		.send_cq = n->cq,
		.recv_cq = n->cq,
		.cap = { .max_send_wr = 64, .max_recv_wr = 64, .max_send_sge = 4,
			 .max_recv_sge = 4, .max_inline_data = 64 },
	};
	struct uroce_qp *qp = NULL;

	CHECK_EQ(uroce_qp_create(n->pd, &init, &qp), 0);
	return qp;
}

static void connect(struct uroce_qp *qp, struct node *peer, uint32_t peer_qpn, bool rc)
{
	struct uroce_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.qp_state = UROCE_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = UROCE_ACCESS_REMOTE_WRITE | UROCE_ACCESS_REMOTE_READ |
			    UROCE_ACCESS_REMOTE_ATOMIC | UROCE_ACCESS_LOCAL_WRITE;
	CHECK(uroce_qp_modify(qp, &a,
			      UROCE_QP_STATE | UROCE_QP_PKEY_INDEX | UROCE_QP_PORT |
				      UROCE_QP_ACCESS_FLAGS) == 0);
	a.qp_state = UROCE_QPS_RTR;
	a.path_mtu = path_mtu;
	a.dest_qp_num = peer_qpn;
	a.rq_psn = 0xFFFFF0; /* wraps during the test */
	a.max_dest_rd_atomic = 4;
	a.min_rnr_timer = 1;
	a.av.sgid_index = 1;
	a.av.is_global = true;
	memcpy(a.av.dgid, peer->gid, 16);
	unsigned m = UROCE_QP_STATE | UROCE_QP_AV | UROCE_QP_PATH_MTU | UROCE_QP_DEST_QPN |
		     UROCE_QP_RQ_PSN;
	if (rc)
		m |= UROCE_QP_MAX_DEST_RD_ATOMIC | UROCE_QP_MIN_RNR_TIMER;
	CHECK_EQ(uroce_qp_modify(qp, &a, m), 0);
	a.qp_state = UROCE_QPS_RTS;
	a.sq_psn = 0xFFFFF0;
	a.timeout = 10;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 4;
	m = UROCE_QP_STATE | UROCE_QP_SQ_PSN;
	if (rc)
		m |= UROCE_QP_TIMEOUT | UROCE_QP_RETRY_CNT | UROCE_QP_RNR_RETRY |
		     UROCE_QP_MAX_QP_RD_ATOMIC;
	CHECK_EQ(uroce_qp_modify(qp, &a, m), 0);
	CHECK_EQ(uroce_qp_state(qp), UROCE_QPS_RTS);
}

static int poll1(struct node *n, struct uroce_wc *wc)
{
	return uroce_cq_poll(n->cq, 1, wc);
}

static uint8_t abuf[1 << 20], bbuf[1 << 20];

static void connected(enum uroce_qp_type type)
{
	struct node a, b;
	struct uroce_mr *amr, *bmr;
	struct uroce_wc wc;
	bool rc = type == UROCE_QPT_RC;

	node_init(&a, 1);
	node_init(&b, 2);
	struct uroce_qp *qa = qp_make(&a, type), *qb = qp_make(&b, type);
	unsigned acc = UROCE_ACCESS_LOCAL_WRITE | UROCE_ACCESS_REMOTE_WRITE |
		       UROCE_ACCESS_REMOTE_READ | UROCE_ACCESS_REMOTE_ATOMIC;

	CHECK_EQ(uroce_mr_reg(a.pd, abuf, sizeof(abuf), (uintptr_t)abuf, acc, &amr), 0);
	CHECK_EQ(uroce_mr_reg(b.pd, bbuf, sizeof(bbuf), 0x10000, acc, &bmr), 0);
	connect(qa, &b, uroce_qp_num(qb), rc);
	connect(qb, &a, uroce_qp_num(qa), rc);

	/* SEND of 5000 bytes (5 packets at MTU 1024, across the PSN wrap). */
	for (uint32_t i = 0; i < 5000; i++)
		abuf[i] = (uint8_t)(i * 7);
	memset(bbuf, 0, 8192);
	struct uroce_sge rs = wr_sge(0x10000, 8192, uroce_mr_lkey(bmr));
	struct uroce_recv_wr rwr = wr_recv(77, &rs, 1), *rbad;

	CHECK_EQ(uroce_post_recv(qb, &rwr, &rbad), 0);
	struct uroce_sge ss = wr_sge((uintptr_t)abuf, 5000, uroce_mr_lkey(amr));
	struct uroce_send_wr swr = wr_send_imm(1, &ss, 1, 0x1234, UROCE_SEND_SIGNALED), *sbad;

	CHECK_EQ(uroce_post_send(qa, &swr, &sbad), 0);
	run(&a, &b);
	CHECK(poll1(&a, &wc) == 1 && wc.wr_id == 1 && wc.status == UROCE_WC_SUCCESS &&
	      wc.opcode == UROCE_WC_SEND);
	CHECK(poll1(&b, &wc) == 1 && wc.wr_id == 77 && wc.status == UROCE_WC_SUCCESS &&
	      wc.byte_len == 5000 && wc.imm_data == 0x1234 && (wc.wc_flags & UROCE_WC_WITH_IMM));
	CHECK_MEM_EQ(abuf, bbuf, 5000);

	/* RDMA WRITE of 3000 bytes to b at offset 100000. */
	swr.opcode = UROCE_WR_RDMA_WRITE;
	swr.wr_id = 2;
	ss.length = 3000;
	swr.wr.rdma.remote_addr = 0x10000 + 100000;
	swr.wr.rdma.rkey = uroce_mr_rkey(bmr);
	CHECK_EQ(uroce_post_send(qa, &swr, &sbad), 0);
	run(&a, &b);
	CHECK(poll1(&a, &wc) == 1 && wc.wr_id == 2 && wc.status == UROCE_WC_SUCCESS &&
	      wc.opcode == UROCE_WC_RDMA_WRITE);
	CHECK_MEM_EQ(abuf, bbuf + 100000, 3000);
	if (!rc)
		goto out;

	/* RDMA READ of 4500 bytes from b into a at 200000. */
	for (uint32_t i = 0; i < 4500; i++)
		bbuf[300000 + i] = (uint8_t)(i * 13 + 1);
	swr.opcode = UROCE_WR_RDMA_READ;
	swr.wr_id = 3;
	ss.addr = (uintptr_t)abuf + 200000;
	ss.length = 4500;
	swr.wr.rdma.remote_addr = 0x10000 + 300000;
	CHECK_EQ(uroce_post_send(qa, &swr, &sbad), 0);
	run(&a, &b);
	CHECK(poll1(&a, &wc) == 1 && wc.wr_id == 3 && wc.status == UROCE_WC_SUCCESS &&
	      wc.opcode == UROCE_WC_RDMA_READ && wc.byte_len == 4500);
	CHECK_MEM_EQ(abuf + 200000, bbuf + 300000, 4500);

	/* FETCH_ADD then CMP_SWAP on b's 64-bit word at 400000. */
	uint64_t init = 40, got;

	memcpy(bbuf + 400000, &init, 8);
	swr.opcode = UROCE_WR_ATOMIC_FETCH_AND_ADD;
	swr.wr_id = 4;
	ss.length = 8;
	ss.addr = (uintptr_t)abuf + 500000;
	swr.wr.atomic.remote_addr = 0x10000 + 400000;
	swr.wr.atomic.rkey = uroce_mr_rkey(bmr);
	swr.wr.atomic.compare_add = 2;
	CHECK_EQ(uroce_post_send(qa, &swr, &sbad), 0);
	run(&a, &b);
	CHECK(poll1(&a, &wc) == 1 && wc.wr_id == 4 && wc.status == UROCE_WC_SUCCESS);
	memcpy(&got, abuf + 500000, 8);
	CHECK_EQ(got, 40);
	memcpy(&got, bbuf + 400000, 8);
	CHECK_EQ(got, 42);
	swr.opcode = UROCE_WR_ATOMIC_CMP_AND_SWP;
	swr.wr_id = 5;
	swr.wr.atomic.compare_add = 42;
	swr.wr.atomic.swap = 99;
	CHECK_EQ(uroce_post_send(qa, &swr, &sbad), 0);
	run(&a, &b);
	CHECK(poll1(&a, &wc) == 1 && wc.wr_id == 5 && wc.status == UROCE_WC_SUCCESS);
	memcpy(&got, bbuf + 400000, 8);
	CHECK_EQ(got, 99);

	/* Bad rkey: remote access error, nothing written, both QPs in ERR. */
	memset(bbuf + 600000, 0xAB, 64);
	swr.opcode = UROCE_WR_RDMA_WRITE;
	swr.wr_id = 6;
	ss.length = 64;
	swr.wr.rdma.remote_addr = 0x10000 + 600000;
	swr.wr.rdma.rkey = uroce_mr_rkey(bmr) ^ 0x100;
	CHECK_EQ(uroce_post_send(qa, &swr, &sbad), 0);
	run(&a, &b);
	CHECK_EQ(rx_drops, 0);
	CHECK(poll1(&a, &wc) == 1 && wc.wr_id == 6 && wc.status == UROCE_WC_REM_ACCESS_ERR);
	CHECK(bbuf[600000] == 0xAB && bbuf[600063] == 0xAB);
	CHECK_EQ(uroce_qp_state(qa), UROCE_QPS_ERR);
	CHECK_EQ(uroce_qp_state(qb), UROCE_QPS_ERR);
out:
	uroce_eng_destroy(a.e);
	uroce_eng_destroy(b.e);
}

static void ud(void)
{
	struct node a, b;
	struct uroce_mr *amr, *bmr;
	struct uroce_wc wc;

	node_init(&a, 1);
	node_init(&b, 2);
	struct uroce_qp *qa = qp_make(&a, UROCE_QPT_UD), *qb = qp_make(&b, UROCE_QPT_UD);
	struct uroce_qp_attr at = { .qp_state = UROCE_QPS_INIT, .port_num = 1, .qkey = 0x11 };

	CHECK(uroce_mr_reg(a.pd, abuf, 4096, (uintptr_t)abuf, UROCE_ACCESS_LOCAL_WRITE, &amr) == 0);
	CHECK(uroce_mr_reg(b.pd, bbuf, 4096, (uintptr_t)bbuf, UROCE_ACCESS_LOCAL_WRITE, &bmr) == 0);
	for (int k = 0; k < 2; k++) {
		struct uroce_qp *q = k ? qb : qa;

		at.qp_state = UROCE_QPS_INIT;
		CHECK(uroce_qp_modify(q, &at, UROCE_QP_STATE | UROCE_QP_PKEY_INDEX | UROCE_QP_PORT |
						      UROCE_QP_QKEY) == 0);
		at.qp_state = UROCE_QPS_RTR;
		CHECK_EQ(uroce_qp_modify(q, &at, UROCE_QP_STATE), 0);
		at.qp_state = UROCE_QPS_RTS;
		CHECK_EQ(uroce_qp_modify(q, &at, UROCE_QP_STATE | UROCE_QP_SQ_PSN), 0);
	}
	struct uroce_sge rs = wr_sge((uintptr_t)bbuf, 2048, uroce_mr_lkey(bmr));
	struct uroce_recv_wr rwr = wr_recv(9, &rs, 1), *rbad;

	CHECK_EQ(uroce_post_recv(qb, &rwr, &rbad), 0);
	struct uroce_av av = { .sgid_index = 1, .is_global = true };
	struct uroce_ah *ah;

	memcpy(av.dgid, b.gid, 16);
	CHECK_EQ(uroce_ah_create(a.pd, &av, &ah), 0);
	memcpy(abuf, "hello, ud", 9);
	struct uroce_sge ss = wr_sge((uintptr_t)abuf, 9, uroce_mr_lkey(amr));
	struct uroce_send_wr swr = wr_ud_send(8, &ss, 1, ah, uroce_qp_num(qb), 0x11,
					      UROCE_SEND_SIGNALED),
			     *sbad;

	CHECK_EQ(uroce_post_send(qa, &swr, &sbad), 0);
	/* A wrong Q_Key is dropped and counted. */
	swr.wr.ud.remote_qkey = 0x12;
	swr.wr_id = 10;
	CHECK_EQ(uroce_post_send(qa, &swr, &sbad), 0);
	run(&a, &b);
	CHECK(poll1(&a, &wc) == 1 && wc.wr_id == 8 && wc.status == UROCE_WC_SUCCESS);
	CHECK(poll1(&a, &wc) == 1 && wc.wr_id == 10 && wc.status == UROCE_WC_SUCCESS);
	CHECK(poll1(&b, &wc) == 1 && wc.wr_id == 9 && wc.byte_len == 49 &&
	      wc.src_qp == uroce_qp_num(qa) && (wc.wc_flags & UROCE_WC_GRH));
	CHECK_MEM_EQ(bbuf + 40, "hello, ud", 9);
	CHECK_EQ(poll1(&b, &wc), 0);
	CHECK_EQ(uroce_eng_counter(b.e, UROCE_CNT_DROP_BAD_QKEY), 1);
	CHECK_EQ(rx_drops, 1);
	uroce_eng_destroy(a.e);
	uroce_eng_destroy(b.e);
}

/* Nodes a and b with connections at path MTU mtu, abuf and bbuf registered (b's at 0x10000). */
static void two_nodes(enum uroce_mtu mtu, struct node *a, struct node *b, struct uroce_mr **amr,
		      struct uroce_mr **bmr)
{
	unsigned acc = UROCE_ACCESS_LOCAL_WRITE | UROCE_ACCESS_REMOTE_WRITE;

	path_mtu = mtu;
	node_init(a, 1);
	node_init(b, 2);
	CHECK_EQ(uroce_mr_reg(a->pd, abuf, sizeof(abuf), (uintptr_t)abuf, acc, amr), 0);
	CHECK_EQ(uroce_mr_reg(b->pd, bbuf, sizeof(bbuf), 0x10000, acc, bmr), 0);
}

/*
 * Two QPs each with RDMA WRITEs of msg bytes to send (512 KiB in all): one transmit call gives
 * each QP turns of `turn` packets (64 KiB of payload), alternating. With 64 KiB messages a turn is
 * one whole message: every turn ends with a WRITE_LAST.
 */
static void turns(enum uroce_mtu mtu, uint32_t msg, int turn)
{
	struct node a, b;
	struct uroce_mr *amr, *bmr;
	struct uroce_qp *qa[2], *qb[2];
	static struct uroce_tx_pkt tx[256];

	two_nodes(mtu, &a, &b, &amr, &bmr);
	for (int i = 0; i < 2; i++) {
		qa[i] = qp_make(&a, UROCE_QPT_RC);
		qb[i] = qp_make(&b, UROCE_QPT_RC);
		connect(qa[i], &b, uroce_qp_num(qb[i]), true);
		connect(qb[i], &a, uroce_qp_num(qa[i]), true);

		for (uint32_t off = 0; off < (512u << 10); off += msg) {
			struct uroce_sge ss = wr_sge((uintptr_t)abuf + off, msg, uroce_mr_lkey(amr));
			struct uroce_send_wr swr = wr_write(1, &ss, 1, 0x10000 + off,
							    uroce_mr_rkey(bmr), UROCE_SEND_SIGNALED),
					     *sbad;

			CHECK_EQ(uroce_post_send(qa[i], &swr, &sbad), 0);
		}
	}
	int n = uroce_eng_tx(a.e, now, tx, 256);

	CHECKF(n == 256, "%d packets", n);
	for (int i = 0; i < n && i < 8 * turn; i++) {
		uint32_t want = uroce_qp_num(qb[(i / turn) % 2]);

		CHECKF(tx[i].dst_qpn == want, "MTU code %d: packet %d to QP %u, want %u (turns of %d)",
		       (int)mtu, i, tx[i].dst_qpn, want, turn);
		if (msg == 65536 && i % turn == turn - 1)
			CHECKF(tx[i].hdr[0] == UROCE_OP_RC_WRITE_LAST,
			       "MTU code %d: turn ends with opcode 0x%02x", (int)mtu, tx[i].hdr[0]);
		CHECK_BAIL();
	}
	uroce_eng_destroy(a.e);
	uroce_eng_destroy(b.e);
	path_mtu = UROCE_MTU_1024;
}

/*
 * The requester's window: two 1 MiB WRITEs on one QP, nothing acknowledged; the engine emits
 * `want` packets and then waits (512 packets at MTU 1024, 1 MiB of payload at MTU 4096).
 */
static void window(enum uroce_mtu mtu, int want)
{
	struct node a, b;
	struct uroce_mr *amr, *bmr;
	static struct uroce_tx_pkt tx[256];

	two_nodes(mtu, &a, &b, &amr, &bmr);
	struct uroce_qp *qa = qp_make(&a, UROCE_QPT_RC), *qb = qp_make(&b, UROCE_QPT_RC);

	connect(qa, &b, uroce_qp_num(qb), true);
	connect(qb, &a, uroce_qp_num(qa), true);
	for (int i = 0; i < 2; i++) {
		struct uroce_sge ss = wr_sge((uintptr_t)abuf, sizeof(abuf), uroce_mr_lkey(amr));
		struct uroce_send_wr swr = wr_write(1, &ss, 1, 0x10000, uroce_mr_rkey(bmr), 0), *sbad;

		CHECK_EQ(uroce_post_send(qa, &swr, &sbad), 0);
	}
	int sent = 0, n;

	while ((n = uroce_eng_tx(a.e, now, tx, 256)) > 0 && sent < 4096)
		sent += n;
	CHECKF(sent == want, "MTU code %d: %d packets unacknowledged, want %d", (int)mtu, sent,
	       want);
	uroce_eng_destroy(a.e);
	uroce_eng_destroy(b.e);
	path_mtu = UROCE_MTU_1024;
}

/*
 * Long messages (RC and UC): a 200 KiB RDMA WRITE's packets from one transmit call, whose MIDDLE
 * packets are built from the previous packet (uroce_req_middles) except the first of each turn:
 * opcodes FIRST, MIDDLE..., LAST, consecutive PSNs, AckReq (RC) every 64th packet and on the last,
 * 12-byte headers and payloads in place. Then a 200 KiB SEND and a WRITE whose payload spans two
 * SGEs (a MIDDLE packet across them is gathered) go end to end, the data compared.
 */
static void middles(enum uroce_qp_type type)
{
	struct node a, b;
	struct uroce_mr *amr, *bmr;
	static struct uroce_tx_pkt tx[256];
	struct uroce_wc wc;
	bool rc = type == UROCE_QPT_RC;
	uint8_t cls = rc ? 0x00 : 0x20;
	const uint32_t len = 200u << 10;

	two_nodes(UROCE_MTU_1024, &a, &b, &amr, &bmr);
	struct uroce_qp *qa = qp_make(&a, type), *qb = qp_make(&b, type);

	connect(qa, &b, uroce_qp_num(qb), rc);
	connect(qb, &a, uroce_qp_num(qa), rc);
	for (uint32_t i = 0; i < len; i++)
		abuf[i] = (uint8_t)(i * 11 + 3);

	struct uroce_sge ss[2] = {wr_sge((uintptr_t)abuf, len, uroce_mr_lkey(amr))};
	struct uroce_send_wr swr = wr_write(1, ss, 1, 0x10000, uroce_mr_rkey(bmr),
					    UROCE_SEND_SIGNALED),
			     *sbad;

	CHECK_EQ(uroce_post_send(qa, &swr, &sbad), 0);
	int n = uroce_eng_tx(a.e, now, tx, 256);

	CHECKF(n == 200, "%d packets", n);
	uint32_t psn0 = uroce_get_be24(tx[0].hdr + 9);

	for (int i = 0; i < n; i++) {
		uint8_t want = cls | (i == 0 ? 0x06 : i == n - 1 ? 0x08 : 0x07);
		bool ack = tx[i].hdr[8] & 0x80, want_ack = rc && (i == n - 1 || i % 64 == 63);

		CHECKF(tx[i].hdr[0] == want, "packet %d: opcode 0x%02x, want 0x%02x", i,
		       tx[i].hdr[0], want);
		CHECKF(uroce_get_be24(tx[i].hdr + 9) == ((psn0 + (uint32_t)i) & 0xFFFFFFu),
		       "packet %d: PSN", i);
		CHECKF(ack == want_ack, "packet %d: AckReq %d", i, ack);
		CHECKF(tx[i].hdr_len == (i == 0 ? 28 : 12) && tx[i].pad == 0 &&
			       tx[i].payload == abuf + (size_t)i * 1024 &&
			       tx[i].payload_len == 1024,
		       "packet %d: header %u bytes, payload at %td", i, tx[i].hdr_len,
		       tx[i].payload - abuf);
		CHECK_BAIL();
	}
	/* Those packets are gone (not delivered): the peer sees a gap and the sender goes back. */
	memset(bbuf, 0, len);
	run(&a, &b);
	if (rc) {
		CHECK(poll1(&a, &wc) == 1 && wc.wr_id == 1 && wc.status == UROCE_WC_SUCCESS);
		CHECK_MEM_EQ(abuf, bbuf, len);
	}

	/* A SEND of 200 KiB, and a WRITE from two SGEs split at an odd offset. */
	struct uroce_sge rs = wr_sge(0x10000 + len, len, uroce_mr_lkey(bmr));
	struct uroce_recv_wr rwr = wr_recv(7, &rs, 1), *rbad;

	CHECK_EQ(uroce_post_recv(qb, &rwr, &rbad), 0);
	swr.opcode = UROCE_WR_SEND;
	swr.wr_id = 2;
	CHECK_EQ(uroce_post_send(qa, &swr, &sbad), 0);
	memset(bbuf, 0, 2 * len);
	ss[0].length = 100003;
	ss[1] = wr_sge((uintptr_t)abuf + 100003, len - 100003, uroce_mr_lkey(amr));
	swr.num_sge = 2;
	swr.opcode = UROCE_WR_RDMA_WRITE;
	swr.wr_id = 3;
	CHECK_EQ(uroce_post_send(qa, &swr, &sbad), 0);
	run(&a, &b);
	CHECK(poll1(&b, &wc) == 1 && wc.wr_id == 7 && wc.status == UROCE_WC_SUCCESS &&
	      wc.byte_len == len);
	CHECK_MEM_EQ(abuf, bbuf + len, len);
	CHECK_MEM_EQ(abuf, bbuf, len);
	uroce_eng_destroy(a.e);
	uroce_eng_destroy(b.e);
}

/*
 * A duplicate READ request for an older READ while a newer one's responses are going out: the
 * responder answers the older one first again (responses in request order), then goes on with the
 * newer one, as the requester that asked again expects.
 */
static void read_replay(void)
{
	struct node a, b;
	struct uroce_mr *amr, *bmr;
	static struct uroce_tx_pkt tx[8], rtx[16];
	unsigned acc = UROCE_ACCESS_LOCAL_WRITE | UROCE_ACCESS_REMOTE_READ;

	node_init(&a, 1);
	node_init(&b, 2);
	struct uroce_qp *qa = qp_make(&a, UROCE_QPT_RC), *qb = qp_make(&b, UROCE_QPT_RC);

	CHECK_EQ(uroce_mr_reg(a.pd, abuf, sizeof(abuf), (uintptr_t)abuf, acc, &amr), 0);
	CHECK_EQ(uroce_mr_reg(b.pd, bbuf, sizeof(bbuf), 0x10000, acc, &bmr), 0);
	connect(qa, &b, uroce_qp_num(qb), true);
	connect(qb, &a, uroce_qp_num(qa), true);
	for (uint32_t off = 0; off < 8192; off += 4096) {
		struct uroce_sge ss = wr_sge((uintptr_t)abuf + off, 4096, uroce_mr_lkey(amr));
		struct uroce_send_wr swr = wr_read(off, &ss, 1, 0x10000 + off, uroce_mr_rkey(bmr), 0),
				     *sbad;

		CHECK_EQ(uroce_post_send(qa, &swr, &sbad), 0);
	}
	int n = uroce_eng_tx(a.e, now, tx, 8);

	CHECKF(n == 2, "%d READ requests", n);
	if (n != 2)
		goto out;
	uint32_t pa = uroce_get_be24(tx[0].hdr + 9), pb = uroce_get_be24(tx[1].hdr + 9);

	deliver(&a, &b, &tx[0]);
	deliver(&a, &b, &tx[1]);
	n = uroce_eng_tx(b.e, now, rtx, 6); /* A's four responses, B's first two */
	CHECKF(n == 6 && uroce_get_be24(rtx[5].hdr + 9) == ((pb + 1) & 0xFFFFFFu), "%d responses",
	       n);
	deliver(&a, &b, &tx[0]); /* A asked again */
	n = uroce_eng_tx(b.e, now, rtx, 16);
	CHECKF(n == 6, "%d responses after the duplicate", n);
	for (int i = 0; i < n; i++) {
		uint32_t want = (i < 4 ? pa + (uint32_t)i : pb + (uint32_t)i - 2) & 0xFFFFFFu;

		CHECKF(uroce_get_be24(rtx[i].hdr + 9) == want, "response %d: PSN %06x, want %06x",
		       i, uroce_get_be24(rtx[i].hdr + 9), want);
	}
out:
	uroce_eng_destroy(a.e);
	uroce_eng_destroy(b.e);
}

int main(void)
{
	window(UROCE_MTU_1024, 512);
	window(UROCE_MTU_4096, 256);
	turns(UROCE_MTU_1024, 512u << 10, 64);
	turns(UROCE_MTU_4096, 512u << 10, 16);
	turns(UROCE_MTU_1024, 65536, 64);
	turns(UROCE_MTU_4096, 65536, 16);
	connected(UROCE_QPT_RC);
	connected(UROCE_QPT_UC);
	CHECK_EQ(rx_drops, 0);
	middles(UROCE_QPT_RC);
	middles(UROCE_QPT_UC);
	read_replay();
	ud();
	return check_exit("transport_smoke");
}
