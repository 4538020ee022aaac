/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for the connection manager (src/cm): its codecs, and the IB CM engine
 * (cm/ibcm.h) driven by a sequence of steps. The codec checks, run over the whole input and
 * over every MAD the steps deliver (the MAD, its REQ private data, its REQ service ID):
 *  1. a whole CM MAD (uroce_cm_mad_decode). When it decodes, encoding gives 256 bytes that decode
 *     again to an encoding identical to the first (reserved bits are dropped once, then stable);
 *  2. a REQ's private data: the 36-byte RDMA CM IP header (uroce_cma_hdr_decode), re-encoded to
 *     the same bytes but for the reserved low nibble of byte 1;
 *  3. a service ID (the first 8 bytes; a REQ's service ID) split into port space and port and
 *     joined again.
 * The engine: the input is read as steps (fuzz_cm.h): MADs received from two peers, optionally
 * patched to name a connection the engine holds (or held) so that they reach deep states; the
 * engine's own MADs received back (it connects to itself); virtual time advancing; and the
 * application's calls (connect, accept, reject, MRA, RTU, establish, DREQ, DREP, destroy, SIDR)
 * and what its event handler does by itself (answer, destroy, give the engine its latest MAD
 * back from inside the callback); time-wait of 10 ms or 0. Checked on the way:
 *  - every MAD the engine sends decodes, with the header of a CM SEND;
 *  - each call succeeds in exactly the states ibcm.h allows it (-EINVAL, or -EISCONN, otherwise,
 *    with nothing sent and no state change), sends what it says and leads to the state it says;
 *  - a destroy sends exactly the MAD uroce_ibcm_will_mad gave for the connection just before,
 *    or nothing when it gave -ENOENT;
 *  - an event names a connection the application holds (a new one for REQ/SIDR_REQ received),
 *    with the state the event promises; a connection held goes IDLE only by the application's
 *    own call or with an event;
 *  - after the timers due at a time have run, no deadline is at or before it.
 * After the input the application does its part (answers each REQ with a REP, each REP with an
 * RTU, each DREQ with a DREP; answers and destroys each SIDR_REQ; destroys what it made IDLE)
 * and every timer runs out (a bounded number of rounds): each connection still held must then
 * be ESTABLISHED (issue 21: no connection stays half-open; every other state has a timer that
 * ends it, with an event), and the engine must hold no other (those the application destroyed
 * included). Then a DREQ on each and the timers run out again: nothing may be left, and ASan
 * sees that nothing leaked. Any broken invariant aborts (a crash for libFuzzer, a failure for
 * the replay). Seeds (corpus/cm, make_corpus_cm.c): the CM exchanges of the captures in
 * tests/vectors replayed from either side, and the engine connected to itself.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cm/cma.h"
#include "cm/ibcm.h"
#include "cm/msg.h"
#include "fuzz_cm.h"
#include "wire/bytes.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_ASSERT(cond)                                                                    \
	do {                                                                                 \
		if (!(cond)) {                                                               \
			fprintf(stderr, "%s:%d: invariant broken: %s\n", __FILE__, __LINE__, \
				#cond);                                                      \
			abort();                                                             \
		}                                                                            \
	} while (0)

_Static_assert(FCM_MAD_LEN == UROCE_MAD_LEN, "a MAD step carries one MAD");

/* Built with -DFUZZ_CM_TRACE, the target tells each step, MAD sent and event on stderr (to read
 * what a crashing input does). */
#ifdef FUZZ_CM_TRACE
#define TRACE(...) fprintf(stderr, __VA_ARGS__)
#else
#define TRACE(...)                                    \
	do {                                          \
		if (0)                                \
			fprintf(stderr, __VA_ARGS__); \
	} while (0)
#endif

#define MS	    1000000ull
#define SENT_RING   16 /* REFLECT reaches 15 sends back */
#define CA_GUID	    0x0002C903000A0B0Cull
#define SETTLE_F    0x0E /* the timing of the application's own answers: 500 ms, 3 resends */
#define ALL_POLICY  (FCM_AUTO_ACCEPT | FCM_AUTO_RTU | FCM_AUTO_DREP | FCM_AUTO_SIDR)
#define STATE(s)    uroce_ibcm_conn_state((s)->conn)
#define IS(st, nam) ((st) == UROCE_IBCM_##nam)

/* ---- the codecs ------------------------------------------------------------------------- */

static void codec_checks(const uint8_t *data, size_t size)
{
	struct uroce_cm_mad m, m2;
	uint8_t e1[UROCE_MAD_LEN], e2[UROCE_MAD_LEN];

	if (uroce_cm_mad_decode(&m, data, size) == UROCE_MAD_LEN) {
		FUZZ_ASSERT(uroce_cm_mad_encode(e1, sizeof(e1), &m) == UROCE_MAD_LEN);
		FUZZ_ASSERT(uroce_cm_mad_decode(&m2, e1, sizeof(e1)) == UROCE_MAD_LEN);
		FUZZ_ASSERT(uroce_cm_mad_encode(e2, sizeof(e2), &m2) == UROCE_MAD_LEN);
		FUZZ_ASSERT(memcmp(e1, e2, sizeof(e1)) == 0);
		FUZZ_ASSERT(m2.hdr.attr_id == m.hdr.attr_id);
	}

	struct uroce_cma_hdr h;
	uint8_t c[UROCE_CMA_HDR_LEN];

	if (uroce_cma_hdr_decode(&h, data, size) == UROCE_CMA_HDR_LEN) {
		FUZZ_ASSERT(uroce_cma_hdr_encode(c, sizeof(c), &h) == UROCE_CMA_HDR_LEN);
		FUZZ_ASSERT(c[0] == data[0] && (c[1] & 0xF0) == (data[1] & 0xF0));
		if (h.ip_version == 6)
			FUZZ_ASSERT(memcmp(c + 2, data + 2, UROCE_CMA_HDR_LEN - 2) == 0);
		else
			FUZZ_ASSERT(memcmp(c + 2, data + 2, 2) == 0 &&
				    memcmp(c + 16, data + 16, 4) == 0 &&
				    memcmp(c + 32, data + 32, 4) == 0);
	}

	if (size >= 8) {
		uint64_t sid = uroce_get_be64(data);
		uint16_t ps, port;

		if (uroce_cma_service_id_split(sid, &ps, &port) == 0)
			FUZZ_ASSERT(uroce_cma_service_id(ps, port) == sid);
	}
}

/* ---- the application ---------------------------------------------------------------------- */

struct slot {
	struct uroce_ibcm_conn *conn; /* NULL once destroyed */
	bool idle_by_app;	      /* IDLE by the application's own REJ or SIDR_REP */
	uint32_t local_id, remote_id;
	uint32_t local_qpn, remote_qpn;
	uint64_t remote_guid;
	uint8_t remote_gid[16];
};

static struct {
	struct uroce_ibcm *cm;
	uint64_t now;
	unsigned policy;
	struct slot slot[FCM_SLOTS];
	unsigned nslots;
	uint8_t sent[SENT_RING][UROCE_MAD_LEN];
	unsigned nsent;	    /* MADs sent in all */
	unsigned delivered; /* MADs given to uroce_ibcm_recv */
	unsigned depth;	    /* uroce_ibcm_recv calls from inside the event callback */
} fz;

static const uint8_t own_gid[16] = {[10] = 0xFF, [11] = 0xFF, 198, 18, 0, 1};
static const struct uroce_ibcm_addr peer[2] = {
	{.dgid = {[10] = 0xFF, [11] = 0xFF, 198, 18, 0, 2}, .hop_limit = 64},
	{.dgid = {[10] = 0xFF, [11] = 0xFF, 198, 18, 0, 3}, .hop_limit = 64},
};

static int fuzz_send(void *arg, const struct uroce_ibcm_addr *to, const uint8_t *mad)
{
	struct uroce_cm_mad m;

	(void)arg;
	FUZZ_ASSERT(to != NULL);
	FUZZ_ASSERT(uroce_cm_mad_decode(&m, mad, UROCE_MAD_LEN) == UROCE_MAD_LEN);
	FUZZ_ASSERT(m.hdr.base_version == 1 && m.hdr.class_version == 2 && m.hdr.method == 0x03);
	TRACE("  sent #%u attr 0x%x ids %08x %08x\n", fz.nsent, m.hdr.attr_id,
	      uroce_get_be32(mad + UROCE_MAD_HDR_LEN), uroce_get_be32(mad + UROCE_MAD_HDR_LEN + 4));
	memcpy(fz.sent[fz.nsent % SENT_RING], mad, UROCE_MAD_LEN);
	fz.nsent++;
	return 0;
}

static struct slot *slot_of(const struct uroce_ibcm_conn *c)
{
	for (unsigned i = 0; i < fz.nslots; i++)
		if (fz.slot[i].conn == c)
			return &fz.slot[i];
	return NULL;
}

static struct slot *slot_new(struct uroce_ibcm_conn *c)
{
	struct slot *s;

	if (fz.nslots == FCM_SLOTS)
		return NULL;
	s = &fz.slot[fz.nslots++];
	memset(s, 0, sizeof(*s));
	s->conn = c;
	s->local_id = uroce_ibcm_conn_local_id(c);
	s->remote_id = uroce_ibcm_conn_remote_id(c);
	return s;
}

static struct slot *live_slot(unsigned arg)
{
	struct slot *s = &fz.slot[arg % FCM_SLOTS];

	return arg % FCM_SLOTS < fz.nslots && s->conn ? s : NULL;
}

static struct uroce_ibcm_timing timing(unsigned f)
{
	return (struct uroce_ibcm_timing){.timeout_ms = fcm_timeout_ms(f),
					  .max_retries = (uint8_t)fcm_max_retries(f)};
}

/*
 * The outcome of a call the application made in state `before`: allowed says whether ibcm.h
 * allows it there. Allowed: rc 0, `sends` MADs sent, state `after`. Refused: rc `refusal`,
 * nothing sent, the state unchanged.
 */
static void check_call(const struct slot *s, enum uroce_ibcm_state before, bool allowed, int rc,
		       int refusal, unsigned sent_before, unsigned sends,
		       enum uroce_ibcm_state after)
{
	if (allowed) {
		FUZZ_ASSERT(rc == 0);
		FUZZ_ASSERT(fz.nsent - sent_before == sends);
		FUZZ_ASSERT(STATE(s) == after);
	} else {
		FUZZ_ASSERT(rc == refusal);
		FUZZ_ASSERT(fz.nsent == sent_before);
		FUZZ_ASSERT(STATE(s) == before);
	}
}

static void app_accept(struct slot *s, unsigned f, uint8_t qpn_low)
{
	enum uroce_ibcm_state st = STATE(s);
	struct uroce_ibcm_timing t = timing(f);
	struct uroce_cm_rep rep;
	unsigned sent = fz.nsent;
	bool ok = IS(st, REQ_RCVD) || IS(st, MRA_REQ_SENT);

	memset(&rep, 0, sizeof(rep));
	rep.local_qpn = 0x200u | qpn_low;
	rep.starting_psn = 0x4242;
	rep.responder_resources = 1;
	rep.initiator_depth = 1;
	rep.rnr_retry_count = 7;
	int rc = uroce_ibcm_send_rep(s->conn, &rep, &t, fz.now);

	check_call(s, st, ok, rc, -EINVAL, sent, 1, UROCE_IBCM_REP_SENT);
	if (ok)
		s->local_qpn = rep.local_qpn;
}

static void app_reject(struct slot *s, unsigned f)
{
	enum uroce_ibcm_state st = STATE(s);
	unsigned sent = fz.nsent;
	uint8_t ari[8];
	bool ok = IS(st, REQ_RCVD) || IS(st, MRA_REQ_SENT) || IS(st, REP_RCVD) ||
		  IS(st, MRA_REP_SENT) || IS(st, REQ_SENT) || IS(st, MRA_REQ_RCVD) ||
		  IS(st, REP_SENT) || IS(st, MRA_REP_RCVD);
	bool timewait = IS(st, REP_SENT) || IS(st, MRA_REP_RCVD);

	uroce_put_be64(ari, CA_GUID);
	int rc = uroce_ibcm_send_rej(s->conn, fcm_rej_reason(f), ari, f & 8 ? sizeof(ari) : 0, "fz",
				     2, fz.now);

	check_call(s, st, ok, rc, -EINVAL, sent, 1,
		   timewait ? UROCE_IBCM_TIMEWAIT : UROCE_IBCM_IDLE);
	if (ok && !timewait)
		s->idle_by_app = true;
}

static void app_mra(struct slot *s, unsigned f)
{
	enum uroce_ibcm_state st = STATE(s);
	unsigned sent = fz.nsent;
	uint8_t to = (uint8_t)((f & 7) * 4 | (f & 8 ? UROCE_IBCM_MRA_FLAG_DELAY : 0));
	int rc = uroce_ibcm_send_mra(s->conn, to, NULL, 0, fz.now);

	check_call(s, st, IS(st, REQ_RCVD) || IS(st, REP_RCVD), rc, -EINVAL, sent, f & 8 ? 0 : 1,
		   IS(st, REQ_RCVD) ? UROCE_IBCM_MRA_REQ_SENT : UROCE_IBCM_MRA_REP_SENT);
}

static void app_rtu(struct slot *s)
{
	enum uroce_ibcm_state st = STATE(s);
	unsigned sent = fz.nsent;
	int rc = uroce_ibcm_send_rtu(s->conn, NULL, 0, fz.now);

	check_call(s, st, IS(st, REP_RCVD) || IS(st, MRA_REP_SENT), rc, -EINVAL, sent, 1,
		   UROCE_IBCM_ESTABLISHED);
}

static void app_establish(struct slot *s)
{
	enum uroce_ibcm_state st = STATE(s);
	unsigned sent = fz.nsent;
	int rc = uroce_ibcm_establish(s->conn);

	check_call(s, st, IS(st, REP_SENT) || IS(st, MRA_REP_RCVD), rc,
		   IS(st, ESTABLISHED) ? -EISCONN : -EINVAL, sent, 0, UROCE_IBCM_ESTABLISHED);
}

static void app_dreq(struct slot *s, unsigned f)
{
	enum uroce_ibcm_state st = STATE(s);
	struct uroce_ibcm_timing t = timing(f);
	unsigned sent = fz.nsent;
	int rc = uroce_ibcm_send_dreq(s->conn, NULL, 0, f ? &t : NULL, fz.now);

	check_call(s, st, IS(st, ESTABLISHED), rc, -EINVAL, sent, 1, UROCE_IBCM_DREQ_SENT);
}

static void app_drep(struct slot *s)
{
	enum uroce_ibcm_state st = STATE(s);
	unsigned sent = fz.nsent;
	int rc = uroce_ibcm_send_drep(s->conn, NULL, 0, fz.now);

	check_call(s, st, IS(st, DREQ_RCVD), rc, -EINVAL, sent, 1, UROCE_IBCM_TIMEWAIT);
}

static void app_sidr_rep(struct slot *s, unsigned status)
{
	enum uroce_ibcm_state st = STATE(s);
	struct uroce_cm_sidr_rep rep;
	unsigned sent = fz.nsent;

	memset(&rep, 0, sizeof(rep));
	rep.status = (uint8_t)status;
	rep.qpn = 0x300;
	rep.qkey = UROCE_RDMA_UDP_QKEY;
	int rc = uroce_ibcm_send_sidr_rep(s->conn, &rep, fz.now);

	check_call(s, st, IS(st, SIDR_REQ_RCVD), rc, -EINVAL, sent, 1, UROCE_IBCM_IDLE);
	if (rc == 0)
		s->idle_by_app = true;
}

/* The destroy sends what uroce_ibcm_will_mad said it would, and the slot lets go. */
static void app_destroy(struct slot *s)
{
	uint8_t will[UROCE_MAD_LEN];
	struct uroce_cm_mad m;
	enum uroce_ibcm_state st = STATE(s);
	unsigned sent = fz.nsent;
	bool silent =
		IS(st, IDLE) || IS(st, SIDR_REQ_SENT) || IS(st, DREQ_SENT) || IS(st, TIMEWAIT);
	int rc = uroce_ibcm_will_mad(s->conn, will);

	FUZZ_ASSERT(rc == (silent ? -ENOENT : 0));
	if (rc == 0)
		FUZZ_ASSERT(uroce_cm_mad_decode(&m, will, sizeof(will)) == UROCE_MAD_LEN);
	uroce_ibcm_conn_destroy(s->conn, fz.now);
	s->conn = NULL;
	FUZZ_ASSERT(fz.nsent - sent == (silent ? 0u : 1u));
	if (!silent)
		FUZZ_ASSERT(memcmp(fz.sent[sent % SENT_RING], will, UROCE_MAD_LEN) == 0);
}

static void app_connect(unsigned f, unsigned arg)
{
	const struct uroce_ibcm_addr *to = &peer[arg >> 7 & 1];
	struct uroce_ibcm_timing t = timing(f);
	struct uroce_ibcm_conn *c;
	struct uroce_cm_req req;
	struct slot *s;
	unsigned sent = fz.nsent;

	if (fz.nslots == FCM_SLOTS)
		return;
	memset(&req, 0, sizeof(req));
	req.service_id = uroce_cma_service_id(UROCE_RDMA_PS_TCP, 7471);
	req.local_qpn = 0x100u | (arg & 0x7F);
	req.responder_resources = 1;
	req.initiator_depth = 1;
	req.remote_cm_resp_timeout = 20;
	req.starting_psn = 0x1234;
	req.local_cm_resp_timeout = 20;
	req.retry_count = 7;
	req.pkey = 0xFFFF;
	req.path_mtu = 3;
	req.rnr_retry_count = 7;
	req.max_cm_retries = 15;
	memcpy(req.primary.local_gid, own_gid, 16);
	memcpy(req.primary.remote_gid, to->dgid, 16);
	req.primary.hop_limit = 64;
	req.primary.local_ack_timeout = 14;
	FUZZ_ASSERT(uroce_ibcm_send_req(fz.cm, to, &req, &t, NULL, fz.now, &c) == 0);
	FUZZ_ASSERT(fz.nsent - sent == 1 && uroce_ibcm_conn_state(c) == UROCE_IBCM_REQ_SENT);
	s = slot_new(c);
	s->local_qpn = req.local_qpn;
	memcpy(s->remote_gid, to->dgid, 16);
}

static void app_sidr_req(unsigned f, unsigned arg)
{
	const struct uroce_ibcm_addr *to = &peer[arg >> 7 & 1];
	struct uroce_ibcm_timing t = timing(f);
	struct uroce_ibcm_conn *c;
	struct uroce_cm_sidr_req req;
	unsigned sent = fz.nsent;

	if (fz.nslots == FCM_SLOTS)
		return;
	memset(&req, 0, sizeof(req));
	req.pkey = 0xFFFF;
	req.service_id = uroce_cma_service_id(UROCE_RDMA_PS_UDP, 7174);
	FUZZ_ASSERT(uroce_ibcm_send_sidr_req(fz.cm, to, &req, &t, NULL, fz.now, &c) == 0);
	FUZZ_ASSERT(fz.nsent - sent == 1 && uroce_ibcm_conn_state(c) == UROCE_IBCM_SIDR_REQ_SENT);
	slot_new(c);
}

/* ---- events --------------------------------------------------------------------------------- */

static void deliver(const uint8_t *raw, unsigned f, unsigned slot);

/* FCM_REFLECT_IN_EVENT: the latest MAD sent, received back from inside the callback. */
static void reflect_nested(void)
{
	uint8_t copy[UROCE_MAD_LEN];

	if (!(fz.policy & FCM_REFLECT_IN_EVENT) || !fz.nsent || fz.depth >= 3)
		return;
	memcpy(copy, fz.sent[(fz.nsent - 1) % SENT_RING], sizeof(copy));
	fz.depth++;
	deliver(copy, 0, 0);
	fz.depth--;
}

static void fuzz_event(void *arg, const struct uroce_ibcm_event *ev)
{
	struct uroce_ibcm_conn *c = ev->conn;
	enum uroce_ibcm_state st = uroce_ibcm_conn_state(c);
	struct slot *s = slot_of(c);
	bool rx = ev->type != UROCE_IBCM_EV_REQ_ERROR && ev->type != UROCE_IBCM_EV_REP_ERROR &&
		  ev->type != UROCE_IBCM_EV_DREQ_ERROR && ev->type != UROCE_IBCM_EV_TIMEWAIT_EXIT &&
		  ev->type != UROCE_IBCM_EV_SIDR_REQ_ERROR;

	(void)arg;
	TRACE("  event %d slot %d state %s\n", (int)ev->type, s ? (int)(s - fz.slot) : -1,
	      uroce_ibcm_state_name(st));
	/* A received message's event carries it; a timer's carries nothing. */
	FUZZ_ASSERT(rx ? ev->msg && ev->from : !ev->msg && !ev->from);
	if (ev->type == UROCE_IBCM_EV_REQ_RECEIVED || ev->type == UROCE_IBCM_EV_SIDR_REQ_RECEIVED) {
		bool req = ev->type == UROCE_IBCM_EV_REQ_RECEIVED;

		FUZZ_ASSERT(!s); /* a new connection */
		FUZZ_ASSERT(st == (req ? UROCE_IBCM_REQ_RCVD : UROCE_IBCM_SIDR_REQ_RCVD));
		s = slot_new(c);
		if (!s) {
			uroce_ibcm_conn_destroy(c, fz.now);
			return;
		}
		if (!req) {
			if (fz.policy & FCM_AUTO_SIDR) {
				app_sidr_rep(s, 0);
				app_destroy(s);
			}
		} else {
			s->remote_qpn = ev->msg->u.req.local_qpn;
			s->remote_guid = ev->msg->u.req.local_ca_guid;
			memcpy(s->remote_gid, ev->msg->u.req.primary.local_gid, 16);
			if (fz.policy & FCM_AUTO_ACCEPT)
				app_accept(s, SETTLE_F, (uint8_t)(s - fz.slot));
		}
		reflect_nested();
		return;
	}
	/* Every other event names a connection the application holds (none after its destroy). */
	FUZZ_ASSERT(s != NULL);
	switch (ev->type) {
	case UROCE_IBCM_EV_REP_RECEIVED:
		FUZZ_ASSERT(st == UROCE_IBCM_REP_RCVD);
		s->remote_id = uroce_ibcm_conn_remote_id(c);
		FUZZ_ASSERT(s->remote_id == ev->msg->u.rep.local_comm_id);
		s->remote_qpn = ev->msg->u.rep.local_qpn;
		s->remote_guid = ev->msg->u.rep.local_ca_guid;
		if (fz.policy & FCM_AUTO_RTU)
			app_rtu(s);
		break;
	case UROCE_IBCM_EV_RTU_RECEIVED:
		FUZZ_ASSERT(st == UROCE_IBCM_ESTABLISHED);
		break;
	case UROCE_IBCM_EV_MRA_RECEIVED:
		FUZZ_ASSERT(st == UROCE_IBCM_MRA_REQ_RCVD || st == UROCE_IBCM_MRA_REP_RCVD);
		break;
	case UROCE_IBCM_EV_REJ_RECEIVED:
		FUZZ_ASSERT(st == UROCE_IBCM_IDLE || st == UROCE_IBCM_TIMEWAIT);
		app_destroy(s);
		break;
	case UROCE_IBCM_EV_REQ_ERROR:
	case UROCE_IBCM_EV_REP_ERROR:
	case UROCE_IBCM_EV_SIDR_REP_RECEIVED:
	case UROCE_IBCM_EV_SIDR_REQ_ERROR:
	case UROCE_IBCM_EV_TIMEWAIT_EXIT:
		FUZZ_ASSERT(st == UROCE_IBCM_IDLE);
		app_destroy(s);
		break;
	case UROCE_IBCM_EV_DREQ_RECEIVED:
		FUZZ_ASSERT(st == UROCE_IBCM_DREQ_RCVD);
		if (fz.policy & FCM_DESTROY_ON_DREQ)
			app_destroy(s);
		else if (fz.policy & FCM_AUTO_DREP)
			app_drep(s);
		break;
	case UROCE_IBCM_EV_DREP_RECEIVED:
	case UROCE_IBCM_EV_DREQ_ERROR:
		FUZZ_ASSERT(st == UROCE_IBCM_TIMEWAIT);
		if (fz.policy & FCM_EARLY_DESTROY)
			app_destroy(s);
		break;
	case UROCE_IBCM_EV_REQ_RECEIVED:
	case UROCE_IBCM_EV_SIDR_REQ_RECEIVED:
		break; /* above */
	}
	reflect_nested();
}

/* ---- steps ------------------------------------------------------------------------------------
 */

/* Patch mad (when it decodes) to name slot s as f says (fuzz_cm.h FCM_P_*). */
static void patch(uint8_t *mad, unsigned f, const struct slot *s)
{
	struct uroce_cm_mad m;
	bool ours = f & FCM_P_OURS, theirs = f & FCM_P_THEIRS, qpn = f & FCM_P_QPN;
	uint32_t *local = NULL, *remote = NULL;

	if (!(ours || theirs || qpn) ||
	    uroce_cm_mad_decode(&m, mad, UROCE_MAD_LEN) != UROCE_MAD_LEN)
		return;
	switch (m.hdr.attr_id) {
	case UROCE_CM_ATTR_REQ:
		local = &m.u.req.local_comm_id;
		if (qpn) {
			m.u.req.local_qpn = s->remote_qpn;
			m.u.req.local_ca_guid = s->remote_guid;
			memcpy(m.u.req.primary.local_gid, s->remote_gid, 16);
		}
		break;
	case UROCE_CM_ATTR_REP:
		local = &m.u.rep.local_comm_id;
		remote = &m.u.rep.remote_comm_id;
		if (qpn) {
			m.u.rep.local_qpn = s->remote_qpn;
			m.u.rep.local_ca_guid = s->remote_guid;
		}
		break;
	case UROCE_CM_ATTR_MRA:
		local = &m.u.mra.local_comm_id;
		remote = &m.u.mra.remote_comm_id;
		break;
	case UROCE_CM_ATTR_REJ:
		local = &m.u.rej.local_comm_id;
		remote = &m.u.rej.remote_comm_id;
		break;
	case UROCE_CM_ATTR_RTU:
		local = &m.u.rtu.local_comm_id;
		remote = &m.u.rtu.remote_comm_id;
		break;
	case UROCE_CM_ATTR_DREQ:
		local = &m.u.dreq.local_comm_id;
		remote = &m.u.dreq.remote_comm_id;
		if (qpn)
			m.u.dreq.remote_qpn = s->local_qpn;
		break;
	case UROCE_CM_ATTR_DREP:
		local = &m.u.drep.local_comm_id;
		remote = &m.u.drep.remote_comm_id;
		break;
	case UROCE_CM_ATTR_SIDR_REQ:
		local = &m.u.sidr_req.request_id;
		break;
	case UROCE_CM_ATTR_SIDR_REP:
		remote = &m.u.sidr_rep.request_id;
		break;
	default:
		return;
	}
	if (ours && remote)
		*remote = s->local_id;
	if (theirs && local)
		*local = s->remote_id;
	FUZZ_ASSERT(uroce_cm_mad_encode(mad, UROCE_MAD_LEN, &m) == UROCE_MAD_LEN);
}

static void deliver(const uint8_t *raw, unsigned f, unsigned slot)
{
	uint8_t mad[UROCE_MAD_LEN];

	codec_checks(raw, UROCE_MAD_LEN);
	codec_checks(raw + UROCE_MAD_HDR_LEN + UROCE_CM_REQ_PRIV_OFF, UROCE_CM_REQ_PRIV_LEN);
	codec_checks(raw + UROCE_MAD_HDR_LEN + 8, 8); /* a REQ's service ID */
	memcpy(mad, raw, sizeof(mad));
	if (slot % FCM_SLOTS < fz.nslots)
		patch(mad, f, &fz.slot[slot % FCM_SLOTS]);
	TRACE("  recv attr 0x%x ids %08x %08x\n", uroce_get_be16(mad + 16),
	      uroce_get_be32(mad + UROCE_MAD_HDR_LEN), uroce_get_be32(mad + UROCE_MAD_HDR_LEN + 4));
	uroce_ibcm_recv(fz.cm, &peer[f & FCM_P_FROM_B ? 1 : 0], mad, sizeof(mad), fz.now);
	fz.delivered++;
}

static void advance_to(uint64_t t)
{
	if (t > fz.now)
		fz.now = t;
	uroce_ibcm_advance(fz.cm, fz.now);
	/* Everything due has run: a timer armed by a callback is later. */
	FUZZ_ASSERT(uroce_ibcm_next_deadline(fz.cm) > fz.now);
}

/* The engine, made at the first step that is not a POLICY (fuzz_cm.h FCM_TIMEWAIT_0). */
static void create(void)
{
	static const struct uroce_ibcm_ops ops = {.send = fuzz_send, .event = fuzz_event};
	const struct uroce_ibcm_cfg cfg = {.ops = &ops,
					   .comm_id_prefix = 1,
					   .ca_guid = CA_GUID,
					   .hi_tid = 0x2A,
					   .timewait_ms = fz.policy & FCM_TIMEWAIT_0 ? 0 : 10,
					   .seed = 1};

	if (!fz.cm)
		FUZZ_ASSERT(uroce_ibcm_create(&cfg, &fz.cm) == 0);
}

static void step(unsigned op, unsigned arg, const uint8_t *mad)
{
	unsigned f = op >> 4;
	struct slot *s = live_slot(arg);

	if ((op & 0x0F) == FCM_POLICY) {
		fz.policy = arg;
		return;
	}
	create();

	TRACE("step kind %u f %u arg %u now %llu\n", op & 0x0F, f, arg, (unsigned long long)fz.now);
	switch ((enum fcm_kind)(op & 0x0F)) {
	case FCM_MAD:
		deliver(mad, f, arg);
		return;
	case FCM_REFLECT:
		if ((arg & 15) < fz.nsent) {
			uint8_t copy[UROCE_MAD_LEN];

			/* A copy: the engine's answers overwrite the ring. */
			memcpy(copy, fz.sent[(fz.nsent - 1 - (arg & 15)) % SENT_RING],
			       sizeof(copy));
			deliver(copy, f, arg >> 4);
		}
		return;
	case FCM_ADVANCE: {
		uint64_t d = (uint64_t)(arg + 1) << (3 * f);

		advance_to(fz.now > UINT64_MAX - 1 - d ? UINT64_MAX - 1 : fz.now + d);
		return;
	}
	case FCM_NEXT:
		if (uroce_ibcm_next_deadline(fz.cm) != UINT64_MAX)
			advance_to(uroce_ibcm_next_deadline(fz.cm));
		return;
	case FCM_CONNECT:
		app_connect(f, arg);
		return;
	case FCM_SIDR_REQ:
		app_sidr_req(f, arg);
		return;
	case FCM_POLICY:
		return; /* above */
	case FCM_ACCEPT:
	case FCM_REJECT:
	case FCM_MRA:
	case FCM_RTU:
	case FCM_ESTABLISH:
	case FCM_DREQ:
	case FCM_DREP:
	case FCM_DESTROY:
	case FCM_SIDR_REP:
		break;
	}
	if (!s)
		return;
	switch ((enum fcm_kind)(op & 0x0F)) {
	case FCM_ACCEPT:
		app_accept(s, f, (uint8_t)arg);
		break;
	case FCM_REJECT:
		app_reject(s, f);
		break;
	case FCM_MRA:
		app_mra(s, f);
		break;
	case FCM_RTU:
		app_rtu(s);
		break;
	case FCM_ESTABLISH:
		app_establish(s);
		break;
	case FCM_DREQ:
		app_dreq(s, f);
		break;
	case FCM_DREP:
		app_drep(s);
		break;
	case FCM_DESTROY:
		app_destroy(s);
		break;
	case FCM_SIDR_REP:
		app_sidr_rep(s, f);
		break;
	case FCM_MAD:
	case FCM_REFLECT:
	case FCM_ADVANCE:
	case FCM_NEXT:
	case FCM_CONNECT:
	case FCM_SIDR_REQ:
	case FCM_POLICY:
		break;
	}
}

/* After each step: a connection held is IDLE only by the application's own call (an engine
 * that makes it IDLE tells, and the handler destroys it then). */
static unsigned check_held(void)
{
	unsigned held = 0;

	for (unsigned i = 0; i < fz.nslots; i++) {
		struct slot *s = &fz.slot[i];

		if (!s->conn)
			continue;
		held++;
		if (STATE(s) == UROCE_IBCM_IDLE && !s->idle_by_app)
			fprintf(stderr, "slot %u went IDLE with no event\n", i);
		FUZZ_ASSERT(STATE(s) != UROCE_IBCM_IDLE || s->idle_by_app);
	}
	FUZZ_ASSERT(uroce_ibcm_conn_count(fz.cm) >= held);
	return held;
}

/* Every timer runs out, in a bounded number of rounds: each connection has at most 4
 * transmissions of its message, then time-wait, before the application ends it. */
static void run_out(void)
{
	uint64_t rounds = 0, limit = 16 * (uint64_t)uroce_ibcm_conn_count(fz.cm) + 16;

	while (uroce_ibcm_next_deadline(fz.cm) != UINT64_MAX) {
		advance_to(uroce_ibcm_next_deadline(fz.cm));
		FUZZ_ASSERT(++rounds <= limit);
	}
}

/* The application's part once the peers are silent (fuzz_cm.c header). */
static void settle(void)
{
	fz.policy = ALL_POLICY;
	for (unsigned i = 0; i < fz.nslots; i++) {
		struct slot *s = &fz.slot[i];

		if (!s->conn)
			continue;
		switch (STATE(s)) {
		case UROCE_IBCM_REQ_RCVD:
		case UROCE_IBCM_MRA_REQ_SENT:
			app_accept(s, SETTLE_F, (uint8_t)i);
			break;
		case UROCE_IBCM_REP_RCVD:
		case UROCE_IBCM_MRA_REP_SENT:
			app_rtu(s);
			break;
		case UROCE_IBCM_DREQ_RCVD:
			app_drep(s);
			break;
		case UROCE_IBCM_SIDR_REQ_RCVD:
			app_sidr_rep(s, 0);
			app_destroy(s);
			break;
		case UROCE_IBCM_IDLE:
			app_destroy(s);
			break;
		case UROCE_IBCM_REQ_SENT:
		case UROCE_IBCM_MRA_REQ_RCVD:
		case UROCE_IBCM_REP_SENT:
		case UROCE_IBCM_MRA_REP_RCVD:
		case UROCE_IBCM_ESTABLISHED:
		case UROCE_IBCM_DREQ_SENT:
		case UROCE_IBCM_TIMEWAIT:
		case UROCE_IBCM_SIDR_REQ_SENT:
			break; /* the engine's turn, or done */
		}
	}
}

static void fuzz_ibcm(const uint8_t *data, size_t size)
{
	size_t i = 0;
	unsigned held;

	memset(&fz, 0, sizeof(fz));
	fz.now = 1000 * MS;
	while (i + 2 <= size) {
		unsigned op = data[i], arg = data[i + 1];
		const uint8_t *mad = data + i + 2;

		i += 2;
		if ((op & 0x0F) == FCM_MAD) {
			if (size - i < UROCE_MAD_LEN)
				break;
			i += UROCE_MAD_LEN;
		}
		step(op, arg, mad);
		if (fz.cm)
			check_held();
	}
	create();
	FUZZ_ASSERT(uroce_ibcm_counter(fz.cm, UROCE_IBCM_C_RX_MADS) == fz.delivered);

	TRACE("settle\n");
	settle();
	run_out();
	held = check_held();
	for (unsigned k = 0; k < fz.nslots; k++) {
		struct slot *s = &fz.slot[k];

		if (!s->conn)
			continue;
		if (STATE(s) != UROCE_IBCM_ESTABLISHED)
			fprintf(stderr, "slot %u left in %s with no timer\n", k,
				uroce_ibcm_state_name(STATE(s)));
		FUZZ_ASSERT(STATE(s) == UROCE_IBCM_ESTABLISHED);
	}
	/* Nothing else: what the application destroyed has ended too. */
	FUZZ_ASSERT(uroce_ibcm_conn_count(fz.cm) == held);

	TRACE("disconnect %u\n", held);
	for (unsigned k = 0; k < fz.nslots; k++)
		if (fz.slot[k].conn)
			app_dreq(&fz.slot[k], SETTLE_F);
	run_out();
	FUZZ_ASSERT(check_held() == 0);
	FUZZ_ASSERT(uroce_ibcm_conn_count(fz.cm) == 0);
	uroce_ibcm_destroy(fz.cm);
	fz.cm = NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	codec_checks(data, size);
	fuzz_ibcm(data, size);
	return 0;
}
