/* SPDX-License-Identifier: MIT */
/*
 * Scale: many RC QPs in one process, many processes on one device, through the public verbs API
 * (built against Debian's <infiniband/verbs.h>, linked with our libibverbs.so.1).
 *
 *   scale [-d DEV] [-a IPV4] [-p PROCS] [-q QPS[,QPS...]] [-r RUNS] [-f FACTOR] [-w DEPTH]
 *         [-t SECONDS] [-e]
 *
 * For each QPS (ascending), RUNS times: PROCS worker processes are forked, each opens DEV (default
 * uroce_lo, its RoCE v2 GID of IPV4, default 127.0.0.1) and makes QPS RC QPs, each with a CQ of
 * its own, send and receive queues DEPTH deep (default 16). The QPs form a ring over the
 * processes: QP j < QPS/2 of process i is connected to QP QPS/2 + j of process i + 1 (mod PROCS),
 * so with PROCS 2 every QP of one process has its partner in the other, and with PROCS 1 the
 * QPs are loopback pairs in one process. Every QP receives one message from its partner and
 * sends one to it; each message names its sender and receiver and carries a pattern of theirs,
 * checked on receipt with the completion's status, length, work request and QP number. The
 * workers poll every CQ in turn, or with -e wait on a completion channel that all CQs share.
 *
 * Measured per process: the set-up time, wall and CPU (every thread's, the progress thread's
 * included), of the CQs and QPs created and brought to INIT, then to RTR and RTS once the
 * partners' QP numbers are known, and the receives posted (the exchange through the parent is
 * not counted); the resident memory the QPs add (RSS then, less RSS before the first CQ, over
 * QPS); the traffic's wall and CPU time; the tear-down time; the device's open time; and the
 * descriptors open, which must not change with the QPs. Printed per size, the best of RUNS
 * (which damps a shared machine's noise). The run fails when any message is missing or wrong,
 * a process fails, descriptors changed, or the set-up CPU time per QP of the largest size
 * exceeds FACTOR (default 2.0) times that of the smallest: set-up is linear in the QPs. CPU time,
 * not wall time, because on a loaded machine the wall time is mostly waiting for a CPU.
 *
 * The parent never opens the device: it forks the workers, relays the QP numbers and paces the
 * phases over a socketpair per worker (every worker has opened the device before any makes a
 * QP, has posted its receives before any sends, has all its completions before any tears
 * down), and ends (by PID) the workers it forked when one does not answer within SECONDS
 * (default 60). Exit 77 (skip) when the first worker cannot open the device.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "verbs_kit.h"

#define MSG	    64 /* bytes of each message */
#define MAX_SIZES   8
#define MAX_PROCS   256
#define MAX_QPS	    65536
#define ERR_REPORTS 8 /* a worker prints its first few errors, then only counts them */

struct opts {
	const char *dev, *ip;
	int procs, runs, depth, timeout_s;
	bool events; /* wait on a completion channel, not by polling every CQ */
	int nsizes;
	int sizes[MAX_SIZES];
	double factor;
};

/* What a worker reports after its set-up (and the parent relays): its GID and QP numbers. */
struct hello {
	int rc; /* 0, or the errno of a failed step (77: the device cannot be opened) */
	uint8_t gid[16];
	uint64_t open_ns;
};

/* What a worker reports at the end. */
struct result {
	int errors;   /* failed checks */
	int received; /* messages received and checked good */
	int sent;     /* sends completed successfully */
	int fds_before, fds_after;
	int inotify, timers; /* of fds_after */
	uint64_t setup_ns, setup_cpu_ns, traffic_ns, traffic_cpu_ns, destroy_ns;
	uint64_t rss_before, rss_after;
};

static uint64_t clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t now_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC);
}

/* The CPU time of every thread of the process (the progress thread's included). */
static uint64_t cpu_ns(void)
{
	return clock_ns(CLOCK_PROCESS_CPUTIME_ID);
}

/* ---- I/O between parent and workers ---------------------------------------------------- */

/* Read exactly len bytes from fd within timeout_ms. 0, or -1 (closed, error, timeout). */
static int read_full(int fd, void *buf, size_t len, int timeout_ms)
{
	uint8_t *p = buf;
	uint64_t end = now_ms() + (uint64_t)timeout_ms;

	while (len) {
		struct pollfd pfd = {.fd = fd, .events = POLLIN};
		uint64_t t = now_ms();

		if (t >= end || poll(&pfd, 1, (int)(end - t)) <= 0)
			return -1;
		ssize_t n = read(fd, p, len);

		if (n <= 0) {
			if (n < 0 && errno == EINTR)
				continue;
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static int write_full(int fd, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* ---- process figures -------------------------------------------------------------------- */

static uint64_t rss_bytes(void)
{
	unsigned long size = 0, resident = 0;
	FILE *f = fopen("/proc/self/statm", "r");

	if (f) {
		if (fscanf(f, "%lu %lu", &size, &resident) != 2)
			resident = 0;
		fclose(f);
	}
	return (uint64_t)resident * (uint64_t)sysconf(_SC_PAGESIZE);
}

/*
 * The descriptors open other than files and pidfds: sockets, eventfds, epoll, inotify and timer
 * instances. Files (a membership file being read) and the pidfds by which a shared device watches
 * the other processes come and go as processes join, whatever the QPs. The inotify instances
 * and timers (a shared device's membership file watches) are added to *inotify and *timers.
 */
static int open_fds(int *inotify, int *timers)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	int n = 0;

	if (!d)
		return -1;
	while ((de = readdir(d))) {
		char path[300], to[64];
		ssize_t len;

		if (de->d_name[0] == '.' || atoi(de->d_name) == dirfd(d))
			continue;
		snprintf(path, sizeof(path), "/proc/self/fd/%s", de->d_name);
		len = readlink(path, to, sizeof(to) - 1);
		if (len <= 0)
			continue; /* closed meanwhile */
		to[len] = 0;
		if (to[0] != '/' && strcmp(to, "anon_inode:[pidfd]"))
			n++;
		*inotify += !strcmp(to, "anon_inode:inotify");
		*timers += !strcmp(to, "anon_inode:[timerfd]");
	}
	closedir(d);
	return n;
}

/* ---- the worker ------------------------------------------------------------------------- */

/* The message QP index qi of process proc sends to its partner: who it is from and to, then
 * a pattern of the sender's. */
static void message(uint8_t *m, int proc, int qi, int to_proc, int to_qi)
{
	uint32_t h[4] = {(uint32_t)proc, (uint32_t)qi, (uint32_t)to_proc, (uint32_t)to_qi};
	uint32_t x = (uint32_t)proc * 2654435761u ^ (uint32_t)qi * 40503u ^ 0x5ca1eu;

	memcpy(m, h, sizeof(h));
	for (size_t i = sizeof(h); i < MSG; i++) {
		x = x * 1103515245u + 12345u;
		m[i] = (uint8_t)(x >> 16);
	}
}

struct worker {
	const struct opts *o;
	int me, nq, sock;
	int errors;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	uint8_t *buf; /* per QP: MSG bytes to receive into, then MSG bytes to send from */
	int gid_idx;
	struct ibv_comp_channel *ch; /* with -e: every CQ's */
	struct ibv_cq **cq;
	unsigned *cq_events; /* with -e: events taken per CQ, to acknowledge */
	struct ibv_qp **qp;
	uint32_t *peer_qpn;
	uint8_t peer_gid[16];
	uint8_t *done; /* per QP: 1 send completed, 2 receive completed */
};

#define WERR(w, ...)                                             \
	do {                                                     \
		if ((w)->errors++ < ERR_REPORTS) {               \
			fprintf(stderr, "worker %d: ", (w)->me); \
			fprintf(stderr, __VA_ARGS__);            \
			fputc('\n', stderr);                     \
		}                                                \
	} while (0)

/* The partner of QP qi of process me: its process and QP index. */
static void partner(const struct opts *o, int nq, int me, int qi, int *proc, int *pqi)
{
	int half = nq / 2;

	if (qi < half) {
		*proc = (me + 1) % o->procs;
		*pqi = half + qi;
	} else {
		*proc = (me + o->procs - 1) % o->procs;
		*pqi = qi - half;
	}
}

static int make_qps(struct worker *w)
{
	struct ibv_qp_attr init = {.qp_state = IBV_QPS_INIT,
				   .port_num = 1,
				   .pkey_index = 0,
				   .qp_access_flags = IBV_ACCESS_LOCAL_WRITE};

	for (int i = 0; i < w->nq; i++) {
		struct ibv_qp_init_attr a = {.qp_type = IBV_QPT_RC,
					     .cap = {.max_send_wr = (uint32_t)w->o->depth,
						     .max_recv_wr = (uint32_t)w->o->depth,
						     .max_send_sge = 1,
						     .max_recv_sge = 1}};

		w->cq[i] = ibv_create_cq(w->ctx, 2 * w->o->depth, (void *)(intptr_t)i, w->ch, 0);
		if (!w->cq[i]) {
			WERR(w, "ibv_create_cq %d: %s", i, strerror(errno));
			return -1;
		}
		a.send_cq = a.recv_cq = w->cq[i];
		w->qp[i] = ibv_create_qp(w->pd, &a);
		if (!w->qp[i]) {
			WERR(w, "ibv_create_qp %d: %s", i, strerror(errno));
			return -1;
		}
		int rc = ibv_modify_qp(w->qp[i], &init, RC_INIT_MASK);

		if (rc) {
			WERR(w, "QP %d to INIT: %s", i, strerror(rc));
			return -1;
		}
	}
	return 0;
}

static int connect_qps(struct worker *w)
{
	for (int i = 0; i < w->nq; i++) {
		struct ibv_qp_attr a = {
			.qp_state = IBV_QPS_RTR,
			.path_mtu = IBV_MTU_1024,
			.dest_qp_num = w->peer_qpn[i],
			.rq_psn = 0,
			.max_dest_rd_atomic = 1,
			.min_rnr_timer = 12,
			.ah_attr = {.is_global = 1,
				    .port_num = 1,
				    .grh = {.sgid_index = (uint8_t)w->gid_idx, .hop_limit = 64}},
		};
		int rc;

		memcpy(a.ah_attr.grh.dgid.raw, w->peer_gid, 16);
		rc = ibv_modify_qp(w->qp[i], &a, RC_RTR_MASK);
		if (!rc) {
			a = (struct ibv_qp_attr){.qp_state = IBV_QPS_RTS,
						 .timeout = 14,
						 .retry_cnt = 7,
						 .rnr_retry = 7,
						 .sq_psn = 0,
						 .max_rd_atomic = 1};
			rc = ibv_modify_qp(w->qp[i], &a,
					   IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
						   IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
						   IBV_QP_MAX_QP_RD_ATOMIC);
		}
		if (rc) {
			WERR(w, "QP %d to RTR/RTS: %s", i, strerror(rc));
			return -1;
		}
	}
	return 0;
}

static int post_recvs(struct worker *w)
{
	for (int i = 0; i < w->nq; i++) {
		struct ibv_sge sge = {.addr = (uintptr_t)(w->buf + (size_t)i * 2 * MSG),
				      .length = MSG,
				      .lkey = w->mr->lkey};
		struct ibv_recv_wr wr = {.wr_id = (uint64_t)i, .sg_list = &sge, .num_sge = 1}, *bad;
		int rc = ibv_post_recv(w->qp[i], &wr, &bad);

		if (rc) {
			WERR(w, "ibv_post_recv %d: %s", i, strerror(rc));
			return -1;
		}
	}
	return 0;
}

static int post_sends(struct worker *w)
{
	for (int i = 0; i < w->nq; i++) {
		uint8_t *m = w->buf + (size_t)i * 2 * MSG + MSG;
		int proc, pqi;

		partner(w->o, w->nq, w->me, i, &proc, &pqi);
		message(m, w->me, i, proc, pqi);

		struct ibv_sge sge = {.addr = (uintptr_t)m, .length = MSG, .lkey = w->mr->lkey};
		struct ibv_send_wr wr = {.wr_id = (uint64_t)i,
					 .sg_list = &sge,
					 .num_sge = 1,
					 .opcode = IBV_WR_SEND,
					 .send_flags = IBV_SEND_SIGNALED},
				   *bad;
		int rc = ibv_post_send(w->qp[i], &wr, &bad);

		if (rc) {
			WERR(w, "ibv_post_send %d: %s", i, strerror(rc));
			return -1;
		}
	}
	return 0;
}

/* Check one completion of QP i's CQ. */
static void check_wc(struct worker *w, int i, const struct ibv_wc *wc, struct result *r)
{
	uint8_t want[MSG];
	int proc, pqi;

	if (wc->status != IBV_WC_SUCCESS) {
		WERR(w, "QP %d: completion %s (opcode %d)", i, ibv_wc_status_str(wc->status),
		     wc->opcode);
		return;
	}
	if (wc->wr_id != (uint64_t)i || wc->qp_num != w->qp[i]->qp_num) {
		WERR(w, "QP %d: completion for wr_id %llu QPN 0x%x", i,
		     (unsigned long long)wc->wr_id, wc->qp_num);
		return;
	}
	if (wc->opcode == IBV_WC_SEND) {
		if (w->done[i] & 1)
			WERR(w, "QP %d: a second send completion", i);
		w->done[i] |= 1;
		r->sent++;
		return;
	}
	if (wc->opcode != IBV_WC_RECV) {
		WERR(w, "QP %d: completion opcode %d", i, wc->opcode);
		return;
	}
	if (w->done[i] & 2) {
		WERR(w, "QP %d: a second receive completion", i);
		return;
	}
	w->done[i] |= 2;
	partner(w->o, w->nq, w->me, i, &proc, &pqi);
	message(want, proc, pqi, w->me, i);
	if (wc->byte_len != MSG || memcmp(want, w->buf + (size_t)i * 2 * MSG, MSG)) {
		WERR(w, "QP %d: received %u bytes, not process %d QP %d's message", i, wc->byte_len,
		     proc, pqi);
		return;
	}
	r->received++;
}

/* Take what CQ i holds; the number taken, or -1 when ibv_poll_cq failed. */
static int drain(struct worker *w, int i, struct result *r)
{
	struct ibv_wc wc[2];
	int n, got = 0;

	while ((n = ibv_poll_cq(w->cq[i], 2, wc)) > 0) {
		for (int k = 0; k < n; k++)
			check_wc(w, i, &wc[k], r);
		got += n;
	}
	if (n < 0) {
		WERR(w, "ibv_poll_cq %d failed", i);
		return -1;
	}
	return got;
}

/* Arm every CQ (-e), before anything is sent. */
static int arm_all(struct worker *w)
{
	for (int i = 0; w->ch && i < w->nq; i++) {
		int rc = ibv_req_notify_cq(w->cq[i], 0);

		if (rc) {
			WERR(w, "ibv_req_notify_cq %d: %s", i, strerror(rc));
			return -1;
		}
	}
	return 0;
}

/*
 * Until each QP has its send and receive completion, or the deadline: poll every CQ in turn,
 * or (-e) take the channel's events, re-arm the CQ named and take what it holds.
 */
static void traffic(struct worker *w, struct result *r)
{
	uint64_t end = now_ms() + (uint64_t)w->o->timeout_s * 1000u;
	int left = 2 * w->nq;

	while (left > 0 && now_ms() < end) {
		if (!w->ch) {
			for (int i = 0; i < w->nq && left > 0; i++) {
				int n = drain(w, i, r);

				if (n < 0)
					return;
				left -= n;
			}
			continue;
		}
		struct pollfd pfd = {.fd = w->ch->fd, .events = POLLIN};
		struct ibv_cq *cq;
		void *cq_ctx;
		uint64_t t = now_ms();

		if (poll(&pfd, 1, t < end ? (int)(end - t) : 0) <= 0)
			continue;
		if (ibv_get_cq_event(w->ch, &cq, &cq_ctx))
			continue; /* taken meanwhile (EAGAIN) */
		int i = (int)(intptr_t)cq_ctx, rc, n;

		w->cq_events[i]++;
		rc = ibv_req_notify_cq(cq, 0);
		n = drain(w, i, r);
		if (rc || n < 0) {
			WERR(w, "re-arming CQ %d: %s", i, strerror(rc));
			return;
		}
		left -= n;
	}
	if (left > 0)
		WERR(w, "%d completions missing after %d s", left, w->o->timeout_s);
}

static void destroy_qps(struct worker *w)
{
	for (int i = 0; i < w->nq; i++) {
		if (w->qp[i] && ibv_destroy_qp(w->qp[i]))
			WERR(w, "ibv_destroy_qp %d", i);
		if (w->cq[i] && w->cq_events[i])
			ibv_ack_cq_events(w->cq[i], w->cq_events[i]);
		if (w->cq[i] && ibv_destroy_cq(w->cq[i]))
			WERR(w, "ibv_destroy_cq %d", i);
	}
}

/* Wait for the parent's go-ahead byte; -1 when the parent is gone or silent. */
static int await(struct worker *w)
{
	uint8_t b;

	return read_full(w->sock, &b, 1, w->o->timeout_s * 1000);
}

static int worker_main(const struct opts *o, int me, int nq, int sock)
{
	struct worker w = {.o = o, .me = me, .nq = nq, .sock = sock};
	struct hello h = {0};
	struct result r = {0};
	union ibv_gid gid;
	uint32_t *qpn;
	uint64_t t, tc;
	int ok = 0;

	w.cq = calloc((size_t)nq, sizeof(*w.cq));
	w.qp = calloc((size_t)nq, sizeof(*w.qp));
	w.peer_qpn = calloc((size_t)nq, sizeof(*w.peer_qpn));
	w.done = calloc((size_t)nq, 1);
	w.cq_events = calloc((size_t)nq, sizeof(*w.cq_events));
	qpn = calloc((size_t)nq, sizeof(*qpn));
	/* A whole number of pages, as aligned_alloc wants a multiple of the alignment. */
	w.buf = aligned_alloc(4096, ((size_t)nq * 2 * MSG + 4095) & ~(size_t)4095);
	if (!w.cq || !w.qp || !w.peer_qpn || !w.done || !w.cq_events || !qpn || !w.buf) {
		h.rc = ENOMEM;
		goto hello;
	}
	memset(w.buf, 0, (size_t)nq * 2 * MSG);

	/* The device and the memory every QP shares; the QPs' cost is measured after them. */
	t = now_ns();
	{
		struct ibv_device **list = ibv_get_device_list(NULL);

		for (int i = 0; list && list[i] && !w.ctx; i++)
			if (!strcmp(ibv_get_device_name(list[i]), o->dev))
				w.ctx = ibv_open_device(list[i]);
		if (list)
			ibv_free_device_list(list);
	}
	h.open_ns = now_ns() - t;
	if (!w.ctx) {
		h.rc = 77;
		goto hello;
	}
	w.pd = ibv_alloc_pd(w.ctx);
	w.mr = w.pd ? ibv_reg_mr(w.pd, w.buf, (size_t)nq * 2 * MSG, IBV_ACCESS_LOCAL_WRITE) : NULL;
	w.gid_idx = find_gid(w.ctx, o->ip);
	if (o->events) {
		w.ch = ibv_create_comp_channel(w.ctx);
		if (!w.ch || fcntl(w.ch->fd, F_SETFL, fcntl(w.ch->fd, F_GETFL) | O_NONBLOCK)) {
			h.rc = errno ? errno : EINVAL;
			goto hello;
		}
	}
	if (!w.mr || w.gid_idx < 0 || ibv_query_gid(w.ctx, 1, w.gid_idx, &gid)) {
		h.rc = errno ? errno : EINVAL;
		goto hello;
	}
	memcpy(h.gid, gid.raw, 16);
	ok = 1;
hello:
	if (write_full(sock, &h, sizeof(h)))
		_exit(1);
	if (!ok)
		_exit(h.rc == 77 ? 77 : 1);

	/* Every process has joined the device (each holds the others' watch descriptors): the
	 * QPs' cost is measured from here. */
	if (await(&w))
		_exit(1);
	int ino = 0, tmr = 0;

	r.fds_before = open_fds(&ino, &tmr);
	r.rss_before = rss_bytes();
	t = now_ns();
	tc = cpu_ns();
	ok = !make_qps(&w);
	r.setup_ns = now_ns() - t;
	r.setup_cpu_ns = cpu_ns() - tc;
	for (int i = 0; ok && i < nq; i++)
		qpn[i] = w.qp[i]->qp_num;
	/* A failed set-up sends QP number 0 for all; the parent ends the run. */
	if (write_full(sock, qpn, (size_t)nq * 4))
		_exit(1);

	/* The partners' QP numbers (in our QPs' order) and GID, from the parent. */
	if (read_full(sock, w.peer_gid, 16, o->timeout_s * 1000) ||
	    read_full(sock, w.peer_qpn, (size_t)nq * 4, o->timeout_s * 1000))
		_exit(1);
	t = now_ns();
	tc = cpu_ns();
	if (!connect_qps(&w) && !post_recvs(&w) && !arm_all(&w)) {
		r.setup_ns += now_ns() - t;
		r.setup_cpu_ns += cpu_ns() - tc;
		r.rss_after = rss_bytes();
		r.fds_after = open_fds(&r.inotify, &r.timers);
		/* Every process has its receives posted before anyone sends. */
		uint8_t b = 1;

		if (write_full(sock, &b, 1) || await(&w))
			_exit(1);
		t = now_ns();
		tc = cpu_ns();
		if (!post_sends(&w))
			traffic(&w, &r);
		r.traffic_ns = now_ns() - t;
		r.traffic_cpu_ns = cpu_ns() - tc;
	}
	/* Nobody tears down while a partner may still wait for its ACKs. */
	{
		uint8_t b = 1;

		if (write_full(sock, &b, 1) || await(&w))
			_exit(1);
	}
	t = now_ns();
	destroy_qps(&w);
	r.destroy_ns = now_ns() - t;
	if (ibv_dereg_mr(w.mr) || ibv_dealloc_pd(w.pd) ||
	    (w.ch && ibv_destroy_comp_channel(w.ch)) || ibv_close_device(w.ctx))
		WERR(&w, "tear-down of the device failed");
	r.errors = w.errors;
	if (write_full(sock, &r, sizeof(r)))
		_exit(1);
	_exit(0);
}

/* ---- the parent -------------------------------------------------------------------------- */

struct run {
	int procs, nq;
	pid_t pid[MAX_PROCS];
	int sock[MAX_PROCS];
	struct hello h[MAX_PROCS];
	struct result r[MAX_PROCS];
	uint32_t *qpn; /* procs * nq */
};

/* Send one byte to every worker. */
static int go_all(struct run *x)
{
	uint8_t b = 1;

	for (int p = 0; p < x->procs; p++)
		if (write_full(x->sock[p], &b, 1))
			return -1;
	return 0;
}

/* Read one byte from every worker. */
static int wait_all(struct run *x, int timeout_ms)
{
	for (int p = 0; p < x->procs; p++) {
		uint8_t b;

		if (read_full(x->sock[p], &b, 1, timeout_ms)) {
			fprintf(stderr, "worker %d does not answer\n", p);
			return -1;
		}
	}
	return 0;
}

/*
 * One run: procs workers with nq QPs each. Returns 0 when every worker ended well, 77 when the
 * device cannot be opened, 1 otherwise (failures printed).
 */
static int run_once(const struct opts *o, int nq, struct run *x)
{
	int tmo = o->timeout_s * 1000, rc = 0, forked = 0;

	memset(x->h, 0, sizeof(x->h));
	memset(x->r, 0, sizeof(x->r));
	x->procs = o->procs;
	x->nq = nq;
	x->qpn = calloc((size_t)o->procs * (size_t)nq, sizeof(*x->qpn));
	if (!x->qpn)
		return 1;
	fflush(NULL);
	for (int p = 0; p < o->procs; p++) {
		int sv[2];

		if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv)) {
			perror("socketpair");
			rc = 1;
			break;
		}
		x->pid[p] = fork();
		if (x->pid[p] == 0) {
			for (int k = 0; k < p; k++)
				close(x->sock[k]);
			close(sv[0]);
			worker_main(o, p, nq, sv[1]);
		}
		close(sv[1]);
		if (x->pid[p] < 0) {
			perror("fork");
			close(sv[0]);
			rc = 1;
			break;
		}
		x->sock[p] = sv[0];
		forked++;
	}
	/* Each worker's GID and QP numbers; then each its partners'. */
	for (int p = 0; !rc && p < o->procs; p++) {
		if (read_full(x->sock[p], &x->h[p], sizeof(x->h[p]), tmo)) {
			fprintf(stderr, "worker %d: no hello\n", p);
			rc = 1;
		} else if (x->h[p].rc == 77 && p == 0) {
			rc = 77; /* no such device here */
		} else if (x->h[p].rc) {
			fprintf(stderr, "worker %d: %s\n", p,
				x->h[p].rc == 77 ? "cannot open the device (worker 0 could)"
						 : strerror(x->h[p].rc));
			rc = 1;
		}
	}
	if (!rc && go_all(x))
		rc = 1;
	for (int p = 0; !rc && p < o->procs; p++) {
		if (read_full(x->sock[p], x->qpn + (size_t)p * nq, (size_t)nq * 4, tmo)) {
			fprintf(stderr, "worker %d: no QP numbers\n", p);
			rc = 1;
		} else if (!x->qpn[(size_t)p * nq]) {
			fprintf(stderr, "worker %d: making its QPs failed\n", p);
			rc = 1;
		}
	}
	for (int p = 0; !rc && p < o->procs; p++) {
		uint32_t *peer = calloc((size_t)nq, sizeof(*peer));

		for (int i = 0; peer && i < nq; i++) {
			int proc, pqi;

			partner(o, nq, p, i, &proc, &pqi);
			peer[i] = x->qpn[(size_t)proc * nq + (size_t)pqi];
		}
		/* The ring's partners share the device: one GID, the next process's. */
		if (!peer || write_full(x->sock[p], x->h[(p + 1) % o->procs].gid, 16) ||
		    write_full(x->sock[p], peer, (size_t)nq * 4))
			rc = 1;
		free(peer);
	}
	/* Receives posted everywhere: send; completions everywhere: tear down. */
	if (!rc && (wait_all(x, tmo) || go_all(x) || wait_all(x, 2 * tmo) || go_all(x)))
		rc = 1;
	for (int p = 0; !rc && p < o->procs; p++) {
		if (read_full(x->sock[p], &x->r[p], sizeof(x->r[p]), tmo)) {
			fprintf(stderr, "worker %d: no result\n", p);
			rc = 1;
		}
	}
	/* A worker that did not finish is ended; every one is reaped. */
	for (int p = 0; p < forked; p++) {
		int st;

		if (rc)
			kill(x->pid[p], SIGKILL);
		close(x->sock[p]);
		if (waitpid(x->pid[p], &st, 0) == x->pid[p] && !rc &&
		    !(WIFEXITED(st) && WEXITSTATUS(st) == 0)) {
			fprintf(stderr, "worker %d: exit status 0x%x\n", p, st);
			rc = 1;
		}
	}
	free(x->qpn);
	x->qpn = NULL;
	return rc;
}

/* The figures of one size: the best of its runs. */
struct size_fig {
	int nq;
	double setup_us, setup_cpu_us, destroy_us; /* per QP */
	double bytes;				   /* per QP */
	double traffic_ms, traffic_cpu_ms, open_ms;
	int fds, inotify, timers;
};

static double min_d(double a, double b)
{
	return a < b ? a : b;
}

/* Check one run's results and fold its figures into f (the first run's: set it). */
static int account(const struct run *x, struct size_fig *f, bool first)
{
	struct size_fig g = {.nq = x->nq};
	int bad = 0;

	for (int p = 0; p < x->procs; p++) {
		const struct result *r = &x->r[p];
		double per = (double)x->nq * x->procs;

		if (r->errors || r->received != x->nq || r->sent != x->nq) {
			fprintf(stderr,
				"process %d of %d, %d QPs: %d errors, %d received, %d sent\n", p,
				x->procs, x->nq, r->errors, r->received, r->sent);
			bad = 1;
		}
		if (r->fds_after != r->fds_before) {
			fprintf(stderr, "process %d: %d descriptors before the QPs, %d after\n", p,
				r->fds_before, r->fds_after);
			bad = 1;
		}
		/* Per QP: the mean over the processes; the slowest process's traffic and open. */
		g.setup_us += (double)r->setup_ns / 1e3 / per;
		g.setup_cpu_us += (double)r->setup_cpu_ns / 1e3 / per;
		g.destroy_us += (double)r->destroy_ns / 1e3 / per;
		g.bytes += ((double)r->rss_after - (double)r->rss_before) / per;
		if ((double)r->traffic_ns / 1e6 > g.traffic_ms)
			g.traffic_ms = (double)r->traffic_ns / 1e6;
		if ((double)r->traffic_cpu_ns / 1e6 > g.traffic_cpu_ms)
			g.traffic_cpu_ms = (double)r->traffic_cpu_ns / 1e6;
		if ((double)x->h[p].open_ns / 1e6 > g.open_ms)
			g.open_ms = (double)x->h[p].open_ns / 1e6;
		if (r->fds_after > g.fds)
			g.fds = r->fds_after;
		g.inotify += r->inotify;
		g.timers += r->timers;
	}
	if (first) {
		*f = g;
	} else {
		f->setup_us = min_d(f->setup_us, g.setup_us);
		f->setup_cpu_us = min_d(f->setup_cpu_us, g.setup_cpu_us);
		f->destroy_us = min_d(f->destroy_us, g.destroy_us);
		f->bytes = min_d(f->bytes, g.bytes);
		f->traffic_ms = min_d(f->traffic_ms, g.traffic_ms);
		f->traffic_cpu_ms = min_d(f->traffic_cpu_ms, g.traffic_cpu_ms);
		f->inotify = g.inotify;
		f->timers = g.timers;
		f->open_ms = min_d(f->open_ms, g.open_ms);
	}
	return bad;
}

static int parse_sizes(struct opts *o, char *s)
{
	o->nsizes = 0;
	for (char *tok = strtok(s, ","); tok; tok = strtok(NULL, ",")) {
		int n = atoi(tok);

		if (o->nsizes == MAX_SIZES || n < 2 || n > MAX_QPS || n % 2 ||
		    (o->nsizes && n <= o->sizes[o->nsizes - 1]))
			return -1;
		o->sizes[o->nsizes++] = n;
	}
	return o->nsizes ? 0 : -1;
}

static void usage(void)
{
	fprintf(stderr, "usage: scale [-d DEV] [-a IPV4] [-p PROCS] [-q QPS[,QPS...]] [-r RUNS] "
			"[-f FACTOR] [-w DEPTH] [-t SECONDS] [-e]\n"
			"  QPS: QPs per process, even, ascending\n");
	exit(2);
}

int main(int argc, char **argv)
{
	struct opts o = {.dev = "uroce_lo",
			 .ip = "127.0.0.1",
			 .procs = 2,
			 .runs = 1,
			 .depth = 16,
			 .timeout_s = 60,
			 .factor = 2.0};
	char dflt[] = "512,1024,2048,4096";
	struct size_fig fig[MAX_SIZES];
	struct run *x;
	int opt, bad = 0;

	if (parse_sizes(&o, dflt))
		return 1;
	while ((opt = getopt(argc, argv, "d:a:p:q:r:f:w:t:e")) != -1) {
		switch (opt) {
		case 'd':
			o.dev = optarg;
			break;
		case 'a':
			o.ip = optarg;
			break;
		case 'p':
			o.procs = atoi(optarg);
			break;
		case 'q':
			if (parse_sizes(&o, optarg))
				usage();
			break;
		case 'r':
			o.runs = atoi(optarg);
			break;
		case 'f':
			o.factor = atof(optarg);
			break;
		case 'w':
			o.depth = atoi(optarg);
			break;
		case 't':
			o.timeout_s = atoi(optarg);
			break;
		case 'e':
			o.events = true;
			break;
		default:
			usage();
		}
	}
	if (optind != argc || o.procs < 1 || o.procs > MAX_PROCS || o.runs < 1 || o.depth < 1 ||
	    o.depth > 4096 || o.timeout_s < 1 || !(o.factor >= 1.0))
		usage();
	signal(SIGPIPE, SIG_IGN);
	x = calloc(1, sizeof(*x));
	if (!x)
		return 1;

	printf("%d process%s on %s, RC QPs with a CQ each, queues %d deep, %s, best of %d run%s\n",
	       o.procs, o.procs == 1 ? "" : "es", o.dev, o.depth,
	       o.events ? "completion events" : "CQs polled", o.runs, o.runs == 1 ? "" : "s");
	printf("%8s %8s %12s %12s %13s %9s %10s %10s %8s %4s\n", "QPs/proc", "QPs", "setup us/QP",
	       "setup CPU us", "destroy us/QP", "bytes/QP", "traffic ms", "CPU ms", "open ms",
	       "fds");
	for (int s = 0; s < o.nsizes; s++) {
		for (int k = 0; k < o.runs; k++) {
			int rc = run_once(&o, o.sizes[s], x);

			if (rc == 77) {
				printf("SKIP: cannot open %s\n", o.dev);
				free(x);
				return 77;
			}
			if (rc) {
				fprintf(stderr, "FAIL: %d processes x %d QPs: a worker failed\n",
					o.procs, o.sizes[s]);
				free(x);
				return 1;
			}
			bad |= account(x, &fig[s], k == 0);
		}
		printf("%8d %8d %12.1f %12.1f %13.1f %9.0f %10.1f %10.1f %8.1f %4d\n", fig[s].nq,
		       fig[s].nq * o.procs, fig[s].setup_us, fig[s].setup_cpu_us, fig[s].destroy_us,
		       fig[s].bytes, fig[s].traffic_ms, fig[s].traffic_cpu_ms, fig[s].open_ms,
		       fig[s].fds);
		if (o.procs > 1)
			printf("%8s membership file watches (last run): %d inotify, %d timer\n", "",
			       fig[s].inotify, fig[s].timers);
		fflush(stdout);
	}
	if (o.nsizes > 1) {
		const struct size_fig *lo = &fig[0], *hi = &fig[o.nsizes - 1];
		double g = hi->setup_cpu_us / lo->setup_cpu_us;

		printf("set-up CPU time per QP, %d QPs against %d: x%.2f (at most x%.2f); "
		       "wall time x%.2f\n",
		       hi->nq, lo->nq, g, o.factor, hi->setup_us / lo->setup_us);
		if (g > o.factor) {
			fprintf(stderr, "FAIL: set-up CPU time per QP grew x%.2f\n", g);
			bad = 1;
		}
	}
	free(x);
	if (bad) {
		fprintf(stderr, "FAIL\n");
		return 1;
	}
	printf("PASS: every QP sent and received its message\n");
	return 0;
}
