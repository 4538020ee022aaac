/* SPDX-License-Identifier: MIT */
/*
 * A minimal test harness: CHECK() records a failure with its location and goes on; a test
 * binary's main returns check_exit(), non-zero when any check failed.
 */
#ifndef UROCE_TESTS_CHECK_H
#define UROCE_TESTS_CHECK_H

#include <stdio.h>
#include <stdlib.h>

static int check_failures;
static long check_count;

#define CHECK(cond)                                                                               \
	do {                                                                                      \
		check_count++;                                                                    \
		if (!(cond)) {                                                                    \
			check_failures++;                                                         \
			fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);  \
		}                                                                                 \
	} while (0)

#define CHECKF(cond, ...)                                                                         \
	do {                                                                                      \
		check_count++;                                                                    \
		if (!(cond)) {                                                                    \
			check_failures++;                                                         \
			fprintf(stderr, "%s:%d: CHECK failed: %s: ", __FILE__, __LINE__, #cond);  \
			fprintf(stderr, __VA_ARGS__);                                             \
			fputc('\n', stderr);                                                      \
		}                                                                                 \
	} while (0)

/* Stop early when a test has failed too often to be worth reading further. */
#define CHECK_BAIL()                                                                              \
	do {                                                                                      \
		if (check_failures > 50) {                                                        \
			fprintf(stderr, "too many failures, stopping\n");                         \
			exit(1);                                                                  \
		}                                                                                 \
	} while (0)

static inline int check_exit(const char *name)
{
	printf("%s: %ld checks, %d failed\n", name, check_count, check_failures);
	return check_failures ? 1 : 0;
}

#endif
