/* SPDX-License-Identifier: MIT */
/*
 * uroce's librdmacm.so.1 through rdma-core's API (Debian's <rdma/rdma_cma.h>), client and server
 * in this process on 127.0.0.1 (the uroce_lo device; run in a network namespace of its own by
 * in_netns.sh when root):
 * - connect / accept / ESTABLISHED with private data both ways, a SEND and an RDMA WRITE over
 *   the connected QPs, disconnect (DISCONNECTED on both sides);
 * - rdma_reject with private data: REJECTED, status 28 (consumer defined), the data intact;
 * - a port nobody listens on: REJECTED, status 8 (invalid service ID), quickly;
 * - the port of a destroyed listener can be bound again while its accepted connection lives
 *   (as with the kernel, where passive ids own no port; perftest -R does this);
 * - 100 connections opened and closed: no fd, id or connection left behind;
 * - synchronous ids: rdma_create_ep, rdma_get_request, rdma_accept, rdma_connect in two threads;
 * - UD (RDMA_PS_UDP): SIDR, ESTABLISHED with the peer's QPN, Q_Key and AH, one datagram;
 * - a bind to 127.0.0.1, 127.0.0.2 or ::1 names no device (a wildcard, as on Linux), and the
 *   listener hears a client over uroce_lo;
 * - a synchronous id moved to a channel: its last event acked by the move, destroy returns;
 * - withdrawn events: a destroyed id's unread event leaves no count on the channel fd (a
 *   poller is not woken for nothing); a thread blocked in rdma_get_cm_event stays blocked when
 *   another thread destroys the id and the channel under it (rping's CM thread does this), it
 *   never returns EBADF;
 * - the channel fd: a blocking read interrupted by a signal gives EINTR, a non-blocking one
 *   EAGAIN, poll reports an event; rdma_migrate_id;
 * - bad input: wrong states, oversized private data, unknown options;
 * - dead handles (issue 17): after a rejected connection, every call on the destroyed id and
 *   channel, and on pointers never created, fails with EINVAL (id) or EBADF (channel) without
 *   reading them (under ASan: no use-after-free); a channel destroyed under a live id.
 * - devices open when an id needs them: a channel and a wildcard bind open none, a wildcard
 *   listen opens them all;
 * Every wait is a bounded poll on the channel fd.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <poll.h>
#include <pthread.h>
#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "eintr_alarm.h"
#include "host/config/rundir.h"
#include "host/config/tos.h"

#define WAIT_MS 10000

static const char *ip4 = "127.0.0.1";
static uint16_t next_port = 20000;

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static struct sockaddr_in sin4(uint16_t port)
{
	struct sockaddr_in s = {.sin_family = AF_INET, .sin_port = htons(port)};

	inet_pton(AF_INET, ip4, &s.sin_addr);
	return s;
}

/* The next event on ch, within WAIT_MS; NULL on timeout. */
static struct rdma_cm_event *get_event(struct rdma_event_channel *ch)
{
	struct pollfd p = {.fd = ch->fd, .events = POLLIN};
	struct rdma_cm_event *ev;

	if (poll(&p, 1, WAIT_MS) != 1)
		return NULL;
	if (rdma_get_cm_event(ch, &ev))
		return NULL;
	return ev;
}

/* Expect an event of type on ch; returns it (to ack) or NULL after a failed check. */
static struct rdma_cm_event *expect(struct rdma_event_channel *ch, enum rdma_cm_event_type type)
{
	struct rdma_cm_event *ev = get_event(ch);

	CHECKF(ev != NULL, "no event (waiting for %s)", rdma_event_str(type));
	if (!ev)
		return NULL;
	CHECKF(ev->event == type, "got %s (status %d), expected %s", rdma_event_str(ev->event),
	       ev->status, rdma_event_str(type));
	if (ev->event != type) {
		rdma_ack_cm_event(ev);
		return NULL;
	}
	return ev;
}

static void expect_ack(struct rdma_event_channel *ch, enum rdma_cm_event_type type)
{
	struct rdma_cm_event *ev = expect(ch, type);

	if (ev)
		rdma_ack_cm_event(ev);
}

/* The process's descriptors, or those whose target starts with prefix ("socket:"). */
static int count_fds_once(const char *prefix)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)) != NULL) {
		char path[300], target[64];
		ssize_t k;

		if (e->d_name[0] == '.')
			continue;
		if (!prefix) {
			n++;
			continue;
		}
		snprintf(path, sizeof(path), "/proc/self/fd/%s", e->d_name);
		k = readlink(path, target, sizeof(target) - 1);
		n += k >= (ssize_t)strlen(prefix) && strncmp(target, prefix, strlen(prefix)) == 0;
	}
	closedir(d);
	return n;
}

/* Progress threads open short-lived netlink sockets (neighbour lookups): the least of a few
 * counts is the process's own. */
static int count_fds(void)
{
	int min = count_fds_once(NULL);

	for (int i = 0; i < 20; i++) {
		int n = count_fds_once(NULL);

		if (n < min)
			min = n;
	}
	return min;
}

/* Every descriptor of the process and what it is, on stderr. */
static void list_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;

	if (!d)
		return;
	while ((e = readdir(d)) != NULL) {
		char path[300], target[256];
		ssize_t n;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/fd/%s", e->d_name);
		n = readlink(path, target, sizeof(target) - 1);
		target[n > 0 ? n : 0] = 0;
		fprintf(stderr, "  fd %s -> %s\n", e->d_name, target);
	}
	closedir(d);
}

/* The process's sockets (a device's context holds its UDP sockets). */
static int count_sockets(void)
{
	return count_fds_once("socket:");
}

/*
 * Devices open when an id needs them, as rdma-core's librdmacm: a channel, an id and a bind to a
 * wildcard address open none (a program that also opens the device with the verbs, as UCX does,
 * holds one context, not two); a wildcard listen opens every device. First of the tests: nothing
 * is open before it.
 */
static void test_lazy_devices(void)
{
	int before = count_sockets();
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct sockaddr_in a = sin4(next_port++);
	struct rdma_cm_id *id = NULL;

	CHECK(ch != NULL);
	CHECK_EQ(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP), 0);
	a.sin_addr.s_addr = htonl(INADDR_ANY);
	CHECK_EQ(rdma_bind_addr(id, (struct sockaddr *)&a), 0);
	CHECKF(count_sockets() == before, "a channel and a wildcard bind opened sockets: %d -> %d",
	       before, count_sockets());
	CHECK_EQ(rdma_listen(id, 4), 0);
	CHECKF(count_sockets() > before, "a wildcard listen opened no device (%d sockets)", before);
	CHECK_EQ(rdma_destroy_id(id), 0);
	rdma_destroy_event_channel(ch);
}

/* A QP with its own CQ on id (rdma_create_qp with the id's device's default PD). */
static void make_qp(struct rdma_cm_id *id, enum ibv_qp_type t)
{
	struct ibv_qp_init_attr a = {0};

	a.qp_type = t;
	a.cap.max_send_wr = 16;
	a.cap.max_recv_wr = 16;
	a.cap.max_send_sge = 1;
	a.cap.max_recv_sge = 1;
	a.sq_sig_all = 1;
	CHECKF(rdma_create_qp(id, NULL, &a) == 0, "rdma_create_qp: %s", strerror(errno));
}

static int poll_one(struct ibv_cq *cq, struct ibv_wc *wc)
{
	uint64_t end = now_ms() + WAIT_MS;
	int n;

	while ((n = ibv_poll_cq(cq, 1, wc)) == 0 && now_ms() < end)
		;
	return n;
}

/* An id of port space ps listening on a (backlog entries), events on ch. */
static struct rdma_cm_id *listener(struct rdma_event_channel *ch, enum rdma_port_space ps,
				   struct sockaddr_in *a, int backlog)
{
	struct rdma_cm_id *l = NULL;

	CHECK_EQ(rdma_create_id(ch, &l, NULL, ps), 0);
	CHECK_EQ(rdma_bind_addr(l, (struct sockaddr *)a), 0);
	CHECK_EQ(rdma_listen(l, backlog), 0);
	return l;
}

/* An id of port space ps (context ctx) with its address and route to a resolved. */
static struct rdma_cm_id *resolved(struct rdma_event_channel *ch, enum rdma_port_space ps,
				   struct sockaddr_in *a, void *ctx)
{
	struct rdma_cm_id *c = NULL;

	CHECK_EQ(rdma_create_id(ch, &c, ctx, ps), 0);
	CHECK_EQ(rdma_resolve_addr(c, NULL, (struct sockaddr *)a, 2000), 0);
	expect_ack(ch, RDMA_CM_EVENT_ADDR_RESOLVED);
	CHECK_EQ(rdma_resolve_route(c, 2000), 0);
	expect_ack(ch, RDMA_CM_EVENT_ROUTE_RESOLVED);
	return c;
}

/* Listener + client + server ids connected over RC; returns 0 when ESTABLISHED on both. */
struct pair {
	struct rdma_event_channel *sch, *cch;
	struct rdma_cm_id *listen, *srv, *cli;
	uint16_t port;
};

static int pair_connect(struct pair *p, bool qps, const char *req_pd, const char *rep_pd)
{
	struct sockaddr_in a;
	struct rdma_conn_param cp = {0};
	struct rdma_cm_event *ev;
	int ok = 0;

	memset(p, 0, sizeof(*p));
	p->port = next_port++;
	a = sin4(p->port);
	p->sch = rdma_create_event_channel();
	p->cch = rdma_create_event_channel();
	CHECK(p->sch && p->cch);
	if (!p->sch || !p->cch)
		return -1;
	p->listen = listener(p->sch, RDMA_PS_TCP, &a, 8);
	CHECK_EQ(ntohs(rdma_get_src_port(p->listen)), p->port);
	p->cli = resolved(p->cch, RDMA_PS_TCP, &a, p);
	CHECK(p->cli->verbs != NULL && p->cli->port_num == 1);
	CHECK(p->cli->route.num_paths == 1 && p->cli->route.path_rec != NULL);
	if (qps)
		make_qp(p->cli, IBV_QPT_RC);
	cp.responder_resources = 1;
	cp.initiator_depth = 1;
	cp.retry_count = 7;
	cp.rnr_retry_count = 7;
	cp.private_data = req_pd;
	cp.private_data_len = req_pd ? (uint8_t)(strlen(req_pd) + 1) : 0;
	CHECKF(rdma_connect(p->cli, &cp) == 0, "rdma_connect: %s", strerror(errno));

	ev = expect(p->sch, RDMA_CM_EVENT_CONNECT_REQUEST);
	if (!ev)
		return -1;
	p->srv = ev->id;
	CHECK(ev->listen_id == p->listen);
	CHECK(p->srv->verbs == p->cli->verbs); /* one shared context per device */
	CHECK_EQ(ntohs(rdma_get_src_port(p->srv)), p->port);
	CHECK_EQ(rdma_get_dst_port(p->srv), rdma_get_src_port(p->cli));
	CHECK(ev->param.conn.responder_resources == 1 && ev->param.conn.initiator_depth == 1);
	if (req_pd)
		CHECK(ev->param.conn.private_data_len >= strlen(req_pd) + 1 &&
		      !memcmp(ev->param.conn.private_data, req_pd, strlen(req_pd) + 1));
	rdma_ack_cm_event(ev);
	if (qps)
		make_qp(p->srv, IBV_QPT_RC);
	memset(&cp, 0, sizeof(cp));
	cp.responder_resources = 1;
	cp.initiator_depth = 1;
	cp.rnr_retry_count = 7;
	cp.private_data = rep_pd;
	cp.private_data_len = rep_pd ? (uint8_t)(strlen(rep_pd) + 1) : 0;
	CHECKF(rdma_accept(p->srv, &cp) == 0, "rdma_accept: %s", strerror(errno));
	ev = expect(p->cch, RDMA_CM_EVENT_ESTABLISHED);
	if (ev) {
		ok++;
		if (rep_pd)
			CHECK_MEM_EQ(ev->param.conn.private_data, rep_pd, strlen(rep_pd) + 1);
		rdma_ack_cm_event(ev);
	}
	ev = expect(p->sch, RDMA_CM_EVENT_ESTABLISHED);
	if (ev) {
		ok++;
		CHECK(ev->id == p->srv);
		rdma_ack_cm_event(ev);
	}
	return ok == 2 ? 0 : -1;
}

static void pair_close(struct pair *p)
{
	/* The client disconnects (DREQ); the server hears it and answers (DREP); then the client
	 * hears the answer. As with the kernel, the DREP waits for the server's rdma_disconnect. */
	if (p->cli)
		CHECK_EQ(rdma_disconnect(p->cli), 0);
	if (p->srv) {
		expect_ack(p->sch, RDMA_CM_EVENT_DISCONNECTED);
		CHECK_EQ(rdma_disconnect(p->srv), 0);
	}
	if (p->cli)
		expect_ack(p->cch, RDMA_CM_EVENT_DISCONNECTED);
	if (p->srv) {
		rdma_destroy_qp(p->srv);
		CHECK_EQ(rdma_destroy_id(p->srv), 0);
	}
	if (p->cli) {
		rdma_destroy_qp(p->cli);
		CHECK_EQ(rdma_destroy_id(p->cli), 0);
	}
	if (p->listen)
		CHECK_EQ(rdma_destroy_id(p->listen), 0);
	rdma_destroy_event_channel(p->sch);
	rdma_destroy_event_channel(p->cch);
}

static void test_connect_data(void)
{
	struct pair p;
	char buf_s[64] = {0}, buf_c[64] = "hello over uroce rdma_cm", wbuf[32] = {0};
	struct ibv_mr *mr_s, *mr_c, *mr_w;
	struct ibv_wc wc;

	if (pair_connect(&p, true, "request-data", "reply-data")) {
		pair_close(&p);
		return;
	}
	/* The RTR attributes a program that owns its QP gets: the RNR NAK timer is Linux's ib_cm
	 * value, 0 (655.36 ms), on both sides. */
	for (int side = 0; side < 2; side++) {
		struct ibv_qp_attr qa = {.qp_state = IBV_QPS_RTR};
		int mask = 0;

		CHECK_EQ(rdma_init_qp_attr(side ? p.srv : p.cli, &qa, &mask), 0);
		CHECK(mask & IBV_QP_MIN_RNR_TIMER);
		CHECK_EQ(qa.min_rnr_timer, 0);
	}
	/* SEND client -> server, and an RDMA WRITE into the server's wbuf. */
	mr_s = rdma_reg_msgs(p.srv, buf_s, sizeof(buf_s));
	mr_c = rdma_reg_msgs(p.cli, buf_c, sizeof(buf_c));
	mr_w = ibv_reg_mr(p.srv->qp->pd, wbuf, sizeof(wbuf),
			  IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	CHECK(mr_s && mr_c && mr_w);
	CHECK_EQ(rdma_post_recv(p.srv, NULL, buf_s, sizeof(buf_s), mr_s), 0);
	CHECK_EQ(rdma_post_send(p.cli, NULL, buf_c, sizeof(buf_c), mr_c, 0), 0);
	CHECK(poll_one(p.cli->send_cq, &wc) == 1 && wc.status == IBV_WC_SUCCESS);
	CHECK(poll_one(p.srv->recv_cq, &wc) == 1 && wc.status == IBV_WC_SUCCESS);
	CHECK(!strcmp(buf_s, buf_c));
	CHECK_EQ(rdma_post_write(p.cli, NULL, buf_c, 16, mr_c, 0, (uintptr_t)wbuf, mr_w->rkey), 0);
	CHECK(poll_one(p.cli->send_cq, &wc) == 1 && wc.status == IBV_WC_SUCCESS);
	CHECK_MEM_EQ(wbuf, buf_c, 16);
	rdma_dereg_mr(mr_s);
	rdma_dereg_mr(mr_c);
	ibv_dereg_mr(mr_w);
	pair_close(&p);
}

static void test_reject(void)
{
	struct rdma_event_channel *sch = rdma_create_event_channel(),
				  *cch = rdma_create_event_channel();
	struct rdma_cm_id *l, *c;
	struct sockaddr_in a = sin4(next_port++);
	struct rdma_conn_param cp = {.retry_count = 7};
	struct rdma_cm_event *ev;
	static const char why[] = "go away: server full";

	l = listener(sch, RDMA_PS_TCP, &a, 4);
	c = resolved(cch, RDMA_PS_TCP, &a, NULL);
	make_qp(c, IBV_QPT_RC);
	CHECK_EQ(rdma_connect(c, &cp), 0);
	ev = expect(sch, RDMA_CM_EVENT_CONNECT_REQUEST);
	if (ev) {
		struct rdma_cm_id *s = ev->id;

		rdma_ack_cm_event(ev);
		/* Too much private data for a REJ is refused. */
		{
			char big[200] = {0};

			CHECK(rdma_reject(s, big, sizeof(big)) == -1 && errno == EINVAL);
		}
		CHECK_EQ(rdma_reject(s, why, sizeof(why)), 0);
		ev = expect(cch, RDMA_CM_EVENT_REJECTED);
		if (ev) {
			CHECKF(ev->status == 28, "status %d", ev->status);
			CHECK(ev->param.conn.private_data_len >= sizeof(why) &&
			      !memcmp(ev->param.conn.private_data, why, sizeof(why)));
			rdma_ack_cm_event(ev);
		}
		CHECK_EQ(rdma_destroy_id(s), 0);
	}
	rdma_destroy_qp(c);
	CHECK_EQ(rdma_destroy_id(c), 0);
	CHECK_EQ(rdma_destroy_id(l), 0);
	rdma_destroy_event_channel(sch);
	rdma_destroy_event_channel(cch);
}

static void test_no_listener(void)
{
	struct rdma_event_channel *cch = rdma_create_event_channel();
	struct rdma_cm_id *c;
	struct sockaddr_in a = sin4(next_port++);
	struct rdma_conn_param cp = {.retry_count = 7};
	struct rdma_cm_event *ev;
	uint64_t t0;

	c = resolved(cch, RDMA_PS_TCP, &a, NULL);
	make_qp(c, IBV_QPT_RC);
	t0 = now_ms();
	CHECK_EQ(rdma_connect(c, &cp), 0);
	ev = expect(cch, RDMA_CM_EVENT_REJECTED);
	if (ev) {
		CHECKF(ev->status == 8, "status %d", ev->status);
		rdma_ack_cm_event(ev);
	}
	CHECKF(now_ms() - t0 < 1000, "REJ took %llu ms", (unsigned long long)(now_ms() - t0));
	rdma_destroy_qp(c);
	CHECK_EQ(rdma_destroy_id(c), 0);
	rdma_destroy_event_channel(cch);
}

/* A listener destroyed with a connection request nobody read: the client is rejected, and the
 * new id goes with the listener (ASan would see it otherwise). Destroying the new id before
 * acking its request does not wait: the request counts against the listener, as in rdma-core. */
static void test_unread_request(void)
{
	struct rdma_event_channel *sch = rdma_create_event_channel(),
				  *cch = rdma_create_event_channel();
	struct rdma_cm_id *l, *c;
	struct sockaddr_in a = sin4(next_port++);
	struct rdma_conn_param cp = {.retry_count = 7};
	struct pollfd p = {.fd = sch->fd, .events = POLLIN};
	struct rdma_cm_event *ev;

	l = listener(sch, RDMA_PS_TCP, &a, 4);
	c = resolved(cch, RDMA_PS_TCP, &a, NULL);
	make_qp(c, IBV_QPT_RC);
	CHECK_EQ(rdma_connect(c, &cp), 0);
	CHECK_EQ(poll(&p, 1, WAIT_MS), 1); /* the request is there, unread */
	CHECK_EQ(rdma_destroy_id(l), 0);
	ev = expect(cch, RDMA_CM_EVENT_REJECTED);
	if (ev)
		rdma_ack_cm_event(ev);
	rdma_destroy_qp(c);
	CHECK_EQ(rdma_destroy_id(c), 0);

	/* The new id destroyed before its request is acked. */
	a = sin4(next_port++);
	l = listener(sch, RDMA_PS_TCP, &a, 4);
	c = resolved(cch, RDMA_PS_TCP, &a, NULL);
	CHECK_EQ(rdma_connect(c, &cp), 0);
	ev = expect(sch, RDMA_CM_EVENT_CONNECT_REQUEST);
	if (ev) {
		CHECK_EQ(rdma_reject(ev->id, NULL, 0), 0);
		CHECK_EQ(rdma_destroy_id(ev->id), 0); /* before the ack: must not wait */
		rdma_ack_cm_event(ev);
	}
	expect_ack(cch, RDMA_CM_EVENT_REJECTED);
	CHECK_EQ(rdma_destroy_id(c), 0);
	CHECK_EQ(rdma_destroy_id(l), 0);
	rdma_destroy_event_channel(sch);
	rdma_destroy_event_channel(cch);
}

static void test_rebind_after_listener(void)
{
	struct pair p;
	struct rdma_cm_id *l2, *l3;
	struct sockaddr_in any = {.sin_family = AF_INET};
	struct sockaddr_in a;

	if (pair_connect(&p, true, NULL, NULL)) {
		pair_close(&p);
		return;
	}
	a = sin4(p.port);
	any.sin_port = htons(p.port);
	CHECK_EQ(rdma_create_id(p.sch, &l2, NULL, RDMA_PS_TCP), 0);
	CHECK_EQ(rdma_create_id(p.sch, &l3, NULL, RDMA_PS_TCP), 0);
	/* While the listener lives, its port is taken. */
	CHECK(rdma_bind_addr(l2, (struct sockaddr *)&any) == -1 && errno == EADDRINUSE);
	CHECK_EQ(rdma_destroy_id(p.listen), 0);
	p.listen = NULL;
	/* Then the accepted id (p.srv) does not hold it. */
	CHECKF(rdma_bind_addr(l2, (struct sockaddr *)&any) == 0, "bind: %s", strerror(errno));
	CHECK_EQ(rdma_listen(l2, 4), 0);
	CHECK(rdma_bind_addr(l3, (struct sockaddr *)&a) == -1 && errno == EADDRINUSE);
	CHECK_EQ(rdma_destroy_id(l3), 0);
	CHECK_EQ(rdma_destroy_id(l2), 0);
	pair_close(&p);
}

/*
 * A server slow to accept: with 50 ms CM tries and 2 retries, the client's REQ would be
 * UNREACHABLE after 150 ms; the server's CM answers the repeated REQ with the MRA it keeps
 * (CMA_CM_MRA_SETTING), so the client waits. Checked: no event at the client for 500 ms (a
 * bounded wait for something that must not happen), then the accept establishes.
 */
static void test_slow_accept(void)
{
	struct rdma_event_channel *sch = rdma_create_event_channel(),
				  *cch = rdma_create_event_channel();
	struct rdma_cm_id *l, *c;
	struct sockaddr_in a = sin4(next_port++);
	struct rdma_conn_param cp = {.retry_count = 7, .responder_resources = 1,
				     .initiator_depth = 1};
	struct pollfd p = {.fd = cch->fd, .events = POLLIN};
	struct rdma_cm_event *ev;

	setenv("UROCE_CM_TIMEOUT_MS", "50", 1);
	setenv("UROCE_CM_RETRIES", "2", 1);
	l = listener(sch, RDMA_PS_TCP, &a, 4);
	c = resolved(cch, RDMA_PS_TCP, &a, NULL);
	make_qp(c, IBV_QPT_RC);
	CHECK_EQ(rdma_connect(c, &cp), 0);
	ev = expect(sch, RDMA_CM_EVENT_CONNECT_REQUEST);
	CHECK_EQ(poll(&p, 1, 500), 0); /* no UNREACHABLE: the MRA holds the client */
	if (ev) {
		struct rdma_cm_id *s = ev->id;

		rdma_ack_cm_event(ev);
		make_qp(s, IBV_QPT_RC);
		CHECK_EQ(rdma_accept(s, &cp), 0);
		expect_ack(cch, RDMA_CM_EVENT_ESTABLISHED);
		expect_ack(sch, RDMA_CM_EVENT_ESTABLISHED);
		CHECK_EQ(rdma_disconnect(c), 0);
		expect_ack(sch, RDMA_CM_EVENT_DISCONNECTED);
		CHECK_EQ(rdma_disconnect(s), 0);
		expect_ack(cch, RDMA_CM_EVENT_DISCONNECTED);
		rdma_destroy_qp(s);
		CHECK_EQ(rdma_destroy_id(s), 0);
	}
	rdma_destroy_qp(c);
	CHECK_EQ(rdma_destroy_id(c), 0);
	CHECK_EQ(rdma_destroy_id(l), 0);
	rdma_destroy_event_channel(sch);
	rdma_destroy_event_channel(cch);
	unsetenv("UROCE_CM_TIMEOUT_MS");
	unsetenv("UROCE_CM_RETRIES");
}

static void test_loop(int n)
{
	int fds0 = -1;

	for (int i = 0; i < n; i++) {
		struct pair p;

		pair_connect(&p, true, NULL, NULL);
		pair_close(&p);
		if (i == 1)
			fds0 = count_fds(); /* after the first rounds opened the devices */
		if (check_failures)
			break;
	}
	{
		/* The progress threads' netlink sockets live longer under a sanitizer: look again
		 * for up to WAIT_MS before calling more descriptors a leak, then name them. */
		uint64_t end = now_ms() + WAIT_MS;
		int fds1 = count_fds();

		while (fds1 > fds0 && now_ms() < end)
			fds1 = count_fds();
		CHECKF(fds1 <= fds0, "fds: %d after, %d before", fds1, fds0);
		if (fds1 > fds0)
			list_fds();
	}
}

/* ---- synchronous ids (rdma_server / rdma_client style) ------------------------------------ */

static uint16_t sync_port;
static pthread_mutex_t sync_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t sync_cond = PTHREAD_COND_INITIALIZER;
static bool sync_listening;

static void *sync_server(void *arg)
{
	struct rdma_addrinfo hints = {0}, *res;
	struct ibv_qp_init_attr attr = {0};
	struct rdma_cm_id *l, *id;
	char port[8], buf[32] = {0};
	struct ibv_mr *mr;
	struct ibv_wc wc;

	(void)arg;
	snprintf(port, sizeof(port), "%u", sync_port);
	hints.ai_flags = RAI_PASSIVE;
	hints.ai_port_space = RDMA_PS_TCP;
	CHECK_EQ(rdma_getaddrinfo(ip4, port, &hints, &res), 0);
	attr.cap.max_send_wr = attr.cap.max_recv_wr = 4;
	attr.cap.max_send_sge = attr.cap.max_recv_sge = 1;
	attr.sq_sig_all = 1;
	CHECK_EQ(rdma_create_ep(&l, res, NULL, &attr), 0);
	rdma_freeaddrinfo(res);
	CHECK_EQ(rdma_listen(l, 0), 0);
	pthread_mutex_lock(&sync_lock);
	sync_listening = true;
	pthread_cond_signal(&sync_cond);
	pthread_mutex_unlock(&sync_lock);
	CHECK_EQ(rdma_get_request(l, &id), 0);
	CHECK(id->event && id->event->event == RDMA_CM_EVENT_CONNECT_REQUEST);
	CHECK(id->qp != NULL);
	mr = rdma_reg_msgs(id, buf, sizeof(buf));
	CHECK_EQ(rdma_post_recv(id, NULL, buf, sizeof(buf), mr), 0);
	CHECK_EQ(rdma_accept(id, NULL), 0);
	CHECK(rdma_get_recv_comp(id, &wc) == 1 && wc.status == IBV_WC_SUCCESS);
	CHECK(!strcmp(buf, "sync hello"));
	rdma_disconnect(id);
	rdma_dereg_mr(mr);
	rdma_destroy_ep(id);
	rdma_destroy_ep(l);
	return NULL;
}

static void test_sync(void)
{
	struct rdma_addrinfo hints = {0}, *res;
	struct ibv_qp_init_attr attr = {0};
	struct rdma_cm_id *id;
	char port[8], buf[32] = "sync hello";
	struct ibv_mr *mr;
	struct ibv_wc wc;
	pthread_t t;
	int r;

	sync_port = next_port++;
	pthread_create(&t, NULL, sync_server, NULL);
	snprintf(port, sizeof(port), "%u", sync_port);
	hints.ai_port_space = RDMA_PS_TCP;
	CHECK_EQ(rdma_getaddrinfo(ip4, port, &hints, &res), 0);
	attr.cap.max_send_wr = attr.cap.max_recv_wr = 4;
	attr.cap.max_send_sge = attr.cap.max_recv_sge = 1;
	attr.sq_sig_all = 1;
	CHECKF(rdma_create_ep(&id, res, NULL, &attr) == 0, "rdma_create_ep: %s", strerror(errno));
	rdma_freeaddrinfo(res);
	pthread_mutex_lock(&sync_lock);
	while (!sync_listening)
		pthread_cond_wait(&sync_cond, &sync_lock);
	pthread_mutex_unlock(&sync_lock);
	r = rdma_connect(id, NULL);
	CHECKF(r == 0, "rdma_connect: %s", strerror(errno));
	mr = rdma_reg_msgs(id, buf, sizeof(buf));
	CHECK_EQ(rdma_post_send(id, NULL, buf, sizeof(buf), mr, 0), 0);
	CHECK(rdma_get_send_comp(id, &wc) == 1 && wc.status == IBV_WC_SUCCESS);
	pthread_join(t, NULL);
	rdma_disconnect(id);
	rdma_dereg_mr(mr);
	rdma_destroy_ep(id);
}

/* ---- UD ------------------------------------------------------------------------------------ */

static void test_ud(void)
{
	struct rdma_event_channel *sch = rdma_create_event_channel(),
				  *cch = rdma_create_event_channel();
	struct rdma_cm_id *l, *c, *s = NULL;
	struct sockaddr_in a = sin4(next_port++);
	struct rdma_conn_param cp = {0};
	struct rdma_cm_event *ev;
	uint32_t qpn = 0, qkey = 0;
	struct ibv_ah_attr ah;

	l = listener(sch, RDMA_PS_UDP, &a, 4);
	c = resolved(cch, RDMA_PS_UDP, &a, NULL);
	/* As librdmacm: a resolved id has the device's PD before it has a QP (programs make
	 * their own QP or an AH on it), and the QP's PD once it has one. */
	CHECK(c->pd != NULL && c->pd->context == c->verbs);
	make_qp(c, IBV_QPT_UD);
	CHECK(c->qp && c->qp->state == IBV_QPS_RTS);
	CHECK(c->qp && c->pd == c->qp->pd);
	CHECK_EQ(rdma_connect(c, &cp), 0);
	ev = expect(sch, RDMA_CM_EVENT_CONNECT_REQUEST);
	if (ev) {
		s = ev->id;
		rdma_ack_cm_event(ev);
		CHECK(s->pd != NULL && s->pd->context == s->verbs);
		make_qp(s, IBV_QPT_UD);
		CHECK_EQ(rdma_accept(s, NULL), 0);
	}
	ev = expect(cch, RDMA_CM_EVENT_ESTABLISHED);
	if (ev) {
		qpn = ev->param.ud.qp_num;
		qkey = ev->param.ud.qkey;
		ah = ev->param.ud.ah_attr;
		rdma_ack_cm_event(ev);
		CHECK(s && qpn == s->qp->qp_num);
		CHECK_EQ(qkey, RDMA_UDP_QKEY);
		CHECK_EQ(ah.is_global, 1);
	}
	if (s && qpn) {
		char rbuf[40 + 32] = {0}, sbuf[32] = "datagram";
		struct ibv_mr *rmr = rdma_reg_msgs(s, rbuf, sizeof(rbuf)),
			      *smr = rdma_reg_msgs(c, sbuf, sizeof(sbuf));
		struct ibv_ah *h = ibv_create_ah(c->pd, &ah);
		struct ibv_sge sge = {(uintptr_t)sbuf, sizeof(sbuf), smr->lkey};
		struct ibv_send_wr wr = {0}, *bad;
		struct ibv_wc wc;

		CHECK(h != NULL);
		CHECK_EQ(rdma_post_recv(s, NULL, rbuf, sizeof(rbuf), rmr), 0);
		wr.sg_list = &sge;
		wr.num_sge = 1;
		wr.opcode = IBV_WR_SEND;
		wr.send_flags = IBV_SEND_SIGNALED;
		wr.wr.ud.ah = h;
		wr.wr.ud.remote_qpn = qpn;
		wr.wr.ud.remote_qkey = qkey;
		CHECK_EQ(ibv_post_send(c->qp, &wr, &bad), 0);
		CHECK(poll_one(c->send_cq, &wc) == 1 && wc.status == IBV_WC_SUCCESS);
		CHECK(poll_one(s->recv_cq, &wc) == 1 && wc.status == IBV_WC_SUCCESS);
		CHECK(!strcmp(rbuf + 40, "datagram"));
		ibv_destroy_ah(h);
		rdma_dereg_mr(rmr);
		rdma_dereg_mr(smr);
	}
	if (s) {
		rdma_destroy_qp(s);
		rdma_destroy_id(s);
	}
	rdma_destroy_qp(c);
	CHECK_EQ(rdma_destroy_id(c), 0);
	CHECK_EQ(rdma_destroy_id(l), 0);
	rdma_destroy_event_channel(sch);
	rdma_destroy_event_channel(cch);
}

/* ---- channels, migrate, bad input ------------------------------------------------------- */

static bool has_default_route(void)
{
	FILE *f = fopen("/proc/net/route", "r");
	char line[256];
	bool found = false;

	if (!f)
		return true;
	while (fgets(line, sizeof(line), f))
		if (strstr(line, "\t00000000\t") && !strstr(line, "Iface"))
			found = true;
	fclose(f);
	return found;
}

static void test_channel_and_errors(void)
{
	struct rdma_event_channel *ch = rdma_create_event_channel(), *ch2 = rdma_create_event_channel();
	struct rdma_cm_id *id;
	struct rdma_cm_event *ev;
	struct sockaddr_in a = sin4(next_port++);
	uint8_t tos = 32;
	int one = 1;

	CHECK(ch && ch2);
	/* Blocking, nothing queued: a signal whose handler lacks SA_RESTART ends the wait with
	 * EINTR, as rdma-core's write(2) to the ucma file (qperf ends timed waits this way). */
	eintr_alarm_start("rdma_get_cm_event");
	errno = 0;
	CHECK(rdma_get_cm_event(ch, &ev) == -1 && errno == EINTR);
	eintr_alarm_stop();
	fcntl(ch->fd, F_SETFL, fcntl(ch->fd, F_GETFL) | O_NONBLOCK);
	CHECK(rdma_get_cm_event(ch, &ev) == -1 && errno == EAGAIN);
	CHECK_EQ(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP), 0);
	CHECK(rdma_create_id(ch, NULL, NULL, RDMA_PS_TCP) == -1 && errno == EINVAL);
	CHECK(rdma_create_id(ch, &(struct rdma_cm_id *){NULL}, NULL, (enum rdma_port_space)77) == -1 &&
	      errno == EINVAL);
	/* Wrong states. */
	CHECK(rdma_resolve_route(id, 100) == -1 && errno == EINVAL);
	CHECK(rdma_connect(id, &(struct rdma_conn_param){0}) == -1 && errno == EINVAL);
	CHECK(rdma_accept(id, NULL) == -1 && errno == EINVAL);
	CHECK(rdma_disconnect(id) == -1 && errno == EINVAL);
	/* Options. */
	CHECK_EQ(rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_TOS, &tos, sizeof(tos)), 0);
	CHECK(rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_TOS, &tos, 4) == -1 &&
	      errno == EINVAL);
	CHECK(rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_REUSEADDR, &one, sizeof(one)) == 0);
	CHECK_EQ(rdma_set_option(id, RDMA_OPTION_ID, 99, &one, sizeof(one)), -1);
	/* An address no device holds. */
	{
		struct sockaddr_in bad = {.sin_family = AF_INET, .sin_port = htons(1)};

		inet_pton(AF_INET, "198.18.99.99", &bad.sin_addr);
		CHECK(rdma_bind_addr(id, (struct sockaddr *)&bad) == -1 && errno == EADDRNOTAVAIL);
	}
	/* No route (in a namespace of our own, with only lo): ADDR_ERROR, not a failed call. */
	if (!has_default_route()) {
		struct rdma_cm_id *r;
		struct sockaddr_in far = {.sin_family = AF_INET, .sin_port = htons(1)};

		inet_pton(AF_INET, "198.18.99.99", &far.sin_addr);
		CHECK_EQ(rdma_create_id(ch2, &r, NULL, RDMA_PS_TCP), 0);
		CHECK_EQ(rdma_resolve_addr(r, NULL, (struct sockaddr *)&far, 2000), 0);
		ev = expect(ch2, RDMA_CM_EVENT_ADDR_ERROR);
		if (ev) {
			CHECKF(ev->status == -ENETUNREACH, "status %d", ev->status);
			rdma_ack_cm_event(ev);
		}
		CHECK_EQ(rdma_destroy_id(r), 0);
	}
	/* Resolve, then the event is on ch: poll says so; migrate it to ch2 before reading. */
	CHECK_EQ(rdma_resolve_addr(id, NULL, (struct sockaddr *)&a, 2000), 0);
	{
		struct pollfd p = {.fd = ch->fd, .events = POLLIN};

		CHECK_EQ(poll(&p, 1, WAIT_MS), 1);
	}
	CHECK_EQ(rdma_migrate_id(id, ch2), 0);
	CHECK(id->channel == ch2);
	CHECK(rdma_get_cm_event(ch, &ev) == -1 && errno == EAGAIN);
	expect_ack(ch2, RDMA_CM_EVENT_ADDR_RESOLVED);
	CHECK_EQ(rdma_destroy_id(id), 0);
	rdma_destroy_event_channel(ch);
	rdma_destroy_event_channel(ch2);
	CHECK_EQ(strcmp(rdma_event_str(RDMA_CM_EVENT_ESTABLISHED), "RDMA_CM_EVENT_ESTABLISHED"), 0);
}

struct reader {
	struct rdma_event_channel *ch;
	pid_t tid;
};

/* One rdma_get_cm_event on r->ch, the event acked: 0, or the call's errno. */
static void *event_reader(void *arg)
{
	struct reader *r = arg;
	struct rdma_cm_event *ev;

	__atomic_store_n(&r->tid, (pid_t)syscall(SYS_gettid), __ATOMIC_RELEASE);
	if (rdma_get_cm_event(r->ch, &ev))
		return (void *)(intptr_t)errno;
	rdma_ack_cm_event(ev);
	return NULL;
}

/* Whether thread tid of this process is blocked in read(2) on fd (/proc's syscall file). */
static bool blocked_in_read(pid_t tid, int fd)
{
	char path[64], line[128];
	long nr = -1;
	unsigned long arg0 = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/task/%d/syscall", (int)tid);
	f = fopen(path, "r");
	if (!f)
		return false;
	if (!fgets(line, sizeof(line), f) || sscanf(line, "%ld %lx", &nr, &arg0) != 2)
		nr = -1;
	fclose(f);
	return nr == SYS_read && arg0 == (unsigned long)fd;
}

static void test_withdrawn_events(void)
{
	struct sockaddr_in a = sin4(next_port++);
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct pollfd p = {.events = POLLIN};
	struct rdma_cm_id *id;

	/* No reader: the destroyed id's queued event takes its count with it. */
	CHECK(ch != NULL);
	p.fd = ch->fd;
	CHECK_EQ(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP), 0);
	CHECK_EQ(rdma_resolve_addr(id, NULL, (struct sockaddr *)&a, 2000), 0);
	CHECK_EQ(poll(&p, 1, WAIT_MS), 1);
	CHECK_EQ(rdma_destroy_id(id), 0);
	CHECK_EQ(poll(&p, 1, 0), 0);
	rdma_destroy_event_channel(ch);

	/* A reader blocked on the channel while the id and the channel go, with the id's event
	 * racing them (read, or withdrawn after the reader took its count): the reader gets the
	 * event or stays in rdma_get_cm_event until cancelled, never EBADF, and the channel is
	 * freed with it (ASan: no leak, no use after free). */
	for (int i = 0; i < 300; i++) {
		struct reader r = {.ch = rdma_create_event_channel()};
		uint64_t end = now_ms() + WAIT_MS;
		pthread_t t;
		void *ret = NULL;
		pid_t tid = 0;

		CHECK(r.ch != NULL);
		if (!r.ch)
			return;
		CHECK_EQ(pthread_create(&t, NULL, event_reader, &r), 0);
		while (now_ms() < end &&
		       (!(tid = __atomic_load_n(&r.tid, __ATOMIC_ACQUIRE)) ||
			!blocked_in_read(tid, r.ch->fd)))
			sched_yield();
		CHECKF(tid && blocked_in_read(tid, r.ch->fd), "round %d: the reader never blocked",
		       i);
		CHECK_EQ(rdma_create_id(r.ch, &id, NULL, RDMA_PS_TCP), 0);
		CHECK_EQ(rdma_resolve_addr(id, NULL, (struct sockaddr *)&a, 2000), 0);
		CHECK_EQ(rdma_destroy_id(id), 0);
		rdma_destroy_event_channel(r.ch);
		pthread_cancel(t);
		pthread_join(t, &ret);
		CHECKF(ret == PTHREAD_CANCELED || ret == NULL, "round %d: the reader failed: %s", i,
		       strerror((int)(intptr_t)ret));
		if (ret != PTHREAD_CANCELED && ret != NULL)
			return;
	}
}

/* A synchronous id moved to a channel: its last event (ADDR_RESOLVED, in id->event) is acked by
 * the move, as rdma-core does, so that destroying the id does not wait for it. libfabric's
 * verbs provider makes its active endpoints this way (rdma_create_ep, then rdma_migrate_id to
 * its event queue's channel). */
static void test_migrate_sync(void)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct sockaddr_in a = sin4(next_port++);
	struct rdma_cm_id *id;

	CHECK(ch != NULL);
	CHECK_EQ(rdma_create_id(NULL, &id, NULL, RDMA_PS_TCP), 0);
	CHECK_EQ(rdma_resolve_addr(id, NULL, (struct sockaddr *)&a, 2000), 0);
	CHECK(id->event != NULL && id->event->event == RDMA_CM_EVENT_ADDR_RESOLVED);
	CHECK_EQ(rdma_migrate_id(id, ch), 0);
	CHECK(id->event == NULL && id->channel == ch);
	CHECK_EQ(rdma_destroy_id(id), 0); /* hangs when the event is still counted */
	rdma_destroy_event_channel(ch);
}

/* A bind to a loopback address names no device, as the kernel's cma_any_addr takes it for a
 * wildcard (and a device on lo is no exception): verbs stays NULL, the address and port are
 * kept, and the listener hears a client that reaches it over uroce_lo. libfabric's verbs
 * provider binds 127.0.0.1 to learn whether a device was named, and otherwise offers every
 * device with its interface's address. */
static void test_loopback_bind(void)
{
	struct rdma_event_channel *sch = rdma_create_event_channel(),
				  *cch = rdma_create_event_channel();
	struct sockaddr_in a = sin4(next_port++), other = a;
	struct sockaddr_in6 a6 = {.sin6_family = AF_INET6, .sin6_addr = IN6ADDR_LOOPBACK_INIT};
	struct rdma_cm_id *l, *l6, *c;
	struct rdma_cm_event *ev;

	CHECK(sch && cch);
	if (strncmp(ip4, "127.", 4))
		return; /* run against another address: not a loopback bind */
	l = listener(sch, RDMA_PS_TCP, &a, 4);
	CHECK(l->verbs == NULL && l->port_num == 0);
	CHECK_MEM_EQ(rdma_get_local_addr(l), &a, sizeof(a));
	/* Another loopback address is a wildcard too; its port is taken by the first. */
	inet_pton(AF_INET, "127.0.0.2", &other.sin_addr);
	CHECK_EQ(rdma_create_id(sch, &l6, NULL, RDMA_PS_TCP), 0);
	CHECK(rdma_bind_addr(l6, (struct sockaddr *)&other) == -1 && errno == EADDRINUSE);
	CHECK_EQ(rdma_destroy_id(l6), 0);
	CHECK_EQ(rdma_create_id(sch, &l6, NULL, RDMA_PS_TCP), 0);
	a6.sin6_port = htons(next_port++);
	CHECK_EQ(rdma_bind_addr(l6, (struct sockaddr *)&a6), 0);
	CHECK(l6->verbs == NULL);
	CHECK_EQ(rdma_destroy_id(l6), 0);

	c = resolved(cch, RDMA_PS_TCP, &a, NULL);
	CHECK(c->verbs != NULL); /* resolving 127.0.0.1 does name a device: uroce_lo */
	make_qp(c, IBV_QPT_RC);
	CHECKF(rdma_connect(c, &(struct rdma_conn_param){.retry_count = 7}) == 0, "rdma_connect: %s",
	       strerror(errno));
	ev = expect(sch, RDMA_CM_EVENT_CONNECT_REQUEST);
	if (ev) {
		CHECK(ev->listen_id == l && ev->id->verbs == c->verbs);
		CHECK_EQ(rdma_reject(ev->id, NULL, 0), 0);
		CHECK_EQ(rdma_destroy_id(ev->id), 0);
		rdma_ack_cm_event(ev);
	}
	expect_ack(cch, RDMA_CM_EVENT_REJECTED);
	rdma_destroy_qp(c);
	CHECK_EQ(rdma_destroy_id(c), 0);
	CHECK_EQ(rdma_destroy_id(l), 0);
	rdma_destroy_event_channel(sch);
	rdma_destroy_event_channel(cch);
}

/* Every exported call that takes an id, on id (dead): -1 and EINVAL, or 0 / nothing for the
 * calls that return a port or void; EOPNOTSUPP from the unsupported ones. dst is a freed
 * address: it must not be read either. */
static void check_dead_id(struct rdma_cm_id *id, struct sockaddr *dst, const char *what)
{
	struct ibv_qp_init_attr qa = {.qp_type = IBV_QPT_RC, .cap = {1, 1, 1, 1, 0}};
	struct ibv_qp_init_attr_ex qx = {.qp_type = IBV_QPT_RC, .cap = {1, 1, 1, 1, 0}};
	struct ibv_srq_init_attr sa = {.attr = {.max_wr = 1, .max_sge = 1}};
	struct ibv_srq_init_attr_ex sx = {.attr = {.max_wr = 1, .max_sge = 1}};
	struct rdma_cm_join_mc_attr_ex mx = {
		.comp_mask = RDMA_CM_JOIN_MC_ATTR_ADDRESS | RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS,
		.join_flags = RDMA_MC_JOIN_FLAG_FULLMEMBER,
		.addr = dst,
	};
	struct ibv_qp_attr qpa = {.qp_state = IBV_QPS_INIT};
	struct sockaddr_in any = {.sin_family = AF_INET};
	struct rdma_conn_param cp = {0};
	struct rdma_cm_id *got = NULL;
	struct ibv_ece ece = {0};
	uint8_t tos = 32;
	int mask = 0;

#define DEAD(call)                                                                                 \
	do {                                                                                       \
		errno = 0;                                                                         \
		int r_ = (call);                                                                   \
		CHECKF(r_ == -1 && errno == EINVAL, "%s: %s returned %d, errno %d (%s)", what,    \
		       #call, r_, errno, strerror(errno));                                        \
	} while (0)
	DEAD(rdma_resolve_addr(id, dst, dst, 2000));
	DEAD(rdma_resolve_addr(id, NULL, dst, 2000));
	DEAD(rdma_bind_addr(id, (struct sockaddr *)&any));
	DEAD(rdma_resolve_route(id, 2000));
	DEAD(rdma_create_qp(id, NULL, &qa));
	DEAD(rdma_create_qp_ex(id, &qx));
	DEAD(rdma_connect(id, &cp));
	DEAD(rdma_connect(id, NULL));
	DEAD(rdma_listen(id, 4));
	DEAD(rdma_accept(id, NULL));
	DEAD(rdma_reject(id, NULL, 0));
	DEAD(rdma_reject_ece(id, NULL, 0));
	DEAD(rdma_notify(id, IBV_EVENT_COMM_EST));
	DEAD(rdma_disconnect(id));
	DEAD(rdma_establish(id));
	DEAD(rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_TOS, &tos, sizeof(tos)));
	DEAD(rdma_init_qp_attr(id, &qpa, &mask));
	DEAD(rdma_migrate_id(id, NULL));
	DEAD(rdma_get_request(id, &got));
	DEAD(rdma_create_srq(id, NULL, &sa));
	DEAD(rdma_create_srq_ex(id, &sx));
	DEAD(rdma_destroy_id(id));
	DEAD(rdma_join_multicast(id, dst, NULL));
	DEAD(rdma_join_multicast_ex(id, &mx, NULL));
	DEAD(rdma_leave_multicast(id, dst));
#undef DEAD
	/* Not supported whatever the id (ece.c): they never look at it. */
	CHECK(rdma_set_local_ece(id, &ece) == -1 && errno == EOPNOTSUPP);
	CHECK(rdma_get_remote_ece(id, &ece) == -1 && errno == EOPNOTSUPP);
	CHECKF(rdma_get_src_port(id) == 0 && rdma_get_dst_port(id) == 0, "%s: a port", what);
	rdma_destroy_qp(id);
	rdma_destroy_srq(id);
	rdma_destroy_ep(id);
	CHECK(got == NULL);
}

/* Every exported call that takes a channel, on ch (dead): -1 and EBADF (nothing for void). live
 * is a live id, to migrate. */
static void check_dead_chan(struct rdma_event_channel *ch, struct rdma_cm_id *live,
			    const char *what)
{
	struct rdma_cm_id *id = NULL;
	struct rdma_cm_event *ev = NULL;

	errno = 0;
	CHECKF(rdma_get_cm_event(ch, &ev) == -1 && errno == EBADF && !ev, "%s: get_cm_event: %s",
	       what, strerror(errno));
	errno = 0;
	CHECKF(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP) == -1 && errno == EBADF && !id,
	       "%s: create_id: %s", what, strerror(errno));
	errno = 0;
	CHECKF(rdma_migrate_id(live, ch) == -1 && errno == EBADF && live->channel != ch,
	       "%s: migrate_id: %s", what, strerror(errno));
	rdma_destroy_event_channel(ch);
	rdma_destroy_event_channel(ch);
}

/* free(p), and p's value to pass on as a dead pointer (never read through); kept in a volatile
 * and the function out of line, so that gcc's -Wuse-after-free does not take passing it on for a
 * use. */
static __attribute__((noinline)) void *freed(void *p)
{
	volatile uintptr_t v = (uintptr_t)p;

	free(p);
	return (void *)v;
}

/*
 * perftest 4.5's -R client after a rejected connection (issue 17): it destroys its ids, its
 * channel and its addresses (rdma_cm_destroy_cma), then tries again with the same pointers.
 * Every call must fail without reading them; ASan reports any read of the freed memory.
 * Everything live is made first, so that malloc cannot hand a dead address to a new object
 * before the checks.
 */
/* The device's default TOS (configfs default_roce_tos, host/config/tos.h) goes into the path of
 * an id that sets none, when its route is resolved; RDMA_OPTION_ID_TOS overrides it. Only in a
 * run-time directory of the test's own (UROCE_RUNDIR, set by in_netns.sh). */
static void test_default_tos(void)
{
	struct sockaddr_in dst = sin4(next_port++);
	const char *dir = getenv(UROCE_RUNDIR_ENV);
	struct rdma_cm_id *id;
	uint8_t tos = 32;
	char dev[64];

	if (!dir || !dir[0]) {
		printf("default TOS: skipped (no UROCE_RUNDIR of the test's own)\n");
		return;
	}
	for (int own = 0; own < 2; own++) {
		CHECK_EQ(rdma_create_id(NULL, &id, NULL, RDMA_PS_TCP), 0);
		if (own)
			CHECK_EQ(rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_TOS, &tos,
						 sizeof(tos)), 0);
		CHECK_EQ(rdma_resolve_addr(id, NULL, (struct sockaddr *)&dst, 2000), 0);
		CHECK(id->verbs != NULL);
		if (!id->verbs) {
			rdma_destroy_id(id);
			return;
		}
		snprintf(dev, sizeof(dev), "%s", ibv_get_device_name(id->verbs->device));
		CHECK_EQ(uroce_tos_set(dir, dev, 1, 96), 0);
		CHECK_EQ(rdma_resolve_route(id, 2000), 0);
		CHECK(id->route.path_rec != NULL);
		if (id->route.path_rec)
			CHECK_EQ(id->route.path_rec->traffic_class, (own ? 32 : 96));
		CHECK_EQ(uroce_tos_set(dir, dev, 1, 0), 0);
		rdma_destroy_id(id);
	}
}

static void test_dead_handles(void)
{
	struct rdma_event_channel *lch = rdma_create_event_channel(), *cch, *zch;
	struct rdma_cm_id *live = NULL, *c, *sync = NULL, *z = NULL;
	struct sockaddr_in a = sin4(next_port++);
	struct sockaddr_in *dst = malloc(sizeof(*dst));
	struct rdma_conn_param cp = {.retry_count = 7};
	struct rdma_cm_event *ev;
	void *never = malloc(64); /* pointers that never were an id or a channel */

	CHECK(lch && dst && never);
	if (!lch || !dst || !never)
		return;
	CHECK_EQ(rdma_create_id(lch, &live, NULL, RDMA_PS_TCP), 0);
	CHECK_EQ(rdma_create_id(NULL, &sync, NULL, RDMA_PS_TCP), 0);
	*dst = a;

	/* Rejected: nobody listens on the port (REJ reason 8). */
	cch = rdma_create_event_channel();
	c = resolved(cch, RDMA_PS_TCP, dst, NULL);
	make_qp(c, IBV_QPT_RC);
	CHECK_EQ(rdma_connect(c, &cp), 0);
	ev = expect(cch, RDMA_CM_EVENT_REJECTED);
	if (ev) {
		CHECKF(ev->status == 8, "status %d", ev->status);
		rdma_ack_cm_event(ev);
	}
	/* rdma_cm_destroy_cma */
	rdma_destroy_qp(c);
	CHECK_EQ(rdma_destroy_id(c), 0);
	rdma_destroy_event_channel(cch);
	dst = freed(dst);
	CHECK_EQ(rdma_destroy_id(sync), 0);
	never = freed(never);

	/* The retry, and every other call. */
	check_dead_id(c, (struct sockaddr *)dst, "destroyed id");
	check_dead_id(sync, (struct sockaddr *)dst, "destroyed synchronous id");
	check_dead_id(never, (struct sockaddr *)dst, "id never created");
	check_dead_id(NULL, (struct sockaddr *)dst, "NULL id");
	check_dead_chan(cch, live, "destroyed channel");
	check_dead_chan(never, live, "channel never created");
	CHECK(live->channel == lch);

	/* The live ones still work. */
	CHECK_EQ(rdma_resolve_addr(live, NULL, (struct sockaddr *)&a, 2000), 0);
	expect_ack(lch, RDMA_CM_EVENT_ADDR_RESOLVED);
	CHECK_EQ(rdma_destroy_id(live), 0);

	/* A channel destroyed while an id uses it (rdma-core frees it; the kernel then destroys
	 * its ids): closed, so calls on it fail, but the id's use of it is safe until the id goes,
	 * which frees it (ASan: no leak, no use after free). */
	zch = rdma_create_event_channel();
	CHECK(zch && rdma_create_id(zch, &z, NULL, RDMA_PS_TCP) == 0);
	rdma_destroy_event_channel(zch);
	ev = NULL;
	CHECK(rdma_get_cm_event(zch, &ev) == -1 && errno == EBADF && !ev);
	CHECK_EQ(rdma_resolve_addr(z, NULL, (struct sockaddr *)&a, 2000), 0); /* event: nobody's */
	CHECK_EQ(rdma_destroy_id(z), 0);
	rdma_destroy_event_channel(lch);
}

int main(int argc, char **argv)
{
	if (argc > 1)
		ip4 = argv[1];
	next_port = (uint16_t)(20000 + (getpid() % 20000));
	test_lazy_devices();
	test_channel_and_errors();
	test_dead_handles();
	test_default_tos();
	test_connect_data();
	test_reject();
	test_no_listener();
	test_rebind_after_listener();
	test_loopback_bind();
	test_migrate_sync();
	test_withdrawn_events();
	test_ud();
	test_sync();
	test_unread_request();
	test_slow_accept();
	test_loop(100);
	return check_exit("rdmacm_api");
}
