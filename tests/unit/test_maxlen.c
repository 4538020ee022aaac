/* SPDX-License-Identifier: MIT */
/*
 * The largest transport packet (BTH..ICRC, roce_len) each encapsulation can carry, by its 16-bit
 * length field (roce-reference.md 1.1):
 *   v1:      GRH PayLen = roce_len                   -> roce_len <= 65535
 *   v2/IPv6: IPv6 PayLen = UDP length = 8 + roce_len -> roce_len <= 65527
 *   v2/IPv4: IPv4 total length = 28 + roce_len       -> roce_len <= 65507
 * The decoder accepts all of these. The encoder must encode the largest (no pad: the largest
 * multiple of 4 within the limit), and the result must decode back with a valid ICRC; 4 bytes
 * more must fail with an error other than -ENOSPC (the buffer is large enough).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "wire/bytes.h"
#include "wire/icrc.h"
#include "wire/packet.h"
#include "wire_util.h"

static const char *const encap_name[] = {"none", "v1", "v2/IPv4", "v2/IPv6"};

static void test_max_length(void)
{
	static const struct {
		enum uroce_encap encap;
		uint32_t max_roce;
	} lim[] = {
		{UROCE_ENCAP_V1, 0xFFFF},
		{UROCE_ENCAP_V2_IPV4, 0xFFFF - 28},
		{UROCE_ENCAP_V2_IPV6, 0xFFFF - 8},
	};
	size_t cap = 0x10000 + 128;
	uint8_t *buf = malloc(cap), *payload = calloc(1, 0x10000);
	struct rng r = {0x10000};

	for (size_t i = 0; i < 3; i++) {
		/* RC SEND ONLY: roce_len = 12 + payload + pad + 4. */
		uint32_t plen = lim[i].max_roce - 16;
		struct uroce_frame f, g;

		plen -= plen & 3;
		random_frame(&r, &f, lim[i].encap, false, UROCE_OP_RC_SEND_ONLY, payload, plen);
		ssize_t n = uroce_frame_encode(buf, cap, &f);

		CHECKF(n == (ssize_t)(frame_hdr_len(lim[i].encap, false) + 16 + plen),
		       "%s: largest frame (transport %u bytes, limit %u) encodes to %zd",
		       encap_name[lim[i].encap], 16 + plen, lim[i].max_roce, n);
		if (n > 0) {
			int rc = uroce_frame_decode(&g, buf, (size_t)n);

			CHECKF(rc == 0 && g.roce_len == 16 + plen &&
				       uroce_frame_icrc(&g) == g.t.icrc,
			       "%s: largest frame decode %d", encap_name[lim[i].encap], rc);
		}
		random_frame(&r, &f, lim[i].encap, false, UROCE_OP_RC_SEND_ONLY, payload, plen + 4);
		n = uroce_frame_encode(buf, cap, &f);
		CHECKF(n < 0 && n != -ENOSPC, "%s: transport of %u bytes, over the limit: %zd",
		       encap_name[lim[i].encap], 20 + plen, n);
	}
	free(buf);
	free(payload);
}

/* The decoder's side: a largest v1 and v2/IPv6 frame, laid out with the header codecs. */
static void test_decode_max(void)
{
	size_t cap = 0x10000 + 128;
	uint8_t *buf = malloc(cap), *payload = calloc(1, 0x10000);
	struct rng r = {0xFFFF};

	for (int v6 = 0; v6 < 2; v6++) {
		enum uroce_encap e = v6 ? UROCE_ENCAP_V2_IPV6 : UROCE_ENCAP_V1;
		uint32_t roce_len = v6 ? 0xFFFF - 8 - 3 : 0xFFFF - 3; /* multiple of 4 */
		struct uroce_frame f, g;

		random_frame(&r, &f, e, false, UROCE_OP_RC_SEND_ONLY, payload, roce_len - 16);
		f.eth.ethertype = v6 ? UROCE_ETHERTYPE_IPV6 : UROCE_ETHERTYPE_ROCE;
		f.ip6.next_hdr = v6 ? UROCE_IPPROTO_UDP : UROCE_GRH_NEXT_HDR;
		f.ip6.paylen = (uint16_t)(roce_len + (v6 ? UROCE_UDP_LEN : 0));
		f.udp.len = f.ip6.paylen;
		uint8_t *p = buf + uroce_eth_encode(buf, cap, &f.eth);
		uint8_t *l3 = p;

		p += uroce_ip6_encode(p, 40, &f.ip6);
		if (v6)
			p += uroce_udp_encode(p, 8, &f.udp);
		ssize_t tl = uroce_tpkt_encode(p, cap - (size_t)(p - buf), &f.t);

		CHECK_EQ(tl, (ssize_t)roce_len - 4);
		uroce_put_le32(p + tl, uroce_icrc(e, l3, p, (size_t)tl));
		size_t n = (size_t)(p + tl + 4 - buf);
		int rc = uroce_frame_decode(&g, buf, n);

		CHECKF(rc == 0 && g.roce_len == roce_len && uroce_frame_icrc(&g) == g.t.icrc,
		       "%s: largest frame decodes to %d (%s)", encap_name[e], rc,
		       g.err ? g.err : "");
		/* ... and encoding what was decoded gives it back. */
		uint8_t *out = malloc(n);
		ssize_t m = uroce_frame_encode(out, n, &g);

		CHECKF(m == (ssize_t)n && memcmp(out, buf, n) == 0,
		       "%s: decoded largest frame re-encodes to %zd", encap_name[e], m);
		free(out);
	}
	free(buf);
	free(payload);
}

int main(void)
{
	test_max_length();
	test_decode_max();
	return check_exit("test_maxlen");
}
