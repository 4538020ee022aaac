/* SPDX-License-Identifier: MIT */
/*
 * Engine internals shared by the transport's files. Each role owns its part of the QP:
 *   qp.c     state machine and attributes, flush
 *   post.c   work request validation and queueing
 *   recv.c   receive: validate and dispatch
 *   req.c    requester: builds request packets from send WQEs (qp->req)
 *   resp.c   responder: executes requests, builds ACKs and read/atomic responses (qp->resp)
 *   comp.c   completer: processes ACKs and responses, retries, completes send WQEs (qp->comp)
 *   eng.c    engine object, scheduling, timers, events, counters
 *   objects.c  PDs, MRs, AHs, CQs, SRQs
 */
#ifndef UROCE_TRANSPORT_INTERNAL_H
#define UROCE_TRANSPORT_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "transport/engine.h"
#include "wire/packet.h"
#include "wire/mad.h"
#include "wire/psn.h"

/*
 * Requester window (uroce_req_window): at most 512 unacknowledged packets (rxe: 128) and 1 MiB
 * of their payload, 256 packets at a 4096-byte MTU. When the receiver is the slower side, what
 * is in flight waits in its socket buffer, out of the caches, so the bytes are bounded as well
 * as the packets: with several QPs, 512 packets of 4 KiB each would put 2 MiB per QP there
 * (docs/performance.md, "Tried and left out").
 */
#define UROCE_MAX_UNACKED_PSNS	512
#define UROCE_MAX_UNACKED_BYTES (1u << 20)
#define UROCE_MAX_PKT_PER_ACK	64 /* AckReq at least this often (rxe_param.h) */
/* How long after the last WQE sent without AckReq the requester asks for the ACK, when nothing
 * asked for one since (req.c ack_due). */
#define UROCE_ACK_ASK_NS 100000ull /* 100 us */
#define UROCE_TX_BOUNCE		64 /* packets per uroce_eng_tx call that may need a bounce copy */
#define UROCE_TX_BOUNCE_SIZE	4096

struct uroce_pd {
	struct uroce_eng *eng;
	uint32_t refs;
	uint32_t idx;
};

struct uroce_mr {
	struct uroce_eng *eng;
	struct uroce_pd *pd;
	uint8_t *addr;
	uint64_t iova;
	uint64_t len;
	uint32_t key; /* lkey == rkey */
	unsigned access;
	uint32_t idx;
	uint32_t nmw; /* windows bound to it */
	bool implicit; /* the whole address space: addr NULL, iova 0, len SIZE_MAX */
};

/* Keys with this bit set are windows' (index and key byte below it, as a region's). */
#define UROCE_MW_KEY_BIT 0x80000000u

struct uroce_mw {
	struct uroce_eng *eng;
	struct uroce_pd *pd;
	enum uroce_mw_type type;
	uint32_t key;	   /* R_Key: UROCE_MW_KEY_BIT | (idx + 1) << 8 | key byte */
	uint32_t serial;   /* which allocation holds the slot: a queued bind names it so */
	struct uroce_mr *mr; /* bound to, or NULL */
	struct uroce_qp *qp; /* type 2: the QP it was bound through (2B), while bound */
	uint64_t addr;	   /* the window's first byte, an I/O virtual address of mr */
	uint64_t len;
	unsigned access;
	uint32_t idx;
};

struct uroce_ah {
	struct uroce_pd *pd;
	struct uroce_av av;
	uint32_t idx;
};

struct uroce_cq {
	struct uroce_eng *eng;
	struct uroce_wc *ring;
	uint32_t size; /* power of two >= cqe + 1 */
	uint32_t cqe;
	uint32_t head, tail; /* consumer, producer (free-running) */
	uint32_t refs;
	bool armed, solicited_only;
	void *user;
	uint32_t idx;
};

struct uroce_rwqe {
	uint64_t wr_id;
	uint32_t num_sge;
	uint32_t length; /* sum of SGE lengths */
	struct uroce_sge *sge;
};

/* A receive queue: a QP's own or an SRQ's. */
struct uroce_rq {
	struct uroce_rwqe *ring;
	struct uroce_sge *sges; /* ring size * max_sge */
	uint32_t size;		/* power of two */
	uint32_t max_wr, max_sge;
	uint32_t head, tail;
};

struct uroce_srq {
	struct uroce_pd *pd;
	struct uroce_rq rq;
	uint32_t limit;
	uint32_t refs;
	void *user;
	uint32_t idx;
};

enum uroce_wqe_state {
	UROCE_WQE_POSTED,  /* not yet (fully) sent */
	UROCE_WQE_SENT,	   /* every packet sent, waiting for the ACK or response */
	UROCE_WQE_DONE,	   /* completed (successfully or not), waiting to be retired */
};

struct uroce_swqe {
	struct uroce_send_wr wr; /* wr.sg_list points at sge; wr.next unused */
	struct uroce_sge *sge;
	uint8_t *inline_data;	 /* this slot's inline copy, when UROCE_SEND_INLINE */
	struct uroce_av av;	 /* UD: copied from the AH at post time */
	/* BIND_MW: the window (slot and serial) and the region (lkey) as at post time, looked
	 * up again when the bind runs: either may be gone by then */
	uint32_t mw_idx, mw_serial, mr_key;
	uint32_t length;
	uint32_t first_psn;
	uint32_t last_psn;
	uint32_t npkts;
	uint32_t resp_bytes;	 /* completer: read response bytes placed so far */
	enum uroce_wqe_state state;
	enum uroce_wc_status status;
	bool signaled;
};

struct uroce_sq {
	struct uroce_swqe *ring;
	struct uroce_sge *sges;
	uint8_t *inline_buf;
	uint32_t size; /* power of two */
	uint32_t max_wr, max_sge, max_inline;
	uint32_t head; /* oldest not retired (completer) */
	uint32_t cur;  /* next to send from (requester) */
	uint32_t tail; /* producer */
};

/* Saved read or atomic request: what the responder must answer, and may have to replay. */
struct uroce_rd_res {
	bool valid;
	bool atomic;
	uint32_t first_psn; /* request PSN */
	uint32_t last_psn;  /* last response PSN */
	uint32_t next_psn;  /* next response PSN to send (reads) */
	uint64_t orig_va;   /* read: the request's VA and length, for replays */
	uint32_t len;
	uint64_t va;	    /* read: next VA to send from */
	uint32_t remaining; /* read: bytes left */
	uint32_t rkey;
	uint64_t orig;	    /* atomic: original value, for replays */
	uint32_t msn;	    /* MSN to report in the response */
	bool sending;	    /* responses queued for transmission */
	bool sent_once;	    /* every response went out at least once: a replay may be cut short */
};

struct uroce_req_state {
	uint32_t psn;		 /* next PSN to send */
	uint32_t psn_max;	 /* one past the highest PSN sent: below it is a retransmission */
	uint32_t offset;	 /* bytes of sq.cur already sent */
	uint32_t noack_pkts;	 /* packets since the last AckReq */
	uint32_t noack_wqes;	 /* WQEs sent whole since the last AckReq */
	uint32_t rd_atomic;	 /* outstanding reads and atomics */
	uint64_t rnr_until;	 /* blocked by an RNR NAK until then, else 0 */
	bool need_retry;
};

struct uroce_comp_state {
	uint32_t psn;		/* oldest unacknowledged PSN */
	uint64_t timeout_at;	/* local ACK timeout deadline, or UROCE_NEVER */
	uint64_t ask_at;	/* when to ask for the ACK of the unasked WQEs sent last, or UROCE_NEVER */
	uint8_t retry_left;
	uint8_t rnr_retry_left;
	uint32_t rd_retry_psn;	/* read response gap already answered by a retry at this PSN */
	bool started_retry;	/* a NAK started a go-back; more NAKs wait for progress or a timeout */
	bool rd_retry_armed;
};

enum uroce_ack_kind { UROCE_ACK_NONE, UROCE_ACK_ACK, UROCE_ACK_NAK };

struct uroce_resp_state {
	uint32_t epsn;	       /* expected PSN */
	uint32_t msn;
	bool nak_seq_sent;     /* a PSN sequence error NAK is outstanding */
	bool uc_drop;	       /* UC: drop until the next FIRST/ONLY */
	/* send in progress */
	bool have_wqe;
	struct uroce_rwqe wqe;
	struct uroce_sge wqe_sge[UROCE_MAX_SGE];
	uint32_t offset;
	/* message in progress: 0, UROCE_OPF_SEND or UROCE_OPF_WRITE */
	unsigned in_msg;
	/* write in progress */
	uint32_t wr_rkey;
	uint64_t wr_va;
	uint32_t wr_remaining;
	uint32_t wr_total;
	/* ACK / NAK to send */
	enum uroce_ack_kind ack;
	uint8_t ack_syndrome;
	uint32_t ack_psn;
	/* read / atomic resources, a ring of max_dest_rd_atomic (at least 1) */
	struct uroce_rd_res *res;
	uint32_t nres;
	uint32_t res_next;   /* next slot to allocate */
	uint32_t res_send;   /* where res_sending looks first: none from res_next to it sends */
	uint32_t n_sending;  /* valid resources with responses to send (res_set_sending) */
	bool goto_error;     /* move to ERR once the NAK is sent (class C/D errors) */
};

struct uroce_qp {
	struct uroce_eng *eng;
	struct uroce_pd *pd;
	struct uroce_qp_init init;
	struct uroce_qp_attr attr;
	uint32_t qpn;
	uint32_t mtu; /* path MTU in bytes */
	struct uroce_sq sq;
	struct uroce_rq own_rq;
	struct uroce_rq *rq; /* &own_rq or &srq->rq */
	struct uroce_req_state req;
	struct uroce_comp_state comp;
	struct uroce_resp_state resp;
	bool comm_est_sent;
	bool last_wqe_sent;
	uint32_t nmw; /* type 2 windows bound through it */
	/* scheduling */
	bool on_ready;
	struct uroce_qp *ready_next, *ready_prev;
	uint32_t idx;
	uint32_t live_idx;  /* position in eng->live */
	uint32_t timed_idx; /* position in eng->timed, or UROCE_NOT_TIMED */
};

#define UROCE_NOT_TIMED UINT32_MAX

/* A multicast group and the QPs attached to it (mcast.c). */
struct uroce_mcg {
	uint8_t mgid[16];
	uint32_t nqp;
	struct uroce_qp *qp[UROCE_MAX_MCAST_QP_ATTACH];
};

struct uroce_eng {
	struct uroce_eng_cfg cfg;
	uint64_t counters[UROCE_CNT_MAX];
	uint64_t now;
	/* object tables (index -> object), allocated at create */
	struct uroce_pd **pds;
	struct uroce_mr **mrs;
	struct uroce_mw **mws;
	uint32_t mw_serial;
	struct uroce_ah **ahs;
	struct uroce_cq **cqs;
	struct uroce_srq **srqs;
	struct uroce_qp **qps; /* by qpn - qpn_base */
	struct uroce_qp *gsi;
	uint8_t mr_gen;
	uint32_t qp_next;      /* next QPN offset to try */
	uint32_t nqps;
	struct uroce_qp **live; /* the nqps live QPs (GSI included), densely */
	/* The ntimed RC QPs that may have a timer running (ACK timeout, RNR wait), densely: what
	 * uroce_eng_advance looks at, so that idle QPs cost a round nothing. A QP joins when a
	 * timer starts and leaves at the first scan that finds none. No timer of theirs runs out
	 * before timer_lo (a timer that starts lowers it; a scan sets it exactly), so a round
	 * before it scans nothing, and busy QPs, whose timers restart at every ACK, are scanned
	 * about once per ACK timeout, not once per round. */
	struct uroce_qp **timed;
	uint32_t ntimed;
	uint64_t timer_lo;
	/* The object tables' lowest indices that may be free (objects.c's slot_alloc). */
	struct {
		uint32_t pds, mrs, mws, ahs, cqs, srqs;
	} lo;
	/* ready list (QPs with something to send) */
	struct uroce_qp *ready_head, *ready_tail;
	/* events */
	struct uroce_event *events;
	uint32_t ev_head, ev_tail;
	/* multicast groups with QPs, densely, allocated at create */
	struct uroce_mcg *mcgs;
	uint32_t nmcgs;
	/* bounce buffers for payloads that span SGEs */
	uint8_t *bounce;
	uint32_t bounce_used;
	/* the host's check of memory reached through implicit regions */
	uroce_mem_probe_fn mem_probe;
	void *mem_probe_arg;
	/* the host's guard over every access to registered memory */
	uroce_mem_guard_fn mem_guard;
	void *mem_guard_arg;
};

static inline void uroce_count(struct uroce_eng *e, enum uroce_counter c)
{
	e->counters[c]++;
}

/* eng.c */
void uroce_eng_event(struct uroce_eng *e, enum uroce_event_type type, void *obj, void *user);
void uroce_qp_schedule(struct uroce_qp *qp);
void uroce_qp_unschedule(struct uroce_qp *qp);
/* A timer of qp (comp.timeout_at, req.rnr_until) has started: watch it. */
void uroce_qp_timed(struct uroce_qp *qp);
/* qp is going away: stop watching its timers. */
void uroce_qp_untimed(struct uroce_qp *qp);

/* objects.c */
struct uroce_mr *uroce_mr_lookup(struct uroce_eng *e, uint32_t key);
/* Host pointer for [va, va + len) in mr with access, or NULL. */
uint8_t *uroce_mr_ptr(struct uroce_mr *mr, struct uroce_pd *pd, uint64_t va, uint64_t len,
		      unsigned access);
/* Host pointer for [va, va + len) under rkey, a region's or a window's, as the responder of qp
 * may use it with access (IBTA 10.6.7.2: a window's PD, rights, range and, type 2, QP), or
 * NULL. */
uint8_t *uroce_rkey_ptr(struct uroce_qp *qp, uint32_t rkey, uint64_t va, uint64_t len,
			unsigned access);
/* Run a BIND_MW request of qp: UROCE_WC_SUCCESS or UROCE_WC_MW_BIND_ERR. */
enum uroce_wc_status uroce_mw_bind(struct uroce_qp *qp, const struct uroce_swqe *w);
/* Invalidate the type 2 window under rkey bound through qp: 0, or -EINVAL when rkey names
 * none (a region, a type 1 window, a free window, another QP's). */
int uroce_mw_invalidate(struct uroce_qp *qp, uint32_t rkey);
/* qp is going away: the windows bound through it become free. */
void uroce_mw_forget_qp(struct uroce_qp *qp);
/*
 * Accesses to registered memory, each through the host's guard (uroce_eng_set_mem_guard): 0, or
 * -EFAULT when the memory faulted. uroce_mem_to copies into registered memory, uroce_mem_from
 * out of it; uroce_mem_readable reads a byte of every page of [p, p + n), for a payload sent in
 * place; uroce_mem_atomic runs the atomic of opcode (UROCE_OP_RC_FETCH_ADD or CMP_SWAP) on the
 * 8 bytes at p, the original value into *orig.
 */
int uroce_mem_to(struct uroce_eng *e, void *dst, const void *src, size_t n);
int uroce_mem_from(struct uroce_eng *e, void *dst, const void *src, size_t n);
int uroce_mem_readable(struct uroce_eng *e, const void *p, size_t n);
int uroce_mem_atomic(struct uroce_eng *e, uint8_t *p, uint8_t opcode, uint64_t compare,
		     uint64_t swap_add, uint64_t *orig);
/* Copy len bytes at offset off of the SGE list into dst; -EFAULT on a bad SGE or lost memory. */
int uroce_sge_gather(struct uroce_eng *e, struct uroce_pd *pd, const struct uroce_sge *sge,
		     uint32_t nsge, uint32_t off, uint8_t *dst, uint32_t len);
/* A pointer to len contiguous bytes at offset off of the SGE list, or NULL if they span SGEs
 * or an SGE is bad (*bad set then). The bytes are not touched: see uroce_mem_readable. */
const uint8_t *uroce_sge_contig(struct uroce_eng *e, struct uroce_pd *pd,
				const struct uroce_sge *sge, uint32_t nsge, uint32_t off,
				uint32_t len, bool *bad);
/* Scatter len bytes of src to offset off of the SGE list (local write access needed); -EFAULT
 * on a bad SGE or lost memory. */
int uroce_sge_scatter(struct uroce_eng *e, struct uroce_pd *pd, const struct uroce_sge *sge,
		      uint32_t nsge, uint32_t off, const uint8_t *src, uint32_t len);
bool uroce_cq_push(struct uroce_cq *cq, const struct uroce_wc *wc, bool solicited);
/* Remove qpn's completions from cq, keeping the others in order. */
void uroce_cq_clean(struct uroce_cq *cq, uint32_t qpn);
int uroce_rq_pop(struct uroce_rq *rq, struct uroce_rwqe *out, struct uroce_sge *sge_out);
void uroce_srq_check_limit(struct uroce_srq *srq);

/* mcast.c */
/* The group mgid, or NULL. */
struct uroce_mcg *uroce_mcg_lookup(struct uroce_eng *e, const uint8_t mgid[16]);
/* Detach qp from every group (it is being destroyed). */
void uroce_mcast_detach_all(struct uroce_qp *qp);

/* recv.c */
/* The checks and dispatch of packet t for one QP; 0 or the drop's negative reason (counted). */
int uroce_qp_rx(struct uroce_qp *qp, const struct uroce_tpkt *t, const struct uroce_rx_pkt *rx);

/* qp.c */
void uroce_qp_to_error(struct uroce_qp *qp);
void uroce_qp_flush(struct uroce_qp *qp);
/* Complete one work request with a flush error on cq. */
void uroce_qp_flush_wc(struct uroce_qp *qp, struct uroce_cq *cq, uint64_t wr_id,
		       enum uroce_wc_opcode op);
struct uroce_qp *uroce_qp_lookup(struct uroce_eng *e, uint32_t qpn);

/* req.c */
bool uroce_req_has_work(const struct uroce_qp *qp);
int uroce_req_next(struct uroce_qp *qp, struct uroce_tx_pkt *out);
int uroce_req_middles(struct uroce_qp *qp, const struct uroce_tx_pkt *prev,
		      struct uroce_tx_pkt *out, int max);
void uroce_req_retry(struct uroce_qp *qp, uint32_t psn);

/* resp.c */
void uroce_resp_rx(struct uroce_qp *qp, const struct uroce_tpkt *t, const struct uroce_rx_pkt *rx);
bool uroce_resp_has_work(const struct uroce_qp *qp);
bool uroce_resp_has_data(const struct uroce_qp *qp); /* READ or atomic responses to send */
bool uroce_resp_has_ack(const struct uroce_qp *qp);  /* an ACK or NAK to send */
int uroce_resp_next(struct uroce_qp *qp, struct uroce_tx_pkt *out);

/* comp.c */
void uroce_comp_rx(struct uroce_qp *qp, const struct uroce_tpkt *t);
void uroce_comp_timer(struct uroce_qp *qp, uint64_t now);
void uroce_comp_arm(struct uroce_qp *qp);
void uroce_comp_retire(struct uroce_qp *qp);
void uroce_comp_wqe(struct uroce_qp *qp, struct uroce_swqe *wqe, enum uroce_wc_status st);

static inline struct uroce_swqe *uroce_sq_at(struct uroce_sq *sq, uint32_t i)
{
	return &sq->ring[i & (sq->size - 1)];
}

static inline uint32_t uroce_pow2(uint32_t n)
{
	uint32_t s = 1;

	while (s < n)
		s <<= 1;
	return s;
}

/* How many packets an RC requester may have unacknowledged at its path MTU. */
static inline int32_t uroce_req_window(const struct uroce_qp *qp)
{
	uint32_t w = UROCE_MAX_UNACKED_BYTES / qp->mtu;

	return w < UROCE_MAX_UNACKED_PSNS ? (int32_t)w : UROCE_MAX_UNACKED_PSNS;
}

/* Packets a message of len bytes takes at this MTU (at least 1). */
static inline uint32_t uroce_npkts(uint32_t len, uint32_t mtu)
{
	return len ? (len + mtu - 1) / mtu : 1;
}

#endif
