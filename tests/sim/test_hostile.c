/* SPDX-License-Identifier: MIT */
/*
 * Hostile peers (issue 21, item 1): well-formed RoCE v2 packets, valid ICRC, with random BTH,
 * extension-header and payload fields, thrown at one side of a connected pair; after every
 * small burst each QP must still answer its legitimate peer (liveness.h) or be in ERR in a way
 * the application sees. Then the scripted cases of what such traffic wedged, each reproduced
 * on its own.
 *
 * Scenarios (seeded, deterministic; UROCE_HOSTILE_SEED=s replays one seed, UROCE_HOSTILE_N=n
 * sets the packets per seed):
 *   responder   random requests at B's RC, UC and UD QPs, near and far from the expected PSN;
 *               a QP that goes to ERR is brought back through RESET, as an application would
 *   requester   random ACKs, NAKs and read and atomic responses at A while A streams work to B
 *               over a live link; every 200 packets, left alone, every work request completes
 *               exactly once, in order, within 5 s of virtual time (retry_cnt 3: a forged ACK
 *               can acknowledge what B never got, B then drops A's retries as out of sequence,
 *               and only the retry limit ends that); a pair in ERR is reconnected
 * and, scripted: ibv_query_qp's live PSNs, a UC FIRST inside an open message, a sustained
 * stream of duplicate READs while the requester's own READs go on.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"
#include "liveness.h"
#include "simenv.h"
#include "wire/bytes.h"
#include "wire/opcode.h"
#include "wire/psn.h"

#define A     0
#define B     1
#define MRLEN (128 * 1024)
#define US    1000ull
#define MS    1000000ull
#define SEC   1000000000ull
#define NRECV 16
#define RLEN  4096

/* Probe areas at the end of each region. */
#define PROBE_RC      (MRLEN - 64)
#define PROBE_UC      (MRLEN - 48)
#define PROBE_RC_RECV (MRLEN - 32)
#define PROBE_UC_RECV (MRLEN - 16)

static const char *cur_test;

struct hx {
	struct simenv s;
	struct simqp_cfg c, uc_c, ud_c;
	struct simqp rc[2], uc[2], ud[2];
	struct simmr m[2], mud;
	struct live_set live;
	struct sim_rng rng;
	uint64_t recv_id;
	int kills, revived;
	int failures_at_start;
};

static void post_recvs(struct hx *h, struct simqp *q, int n, size_t base)
{
	for (int i = 0; i < n; i++)
		if (sim_post_recv1(q->qp, h->recv_id++, &h->m[q->node], base + (size_t)(i % 8) * RLEN,
				   RLEN))
			break;
}

static void live_setup(struct hx *h, int node, bool with_others)
{
	live_add_conn(&h->live, &h->rc[node], &h->m[node], PROBE_RC, PROBE_RC_RECV);
	if (!with_others)
		return;
	live_add_conn(&h->live, &h->uc[node], &h->m[node], PROBE_UC, PROBE_UC_RECV);
	live_add_ud(&h->live, &h->ud[node], uroce_qp_num(h->ud[!node].qp), &h->mud);
}

static void hx_init(struct hx *h, uint64_t seed, uint8_t retry)
{
	memset(h, 0, sizeof(*h));
	h->failures_at_start = check_failures;
	sim_rng_seed(&h->rng, seed);
	CHECK_EQ(simenv_init(&h->s, seed, 4096, 9000), 0);
	simqp_cfg_default(&h->c, UROCE_QPT_RC);
	h->c.max_rd_atomic = 4;
	h->c.timeout = 8;
	h->c.cap.max_send_wr = 64;
	h->c.cap.max_recv_wr = 64;
	h->c.retry_cnt = retry;
	h->c.rnr_retry = retry;
	simqp_cfg_default(&h->uc_c, UROCE_QPT_UC);
	h->uc_c.cap = h->c.cap;
	h->uc_c.access = UROCE_ACCESS_LOCAL_WRITE | UROCE_ACCESS_REMOTE_WRITE;
	simqp_cfg_default(&h->ud_c, UROCE_QPT_UD);
	h->ud_c.cap = h->c.cap;
	for (int i = 0; i < 2; i++) {
		CHECK_EQ(simmr_reg(&h->s, i, MRLEN, h->c.access, &h->m[i]), 0);
		CHECK_EQ(simqp_create(&h->s, i, &h->c, 256, NULL, &h->rc[i]), 0);
		CHECK_EQ(simqp_create(&h->s, i, &h->uc_c, 256, NULL, &h->uc[i]), 0);
		CHECK_EQ(simqp_create(&h->s, i, &h->ud_c, 256, NULL, &h->ud[i]), 0);
	}
	CHECK_EQ(simmr_reg(&h->s, B, RLEN + 40, UROCE_ACCESS_LOCAL_WRITE, &h->mud), 0);
	CHECK_EQ(simqp_connect(&h->s, &h->rc[A], &h->rc[B], &h->c), 0);
	CHECK_EQ(simqp_connect(&h->s, &h->uc[A], &h->uc[B], &h->uc_c), 0);
	CHECK_EQ(simqp_connect(&h->s, &h->ud[A], &h->ud[B], &h->ud_c), 0);
	CHECK_BAIL();
	live_init(&h->live, &h->s.net);
}

static void hx_fini(struct hx *h)
{
	for (int i = 0; i < 2; i++)
		CHECKF(simmr_guard_ok(&h->m[i]), "%s: guard of node %d", cur_test, i);
	CHECKF(simmr_guard_ok(&h->mud), "%s: UD guard", cur_test);
	if (check_failures != h->failures_at_start)
		for (int i = 0; i < 2; i++) {
			fprintf(stderr, "  %s: node %d counters:", cur_test, i);
			for (int c = 0; c < UROCE_CNT_MAX; c++)
				if (uroce_eng_counter(h->s.eng[i], (enum uroce_counter)c))
					fprintf(stderr, " %s=%llu", uroce_counter_names[c],
						(unsigned long long)uroce_eng_counter(
							h->s.eng[i], (enum uroce_counter)c));
			fputc('\n', stderr);
		}
	for (int i = 0; i < 2; i++) {
		simqp_destroy(&h->rc[i]);
		simqp_destroy(&h->uc[i]);
		simqp_destroy(&h->ud[i]);
		simmr_free(&h->m[i]);
	}
	simmr_free(&h->mud);
	simenv_fini(&h->s);
	CHECK_BAIL();
}

static uint64_t cnt(struct hx *h, int node, enum uroce_counter c)
{
	return uroce_eng_counter(h->s.eng[node], c);
}

static uint32_t expected_psn(struct uroce_qp *qp)
{
	struct uroce_qp_attr a;

	uroce_qp_query(qp, &a, NULL);
	return a.rq_psn;
}

/* ---- random packets ---------------------------------------------------------------------- */

static uint64_t rnd(struct hx *h, uint64_t n)
{
	return sim_rng_below(&h->rng, n);
}

/* A PSN near base (before or after it), at it, or anywhere. */
static uint32_t pick_psn(struct hx *h, uint32_t base)
{
	switch (rnd(h, 6)) {
	case 0:
	case 1:
		return base;
	case 2:
		return uroce_psn_add(base, 1 + (uint32_t)rnd(h, 8));
	case 3:
		return uroce_psn_sub(base, 1 + (uint32_t)rnd(h, 64));
	case 4:
		return uroce_psn_add(base, (uint32_t)rnd(h, 1u << 24)); /* anywhere */
	default:
		return uroce_psn_sub(base, 64 + (uint32_t)rnd(h, 1u << 22)); /* far back */
	}
}

/* A VA and R_Key: the target's region (often), or anything. */
static void pick_va(struct hx *h, const struct simmr *m, bool aligned, uint64_t *va, uint32_t *rkey)
{
	*va = rnd(h, 3) ? simmr_va(m, rnd(h, MRLEN)) : sim_rng_next(&h->rng);
	if (aligned && rnd(h, 4))
		*va &= ~7ull;
	*rkey = rnd(h, 5) ? m->rkey : (uint32_t)sim_rng_next(&h->rng);
}

static uint32_t pick_len(struct hx *h, uint32_t payload)
{
	switch (rnd(h, 5)) {
	case 0:
		return payload;
	case 1:
		return (uint32_t)rnd(h, 16);
	case 2:
		return (uint32_t)rnd(h, 64 * 1024);
	case 3:
		return (uint32_t)sim_rng_next(&h->rng); /* huge */
	default:
		return payload + 1024 * (uint32_t)rnd(h, 8);
	}
}

/* Send one random packet of opcode class cls (from opcodes, or any byte) from `from` to QP
 * dqpn, whose PSN reference is base and whose region is m. */
static void send_random(struct hx *h, int from, uint32_t dqpn, uint32_t base, const struct simmr *m,
			const uint8_t *ops, int nops)
{
	static uint8_t payload[2048];
	struct uroce_tpkt t;
	struct uroce_av av;
	uint8_t hdr[UROCE_TX_HDR_MAX];
	uint8_t op = rnd(h, 20) ? ops[rnd(h, (uint64_t)nops)] : (uint8_t)rnd(h, 256);

	memset(&t, 0, sizeof(t));
	t.bth.opcode = op;
	t.bth.se = rnd(h, 2);
	t.bth.mig = rnd(h, 2);
	t.bth.pkey = rnd(h, 50) ? UROCE_DEFAULT_PKEY : (uint16_t)rnd(h, 65536);
	t.bth.dqpn = rnd(h, 50) ? dqpn : (uint32_t)rnd(h, 1u << 24);
	t.bth.ackreq = rnd(h, 3) != 0;
	t.bth.psn = pick_psn(h, base);
	switch (rnd(h, 6)) {
	case 0:
		t.payload_len = 0;
		break;
	case 1:
		t.payload_len = (uint32_t)rnd(h, 17);
		break;
	case 2:
	case 3:
		t.payload_len = 1024; /* the path MTU: FIRST and MIDDLE carry exactly this */
		break;
	default:
		t.payload_len = (uint32_t)rnd(h, 1300);
	}
	if (!(uroce_opinfo[op].flags & UROCE_OPF_PAYLOAD))
		t.payload_len = 0;
	pick_va(h, m, false, &t.reth.va, &t.reth.rkey);
	t.reth.len = pick_len(h, t.payload_len);
	pick_va(h, m, true, &t.atmeth.va, &t.atmeth.rkey);
	t.atmeth.swap_add = sim_rng_next(&h->rng);
	t.atmeth.compare = rnd(h, 2) ? 0 : sim_rng_next(&h->rng);
	t.aeth.syndrome = (uint8_t)rnd(h, 256);
	t.aeth.msn = (uint32_t)rnd(h, 1u << 24);
	t.atmack = sim_rng_next(&h->rng);
	t.imm = (uint32_t)sim_rng_next(&h->rng);
	t.ieth = rnd(h, 2) ? m->rkey : (uint32_t)sim_rng_next(&h->rng);
	t.deth.qkey = rnd(h, 4) ? h->ud_c.qkey : (uint32_t)sim_rng_next(&h->rng);
	t.deth.src_qp = (uint32_t)rnd(h, 1u << 24);
	int hl = uroce_tpkt_hdr_encode(hdr, sizeof(hdr), &t);

	if (hl < 0)
		return; /* an opcode the codec does not know: the engine never sees it either */
	uint8_t pad = uroce_pad_len(t.payload_len);

	if (rnd(h, 4) == 0) { /* a pad count that does not round the payload to 4 bytes */
		pad = (uint8_t)rnd(h, 4);
		hdr[1] = (uint8_t)((hdr[1] & ~0x30) | pad << 4);
	}
	if (t.bth.psn == base && (uroce_opinfo[op].flags & UROCE_OPF_REQ) && rnd(h, 2)) {
		/* Half the requests at the expected PSN are plausible: right key, in bounds,
		 * consistent lengths, so the responder accepts them and goes deeper (open
		 * messages, read and atomic resources) instead of failing at once. */
		unsigned f = uroce_opinfo[op].flags;

		t.bth.pkey = UROCE_DEFAULT_PKEY;
		t.bth.dqpn = dqpn;
		if (!(f & UROCE_OPF_LAST) && t.payload_len)
			t.payload_len = 1024;
		t.reth.rkey = t.atmeth.rkey = m->rkey;
		t.reth.len = f & UROCE_OPF_READ ? (uint32_t)rnd(h, 32 * 1024)
			     : f & UROCE_OPF_LAST ? t.payload_len
						  : t.payload_len + (uint32_t)rnd(h, 4096);
		t.reth.va = simmr_va(m, rnd(h, MRLEN - 40 * 1024));
		t.atmeth.va = simmr_va(m, rnd(h, MRLEN / 8) * 8);
		hl = uroce_tpkt_hdr_encode(hdr, sizeof(hdr), &t);
		if (hl < 0)
			return;
	}
	sim_rng_fill(&h->rng, payload, t.payload_len);
	sim_av(&h->s.net, from, !from, &av);
	sim_send(&h->s.net, from, &av, hdr, (uint32_t)hl, payload, t.payload_len, pad, 0x99,
		 t.bth.dqpn);
}

/* ---- the invariant ----------------------------------------------------------------------- */

static void check_live(struct hx *h, int iter)
{
	char why[256];

	if (live_check(&h->live, why, sizeof(why)) == 0)
		return;
	CHECKF(false, "%s: after packet %d: %s", cur_test, iter, why);
	sim_trace_print(&h->s.net, stderr);
	CHECK_BAIL();
}

/* B's QP back from ERR through RESET, as an application does: it expects from a new PSN. */
static void revive(struct hx *h, struct simqp *q, const struct simqp_cfg *c, struct simqp *peer)
{
	struct uroce_qp_attr a;
	struct simqp_cfg cc = *c;

	memset(&a, 0, sizeof(a));
	a.qp_state = UROCE_QPS_RESET;
	CHECK_EQ(uroce_qp_modify(q->qp, &a, UROCE_QP_STATE), 0);
	CHECK_EQ(simqp_to_init(q, &cc), 0);
	if (c->type == UROCE_QPT_UD) {
		a.qp_state = UROCE_QPS_RTR;
		CHECK_EQ(uroce_qp_modify(q->qp, &a, UROCE_QP_STATE), 0);
	} else {
		CHECK_EQ(simqp_to_rtr(&h->s, q, peer->node, uroce_qp_num(peer->qp),
				      (uint32_t)rnd(h, 1u << 24), &cc),
			 0);
	}
	CHECK_EQ(simqp_to_rts(q, (uint32_t)rnd(h, 1u << 24), &cc), 0);
	for (int i = 0; i < h->live.n; i++)
		if (h->live.q[i].qp == q->qp)
			h->live.q[i].fatal_seen = h->live.q[i].err_wc_seen = false;
	h->revived++;
}

static void drain(struct uroce_cq *cq)
{
	struct uroce_wc wc[32];

	while (uroce_cq_poll(cq, 32, wc) > 0)
		;
}

/* ---- scenario: hostile requests at a responder ------------------------------------------- */

static const uint8_t rc_req_ops[] = {
	UROCE_OP_RC_SEND_FIRST,	      UROCE_OP_RC_SEND_MIDDLE,	   UROCE_OP_RC_SEND_LAST,
	UROCE_OP_RC_SEND_LAST_IMM,    UROCE_OP_RC_SEND_ONLY,	   UROCE_OP_RC_SEND_ONLY_IMM,
	UROCE_OP_RC_WRITE_FIRST,      UROCE_OP_RC_WRITE_MIDDLE,	   UROCE_OP_RC_WRITE_LAST,
	UROCE_OP_RC_WRITE_LAST_IMM,   UROCE_OP_RC_WRITE_ONLY,	   UROCE_OP_RC_WRITE_ONLY_IMM,
	UROCE_OP_RC_READ_REQ,	      UROCE_OP_RC_CMP_SWAP,	   UROCE_OP_RC_FETCH_ADD,
	UROCE_OP_RC_SEND_LAST_INV,    UROCE_OP_RC_SEND_ONLY_INV,   UROCE_OP_RC_READ_RESP_ONLY,
	UROCE_OP_RC_ACK,
};

static const uint8_t uc_ops[] = {
	UROCE_OP_UC_SEND_FIRST,	    UROCE_OP_UC_SEND_MIDDLE,  UROCE_OP_UC_SEND_LAST,
	UROCE_OP_UC_SEND_LAST_IMM,  UROCE_OP_UC_SEND_ONLY,    UROCE_OP_UC_SEND_ONLY_IMM,
	UROCE_OP_UC_WRITE_FIRST,    UROCE_OP_UC_WRITE_MIDDLE, UROCE_OP_UC_WRITE_LAST,
	UROCE_OP_UC_WRITE_LAST_IMM, UROCE_OP_UC_WRITE_ONLY,   UROCE_OP_UC_WRITE_ONLY_IMM,
};

static const uint8_t ud_ops[] = {UROCE_OP_UD_SEND_ONLY, UROCE_OP_UD_SEND_ONLY_IMM};

static void scenario_responder(uint64_t seed, int npkts)
{
	struct hx h;
	struct sim_link_cfg down;

	cur_test = "hostile requests at a responder";
	hx_init(&h, seed, 7);
	live_setup(&h, B, true);
	/* A's packets reach B; B's answers go nowhere (A's QPs are not part of this). */
	sim_link_cfg_default(&down);
	down.down = true;
	sim_link_set(&h.s.net, B, A, &down);
	post_recvs(&h, &h.rc[B], NRECV, 0);
	post_recvs(&h, &h.uc[B], NRECV, 0);
	for (int i = 0; i < NRECV; i++)
		CHECK_EQ(sim_post_recv1(h.ud[B].qp, 900 + (uint64_t)i, &h.mud, 0, RLEN + 40), 0);
	for (int i = 0; i < npkts; i++) {
		int k = (int)rnd(&h, 10);

		if (k < 7)
			send_random(&h, A, uroce_qp_num(h.rc[B].qp), expected_psn(h.rc[B].qp),
				    &h.m[B], rc_req_ops, sizeof(rc_req_ops));
		else if (k < 9)
			send_random(&h, A, uroce_qp_num(h.uc[B].qp), expected_psn(h.uc[B].qp),
				    &h.m[B], uc_ops, sizeof(uc_ops));
		else
			send_random(&h, A, uroce_qp_num(h.ud[B].qp), 0, &h.mud, ud_ops,
				    sizeof(ud_ops));
		if (rnd(&h, 4))
			continue; /* bursts of about four packets */
		sim_run_for(&h.s.net, 20 * US);
		check_live(&h, i);
		/* the application: takes its completions, reposts, brings dead QPs back */
		struct simqp *qs[3] = {&h.rc[B], &h.uc[B], &h.ud[B]};
		const struct simqp_cfg *cs[3] = {&h.c, &h.uc_c, &h.ud_c};
		struct simqp *peers[3] = {&h.rc[A], &h.uc[A], &h.ud[A]};

		for (int q = 0; q < 3; q++) {
			drain(qs[q]->rcq);
			drain(qs[q]->scq);
			if (uroce_qp_state(qs[q]->qp) == UROCE_QPS_ERR) {
				h.kills++;
				revive(&h, qs[q], cs[q], peers[q]);
				if (q == 2)
					for (int r = 0; r < NRECV; r++)
						sim_post_recv1(h.ud[B].qp, 900 + (uint64_t)r,
							       &h.mud, 0, RLEN + 40);
				else
					post_recvs(&h, qs[q], NRECV, 0);
			} else if (q < 2) {
				post_recvs(&h, qs[q], 2, 0);
			} else {
				sim_post_recv1(h.ud[B].qp, 900, &h.mud, 0, RLEN + 40);
			}
		}
	}
	sim_run_for(&h.s.net, 20 * US);
	check_live(&h, npkts);
	printf("  seed %llu: %d packets at B: RC probes answered %llu (%llu ACK, %llu NAK), "
	       "QPs to ERR and back %d; B sent %llu ACKs, %llu NAKs, %llu read/atomic replays, "
	       "%llu duplicates, %llu out of sequence\n",
	       (unsigned long long)seed, npkts, (unsigned long long)h.live.q[0].answered,
	       (unsigned long long)h.live.q[0].acked, (unsigned long long)h.live.q[0].naked,
	       h.kills, (unsigned long long)cnt(&h, B, UROCE_CNT_SENT_ACKS),
	       (unsigned long long)cnt(&h, B, UROCE_CNT_SENT_NAKS),
	       (unsigned long long)(cnt(&h, B, UROCE_CNT_READ_REPLAYED) +
				    cnt(&h, B, UROCE_CNT_ATOMIC_REPLAYED)),
	       (unsigned long long)cnt(&h, B, UROCE_CNT_DUPLICATE_REQUEST),
	       (unsigned long long)cnt(&h, B, UROCE_CNT_OUT_OF_SEQ_REQUEST));
	hx_fini(&h);
}

/* ---- scenario: hostile responses at a requester with work outstanding --------------------- */

static const uint8_t rc_resp_ops[] = {
	UROCE_OP_RC_ACK,	       UROCE_OP_RC_ACK,		     UROCE_OP_RC_ATOMIC_ACK,
	UROCE_OP_RC_READ_RESP_FIRST,   UROCE_OP_RC_READ_RESP_MIDDLE, UROCE_OP_RC_READ_RESP_LAST,
	UROCE_OP_RC_READ_RESP_ONLY,    UROCE_OP_RC_SEND_ONLY,
};

struct req_track {
	uint64_t posted, completed; /* wr_ids 0 .. posted-1; completed in order */
	uint64_t ok, err;
};

static void post_work(struct hx *h, struct req_track *r, int n)
{
	for (int i = 0; i < n; i++) {
		uint64_t id = r->posted;
		uint32_t len = (uint32_t)rnd(h, 6000);
		size_t off = (size_t)rnd(h, 8) * 8192;
		int rc;

		switch (rnd(h, 5)) {
		case 0:
			rc = sim_post_send1(h->rc[A].qp, id, UROCE_WR_SEND, &h->m[A], off, len,
					    UROCE_SEND_SIGNALED);
			break;
		case 1:
			rc = sim_post_write(h->rc[A].qp, id, UROCE_WR_RDMA_READ, &h->m[A], off, len,
					    simmr_va(&h->m[B], off), h->m[B].rkey,
					    UROCE_SEND_SIGNALED, 0);
			break;
		case 2:
			rc = sim_post_atomic(h->rc[A].qp, id, UROCE_WR_ATOMIC_FETCH_AND_ADD, &h->m[A],
					     off, simmr_va(&h->m[B], off), h->m[B].rkey, 1, 0,
					     UROCE_SEND_SIGNALED);
			break;
		default:
			rc = sim_post_write(h->rc[A].qp, id, UROCE_WR_RDMA_WRITE, &h->m[A], off, len,
					    simmr_va(&h->m[B], off), h->m[B].rkey,
					    UROCE_SEND_SIGNALED, 0);
		}
		if (rc)
			return; /* the send queue is full */
		r->posted++;
	}
}

/* Every completion of A's send queue: its work requests, each once, in order. */
static void take_completions(struct hx *h, struct req_track *r)
{
	struct uroce_wc wc;

	while (uroce_cq_poll(h->rc[A].scq, 1, &wc) == 1) {
		CHECKF(wc.wr_id == r->completed, "%s: completion of wr %llu, expected %llu (%s)",
		       cur_test, (unsigned long long)wc.wr_id, (unsigned long long)r->completed,
		       sim_wc_status_name(wc.status));
		r->completed = wc.wr_id + 1;
		if (wc.status == UROCE_WC_SUCCESS) {
			r->ok++;
		} else {
			r->err++;
			h->live.q[0].err_wc_seen = true;
		}
	}
	drain(h->rc[B].rcq);
}

/* The pair anew, both sides from fresh PSNs, as an application reconnects: A's work flushed
 * through ERR first (RESET would take its completions away). */
static void reconnect(struct hx *h, struct req_track *r)
{
	struct simqp_cfg c = h->c;
	struct uroce_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.qp_state = UROCE_QPS_ERR;
	CHECK_EQ(uroce_qp_modify(h->rc[A].qp, &a, UROCE_QP_STATE), 0);
	take_completions(h, r);
	CHECKF(r->completed == r->posted, "%s: %llu of %llu work requests completed after ERR",
	       cur_test, (unsigned long long)r->completed, (unsigned long long)r->posted);
	c.psn[0] = (uint32_t)rnd(h, 1u << 24);
	c.psn[1] = (uint32_t)rnd(h, 1u << 24);
	memset(&a, 0, sizeof(a));
	a.qp_state = UROCE_QPS_RESET;
	CHECK_EQ(uroce_qp_modify(h->rc[A].qp, &a, UROCE_QP_STATE), 0);
	CHECK_EQ(uroce_qp_modify(h->rc[B].qp, &a, UROCE_QP_STATE), 0);
	CHECK_EQ(simqp_connect(&h->s, &h->rc[A], &h->rc[B], &c), 0);
	h->live.q[0].fatal_seen = h->live.q[0].err_wc_seen = false;
	post_recvs(h, &h->rc[B], 64, 0);
	h->revived++;
}

static void scenario_requester(uint64_t seed, int npkts)
{
	struct hx h;
	struct req_track r = {0};
	uint64_t drained_at = 0;

	cur_test = "hostile responses at a requester";
	/* Finite retries: a forged ACK may acknowledge what B never got, and B then drops
	 * the retries as out of sequence; the requester must end that with an error. */
	hx_init(&h, seed, 3);
	live_setup(&h, A, false);
	post_recvs(&h, &h.rc[B], 64, 0);
	for (int i = 0; i < npkts; i++) {
		if (r.posted - r.completed < 16 && uroce_qp_state(h.rc[A].qp) == UROCE_QPS_RTS)
			post_work(&h, &r, 8);
		/* responses near what A has outstanding (B expects from A's oldest unanswered
		 * request on), and anywhere */
		uint32_t base = uroce_psn_sub(expected_psn(h.rc[B].qp), (uint32_t)rnd(&h, 8));

		send_random(&h, B, uroce_qp_num(h.rc[A].qp), base, &h.m[A], rc_resp_ops,
			    sizeof(rc_resp_ops));
		sim_run_for(&h.s.net, rnd(&h, 30) * US);
		take_completions(&h, &r);
		post_recvs(&h, &h.rc[B], 4, 0);
		if (rnd(&h, 8) == 0)
			check_live(&h, i);
		if (i - (int)drained_at < 200 && i + 1 < npkts)
			continue;
		/* Quiet now: everything posted completes (or fails) in bounded time. */
		drained_at = (uint64_t)i;
		enum sim_result res = sim_run_for(&h.s.net, 5 * SEC);

		take_completions(&h, &r);
		CHECKF(res == SIM_QUIESCENT && r.completed == r.posted,
		       "%s: after packet %d: %s, %llu of %llu work requests completed", cur_test,
		       i, sim_result_name(res), (unsigned long long)r.completed,
		       (unsigned long long)r.posted);
		check_live(&h, i);
		CHECK_BAIL();
		if (uroce_qp_state(h.rc[A].qp) == UROCE_QPS_ERR ||
		    uroce_qp_state(h.rc[B].qp) == UROCE_QPS_ERR) {
			h.kills++;
			reconnect(&h, &r);
		}
	}
	printf("  seed %llu: %d packets at A: %llu work requests, %llu succeeded, %llu failed, "
	       "pair reconnected %d times; A probes answered %llu; A counted %llu duplicate "
	       "responses, %llu retries\n",
	       (unsigned long long)seed, npkts, (unsigned long long)r.posted,
	       (unsigned long long)r.ok, (unsigned long long)r.err, h.kills,
	       (unsigned long long)h.live.q[0].answered,
	       (unsigned long long)cnt(&h, A, UROCE_CNT_DROP_DUPLICATE_RESP),
	       (unsigned long long)cnt(&h, A, UROCE_CNT_LOCAL_ACK_TIMEOUT_ERR));
	hx_fini(&h);
}

/* ---- scripted: what the hostile traffic wedged, one case each ------------------------------ */

/* Feed one hand-made packet to node `to` as if from its peer, through the network. */
/* Send t (with payload) from `from` to the other node, then run the network for dt. */
static void inject_for(struct hx *h, int from, struct uroce_tpkt *t, const uint8_t *payload,
		       uint64_t dt)
{
	struct uroce_av av;
	uint8_t hdr[UROCE_TX_HDR_MAX];
	int hl = uroce_tpkt_hdr_encode(hdr, sizeof(hdr), t);

	CHECK_GT(hl, 0);
	sim_av(&h->s.net, from, !from, &av);
	CHECK_EQ(sim_send(&h->s.net, from, &av, hdr, (uint32_t)hl, payload, t->payload_len,
			  uroce_pad_len(t->payload_len), 0x99, t->bth.dqpn),
		 0);
	sim_run_for(&h->s.net, dt);
}

static void inject(struct hx *h, int from, struct uroce_tpkt *t, const uint8_t *payload)
{
	inject_for(h, from, t, payload, 20 * US);
}

/* ibv_query_qp's PSNs are the live ones: the responder's expected PSN after traffic, the
 * requester's next PSN (they were the values set at RTR and RTS, so a peer that resumed at the
 * reported PSN was answered as a duplicate, or not at all). */
static void test_query_live_psn(void)
{
	struct hx h;
	struct uroce_qp_attr a;

	cur_test = "query reports the live PSNs";
	hx_init(&h, 7, 7);
	for (int i = 0; i < 3; i++)
		CHECK_EQ(sim_post_write(h.rc[A].qp, (uint64_t)i, UROCE_WR_RDMA_WRITE, &h.m[A], 0, 3000,
					simmr_va(&h.m[B], 0), h.m[B].rkey, UROCE_SEND_SIGNALED, 0),
			 0);
	CHECK(sim_run_for(&h.s.net, 10 * MS) == SIM_QUIESCENT);
	CHECK_EQ(uroce_qp_query(h.rc[B].qp, &a, NULL), 0);
	CHECK_EQ(a.rq_psn, uroce_psn_add(h.c.psn[0], 9)); /* 3 writes of 3 packets */
	CHECK_EQ(a.sq_psn, h.c.psn[1]);			   /* B sent no request */
	CHECK_EQ(uroce_qp_query(h.rc[A].qp, &a, NULL), 0);
	CHECK_EQ(a.sq_psn, uroce_psn_add(h.c.psn[0], 9));
	CHECK_EQ(a.rq_psn, h.c.psn[1]);
	hx_fini(&h);
}

/* UC: a SEND First whose message never ends, then a SEND Only in sequence: the open message is
 * dropped (counted) and the Only is received (it was dropped, and so was every later message). */
static void test_uc_first_inside_message(void)
{
	struct hx h;
	struct uroce_tpkt t;
	struct uroce_wc wc;
	static uint8_t pl[1024];
	uint32_t psn;

	cur_test = "UC: FIRST or ONLY inside an open message starts the next";
	hx_init(&h, 8, 7);
	CHECK_EQ(sim_post_recv1(h.uc[B].qp, 1, &h.m[B], 0, RLEN), 0);
	psn = expected_psn(h.uc[B].qp);
	memset(&t, 0, sizeof(t));
	t.bth.opcode = UROCE_OP_UC_SEND_FIRST;
	t.bth.pkey = UROCE_DEFAULT_PKEY;
	t.bth.dqpn = uroce_qp_num(h.uc[B].qp);
	t.bth.psn = psn;
	t.payload_len = 1024;
	memset(pl, 0x11, sizeof(pl));
	inject(&h, A, &t, pl);
	uint64_t drops = cnt(&h, B, UROCE_CNT_DROP_UC_SEQ);

	t.bth.opcode = UROCE_OP_UC_SEND_ONLY;
	t.bth.psn = uroce_psn_add(psn, 1);
	t.payload_len = 100;
	memset(pl, 0x22, 100);
	inject(&h, A, &t, pl);
	CHECK_EQ(cnt(&h, B, UROCE_CNT_DROP_UC_SEQ), drops + 1);
	CHECK_EQ(uroce_cq_poll(h.uc[B].rcq, 1, &wc), 1);
	CHECK(wc.wr_id == 1 && wc.status == UROCE_WC_SUCCESS && wc.byte_len == 100);
	CHECK_MEM_EQ(h.m[B].buf, pl, 100);
	/* and a FIRST inside it: the same */
	CHECK_EQ(sim_post_recv1(h.uc[B].qp, 2, &h.m[B], 0, RLEN), 0);
	t.bth.opcode = UROCE_OP_UC_SEND_FIRST;
	t.bth.psn = uroce_psn_add(psn, 2);
	t.payload_len = 1024;
	inject(&h, A, &t, pl);
	t.bth.psn = uroce_psn_add(psn, 3);
	inject(&h, A, &t, pl);
	t.bth.opcode = UROCE_OP_UC_SEND_LAST;
	t.bth.psn = uroce_psn_add(psn, 4);
	t.payload_len = 10;
	inject(&h, A, &t, pl);
	CHECK_EQ(uroce_cq_poll(h.uc[B].rcq, 1, &wc), 1);
	CHECK(wc.wr_id == 2 && wc.status == UROCE_WC_SUCCESS && wc.byte_len == 1034);
	hx_fini(&h);
}

/*
 * A sustained stream of duplicate READ requests (IBTA 9.9.3.1.3: each one restarts the
 * responses from its PSN), for the whole READ and from its middle, 1 us apart, while the
 * requester's own READs go on: the responder replays each from the one read resource the READ
 * holds, and the requester's new READs take the resources in turn, the replayed one too when
 * its turn comes (a replay does not make them fail as over the limit); every READ the
 * requester posted completes, in order, with the right bytes, and both QPs answer afterwards.
 */
static void test_duplicate_read_stream(void)
{
	const uint32_t len = 64 * 1024; /* 64 responses at the path MTU of 1024 */
	const int ndup = 2000;
	struct hx h;
	struct uroce_tpkt t;
	struct uroce_wc wc;
	uint32_t first;
	uint64_t replayed, unexpected;
	int posted = 0, done = 0;

	cur_test = "a stream of duplicate READs";
	hx_init(&h, 9, 7);
	live_setup(&h, A, false);
	live_setup(&h, B, false);
	sim_pattern(h.m[B].buf, len, 41);
	first = expected_psn(h.rc[B].qp);
	CHECK_EQ(sim_post_write(h.rc[A].qp, 0, UROCE_WR_RDMA_READ, &h.m[A], 0, len,
				simmr_va(&h.m[B], 0), h.m[B].rkey, UROCE_SEND_SIGNALED, 0),
		 0);
	posted++;
	CHECK(sim_run_for(&h.s.net, 10 * MS) == SIM_QUIESCENT);
	memset(&t, 0, sizeof(t));
	t.bth.opcode = UROCE_OP_RC_READ_REQ;
	t.bth.pkey = UROCE_DEFAULT_PKEY;
	t.bth.dqpn = uroce_qp_num(h.rc[B].qp);
	t.bth.ackreq = true;
	t.reth.va = simmr_va(&h.m[B], 0);
	t.reth.rkey = h.m[B].rkey;
	t.reth.len = len;
	replayed = cnt(&h, B, UROCE_CNT_READ_REPLAYED);
	unexpected = cnt(&h, B, UROCE_CNT_DROP_UNEXPECTED);
	for (int i = 0; i < ndup; i++) {
		uint32_t k = i % 3 ? 0 : (uint32_t)(i % 64);

		/* from response k on: the RETH of that point, as a requester resuming sends */
		t.bth.psn = uroce_psn_add(first, k);
		t.reth.va = simmr_va(&h.m[B], (size_t)k * 1024);
		t.reth.len = len - k * 1024;
		inject_for(&h, A, &t, NULL, 1 * US);
		if (i % 200 == 100) { /* a READ of the requester's own, 4 KiB of B's next bytes */
			size_t off = len + (size_t)(posted % 8) * 4096;

			sim_pattern(h.m[B].buf + off, 4096, 100 + (uint64_t)posted);
			CHECK_EQ(sim_post_write(h.rc[A].qp, (uint64_t)posted, UROCE_WR_RDMA_READ,
						&h.m[A], off, 4096, simmr_va(&h.m[B], off),
						h.m[B].rkey, UROCE_SEND_SIGNALED, 0),
				 0);
			posted++;
		}
		while (uroce_cq_poll(h.rc[A].scq, 1, &wc) == 1) {
			CHECKF(wc.wr_id == (uint64_t)done && wc.status == UROCE_WC_SUCCESS,
			       "READ %llu status %d, expected READ %d", (unsigned long long)wc.wr_id,
			       wc.status, done);
			done++;
		}
	}
	/* Replayed while the READ holds its resource; dropped once the requester's fourth new READ
	 * took it (max_dest_rd_atomic 4): a requester within its limit is done with it then. */
	CHECK_GT(cnt(&h, B, UROCE_CNT_READ_REPLAYED) - replayed, 0);
	CHECK_EQ(cnt(&h, B, UROCE_CNT_READ_REPLAYED) - replayed +
			 cnt(&h, B, UROCE_CNT_DROP_UNEXPECTED) - unexpected,
		 (uint64_t)ndup);
	CHECK(sim_run_for(&h.s.net, 100 * MS) == SIM_QUIESCENT);
	while (uroce_cq_poll(h.rc[A].scq, 1, &wc) == 1) {
		CHECKF(wc.wr_id == (uint64_t)done && wc.status == UROCE_WC_SUCCESS,
		       "READ %llu status %d, expected READ %d", (unsigned long long)wc.wr_id,
		       wc.status, done);
		if (wc.wr_id)
			CHECK(sim_pattern_ok(h.m[A].buf + len + (size_t)(wc.wr_id % 8) * 4096, 4096,
					     100 + wc.wr_id));
		done++;
	}
	CHECK_EQ(done, posted);
	CHECK(sim_pattern_ok(h.m[A].buf, len, 41));
	CHECK_EQ(uroce_qp_state(h.rc[A].qp), UROCE_QPS_RTS);
	CHECK_EQ(uroce_qp_state(h.rc[B].qp), UROCE_QPS_RTS);
	check_live(&h, ndup);
	printf("  %d duplicate READs of 64 KiB: %llu replays, %llu after its resource went, B sent "
	       "%llu packets, A dropped %llu duplicate responses, %d READs of A's completed\n",
	       ndup, (unsigned long long)(cnt(&h, B, UROCE_CNT_READ_REPLAYED) - replayed),
	       (unsigned long long)(cnt(&h, B, UROCE_CNT_DROP_UNEXPECTED) - unexpected),
	       (unsigned long long)cnt(&h, B, UROCE_CNT_SENT_PKTS),
	       (unsigned long long)cnt(&h, A, UROCE_CNT_DROP_DUPLICATE_RESP), done);
	hx_fini(&h);
}

int main(int argc, char **argv)
{
	const char *only = argc > 1 ? argv[1] : NULL;
	const char *e = getenv("UROCE_HOSTILE_SEED");
	int n = getenv("UROCE_HOSTILE_N") ? atoi(getenv("UROCE_HOSTILE_N")) : 3000;
	uint64_t seeds[] = {1, 2, 3};
	int nseeds = 3;

	if (e) {
		seeds[0] = strtoull(e, NULL, 0);
		nseeds = 1;
	}
	if (!only || !strcmp(only, "query_live_psn"))
		test_query_live_psn();
	if (!only || !strcmp(only, "uc_first_inside_message"))
		test_uc_first_inside_message();
	if (!only || !strcmp(only, "duplicate_read_stream"))
		test_duplicate_read_stream();
	for (int i = 0; i < nseeds; i++)
		if (!only || !strcmp(only, "responder"))
			scenario_responder(seeds[i], n);
	for (int i = 0; i < nseeds; i++)
		if (!only || !strcmp(only, "requester"))
			scenario_requester(seeds[i], n / 3);
	return check_exit("sim_hostile");
}
