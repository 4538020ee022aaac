/* SPDX-License-Identifier: MIT */
/*
 * Helpers shared by the wire unit tests and the fuzz target: a seeded PRNG, a builder of valid
 * frames with random header fields, and field-by-field comparison of decoded packets.
 *
 * Everything is static inline so each test binary takes only what it uses.
 */
#ifndef UROCE_TESTS_WIRE_UTIL_H
#define UROCE_TESTS_WIRE_UTIL_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "wire/hdr.h"
#include "wire/opcode.h"
#include "wire/packet.h"

/* splitmix64: deterministic, seedable, good enough for test data. */
struct rng {
	uint64_t s;
};

static inline uint64_t rng_u64(struct rng *r)
{
	uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);

	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

static inline uint32_t rng_u32(struct rng *r)
{
	return (uint32_t)(rng_u64(r) >> 32);
}

static inline uint16_t rng_u16(struct rng *r)
{
	return (uint16_t)(rng_u64(r) >> 48);
}

static inline uint8_t rng_u8(struct rng *r)
{
	return (uint8_t)(rng_u64(r) >> 56);
}

static inline bool rng_bool(struct rng *r)
{
	return rng_u64(r) >> 63;
}

/* Uniform in [0, n), n > 0 (the modulo bias is irrelevant here). */
static inline uint32_t rng_below(struct rng *r, uint32_t n)
{
	return (uint32_t)(rng_u64(r) % n);
}

static inline void rng_fill(struct rng *r, void *p, size_t n)
{
	uint8_t *b = p;

	for (size_t i = 0; i < n; i++)
		b[i] = rng_u8(r);
}

/* Every valid opcode, in table order. Returns the count. */
static inline unsigned valid_opcodes(uint8_t ops[256])
{
	unsigned n = 0;

	for (unsigned op = 0; op < 256; op++) {
		if (uroce_op_valid((uint8_t)op))
			ops[n++] = (uint8_t)op;
	}
	return n;
}

/* Random values for every field of a transport packet; the payload is the caller's. */
static inline void random_tpkt(struct rng *r, struct uroce_tpkt *t, uint8_t op,
			       const uint8_t *payload, uint32_t payload_len)
{
	memset(t, 0, sizeof(*t));
	t->bth.opcode = op;
	t->bth.se = rng_bool(r);
	t->bth.mig = rng_bool(r);
	t->bth.pad = uroce_pad_len(payload_len);
	t->bth.tver = 0;
	t->bth.pkey = rng_u16(r);
	t->bth.fecn = rng_bool(r);
	t->bth.becn = rng_bool(r);
	t->bth.resv6 = rng_u8(r) & 0x3F;
	t->bth.dqpn = rng_u32(r) & 0xFFFFFF;
	t->bth.ackreq = rng_bool(r);
	t->bth.resv7 = rng_u8(r) & 0x7F;
	t->bth.psn = rng_u32(r) & 0xFFFFFF;
	t->deth.qkey = rng_u32(r);
	t->deth.resv = rng_u8(r);
	t->deth.src_qp = rng_u32(r) & 0xFFFFFF;
	t->feth = rng_u32(r);
	t->reth.va = rng_u64(r);
	t->reth.rkey = rng_u32(r);
	t->reth.len = rng_u32(r);
	t->atmeth.va = rng_u64(r);
	t->atmeth.rkey = rng_u32(r);
	t->atmeth.swap_add = rng_u64(r);
	t->atmeth.compare = rng_u64(r);
	t->aeth.syndrome = rng_u8(r);
	t->aeth.msn = rng_u32(r) & 0xFFFFFF;
	t->atmack = rng_u64(r);
	t->imm = rng_u32(r);
	t->ieth = rng_u32(r);
	rng_fill(r, t->cnp_resv, sizeof(t->cnp_resv));
	t->payload = payload;
	t->payload_len = payload_len;
}

/* Random frame around a transport packet: addresses, tags, TOS/TTL/flow label, ports. */
static inline void random_frame(struct rng *r, struct uroce_frame *f, enum uroce_encap encap,
				bool vlan, uint8_t op, const uint8_t *payload, uint32_t payload_len)
{
	memset(f, 0, sizeof(*f));
	f->encap = encap;
	rng_fill(r, f->eth.dst, 6);
	rng_fill(r, f->eth.src, 6);
	f->eth.vlan = vlan;
	f->eth.tpid = vlan ? (rng_bool(r) ? UROCE_ETHERTYPE_VLAN : UROCE_ETHERTYPE_QINQ) : 0;
	f->eth.tci = vlan ? rng_u16(r) : 0;
	f->ip4.ihl = 5;
	f->ip4.tos = rng_u8(r);
	f->ip4.id = rng_u16(r);
	f->ip4.frag = rng_bool(r) ? 0x4000 : 0; /* DF or nothing: never a fragment */
	f->ip4.ttl = rng_u8(r);
	rng_fill(r, f->ip4.src, 4);
	rng_fill(r, f->ip4.dst, 4);
	f->ip6.version = 6;
	f->ip6.tclass = rng_u8(r);
	f->ip6.flow = rng_u32(r) & 0xFFFFF;
	f->ip6.hop_limit = rng_u8(r);
	rng_fill(r, f->ip6.src, 16);
	rng_fill(r, f->ip6.dst, 16);
	f->udp.sport = rng_u16(r);
	f->udp.dport = UROCE_UDP_PORT;
	f->udp.csum = rng_u16(r);
	random_tpkt(r, &f->t, op, payload, payload_len);
}

/* The header bytes before the BTH for an encapsulation (Ethernet + L3 + L4). */
static inline size_t frame_hdr_len(enum uroce_encap encap, bool vlan)
{
	size_t n = UROCE_ETH_LEN + (vlan ? UROCE_VLAN_LEN : 0);

	switch (encap) {
	case UROCE_ENCAP_V1:
		return n + UROCE_GRH_LEN;
	case UROCE_ENCAP_V2_IPV4:
		return n + UROCE_IPV4_LEN + UROCE_UDP_LEN;
	case UROCE_ENCAP_V2_IPV6:
		return n + UROCE_IPV6_LEN + UROCE_UDP_LEN;
	case UROCE_ENCAP_NONE:
		break;
	}
	return 0;
}

static inline bool bth_eq(const struct uroce_bth *a, const struct uroce_bth *b, bool with_pad)
{
	return a->opcode == b->opcode && a->se == b->se && a->mig == b->mig &&
	       (!with_pad || a->pad == b->pad) && a->tver == b->tver && a->pkey == b->pkey &&
	       a->fecn == b->fecn && a->becn == b->becn && a->resv6 == b->resv6 &&
	       a->dqpn == b->dqpn && a->ackreq == b->ackreq && a->resv7 == b->resv7 &&
	       a->psn == b->psn;
}

/* The BTH and the extension headers the opcode carries (not payload, pad or ICRC). */
static inline bool tpkt_hdrs_eq(const struct uroce_tpkt *a, const struct uroce_tpkt *b,
				bool with_pad)
{
	unsigned h = uroce_opinfo[a->bth.opcode].hdrs;

	if (!bth_eq(&a->bth, &b->bth, with_pad))
		return false;
	if ((h & UROCE_HDR_DETH) && (a->deth.qkey != b->deth.qkey || a->deth.resv != b->deth.resv ||
				     a->deth.src_qp != b->deth.src_qp))
		return false;
	if ((h & UROCE_HDR_FETH) && a->feth != b->feth)
		return false;
	if ((h & UROCE_HDR_RETH) && (a->reth.va != b->reth.va || a->reth.rkey != b->reth.rkey ||
				     a->reth.len != b->reth.len))
		return false;
	if ((h & UROCE_HDR_ATMETH) &&
	    (a->atmeth.va != b->atmeth.va || a->atmeth.rkey != b->atmeth.rkey ||
	     a->atmeth.swap_add != b->atmeth.swap_add || a->atmeth.compare != b->atmeth.compare))
		return false;
	if ((h & UROCE_HDR_AETH) &&
	    (a->aeth.syndrome != b->aeth.syndrome || a->aeth.msn != b->aeth.msn))
		return false;
	if ((h & UROCE_HDR_ATMACK) && a->atmack != b->atmack)
		return false;
	if ((h & UROCE_HDR_IMMDT) && a->imm != b->imm)
		return false;
	if ((h & UROCE_HDR_IETH) && a->ieth != b->ieth)
		return false;
	if ((h & UROCE_HDR_CNP) && memcmp(a->cnp_resv, b->cnp_resv, UROCE_CNP_LEN) != 0)
		return false;
	return true;
}

static inline bool tpkt_payload_eq(const struct uroce_tpkt *a, const struct uroce_tpkt *b)
{
	return a->payload_len == b->payload_len &&
	       (a->payload_len == 0 || memcmp(a->payload, b->payload, a->payload_len) == 0);
}

static inline bool eth_eq(const struct uroce_eth *a, const struct uroce_eth *b)
{
	return memcmp(a->dst, b->dst, 6) == 0 && memcmp(a->src, b->src, 6) == 0 &&
	       a->vlan == b->vlan && a->tpid == b->tpid && a->tci == b->tci &&
	       a->ethertype == b->ethertype;
}

static inline bool ipv4_eq(const struct uroce_ipv4 *a, const struct uroce_ipv4 *b, bool with_csum,
			   bool with_len)
{
	return a->ihl == b->ihl && a->tos == b->tos && (!with_len || a->tot_len == b->tot_len) &&
	       a->id == b->id && a->frag == b->frag && a->ttl == b->ttl && a->proto == b->proto &&
	       (!with_csum || a->csum == b->csum) && memcmp(a->src, b->src, 4) == 0 &&
	       memcmp(a->dst, b->dst, 4) == 0;
}

static inline bool ip6_eq(const struct uroce_ip6 *a, const struct uroce_ip6 *b, bool with_len)
{
	return a->version == b->version && a->tclass == b->tclass && a->flow == b->flow &&
	       (!with_len || a->paylen == b->paylen) && a->next_hdr == b->next_hdr &&
	       a->hop_limit == b->hop_limit && memcmp(a->src, b->src, 16) == 0 &&
	       memcmp(a->dst, b->dst, 16) == 0;
}

static inline bool udp_eq(const struct uroce_udp *a, const struct uroce_udp *b, bool with_len)
{
	return a->sport == b->sport && a->dport == b->dport && (!with_len || a->len == b->len) &&
	       a->csum == b->csum;
}

/*
 * Two decoded frames carry the same fields, except those the encoder computes: the IPv4 header
 * checksum, the BTH pad count and the ICRC (compared by the caller when relevant). L3/L4 lengths
 * are compared only when with_len (a recomputed pad count can change them).
 */
static inline bool frame_fields_eq(const struct uroce_frame *a, const struct uroce_frame *b,
				   bool with_len)
{
	if (a->encap != b->encap || !eth_eq(&a->eth, &b->eth))
		return false;
	switch (a->encap) {
	case UROCE_ENCAP_V1:
		if (!ip6_eq(&a->ip6, &b->ip6, with_len))
			return false;
		break;
	case UROCE_ENCAP_V2_IPV4:
		if (!ipv4_eq(&a->ip4, &b->ip4, false, with_len) ||
		    !udp_eq(&a->udp, &b->udp, with_len))
			return false;
		break;
	case UROCE_ENCAP_V2_IPV6:
		if (!ip6_eq(&a->ip6, &b->ip6, with_len) || !udp_eq(&a->udp, &b->udp, with_len))
			return false;
		break;
	case UROCE_ENCAP_NONE:
		return false;
	}
	return tpkt_hdrs_eq(&a->t, &b->t, false) && tpkt_payload_eq(&a->t, &b->t);
}

/* Bytes 0..n) of a buffer all equal to v? */
static inline bool all_bytes(const uint8_t *p, size_t n, uint8_t v)
{
	for (size_t i = 0; i < n; i++) {
		if (p[i] != v)
			return false;
	}
	return true;
}

#endif
