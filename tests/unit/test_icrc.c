/* SPDX-License-Identifier: MIT */
/*
 * The ICRC (wire/icrc.h):
 *  - the two published vectors of roce-reference.md 1.7, from their bytes: a CNP captured from a
 *    ConnectX-4 Lx (ICRC 82 fd 00 2a) and a UC SEND_ONLY (78 f3 53 f3): decode, our ICRC equals
 *    the carried bytes (least-significant byte first), re-encoding reproduces the frame;
 *  - an independent bit-at-a-time CRC-32 over a pseudo-packet masked as the reference describes,
 *    for random frames of every encapsulation;
 *  - every byte of v1 and v2/IPv6 frames: corrupting it breaks the ICRC exactly when the byte is
 *    covered (the v2/IPv4 case is in test_golden on the captures);
 *  - uroce_icrc_begin + uroce_icrc_update in pieces equals uroce_icrc;
 *  - for RoCE v2 over IPv4, the pseudo-header state for another IPv4 ID from the XOR of the two
 *    IDs (uroce_icrc_pseudo_v4_id) equals the one computed over the changed header;
 *  - the CRC returns with the upper halves of the vector registers 0-15 cleared (the processor's
 *    XINUSE bits), on a CPU that reports them.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include "check.h"
#include "wire/bytes.h"
#include "wire/icrc.h"
#include "wire/packet.h"
#include "wire_util.h"

static size_t unhex(uint8_t *out, const char *hex)
{
	size_t n = 0;
	int hi = -1;

	for (const char *c = hex; *c; c++) {
		int v = *c >= '0' && *c <= '9'	 ? *c - '0'
			: *c >= 'a' && *c <= 'f' ? *c - 'a' + 10
						 : -1;

		if (v < 0)
			continue;
		if (hi < 0) {
			hi = v;
		} else {
			out[n++] = (uint8_t)(hi << 4 | v);
			hi = -1;
		}
	}
	return n;
}

static void check_vector(const char *name, const uint8_t *b, size_t len, const uint8_t icrc[4])
{
	struct uroce_frame f;
	int rc = uroce_frame_decode(&f, b, len);

	CHECKF(rc == 0, "%s: decode %d (%s)", name, rc, f.err ? f.err : "");
	if (rc)
		return;
	uint32_t c = uroce_frame_icrc(&f);
	uint8_t le[4];

	uroce_put_le32(le, c);
	CHECKF(memcmp(le, icrc, 4) == 0, "%s: ICRC %02x %02x %02x %02x, want %02x %02x %02x %02x",
	       name, le[0], le[1], le[2], le[3], icrc[0], icrc[1], icrc[2], icrc[3]);
	CHECKF(memcmp(b + len - 4, icrc, 4) == 0 && f.t.icrc == c, "%s: carried ICRC", name);
	CHECK(f.len == len && f.roce + f.roce_len == b + len);

	uint8_t out[256];
	ssize_t n = uroce_frame_encode(out, sizeof(out), &f);

	CHECKF(n == (ssize_t)len && memcmp(out, b, len) == 0, "%s: re-encode (%zd bytes)", name, n);
	/* The fields the encoder computes are not taken from the input. */
	f.ip4.csum = (uint16_t)~f.ip4.csum;
	f.ip4.tot_len = 1;
	f.ip4.proto = 6;
	f.udp.len = 2;
	f.t.bth.pad = (uint8_t)(f.t.bth.pad ^ 3);
	f.eth.ethertype = 0x1234;
	n = uroce_frame_encode(out, sizeof(out), &f);
	CHECKF(n == (ssize_t)len && memcmp(out, b, len) == 0, "%s: computed fields", name);
}

static void test_vectors(void)
{
	uint8_t b[256];
	static const uint8_t icrc1[4] = {0x82, 0xfd, 0x00, 0x2a};
	static const uint8_t icrc2[4] = {0x78, 0xf3, 0x53, 0xf3};

	/* 1: the ConnectX-4 Lx CNP, exactly as printed in the reference. */
	size_t n = unhex(b, "e41d2dab2bc2 7cfe90643b32 0800"
			    "45c2 003c 718c 4000 4011 9161 0a001101 0a001201"
			    "0000 12b7 0028 0000"
			    "8100ffff 40000118 00000000"
			    "00000000 00000000 00000000 00000000"
			    "82fd002a");

	CHECK_EQ(n, 74);
	check_vector("CX-4 Lx CNP", b, n, icrc1);
	struct uroce_frame f;

	CHECK_EQ(uroce_frame_decode(&f, b, n), 0);
	CHECK(f.encap == UROCE_ENCAP_V2_IPV4 && f.t.bth.opcode == UROCE_OP_CNP);
	CHECK(f.t.bth.becn && !f.t.bth.fecn && f.t.bth.dqpn == 0x118 && f.t.bth.psn == 0);
	CHECK(f.t.bth.pkey == 0xFFFF && f.ip4.tos == 0xC2 && f.udp.sport == 0);
	CHECK(f.t.payload_len == 0 && all_bytes(f.t.cnp_resv, 16, 0));

	/* 2: UC SEND_ONLY, from the fields the reference lists (MACs are not covered: any). */
	n = unhex(b, "020000000001 020000000002 0800"
		     "4501 0040 0478 4000 4011 b4d5 c0a80007 c0a80007"
		     "c000 12b7 002c 0000"
		     "2460ffff 000000d3 00cf1710"
		     "4630818b e28935d9 0e9a9550 5401be88 5e500000"
		     "78f353f3");
	CHECK_EQ(n, 78);
	check_vector("UC SEND_ONLY", b, n, icrc2);
	CHECK_EQ(uroce_frame_decode(&f, b, n), 0);
	CHECK(f.t.bth.opcode == UROCE_OP_UC_SEND_ONLY && f.t.bth.mig && f.t.bth.pad == 2);
	CHECK(f.t.bth.dqpn == 211 && f.t.bth.psn == 13571856 && f.t.payload_len == 18);
	CHECK(f.ip4.id == 1144 && f.ip4.ttl == 64 && f.ip4.tos == 1 && f.ip4.csum == 0xb4d5);
	CHECK(f.udp.sport == 49152 && f.udp.len == 44 && f.ip4.tot_len == 64);

	/* Each vector's ICRC depends on its bytes: one flipped payload bit breaks it. */
	b[14 + 28 + 12] ^= 0x01;
	CHECK(uroce_frame_decode(&f, b, n) == 0 && uroce_frame_icrc(&f) != f.t.icrc);
}

/* CRC-32 (zlib's), one bit at a time. */
static uint32_t crc32_bitwise(const uint8_t *p, size_t n)
{
	uint32_t c = 0xFFFFFFFF;

	for (size_t i = 0; i < n; i++) {
		c ^= p[i];
		for (int k = 0; k < 8; k++)
			c = c & 1 ? (c >> 1) ^ 0xEDB88320u : c >> 1;
	}
	return ~c;
}

/* The ICRC of a frame, from roce-reference.md 1.7 alone. */
static uint32_t ref_icrc(enum uroce_encap encap, const uint8_t *l3, size_t l3l4, const uint8_t *bth,
			 size_t tlen)
{
	uint8_t p[8 + 48 + 4096 + 64];
	uint8_t *h = p + 8;

	memset(p, 0xFF, 8);
	memcpy(h, l3, l3l4);
	if (encap == UROCE_ENCAP_V2_IPV4) {
		h[1] = 0xFF;	      /* TOS */
		h[8] = 0xFF;	      /* TTL */
		h[10] = h[11] = 0xFF; /* header checksum */
		h[26] = h[27] = 0xFF; /* UDP checksum */
	} else {
		h[0] |= 0x0F;		   /* traffic class, its top nibble */
		h[1] = h[2] = h[3] = 0xFF; /* traffic class, flow label */
		h[7] = 0xFF;		   /* hop limit */
		if (encap == UROCE_ENCAP_V2_IPV6)
			h[46] = h[47] = 0xFF; /* UDP checksum */
	}
	memcpy(h + l3l4, bth, tlen);
	h[l3l4 + 4] = 0xFF; /* FECN, BECN, resv6 */
	return crc32_bitwise(p, 8 + l3l4 + tlen);
}

static const enum uroce_encap encaps[] = {UROCE_ENCAP_V1, UROCE_ENCAP_V2_IPV4, UROCE_ENCAP_V2_IPV6};

static void test_reference(void)
{
	struct rng r = {0x1C2C};
	uint8_t ops[256], payload[4096], buf[4096 + 256];
	unsigned nops = valid_opcodes(ops);

	rng_fill(&r, payload, sizeof(payload));
	for (int i = 0; i < 3000; i++) {
		enum uroce_encap e = encaps[i % 3];
		uint8_t op = ops[rng_below(&r, nops)];
		uint32_t plen = (uroce_opinfo[op].flags & UROCE_OPF_PAYLOAD)
					? (i % 10 ? rng_below(&r, 300) : rng_below(&r, 4097))
					: 0;
		struct uroce_frame f, g;

		random_frame(&r, &f, e, rng_bool(&r), op, payload, plen);
		ssize_t n = uroce_frame_encode(buf, sizeof(buf), &f);

		CHECK(n > 0 && uroce_frame_decode(&g, buf, (size_t)n) == 0);
		if (n <= 0 || g.encap != e)
			continue;
		size_t l3l4 = (size_t)(g.roce - g.l3);
		uint32_t want = ref_icrc(e, g.l3, l3l4, g.roce, g.roce_len - 4);

		CHECKF(g.t.icrc == want && uroce_frame_icrc(&g) == want,
		       "%d %s: ICRC %08x, reference %08x", e, uroce_opinfo[op].name, g.t.icrc,
		       want);

		/* begin + update in three pieces. */
		size_t rest = g.roce_len - 4 - UROCE_BTH_LEN;
		size_t a = rest ? rng_below(&r, (uint32_t)rest + 1) : 0;
		size_t b2 = a + (rest - a ? rng_below(&r, (uint32_t)(rest - a) + 1) : 0);
		uint32_t c = uroce_icrc_begin(e, g.l3, g.roce);

		c = uroce_icrc_update(c, g.roce + 12, a);
		c = uroce_icrc_update(c, g.roce + 12 + a, b2 - a);
		c = uroce_icrc_update(c, g.roce + 12 + b2, rest - b2);
		CHECK_EQ(c, want);

		/* IPv4: the pseudo-header state for another ID, from the delta alone. */
		if (e == UROCE_ENCAP_V2_IPV4) {
			uint8_t l3[UROCE_IPV4_LEN + UROCE_UDP_LEN];
			uint16_t id1 = uroce_get_be16(g.l3 + 4), id2 = (uint16_t)rng_below(&r, 65536);

			memcpy(l3, g.l3, sizeof(l3));
			uroce_put_be16(l3 + 4, id2);
			uint32_t p = uroce_icrc_pseudo_v4_id(uroce_icrc_pseudo(e, g.l3), id1 ^ id2);

			CHECKF(uroce_icrc_bth(p, g.roce) == uroce_icrc_begin(e, l3, g.roce),
			       "IPv4 ID %04x -> %04x", id1, id2);
		}
		CHECK_BAIL();
	}
	uint8_t z[64] = {0};

	CHECK_EQ(uroce_icrc_begin(UROCE_ENCAP_NONE, z, z), 0);
}

/* Is byte i of a frame (no VLAN) masked out of the ICRC, by roce-reference.md 1.7? */
static bool masked(enum uroce_encap e, size_t i)
{
	size_t l3 = UROCE_ETH_LEN, bth = frame_hdr_len(e, false);

	if (i < 12)
		return true; /* MACs: not covered (the Ethertype decides the decode) */
	if (i >= l3 && i < l3 + 4) {
		/* Version nibble covered; traffic class and flow label masked. */
		return i > l3;
	}
	if (i == l3 + 7) /* hop limit */
		return true;
	if (e == UROCE_ENCAP_V2_IPV6 && (i == l3 + 46 || i == l3 + 47))
		return true;
	return i == bth + 4;
}

static void test_coverage(void)
{
	struct rng r = {0xC0FE};
	uint8_t payload[64], buf[512], bad[512];

	rng_fill(&r, payload, sizeof(payload));
	for (int k = 0; k < 2; k++) {
		enum uroce_encap e = k ? UROCE_ENCAP_V2_IPV6 : UROCE_ENCAP_V1;
		struct uroce_frame f, g;

		random_frame(&r, &f, e, false, UROCE_OP_RC_WRITE_ONLY_IMM, payload, 37);
		ssize_t n = uroce_frame_encode(buf, sizeof(buf), &f);

		CHECK_GT(n, 0);
		if (n <= 0)
			continue;
		memcpy(bad, buf, (size_t)n);
		for (size_t i = 0; i < (size_t)n - 4; i++) {
			/* Low nibble only for byte 0 of the L3 header: the high one is the version.
			 */
			uint8_t x = i == UROCE_ETH_LEN ? 0x0A : 0x5A;

			bad[i] ^= x;
			int rc = uroce_frame_decode(&g, bad, (size_t)n);
			bool ok = rc == 0 && uroce_frame_icrc(&g) == g.t.icrc;

			if (masked(e, i) || i == UROCE_ETH_LEN)
				CHECKF(ok, "%s: masked byte %zu changed the ICRC (rc %d)",
				       k ? "v2/IPv6" : "v1", i, rc);
			else
				CHECKF(!ok, "%s: corruption of byte %zu not detected",
				       k ? "v2/IPv6" : "v1", i);
			bad[i] = buf[i];
			CHECK_BAIL();
		}
	}
}

#if defined(__x86_64__) || defined(__i386__)
/* XGETBV with ECX=1: which state components are not in their initial state. */
static uint64_t xinuse(void)
{
	uint32_t lo, hi;

	__asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(1));
	return (uint64_t)hi << 32 | lo;
}
#endif

/*
 * A CRC over 4 KiB (ISA-L's widest code on this CPU) leaves neither the upper 128 bits of ymm0-15
 * (XINUSE bit 2) nor the upper 256 of zmm0-15 (bit 6) in use: legacy-SSE code after it, ours and
 * the application's, would otherwise run with a false dependency on those registers.
 */
static void test_leaves_no_upper_state(void)
{
#if defined(__x86_64__) || defined(__i386__)
	unsigned a, b, c, d;
	static uint8_t buf[4096];

	if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & bit_OSXSAVE) || !(c & bit_AVX) ||
	    !__get_cpuid_count(0xD, 1, &a, &b, &c, &d) || !(a & (1u << 2))) {
		printf("test_icrc: no AVX or no XGETBV 1 on this CPU, upper-state check skipped\n");
		return;
	}
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)(i * 7);
	uint32_t crc = uroce_icrc_update(0x12345678u, buf, sizeof(buf));
	uint64_t in_use = xinuse();

	CHECK_NE(crc, 0u);
	CHECKF(!(in_use & (1u << 2 | 1u << 6)), "XINUSE %#llx after the CRC: upper halves in use",
	       (unsigned long long)in_use);
#endif
}

int main(void)
{
	test_vectors();
	test_reference();
	test_coverage();
	test_leaves_no_upper_state();
	return check_exit("test_icrc");
}
