/* SPDX-License-Identifier: MIT */
/*
 * The monotonic clock in nanoseconds: the time base of the engine's timers, the pacing policy
 * and the backends' own intervals (a vDSO call, no system call).
 */
#ifndef UROCE_HOST_OS_MONO_CLOCK_H
#define UROCE_HOST_OS_MONO_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t uroce_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#endif
