/* SPDX-License-Identifier: MIT */
/*
 * The data path allocates nothing: after set-up, SEND, WRITE, READ and atomics with their ACKs
 * and completions run with malloc, calloc, realloc and free counted (linked with --wrap), and the
 * count must stay zero.
 */
#include <stddef.h>
#include <string.h>

#include "../check.h"
#include "../wr.h"
#include "transport/engine.h"

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t m);
void *__real_realloc(void *p, size_t n);
void __real_free(void *p);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t m);
void *__wrap_realloc(void *p, size_t n);
void __wrap_free(void *p);

static long allocs;

void *__wrap_malloc(size_t n)
{
	allocs++;
	return __real_malloc(n);
}

void *__wrap_calloc(size_t n, size_t m)
{
	allocs++;
	return __real_calloc(n, m);
}

void *__wrap_realloc(void *p, size_t n)
{
	allocs++;
	return __real_realloc(p, n);
}

void __wrap_free(void *p)
{
	if (p)
		allocs++;
	__real_free(p);
}

struct node {
	struct uroce_eng *e;
	struct uroce_pd *pd;
	struct uroce_cq *cq;
	struct uroce_qp *qp;
	struct uroce_mr *mr;
	uint8_t gid[16];
};

static uint8_t mem[2][1 << 16];
static uint8_t wire_buf[8192];

static void pump(struct node *a, struct node *b)
{
	struct uroce_tx_pkt tx[16];
	int n = uroce_eng_tx(a->e, 0, tx, 16);

	for (int i = 0; i < n; i++) {
		uint32_t len = tx[i].hdr_len;

		memcpy(wire_buf, tx[i].hdr, len);
		if (tx[i].payload_len)
			memcpy(wire_buf + len, tx[i].payload, tx[i].payload_len);
		len += tx[i].payload_len;
		memset(wire_buf + len, 0, tx[i].pad + 4u);
		len += tx[i].pad + 4u;
		struct uroce_rx_pkt rx = { .data = wire_buf, .len = len, .sgid_index = 1 };

		memcpy(rx.sgid, a->gid, 16);
		uroce_eng_rx(b->e, 0, &rx);
	}
}

static void setup(struct node *n, int i)
{
	struct uroce_eng_cfg cfg;

	uroce_eng_cfg_default(&cfg);
	CHECK_EQ(uroce_eng_create(&n->e, &cfg), 0);
	CHECK_EQ(uroce_pd_alloc(n->e, &n->pd), 0);
	CHECK_EQ(uroce_cq_create(n->e, 64, NULL, &n->cq), 0);
	CHECK_EQ(uroce_mr_reg(n->pd, mem[i], sizeof(mem[i]), 0, 15, &n->mr), 0);
	struct uroce_qp_init init = { .type = UROCE_QPT_RC, .send_cq = n->cq, .recv_cq = n->cq,
				      .cap = { 16, 16, 2, 2, 0 } };

	CHECK_EQ(uroce_qp_create(n->pd, &init, &n->qp), 0);
	memset(n->gid, 0, 16);
	n->gid[15] = (uint8_t)(i + 1);
}

static void connect(struct node *n, struct node *peer)
{
	struct uroce_qp_attr a = { .qp_state = UROCE_QPS_INIT, .port_num = 1,
				   .qp_access_flags = 15 };

	CHECK(uroce_qp_modify(n->qp, &a, UROCE_QP_STATE | UROCE_QP_PKEY_INDEX | UROCE_QP_PORT |
						  UROCE_QP_ACCESS_FLAGS) == 0);
	a.qp_state = UROCE_QPS_RTR;
	a.path_mtu = UROCE_MTU_256;
	a.dest_qp_num = uroce_qp_num(peer->qp);
	a.max_dest_rd_atomic = 4;
	a.av.sgid_index = 1;
	memcpy(a.av.dgid, peer->gid, 16);
	CHECK(uroce_qp_modify(n->qp, &a, UROCE_QP_STATE | UROCE_QP_AV | UROCE_QP_PATH_MTU |
						  UROCE_QP_DEST_QPN | UROCE_QP_RQ_PSN |
						  UROCE_QP_MAX_DEST_RD_ATOMIC |
						  UROCE_QP_MIN_RNR_TIMER) == 0);
	a.qp_state = UROCE_QPS_RTS;
	a.timeout = 10;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 4;
	CHECK(uroce_qp_modify(n->qp, &a, UROCE_QP_STATE | UROCE_QP_SQ_PSN | UROCE_QP_TIMEOUT |
						  UROCE_QP_RETRY_CNT | UROCE_QP_RNR_RETRY |
						  UROCE_QP_MAX_QP_RD_ATOMIC) == 0);
}

int main(void)
{
	struct node a, b;
	struct uroce_wc wc[8];

	setup(&a, 0);
	setup(&b, 1);
	connect(&a, &b);
	connect(&b, &a);

	/* Two SGEs so that packets span them (the bounce path) and MTU 256 so messages segment. */
	struct uroce_sge sge[2] = {wr_sge(0, 700, uroce_mr_lkey(a.mr)),
				   wr_sge(4096, 300, uroce_mr_lkey(a.mr))};
	struct uroce_sge rsge = wr_sge(0, 4096, uroce_mr_lkey(b.mr));
	struct uroce_recv_wr rwr = wr_recv(0, &rsge, 1), *rbad;
	struct uroce_send_wr wr = wr_op(UROCE_WR_SEND, 0, sge, 2, 0), *bad;
	static const enum uroce_wr_opcode ops[] = {
		UROCE_WR_SEND, UROCE_WR_SEND_WITH_IMM, UROCE_WR_RDMA_WRITE,
		UROCE_WR_RDMA_WRITE_WITH_IMM, UROCE_WR_RDMA_READ, UROCE_WR_ATOMIC_FETCH_AND_ADD,
		UROCE_WR_ATOMIC_CMP_AND_SWP,
	};
	long completions = 0;

	CHECKF(allocs > 0, "the wrap did not see the set-up allocations");
	allocs = 0;
	for (int round = 0; round < 200; round++) {
		enum uroce_wr_opcode op = ops[round % 7];

		wr.opcode = op;
		wr.wr_id = (uint64_t)round;
		wr.send_flags = UROCE_SEND_SIGNALED;
		wr.num_sge = op >= UROCE_WR_ATOMIC_CMP_AND_SWP ? 1 : 2;
		sge[0].length = wr.num_sge == 1 ? 8 : 700;
		wr.wr.rdma.remote_addr = 8192;
		wr.wr.rdma.rkey = uroce_mr_rkey(b.mr);
		if (op >= UROCE_WR_ATOMIC_CMP_AND_SWP) {
			wr.wr.atomic.remote_addr = 16384;
			wr.wr.atomic.rkey = uroce_mr_rkey(b.mr);
		}
		if (op == UROCE_WR_SEND || op == UROCE_WR_SEND_WITH_IMM ||
		    op == UROCE_WR_RDMA_WRITE_WITH_IMM)
			CHECK_EQ(uroce_post_recv(b.qp, &rwr, &rbad), 0);
		CHECK_EQ(uroce_post_send(a.qp, &wr, &bad), 0);
		for (int k = 0; k < 20; k++) {
			pump(&a, &b);
			pump(&b, &a);
		}
		completions += uroce_cq_poll(a.cq, 8, wc);
		uroce_cq_poll(b.cq, 8, wc);
	}
	CHECKF(completions == 200, "completions %ld", completions);
	CHECKF(allocs == 0, "%ld allocations on the data path", allocs);
	uroce_eng_destroy(a.e);
	uroce_eng_destroy(b.e);
	return check_exit("transport_noalloc");
}
