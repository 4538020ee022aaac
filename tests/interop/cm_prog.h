/* SPDX-License-Identifier: MIT */
/*
 * What the interop programs (ownqp.c, mwinv.c) share: one deadline for the whole run, failure
 * lines naming the call, address lookup, and waits for CM events bounded by the deadline.
 * Each program defines CM_PROG (its name, for the lines it prints) and RUN_LIMIT_MS (ms) before
 * including this, and sets deadline_ms = now_ms() + RUN_LIMIT_MS at its start. The programs are
 * ordinary rdma-core programs: they also run in the VM of an interop case, built on the host.
 */
#ifndef UROCE_TESTS_INTEROP_CM_PROG_H
#define UROCE_TESTS_INTEROP_CM_PROG_H

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <rdma/rdma_cma.h>

#if !defined(CM_PROG) || !defined(RUN_LIMIT_MS)
#error "define CM_PROG and RUN_LIMIT_MS before including cm_prog.h"
#endif

static uint64_t deadline_ms;

static inline uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* What is left of the run's deadline, in ms (0 when it has passed). */
static inline int left_ms(void)
{
	uint64_t now = now_ms();

	return now >= deadline_ms ? 0 : (int)(deadline_ms - now);
}

/* A failed call: its name and errno's text. Returns -1. */
static inline int fail_errno(const char *call)
{
	fprintf(stderr, CM_PROG ": %s failed: %s\n", call, strerror(errno));
	return -1;
}

/* A call that returns an errno value itself (ibv_modify_qp, ibv_post_*). Returns -1. */
static inline int fail_code(const char *call, int code)
{
	fprintf(stderr, CM_PROG ": %s failed: %s\n", call, strerror(code));
	return -1;
}

/* Make fd non-blocking; what names it in the failure line. 0 or -1. */
static inline int set_nonblock(int fd, const char *what)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return fail_errno(what);
	return 0;
}

/* host:port for a TCP-style rdma_cm address (passive without host: any IPv4 address). */
static inline int resolve(const char *host, const char *port, bool passive, struct addrinfo **res)
{
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV};
	int err;

	if (passive) {
		hints.ai_flags |= AI_PASSIVE;
		if (!host)
			hints.ai_family = AF_INET;
	}
	err = getaddrinfo(host, port, &hints, res);
	if (err) {
		fprintf(stderr, CM_PROG ": getaddrinfo(%s, %s) failed: %s\n", host ? host : "any",
			port, gai_strerror(err));
		return -1;
	}
	return 0;
}

/*
 * The next CM event, within the run's deadline: 0 and *ev (to be acknowledged), or -1. The
 * channel's fd is non-blocking, so a wake-up without an event only loops.
 */
static inline int next_event(struct rdma_event_channel *ch, struct rdma_cm_event **ev)
{
	for (;;) {
		struct pollfd p = {.fd = ch->fd, .events = POLLIN};
		int n;

		if (rdma_get_cm_event(ch, ev) == 0)
			return 0;
		if (errno != EAGAIN && errno != EINTR)
			return fail_errno("rdma_get_cm_event");
		n = poll(&p, 1, left_ms());
		if (n < 0 && errno != EINTR)
			return fail_errno("poll on the CM channel");
		if (n == 0) {
			fprintf(stderr, CM_PROG ": no CM event within the run's %d s\n",
				RUN_LIMIT_MS / 1000);
			return -1;
		}
	}
}

/* The next event must be `want`; it is acknowledged unless out (then *out holds it). */
static inline int expect_event(struct rdma_event_channel *ch, enum rdma_cm_event_type want,
			       struct rdma_cm_event **out)
{
	struct rdma_cm_event *ev;

	if (next_event(ch, &ev))
		return -1;
	if (ev->event != want) {
		fprintf(stderr, CM_PROG ": waiting for %s, got %s (status %d)\n",
			rdma_event_str(want), rdma_event_str(ev->event), ev->status);
		rdma_ack_cm_event(ev);
		return -1;
	}
	if (out)
		*out = ev;
	else
		rdma_ack_cm_event(ev);
	return 0;
}

#endif
