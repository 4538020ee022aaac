/* SPDX-License-Identifier: MIT */
/*
 * Forked processes open uroce_lo (127.0.0.1) at once, each binding the same (address, port):
 * RC QPs in different processes exchange SEND and RDMA WRITE, and no packet reaches a process
 * that does not own its QP (DROP_NO_QP stays 0). Then a member in the middle of the group leaves
 * (the kernel moves the last socket into its place), one joins, one is killed without leaving
 * (the survivors re-steer), and one process opens the device twice (a QPN slot collision). Each
 * phase checks the membership file against the kernel's group order and runs traffic.
 *
 *   test_share_procs    as root in a network namespace of its own on port 4791, else on the
 *                       host's loopback with UROCE_PORT 24797; UROCE_RUNDIR is a fresh
 *                       temporary directory
 *
 * Waits are bounded polls (socketpair replies, inotify on the membership file).
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "workers.h"
#include "host/io/share_members.h"

/* A connected RC QP pair between x (its QP index kx, context cx) and y. */
struct pair {
	struct proc *x, *y;
	int kx, ky;
	struct rep qx, qy;
};

static struct pair connect_pair(struct proc *x, int kx, int cx, struct proc *y, int ky, int cy)
{
	struct pair p = {.x = x, .y = y, .kx = kx, .ky = ky};

	p.qx = call(x, (struct cmd){.op = OP_QP, .qp = kx, .c = cx});
	p.qy = call(y, (struct cmd){.op = OP_QP, .qp = ky, .c = cy});
	CHECK(p.qx.rc == 0 && p.qy.rc == 0);
	CHECK(call(x, (struct cmd){.op = OP_CONNECT, .qp = kx, .qpn = p.qy.qpn}).rc == 0);
	CHECK(call(y, (struct cmd){.op = OP_CONNECT, .qp = ky, .qpn = p.qx.qpn}).rc == 0);
	return p;
}

/* SEND both ways (3000 bytes: three 1024-MTU packets) and an RDMA WRITE each way. */
static void exchange(const struct pair *p, uint32_t seed)
{
	struct proc *end[2] = {p->x, p->y};
	int k[2] = {p->kx, p->ky};
	const struct rep *q[2] = {&p->qx, &p->qy};

	for (int d = 0; d < 2; d++) {
		struct proc *s = end[d], *r = end[!d];
		int ks = k[d], kr = k[!d];
		uint32_t len = 3000 + 100 * (uint32_t)d;

		CHECK(call(r, (struct cmd){.op = OP_RECV, .qp = kr, .len = len}).rc == 0);
		int rc =
			call(s, (struct cmd){.op = OP_SEND, .qp = ks, .len = len, .seed = seed}).rc;

		CHECKF(rc == 0, "SEND %c -> %c: %d", s->name, r->name, rc);
		rc = call(r, (struct cmd){.op = OP_WAIT_RECV, .qp = kr, .len = len, .seed = seed})
			     .rc;
		CHECKF(rc == 0, "RECV %c <- %c: %d", r->name, s->name, rc);
		rc = call(s, (struct cmd){.op = OP_WRITE,
					  .qp = ks,
					  .len = 5000,
					  .seed = seed + 1,
					  .raddr = q[!d]->addr + WR_OFF,
					  .rkey = q[!d]->rkey})
			     .rc;
		CHECKF(rc == 0, "WRITE %c -> %c: %d", s->name, r->name, rc);
		rc = call(r, (struct cmd){.op = OP_CHECK, .qp = kr, .len = 5000, .seed = seed + 1})
			     .rc;
		CHECKF(rc == 0, "WRITE data at %c: %d", r->name, rc);
		seed += 2;
	}
}

static void no_strays(struct proc **ps, int n, const char *when)
{
	for (int i = 0; i < n; i++) {
		struct rep r = call(ps[i], (struct cmd){.op = OP_CNT});

		CHECKF(r.rc == 0 && r.drop_no_qp == 0 && r.retrans == 0,
		       "%s: %c: drop_no_qp %llu, retransmitted %llu", when, ps[i]->name,
		       (unsigned long long)r.drop_no_qp, (unsigned long long)r.retrans);
		CHECKF(r.rcvd > 0, "%s: %c received nothing", when, ps[i]->name);
	}
}

static char path[512];

/* The membership file lists exactly these pids, in this order. */
static int members_are(const pid_t *want, int n)
{
	struct uroce_share_member m[UROCE_SHARE_MAX_MEMBERS];
	uint64_t gen;
	int got = uroce_share_read(path, &gen, m, UROCE_SHARE_MAX_MEMBERS);

	if (got != n)
		return 0;
	for (int i = 0; i < n; i++)
		if (m[i].pid != want[i])
			return 0;
	return 1;
}

/* Wait (5 s at most) until the membership file lists want: inotify, bounded polls. */
static int wait_members(const pid_t *want, int n)
{
	int in = inotify_init1(IN_NONBLOCK | IN_CLOEXEC), ok = 0;

	if (in >= 0)
		inotify_add_watch(in, path, IN_MODIFY | IN_DELETE_SELF);
	for (int i = 0; i < 50 && !(ok = members_are(want, n)); i++) {
		struct pollfd p = {.fd = in, .events = POLLIN};
		char buf[1024];

		if (poll(&p, 1, 100) > 0)
			while (read(in, buf, sizeof(buf)) > 0) {
			}
	}
	if (in >= 0)
		close(in);
	return ok;
}

static void show_members(const char *when)
{
	struct uroce_share_member m[UROCE_SHARE_MAX_MEMBERS];
	uint64_t gen;
	int n = uroce_share_read(path, &gen, m, UROCE_SHARE_MAX_MEMBERS);

	fprintf(stderr, "%s: gen %llu:", when, (unsigned long long)gen);
	for (int i = 0; i < n; i++)
		fprintf(stderr, " [%d] pid %d qpn %#x..%#x", i, m[i].pid, m[i].qpn_lo, m[i].qpn_hi);
	fputc('\n', stderr);
}

static void test_procs(const char *rundir)
{
	unsigned port = net_setup();
	struct sockaddr_in a = {.sin_family = AF_INET,
				.sin_port = htons((uint16_t)port),
				.sin_addr.s_addr = htonl(INADDR_LOOPBACK)};

	CHECK(uroce_share_path(path, sizeof(path), rundir, (struct sockaddr *)&a) == 0);

	/* Three processes, one group; the file lists them in joining order. */
	struct proc A = spawn('A'), B = spawn('B'), C = spawn('C');

	CHECK(members_are((pid_t[]){A.pid, B.pid, C.pid}, 3));
	show_members("A B C joined");
	struct pair ab = connect_pair(&A, 0, 0, &B, 0, 0);
	struct pair bc = connect_pair(&B, 1, 0, &C, 0, 0);
	struct pair ca = connect_pair(&C, 1, 0, &A, 1, 0);

	for (int round = 0; round < 3; round++) {
		exchange(&ab, 10 + (uint32_t)round * 10);
		exchange(&bc, 11 + (uint32_t)round * 10);
		exchange(&ca, 12 + (uint32_t)round * 10);
	}
	no_strays((struct proc *[]){&A, &B, &C}, 3, "three processes");
	/*
	 * On loopback GRO stays on while the group is shared (src/host/io/udp.c): each process took
	 * in some of the others' multi-packet GSO sends (a 5000-byte WRITE is five packets) whole.
	 */
	struct proc *abc[] = {&A, &B, &C};

	for (int i = 0; i < 3; i++) {
		struct rep r = call(abc[i], (struct cmd){.op = OP_CNT});

		CHECKF(r.rc == 0 && r.gro > 0, "%c: no GRO datagram received while shared",
		       abc[i]->name);
	}

	/* B (index 1) leaves: C moves from index 2 into index 1. */
	bye(&B);
	CHECK(members_are((pid_t[]){A.pid, C.pid}, 2));
	show_members("B left");
	exchange(&ca, 40);
	no_strays((struct proc *[]){&A, &C}, 2, "after B left");

	/* D joins at index 2 and talks to both. */
	struct proc D = spawn('D');

	CHECK(members_are((pid_t[]){A.pid, C.pid, D.pid}, 3));
	show_members("D joined");
	struct pair ad = connect_pair(&A, 2, 0, &D, 0, 0);
	struct pair cd = connect_pair(&C, 2, 0, &D, 1, 0);

	exchange(&ad, 50);
	exchange(&cd, 51);
	exchange(&ca, 52);
	no_strays((struct proc *[]){&A, &C, &D}, 3, "after D joined");

	/* A (index 0) is killed without leaving: the kernel moves D into index 0, and a
	 * survivor notices (pidfd) and re-attaches the program. */
	kill(A.pid, SIGKILL);
	waitpid(A.pid, NULL, 0);
	close(A.sk);
	CHECKF(wait_members((pid_t[]){D.pid, C.pid}, 2), "survivors did not prune A");
	show_members("A killed");
	exchange(&cd, 60);
	no_strays((struct proc *[]){&C, &D}, 2, "after A was killed");

	/* E opens the device twice: one process, two sockets in the group, two QPN slots. */
	struct proc E = spawn('E');

	CHECK(call(&E, (struct cmd){.op = OP_OPEN, .c = 1}).rc == 0);
	struct uroce_share_member m[8];
	uint64_t gen;

	CHECK(uroce_share_read(path, &gen, m, 8) == 4);
	CHECK(m[2].pid == E.pid && m[3].pid == E.pid && m[2].qpn_lo != m[3].qpn_lo);
	show_members("E opened twice");
	struct pair ee = connect_pair(&E, 0, 0, &E, 1, 1);
	struct pair ec = connect_pair(&E, 2, 1, &C, 3, 0);

	exchange(&ee, 70);
	exchange(&ec, 71);
	exchange(&cd, 72);
	no_strays((struct proc *[]){&C, &D, &E}, 3, "E twice");

	bye(&C);
	bye(&E);
	CHECK(members_are((pid_t[]){D.pid}, 1));
	bye(&D);
	struct stat st;

	CHECKF(stat(path, &st) < 0 && errno == ENOENT, "%s outlives the last member", path);
	/* Every slot was given back. */
	char slots[512], buf[64];

	snprintf(slots, sizeof(slots), "%s/share/slots", rundir);
	int fd = open(slots, O_RDONLY);

	CHECK(fd >= 0 && read(fd, buf, sizeof(buf)) == 0);
	if (fd >= 0)
		close(fd);
}

int main(int argc, char **argv)
{
	char tmp[] = "/tmp/uroce-share.XXXXXX";
	char cmd[600];

	(void)argv;
	if (argc != 1 || !mkdtemp(tmp)) {
		fprintf(stderr, "usage: %s\n", "test_share_procs");
		return 2;
	}
	setenv("UROCE_RUNDIR", tmp, 1);
	test_procs(tmp);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", tmp);
	return check_exit_with("procs", workers_checks);
}
