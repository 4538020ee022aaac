/* SPDX-License-Identifier: MIT */
/*
 * The uroce transport engine: InfiniBand RC, UC and UD queue pairs (and QP1, the GSI QP) as a
 * sans-I/O state machine.
 *
 * What goes in: verbs-like calls (create objects, modify QPs, post work requests), received
 * transport packets (BTH..ICRC, already ICRC-checked by the caller), and the current time.
 * What comes out: transport packets to send (headers built here, payload pointing into
 * registered memory: zero-copy), work completions in CQs, asynchronous events, and the next
 * deadline at which uroce_eng_advance() must be called.
 *
 * The engine makes no system call, reads no clock, starts no thread and prints nothing. It is not
 * thread-safe: one caller at a time (the host layer serialises). All objects are allocated when
 * they are created; the data path allocates nothing.
 *
 * Enum values and bit masks equal those of rdma-core's <infiniband/verbs.h> so that the compat
 * layer converts by assignment (it checks this with static assertions). The engine does not
 * include rdma-core headers.
 *
 * Errors: int functions return 0 or a negative errno (-EINVAL bad argument or illegal
 * transition, -ENOMEM, -EBUSY object still in use, -ENOSPC queue full, -EOPNOTSUPP).
 */
#ifndef UROCE_TRANSPORT_ENGINE_H
#define UROCE_TRANSPORT_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "wire/packet.h"

struct uroce_eng;
struct uroce_pd;
struct uroce_mr;
struct uroce_mw;
struct uroce_cq;
struct uroce_qp;
struct uroce_srq;
struct uroce_ah;

#define UROCE_NEVER UINT64_MAX /* no deadline */

/* ---- engine ---------------------------------------------------------------------------- */

struct uroce_eng_cfg {
	uint32_t qpn_base;  /* first QPN handed out (>= 2; several processes share a device) */
	uint32_t max_qp;    /* QPs (QPN range qpn_base .. qpn_base + max_qp - 1), plus QP1 */
	uint32_t max_mr;     /* at most 0x7FFFFF: keys with the top bit set are windows' */
	uint32_t max_mw;     /* memory windows; 0: none can be allocated */
	uint32_t max_cq;
	uint32_t max_srq;
	uint32_t max_ah;
	uint32_t max_pd;
	uint32_t max_events; /* async event queue depth */
	uint8_t key_seed;    /* low byte of the first lkey/rkey (deterministic tests) */
	uint8_t port_mtu;    /* enum uroce_mtu: the port's active MTU, UD and GSI messages' limit;
			      * 0 means 1024 */
};

/* Fills a configuration with the defaults. */
void uroce_eng_cfg_default(struct uroce_eng_cfg *cfg);
int uroce_eng_create(struct uroce_eng **out, const struct uroce_eng_cfg *cfg);
/* The port's active MTU changed (the interface MTU did): UD and GSI QPs follow it. */
void uroce_eng_set_port_mtu(struct uroce_eng *e, int mtu);

/* Destroys the engine and every object still in it. */
void uroce_eng_destroy(struct uroce_eng *e);

/* ---- counters (names as rxe's hw_counters where the meaning is the same) ---------------- */

#define UROCE_COUNTERS(X)                                                                         \
	X(SENT_PKTS, "sent_pkts")                                                                 \
	X(RCVD_PKTS, "rcvd_pkts")                                                                 \
	X(DUPLICATE_REQUEST, "duplicate_request")                                                 \
	X(OUT_OF_SEQ_REQUEST, "out_of_seq_request")                                               \
	X(RCVD_RNR_ERR, "rcvd_rnr_err")                                                           \
	X(SEND_RNR_ERR, "send_rnr_err")                                                           \
	X(RCVD_SEQ_ERR, "rcvd_seq_err")                                                           \
	X(ACK_DEFERRED, "ack_deferred")                                                           \
	X(RETRY_EXCEEDED_ERR, "retry_exceeded_err")                                               \
	X(RNR_RETRY_EXCEEDED_ERR, "rnr_retry_exceeded_err")                                       \
	X(COMPLETER_RETRY_ERR, "completer_retry_err")                                             \
	X(SEND_ERR, "send_err")                                                                   \
	X(LINK_DOWNED, "link_downed")                                                             \
	X(RDMA_SENDS, "rdma_sends")                                                               \
	X(RDMA_RECVS, "rdma_recvs")                                                               \
	X(RCVD_ACKS, "rcvd_acks")                                                                 \
	X(SENT_ACKS, "sent_acks")                                                                 \
	X(SENT_NAKS, "sent_naks")                                                                 \
	X(RCVD_NAKS, "rcvd_naks")                                                                 \
	X(LOCAL_ACK_TIMEOUT_ERR, "local_ack_timeout_err")                                         \
	X(RETRANSMITTED_PKTS, "retransmitted_pkts")                                               \
	X(DROP_NO_QP, "drop_no_qp")                                                               \
	X(DROP_BAD_OPCODE, "drop_bad_opcode")                                                     \
	X(DROP_BAD_STATE, "drop_bad_state")                                                       \
	X(DROP_BAD_PKEY, "drop_bad_pkey")                                                         \
	X(DROP_BAD_QKEY, "drop_bad_qkey")                                                         \
	X(DROP_BAD_HEADER, "drop_bad_header")                                                     \
	X(DROP_BAD_ADDR, "drop_bad_addr")                                                         \
	X(DROP_UNEXPECTED, "drop_unexpected")                                                     \
	X(DROP_UC_SEQ, "drop_uc_seq")                                                             \
	X(DROP_CQ_OVERFLOW, "drop_cq_overflow")                                                   \
	X(DROP_NO_RECV, "drop_no_recv")                                                           \
	X(DROP_DUPLICATE_RESP, "drop_duplicate_resp")                                                   \
	X(REM_ACCESS_ERR_SENT, "rem_access_err_sent")                                             \
	X(REM_INV_REQ_SENT, "rem_inv_req_sent")                                                   \
	X(READ_REPLAYED, "read_replayed")                                                         \
	X(ATOMIC_REPLAYED, "atomic_replayed")                                                     \
	X(CNP_RCVD, "cnp_rcvd")

enum uroce_counter {
#define UROCE_COUNTER_ENUM(id, name) UROCE_CNT_##id,
	UROCE_COUNTERS(UROCE_COUNTER_ENUM)
#undef UROCE_COUNTER_ENUM
	UROCE_CNT_MAX
};

extern const char *const uroce_counter_names[UROCE_CNT_MAX];
uint64_t uroce_eng_counter(const struct uroce_eng *e, enum uroce_counter c);

/* ---- protection domains, memory regions, address handles ------------------------------- */

enum uroce_access {
	UROCE_ACCESS_LOCAL_WRITE = 1,
	UROCE_ACCESS_REMOTE_WRITE = 2,
	UROCE_ACCESS_REMOTE_READ = 4,
	UROCE_ACCESS_REMOTE_ATOMIC = 8,
	UROCE_ACCESS_MW_BIND = 16,
	UROCE_ACCESS_ZERO_BASED = 32,
	UROCE_ACCESS_ON_DEMAND = 64, /* on-demand paging: what ibv_advise_mr accepts */
};

int uroce_pd_alloc(struct uroce_eng *e, struct uroce_pd **out);
/* -EBUSY while MRs, QPs, SRQs or AHs use it. */
int uroce_pd_free(struct uroce_pd *pd);

/*
 * Register [addr, addr + len) with I/O virtual address iova (remote VAs are iova-based).
 * Remote write or atomic access needs local write (IBTA 10.6.3.1): -EINVAL otherwise.
 * Implicit on-demand paging: with UROCE_ACCESS_ON_DEMAND, addr NULL, len SIZE_MAX and iova 0
 * register the whole address space; the keys then cover every address (VA == host address,
 * except address 0), and every access through them is first checked with the engine's memory
 * probe (uroce_eng_set_mem_probe), since no registration bounds the range. NULL with any other
 * length, or without ON_DEMAND, is -EINVAL.
 */
int uroce_mr_reg(struct uroce_pd *pd, void *addr, size_t len, uint64_t iova, unsigned access,
		 struct uroce_mr **out);
/* -EBUSY while memory windows are bound to it. */
int uroce_mr_dereg(struct uroce_mr *mr);
uint32_t uroce_mr_lkey(const struct uroce_mr *mr);
uint32_t uroce_mr_rkey(const struct uroce_mr *mr);
bool uroce_mr_implicit(const struct uroce_mr *mr);

/* The rereg flags, equal to rdma-core's IBV_REREG_MR_CHANGE_*. */
enum uroce_rereg_flags {
	UROCE_REREG_TRANSLATION = 1 << 0,
	UROCE_REREG_PD = 1 << 1,
	UROCE_REREG_ACCESS = 1 << 2,
};

/*
 * Change a registered region in place: its range (TRANSLATION: addr, len and iova, as
 * uroce_mr_reg takes them), its PD, its access flags. What flags does not name stays; lkey and
 * rkey stay the same (as rxe keeps them), so work requests and peers that hold them reach the
 * new range, PD and rights from the next packet on. Everything is checked before anything
 * changes: -EINVAL (no flag or an unknown one; TRANSLATION with addr NULL, len 0 or a range
 * that wraps; access as uroce_mr_reg refuses it, or changing ZERO_BASED; an implicit region's
 * TRANSLATION or ON_DEMAND change; a PD of another engine). Nothing changes on error.
 */
int uroce_mr_rereg(struct uroce_mr *mr, unsigned flags, struct uroce_pd *pd, void *addr,
		   size_t len, uint64_t iova, unsigned access);

/*
 * ibv_advise_mr's checks: [va, va + len) through lkey, for a prefetch by pd (for writing when
 * write is set). On success *out is the host address of va; the caller prefetches
 * [*out, *out + len). Errors, as the ibv_advise_mr man page lists them: -ENOENT no region has
 * that lkey; -EPERM the region belongs to another PD, or write without local write access;
 * -EINVAL the region is not on-demand (UROCE_ACCESS_ON_DEMAND); -EFAULT the range is not
 * inside the region (or, in an implicit region, wraps or starts at address 0). An implicit
 * region's range is not probed here: whether it is mapped is the prefetch's to find out.
 */
int uroce_mr_advise_range(struct uroce_pd *pd, uint32_t lkey, uint64_t va, uint64_t len,
			  bool write, void **out);

/*
 * The host's memory probe: 0 when [addr, addr + len) is mapped in the process and readable (and
 * writable when write is set), else a negative errno. The engine calls it before it touches
 * memory through an implicit on-demand region, from any call that moves data, under the
 * caller's serialisation; it must not call back into the engine. NULL (the default): no check.
 */
typedef int (*uroce_mem_probe_fn)(void *arg, const void *addr, size_t len, bool write);
void uroce_eng_set_mem_probe(struct uroce_eng *e, uroce_mem_probe_fn fn, void *arg);

/*
 * The host's guard over memory the application may have lost. The engine reaches registered
 * memory by virtual address, with plain loads and stores: pages the application unmapped (or
 * made inaccessible) under a region that is still registered fault when it touches them, where
 * a NIC, which pins the pages, goes on. So every access the engine makes to a region's memory
 * (copies in and out, an atomic, the check that a payload it hands out in place is readable)
 * runs as a function fn(fn_arg) through the guard: the guard calls fn once and returns 0, or
 * -EFAULT when fn faulted on [lo, lo + len), the registered memory it touches, and was
 * abandoned there (it may have done part of its work). fn touches nothing else that may fault,
 * takes no lock and owns nothing, so it can be abandoned at any point. Called from any call that
 * moves data, under the caller's serialisation, on the caller's thread; it must not call back
 * into the engine. The engine answers -EFAULT as it answers a key that does not cover the
 * range: a remote access error for a peer's request (NAK, the QP to ERR with
 * UROCE_EVENT_QP_ACCESS_ERR), a local protection error for a work request's own buffer.
 * NULL (the default): fn runs unguarded, and a fault is the process's.
 */
typedef int (*uroce_mem_guard_fn)(void *arg, const void *lo, size_t len, void (*fn)(void *),
				  void *fn_arg);
void uroce_eng_set_mem_guard(struct uroce_eng *e, uroce_mem_guard_fn fn, void *arg);

/*
 * Memory windows (IBTA 10.6.7): remote access to part of a memory region, with rights of their
 * own, under an R_Key of their own. A window is bound by a UROCE_WR_BIND_MW work request, which
 * sets its region, range, rights and the low 8 bits of its R_Key (the "key" the consumer picks;
 * the upper 24 bits are the window's own). Type 1 windows are rebound at will (a bind of length
 * 0 unbinds) and cannot be invalidated; type 2 windows (type 2B: bound to the QP that bound
 * them, used only through it) are bound only when free, and become free again by LOCAL_INV
 * posted on that QP, by a SEND_WITH_INV received on it, or when the QP is destroyed. A window's
 * R_Key has the top bit set; a region's never has.
 */
enum uroce_mw_type {
	UROCE_MW_TYPE_1 = 1,
	UROCE_MW_TYPE_2 = 2,
};

/* A window, not bound, with a fresh R_Key. -EINVAL for another type, -ENOMEM when max_mw are
 * allocated. */
int uroce_mw_alloc(struct uroce_pd *pd, enum uroce_mw_type type, struct uroce_mw **out);
/* Frees the window; a bound window is unbound first (its R_Key stops working at once). */
int uroce_mw_dealloc(struct uroce_mw *mw);
/* The window's current R_Key (a bind changes its low 8 bits). */
uint32_t uroce_mw_rkey(const struct uroce_mw *mw);

/* Address vector: how to reach a peer. The engine copies it into every packet it sends. */
struct uroce_av {
	uint8_t dgid[16];
	uint32_t flow_label;
	uint8_t sgid_index;
	uint8_t hop_limit;
	uint8_t traffic_class;
	uint8_t sl;
	uint8_t port_num;
	bool is_global;
	uint8_t dmac[6]; /* filled by the host layer when resolved */
};

int uroce_ah_create(struct uroce_pd *pd, const struct uroce_av *av, struct uroce_ah **out);
int uroce_ah_destroy(struct uroce_ah *ah);

/* ---- completion queues ----------------------------------------------------------------- */

enum uroce_wc_status {
	UROCE_WC_SUCCESS = 0,
	UROCE_WC_LOC_LEN_ERR = 1,
	UROCE_WC_LOC_QP_OP_ERR = 2,
	UROCE_WC_LOC_EEC_OP_ERR = 3,
	UROCE_WC_LOC_PROT_ERR = 4,
	UROCE_WC_WR_FLUSH_ERR = 5,
	UROCE_WC_MW_BIND_ERR = 6,
	UROCE_WC_BAD_RESP_ERR = 7,
	UROCE_WC_LOC_ACCESS_ERR = 8,
	UROCE_WC_REM_INV_REQ_ERR = 9,
	UROCE_WC_REM_ACCESS_ERR = 10,
	UROCE_WC_REM_OP_ERR = 11,
	UROCE_WC_RETRY_EXC_ERR = 12,
	UROCE_WC_RNR_RETRY_EXC_ERR = 13,
	UROCE_WC_LOC_RDD_VIOL_ERR = 14,
	UROCE_WC_REM_INV_RD_REQ_ERR = 15,
	UROCE_WC_REM_ABORT_ERR = 16,
	UROCE_WC_INV_EECN_ERR = 17,
	UROCE_WC_INV_EEC_STATE_ERR = 18,
	UROCE_WC_FATAL_ERR = 19,
	UROCE_WC_RESP_TIMEOUT_ERR = 20,
	UROCE_WC_GENERAL_ERR = 21,
};

enum uroce_wc_opcode {
	UROCE_WC_SEND = 0,
	UROCE_WC_RDMA_WRITE = 1,
	UROCE_WC_RDMA_READ = 2,
	UROCE_WC_COMP_SWAP = 3,
	UROCE_WC_FETCH_ADD = 4,
	UROCE_WC_BIND_MW = 5,
	UROCE_WC_LOCAL_INV = 6,
	UROCE_WC_RECV = 1 << 7,
	UROCE_WC_RECV_RDMA_WITH_IMM = (1 << 7) + 1,
};

enum uroce_wc_flags {
	UROCE_WC_GRH = 1 << 0,
	UROCE_WC_WITH_IMM = 1 << 1,
	UROCE_WC_WITH_INV = 1 << 3,
};

struct uroce_wc {
	uint64_t wr_id;
	enum uroce_wc_status status;
	enum uroce_wc_opcode opcode;
	uint32_t vendor_err;
	uint32_t byte_len;
	uint32_t imm_data; /* the ImmDt field as a host-order integer (verbs hands out htonl of it) */
	uint32_t invalidated_rkey;
	uint32_t qp_num;
	uint32_t src_qp;
	unsigned wc_flags;
	uint16_t pkey_index;
	uint8_t sl;
};

/* A CQ of cqe entries. Overflow loses the completion and raises UROCE_EVENT_CQ_ERR. */
int uroce_cq_create(struct uroce_eng *e, uint32_t cqe, void *user, struct uroce_cq **out);
/* -EBUSY while a QP uses it. */
int uroce_cq_destroy(struct uroce_cq *cq);
/* Up to n completions, oldest first. Returns how many. */
int uroce_cq_poll(struct uroce_cq *cq, int n, struct uroce_wc *wc);
/* Arm: the next completion (solicited only: the next solicited receive or error) raises
 * UROCE_EVENT_COMP once. */
int uroce_cq_req_notify(struct uroce_cq *cq, bool solicited_only);
uint32_t uroce_cq_count(const struct uroce_cq *cq);
/*
 * Make the CQ hold cqe entries, keeping the completions queued in it, oldest first. -EINVAL
 * when cqe is 0, beyond UROCE_MAX_CQE or below uroce_cq_count(); -ENOMEM leaves the CQ as it
 * was. An armed notification stays armed.
 */
int uroce_cq_resize(struct uroce_cq *cq, uint32_t cqe);

/* ---- shared receive queues ------------------------------------------------------------- */

struct uroce_srq_attr {
	uint32_t max_wr;
	uint32_t max_sge;
	uint32_t srq_limit; /* 0: disarmed; else UROCE_EVENT_SRQ_LIMIT when fewer WRs remain */
};

enum uroce_srq_attr_mask {
	UROCE_SRQ_MAX_WR = 1 << 0,
	UROCE_SRQ_LIMIT = 1 << 1,
};

int uroce_srq_create(struct uroce_pd *pd, const struct uroce_srq_attr *attr, void *user,
		     struct uroce_srq **out);
/* Resizing (UROCE_SRQ_MAX_WR) is not supported: -EOPNOTSUPP. */
int uroce_srq_modify(struct uroce_srq *srq, const struct uroce_srq_attr *attr, unsigned mask);
int uroce_srq_query(const struct uroce_srq *srq, struct uroce_srq_attr *attr);
int uroce_srq_destroy(struct uroce_srq *srq);

/* ---- queue pairs ------------------------------------------------------------------------ */

enum uroce_qp_type {
	UROCE_QPT_RC = 2,
	UROCE_QPT_UC = 3,
	UROCE_QPT_UD = 4,
	UROCE_QPT_GSI = 0x100, /* QP1 (ib_verbs IB_QPT_GSI); one per engine */
};

enum uroce_qp_state {
	UROCE_QPS_RESET,
	UROCE_QPS_INIT,
	UROCE_QPS_RTR,
	UROCE_QPS_RTS,
	UROCE_QPS_SQD,
	UROCE_QPS_SQE,
	UROCE_QPS_ERR,
};

enum uroce_mtu {
	UROCE_MTU_256 = 1,
	UROCE_MTU_512 = 2,
	UROCE_MTU_1024 = 3,
	UROCE_MTU_2048 = 4,
	UROCE_MTU_4096 = 5,
};

static inline uint32_t uroce_mtu_bytes(enum uroce_mtu m)
{
	return 128u << m;
}

enum uroce_qp_attr_mask {
	UROCE_QP_STATE = 1 << 0,
	UROCE_QP_CUR_STATE = 1 << 1,
	UROCE_QP_EN_SQD_ASYNC_NOTIFY = 1 << 2,
	UROCE_QP_ACCESS_FLAGS = 1 << 3,
	UROCE_QP_PKEY_INDEX = 1 << 4,
	UROCE_QP_PORT = 1 << 5,
	UROCE_QP_QKEY = 1 << 6,
	UROCE_QP_AV = 1 << 7,
	UROCE_QP_PATH_MTU = 1 << 8,
	UROCE_QP_TIMEOUT = 1 << 9,
	UROCE_QP_RETRY_CNT = 1 << 10,
	UROCE_QP_RNR_RETRY = 1 << 11,
	UROCE_QP_RQ_PSN = 1 << 12,
	UROCE_QP_MAX_QP_RD_ATOMIC = 1 << 13,
	UROCE_QP_ALT_PATH = 1 << 14,
	UROCE_QP_MIN_RNR_TIMER = 1 << 15,
	UROCE_QP_SQ_PSN = 1 << 16,
	UROCE_QP_MAX_DEST_RD_ATOMIC = 1 << 17,
	UROCE_QP_PATH_MIG_STATE = 1 << 18,
	UROCE_QP_CAP = 1 << 19,
	UROCE_QP_DEST_QPN = 1 << 20,
};

struct uroce_qp_cap {
	uint32_t max_send_wr;
	uint32_t max_recv_wr;
	uint32_t max_send_sge;
	uint32_t max_recv_sge;
	uint32_t max_inline_data;
};

struct uroce_qp_init {
	enum uroce_qp_type type;
	struct uroce_cq *send_cq;
	struct uroce_cq *recv_cq;
	struct uroce_srq *srq; /* NULL: the QP has its own receive queue */
	struct uroce_qp_cap cap;
	bool sq_sig_all;
	void *user;
};

struct uroce_qp_attr {
	enum uroce_qp_state qp_state;
	enum uroce_qp_state cur_qp_state;
	enum uroce_mtu path_mtu;
	uint32_t qkey;
	uint32_t rq_psn;
	uint32_t sq_psn;
	uint32_t dest_qp_num;
	unsigned qp_access_flags;
	struct uroce_qp_cap cap;
	struct uroce_av av;
	uint16_t pkey_index;
	bool en_sqd_async_notify;
	bool sq_draining;
	uint8_t max_rd_atomic;
	uint8_t max_dest_rd_atomic;
	uint8_t min_rnr_timer;
	uint8_t port_num;
	uint8_t timeout;
	uint8_t retry_cnt;
	uint8_t rnr_retry;
};

/* Device limits the engine enforces (reported by the host's query_device). */
#define UROCE_MAX_QP_WR	     16384
#define UROCE_MAX_SGE	     32
#define UROCE_MAX_INLINE     256
#define UROCE_MAX_CQE	     (1 << 20)
#define UROCE_MAX_RD_ATOMIC  128
#define UROCE_MAX_MSG	     (1u << 31)
#define UROCE_MAX_PKEYS	     1
#define UROCE_DEFAULT_PKEY   0xFFFF

int uroce_qp_create(struct uroce_pd *pd, const struct uroce_qp_init *init, struct uroce_qp **out);
/* The IBTA transition table: an illegal transition or a missing required attribute (or one not
 * allowed for the transition) gives -EINVAL and changes nothing. Moving to ERR flushes. Moving
 * to RESET empties the queues and removes the QP's completions still in its CQs (as libmlx5
 * and libmlx4 do). */
int uroce_qp_modify(struct uroce_qp *qp, const struct uroce_qp_attr *attr, unsigned mask);
/* The attributes and creation parameters. rq_psn is the PSN the responder expects next (RC and
 * UC, from RTR on) and sq_psn the next the requester sends (from RTS on), as a device reports
 * them, not the values last set. */
int uroce_qp_query(const struct uroce_qp *qp, struct uroce_qp_attr *attr,
		   struct uroce_qp_init *init);
int uroce_qp_destroy(struct uroce_qp *qp);
uint32_t uroce_qp_num(const struct uroce_qp *qp);
enum uroce_qp_state uroce_qp_state(const struct uroce_qp *qp);

/* ---- multicast (UD) --------------------------------------------------------------------- */

/*
 * Multicast groups of the engine's UD QPs (IBTA 10.5; rxe_mcast.c). A UD packet whose BTH
 * destination QPN is UROCE_MCAST_QPN and whose destination address (uroce_rx_pkt.dgid) is an
 * MGID goes to every QP attached to that MGID, each a copy into its own receive queue, each with
 * its own state and Q_Key checks (a QP that fails them drops its copy, counted, and the others
 * still get theirs). Sending to a group is an ordinary UD send: an AH with the MGID as DGID and
 * remote_qpn UROCE_MCAST_QPN; what the network loops back reaches the attached QPs of the
 * sending engine too, the sender's own QP included when attached, as rxe and NICs deliver.
 * Joining the group on the network (IGMP/MLD) is the host's business: uroce_mcast_groups()
 * tells it which groups have QPs.
 */
#define UROCE_MCAST_QPN		      0xFFFFFFu
#define UROCE_MAX_MCAST_GRP	      64 /* groups with QPs attached, per engine */
#define UROCE_MAX_MCAST_QP_ATTACH     56 /* QPs per group (rxe's limit) */
#define UROCE_MAX_TOTAL_MCAST_QP_ATTACH (UROCE_MAX_MCAST_GRP * UROCE_MAX_MCAST_QP_ATTACH)

/* Is gid a multicast GID: IPv6 ff00::/8, or v4-mapped 224.0.0.0/4 (rdma_is_multicast_addr)?
 * Inline: the host's I/O, which links no engine, asks too. */
static inline bool uroce_gid_is_mcast(const uint8_t gid[16])
{
	static const uint8_t v4mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF};

	if (gid[0] == 0xFF)
		return true;
	for (int i = 0; i < 12; i++)
		if (gid[i] != v4mapped[i])
			return false;
	return (gid[12] & 0xF0) == 0xE0;
}

/*
 * Attach qp to the group mgid. Attaching twice is not an error (the QP is attached once).
 * Returns 0; -EINVAL when qp is not UD or mgid is not a multicast GID; -ENOMEM when the engine
 * has UROCE_MAX_MCAST_GRP groups already or the group UROCE_MAX_MCAST_QP_ATTACH QPs.
 */
int uroce_mcast_attach(struct uroce_qp *qp, const uint8_t mgid[16]);
/* Detach qp from mgid: 0, or -EINVAL when it is not attached. Destroying a QP detaches it from
 * every group. */
int uroce_mcast_detach(struct uroce_qp *qp, const uint8_t mgid[16]);
/* The groups that have QPs attached, up to max of them into out; returns how many there are. */
int uroce_mcast_groups(const struct uroce_eng *e, uint8_t (*out)[16], int max);

/* ---- work requests ---------------------------------------------------------------------- */

struct uroce_sge {
	uint64_t addr;
	uint32_t length;
	uint32_t lkey;
};

enum uroce_wr_opcode {
	UROCE_WR_RDMA_WRITE = 0,
	UROCE_WR_RDMA_WRITE_WITH_IMM = 1,
	UROCE_WR_SEND = 2,
	UROCE_WR_SEND_WITH_IMM = 3,
	UROCE_WR_RDMA_READ = 4,
	UROCE_WR_ATOMIC_CMP_AND_SWP = 5,
	UROCE_WR_ATOMIC_FETCH_AND_ADD = 6,
	UROCE_WR_LOCAL_INV = 7,
	UROCE_WR_BIND_MW = 8,
	UROCE_WR_SEND_WITH_INV = 9,
};

enum uroce_send_flags {
	UROCE_SEND_FENCE = 1 << 0,
	UROCE_SEND_SIGNALED = 1 << 1,
	UROCE_SEND_SOLICITED = 1 << 2,
	UROCE_SEND_INLINE = 1 << 3,
};

struct uroce_send_wr {
	uint64_t wr_id;
	struct uroce_send_wr *next;
	struct uroce_sge *sg_list;
	int num_sge;
	enum uroce_wr_opcode opcode;
	unsigned send_flags;
	uint32_t imm_data;	  /* host-order value of the wire field */
	uint32_t invalidate_rkey; /* SEND_WITH_INV, LOCAL_INV: a type 2 window's R_Key */
	union {
		struct {
			uint64_t remote_addr;
			uint32_t rkey;
		} rdma;
		struct {
			uint64_t remote_addr;
			uint64_t compare_add;
			uint64_t swap;
			uint32_t rkey;
		} atomic;
		struct {
			struct uroce_ah *ah;
			uint32_t remote_qpn;
			uint32_t remote_qkey;
		} ud;
		/*
		 * BIND_MW (RC and UC QPs): bind mw to [addr, addr + length) of mr with access
		 * (UROCE_ACCESS_REMOTE_*, LOCAL_WRITE, ZERO_BASED for type 2: remote addresses
		 * are then offsets from addr). The window's R_Key becomes its own upper 24 bits
		 * with rkey's low 8. mr may be NULL with length 0: unbind (type 1 only).
		 * The fields of ibv_send_wr.bind_mw and of ibv_wr_bind_mw() map one to one.
		 * Checked when the request runs, in its turn in the send queue; a failed check
		 * completes it with UROCE_WC_MW_BIND_ERR and the QP goes to ERR.
		 */
		struct {
			struct uroce_mw *mw;
			struct uroce_mr *mr;
			uint64_t addr;
			uint64_t length;
			uint32_t rkey;
			unsigned access;
		} bind_mw;
	} wr;
};

struct uroce_recv_wr {
	uint64_t wr_id;
	struct uroce_recv_wr *next;
	struct uroce_sge *sg_list;
	int num_sge;
};

/*
 * Post a chain of work requests. On error *bad points at the first one not posted and the
 * return value is negative: -EINVAL (bad opcode for the QP type, too many SGEs, inline too
 * long, bad lkey for inline data, BIND_MW without a window or with a region of another
 * engine), -ENOMEM (queue full: rdma-core's ENOMEM).
 * Posting to a QP in ERR completes the request at once with UROCE_WC_WR_FLUSH_ERR.
 * BIND_MW and LOCAL_INV send nothing: they take effect when the requester reaches them and
 * complete in order with the rest (UROCE_WC_BIND_MW, UROCE_WC_LOCAL_INV; a LOCAL_INV of a key
 * that is not a bound type 2 window of this QP completes with UROCE_WC_LOC_QP_OP_ERR).
 * SEND_WITH_INV (RC) sends the R_Key in an IETH; the receiver invalidates that window and its
 * receive completes with UROCE_WC_WITH_INV and invalidated_rkey, or, when the key names no
 * bound type 2 window of the receiving QP, with UROCE_WC_REM_INV_REQ_ERR after an invalid
 * request NAK.
 */
int uroce_post_send(struct uroce_qp *qp, struct uroce_send_wr *wr, struct uroce_send_wr **bad);
/*
 * uroce_post_send all or nothing: every request is checked, and the send queue's room for all
 * of them, before any is queued. On error nothing is posted, *bad points at the first request
 * that fails a check and the return value is uroce_post_send's error for it (-ENOMEM: the
 * queue has no room for it).
 */
int uroce_post_send_all(struct uroce_qp *qp, struct uroce_send_wr *wr, struct uroce_send_wr **bad);
int uroce_post_recv(struct uroce_qp *qp, struct uroce_recv_wr *wr, struct uroce_recv_wr **bad);
int uroce_post_srq_recv(struct uroce_srq *srq, struct uroce_recv_wr *wr,
			struct uroce_recv_wr **bad);

/* ---- packets in and out, time ----------------------------------------------------------- */

/*
 * A received transport packet. The caller checked the ICRC and the encapsulation and says how
 * the packet arrived: the peer's and our addresses as GIDs (v4-mapped for IPv4) and, for UD and
 * GSI receives, the 40 bytes to place in the GRH slot of the receive buffer (roce-reference 1.1).
 */
struct uroce_rx_pkt {
	const uint8_t *data; /* BTH .. ICRC inclusive */
	uint32_t len;
	enum uroce_encap encap;
	uint8_t sgid[16];    /* the sender's address */
	uint8_t dgid[16];    /* our address the packet was sent to */
	uint8_t grh[40];     /* the GRH slot contents for UD receives */
	uint8_t sgid_index;  /* local GID table index that matches dgid and encap */
	bool ecn_ce;	     /* IP ECN field was CE */
};

/*
 * Feed one received packet. Returns 0 when the packet was used, or a negative reason when it was
 * dropped (counted: see the DROP_* counters): -ENOENT no such QP, -EBADMSG malformed or wrong
 * key, -EPROTO wrong opcode for the QP type or state.
 */
int uroce_eng_rx(struct uroce_eng *e, uint64_t now, const struct uroce_rx_pkt *pkt);

/*
 * A packet to send: headers (BTH and extension headers) in hdr; the payload in place, in the
 * memory it comes from (a registered region or the engine's inline copy); then pad zero bytes.
 * The caller adds L2/L3/L4 and computes the ICRC over hdr, payload and pad.
 * The payload pointer is valid until the next call into the engine.
 */
#define UROCE_TX_HDR_MAX 64
struct uroce_tx_pkt {
	uint8_t hdr[UROCE_TX_HDR_MAX];
	uint16_t hdr_len;
	uint8_t pad;
	const uint8_t *payload;
	uint32_t payload_len;
	const struct uroce_av *av; /* where to; valid until the next call into the engine */
	uint32_t src_qpn;	   /* for the UDP source port (rdma_get_udp_sport) */
	uint32_t dst_qpn;
};

/* The packet's RoCE length on the wire: BTH..ICRC. */
static inline uint64_t uroce_tx_pkt_len(const struct uroce_tx_pkt *p)
{
	return (uint64_t)p->hdr_len + p->payload_len + p->pad + UROCE_ICRC_LEN;
}

/* Up to max packets to send now. Returns how many were written to out. */
int uroce_eng_tx(struct uroce_eng *e, uint64_t now, struct uroce_tx_pkt *out, int max);

/* Run timers due at or before now (retransmission, RNR waits). */
void uroce_eng_advance(struct uroce_eng *e, uint64_t now);

/*
 * A time at or before which uroce_eng_advance() next has work, or UROCE_NEVER: no timer runs out
 * before it. It may be earlier than the first that does (a timer stopped or restarted since the
 * last uroce_eng_advance() that ran timers is seen at the next); that call makes it exact.
 */
uint64_t uroce_eng_next_deadline(const struct uroce_eng *e);

/* Is there anything for uroce_eng_tx() to send? */
bool uroce_eng_tx_pending(const struct uroce_eng *e);

/* Is all there is to send ACKs and NAKs (no request, READ response or atomic ACK)? False when
 * there is nothing. */
bool uroce_eng_tx_acks_only(const struct uroce_eng *e);

/* Is a READ response or an atomic ACK among what there is to send? */
bool uroce_eng_tx_responds(const struct uroce_eng *e);

/* ---- asynchronous events ---------------------------------------------------------------- */

enum uroce_event_type {
	UROCE_EVENT_COMP,	     /* a notified completion on cq */
	UROCE_EVENT_CQ_ERR,	     /* cq overflowed */
	UROCE_EVENT_QP_FATAL,	     /* qp went to ERR by itself */
	UROCE_EVENT_QP_REQ_ERR,	     /* invalid request NAK received / sent */
	UROCE_EVENT_QP_ACCESS_ERR,   /* remote access error */
	UROCE_EVENT_COMM_EST,	     /* first packet received in RTR */
	UROCE_EVENT_SQ_DRAINED,	     /* SQD reached with en_sqd_async_notify */
	UROCE_EVENT_QP_LAST_WQE_REACHED, /* an SRQ-attached QP in ERR consumed its last WQE */
	UROCE_EVENT_SRQ_LIMIT_REACHED,
};

struct uroce_event {
	enum uroce_event_type type;
	union {
		struct uroce_cq *cq;
		struct uroce_qp *qp;
		struct uroce_srq *srq;
	} obj;
	void *user; /* the object's user pointer */
};

/* Take the oldest pending event. Returns 1, or 0 when there is none. */
int uroce_eng_poll_event(struct uroce_eng *e, struct uroce_event *ev);

#endif
