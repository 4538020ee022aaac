/* SPDX-License-Identifier: MIT */
/*
 * mwinv: a type 2 memory window written through by the peer, then invalidated by the peer's
 * SEND with Invalidate, over an RC connection that rdma_cm sets up.
 * No rdma-core utility sends with invalidate; this program runs unchanged on either side of an
 * interop case (Linux's kernel Soft-RoCE or uroce under `uroce run`):
 *   mwinv [-b BIND_ADDR] [-p PORT] [-S SIZE] [-K]    the window's owner (the server)
 *   mwinv -s SERVER_ADDR [-p PORT] [-S SIZE]         the writer (the client)
 * The exchange, every step checked:
 *   1. the owner registers a buffer (IBV_ACCESS_MW_BIND), allocates a type 2 window and binds
 *      SIZE bytes of the buffer to it with an IBV_WR_BIND_MW on the connection's QP (remote
 *      write), then SENDs the window's address, R_Key and length (16 bytes, big-endian);
 *   2. the writer RDMA-WRITEs SIZE bytes of pattern A through the window: must succeed;
 *   3. the writer SENDs with Invalidate carrying the window's R_Key; the owner's receive must
 *      complete with IBV_WC_WITH_INV and invalidated_rkey equal to the R_Key, and by then the
 *      window holds pattern A (RC delivers the WRITE before the SEND). -K: the owner runs on
 *      Linux's rxe, which writes the kernel's IB_WC_WITH_INVALIDATE (1 << 2) into a user CQ's
 *      wc_flags (rxe_resp.c do_complete), a bit libibverbs calls IBV_WC_IP_CSUM_OK; its
 *      IBV_WC_WITH_INV (1 << 3) never comes. With -K that bit stands in for IBV_WC_WITH_INV
 *      (invalidated_rkey is checked all the same);
 *   4. the writer RDMA-WRITEs pattern B through the invalidated window: it must complete with
 *      IBV_WC_REM_ACCESS_ERR (the responder's NAK), and the owner's buffer must still hold
 *      pattern A when the writer has disconnected.
 * Both sides print the window's R_Key ("R_Key 0x%08x"): the owner as bound and as invalidated,
 * the writer as sent with Invalidate; the interop case compares them with the IETH in its
 * capture. Lines about expected outcomes avoid the words "error" and "fail", which the interop
 * case takes as a failure.
 *
 * An ordinary rdma-core program (linked against the system's libibverbs and librdmacm). Every
 * wait is a poll() on the CM and completion channels, bounded by one deadline for the whole run
 * (RUN_LIMIT_MS). Exits 0 when every step went as above, else 1 after a line naming the call,
 * event or completion that failed.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netdb.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#define CM_PROG		   "mwinv"
#define RUN_LIMIT_MS	   60000
#define RESOLVE_TIMEOUT_MS 2000
#define MSG_BYTES	   16 /* the window's description: address, R_Key, length */
/* The registered buffer: the receive slot, the send slot, then the window's SIZE bytes (the
 * writer's source of its WRITEs). */
#define RECV_SLOT 0
#define SEND_SLOT MSG_BYTES
#define WIN_AREA  (2 * MSG_BYTES)
#define PATTERN_A 0xA5
#define PATTERN_B 0x3C

/* Work request ids: which step a completion belongs to. */
enum wrid {
	WR_RECV = 1,
	WR_BIND,
	WR_SEND_DESC,
	WR_WRITE_OK,
	WR_SEND_INV,
	WR_WRITE_LATE,
	WR_COUNT,
};

struct opts {
	const char *dst;  /* -s: the writer */
	const char *bind; /* -b: the owner's address */
	const char *port;
	uint32_t size;
	bool rxe_flags; /* -K */
};

struct conn {
	struct rdma_event_channel *ch;
	struct rdma_cm_id *listen_id;
	struct rdma_cm_id *id;
	struct ibv_pd *pd;
	struct ibv_comp_channel *cch;
	struct ibv_cq *cq;
	struct ibv_mr *mr; /* buf: RECV_SLOT, SEND_SLOT, WIN_AREA */
	struct ibv_mw *mw;
	uint8_t *buf;
	uint32_t size;
	int cq_events;
	bool disconnected;
	/* Completions by step: a send's and a receive's may come in either order. */
	struct ibv_wc wc[WR_COUNT];
	bool have[WR_COUNT];
};

#include "cm_prog.h"

static void put_be(uint8_t *p, uint64_t v, int bytes)
{
	for (int i = bytes - 1; i >= 0; i--, v >>= 8)
		p[i] = (uint8_t)v;
}

static uint64_t get_be(const uint8_t *p, int bytes)
{
	uint64_t v = 0;

	for (int i = 0; i < bytes; i++)
		v = v << 8 | p[i];
	return v;
}

/* ---- events and completions --------------------------------------------------------------- */

/*
 * The next completion, within the run's deadline: 0 and *wc, or -1. A CM event meanwhile is a
 * failure, except DISCONNECTED while the CQ still holds a completion (the event is recorded
 * for wait_disconnected).
 */
static int next_wc(struct conn *c, struct ibv_wc *wc)
{
	for (;;) {
		struct pollfd p[2] = {
			{.fd = c->cch->fd, .events = POLLIN},
			{.fd = c->ch->fd, .events = POLLIN},
		};
		struct rdma_cm_event *ev;
		struct ibv_cq *cq;
		void *ctx;
		int n = ibv_poll_cq(c->cq, 1, wc);

		if (n < 0) {
			fprintf(stderr, "mwinv: ibv_poll_cq returned %d\n", n);
			return -1;
		}
		if (n == 1)
			return 0;
		n = poll(p, 2, left_ms());
		if (n < 0 && errno != EINTR)
			return fail_errno("poll");
		if (n == 0) {
			fprintf(stderr, "mwinv: no completion within the run's %d s\n",
				RUN_LIMIT_MS / 1000);
			return -1;
		}
		if (p[0].revents) {
			if (ibv_get_cq_event(c->cch, &cq, &ctx) == 0) {
				c->cq_events++;
				if (ibv_req_notify_cq(c->cq, 0))
					return fail_errno("ibv_req_notify_cq");
			} else if (errno != EAGAIN && errno != EINTR) {
				return fail_errno("ibv_get_cq_event");
			}
		}
		if (!p[1].revents)
			continue;
		if (rdma_get_cm_event(c->ch, &ev)) {
			if (errno == EAGAIN || errno == EINTR)
				continue;
			return fail_errno("rdma_get_cm_event");
		}
		if (ev->event == RDMA_CM_EVENT_DISCONNECTED && !c->disconnected) {
			c->disconnected = true;
			rdma_ack_cm_event(ev);
			/* Completions the CQ holds still count; none will come after. */
			n = ibv_poll_cq(c->cq, 1, wc);
			if (n == 1)
				return 0;
			fprintf(stderr, "mwinv: DISCONNECTED while waiting for a completion\n");
			return -1;
		}
		fprintf(stderr, "mwinv: %s (status %d) while waiting for a completion\n",
			rdma_event_str(ev->event), ev->status);
		rdma_ack_cm_event(ev);
		return -1;
	}
}

static const char *step_name(uint64_t wr_id)
{
	switch ((enum wrid)wr_id) {
	case WR_RECV:
		return "the receive";
	case WR_BIND:
		return "the window's bind";
	case WR_SEND_DESC:
		return "the SEND of the window's description";
	case WR_WRITE_OK:
		return "the WRITE through the bound window";
	case WR_SEND_INV:
		return "the SEND with Invalidate";
	case WR_WRITE_LATE:
		return "the WRITE through the invalidated window";
	case WR_COUNT:
		break;
	}
	return "an unknown work request";
}

/*
 * Step `want`'s completion, with `status` (and `opcode` when status is success), into *out when
 * out. Completions of other steps that come first are kept for their own wait.
 */
static int expect_wc(struct conn *c, enum wrid want, enum ibv_wc_status status,
		     enum ibv_wc_opcode opcode, struct ibv_wc *out)
{
	struct ibv_wc wc;

	while (!c->have[want]) {
		if (next_wc(c, &wc))
			return -1;
		if (wc.wr_id == 0 || wc.wr_id >= WR_COUNT || c->have[wc.wr_id]) {
			fprintf(stderr,
				"mwinv: unexpected completion of wr_id %llu, status %d (%s)\n",
				(unsigned long long)wc.wr_id, wc.status,
				ibv_wc_status_str(wc.status));
			return -1;
		}
		c->wc[wc.wr_id] = wc;
		c->have[wc.wr_id] = true;
	}
	wc = c->wc[want];
	if (wc.status != status || (status == IBV_WC_SUCCESS && wc.opcode != opcode)) {
		fprintf(stderr,
			"mwinv: %s completed with status %d (%s), opcode %d, vendor_err 0x%x; "
			"expected status %d (%s), opcode %d\n",
			step_name(want), wc.status, ibv_wc_status_str(wc.status), wc.opcode,
			wc.vendor_err, status, ibv_wc_status_str(status), opcode);
		return -1;
	}
	if (out)
		*out = wc;
	return 0;
}

/* Wait for the peer's DISCONNECTED (the only welcome event), within the deadline. */
static int wait_disconnected(struct conn *c)
{
	while (!c->disconnected) {
		struct rdma_cm_event *ev;

		if (next_event(c->ch, &ev))
			return -1;
		if (ev->event != RDMA_CM_EVENT_DISCONNECTED) {
			fprintf(stderr, "mwinv: waiting for DISCONNECTED, got %s (status %d)\n",
				rdma_event_str(ev->event), ev->status);
			rdma_ack_cm_event(ev);
			return -1;
		}
		c->disconnected = true;
		rdma_ack_cm_event(ev);
	}
	return 0;
}

/* ---- the connection's objects ------------------------------------------------------------- */

/* The PD, CQ, QP (on the id, rdma_create_qp) and the registered buffer. */
static int conn_setup(struct conn *c)
{
	struct ibv_context *verbs = c->id->verbs;
	struct ibv_qp_init_attr qa;
	size_t bytes = WIN_AREA + (size_t)c->size;

	if (!verbs) {
		fprintf(stderr, "mwinv: the rdma_cm id has no device\n");
		return -1;
	}
	c->pd = ibv_alloc_pd(verbs);
	if (!c->pd)
		return fail_errno("ibv_alloc_pd");
	c->cch = ibv_create_comp_channel(verbs);
	if (!c->cch)
		return fail_errno("ibv_create_comp_channel");
	if (set_nonblock(c->cch->fd, "fcntl on the completion channel"))
		return -1;
	c->cq = ibv_create_cq(verbs, 8, c, c->cch, 0);
	if (!c->cq)
		return fail_errno("ibv_create_cq");
	if (ibv_req_notify_cq(c->cq, 0))
		return fail_errno("ibv_req_notify_cq");
	memset(&qa, 0, sizeof(qa));
	qa.send_cq = c->cq;
	qa.recv_cq = c->cq;
	qa.qp_type = IBV_QPT_RC;
	qa.sq_sig_all = 1;
	qa.cap.max_send_wr = 4;
	qa.cap.max_recv_wr = 1;
	qa.cap.max_send_sge = 1;
	qa.cap.max_recv_sge = 1;
	if (rdma_create_qp(c->id, c->pd, &qa))
		return fail_errno("rdma_create_qp");
	c->buf = calloc(1, bytes);
	if (!c->buf) {
		errno = ENOMEM;
		return fail_errno("calloc of the buffer");
	}
	c->mr = ibv_reg_mr(c->pd, c->buf, bytes,
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_MW_BIND);
	if (!c->mr)
		return fail_errno("ibv_reg_mr");
	return 0;
}

static void conn_free(struct conn *c)
{
	if (c->id && c->id->qp)
		rdma_destroy_qp(c->id);
	if (c->mw)
		ibv_dealloc_mw(c->mw);
	if (c->cq) {
		ibv_ack_cq_events(c->cq, (unsigned int)c->cq_events);
		ibv_destroy_cq(c->cq);
	}
	if (c->cch)
		ibv_destroy_comp_channel(c->cch);
	if (c->mr)
		ibv_dereg_mr(c->mr);
	free(c->buf);
	if (c->pd)
		ibv_dealloc_pd(c->pd);
	if (c->id)
		rdma_destroy_id(c->id);
	if (c->listen_id)
		rdma_destroy_id(c->listen_id);
}

static int post_recv(struct conn *c)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)(c->buf + RECV_SLOT), .length = MSG_BYTES, .lkey = c->mr->lkey};
	struct ibv_recv_wr wr = {.wr_id = WR_RECV, .sg_list = &sge, .num_sge = 1};
	struct ibv_recv_wr *bad;
	int err = ibv_post_recv(c->id->qp, &wr, &bad);

	return err ? fail_code("ibv_post_recv", err) : 0;
}

static int post(struct conn *c, struct ibv_send_wr *wr, const char *what)
{
	struct ibv_send_wr *bad;
	int err = ibv_post_send(c->id->qp, wr, &bad);

	return err ? fail_code(what, err) : 0;
}

/* A WRITE of the window's SIZE bytes from the local window-sized area, filled with `fill`. */
static int post_write(struct conn *c, enum wrid id, uint8_t fill, uint64_t addr, uint32_t rkey)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)(c->buf + WIN_AREA), .length = c->size, .lkey = c->mr->lkey};
	struct ibv_send_wr wr = {
		.wr_id = id, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE};

	memset(c->buf + WIN_AREA, fill, c->size);
	wr.wr.rdma.remote_addr = addr;
	wr.wr.rdma.rkey = rkey;
	return post(c, &wr, "ibv_post_send(RDMA_WRITE)");
}

/* Does the window's area hold `fill` in every byte? */
static bool holds(const struct conn *c, uint8_t fill)
{
	for (uint32_t i = 0; i < c->size; i++)
		if (c->buf[WIN_AREA + i] != fill)
			return false;
	return true;
}

/* ---- the two roles ------------------------------------------------------------------------ */

/* The owner: bind, describe, then the peer's WRITE and SEND with Invalidate. */
static int run_owner(struct conn *c, const struct opts *o)
{
	struct rdma_cm_event *ev;
	struct rdma_conn_param cp;
	struct addrinfo *ai = NULL;
	struct ibv_wc wc;
	int err = -1;

	printf("mwinv: owner: listening\n");
	if (resolve(o->bind, o->port, true, &ai))
		return -1;
	if (rdma_create_id(c->ch, &c->listen_id, NULL, RDMA_PS_TCP)) {
		fail_errno("rdma_create_id");
		goto out;
	}
	if (rdma_bind_addr(c->listen_id, ai->ai_addr)) {
		fail_errno("rdma_bind_addr");
		goto out;
	}
	if (rdma_listen(c->listen_id, 1)) {
		fail_errno("rdma_listen");
		goto out;
	}
	if (expect_event(c->ch, RDMA_CM_EVENT_CONNECT_REQUEST, &ev))
		goto out;
	c->id = ev->id;
	memset(&cp, 0, sizeof(cp));
	cp.responder_resources = ev->param.conn.responder_resources;
	cp.initiator_depth = ev->param.conn.initiator_depth;
	cp.rnr_retry_count = 7;
	rdma_ack_cm_event(ev);
	if (conn_setup(c) || post_recv(c)) {
		rdma_reject(c->id, NULL, 0);
		goto out;
	}
	if (rdma_accept(c->id, &cp)) {
		fail_errno("rdma_accept");
		goto out;
	}
	if (expect_event(c->ch, RDMA_CM_EVENT_ESTABLISHED, NULL))
		goto out;

	/* The window: type 2, bound on this connection's QP to the buffer's window area. */
	c->mw = ibv_alloc_mw(c->pd, IBV_MW_TYPE_2);
	if (!c->mw) {
		fail_errno("ibv_alloc_mw(IBV_MW_TYPE_2)");
		goto out;
	}
	uint32_t rkey = ibv_inc_rkey(c->mw->rkey);
	uint64_t addr = (uintptr_t)(c->buf + WIN_AREA);
	struct ibv_send_wr bind = {.wr_id = WR_BIND, .opcode = IBV_WR_BIND_MW};

	bind.bind_mw.mw = c->mw;
	bind.bind_mw.rkey = rkey;
	bind.bind_mw.bind_info.mr = c->mr;
	bind.bind_mw.bind_info.addr = addr;
	bind.bind_mw.bind_info.length = c->size;
	bind.bind_mw.bind_info.mw_access_flags = IBV_ACCESS_REMOTE_WRITE;
	if (post(c, &bind, "ibv_post_send(BIND_MW)") ||
	    expect_wc(c, WR_BIND, IBV_WC_SUCCESS, IBV_WC_BIND_MW, NULL))
		goto out;
	printf("mwinv: owner: window bound: address 0x%llx, length %u, R_Key 0x%08x\n",
	       (unsigned long long)addr, c->size, rkey);

	/* Its description, from the send slot. */
	uint8_t *msg = c->buf + SEND_SLOT;
	struct ibv_sge sge = {.addr = (uintptr_t)msg, .length = MSG_BYTES, .lkey = c->mr->lkey};
	struct ibv_send_wr desc = {
		.wr_id = WR_SEND_DESC, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND};

	put_be(msg, addr, 8);
	put_be(msg + 8, rkey, 4);
	put_be(msg + 12, c->size, 4);
	if (post(c, &desc, "ibv_post_send(SEND)") ||
	    expect_wc(c, WR_SEND_DESC, IBV_WC_SUCCESS, IBV_WC_SEND, NULL))
		goto out;
	if (expect_wc(c, WR_RECV, IBV_WC_SUCCESS, IBV_WC_RECV, &wc))
		goto out;
	if (wc.byte_len != MSG_BYTES) {
		fprintf(stderr, "mwinv: the SEND with Invalidate has %u bytes, expected %d\n",
			wc.byte_len, MSG_BYTES);
		goto out;
	}
	/* rxe's IB_WC_WITH_INVALIDATE is libibverbs' IBV_WC_IP_CSUM_OK bit (see the top). */
	unsigned int inv_flag = o->rxe_flags ? (unsigned int)IBV_WC_IP_CSUM_OK : IBV_WC_WITH_INV;
	const char *inv_name =
		o->rxe_flags ? "rxe's IB_WC_WITH_INVALIDATE (1 << 2)" : "IBV_WC_WITH_INV";

	if (!(wc.wc_flags & inv_flag) || (wc.wc_flags & IBV_WC_WITH_IMM)) {
		fprintf(stderr, "mwinv: the receive's wc_flags are 0x%x: no %s\n", wc.wc_flags,
			inv_name);
		goto out;
	}
	if (wc.invalidated_rkey != rkey) {
		fprintf(stderr, "mwinv: invalidated_rkey 0x%08x, the window's R_Key is 0x%08x\n",
			wc.invalidated_rkey, rkey);
		goto out;
	}
	printf("mwinv: owner: receive with %s, invalidated R_Key 0x%08x\n", inv_name,
	       wc.invalidated_rkey);
	if (!holds(c, PATTERN_A)) {
		fprintf(stderr, "mwinv: the window does not hold the peer's WRITE (0x%02x)\n",
			PATTERN_A);
		goto out;
	}
	printf("mwinv: owner: the window holds the peer's WRITE\n");

	/* The peer's WRITE through the invalidated window is NAKed; then the peer disconnects. */
	if (wait_disconnected(c))
		goto out;
	if (!holds(c, PATTERN_A)) {
		fprintf(stderr,
			"mwinv: a WRITE through the invalidated window changed the buffer\n");
		goto out;
	}
	printf("mwinv: owner: the buffer is unchanged after the peer's late WRITE\n");
	if (rdma_disconnect(c->id)) {
		fail_errno("rdma_disconnect");
		goto out;
	}
	printf("test complete\n");
	err = 0;
out:
	if (ai)
		freeaddrinfo(ai);
	return err;
}

/* The writer: WRITE through the window, SEND with Invalidate, WRITE again (refused). */
static int run_writer(struct conn *c, const struct opts *o)
{
	struct addrinfo *dst = NULL;
	struct rdma_conn_param cp;
	struct ibv_wc wc;
	int err = -1;

	printf("mwinv: writer: connecting\n");
	if (resolve(o->dst, o->port, false, &dst))
		return -1;
	if (rdma_create_id(c->ch, &c->id, c, RDMA_PS_TCP)) {
		fail_errno("rdma_create_id");
		goto out;
	}
	if (rdma_resolve_addr(c->id, NULL, dst->ai_addr, RESOLVE_TIMEOUT_MS)) {
		fail_errno("rdma_resolve_addr");
		goto out;
	}
	if (expect_event(c->ch, RDMA_CM_EVENT_ADDR_RESOLVED, NULL))
		goto out;
	if (rdma_resolve_route(c->id, RESOLVE_TIMEOUT_MS)) {
		fail_errno("rdma_resolve_route");
		goto out;
	}
	if (expect_event(c->ch, RDMA_CM_EVENT_ROUTE_RESOLVED, NULL))
		goto out;
	if (conn_setup(c) || post_recv(c))
		goto out;
	memset(&cp, 0, sizeof(cp));
	cp.responder_resources = 1;
	cp.initiator_depth = 1;
	cp.retry_count = 5;
	cp.rnr_retry_count = 7;
	if (rdma_connect(c->id, &cp)) {
		fail_errno("rdma_connect");
		goto out;
	}
	if (expect_event(c->ch, RDMA_CM_EVENT_ESTABLISHED, NULL))
		goto out;

	if (expect_wc(c, WR_RECV, IBV_WC_SUCCESS, IBV_WC_RECV, &wc))
		goto out;
	if (wc.byte_len != MSG_BYTES) {
		fprintf(stderr, "mwinv: the window's description has %u bytes, expected %d\n",
			wc.byte_len, MSG_BYTES);
		goto out;
	}
	const uint8_t *msg = c->buf + RECV_SLOT;
	uint64_t addr = get_be(msg, 8);
	uint32_t rkey = (uint32_t)get_be(msg + 8, 4);
	uint32_t len = (uint32_t)get_be(msg + 12, 4);

	printf("mwinv: writer: window at 0x%llx, length %u, R_Key 0x%08x\n",
	       (unsigned long long)addr, len, rkey);
	if (len != c->size) {
		fprintf(stderr, "mwinv: the window has %u bytes, this side's -S is %u\n", len,
			c->size);
		goto out;
	}

	if (post_write(c, WR_WRITE_OK, PATTERN_A, addr, rkey) ||
	    expect_wc(c, WR_WRITE_OK, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, NULL))
		goto out;
	printf("mwinv: writer: WRITE through the window completed\n");

	struct ibv_sge sge = {
		.addr = (uintptr_t)(c->buf + SEND_SLOT), .length = MSG_BYTES, .lkey = c->mr->lkey};
	struct ibv_send_wr inv = {.wr_id = WR_SEND_INV,
				  .sg_list = &sge,
				  .num_sge = 1,
				  .opcode = IBV_WR_SEND_WITH_INV};

	inv.invalidate_rkey = rkey;
	if (post(c, &inv, "ibv_post_send(SEND_WITH_INV)") ||
	    expect_wc(c, WR_SEND_INV, IBV_WC_SUCCESS, IBV_WC_SEND, NULL))
		goto out;
	printf("mwinv: writer: SEND with Invalidate of R_Key 0x%08x completed\n", rkey);

	/* The window is gone: the responder NAKs the WRITE (remote access), our QP errs. */
	if (post_write(c, WR_WRITE_LATE, PATTERN_B, addr, rkey) ||
	    expect_wc(c, WR_WRITE_LATE, IBV_WC_REM_ACCESS_ERR, IBV_WC_RDMA_WRITE, NULL))
		goto out;
	printf("mwinv: writer: WRITE through the invalidated window refused by the responder "
	       "(IBV_WC_REM_ACCESS_ERR), as it must be\n");

	if (rdma_disconnect(c->id)) {
		fail_errno("rdma_disconnect");
		goto out;
	}
	if (wait_disconnected(c))
		goto out;
	printf("test complete\n");
	err = 0;
out:
	freeaddrinfo(dst);
	return err;
}

static int usage(void)
{
	fprintf(stderr,
		"usage: mwinv [-b BIND_ADDR] [-p PORT] [-S SIZE] [-K]    the window's owner\n"
		"       mwinv -s SERVER_ADDR [-p PORT] [-S SIZE]         the writer\n"
		"  SIZE: the window's bytes, 1..1048576 (4096)\n"
		"  -K: the owner's wc_flags as Linux's rxe writes them (1 << 2 for an "
		"invalidate)\n");
	return 2;
}

int main(int argc, char **argv)
{
	struct opts o = {.port = "7471", .size = 4096};
	struct conn c;
	int opt, err;

	while ((opt = getopt(argc, argv, "s:b:p:S:K")) != -1) {
		char *end;
		unsigned long v;

		switch (opt) {
		case 's':
			o.dst = optarg;
			break;
		case 'b':
			o.bind = optarg;
			break;
		case 'p':
			o.port = optarg;
			break;
		case 'K':
			o.rxe_flags = true;
			break;
		case 'S':
			errno = 0;
			v = strtoul(optarg, &end, 10);
			if (errno || *end || v < 1 || v > (1u << 20))
				return usage();
			o.size = (uint32_t)v;
			break;
		default:
			return usage();
		}
	}
	if (optind != argc || (o.dst && (o.bind || o.rxe_flags)))
		return usage();
	setvbuf(stdout, NULL, _IOLBF, 0);
	deadline_ms = now_ms() + RUN_LIMIT_MS;
	memset(&c, 0, sizeof(c));
	c.size = o.size;
	c.ch = rdma_create_event_channel();
	if (!c.ch) {
		fail_errno("rdma_create_event_channel");
		return 1;
	}
	if (set_nonblock(c.ch->fd, "fcntl on the CM channel")) {
		rdma_destroy_event_channel(c.ch);
		return 1;
	}
	err = o.dst ? run_writer(&c, &o) : run_owner(&c, &o);
	conn_free(&c);
	rdma_destroy_event_channel(c.ch);
	return err ? 1 : 0;
}
