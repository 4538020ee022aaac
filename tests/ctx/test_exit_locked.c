/* SPDX-License-Identifier: MIT */
/*
 * A process that exits while it holds a share group's file lock ends, and one that exits
 * normally still leaves its groups. The lock stands for a thread that a signal interrupted
 * inside a device's open (the join locks the group's membership file before the context
 * exists) when the signal's handler calls exit(), as libinfinipath's does: the exit handler,
 * which leaves every open context's groups under that same lock, must not wait for it.
 *
 * Scenario, each in a child process with a context open on uroce_lo (127.0.0.1, UROCE_PORT),
 * which must end with its own status within END_MS:
 * - leaves: exit(): the group's membership file no longer lists it;
 * - held: the group's file locked (on a descriptor of its own, as the join's), exit(): it ends,
 *   and its line stays in the file (the kernel closed its socket; the next member prunes it).
 * Run with UROCE_RUNDIR set to an empty directory and UROCE_PORT.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <unistd.h>

#include "../check.h"
#include "../child_end.h"
#include "host/config/rundir.h"
#include "host/ctx.h"
#include "host/io/locked_file.h"
#include "host/io/share_members.h"

#define END_MS	 5000 /* the exit handler waits at most 100 ms for a lock */
#define CHILD_ST 3

static char group[512]; /* the membership file of 127.0.0.1:UROCE_PORT's group */

static void child(bool hold)
{
	struct uroce_ctx_cfg cfg = {0};
	struct uroce_ctx *c;

	if (uroce_ctx_open("uroce_lo", &cfg, &c))
		_exit(10);
	if (hold && uroce_locked_file_open(group, LOCK_EX, false) < 0)
		_exit(11);
	exit(CHILD_ST);
}

/* Fork child(hold); 0 when it ended with CHILD_ST within END_MS. */
static int run_child(bool hold)
{
	pid_t pid = fork();

	if (pid == 0)
		child(hold);
	if (pid < 0)
		return -1;
	int st = 0;

	if (child_end(pid, END_MS, &st)) {
		fprintf(stderr, "the child (%s) did not end within %d ms\n",
			hold ? "held" : "leaves", END_MS);
		return -1;
	}
	CHECKF(WIFEXITED(st) && WEXITSTATUS(st) == CHILD_ST, "child status 0x%x", st);
	return 0;
}

/* The members the group's file lists. */
static int members(void)
{
	struct uroce_share_member m[UROCE_SHARE_MAX_MEMBERS];
	uint64_t gen;

	return uroce_share_read(group, &gen, m, UROCE_SHARE_MAX_MEMBERS);
}

int main(void)
{
	char rundir[256];
	const char *port = getenv("UROCE_PORT");
	struct sockaddr_in a = {.sin_family = AF_INET,
				.sin_port = htons((uint16_t)atoi(port ? port : "4791")),
				.sin_addr.s_addr = htonl(INADDR_LOOPBACK)};

	if (!getenv("UROCE_RUNDIR")) {
		fprintf(stderr, "set UROCE_RUNDIR\n");
		return 2;
	}
	CHECK_EQ(uroce_rundir_path(rundir, sizeof(rundir)), 0);
	CHECK_EQ(uroce_share_path(group, sizeof(group), rundir, (struct sockaddr *)&a), 0);

	CHECK_EQ(run_child(false), 0);
	CHECK_EQ(members(), 0);
	CHECK_EQ(run_child(true), 0);
	CHECK_EQ(members(), 1);
	return check_exit("exit_locked");
}
