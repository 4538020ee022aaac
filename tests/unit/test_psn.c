/* SPDX-License-Identifier: MIT */
/*
 * wire/psn.h at the wrap points: 0, 0xFFFFFF and the +-2^23 boundaries of the comparison window,
 * against a reference model written with 64-bit signed arithmetic (roce-reference.md 1.6).
 */
#include <stdint.h>

#include "check.h"
#include "wire/psn.h"
#include "wire_util.h"

#define MOD  (INT64_C(1) << 24)
#define HALF (INT64_C(1) << 23)

/* (a - b) mod 2^24, mapped to [-2^23, 2^23). */
static int64_t ref_diff(uint32_t a, uint32_t b)
{
	int64_t d = (((int64_t)(a & 0xFFFFFF) - (int64_t)(b & 0xFFFFFF)) % MOD + MOD) % MOD;

	return d >= HALF ? d - MOD : d;
}

static uint32_t ref_add(uint32_t a, uint64_t n)
{
	return (uint32_t)(((uint64_t)a + n) % (uint64_t)MOD);
}

static uint32_t ref_sub(uint32_t a, uint64_t n)
{
	return (uint32_t)((((int64_t)a - (int64_t)(n % (uint64_t)MOD)) % MOD + MOD) % MOD);
}

static bool ref_in_window(uint32_t psn, uint32_t first, uint32_t count)
{
	int64_t off = (((int64_t)psn - (int64_t)first) % MOD + MOD) % MOD;

	return off < (int64_t)count;
}

static void check_pair(uint32_t a, uint32_t b)
{
	int64_t d = ref_diff(a, b);

	CHECKF(uroce_psn_diff(a, b) == d, "diff(%06x, %06x) = %d, want %lld", a, b,
	       uroce_psn_diff(a, b), (long long)d);
	CHECKF(uroce_psn_before(a, b) == (d < 0), "before(%06x, %06x)", a, b);
	CHECKF(uroce_psn_after(a, b) == (d > 0), "after(%06x, %06x)", a, b);
	CHECK_BAIL();
}

/* The values around each wrap point. */
static const uint32_t edges[] = {
	0x000000, 0x000001, 0x000002, 0x7FFFFE, 0x7FFFFF, 0x800000,
	0x800001, 0x800002, 0xFFFFFD, 0xFFFFFE, 0xFFFFFF,
};
#define NEDGES (sizeof(edges) / sizeof(edges[0]))

static void test_explicit(void)
{
	/* Masking. */
	CHECK_EQ(uroce_psn(0x1000000), 0);
	CHECK_EQ(uroce_psn(0xFFFFFFFF), 0xFFFFFF);
	CHECK_EQ(uroce_psn(0x1234567), 0x234567);
	CHECK(UROCE_PSN_MOD == 0x1000000u && UROCE_PSN_MASK == 0xFFFFFFu);

	/* add/sub wrap at 0 / 0xFFFFFF. */
	CHECK_EQ(uroce_psn_add(0xFFFFFF, 1), 0);
	CHECK_EQ(uroce_psn_add(0xFFFFFE, 3), 1);
	CHECK_EQ(uroce_psn_add(0, 0xFFFFFF), 0xFFFFFF);
	CHECK_EQ(uroce_psn_add(5, 0x1000000), 5);
	CHECK_EQ(uroce_psn_add(0xFFFFFF, 0xFFFFFFFF), 0xFFFFFE);
	CHECK_EQ(uroce_psn_sub(0, 1), 0xFFFFFF);
	CHECK_EQ(uroce_psn_sub(1, 3), 0xFFFFFE);
	CHECK_EQ(uroce_psn_sub(0xFFFFFF, 0xFFFFFF), 0);
	CHECK_EQ(uroce_psn_sub(7, 0x1000000), 7);
	CHECK_EQ(uroce_psn_sub(0, 0xFFFFFFFF), 1);

	/* diff: sign across the wrap, range [-2^23, 2^23). */
	CHECK_EQ(uroce_psn_diff(0, 0xFFFFFF), 1);
	CHECK_EQ(uroce_psn_diff(0xFFFFFF, 0), -1);
	CHECK_EQ(uroce_psn_diff(0x7FFFFF, 0), 0x7FFFFF);
	CHECK_EQ(uroce_psn_diff(0x800000, 0), -0x800000);
	CHECK_EQ(uroce_psn_diff(0, 0x800000), -0x800000);
	CHECK_EQ(uroce_psn_diff(0, 0x7FFFFF), -0x7FFFFF);
	CHECK_EQ(uroce_psn_diff(0x800001, 0), -0x7FFFFF);
	CHECK_EQ(uroce_psn_diff(0x123456, 0x123456), 0);
	CHECK_EQ(uroce_psn_diff(0x000010, 0xFFFFF0), 0x20);

	/* before/after. Exactly 2^23 apart, each is "before" the other (rxe's psn_compare). */
	CHECK(uroce_psn_before(0xFFFFFF, 0));
	CHECK(uroce_psn_after(0, 0xFFFFFF));
	CHECK(!uroce_psn_before(5, 5) && !uroce_psn_after(5, 5));
	CHECK(uroce_psn_before(0x800000, 0) && uroce_psn_before(0, 0x800000));
	CHECK(!uroce_psn_after(0x800000, 0) && !uroce_psn_after(0, 0x800000));
	CHECK(uroce_psn_after(0x7FFFFF, 0) && uroce_psn_before(0, 0x7FFFFF));

	/* in_window: [first, first + count) modulo 2^24. */
	CHECK(uroce_psn_in_window(0xFFFFFF, 0xFFFFFF, 1));
	CHECK(!uroce_psn_in_window(0, 0xFFFFFF, 1));
	CHECK(uroce_psn_in_window(0, 0xFFFFFF, 2));
	CHECK(uroce_psn_in_window(1, 0xFFFFFF, 3));
	CHECK(!uroce_psn_in_window(2, 0xFFFFFF, 3));
	CHECK(!uroce_psn_in_window(0xFFFFFE, 0xFFFFFF, 3));
	CHECK(!uroce_psn_in_window(7, 7, 0));
	CHECK(uroce_psn_in_window(0xFFFFFD, 0xFFFFFF, 0xFFFFFF));
	CHECK(!uroce_psn_in_window(0xFFFFFE, 0xFFFFFF, 0xFFFFFF));
	CHECK(!uroce_psn_in_window(0xFFFFFD, 0xFFFFFF, 0xFFFFFF - 1));
	CHECK(uroce_psn_in_window(0xFFFFFE, 0xFFFFFF, 0x1000000));
	CHECK(uroce_psn_in_window(0x7FFFFF, 0, 0x800000));
	CHECK(!uroce_psn_in_window(0x800000, 0, 0x800000));
}

static void test_edges(void)
{
	static const int32_t deltas[] = {0,	   1,	      -1,	2,	   -2,
					 0x7FFFFF, -0x7FFFFF, 0x800000, -0x800000, 0x7FFFFE,
					 0x800001, -0x800001, 0xFFFFFF, -0xFFFFFF};

	for (size_t i = 0; i < NEDGES; i++) {
		for (size_t j = 0; j < NEDGES; j++)
			check_pair(edges[i], edges[j]);
		for (size_t k = 0; k < sizeof(deltas) / sizeof(deltas[0]); k++) {
			uint32_t b = (uint32_t)(((int64_t)edges[i] + deltas[k]) & 0xFFFFFF);

			check_pair(edges[i], b);
			check_pair(b, edges[i]);
		}
	}
	static const uint32_t counts[] = {0,	    1,	      2,	 0x7FFFFF,  0x800000,
					  0x800001, 0xFFFFFF, 0x1000000, 0x1000001, 0xFFFFFFFF};

	for (size_t i = 0; i < NEDGES; i++) {
		for (size_t j = 0; j < NEDGES; j++) {
			for (size_t k = 0; k < sizeof(counts) / sizeof(counts[0]); k++) {
				uint32_t p = edges[i], f = edges[j], c = counts[k];

				CHECKF(uroce_psn_in_window(p, f, c) == ref_in_window(p, f, c),
				       "in_window(%06x, %06x, %x)", p, f, c);
				CHECKF(uroce_psn_add(p, c) == ref_add(p, c), "add(%06x, %x)", p, c);
				CHECKF(uroce_psn_sub(p, c) == ref_sub(p, c), "sub(%06x, %x)", p, c);
				CHECK_BAIL();
			}
		}
	}
}

/* Every PSN against each edge, so no value in between is mishandled. */
static void test_full_sweep(void)
{
	static const uint32_t refs[] = {0, 0x800000, 0xFFFFFF};
	long bad = 0;

	for (size_t r = 0; r < sizeof(refs) / sizeof(refs[0]); r++) {
		for (uint32_t a = 0; a < 0x1000000; a++) {
			int64_t d = ref_diff(a, refs[r]);

			if (uroce_psn_diff(a, refs[r]) != d ||
			    uroce_psn_before(a, refs[r]) != (d < 0) ||
			    uroce_psn_after(a, refs[r]) != (d > 0) ||
			    uroce_psn_add(refs[r], a) != ref_add(refs[r], a) ||
			    uroce_psn_sub(a, refs[r]) != ref_sub(a, refs[r]))
				bad++;
		}
	}
	CHECKF(bad == 0, "%ld PSNs disagree with the reference", bad);
}

static void test_random(void)
{
	struct rng r = {0x5053ull};

	for (int i = 0; i < 200000; i++) {
		uint32_t a = rng_u32(&r) & 0xFFFFFF, b = rng_u32(&r) & 0xFFFFFF;
		uint32_t n = rng_u32(&r), c = rng_u32(&r) >> rng_below(&r, 32);

		check_pair(a, b);
		CHECK_EQ(uroce_psn_add(a, n), ref_add(a, n));
		CHECK_EQ(uroce_psn_sub(a, n), ref_sub(a, n));
		CHECK_EQ(uroce_psn_sub(uroce_psn_add(a, n), n), a);
		CHECK_EQ(uroce_psn_in_window(a, b, c), ref_in_window(a, b, c));
		/* diff and add agree: b + diff(a, b) == a. */
		CHECK_EQ(uroce_psn_add(b, (uint32_t)uroce_psn_diff(a, b)), a);
		CHECK_BAIL();
	}
}

int main(void)
{
	test_explicit();
	test_edges();
	test_full_sweep();
	test_random();
	return check_exit("test_psn");
}
