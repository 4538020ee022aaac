/* SPDX-License-Identifier: MIT */
/*
 * Locks taken by the libraries' exit handlers. A program may call exit() from a signal handler
 * (libinfinipath, which libfabric loads, does so for SIGTERM), and the signal may have
 * interrupted a thread, the exiting one included, inside one of our locks: a handler that waits
 * for that lock waits forever, and the process never ends. So an exit handler waits a bounded
 * time (UROCE_EXIT_LOCK_NS) and, when the lock does not come, leaves what it guards alone: the
 * kernel closes the process's sockets, and the CM's wills send its last messages.
 */
#ifndef UROCE_HOST_OS_EXIT_LOCK_H
#define UROCE_HOST_OS_EXIT_LOCK_H

#include <pthread.h>
#include <stdbool.h>
#include <time.h>

#include "host/os/mono_clock.h"

#define UROCE_EXIT_LOCK_NS 100000000ull /* 100 ms */

/* Lock m if it comes within UROCE_EXIT_LOCK_NS; false (not locked) if not. */
static inline bool uroce_exit_lock(pthread_mutex_t *m)
{
	uint64_t end = uroce_mono_ns() + UROCE_EXIT_LOCK_NS;
	struct timespec t = {.tv_sec = (time_t)(end / 1000000000u),
			     .tv_nsec = (long)(end % 1000000000u)};

	return pthread_mutex_clocklock(m, CLOCK_MONOTONIC, &t) == 0;
}

#endif
