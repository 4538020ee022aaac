/* SPDX-License-Identifier: MIT */
/*
 * uroce_storm: rdma_cm connection storms (storm.sh, issue 21 item 4). An ordinary rdma-core
 * program: built against the system's librdmacm and libibverbs, run over uroce under
 * `uroce run`.
 *
 *   uroce_storm server ADDR PORT [HOLD]
 *   uroce_storm client ADDR PORT CYCLES CLIENT-ID [CONNS]
 *
 * server: listens on ADDR:PORT and accepts forever, one thread, every connection on one shared
 *   CQ. Every message it receives is checked (header and every payload byte, see fill()) and
 *   echoed back. A message may ask the server to disconnect first once its echo is acked
 *   (F_SRV_DISC). HOLD > 0: messages flagged F_HOLD are answered, once HOLD connections have
 *   all their messages echoed at the same time, by a RELEASE message on each of them, so
 *   that HOLD connections are provably open at once. SIGUSR1 prints one "server:" line of
 *   counts (see report()); SIGTERM prints it and exits 0 (1 when a message was bad or a
 *   connection event was an error).
 * client: CYCLES times: CONNS connections (1 by default), each with its own event channel,
 *   id, QP and CQs (rdma_create_qp makes them) and registered buffer; NMSG messages of
 *   varying length sent on each and their echoes checked; with CONNS > 1 the client waits for
 *   the server's RELEASE on each; then every connection is disconnected (by the server on odd
 *   cycles when CONNS is 1) and everything destroyed. Prints one "client:" line of counts and
 *   the cycle rate; exits 0 when every cycle succeeded.
 *
 * No wait is unbounded: every event and completion is waited for with poll() and a timeout
 * (WAIT_MS), and a timeout counts as an error of the cycle.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#define NMSG	  4	/* messages per connection and cycle */
#define MSG_MAX	  4096	/* largest message */
#define MAGIC	  0x53544f52u
#define F_SRV_DISC 1u	/* the server disconnects after echoing the last message */
#define F_HOLD	  2u	/* wait for RELEASE (server HOLD mode) */
#define F_RELEASE 4u	/* the server's RELEASE message */
#define WAIT_MS	  20000 /* longest wait for one event or completion */
#define MAXCONN	  1024	/* server: connections open at once */
#define MAXCLI	  64	/* client: connections per cycle */

struct hdr {
	uint32_t magic, client, cycle, seq, len, flags;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint32_t msg_len(uint32_t cycle, uint32_t seq)
{
	return (uint32_t)sizeof(struct hdr) + (cycle * 977u + seq * 131u) % (MSG_MAX - 64);
}

/* The payload: a function of (client, cycle, seq, offset), so that a byte from another
 * connection, cycle or message, or from the wrong place, does not pass. */
static uint8_t pattern(const struct hdr *h, uint32_t i)
{
	uint32_t x = h->client * 0x9E3779B1u ^ h->cycle * 0x85EBCA77u ^ h->seq * 0xC2B2AE3Du ^ i;

	x ^= x >> 15;
	x *= 0x2C1B3C6Du;
	x ^= x >> 12;
	return (uint8_t)x;
}

static void fill(uint8_t *p, uint32_t client, uint32_t cycle, uint32_t seq, uint32_t flags)
{
	struct hdr h = {MAGIC, client, cycle, seq, msg_len(cycle, seq), flags};

	memcpy(p, &h, sizeof(h));
	for (uint32_t i = sizeof(h); i < h.len; i++)
		p[i] = pattern(&h, i);
}

/* 0 when p (len bytes received) is a whole, intact message; h gets its header. */
static int check(const uint8_t *p, uint32_t len, struct hdr *h)
{
	if (len < sizeof(*h))
		return -1;
	memcpy(h, p, sizeof(*h));
	if (h->magic != MAGIC || h->len != len || h->seq >= NMSG ||
	    len != msg_len(h->cycle, h->seq))
		return -1;
	for (uint32_t i = sizeof(*h); i < len; i++)
		if (p[i] != pattern(h, i))
			return -1;
	return 0;
}

/* ---- server ------------------------------------------------------------------------------- */

struct sconn {
	struct rdma_cm_id *id;
	struct ibv_mr *mr;
	uint32_t gen;	 /* in every wr_id: completions of an earlier connection in the slot
			  * are told apart */
	unsigned echoed; /* messages of this connection echoed (send completed) */
	bool srv_disc, hold, held, disconnecting;
	uint8_t rbuf[NMSG][MSG_MAX];
	uint8_t sbuf[NMSG + 1][MSG_MAX];
};

static struct {
	struct ibv_cq *cq;
	struct ibv_comp_channel *cch;
	struct sconn *c[MAXCONN];
	uint32_t gen;
	unsigned hold, held;
	/* counts */
	uint64_t requests, established, disconnected, msgs, bad, errors, live, peak, released;
} S;

static uint64_t wrid(unsigned slot, uint32_t gen, unsigned kind, unsigned i)
{
	return (uint64_t)gen << 32 | (uint64_t)slot << 16 | kind << 8 | i;
}

static void report(void)
{
	printf("server: requests %llu established %llu disconnected %llu messages %llu bad %llu "
	       "errors %llu live %llu peak %llu released %llu\n",
	       (unsigned long long)S.requests, (unsigned long long)S.established,
	       (unsigned long long)S.disconnected, (unsigned long long)S.msgs,
	       (unsigned long long)S.bad, (unsigned long long)S.errors,
	       (unsigned long long)S.live, (unsigned long long)S.peak,
	       (unsigned long long)S.released);
	fflush(stdout);
}

static int slot_of(struct rdma_cm_id *id)
{
	for (int i = 0; i < MAXCONN; i++)
		if (S.c[i] && S.c[i]->id == id)
			return i;
	return -1;
}

static void sconn_free(int slot)
{
	struct sconn *c = S.c[slot];

	S.c[slot] = NULL;
	if (c->held)
		S.held--;
	if (c->id->qp)
		rdma_destroy_qp(c->id);
	if (c->mr)
		rdma_dereg_mr(c->mr);
	rdma_destroy_id(c->id);
	free(c);
	S.live--;
}

static int post_echo(int slot, unsigned i, const void *msg, uint32_t len)
{
	struct sconn *c = S.c[slot];
	struct ibv_sge sge = {(uintptr_t)c->sbuf[i], len, c->mr->lkey};
	struct ibv_send_wr wr = {.wr_id = wrid((unsigned)slot, c->gen, 1, i), .sg_list = &sge,
				 .num_sge = 1, .opcode = IBV_WR_SEND,
				 .send_flags = IBV_SEND_SIGNALED}, *bad;

	if (msg != c->sbuf[i])
		memcpy(c->sbuf[i], msg, len);
	return ibv_post_send(c->id->qp, &wr, &bad);
}

static void connect_request(struct rdma_cm_id *id)
{
	struct ibv_qp_init_attr qa = {.qp_type = IBV_QPT_RC,
				      .cap = {.max_send_wr = NMSG + 1, .max_recv_wr = NMSG,
					      .max_send_sge = 1, .max_recv_sge = 1}};
	struct rdma_conn_param cp = {.responder_resources = 1, .initiator_depth = 1,
				     .retry_count = 7, .rnr_retry_count = 7};
	struct sconn *c;
	int slot = -1;

	S.requests++;
	if (!S.cq) {
		S.cch = ibv_create_comp_channel(id->verbs);
		S.cq = S.cch ? ibv_create_cq(id->verbs, MAXCONN * (2 * NMSG + 1), NULL, S.cch, 0)
			     : NULL;
		if (!S.cq || ibv_req_notify_cq(S.cq, 0)) {
			perror("server: CQ");
			exit(1);
		}
	}
	for (int i = 0; i < MAXCONN && slot < 0; i++)
		if (!S.c[i])
			slot = i;
	c = slot < 0 ? NULL : calloc(1, sizeof(*c));
	if (!c) {
		fprintf(stderr, "server: no room for a connection: rejecting it\n");
		S.errors++;
		rdma_reject(id, NULL, 0);
		rdma_destroy_id(id);
		return;
	}
	c->id = id;
	c->gen = ++S.gen;
	S.c[slot] = c;
	S.live++;
	if (S.live > S.peak)
		S.peak = S.live;
	qa.send_cq = qa.recv_cq = S.cq;
	if (rdma_create_qp(id, NULL, &qa)) {
		perror("server: rdma_create_qp");
		goto err;
	}
	c->mr = ibv_reg_mr(id->qp->pd, c->rbuf, sizeof(c->rbuf) + sizeof(c->sbuf),
			   IBV_ACCESS_LOCAL_WRITE);
	if (!c->mr) {
		perror("server: ibv_reg_mr");
		goto err;
	}
	for (unsigned i = 0; i < NMSG; i++) {
		struct ibv_sge sge = {(uintptr_t)c->rbuf[i], MSG_MAX, c->mr->lkey};
		struct ibv_recv_wr wr = {.wr_id = wrid((unsigned)slot, c->gen, 0, i),
					 .sg_list = &sge, .num_sge = 1}, *bad;

		if (ibv_post_recv(id->qp, &wr, &bad)) {
			perror("server: ibv_post_recv");
			goto err;
		}
	}
	if (rdma_accept(id, &cp)) {
		perror("server: rdma_accept");
		goto err;
	}
	return;
err:
	S.errors++;
	rdma_reject(id, NULL, 0);
	sconn_free(slot);
}

/* Every held connection has its messages echoed: RELEASE them all. */
static void release_held(void)
{
	for (int i = 0; i < MAXCONN; i++) {
		struct sconn *c = S.c[i];
		struct hdr h = {MAGIC, 0, 0, 0, sizeof(h), F_RELEASE};

		if (!c || !c->held)
			continue;
		c->held = false;
		S.held--;
		if (post_echo(i, NMSG, &h, sizeof(h))) {
			perror("server: RELEASE");
			S.errors++;
		}
	}
	S.released++;
}

static void completion(const struct ibv_wc *wc)
{
	unsigned slot = (unsigned)(wc->wr_id >> 16) & 0xFFFF, kind = (unsigned)(wc->wr_id >> 8) & 0xFF;
	unsigned i = (unsigned)wc->wr_id & 0xFF;
	struct sconn *c = slot < MAXCONN ? S.c[slot] : NULL;
	struct hdr h;

	if (!c || c->gen != (uint32_t)(wc->wr_id >> 32) || c->disconnecting ||
	    wc->status == IBV_WC_WR_FLUSH_ERR)
		return; /* a connection that has gone, or is going: its flushed requests */
	if (wc->status != IBV_WC_SUCCESS) {
		fprintf(stderr, "server: connection %u: %s completion: %s\n", c->gen,
			kind ? "send" : "receive", ibv_wc_status_str(wc->status));
		S.errors++;
		return;
	}
	if (kind == 0) {
		if (check(c->rbuf[i], wc->byte_len, &h)) {
			fprintf(stderr, "server: connection %u: bad message (%u bytes)\n", c->gen,
				wc->byte_len);
			S.bad++;
			return;
		}
		S.msgs++;
		c->srv_disc = h.flags & F_SRV_DISC;
		c->hold = h.flags & F_HOLD;
		if (post_echo((int)slot, i, c->rbuf[i], wc->byte_len)) {
			perror("server: echo");
			S.errors++;
		}
		return;
	}
	if (i == NMSG)
		return; /* RELEASE sent */
	if (++c->echoed != NMSG)
		return;
	if (c->srv_disc) {
		c->disconnecting = true;
		if (rdma_disconnect(c->id)) {
			perror("server: rdma_disconnect");
			S.errors++;
		}
	} else if (c->hold && S.hold) {
		c->held = true;
		if (++S.held >= S.hold)
			release_held();
	}
}

static void cm_event(struct rdma_event_channel *ch)
{
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id;
	enum rdma_cm_event_type t;
	int st, slot;

	if (rdma_get_cm_event(ch, &ev)) {
		if (errno == EAGAIN)
			return;
		perror("server: rdma_get_cm_event");
		exit(1);
	}
	t = ev->event;
	id = ev->id;
	st = ev->status;
	rdma_ack_cm_event(ev);
	if (t == RDMA_CM_EVENT_CONNECT_REQUEST) {
		connect_request(id);
		return;
	}
	slot = slot_of(id);
	if (t == RDMA_CM_EVENT_ESTABLISHED) {
		S.established++;
	} else if (t == RDMA_CM_EVENT_DISCONNECTED) {
		S.disconnected++;
		if (slot >= 0) {
			if (!S.c[slot]->disconnecting)
				rdma_disconnect(id);
			sconn_free(slot);
		}
	} else if (t != RDMA_CM_EVENT_TIMEWAIT_EXIT) {
		fprintf(stderr, "server: %s (status %d)\n", rdma_event_str(t), st);
		S.errors++;
		if (slot >= 0)
			sconn_free(slot);
	}
}

static int server(const char *addr, const char *port, unsigned hold)
{
	struct rdma_addrinfo hints = {.ai_flags = RAI_PASSIVE, .ai_port_space = RDMA_PS_TCP}, *ai;
	struct rdma_event_channel *ch;
	struct rdma_cm_id *listen;
	sigset_t sigs;
	int sfd;

	/* Blocked before the library starts its threads, which inherit the mask: the signals
	 * wait for signalfd rather than end the process in another thread. */
	S.hold = hold;
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGUSR1);
	sigaddset(&sigs, SIGTERM);
	sigprocmask(SIG_BLOCK, &sigs, NULL);
	sfd = signalfd(-1, &sigs, SFD_CLOEXEC);
	ch = rdma_create_event_channel();
	if (!ch || sfd < 0 || rdma_getaddrinfo(addr, port, &hints, &ai) ||
	    rdma_create_id(ch, &listen, NULL, RDMA_PS_TCP) ||
	    rdma_bind_addr(listen, ai->ai_src_addr) || rdma_listen(listen, 128)) {
		perror("server: listen");
		return 1;
	}
	rdma_freeaddrinfo(ai);
	printf("server: listening on %s port %s\n", addr, port);
	fflush(stdout);
	for (;;) {
		struct pollfd p[3] = {{ch->fd, POLLIN, 0}, {sfd, POLLIN, 0},
				      {S.cch ? S.cch->fd : -1, POLLIN, 0}};
		struct ibv_wc wc[32];
		int n;

		if (poll(p, 3, -1) < 0 && errno != EINTR) {
			perror("server: poll");
			return 1;
		}
		if (p[1].revents) {
			struct signalfd_siginfo si;

			if (read(sfd, &si, sizeof(si)) == sizeof(si)) {
				report();
				if (si.ssi_signo == SIGTERM)
					return S.bad || S.errors ? 1 : 0;
			}
		}
		if (p[2].revents) {
			struct ibv_cq *cq;
			void *ctx;

			if (ibv_get_cq_event(S.cch, &cq, &ctx) == 0) {
				ibv_ack_cq_events(cq, 1);
				ibv_req_notify_cq(S.cq, 0);
			}
		}
		/* Completions before CM events: a DISCONNECTED frees the connection whose last
		 * receives may still wait on the CQ. */
		while (S.cq && (n = ibv_poll_cq(S.cq, 32, wc)) > 0)
			for (int i = 0; i < n; i++)
				completion(&wc[i]);
		if (p[0].revents)
			cm_event(ch);
	}
}

/* ---- client ------------------------------------------------------------------------------- */

struct cconn {
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id;
	struct ibv_mr *mr;
	uint8_t sbuf[NMSG][MSG_MAX];
	uint8_t rbuf[NMSG + 1][MSG_MAX];
};

static struct {
	uint64_t ok, failed, rejected, unreachable, addr_err, route_err, conn_err, timeouts, bad,
		other;
	int last_reject;
	unsigned cycle; /* the cycle under way, for the messages */
} C;

/* The next CM event of c, expected to be want (its status in *st). 0, or -1 when it was
 * another event (counted) or none came in time. */
static int expect(struct cconn *c, enum rdma_cm_event_type want)
{
	struct pollfd p = {c->ch->fd, POLLIN, 0};
	struct rdma_cm_event *ev;
	enum rdma_cm_event_type t;
	int st;

	if (poll(&p, 1, WAIT_MS) != 1) {
		fprintf(stderr, "client: cycle %u: no %s within %d ms\n", C.cycle,
			rdma_event_str(want), WAIT_MS);
		C.timeouts++;
		return -1;
	}
	if (rdma_get_cm_event(c->ch, &ev)) {
		perror("client: rdma_get_cm_event");
		C.other++;
		return -1;
	}
	t = ev->event;
	st = ev->status;
	rdma_ack_cm_event(ev);
	if (t == want)
		return 0;
	fprintf(stderr, "client: cycle %u: %s (status %d) where %s was expected\n", C.cycle,
		rdma_event_str(t), st, rdma_event_str(want));
	if (t == RDMA_CM_EVENT_REJECTED) {
		C.rejected++;
		C.last_reject = st;
	} else if (t == RDMA_CM_EVENT_UNREACHABLE) {
		C.unreachable++;
	} else if (t == RDMA_CM_EVENT_ADDR_ERROR) {
		C.addr_err++;
	} else if (t == RDMA_CM_EVENT_ROUTE_ERROR) {
		C.route_err++;
	} else if (t == RDMA_CM_EVENT_CONNECT_ERROR) {
		C.conn_err++;
	} else {
		C.other++;
	}
	return -1;
}

/* One completion of cq (bounded wait on its channel). 0 or -1. */
static int comp(struct ibv_cq *cq, struct ibv_comp_channel *cch, struct ibv_wc *wc)
{
	uint64_t end = now_ns() + (uint64_t)WAIT_MS * 1000000ull;

	for (;;) {
		struct pollfd p = {cch->fd, POLLIN, 0};
		struct ibv_cq *ecq;
		void *ctx;
		int n = ibv_poll_cq(cq, 1, wc);

		if (n)
			return n == 1 ? 0 : -1;
		if (ibv_req_notify_cq(cq, 0))
			return -1;
		n = ibv_poll_cq(cq, 1, wc); /* what came before the notification was armed */
		if (n)
			return n == 1 ? 0 : -1;
		if (now_ns() > end || poll(&p, 1, WAIT_MS) != 1) {
			fprintf(stderr, "client: cycle %u: no completion within %d ms\n", C.cycle,
				WAIT_MS);
			C.timeouts++;
			return -1;
		}
		if (ibv_get_cq_event(cch, &ecq, &ctx) == 0)
			ibv_ack_cq_events(ecq, 1);
	}
}

static int cconn_open(struct cconn *c, struct rdma_addrinfo *ai)
{
	struct ibv_qp_init_attr qa = {.qp_type = IBV_QPT_RC,
				      .cap = {.max_send_wr = NMSG, .max_recv_wr = NMSG + 1,
					      .max_send_sge = 1, .max_recv_sge = 1}};

	c->ch = rdma_create_event_channel();
	if (!c->ch || rdma_create_id(c->ch, &c->id, c, RDMA_PS_TCP)) {
		perror("client: rdma_create_id");
		C.other++;
		return -1;
	}
	if (rdma_resolve_addr(c->id, NULL, ai->ai_dst_addr, 5000)) {
		perror("client: rdma_resolve_addr");
		C.addr_err++;
		return -1;
	}
	if (expect(c, RDMA_CM_EVENT_ADDR_RESOLVED))
		return -1;
	if (rdma_resolve_route(c->id, 5000)) {
		perror("client: rdma_resolve_route");
		C.route_err++;
		return -1;
	}
	if (expect(c, RDMA_CM_EVENT_ROUTE_RESOLVED))
		return -1;
	/* No CQs given: rdma_create_qp makes a send and a receive CQ with their channels. */
	if (rdma_create_qp(c->id, NULL, &qa)) {
		perror("client: rdma_create_qp");
		C.other++;
		return -1;
	}
	c->mr = rdma_reg_msgs(c->id, c->sbuf, sizeof(c->sbuf) + sizeof(c->rbuf));
	if (!c->mr) {
		perror("client: rdma_reg_msgs");
		C.other++;
		return -1;
	}
	for (unsigned i = 0; i <= NMSG; i++)
		if (rdma_post_recv(c->id, (void *)(uintptr_t)i, c->rbuf[i], MSG_MAX, c->mr)) {
			perror("client: rdma_post_recv");
			C.other++;
			return -1;
		}
	return 0;
}

static int cconn_connect(struct cconn *c)
{
	struct rdma_conn_param cp = {.responder_resources = 1, .initiator_depth = 1,
				     .retry_count = 7, .rnr_retry_count = 7};

	if (rdma_connect(c->id, &cp)) {
		perror("client: rdma_connect");
		C.conn_err++;
		return -1;
	}
	return expect(c, RDMA_CM_EVENT_ESTABLISHED);
}

/* NMSG messages out and their echoes checked (they may come back in any order). */
static int cconn_transfer(struct cconn *c, uint32_t client, uint32_t cycle, uint32_t flags)
{
	bool seen[NMSG] = {false};
	struct ibv_wc wc;
	struct hdr h;

	for (uint32_t s = 0; s < NMSG; s++) {
		fill(c->sbuf[s], client, cycle, s, flags);
		if (rdma_post_send(c->id, NULL, c->sbuf[s], msg_len(cycle, s), c->mr,
				   IBV_SEND_SIGNALED)) {
			perror("client: rdma_post_send");
			C.other++;
			return -1;
		}
	}
	for (unsigned s = 0; s < NMSG; s++)
		if (comp(c->id->send_cq, c->id->send_cq_channel, &wc) ||
		    wc.status != IBV_WC_SUCCESS) {
			fprintf(stderr, "client %u cycle %u: send failed\n", client, cycle);
			C.other++;
			return -1;
		}
	for (unsigned s = 0; s < NMSG; s++) {
		unsigned b;

		if (comp(c->id->recv_cq, c->id->recv_cq_channel, &wc) ||
		    wc.status != IBV_WC_SUCCESS) {
			fprintf(stderr, "client %u cycle %u: receive failed\n", client, cycle);
			C.other++;
			return -1;
		}
		b = (unsigned)wc.wr_id;
		if (b > NMSG || check(c->rbuf[b], wc.byte_len, &h) || h.client != client ||
		    h.cycle != cycle || seen[h.seq] ||
		    memcmp(c->rbuf[b], c->sbuf[h.seq], wc.byte_len)) {
			fprintf(stderr, "client %u cycle %u: bad echo (%u bytes)\n", client, cycle,
				wc.byte_len);
			C.bad++;
			return -1;
		}
		seen[h.seq] = true;
	}
	return 0;
}

static int cconn_wait_release(struct cconn *c)
{
	struct ibv_wc wc;
	struct hdr h;

	if (comp(c->id->recv_cq, c->id->recv_cq_channel, &wc) || wc.status != IBV_WC_SUCCESS ||
	    wc.byte_len != sizeof(h)) {
		fprintf(stderr, "client: no RELEASE\n");
		C.other++;
		return -1;
	}
	memcpy(&h, c->rbuf[wc.wr_id], sizeof(h));
	if (h.magic != MAGIC || h.flags != F_RELEASE) {
		C.bad++;
		return -1;
	}
	return 0;
}

/* Disconnect (first, or after the server's DREQ) and wait for DISCONNECTED. */
static int cconn_disconnect(struct cconn *c, bool server_first)
{
	if (server_first) {
		if (expect(c, RDMA_CM_EVENT_DISCONNECTED))
			return -1;
		rdma_disconnect(c->id);
		return 0;
	}
	if (rdma_disconnect(c->id)) {
		perror("client: rdma_disconnect");
		C.other++;
		return -1;
	}
	return expect(c, RDMA_CM_EVENT_DISCONNECTED);
}

static void cconn_close(struct cconn *c)
{
	if (c->mr)
		rdma_dereg_mr(c->mr);
	if (c->id) {
		if (c->id->qp)
			rdma_destroy_qp(c->id);
		rdma_destroy_id(c->id);
	}
	if (c->ch)
		rdma_destroy_event_channel(c->ch);
	memset(c, 0, sizeof(*c));
}

static int client(const char *addr, const char *port, unsigned cycles, unsigned cid,
		  unsigned nconn)
{
	struct rdma_addrinfo hints = {.ai_port_space = RDMA_PS_TCP}, *ai;
	static struct cconn cc[MAXCLI];
	uint64_t t0;
	double secs;

	if (rdma_getaddrinfo(addr, port, &hints, &ai)) {
		perror("client: rdma_getaddrinfo");
		return 1;
	}
	t0 = now_ns();
	for (unsigned cy = 0; cy < cycles; cy++) {
		uint32_t flags = nconn > 1 ? F_HOLD : (cy & 1 ? F_SRV_DISC : 0);
		int bad = 0;

		C.cycle = cy;
		for (unsigned k = 0; k < nconn && !bad; k++)
			bad = cconn_open(&cc[k], ai) || cconn_connect(&cc[k]);
		for (unsigned k = 0; k < nconn && !bad; k++)
			bad = cconn_transfer(&cc[k], cid * MAXCLI + k, cy, flags);
		for (unsigned k = 0; k < nconn && !bad && (flags & F_HOLD); k++)
			bad = cconn_wait_release(&cc[k]);
		for (unsigned k = 0; k < nconn && !bad; k++)
			bad = cconn_disconnect(&cc[k], flags & F_SRV_DISC);
		for (unsigned k = 0; k < nconn; k++)
			cconn_close(&cc[k]);
		if (bad)
			C.failed++;
		else
			C.ok++;
	}
	secs = (double)(now_ns() - t0) / 1e9;
	rdma_freeaddrinfo(ai);
	printf("client %u: cycles %u ok %llu failed %llu connections %llu rejected %llu "
	       "(last reason %d) unreachable %llu addr_error %llu route_error %llu "
	       "connect_error %llu timeouts %llu bad %llu other %llu seconds %.2f "
	       "cycles/s %.1f\n",
	       cid, cycles, (unsigned long long)C.ok, (unsigned long long)C.failed,
	       (unsigned long long)C.ok * nconn, (unsigned long long)C.rejected, C.last_reject,
	       (unsigned long long)C.unreachable, (unsigned long long)C.addr_err,
	       (unsigned long long)C.route_err, (unsigned long long)C.conn_err,
	       (unsigned long long)C.timeouts, (unsigned long long)C.bad,
	       (unsigned long long)C.other, secs, secs > 0 ? cycles / secs : 0.0);
	return C.ok == cycles ? 0 : 1;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc >= 4 && argc <= 5 && !strcmp(argv[1], "server"))
		return server(argv[2], argv[3], argc == 5 ? (unsigned)atoi(argv[4]) : 0);
	if (argc >= 6 && argc <= 7 && !strcmp(argv[1], "client")) {
		unsigned n = argc == 7 ? (unsigned)atoi(argv[6]) : 1;

		if (n < 1 || n > MAXCLI) {
			fprintf(stderr, "client: CONNS is 1 to %d\n", MAXCLI);
			return 2;
		}
		return client(argv[2], argv[3], (unsigned)atoi(argv[4]), (unsigned)atoi(argv[5]),
			      n);
	}
	fprintf(stderr, "usage: uroce_storm server ADDR PORT [HOLD]\n"
			"       uroce_storm client ADDR PORT CYCLES CLIENT-ID [CONNS]\n");
	return 2;
}
