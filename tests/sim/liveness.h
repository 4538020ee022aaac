/* SPDX-License-Identifier: MIT */
/*
 * The liveness invariant (issue 21, item 1), checked by probing: whatever a peer sent before,
 * each QP still answers its legitimate peer, or is in ERR in a way the application sees.
 *
 *   RC, in RTR, RTS, SQD or SQE: an RDMA WRITE Only with AckReq at the PSN that uroce_qp_query
 *      reports as expected gets an ACK covering it, or a NAK (or RNR NAK) of it, out of the
 *      engine; once acknowledged, its bytes are in memory, and a second probe after it (a SEND
 *      Only when the target has a receive buffer, else a WRITE Only) is answered too.
 *   UC: a WRITE Only at any PSN lands in memory; a SEND Only completes a receive.
 *   UD: a SEND Only with the QP's Q_Key completes a receive.
 *   Any type in ERR: an async error event named the QP, or the harness saw an error
 *      completion of it (live_qp.err_wc_seen).
 *
 * A probe is fed to the engine as its peer would send it (uroce_eng_rx, from the peer node's
 * address) and the engine's output is pulled at once, without running the network: the probe's
 * answers (RC ACKs) are taken out, the rest goes to the network with sim_send. A probe takes
 * the PSNs it uses from the real peer: a harness whose peer sends requests of its own must
 * account for that (the fuzz target and test_hostile probe QPs whose real peer sends none, or
 * whose lost PSNs only make duplicates).
 */
#ifndef UROCE_TESTS_SIM_LIVENESS_H
#define UROCE_TESTS_SIM_LIVENESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "simenv.h"
#include "simlink.h"
#include "transport/engine.h"

#define LIVE_MAX_QP   8
#define LIVE_WR_ID    0x11FE00000000ull /* receives the probes post: wr_id LIVE_WR_ID + n */
#define LIVE_PROBE_LEN 8

/* One QP under watch and what its probes may use. */
struct live_qp {
	int node, peer;		  /* the QP's node; the node its packets come from */
	struct uroce_qp *qp;
	uint32_t peer_qpn;	  /* UD: the source QP of the probes */
	/* RC, UC: LIVE_PROBE_LEN bytes the probes write (at host address mem, I/O address va) */
	uint8_t *mem;
	uint64_t va;
	uint32_t rkey;
	/* UC, UD, and RC's second probe when set: a receive buffer for a SEND probe (UD: 40 bytes
	 * of GRH more), and the CQ its completion goes to */
	uint64_t recv_va;
	uint32_t recv_lkey;
	struct uroce_cq *rcq;
	/* kept by the module */
	bool fatal_seen;  /* an async error event named the QP */
	bool err_wc_seen; /* set by the harness: it saw an error completion of the QP */
	uint32_t seq;	  /* probes sent */
	uint64_t answered, acked, naked;
};

struct live_set {
	struct sim_net *net;
	int n;
	struct live_qp q[LIVE_MAX_QP];
	uint64_t events[16]; /* every event taken, by type */
	/* completions the probes drained from a CQ that were not theirs: the harness sees them */
	void (*on_wc)(void *arg, const struct uroce_wc *wc);
	void *on_wc_arg;
};

void live_init(struct live_set *s, struct sim_net *net);
/* Watch a QP (copied; the module's fields reset). Returns its index or -ENOSPC. */
int live_add(struct live_set *s, const struct live_qp *q);
/*
 * Watch q, an RC or UC QP connected to the other of two nodes: its probes write at byte
 * probe_off of region m and SEND into a receive at recv_off (q->rcq). Returns as live_add.
 */
int live_add_conn(struct live_set *s, const struct simqp *q, const struct simmr *m,
		  size_t probe_off, size_t recv_off);
/* Watch q, a UD QP: probes come from the other node's QP peer_qpn into receives in m. */
int live_add_ud(struct live_set *s, const struct simqp *q, uint32_t peer_qpn,
		const struct simmr *m);
/* Take every pending event of every engine on the network, noting the QPs they name. */
void live_events(struct live_set *s);
/*
 * Probe every watched QP (events taken first). Returns 0, or -EPROTO with why filled (the QP's
 * index, type, state and what went unanswered) for the first QP that breaks the invariant.
 */
int live_check(struct live_set *s, char *why, size_t why_len);

#endif
