/* SPDX-License-Identifier: MIT */
/*
 * The system calls uroce makes inside a verb, as direct system calls: not cancellation points.
 *
 * glibc makes recvmmsg, sendmmsg, epoll_wait and write cancellation points: a thread with
 * a deferred cancel pending that reaches one of them exits there. Inside ibv_poll_cq or
 * ibv_post_send that is with the context's lock held, and every other thread using the device
 * would then wait for it forever; rdma-core's verbs make no system call there, so applications
 * cancel polling threads. The calls below do not block (MSG_DONTWAIT, a zero timeout, an
 * eventfd's count, which waits only at its maximum), so they lose nothing by not being cancellation
 * points, and they skip glibc's per-call cancellation bookkeeping. Each returns what the libc call
 * returns (-1 and errno on failure). The rare paths inside a poll or a post that open files or talk
 * to netlink (a share group's membership change, a RoCE v1 neighbour lookup) run between
 * uroce_cancel_off and uroce_cancel_restore instead.
 */
#ifndef UROCE_HOST_OS_NOCANCEL_H
#define UROCE_HOST_OS_NOCANCEL_H

#include <pthread.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

static inline int uroce_recvmmsg(int fd, struct mmsghdr *m, unsigned n, int flags)
{
	return (int)syscall(SYS_recvmmsg, fd, m, n, flags, NULL);
}

static inline int uroce_sendmmsg(int fd, struct mmsghdr *m, unsigned n, int flags)
{
	return (int)syscall(SYS_sendmmsg, fd, m, n, flags);
}

/* epoll_wait with a zero timeout: what is ready now (no signal mask: its size is not read). */
static inline int uroce_epoll_ready(int epfd, struct epoll_event *ev, int max)
{
	return (int)syscall(SYS_epoll_pwait, epfd, ev, max, 0, NULL, (size_t)8);
}

static inline ssize_t uroce_write(int fd, const void *buf, size_t len)
{
	return (ssize_t)syscall(SYS_write, fd, buf, len);
}

/* Disable cancellation for a slow path; returns the state to give uroce_cancel_restore. */
static inline int uroce_cancel_off(void)
{
	int old = PTHREAD_CANCEL_ENABLE;

	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);
	return old;
}

static inline void uroce_cancel_restore(int old)
{
	pthread_setcancelstate(old, NULL);
}

#endif
