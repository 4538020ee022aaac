/* SPDX-License-Identifier: MIT */
/* IPv4, IPv6 / GRH and UDP headers. */
#include <errno.h>
#include <string.h>

#include "wire/bytes.h"
#include "wire/hdr.h"

int uroce_ipv4_decode(struct uroce_ipv4 *h, const uint8_t *p, size_t len)
{
	if (len < UROCE_IPV4_LEN || p[0] >> 4 != 4)
		return -EBADMSG;
	h->ihl = p[0] & 0x0F;
	if (h->ihl < 5 || (size_t)h->ihl * 4 > len)
		return -EBADMSG;
	h->tos = p[1];
	h->tot_len = uroce_get_be16(p + 2);
	if (h->tot_len < h->ihl * 4)
		return -EBADMSG;
	h->id = uroce_get_be16(p + 4);
	h->frag = uroce_get_be16(p + 6);
	h->ttl = p[8];
	h->proto = p[9];
	h->csum = uroce_get_be16(p + 10);
	memcpy(h->src, p + 12, 4);
	memcpy(h->dst, p + 16, 4);
	return h->ihl * 4;
}

int uroce_ipv4_encode(uint8_t *p, size_t cap, const struct uroce_ipv4 *h)
{
	if (h->ihl != 5)
		return -EINVAL;
	if (cap < UROCE_IPV4_LEN)
		return -ENOSPC;
	p[0] = 0x45;
	p[1] = h->tos;
	uroce_put_be16(p + 2, h->tot_len);
	uroce_put_be16(p + 4, h->id);
	uroce_put_be16(p + 6, h->frag);
	p[8] = h->ttl;
	p[9] = h->proto;
	uroce_put_be16(p + 10, h->csum);
	memcpy(p + 12, h->src, 4);
	memcpy(p + 16, h->dst, 4);
	return UROCE_IPV4_LEN;
}

uint16_t uroce_ipv4_csum(const uint8_t *hdr20)
{
	uint32_t sum = 0;

	for (int i = 0; i < UROCE_IPV4_LEN; i += 2) {
		if (i != 10)
			sum += uroce_get_be16(hdr20 + i);
	}
	while (sum >> 16)
		sum = (sum & 0xFFFF) + (sum >> 16);
	return (uint16_t)~sum;
}

int uroce_ip6_decode(struct uroce_ip6 *h, const uint8_t *p, size_t len)
{
	if (len < UROCE_IPV6_LEN || p[0] >> 4 != 6)
		return -EBADMSG;
	uint32_t w = uroce_get_be32(p);

	h->version = 6;
	h->tclass = (uint8_t)(w >> 20);
	h->flow = w & 0xFFFFF;
	h->paylen = uroce_get_be16(p + 4);
	h->next_hdr = p[6];
	h->hop_limit = p[7];
	memcpy(h->src, p + 8, 16);
	memcpy(h->dst, p + 24, 16);
	return UROCE_IPV6_LEN;
}

int uroce_ip6_encode(uint8_t *p, size_t cap, const struct uroce_ip6 *h)
{
	if (cap < UROCE_IPV6_LEN)
		return -ENOSPC;
	uroce_put_be32(p, 6u << 28 | (uint32_t)h->tclass << 20 | (h->flow & 0xFFFFF));
	uroce_put_be16(p + 4, h->paylen);
	p[6] = h->next_hdr;
	p[7] = h->hop_limit;
	memcpy(p + 8, h->src, 16);
	memcpy(p + 24, h->dst, 16);
	return UROCE_IPV6_LEN;
}

int uroce_udp_decode(struct uroce_udp *h, const uint8_t *p, size_t len)
{
	if (len < UROCE_UDP_LEN)
		return -EBADMSG;
	h->sport = uroce_get_be16(p);
	h->dport = uroce_get_be16(p + 2);
	h->len = uroce_get_be16(p + 4);
	h->csum = uroce_get_be16(p + 6);
	return UROCE_UDP_LEN;
}

int uroce_udp_encode(uint8_t *p, size_t cap, const struct uroce_udp *h)
{
	if (cap < UROCE_UDP_LEN)
		return -ENOSPC;
	uroce_put_be16(p, h->sport);
	uroce_put_be16(p + 2, h->dport);
	uroce_put_be16(p + 4, h->len);
	uroce_put_be16(p + 6, h->csum);
	return UROCE_UDP_LEN;
}
