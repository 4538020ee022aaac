/* SPDX-License-Identifier: MIT */
/*
 * fork() in a program that uses uroce's libibverbs and librdmacm, as rdma-core's own test suite
 * does (its rdma_cm tests fork a passive and an active process from a runner that has devices
 * open). On 127.0.0.1 (uroce_lo; a network namespace of its own when root, in_netns.sh):
 * - the parent holds an RC connection of its own (both ends) with SENDs of 4 KiB running in a
 *   thread, every byte checked, and a listener;
 * - once that traffic runs (its first message received), it forks children, one after the
 *   other. Not before: ASan's allocator has no fork handlers before LLVM 18 (Debian 12's gcc and
 *   clang), so a lock that the traffic thread holds while it starts (ASan's set-up of a thread
 *   allocates) stays held in the child, whose own threads then hang as they start. Each child
 *   scribbles over its copies of the parent's registered buffers, then connects to the parent's
 *   listener with a CM of its own, sends a message, disconnects and exits (exit(), so the
 *   library's exit handlers run in it), or ends with _exit() at once;
 * - the parent accepts each child, checks its message and sees it disconnect; its own
 *   connection's traffic stays byte-exact throughout, and works after the last child is gone.
 * Every wait is bounded: a child that hangs (the library's locks or threads inherited in a bad
 * state) is killed and fails the test.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <infiniband/verbs.h>
#include <poll.h>
#include <pthread.h>
#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "../child_end.h"

#define WAIT_MS	 30000 /* a lost CM message is resent after 4.6 s (the kernel's timing) */
#define PORT	 20500
#define MSG	 4096
#define NBUF	 16
#define CHILDREN 12

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static struct sockaddr_in sin4(uint16_t port)
{
	struct sockaddr_in s = {.sin_family = AF_INET, .sin_port = htons(port)};

	inet_pton(AF_INET, "127.0.0.1", &s.sin_addr);
	return s;
}

/* The next event on ch of type want within WAIT_MS, acked; false otherwise (said on stderr). */
static bool wait_event(struct rdma_event_channel *ch, enum rdma_cm_event_type want,
		       struct rdma_cm_id **id_out)
{
	struct pollfd p = {.fd = ch->fd, .events = POLLIN};
	struct rdma_cm_event *ev;

	if (poll(&p, 1, WAIT_MS) != 1 || rdma_get_cm_event(ch, &ev)) {
		fprintf(stderr, "pid %d: no event (waiting for %s)\n", getpid(),
			rdma_event_str(want));
		return false;
	}
	bool ok = ev->event == want;

	if (!ok)
		fprintf(stderr, "pid %d: %s (status %d), expected %s\n", getpid(),
			rdma_event_str(ev->event), ev->status, rdma_event_str(want));
	if (id_out)
		*id_out = ev->id;
	rdma_ack_cm_event(ev);
	return ok;
}

/* One completion from cq within WAIT_MS, successful; false otherwise. */
static bool wait_wc(struct ibv_cq *cq, struct ibv_wc *wc)
{
	uint64_t end = now_ms() + WAIT_MS;

	for (;;) {
		int n = ibv_poll_cq(cq, 1, wc);

		if (n == 1)
			return wc->status == IBV_WC_SUCCESS;
		if (n < 0 || now_ms() > end)
			return false;
	}
}

static void fill(uint8_t *p, uint64_t seq)
{
	for (size_t i = 0; i < MSG; i += 8) {
		uint64_t v = seq * 0x9E3779B97F4A7C15ull + i;

		memcpy(p + i, &v, 8);
	}
}

/* ---- the parent's own connection, with its traffic ----------------------------------------- */

struct own {
	struct rdma_cm_id *cli, *srv; /* the two ends, both in the parent */
	struct ibv_mr *smr, *rmr;
	uint8_t *sbuf, *rbuf; /* NBUF slots each */
	atomic_bool stop;
	uint64_t limit;		      /* stop posting at this many sent; 0: at stop only */
	uint64_t sent, received, bad; /* the traffic thread's */
	int running_fd; /* written to and closed at the first message received; -1: done */
};

static bool post_recv(struct own *o, unsigned slot)
{
	struct ibv_sge sge = {(uintptr_t)(o->rbuf + slot * MSG), MSG, o->rmr->lkey};
	struct ibv_recv_wr wr = {.wr_id = slot, .sg_list = &sge, .num_sge = 1}, *bad;

	return ibv_post_recv(o->srv->qp, &wr, &bad) == 0;
}

static bool post_send(struct own *o, uint64_t seq)
{
	unsigned slot = (unsigned)(seq % NBUF);
	struct ibv_sge sge = {(uintptr_t)(o->sbuf + slot * MSG), MSG, o->smr->lkey};
	struct ibv_send_wr wr = {.wr_id = seq, .sg_list = &sge, .num_sge = 1,
				 .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED},
			   *bad;

	fill(o->sbuf + slot * MSG, seq);
	return ibv_post_send(o->cli->qp, &wr, &bad) == 0;
}

/* SENDs from cli to srv, at most NBUF/2 outstanding, each received message checked. */
static void *traffic(void *arg)
{
	struct own *o = arg;
	uint8_t want[MSG];
	struct ibv_wc wc[8];
	uint64_t completed = o->sent, last = now_ms();

	for (;;) {
		bool posting = !atomic_load(&o->stop) && (!o->limit || o->sent < o->limit);

		if (!posting && completed == o->sent && o->received == o->sent)
			break;
		if (posting && o->sent - completed < NBUF / 2) {
			if (!post_send(o, o->sent))
				break;
			o->sent++;
		}
		int n = ibv_poll_cq(o->cli->send_cq, 8, wc);

		for (int i = 0; i < n; i++) {
			completed++;
			o->bad += wc[i].status != IBV_WC_SUCCESS;
		}
		n = ibv_poll_cq(o->srv->recv_cq, 8, wc);
		for (int i = 0; i < n; i++) {
			unsigned slot = (unsigned)wc[i].wr_id;

			fill(want, o->received);
			o->bad += wc[i].status != IBV_WC_SUCCESS || wc[i].byte_len != MSG ||
				  memcmp(o->rbuf + slot * MSG, want, MSG) != 0;
			o->received++;
			if (!post_recv(o, slot))
				o->bad++;
		}
		if (o->received && o->running_fd >= 0) {
			o->bad += write(o->running_fd, "r", 1) != 1;
			close(o->running_fd);
			o->running_fd = -1;
		}
		if (n > 0 || (completed == o->sent && o->received == o->sent))
			last = now_ms();
		else if (now_ms() - last > WAIT_MS) {
			fprintf(stderr, "parent: traffic stalled (%llu sent, %llu completed)\n",
				(unsigned long long)o->sent, (unsigned long long)completed);
			o->bad++;
			break;
		}
	}
	return NULL;
}

static struct ibv_qp_init_attr qp_attr(void)
{
	return (struct ibv_qp_init_attr){
		.qp_type = IBV_QPT_RC,
		.cap = {.max_send_wr = NBUF, .max_recv_wr = NBUF, .max_send_sge = 1,
			.max_recv_sge = 1},
	};
}

/* The listener on PORT, and the parent's connection to it (o->cli to o->srv). */
static bool own_connect(struct rdma_event_channel *lch, struct rdma_event_channel *cch,
			struct rdma_cm_id **listener, struct own *o)
{
	struct sockaddr_in a = sin4(PORT);
	struct ibv_qp_init_attr qa = qp_attr();
	struct rdma_conn_param cp = {.responder_resources = 1, .initiator_depth = 1,
				     .retry_count = 7, .rnr_retry_count = 7};

	if (rdma_create_id(lch, listener, NULL, RDMA_PS_TCP) ||
	    rdma_bind_addr(*listener, (struct sockaddr *)&a) || rdma_listen(*listener, 8) ||
	    rdma_create_id(cch, &o->cli, NULL, RDMA_PS_TCP) ||
	    rdma_resolve_addr(o->cli, NULL, (struct sockaddr *)&a, WAIT_MS) ||
	    !wait_event(cch, RDMA_CM_EVENT_ADDR_RESOLVED, NULL) ||
	    rdma_resolve_route(o->cli, WAIT_MS) ||
	    !wait_event(cch, RDMA_CM_EVENT_ROUTE_RESOLVED, NULL) ||
	    rdma_create_qp(o->cli, NULL, &qa) || rdma_connect(o->cli, &cp) ||
	    !wait_event(lch, RDMA_CM_EVENT_CONNECT_REQUEST, &o->srv))
		return false;
	qa = qp_attr();
	o->sbuf = calloc(NBUF, MSG);
	o->rbuf = calloc(NBUF, MSG);
	if (rdma_create_qp(o->srv, NULL, &qa) || !o->sbuf || !o->rbuf)
		return false;
	o->smr = ibv_reg_mr(o->cli->pd, o->sbuf, NBUF * MSG, IBV_ACCESS_LOCAL_WRITE);
	o->rmr = ibv_reg_mr(o->srv->pd, o->rbuf, NBUF * MSG, IBV_ACCESS_LOCAL_WRITE);
	if (!o->smr || !o->rmr)
		return false;
	for (unsigned i = 0; i < NBUF; i++)
		if (!post_recv(o, i))
			return false;
	return rdma_accept(o->srv, &cp) == 0 &&
	       wait_event(cch, RDMA_CM_EVENT_ESTABLISHED, NULL) &&
	       wait_event(lch, RDMA_CM_EVENT_ESTABLISHED, NULL);
}

/* ---- a child --------------------------------------------------------------------------------- */

/* Connect to the parent's listener with this process's own CM, send "child <n>", disconnect. */
static int child_main(struct own *o, int n)
{
	struct sockaddr_in a = sin4(PORT);
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id;
	struct ibv_qp_init_attr qa = qp_attr();
	struct rdma_conn_param cp = {.retry_count = 7, .rnr_retry_count = 7};
	char msg[64];
	struct ibv_mr *mr;
	struct ibv_wc wc;

	/* The child's copies of the parent's registered buffers are its own memory. */
	memset(o->sbuf, 0xA5, NBUF * MSG);
	memset(o->rbuf, 0x5A, NBUF * MSG);
	if (n % 3 == 2)
		_exit(0); /* gone at once, without the library's exit handlers */
	snprintf(msg, sizeof(msg), "child %d", n);
	ch = rdma_create_event_channel();
	if (!ch || rdma_create_id(ch, &id, NULL, RDMA_PS_TCP) ||
	    rdma_resolve_addr(id, NULL, (struct sockaddr *)&a, WAIT_MS) ||
	    !wait_event(ch, RDMA_CM_EVENT_ADDR_RESOLVED, NULL) || rdma_resolve_route(id, WAIT_MS) ||
	    !wait_event(ch, RDMA_CM_EVENT_ROUTE_RESOLVED, NULL) ||
	    rdma_create_qp(id, NULL, &qa) || rdma_connect(id, &cp) ||
	    !wait_event(ch, RDMA_CM_EVENT_ESTABLISHED, NULL))
		return 2;
	mr = ibv_reg_mr(id->pd, msg, sizeof(msg), IBV_ACCESS_LOCAL_WRITE);
	if (!mr || rdma_post_send(id, NULL, msg, sizeof(msg), mr, IBV_SEND_SIGNALED) ||
	    !wait_wc(id->send_cq, &wc))
		return 3;
	if (rdma_disconnect(id) || !wait_event(ch, RDMA_CM_EVENT_DISCONNECTED, NULL))
		return 4;
	ibv_dereg_mr(mr);
	rdma_destroy_qp(id);
	rdma_destroy_id(id);
	rdma_destroy_event_channel(ch);
	return 0;
}

/* ---- the parent's side of a child's connection ---------------------------------------------- */

/* Accept child n's connection on lch, check its message, see it disconnect. */
static bool serve_child(struct rdma_event_channel *lch, int n)
{
	struct ibv_qp_init_attr qa = qp_attr();
	struct rdma_conn_param cp = {.retry_count = 7, .rnr_retry_count = 7};
	struct rdma_cm_id *id;
	char buf[64], want[64];
	struct ibv_mr *mr;
	struct ibv_wc wc;
	bool ok;

	if (!wait_event(lch, RDMA_CM_EVENT_CONNECT_REQUEST, &id))
		return false;
	if (rdma_create_qp(id, NULL, &qa))
		return false;
	mr = ibv_reg_mr(id->pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
	ok = mr && rdma_post_recv(id, NULL, buf, sizeof(buf), mr) == 0 &&
	     rdma_accept(id, &cp) == 0 && wait_event(lch, RDMA_CM_EVENT_ESTABLISHED, NULL) &&
	     wait_wc(id->recv_cq, &wc);
	snprintf(want, sizeof(want), "child %d", n);
	CHECKF(ok && strcmp(buf, want) == 0, "child %d's message: %s", n, ok ? buf : "(none)");
	ok = ok && wait_event(lch, RDMA_CM_EVENT_DISCONNECTED, NULL);
	if (mr)
		ibv_dereg_mr(mr);
	rdma_destroy_qp(id);
	rdma_destroy_id(id);
	return ok;
}

/* Wait for child pid within WAIT_MS; kill it (a hang) otherwise. Its exit status, or -1. */
static int reap(pid_t pid)
{
	int st;

	if (child_end(pid, WAIT_MS, &st)) {
		fprintf(stderr, "child %d hangs: killed\n", pid);
		return -1;
	}
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

int main(void)
{
	struct rdma_event_channel *lch = rdma_create_event_channel();
	struct rdma_event_channel *cch = rdma_create_event_channel();
	struct rdma_cm_id *listener = NULL;
	static struct own o;
	pthread_t t;
	int running[2];

	if (!lch || !cch || !own_connect(lch, cch, &listener, &o) || pipe(running)) {
		fprintf(stderr, "set-up failed (is uroce_lo there?)\n");
		return 1;
	}
	o.running_fd = running[1];
	pthread_create(&t, NULL, traffic, &o);
	struct pollfd rp = {.fd = running[0], .events = POLLIN};

	CHECKF(poll(&rp, 1, WAIT_MS) == 1, "the parent's traffic runs before the first fork");
	close(running[0]);
	for (int n = 0; n < CHILDREN; n++) {
		pid_t pid = fork();

		if (pid == 0) {
			int r = child_main(&o, n);

			if (r)
				fprintf(stderr, "child %d: failed at step %d\n", n, r);
			exit(r);
		}
		CHECK(pid > 0);
		if (pid < 0)
			break;
		if (n % 3 != 2)
			CHECKF(serve_child(lch, n), "the parent served child %d", n);
		CHECKF(reap(pid) == 0, "child %d ended well", n);
	}
	atomic_store(&o.stop, true);
	pthread_join(t, NULL);
	CHECKF(o.bad == 0 && o.received == o.sent && o.sent > 0,
	       "parent's traffic during the forks: %llu sent, %llu received, %llu bad",
	       (unsigned long long)o.sent, (unsigned long long)o.received,
	       (unsigned long long)o.bad);
	/* The parent's connection outlived its children. */
	uint64_t before = o.sent;

	atomic_store(&o.stop, false);
	o.limit = before + 100;
	pthread_create(&t, NULL, traffic, &o);
	pthread_join(t, NULL);
	CHECKF(o.bad == 0 && o.received == o.limit, "parent's traffic after the children: %llu "
	       "received of %llu, %llu bad", (unsigned long long)o.received,
	       (unsigned long long)o.limit, (unsigned long long)o.bad);
	/* DREQ, then the passive side's DREP. */
	CHECK(rdma_disconnect(o.cli) == 0);
	CHECK(wait_event(lch, RDMA_CM_EVENT_DISCONNECTED, NULL));
	CHECK(rdma_disconnect(o.srv) == 0);
	CHECK(wait_event(cch, RDMA_CM_EVENT_DISCONNECTED, NULL));
	printf("%d children forked during %llu checked SENDs of %d bytes\n", CHILDREN,
	       (unsigned long long)o.sent, MSG);
	return check_exit("rdmacm_fork");
}
