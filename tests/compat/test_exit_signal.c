/* SPDX-License-Identifier: MIT */
/*
 * A program that calls exit() from its SIGTERM handler (as libinfinipath, loaded by libfabric,
 * does) ends when the signal interrupts it inside uroce's locks: the libraries' exit handlers
 * do not wait for a lock the interrupted thread holds (host/os/exit_lock.h).
 *
 * Scenario, ROUNDS times for each of three loops, each in a child process:
 * - verbs: busy-polling an empty CQ of the device (each poll a progress round under the
 *   context's lock, most of its time in the receive call);
 * - cm: polling a non-blocking rdma_cm event channel, with an id listening on the device's
 *   address, as libfabric's rxm does between messages (librdmacm's lock, the CM's context);
 * - cm and verbs: the listening id, and the CQ busy-polled (the CM's exit handler must not wait
 *   for the program's context either);
 * the parent sends SIGTERM once the child is in its loop, after a delay that varies with the
 * round, and the child must end, with its handler's status, within END_MS.
 * The device is argv[1] (default uroce_lo) with IPv4 address argv[2] (default 127.0.0.1).
 * Exit 77 (skip) when the device does not exist or cannot be opened here.
 */
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <arpa/inet.h>
#include <fcntl.h>
#include <unistd.h>

#include "../child_end.h"
#include "verbs_kit.h"

#define ROUNDS	   12
#define END_MS	   5000 /* the exit handlers wait at most 100 ms per lock */
#define HANDLER_ST 3

static const char *devname = "uroce_lo", *ip4 = "127.0.0.1";

static void on_term(int sig)
{
	(void)sig;
	exit(HANDLER_ST); /* not async-signal-safe, as in the programs this stands for */
}

static uint64_t now_us(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000u + (uint64_t)t.tv_nsec / 1000u;
}

/* The child's loop: never returns; writes a byte to ready once it polls. */
static void verbs_loop(int ready)
{
	struct ibv_context *ctx = open_device(devname);
	struct ibv_cq *cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	struct ibv_wc wc;

	if (!cq)
		_exit(10);
	(void)ibv_poll_cq(cq, 1, &wc);
	if (write(ready, "v", 1) != 1)
		_exit(11);
	for (;;)
		(void)ibv_poll_cq(cq, 1, &wc);
}

/* A non-blocking event channel with an id listening on the device's address. */
static struct rdma_event_channel *cm_listen(void)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *id = NULL;
	struct sockaddr_in a = {.sin_family = AF_INET};

	if (!ch || rdma_create_id(ch, &id, NULL, RDMA_PS_TCP))
		_exit(12);
	inet_pton(AF_INET, ip4, &a.sin_addr);
	if (rdma_bind_addr(id, (struct sockaddr *)&a) || rdma_listen(id, 4))
		_exit(13);
	if (fcntl(ch->fd, F_SETFL, fcntl(ch->fd, F_GETFL) | O_NONBLOCK))
		_exit(14);
	return ch;
}

static void cm_loop(int ready)
{
	struct rdma_event_channel *ch = cm_listen();
	struct rdma_cm_event *ev;

	if (write(ready, "c", 1) != 1)
		_exit(11);
	for (;;)
		if (rdma_get_cm_event(ch, &ev) == 0)
			rdma_ack_cm_event(ev);
}

/* Both, as rxm: the CM's device opened, the program's own CQ busy-polled. */
static void both_loop(int ready)
{
	(void)cm_listen();
	verbs_loop(ready);
}

/* Run one child in loop, SIGTERM it delay_us after it is ready; 0 when it ended as it should. */
static int one_round(void (*loop)(int), unsigned delay_us, const char *what)
{
	int p[2];
	char c;

	if (pipe(p))
		return -1;
	pid_t pid = fork();

	if (pid == 0) {
		close(p[0]);
		signal(SIGTERM, on_term);
		loop(p[1]);
	}
	close(p[1]);
	if (pid < 0 || read(p[0], &c, 1) != 1) {
		fprintf(stderr, "%s: the child did not start\n", what);
		close(p[0]);
		return -1;
	}
	close(p[0]);
	/* The delay puts the signal at a different point of the child's loop each round. */
	for (uint64_t end = now_us() + delay_us; now_us() < end;)
		;
	kill(pid, SIGTERM);

	int st = 0;

	if (child_end(pid, END_MS, &st)) {
		fprintf(stderr, "%s: the child did not end within %d ms of SIGTERM\n", what,
			END_MS);
		return -1;
	}
	if (!WIFEXITED(st) || WEXITSTATUS(st) != HANDLER_ST) {
		fprintf(stderr, "%s: the child ended with status 0x%x\n", what, st);
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc > 1)
		devname = argv[1];
	if (argc > 2)
		ip4 = argv[2];
	ibv_close_device(open_device(devname)); /* skips (77) when there is no such device */

	for (unsigned i = 0; i < ROUNDS; i++) {
		unsigned delay = 1000 + 997 * i; /* 1 to 12 ms into the loop */

		CHECK_EQ(one_round(verbs_loop, delay, "verbs"), 0);
		CHECK_EQ(one_round(cm_loop, delay, "cm"), 0);
		CHECK_EQ(one_round(both_loop, delay, "cm and verbs"), 0);
	}
	return check_exit_with("exit_signal", verbs_kit_checks);
}
