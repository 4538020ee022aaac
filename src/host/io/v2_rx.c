/* SPDX-License-Identifier: MIT */
/* The RoCE v2 receive check, with the IPv4 ID solver (v2_rx.h; roce-reference 1.12). */
#include <errno.h>
#include <string.h>

#include "host/io/backend.h"
#include "host/io/v2_rx.h"
#include "host/os/v4mapped.h"
#include "wire/bytes.h"

/* The solver for transport length len from the cache, built there if it is not. */
static struct uroce_ipid_solver *cached_solver(struct uroce_ipid_cache *c, uint32_t len)
{
	unsigned set = ((len * 0x9E3779B1u) >> 16) % UROCE_IPID_SETS;
	struct uroce_ipid_solver *w = c->s[set];

	for (unsigned i = 0; i < 2; i++) {
		if (w[i].roce_len == len) {
			c->older[set] = (uint8_t)(1 - i);
			return &w[i];
		}
	}
	unsigned v = c->older[set];

	uroce_ipid_solver_init(&w[v], len);
	c->builds++;
	c->older[set] = (uint8_t)(1 - v);
	return &w[v];
}

int uroce_v2_rx_verify(struct uroce_rx_desc *d, struct uroce_ipid_cache *cache,
		       const struct uroce_v2_rx_in *in)
{
	uint8_t l3l4[UROCE_IPV6_LEN + UROCE_UDP_LEN];
	uint8_t *u;
	bool v4 = in->encap == UROCE_ENCAP_V2_IPV4;

	if (in->encap != UROCE_ENCAP_V2_IPV4 && in->encap != UROCE_ENCAP_V2_IPV6)
		return -EINVAL;
	if (in->len < UROCE_BTH_LEN + UROCE_ICRC_LEN || in->len > 0xFFFF - 48)
		return -EBADMSG;

	memset(l3l4, 0, sizeof(l3l4));
	if (v4) {
		/* What the sender's kernel wrote, as far as a socket can tell (1.12): DF, ID 0. */
		l3l4[0] = 0x45;
		l3l4[1] = in->tos;
		uroce_put_be16(l3l4 + 2, (uint16_t)(in->len + UROCE_IPV4_LEN + UROCE_UDP_LEN));
		uroce_put_be16(l3l4 + 6, 0x4000);
		l3l4[8] = in->ttl;
		l3l4[9] = UROCE_IPPROTO_UDP;
		memcpy(l3l4 + 12, in->src + 12, 4);
		memcpy(l3l4 + 16, in->dst + 12, 4);
		u = l3l4 + UROCE_IPV4_LEN;
	} else {
		uroce_put_be32(l3l4, 6u << 28 | (uint32_t)in->tos << 20);
		uroce_put_be16(l3l4 + 4, (uint16_t)(in->len + UROCE_UDP_LEN));
		l3l4[6] = UROCE_IPPROTO_UDP;
		l3l4[7] = in->ttl;
		memcpy(l3l4 + 8, in->src, 16);
		memcpy(l3l4 + 24, in->dst, 16);
		u = l3l4 + UROCE_IPV6_LEN;
	}
	uroce_put_be16(u, in->sport);
	uroce_put_be16(u + 2, in->dport);
	uroce_put_be16(u + 4, (uint16_t)(in->len + UROCE_UDP_LEN));

	uint32_t crc = uroce_icrc(in->encap, l3l4, in->data, in->len - UROCE_ICRC_LEN);
	uint32_t wire = uroce_get_le32(in->data + in->len - UROCE_ICRC_LEN);
	uint16_t id = 0;

	if (crc != wire) {
		if (!v4)
			return -EILSEQ;
		/* Solve for the ID: it both recovers the ID and verifies the packet. */
		struct uroce_ipid_solver local, *s = &local;

		if (cache) {
			s = cached_solver(cache, in->len);
		} else {
			uroce_ipid_solver_init(s, in->len);
		}
		if (uroce_ipid_solve(s, crc, wire, &id) < 0)
			return -EILSEQ;
	}

	struct uroce_rx_pkt *p = &d->pkt;
	static const struct uroce_rx_desc zero; /* not memset: rep stos, slow at this size */

	*d = zero;
	p->data = in->data;
	p->len = in->len;
	p->encap = in->encap;
	if (v4) {
		uroce_gid_from_v4(p->sgid, in->src + 12);
		uroce_gid_from_v4(p->dgid, in->dst + 12);
		/* GRH slot: 20 undefined (zero) bytes, then the IPv4 header (roce-reference 1.1).
		 */
		uroce_put_be16(l3l4 + 4, id);
		uroce_put_be16(l3l4 + 10, uroce_ipv4_csum(l3l4));
		memcpy(p->grh + 20, l3l4, UROCE_IPV4_LEN);
	} else {
		memcpy(p->sgid, in->src, 16);
		memcpy(p->dgid, in->dst, 16);
		memcpy(p->grh, l3l4, UROCE_IPV6_LEN);
	}
	p->ecn_ce = (in->tos & 3) == 3;
	d->ifindex = in->ifindex;
	d->sport = in->sport;
	d->dport = in->dport;
	d->ip_id = id;
	d->tclass = in->tos;
	d->hop_limit = in->ttl;
	return 0;
}
