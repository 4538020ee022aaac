/* SPDX-License-Identifier: MIT */
/*
 * 24-bit packet sequence number arithmetic (IBTA 9.7.1; rxe's psn_compare).
 *
 * PSNs are serial numbers modulo 2^24, compared within a window of +-2^23. This header is the only
 * place in uroce that masks a PSN: everything else goes through these functions.
 */
#ifndef UROCE_WIRE_PSN_H
#define UROCE_WIRE_PSN_H

#include <stdbool.h>
#include <stdint.h>

#define UROCE_PSN_MASK 0xFFFFFFu
#define UROCE_PSN_MOD  0x1000000u

/* A PSN reduced to 24 bits. */
static inline uint32_t uroce_psn(uint32_t v)
{
	return v & UROCE_PSN_MASK;
}

/* a + n modulo 2^24 (n may be any unsigned count). */
static inline uint32_t uroce_psn_add(uint32_t a, uint32_t n)
{
	return (a + n) & UROCE_PSN_MASK;
}

/* a - n modulo 2^24. */
static inline uint32_t uroce_psn_sub(uint32_t a, uint32_t n)
{
	return (a - n) & UROCE_PSN_MASK;
}

/*
 * Signed distance a - b in the range [-2^23, 2^23): negative when a is before b.
 * The shift puts the 24-bit difference in the top bits so the sign is the PSN sign.
 */
static inline int32_t uroce_psn_diff(uint32_t a, uint32_t b)
{
	uint32_t d = (a - b) << 8;

	return (int32_t)d / 256;
}

static inline bool uroce_psn_before(uint32_t a, uint32_t b)
{
	return uroce_psn_diff(a, b) < 0;
}

static inline bool uroce_psn_after(uint32_t a, uint32_t b)
{
	return uroce_psn_diff(a, b) > 0;
}

/* Is psn within [first, first + count)? */
static inline bool uroce_psn_in_window(uint32_t psn, uint32_t first, uint32_t count)
{
	return ((psn - first) & UROCE_PSN_MASK) < count;
}

#endif
