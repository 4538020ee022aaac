/* SPDX-License-Identifier: MIT */
/*
 * ownqp: an rdma_cm program whose application owns its QP, the path UCX and other middleware take
 * and that rping, ucmatose and perftest -R (rdma_create_qp) never do:
 *   - the QP comes from ibv_create_qp, so the rdma_cm id has none (id->qp == NULL);
 *   - rdma_connect and rdma_accept carry its number in conn_param.qp_num;
 *   - the application moves it through INIT, RTR and RTS itself, each step's attributes from
 *     rdma_init_qp_attr; the passive side to RTR and RTS before rdma_accept, as the kernel's cma
 *     does for a QP it owns; the active side on RDMA_CM_EVENT_CONNECT_RESPONSE, then
 *     rdma_establish sends the RTU.
 * It speaks Debian's (rdma-core 44) ucmatose protocol, so an unmodified ucmatose is its peer:
 *   ownqp -s SERVER_ADDR [-p PORT] [-C MSGS] [-S SIZE]    client, against `ucmatose -c 1`
 *   ownqp [-b BIND_ADDR] [-p PORT] [-C MSGS] [-S SIZE]    server, against `ucmatose -s ADDR -c 1`
 * with the same -p, -C and -S on both sides (defaults as ucmatose's: port 7471, 10 messages of
 * 100 bytes). Both sides post MSGS receives of SIZE bytes before connecting or accepting; the
 * server sends MSGS SENDs of SIZE bytes once ESTABLISHED; the client sends its MSGS once it has
 * received the server's; the server disconnects once it has its MSGS, the client answers the
 * DISCONNECTED with its own rdma_disconnect. Stricter than ucmatose: every completion must be
 * successful (the client's sends included, which ucmatose never polls), every message SIZE bytes.
 *
 * An ordinary rdma-core program (linked against the system's libibverbs and librdmacm): it runs
 * over uroce with `uroce run --` and would run on any rdma-core stack. Every wait is a poll() on
 * the CM and completion channels, bounded by one deadline for the whole run (RUN_LIMIT_MS).
 * Exits 0 when every message arrived and every completion succeeded, else 1 after a line naming
 * the call or event that failed.
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
#include <unistd.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#define CM_PROG		   "ownqp"
#define RUN_LIMIT_MS	   60000
#define RESOLVE_TIMEOUT_MS 2000		       /* ucmatose's, for address and route */
#define WRID_RECV	   ((uint64_t)1 << 32) /* set in a receive's wr_id; a send's is its index */

struct opts {
	const char *dst;  /* -s: client mode */
	const char *bind; /* -b: the server's (or the client's source) address */
	const char *port;
	int count;
	int size;
};

/* One connection and everything the application owns for it. */
struct conn {
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id;
	struct ibv_pd *pd;
	struct ibv_comp_channel *cch;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	uint8_t *buf; /* count receive slots of size bytes, then the send slot */
	int count, size;
	int cq_events; /* to acknowledge before the CQ is destroyed */
	int recvs, sends;
	bool disconnected;
};

#include "cm_prog.h"

/* ---- the application's own verbs objects -------------------------------------------------- */

static int conn_setup(struct conn *c, struct ibv_context *verbs)
{
	struct ibv_qp_init_attr qa;
	size_t bytes = (size_t)(c->count + 1) * (size_t)c->size;
	int cqe = c->count ? 2 * c->count : 1;

	if (!verbs) {
		fprintf(stderr, "ownqp: the rdma_cm id has no device\n");
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
	c->cq = ibv_create_cq(verbs, cqe, c, c->cch, 0);
	if (!c->cq)
		return fail_errno("ibv_create_cq");
	if (ibv_req_notify_cq(c->cq, 0))
		return fail_errno("ibv_req_notify_cq");
	memset(&qa, 0, sizeof(qa));
	qa.send_cq = c->cq;
	qa.recv_cq = c->cq;
	qa.qp_type = IBV_QPT_RC;
	qa.sq_sig_all = 1;
	qa.cap.max_send_wr = (uint32_t)(c->count ? c->count : 1);
	qa.cap.max_recv_wr = (uint32_t)(c->count ? c->count : 1);
	qa.cap.max_send_sge = 1;
	qa.cap.max_recv_sge = 1;
	c->qp = ibv_create_qp(c->pd, &qa);
	if (!c->qp)
		return fail_errno("ibv_create_qp");
	c->buf = calloc(1, bytes);
	if (!c->buf) {
		errno = ENOMEM;
		return fail_errno("calloc of the message buffers");
	}
	memset(c->buf + (size_t)c->count * (size_t)c->size, 0x5a, (size_t)c->size);
	c->mr = ibv_reg_mr(c->pd, c->buf, bytes, IBV_ACCESS_LOCAL_WRITE);
	if (!c->mr)
		return fail_errno("ibv_reg_mr");
	return 0;
}

static void conn_free(struct conn *c)
{
	if (c->qp)
		ibv_destroy_qp(c->qp);
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
}

static const char *state_name(enum ibv_qp_state s)
{
	switch (s) {
	case IBV_QPS_RESET:
		return "RESET";
	case IBV_QPS_INIT:
		return "INIT";
	case IBV_QPS_RTR:
		return "RTR";
	case IBV_QPS_RTS:
		return "RTS";
	case IBV_QPS_SQD:
		return "SQD";
	case IBV_QPS_SQE:
		return "SQE";
	case IBV_QPS_ERR:
		return "ERR";
	case IBV_QPS_UNKNOWN:
		break;
	}
	return "UNKNOWN";
}

/* Move the QP to s with the attributes and mask rdma_init_qp_attr gives for it. */
static int qp_to(struct conn *c, enum ibv_qp_state s)
{
	struct ibv_qp_attr a;
	int mask = 0, err;
	char what[64];

	memset(&a, 0, sizeof(a));
	a.qp_state = s;
	if (rdma_init_qp_attr(c->id, &a, &mask)) {
		snprintf(what, sizeof(what), "rdma_init_qp_attr(%s)", state_name(s));
		return fail_errno(what);
	}
	err = ibv_modify_qp(c->qp, &a, mask);
	if (err) {
		snprintf(what, sizeof(what), "ibv_modify_qp(%s)", state_name(s));
		return fail_code(what, err);
	}
	return 0;
}

static int qp_to_err(struct conn *c)
{
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_ERR};
	int err = ibv_modify_qp(c->qp, &a, IBV_QP_STATE);

	return err ? fail_code("ibv_modify_qp(ERR)", err) : 0;
}

static int post_recvs(struct conn *c)
{
	for (int i = 0; i < c->count; i++) {
		struct ibv_sge sge = {
			.addr = (uintptr_t)(c->buf + (size_t)i * (size_t)c->size),
			.length = (uint32_t)c->size,
			.lkey = c->mr->lkey,
		};
		struct ibv_recv_wr wr = {
			.wr_id = WRID_RECV | (uint64_t)i,
			.sg_list = &sge,
			.num_sge = 1,
		};
		struct ibv_recv_wr *bad;
		int err = ibv_post_recv(c->qp, &wr, &bad);

		if (err)
			return fail_code("ibv_post_recv", err);
	}
	return 0;
}

static int post_sends(struct conn *c)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)(c->buf + (size_t)c->count * (size_t)c->size),
		.length = (uint32_t)c->size,
		.lkey = c->mr->lkey,
	};

	for (int i = 0; i < c->count; i++) {
		struct ibv_send_wr wr = {
			.wr_id = (uint64_t)i,
			.sg_list = &sge,
			.num_sge = 1,
			.opcode = IBV_WR_SEND,
		};
		struct ibv_send_wr *bad;
		int err = ibv_post_send(c->qp, &wr, &bad);

		if (err)
			return fail_code("ibv_post_send", err);
	}
	return 0;
}

/* Take every completion the CQ holds; -1 on a failed one or an unexpected one. */
static int drain_cq(struct conn *c)
{
	struct ibv_wc wc[16];
	int n;

	while ((n = ibv_poll_cq(c->cq, 16, wc)) > 0) {
		for (int i = 0; i < n; i++) {
			bool recv = wc[i].wr_id & WRID_RECV;

			/* Of a failed completion only wr_id, status and vendor_err count. */
			if (wc[i].status != IBV_WC_SUCCESS) {
				fprintf(stderr,
					"ownqp: completion of %s %llu failed: %s (vendor error "
					"0x%x)\n",
					recv ? "receive" : "send",
					(unsigned long long)(wc[i].wr_id & ~WRID_RECV),
					ibv_wc_status_str(wc[i].status), wc[i].vendor_err);
				return -1;
			}
			if (recv && wc[i].opcode == IBV_WC_RECV) {
				if (wc[i].byte_len != (uint32_t)c->size) {
					fprintf(stderr,
						"ownqp: message %d has %u bytes, expected %d (the "
						"peer's -S must be ours)\n",
						c->recvs, wc[i].byte_len, c->size);
					return -1;
				}
				c->recvs++;
			} else if (!recv && wc[i].opcode == IBV_WC_SEND) {
				c->sends++;
			} else {
				fprintf(stderr, "ownqp: unexpected completion opcode %d\n",
					wc[i].opcode);
				return -1;
			}
		}
	}
	if (n < 0) {
		fprintf(stderr, "ownqp: ibv_poll_cq failed: %d\n", n);
		return -1;
	}
	return 0;
}

/*
 * Wait until `recvs` receives and `sends` sends have completed and, when disconnect, the
 * DISCONNECTED event has come (and only then is it welcome: any CM event before is a failure).
 * Within the run's deadline.
 */
static int wait_for(struct conn *c, int recvs, int sends, bool disconnect)
{
	for (;;) {
		struct pollfd p[2] = {
			{.fd = c->cch->fd, .events = POLLIN},
			{.fd = c->ch->fd, .events = POLLIN},
		};
		struct rdma_cm_event *ev;
		struct ibv_cq *cq;
		void *ctx;
		int n;

		if (drain_cq(c))
			return -1;
		if (c->recvs >= recvs && c->sends >= sends && (!disconnect || c->disconnected))
			return 0;
		n = poll(p, 2, left_ms());
		if (n < 0 && errno != EINTR)
			return fail_errno("poll");
		if (n == 0) {
			fprintf(stderr,
				"ownqp: timed out after %d s with %d of %d receives, %d of %d "
				"sends "
				"completed%s\n",
				RUN_LIMIT_MS / 1000, c->recvs, recvs, c->sends, sends,
				disconnect && !c->disconnected ? ", not disconnected" : "");
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
		if (ev->event == RDMA_CM_EVENT_DISCONNECTED && disconnect) {
			c->disconnected = true;
			rdma_ack_cm_event(ev);
			continue;
		}
		fprintf(stderr, "ownqp: %s (status %d) with %d of %d messages received\n",
			rdma_event_str(ev->event), ev->status, c->recvs, recvs);
		rdma_ack_cm_event(ev);
		return -1;
	}
}

/* ---- the two roles ------------------------------------------------------------------------ */

static int run_client(struct conn *c, const struct opts *o)
{
	struct rdma_conn_param cp;
	struct addrinfo *dst = NULL, *src = NULL;
	int err = -1;

	printf("ownqp: starting client\n");
	if (resolve(o->dst, o->port, false, &dst))
		return -1;
	if (o->bind && resolve(o->bind, "0", true, &src))
		goto out;
	if (rdma_create_id(c->ch, &c->id, c, RDMA_PS_TCP)) {
		fail_errno("rdma_create_id");
		goto out;
	}
	printf("ownqp: connecting\n");
	if (rdma_resolve_addr(c->id, src ? src->ai_addr : NULL, dst->ai_addr, RESOLVE_TIMEOUT_MS)) {
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

	if (conn_setup(c, c->id->verbs) || qp_to(c, IBV_QPS_INIT) || post_recvs(c))
		goto out;
	/* ucmatose's parameters (its server accepts them as they are), and the QP is ours. */
	memset(&cp, 0, sizeof(cp));
	cp.responder_resources = 1;
	cp.initiator_depth = 1;
	cp.retry_count = 5;
	cp.rnr_retry_count = 7;
	cp.qp_num = c->qp->qp_num;
	if (rdma_connect(c->id, &cp)) {
		fail_errno("rdma_connect");
		goto out;
	}
	/* With no QP on the id, the REP comes as CONNECT_RESPONSE, not ESTABLISHED. */
	if (expect_event(c->ch, RDMA_CM_EVENT_CONNECT_RESPONSE, NULL))
		goto out;
	if (qp_to(c, IBV_QPS_RTR) || qp_to(c, IBV_QPS_RTS))
		goto out;
	if (rdma_establish(c->id)) {
		fail_errno("rdma_establish");
		goto out;
	}
	printf("ownqp: QP 0x%06x (the application's) connected: INIT, RTR, RTS, RTU sent\n",
	       c->qp->qp_num);

	printf("receiving data transfers\n");
	if (wait_for(c, c->count, 0, false))
		goto out;
	printf("sending replies\n");
	if (post_sends(c) || wait_for(c, c->count, c->count, true))
		goto out;
	printf("data transfers complete\n");
	/* The peer disconnected once it had our messages: answer it (the DREP). */
	if (qp_to_err(c))
		goto out;
	if (rdma_disconnect(c->id)) {
		fail_errno("rdma_disconnect");
		goto out;
	}
	printf("disconnected\n");
	err = 0;
out:
	if (src)
		freeaddrinfo(src);
	freeaddrinfo(dst);
	return err;
}

static int run_server(struct conn *c, const struct opts *o)
{
	struct rdma_cm_id *listen_id = NULL;
	struct rdma_cm_event *ev;
	struct rdma_conn_param cp;
	struct addrinfo *ai = NULL;
	int err = -1;

	printf("ownqp: starting server\n");
	if (resolve(o->bind, o->port, true, &ai))
		return -1;
	if (rdma_create_id(c->ch, &listen_id, NULL, RDMA_PS_TCP)) {
		fail_errno("rdma_create_id");
		goto out;
	}
	if (rdma_bind_addr(listen_id, ai->ai_addr)) {
		fail_errno("rdma_bind_addr");
		goto out;
	}
	if (rdma_listen(listen_id, 1)) {
		fail_errno("rdma_listen");
		goto out;
	}
	if (expect_event(c->ch, RDMA_CM_EVENT_CONNECT_REQUEST, &ev))
		goto out;
	c->id = ev->id;
	/* The peer's offer, already seen from our side (its initiator depth is our responder
	 * resources): accepted as it is, as ucmatose's NULL conn_param does within the device's
	 * limits. */
	memset(&cp, 0, sizeof(cp));
	cp.responder_resources = ev->param.conn.responder_resources;
	cp.initiator_depth = ev->param.conn.initiator_depth;
	cp.rnr_retry_count = 7;
	rdma_ack_cm_event(ev);

	/* The QP is ours: INIT, RTR and RTS before the REP goes, as the kernel's cma_accept_ib. */
	if (conn_setup(c, c->id->verbs) || qp_to(c, IBV_QPS_INIT) || qp_to(c, IBV_QPS_RTR) ||
	    qp_to(c, IBV_QPS_RTS) || post_recvs(c)) {
		rdma_reject(c->id, NULL, 0);
		goto out;
	}
	cp.qp_num = c->qp->qp_num;
	if (rdma_accept(c->id, &cp)) {
		fail_errno("rdma_accept");
		goto out;
	}
	if (expect_event(c->ch, RDMA_CM_EVENT_ESTABLISHED, NULL))
		goto out;
	printf("ownqp: QP 0x%06x (the application's) connected: INIT, RTR, RTS, then accepted\n",
	       c->qp->qp_num);

	printf("initiating data transfers\n");
	if (post_sends(c))
		goto out;
	printf("completing sends\n");
	if (wait_for(c, 0, c->count, false))
		goto out;
	printf("receiving data transfers\n");
	if (wait_for(c, c->count, c->count, false))
		goto out;
	printf("data transfers complete\n");

	printf("ownqp: disconnecting\n");
	if (qp_to_err(c))
		goto out;
	if (rdma_disconnect(c->id)) {
		fail_errno("rdma_disconnect");
		goto out;
	}
	if (wait_for(c, c->count, c->count, true))
		goto out;
	printf("disconnected\n");
	err = 0;
out:
	if (listen_id)
		rdma_destroy_id(listen_id);
	freeaddrinfo(ai);
	return err;
}

static int number(const char *s, int min, int max, const char *what)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 0);
	if (errno || end == s || *end || v < min || v > max) {
		fprintf(stderr, "ownqp: %s '%s' is not a number in [%d, %d]\n", what, s, min, max);
		exit(1);
	}
	return (int)v;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: ownqp -s SERVER_ADDR [-b SOURCE_ADDR] [-p PORT] [-C MSGS] [-S SIZE]\n"
		"       ownqp [-b BIND_ADDR] [-p PORT] [-C MSGS] [-S SIZE]\n"
		"  client (-s) or server; the peer is ucmatose with -c 1 and the same -p, -C, -S\n"
		"  (defaults: port 7471, 10 messages of 100 bytes)\n");
	exit(1);
}

int main(int argc, char **argv)
{
	struct opts o = {.port = "7471", .count = 10, .size = 100};
	struct conn c;
	int op, err;

	setvbuf(stdout, NULL, _IOLBF, 0);
	while ((op = getopt(argc, argv, "s:b:p:C:S:")) != -1) {
		switch (op) {
		case 's':
			o.dst = optarg;
			break;
		case 'b':
			o.bind = optarg;
			break;
		case 'p':
			o.port = optarg;
			break;
		case 'C':
			o.count = number(optarg, 0, 4096, "message count");
			break;
		case 'S':
			o.size = number(optarg, 1, 1 << 20, "message size");
			break;
		default:
			usage();
		}
	}
	if (optind != argc)
		usage();

	deadline_ms = now_ms() + RUN_LIMIT_MS;
	memset(&c, 0, sizeof(c));
	c.count = o.count;
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
	err = o.dst ? run_client(&c, &o) : run_server(&c, &o);
	conn_free(&c);
	rdma_destroy_event_channel(c.ch);
	if (!err)
		printf("test complete\n");
	printf("return status %d\n", err ? 1 : 0);
	return err ? 1 : 0;
}
