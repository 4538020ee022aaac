/* SPDX-License-Identifier: MIT */
/*
 * Test set-up over the simulated network: engines on nodes, connected QPs, registered memory
 * with guard areas, and CQ helpers. Everything returns 0 or a negative errno; tests CHECK it.
 */
#ifndef UROCE_TESTS_SIM_SIMENV_H
#define UROCE_TESTS_SIM_SIMENV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "simlink.h"
#include "transport/engine.h"

#define SIMENV_NODES  2
#define SIM_GID_INDEX 1 /* as rxe: index 1 is the IPv4 GID */

struct simenv {
	struct sim_net net;
	int n;
	struct uroce_eng *eng[SIMENV_NODES];
	struct uroce_pd *pd[SIMENV_NODES];
};

/* Two engines (QPN bases 0x11 and 0x211, key seeds 0x10 and 0x80) on a fresh network. */
int simenv_init(struct simenv *s, uint64_t seed, uint32_t frames, uint32_t max_ip);
void simenv_fini(struct simenv *s);

/* What a connected pair of QPs looks like. */
struct simqp_cfg {
	enum uroce_qp_type type;
	enum uroce_mtu mtu;
	uint8_t timeout, retry_cnt, rnr_retry, min_rnr_timer;
	uint8_t max_rd_atomic; /* both directions */
	unsigned access;       /* remote access flags of both QPs */
	uint32_t qkey;	       /* UD */
	uint32_t psn[2];       /* initial send PSN of side 0 and side 1 */
	struct uroce_qp_cap cap;
	bool sq_sig_all;
};

void simqp_cfg_default(struct simqp_cfg *c, enum uroce_qp_type type);

/* One side of a QP pair: the QP and its CQs. */
struct simqp {
	int node;
	struct uroce_qp *qp;
	struct uroce_cq *scq, *rcq;
	struct uroce_srq *srq;
};

/* Create a QP (with its own CQs of cqe entries, or the given srq) on node. */
int simqp_create(struct simenv *s, int node, const struct simqp_cfg *c, uint32_t cqe,
		 struct uroce_srq *srq, struct simqp *q);
void simqp_destroy(struct simqp *q);
/* RESET -> INIT -> RTR -> RTS, a pointing at b and b at a (UD: no peer needed). */
int simqp_connect(struct simenv *s, struct simqp *a, struct simqp *b, const struct simqp_cfg *c);
/* The steps, for state machine tests. */
int simqp_to_init(struct simqp *q, const struct simqp_cfg *c);
int simqp_to_rtr(struct simenv *s, struct simqp *q, int peer_node, uint32_t dest_qpn,
		 uint32_t rq_psn, const struct simqp_cfg *c);
int simqp_to_rts(struct simqp *q, uint32_t sq_psn, const struct simqp_cfg *c);
int simqp_to_err(struct simqp *q);

/* Registered memory [buf, buf + len) between two guard areas filled with a canary. */
#define SIMMR_GUARD 256
struct simmr {
	uint8_t *base; /* allocation: guard, buf, guard */
	uint8_t *buf;
	size_t len;
	uint64_t iova;
	struct uroce_mr *mr;
	uint32_t lkey, rkey;
};

int simmr_reg(struct simenv *s, int node, size_t len, unsigned access, struct simmr *m);
int simmr_reg_iova(struct uroce_pd *pd, size_t len, uint64_t iova, unsigned access,
		   struct simmr *m);
void simmr_free(struct simmr *m);
/* True when both guard areas still hold the canary. */
bool simmr_guard_ok(const struct simmr *m);
/* The IOVA of buf + off. */
static inline uint64_t simmr_va(const struct simmr *m, size_t off)
{
	return m->iova + off;
}

/* Fill with a pattern derived from seed; check it. */
void sim_pattern(uint8_t *p, size_t len, uint64_t seed);
bool sim_pattern_ok(const uint8_t *p, size_t len, uint64_t seed);

/* Poll up to max completions from cq into wc; returns how many. */
int simcq_drain(struct uroce_cq *cq, struct uroce_wc *wc, int max);

/* Post helpers returning uroce_post_* results. */
int sim_post_send1(struct uroce_qp *qp, uint64_t wr_id, enum uroce_wr_opcode op,
		   const struct simmr *m, size_t off, uint32_t len, unsigned flags);
int sim_post_recv1(struct uroce_qp *qp, uint64_t wr_id, const struct simmr *m, size_t off,
		   uint32_t len);
int sim_post_write(struct uroce_qp *qp, uint64_t wr_id, enum uroce_wr_opcode op,
		   const struct simmr *m, size_t off, uint32_t len, uint64_t raddr, uint32_t rkey,
		   unsigned flags, uint32_t imm);
int sim_post_atomic(struct uroce_qp *qp, uint64_t wr_id, enum uroce_wr_opcode op,
		    const struct simmr *m, size_t off, uint64_t raddr, uint32_t rkey,
		    uint64_t compare_add, uint64_t swap, unsigned flags);

/* Events: take every pending event of an engine and add them up by type. */
struct sim_evtally {
	int n[16];
	struct uroce_event last[16];
};
void sim_events_take(struct uroce_eng *e, struct sim_evtally *t);

const char *sim_wc_status_name(enum uroce_wc_status s);

#endif
