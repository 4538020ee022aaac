/* SPDX-License-Identifier: MIT */
/* The liveness probes: see liveness.h. */
#include "liveness.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "../wr.h"
#include "wire/bytes.h"
#include "wire/opcode.h"
#include "wire/packet.h"
#include "wire/psn.h"

void live_init(struct live_set *s, struct sim_net *net)
{
	memset(s, 0, sizeof(*s));
	s->net = net;
}

int live_add(struct live_set *s, const struct live_qp *q)
{
	if (s->n == LIVE_MAX_QP)
		return -ENOSPC;
	struct live_qp *l = &s->q[s->n];

	*l = *q;
	l->fatal_seen = l->err_wc_seen = false;
	l->seq = 0;
	l->answered = l->acked = l->naked = 0;
	return s->n++;
}

int live_add_conn(struct live_set *s, const struct simqp *q, const struct simmr *m,
		  size_t probe_off, size_t recv_off)
{
	struct live_qp l;

	memset(&l, 0, sizeof(l));
	l.node = q->node;
	l.peer = !q->node;
	l.qp = q->qp;
	l.mem = m->buf + probe_off;
	l.va = simmr_va(m, probe_off);
	l.rkey = m->rkey;
	l.recv_va = simmr_va(m, recv_off);
	l.recv_lkey = m->lkey;
	l.rcq = q->rcq;
	return live_add(s, &l);
}

int live_add_ud(struct live_set *s, const struct simqp *q, uint32_t peer_qpn,
		const struct simmr *m)
{
	struct live_qp l;

	memset(&l, 0, sizeof(l));
	l.node = q->node;
	l.peer = !q->node;
	l.qp = q->qp;
	l.peer_qpn = peer_qpn;
	l.recv_va = simmr_va(m, 0);
	l.recv_lkey = m->lkey;
	l.rcq = q->rcq;
	return live_add(s, &l);
}

void live_events(struct live_set *s)
{
	struct uroce_event ev;

	for (int i = 0; i < s->net->nnodes; i++) {
		struct uroce_eng *e = s->net->node[i].eng;

		while (e && uroce_eng_poll_event(e, &ev) == 1) {
			s->events[(unsigned)ev.type < 16 ? (unsigned)ev.type : 15]++;
			if (ev.type != UROCE_EVENT_QP_FATAL && ev.type != UROCE_EVENT_QP_REQ_ERR &&
			    ev.type != UROCE_EVENT_QP_ACCESS_ERR)
				continue;
			for (int k = 0; k < s->n; k++)
				if (s->q[k].qp == ev.obj.qp)
					s->q[k].fatal_seen = true;
		}
	}
}

static struct uroce_eng *eng_of(struct live_set *s, const struct live_qp *l)
{
	return s->net->node[l->node].eng;
}

/* Hand t (with payload_len bytes of payload) to the QP's engine as its peer would. */
static int feed(struct live_set *s, const struct live_qp *l, struct uroce_tpkt *t,
		const uint8_t *payload)
{
	uint8_t buf[128];
	struct uroce_rx_pkt rx;
	int hl = uroce_tpkt_hdr_encode(buf, sizeof(buf), t);

	if (hl < 0)
		return hl;
	uint32_t pad = uroce_pad_len(t->payload_len);
	uint32_t len = (uint32_t)hl + t->payload_len + pad + UROCE_ICRC_LEN;

	if (len > sizeof(buf))
		return -EMSGSIZE;
	memcpy(buf + hl, payload, t->payload_len);
	memset(buf + hl + t->payload_len, 0, pad + UROCE_ICRC_LEN); /* the engine trusts the ICRC */
	memset(&rx, 0, sizeof(rx));
	rx.data = buf;
	rx.len = len;
	rx.encap = UROCE_ENCAP_V2_IPV4;
	sim_node_gid(s->net, l->peer, rx.sgid);
	sim_node_gid(s->net, l->node, rx.dgid);
	rx.grh[20] = 0x45;
	rx.grh[29] = 17;
	memcpy(rx.grh + 32, rx.sgid + 12, 4);
	memcpy(rx.grh + 36, rx.dgid + 12, 4);
	rx.sgid_index = s->net->node[l->node].sgid_index;
	return uroce_eng_rx(eng_of(s, l), s->net->now, &rx);
}

/* What came out of the QP's engine for an RC probe at psn. */
struct answer {
	bool acked, naked;
	int other; /* ACKs and NAKs of the QP that answer something else */
	uint8_t other_syn;
	uint32_t other_psn;
};

/*
 * Everything the engine has to send now: the QP's ACKs and NAKs are looked at and kept off the
 * network (they answer the probe, which the peer never sent); the rest goes out. With ans NULL
 * everything goes out.
 */
static void pump(struct live_set *s, const struct live_qp *l, uint32_t psn, struct answer *ans)
{
	struct uroce_eng *e = eng_of(s, l);
	struct uroce_tx_pkt pk[16];
	uint32_t qpn = uroce_qp_num(l->qp);
	int k;

	for (int guard = 0; guard < 100000 && (k = uroce_eng_tx(e, s->net->now, pk, 16)) > 0;
	     guard++) {
		for (int j = 0; j < k; j++) {
			const uint8_t *h = pk[j].hdr;

			if (ans && pk[j].src_qpn == qpn && h[0] == UROCE_OP_RC_ACK &&
			    pk[j].hdr_len >= UROCE_BTH_LEN + UROCE_AETH_LEN) {
				uint32_t p = uroce_get_be24(h + 9);
				uint8_t syn = h[UROCE_BTH_LEN];
				uint8_t type = syn & UROCE_AETH_TYPE_MASK;

				if (type == UROCE_AETH_ACK && uroce_psn_diff(p, psn) >= 0) {
					ans->acked = true;
				} else if ((type == UROCE_AETH_NAK || type == UROCE_AETH_RNR_NAK) &&
					   p == psn) {
					ans->naked = true;
				} else {
					ans->other++;
					ans->other_syn = syn;
					ans->other_psn = p;
				}
				continue;
			}
			sim_send(s->net, l->node, pk[j].av, pk[j].hdr, pk[j].hdr_len, pk[j].payload,
				 pk[j].payload_len, pk[j].pad, pk[j].src_qpn, pk[j].dst_qpn);
		}
	}
}

static int fail(char *why, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int fail(char *why, size_t n, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, n, fmt, ap);
	va_end(ap);
	return -EPROTO;
}

static void probe_bytes(struct live_qp *l, uint8_t b[LIVE_PROBE_LEN])
{
	uroce_put_be32(b, 0x4C495645); /* "LIVE" */
	uroce_put_be32(b + 4, uroce_qp_num(l->qp) << 12 ^ ++l->seq);
}

static bool in_probe_state(enum uroce_qp_state st)
{
	return st == UROCE_QPS_RTR || st == UROCE_QPS_RTS || st == UROCE_QPS_SQD ||
	       st == UROCE_QPS_SQE;
}

/* Post the receive a SEND probe lands in; false when the receive queue has no room. */
static bool post_probe_recv(struct live_qp *l, uint32_t len)
{
	struct uroce_sge sge = wr_sge(l->recv_va, len, l->recv_lkey);
	struct uroce_recv_wr wr = wr_recv(LIVE_WR_ID + l->seq, &sge, 1), *bad = NULL;

	return uroce_post_recv(l->qp, &wr, &bad) == 0;
}

/* Drain the receive CQ: true when a receive of len bytes completed successfully. */
static bool probe_received(struct live_set *s, struct live_qp *l, uint32_t len)
{
	struct uroce_wc wc;
	bool got = false;

	while (uroce_cq_poll(l->rcq, 1, &wc) == 1) {
		if (wc.status != UROCE_WC_SUCCESS && wc.qp_num == uroce_qp_num(l->qp))
			l->err_wc_seen = true;
		if (!got && wc.status == UROCE_WC_SUCCESS && wc.qp_num == uroce_qp_num(l->qp) &&
		    (wc.opcode & UROCE_WC_RECV) && wc.byte_len == len) {
			got = true;
			if ((wc.wr_id & ~0xFFFFFFFFull) == LIVE_WR_ID)
				continue;
		}
		if (s->on_wc)
			s->on_wc(s->on_wc_arg, &wc);
	}
	return got;
}

static void bth(struct uroce_tpkt *t, const struct live_qp *l, uint8_t op, uint32_t psn)
{
	memset(t, 0, sizeof(*t));
	t->bth.opcode = op;
	t->bth.pkey = UROCE_DEFAULT_PKEY;
	t->bth.dqpn = uroce_qp_num(l->qp);
	t->bth.psn = psn;
	t->bth.ackreq = true;
	t->payload_len = LIVE_PROBE_LEN;
}

/* One RC probe: 0 answered, 1 the QP went to ERR answering it, or -EPROTO. */
static int probe_rc(struct live_set *s, struct live_qp *l, bool send, char *why, size_t n)
{
	struct uroce_qp_attr a;
	struct uroce_tpkt t;
	struct answer ans = {0};
	uint8_t b[LIVE_PROBE_LEN];

	uroce_qp_query(l->qp, &a, NULL);
	uint32_t psn = a.rq_psn;

	probe_bytes(l, b);
	if (send && !post_probe_recv(l, LIVE_PROBE_LEN))
		send = false;
	bth(&t, l, send ? UROCE_OP_RC_SEND_ONLY : UROCE_OP_RC_WRITE_ONLY, psn);
	t.reth.va = l->va;
	t.reth.rkey = l->rkey;
	t.reth.len = LIVE_PROBE_LEN;
	int rc = feed(s, l, &t, b);

	if (rc)
		return fail(why, n, "%s probe at PSN %#x dropped on receipt (%d)",
			    send ? "SEND" : "WRITE", psn, rc);
	pump(s, l, psn, &ans);
	live_events(s);
	if (!ans.acked && !ans.naked) {
		if (ans.other)
			return fail(why, n,
				    "%s probe at PSN %#x unanswered; %d other ACK/NAK (last syndrome "
				    "%#x PSN %#x)",
				    send ? "SEND" : "WRITE", psn, ans.other, ans.other_syn,
				    ans.other_psn);
		return fail(why, n, "%s probe at PSN %#x unanswered", send ? "SEND" : "WRITE",
			    psn);
	}
	l->answered++;
	if (ans.naked) {
		l->naked++;
		return uroce_qp_state(l->qp) == UROCE_QPS_ERR ? 1 : 0;
	}
	l->acked++;
	if (send) {
		if (!probe_received(s, l, LIVE_PROBE_LEN))
			return fail(why, n, "SEND probe at PSN %#x acknowledged, no receive", psn);
	} else if (memcmp(l->mem, b, LIVE_PROBE_LEN) != 0) {
		return fail(why, n, "WRITE probe at PSN %#x acknowledged, not in memory", psn);
	}
	uroce_qp_query(l->qp, &a, NULL);
	if (a.rq_psn != uroce_psn_add(psn, 1))
		return fail(why, n, "probe at PSN %#x acknowledged, expected PSN now %#x", psn,
			    a.rq_psn);
	return 0;
}

static int probe_uc(struct live_set *s, struct live_qp *l, char *why, size_t n)
{
	struct uroce_qp_attr a;
	struct uroce_tpkt t;
	uint8_t b[LIVE_PROBE_LEN];

	uroce_qp_query(l->qp, &a, NULL);
	probe_bytes(l, b);
	bth(&t, l, UROCE_OP_UC_WRITE_ONLY, a.rq_psn);
	t.reth.va = l->va;
	t.reth.rkey = l->rkey;
	t.reth.len = LIVE_PROBE_LEN;
	if (feed(s, l, &t, b) || memcmp(l->mem, b, LIVE_PROBE_LEN) != 0)
		return fail(why, n, "UC WRITE Only at PSN %#x not in memory", a.rq_psn);
	pump(s, l, 0, NULL);
	if (!l->rcq)
		return 0;
	probe_bytes(l, b);
	if (!post_probe_recv(l, LIVE_PROBE_LEN))
		return 0;
	uroce_qp_query(l->qp, &a, NULL);
	bth(&t, l, UROCE_OP_UC_SEND_ONLY, a.rq_psn);
	if (feed(s, l, &t, b) || !probe_received(s, l, LIVE_PROBE_LEN))
		return fail(why, n, "UC SEND Only at PSN %#x not received", a.rq_psn);
	pump(s, l, 0, NULL);
	return 0;
}

static int probe_ud(struct live_set *s, struct live_qp *l, char *why, size_t n)
{
	struct uroce_qp_attr a;
	struct uroce_tpkt t;
	uint8_t b[LIVE_PROBE_LEN];

	if (!l->rcq)
		return 0;
	probe_bytes(l, b);
	if (!post_probe_recv(l, 40 + LIVE_PROBE_LEN))
		return 0;
	uroce_qp_query(l->qp, &a, NULL);
	bth(&t, l, UROCE_OP_UD_SEND_ONLY, l->seq);
	t.deth.qkey = a.qkey;
	t.deth.src_qp = l->peer_qpn;
	if (feed(s, l, &t, b) || !probe_received(s, l, 40 + LIVE_PROBE_LEN))
		return fail(why, n, "UD SEND Only not received");
	return 0;
}

static int check_one(struct live_set *s, struct live_qp *l, char *why, size_t n)
{
	struct uroce_qp_init init;
	enum uroce_qp_state st = uroce_qp_state(l->qp);
	int rc;

	if (st == UROCE_QPS_ERR) {
		if (!l->fatal_seen && !l->err_wc_seen)
			return fail(why, n, "in ERR, and no async event or error completion said so");
		return 0;
	}
	if (!in_probe_state(st))
		return 0;
	pump(s, l, 0, NULL); /* what the engine had to send before the probe */
	uroce_qp_query(l->qp, NULL, &init);
	switch (init.type) {
	case UROCE_QPT_RC:
		rc = probe_rc(s, l, false, why, n);
		if (rc == 0 && in_probe_state(uroce_qp_state(l->qp)))
			rc = probe_rc(s, l, l->rcq != NULL, why, n);
		if (rc == 1 && !l->fatal_seen)
			return fail(why, n, "NAK'd a probe and went to ERR without an async event");
		return rc < 0 ? rc : 0;
	case UROCE_QPT_UC:
		return probe_uc(s, l, why, n);
	case UROCE_QPT_UD:
	case UROCE_QPT_GSI:
		return probe_ud(s, l, why, n);
	}
	return 0;
}

static const char *const state_names[] = {"RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR"};

int live_check(struct live_set *s, char *why, size_t why_len)
{
	char w[192];

	live_events(s);
	for (int i = 0; i < s->n; i++) {
		struct live_qp *l = &s->q[i];
		enum uroce_qp_state st = uroce_qp_state(l->qp);

		if (check_one(s, l, w, sizeof(w)) == 0)
			continue;
		snprintf(why, why_len, "QP %d (%#x, node %d, %s): %s", i, uroce_qp_num(l->qp),
			 l->node, (unsigned)st < 7 ? state_names[st] : "?", w);
		return -EPROTO;
	}
	return 0;
}
