/* SPDX-License-Identifier: MIT */
/*
 * Two transport engines joined by an in-memory link with no loss: packets/s and Gbit/s for
 * 4 KiB RDMA WRITE (path MTU 4096) and 64 B SEND, through both engines, with the ICRC generated
 * by the sender and verified by the receiver as a real backend would. One thread does all of it,
 * so the figure is "per core". Then a ping-pong of signaled 8 B SENDs, one message at a time
 * (the peer's ACK goes behind its reply): the engines' share of a latency test's half round
 * trip, in ns per message (post, transmit and ICRC, check and receive, completions).
 *
 * Usage: bench_engine [SECONDS_PER_CASE [write|send|pingpong]] (one case, for a profiler)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "transport/engine.h"
#include "wire/bytes.h"
#include "wire/icrc.h"

struct side {
	struct uroce_eng *e;
	struct uroce_pd *pd;
	struct uroce_cq *cq;
	struct uroce_qp *qp;
	struct uroce_mr *mr;
	uint8_t *mem;
	uint8_t gid[16];
	uint8_t ipudp[28]; /* IPv4 + UDP template for the ICRC pseudo-header */
};

#define MEM_SIZE (4u << 20)

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void side_init(struct side *s, uint8_t last)
{
	struct uroce_eng_cfg cfg;

	uroce_eng_cfg_default(&cfg);
	if (uroce_eng_create(&s->e, &cfg) || uroce_pd_alloc(s->e, &s->pd) ||
	    uroce_cq_create(s->e, 65536, NULL, &s->cq)) {
		fprintf(stderr, "engine setup failed\n");
		exit(1);
	}
	s->mem = aligned_alloc(4096, MEM_SIZE);
	memset(s->mem, last, MEM_SIZE);
	if (uroce_mr_reg(s->pd, s->mem, MEM_SIZE, (uintptr_t)s->mem,
			 UROCE_ACCESS_LOCAL_WRITE | UROCE_ACCESS_REMOTE_WRITE, &s->mr)) {
		fprintf(stderr, "mr failed\n");
		exit(1);
	}
	struct uroce_qp_init init = {
		.type = UROCE_QPT_RC,
		.send_cq = s->cq,
		.recv_cq = s->cq,
		.cap = { .max_send_wr = 4096, .max_recv_wr = 4096, .max_send_sge = 1,
			 .max_recv_sge = 1 },
	};
	if (uroce_qp_create(s->pd, &init, &s->qp)) {
		fprintf(stderr, "qp failed\n");
		exit(1);
	}
	memset(s->gid, 0, 16);
	s->gid[10] = s->gid[11] = 0xFF;
	s->gid[12] = 198;
	s->gid[13] = 18;
	s->gid[15] = last;
	memset(s->ipudp, 0, sizeof(s->ipudp));
	s->ipudp[0] = 0x45;
	s->ipudp[6] = 0x40;
	s->ipudp[8] = 64;
	s->ipudp[9] = 17;
	uroce_put_be16(s->ipudp + 22, 4791);
}

static void connect_qp(struct side *s, const struct side *peer)
{
	struct uroce_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.qp_state = UROCE_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = UROCE_ACCESS_REMOTE_WRITE | UROCE_ACCESS_LOCAL_WRITE;
	uroce_qp_modify(s->qp, &a,
			UROCE_QP_STATE | UROCE_QP_PKEY_INDEX | UROCE_QP_PORT | UROCE_QP_ACCESS_FLAGS);
	a.qp_state = UROCE_QPS_RTR;
	a.path_mtu = UROCE_MTU_4096;
	a.dest_qp_num = uroce_qp_num(peer->qp);
	a.max_dest_rd_atomic = 1;
	a.av.sgid_index = 1;
	memcpy(a.av.dgid, peer->gid, 16);
	uroce_qp_modify(s->qp, &a,
			UROCE_QP_STATE | UROCE_QP_AV | UROCE_QP_PATH_MTU | UROCE_QP_DEST_QPN |
				UROCE_QP_RQ_PSN | UROCE_QP_MAX_DEST_RD_ATOMIC |
				UROCE_QP_MIN_RNR_TIMER);
	a.qp_state = UROCE_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 1;
	if (uroce_qp_modify(s->qp, &a,
			    UROCE_QP_STATE | UROCE_QP_SQ_PSN | UROCE_QP_TIMEOUT | UROCE_QP_RETRY_CNT |
				    UROCE_QP_RNR_RETRY | UROCE_QP_MAX_QP_RD_ATOMIC)) {
		fprintf(stderr, "modify failed\n");
		exit(1);
	}
}

static uint8_t frame[64][4096 + 128];
static uint64_t icrc_bad;

/* Frame every packet a sends (copy payload, ICRC), verify and deliver to b. Returns count. */
static int pump(struct side *a, struct side *b, uint64_t t)
{
	struct uroce_tx_pkt tx[64];
	int n = uroce_eng_tx(a->e, t, tx, 64);

	for (int i = 0; i < n; i++) {
		uint8_t *f = frame[i];
		uint32_t len = tx[i].hdr_len;

		memcpy(f, tx[i].hdr, len);
		if (tx[i].payload_len)
			memcpy(f + len, tx[i].payload, tx[i].payload_len);
		len += tx[i].payload_len;
		memset(f + len, 0, tx[i].pad);
		len += tx[i].pad;
		uroce_put_be16(a->ipudp + 2, (uint16_t)(len + 4 + 28));
		uroce_put_be16(a->ipudp + 24, (uint16_t)(len + 4 + 8));
		uroce_put_le32(f + len, uroce_icrc(UROCE_ENCAP_V2_IPV4, a->ipudp, f, len));
		len += 4;

		/* Receive side: check the ICRC again, then hand the packet to the engine. */
		if (uroce_icrc(UROCE_ENCAP_V2_IPV4, a->ipudp, f, len - 4) != uroce_get_le32(f + len - 4))
			icrc_bad++;
		struct uroce_rx_pkt rx = { .data = f, .len = len, .encap = UROCE_ENCAP_V2_IPV4,
					   .sgid_index = 1 };

		memcpy(rx.sgid, a->gid, 16);
		memcpy(rx.dgid, b->gid, 16);
		uroce_eng_rx(b->e, t, &rx);
	}
	return n;
}

static void run_case(const char *name, enum uroce_wr_opcode op, uint32_t size, double seconds)
{
	struct side a, b;

	side_init(&a, 1);
	side_init(&b, 2);
	connect_qp(&a, &b);
	connect_qp(&b, &a);

	struct uroce_sge sge = { .addr = (uintptr_t)a.mem, .length = size,
				 .lkey = uroce_mr_lkey(a.mr) };
	struct uroce_sge rsge = { .addr = (uintptr_t)b.mem, .length = 4096,
				  .lkey = uroce_mr_lkey(b.mr) };
	struct uroce_send_wr wr = { .sg_list = &sge, .num_sge = 1, .opcode = op }, *bad;
	struct uroce_recv_wr rwr = { .sg_list = &rsge, .num_sge = 1 }, *rbad;
	struct uroce_wc wc[64];
	uint64_t pkts = 0, msgs = 0, posted = 0, start = now_ns(), end = start;
	uint64_t limit = start + (uint64_t)(seconds * 1e9);

	wr.wr.rdma.rkey = uroce_mr_rkey(b.mr);
	while (end < limit) {
		for (int k = 0; k < 256; k++) {
			/* Keep the send queue full; every 64th request is signaled. */
			while (posted - msgs < 2048) {
				wr.wr_id = posted;
				wr.send_flags = (posted & 63) == 63 ? UROCE_SEND_SIGNALED : 0;
				wr.wr.rdma.remote_addr = (uintptr_t)b.mem + (posted % 64) * 4096;
				if (op == UROCE_WR_SEND && uroce_post_recv(b.qp, &rwr, &rbad))
					break;
				if (uroce_post_send(a.qp, &wr, &bad))
					break;
				posted++;
			}
			pkts += (uint64_t)pump(&a, &b, end);
			pkts += (uint64_t)pump(&b, &a, end);
			int c;

			while ((c = uroce_cq_poll(a.cq, 64, wc)) > 0) {
				for (int i = 0; i < c; i++)
					if (wc[i].status == UROCE_WC_SUCCESS && wc[i].opcode != UROCE_WC_RECV)
						msgs = wc[i].wr_id + 1;
			}
			while (uroce_cq_poll(b.cq, 64, wc) > 0)
				;
		}
		end = now_ns();
	}
	double s = (double)(end - start) / 1e9;

	printf("%-22s %8u B  %10.2f Mpkt/s  %8.2f Mmsg/s  %8.2f Gbit/s payload  (%llu pkts incl. ACKs)%s\n",
	       name, size, (double)pkts / s / 1e6, (double)msgs / s / 1e6,
	       (double)msgs * size * 8 / s / 1e9, (unsigned long long)pkts,
	       icrc_bad ? "  ICRC MISMATCH" : "");
	uroce_eng_destroy(a.e);
	uroce_eng_destroy(b.e);
	free(a.mem);
	free(b.mem);
}

/* Take the completions on s's CQ; returns how many were receives. */
static int reap(struct side *s)
{
	struct uroce_wc wc[8];
	int c, recvs = 0;

	while ((c = uroce_cq_poll(s->cq, 8, wc)) > 0)
		for (int i = 0; i < c; i++) {
			if (wc[i].status != UROCE_WC_SUCCESS) {
				fprintf(stderr, "ping-pong: completion status %d\n", wc[i].status);
				exit(1);
			}
			recvs += wc[i].opcode == UROCE_WC_RECV;
		}
	return recvs;
}

static void run_pingpong(uint32_t size, double seconds)
{
	struct side s[2];

	side_init(&s[0], 1);
	side_init(&s[1], 2);
	connect_qp(&s[0], &s[1]);
	connect_qp(&s[1], &s[0]);

	struct uroce_recv_wr rwr[2];
	struct uroce_send_wr wr[2];
	struct uroce_sge sge[2], rsge[2];
	struct uroce_send_wr *bad;
	struct uroce_recv_wr *rbad;

	for (int i = 0; i < 2; i++) {
		sge[i] = (struct uroce_sge){.addr = (uintptr_t)s[i].mem,
					    .length = size,
					    .lkey = uroce_mr_lkey(s[i].mr)};
		rsge[i] = (struct uroce_sge){.addr = (uintptr_t)s[i].mem + 4096,
					     .length = 4096,
					     .lkey = uroce_mr_lkey(s[i].mr)};
		wr[i] = (struct uroce_send_wr){.sg_list = &sge[i],
					       .num_sge = 1,
					       .opcode = UROCE_WR_SEND,
					       .send_flags = UROCE_SEND_SIGNALED};
		rwr[i] = (struct uroce_recv_wr){.sg_list = &rsge[i], .num_sge = 1};
		if (uroce_post_recv(s[i].qp, &rwr[i], &rbad)) {
			fprintf(stderr, "ping-pong: post_recv failed\n");
			exit(1);
		}
	}
	uint64_t msgs = 0, start = now_ns(), end = start;
	uint64_t limit = start + (uint64_t)(seconds * 1e9);

	while (end < limit) {
		for (int k = 0; k < 1024; k++) {
			/* Side k % 2 sends; the other takes it, posts a receive, and replies next.
			 */
			struct side *a = &s[msgs % 2], *b = &s[(msgs + 1) % 2];

			if (uroce_post_send(a->qp, &wr[msgs % 2], &bad)) {
				fprintf(stderr, "ping-pong: post_send failed\n");
				exit(1);
			}
			pump(a, b, end);
			if (reap(b) != 1 || uroce_post_recv(b->qp, &rwr[(msgs + 1) % 2], &rbad)) {
				fprintf(stderr, "ping-pong: message %llu not received\n",
					(unsigned long long)msgs);
				exit(1);
			}
			msgs++;
		}
		end = now_ns();
	}
	pump(&s[0], &s[1], end); /* the last ACKs */
	pump(&s[1], &s[0], end);
	reap(&s[0]);
	reap(&s[1]);
	printf("%-22s %8u B  %10.0f ns per message, one way%s\n", "RC SEND ping-pong", size,
	       (double)(end - start) / (double)msgs, icrc_bad ? "  ICRC MISMATCH" : "");
	for (int i = 0; i < 2; i++) {
		uroce_eng_destroy(s[i].e);
		free(s[i].mem);
	}
}

int main(int argc, char **argv)
{
	double sec = argc > 1 ? atof(argv[1]) : 1.0;
	const char *only = argc > 2 ? argv[2] : NULL;

	if (sec <= 0)
		sec = 1.0;
	if (only && strcmp(only, "write") && strcmp(only, "send") && strcmp(only, "pingpong")) {
		fprintf(stderr, "usage: bench_engine [SECONDS_PER_CASE [write|send|pingpong]]\n");
		return 2;
	}
	printf("two engines, one thread, in-memory link, ICRC generated and checked per packet\n");
	if (!only || !strcmp(only, "write"))
		run_case("RC RDMA WRITE", UROCE_WR_RDMA_WRITE, 4096, sec);
	if (!only || !strcmp(only, "send"))
		run_case("RC SEND", UROCE_WR_SEND, 64, sec);
	if (!only || !strcmp(only, "pingpong"))
		run_pingpong(8, sec);
	return icrc_bad ? 1 : 0;
}
