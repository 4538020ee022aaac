/* SPDX-License-Identifier: MIT */
/* What the ceiling tools (udp_ceiling.c, afpacket_ceiling.c) share: their argument parsing. */
#ifndef UROCE_BENCH_CEILING_ARGS_H
#define UROCE_BENCH_CEILING_ARGS_H

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

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

/*
 * The options after the fixed arguments, argv[first..argc-1]: --no-crc clears *crc; a sender's
 * --corrupt-every N (1 to 1000000) sets *corrupt. Returns 0, or -1 for anything else.
 */
static inline int ceiling_options(int argc, char **argv, int first, bool send, bool *crc,
				  long *corrupt)
{
	for (int i = first; i < argc; i++) {
		if (!strcmp(argv[i], "--no-crc"))
			*crc = false;
		else if (send && !strcmp(argv[i], "--corrupt-every") && i + 1 < argc &&
			 (*corrupt = ceiling_number(argv[i + 1], 1, 1000000)) > 0)
			i++;
		else
			return -1;
	}
	return 0;
}

#endif
