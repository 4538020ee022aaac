/* SPDX-License-Identifier: MIT */
/*
 * The IB CM engine (ibcm.h): the instance, its lookup tables and timers, and the calls that
 * send. Received MADs are handled in ibcm_rx.c. Behaviour follows Linux core/cm.c (IBTA vol 1
 * ch. 12); where the header chose otherwise, the header wins and says so.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cm/ibcm_int.h"
#include "wire/bytes.h"

#define IBCM_MIN_BUCKETS 64

const char *uroce_ibcm_state_name(enum uroce_ibcm_state s)
{
	switch (s) {
#define UROCE_IBCM_STATE_CASE(name)                                                                \
	case UROCE_IBCM_##name:                                                                    \
		return #name;
		UROCE_IBCM_STATES(UROCE_IBCM_STATE_CASE)
#undef UROCE_IBCM_STATE_CASE
	}
	return "?";
}

static const char *const counter_names[UROCE_IBCM_C_COUNT] = {
#define UROCE_IBCM_COUNTER_NAME(name, label) [UROCE_IBCM_C_##name] = label,
	UROCE_IBCM_COUNTERS(UROCE_IBCM_COUNTER_NAME)
#undef UROCE_IBCM_COUNTER_NAME
};

const char *uroce_ibcm_counter_name(enum uroce_ibcm_counter k)
{
	return (unsigned)k < UROCE_IBCM_C_COUNT ? counter_names[k] : NULL;
}

/* ---- hash tables ------------------------------------------------------------------------ */

static size_t slot(const struct uroce_ibcm *cm, uint32_t key)
{
	/* Comm IDs are sequential in their low bits: mix before masking. */
	key ^= key >> 16;
	key *= 0x7FEB352Du;
	key ^= key >> 15;
	key *= 0x846CA68Bu;
	key ^= key >> 16;
	return key & (cm->nbuckets - 1);
}

static uint32_t key_of(const struct uroce_ibcm_conn *c, enum ibcm_table t)
{
	switch (t) {
	case IBCM_T_LOCAL:
		return c->local_id;
	case IBCM_T_REMOTE:
		return c->remote_id;
	case IBCM_T_QP:
		return c->remote_qpn;
	case IBCM_T_COUNT:
		break;
	}
	return 0;
}

struct uroce_ibcm_conn *uroce_ibcm_bucket(const struct uroce_ibcm *cm, enum ibcm_table t,
					  uint32_t key)
{
	return cm->t[t].b[slot(cm, key)];
}

struct uroce_ibcm_conn *uroce_ibcm_find_local(const struct uroce_ibcm *cm, uint32_t local_id)
{
	struct uroce_ibcm_conn *c = uroce_ibcm_bucket(cm, IBCM_T_LOCAL, local_id);

	while (c && c->local_id != local_id)
		c = c->hnext[IBCM_T_LOCAL];
	return c;
}

void uroce_ibcm_table_add(struct uroce_ibcm_conn *c, enum ibcm_table t)
{
	struct uroce_ibcm_conn **head;

	if (c->in[t])
		return;
	head = &c->cm->t[t].b[slot(c->cm, key_of(c, t))];
	c->hnext[t] = *head;
	*head = c;
	c->in[t] = true;
}

static void table_del(struct uroce_ibcm_conn *c, enum ibcm_table t)
{
	struct uroce_ibcm_conn **pp;

	if (!c->in[t])
		return;
	pp = &c->cm->t[t].b[slot(c->cm, key_of(c, t))];
	while (*pp != c)
		pp = &(*pp)->hnext[t];
	*pp = c->hnext[t];
	c->hnext[t] = NULL;
	c->in[t] = false;
}

/* Double every table when there are more conns than buckets (called before adding one). */
static int tables_grow(struct uroce_ibcm *cm)
{
	struct uroce_ibcm_conn **nb[IBCM_T_COUNT];
	size_t old = cm->nbuckets, n = old * 2;

	if (cm->nconn < old)
		return 0;
	for (int t = 0; t < IBCM_T_COUNT; t++) {
		nb[t] = calloc(n, sizeof(*nb[t]));
		if (!nb[t]) {
			while (t--)
				free(nb[t]);
			return -ENOMEM;
		}
	}
	cm->nbuckets = n;
	for (int t = 0; t < IBCM_T_COUNT; t++) {
		for (size_t i = 0; i < old; i++) {
			struct uroce_ibcm_conn *c = cm->t[t].b[i], *next;

			for (; c; c = next) {
				size_t s = slot(cm, key_of(c, (enum ibcm_table)t));

				next = c->hnext[t];
				c->hnext[t] = nb[t][s];
				nb[t][s] = c;
			}
		}
		free(cm->t[t].b);
		cm->t[t].b = nb[t];
	}
	return 0;
}

/* ---- timers: a min-heap on deadline ------------------------------------------------------- */

static void heap_put(struct uroce_ibcm *cm, size_t i, struct uroce_ibcm_conn *c)
{
	cm->heap[i] = c;
	c->heap_idx = i;
}

static void sift_up(struct uroce_ibcm *cm, size_t i)
{
	struct uroce_ibcm_conn *c = cm->heap[i];

	while (i > 0) {
		size_t p = (i - 1) / 2;

		if (cm->heap[p]->deadline <= c->deadline)
			break;
		heap_put(cm, i, cm->heap[p]);
		i = p;
	}
	heap_put(cm, i, c);
}

static void sift_down(struct uroce_ibcm *cm, size_t i)
{
	struct uroce_ibcm_conn *c = cm->heap[i];

	for (;;) {
		size_t l = 2 * i + 1, m = i;
		uint64_t best = c->deadline;

		if (l < cm->heap_len && cm->heap[l]->deadline < best) {
			m = l;
			best = cm->heap[l]->deadline;
		}
		if (l + 1 < cm->heap_len && cm->heap[l + 1]->deadline < best)
			m = l + 1;
		if (m == i)
			break;
		heap_put(cm, i, cm->heap[m]);
		i = m;
	}
	heap_put(cm, i, c);
}

/* The heap has room for every conn (grown in conn_new), so arming never allocates. */
void uroce_ibcm_arm(struct uroce_ibcm_conn *c, uint64_t deadline)
{
	struct uroce_ibcm *cm = c->cm;

	c->deadline = deadline;
	if (c->heap_idx == IBCM_NOT_ARMED) {
		heap_put(cm, cm->heap_len++, c);
		sift_up(cm, c->heap_idx);
	} else {
		sift_up(cm, c->heap_idx);
		sift_down(cm, c->heap_idx);
	}
}

void uroce_ibcm_disarm(struct uroce_ibcm_conn *c)
{
	struct uroce_ibcm *cm = c->cm;
	struct uroce_ibcm_conn *moved;
	size_t i = c->heap_idx;

	if (i == IBCM_NOT_ARMED)
		return;
	c->heap_idx = IBCM_NOT_ARMED;
	if (i == --cm->heap_len)
		return;
	moved = cm->heap[cm->heap_len];
	heap_put(cm, i, moved);
	sift_up(cm, i);
	sift_down(cm, moved->heap_idx);
}

static uint64_t after(uint64_t now, uint64_t d)
{
	/* UINT64_MAX means "no timer" to the driver: saturate below it. */
	return d >= UINT64_MAX - 1 - now ? UINT64_MAX - 1 : now + d;
}

void uroce_ibcm_set_timing(struct uroce_ibcm_conn *c, const struct uroce_ibcm_timing *t)
{
	c->timeout_ns = (uint64_t)t->timeout_ms * IBCM_NS_PER_MS;
	c->max_retries = t->max_retries;
}

void uroce_ibcm_arm_retry(struct uroce_ibcm_conn *c, uint64_t now)
{
	c->retries = 0;
	c->wait_ns = c->timeout_ns;
	uroce_ibcm_arm(c, after(now, c->wait_ns));
}

void uroce_ibcm_enter_timewait(struct uroce_ibcm_conn *c, uint64_t now)
{
	c->state = UROCE_IBCM_TIMEWAIT;
	uroce_ibcm_arm(c, after(now, (uint64_t)c->cm->cfg.timewait_ms * IBCM_NS_PER_MS));
}

/* Out of every table (the comm ID is free again); the memory goes at the outermost return. */
static void release(struct uroce_ibcm_conn *c)
{
	if (c->released)
		return;
	c->released = true;
	uroce_ibcm_disarm(c);
	for (int t = 0; t < IBCM_T_COUNT; t++)
		table_del(c, (enum ibcm_table)t);
	c->zombie_next = c->cm->zombies;
	c->cm->zombies = c;
}

void uroce_ibcm_set_idle(struct uroce_ibcm_conn *c)
{
	c->state = UROCE_IBCM_IDLE;
	uroce_ibcm_disarm(c);
	table_del(c, IBCM_T_REMOTE);
	table_del(c, IBCM_T_QP);
	if (c->destroyed)
		release(c);
}

/* ---- entry bracket, events, MADs out ------------------------------------------------------ */

void uroce_ibcm_enter(struct uroce_ibcm *cm)
{
	cm->depth++;
}

void uroce_ibcm_leave(struct uroce_ibcm *cm)
{
	if (--cm->depth)
		return;
	while (cm->zombies) {
		struct uroce_ibcm_conn *c = cm->zombies;

		cm->zombies = c->zombie_next;
		cm->nconn--;
		ibcm_count(cm, UROCE_IBCM_C_CONNS_FREED);
		free(c);
	}
}

void uroce_ibcm_emit(struct uroce_ibcm_conn *c, enum uroce_ibcm_event_type type,
		     const struct uroce_ibcm_addr *from, const struct uroce_cm_mad *msg)
{
	struct uroce_ibcm_event ev = {.type = type, .conn = c, .from = from, .msg = msg};

	if (c->destroyed)
		return;
	c->cm->cfg.ops->event(c->cm->cfg.arg, &ev);
}

void uroce_ibcm_mad_init(struct uroce_cm_mad *m, uint16_t attr, uint64_t tid)
{
	memset(m, 0, sizeof(*m));
	m->hdr.base_version = 1;
	m->hdr.mgmt_class = UROCE_MGMT_CLASS_CM;
	m->hdr.class_version = 2;
	m->hdr.method = 0x03; /* SEND */
	m->hdr.tid = tid;
	m->hdr.attr_id = attr;
}

void uroce_ibcm_encode(uint8_t *out, const struct uroce_cm_mad *m)
{
	if (uroce_cm_mad_encode(out, UROCE_MAD_LEN, m) != UROCE_MAD_LEN)
		memset(out, 0, UROCE_MAD_LEN); /* not reached: every attribute here has a codec */
}

void uroce_ibcm_tx(struct uroce_ibcm *cm, const struct uroce_ibcm_addr *to, const uint8_t *mad)
{
	if (cm->cfg.ops->send(cm->cfg.arg, to, mad))
		ibcm_count(cm, UROCE_IBCM_C_TX_ERRORS);
	else
		ibcm_count(cm, UROCE_IBCM_C_TX_MADS);
}

/* core/cm.c cm_form_tid: the big-endian comm ID ORed into a host u64 (ibcm.h). */
uint64_t uroce_ibcm_form_tid(const struct uroce_ibcm_conn *c)
{
	return (uint64_t)c->cm->cfg.hi_tid << 32 | __builtin_bswap32(c->local_id);
}

/* ---- instance ----------------------------------------------------------------------------- */

int uroce_ibcm_create(const struct uroce_ibcm_cfg *cfg, struct uroce_ibcm **out)
{
	struct uroce_ibcm *cm;

	if (!cfg || !out || !cfg->ops || !cfg->ops->send || !cfg->ops->event ||
	    cfg->comm_id_prefix > 0xFFF)
		return -EINVAL;
	cm = calloc(1, sizeof(*cm));
	if (!cm)
		return -ENOMEM;
	cm->cfg = *cfg;
	cm->nbuckets = IBCM_MIN_BUCKETS;
	cm->next_id = cfg->seed & IBCM_ID_MASK;
	for (int t = 0; t < IBCM_T_COUNT; t++) {
		cm->t[t].b = calloc(cm->nbuckets, sizeof(*cm->t[t].b));
		if (!cm->t[t].b) {
			uroce_ibcm_destroy(cm);
			return -ENOMEM;
		}
	}
	*out = cm;
	return 0;
}

void uroce_ibcm_destroy(struct uroce_ibcm *cm)
{
	if (!cm)
		return;
	for (size_t i = 0; cm->t[IBCM_T_LOCAL].b && i < cm->nbuckets; i++) {
		struct uroce_ibcm_conn *c = cm->t[IBCM_T_LOCAL].b[i], *next;

		for (; c; c = next) {
			next = c->hnext[IBCM_T_LOCAL];
			free(c);
		}
	}
	while (cm->zombies) {
		struct uroce_ibcm_conn *c = cm->zombies;

		cm->zombies = c->zombie_next;
		free(c);
	}
	for (int t = 0; t < IBCM_T_COUNT; t++)
		free(cm->t[t].b);
	free(cm->heap);
	free(cm);
}

uint64_t uroce_ibcm_counter(const struct uroce_ibcm *cm, enum uroce_ibcm_counter k)
{
	return (unsigned)k < UROCE_IBCM_C_COUNT ? cm->counters[k] : 0;
}

size_t uroce_ibcm_conn_count(const struct uroce_ibcm *cm)
{
	return cm->nconn;
}

/* The next free local comm ID: (prefix << 20) | n, n != 0, not in the LOCAL table. */
static uint32_t alloc_id(struct uroce_ibcm *cm)
{
	for (;;) {
		uint32_t n = cm->next_id & IBCM_ID_MASK, id;

		cm->next_id = n + 1;
		if (!n)
			continue;
		id = cm->cfg.comm_id_prefix << IBCM_ID_BITS | n;
		if (!uroce_ibcm_find_local(cm, id))
			return id;
	}
}

struct uroce_ibcm_conn *uroce_ibcm_conn_new(struct uroce_ibcm *cm, enum uroce_ibcm_state s,
					    void *user)
{
	struct uroce_ibcm_conn *c;

	/* At most 2^20 - 2 conns, so that alloc_id always finds a free n. */
	if (cm->nconn >= IBCM_ID_MASK - 1 || tables_grow(cm))
		return NULL;
	if (cm->nconn >= cm->heap_cap) {
		size_t cap = cm->heap_cap ? cm->heap_cap * 2 : IBCM_MIN_BUCKETS;
		struct uroce_ibcm_conn **h = realloc(cm->heap, cap * sizeof(*h));

		if (!h)
			return NULL;
		cm->heap = h;
		cm->heap_cap = cap;
	}
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->cm = cm;
	c->user = user;
	c->state = s;
	c->heap_idx = IBCM_NOT_ARMED;
	c->local_id = alloc_id(cm);
	cm->nconn++;
	ibcm_count(cm, UROCE_IBCM_C_CONNS_CREATED);
	uroce_ibcm_table_add(c, IBCM_T_LOCAL);
	return c;
}

/* ---- timers firing ------------------------------------------------------------------------ */

static void fire(struct uroce_ibcm_conn *c, uint64_t now)
{
	/* Set by the switch (every state either sets it or returns); gcc 12 -O2 cannot tell. */
	enum uroce_ibcm_event_type err = UROCE_IBCM_EV_REQ_ERROR;

	switch (c->state) {
	case UROCE_IBCM_REQ_SENT:
	case UROCE_IBCM_MRA_REQ_RCVD:
		err = UROCE_IBCM_EV_REQ_ERROR;
		break;
	case UROCE_IBCM_REP_SENT:
	case UROCE_IBCM_MRA_REP_RCVD:
		err = UROCE_IBCM_EV_REP_ERROR;
		break;
	case UROCE_IBCM_DREQ_SENT:
		err = UROCE_IBCM_EV_DREQ_ERROR;
		break;
	case UROCE_IBCM_SIDR_REQ_SENT:
		err = UROCE_IBCM_EV_SIDR_REQ_ERROR;
		break;
	case UROCE_IBCM_TIMEWAIT:
		uroce_ibcm_set_idle(c);
		uroce_ibcm_emit(c, UROCE_IBCM_EV_TIMEWAIT_EXIT, NULL, NULL);
		return;
	case UROCE_IBCM_IDLE:
	case UROCE_IBCM_REQ_RCVD:
	case UROCE_IBCM_MRA_REQ_SENT:
	case UROCE_IBCM_REP_RCVD:
	case UROCE_IBCM_MRA_REP_SENT:
	case UROCE_IBCM_ESTABLISHED:
	case UROCE_IBCM_DREQ_RCVD:
	case UROCE_IBCM_SIDR_REQ_RCVD:
		return; /* no timer in these states */
	}
	if (c->retries < c->max_retries) {
		c->retries++;
		ibcm_count(c->cm, UROCE_IBCM_C_RETRIES);
		uroce_ibcm_arm(c, after(now, c->wait_ns));
		uroce_ibcm_tx(c->cm, &c->addr, c->tx);
		return;
	}
	/* core/cm.c cm_process_send_error: DREQ -> time-wait, the others -> IDLE. */
	ibcm_count(c->cm, UROCE_IBCM_C_TIMEOUTS);
	if (err == UROCE_IBCM_EV_DREQ_ERROR)
		uroce_ibcm_enter_timewait(c, now);
	else
		uroce_ibcm_set_idle(c);
	uroce_ibcm_emit(c, err, NULL, NULL);
}

void uroce_ibcm_advance(struct uroce_ibcm *cm, uint64_t now)
{
	uroce_ibcm_enter(cm);
	/* Callbacks may arm, disarm or release any conn: look at the top again each time. */
	while (cm->heap_len && cm->heap[0]->deadline <= now) {
		struct uroce_ibcm_conn *c = cm->heap[0];

		uroce_ibcm_disarm(c);
		fire(c, now);
	}
	uroce_ibcm_leave(cm);
}

uint64_t uroce_ibcm_next_deadline(const struct uroce_ibcm *cm)
{
	return cm->heap_len ? cm->heap[0]->deadline : UINT64_MAX;
}

/* ---- active side -------------------------------------------------------------------------- */

static bool pdata_ok(const void *pdata, size_t len, size_t max)
{
	return len <= max && (pdata || !len);
}

int uroce_ibcm_send_req(struct uroce_ibcm *cm, const struct uroce_ibcm_addr *to,
			struct uroce_cm_req *req, const struct uroce_ibcm_timing *t, void *user,
			uint64_t now, struct uroce_ibcm_conn **out)
{
	struct uroce_ibcm_conn *c;
	struct uroce_cm_mad m;

	if (!cm || !to || !req || !t || !out)
		return -EINVAL;
	c = uroce_ibcm_conn_new(cm, UROCE_IBCM_REQ_SENT, user);
	if (!c)
		return -ENOMEM;
	req->local_comm_id = c->local_id;
	req->local_ca_guid = cm->cfg.ca_guid;
	c->addr = *to;
	c->tid = uroce_ibcm_form_tid(c);
	c->local_qpn = req->local_qpn & 0xFFFFFFu;
	memcpy(c->remote_gid, req->primary.remote_gid, sizeof(c->remote_gid));
	uroce_ibcm_set_timing(c, t);
	uroce_ibcm_mad_init(&m, UROCE_CM_ATTR_REQ, c->tid);
	m.u.req = *req;
	uroce_ibcm_encode(c->tx, &m);
	uroce_ibcm_arm_retry(c, now);
	*out = c;
	uroce_ibcm_tx(cm, &c->addr, c->tx);
	return 0;
}

int uroce_ibcm_send_rtu(struct uroce_ibcm_conn *c, const void *pdata, size_t len, uint64_t now)
{
	struct uroce_cm_mad m;

	(void)now;
	if (!c || c->destroyed || !pdata_ok(pdata, len, UROCE_CM_RTU_PRIV_LEN) ||
	    (c->state != UROCE_IBCM_REP_RCVD && c->state != UROCE_IBCM_MRA_REP_SENT))
		return -EINVAL;
	uroce_ibcm_mad_init(&m, UROCE_CM_ATTR_RTU, c->tid);
	m.u.rtu.local_comm_id = c->local_id;
	m.u.rtu.remote_comm_id = c->remote_id;
	if (len)
		memcpy(m.u.rtu.private_data, pdata, len);
	uroce_ibcm_encode(c->reply, &m);
	c->reply_attr = UROCE_CM_ATTR_RTU;
	c->state = UROCE_IBCM_ESTABLISHED;
	uroce_ibcm_tx(c->cm, &c->addr, c->reply);
	return 0;
}

/* ---- passive side ------------------------------------------------------------------------- */

int uroce_ibcm_send_rep(struct uroce_ibcm_conn *c, struct uroce_cm_rep *rep,
			const struct uroce_ibcm_timing *t, uint64_t now)
{
	struct uroce_cm_mad m;

	if (!c || c->destroyed || !rep || !t ||
	    (c->state != UROCE_IBCM_REQ_RCVD && c->state != UROCE_IBCM_MRA_REQ_SENT))
		return -EINVAL;
	rep->local_comm_id = c->local_id;
	rep->remote_comm_id = c->remote_id;
	rep->local_ca_guid = c->cm->cfg.ca_guid;
	c->local_qpn = rep->local_qpn & 0xFFFFFFu;
	uroce_ibcm_set_timing(c, t);
	uroce_ibcm_mad_init(&m, UROCE_CM_ATTR_REP, c->tid);
	m.u.rep = *rep;
	uroce_ibcm_encode(c->tx, &m);
	c->state = UROCE_IBCM_REP_SENT;
	uroce_ibcm_arm_retry(c, now);
	uroce_ibcm_tx(c->cm, &c->addr, c->tx);
	return 0;
}

int uroce_ibcm_establish(struct uroce_ibcm_conn *c)
{
	if (!c || c->destroyed)
		return -EINVAL;
	if (c->state == UROCE_IBCM_ESTABLISHED)
		return -EISCONN;
	if (c->state != UROCE_IBCM_REP_SENT && c->state != UROCE_IBCM_MRA_REP_RCVD)
		return -EINVAL;
	c->state = UROCE_IBCM_ESTABLISHED;
	uroce_ibcm_disarm(c);
	return 0;
}

/* ---- either side -------------------------------------------------------------------------- */

/*
 * core/cm.c cm_format_rej: the REJ c's state calls for, into buf (UROCE_MAD_LEN bytes);
 * *timewait says whether c then enters time-wait (else IDLE). -EINVAL in a state without one.
 */
static int rej_encode(const struct uroce_ibcm_conn *c, uint16_t reason, const void *ari,
		      size_t ari_len, const void *pdata, size_t len, uint8_t *buf, bool *timewait)
{
	struct uroce_cm_mad m;
	uint8_t rejected = 2; /* "other" */
	uint32_t local = c->local_id;

	*timewait = false;

	switch (c->state) {
	case UROCE_IBCM_REQ_RCVD:
		local = 0; /* as the kernel: the REQ was not answered yet */
		rejected = UROCE_CM_MSG_REF_REQ;
		break;
	case UROCE_IBCM_MRA_REQ_SENT:
		rejected = UROCE_CM_MSG_REF_REQ;
		break;
	case UROCE_IBCM_REP_RCVD:
	case UROCE_IBCM_MRA_REP_SENT:
		rejected = UROCE_CM_MSG_REF_REP;
		break;
	case UROCE_IBCM_REQ_SENT:
	case UROCE_IBCM_MRA_REQ_RCVD:
		break;
	case UROCE_IBCM_REP_SENT:
	case UROCE_IBCM_MRA_REP_RCVD:
		*timewait = true; /* the peer may hold the REP: keep the IDs out of reuse */
		break;
	case UROCE_IBCM_IDLE:
	case UROCE_IBCM_ESTABLISHED:
	case UROCE_IBCM_DREQ_SENT:
	case UROCE_IBCM_DREQ_RCVD:
	case UROCE_IBCM_TIMEWAIT:
	case UROCE_IBCM_SIDR_REQ_SENT:
	case UROCE_IBCM_SIDR_REQ_RCVD:
		return -EINVAL;
	}
	uroce_ibcm_mad_init(&m, UROCE_CM_ATTR_REJ, c->tid);
	m.u.rej.local_comm_id = local;
	m.u.rej.remote_comm_id = c->remote_id;
	m.u.rej.msg_rejected = rejected;
	m.u.rej.reject_info_len = (uint8_t)ari_len;
	m.u.rej.reason = reason;
	if (ari_len)
		memcpy(m.u.rej.ari, ari, ari_len);
	if (len)
		memcpy(m.u.rej.private_data, pdata, len);
	uroce_ibcm_encode(buf, &m);
	return 0;
}

/* ib_send_cm_rej: the REJ of rej_encode, sent, and the state it leads to. */
static int rej_out(struct uroce_ibcm_conn *c, uint16_t reason, const void *ari, size_t ari_len,
		   const void *pdata, size_t len, uint64_t now)
{
	uint8_t buf[UROCE_MAD_LEN];
	bool timewait;
	int rc = rej_encode(c, reason, ari, ari_len, pdata, len, buf, &timewait);

	if (rc)
		return rc;
	uroce_ibcm_tx(c->cm, &c->addr, buf);
	if (timewait) {
		uroce_ibcm_disarm(c);
		uroce_ibcm_enter_timewait(c, now);
	} else {
		uroce_ibcm_set_idle(c);
	}
	return 0;
}

int uroce_ibcm_send_rej(struct uroce_ibcm_conn *c, uint16_t reason, const void *ari, size_t ari_len,
			const void *pdata, size_t len, uint64_t now)
{
	int rc;

	if (!c || c->destroyed || !pdata_ok(ari, ari_len, UROCE_CM_ARI_LEN) ||
	    !pdata_ok(pdata, len, UROCE_CM_REJ_PRIV_LEN))
		return -EINVAL;
	uroce_ibcm_enter(c->cm);
	rc = rej_out(c, reason, ari, ari_len, pdata, len, now);
	uroce_ibcm_leave(c->cm);
	return rc;
}

int uroce_ibcm_send_mra(struct uroce_ibcm_conn *c, uint8_t service_timeout, const void *pdata,
			size_t len, uint64_t now)
{
	struct uroce_cm_mad m;
	enum uroce_ibcm_state next;
	uint8_t mraed;

	(void)now;
	if (!c || c->destroyed || !pdata_ok(pdata, len, UROCE_CM_MRA_PRIV_LEN) ||
	    (service_timeout & ~(0x1Fu | UROCE_IBCM_MRA_FLAG_DELAY)))
		return -EINVAL;
	if (c->state == UROCE_IBCM_REQ_RCVD) {
		next = UROCE_IBCM_MRA_REQ_SENT;
		mraed = UROCE_CM_MSG_REF_REQ;
	} else if (c->state == UROCE_IBCM_REP_RCVD) {
		next = UROCE_IBCM_MRA_REP_SENT;
		mraed = UROCE_CM_MSG_REF_REP;
	} else {
		return -EINVAL;
	}
	uroce_ibcm_mad_init(&m, UROCE_CM_ATTR_MRA, c->tid);
	m.u.mra.local_comm_id = c->local_id;
	m.u.mra.remote_comm_id = c->remote_id;
	m.u.mra.msg_mraed = mraed;
	m.u.mra.service_timeout = service_timeout & 0x1F;
	if (len)
		memcpy(m.u.mra.private_data, pdata, len);
	uroce_ibcm_encode(c->reply, &m);
	c->reply_attr = UROCE_CM_ATTR_MRA;
	c->state = next;
	if (!(service_timeout & UROCE_IBCM_MRA_FLAG_DELAY))
		uroce_ibcm_tx(c->cm, &c->addr, c->reply);
	return 0;
}

static void dreq_encode(const struct uroce_ibcm_conn *c, const void *pdata, size_t len,
			uint8_t *out)
{
	struct uroce_cm_mad m;

	uroce_ibcm_mad_init(&m, UROCE_CM_ATTR_DREQ, uroce_ibcm_form_tid(c));
	m.u.dreq.local_comm_id = c->local_id;
	m.u.dreq.remote_comm_id = c->remote_id;
	m.u.dreq.remote_qpn = c->remote_qpn;
	if (len)
		memcpy(m.u.dreq.private_data, pdata, len);
	uroce_ibcm_encode(out, &m);
}


void uroce_ibcm_dreq_out(struct uroce_ibcm_conn *c, const void *pdata, size_t len, uint64_t now)
{
	dreq_encode(c, pdata, len, c->tx);
	c->state = UROCE_IBCM_DREQ_SENT;
	uroce_ibcm_arm_retry(c, now);
	uroce_ibcm_tx(c->cm, &c->addr, c->tx);
}

int uroce_ibcm_send_dreq(struct uroce_ibcm_conn *c, const void *pdata, size_t len,
			 const struct uroce_ibcm_timing *t, uint64_t now)
{
	if (!c || c->destroyed || !pdata_ok(pdata, len, UROCE_CM_DREQ_PRIV_LEN) ||
	    c->state != UROCE_IBCM_ESTABLISHED)
		return -EINVAL;
	if (t)
		uroce_ibcm_set_timing(c, t);
	uroce_ibcm_dreq_out(c, pdata, len, now);
	return 0;
}

static void drep_encode(const struct uroce_ibcm_conn *c, const void *pdata, size_t len,
			uint8_t *out)
{
	struct uroce_cm_mad m;

	uroce_ibcm_mad_init(&m, UROCE_CM_ATTR_DREP, c->tid);
	m.u.drep.local_comm_id = c->local_id;
	m.u.drep.remote_comm_id = c->remote_id;
	if (len)
		memcpy(m.u.drep.private_data, pdata, len);
	uroce_ibcm_encode(out, &m);
}

void uroce_ibcm_drep_out(struct uroce_ibcm_conn *c, const void *pdata, size_t len, uint64_t now)
{
	drep_encode(c, pdata, len, c->reply);
	c->reply_attr = UROCE_CM_ATTR_DREP;
	uroce_ibcm_tx(c->cm, &c->addr, c->reply);
	uroce_ibcm_enter_timewait(c, now);
}

int uroce_ibcm_send_drep(struct uroce_ibcm_conn *c, const void *pdata, size_t len, uint64_t now)
{
	if (!c || c->destroyed || !pdata_ok(pdata, len, UROCE_CM_DREP_PRIV_LEN) ||
	    c->state != UROCE_IBCM_DREQ_RCVD)
		return -EINVAL;
	uroce_ibcm_drep_out(c, pdata, len, now);
	return 0;
}

static void sidr_rep_encode(const struct uroce_ibcm_conn *c, const struct uroce_cm_sidr_rep *rep,
			    uint8_t *out)
{
	struct uroce_cm_mad m;

	uroce_ibcm_mad_init(&m, UROCE_CM_ATTR_SIDR_REP, c->tid);
	m.u.sidr_rep = *rep;
	m.u.sidr_rep.request_id = c->remote_id;
	uroce_ibcm_encode(out, &m);
}

static void sidr_rep_out(struct uroce_ibcm_conn *c, const struct uroce_cm_sidr_rep *rep)
{
	uint8_t buf[UROCE_MAD_LEN];

	sidr_rep_encode(c, rep, buf);
	uroce_ibcm_tx(c->cm, &c->addr, buf);
	uroce_ibcm_set_idle(c);
}

/* What tearing a connection down sends, by its state: core/cm.c cm_destroy_id's choice, shared by
 * uroce_ibcm_conn_destroy (which sends it) and uroce_ibcm_will_mad (which only builds it). */
enum teardown {
	TD_REJ_TIMEOUT,	 /* REJ, reason timeout, the ARI naming us (CA GUID): the passive side
			  * finds its connection by it */
	TD_REJ_CONSUMER, /* REJ, consumer defined */
	TD_DREQ,
	TD_DREP,
	TD_SIDR_REJ, /* SIDR_REP, status reject */
	TD_IDLE,     /* nothing to send: the connection goes idle */
	TD_LINGER,   /* nothing to send: the timer or the peer's answer ends it */
};

static enum teardown teardown_of(enum uroce_ibcm_state s)
{
	switch (s) {
	case UROCE_IBCM_REQ_SENT:
	case UROCE_IBCM_MRA_REQ_RCVD:
		return TD_REJ_TIMEOUT;
	case UROCE_IBCM_REQ_RCVD:
	case UROCE_IBCM_MRA_REQ_SENT:
	case UROCE_IBCM_REP_SENT:
	case UROCE_IBCM_MRA_REP_RCVD:
	case UROCE_IBCM_REP_RCVD:
	case UROCE_IBCM_MRA_REP_SENT:
		return TD_REJ_CONSUMER;
	case UROCE_IBCM_ESTABLISHED:
		return TD_DREQ;
	case UROCE_IBCM_DREQ_RCVD:
		return TD_DREP;
	case UROCE_IBCM_SIDR_REQ_RCVD:
		return TD_SIDR_REJ;
	case UROCE_IBCM_SIDR_REQ_SENT:
	case UROCE_IBCM_IDLE:
		return TD_IDLE;
	case UROCE_IBCM_DREQ_SENT:
	case UROCE_IBCM_TIMEWAIT:
		return TD_LINGER;
	}
	return TD_LINGER;
}

int uroce_ibcm_will_mad(const struct uroce_ibcm_conn *c, uint8_t *mad)
{
	struct uroce_cm_sidr_rep rep;
	uint8_t ari[8];
	bool timewait;

	if (!c || !mad || c->destroyed)
		return -EINVAL;
	switch (teardown_of(c->state)) {
	case TD_REJ_TIMEOUT:
		uroce_put_be64(ari, c->cm->cfg.ca_guid);
		return rej_encode(c, UROCE_CM_REJ_TIMEOUT, ari, sizeof(ari), NULL, 0, mad,
				  &timewait);
	case TD_REJ_CONSUMER:
		return rej_encode(c, UROCE_CM_REJ_CONSUMER_DEFINED, NULL, 0, NULL, 0, mad,
				  &timewait);
	case TD_DREQ:
		dreq_encode(c, NULL, 0, mad);
		return 0;
	case TD_DREP:
		drep_encode(c, NULL, 0, mad);
		return 0;
	case TD_SIDR_REJ:
		memset(&rep, 0, sizeof(rep));
		rep.status = IBCM_SIDR_REJECT;
		sidr_rep_encode(c, &rep, mad);
		return 0;
	case TD_IDLE:
	case TD_LINGER:
		return -ENOENT;
	}
	return -ENOENT;
}

/* core/cm.c cm_destroy_id, but ESTABLISHED and DREQ_SENT keep resending the DREQ (ibcm.h). */
void uroce_ibcm_conn_destroy(struct uroce_ibcm_conn *c, uint64_t now)
{
	struct uroce_cm_sidr_rep rep;
	struct uroce_ibcm *cm;
	uint8_t ari[8];

	if (!c || c->destroyed)
		return;
	cm = c->cm;
	uroce_ibcm_enter(cm);
	c->destroyed = true;
	c->user = NULL;
	switch (teardown_of(c->state)) {
	case TD_REJ_TIMEOUT:
		uroce_put_be64(ari, cm->cfg.ca_guid);
		rej_out(c, UROCE_CM_REJ_TIMEOUT, ari, sizeof(ari), NULL, 0, now);
		break;
	case TD_REJ_CONSUMER:
		rej_out(c, UROCE_CM_REJ_CONSUMER_DEFINED, NULL, 0, NULL, 0, now);
		break;
	case TD_DREQ:
		uroce_ibcm_dreq_out(c, NULL, 0, now);
		break;
	case TD_DREP:
		uroce_ibcm_drep_out(c, NULL, 0, now);
		break;
	case TD_SIDR_REJ:
		memset(&rep, 0, sizeof(rep));
		rep.status = IBCM_SIDR_REJECT;
		sidr_rep_out(c, &rep);
		break;
	case TD_IDLE:
		uroce_ibcm_set_idle(c);
		break;
	case TD_LINGER:
		break;
	}
	uroce_ibcm_leave(cm);
}

/* ---- SIDR --------------------------------------------------------------------------------- */

int uroce_ibcm_send_sidr_req(struct uroce_ibcm *cm, const struct uroce_ibcm_addr *to,
			     struct uroce_cm_sidr_req *req, const struct uroce_ibcm_timing *t,
			     void *user, uint64_t now, struct uroce_ibcm_conn **out)
{
	struct uroce_ibcm_conn *c;
	struct uroce_cm_mad m;

	if (!cm || !to || !req || !t || !out)
		return -EINVAL;
	c = uroce_ibcm_conn_new(cm, UROCE_IBCM_SIDR_REQ_SENT, user);
	if (!c)
		return -ENOMEM;
	req->request_id = c->local_id;
	c->addr = *to;
	c->tid = uroce_ibcm_form_tid(c);
	uroce_ibcm_set_timing(c, t);
	uroce_ibcm_mad_init(&m, UROCE_CM_ATTR_SIDR_REQ, c->tid);
	m.u.sidr_req = *req;
	uroce_ibcm_encode(c->tx, &m);
	uroce_ibcm_arm_retry(c, now);
	*out = c;
	uroce_ibcm_tx(cm, &c->addr, c->tx);
	return 0;
}

int uroce_ibcm_send_sidr_rep(struct uroce_ibcm_conn *c, struct uroce_cm_sidr_rep *rep, uint64_t now)
{
	(void)now;
	if (!c || c->destroyed || !rep || rep->info_len > UROCE_CM_SIDR_INFO_LEN ||
	    c->state != UROCE_IBCM_SIDR_REQ_RCVD)
		return -EINVAL;
	rep->request_id = c->remote_id;
	sidr_rep_out(c, rep);
	return 0;
}

/* ---- accessors ---------------------------------------------------------------------------- */

void *uroce_ibcm_conn_user(const struct uroce_ibcm_conn *c)
{
	return c->user;
}

void uroce_ibcm_conn_set_user(struct uroce_ibcm_conn *c, void *user)
{
	if (!c->destroyed)
		c->user = user;
}

enum uroce_ibcm_state uroce_ibcm_conn_state(const struct uroce_ibcm_conn *c)
{
	return c->state;
}

const struct uroce_ibcm_addr *uroce_ibcm_conn_addr(const struct uroce_ibcm_conn *c)
{
	return &c->addr;
}

uint32_t uroce_ibcm_conn_local_id(const struct uroce_ibcm_conn *c)
{
	return c->local_id;
}

uint32_t uroce_ibcm_conn_remote_id(const struct uroce_ibcm_conn *c)
{
	return c->remote_id;
}
