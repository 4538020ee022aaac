/* SPDX-License-Identifier: MIT */
/*
 * Bad input from the network is a counted drop, and the process is unharmed.
 *
 * An opened device (uroce_lo, RoCE v2 on 127.0.0.1) with an RC QP in RTS, connected to a peer at
 * 127.0.0.2 that is this test's plain UDP socket, and a UD QP. The socket sends crafted
 * datagrams to (127.0.0.1, port): garbage, a good packet with a wrong ICRC, one for a QP that does
 * not exist, wrong P_Keys, a UD packet with a wrong Q_Key. After each, exactly the matching
 * counter goes up (the backend's io_rx_drop_* or the engine's drop_*) and no other drop counter
 * moves. Then good packets still work: the RC SEND completes with its bytes and the device ACKs
 * it to the socket; the UD SEND completes.
 *
 * The packets are built with our wire codec (uroce_frame_encode), the IPv4 ICRC computed with
 * ID 0 as a DF socket sends it (the receiver solves the ID anyway).
 * Environment: UROCE_RUNDIR, an empty directory (automatic devices); UROCE_PORT, when set, the
 * UDP port instead of 4791 (tests/run/in_netns.sh sets both).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../check.h"
#include "../wr.h"
#include "host/config/io_counters.h"
#include "host/ctx.h"
#include "wire/packet.h"

#define PEER_QPN 0x000321u /* the RC QP's remote QP: our socket plays it */
#define RC_PSN	 100u	   /* what the RC QP expects next */
#define UD_QKEY	 0x11111111u

static struct uroce_ctx *ctx;
static int sock = -1;
static uint16_t port = 4791;
static struct sockaddr_in dev_addr; /* 127.0.0.1:port */

/* ---- counters ------------------------------------------------------------------------------- */

struct snap {
	uint64_t eng[UROCE_CNT_MAX];
	uint64_t io[UROCE_IO_CNT_MAX];
};

static void take(struct snap *s)
{
	uroce_ctx_lock(ctx);
	for (int i = 0; i < UROCE_CNT_MAX; i++)
		s->eng[i] = uroce_eng_counter(uroce_ctx_eng(ctx), (enum uroce_counter)i);
	uroce_ctx_unlock(ctx);
	for (int i = 0; i < UROCE_IO_CNT_MAX; i++)
		s->io[i] = uroce_ctx_io_counter(ctx, (enum uroce_io_counter)i);
}

static bool is_drop_eng(int i)
{
	return !strncmp(uroce_counter_names[i], "drop_", 5);
}

static bool is_drop_io(int i)
{
	return !strncmp(uroce_io_counter_names[i], "io_rx_drop_", 11);
}

/* Drain what the device sent to our socket (ACKs, NAKs). Returns datagrams read. */
static int drain(uint8_t *last, size_t cap, ssize_t *last_len)
{
	uint8_t tmp[2048];
	int n = 0;

	for (;;) {
		ssize_t r = recv(sock, last ? last : tmp, last ? cap : sizeof(tmp), MSG_DONTWAIT);

		if (r < 0)
			return n;
		if (last_len)
			*last_len = r;
		n++;
	}
}

/*
 * Wait (bounded: at most ~2 s, in 10 ms polls of our socket) until the engine counter eng_k (or,
 * when eng_k < 0, the io counter io_k) is above before's value. Returns true when it is.
 */
static bool wait_counter(const struct snap *before, int eng_k, int io_k, struct snap *now)
{
	for (int i = 0; i < 200; i++) {
		take(now);
		if (eng_k >= 0 ? now->eng[eng_k] > before->eng[eng_k]
			       : now->io[io_k] > before->io[io_k])
			return true;
		struct pollfd p = {.fd = sock, .events = POLLIN};

		if (poll(&p, 1, 10) > 0)
			drain(NULL, 0, NULL);
	}
	return false;
}

/* Send one datagram and check that exactly the named drop counter went up by one. */
static void expect_drop(const char *what, const uint8_t *pkt, size_t len, int eng_k, int io_k)
{
	struct snap a, b;

	take(&a);
	CHECKF(sendto(sock, pkt, len, 0, (const struct sockaddr *)&dev_addr, sizeof(dev_addr)) ==
		       (ssize_t)len,
	       "%s: sendto: %s", what, strerror(errno));
	bool up = wait_counter(&a, eng_k, io_k, &b);

	CHECKF(up, "%s: counter %s did not go up", what,
	       eng_k >= 0 ? uroce_counter_names[eng_k] : uroce_io_counter_names[io_k]);
	/* Whatever else the packet did happened in the same locked progress round. */
	for (int i = 0; i < UROCE_CNT_MAX; i++) {
		if (!is_drop_eng(i))
			continue;
		uint64_t want = a.eng[i] + (i == eng_k ? 1 : 0);

		CHECKF(b.eng[i] == want, "%s: %s went from %llu to %llu", what,
		       uroce_counter_names[i], (unsigned long long)a.eng[i],
		       (unsigned long long)b.eng[i]);
	}
	for (int i = 0; i < UROCE_IO_CNT_MAX; i++) {
		if (!is_drop_io(i))
			continue;
		uint64_t want = a.io[i] + (eng_k < 0 && i == io_k ? 1 : 0);

		CHECKF(b.io[i] == want, "%s: %s went from %llu to %llu", what,
		       uroce_io_counter_names[i], (unsigned long long)a.io[i],
		       (unsigned long long)b.io[i]);
	}
	printf("%-34s -> %s +1\n", what,
	       eng_k >= 0 ? uroce_counter_names[eng_k] : uroce_io_counter_names[io_k]);
}

/* ---- packets -------------------------------------------------------------------------------- */

/* A RoCE v2/IPv4 transport packet (BTH..ICRC) from 127.0.0.2 to 127.0.0.1, into out. */
static size_t build(uint8_t *out, size_t cap, uint8_t opcode, uint32_t dqpn, uint16_t pkey,
		    uint32_t psn, uint32_t qkey, const uint8_t *payload, uint32_t plen)
{
	struct uroce_frame f;
	uint8_t frame[2048];
	const size_t off = UROCE_ETH_LEN + UROCE_IPV4_LEN + UROCE_UDP_LEN;

	memset(&f, 0, sizeof(f));
	f.encap = UROCE_ENCAP_V2_IPV4;
	f.ip4 = (struct uroce_ipv4){.ihl = 5,
				    .frag = 0x4000,
				    .ttl = 64,
				    .proto = 17,
				    .src = {127, 0, 0, 2},
				    .dst = {127, 0, 0, 1}};
	f.udp = (struct uroce_udp){.sport = port, .dport = port};
	f.t.bth = (struct uroce_bth){.opcode = opcode,
				     .pkey = pkey,
				     .dqpn = dqpn,
				     .ackreq = opcode != UROCE_OP_UD_SEND_ONLY,
				     .psn = psn};
	f.t.deth = (struct uroce_deth){.qkey = qkey, .src_qp = PEER_QPN};
	f.t.payload = payload;
	f.t.payload_len = plen;
	ssize_t n = uroce_frame_encode(frame, sizeof(frame), &f);

	if (n <= (ssize_t)off || (size_t)n - off > cap) {
		fprintf(stderr, "uroce_frame_encode: %zd\n", n);
		exit(1);
	}
	memcpy(out, frame + off, (size_t)n - off);
	return (size_t)n - off;
}

/* ---- the device side ------------------------------------------------------------------------ */

static int wait_wc(struct uroce_cq *cq, struct uroce_wc *wc)
{
	for (int i = 0; i < 200; i++) {
		uroce_ctx_lock(ctx);
		int n = uroce_cq_poll(cq, 1, wc);

		uroce_ctx_unlock(ctx);
		if (n)
			return n;
		struct pollfd p = {.fd = sock, .events = POLLIN};

		poll(&p, 1, 10); /* a bounded wait: the ACK arriving ends it early */
	}
	return 0;
}

static uint8_t mem[2][4096];

int main(void)
{
	struct uroce_gid_entry gids[64];
	const char *p = getenv("UROCE_PORT");
	int rc, idx = -1;

	if (!getenv("UROCE_RUNDIR")) {
		fprintf(stderr, "set UROCE_RUNDIR\n");
		return 2;
	}
	if (p && *p)
		port = (uint16_t)atoi(p);
	rc = uroce_ctx_open("uroce_lo", NULL, &ctx);
	CHECKF(rc == 0, "open uroce_lo: %d", rc);
	if (rc)
		return check_exit("net_drops");
	int n = uroce_ctx_gids(ctx, gids, 64);

	for (int i = 0; i < n; i++)
		if (gids[i].ipv4 && gids[i].type == UROCE_GID_V2)
			idx = i;
	CHECKF(idx >= 0, "no IPv4 RoCE v2 GID on uroce_lo (%d entries)", n);
	if (idx < 0)
		return check_exit("net_drops");

	/* The peer: a plain UDP socket on 127.0.0.2:port (lo answers for all of 127/8). */
	sock = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in me = {.sin_family = AF_INET, .sin_port = htons(port)};

	inet_pton(AF_INET, "127.0.0.2", &me.sin_addr);
	dev_addr = (struct sockaddr_in){.sin_family = AF_INET, .sin_port = htons(port)};
	inet_pton(AF_INET, "127.0.0.1", &dev_addr.sin_addr);
	rc = bind(sock, (struct sockaddr *)&me, sizeof(me));
	CHECKF(rc == 0, "bind 127.0.0.2:%u: %s", port, strerror(errno));
	if (rc)
		return check_exit("net_drops");

	uroce_ctx_lock(ctx);
	struct uroce_eng *e = uroce_ctx_eng(ctx);
	struct uroce_pd *pd;
	struct uroce_cq *cq;
	struct uroce_mr *mr;
	struct uroce_qp *rcqp, *udqp;
	struct uroce_qp_attr a = {.qp_state = UROCE_QPS_INIT, .port_num = 1, .qp_access_flags = 15};

	CHECK_EQ(uroce_pd_alloc(e, &pd), 0);
	CHECK_EQ(uroce_cq_create(e, 64, NULL, &cq), 0);
	CHECK_EQ(uroce_mr_reg(pd, mem, sizeof(mem), (uintptr_t)mem, 15, &mr), 0);
	struct uroce_qp_init rinit = {
		.type = UROCE_QPT_RC, .send_cq = cq, .recv_cq = cq, .cap = {16, 16, 1, 1, 0}};
	struct uroce_qp_init uinit = rinit;

	uinit.type = UROCE_QPT_UD;
	CHECK_EQ(uroce_qp_create(pd, &rinit, &rcqp), 0);
	CHECK_EQ(uroce_qp_create(pd, &uinit, &udqp), 0);

	CHECK(uroce_qp_modify(rcqp, &a,
			      UROCE_QP_STATE | UROCE_QP_PKEY_INDEX | UROCE_QP_PORT |
				      UROCE_QP_ACCESS_FLAGS) == 0);
	a.qp_state = UROCE_QPS_RTR;
	a.path_mtu = UROCE_MTU_1024;
	a.dest_qp_num = PEER_QPN;
	a.rq_psn = RC_PSN;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	a.av.is_global = true;
	a.av.sgid_index = (uint8_t)idx;
	a.av.hop_limit = 64;
	static const uint8_t peer_gid[16] = {[10] = 0xFF, [11] = 0xFF, 127, 0, 0, 2};

	memcpy(a.av.dgid, peer_gid, 16);
	CHECK(uroce_qp_modify(rcqp, &a,
			      UROCE_QP_STATE | UROCE_QP_AV | UROCE_QP_PATH_MTU | UROCE_QP_DEST_QPN |
				      UROCE_QP_RQ_PSN | UROCE_QP_MAX_DEST_RD_ATOMIC |
				      UROCE_QP_MIN_RNR_TIMER) == 0);
	a.qp_state = UROCE_QPS_RTS;
	a.sq_psn = 500;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 1;
	CHECK(uroce_qp_modify(rcqp, &a,
			      UROCE_QP_STATE | UROCE_QP_SQ_PSN | UROCE_QP_TIMEOUT |
				      UROCE_QP_RETRY_CNT | UROCE_QP_RNR_RETRY |
				      UROCE_QP_MAX_QP_RD_ATOMIC) == 0);

	struct uroce_qp_attr u = {.qp_state = UROCE_QPS_INIT, .port_num = 1, .qkey = UD_QKEY};

	CHECK(uroce_qp_modify(udqp, &u,
			      UROCE_QP_STATE | UROCE_QP_PKEY_INDEX | UROCE_QP_PORT |
				      UROCE_QP_QKEY) == 0);
	u.qp_state = UROCE_QPS_RTR;
	CHECK_EQ(uroce_qp_modify(udqp, &u, UROCE_QP_STATE), 0);
	u.qp_state = UROCE_QPS_RTS;
	u.sq_psn = 0;
	CHECK_EQ(uroce_qp_modify(udqp, &u, UROCE_QP_STATE | UROCE_QP_SQ_PSN), 0);
	uint32_t rcqpn = uroce_qp_num(rcqp), udqpn = uroce_qp_num(udqp);

	uroce_ctx_unlock(ctx);
	printf("device uroce_lo (GID index %d, port %u): RC QP 0x%06x, UD QP 0x%06x\n", idx, port,
	       rcqpn, udqpn);

	/* ---- bad input ---- */
	uint8_t pkt[1024], payload[32];
	size_t len;

	for (unsigned i = 0; i < sizeof(payload); i++)
		payload[i] = (uint8_t)(0xA0 + i);

	static const uint8_t tiny[5] = {0x04, 0, 0xFF, 0xFF, 0};

	expect_drop("garbage: 5 bytes", tiny, sizeof(tiny), -1, UROCE_IO_RX_DROP_MALFORMED);
	srand(1);
	for (unsigned i = 0; i < 64; i++)
		pkt[i] = (uint8_t)rand();
	expect_drop("garbage: 64 random bytes", pkt, 64, -1, UROCE_IO_RX_DROP_ICRC);

	len = build(pkt, sizeof(pkt), UROCE_OP_RC_SEND_ONLY, rcqpn, 0xFFFF, RC_PSN, 0, payload,
		    sizeof(payload));
	pkt[len - 1] ^= 0x01;
	expect_drop("RC SEND, ICRC off by one bit", pkt, len, -1, UROCE_IO_RX_DROP_ICRC);
	pkt[len - 1] ^= 0x01;
	pkt[20] ^= 0x40; /* a payload byte: the ICRC no longer matches */
	expect_drop("RC SEND, payload changed", pkt, len, -1, UROCE_IO_RX_DROP_ICRC);

	len = build(pkt, sizeof(pkt), UROCE_OP_RC_SEND_ONLY, 0xABCDEF, 0xFFFF, RC_PSN, 0, payload,
		    sizeof(payload));
	expect_drop("RC SEND to QP 0xabcdef (none)", pkt, len, UROCE_CNT_DROP_NO_QP, -1);
	len = build(pkt, sizeof(pkt), UROCE_OP_RC_SEND_ONLY, 0, 0xFFFF, RC_PSN, 0, payload,
		    sizeof(payload));
	expect_drop("RC SEND to QP0", pkt, len, UROCE_CNT_DROP_NO_QP, -1);

	len = build(pkt, sizeof(pkt), UROCE_OP_RC_SEND_ONLY, rcqpn, 0x0000, RC_PSN, 0, payload,
		    sizeof(payload));
	expect_drop("RC SEND, P_Key 0x0000", pkt, len, UROCE_CNT_DROP_BAD_PKEY, -1);
	len = build(pkt, sizeof(pkt), UROCE_OP_RC_SEND_ONLY, rcqpn, 0x8000, RC_PSN, 0, payload,
		    sizeof(payload));
	expect_drop("RC SEND, P_Key 0x8000", pkt, len, UROCE_CNT_DROP_BAD_PKEY, -1);
	len = build(pkt, sizeof(pkt), UROCE_OP_RC_SEND_ONLY, rcqpn, 0x9234, RC_PSN, 0, payload,
		    sizeof(payload));
	expect_drop("RC SEND, P_Key 0x9234 (other)", pkt, len, UROCE_CNT_DROP_BAD_PKEY, -1);
	len = build(pkt, sizeof(pkt), UROCE_OP_UD_SEND_ONLY, udqpn, 0x1234, 0, UD_QKEY, payload,
		    sizeof(payload));
	expect_drop("UD SEND, P_Key 0x1234 (other)", pkt, len, UROCE_CNT_DROP_BAD_PKEY, -1);

	len = build(pkt, sizeof(pkt), UROCE_OP_UD_SEND_ONLY, udqpn, 0xFFFF, 0, UD_QKEY ^ 1, payload,
		    sizeof(payload));
	expect_drop("UD SEND, Q_Key off by one", pkt, len, UROCE_CNT_DROP_BAD_QKEY, -1);
	len = build(pkt, sizeof(pkt), UROCE_OP_UD_SEND_ONLY, udqpn, 0xFFFF, 0, 0x80000000u, payload,
		    sizeof(payload));
	expect_drop("UD SEND, Q_Key 0x80000000", pkt, len, UROCE_CNT_DROP_BAD_QKEY, -1);

	len = build(pkt, sizeof(pkt), UROCE_OP_UD_SEND_ONLY, rcqpn, 0xFFFF, RC_PSN, UD_QKEY,
		    payload, sizeof(payload));
	expect_drop("UD SEND to the RC QP", pkt, len, UROCE_CNT_DROP_BAD_OPCODE, -1);

	/* ---- unharmed: good packets still work ---- */
	struct uroce_sge rs = wr_sge((uintptr_t)mem[0], sizeof(mem[0]), uroce_mr_lkey(mr));
	struct uroce_sge us = wr_sge((uintptr_t)mem[1], sizeof(mem[1]), uroce_mr_lkey(mr));
	struct uroce_recv_wr rwr = wr_recv(1, &rs, 1), *bad;
	struct uroce_recv_wr uwr = wr_recv(2, &us, 1);
	struct uroce_wc wc;

	uroce_ctx_lock(ctx);
	CHECK_EQ(uroce_post_recv(rcqp, &rwr, &bad), 0);
	CHECK_EQ(uroce_post_recv(udqp, &uwr, &bad), 0);
	uroce_ctx_unlock(ctx);
	drain(NULL, 0, NULL);

	len = build(pkt, sizeof(pkt), UROCE_OP_RC_SEND_ONLY, rcqpn, 0xFFFF, RC_PSN, 0, payload,
		    sizeof(payload));
	CHECK(sendto(sock, pkt, len, 0, (struct sockaddr *)&dev_addr, sizeof(dev_addr)) ==
	      (ssize_t)len);
	CHECK(wait_wc(cq, &wc) == 1 && wc.wr_id == 1 && wc.status == UROCE_WC_SUCCESS &&
	      wc.byte_len == sizeof(payload));
	CHECK_MEM_EQ(mem[0], payload, sizeof(payload));

	/* The device ACKs it to its peer, our socket. */
	uint8_t ack[256];
	ssize_t alen = 0;
	struct uroce_tpkt t;
	const char *why = NULL;
	bool acked = false;

	for (int i = 0; i < 200 && !acked; i++) {
		struct pollfd pf = {.fd = sock, .events = POLLIN};

		if (poll(&pf, 1, 10) <= 0)
			continue;
		alen = recv(sock, ack, sizeof(ack), 0);
		acked = alen > 0 && uroce_tpkt_decode(&t, ack, (size_t)alen, &why) == 0 &&
			t.bth.opcode == UROCE_OP_RC_ACK && t.bth.dqpn == PEER_QPN &&
			t.bth.psn == RC_PSN;
	}
	CHECKF(acked, "no ACK of PSN %u to QP 0x%06x on our socket", RC_PSN, PEER_QPN);
	if (acked)
		printf("good RC SEND: completed, %u bytes; ACK PSN %u received\n", wc.byte_len,
		       t.bth.psn);

	len = build(pkt, sizeof(pkt), UROCE_OP_UD_SEND_ONLY, udqpn, 0xFFFF, 7, UD_QKEY, payload,
		    sizeof(payload));
	CHECK(sendto(sock, pkt, len, 0, (struct sockaddr *)&dev_addr, sizeof(dev_addr)) ==
	      (ssize_t)len);
	CHECK(wait_wc(cq, &wc) == 1 && wc.wr_id == 2 && wc.status == UROCE_WC_SUCCESS &&
	      wc.byte_len == 40 + sizeof(payload) && wc.src_qp == PEER_QPN);
	CHECK_MEM_EQ(mem[1] + 40, payload, sizeof(payload));
	printf("good UD SEND: completed, %u bytes (GRH + payload) from QP 0x%06x\n", wc.byte_len,
	       wc.src_qp);

	uroce_ctx_close(ctx);
	close(sock);
	return check_exit("net_drops");
}
