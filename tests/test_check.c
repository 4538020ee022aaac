/* SPDX-License-Identifier: MIT */
/*
 * The harness itself: a CHECK_EQ that fails counts one failure and prints both expressions and
 * both values; one that holds prints nothing; operands are evaluated once and compared as
 * numbers; CHECK_MEM_EQ names the first byte that differs. Failures made on purpose are
 * written to a temporary file instead of stderr and taken back off the count.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "check.h"

static char captured[4096];

/* Runs fn with stderr sent to a temporary file; returns the failures it recorded. */
static int capture(void (*fn)(void))
{
	int before = check_failures, saved = dup(2);
	FILE *t = tmpfile();
	size_t n = 0;

	if (saved < 0 || !t) {
		perror("capture");
		exit(1);
	}
	fflush(stderr);
	dup2(fileno(t), 2);
	fn();
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	rewind(t);
	n = fread(captured, 1, sizeof(captured) - 1, t);
	captured[n] = '\0';
	fclose(t);
	int made = check_failures - before;

	check_failures = before;
	return made;
}

static int calls;

static int next_value(void)
{
	return ++calls;
}

static void equal_values(void)
{
	uint32_t len = 5000;

	CHECK_EQ(len, 5000);
	CHECK_EQ(next_value(), 1);
	CHECK_LT(-1, 0u); /* as numbers, not as C's unsigned conversion */
	CHECK_GE(UINT64_MAX, INT64_MAX);
	CHECK_MEM_EQ("abc", "abc", 3);
}

static void different_values(void)
{
	int rc = -22;
	uint64_t big = 0x10000000000ull;

	CHECK_EQ(rc, 0);
	CHECK_NE(big, 0x10000000000ull);
	CHECK_MEM_EQ("abcd", "abXd", 4);
}

int main(void)
{
	CHECK_EQ(capture(equal_values), 0);
	CHECK_EQ(captured[0], '\0');
	CHECK_EQ(calls, 1);

	CHECK_EQ(capture(different_values), 3);
	CHECKF(strstr(captured, "CHECK failed: rc == 0: -22 vs 0 (0x0)\n"), "%s", captured);
	CHECKF(strstr(captured, "CHECK failed: big != 0x10000000000ull: 1099511627776 "
				"(0x10000000000) vs 1099511627776 (0x10000000000)\n"),
	       "%s", captured);
	CHECKF(strstr(captured, "first difference at byte 2: 0x63 vs 0x58\n"), "%s", captured);
	return check_exit("check");
}
