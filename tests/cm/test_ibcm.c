/* SPDX-License-Identifier: MIT */
/*
 * cm/ibcm.h, the IB CM protocol engine, in a deterministic simulation: two engines (active A
 * and passive P) joined by an in-test link with virtual time. The send callback decodes every
 * MAD the engine sends (uroce_cm_mad_decode, an independent check of the framing), logs it and
 * queues it; the run loop delivers queued MADs, fires timers at the engines' next deadlines and
 * runs scheduled application actions, always picking the earliest. The link can drop (by a
 * seeded PRNG, by attribute, or everything from a node), duplicate and reorder (jitter).
 *
 * Scripted tests check exact event sequences, MADs, TIDs, comm IDs and virtual times for each
 * protocol path; the soak runs many seeds x loss rates with duplication and reordering and
 * checks that every connection ends consistently on both sides and that no conn leaks.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "cm/ibcm.h"
#include "cm/msg.h"
#include "wire/bytes.h"

#define MS   1000000ull
#define T0   (1000 * MS) /* virtual time starts here, not at 0 */
#define LAT  (1 * MS)	 /* one-way link latency */
#define NNOD 2

static const char *const ev_names[] = {
	[UROCE_IBCM_EV_REQ_RECEIVED] = "REQ_RECEIVED",
	[UROCE_IBCM_EV_REP_RECEIVED] = "REP_RECEIVED",
	[UROCE_IBCM_EV_RTU_RECEIVED] = "RTU_RECEIVED",
	[UROCE_IBCM_EV_REJ_RECEIVED] = "REJ_RECEIVED",
	[UROCE_IBCM_EV_MRA_RECEIVED] = "MRA_RECEIVED",
	[UROCE_IBCM_EV_REQ_ERROR] = "REQ_ERROR",
	[UROCE_IBCM_EV_REP_ERROR] = "REP_ERROR",
	[UROCE_IBCM_EV_DREQ_RECEIVED] = "DREQ_RECEIVED",
	[UROCE_IBCM_EV_DREP_RECEIVED] = "DREP_RECEIVED",
	[UROCE_IBCM_EV_DREQ_ERROR] = "DREQ_ERROR",
	[UROCE_IBCM_EV_TIMEWAIT_EXIT] = "TIMEWAIT_EXIT",
	[UROCE_IBCM_EV_SIDR_REQ_RECEIVED] = "SIDR_REQ_RECEIVED",
	[UROCE_IBCM_EV_SIDR_REP_RECEIVED] = "SIDR_REP_RECEIVED",
	[UROCE_IBCM_EV_SIDR_REQ_ERROR] = "SIDR_REQ_ERROR",
};
#define NEV (sizeof(ev_names) / sizeof(ev_names[0]))

/* ---- the simulated world ------------------------------------------------------------------ */

struct txrec {
	uint64_t at;
	uint8_t raw[UROCE_MAD_LEN];
	struct uroce_cm_mad m;
};

struct evrec {
	uint64_t at;
	enum uroce_ibcm_event_type type;
	struct uroce_ibcm_conn *conn;
	enum uroce_ibcm_state state; /* the conn's state when reported */
	void *user;
	bool has_msg;
	struct uroce_cm_mad msg;
};

enum req_action { REQ_ACCEPT, REQ_REJECT, REQ_MRA, REQ_IGNORE, REQ_DESTROY };
enum rep_action { REP_RTU, REP_IGNORE, REP_MRA, REP_DESTROY };

/* What a node's application does on each event (the scripted tests' peers). */
struct policy {
	enum req_action on_req;
	uint16_t rej_reason;
	const uint8_t *rej_ari;
	size_t rej_ari_len;
	const uint8_t *rej_pdata;
	size_t rej_len;
	uint8_t mra_timeout;
	enum rep_action on_rep;
	bool ignore_dreq;     /* DREQ_RECEIVED: leave it in DREQ_RCVD */
	bool destroy_on_dreq; /* DREQ_RECEIVED: destroy (which answers the DREP) */
	bool destroy_on_mra;
	bool keep;	    /* do not destroy conns on their final events */
	bool ignore_sidr;   /* SIDR_REQ_RECEIVED: leave it in SIDR_REQ_RCVD */
	bool advance_in_cb; /* call uroce_ibcm_advance from inside every callback */
	struct uroce_ibcm_conn *destroy_other; /* destroyed from inside the next event */
};

struct sim;

struct node {
	struct sim *s;
	int idx;
	struct uroce_ibcm *cm;
	uint8_t gid[16];
	uint64_t guid;
	uint32_t hi_tid;
	uint32_t prefix;
	struct uroce_ibcm_timing t; /* for REP (passive) */
	struct txrec *tx;
	size_t ntx, ctx;
	struct evrec *ev;
	size_t nev, cev;
	struct policy pol;
	bool send_fail;
	struct uroce_ibcm_conn *last_new; /* the conn of the last REQ/SIDR_REQ_RECEIVED */
	void (*hook)(struct node *n, const struct uroce_ibcm_event *ev);
};

struct pkt {
	uint64_t at, seq;
	int src, dst;
	uint8_t mad[UROCE_MAD_LEN];
};

struct action {
	uint64_t at, seq;
	int kind, idx, arg;
};

struct sim {
	uint64_t now, seq, rng;
	struct node n[NNOD];
	struct pkt *q;
	size_t nq, cq;
	struct action *act;
	size_t nact, cact;
	unsigned loss_pct, dup_pct;
	uint64_t jitter;
	bool drop_all[NNOD];
	unsigned drop_next[NNOD][16]; /* per sender and attribute (attr - 0x10): drop the next n */
	void (*on_action)(struct sim *s, const struct action *a);
	void *app;
};

static uint64_t rnd(struct sim *s)
{
	uint64_t x = s->rng;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	s->rng = x;
	return x * 0x2545F4914F6CDD1Dull;
}

static void *grow(void *p, size_t *cap, size_t need, size_t elem)
{
	if (need <= *cap)
		return p;
	*cap = *cap ? *cap * 2 : 16;
	if (*cap < need)
		*cap = need;
	p = realloc(p, *cap * elem);
	if (!p) {
		fprintf(stderr, "out of memory\n");
		exit(2);
	}
	return p;
}

static struct uroce_ibcm_addr addr_of(const struct node *n)
{
	struct uroce_ibcm_addr a;

	memset(&a, 0, sizeof(a));
	memcpy(a.dgid, n->gid, 16);
	a.hop_limit = 64;
	return a;
}

static struct uroce_ibcm_addr addr_nowhere(void)
{
	struct uroce_ibcm_addr a;

	memset(&a, 0, sizeof(a));
	a.dgid[0] = 0xFE;
	a.dgid[15] = 0x99;
	return a;
}

static void enqueue(struct sim *s, int src, int dst, const uint8_t *mad, uint64_t at)
{
	struct pkt *p;

	s->q = grow(s->q, &s->cq, s->nq + 1, sizeof(*s->q));
	p = &s->q[s->nq++];
	p->at = at;
	p->seq = s->seq++;
	p->src = src;
	p->dst = dst;
	memcpy(p->mad, mad, UROCE_MAD_LEN);
}

static void schedule(struct sim *s, uint64_t at, int kind, int idx, int arg)
{
	struct action *a;

	s->act = grow(s->act, &s->cact, s->nact + 1, sizeof(*s->act));
	a = &s->act[s->nact++];
	a->at = at;
	a->seq = s->seq++;
	a->kind = kind;
	a->idx = idx;
	a->arg = arg;
}

/* The engine's send callback: decode (must succeed), log, then the link's fate. */
static int node_send(void *arg, const struct uroce_ibcm_addr *to, const uint8_t *mad)
{
	struct node *n = arg;
	struct sim *s = n->s;
	struct txrec *r;
	int dst = -1;
	unsigned copies = 1;

	n->tx = grow(n->tx, &n->ctx, n->ntx + 1, sizeof(*n->tx));
	r = &n->tx[n->ntx++];
	r->at = s->now;
	memcpy(r->raw, mad, UROCE_MAD_LEN);
	CHECK_EQ(uroce_cm_mad_decode(&r->m, mad, UROCE_MAD_LEN), UROCE_MAD_LEN);
	CHECK(r->m.hdr.base_version == 1 && r->m.hdr.mgmt_class == 0x07 &&
	      r->m.hdr.class_version == 2 && r->m.hdr.method == 0x03);
	CHECK(r->m.hdr.status == 0 && r->m.hdr.attr_mod == 0);
	if (n->send_fail)
		return -EIO;
	for (int i = 0; i < NNOD; i++)
		if (!memcmp(to->dgid, s->n[i].gid, 16))
			dst = i;
	if (dst < 0 || s->drop_all[n->idx])
		return 0;
	if (r->m.hdr.attr_id >= 0x10 && r->m.hdr.attr_id < 0x20 &&
	    s->drop_next[n->idx][r->m.hdr.attr_id - 0x10]) {
		s->drop_next[n->idx][r->m.hdr.attr_id - 0x10]--;
		return 0;
	}
	if (s->loss_pct && rnd(s) % 100 < s->loss_pct)
		return 0;
	if (s->dup_pct && rnd(s) % 100 < s->dup_pct)
		copies = 2;
	while (copies--)
		enqueue(s, n->idx, dst, mad, s->now + LAT + (s->jitter ? rnd(s) % s->jitter : 0));
	return 0;
}

static void log_event(struct node *n, const struct uroce_ibcm_event *ev)
{
	struct evrec *e;

	n->ev = grow(n->ev, &n->cev, n->nev + 1, sizeof(*n->ev));
	e = &n->ev[n->nev++];
	memset(e, 0, sizeof(*e));
	e->at = n->s->now;
	e->type = ev->type;
	e->conn = ev->conn;
	e->state = uroce_ibcm_conn_state(ev->conn);
	e->user = uroce_ibcm_conn_user(ev->conn);
	if (ev->msg) {
		e->has_msg = true;
		e->msg = *ev->msg;
	}
	/* Timer events have neither sender nor message; received ones have both. */
	CHECK_EQ(!ev->msg, !ev->from);
}

static struct uroce_cm_rep make_rep(uint32_t qpn)
{
	struct uroce_cm_rep r;

	memset(&r, 0, sizeof(r));
	r.local_qpn = qpn;
	r.starting_psn = 0x654321;
	r.responder_resources = 1;
	r.initiator_depth = 1;
	r.target_ack_delay = 15;
	r.rnr_retry_count = 7;
	for (size_t i = 0; i < sizeof(r.private_data); i++)
		r.private_data[i] = (uint8_t)(0xA0 + i);
	return r;
}

static struct uroce_cm_req make_req(const struct node *a, const struct node *p, uint32_t qpn)
{
	struct uroce_cm_req r;

	memset(&r, 0, sizeof(r));
	r.service_id = 0x0000000001060000ull | 7471;
	r.local_qpn = qpn;
	r.responder_resources = 1;
	r.initiator_depth = 1;
	r.remote_cm_resp_timeout = 20;
	r.transport_type = UROCE_CM_TRANSPORT_RC;
	r.starting_psn = 0x123456;
	r.local_cm_resp_timeout = 20;
	r.retry_count = 7;
	r.pkey = 0xFFFF;
	r.path_mtu = 3;
	r.rnr_retry_count = 7;
	r.max_cm_retries = 15;
	r.primary.local_lid = 0xFFFF;
	r.primary.remote_lid = 0xFFFF;
	memcpy(r.primary.local_gid, a->gid, 16);
	memcpy(r.primary.remote_gid, p->gid, 16);
	r.primary.hop_limit = 64;
	r.primary.local_ack_timeout = 18;
	for (size_t i = 0; i < sizeof(r.private_data); i++)
		r.private_data[i] = (uint8_t)(i * 7 + qpn);
	return r;
}

/* The scripted peers' behaviour, per policy. */
static void policy_event(struct node *n, const struct uroce_ibcm_event *ev)
{
	struct policy *pol = &n->pol;
	struct uroce_ibcm_conn *c = ev->conn;
	uint64_t now = n->s->now;

	if (pol->advance_in_cb)
		uroce_ibcm_advance(n->cm, now);
	if (pol->destroy_other) {
		struct uroce_ibcm_conn *o = pol->destroy_other;

		pol->destroy_other = NULL;
		uroce_ibcm_conn_destroy(o, now);
	}
	switch (ev->type) {
	case UROCE_IBCM_EV_REQ_RECEIVED: {
		struct uroce_cm_rep rep = make_rep(0x222);

		n->last_new = c;
		CHECK(uroce_ibcm_conn_user(c) == NULL);
		switch (pol->on_req) {
		case REQ_ACCEPT:
			CHECK_EQ(uroce_ibcm_send_rep(c, &rep, &n->t, now), 0);
			break;
		case REQ_REJECT:
			CHECK(uroce_ibcm_send_rej(c, pol->rej_reason, pol->rej_ari,
						  pol->rej_ari_len, pol->rej_pdata, pol->rej_len,
						  now) == 0);
			if (!pol->keep)
				uroce_ibcm_conn_destroy(c, now);
			break;
		case REQ_MRA:
			CHECK_EQ(uroce_ibcm_send_mra(c, pol->mra_timeout, "mra", 3, now), 0);
			break;
		case REQ_IGNORE:
			break;
		case REQ_DESTROY:
			uroce_ibcm_conn_destroy(c, now);
			break;
		}
		break;
	}
	case UROCE_IBCM_EV_REP_RECEIVED:
		switch (pol->on_rep) {
		case REP_RTU:
			CHECK_EQ(uroce_ibcm_send_rtu(c, "rtu", 3, now), 0);
			break;
		case REP_IGNORE:
			break;
		case REP_MRA:
			CHECK_EQ(uroce_ibcm_send_mra(c, pol->mra_timeout, NULL, 0, now), 0);
			break;
		case REP_DESTROY:
			uroce_ibcm_conn_destroy(c, now);
			break;
		}
		break;
	case UROCE_IBCM_EV_DREQ_RECEIVED:
		if (pol->destroy_on_dreq)
			uroce_ibcm_conn_destroy(c, now);
		else if (!pol->ignore_dreq)
			CHECK_EQ(uroce_ibcm_send_drep(c, "drep", 4, now), 0);
		break;
	case UROCE_IBCM_EV_MRA_RECEIVED:
		if (pol->destroy_on_mra)
			uroce_ibcm_conn_destroy(c, now);
		break;
	case UROCE_IBCM_EV_SIDR_REQ_RECEIVED: {
		struct uroce_cm_sidr_rep rep;

		n->last_new = c;
		if (pol->ignore_sidr)
			break;
		memset(&rep, 0, sizeof(rep));
		rep.qpn = 0x333;
		rep.qkey = 0x01234567;
		rep.service_id = ev->msg->u.sidr_req.service_id;
		memcpy(rep.private_data, "sidr-rep", 8);
		CHECK_EQ(uroce_ibcm_send_sidr_rep(c, &rep, now), 0);
		uroce_ibcm_conn_destroy(c, now);
		break;
	}
	case UROCE_IBCM_EV_REJ_RECEIVED:
	case UROCE_IBCM_EV_REQ_ERROR:
	case UROCE_IBCM_EV_REP_ERROR:
	case UROCE_IBCM_EV_TIMEWAIT_EXIT:
	case UROCE_IBCM_EV_SIDR_REP_RECEIVED:
	case UROCE_IBCM_EV_SIDR_REQ_ERROR:
		if (!pol->keep)
			uroce_ibcm_conn_destroy(c, now);
		break;
	case UROCE_IBCM_EV_RTU_RECEIVED:
	case UROCE_IBCM_EV_DREP_RECEIVED:
	case UROCE_IBCM_EV_DREQ_ERROR:
		break;
	}
}

static void node_event(void *arg, const struct uroce_ibcm_event *ev)
{
	struct node *n = arg;

	CHECK(ev->conn != NULL);
	CHECK_LT((unsigned)ev->type, NEV);
	log_event(n, ev);
	if (n->hook)
		n->hook(n, ev);
	else
		policy_event(n, ev);
}

static const struct uroce_ibcm_ops node_ops = {.send = node_send, .event = node_event};

static struct sim *sim_new(uint64_t seed)
{
	struct sim *s = calloc(1, sizeof(*s));

	s->now = T0;
	s->rng = seed * 0x9E3779B97F4A7C15ull + 1;
	for (int i = 0; i < NNOD; i++) {
		struct node *n = &s->n[i];
		struct uroce_ibcm_cfg cfg = {
			.ops = &node_ops,
			.arg = n,
			.comm_id_prefix = 0x101u + (unsigned)i,
			.ca_guid = 0x0002C9FFFE000000ull + (uint64_t)i,
			.hi_tid = 0x51000000u + (uint32_t)i,
			.timewait_ms = 500,
			.seed = (uint32_t)(seed * 7919 + (uint64_t)i * 1000),
		};

		n->s = s;
		n->idx = i;
		n->gid[10] = n->gid[11] = 0xFF;
		n->gid[12] = 10;
		n->gid[15] = (uint8_t)(i + 1);
		n->guid = cfg.ca_guid;
		n->hi_tid = cfg.hi_tid;
		n->prefix = cfg.comm_id_prefix;
		n->t.timeout_ms = 100;
		n->t.max_retries = 3;
		CHECK_EQ(uroce_ibcm_create(&cfg, &n->cm), 0);
	}
	return s;
}

static void sim_free(struct sim *s)
{
	for (int i = 0; i < NNOD; i++) {
		uroce_ibcm_destroy(s->n[i].cm);
		free(s->n[i].tx);
		free(s->n[i].ev);
	}
	free(s->q);
	free(s->act);
	free(s);
}

/*
 * Run until virtual time `until` (inclusive) or until nothing is pending. Picks the earliest
 * of: a node's timer (its next deadline), a queued MAD, a scheduled action.
 */
static void sim_run(struct sim *s, uint64_t until)
{
	for (long steps = 0;; steps++) {
		uint64_t tt = UINT64_MAX, tp = UINT64_MAX, ta = UINT64_MAX, t;
		int tn = -1;
		size_t pi = 0, ai = 0;

		for (int i = 0; i < NNOD; i++) {
			uint64_t d = uroce_ibcm_next_deadline(s->n[i].cm);

			if (d < tt) {
				tt = d;
				tn = i;
			}
		}
		for (size_t i = 0; i < s->nq; i++)
			if (s->q[i].at < tp || (s->q[i].at == tp && s->q[i].seq < s->q[pi].seq)) {
				tp = s->q[i].at;
				pi = i;
			}
		for (size_t i = 0; i < s->nact; i++)
			if (s->act[i].at < ta ||
			    (s->act[i].at == ta && s->act[i].seq < s->act[ai].seq)) {
				ta = s->act[i].at;
				ai = i;
			}
		t = tt < tp ? tt : tp;
		t = t < ta ? t : ta;
		if (t == UINT64_MAX || t > until)
			break;
		CHECK_GE(t, s->now);
		if (steps > 10000000) {
			CHECKF(0, "simulation does not settle");
			break;
		}
		s->now = t;
		if (t == tt) {
			uroce_ibcm_advance(s->n[tn].cm, t);
			/* Everything due has fired: the next deadline is in the future. */
			CHECKF(uroce_ibcm_next_deadline(s->n[tn].cm) > t, "node %d", tn);
			if (uroce_ibcm_next_deadline(s->n[tn].cm) <= t)
				break;
		} else if (t == tp) {
			struct pkt p = s->q[pi];
			struct uroce_ibcm_addr from = addr_of(&s->n[p.src]);

			s->q[pi] = s->q[--s->nq];
			uroce_ibcm_recv(s->n[p.dst].cm, &from, p.mad, sizeof(p.mad), t);
		} else {
			struct action a = s->act[ai];

			s->act[ai] = s->act[--s->nact];
			s->on_action(s, &a);
		}
	}
	if (until != UINT64_MAX && s->now < until)
		s->now = until;
}

static void run_for(struct sim *s, uint64_t d)
{
	sim_run(s, s->now + d);
}

static void run_all(struct sim *s)
{
	sim_run(s, UINT64_MAX);
}

/* "A B C": the attribute short names of a node's MADs, or the names of its events. */
static const char *tx_str(const struct node *n)
{
	static char buf[1024];
	size_t o = 0;

	buf[0] = 0;
	for (size_t i = 0; i < n->ntx && o + 16 < sizeof(buf); i++) {
		const char *name = uroce_cm_attr_short(n->tx[i].m.hdr.attr_id);

		o += (size_t)snprintf(buf + o, sizeof(buf) - o, "%s%s", i ? " " : "",
				      name ? name : "?");
	}
	return buf;
}

static const char *ev_str(const struct node *n)
{
	static char buf[1024];
	size_t o = 0;

	buf[0] = 0;
	for (size_t i = 0; i < n->nev && o + 24 < sizeof(buf); i++)
		o += (size_t)snprintf(buf + o, sizeof(buf) - o, "%s%s", i ? " " : "",
				      ev_names[n->ev[i].type]);
	return buf;
}

#define CHECK_STR(got, want)                                                                       \
	CHECKF(strcmp((got), (want)) == 0, "got \"%s\", want \"%s\"", (got), (want))

static uint64_t ctr(const struct node *n, enum uroce_ibcm_counter k)
{
	return uroce_ibcm_counter(n->cm, k);
}

static uint64_t tid_of(const struct node *n, uint32_t local_id)
{
	return (uint64_t)n->hi_tid << 32 | __builtin_bswap32(local_id);
}

static const struct txrec *last_tx(const struct node *n)
{
	return n->ntx ? &n->tx[n->ntx - 1] : NULL;
}

/* A connected pair: A's conn out, P's conn via P.last_new. */
static struct uroce_ibcm_conn *connect_pair(struct sim *s, uint32_t qpn, void *user)
{
	struct node *A = &s->n[0], *P = &s->n[1];
	struct uroce_cm_req req = make_req(A, P, qpn);
	struct uroce_ibcm_addr to = addr_of(P);
	struct uroce_ibcm_conn *c = NULL;

	CHECK_EQ(uroce_ibcm_send_req(A->cm, &to, &req, &A->t, user, s->now, &c), 0);
	run_for(s, 10 * MS);
	return c;
}

/* ---- scripted tests ----------------------------------------------------------------------- */

/* REQ, REP, RTU, DREQ, DREP, time-wait on both sides: events, MADs, IDs, TIDs, times. */
static void test_lifecycle(void)
{
	struct sim *s = sim_new(1);
	struct node *A = &s->n[0], *P = &s->n[1];
	struct uroce_cm_req req = make_req(A, P, 0x111);
	struct uroce_ibcm_addr to = addr_of(P);
	struct uroce_ibcm_conn *ca = NULL, *cp;
	int token;
	uint32_t aid, pid;
	uint64_t t_drep;

	CHECK_EQ(uroce_ibcm_send_req(A->cm, &to, &req, &A->t, &token, s->now, &ca), 0);
	aid = uroce_ibcm_conn_local_id(ca);
	CHECK(req.local_comm_id == aid && req.local_ca_guid == A->guid);
	CHECK(aid >> 20 == A->prefix && (aid & 0xFFFFF) != 0);
	CHECK_EQ(uroce_ibcm_conn_state(ca), UROCE_IBCM_REQ_SENT);
	CHECK(uroce_ibcm_conn_user(ca) == &token);
	CHECK_EQ(uroce_ibcm_next_deadline(A->cm), T0 + 100 * MS);
	CHECK_EQ(uroce_ibcm_next_deadline(P->cm), UINT64_MAX);
	CHECK_EQ(uroce_ibcm_conn_count(A->cm), 1);
	/* Calls not allowed in REQ_SENT. */
	CHECK_EQ(uroce_ibcm_send_rtu(ca, NULL, 0, s->now), -EINVAL);
	CHECK_EQ(uroce_ibcm_send_dreq(ca, NULL, 0, NULL, s->now), -EINVAL);
	CHECK_EQ(uroce_ibcm_send_drep(ca, NULL, 0, s->now), -EINVAL);
	CHECK_EQ(uroce_ibcm_send_mra(ca, 10, NULL, 0, s->now), -EINVAL);
	CHECK_EQ(uroce_ibcm_establish(ca), -EINVAL);

	run_for(s, 10 * MS);
	cp = P->last_new;
	CHECK(cp != NULL);
	if (!cp)
		goto out;
	pid = uroce_ibcm_conn_local_id(cp);
	CHECK_EQ(pid >> 20, P->prefix);
	CHECK_EQ(uroce_ibcm_conn_state(ca), UROCE_IBCM_ESTABLISHED);
	CHECK_EQ(uroce_ibcm_conn_state(cp), UROCE_IBCM_ESTABLISHED);
	CHECK(uroce_ibcm_conn_remote_id(ca) == pid && uroce_ibcm_conn_remote_id(cp) == aid);
	CHECK_MEM_EQ(uroce_ibcm_conn_addr(cp)->dgid, A->gid, 16);
	CHECK_MEM_EQ(uroce_ibcm_conn_addr(ca)->dgid, P->gid, 16);
	CHECK_EQ(uroce_ibcm_next_deadline(A->cm), UINT64_MAX);
	CHECK_EQ(uroce_ibcm_next_deadline(P->cm), UINT64_MAX);
	CHECK_EQ(uroce_ibcm_establish(cp), -EISCONN);
	CHECK_EQ(uroce_ibcm_send_rep(ca, NULL, &A->t, s->now), -EINVAL);
	/* Lengths over the private data areas. */
	CHECK_EQ(uroce_ibcm_send_dreq(ca, NULL, 221, NULL, s->now), -EINVAL);
	CHECK_EQ(uroce_ibcm_send_dreq(ca, "x", 221, NULL, s->now), -EINVAL);

	/* The REQ's private data arrived intact; the event named the sender. */
	CHECK(P->nev >= 1 && P->ev[0].has_msg &&
	      !memcmp(P->ev[0].msg.u.req.private_data, req.private_data, 92));
	CHECK(P->ev[0].msg.u.req.local_comm_id == aid && P->ev[0].msg.u.req.local_qpn == 0x111);
	CHECK(A->nev >= 1 && A->ev[0].user == &token);
	CHECK_EQ(A->ev[0].msg.u.rep.local_qpn, 0x222);

	uroce_ibcm_conn_set_user(cp, &token);
	CHECK_EQ(uroce_ibcm_send_dreq(ca, "bye", 3, NULL, s->now), 0);
	CHECK_EQ(uroce_ibcm_conn_state(ca), UROCE_IBCM_DREQ_SENT);
	run_for(s, 10 * MS);
	t_drep = s->now - 10 * MS + 2 * LAT;
	CHECK_EQ(uroce_ibcm_conn_state(ca), UROCE_IBCM_TIMEWAIT);
	CHECK_EQ(uroce_ibcm_conn_state(cp), UROCE_IBCM_TIMEWAIT);
	CHECK_EQ(uroce_ibcm_next_deadline(A->cm), t_drep + 500 * MS);
	run_all(s);

	CHECK_STR(ev_str(A), "REP_RECEIVED DREP_RECEIVED TIMEWAIT_EXIT");
	CHECK_STR(ev_str(P), "REQ_RECEIVED RTU_RECEIVED DREQ_RECEIVED TIMEWAIT_EXIT");
	CHECK_STR(tx_str(A), "REQ RTU DREQ");
	CHECK_STR(tx_str(P), "REP DREP");
	if (A->ntx == 3 && P->ntx == 2 && A->nev == 3 && P->nev == 4) {
		const struct uroce_cm_mad *rq = &A->tx[0].m, *rp = &P->tx[0].m;
		const struct uroce_cm_mad *rt = &A->tx[1].m, *dq = &A->tx[2].m, *dp = &P->tx[1].m;

		/* TIDs: REQ and DREQ start transactions; REP, RTU, DREP reuse them. */
		CHECK_EQ(rq->hdr.tid, tid_of(A, aid));
		CHECK(rp->hdr.tid == rq->hdr.tid && rt->hdr.tid == rq->hdr.tid);
		CHECK(dq->hdr.tid == tid_of(A, aid) && dp->hdr.tid == dq->hdr.tid);
		/* Raw bytes: the low TID word is the comm ID in network order. */
		CHECK_EQ(uroce_get_be32(A->tx[0].raw + 12), __builtin_bswap32(aid));
		CHECK(rp->u.rep.local_comm_id == pid && rp->u.rep.remote_comm_id == aid);
		CHECK_EQ(rp->u.rep.local_ca_guid, P->guid);
		CHECK(rt->u.rtu.local_comm_id == aid && rt->u.rtu.remote_comm_id == pid);
		CHECK(dq->u.dreq.local_comm_id == aid && dq->u.dreq.remote_comm_id == pid);
		CHECK_EQ(dq->u.dreq.remote_qpn, 0x222);
		CHECK(dp->u.drep.local_comm_id == pid && dp->u.drep.remote_comm_id == aid);
		/* Times: REQ at T0, REP one latency later, RTU two. */
		CHECK(A->tx[0].at == T0 && P->tx[0].at == T0 + LAT && A->tx[1].at == T0 + 2 * LAT);
		CHECK_EQ(P->ev[1].at, T0 + 3 * LAT);
		CHECK_MEM_EQ(P->ev[1].msg.u.rtu.private_data, "rtu", 3);
		CHECK_MEM_EQ(P->ev[2].msg.u.dreq.private_data, "bye", 3);
		CHECK_MEM_EQ(A->ev[1].msg.u.drep.private_data, "drep", 4);
		CHECK_EQ(A->ev[2].at, A->ev[1].at + 500 * MS);
		CHECK_EQ(P->ev[3].at, P->ev[2].at + 500 * MS);
		CHECK(A->ev[2].msg.hdr.attr_id == 0 && !A->ev[2].has_msg);
	}
	CHECK(ctr(A, UROCE_IBCM_C_TX_MADS) == 3 && ctr(P, UROCE_IBCM_C_TX_MADS) == 2);
	CHECK(ctr(A, UROCE_IBCM_C_RX_MADS) == 2 && ctr(P, UROCE_IBCM_C_RX_MADS) == 3);
	CHECK(ctr(A, UROCE_IBCM_C_RETRIES) == 0 && ctr(P, UROCE_IBCM_C_RX_DUPLICATES) == 0);
	CHECK(uroce_ibcm_conn_count(A->cm) == 0 && uroce_ibcm_conn_count(P->cm) == 0);
out:
	sim_free(s);
}

/* The passive side rejects (reason 28 with ARI and a full private data area, or 8). */
static void test_reject(uint16_t reason)
{
	struct sim *s = sim_new(2);
	struct node *A = &s->n[0], *P = &s->n[1];
	uint8_t pdata[UROCE_CM_REJ_PRIV_LEN], ari[5] = {1, 2, 3, 4, 5};
	struct uroce_ibcm_conn *ca;

	for (size_t i = 0; i < sizeof(pdata); i++)
		pdata[i] = (uint8_t)(255 - i);
	P->pol.on_req = REQ_REJECT;
	P->pol.rej_reason = reason;
	if (reason == UROCE_CM_REJ_CONSUMER_DEFINED) {
		P->pol.rej_pdata = pdata;
		P->pol.rej_len = sizeof(pdata);
		P->pol.rej_ari = ari;
		P->pol.rej_ari_len = sizeof(ari);
	}
	ca = connect_pair(s, 0x111, NULL);
	run_all(s);
	CHECK_STR(ev_str(A), "REJ_RECEIVED");
	CHECK_STR(ev_str(P), "REQ_RECEIVED");
	CHECK_STR(tx_str(P), "REJ");
	if (A->nev == 1 && P->ntx == 1) {
		const struct uroce_cm_rej *rej = &A->ev[0].msg.u.rej;

		CHECK(A->ev[0].conn == ca);
		CHECK_EQ(A->ev[0].state, UROCE_IBCM_IDLE);
		CHECK_EQ(rej->reason, reason);
		CHECK_EQ(rej->msg_rejected, UROCE_CM_MSG_REF_REQ);
		CHECK_EQ(rej->remote_comm_id, A->tx[0].m.u.req.local_comm_id);
		CHECK_EQ(rej->local_comm_id, 0); /* as the kernel, from REQ_RCVD */
		CHECK_EQ(P->tx[0].m.hdr.tid, A->tx[0].m.hdr.tid);
		if (reason == UROCE_CM_REJ_CONSUMER_DEFINED) {
			CHECK_MEM_EQ(rej->private_data, pdata, sizeof(pdata));
			CHECK(rej->reject_info_len == 5 && !memcmp(rej->ari, ari, 5));
		}
	}
	CHECK(uroce_ibcm_conn_count(A->cm) == 0 && uroce_ibcm_conn_count(P->cm) == 0);
	sim_free(s);
}

/* A REQ nobody answers: max_retries + 1 transmissions timeout_ms apart, then REQ_ERROR. */
static void test_req_timeout(void)
{
	struct sim *s = sim_new(3);
	struct node *A = &s->n[0], *P = &s->n[1];
	struct uroce_cm_req req = make_req(A, P, 0x111);
	struct uroce_ibcm_addr to = addr_nowhere();
	struct uroce_ibcm_timing t = {.timeout_ms = 250, .max_retries = 5};
	struct uroce_ibcm_conn *ca;

	CHECK_EQ(uroce_ibcm_send_req(A->cm, &to, &req, &t, NULL, s->now, &ca), 0);
	run_all(s);
	CHECK_STR(tx_str(A), "REQ REQ REQ REQ REQ REQ");
	for (size_t i = 0; i < A->ntx; i++) {
		CHECK_EQ(A->tx[i].at, T0 + i * 250 * MS);
		CHECK_MEM_EQ(A->tx[i].raw, A->tx[0].raw, UROCE_MAD_LEN);
	}
	CHECK_STR(ev_str(A), "REQ_ERROR");
	CHECK(A->nev == 1 && A->ev[0].at == T0 + 6 * 250 * MS);
	CHECK(A->nev == 1 && A->ev[0].state == UROCE_IBCM_IDLE);
	CHECK(ctr(A, UROCE_IBCM_C_RETRIES) == 5 && ctr(A, UROCE_IBCM_C_TIMEOUTS) == 1);
	CHECK_EQ(ctr(A, UROCE_IBCM_C_TX_MADS), 6);
	CHECK_EQ(uroce_ibcm_conn_count(A->cm), 0);
	sim_free(s);
}

/* The active side never answers the REP: REP_ERROR after max_retries + 1 REPs. */
static void test_rep_timeout(void)
{
	struct sim *s = sim_new(4);
	struct node *A = &s->n[0], *P = &s->n[1];
	struct uroce_ibcm_conn *ca;

	A->pol.on_rep = REP_IGNORE;
	ca = connect_pair(s, 0x111, NULL);
	run_all(s);
	CHECK_STR(tx_str(P), "REP REP REP REP");
	for (size_t i = 0; i < P->ntx; i++)
		CHECK_EQ(P->tx[i].at, T0 + LAT + i * 100 * MS);
	CHECK_STR(ev_str(P), "REQ_RECEIVED REP_ERROR");
	CHECK(P->nev == 2 && P->ev[1].at == T0 + LAT + 400 * MS);
	CHECK_STR(ev_str(A), "REP_RECEIVED");
	CHECK_EQ(uroce_ibcm_conn_state(ca), UROCE_IBCM_REP_RCVD);
	CHECK_EQ(ctr(A, UROCE_IBCM_C_RX_DUPLICATES), 3);
	CHECK(ctr(P, UROCE_IBCM_C_TIMEOUTS) == 1 && ctr(P, UROCE_IBCM_C_RETRIES) == 3);
	CHECK_EQ(uroce_ibcm_conn_count(P->cm), 0);
	/* A gives up: REJ 28 to a conn P no longer has. */
	uroce_ibcm_conn_destroy(ca, s->now);
	CHECK_STR(tx_str(A), "REQ REJ");
	run_all(s);
	CHECK_EQ(ctr(P, UROCE_IBCM_C_RX_UNKNOWN_ID), 1);
	CHECK_EQ(uroce_ibcm_conn_count(A->cm), 0);
	sim_free(s);
}

/* The RTU is lost; the first data packet establishes the passive side (no event, no REP). */
static void test_lost_rtu_establish(void)
{
	struct sim *s = sim_new(5);
	struct node *A = &s->n[0], *P = &s->n[1];
	struct uroce_ibcm_conn *ca, *cp;

	P->t.timeout_ms = 1000;
	s->drop_next[0][UROCE_CM_ATTR_RTU - 0x10] = 1;
	ca = connect_pair(s, 0x111, NULL);
	cp = P->last_new;
	CHECK_EQ(uroce_ibcm_conn_state(ca), UROCE_IBCM_ESTABLISHED);
	CHECK(cp && uroce_ibcm_conn_state(cp) == UROCE_IBCM_REP_SENT);
	CHECK_EQ(uroce_ibcm_establish(cp), 0);
	CHECK_EQ(uroce_ibcm_conn_state(cp), UROCE_IBCM_ESTABLISHED);
	CHECK_EQ(uroce_ibcm_establish(cp), -EISCONN);
	CHECK_EQ(uroce_ibcm_next_deadline(P->cm), UINT64_MAX);
	run_for(s, 5000 * MS);
	CHECK_STR(tx_str(P), "REP");
	CHECK_STR(ev_str(P), "REQ_RECEIVED");
	CHECK_EQ(uroce_ibcm_send_dreq(cp, NULL, 0, NULL, s->now), 0);
	run_all(s);
	CHECK_STR(ev_str(P), "REQ_RECEIVED DREP_RECEIVED TIMEWAIT_EXIT");
	CHECK_STR(ev_str(A), "REP_RECEIVED DREQ_RECEIVED TIMEWAIT_EXIT");
	CHECK(uroce_ibcm_conn_count(A->cm) == 0 && uroce_ibcm_conn_count(P->cm) == 0);
	sim_free(s);
}

/* The REP is lost: the REQ's resend finds P in REP_SENT, which resends the REP at once. */
static void test_dup_req_resends_rep(void)
{
	struct sim *s = sim_new(6);
	struct node *A = &s->n[0], *P = &s->n[1];
	struct uroce_ibcm_conn *ca;

	P->t.timeout_ms = 1000;
	s->drop_next[1][UROCE_CM_ATTR_REP - 0x10] = 1;
	ca = connect_pair(s, 0x111, NULL);
	CHECK_EQ(uroce_ibcm_conn_state(ca), UROCE_IBCM_REQ_SENT);
	run_for(s, 200 * MS);
	CHECK_EQ(uroce_ibcm_conn_state(ca), UROCE_IBCM_ESTABLISHED);
	CHECK_STR(tx_str(A), "REQ REQ RTU");
	CHECK_STR(tx_str(P), "REP REP");
	CHECK(P->ntx == 2 && P->tx[1].at == T0 + 100 * MS + LAT);
	CHECK(P->ntx == 2 && !memcmp(P->tx[0].raw, P->tx[1].raw, UROCE_MAD_LEN));
	CHECK(ctr(P, UROCE_IBCM_C_RX_DUPLICATES) == 1 && ctr(P, UROCE_IBCM_C_RETRIES) == 0);
	CHECK_EQ(ctr(A, UROCE_IBCM_C_RETRIES), 1);
	CHECK_STR(ev_str(P), "REQ_RECEIVED RTU_RECEIVED");
	CHECK_EQ(uroce_ibcm_conn_count(P->cm), 1);
	sim_free(s);
}

/* The RTU is lost: the REP's resend finds A ESTABLISHED, which resends the stored RTU. */
static void test_dup_rep_resends_rtu(void)
{
	struct sim *s = sim_new(7);
	struct node *A = &s->n[0], *P = &s->n[1];

	s->drop_next[0][UROCE_CM_ATTR_RTU - 0x10] = 1;
	connect_pair(s, 0x111, NULL);
	run_for(s, 200 * MS);
	CHECK_STR(tx_str(A), "REQ RTU RTU");
	CHECK_STR(tx_str(P), "REP REP");
	CHECK(A->ntx == 3 && !memcmp(A->tx[1].raw, A->tx[2].raw, UROCE_MAD_LEN));
	CHECK(A->ntx == 3 && A->tx[2].at == T0 + LAT + 100 * MS + LAT);
	CHECK(ctr(A, UROCE_IBCM_C_RX_DUPLICATES) == 1 && ctr(P, UROCE_IBCM_C_RETRIES) == 1);
	CHECK_STR(ev_str(P), "REQ_RECEIVED RTU_RECEIVED");
	CHECK(P->nev == 2 && !memcmp(P->ev[1].msg.u.rtu.private_data, "rtu", 3));
	sim_free(s);
}

/* A copy of the REQ reaches P in TIMEWAIT: REJ STALE_CONN. */
static void test_dup_req_timewait_stale(void)
{
	struct sim *s = sim_new(8);
	struct node *A = &s->n[0], *P = &s->n[1];
	struct uroce_ibcm_conn *ca, *cp;
	struct uroce_ibcm_addr from = addr_of(A);
	uint8_t req[UROCE_MAD_LEN];

	ca = connect_pair(s, 0x111, NULL);
	cp = P->last_new;
	memcpy(req, A->tx[0].raw, sizeof(req));
	CHECK_EQ(uroce_ibcm_send_dreq(ca, NULL, 0, NULL, s->now), 0);
	run_for(s, 10 * MS);
	CHECK_EQ(uroce_ibcm_conn_state(cp), UROCE_IBCM_TIMEWAIT);
	uroce_ibcm_recv(P->cm, &from, req, sizeof(req), s->now);
	CHECK(ctr(P, UROCE_IBCM_C_RX_DUPLICATES) == 1 && ctr(P, UROCE_IBCM_C_STALE_REJECTS) == 1);
	CHECK_STR(tx_str(P), "REP DREP REJ");
	if (P->ntx == 3) {
		const struct uroce_cm_mad *r = &P->tx[2].m;

		CHECK_EQ(r->u.rej.reason, UROCE_CM_REJ_STALE_CONN);
		CHECK_EQ(r->hdr.tid, A->tx[0].m.hdr.tid);
		CHECK_EQ(r->u.rej.remote_comm_id, uroce_ibcm_conn_local_id(ca));
		CHECK_EQ(r->u.rej.local_comm_id, uroce_ibcm_conn_local_id(cp));
	}
	run_all(s);
	CHECK_EQ(ctr(A, UROCE_IBCM_C_RX_BAD_STATE), 1); /* the REJ finds A in TIMEWAIT */
	CHECK_STR(ev_str(A), "REP_RECEIVED DREP_RECEIVED TIMEWAIT_EXIT");
	CHECK_STR(ev_str(P), "REQ_RECEIVED RTU_RECEIVED DREQ_RECEIVED TIMEWAIT_EXIT");
	CHECK(uroce_ibcm_conn_count(A->cm) == 0 && uroce_ibcm_conn_count(P->cm) == 0);
	sim_free(s);
}

/* A new REQ (new comm ID) from a QP already connected: REJ STALE_CONN, and the old one DREQ. */
static void test_stale_connection(void)
{
	struct sim *s = sim_new(9);
	struct node *A = &s->n[0], *P = &s->n[1];
	struct uroce_ibcm_conn *c1, *c2, *cp;
	int u1, u2;

	c1 = connect_pair(s, 0x111, &u1);
	cp = P->last_new;
	CHECK_EQ(uroce_ibcm_conn_state(c1), UROCE_IBCM_ESTABLISHED);
	c2 = connect_pair(s, 0x111, &u2);
	CHECK(P->last_new == cp); /* no new passive conn */
	CHECK_EQ(ctr(P, UROCE_IBCM_C_STALE_REJECTS), 1);
	CHECK_EQ(uroce_ibcm_conn_state(c2), UROCE_IBCM_TIMEWAIT);
	run_all(s);
	/* c2 was destroyed on its REJ: it lingers in time-wait and exits without an event. */
	CHECK_STR(ev_str(A), "REP_RECEIVED REJ_RECEIVED DREQ_RECEIVED TIMEWAIT_EXIT");
	if (A->nev == 4) {
		CHECK(A->ev[1].conn == c2 && A->ev[1].user == &u2);
		CHECK_EQ(A->ev[1].msg.u.rej.reason, UROCE_CM_REJ_STALE_CONN);
		CHECK(A->ev[2].conn == c1 && A->ev[2].user == &u1);
	}
	CHECK_STR(tx_str(P), "REP REJ DREQ");
	CHECK_STR(ev_str(P), "REQ_RECEIVED RTU_RECEIVED DREP_RECEIVED TIMEWAIT_EXIT");
	CHECK(uroce_ibcm_conn_count(A->cm) == 0 && uroce_ibcm_conn_count(P->cm) == 0);
	sim_free(s);
}

/* MRA for the REQ: the REQ's wait becomes service timeout + timeout_ms, for every resend. */
static void test_mra_req(bool delay)
{
	struct sim *s = sim_new(10);
	struct node *A = &s->n[0], *P = &s->n[1];
	struct uroce_ibcm_conn *ca, *cp;
	uint64_t svc = 4096ull << 17, wait = svc + 100 * MS;
	struct uroce_cm_rep rep = make_rep(0x222);

	P->pol.on_req = REQ_MRA;
	P->pol.mra_timeout = (uint8_t)(17 | (delay ? UROCE_IBCM_MRA_FLAG_DELAY : 0));
	ca = connect_pair(s, 0x111, NULL);
	cp = P->last_new;
	CHECK(cp && uroce_ibcm_conn_state(cp) == UROCE_IBCM_MRA_REQ_SENT);
	if (delay) {
		/* No MRA until the REQ is repeated. */
		CHECK_STR(tx_str(P), "");
		run_for(s, 100 * MS);
		CHECK_STR(tx_str(P), "MRA");
		CHECK(P->ntx == 1 && P->tx[0].at == T0 + 100 * MS + LAT);
		CHECK_EQ(ctr(P, UROCE_IBCM_C_RX_DUPLICATES), 1);
	}
	uint64_t t_mra = delay ? T0 + 100 * MS + 2 * LAT : T0 + 2 * LAT;

	CHECK_EQ(uroce_ibcm_conn_state(ca), UROCE_IBCM_MRA_REQ_RCVD);
	CHECK_STR(ev_str(A), "MRA_RECEIVED");
	CHECK(A->nev == 1 && A->ev[0].msg.u.mra.service_timeout == 17 &&
	      A->ev[0].msg.u.mra.msg_mraed == UROCE_CM_MSG_REF_REQ &&
	      !memcmp(A->ev[0].msg.u.mra.private_data, "mra", 3));
	CHECK_EQ(uroce_ibcm_next_deadline(A->cm), t_mra + wait);
	/* No resend before the extended deadline; one at it, answered by the stored MRA. */
	sim_run(s, t_mra + wait - 1);
	CHECK_EQ(A->ntx, (delay ? 2u : 1u));
	sim_run(s, t_mra + wait + 5 * MS);
	CHECK(A->ntx == (delay ? 3u : 2u) && last_tx(A)->at == t_mra + wait);
	CHECK_STR(tx_str(P), delay ? "MRA MRA" : "MRA MRA");
	CHECK_EQ(ctr(A, UROCE_IBCM_C_RX_DUPLICATES), 1);
	CHECK_EQ(uroce_ibcm_next_deadline(A->cm), t_mra + 2 * wait);
	CHECK_STR(ev_str(A), "MRA_RECEIVED");
	/* The user accepts late. */
	CHECK_EQ(uroce_ibcm_send_rep(cp, &rep, &P->t, s->now), 0);
	run_for(s, 10 * MS);
	CHECK_EQ(uroce_ibcm_conn_state(ca), UROCE_IBCM_ESTABLISHED);
	CHECK_EQ(uroce_ibcm_conn_state(cp), UROCE_IBCM_ESTABLISHED);
	CHECK_STR(ev_str(A), "MRA_RECEIVED REP_RECEIVED");
	CHECK_EQ(uroce_ibcm_send_dreq(ca, NULL, 0, NULL, s->now), 0);
	run_all(s);
	CHECK(uroce_ibcm_conn_count(A->cm) == 0 && uroce_ibcm_conn_count(P->cm) == 0);
	sim_free(s);
}

/* MRA for the REP: P's REP wait is extended; a repeated REP gets the stored MRA back. */
static void test_mra_rep(void)
{
	struct sim *s = sim_new(11);
	struct node *A = &s->n[0], *P = &s->n[1];
	struct uroce_ibcm_conn *ca, *cp;
	uint64_t wait = (4096ull << 16) + 100 * MS, t_mra = T0 + 3 * LAT;

	A->pol.on_rep = REP_MRA;
	A->pol.mra_timeout = 16;
	ca = connect_pair(s, 0x111, NULL);
	cp = P->last_new;
	CHECK_EQ(uroce_ibcm_conn_state(ca), UROCE_IBCM_MRA_REP_SENT);
	CHECK(cp && uroce_ibcm_conn_state(cp) == UROCE_IBCM_MRA_REP_RCVD);
	CHECK_EQ(uroce_ibcm_next_deadline(P->cm), t_mra + wait);
	CHECK_STR(ev_str(P), "REQ_RECEIVED MRA_RECEIVED");
	sim_run(s, t_mra + wait + 5 * MS);
	CHECK_STR(tx_str(P), "REP REP");
	CHECK_STR(tx_str(A), "REQ MRA MRA");
	CHECK(P->ntx == 2 && P->tx[1].at == t_mra + wait);
	CHECK(A->ntx == 3 && A->tx[2].m.u.mra.msg_mraed == UROCE_CM_MSG_REF_REP);
	CHECK_EQ(uroce_ibcm_send_rtu(ca, NULL, 0, s->now), 0);
	run_for(s, 10 * MS);
	CHECK_EQ(uroce_ibcm_conn_state(cp), UROCE_IBCM_ESTABLISHED);
	CHECK_STR(ev_str(P), "REQ_RECEIVED MRA_RECEIVED RTU_RECEIVED");
	CHECK_EQ(uroce_ibcm_send_dreq(cp, NULL, 0, NULL, s->now), 0);
	run_all(s);
	CHECK(uroce_ibcm_conn_count(A->cm) == 0 && uroce_ibcm_conn_count(P->cm) == 0);
	sim_free(s);
}

/* A lost DREQ is resent; a lost DREP is answered again from TIMEWAIT. */
static void test_dreq_lost(bool lose_drep)
{
	struct sim *s = sim_new(12);
	struct node *A = &s->n[0], *P = &s->n[1];
	struct uroce_ibcm_conn *ca;
	uint64_t t;

	ca = connect_pair(s, 0x111, NULL);
	if (lose_drep)
		s->drop_next[1][UROCE_CM_ATTR_DREP - 0x10] = 1;
	else
		s->drop_next[0][UROCE_CM_ATTR_DREQ - 0x10] = 1;
	t = s->now;
	CHECK_EQ(uroce_ibcm_send_dreq(ca, NULL, 0, NULL, t), 0);
	run_all(s);
	CHECK_STR(tx_str(A), "REQ RTU DREQ DREQ");
	CHECK(A->ntx == 4 && A->tx[3].at == t + 100 * MS);
	CHECK(A->ntx == 4 && !memcmp(A->tx[2].raw, A->tx[3].raw, UROCE_MAD_LEN));
	CHECK_STR(tx_str(P), lose_drep ? "REP DREP DREP" : "REP DREP");
	CHECK_EQ(ctr(P, UROCE_IBCM_C_RX_DUPLICATES), (lose_drep ? 1u : 0u));
	CHECK_EQ(ctr(A, UROCE_IBCM_C_RETRIES), 1);
	CHECK_STR(ev_str(A), "REP_RECEIVED DREP_RECEIVED TIMEWAIT_EXIT");
	CHECK_STR(ev_str(P), "REQ_RECEIVED RTU_RECEIVED DREQ_RECEIVED TIMEWAIT_EXIT");
	CHECK(uroce_ibcm_conn_count(A->cm) == 0 && uroce_ibcm_conn_count(P->cm) == 0);
	sim_free(s);
}

/* No answer to the DREQ: DREQ_ERROR, time-wait, exit. Then P's DREQ gets a DREP for an ID A no
 * longer has (cm_issue_drep). */
static void test_dreq_error(void)
{
	struct sim *s = sim_new(13);
	struct node *A = &s->n[0], *P = &s->n[1];
	struct uroce_ibcm_conn *ca, *cp;
	struct uroce_ibcm_timing t = {.timeout_ms = 70, .max_retries = 2};
	uint64_t t0;

	ca = connect_pair(s, 0x111, NULL);
	cp = P->last_new;
	s->drop_all[0] = true;
	t0 = s->now;
	CHECK_EQ(uroce_ibcm_send_dreq(ca, NULL, 0, &t, t0), 0);
	run_all(s);
	CHECK_STR(tx_str(A), "REQ RTU DREQ DREQ DREQ");
	CHECK(A->ntx == 5 && A->tx[4].at == t0 + 140 * MS);
	CHECK_STR(ev_str(A), "REP_RECEIVED DREQ_ERROR TIMEWAIT_EXIT");
	CHECK(A->nev == 3 && A->ev[1].at == t0 + 210 * MS && A->ev[2].at == t0 + 710 * MS);
	CHECK(A->nev == 3 && A->ev[1].state == UROCE_IBCM_TIMEWAIT);
	CHECK_EQ(uroce_ibcm_conn_count(A->cm), 0);
	s->drop_all[0] = false;
	CHECK_EQ(uroce_ibcm_conn_state(cp), UROCE_IBCM_ESTABLISHED);
	uroce_ibcm_conn_destroy(cp, s->now); /* DREQ, lingering without a user */
	CHECK_EQ(uroce_ibcm_conn_count(P->cm), 1);
	run_all(s);
	CHECK_EQ(ctr(A, UROCE_IBCM_C_RX_UNKNOWN_ID), 1);
	CHECK_STR(tx_str(P), "REP DREQ");
	CHECK_STR(ev_str(P), "REQ_RECEIVED RTU_RECEIVED");
	CHECK_EQ(uroce_ibcm_conn_count(P->cm), 0);
	sim_free(s);
}

/* Both sides send a DREQ at once: each gets DREQ_RECEIVED, answers, and the DREPs are dups. */
static void test_simultaneous_dreq(void)
{
	struct sim *s = sim_new(14);
	struct node *A = &s->n[0], *P = &s->n[1];
	struct uroce_ibcm_conn *ca, *cp;

	ca = connect_pair(s, 0x111, NULL);
	cp = P->last_new;
	CHECK_EQ(uroce_ibcm_send_dreq(ca, NULL, 0, NULL, s->now), 0);
	CHECK_EQ(uroce_ibcm_send_dreq(cp, NULL, 0, NULL, s->now), 0);
	run_all(s);
	CHECK_STR(ev_str(A), "REP_RECEIVED DREQ_RECEIVED TIMEWAIT_EXIT");
	CHECK_STR(ev_str(P), "REQ_RECEIVED RTU_RECEIVED DREQ_RECEIVED TIMEWAIT_EXIT");
	CHECK_STR(tx_str(A), "REQ RTU DREQ DREP");
	CHECK_STR(tx_str(P), "REP DREQ DREP");
	CHECK(ctr(A, UROCE_IBCM_C_RX_DUPLICATES) == 1 && ctr(P, UROCE_IBCM_C_RX_DUPLICATES) == 1);
	CHECK(uroce_ibcm_conn_count(A->cm) == 0 && uroce_ibcm_conn_count(P->cm) == 0);
	sim_free(s);
}

/* ---- destroy in every state --------------------------------------------------------------- */

struct destroy_case {
	enum uroce_ibcm_state state;
	int side;	     /* whose conn is destroyed: 0 A, 1 P */
	const char *sent;    /* what the destroy sends ("" nothing) */
	uint16_t reason;     /* of that REJ */
	const char *peer_ev; /* the peer's events by the end */
	bool linger;	     /* still allocated after the destroy (DREQ or time-wait pending) */
};

static const struct destroy_case destroy_cases[] = {
	{UROCE_IBCM_REQ_SENT, 0, "REJ", UROCE_CM_REJ_TIMEOUT, "REQ_RECEIVED REJ_RECEIVED", false},
	{UROCE_IBCM_MRA_REQ_RCVD, 0, "REJ", UROCE_CM_REJ_TIMEOUT, "REQ_RECEIVED REJ_RECEIVED",
	 false},
	{UROCE_IBCM_REQ_RCVD, 1, "REJ", UROCE_CM_REJ_CONSUMER_DEFINED, "REJ_RECEIVED", false},
	{UROCE_IBCM_MRA_REQ_SENT, 1, "REJ", UROCE_CM_REJ_CONSUMER_DEFINED,
	 "MRA_RECEIVED REJ_RECEIVED", false},
	{UROCE_IBCM_REP_SENT, 1, "REJ", UROCE_CM_REJ_CONSUMER_DEFINED, "REP_RECEIVED REJ_RECEIVED",
	 true},
	{UROCE_IBCM_MRA_REP_RCVD, 1, "REJ", UROCE_CM_REJ_CONSUMER_DEFINED,
	 "REP_RECEIVED REJ_RECEIVED", true},
	{UROCE_IBCM_REP_RCVD, 0, "REJ", UROCE_CM_REJ_CONSUMER_DEFINED, "REQ_RECEIVED REJ_RECEIVED",
	 false},
	{UROCE_IBCM_MRA_REP_SENT, 0, "REJ", UROCE_CM_REJ_CONSUMER_DEFINED,
	 "REQ_RECEIVED MRA_RECEIVED REJ_RECEIVED", false},
	{UROCE_IBCM_ESTABLISHED, 0, "DREQ", 0,
	 "REQ_RECEIVED RTU_RECEIVED DREQ_RECEIVED TIMEWAIT_EXIT", true},
	{UROCE_IBCM_DREQ_RCVD, 1, "DREP", 0, "REP_RECEIVED DREP_RECEIVED TIMEWAIT_EXIT", true},
	{UROCE_IBCM_DREQ_SENT, 0, "", 0, "REQ_RECEIVED RTU_RECEIVED DREQ_RECEIVED TIMEWAIT_EXIT",
	 true},
	{UROCE_IBCM_TIMEWAIT, 0, "", 0, "REQ_RECEIVED RTU_RECEIVED DREQ_RECEIVED TIMEWAIT_EXIT",
	 true},
	{UROCE_IBCM_SIDR_REQ_SENT, 0, "", 0, "SIDR_REQ_RECEIVED", false},
	{UROCE_IBCM_SIDR_REQ_RCVD, 1, "SIDR_REP", 0, "SIDR_REP_RECEIVED", false},
	{UROCE_IBCM_IDLE, 0, "", 0, "REQ_RECEIVED", false},
};

static void test_destroy_case(const struct destroy_case *dc)
{
	struct sim *s = sim_new(20 + dc->state);
	struct node *A = &s->n[0], *P = &s->n[1], *D = dc->side ? P : A, *peer = dc->side ? A : P;
	struct uroce_ibcm_addr to = addr_of(P);
	struct uroce_ibcm_conn *ca = NULL, *c;
	struct uroce_cm_req req = make_req(A, P, 0x111);
	struct uroce_cm_sidr_req sreq;
	const char *name = uroce_ibcm_state_name(dc->state);
	uint8_t will[UROCE_MAD_LEN];
	size_t ntx, nev, cnt;

	memset(&sreq, 0, sizeof(sreq));
	sreq.service_id = 0x0000000001110000ull | 4791;
	P->pol.mra_timeout = 16;
	A->pol.mra_timeout = 16;
	switch (dc->state) {
	case UROCE_IBCM_REQ_SENT:
		CHECK_EQ(uroce_ibcm_send_req(A->cm, &to, &req, &A->t, NULL, s->now, &ca), 0);
		break;
	case UROCE_IBCM_MRA_REQ_RCVD:
	case UROCE_IBCM_MRA_REQ_SENT:
		P->pol.on_req = REQ_MRA;
		ca = connect_pair(s, 0x111, NULL);
		break;
	case UROCE_IBCM_REQ_RCVD:
		P->pol.on_req = REQ_IGNORE;
		ca = connect_pair(s, 0x111, NULL);
		break;
	case UROCE_IBCM_REP_SENT:
	case UROCE_IBCM_REP_RCVD:
		A->pol.on_rep = REP_IGNORE;
		ca = connect_pair(s, 0x111, NULL);
		break;
	case UROCE_IBCM_MRA_REP_RCVD:
	case UROCE_IBCM_MRA_REP_SENT:
		A->pol.on_rep = REP_MRA;
		ca = connect_pair(s, 0x111, NULL);
		break;
	case UROCE_IBCM_ESTABLISHED:
		ca = connect_pair(s, 0x111, NULL);
		break;
	case UROCE_IBCM_DREQ_RCVD:
		P->pol.ignore_dreq = true;
		ca = connect_pair(s, 0x111, NULL);
		CHECK_EQ(uroce_ibcm_send_dreq(ca, NULL, 0, NULL, s->now), 0);
		run_for(s, 10 * MS);
		break;
	case UROCE_IBCM_DREQ_SENT:
		ca = connect_pair(s, 0x111, NULL);
		CHECK_EQ(uroce_ibcm_send_dreq(ca, NULL, 0, NULL, s->now), 0);
		break;
	case UROCE_IBCM_TIMEWAIT:
		ca = connect_pair(s, 0x111, NULL);
		CHECK_EQ(uroce_ibcm_send_dreq(ca, NULL, 0, NULL, s->now), 0);
		run_for(s, 10 * MS);
		break;
	case UROCE_IBCM_SIDR_REQ_SENT:
		CHECK_EQ(uroce_ibcm_send_sidr_req(A->cm, &to, &sreq, &A->t, NULL, s->now, &ca), 0);
		break;
	case UROCE_IBCM_SIDR_REQ_RCVD:
		P->pol.ignore_sidr = true;
		CHECK_EQ(uroce_ibcm_send_sidr_req(A->cm, &to, &sreq, &A->t, NULL, s->now, &ca), 0);
		run_for(s, 10 * MS);
		break;
	case UROCE_IBCM_IDLE:
		P->pol.on_req = REQ_REJECT;
		P->pol.rej_reason = UROCE_CM_REJ_CONSUMER_DEFINED;
		A->pol.keep = true;
		ca = connect_pair(s, 0x111, NULL);
		break;
	}
	c = dc->side ? P->last_new : ca;
	CHECKF(c && uroce_ibcm_conn_state(c) == dc->state, "%s", name);
	if (!c)
		goto out;
	ntx = D->ntx;
	nev = D->nev;
	cnt = uroce_ibcm_conn_count(D->cm);
	/* The last will (librdmacm's watchdog) holds what the destroy sends, byte for byte, and
	 * taking it sends nothing and changes nothing. */
	memset(will, 0xEE, sizeof(will));
	CHECKF(uroce_ibcm_will_mad(c, will) == (dc->sent[0] ? 0 : -ENOENT), "%s: will", name);
	CHECKF(D->ntx == ntx && uroce_ibcm_conn_state(c) == dc->state, "%s: will", name);
	uroce_ibcm_conn_destroy(c, s->now);
	CHECKF(uroce_ibcm_conn_count(D->cm) == cnt - (dc->linger ? 0 : 1), "%s: linger", name);
	CHECKF(D->ntx == ntx + (dc->sent[0] ? 1 : 0), "%s: %s", name, tx_str(D));
	if (dc->sent[0] && D->ntx == ntx + 1) {
		const struct uroce_cm_mad *m = &last_tx(D)->m;

		CHECKF(!memcmp(will, last_tx(D)->raw, sizeof(will)), "%s: the will differs", name);

		CHECKF(!strcmp(uroce_cm_attr_short(m->hdr.attr_id), dc->sent), "%s", name);
		if (m->hdr.attr_id == UROCE_CM_ATTR_REJ) {
			CHECKF(m->u.rej.reason == dc->reason, "%s: reason %u", name,
			       m->u.rej.reason);
			if (dc->reason == UROCE_CM_REJ_TIMEOUT)
				CHECK(m->u.rej.reject_info_len == 8 &&
				      uroce_get_be64(m->u.rej.ari) == D->guid);
		}
		if (m->hdr.attr_id == UROCE_CM_ATTR_SIDR_REP)
			CHECK_EQ(m->u.sidr_rep.status, 2);
	}
	run_all(s);
	for (size_t i = nev; i < D->nev; i++)
		CHECKF(D->ev[i].conn != c, "%s: event after destroy", name);
	CHECKF(!strcmp(ev_str(peer), dc->peer_ev), "%s: peer events \"%s\", want \"%s\"", name,
	       ev_str(peer), dc->peer_ev);
	CHECKF(uroce_ibcm_conn_count(A->cm) == 0 && uroce_ibcm_conn_count(P->cm) == 0, "%s", name);
out:
	sim_free(s);
}

/* send_rej: IDLE before a REP was exchanged, TIMEWAIT after our REP (as the kernel). */
static void test_rej_states(void)
{
	struct sim *s = sim_new(42);
	struct node *A = &s->n[0], *P = &s->n[1];
	struct uroce_ibcm_conn *ca, *cp;

	A->pol.on_rep = REP_IGNORE;
	A->pol.keep = P->pol.keep = true;
	ca = connect_pair(s, 0x111, NULL);
	cp = P->last_new;
	CHECK_EQ(uroce_ibcm_send_rej(cp, 28, NULL, 73, NULL, 0, s->now), -EINVAL);
	CHECK_EQ(uroce_ibcm_send_rej(cp, 28, NULL, 0, NULL, 149, s->now), -EINVAL);
	CHECK_EQ(uroce_ibcm_send_rej(cp, 28, NULL, 0, NULL, 0, s->now), 0);
	CHECK_EQ(uroce_ibcm_conn_state(cp), UROCE_IBCM_TIMEWAIT);
	CHECK_EQ(uroce_ibcm_send_rej(cp, 28, NULL, 0, NULL, 0, s->now), -EINVAL);
	run_for(s, 10 * MS);
	CHECK_EQ(uroce_ibcm_conn_state(ca), UROCE_IBCM_TIMEWAIT); /* REJ in REP_RCVD */
	run_all(s);
	CHECK_EQ(uroce_ibcm_conn_state(ca), UROCE_IBCM_IDLE);
	CHECK_EQ(uroce_ibcm_conn_state(cp), UROCE_IBCM_IDLE);
	CHECK_STR(ev_str(A), "REP_RECEIVED REJ_RECEIVED TIMEWAIT_EXIT");
	CHECK_STR(ev_str(P), "REQ_RECEIVED TIMEWAIT_EXIT");
	uroce_ibcm_conn_destroy(ca, s->now);
	uroce_ibcm_conn_destroy(cp, s->now);
	CHECK(uroce_ibcm_conn_count(A->cm) == 0 && uroce_ibcm_conn_count(P->cm) == 0);
	sim_free(s);
}

/* Destroyed while ESTABLISHED and the peer is silent: the DREQ is retried, then time-wait. */
static void test_destroy_established_silent(void)
{
	struct sim *s = sim_new(40);
	struct node *A = &s->n[0], *P = &s->n[1];
	struct uroce_ibcm_conn *ca = connect_pair(s, 0x111, NULL);
	uint64_t t0 = s->now;

	s->drop_all[0] = true;
	uroce_ibcm_conn_destroy(ca, t0);
	sim_run(s, t0 + 399 * MS);
	CHECK_STR(tx_str(A), "REQ RTU DREQ DREQ DREQ DREQ");
	CHECK_EQ(uroce_ibcm_conn_count(A->cm), 1);
	sim_run(s, t0 + 400 * MS + 499 * MS);
	CHECK_EQ(uroce_ibcm_conn_count(A->cm), 1); /* time-wait */
	sim_run(s, t0 + 900 * MS);
	CHECK_EQ(uroce_ibcm_conn_count(A->cm), 0);
	CHECK_STR(ev_str(A), "REP_RECEIVED");
	CHECK_EQ(ctr(A, UROCE_IBCM_C_TIMEOUTS), 1);
	(void)P;
	sim_free(s);
}

/* ---- SIDR --------------------------------------------------------------------------------- */

static void test_sidr(void)
{
	struct sim *s = sim_new(41);
	struct node *A = &s->n[0], *P = &s->n[1];
	struct uroce_ibcm_addr to = addr_of(P), nowhere = addr_nowhere(), from = addr_of(A);
	struct uroce_ibcm_timing t = {.timeout_ms = 100, .max_retries = 2};
	struct uroce_cm_sidr_req req;
	struct uroce_ibcm_conn *c, *cp;
	int token;
	uint32_t id;

	memset(&req, 0, sizeof(req));
	req.pkey = 0xFFFF;
	req.service_id = 0x0000000001110000ull | 4791;
	memcpy(req.private_data, "hello", 5);
	CHECK_EQ(uroce_ibcm_send_sidr_req(A->cm, &to, &req, &t, &token, s->now, &c), 0);
	id = uroce_ibcm_conn_local_id(c);
	CHECK(req.request_id == id && id >> 20 == A->prefix);
	CHECK_EQ(uroce_ibcm_conn_state(c), UROCE_IBCM_SIDR_REQ_SENT);
	run_all(s);
	CHECK_STR(ev_str(A), "SIDR_REP_RECEIVED");
	CHECK_STR(ev_str(P), "SIDR_REQ_RECEIVED");
	CHECK_STR(tx_str(A), "SIDR_REQ");
	CHECK_STR(tx_str(P), "SIDR_REP");
	if (A->nev == 1 && P->nev == 1 && P->ntx == 1) {
		const struct uroce_cm_sidr_rep *r = &A->ev[0].msg.u.sidr_rep;

		CHECK(A->ev[0].user == &token && A->ev[0].state == UROCE_IBCM_IDLE);
		CHECK(r->request_id == id && r->status == 0 && r->qpn == 0x333);
		CHECK(r->qkey == 0x01234567 && r->service_id == req.service_id);
		CHECK_MEM_EQ(r->private_data, "sidr-rep", 8);
		CHECK_MEM_EQ(P->ev[0].msg.u.sidr_req.private_data, "hello", 5);
		CHECK_EQ(P->ev[0].msg.u.sidr_req.pkey, 0xFFFF);
		CHECK_EQ(A->tx[0].m.hdr.tid, tid_of(A, id));
		CHECK_EQ(P->tx[0].m.hdr.tid, A->tx[0].m.hdr.tid);
	}
	CHECK(uroce_ibcm_conn_count(A->cm) == 0 && uroce_ibcm_conn_count(P->cm) == 0);

	/* The same SIDR_REQ twice while it is being handled: one conn, one duplicate. */
	P->pol.ignore_sidr = true;
	uroce_ibcm_recv(P->cm, &from, A->tx[0].raw, UROCE_MAD_LEN, s->now);
	uroce_ibcm_recv(P->cm, &from, A->tx[0].raw, UROCE_MAD_LEN, s->now);
	CHECK(uroce_ibcm_conn_count(P->cm) == 1 && ctr(P, UROCE_IBCM_C_RX_DUPLICATES) == 1);
	cp = P->last_new;
	CHECK(cp && uroce_ibcm_conn_remote_id(cp) == id);
	CHECK(uroce_ibcm_send_sidr_rep(cp, &(struct uroce_cm_sidr_rep){.info_len = 73}, s->now) ==
	      -EINVAL);
	uroce_ibcm_conn_destroy(cp, s->now);
	CHECK_EQ(uroce_ibcm_conn_count(P->cm), 0);
	run_all(s);
	CHECK_EQ(ctr(A, UROCE_IBCM_C_RX_UNKNOWN_ID), 1);

	/* Nobody answers: SIDR_REQ_ERROR after max_retries + 1 requests. */
	A->ntx = A->nev = 0;
	CHECK_EQ(uroce_ibcm_send_sidr_req(A->cm, &nowhere, &req, &t, NULL, s->now, &c), 0);
	uint64_t t0 = s->now;

	run_all(s);
	CHECK_STR(tx_str(A), "SIDR_REQ SIDR_REQ SIDR_REQ");
	CHECK_STR(ev_str(A), "SIDR_REQ_ERROR");
	CHECK(A->nev == 1 && A->ev[0].at == t0 + 300 * MS);
	CHECK_EQ(uroce_ibcm_conn_count(A->cm), 0);
	sim_free(s);
}

/* ---- re-entrancy -------------------------------------------------------------------------- */

static void test_reentrancy(void)
{
	struct sim *s;
	struct node *A, *P;

	/* Destroy from inside REQ_RECEIVED: the REJ goes out from inside the callback. */
	s = sim_new(50);
	A = &s->n[0];
	P = &s->n[1];
	A->pol.advance_in_cb = P->pol.advance_in_cb = true;
	P->pol.on_req = REQ_DESTROY;
	connect_pair(s, 0x111, NULL);
	run_all(s);
	CHECK_STR(ev_str(A), "REJ_RECEIVED");
	CHECK(A->nev == 1 && A->ev[0].msg.u.rej.reason == UROCE_CM_REJ_CONSUMER_DEFINED);
	CHECK(uroce_ibcm_conn_count(A->cm) == 0 && uroce_ibcm_conn_count(P->cm) == 0);
	sim_free(s);

	/* Destroy from inside REP_RECEIVED: REJ for the REP. */
	s = sim_new(51);
	A = &s->n[0];
	P = &s->n[1];
	A->pol.advance_in_cb = true;
	A->pol.on_rep = REP_DESTROY;
	connect_pair(s, 0x111, NULL);
	run_all(s);
	CHECK_STR(tx_str(A), "REQ REJ");
	CHECK(A->ntx == 2 && A->tx[1].m.u.rej.msg_rejected == UROCE_CM_MSG_REF_REP);
	CHECK_STR(ev_str(P), "REQ_RECEIVED REJ_RECEIVED");
	CHECK(uroce_ibcm_conn_count(A->cm) == 0 && uroce_ibcm_conn_count(P->cm) == 0);
	sim_free(s);

	/* Destroy from inside DREQ_RECEIVED: the destroy answers the DREP. */
	s = sim_new(52);
	A = &s->n[0];
	P = &s->n[1];
	P->pol.destroy_on_dreq = true;
	CHECK_EQ(uroce_ibcm_send_dreq(connect_pair(s, 0x111, NULL), NULL, 0, NULL, s->now), 0);
	run_all(s);
	CHECK_STR(ev_str(A), "REP_RECEIVED DREP_RECEIVED TIMEWAIT_EXIT");
	CHECK_STR(ev_str(P), "REQ_RECEIVED RTU_RECEIVED DREQ_RECEIVED");
	CHECK(uroce_ibcm_conn_count(A->cm) == 0 && uroce_ibcm_conn_count(P->cm) == 0);
	sim_free(s);

	/* Destroy from inside MRA_RECEIVED: REJ TIMEOUT. */
	s = sim_new(53);
	A = &s->n[0];
	P = &s->n[1];
	P->pol.on_req = REQ_MRA;
	P->pol.mra_timeout = 10;
	A->pol.destroy_on_mra = true;
	connect_pair(s, 0x111, NULL);
	run_all(s);
	CHECK_STR(tx_str(A), "REQ REJ");
	CHECK(A->ntx == 2 && A->tx[1].m.u.rej.reason == UROCE_CM_REJ_TIMEOUT);
	CHECK_STR(ev_str(P), "REQ_RECEIVED REJ_RECEIVED");
	CHECK(uroce_ibcm_conn_count(A->cm) == 0 && uroce_ibcm_conn_count(P->cm) == 0);
	sim_free(s);

	/* Destroy another conn (with a timer armed) from inside an event. */
	s = sim_new(54);
	A = &s->n[0];
	P = &s->n[1];
	{
		struct uroce_cm_req req = make_req(A, P, 0x444);
		struct uroce_ibcm_addr nowhere = addr_nowhere();
		struct uroce_ibcm_conn *other;

		CHECK(uroce_ibcm_send_req(A->cm, &nowhere, &req, &A->t, NULL, s->now, &other) == 0);
		A->pol.destroy_other = other;
		A->pol.advance_in_cb = true;
		connect_pair(s, 0x111, NULL);
		CHECK(A->pol.destroy_other == NULL);
		CHECK_EQ(uroce_ibcm_conn_count(A->cm), 1);
		CHECK_STR(tx_str(A), "REQ REQ REJ RTU");
		run_for(s, 5000 * MS);
		CHECK_STR(ev_str(A), "REP_RECEIVED");
	}
	sim_free(s);

	/* A second destroy of a lingering conn, and calls on it, are refused harmlessly. */
	s = sim_new(55);
	A = &s->n[0];
	{
		struct uroce_ibcm_conn *ca = connect_pair(s, 0x111, NULL);

		uroce_ibcm_conn_destroy(ca, s->now); /* DREQ_SENT, lingering */
		uroce_ibcm_conn_destroy(ca, s->now);
		CHECK_EQ(uroce_ibcm_send_dreq(ca, NULL, 0, NULL, s->now), -EINVAL);
		CHECK_EQ(uroce_ibcm_establish(ca), -EINVAL);
		CHECK_STR(tx_str(A), "REQ RTU DREQ");
		run_all(s);
		CHECK_EQ(uroce_ibcm_conn_count(A->cm), 0);
	}
	sim_free(s);
}

/* ---- malformed, unknown and out-of-state MADs -------------------------------------------- */

static void put_attr(uint8_t *mad, uint16_t attr)
{
	uroce_put_be16(mad + 16, attr);
}

static void test_malformed(void)
{
	struct sim *s = sim_new(60);
	struct node *A = &s->n[0], *P = &s->n[1];
	struct uroce_ibcm_addr from = addr_of(A), pfrom = addr_of(P);
	struct uroce_cm_req req = make_req(A, P, 0x111);
	struct uroce_ibcm_addr to = addr_of(P);
	struct uroce_ibcm_conn *ca;
	uint8_t good[UROCE_MAD_LEN], m[UROCE_MAD_LEN];
	uint64_t bad = 0, unknown = 0, rx;
	uint32_t aid;
	static const uint16_t attrs[] = {0x0001, 0x0019, 0x001A, 0x00FF, 0x0000, 0x0010 - 1};

	CHECK_EQ(uroce_ibcm_send_req(A->cm, &to, &req, &A->t, NULL, s->now, &ca), 0);
	memcpy(good, A->tx[0].raw, sizeof(good));

	/* Every truncated length. */
	for (size_t len = 0; len < UROCE_MAD_LEN; len++, bad++)
		uroce_ibcm_recv(P->cm, &from, good, len, s->now);
	uroce_ibcm_recv(P->cm, &from, NULL, UROCE_MAD_LEN, s->now);
	uroce_ibcm_recv(P->cm, NULL, good, UROCE_MAD_LEN, s->now);
	bad += 2;
	/* Header fields: base version, class, class version, method. */
	for (int f = 0; f < 6; f++, bad++) {
		static const uint8_t off[] = {0, 1, 2, 3, 3, 3},
				     val[] = {2, 0x04, 1, 0x81, 0x01, 0x83};

		memcpy(m, good, sizeof(m));
		m[off[f]] = val[f];
		uroce_ibcm_recv(P->cm, &from, m, sizeof(m), s->now);
	}
	/* Attributes without a state machine here (ClassPortInfo, LAP, APR, unknown). */
	for (size_t i = 0; i < sizeof(attrs) / sizeof(attrs[0]); i++, bad++) {
		memcpy(m, good, sizeof(m));
		put_attr(m, attrs[i]);
		uroce_ibcm_recv(P->cm, &from, m, sizeof(m), s->now);
	}
	/* A REQ or REP with comm ID 0. */
	memcpy(m, good, sizeof(m));
	uroce_put_be32(m + 24, 0);
	uroce_ibcm_recv(P->cm, &from, m, sizeof(m), s->now);
	put_attr(m, UROCE_CM_ATTR_REP);
	uroce_ibcm_recv(A->cm, &pfrom, m, sizeof(m), s->now);
	CHECK_EQ(ctr(P, UROCE_IBCM_C_RX_MALFORMED), bad + 1);
	CHECK_EQ(ctr(A, UROCE_IBCM_C_RX_MALFORMED), 1);
	CHECK_EQ(ctr(P, UROCE_IBCM_C_RX_MADS), bad + 1);
	CHECK(P->nev == 0 && uroce_ibcm_conn_count(P->cm) == 0);

	/* Unknown comm IDs: counted and dropped, a DREQ answered with a DREP. */
	for (uint16_t attr = UROCE_CM_ATTR_MRA; attr <= UROCE_CM_ATTR_SIDR_REP; attr++) {
		if (attr == UROCE_CM_ATTR_SIDR_REQ)
			continue;
		memset(m, 0, sizeof(m));
		memcpy(m, good, UROCE_MAD_HDR_LEN);
		put_attr(m, attr);
		uroce_put_be32(m + 24, 0x12345);     /* local comm ID */
		uroce_put_be32(m + 28, 0x00ABCDEFu); /* remote comm ID: nobody */
		if (attr == UROCE_CM_ATTR_SIDR_REP)
			uroce_put_be32(m + 24, 0x00ABCDEFu);
		uroce_ibcm_recv(A->cm, &pfrom, m, sizeof(m), s->now);
		unknown++;
	}
	CHECK_EQ(ctr(A, UROCE_IBCM_C_RX_UNKNOWN_ID), unknown);
	CHECK_STR(tx_str(A), "REQ DREP");
	if (A->ntx == 2) {
		CHECK_EQ(A->tx[1].m.u.drep.local_comm_id, 0x00ABCDEF);
		CHECK_EQ(A->tx[1].m.u.drep.remote_comm_id, 0x12345);
		CHECK_EQ(A->tx[1].m.hdr.tid, A->tx[0].m.hdr.tid); /* the DREQ's, copied from good */
	}

	/* Known comm ID, wrong state: A's conn is REQ_SENT (remote ID still 0). */
	rx = ctr(A, UROCE_IBCM_C_RX_BAD_STATE);
	{
		static const uint16_t wrong[] = {UROCE_CM_ATTR_RTU, UROCE_CM_ATTR_DREP,
						 UROCE_CM_ATTR_SIDR_REP, UROCE_CM_ATTR_MRA};

		for (size_t i = 0; i < sizeof(wrong) / sizeof(wrong[0]); i++) {
			memset(m, 0, sizeof(m));
			memcpy(m, good, UROCE_MAD_HDR_LEN);
			put_attr(m, wrong[i]);
			uroce_put_be32(m + 24, wrong[i] == UROCE_CM_ATTR_SIDR_REP
						       ? uroce_ibcm_conn_local_id(ca)
						       : 0);
			uroce_put_be32(m + 28, uroce_ibcm_conn_local_id(ca));
			if (wrong[i] == UROCE_CM_ATTR_MRA)
				m[24 + 8] = 2 << 6; /* message MRAed: LAP */
			uroce_ibcm_recv(A->cm, &pfrom, m, sizeof(m), s->now);
		}
	}
	CHECK_EQ(ctr(A, UROCE_IBCM_C_RX_BAD_STATE), rx + 4);
	CHECK(A->nev == 0 && uroce_ibcm_conn_state(ca) == UROCE_IBCM_REQ_SENT);

	/* Random CM MADs with a valid header, and random corruptions of real ones: no crash, every
	 * one counted (the engines are freed with whatever conns they made: ASan checks leaks). */
	rx = ctr(P, UROCE_IBCM_C_RX_MADS);
	aid = uroce_ibcm_conn_local_id(ca); /* ca may go: random REJs reach it */
	for (int i = 0; i < 20000; i++) {
		struct node *dst = &s->n[i & 1];
		struct uroce_ibcm_addr *src = (i & 1) ? &from : &pfrom;

		if (i % 3 == 0) {
			for (size_t j = 0; j < sizeof(m); j++)
				m[j] = (uint8_t)rnd(s);
			memcpy(m, good, 4);
			put_attr(m, (uint16_t)(0x10 + rnd(s) % 9));
		} else {
			const struct node *o = &s->n[rnd(s) & 1];

			memcpy(m, o->ntx ? o->tx[rnd(s) % o->ntx].raw : good, sizeof(m));
			for (int k = 0; k < 3; k++)
				m[24 + rnd(s) % 232] ^= (uint8_t)(1u << (rnd(s) % 8));
			if (i % 7 == 0) /* aim at live conns of the other side */
				uroce_put_be32(m + 28, aid);
		}
		uroce_ibcm_recv(dst->cm, src, m, sizeof(m), s->now);
		if (i % 1000 == 999)
			run_for(s, 150 * MS);
	}
	CHECK_GE(ctr(P, UROCE_IBCM_C_RX_MADS), rx + 10000);
	sim_free(s);
}

/* ---- comm IDs, configuration, send errors ------------------------------------------------- */

static unsigned light_sends;

static int light_send(void *arg, const struct uroce_ibcm_addr *to, const uint8_t *mad)
{
	(void)arg;
	(void)to;
	(void)mad;
	light_sends++;
	return 0;
}

static void light_event(void *arg, const struct uroce_ibcm_event *ev)
{
	(void)arg;
	(void)ev;
}

static void test_comm_ids(void)
{
	static const struct uroce_ibcm_ops ops = {.send = light_send, .event = light_event};
	struct uroce_ibcm_cfg cfg = {.ops = &ops, .comm_id_prefix = 0xABC, .seed = 0xFFFFE};
	struct uroce_ibcm_timing t = {.timeout_ms = 100, .max_retries = 1};
	struct uroce_ibcm_addr to = addr_nowhere();
	struct uroce_cm_sidr_req req;
	struct uroce_ibcm *cm;
	struct uroce_ibcm_conn *c[3], *x;
	uint32_t xid;
	unsigned bad = 0;

	memset(&req, 0, sizeof(req));
	cfg.comm_id_prefix = 0x1000;
	CHECK_EQ(uroce_ibcm_create(&cfg, &cm), -EINVAL);
	cfg.comm_id_prefix = 0xABC;
	cfg.ops = NULL;
	CHECK_EQ(uroce_ibcm_create(&cfg, &cm), -EINVAL);
	cfg.ops = &ops;
	CHECK_EQ(uroce_ibcm_create(&cfg, &cm), 0);
	CHECK(!strcmp(uroce_ibcm_state_name(UROCE_IBCM_MRA_REP_RCVD), "MRA_REP_RCVD"));
	CHECK(!strcmp(uroce_ibcm_counter_name(UROCE_IBCM_C_RX_UNKNOWN_ID),
		      "cm_rx_unknown_comm_id"));
	CHECK(uroce_ibcm_counter_name(UROCE_IBCM_C_COUNT) == NULL);

	/* From the seed, wrapping past 0. */
	for (int i = 0; i < 3; i++)
		CHECK_EQ(uroce_ibcm_send_sidr_req(cm, &to, &req, &t, NULL, T0, &c[i]), 0);
	CHECK_EQ(uroce_ibcm_conn_local_id(c[0]), (0xABCu << 20 | 0xFFFFE));
	CHECK_EQ(uroce_ibcm_conn_local_id(c[1]), (0xABCu << 20 | 0xFFFFF));
	CHECK_EQ(uroce_ibcm_conn_local_id(c[2]), (0xABCu << 20 | 0x00001));
	x = c[2];
	xid = uroce_ibcm_conn_local_id(x);
	uroce_ibcm_conn_destroy(c[0], T0);
	uroce_ibcm_conn_destroy(c[1], T0);
	/* A full turn of the 20-bit counter: the ID in use is skipped, 0 never given. */
	for (uint32_t i = 0; i < (1u << 20) + 4; i++) {
		struct uroce_ibcm_conn *y;
		uint32_t id;

		if (uroce_ibcm_send_sidr_req(cm, &to, &req, &t, NULL, T0, &y)) {
			bad++;
			break;
		}
		id = uroce_ibcm_conn_local_id(y);
		bad += id == xid || (id & 0xFFFFF) == 0 || id >> 20 != 0xABC;
		uroce_ibcm_conn_destroy(y, T0);
	}
	CHECK_EQ(bad, 0);
	CHECK_EQ(uroce_ibcm_conn_count(cm), 1);
	/* Many at once: the tables grow; every ID distinct; timers all fire. */
	{
		enum { MANY = 5000 };
		struct uroce_ibcm_conn **v = calloc(MANY, sizeof(*v));

		for (int i = 0; i < MANY; i++)
			CHECK(uroce_ibcm_send_sidr_req(cm, &to, &req, &t, NULL, T0 + (uint64_t)i,
						       &v[i]) == 0);
		CHECK_EQ(uroce_ibcm_conn_count(cm), MANY + 1);
		CHECK_EQ(uroce_ibcm_next_deadline(cm), T0 + 100 * MS);
		light_sends = 0;
		uroce_ibcm_advance(cm, T0 + 100 * MS + 2499);
		CHECK_EQ(light_sends, 2501); /* x and the first 2500 */
		CHECK_EQ(uroce_ibcm_next_deadline(cm), T0 + 100 * MS + 2500);
		for (int i = 0; i < MANY; i += 2)
			uroce_ibcm_conn_destroy(v[i], T0);
		uroce_ibcm_advance(cm, T0 + 10000 * MS); /* first resends of the rest */
		uroce_ibcm_advance(cm, T0 + 20000 * MS); /* and their errors */
		CHECK_EQ(uroce_ibcm_next_deadline(cm), UINT64_MAX);
		for (int i = 1; i < MANY; i += 2)
			CHECK_EQ(uroce_ibcm_conn_state(v[i]), UROCE_IBCM_IDLE);
		free(v);
	}
	uroce_ibcm_destroy(cm); /* frees the IDLE conns left */
}

/* The send callback fails: counted, and the timer's resend gets through. */
static void test_send_error(void)
{
	struct sim *s = sim_new(70);
	struct node *A = &s->n[0], *P = &s->n[1];
	struct uroce_ibcm_conn *ca;

	A->send_fail = true;
	ca = connect_pair(s, 0x111, NULL);
	CHECK(ctr(A, UROCE_IBCM_C_TX_ERRORS) == 1 && ctr(A, UROCE_IBCM_C_TX_MADS) == 0);
	CHECK_EQ(uroce_ibcm_conn_state(ca), UROCE_IBCM_REQ_SENT);
	A->send_fail = false;
	run_for(s, 200 * MS);
	CHECK_EQ(uroce_ibcm_conn_state(ca), UROCE_IBCM_ESTABLISHED);
	CHECK_STR(ev_str(P), "REQ_RECEIVED RTU_RECEIVED");
	CHECK(ctr(A, UROCE_IBCM_C_TX_ERRORS) == 1 && ctr(A, UROCE_IBCM_C_TX_MADS) == 2);
	sim_free(s);
}

/* ---- randomized soak ---------------------------------------------------------------------- */

enum { ACT_CONNECT, ACT_ABORT, ACT_DATA, ACT_DISC };
enum plan {
	PLAN_A_DREQ,	/* the active side disconnects */
	PLAN_P_DREQ,	/* the passive side disconnects */
	PLAN_BOTH_DREQ, /* both at the same instant */
	PLAN_A_DESTROY, /* the active side destroys its established conn */
	PLAN_P_DESTROY,
	PLAN_REJECT, /* the passive side rejects the REQ */
	PLAN_ABORT,  /* the active side destroys its conn 0-3 ms after the REQ */
	PLAN_COUNT
};

#define SOAK_CONNS 24
#define SOAK_POOL  (SOAK_CONNS * 8)

struct side {
	struct uroce_ibcm_conn *conn;
	uint32_t local_id;
	int idx;
	unsigned ev[NEV];
	bool est;	/* ESTABLISHED seen (REP answered, RTU received, or data) */
	bool reached;	/* the passive side took part in the connection (est or a DREQ) */
	bool disc;	/* disconnected after being connected */
	bool err;	/* REJ, REQ_ERROR or REP_ERROR before being connected */
	bool aborted;	/* destroyed by its user before being connected */
	bool destroyed; /* the user let go */
	uint16_t rej_reason;
};

struct soak {
	struct side a[SOAK_CONNS];
	struct side p[SOAK_POOL];
	int np;
	enum plan plan[SOAK_CONNS];
	uint32_t a_remote[SOAK_CONNS]; /* the passive comm ID the active side was answered by */
	struct uroce_ibcm_timing t;
};

static void soak_destroy(struct side *sd, uint64_t now)
{
	if (sd->est)
		sd->disc = true;
	else if (!sd->err)
		sd->aborted = true;
	sd->destroyed = true;
	uroce_ibcm_conn_destroy(sd->conn, now);
}

static struct side *soak_passive(struct soak *k, int idx)
{
	for (int i = 0; i < k->np; i++)
		if (k->p[i].idx == idx && k->p[i].local_id == k->a_remote[idx])
			return &k->p[i];
	return NULL;
}

static void soak_event(struct node *n, const struct uroce_ibcm_event *ev)
{
	struct sim *s = n->s;
	struct soak *k = s->app;
	uint64_t now = s->now;
	struct side *sd = uroce_ibcm_conn_user(ev->conn);

	if (ev->type == UROCE_IBCM_EV_REQ_RECEIVED) {
		const uint8_t *pd = ev->msg->u.req.private_data;
		struct uroce_cm_rep rep = make_rep(0);

		CHECK(n->idx == 1 && sd == NULL && k->np < SOAK_POOL);
		if (k->np >= SOAK_POOL)
			return;
		sd = &k->p[k->np++];
		memset(sd, 0, sizeof(*sd));
		sd->conn = ev->conn;
		sd->local_id = uroce_ibcm_conn_local_id(ev->conn);
		sd->idx = pd[0] | pd[1] << 8;
		sd->ev[ev->type]++;
		CHECK_LT(sd->idx, SOAK_CONNS);
		uroce_ibcm_conn_set_user(ev->conn, sd);
		if (k->plan[sd->idx] == PLAN_REJECT) {
			CHECK(uroce_ibcm_send_rej(ev->conn, UROCE_CM_REJ_CONSUMER_DEFINED, NULL, 0,
						  "no", 2, now) == 0);
			sd->err = true;
			soak_destroy(sd, now);
			return;
		}
		rep.local_qpn = 0x20000u + (uint32_t)sd->idx;
		CHECK_EQ(uroce_ibcm_send_rep(ev->conn, &rep, &k->t, now), 0);
		return;
	}
	CHECK(sd != NULL);
	if (!sd)
		return;
	CHECKF(!sd->destroyed, "event %s after destroy", ev_names[ev->type]);
	CHECK(sd->conn == ev->conn);
	sd->ev[ev->type]++;
	switch (ev->type) {
	case UROCE_IBCM_EV_REP_RECEIVED:
		CHECK_EQ(n->idx, 0);
		CHECK_EQ(uroce_ibcm_send_rtu(ev->conn, NULL, 0, now), 0);
		sd->est = true;
		k->a_remote[sd->idx] = ev->msg->u.rep.local_comm_id;
		/* The first data packet, a little after the RTU (so either may establish the
		 * passive side), retried as RC would (up to 8 tries). */
		schedule(s, now + LAT + rnd(s) % (8 * MS), ACT_DATA, sd->idx, 0);
		schedule(s, now + rnd(s) % (200 * MS), ACT_DISC, sd->idx, 0);
		break;
	case UROCE_IBCM_EV_RTU_RECEIVED:
		sd->est = sd->reached = true;
		break;
	case UROCE_IBCM_EV_DREQ_RECEIVED:
		CHECK_EQ(uroce_ibcm_send_drep(ev->conn, NULL, 0, now), 0);
		sd->reached = true;
		sd->disc = true;
		break;
	case UROCE_IBCM_EV_DREP_RECEIVED:
	case UROCE_IBCM_EV_DREQ_ERROR:
		sd->disc = true;
		break;
	case UROCE_IBCM_EV_TIMEWAIT_EXIT:
		soak_destroy(sd, now);
		break;
	case UROCE_IBCM_EV_REJ_RECEIVED:
		sd->rej_reason = ev->msg->u.rej.reason;
		if (sd->est)
			sd->disc = true; /* a stale REJ crossing our DREQ: the connection is over */
		else
			sd->err = true;
		soak_destroy(sd, now);
		break;
	case UROCE_IBCM_EV_REQ_ERROR:
	case UROCE_IBCM_EV_REP_ERROR:
		sd->err = true;
		soak_destroy(sd, now);
		break;
	case UROCE_IBCM_EV_REQ_RECEIVED:
	case UROCE_IBCM_EV_MRA_RECEIVED:
	case UROCE_IBCM_EV_SIDR_REQ_RECEIVED:
	case UROCE_IBCM_EV_SIDR_REP_RECEIVED:
	case UROCE_IBCM_EV_SIDR_REQ_ERROR:
		CHECKF(0, "unexpected %s", ev_names[ev->type]);
		break;
	}
}

/* A side disconnects if it is connected; 1 when it has to wait (not established yet). */
static int soak_disc(struct side *sd, bool destroy, uint64_t now)
{
	enum uroce_ibcm_state st;

	if (!sd || sd->destroyed)
		return -1;
	st = uroce_ibcm_conn_state(sd->conn);
	if (st == UROCE_IBCM_REP_SENT || st == UROCE_IBCM_MRA_REP_RCVD)
		return 1;
	if (st != UROCE_IBCM_ESTABLISHED)
		return 0;
	if (destroy)
		soak_destroy(sd, now);
	else
		CHECK_EQ(uroce_ibcm_send_dreq(sd->conn, NULL, 0, NULL, now), 0);
	return 0;
}

static void soak_action(struct sim *s, const struct action *a)
{
	struct soak *k = s->app;
	struct node *A = &s->n[0], *P = &s->n[1];
	struct side *sa = &k->a[a->idx], *sp;
	uint64_t now = s->now;

	switch (a->kind) {
	case ACT_CONNECT: {
		struct uroce_cm_req req = make_req(A, P, 0x10000u + (uint32_t)a->idx);
		struct uroce_ibcm_addr to = addr_of(P);

		req.private_data[0] = (uint8_t)a->idx;
		req.private_data[1] = (uint8_t)(a->idx >> 8);
		memset(sa, 0, sizeof(*sa));
		sa->idx = a->idx;
		CHECK_EQ(uroce_ibcm_send_req(A->cm, &to, &req, &k->t, sa, now, &sa->conn), 0);
		if (k->plan[a->idx] == PLAN_ABORT)
			schedule(s, now + rnd(s) % (3 * MS), ACT_ABORT, a->idx, 0);
		break;
	}
	case ACT_ABORT:
		if (!sa->destroyed)
			soak_destroy(sa, now);
		break;
	case ACT_DATA:
		sp = soak_passive(k, a->idx);
		if (!sp || sp->destroyed)
			break;
		if (rnd(s) % 100 < s->loss_pct) {
			if (a->arg < 8)
				schedule(s, now + 10 * MS, ACT_DATA, a->idx, a->arg + 1);
			break;
		}
		if (!uroce_ibcm_establish(sp->conn))
			sp->est = sp->reached = true;
		break;
	case ACT_DISC: {
		enum plan pl = k->plan[a->idx];
		int r = 0;

		sp = soak_passive(k, a->idx);
		if (pl == PLAN_P_DREQ || pl == PLAN_P_DESTROY || pl == PLAN_BOTH_DREQ) {
			r = soak_disc(sp, pl == PLAN_P_DESTROY, now);
			if (r == 1) { /* not established yet: try again later */
				schedule(s, now + 20 * MS, ACT_DISC, a->idx, 0);
				break;
			}
		}
		if (pl == PLAN_A_DREQ || pl == PLAN_A_DESTROY || pl == PLAN_BOTH_DREQ || r < 0)
			soak_disc(sa, pl == PLAN_A_DESTROY, now);
		break;
	}
	}
}

struct soak_stats {
	unsigned est, err, aborted, p_err;
	uint64_t ctr[UROCE_IBCM_C_COUNT];
	unsigned ev[NEV];
};

static void soak_one(uint64_t seed, unsigned loss, struct soak_stats *st)
{
	struct sim *s = sim_new(seed);
	struct soak *k = calloc(1, sizeof(*k));
	struct node *A = &s->n[0], *P = &s->n[1];

	s->app = k;
	s->on_action = soak_action;
	s->loss_pct = loss;
	s->dup_pct = 10;
	s->jitter = 3 * MS; /* reorders: latency 1-4 ms */
	A->hook = P->hook = soak_event;
	k->t.timeout_ms = 50;
	k->t.max_retries = 15;
	for (int i = 0; i < SOAK_CONNS; i++) {
		k->plan[i] = (enum plan)(rnd(s) % PLAN_COUNT);
		schedule(s, T0 + (uint64_t)i * 7 * MS, ACT_CONNECT, i, 0);
	}
	sim_run(s, T0 + 600000 * MS);

	CHECKF(s->nq == 0 && s->nact == 0, "seed %llu loss %u: not settled",
	       (unsigned long long)seed, loss);
	CHECKF(uroce_ibcm_conn_count(A->cm) == 0 && uroce_ibcm_conn_count(P->cm) == 0,
	       "seed %llu loss %u: conns left %zu %zu", (unsigned long long)seed, loss,
	       uroce_ibcm_conn_count(A->cm), uroce_ibcm_conn_count(P->cm));
	for (int i = 0; i < SOAK_CONNS; i++) {
		struct side *a = &k->a[i];
		int reached = 0, np = 0;

		for (int j = 0; j < k->np; j++) {
			struct side *p = &k->p[j];

			if (p->idx != i)
				continue;
			np++;
			CHECK(p->destroyed && p->ev[UROCE_IBCM_EV_REQ_RECEIVED] == 1);
			CHECK_LE(p->ev[UROCE_IBCM_EV_RTU_RECEIVED], 1);
			CHECK_LE(p->ev[UROCE_IBCM_EV_TIMEWAIT_EXIT], 1);
			if (p->reached) {
				reached++;
				CHECK_EQ(p->local_id, k->a_remote[i]);
				CHECK(p->disc && !p->err);
			} else {
				CHECK(p->err); /* REP_ERROR or REJ */
			}
		}
		CHECKF(a->destroyed, "seed %llu loss %u conn %d", (unsigned long long)seed, loss,
		       i);
		CHECK_LE(a->ev[UROCE_IBCM_EV_REP_RECEIVED], 1);
		CHECK_LE(a->ev[UROCE_IBCM_EV_TIMEWAIT_EXIT], 1);
		CHECK_EQ(a->est + a->err + a->aborted, 1);
		if (a->est) {
			/* Connected on both sides (the passive side may have been told by the DREQ
			 * before the RTU), and disconnected on both. */
			CHECKF(reached == 1 && a->disc,
			       "seed %llu loss %u conn %d plan %d: reached %d",
			       (unsigned long long)seed, loss, i, k->plan[i], reached);
		} else {
			CHECKF(reached == 0, "seed %llu loss %u conn %d plan %d",
			       (unsigned long long)seed, loss, i, k->plan[i]);
			if (k->plan[i] == PLAN_REJECT && a->err &&
			    a->ev[UROCE_IBCM_EV_REJ_RECEIVED])
				CHECK_EQ(a->rej_reason, UROCE_CM_REJ_CONSUMER_DEFINED);
			if (k->plan[i] != PLAN_REJECT && k->plan[i] != PLAN_ABORT)
				CHECKF(0, "seed %llu loss %u conn %d plan %d failed to connect",
				       (unsigned long long)seed, loss, i, k->plan[i]);
		}
		st->est += a->est;
		st->err += a->err;
		st->aborted += a->aborted;
		st->p_err += (unsigned)(np - reached);
		for (size_t e = 0; e < NEV; e++)
			st->ev[e] += a->ev[e];
	}
	for (int j = 0; j < k->np; j++)
		for (size_t e = 0; e < NEV; e++)
			st->ev[e] += k->p[j].ev[e];
	for (int c = 0; c < UROCE_IBCM_C_COUNT; c++)
		st->ctr[c] +=
			ctr(A, (enum uroce_ibcm_counter)c) + ctr(P, (enum uroce_ibcm_counter)c);
	CHECK_BAIL();
	free(k);
	sim_free(s);
}

static void test_soak(void)
{
	static const unsigned losses[] = {0, 10, 30};

	for (size_t l = 0; l < sizeof(losses) / sizeof(losses[0]); l++) {
		struct soak_stats st;

		memset(&st, 0, sizeof(st));
		for (uint64_t seed = 1; seed <= 40; seed++)
			soak_one(seed * 1000 + l, losses[l], &st);
		printf("soak loss %2u%%: %u conns established, %u rejected/failed, %u aborted, %u "
		       "passive failed;",
		       losses[l], st.est, st.err, st.aborted, st.p_err);
		for (int c = 0; c < UROCE_IBCM_C_COUNT; c++)
			if (st.ctr[c])
				printf(" %s %llu",
				       uroce_ibcm_counter_name((enum uroce_ibcm_counter)c),
				       (unsigned long long)st.ctr[c]);
		printf("; events:");
		for (size_t e = 0; e < NEV; e++)
			if (st.ev[e])
				printf(" %s %u", ev_names[e], st.ev[e]);
		printf("\n");
	}
}

int main(void)
{
	test_lifecycle();
	test_reject(UROCE_CM_REJ_CONSUMER_DEFINED);
	test_reject(UROCE_CM_REJ_INVALID_SERVICE_ID);
	test_req_timeout();
	test_rep_timeout();
	test_lost_rtu_establish();
	test_dup_req_resends_rep();
	test_dup_rep_resends_rtu();
	test_dup_req_timewait_stale();
	test_stale_connection();
	test_mra_req(false);
	test_mra_req(true);
	test_mra_rep();
	test_dreq_lost(false);
	test_dreq_lost(true);
	test_dreq_error();
	test_simultaneous_dreq();
	for (size_t i = 0; i < sizeof(destroy_cases) / sizeof(destroy_cases[0]); i++)
		test_destroy_case(&destroy_cases[i]);
	test_destroy_established_silent();
	test_rej_states();
	test_sidr();
	test_reentrancy();
	test_malformed();
	test_comm_ids();
	test_send_error();
	CHECK_BAIL();
	test_soak();
	return check_exit("test_ibcm");
}
