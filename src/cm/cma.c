/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <string.h>

#include "cm/cma.h"
#include "wire/bytes.h"

_Static_assert(UROCE_CMA_HDR_LEN == 4 + 16 + 16, "cma_hdr is 36 bytes");

int uroce_cma_service_id_split(uint64_t sid, uint16_t *ps, uint16_t *port)
{
	if ((sid & UROCE_IB_CMA_SERVICE_ID_MASK) != UROCE_IB_CMA_SERVICE_ID)
		return -EINVAL;
	if (ps)
		*ps = (uint16_t)((sid & UROCE_RDMA_IB_IP_PS_MASK) >> 16);
	if (port)
		*port = (uint16_t)(sid & UROCE_RDMA_IB_IP_PORT_MASK);
	return 0;
}

static void addr_decode(union uroce_cma_addr *a, const uint8_t *p, uint8_t ip_version)
{
	if (ip_version == 4)
		a->ip4 = uroce_get_be32(p + 12);
	else
		memcpy(a->ip6, p, 16);
}

static void addr_encode(uint8_t *p, const union uroce_cma_addr *a, uint8_t ip_version)
{
	if (ip_version == 4) {
		memset(p, 0, 12);
		uroce_put_be32(p + 12, a->ip4);
	} else {
		memcpy(p, a->ip6, 16);
	}
}

int uroce_cma_hdr_decode(struct uroce_cma_hdr *h, const uint8_t *p, size_t len)
{
	uint8_t ipv;

	if (len < UROCE_CMA_HDR_LEN)
		return -EBADMSG;
	ipv = p[1] >> 4;
	/* cma_save_ip_info / cma_get_ip_ver: version 0, then IPv4 or IPv6 only. */
	if (p[0] != UROCE_CMA_VERSION || (ipv != 4 && ipv != 6))
		return -EINVAL;
	memset(h, 0, sizeof(*h)); /* the unused part of an IPv4 address union, and padding */
	h->ip_version = ipv;
	h->port = uroce_get_be16(p + 2);
	addr_decode(&h->src, p + 4, ipv);
	addr_decode(&h->dst, p + 20, ipv);
	return UROCE_CMA_HDR_LEN;
}

int uroce_cma_hdr_encode(uint8_t *p, size_t cap, const struct uroce_cma_hdr *h)
{
	if (h->ip_version != 4 && h->ip_version != 6)
		return -EINVAL;
	if (cap < UROCE_CMA_HDR_LEN)
		return -ENOSPC;
	p[0] = UROCE_CMA_VERSION;
	p[1] = (uint8_t)(h->ip_version << 4);
	uroce_put_be16(p + 2, h->port);
	addr_encode(p + 4, &h->src, h->ip_version);
	addr_encode(p + 20, &h->dst, h->ip_version);
	return UROCE_CMA_HDR_LEN;
}
