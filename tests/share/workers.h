/* SPDX-License-Identifier: MIT */
/*
 * Worker processes for the device-sharing tests: spawn() forks a process that opens the device
 * (uroce_ctx_open) and then does what it is told over a socketpair (call()): create RC QPs,
 * connect them, post and check SENDs and RDMA WRITEs, read counters, claim CM services, exit.
 * The w_* functions are the worker's own steps, which a single-process test may use directly on
 * W. Waits are bounded polls (completion eventfd, socketpair replies).
 *
 * spawn() and bye() record failures with check.h's CHECK. check.h counts per file, so a program
 * ends with `return check_exit_with(NAME, workers_checks)`, which adds these counts to its own.
 */
#ifndef UROCE_TESTS_SHARE_WORKERS_H
#define UROCE_TESTS_SHARE_WORKERS_H

#include <stdint.h>
#include <sys/types.h>

#include "check.h"
#include "host/ctx.h"

/* What a worker is asked to do (struct cmd), and what it answers (struct rep). */
enum op {
	OP_OPEN,
	OP_QP,
	OP_CONNECT,
	OP_RECV,
	OP_SEND,
	OP_WRITE,
	OP_WAIT_RECV,
	OP_CHECK,
	OP_CNT,
	OP_STEER,
	OP_IO,
	OP_EXIT
};

struct cmd {
	enum op op;
	int c;	/* context (OP_OPEN, OP_QP) */
	int qp; /* local QP index */
	uint32_t qpn, len, seed, rkey;
	uint64_t raddr;
	int nids; /* OP_STEER: ids[0..nids), more than 4: that many made-up ones */
	uint64_t ids[4];
};

struct rep {
	int rc;
	uint32_t qpn, rkey;
	uint64_t addr;
	uint64_t drop_no_qp, rcvd, retrans;
	uint64_t gro;	/* OP_CNT: datagrams of several packets received (UDP GRO) */
	uint64_t io_rx; /* OP_IO: datagrams or frames context 0's backends took in */
	uint32_t slot;	/* OP_IO: uroce_ctx_slot */
};

/* Each worker has WQ QPs, each with WMEM bytes of registered memory laid out so: */
#define WQ     8
#define WMEM   65536
#define RX_OFF 0
#define WR_OFF 16384 /* RDMA WRITE target */
#define TX_OFF 32768
#define WS_OFF 49152 /* RDMA WRITE source */

/* A worker's state, in the worker process. */
struct worker {
	struct uroce_ctx *ctx[2];
	struct uroce_pd *pd[2];
	int gid_idx[2];
	uint8_t gid[2][16];
	int evfd; /* written on every completion event */
	struct {
		int c; /* the context the QP is on */
		struct uroce_qp *qp;
		struct uroce_cq *scq, *rcq;
		struct uroce_mr *mr;
	} q[WQ];
	uint8_t mem[WQ][WMEM];
};

/* This process's worker state: set up by the worker process, or by a test that acts as one. */
extern struct worker *W;
/* The device and the GID type w_open uses: uroce_lo and RoCE v2 unless set before. */
extern const char *w_dev;
extern enum uroce_gid_type w_gtype;

/* The kit's CHECK count and failures so far (for check_exit_with). */
void workers_checks(long *count, int *failures);

/* Whether p[0..len) holds the pattern a SEND or WRITE with this seed carries. */
int same(const uint8_t *p, uint32_t len, uint32_t seed);

/* One completion of cq on c within 5 s; returns its status (or -ETIMEDOUT, -EIO), its length
 * into *blen (when not NULL). */
int wait_wc(struct uroce_ctx *c, struct uroce_cq *cq, uint32_t *blen);

/* Open w_dev as W->ctx[k] (with on_event on W->evfd), find its IPv4 GID of type w_gtype, and
 * allocate a PD. 0 or a negative error (-EADDRNOTAVAIL: no such GID). */
int w_open(int k);

/* Create W's QP k (RC, its own CQs and memory region) on context c; its QPN, rkey and memory
 * address into r. 0 or a negative error. */
int w_qp(int k, int c, struct rep *r);

/* Take QP k to RTS connected to QPN dqpn at the same GID (path MTU 1024, PSNs 100). */
int w_connect(int k, uint32_t dqpn);

/* OP_RECV: post a receive; OP_SEND, OP_WRITE: post it (data from the seed) and wait for its
 * completion, returning its status. */
int w_post(const struct cmd *m);

/* A worker process as its parent sees it. */
struct proc {
	pid_t pid;
	int sk; /* the socketpair end to talk to it */
	char name;
};

/* Fork a worker named name and have it open the device (context 0): checked. */
struct proc spawn(char name);

/* Ask p to do m and return its answer (20 s at most; rc -EPIPE when there is none). */
struct rep call(struct proc *p, struct cmd m);

/* Have p close everything and exit; checks that it exited 0 and reaps it. Returns its status. */
int bye(struct proc *p);

/*
 * As root, a network namespace of its own (lo up) and port 4791; else the host's loopback with
 * UROCE_PORT 24797. Returns the port.
 */
unsigned net_setup(void);

#endif
