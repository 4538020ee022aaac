/* SPDX-License-Identifier: MIT */
/*
 * Truncation sweep of the frame and transport codecs (STYLE.md principle 4).
 *
 * For every valid opcode, each encapsulation (v1, v2/IPv4, v2/IPv6), with and without a VLAN tag,
 * and a few payload lengths, a valid frame is built with uroce_frame_encode. Then:
 *  - every prefix 0..len-1 of the frame, each in a malloc of exactly that size (so ASan sees any
 *    over-read), decodes to -ENOENT or -EBADMSG, never 0: the L3 lengths cover the ICRC, so no
 *    prefix of a valid frame is itself a valid frame;
 *  - every prefix of the transport part decodes with uroce_tpkt_decode to -EBADMSG, or to 0 only
 *    where the prefix is itself a well-formed shorter packet (an opcode with payload, cut inside
 *    the payload): the transport packet carries no length of its own;
 *  - the encoders (frame, transport packet, transport headers) with every capacity short of the
 *    length return -ENOSPC and write nothing at or beyond the capacity (canary; exact malloc).
 * Also: invalid opcodes and encapsulations, and Ethernet padding. (The largest frames are in
 * test_maxlen.)
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "wire/icrc.h"
#include "wire/packet.h"
#include "wire_util.h"

#define CANARY 0x5C
#define SLACK  64

static const enum uroce_encap encaps[] = {UROCE_ENCAP_V1, UROCE_ENCAP_V2_IPV4, UROCE_ENCAP_V2_IPV6};
static const char *const encap_name[] = {"none", "v1", "v2/IPv4", "v2/IPv6"};

static unsigned long frames_swept, prefixes_swept;

static size_t l3l4_len(enum uroce_encap encap)
{
	return frame_hdr_len(encap, false) - UROCE_ETH_LEN;
}

/* Decode buf[0..n) from a fresh allocation of exactly n bytes. */
static int decode_exact(struct uroce_frame *f, const uint8_t *buf, size_t n)
{
	uint8_t *p = malloc(n ? n : 1);

	if (n)
		memcpy(p, buf, n);
	int rc = uroce_frame_decode(f, p, n);

	/* Pointers into p are dead after free; clear them so nothing uses them. */
	free(p);
	f->l3 = f->roce = NULL;
	f->t.payload = NULL;
	return rc;
}

static void sweep_frame(const struct uroce_frame *in, const char *what)
{
	uint8_t buf[2048 + SLACK];
	ssize_t n = uroce_frame_encode(buf, sizeof(buf) - SLACK, in);
	const struct uroce_opinfo *oi = &uroce_opinfo[in->t.bth.opcode];

	CHECKF(n > 0, "%s: encode %zd", what, n);
	if (n <= 0)
		return;
	size_t len = (size_t)n;
	size_t eth = (size_t)uroce_eth_len(&in->eth);
	size_t hdr = eth + l3l4_len(in->encap);
	size_t roce_len = len - hdr;
	uint8_t pad = uroce_pad_len(in->t.payload_len);

	CHECKF(roce_len == oi->hdr_len + in->t.payload_len + pad + UROCE_ICRC_LEN,
	       "%s: transport length %zu", what, roce_len);

	/* The whole frame decodes, with a valid ICRC, and re-encodes to the same bytes. */
	struct uroce_frame f;
	int rc = uroce_frame_decode(&f, buf, len);

	CHECKF(rc == 0, "%s: decode %d (%s)", what, rc, f.err ? f.err : "");
	if (rc)
		return;
	CHECK(f.encap == in->encap && f.len == len && f.roce == buf + hdr &&
	      f.roce_len == roce_len && f.l3 == buf + eth);
	CHECKF(uroce_frame_icrc(&f) == f.t.icrc, "%s: ICRC", what);
	CHECK(tpkt_hdrs_eq(&f.t, &in->t, false) && f.t.bth.pad == pad);
	CHECK(tpkt_payload_eq(&f.t, &in->t));
	/* The encoder computed the IPv4 header checksum (the input's field is random): the
	 * one's-complement sum of the header is 0xFFFF (RFC 1071). */
	if (in->encap == UROCE_ENCAP_V2_IPV4) {
		uint32_t sum = 0;

		for (size_t i = 0; i < UROCE_IPV4_LEN; i += 2)
			sum += (uint32_t)f.l3[i] << 8 | f.l3[i + 1];
		while (sum > 0xFFFF)
			sum = (sum & 0xFFFF) + (sum >> 16);
		CHECKF(sum == 0xFFFF, "%s: IPv4 header checksum %04x wrong", what, f.ip4.csum);
	}

	/* Ethernet padding after the L3 length is ignored. */
	memset(buf + len, 0, SLACK);
	CHECK(uroce_frame_decode(&f, buf, len + SLACK) == 0 && f.len == len);

	/* Every prefix of the frame. */
	for (size_t k = 0; k < len; k++) {
		struct uroce_frame g;

		rc = decode_exact(&g, buf, k);
		CHECKF(rc != 0, "%s: prefix %zu of %zu decodes as a valid frame", what, k, len);
		CHECKF(rc == -ENOENT || rc == -EBADMSG, "%s: prefix %zu: %d", what, k, rc);
		if (rc == -ENOENT)
			CHECKF(g.encap == UROCE_ENCAP_NONE, "%s: prefix %zu: ENOENT, encap %d",
			       what, k, g.encap);
		if (rc == -EBADMSG)
			CHECKF(g.err && g.encap == in->encap, "%s: prefix %zu: EBADMSG, err %s",
			       what, k, g.err ? g.err : "NULL");
		/* Which: not recognisably RoCE until the Ethertype (v1) or the whole UDP header
		 * to port 4791 (v2) is inside the prefix. */
		if (k < eth)
			CHECKF(rc == -ENOENT, "%s: prefix %zu inside Ethernet: %d", what, k, rc);
		if (in->encap == UROCE_ENCAP_V1 && k >= eth)
			CHECKF(rc == -EBADMSG, "%s: v1 prefix %zu: %d", what, k, rc);
		if (in->encap != UROCE_ENCAP_V1 && k < hdr - UROCE_UDP_LEN)
			CHECKF(rc == -ENOENT, "%s: prefix %zu inside L3: %d", what, k, rc);
		if (k >= hdr)
			CHECKF(rc == -EBADMSG, "%s: prefix %zu after UDP: %d", what, k, rc);
		prefixes_swept++;
		CHECK_BAIL();
	}

	/* Every prefix of the transport part, decoded as a bare transport packet. */
	const uint8_t *roce = buf + hdr;
	size_t min_ok = oi->hdr_len + pad + UROCE_ICRC_LEN;

	for (size_t k = 0; k <= roce_len; k++) {
		uint8_t *p = malloc(k ? k : 1);
		struct uroce_tpkt t;
		const char *err = "unset";

		if (k)
			memcpy(p, roce, k);
		rc = uroce_tpkt_decode(&t, p, k, &err);
		/* A shorter prefix is still a packet when the cut falls inside the payload. */
		bool ok = k == roce_len || ((oi->flags & UROCE_OPF_PAYLOAD) && k >= min_ok);

		CHECKF(rc == (ok ? 0 : -EBADMSG), "%s: transport prefix %zu of %zu: %d (%s)", what,
		       k, roce_len, rc, err ? err : "");
		CHECK(rc == 0 ? err == NULL : err != NULL);
		if (rc == 0) {
			CHECK(tpkt_hdrs_eq(&t, &in->t, false) && t.bth.pad == pad);
			CHECK(t.payload == p + oi->hdr_len);
			CHECK_EQ(t.payload_len, k - min_ok);
			if (k < roce_len)
				CHECK_MEM_EQ(t.payload, in->t.payload, t.payload_len);
		}
		free(p);
		prefixes_swept++;
		CHECK_BAIL();
	}

	/* Encoders with every short capacity: -ENOSPC, nothing written at or past cap. */
	uint8_t out[2048 + SLACK];

	for (size_t cap = 0; cap < len; cap++) {
		memset(out, CANARY, sizeof(out));
		CHECKF(uroce_frame_encode(out, cap, in) == -ENOSPC, "%s: frame cap %zu", what, cap);
		CHECKF(all_bytes(out + cap, len + SLACK - cap, CANARY), "%s: frame cap %zu overrun",
		       what, cap);
		uint8_t *p = malloc(cap ? cap : 1);

		CHECK_EQ(uroce_frame_encode(p, cap, in), -ENOSPC);
		free(p);
		CHECK_BAIL();
	}
	size_t tlen = roce_len - UROCE_ICRC_LEN;

	for (size_t cap = 0; cap <= tlen; cap++) {
		memset(out, CANARY, sizeof(out));
		ssize_t r = uroce_tpkt_encode(out, cap, &in->t);

		CHECKF(r == (cap < tlen ? -ENOSPC : (ssize_t)tlen), "%s: tpkt cap %zu: %zd", what,
		       cap, r);
		CHECKF(all_bytes(out + cap, tlen + SLACK - cap, CANARY), "%s: tpkt cap %zu overrun",
		       what, cap);
		if (cap == tlen)
			CHECK_MEM_EQ(out, roce, tlen);
		memset(out, CANARY, sizeof(out));
		int h = uroce_tpkt_hdr_encode(out, cap, &in->t);

		CHECKF(h == (cap < oi->hdr_len ? -ENOSPC : oi->hdr_len), "%s: hdr cap %zu: %d",
		       what, cap, h);
		CHECKF(all_bytes(out + cap, tlen + SLACK - cap, CANARY), "%s: hdr cap %zu overrun",
		       what, cap);
		if (h > 0)
			CHECK_MEM_EQ(out, roce, (size_t)h);
		CHECK_BAIL();
	}
	frames_swept++;
}

static void test_sweep(void)
{
	struct rng r = {0x7256ull};
	uint8_t ops[256], payload[1024];
	unsigned nops = valid_opcodes(ops);
	static const uint32_t plens[] = {0, 1, 2, 3, 4, 5, 63};

	CHECK_EQ(nops, 40);
	rng_fill(&r, payload, sizeof(payload));
	for (unsigned i = 0; i < nops; i++) {
		const struct uroce_opinfo *oi = &uroce_opinfo[ops[i]];

		for (size_t e = 0; e < 3; e++) {
			for (int vlan = 0; vlan < 2; vlan++) {
				size_t np = (oi->flags & UROCE_OPF_PAYLOAD) ? 7 : 1;

				for (size_t j = 0; j < np; j++) {
					uint32_t plen = plens[j];
					struct uroce_frame f;
					char what[128];

					if (ops[i] == UROCE_OP_RC_ATOMIC_WRITE)
						plen = 8; /* the 64-bit value (1.3) */
					random_frame(&r, &f, encaps[e], vlan, ops[i], payload,
						     plen);
					snprintf(what, sizeof(what), "%s%s %s payload %u",
						 encap_name[encaps[e]], vlan ? "+vlan" : "",
						 oi->name, plen);
					sweep_frame(&f, what);
				}
			}
		}
	}
	/* One MTU-sized packet per encapsulation. */
	for (size_t e = 0; e < 3; e++) {
		struct uroce_frame f;

		random_frame(&r, &f, encaps[e], true, UROCE_OP_RC_WRITE_ONLY, payload, 1024);
		sweep_frame(&f, "1 KiB RC WRITE ONLY");
	}
}

/* Every invalid opcode is refused by the decoders and the encoders. */
static void test_invalid(void)
{
	struct rng r = {0xBAD};
	uint8_t buf[256];
	struct uroce_frame f, g;

	random_frame(&r, &f, UROCE_ENCAP_V2_IPV4, false, UROCE_OP_RC_SEND_ONLY, NULL, 0);
	ssize_t n = uroce_frame_encode(buf, sizeof(buf), &f);

	CHECK_EQ(n, 14 + 28 + 12 + 4);
	for (unsigned op = 0; op < 256; op++) {
		if (uroce_op_valid((uint8_t)op))
			continue;
		buf[42] = (uint8_t)op;
		CHECKF(uroce_frame_decode(&g, buf, (size_t)n) == -EBADMSG && g.err,
		       "opcode 0x%02x decoded", op);
		const char *err = NULL;

		CHECK(uroce_tpkt_decode(&g.t, buf + 42, 16, &err) == -EBADMSG && err);
		f.t.bth.opcode = (uint8_t)op;
		CHECK_EQ(uroce_tpkt_hdr_encode(buf, sizeof(buf), &f.t), -EINVAL);
		CHECK_EQ(uroce_tpkt_encode(buf, sizeof(buf), &f.t), -EINVAL);
		CHECK_EQ(uroce_frame_encode(buf, sizeof(buf), &f), -EINVAL);
	}
	f.t.bth.opcode = UROCE_OP_RC_SEND_ONLY;
	f.encap = UROCE_ENCAP_NONE;
	CHECK_EQ(uroce_frame_encode(buf, sizeof(buf), &f), -EINVAL);
	f.encap = (enum uroce_encap)7;
	CHECK_EQ(uroce_frame_encode(buf, sizeof(buf), &f), -EINVAL);
	f.encap = UROCE_ENCAP_V2_IPV4;
	f.ip4.ihl = 6;
	CHECK_EQ(uroce_frame_encode(buf, sizeof(buf), &f), -EINVAL);
}

int main(void)
{
	test_sweep();
	test_invalid();
	printf("test_truncate: %lu frames, %lu prefixes\n", frames_swept, prefixes_swept);
	return check_exit("test_truncate");
}
