/* SPDX-License-Identifier: MIT */
/*
 * CM steering with processes: three forked processes on one device, two of them claiming
 * services (uroce_ctx_gsi_steer). Crafted QP1 MADs sent to the device reach exactly the process
 * the claims and comm ID slots name (counted by its backend: their ICRC is bad), conflicts and
 * overflows are refused, and a leaving CM hands its MADs on.
 *
 *   test_share_gsi                 RoCE v2 on uroce_lo, MADs as UDP datagrams to 127.0.0.1: as
 *                                  root in a network namespace of its own on port 4791, else on
 *                                  the host's loopback with UROCE_PORT 24797; UROCE_RUNDIR is a
 *                                  fresh temporary directory
 *   test_share_gsi DEV IFNAME      RoCE v1 device DEV, MADs as frames sent on IFNAME to its own
 *                                  MAC, tagged and untagged (run by v1.sh in its namespace)
 *
 * Waits are bounded polls.
 */
#include <errno.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "workers.h"
#include "qp1_mads.h"
#include "host/config/rundir.h"
#include "host/io/share_members.h"

static char path[512];

/*
 * How crafted QP1 MADs are sent: a UDP datagram to (127.0.0.1, port) (RoCE v2), or a RoCE v1
 * frame sent on interface ifindex to its own MAC, which the device's processes take from the
 * kernel as it leaves (afpacket.c's local delivery).
 */
struct mad_tx {
	int fd;
	struct sockaddr_in to;	 /* v2 */
	int ifindex;		 /* v1, else 0 */
	uint8_t mac[6], gid[16]; /* v1: the interface's MAC, the device's IPv4 GID */
};

static int mad_send(const struct mad_tx *t, const uint8_t *pl, bool vlan)
{
	uint8_t f[18 + 40 + GSI_LEN];

	if (!t->ifindex)
		return sendto(t->fd, pl, GSI_LEN, 0, (const struct sockaddr *)&t->to,
			      sizeof(t->to)) == GSI_LEN
			       ? 0
			       : -errno;
	uint32_t len = v1_frame(f, vlan, pl, GSI_LEN), e = vlan ? 18 : 14;
	struct sockaddr_ll ll = {
		.sll_family = AF_PACKET, .sll_ifindex = t->ifindex, .sll_halen = 6};

	memcpy(f, t->mac, 6);
	memcpy(f + 6, t->mac, 6);
	memcpy(f + e + 8, t->gid, 16);	/* source GID */
	memcpy(f + e + 24, t->gid, 16); /* destination GID */
	memcpy(ll.sll_addr, t->mac, 6);
	return sendto(t->fd, f, len, 0, (const struct sockaddr *)&ll, sizeof(ll)) == (ssize_t)len
		       ? 0
		       : -errno;
}

/*
 * Send one MAD and see which of ps[0..n) takes it in (2 s at most): exactly ps[want], nobody
 * else (waiting a little longer so that a duplicate would be seen).
 */
static void mad_expect(const struct mad_tx *t, struct proc **ps, int n, const uint8_t *pl,
		       bool vlan, int want, const char *what)
{
	uint64_t before[8], now[8];
	int got = -1, settle = 0;

	for (int i = 0; i < n; i++)
		before[i] = call(ps[i], (struct cmd){.op = OP_IO}).io_rx;
	int rc = mad_send(t, pl, vlan);

	CHECKF(rc == 0, "%s: send: %s", what, strerror(-rc));
	for (int round = 0; round < 200 && settle < 5; round++) {
		int moved = 0;

		poll(NULL, 0, 10);
		for (int i = 0; i < n; i++) {
			now[i] = call(ps[i], (struct cmd){.op = OP_IO}).io_rx;
			if (now[i] != before[i]) {
				moved++;
				got = i;
			}
		}
		if (moved > 1 || (moved == 1 && now[got] - before[got] > 1)) {
			got = -2;
			break;
		}
		settle += moved == 1;
	}
	CHECKF(got == want, "%s: taken by %c, want %c", what,
	       got == -2 ? '*'
	       : got < 0 ? '-'
			 : ps[got]->name,
	       ps[want]->name);
}

/* The line of pid in the membership file at p: its CM flag and claim count (-1: absent). */
static int claims_of(const char *p, pid_t pid, bool *cm)
{
	static struct uroce_share_member m[UROCE_SHARE_MAX_MEMBERS];
	uint64_t gen;
	int n = uroce_share_read(p, &gen, m, UROCE_SHARE_MAX_MEMBERS);

	for (int i = 0; i < n; i++) {
		if (m[i].pid == pid) {
			*cm = m[i].cm;
			return m[i].nids;
		}
	}
	return -1;
}

/*
 * Three processes on one device: A runs no CM, B claims two services, C one, and joined after
 * B (B is the designated CM). Crafted MADs (bad ICRC: each process counts what reaches it)
 * go where the claims and comm ID slots say; claims conflict and overflow are refused; leaves
 * hand the designated role on. v1: the same through each process's filter, tagged or not.
 */
static void test_gsi_procs(const struct mad_tx *t, const char *file)
{
	struct proc A = spawn('A'), B = spawn('B'), C = spawn('C');
	uint8_t pl[GSI_LEN];
	uint32_t sA, sB, sC;
	bool cm = true;

	sA = call(&A, (struct cmd){.op = OP_IO}).slot;
	sB = call(&B, (struct cmd){.op = OP_IO}).slot;
	sC = call(&C, (struct cmd){.op = OP_IO}).slot;
	CHECK(sA != sB && sB != sC && sA != sC);
	CHECK(call(&B,
		   (struct cmd){.op = OP_STEER, .nids = 2, .ids = {SID_TCP(5002), SID_TCP(5003)}})
		      .rc == 0);
	CHECK(call(&C, (struct cmd){.op = OP_STEER, .nids = 1, .ids = {SID_TCP(7000)}}).rc == 0);
	CHECK(call(&C,
		   (struct cmd){.op = OP_STEER, .nids = 2, .ids = {SID_TCP(7001), SID_TCP(5003)}})
		      .rc == -EADDRINUSE);
	CHECK(call(&C, (struct cmd){.op = OP_STEER, .nids = UROCE_SHARE_MAX_CLAIMS + 1}).rc ==
	      -ENOSPC);
	CHECK(claims_of(file, A.pid, &cm) == 0 && !cm);
	CHECK(claims_of(file, B.pid, &cm) == 2 && cm);
	CHECK(claims_of(file, C.pid, &cm) == 1 && cm); /* the refused calls changed nothing */

	struct proc *all[3] = {&A, &B, &C};

	for (int v = 0; v < (t->ifindex ? 2 : 1); v++) {
		bool vl = v == 1;

		gsi_payload(pl, 0x07, CM_REQ, comm_id(77, 1), 0, SID_TCP(5002));
		mad_expect(t, all, 3, pl, vl, 1, "REQ 5002");
		gsi_payload(pl, 0x07, CM_REQ, comm_id(77, 2), 0, SID_TCP(5003));
		mad_expect(t, all, 3, pl, vl, 1, "REQ 5003");
		gsi_payload(pl, 0x07, CM_REQ, comm_id(77, 3), 0, SID_TCP(7000));
		mad_expect(t, all, 3, pl, vl, 2, "REQ 7000");
		gsi_payload(pl, 0x07, CM_SIDR_REQ, comm_id(77, 4), 0, SID_TCP(7000));
		mad_expect(t, all, 3, pl, vl, 2, "SIDR_REQ 7000");
		gsi_payload(pl, 0x07, CM_REQ, comm_id(77, 5), 0, SID_TCP(7001));
		mad_expect(t, all, 3, pl, vl, 1, "REQ 7001 (unclaimed)");
		gsi_payload(pl, 0x07, CM_REP, comm_id(77, 6), comm_id(sC, 6), 0);
		mad_expect(t, all, 3, pl, vl, 2, "REP to C's comm ID");
		gsi_payload(pl, 0x07, CM_RTU, comm_id(77, 7), comm_id(sB, 7), 0);
		mad_expect(t, all, 3, pl, vl, 1, "RTU to B's comm ID");
		gsi_payload(pl, 0x07, CM_DREQ, comm_id(77, 8), comm_id(sA, 8), 0);
		mad_expect(t, all, 3, pl, vl, 1, "DREQ to A's slot (no CM there)");
		gsi_payload(pl, 0x07, CM_SIDR_REP, comm_id(sC, 9), 0, 0);
		mad_expect(t, all, 3, pl, vl, 2, "SIDR_REP to C's request ID");
		gsi_payload(pl, 0x04, 0x0001, 0, 0, 0);
		mad_expect(t, all, 3, pl, vl, 1, "PerfMgt");
	}
	/* B leaves: C is the only CM, and takes what B's claims named. */
	bye(&B);
	struct proc *ac[2] = {&A, &C};

	CHECK(claims_of(file, C.pid, &cm) == 1 && cm);
	gsi_payload(pl, 0x07, CM_REQ, comm_id(77, 10), 0, SID_TCP(5002));
	mad_expect(t, ac, 2, pl, false, 1, "REQ 5002 after B left");
	gsi_payload(pl, 0x07, CM_DREQ, comm_id(77, 11), comm_id(sB, 11), 0);
	mad_expect(t, ac, 2, pl, false, 1, "DREQ to B's slot after B left");
	/* Claims can be dropped; the CM stays the designated one. */
	CHECK(call(&C, (struct cmd){.op = OP_STEER, .nids = 0}).rc == 0);
	CHECK(claims_of(file, C.pid, &cm) == 0 && cm);
	gsi_payload(pl, 0x07, CM_REQ, comm_id(77, 12), 0, SID_TCP(7000));
	mad_expect(t, ac, 2, pl, false, 1, "REQ 7000 after C dropped its claims");
	/* No CM left: QP1 goes to A as before any claim. */
	bye(&C);
	struct proc *a[1] = {&A};

	gsi_payload(pl, 0x07, CM_REQ, comm_id(77, 13), 0, SID_TCP(7000));
	mad_expect(t, a, 1, pl, false, 0, "REQ with no CM left");
	bye(&A);
}

static void test_gsi_v2(const char *rundir)
{
	unsigned port = net_setup();
	struct mad_tx t = {.fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0),
			   .to = {.sin_family = AF_INET,
				  .sin_port = htons((uint16_t)port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK)}};

	CHECK(t.fd >= 0);
	CHECK(uroce_share_path(path, sizeof(path), rundir, (struct sockaddr *)&t.to) == 0);
	test_gsi_procs(&t, path);
	close(t.fd);
}

/* test_share_gsi DEV IFNAME (run by v1.sh in its namespace): the same over RoCE v1. */
static int test_gsi_v1(const char *dev, const char *ifname)
{
	struct mad_tx t = {.fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0),
			   .ifindex = (int)if_nametoindex(ifname)};
	struct ifreq ifr = {0};
	char rundir[256];

	w_dev = dev;
	w_gtype = UROCE_GID_V1;
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	CHECK(t.fd >= 0 && t.ifindex > 0 && ioctl(t.fd, SIOCGIFHWADDR, &ifr) == 0);
	memcpy(t.mac, ifr.ifr_hwaddr.sa_data, 6);
	memcpy(t.gid, "\0\0\0\0\0\0\0\0\0\0\xff\xff\xc6\x12\x46\x01", 16); /* 198.18.70.1 */
	CHECK(uroce_rundir_path(rundir, sizeof(rundir)) == 0);
	CHECK(uroce_share_v1_path(path, sizeof(path), rundir, t.ifindex) == 0);
	if (check_failures == 0)
		test_gsi_procs(&t, path);
	close(t.fd);
	return check_exit_with("v1gsi", workers_checks);
}

int main(int argc, char **argv)
{
	char tmp[] = "/tmp/uroce-share.XXXXXX";
	char cmd[600];

	if (argc == 3)
		return test_gsi_v1(argv[1], argv[2]);
	if (argc != 1 || !mkdtemp(tmp)) {
		fprintf(stderr, "usage: test_share_gsi [DEV IFNAME]\n");
		return 2;
	}
	setenv("UROCE_RUNDIR", tmp, 1);
	test_gsi_v2(tmp);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", tmp);
	return check_exit_with("gsi", workers_checks);
}
