/* SPDX-License-Identifier: MIT */
/*
 * A bounded wait for a child process to end: child_end(pid, ms, &status) is 0 with the child
 * reaped and its wait status in status when it ended within ms (a pidfd polled: no sleep), -1
 * when it did not (or could not be watched or reaped), the child then killed (SIGKILL) and
 * reaped. Header-only.
 */
#ifndef UROCE_TESTS_CHILD_END_H
#define UROCE_TESTS_CHILD_END_H

#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

static inline int child_end(pid_t pid, int ms, int *status)
{
	int pfd = (int)syscall(SYS_pidfd_open, pid, 0);
	struct pollfd w = {.fd = pfd, .events = POLLIN};
	int r = pfd >= 0 ? poll(&w, 1, ms) : -1;

	if (r != 1)
		kill(pid, SIGKILL);
	pid_t w_pid = waitpid(pid, status, 0);

	if (pfd >= 0)
		close(pfd);
	return r == 1 && w_pid == pid ? 0 : -1;
}

#endif
