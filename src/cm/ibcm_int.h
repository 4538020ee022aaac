/* SPDX-License-Identifier: MIT */
/*
 * Inside the IB CM engine (ibcm.h): the connection and instance structs and the helpers that
 * ibcm.c (instance, tables, timers, the calls that send) and ibcm_rx.c (received MADs) share.
 * Not installed; nothing outside src/cm includes it.
 *
 * Lookups: three chained hash tables over the same bucket array size, each with its own
 * intrusive link in the conn:
 *   LOCAL:  local comm ID, every conn from creation until it is released (the ID is "in use");
 *   REMOTE: remote comm ID (the key of duplicate REQ detection with the remote CA GUID), from
 *           the REQ (passive), the REP (active) or the SIDR_REQ until the conn is IDLE;
 *   QP:     remote QPN (stale connection detection with the remote GID), same lifetime.
 * Timers: a binary min-heap of armed conns ordered by deadline (one timer per conn: the
 * retransmission of the message in tx, or the end of time-wait).
 */
#ifndef UROCE_CM_IBCM_INT_H
#define UROCE_CM_IBCM_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cm/ibcm.h"

#define IBCM_NS_PER_MS	 1000000ull
#define IBCM_NOT_ARMED	 SIZE_MAX
#define IBCM_ID_BITS	 20
#define IBCM_ID_MASK	 ((1u << IBCM_ID_BITS) - 1)
#define IBCM_SIDR_REJECT 2 /* SIDR_REP status (ib_cm.h IB_SIDR_REJECT) */

enum ibcm_table {
	IBCM_T_LOCAL,
	IBCM_T_REMOTE,
	IBCM_T_QP,
	IBCM_T_COUNT,
};

struct uroce_ibcm_conn {
	struct uroce_ibcm *cm;
	void *user;
	enum uroce_ibcm_state state;
	bool destroyed; /* uroce_ibcm_conn_destroy was called: no more events */
	bool released;	/* IDLE and destroyed: on the zombie list, freed at the outermost return */
	bool in[IBCM_T_COUNT];
	struct uroce_ibcm_conn *hnext[IBCM_T_COUNT];
	struct uroce_ibcm_conn *zombie_next;

	size_t heap_idx; /* IBCM_NOT_ARMED when no timer */
	uint64_t deadline;
	uint64_t timeout_ns; /* timing.timeout_ms of the last message that expects an answer */
	uint64_t wait_ns;    /* the current wait: timeout_ns, longer after an MRA */
	uint8_t max_retries;
	uint8_t retries; /* resends of tx so far */

	uint32_t local_id;
	uint32_t remote_id; /* 0 until known (active side: from the REP) */
	uint64_t remote_ca_guid;
	uint32_t local_qpn;
	uint32_t remote_qpn;
	uint8_t remote_gid[16]; /* the peer's GID as the REQ names it (stale detection) */
	uint64_t tid;		/* the transaction replies reuse (REQ's, DREQ's, SIDR_REQ's) */
	struct uroce_ibcm_addr addr;

	uint16_t reply_attr;	      /* attribute in reply, 0 when none */
	uint8_t tx[UROCE_MAD_LEN];    /* the message the timer resends (REQ, REP, DREQ, SIDR_REQ) */
	uint8_t reply[UROCE_MAD_LEN]; /* the last answer (MRA, RTU, DREP), resent on duplicates */
};

struct ibcm_htable {
	struct uroce_ibcm_conn **b;
};

struct uroce_ibcm {
	struct uroce_ibcm_cfg cfg;
	uint64_t counters[UROCE_IBCM_C_COUNT];
	struct ibcm_htable t[IBCM_T_COUNT];
	size_t nbuckets; /* power of two, the same for every table */
	struct uroce_ibcm_conn **heap;
	size_t heap_len;
	size_t heap_cap;
	size_t nconn;	  /* allocated conns, zombies included */
	uint32_t next_id; /* low 20 bits of the next local comm ID to try */
	unsigned depth;	  /* nesting of uroce_ibcm_* calls (callbacks re-enter) */
	struct uroce_ibcm_conn *zombies;
};

/* Every entry point brackets its work so that released conns outlive the callbacks. */
void uroce_ibcm_enter(struct uroce_ibcm *cm);
void uroce_ibcm_leave(struct uroce_ibcm *cm);

static inline void ibcm_count(struct uroce_ibcm *cm, enum uroce_ibcm_counter k)
{
	cm->counters[k]++;
}

/* Tables. */
struct uroce_ibcm_conn *uroce_ibcm_find_local(const struct uroce_ibcm *cm, uint32_t local_id);
void uroce_ibcm_table_add(struct uroce_ibcm_conn *c, enum ibcm_table t);
struct uroce_ibcm_conn *uroce_ibcm_bucket(const struct uroce_ibcm *cm, enum ibcm_table t,
					  uint32_t key);

/* A new conn in state s with a fresh local comm ID, in the LOCAL table; NULL on -ENOMEM. */
struct uroce_ibcm_conn *uroce_ibcm_conn_new(struct uroce_ibcm *cm, enum uroce_ibcm_state s,
					    void *user);

/* Timers. */
void uroce_ibcm_arm(struct uroce_ibcm_conn *c, uint64_t deadline);
void uroce_ibcm_disarm(struct uroce_ibcm_conn *c);
void uroce_ibcm_set_timing(struct uroce_ibcm_conn *c, const struct uroce_ibcm_timing *t);
/* Arm the retransmission of tx: first wait timeout_ns, retries reset. */
void uroce_ibcm_arm_retry(struct uroce_ibcm_conn *c, uint64_t now);
void uroce_ibcm_enter_timewait(struct uroce_ibcm_conn *c, uint64_t now);
/* State IDLE: timer stopped, out of the REMOTE and QP tables; released if destroyed. */
void uroce_ibcm_set_idle(struct uroce_ibcm_conn *c);

/* MADs out. */
void uroce_ibcm_mad_init(struct uroce_cm_mad *m, uint16_t attr, uint64_t tid);
/* Encode m into out (256 bytes); every message here has a codec, so this cannot fail. */
void uroce_ibcm_encode(uint8_t *out, const struct uroce_cm_mad *m);
void uroce_ibcm_tx(struct uroce_ibcm *cm, const struct uroce_ibcm_addr *to, const uint8_t *mad);
uint64_t uroce_ibcm_form_tid(const struct uroce_ibcm_conn *c);
/* DREQ for an ESTABLISHED conn (the user's, a destroy's or a stale connection's). */
void uroce_ibcm_dreq_out(struct uroce_ibcm_conn *c, const void *pdata, size_t len, uint64_t now);
/* DREP from DREQ_RCVD, then TIMEWAIT. */
void uroce_ibcm_drep_out(struct uroce_ibcm_conn *c, const void *pdata, size_t len, uint64_t now);

/* Report ev for c, unless its user destroyed it. Always the last thing a handler does. */
void uroce_ibcm_emit(struct uroce_ibcm_conn *c, enum uroce_ibcm_event_type type,
		     const struct uroce_ibcm_addr *from, const struct uroce_cm_mad *msg);

#endif
