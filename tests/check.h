/* SPDX-License-Identifier: MIT */
/*
 * A minimal test harness: CHECK() records a failure with its location and goes on; a test
 * binary's main returns check_exit(), non-zero when any check failed.
 *
 * CHECK_EQ(a, b) and its siblings compare two integer values (any integer or enum type) and on
 * failure print both expressions and both values, in decimal and hex. Each operand is evaluated
 * once. The comparison is of the values as numbers: -1 is less than 0u. For every comparison
 * that compiles without -Wsign-compare's warning this is what C's operators give too. A pointer,
 * floating or struct operand does not compile (no _Generic association): use CHECK for those.
 *
 * CHECK_MEM_EQ(a, b, len) is memcmp(a, b, len) == 0 that prints the first byte that differs.
 */
#ifndef UROCE_TESTS_CHECK_H
#define UROCE_TESTS_CHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
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

/* An integer operand of CHECK_EQ and its siblings, kept with its signedness. */
struct check_int {
	bool is_signed;
	int64_t s; /* the value, when is_signed */
	uint64_t u; /* the value, when !is_signed */
};

static inline struct check_int check_int_signed(int64_t v)
{
	return (struct check_int){.is_signed = true, .s = v};
}

static inline struct check_int check_int_unsigned(uint64_t v)
{
	return (struct check_int){.is_signed = false, .u = v};
}

/* Picks by the promoted type, as the comparison operators promote their operands. */
#define check_int_of(x)                                                                           \
	_Generic(+(x),                                                                            \
		int: check_int_signed,                                                            \
		long: check_int_signed,                                                           \
		long long: check_int_signed,                                                      \
		unsigned: check_int_unsigned,                                                     \
		unsigned long: check_int_unsigned,                                                \
		unsigned long long: check_int_unsigned)(x)

/* -1, 0 or 1 as a is less than, equal to or greater than b, as numbers. */
static inline int check_int_cmp(struct check_int a, struct check_int b)
{
	bool a_neg = a.is_signed && a.s < 0, b_neg = b.is_signed && b.s < 0;

	if (a_neg != b_neg)
		return a_neg ? -1 : 1;
	if (a_neg)
		return a.s < b.s ? -1 : a.s > b.s;
	uint64_t au = a.is_signed ? (uint64_t)a.s : a.u, bu = b.is_signed ? (uint64_t)b.s : b.u;

	return au < bu ? -1 : au > bu;
}

static inline void check_int_print(struct check_int v)
{
	if (v.is_signed && v.s < 0)
		fprintf(stderr, "%lld", (long long)v.s);
	else if (v.is_signed)
		fprintf(stderr, "%lld (0x%llx)", (long long)v.s, (unsigned long long)v.s);
	else
		fprintf(stderr, "%llu (0x%llx)", (unsigned long long)v.u, (unsigned long long)v.u);
}

static inline void check_int_failed(const char *file, int line, const char *a_text,
				    const char *op, const char *b_text, struct check_int a,
				    struct check_int b)
{
	check_failures++;
	fprintf(stderr, "%s:%d: CHECK failed: %s %s %s: ", file, line, a_text, op, b_text);
	check_int_print(a);
	fprintf(stderr, " vs ");
	check_int_print(b);
	fputc('\n', stderr);
}

#define CHECK_INT_OP_(a, op, b)                                                                   \
	do {                                                                                      \
		struct check_int check_a_ = check_int_of(a);                                      \
		struct check_int check_b_ = check_int_of(b);                                      \
                                                                                                  \
		check_count++;                                                                    \
		if (!(check_int_cmp(check_a_, check_b_) op 0))                                    \
			check_int_failed(__FILE__, __LINE__, #a, #op, #b, check_a_, check_b_);    \
	} while (0)

#define CHECK_EQ(a, b) CHECK_INT_OP_(a, ==, b)
#define CHECK_NE(a, b) CHECK_INT_OP_(a, !=, b)
#define CHECK_LT(a, b) CHECK_INT_OP_(a, <, b)
#define CHECK_LE(a, b) CHECK_INT_OP_(a, <=, b)
#define CHECK_GT(a, b) CHECK_INT_OP_(a, >, b)
#define CHECK_GE(a, b) CHECK_INT_OP_(a, >=, b)

static inline void check_mem_eq(const char *file, int line, const char *a_text,
				const char *b_text, const void *a, const void *b, size_t len)
{
	const unsigned char *pa = a, *pb = b;

	check_count++;
	for (size_t i = 0; i < len; i++) {
		if (pa[i] != pb[i]) {
			check_failures++;
			fprintf(stderr,
				"%s:%d: CHECK failed: %s and %s, %zu bytes: first difference at "
				"byte %zu: 0x%02x vs 0x%02x\n",
				file, line, a_text, b_text, len, i, pa[i], pb[i]);
			return;
		}
	}
}

#define CHECK_MEM_EQ(a, b, len) check_mem_eq(__FILE__, __LINE__, #a, #b, (a), (b), (len))

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

/*
 * check_exit() for a program whose checks are made in another file too (a test kit linked with
 * it): the counters above are per file, so kit_checks reports the kit's count and failures, and
 * they are added to this file's before the verdict.
 */
static inline int check_exit_with(const char *name,
				  void (*kit_checks)(long *count, int *failures))
{
	long n;
	int failed;

	kit_checks(&n, &failed);
	check_count += n;
	check_failures += failed;
	return check_exit(name);
}

#endif
