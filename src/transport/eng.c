/* SPDX-License-Identifier: MIT */
/* The engine object: tables, scheduling of QPs that have packets to send, timers, events. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "transport/internal.h"

const char *const uroce_counter_names[UROCE_CNT_MAX] = {
#define UROCE_COUNTER_NAME(id, name) [UROCE_CNT_##id] = name,
	UROCE_COUNTERS(UROCE_COUNTER_NAME)
#undef UROCE_COUNTER_NAME
};

void uroce_eng_cfg_default(struct uroce_eng_cfg *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->qpn_base = 0x11;
	cfg->max_qp = 1024;
	cfg->max_mr = 4096;
	cfg->max_mw = 4096;
	cfg->max_cq = 1024;
	cfg->max_srq = 256;
	cfg->max_ah = 4096;
	cfg->max_pd = 256;
	cfg->max_events = 1024;
	cfg->key_seed = 0;
}

int uroce_eng_create(struct uroce_eng **out, const struct uroce_eng_cfg *cfg)
{
	if (cfg->qpn_base < 2 || !cfg->max_qp || cfg->qpn_base + (uint64_t)cfg->max_qp > 0xFFFFFF ||
	    !cfg->max_mr || cfg->max_mr > 0x7FFFFF ||
	    cfg->max_mw > 0x7FFFFF || !cfg->max_events)
		return -EINVAL;
	struct uroce_eng *e = calloc(1, sizeof(*e));

	if (!e)
		return -ENOMEM;
	e->cfg = *cfg;
	e->cfg.max_events = uroce_pow2(cfg->max_events);
	e->timer_lo = UROCE_NEVER;
	if (e->cfg.port_mtu < UROCE_MTU_256 || e->cfg.port_mtu > UROCE_MTU_4096)
		e->cfg.port_mtu = UROCE_MTU_1024;
	e->mr_gen = cfg->key_seed;
	e->pds = calloc(cfg->max_pd ? cfg->max_pd : 1, sizeof(*e->pds));
	e->mrs = calloc(cfg->max_mr, sizeof(*e->mrs));
	e->mws = calloc(cfg->max_mw ? cfg->max_mw : 1, sizeof(*e->mws));
	e->ahs = calloc(cfg->max_ah ? cfg->max_ah : 1, sizeof(*e->ahs));
	e->cqs = calloc(cfg->max_cq ? cfg->max_cq : 1, sizeof(*e->cqs));
	e->srqs = calloc(cfg->max_srq ? cfg->max_srq : 1, sizeof(*e->srqs));
	e->qps = calloc(cfg->max_qp, sizeof(*e->qps));
	e->live = calloc((size_t)cfg->max_qp + 1, sizeof(*e->live));
	e->timed = calloc((size_t)cfg->max_qp + 1, sizeof(*e->timed));
	e->events = calloc(e->cfg.max_events, sizeof(*e->events));
	e->bounce = malloc((size_t)UROCE_TX_BOUNCE * UROCE_TX_BOUNCE_SIZE);
	e->mcgs = calloc(UROCE_MAX_MCAST_GRP, sizeof(*e->mcgs));
	if (!e->mcgs || !e->pds || !e->mrs || !e->mws || !e->ahs || !e->cqs || !e->srqs || !e->qps || !e->live || !e->timed || !e->events ||
	    !e->bounce) {
		uroce_eng_destroy(e);
		return -ENOMEM;
	}
	*out = e;
	return 0;
}

void uroce_eng_destroy(struct uroce_eng *e)
{
	if (!e)
		return;
	/* Children first: windows hold MRs, QPs and PDs; QPs hold CQs, SRQs and PDs; MRs, AHs
	 * and SRQs hold PDs. */
	for (uint32_t i = 0; e->mws && i < e->cfg.max_mw; i++)
		if (e->mws[i])
			uroce_mw_dealloc(e->mws[i]);
	for (uint32_t i = 0; e->qps && i < e->cfg.max_qp; i++)
		if (e->qps[i])
			uroce_qp_destroy(e->qps[i]);
	if (e->gsi)
		uroce_qp_destroy(e->gsi);
	for (uint32_t i = 0; e->mrs && i < e->cfg.max_mr; i++)
		if (e->mrs[i])
			uroce_mr_dereg(e->mrs[i]);
	for (uint32_t i = 0; e->ahs && i < e->cfg.max_ah; i++)
		if (e->ahs[i])
			uroce_ah_destroy(e->ahs[i]);
	for (uint32_t i = 0; e->srqs && i < e->cfg.max_srq; i++)
		if (e->srqs[i])
			uroce_srq_destroy(e->srqs[i]);
	for (uint32_t i = 0; e->cqs && i < e->cfg.max_cq; i++)
		if (e->cqs[i])
			uroce_cq_destroy(e->cqs[i]);
	for (uint32_t i = 0; e->pds && i < e->cfg.max_pd; i++)
		if (e->pds[i])
			uroce_pd_free(e->pds[i]);
	free(e->pds);
	free(e->mrs);
	free(e->mws);
	free(e->ahs);
	free(e->cqs);
	free(e->srqs);
	free(e->qps);
	free(e->live);
	free(e->timed);
	free(e->events);
	free(e->bounce);
	free(e->mcgs);
	free(e);
}

void uroce_eng_set_port_mtu(struct uroce_eng *e, int mtu)
{
	if (mtu < UROCE_MTU_256 || mtu > UROCE_MTU_4096)
		return;
	e->cfg.port_mtu = (uint8_t)mtu;
	for (uint32_t i = 0; i < e->nqps; i++) {
		struct uroce_qp *qp = e->live[i];

		if (qp->init.type == UROCE_QPT_UD || qp->init.type == UROCE_QPT_GSI) {
			qp->attr.path_mtu = (enum uroce_mtu)mtu;
			qp->mtu = uroce_mtu_bytes((enum uroce_mtu)mtu);
		}
	}
}

uint64_t uroce_eng_counter(const struct uroce_eng *e, enum uroce_counter c)
{
	return c < UROCE_CNT_MAX ? e->counters[c] : 0;
}

void uroce_eng_event(struct uroce_eng *e, enum uroce_event_type type, void *obj, void *user)
{
	if (e->ev_tail - e->ev_head == e->cfg.max_events)
		return; /* full: the oldest events are kept, as a device's event queue does */
	struct uroce_event *ev = &e->events[e->ev_tail++ & (e->cfg.max_events - 1)];

	ev->type = type;
	ev->obj.cq = obj;
	ev->user = user;
}

int uroce_eng_poll_event(struct uroce_eng *e, struct uroce_event *ev)
{
	if (e->ev_head == e->ev_tail)
		return 0;
	*ev = e->events[e->ev_head++ & (e->cfg.max_events - 1)];
	return 1;
}

/* ---- ready list ------------------------------------------------------------------------- */

void uroce_qp_schedule(struct uroce_qp *qp)
{
	struct uroce_eng *e = qp->eng;

	if (qp->on_ready)
		return;
	qp->on_ready = true;
	qp->ready_next = NULL;
	qp->ready_prev = e->ready_tail;
	if (e->ready_tail)
		e->ready_tail->ready_next = qp;
	else
		e->ready_head = qp;
	e->ready_tail = qp;
}

/* Take qp, which is on the ready list, off it. */
static void ready_remove(struct uroce_eng *e, struct uroce_qp *qp)
{
	if (qp->ready_prev)
		qp->ready_prev->ready_next = qp->ready_next;
	else
		e->ready_head = qp->ready_next;
	if (qp->ready_next)
		qp->ready_next->ready_prev = qp->ready_prev;
	else
		e->ready_tail = qp->ready_prev;
	qp->on_ready = false;
	qp->ready_next = qp->ready_prev = NULL;
}

void uroce_qp_unschedule(struct uroce_qp *qp)
{
	if (qp->on_ready)
		ready_remove(qp->eng, qp);
}

/* ---- timers ------------------------------------------------------------------------------ */

/* When the first timer of qp runs out, or UROCE_NEVER. */
static uint64_t qp_deadline(const struct uroce_qp *qp)
{
	uint64_t d = qp->comp.timeout_at < qp->comp.ask_at ? qp->comp.timeout_at : qp->comp.ask_at;

	return qp->req.rnr_until && qp->req.rnr_until < d ? qp->req.rnr_until : d;
}

void uroce_qp_timed(struct uroce_qp *qp)
{
	struct uroce_eng *e = qp->eng;
	uint64_t d = qp_deadline(qp);

	/* Only an RC QP's timers run (uroce_comp_timer). */
	if (qp->init.type != UROCE_QPT_RC)
		return;
	if (d < e->timer_lo)
		e->timer_lo = d;
	if (qp->timed_idx != UROCE_NOT_TIMED)
		return;
	qp->timed_idx = e->ntimed;
	e->timed[e->ntimed++] = qp;
}

void uroce_qp_untimed(struct uroce_qp *qp)
{
	struct uroce_eng *e = qp->eng;

	if (qp->timed_idx == UROCE_NOT_TIMED)
		return;
	e->timed[qp->timed_idx] = e->timed[--e->ntimed];
	e->timed[qp->timed_idx]->timed_idx = qp->timed_idx;
	qp->timed_idx = UROCE_NOT_TIMED;
}

static bool qp_has_work(const struct uroce_qp *qp)
{
	return uroce_resp_has_work(qp) || uroce_req_has_work(qp);
}

bool uroce_eng_tx_pending(const struct uroce_eng *e)
{
	for (const struct uroce_qp *qp = e->ready_head; qp; qp = qp->ready_next)
		if (qp_has_work(qp))
			return true;
	return false;
}

bool uroce_eng_tx_acks_only(const struct uroce_eng *e)
{
	bool acks = false;

	for (const struct uroce_qp *qp = e->ready_head; qp; qp = qp->ready_next) {
		if (uroce_req_has_work(qp) || uroce_resp_has_data(qp))
			return false;
		acks = acks || uroce_resp_has_ack(qp);
	}
	return acks;
}

bool uroce_eng_tx_responds(const struct uroce_eng *e)
{
	for (const struct uroce_qp *qp = e->ready_head; qp; qp = qp->ready_next)
		if (uroce_resp_has_data(qp))
			return true;
	return false;
}

/*
 * What one QP may emit before the next QP gets its turn: 64 packets, or 64 KiB of payload,
 * whichever comes first. A turn of a QP streaming 64 KiB messages is one whole message at any
 * MTU (64 packets of 1 KiB, 16 of 4 KiB), and its packets make the same two UDP GSO sends as a
 * lone QP's (the FIRST packet, 16 bytes longer for its RETH, starts a send; 63 segments end
 * one). A turn counted in bytes of RoCE packets (headers included) would cut messages anywhere,
 * and each cut adds a send; a much smaller turn would end every send part full. Fairness is in
 * payload bytes, whatever the MTU.
 */
#define UROCE_TX_QUANTUM_PKTS  64
#define UROCE_TX_QUANTUM_BYTES 65536u

int uroce_eng_tx(struct uroce_eng *e, uint64_t now, struct uroce_tx_pkt *out, int max)
{
	int n = 0;

	e->now = now;
	e->bounce_used = 0;
	while (n < max && e->ready_head) {
		struct uroce_qp *qp = e->ready_head;

		/* Pop, serve up to a quantum, and requeue at the tail if work remains. */
		ready_remove(e, qp);

		int q = 0;
		uint32_t bytes = 0;
		/* Responses come from received requests: once there are none, the turn has none. */
		bool resp = true;

		while (n < max && q < UROCE_TX_QUANTUM_PKTS && bytes < UROCE_TX_QUANTUM_BYTES) {
			int r = resp ? uroce_resp_next(qp, &out[n]) : 0;

			if (r == 0) {
				resp = false;
				r = uroce_req_next(qp, &out[n]);
			}
			if (r <= 0)
				break;
			bytes += out[n].payload_len;
			n++;
			q++;
			uroce_count(e, UROCE_CNT_SENT_PKTS);
			if (resp || !qp->req.offset || bytes >= UROCE_TX_QUANTUM_BYTES)
				continue;
			/* In the middle of a message: its MIDDLE packets at once, as many as the
			 * turn has room for (each carries a full MTU of payload). */
			int room = max - n < UROCE_TX_QUANTUM_PKTS - q ? max - n
								       : UROCE_TX_QUANTUM_PKTS - q;
			uint32_t by = (UROCE_TX_QUANTUM_BYTES - bytes + qp->mtu - 1) / qp->mtu;

			if ((uint32_t)room > by)
				room = (int)by;
			int k = uroce_req_middles(qp, &out[n - 1], &out[n], room);

			bytes += (uint32_t)k * qp->mtu;
			n += k;
			q += k;
			e->counters[UROCE_CNT_SENT_PKTS] += (uint64_t)k;
		}
		if (qp_has_work(qp))
			uroce_qp_schedule(qp);
		if (q == 0 && !qp->on_ready)
			continue;
		if (q == 0)
			break; /* work remains but is blocked (bounce buffers exhausted): stop */
	}
	return n;
}

void uroce_eng_advance(struct uroce_eng *e, uint64_t now)
{
	uint64_t lo = UROCE_NEVER;

	e->now = now;
	if (now < e->timer_lo)
		return;
	/* Timers a QP's expiry starts lower timer_lo again (uroce_qp_timed). */
	e->timer_lo = UROCE_NEVER;
	for (uint32_t i = 0; i < e->ntimed;) {
		struct uroce_qp *qp = e->timed[i];

		uroce_comp_timer(qp, now);
		uint64_t d = qp_deadline(qp);

		/* A QP whose timers have all stopped leaves the set (the last one takes its place). */
		if (d == UROCE_NEVER) {
			uroce_qp_untimed(qp);
			continue;
		}
		if (d < lo)
			lo = d;
		i++;
	}
	if (lo < e->timer_lo)
		e->timer_lo = lo;
}

uint64_t uroce_eng_next_deadline(const struct uroce_eng *e)
{
	return e->timer_lo;
}
