/* SPDX-License-Identifier: MIT */
/*
 * The simulated link on its own, with hand-made transport packets and nodes without engines:
 * framing and ICRC, delivery time, MTU, loss, duplication, reordering, corruption (every flip the
 * ICRC covers is dropped), scripted rules, determinism.
 */
#include <string.h>

#include "../check.h"
#include "simlink.h"
#include "wire/bytes.h"
#include "wire/icrc.h"

#define MAXREC 4096

struct rec {
	uint64_t at;
	int node;
	uint32_t psn;
	uint32_t len;
	uint8_t data[2048];
	uint8_t grh[40];
	uint8_t sgid[16], dgid[16];
	uint8_t sgid_index;
};

static struct rec recs[MAXREC];
static int nrec;
static struct sim_net *cur;

static void hook(void *arg, int node, const struct uroce_rx_pkt *p)
{
	struct rec *r;
	struct uroce_bth bth;

	(void)arg;
	if (nrec >= MAXREC)
		return;
	r = &recs[nrec++];
	r->at = cur->now;
	r->node = node;
	r->len = p->len;
	memcpy(r->data, p->data, p->len < sizeof(r->data) ? p->len : sizeof(r->data));
	memcpy(r->grh, p->grh, 40);
	memcpy(r->sgid, p->sgid, 16);
	memcpy(r->dgid, p->dgid, 16);
	r->sgid_index = p->sgid_index;
	uroce_bth_decode(&bth, p->data, p->len);
	r->psn = bth.psn;
}

/* An RC SEND_ONLY (or UD SEND_ONLY with DETH) header with psn; returns the header length. */
static uint32_t mk_hdr(uint8_t *hdr, uint8_t opcode, uint32_t psn, uint32_t payload_len)
{
	struct uroce_tpkt t;

	memset(&t, 0, sizeof(t));
	t.bth.opcode = opcode;
	t.bth.pkey = 0xFFFF;
	t.bth.dqpn = 0x12;
	t.bth.psn = psn;
	t.deth.qkey = 0x11111111;
	t.deth.src_qp = 0x34;
	t.payload_len = payload_len;
	return (uint32_t)uroce_tpkt_hdr_encode(hdr, UROCE_TX_HDR_MAX, &t);
}

static int send_one(struct sim_net *n, int a, int b, uint8_t op, uint32_t psn, uint32_t plen)
{
	struct uroce_av av;
	uint8_t hdr[UROCE_TX_HDR_MAX], payload[2048];
	uint32_t hl = mk_hdr(hdr, op, psn, plen);

	for (uint32_t i = 0; i < plen; i++)
		payload[i] = (uint8_t)(psn + i);
	sim_av(n, a, b, &av);
	return sim_send(n, a, &av, hdr, hl, payload, plen, uroce_pad_len(plen), 0x34, 0x12);
}

static void setup(struct sim_net *n, uint64_t seed)
{
	CHECK_EQ(sim_net_init(n, seed, 4096, 2000), 0);
	CHECK_EQ(sim_node_add(n, NULL, 1), 0);
	CHECK_EQ(sim_node_add(n, NULL, 1), 1);
	n->node[0].rx_hook = hook;
	n->node[1].rx_hook = hook;
	cur = n;
	nrec = 0;
}

static void test_framing(void)
{
	struct sim_net n;
	uint8_t gid[16];
	struct uroce_tpkt t;
	const char *err;

	setup(&n, 1);
	n.now = 5000;
	CHECK_EQ(send_one(&n, 0, 1, UROCE_OP_UD_SEND_ONLY, 77, 13), 0);
	CHECK_EQ(sim_in_flight(&n), 1);
	CHECK_EQ(sim_run(&n, 1000000), SIM_QUIESCENT);
	CHECK_EQ(nrec, 1);
	CHECK_EQ(recs[0].at, 6000); /* default delay 1 us */
	CHECK_EQ(recs[0].node, 1);
	CHECK_EQ(recs[0].len, 12 + 8 + 13 + 3 + 4);
	CHECK_EQ(uroce_tpkt_decode(&t, recs[0].data, recs[0].len, &err), 0);
	CHECK(t.bth.opcode == UROCE_OP_UD_SEND_ONLY && t.bth.psn == 77 && t.payload_len == 13);
	CHECK(t.deth.qkey == 0x11111111 && t.deth.src_qp == 0x34);
	for (int i = 0; i < 13; i++)
		CHECK_EQ(t.payload[i], (uint8_t)(77 + i));
	/* GRH slot: 20 bytes then an IPv4 header with a valid checksum. */
	CHECK_EQ(recs[0].grh[20], 0x45);
	CHECK_EQ(uroce_ipv4_csum(recs[0].grh + 20), uroce_get_be16(recs[0].grh + 30));
	CHECK_EQ(recs[0].grh[29], 17);
	CHECK_EQ(uroce_get_be16(recs[0].grh + 22), 20 + 8 + recs[0].len);
	CHECK_EQ(uroce_get_be16(recs[0].grh + 26), 0x4000);
	sim_node_gid(&n, 0, gid);
	CHECK_MEM_EQ(recs[0].sgid, gid, 16);
	CHECK(gid[10] == 0xFF && gid[11] == 0xFF && gid[12] == 198 && gid[13] == 18 && gid[15] == 1);
	CHECK_MEM_EQ(recs[0].grh + 32, gid + 12, 4); /* IPv4 source */
	sim_node_gid(&n, 1, gid);
	CHECK_MEM_EQ(recs[0].dgid, gid, 16);
	CHECK_EQ(recs[0].sgid_index, 1);
	CHECK(n.st[0][1].sent == 1 && n.st[0][1].delivered == 1 && n.st[0][1].icrc_drops == 0);
	sim_net_free(&n);
}

static void test_timing_mtu(void)
{
	struct sim_net n;
	struct sim_link_cfg c;

	setup(&n, 2);
	sim_link_cfg_default(&c);
	c.delay_ns = 10000;
	c.bandwidth_bps = 8000000000ull; /* 1 byte per ns */
	c.mtu = 1024 + 20 + 8 + 12 + 4;
	sim_link_set_all(&n, &c);
	CHECK_EQ(send_one(&n, 0, 1, UROCE_OP_RC_SEND_ONLY, 1, 1024), 0);
	CHECK_EQ(send_one(&n, 0, 1, UROCE_OP_RC_SEND_ONLY, 2, 1024), 0);
	CHECK_EQ(send_one(&n, 0, 1, UROCE_OP_RC_SEND_ONLY, 3, 1025), 0); /* too big */
	CHECK_EQ(send_one(&n, 1, 0, UROCE_OP_RC_SEND_ONLY, 4, 0), 0);	/* other direction */
	CHECK_EQ(sim_run(&n, UINT64_MAX - 1), SIM_QUIESCENT);
	CHECK_EQ(nrec, 3);
	CHECK_EQ(n.st[0][1].mtu_drops, 1);
	/* 0->1: frame of 14 + 20 + 8 + 12 + 1024 + 4 = 1082 bytes, serialised one after another */
	CHECK(recs[0].node == 0 && recs[0].at == 10000 + 14 + 20 + 8 + 12 + 4);
	CHECK(recs[1].psn == 1 && recs[1].at == 1082 + 10000);
	CHECK(recs[2].psn == 2 && recs[2].at == 2 * 1082 + 10000);
	sim_net_free(&n);
}

static void test_loss_dup_reorder(void)
{
	struct sim_net n;
	struct sim_link_cfg c;
	int reordered = 0;

	setup(&n, 3);
	sim_link_cfg_default(&c);
	c.loss_ppm = 100000;
	c.dup_ppm = 100000;
	c.reorder_ppm = 200000;
	c.reorder_max_ns = 5000;
	sim_link_set_all(&n, &c);
	for (uint32_t i = 0; i < 2000; i++) {
		CHECK_EQ(send_one(&n, 0, 1, UROCE_OP_RC_SEND_ONLY, i, i % 64), 0);
		n.now += 100;
		sim_run(&n, n.now);
	}
	CHECK_EQ(sim_run(&n, UINT64_MAX - 1), SIM_QUIESCENT);
	struct sim_link_stats *s = &n.st[0][1];
	CHECK_EQ(s->sent, 2000);
	CHECK(s->lost > 120 && s->lost < 280);
	CHECK(s->duplicated > 120 && s->duplicated < 280);
	CHECK(s->reordered > 300 && s->reordered < 500);
	CHECK_EQ(s->delivered, s->sent - s->lost + s->duplicated);
	CHECK_EQ((uint64_t)nrec, s->delivered);
	for (int i = 1; i < nrec; i++) {
		CHECK_GE(recs[i].at, recs[i - 1].at);
		if (recs[i].psn < recs[i - 1].psn)
			reordered++;
	}
	CHECK_GT(reordered, 50);
	sim_net_free(&n);
}

static void test_corruption(void)
{
	struct sim_net n;
	struct sim_link_cfg c;
	struct sim_link_stats *s;

	/* Random flips anywhere: everything is caught except the fields the ICRC does not cover,
	 * which are checked otherwise (MAC, IPv4 checksum, UDP checksum) or harmless (BTH byte 4,
	 * source MAC). */
	setup(&n, 4);
	sim_link_cfg_default(&c);
	c.corrupt_ppm = 1000000;
	sim_link_set_all(&n, &c);
	for (uint32_t i = 0; i < 3000; i++)
		send_one(&n, 0, 1, UROCE_OP_RC_SEND_ONLY, i, i % 300);
	CHECK_EQ(sim_run(&n, UINT64_MAX - 1), SIM_QUIESCENT);
	s = &n.st[0][1];
	CHECK_EQ(s->corrupted, 3000);
	CHECK_GE(s->corrupt_covered, 2500);
	CHECK_GE(s->icrc_drops, s->corrupt_covered); /* every covered flip fails the ICRC */
	CHECK_EQ(s->icrc_drops + s->hdr_drops + s->corrupt_accepted, 3000);
	CHECK_EQ(s->delivered, s->corrupt_accepted);
	CHECK_LT(s->corrupt_accepted, 100);
	for (int i = 0; i < nrec; i++) {
		/* what got through is byte-exact apart from BTH byte 4 */
		struct uroce_tpkt t;
		const char *err;

		CHECK_EQ(uroce_tpkt_decode(&t, recs[i].data, recs[i].len, &err), 0);
		for (uint32_t j = 0; j < t.payload_len; j++)
			CHECK_EQ(t.payload[j], (uint8_t)(t.bth.psn + j));
	}
	sim_net_free(&n);

	/* Rule-driven corruption flips one covered bit: always an ICRC drop. */
	setup(&n, 5);
	struct sim_rule r = {
		.src = 0, .dst = -1, .opcode = -1, .nth = 1, .count = 0, .verdict = SIM_CORRUPT};
	sim_rule_add(&n, &r);
	for (uint32_t i = 0; i < 500; i++)
		send_one(&n, 0, 1, UROCE_OP_RC_SEND_ONLY, i, i);
	CHECK_EQ(sim_run(&n, UINT64_MAX - 1), SIM_QUIESCENT);
	s = &n.st[0][1];
	CHECK(s->corrupted == 500 && s->corrupt_covered == 500 && s->icrc_drops == 500);
	CHECK_EQ(nrec, 0);
	sim_net_free(&n);
}

static void test_rules(void)
{
	struct sim_net n;

	setup(&n, 6);
	CHECK_EQ(sim_rule_nth(&n, 0, UROCE_OP_RC_SEND_ONLY, 3, SIM_DROP), 0);
	CHECK_EQ(sim_rule_nth(&n, 0, UROCE_OP_RC_SEND_ONLY, 5, SIM_DUP), 1);
	struct sim_rule r = {.src = -1,
			     .dst = -1,
			     .opcode = UROCE_OP_RC_ACK,
			     .nth = 1,
			     .count = 2,
			     .verdict = SIM_DELAY,
			     .delay_ns = 50000};
	CHECK_EQ(sim_rule_add(&n, &r), 2);
	for (uint32_t i = 1; i <= 6; i++)
		send_one(&n, 0, 1, UROCE_OP_RC_SEND_ONLY, i, 4);
	CHECK_EQ(sim_run(&n, UINT64_MAX - 1), SIM_QUIESCENT);
	CHECK_EQ(nrec, 6);
	uint32_t want[] = {1, 2, 4, 5, 5, 6};
	for (int i = 0; i < 6 && i < nrec; i++)
		CHECK_EQ(recs[i].psn, want[i]);
	CHECK(n.rule[0].hits == 1 && n.rule[1].hits == 1 && n.rule[0].seen == 6);
	CHECK(n.st[0][1].filtered == 1 && n.st[0][1].duplicated == 1);
	sim_net_free(&n);
}

static uint64_t run_trace(uint64_t seed)
{
	struct sim_net n;
	struct sim_link_cfg c;
	uint64_t h = 1469598103934665603ull;

	setup(&n, seed);
	sim_link_cfg_default(&c);
	c.loss_ppm = 50000;
	c.dup_ppm = 50000;
	c.reorder_ppm = 50000;
	c.corrupt_ppm = 50000;
	sim_link_set_all(&n, &c);
	for (uint32_t i = 0; i < 500; i++) {
		send_one(&n, (int)(i & 1), (int)(~i & 1), UROCE_OP_RC_SEND_ONLY, i, i % 100);
		n.now += 300;
		sim_run(&n, n.now);
	}
	sim_run(&n, UINT64_MAX - 1);
	for (int i = 0; i < nrec; i++) {
		h = (h ^ recs[i].at) * 1099511628211ull;
		h = (h ^ recs[i].psn) * 1099511628211ull;
	}
	sim_net_free(&n);
	return h;
}

static void test_determinism(void)
{
	CHECK_EQ(run_trace(42), run_trace(42));
	CHECK_NE(run_trace(42), run_trace(43));
}

static void test_rng(void)
{
	struct sim_rng r;
	uint64_t hist[10] = {0};

	sim_rng_seed(&r, 7);
	for (int i = 0; i < 100000; i++)
		hist[sim_rng_below(&r, 10)]++;
	for (int i = 0; i < 10; i++)
		CHECK(hist[i] > 9500 && hist[i] < 10500);
}

int main(void)
{
	test_rng();
	test_framing();
	test_timing_mtu();
	test_loss_dup_reorder();
	test_corruption();
	test_rules();
	test_determinism();
	return check_exit("sim_link");
}
