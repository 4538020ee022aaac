/* SPDX-License-Identifier: MIT */
/*
 * The verbs test kit: what the compat test programs (test_*.c here, built against Debian's
 * <infiniband/verbs.h> and linked with our libibverbs.so.1) share. Opening the device a test
 * runs on, the RoCE v2 GID of its IPv4 address, waiting for one completion with a deadline
 * (busy polling, never a sleep), an RC end (buffer, MR, CQ, QP) and bringing RC and UD QPs to
 * RTS over the verbs.
 *
 * The kit's functions record failures with check.h's CHECK. check.h counts per file, so a
 * program ends with `return check_exit_with(NAME, verbs_kit_checks)`, which adds the kit's
 * counts to its own. Single-threaded, like the programs.
 */
#ifndef UROCE_TESTS_COMPAT_VERBS_KIT_H
#define UROCE_TESTS_COMPAT_VERBS_KIT_H

#include <infiniband/verbs.h>
#include <stdint.h>

#include "check.h"

/* The size of an end's buffer. */
#define BUF 8192
/* How long a test waits for a completion or an event. */
#define WAIT_MS 5000

/* The kit's CHECK count and failures so far (for check_exit_with). */
void verbs_kit_checks(long *count, int *failures);

/* CLOCK_MONOTONIC in milliseconds. */
uint64_t now_ms(void);

/*
 * The device named name, opened. When the device list cannot be read the program fails (exit
 * 1); when the device does not exist or cannot be opened it prints SKIP and exits 77.
 */
struct ibv_context *open_device(const char *name);

/*
 * The index of the RoCE v2 GID of IPv4 address ip4 in port 1's table; -1 and a failed check
 * when there is none.
 */
int find_gid(struct ibv_context *ctx, const char *ip4);

/*
 * Wait up to WAIT_MS for one completion from cq, into *wc. Returns its status (an enum
 * ibv_wc_status, IBV_WC_SUCCESS = 0), or -1 when none came or ibv_poll_cq failed; *wc is
 * meaningful only for a status.
 */
int poll_one(struct ibv_cq *cq, struct ibv_wc *wc);

/* One side of an RC connection. */
struct end {
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr; /* over buf; NULL without a buffer */
	uint8_t *buf;	   /* BUF zeroed bytes; NULL without a buffer */
};

/*
 * Make e: with access != 0 a buffer of BUF bytes registered with access (ibv_reg_mr_iova2,
 * the IOVA its address, so optional access bits pass through as an application's do); a CQ of
 * 64 entries on channel ch (NULL: none) with e as its context; an RC QP on it asking for cap,
 * which must be granted. Every step is checked; a failed one leaves its member NULL.
 */
void end_make(struct end *e, struct ibv_context *ctx, struct ibv_pd *pd,
	      struct ibv_comp_channel *ch, int access, struct ibv_qp_cap cap);

/* Destroy e's QP and CQ, deregister its MR and free its buffer (each checked). */
void end_free(struct end *e);

/* The attribute mask of the RC bring-up's RESET/INIT -> INIT and INIT -> RTR steps. */
#define RC_INIT_MASK (IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS)
#define RC_RTR_MASK                                                                     \
	(IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | \
	 IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER)

/* RESET -> INIT on port 1, P_Key index 0, with remote access access. Checked. */
void rc_init(struct ibv_qp *qp, int access);

/*
 * INIT -> RTR -> RTS towards QP dest_qpn at GID dgid (our GID index gid_idx, hop limit 64), both
 * PSNs psn, MTU 1024, 4 reads in flight each way, retries 7 and RNR retries 7. Checked.
 */
void rc_rtr_rts(struct ibv_qp *qp, uint32_t dest_qpn, int gid_idx, const union ibv_gid *dgid,
		uint32_t psn);

/* rc_init, then rc_rtr_rts. */
void rc_to_rts(struct ibv_qp *qp, int access, uint32_t dest_qpn, int gid_idx,
	       const union ibv_gid *dgid, uint32_t psn);

/* A UD QP from RESET to RTS on port 1, P_Key index 0, Q_Key qkey, SQ PSN 0. Checked. */
void ud_to_rts(struct ibv_qp *qp, uint32_t qkey);

#endif
