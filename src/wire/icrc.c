/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <string.h>

#include <isa-l/crc.h>

#include "wire/bytes.h"
#include "wire/icrc.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

/*
 * ISA-L's CRC on a CPU with AVX-512 (crc32_gzip_refl_by16_10) works in zmm0-15 and returns
 * without vzeroupper, leaving the upper halves of those registers in use. Every legacy-SSE
 * instruction after that, in our code (built for baseline x86-64) and in the application's, then
 * runs with a false dependency on the whole register until something clears them, which slows
 * every step of the path after it. So each CRC call is followed by vzeroupper where the CPU has
 * AVX (the instruction faults without it, and without AVX there is no upper state to clear);
 * __builtin_cpu_supports reads the features libgcc found at start-up, the OS's saving of the
 * YMM state included.
 */
__attribute__((target("avx"), noinline)) static void zero_upper(void)
{
	_mm256_zeroupper();
}

static uint32_t isal_crc(uint32_t seed, const uint8_t *p, size_t len)
{
	uint32_t r = crc32_gzip_refl(seed, p, len);

	if (__builtin_cpu_supports("avx"))
		zero_upper();
	return r;
}
#else
static uint32_t isal_crc(uint32_t seed, const uint8_t *p, size_t len)
{
	return crc32_gzip_refl(seed, p, len);
}
#endif

/*
 * The masked pseudo-header of encap (8 x 0xFF, then l3l4 with its variant fields set to ones)
 * into b, which holds UROCE_ICRC_PSEUDO_MAX bytes; returns its length, 0 for UROCE_ENCAP_NONE.
 */
static size_t pseudo_fill(enum uroce_encap encap, const uint8_t *l3l4, uint8_t *b)
{
	uint8_t *h = b + 8;
	size_t n;

	switch (encap) {
	case UROCE_ENCAP_V2_IPV4:
		n = UROCE_IPV4_LEN + UROCE_UDP_LEN;
		memcpy(h, l3l4, n);
		h[1] = 0xFF;			/* TOS */
		h[8] = 0xFF;			/* TTL */
		h[10] = h[11] = 0xFF;		/* header checksum */
		h[26] = h[27] = 0xFF;		/* UDP checksum */
		break;
	case UROCE_ENCAP_V2_IPV6:
		n = UROCE_IPV6_LEN + UROCE_UDP_LEN;
		memcpy(h, l3l4, n);
		h[0] |= 0x0F;			/* traffic class, low nibble */
		h[1] = h[2] = h[3] = 0xFF;	/* traffic class, flow label */
		h[7] = 0xFF;			/* hop limit */
		h[46] = h[47] = 0xFF;		/* UDP checksum */
		break;
	case UROCE_ENCAP_V1:
		n = UROCE_GRH_LEN;
		memcpy(h, l3l4, n);
		h[0] |= 0x0F;
		h[1] = h[2] = h[3] = 0xFF;
		h[7] = 0xFF;
		break;
	case UROCE_ENCAP_NONE:
	default:
		return 0;
	}
	memset(b, 0xFF, 8);
	return 8 + n;
}

uint32_t uroce_icrc_pseudo(enum uroce_encap encap, const uint8_t *l3l4)
{
	uint8_t b[UROCE_ICRC_PSEUDO_MAX];
	size_t n = pseudo_fill(encap, l3l4, b);

	return n ? isal_crc(0, b, n) : 0;
}

/* Copy len >= 12 bytes from a BTH on into out, the BTH masked for the ICRC. */
static void copy_masked_bth(uint8_t *out, const uint8_t *bth, size_t len)
{
	memcpy(out, bth, len);
	out[4] = 0xFF; /* FECN, BECN, resv6 */
}

size_t uroce_icrc_bytes(enum uroce_encap encap, const uint8_t *l3l4, const uint8_t *hdr,
			size_t hdr_len, uint8_t *out)
{
	size_t n = pseudo_fill(encap, l3l4, out);

	if (!n)
		return 0;
	copy_masked_bth(out + n, hdr, hdr_len);
	return n + hdr_len;
}

uint32_t uroce_icrc_bth(uint32_t crc, const uint8_t *bth)
{
	uint8_t b[UROCE_BTH_LEN];

	copy_masked_bth(b, bth, UROCE_BTH_LEN);
	return isal_crc(crc, b, UROCE_BTH_LEN);
}

uint32_t uroce_icrc_begin(enum uroce_encap encap, const uint8_t *l3l4, const uint8_t *bth)
{
	if (encap == UROCE_ENCAP_NONE)
		return 0;
	return uroce_icrc_bth(uroce_icrc_pseudo(encap, l3l4), bth);
}

/*
 * L(1 << i) for the 16 bits of the IPv4 ID (bit 15 first on the wire) in the 36-byte v2 IPv4
 * pseudo-header (8 x 0xFF, IPv4, UDP; the ID at bytes 12-13): CRC-32 of the message that is zero
 * but for that bit, XOR CRC-32 of 36 zero bytes. test_icrc checks them against the CRC itself.
 */
static const uint32_t v4_id_bit[16] = {
	0x9b73ead4u, 0xed96d3e9u, 0x005ca193u, 0x00b94326u, 0x0172864cu, 0x02e50c98u,
	0x05ca1930u, 0x0b943260u, 0x81256527u, 0xd93bcc0fu, 0x69069e5fu, 0xd20d3cbeu,
	0x7f6b7f3du, 0xfed6fe7au, 0x26dcfab5u, 0x4db9f56au,
};

uint32_t uroce_icrc_pseudo_v4_id(uint32_t crc, uint16_t x)
{
	for (int i = 0; x; i++, x >>= 1)
		if (x & 1)
			crc ^= v4_id_bit[i];
	return crc;
}

uint32_t uroce_icrc_update(uint32_t crc, const uint8_t *p, size_t len)
{
	return isal_crc(crc, p, len);
}

uint32_t uroce_icrc(enum uroce_encap encap, const uint8_t *l3l4, const uint8_t *roce, size_t len)
{
	if (encap != UROCE_ENCAP_NONE && len >= UROCE_BTH_LEN && len <= UROCE_ICRC_ONE_CALL_MAX) {
		uint8_t b[UROCE_ICRC_PSEUDO_MAX + UROCE_ICRC_ONE_CALL_MAX];

		return isal_crc(0, b, uroce_icrc_bytes(encap, l3l4, roce, len, b));
	}
	uint32_t crc = uroce_icrc_begin(encap, l3l4, roce);

	return uroce_icrc_update(crc, roce + UROCE_BTH_LEN, len - UROCE_BTH_LEN);
}

/*
 * GF(2) polynomial arithmetic modulo the CRC-32 polynomial, in the reflected bit order of the
 * CRC register (bit 31 is x^0). The standard technique behind crc32_combine.
 */
#define CRC32_POLY_REFL 0xEDB88320u

static uint32_t mulmodp(uint32_t a, uint32_t b)
{
	uint32_t m = 1u << 31;
	uint32_t p = 0;

	for (;;) {
		if (a & m) {
			p ^= b;
			if ((a & (m - 1)) == 0)
				break;
		}
		m >>= 1;
		b = b & 1 ? (b >> 1) ^ CRC32_POLY_REFL : b >> 1;
	}
	return p;
}

/* x^(8 * nbytes) mod P. */
static uint32_t xpow8n(uint64_t nbytes)
{
	uint32_t r = 1u << 31; /* x^0 */
	uint32_t sq = 1u << 23; /* x^8 */

	while (nbytes) {
		if (nbytes & 1)
			r = mulmodp(sq, r);
		sq = mulmodp(sq, sq);
		nbytes >>= 1;
	}
	return r;
}

/* Linear CRC register (zero start, no final inversion) after two bytes. */
static uint32_t lin_crc2(uint8_t b0, uint8_t b1)
{
	uint32_t c = 0;
	uint8_t bytes[2] = { b0, b1 };

	for (int i = 0; i < 2; i++) {
		c ^= bytes[i];
		for (int k = 0; k < 8; k++)
			c = c & 1 ? (c >> 1) ^ CRC32_POLY_REFL : c >> 1;
	}
	return c;
}

void uroce_ipid_solver_init(struct uroce_ipid_solver *s, uint32_t roce_len)
{
	/*
	 * Pseudo-packet: 8 x FF, IPv4 (ID at bytes 4-5), UDP, then roce_len - 4 bytes before the
	 * ICRC. The ID's last byte is pseudo byte 13; what follows it is
	 * (8 + 20 + 8 + roce_len - 4) - 14 bytes.
	 */
	uint32_t shift = xpow8n((uint64_t)roce_len + 18);

	s->roce_len = roce_len;
	for (int i = 0; i < 16; i++) {
		uint16_t id = (uint16_t)(1u << i);

		s->col[i] = mulmodp(shift, lin_crc2((uint8_t)(id >> 8), (uint8_t)id));
	}
	/* Gaussian elimination: basis[j] has bit pivot[j] set and 0 at every earlier pivot. */
	for (int i = 0; i < 16; i++) {
		uint32_t v = s->col[i];
		uint16_t comb = (uint16_t)(1u << i);

		for (int j = 0; j < i; j++) {
			if (v & s->pivot[j]) {
				v ^= s->basis[j];
				comb ^= s->comb[j];
			}
		}
		/* L is injective (no burst of <= 32 bits is a CRC-32 multiple): v != 0. */
		s->basis[i] = v;
		s->comb[i] = comb;
		s->pivot[i] = v & -v;
		for (int j = 0; j < i; j++) {
			if (s->basis[j] & s->pivot[i]) {
				s->basis[j] ^= v;
				s->comb[j] ^= comb;
			}
		}
	}
}

int uroce_ipid_solve(const struct uroce_ipid_solver *s, uint32_t icrc_id0, uint32_t icrc_wire,
		     uint16_t *id)
{
	uint32_t d = icrc_id0 ^ icrc_wire;
	uint16_t x = 0;

	for (int j = 0; j < 16; j++) {
		if (d & s->pivot[j]) {
			d ^= s->basis[j];
			x ^= s->comb[j];
		}
	}
	if (d)
		return -EBADMSG;
	*id = x;
	return 0;
}
