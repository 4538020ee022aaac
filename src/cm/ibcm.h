/* SPDX-License-Identifier: MIT */
/*
 * The IB connection manager protocol (IBTA vol 1 ch. 12; Linux core/cm.c), sans-I/O: one
 * instance per opened device and process. It owns the connections' CM state, the message
 * timers and retries, duplicate detection and time-wait. It never touches a socket, a clock or a
 * thread: the driver (librdmacm's CM thread) feeds it received MADs and the time, and it calls
 * back to send MADs and to report events.
 *
 * Design notes
 * - Addressing: every MAD goes to QP1 of the peer, Q_Key 0x80010000. struct uroce_ibcm_addr is
 *   what the driver needs to build the address handle (local GID index, which fixes RoCE v1 or
 *   v2; destination GID; hop limit, traffic class, flow label). For a received MAD the driver
 *   fills it from the receive completion and its GRH (as ibv_init_ah_from_wc does), so replies
 *   go back in the RoCE version the message arrived in.
 * - Comm IDs: local communication IDs are (cfg.comm_id_prefix << 20) | n, n 20 bits, never 0
 *   and never one in use (including time-wait). The prefix is the process's QPN slot: the
 *   device's steering program sends a MAD whose remote comm ID carries it to this process.
 * - Transaction IDs, as the kernel forms them (cm_form_tid): hdr.tid = (u64)hi_tid << 32 |
 *   bswap32(local_comm_id) (the kernel ORs a big-endian u32 into a host u64; see
 *   docs/architecture.md). A reply within a transaction reuses the TID of the message it answers
 *   (REP and REJ the REQ's, MRA the MRAed message's, DREP the DREQ's, SIDR_REP the SIDR_REQ's).
 * - Timers: each message that expects an answer (REQ, REP, DREQ, SIDR_REQ) is resent after
 *   timing.timeout_ms, at most timing.max_retries times, then the error event is reported
 *   (max_retries + 1 transmissions, the error (max_retries + 1) * timeout_ms after the first). An
 *   MRA received makes the wait for the MRAed message its service timeout (4.096 us << t) plus
 *   timeout_ms, from the MRA on and for the resends left (core/cm.c ib_modify_mad; the resend
 *   count is not reset). Time-wait lasts cfg.timewait_ms; after TIMEWAIT_EXIT the conn is IDLE
 *   and its ID is free again once it is destroyed (a destroyed conn frees itself at the exit).
 * - Duplicates (core/cm.c cm_dup_req_handler, cm_dup_rep_handler): a REQ that repeats one being
 *   handled (same remote comm ID and remote CA GUID) resends the stored MRA or REP, or is
 *   dropped in REQ_RCVD; in TIMEWAIT it is answered with REJ STALE_CONN (10). A REQ from a
 *   (remote QPN, remote GID) that an established connection already uses, under a new comm ID,
 *   is rejected with STALE_CONN, and the established one is sent a DREQ (core/cm.c cm_match_req;
 *   its user hears of it through DREP_RECEIVED or DREQ_ERROR); a REP from such a QP likewise. A
 *   repeated REP resends the stored RTU (ESTABLISHED) or MRA. A repeated DREQ resends the DREP
 *   (TIMEWAIT). Every duplicate is counted.
 * - Unknown comm IDs: a message for no connection is counted (RX_UNKNOWN_ID) and dropped, except
 *   a DREQ, which is answered with a DREP (core/cm.c cm_issue_drep).
 * - Re-entrancy: the event callback may call any uroce_ibcm_* function except
 *   uroce_ibcm_destroy, including destroying the connection it is told about; a destroyed
 *   connection's memory is kept until the outermost uroce_ibcm_* call returns, and no event
 *   names it after the destroy.
 * - Nothing here allocates per MAD; a connection is one allocation (malloc) at REQ time (and the
 *   lookup tables and timer heap double when there are more conns than slots).
 * - Errors: 0 or a negative errno. -EINVAL: a call in a state where the message is not allowed
 *   (the IBTA state table) or bad lengths; -ENOMEM; the send callback's error is not returned
 *   (the MAD counts as lost and the timer resends it).
 */
#ifndef UROCE_CM_IBCM_H
#define UROCE_CM_IBCM_H

#include <stddef.h>
#include <stdint.h>

#include "cm/msg.h"
#include "host/config/cm_counters.h"

struct uroce_ibcm;
struct uroce_ibcm_conn;

struct uroce_ibcm_addr {
	uint8_t sgid_index; /* local GID table index: its type is the RoCE version */
	uint8_t dgid[16];
	uint8_t hop_limit;
	uint8_t traffic_class;
	uint32_t flow_label;
};

struct uroce_ibcm_timing {
	uint32_t timeout_ms; /* wait for the answer before resending */
	uint8_t max_retries; /* resends before the error event (the kernel: 15) */
};

/* IBTA 12.9.6 states, as core/cm.c names them. */
#define UROCE_IBCM_STATES(X)                                                                      \
	X(IDLE)                                                                                   \
	X(REQ_SENT)                                                                               \
	X(REQ_RCVD)                                                                               \
	X(MRA_REQ_SENT)                                                                           \
	X(MRA_REQ_RCVD)                                                                           \
	X(REP_SENT)                                                                               \
	X(REP_RCVD)                                                                               \
	X(MRA_REP_SENT)                                                                           \
	X(MRA_REP_RCVD)                                                                           \
	X(ESTABLISHED)                                                                            \
	X(DREQ_SENT)                                                                              \
	X(DREQ_RCVD)                                                                              \
	X(TIMEWAIT)                                                                               \
	X(SIDR_REQ_SENT)                                                                          \
	X(SIDR_REQ_RCVD)

enum uroce_ibcm_state {
#define UROCE_IBCM_STATE_ENUM(name) UROCE_IBCM_##name,
	UROCE_IBCM_STATES(UROCE_IBCM_STATE_ENUM)
#undef UROCE_IBCM_STATE_ENUM
};
const char *uroce_ibcm_state_name(enum uroce_ibcm_state s);

enum uroce_ibcm_event_type {
	UROCE_IBCM_EV_REQ_RECEIVED,	 /* new passive conn; msg.req; the handler must answer (REP,
					  * REJ, MRA) now or later, or destroy the conn */
	UROCE_IBCM_EV_REP_RECEIVED,	 /* msg.rep; answer with RTU or REJ */
	UROCE_IBCM_EV_RTU_RECEIVED,	 /* passive side ESTABLISHED; msg.rtu */
	UROCE_IBCM_EV_REJ_RECEIVED,	 /* msg.rej (reason, private data); conn now IDLE or
					  * TIMEWAIT */
	UROCE_IBCM_EV_MRA_RECEIVED,	 /* msg.mra; the wait was extended */
	UROCE_IBCM_EV_REQ_ERROR,	 /* REQ (or the wait after an MRA) timed out: conn IDLE */
	UROCE_IBCM_EV_REP_ERROR,	 /* REP timed out: conn IDLE */
	UROCE_IBCM_EV_DREQ_RECEIVED,	 /* msg.dreq; conn DREQ_RCVD: answer with send_drep */
	UROCE_IBCM_EV_DREP_RECEIVED,	 /* msg.drep; conn TIMEWAIT. Also in DREQ_RCVD when both
					  * sides sent a DREQ: send_drep is then -EINVAL */
	UROCE_IBCM_EV_DREQ_ERROR,	 /* DREQ timed out; conn TIMEWAIT */
	UROCE_IBCM_EV_TIMEWAIT_EXIT,	 /* conn IDLE; destroy it */
	UROCE_IBCM_EV_SIDR_REQ_RECEIVED, /* new passive conn; msg.sidr_req; answer with
					  * send_sidr_rep, then destroy */
	UROCE_IBCM_EV_SIDR_REP_RECEIVED, /* msg.sidr_rep; conn IDLE */
	UROCE_IBCM_EV_SIDR_REQ_ERROR,	 /* SIDR_REQ timed out; conn IDLE */
};

struct uroce_ibcm_event {
	enum uroce_ibcm_event_type type;
	struct uroce_ibcm_conn *conn;
	const struct uroce_ibcm_addr *from; /* the message's sender (NULL for timer events) */
	const struct uroce_cm_mad *msg;	    /* the decoded MAD (NULL for timer events) */
};

struct uroce_ibcm_ops {
	/* Send one MAD (256 bytes) to QP1 at to. 0 or -errno (the timer resends). */
	int (*send)(void *arg, const struct uroce_ibcm_addr *to, const uint8_t *mad);
	void (*event)(void *arg, const struct uroce_ibcm_event *ev);
};

struct uroce_ibcm_cfg {
	const struct uroce_ibcm_ops *ops;
	void *arg;
	uint32_t comm_id_prefix; /* 12 bits: the top bits of every local comm ID */
	uint64_t ca_guid;	 /* local CA GUID (node GUID), host order */
	uint32_t hi_tid;	 /* the MAD agent's high TID word */
	uint32_t timewait_ms;
	uint32_t seed; /* first comm ID counter and anything random */
};

/* Counters, always on (uroce_ibcm_counter): the list is host/config/cm_counters.h, which the
 * device counter files share. */
#define UROCE_IBCM_COUNTERS(X) UROCE_CM_COUNTERS(X)

enum uroce_ibcm_counter {
#define UROCE_IBCM_COUNTER_ENUM(name, label) UROCE_IBCM_C_##name,
	UROCE_IBCM_COUNTERS(UROCE_IBCM_COUNTER_ENUM)
#undef UROCE_IBCM_COUNTER_ENUM
	UROCE_IBCM_C_COUNT
};
const char *uroce_ibcm_counter_name(enum uroce_ibcm_counter k);

int uroce_ibcm_create(const struct uroce_ibcm_cfg *cfg, struct uroce_ibcm **out);
/* Frees every connection without sending anything. Not from inside a callback. */
void uroce_ibcm_destroy(struct uroce_ibcm *cm);
uint64_t uroce_ibcm_counter(const struct uroce_ibcm *cm, enum uroce_ibcm_counter k);

/*
 * A MAD received on QP1 (len bytes, the 256-byte MAD without GRH), at time now (ns, any
 * monotonic origin). Anything that is not a well-formed CM MAD of base version 1, class 7,
 * class version 2, method SEND is a counted drop.
 */
void uroce_ibcm_recv(struct uroce_ibcm *cm, const struct uroce_ibcm_addr *from,
		     const uint8_t *mad, size_t len, uint64_t now);
/* Fire the timers due at now (ns). */
void uroce_ibcm_advance(struct uroce_ibcm *cm, uint64_t now);
/* The next timer (ns), or UINT64_MAX when none is armed. */
uint64_t uroce_ibcm_next_deadline(const struct uroce_ibcm *cm);

/* ---- active side ------------------------------------------------------------------------- */

/*
 * Send a REQ: req->local_comm_id and local_ca_guid are filled in here; the rest is the
 * caller's. The new conn is REQ_SENT with user attached.
 */
int uroce_ibcm_send_req(struct uroce_ibcm *cm, const struct uroce_ibcm_addr *to,
			struct uroce_cm_req *req, const struct uroce_ibcm_timing *t, void *user,
			uint64_t now, struct uroce_ibcm_conn **out);
/* REP_RCVD or MRA_REP_SENT -> ESTABLISHED. len <= 224. */
int uroce_ibcm_send_rtu(struct uroce_ibcm_conn *c, const void *pdata, size_t len,
			uint64_t now);

/* ---- passive side ------------------------------------------------------------------------ */

/* REQ_RCVD or MRA_REQ_SENT -> REP_SENT. Comm IDs and CA GUID are filled in here. */
int uroce_ibcm_send_rep(struct uroce_ibcm_conn *c, struct uroce_cm_rep *rep,
			const struct uroce_ibcm_timing *t, uint64_t now);
/* REP_SENT or MRA_REP_RCVD -> ESTABLISHED without an RTU (the first data packet arrived:
 * ib_cm_notify IB_EVENT_COMM_EST). No event. -EISCONN when already ESTABLISHED. */
int uroce_ibcm_establish(struct uroce_ibcm_conn *c);

/* ---- either side --------------------------------------------------------------------------- */

/*
 * REJ: from REQ_RCVD, MRA_REQ_SENT (message rejected: REQ), REP_RCVD, MRA_REP_SENT (REP),
 * REQ_SENT, MRA_REQ_RCVD, REP_SENT, MRA_REP_RCVD. The conn goes to IDLE (TIMEWAIT after a REP
 * was exchanged, as the kernel). ari_len <= 72, len <= 148.
 */
int uroce_ibcm_send_rej(struct uroce_ibcm_conn *c, uint16_t reason, const void *ari,
			size_t ari_len, const void *pdata, size_t len, uint64_t now);
/*
 * MRA for the REQ (REQ_RCVD -> MRA_REQ_SENT) or the REP (REP_RCVD -> MRA_REP_SENT).
 * service_timeout is 5 bits, optionally ORed with UROCE_IBCM_MRA_FLAG_DELAY (ib_cm.h
 * IB_CM_MRA_FLAG_DELAY, which rdma_cm uses): the state changes and the MRA is kept, but it is
 * only sent in answer to a repeated REQ/REP. len <= 222.
 */
#define UROCE_IBCM_MRA_FLAG_DELAY 0x20
int uroce_ibcm_send_mra(struct uroce_ibcm_conn *c, uint8_t service_timeout, const void *pdata,
			size_t len, uint64_t now);
/* ESTABLISHED -> DREQ_SENT. len <= 220. t NULL: the timing of the conn's REQ or REP. */
int uroce_ibcm_send_dreq(struct uroce_ibcm_conn *c, const void *pdata, size_t len,
			 const struct uroce_ibcm_timing *t, uint64_t now);
/* DREQ_RCVD -> TIMEWAIT. len <= 224. */
int uroce_ibcm_send_drep(struct uroce_ibcm_conn *c, const void *pdata, size_t len,
			 uint64_t now);

/*
 * Forget a conn for its user (ib_destroy_cm_id): REQ_SENT / MRA_REQ_RCVD send REJ TIMEOUT;
 * REQ_RCVD, MRA_REQ_SENT, REP_SENT, MRA_REP_RCVD, REP_RCVD, MRA_REP_SENT send REJ
 * CONSUMER_DEFINED; ESTABLISHED sends a DREQ (retried without a user, then time-wait);
 * DREQ_RCVD sends the DREP; DREQ_SENT and TIMEWAIT linger without a user (a DREQ received then
 * is answered for it). SIDR_REQ_RCVD sends a SIDR_REP with status 2 (IB_SIDR_REJECT);
 * SIDR_REQ_SENT and IDLE just go. No event names the conn afterwards; its memory goes when it is
 * IDLE (after the outermost uroce_ibcm_* call returns): the caller must not use c again.
 */
void uroce_ibcm_conn_destroy(struct uroce_ibcm_conn *c, uint64_t now);

/*
 * The message uroce_ibcm_conn_destroy would send for c in its state now (the REJ, DREQ, DREP or
 * SIDR_REP; UROCE_MAD_LEN bytes into mad), without sending it or changing state: for a watchdog
 * that sends it once this process is gone (librdmacm's last will), as the kernel's CM does for
 * a process that dies (cm_destroy_id).
 * Returns 0; -ENOENT in a state that sends nothing (IDLE, SIDR_REQ_SENT, DREQ_SENT, TIMEWAIT);
 * -EINVAL for NULL or a destroyed conn.
 */
int uroce_ibcm_will_mad(const struct uroce_ibcm_conn *c, uint8_t *mad);

/* ---- SIDR (UD service ID resolution) ------------------------------------------------------- */

/* req->request_id is filled in here (a local comm ID). The conn is SIDR_REQ_SENT. */
int uroce_ibcm_send_sidr_req(struct uroce_ibcm *cm, const struct uroce_ibcm_addr *to,
			     struct uroce_cm_sidr_req *req, const struct uroce_ibcm_timing *t,
			     void *user, uint64_t now, struct uroce_ibcm_conn **out);
/* SIDR_REQ_RCVD -> IDLE. request_id is filled in here. */
int uroce_ibcm_send_sidr_rep(struct uroce_ibcm_conn *c, struct uroce_cm_sidr_rep *rep,
			     uint64_t now);

/* ---- accessors ------------------------------------------------------------------------------ */

void *uroce_ibcm_conn_user(const struct uroce_ibcm_conn *c);
void uroce_ibcm_conn_set_user(struct uroce_ibcm_conn *c, void *user);
enum uroce_ibcm_state uroce_ibcm_conn_state(const struct uroce_ibcm_conn *c);
/* The peer's QP1 address (the REQ's destination, or where the REQ came from). */
const struct uroce_ibcm_addr *uroce_ibcm_conn_addr(const struct uroce_ibcm_conn *c);
uint32_t uroce_ibcm_conn_local_id(const struct uroce_ibcm_conn *c);
uint32_t uroce_ibcm_conn_remote_id(const struct uroce_ibcm_conn *c);
/* Number of conns alive (any state), for leak tests. */
size_t uroce_ibcm_conn_count(const struct uroce_ibcm *cm);

#endif
