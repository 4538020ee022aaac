/* SPDX-License-Identifier: MIT */
/*
 * The header codecs of wire/hdr.h (and the MAD header of wire/mad.h): for each,
 *  - decode(encode(x)) == x for random in-range values,
 *  - encode(decode(b)) == b for random bytes in which every bit is representable,
 *  - every short length: the decoder returns -EBADMSG reading nothing beyond len (each prefix sits
 *    in a malloc of exactly that size, so ASan sees an over-read), the encoder returns -ENOSPC and
 *    writes nothing at or beyond cap (a canary, and an exact-size malloc under ASan),
 * then the fixed-field checks (IPv4 version/IHL/total length, IPv6 version, VLAN TPIDs) and the
 * IPv4 header checksum against an independent RFC 1071 sum.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "wire/bytes.h"
#include "wire/hdr.h"
#include "wire/mad.h"
#include "wire_util.h"

#define CANARY 0xA5
#define SLACK  32

/* A codec seen through void pointers, so one set of loops drives them all. */
struct codec {
	const char *name;
	size_t len;
	int (*dec)(void *v, const uint8_t *p, size_t len);
	int (*enc)(uint8_t *p, size_t cap, const void *v);
	void (*rnd)(struct rng *r, void *v); /* random in-range value */
	void (*fix)(uint8_t *b);	     /* make random bytes representable */
	bool (*eq)(const void *a, const void *b);
	int short_err; /* decoder error for short input */
};

/* Value storage big enough for any of the structs. */
union anyhdr {
	struct uroce_eth eth;
	struct uroce_ipv4 ip4;
	struct uroce_ip6 ip6;
	struct uroce_udp udp;
	struct uroce_bth bth;
	struct uroce_deth deth;
	struct uroce_reth reth;
	struct uroce_atmeth atmeth;
	struct uroce_aeth aeth;
	struct uroce_mad_hdr mad;
	uint64_t u64;
	uint32_t u32;
};

/* --- Ethernet, untagged and tagged --- */

static int dec_eth(void *v, const uint8_t *p, size_t len)
{
	return uroce_eth_decode(v, p, len);
}

static int enc_eth(uint8_t *p, size_t cap, const void *v)
{
	return uroce_eth_encode(p, cap, v);
}

static void rnd_eth_common(struct rng *r, struct uroce_eth *e, bool vlan)
{
	memset(e, 0, sizeof(*e));
	rng_fill(r, e->dst, 6);
	rng_fill(r, e->src, 6);
	e->vlan = vlan;
	do {
		e->ethertype = rng_u16(r);
	} while (!vlan &&
		 (e->ethertype == UROCE_ETHERTYPE_VLAN || e->ethertype == UROCE_ETHERTYPE_QINQ));
	if (vlan) {
		e->tpid = rng_bool(r) ? UROCE_ETHERTYPE_VLAN : UROCE_ETHERTYPE_QINQ;
		e->tci = rng_u16(r);
	}
}

static void rnd_eth(struct rng *r, void *v)
{
	rnd_eth_common(r, v, false);
}

static void rnd_eth_vlan(struct rng *r, void *v)
{
	rnd_eth_common(r, v, true);
}

static void fix_eth(uint8_t *b)
{
	uint16_t t = uroce_get_be16(b + 12);

	if (t == UROCE_ETHERTYPE_VLAN || t == UROCE_ETHERTYPE_QINQ)
		b[12] ^= 0x01;
}

static void fix_eth_vlan(uint8_t *b)
{
	uroce_put_be16(b + 12, b[12] & 1 ? UROCE_ETHERTYPE_VLAN : UROCE_ETHERTYPE_QINQ);
}

static bool eq_eth(const void *a, const void *b)
{
	return eth_eq(a, b);
}

/* --- IPv4 (no options) --- */

static int dec_ip4(void *v, const uint8_t *p, size_t len)
{
	return uroce_ipv4_decode(v, p, len);
}

static int enc_ip4(uint8_t *p, size_t cap, const void *v)
{
	return uroce_ipv4_encode(p, cap, v);
}

static void rnd_ip4(struct rng *r, void *v)
{
	struct uroce_ipv4 *h = v;

	memset(h, 0, sizeof(*h));
	h->ihl = 5;
	h->tos = rng_u8(r);
	h->tot_len = (uint16_t)(20 + rng_below(r, 0x10000 - 20));
	h->id = rng_u16(r);
	h->frag = rng_u16(r);
	h->ttl = rng_u8(r);
	h->proto = rng_u8(r);
	h->csum = rng_u16(r);
	rng_fill(r, h->src, 4);
	rng_fill(r, h->dst, 4);
}

static void fix_ip4(uint8_t *b)
{
	b[0] = 0x45;
	if (uroce_get_be16(b + 2) < 20)
		uroce_put_be16(b + 2, (uint16_t)(uroce_get_be16(b + 2) + 20));
}

static bool eq_ip4(const void *a, const void *b)
{
	return ipv4_eq(a, b, true, true);
}

/* --- IPv6 and GRH --- */

static int dec_ip6(void *v, const uint8_t *p, size_t len)
{
	return uroce_ip6_decode(v, p, len);
}

static int enc_ip6(uint8_t *p, size_t cap, const void *v)
{
	return uroce_ip6_encode(p, cap, v);
}

static void rnd_ip6(struct rng *r, void *v)
{
	struct uroce_ip6 *h = v;

	memset(h, 0, sizeof(*h));
	h->version = 6;
	h->tclass = rng_u8(r);
	h->flow = rng_u32(r) & 0xFFFFF;
	h->paylen = rng_u16(r);
	h->next_hdr = rng_u8(r);
	h->hop_limit = rng_u8(r);
	rng_fill(r, h->src, 16);
	rng_fill(r, h->dst, 16);
}

static void fix_ip6(uint8_t *b)
{
	b[0] = (uint8_t)(0x60 | (b[0] & 0x0F));
}

static bool eq_ip6(const void *a, const void *b)
{
	return ip6_eq(a, b, true);
}

/* --- UDP --- */

static int dec_udp(void *v, const uint8_t *p, size_t len)
{
	return uroce_udp_decode(v, p, len);
}

static int enc_udp(uint8_t *p, size_t cap, const void *v)
{
	return uroce_udp_encode(p, cap, v);
}

static void rnd_udp(struct rng *r, void *v)
{
	struct uroce_udp *h = v;

	h->sport = rng_u16(r);
	h->dport = rng_u16(r);
	h->len = rng_u16(r);
	h->csum = rng_u16(r);
}

static bool eq_udp(const void *a, const void *b)
{
	return udp_eq(a, b, true);
}

/* --- BTH --- */

static int dec_bth(void *v, const uint8_t *p, size_t len)
{
	return uroce_bth_decode(v, p, len);
}

static int enc_bth(uint8_t *p, size_t cap, const void *v)
{
	return uroce_bth_encode(p, cap, v);
}

static void rnd_bth(struct rng *r, void *v)
{
	struct uroce_bth *h = v;

	memset(h, 0, sizeof(*h));
	h->opcode = rng_u8(r);
	h->se = rng_bool(r);
	h->mig = rng_bool(r);
	h->pad = rng_u8(r) & 3;
	h->tver = rng_u8(r) & 0x0F; /* kept as received: the receive path checks it */
	h->pkey = rng_u16(r);
	h->fecn = rng_bool(r);
	h->becn = rng_bool(r);
	h->resv6 = rng_u8(r) & 0x3F;
	h->dqpn = rng_u32(r) & 0xFFFFFF;
	h->ackreq = rng_bool(r);
	h->resv7 = rng_u8(r) & 0x7F;
	h->psn = rng_u32(r) & 0xFFFFFF;
}

static bool eq_bth(const void *a, const void *b)
{
	return bth_eq(a, b, true);
}

/* --- DETH, RETH, AtomicETH, AETH --- */

static int dec_deth(void *v, const uint8_t *p, size_t len)
{
	return uroce_deth_decode(v, p, len);
}

static int enc_deth(uint8_t *p, size_t cap, const void *v)
{
	return uroce_deth_encode(p, cap, v);
}

static void rnd_deth(struct rng *r, void *v)
{
	struct uroce_deth *h = v;

	h->qkey = rng_u32(r);
	h->resv = rng_u8(r);
	h->src_qp = rng_u32(r) & 0xFFFFFF;
}

static bool eq_deth(const void *a, const void *b)
{
	const struct uroce_deth *x = a, *y = b;

	return x->qkey == y->qkey && x->resv == y->resv && x->src_qp == y->src_qp;
}

static int dec_reth(void *v, const uint8_t *p, size_t len)
{
	return uroce_reth_decode(v, p, len);
}

static int enc_reth(uint8_t *p, size_t cap, const void *v)
{
	return uroce_reth_encode(p, cap, v);
}

static void rnd_reth(struct rng *r, void *v)
{
	struct uroce_reth *h = v;

	h->va = rng_u64(r);
	h->rkey = rng_u32(r);
	h->len = rng_u32(r);
}

static bool eq_reth(const void *a, const void *b)
{
	const struct uroce_reth *x = a, *y = b;

	return x->va == y->va && x->rkey == y->rkey && x->len == y->len;
}

static int dec_atmeth(void *v, const uint8_t *p, size_t len)
{
	return uroce_atmeth_decode(v, p, len);
}

static int enc_atmeth(uint8_t *p, size_t cap, const void *v)
{
	return uroce_atmeth_encode(p, cap, v);
}

static void rnd_atmeth(struct rng *r, void *v)
{
	struct uroce_atmeth *h = v;

	h->va = rng_u64(r);
	h->rkey = rng_u32(r);
	h->swap_add = rng_u64(r);
	h->compare = rng_u64(r);
}

static bool eq_atmeth(const void *a, const void *b)
{
	const struct uroce_atmeth *x = a, *y = b;

	return x->va == y->va && x->rkey == y->rkey && x->swap_add == y->swap_add &&
	       x->compare == y->compare;
}

static int dec_aeth(void *v, const uint8_t *p, size_t len)
{
	return uroce_aeth_decode(v, p, len);
}

static int enc_aeth(uint8_t *p, size_t cap, const void *v)
{
	return uroce_aeth_encode(p, cap, v);
}

static void rnd_aeth(struct rng *r, void *v)
{
	struct uroce_aeth *h = v;

	h->syndrome = rng_u8(r);
	h->msn = rng_u32(r) & 0xFFFFFF;
}

static bool eq_aeth(const void *a, const void *b)
{
	const struct uroce_aeth *x = a, *y = b;

	return x->syndrome == y->syndrome && x->msn == y->msn;
}

/* --- 64- and 32-bit fields (AtomicAckETH, ImmDt, IETH, FETH) --- */

static int dec_be64(void *v, const uint8_t *p, size_t len)
{
	return uroce_be64_decode(v, p, len);
}

static int enc_be64(uint8_t *p, size_t cap, const void *v)
{
	return uroce_be64_encode(p, cap, *(const uint64_t *)v);
}

static void rnd_be64(struct rng *r, void *v)
{
	*(uint64_t *)v = rng_u64(r);
}

static bool eq_be64(const void *a, const void *b)
{
	return *(const uint64_t *)a == *(const uint64_t *)b;
}

static int dec_be32(void *v, const uint8_t *p, size_t len)
{
	return uroce_be32_decode(v, p, len);
}

static int enc_be32(uint8_t *p, size_t cap, const void *v)
{
	return uroce_be32_encode(p, cap, *(const uint32_t *)v);
}

static void rnd_be32(struct rng *r, void *v)
{
	*(uint32_t *)v = rng_u32(r);
}

static bool eq_be32(const void *a, const void *b)
{
	return *(const uint32_t *)a == *(const uint32_t *)b;
}

/* --- MAD common header --- */

static int dec_mad(void *v, const uint8_t *p, size_t len)
{
	return uroce_mad_hdr_decode(v, p, len);
}

static int enc_mad(uint8_t *p, size_t cap, const void *v)
{
	return uroce_mad_hdr_encode(p, cap, v);
}

static void rnd_mad(struct rng *r, void *v)
{
	struct uroce_mad_hdr *h = v;

	h->base_version = rng_u8(r);
	h->mgmt_class = rng_u8(r);
	h->class_version = rng_u8(r);
	h->method = rng_u8(r);
	h->status = rng_u16(r);
	h->class_specific = rng_u16(r);
	h->tid = rng_u64(r);
	h->attr_id = rng_u16(r);
	h->resv = rng_u16(r);
	h->attr_mod = rng_u32(r);
}

static bool eq_mad(const void *a, const void *b)
{
	const struct uroce_mad_hdr *x = a, *y = b;

	return x->base_version == y->base_version && x->mgmt_class == y->mgmt_class &&
	       x->class_version == y->class_version && x->method == y->method &&
	       x->status == y->status && x->class_specific == y->class_specific &&
	       x->tid == y->tid && x->attr_id == y->attr_id && x->resv == y->resv &&
	       x->attr_mod == y->attr_mod;
}

static void fix_none(uint8_t *b)
{
	(void)b;
}

static const struct codec codecs[] = {
	{"eth", 14, dec_eth, enc_eth, rnd_eth, fix_eth, eq_eth, -EBADMSG},
	{"eth+vlan", 18, dec_eth, enc_eth, rnd_eth_vlan, fix_eth_vlan, eq_eth, -EBADMSG},
	{"ipv4", 20, dec_ip4, enc_ip4, rnd_ip4, fix_ip4, eq_ip4, -EBADMSG},
	{"ipv6", 40, dec_ip6, enc_ip6, rnd_ip6, fix_ip6, eq_ip6, -EBADMSG},
	{"udp", 8, dec_udp, enc_udp, rnd_udp, fix_none, eq_udp, -EBADMSG},
	{"bth", 12, dec_bth, enc_bth, rnd_bth, fix_none, eq_bth, -EBADMSG},
	{"deth", 8, dec_deth, enc_deth, rnd_deth, fix_none, eq_deth, -EBADMSG},
	{"reth", 16, dec_reth, enc_reth, rnd_reth, fix_none, eq_reth, -EBADMSG},
	{"atmeth", 28, dec_atmeth, enc_atmeth, rnd_atmeth, fix_none, eq_atmeth, -EBADMSG},
	{"aeth", 4, dec_aeth, enc_aeth, rnd_aeth, fix_none, eq_aeth, -EBADMSG},
	{"be64", 8, dec_be64, enc_be64, rnd_be64, fix_none, eq_be64, -EBADMSG},
	{"be32", 4, dec_be32, enc_be32, rnd_be32, fix_none, eq_be32, -EBADMSG},
	{"mad", 24, dec_mad, enc_mad, rnd_mad, fix_none, eq_mad, -EBADMSG},
};

/* Encode into a fresh malloc of exactly cap bytes (ASan catches any write beyond). */
static int enc_exact(const struct codec *c, size_t cap, const void *v, uint8_t *copy)
{
	uint8_t *p = malloc(cap ? cap : 1);
	int rc = c->enc(p, cap, v);

	if (copy && rc > 0)
		memcpy(copy, p, (size_t)rc);
	free(p);
	return rc;
}

/* Decode from a fresh malloc holding exactly len bytes of b (ASan catches any read beyond). */
static int dec_exact(const struct codec *c, void *v, const uint8_t *b, size_t len)
{
	uint8_t *p = malloc(len ? len : 1);

	if (len)
		memcpy(p, b, len);
	int rc = c->dec(v, p, len);

	free(p);
	return rc;
}

static void test_codec(const struct codec *c)
{
	struct rng r = {0xC0DEC000ull + c->len};
	union anyhdr x, y;
	uint8_t b[64 + SLACK], e[64 + SLACK];

	for (int i = 0; i < 2000; i++) {
		/* decode(encode(x)) == x, encoding exactly len bytes and nothing past them. */
		memset(&x, 0, sizeof(x));
		memset(&y, 0, sizeof(y));
		c->rnd(&r, &x);
		memset(b, CANARY, sizeof(b));
		int n = c->enc(b, c->len, &x);

		CHECKF(n == (int)c->len, "%s: encode %d", c->name, n);
		CHECKF(all_bytes(b + c->len, SLACK, CANARY), "%s: wrote past its length", c->name);
		CHECKF(enc_exact(c, c->len, &x, e) == (int)c->len && !memcmp(e, b, c->len),
		       "%s: exact-size encode", c->name);
		CHECKF(dec_exact(c, &y, b, c->len) == (int)c->len, "%s: decode", c->name);
		CHECKF(c->eq(&x, &y), "%s: decode(encode(x)) != x", c->name);

		/* encode(decode(b)) == b for random representable bytes. */
		rng_fill(&r, b, c->len);
		c->fix(b);
		memset(&y, 0, sizeof(y));
		CHECKF(dec_exact(c, &y, b, c->len) == (int)c->len, "%s: decode random", c->name);
		memset(e, CANARY, sizeof(e));
		n = c->enc(e, c->len, &y);
		CHECKF(n == (int)c->len && memcmp(e, b, c->len) == 0, "%s: encode(decode(b)) != b",
		       c->name);
		/* Longer input: the header length, not the input length. */
		CHECKF(c->dec(&y, b, c->len + SLACK) == (int)c->len, "%s: decode long", c->name);
		CHECK_BAIL();
	}

	/* Every short length. b and x hold a valid header from the last round. */
	for (size_t n = 0; n < c->len; n++) {
		memset(&y, 0, sizeof(y));
		CHECKF(dec_exact(c, &y, b, n) == c->short_err, "%s: decode of %zu bytes", c->name,
		       n);
		memset(e, CANARY, sizeof(e));
		CHECKF(c->enc(e, n, &x) == -ENOSPC, "%s: encode into %zu bytes", c->name, n);
		CHECKF(all_bytes(e + n, sizeof(e) - n, CANARY), "%s: cap %zu overrun", c->name, n);
		CHECKF(enc_exact(c, n, &x, NULL) == -ENOSPC, "%s: exact cap %zu", c->name, n);
	}
}

/* RFC 1071, written independently: the one's-complement sum over the whole header is 0xFFFF. */
static uint16_t rfc1071(const uint8_t *h, size_t n)
{
	uint32_t s = 0;

	for (size_t i = 0; i + 1 < n; i += 2)
		s += (uint32_t)h[i] << 8 | h[i + 1];
	while (s > 0xFFFF)
		s = (s & 0xFFFF) + (s >> 16);
	return (uint16_t)s;
}

static void test_ipv4_fields(void)
{
	struct uroce_ipv4 h;
	uint8_t b[64];

	/* The ConnectX-4 Lx CNP of roce-reference.md 1.7: checksum 0x9161. */
	static const uint8_t cnp[20] = {0x45, 0xc2, 0x00, 0x3c, 0x71, 0x8c, 0x40, 0x00, 0x40, 0x11,
					0x91, 0x61, 0x0a, 0x00, 0x11, 0x01, 0x0a, 0x00, 0x12, 0x01};
	CHECK_EQ(uroce_ipv4_csum(cnp), 0x9161);
	CHECK(uroce_ipv4_decode(&h, cnp, 20) == 20 && h.tos == 0xC2 && h.tot_len == 60 &&
	      h.id == 0x718C && h.frag == 0x4000 && h.ttl == 64 && h.proto == 17 &&
	      h.csum == 0x9161 && h.src[3] == 1 && h.dst[2] == 0x12);

	struct rng r = {0x1071};

	for (int i = 0; i < 10000; i++) {
		rng_fill(&r, b, 20);
		b[0] = 0x45;
		uint16_t cs = uroce_ipv4_csum(b);

		/* The checksum field is ignored on input. */
		b[10] ^= 0xFF;
		CHECK_EQ(uroce_ipv4_csum(b), cs);
		uroce_put_be16(b + 10, cs);
		CHECKF(rfc1071(b, 20) == 0xFFFF, "checksum %04x does not sum to 0xFFFF", cs);
		CHECK_BAIL();
	}

	/* Fixed fields. */
	memcpy(b, cnp, 20);
	for (unsigned v = 0; v < 16; v++) {
		b[0] = (uint8_t)(v << 4 | 5);
		CHECKF(uroce_ipv4_decode(&h, b, 20) == (v == 4 ? 20 : -EBADMSG), "version %u", v);
	}
	for (unsigned ihl = 0; ihl < 16; ihl++) {
		uint8_t o[64] = {0};

		memcpy(o, cnp, 20);
		o[0] = (uint8_t)(0x40 | ihl);
		/* IHL < 5 is malformed; otherwise the options are skipped. */
		CHECKF(uroce_ipv4_decode(&h, o, 60) == (ihl < 5 ? -EBADMSG : (int)ihl * 4),
		       "IHL %u", ihl);
		if (ihl > 5) {
			/* The options must be inside len. */
			uint8_t *p = malloc(ihl * 4 - 1);

			memcpy(p, o, ihl * 4 - 1);
			CHECKF(uroce_ipv4_decode(&h, p, ihl * 4 - 1) == -EBADMSG, "IHL %u short",
			       ihl);
			free(p);
			/* The total length covers at least the header. */
			uroce_put_be16(o + 2, (uint16_t)(ihl * 4 - 1));
			CHECKF(uroce_ipv4_decode(&h, o, 60) == -EBADMSG, "IHL %u tot_len", ihl);
			uroce_put_be16(o + 2, (uint16_t)(ihl * 4));
			CHECKF(uroce_ipv4_decode(&h, o, 60) == (int)ihl * 4, "IHL %u exact", ihl);
		}
	}
	b[0] = 0x45;
	for (unsigned tl = 0; tl < 24; tl++) {
		uroce_put_be16(b + 2, (uint16_t)tl);
		CHECKF(uroce_ipv4_decode(&h, b, 20) == (tl < 20 ? -EBADMSG : 20), "tot_len %u", tl);
	}
	/* tot_len beyond len is the caller's business. */
	uroce_put_be16(b + 2, 0xFFFF);
	CHECK(uroce_ipv4_decode(&h, b, 20) == 20 && h.tot_len == 0xFFFF);

	/* The encoder writes only 20-byte headers. */
	uroce_ipv4_decode(&h, cnp, 20);
	for (unsigned ihl = 0; ihl < 16; ihl++) {
		h.ihl = (uint8_t)ihl;
		CHECKF(uroce_ipv4_encode(b, sizeof(b), &h) == (ihl == 5 ? 20 : -EINVAL),
		       "encode IHL %u", ihl);
	}
}

static void test_ip6_fields(void)
{
	uint8_t b[40] = {0x60};
	struct uroce_ip6 h;

	for (unsigned v = 0; v < 16; v++) {
		b[0] = (uint8_t)(v << 4);
		CHECKF(uroce_ip6_decode(&h, b, 40) == (v == 6 ? 40 : -EBADMSG), "version %u", v);
	}
	/* Traffic class straddles bytes 0-1; flow label is the low 20 bits of the first word. */
	uroce_put_be32(b, 0x6ABCDEF1);
	CHECK(uroce_ip6_decode(&h, b, 40) == 40 && h.tclass == 0xAB && h.flow == 0xCDEF1);
	/* The encoder masks the flow label to 20 bits and always writes version 6. */
	h.flow = 0xFFFFFFFF;
	h.version = 4;
	CHECK(uroce_ip6_encode(b, 40, &h) == 40 && uroce_get_be32(b) == 0x6ABFFFFF);
}

static void test_eth_fields(void)
{
	uint8_t b[18] = {0};
	struct uroce_eth e;

	/* Both TPIDs are tags, kept as received. */
	uroce_put_be16(b + 12, UROCE_ETHERTYPE_QINQ);
	uroce_put_be16(b + 14, 0xE123);
	uroce_put_be16(b + 16, UROCE_ETHERTYPE_ROCE);
	CHECK(uroce_eth_decode(&e, b, 18) == 18 && e.vlan && e.tpid == UROCE_ETHERTYPE_QINQ &&
	      e.tci == 0xE123 && e.ethertype == UROCE_ETHERTYPE_ROCE);
	CHECK_EQ(uroce_eth_len(&e), 18);
	/* A tag with TPID 0 is written as 802.1Q. */
	e.tpid = 0;
	CHECK(uroce_eth_encode(b, 18, &e) == 18 && uroce_get_be16(b + 12) == UROCE_ETHERTYPE_VLAN);
	/* A tagged frame cut inside the tag is malformed. */
	for (size_t n = 14; n < 18; n++)
		CHECK_EQ(uroce_eth_decode(&e, b, n), -EBADMSG);
	/* Untagged: no tag fields. */
	uroce_put_be16(b + 12, UROCE_ETHERTYPE_IPV4);
	CHECK(uroce_eth_decode(&e, b, 14) == 14 && !e.vlan && e.tpid == 0 && e.tci == 0 &&
	      uroce_eth_len(&e) == 14);
}

int main(void)
{
	for (size_t i = 0; i < sizeof(codecs) / sizeof(codecs[0]); i++)
		test_codec(&codecs[i]);
	test_ipv4_fields();
	test_ip6_fields();
	test_eth_fields();
	return check_exit("test_hdr");
}
