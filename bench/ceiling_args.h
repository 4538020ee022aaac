/* SPDX-License-Identifier: MIT */
/* What the ceiling tools (udp_ceiling.c, afpacket_ceiling.c) share: a clock and argument parsing.
 */
#ifndef UROCE_BENCH_CEILING_ARGS_H
#define UROCE_BENCH_CEILING_ARGS_H

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

/* CLOCK_MONOTONIC in ns. */
static inline uint64_t ceiling_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* A decimal number in [lo, hi], or -1. */
static inline long ceiling_number(const char *s, long lo, long hi)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi)
		return -1;
	return v;
}

#endif
