/* SPDX-License-Identifier: MIT */
/* The verbs test kit (verbs_kit.h). */
#include "verbs_kit.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void verbs_kit_checks(long *count, int *failures)
{
	*count = check_count;
	*failures = check_failures;
}

uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

struct ibv_context *open_device(const char *name)
{
	struct ibv_context *ctx = NULL;
	struct ibv_device **list;
	int n;

	list = ibv_get_device_list(&n);
	if (!list) {
		fprintf(stderr, "FAIL: ibv_get_device_list: %s\n", strerror(errno));
		exit(1);
	}
	for (int i = 0; i < n && !ctx; i++)
		if (!strcmp(ibv_get_device_name(list[i]), name))
			ctx = ibv_open_device(list[i]);
	ibv_free_device_list(list); /* the context keeps its device */
	if (!ctx) {
		printf("SKIP: cannot open device %s: %s\n", name, strerror(errno));
		exit(77);
	}
	return ctx;
}

int find_gid(struct ibv_context *ctx, const char *ip4)
{
	struct ibv_port_attr pa;
	uint8_t want[16] = {[10] = 0xff, [11] = 0xff}; /* IPv4-mapped */
	int gid_idx = -1;

	if (inet_pton(AF_INET, ip4, want + 12) == 1 && ibv_query_port(ctx, 1, &pa) == 0) {
		for (int i = 0; i < pa.gid_tbl_len && gid_idx < 0; i++) {
			struct ibv_gid_entry e;

			if (ibv_query_gid_ex(ctx, 1, (uint32_t)i, &e, 0))
				break; /* ENODATA: past the entries */
			if (e.gid_type == IBV_GID_TYPE_ROCE_V2 && !memcmp(e.gid.raw, want, 16))
				gid_idx = i;
		}
	}
	CHECKF(gid_idx >= 0, "no RoCE v2 GID for %s on %s", ip4, ibv_get_device_name(ctx->device));
	return gid_idx;
}

int poll_one(struct ibv_cq *cq, struct ibv_wc *wc)
{
	uint64_t end = now_ms() + WAIT_MS;

	do {
		int n = ibv_poll_cq(cq, 1, wc);

		if (n == 1)
			return (int)wc->status;
		if (n < 0)
			return -1;
	} while (now_ms() < end);
	return -1;
}

void end_make(struct end *e, struct ibv_context *ctx, struct ibv_pd *pd,
	      struct ibv_comp_channel *ch, int access, struct ibv_qp_cap cap)
{
	struct ibv_qp_init_attr init = {.qp_type = IBV_QPT_RC, .cap = cap};

	memset(e, 0, sizeof(*e));
	if (access) {
		e->buf = calloc(1, BUF);
		CHECK(e->buf != NULL);
		if (e->buf) {
			e->mr = ibv_reg_mr_iova2(pd, e->buf, BUF, (uintptr_t)e->buf,
						 (unsigned)access);
			CHECK(e->mr != NULL);
		}
	}
	e->cq = ibv_create_cq(ctx, 64, e, ch, 0);
	CHECK(e->cq != NULL);
	if (!e->cq)
		return;
	CHECK_GE(e->cq->cqe, 64);
	init.send_cq = e->cq;
	init.recv_cq = e->cq;
	e->qp = ibv_create_qp(pd, &init);
	CHECK(e->qp != NULL);
	CHECK(init.cap.max_send_wr >= cap.max_send_wr && init.cap.max_recv_wr >= cap.max_recv_wr &&
	      init.cap.max_send_sge >= cap.max_send_sge &&
	      init.cap.max_recv_sge >= cap.max_recv_sge &&
	      init.cap.max_inline_data >= cap.max_inline_data);
}

void end_free(struct end *e)
{
	if (e->qp)
		CHECK_EQ(ibv_destroy_qp(e->qp), 0);
	if (e->cq)
		CHECK_EQ(ibv_destroy_cq(e->cq), 0);
	if (e->mr)
		CHECK_EQ(ibv_dereg_mr(e->mr), 0);
	free(e->buf);
	memset(e, 0, sizeof(*e));
}

void rc_init(struct ibv_qp *qp, int access)
{
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT,
				.port_num = 1,
				.pkey_index = 0,
				.qp_access_flags = access};

	CHECK_EQ(ibv_modify_qp(qp, &a, RC_INIT_MASK), 0);
	CHECK_EQ(qp->state, IBV_QPS_INIT);
}

void rc_rtr_rts(struct ibv_qp *qp, uint32_t dest_qpn, int gid_idx, const union ibv_gid *dgid,
		uint32_t psn)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_RTR,
		.path_mtu = IBV_MTU_1024,
		.dest_qp_num = dest_qpn,
		.rq_psn = psn,
		.max_dest_rd_atomic = 4,
		.min_rnr_timer = 12,
		.ah_attr = {.is_global = 1,
			    .port_num = 1,
			    .grh = {.dgid = *dgid,
				    .sgid_index = (uint8_t)gid_idx,
				    .hop_limit = 64}},
	};

	CHECK_EQ(ibv_modify_qp(qp, &a, RC_RTR_MASK), 0);
	CHECK_EQ(qp->state, IBV_QPS_RTR);
	a = (struct ibv_qp_attr){.qp_state = IBV_QPS_RTS,
				 .timeout = 14,
				 .retry_cnt = 7,
				 .rnr_retry = 7,
				 .sq_psn = psn,
				 .max_rd_atomic = 4};
	CHECK_EQ(ibv_modify_qp(qp, &a,
			       IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
				       IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC),
		 0);
	CHECK_EQ(qp->state, IBV_QPS_RTS);
}

void rc_to_rts(struct ibv_qp *qp, int access, uint32_t dest_qpn, int gid_idx,
	       const union ibv_gid *dgid, uint32_t psn)
{
	rc_init(qp, access);
	rc_rtr_rts(qp, dest_qpn, gid_idx, dgid, psn);
}

void ud_to_rts(struct ibv_qp *qp, uint32_t qkey)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT, .pkey_index = 0, .port_num = 1, .qkey = qkey};

	CHECK_EQ(
		ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY),
		0);
	a.qp_state = IBV_QPS_RTR;
	CHECK_EQ(ibv_modify_qp(qp, &a, IBV_QP_STATE), 0);
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0;
	CHECK_EQ(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN), 0);
	CHECK_EQ(qp->state, IBV_QPS_RTS);
}
