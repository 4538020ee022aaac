/* SPDX-License-Identifier: MIT */
/*
 * cm_death: an rdma_cm program that stops in a chosen phase of a connection, so that a test can
 * kill it (SIGKILL) there, or that survives such a peer and reports what it saw (tests/rdmacm/
 * death.sh, issue 21 item 3):
 *   cm_death -l ADDR -p PORT -m MODE     server: listens on ADDR
 *   cm_death -c ADDR -p PORT -m MODE     client: connects to ADDR
 * MODE:
 *   hold    server: reads the CONNECT_REQUEST and neither accepts nor rejects it (a REQ
 *           received, no REP sent).
 *   nortu   client: connects with a QP of its own (conn_param.qp_num) and, on CONNECT_RESPONSE,
 *           never calls rdma_establish (REP received, no RTU sent).
 *   run     either side: connects (accepts), then SEND ping-pong, one 64-byte message each way
 *           per round, until the connection ends.
 *   nodrep  server: as run, but on DISCONNECTED it does not call rdma_disconnect (a DREQ
 *           received, no DREP sent).
 *   disc    client: connects, then rdma_disconnect at once, and waits for DISCONNECTED (the
 *           DREP, or the DREQ's timeout).
 *   verbs   server: accepts with its buffer's address and R_Key in the private data, then only
 *           waits; client: QP retry count 6 and ACK timeout 14 (67 ms), streams RDMA WRITEs to
 *           that buffer, two in flight, and ends at the first completion error (exit 4): the
 *           view of a raw verbs program, whose peer's death only its QP's retries show.
 * Every line it prints is flushed at once: "listening", "request", "response", "established",
 * "rounds N" (at 100 and every 1000 after), "dreq", "wc STATUS" (a completion error, by
 * ibv_wc_status_str) and "event NAME status S at T" for each CM event after ESTABLISHED or one
 * that ends a connect, T the wall clock in ms (CLOCK_REALTIME, for the test to compare with the
 * moment it killed the peer). Exits 0 when the connection ended with DISCONNECTED, 3 when a connect ended
 * with REJECTED, UNREACHABLE, CONNECT_ERROR or ADDR/ROUTE_ERROR, 1 on a failed call, 2 when the
 * run's deadline (RUN_LIMIT_MS) passed, 4 after a completion error in verbs mode. An ordinary rdma-core program, run under `uroce run`.
 */
#include <errno.h>
#include <getopt.h>
#include <netdb.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#define CM_PROG	     "cm_death"
#define RUN_LIMIT_MS 60000
#define MSG	     64
#define RECVS	     4

#include "interop/cm_prog.h"

struct conn {
	struct rdma_event_channel *ch;
	struct rdma_cm_id *listen, *id;
	struct ibv_pd *pd;
	struct ibv_comp_channel *cch;
	struct ibv_cq *cq;
	struct ibv_qp *qp; /* nortu: ours (ibv_create_qp); else id->qp */
	struct ibv_mr *mr;
	uint8_t buf[(RECVS + 1) * MSG];
	bool server;
	const char *mode;
	unsigned long rounds;
	uint64_t raddr; /* verbs: the server's buffer */
	uint32_t rkey;
};

/* verbs mode: what the server's accept carries. */
struct remote_buf {
	uint64_t addr;
	uint32_t rkey;
};

static bool mode_is(const struct conn *c, const char *m)
{
	return strcmp(c->mode, m) == 0;
}

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

/* PD, CQ on a non-blocking completion channel, the buffer's MR; the QP on id. */
static int verbs_setup(struct conn *c, struct rdma_cm_id *id)
{
	struct ibv_qp_init_attr qa = {
		.qp_type = IBV_QPT_RC,
		.sq_sig_all = 1,
		.cap = {.max_send_wr = 2, .max_recv_wr = RECVS, .max_send_sge = 1,
			.max_recv_sge = 1},
	};

	c->pd = ibv_alloc_pd(id->verbs);
	if (!c->pd)
		return fail_errno("ibv_alloc_pd");
	c->cch = ibv_create_comp_channel(id->verbs);
	if (!c->cch || set_nonblock(c->cch->fd, "fcntl on the completion channel"))
		return c->cch ? -1 : fail_errno("ibv_create_comp_channel");
	c->cq = ibv_create_cq(id->verbs, 2 * RECVS + 4, NULL, c->cch, 0);
	if (!c->cq)
		return fail_errno("ibv_create_cq");
	if (ibv_req_notify_cq(c->cq, 0))
		return fail_errno("ibv_req_notify_cq");
	c->mr = ibv_reg_mr(c->pd, c->buf, sizeof(c->buf),
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	if (!c->mr)
		return fail_errno("ibv_reg_mr");
	qa.send_cq = qa.recv_cq = c->cq;
	if (mode_is(c, "nortu")) {
		c->qp = ibv_create_qp(c->pd, &qa);
		return c->qp ? 0 : fail_errno("ibv_create_qp");
	}
	if (rdma_create_qp(id, c->pd, &qa))
		return fail_errno("rdma_create_qp");
	c->qp = id->qp;
	for (int i = 0; i < RECVS; i++) {
		struct ibv_sge sge = {.addr = (uintptr_t)(c->buf + i * MSG), .length = MSG,
				      .lkey = c->mr->lkey};
		struct ibv_recv_wr wr = {.wr_id = (uint64_t)i, .sg_list = &sge, .num_sge = 1}, *bad;
		int err = ibv_post_recv(c->qp, &wr, &bad);

		if (err)
			return fail_code("ibv_post_recv", err);
	}
	return 0;
}

/* verbs mode: one RDMA WRITE of MSG bytes into the server's buffer. */
static int post_write(struct conn *c)
{
	struct ibv_sge sge = {.addr = (uintptr_t)(c->buf + RECVS * MSG), .length = MSG,
			      .lkey = c->mr->lkey};
	struct ibv_send_wr wr = {.wr_id = RECVS, .sg_list = &sge, .num_sge = 1,
				 .opcode = IBV_WR_RDMA_WRITE,
				 .wr.rdma = {.remote_addr = c->raddr, .rkey = c->rkey}},
			   *bad;
	int err = ibv_post_send(c->qp, &wr, &bad);

	return err ? fail_code("ibv_post_send", err) : 0;
}

static long long wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void say_event(const struct rdma_cm_event *ev)
{
	say("event %s status %d at %lld", rdma_event_str(ev->event), ev->status, wall_ms());
}

static int post_send(struct conn *c)
{
	struct ibv_sge sge = {.addr = (uintptr_t)(c->buf + RECVS * MSG), .length = MSG,
			      .lkey = c->mr->lkey};
	struct ibv_send_wr wr = {.wr_id = RECVS, .sg_list = &sge, .num_sge = 1,
				 .opcode = IBV_WR_SEND},
			   *bad;
	int err;

	memcpy(c->buf + RECVS * MSG, &c->rounds, sizeof(c->rounds));
	err = ibv_post_send(c->qp, &wr, &bad);
	return err ? fail_code("ibv_post_send", err) : 0;
}

/* Completions: a receive is reposted and answered (the server) or counted as a round (the
 * client, which then sends the next); verbs mode: a WRITE done is followed by the next.
 * Errors are reported once each and not fatal, the CM event that follows decides; in verbs
 * mode the first ends the run (returns 4). */
static int drain_cq(struct conn *c)
{
	struct ibv_cq *cq;
	void *ctx;
	struct ibv_wc wc[8];
	int n;

	while (ibv_get_cq_event(c->cch, &cq, &ctx) == 0) {
		ibv_ack_cq_events(cq, 1);
		if (ibv_req_notify_cq(c->cq, 0))
			return fail_errno("ibv_req_notify_cq");
	}
	while ((n = ibv_poll_cq(c->cq, 8, wc)) > 0) {
		for (int i = 0; i < n; i++) {
			if (wc[i].status != IBV_WC_SUCCESS) {
				say("wc %s at %lld", ibv_wc_status_str(wc[i].status), wall_ms());
				if (mode_is(c, "verbs"))
					return 4;
				continue;
			}
			if (wc[i].wr_id >= RECVS && mode_is(c, "verbs")) {
				/* A WRITE done: the next one. */
				if (++c->rounds == 100 || c->rounds % 1000 == 0)
					say("rounds %lu", c->rounds);
				if (post_write(c))
					return -1;
				continue;
			}
			if (wc[i].wr_id >= RECVS)
				continue; /* our SEND */
			struct ibv_sge sge = {.addr = (uintptr_t)(c->buf + wc[i].wr_id * MSG),
					      .length = MSG, .lkey = c->mr->lkey};
			struct ibv_recv_wr wr = {.wr_id = wc[i].wr_id, .sg_list = &sge,
						 .num_sge = 1},
					   *bad;
			int err = ibv_post_recv(c->qp, &wr, &bad);

			if (err)
				return fail_code("ibv_post_recv", err);
			c->rounds++;
			if (c->rounds == 100 || c->rounds % 1000 == 0)
				say("rounds %lu", c->rounds);
			if (post_send(c))
				return -1;
		}
	}
	return n < 0 ? fail_errno("ibv_poll_cq") : 0;
}

/* What the server does with a CONNECT_REQUEST: its id, QP and accept (or nothing: hold). */
static int on_request(struct conn *c, struct rdma_cm_id *id)
{
	struct rdma_conn_param p = {.responder_resources = 1, .initiator_depth = 1,
				    .retry_count = 7, .rnr_retry_count = 7};

	say("request");
	struct remote_buf rb;

	if (mode_is(c, "hold") || c->id) /* one connection; later requests wait */
		return 0;
	c->id = id;
	if (verbs_setup(c, id))
		return -1;
	rb.addr = (uintptr_t)c->buf;
	rb.rkey = c->mr->rkey;
	p.private_data = &rb;
	p.private_data_len = sizeof(rb);
	return rdma_accept(id, &p) ? fail_errno("rdma_accept") : 0;
}

/* One CM event. Returns 1 when the run is over with *st set, 0 to go on, -1 on failure. */
static int on_event(struct conn *c, struct rdma_cm_event *ev, int *st)
{
	struct rdma_conn_param p = {.responder_resources = 1, .initiator_depth = 1,
				    .retry_count = 7, .rnr_retry_count = 7};

	switch (ev->event) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		return rdma_resolve_route(ev->id, 2000) ? fail_errno("rdma_resolve_route") : 0;
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		if (verbs_setup(c, ev->id))
			return -1;
		if (mode_is(c, "nortu"))
			p.qp_num = c->qp->qp_num;
		if (mode_is(c, "verbs")) {
			uint8_t t = 14;

			p.retry_count = 6;
			if (rdma_set_option(ev->id, RDMA_OPTION_ID, RDMA_OPTION_ID_ACK_TIMEOUT, &t,
					    sizeof(t)))
				return fail_errno("rdma_set_option(ACK_TIMEOUT)");
		}
		return rdma_connect(ev->id, &p) ? fail_errno("rdma_connect") : 0;
	case RDMA_CM_EVENT_CONNECT_REQUEST:
		return on_request(c, ev->id);
	case RDMA_CM_EVENT_CONNECT_RESPONSE:
		say("response"); /* nortu: no rdma_establish, ever */
		return 0;
	case RDMA_CM_EVENT_ESTABLISHED:
		say("established");
		if (!c->server && mode_is(c, "disc")) {
			if (rdma_disconnect(c->id))
				return fail_errno("rdma_disconnect");
			say("dreq");
			return 0;
		}
		if (c->server)
			return 0;
		if (mode_is(c, "verbs")) {
			struct remote_buf rb;

			if (ev->param.conn.private_data_len < sizeof(rb)) {
				fprintf(stderr, CM_PROG ": no buffer in the ESTABLISHED event\n");
				return -1;
			}
			memcpy(&rb, ev->param.conn.private_data, sizeof(rb));
			c->raddr = rb.addr;
			c->rkey = rb.rkey;
			return post_write(c) || post_write(c) ? -1 : 0;
		}
		return post_send(c);
	case RDMA_CM_EVENT_DISCONNECTED:
		say_event(ev);
		if (mode_is(c, "nodrep"))
			return 0; /* no DREP: wait to be killed */
		/* The DREP (or nothing, when the DREQ timed out): its result does not matter. */
		if (!mode_is(c, "disc"))
			rdma_disconnect(c->id);
		*st = 0;
		return 1;
	case RDMA_CM_EVENT_REJECTED:
	case RDMA_CM_EVENT_UNREACHABLE:
	case RDMA_CM_EVENT_CONNECT_ERROR:
	case RDMA_CM_EVENT_ADDR_ERROR:
	case RDMA_CM_EVENT_ROUTE_ERROR:
		say_event(ev);
		*st = 3;
		return 1;
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
	case RDMA_CM_EVENT_MULTICAST_JOIN:
	case RDMA_CM_EVENT_MULTICAST_ERROR:
	case RDMA_CM_EVENT_ADDR_CHANGE:
	case RDMA_CM_EVENT_TIMEWAIT_EXIT:
		break;
	}
	say_event(ev);
	return 0;
}

static int run(struct conn *c)
{
	for (;;) {
		struct pollfd p[2];
		struct rdma_cm_event *ev;
		int st = 1, r, n;

		while (rdma_get_cm_event(c->ch, &ev) == 0) {
			r = on_event(c, ev, &st);
			rdma_ack_cm_event(ev);
			if (r < 0)
				return 1;
			if (r > 0)
				return st;
		}
		if (errno != EAGAIN && errno != EINTR)
			return (fail_errno("rdma_get_cm_event"), 1);
		if (c->cch && (r = drain_cq(c)) != 0)
			return r < 0 ? 1 : r;
		/* Built now: an event just handled may have made the completion channel. */
		p[0] = (struct pollfd){.fd = c->ch->fd, .events = POLLIN};
		p[1] = (struct pollfd){.fd = c->cch ? c->cch->fd : -1, .events = POLLIN};
		n = poll(p, 2, left_ms());
		if (n < 0 && errno != EINTR)
			return (fail_errno("poll"), 1);
		if (n == 0) {
			say("deadline");
			return 2;
		}
	}
}

int main(int argc, char **argv)
{
	struct conn c = {.mode = "run"};
	const char *addr = NULL, *port = "7174";
	struct addrinfo *ai;
	int o;

	deadline_ms = now_ms() + RUN_LIMIT_MS;
	while ((o = getopt(argc, argv, "l:c:p:m:")) != -1) {
		switch (o) {
		case 'l':
			c.server = true;
			addr = optarg;
			break;
		case 'c':
			addr = optarg;
			break;
		case 'p':
			port = optarg;
			break;
		case 'm':
			c.mode = optarg;
			break;
		default:
			fprintf(stderr, "usage: cm_death -l|-c ADDR [-p PORT] [-m MODE]\n");
			return 1;
		}
	}
	if (!addr || resolve(addr, port, c.server, &ai))
		return 1;
	c.ch = rdma_create_event_channel();
	if (!c.ch || set_nonblock(c.ch->fd, "fcntl on the CM channel"))
		return c.ch ? 1 : (fail_errno("rdma_create_event_channel"), 1);
	if (c.server) {
		if (rdma_create_id(c.ch, &c.listen, NULL, RDMA_PS_TCP) ||
		    rdma_bind_addr(c.listen, ai->ai_addr) || rdma_listen(c.listen, 4))
			return (fail_errno("rdma_listen"), 1);
		say("listening");
	} else {
		if (rdma_create_id(c.ch, &c.id, NULL, RDMA_PS_TCP) ||
		    rdma_resolve_addr(c.id, NULL, ai->ai_addr, 2000))
			return (fail_errno("rdma_resolve_addr"), 1);
	}
	freeaddrinfo(ai);
	/* Nothing is torn down: the point is how the peer fares, and a survivor exits. */
	return run(&c);
}
