/* SPDX-License-Identifier: MIT */
/*
 * The engine's accesses to registered memory, each through the host's guard
 * (uroce_eng_set_mem_guard): memory the application unmapped under a live registration becomes
 * -EFAULT here instead of a signal. Each access is a leaf function that the guard may abandon
 * at any point: it copies, reads or swaps, and holds nothing.
 */
#include <errno.h>
#include <string.h>

#include "transport/internal.h"

void uroce_eng_set_mem_guard(struct uroce_eng *e, uroce_mem_guard_fn fn, void *arg)
{
	e->mem_guard = fn;
	e->mem_guard_arg = arg;
}

static int guarded(struct uroce_eng *e, const void *lo, size_t len, void (*fn)(void *), void *arg)
{
	if (!e->mem_guard) {
		fn(arg);
		return 0;
	}
	return e->mem_guard(e->mem_guard_arg, lo, len, fn, arg);
}

struct mem_copy {
	void *dst;
	const void *src;
	size_t n;
};

static void copy_fn(void *arg)
{
	struct mem_copy *c = arg;

	memcpy(c->dst, c->src, c->n);
}

int uroce_mem_to(struct uroce_eng *e, void *dst, const void *src, size_t n)
{
	struct mem_copy c = {dst, src, n};

	return guarded(e, dst, n, copy_fn, &c);
}

int uroce_mem_from(struct uroce_eng *e, void *dst, const void *src, size_t n)
{
	struct mem_copy c = {dst, src, n};

	return guarded(e, src, n, copy_fn, &c);
}

/* The stride of the reads: every page of any size from 4 KiB up is read at least once. */
#define READ_STRIDE 4096u

static void readable_fn(void *arg)
{
	const struct mem_copy *c = arg;
	const volatile uint8_t *p = c->src;
	uintptr_t a = (uintptr_t)c->src, end = a + c->n;

	(void)p[0];
	for (uintptr_t q = (a | (READ_STRIDE - 1)) + 1; q < end; q += READ_STRIDE)
		(void)p[q - a];
	(void)p[c->n - 1];
}

int uroce_mem_readable(struct uroce_eng *e, const void *p, size_t n)
{
	struct mem_copy c = {NULL, p, n};

	if (n == 0 || !e->mem_guard)
		return 0; /* unguarded, the reads would only move the fault earlier */
	return guarded(e, p, n, readable_fn, &c);
}

struct mem_atomic {
	uint8_t *p;
	uint8_t opcode;
	uint64_t compare, swap_add, orig;
};

/* Atomic with respect to other users of the memory when the host address is aligned. */
static void atomic_fn(void *arg)
{
	struct mem_atomic *a = arg;

	if (((uintptr_t)a->p & 7) == 0) {
		uint64_t *v = (uint64_t *)(void *)a->p;

		if (a->opcode == UROCE_OP_RC_FETCH_ADD) {
			a->orig = __atomic_fetch_add(v, a->swap_add, __ATOMIC_SEQ_CST);
		} else {
			a->orig = a->compare;
			__atomic_compare_exchange_n(v, &a->orig, a->swap_add, false,
						    __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
		}
		return;
	}
	uint64_t orig, nv;

	memcpy(&orig, a->p, 8);
	nv = a->opcode == UROCE_OP_RC_FETCH_ADD ? orig + a->swap_add
	     : orig == a->compare		 ? a->swap_add
						 : orig;
	memcpy(a->p, &nv, 8);
	a->orig = orig;
}

int uroce_mem_atomic(struct uroce_eng *e, uint8_t *p, uint8_t opcode, uint64_t compare,
		     uint64_t swap_add, uint64_t *orig)
{
	struct mem_atomic a = {p, opcode, compare, swap_add, 0};
	int r = guarded(e, p, 8, atomic_fn, &a);

	*orig = a.orig;
	return r;
}
