/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <string.h>

#include "wire/bytes.h"
#include "wire/hdr.h"

int uroce_eth_decode(struct uroce_eth *e, const uint8_t *p, size_t len)
{
	if (len < UROCE_ETH_LEN)
		return -EBADMSG;
	memcpy(e->dst, p, 6);
	memcpy(e->src, p + 6, 6);
	uint16_t type = uroce_get_be16(p + 12);

	e->vlan = type == UROCE_ETHERTYPE_VLAN || type == UROCE_ETHERTYPE_QINQ;
	if (!e->vlan) {
		e->tpid = 0;
		e->tci = 0;
		e->ethertype = type;
		return UROCE_ETH_LEN;
	}
	if (len < UROCE_ETH_LEN + UROCE_VLAN_LEN)
		return -EBADMSG;
	e->tpid = type;
	e->tci = uroce_get_be16(p + 14);
	e->ethertype = uroce_get_be16(p + 16);
	return UROCE_ETH_LEN + UROCE_VLAN_LEN;
}

int uroce_eth_encode(uint8_t *p, size_t cap, const struct uroce_eth *e)
{
	int n = uroce_eth_len(e);

	if (cap < (size_t)n)
		return -ENOSPC;
	memcpy(p, e->dst, 6);
	memcpy(p + 6, e->src, 6);
	if (e->vlan) {
		uroce_put_be16(p + 12, e->tpid ? e->tpid : UROCE_ETHERTYPE_VLAN);
		uroce_put_be16(p + 14, e->tci);
		uroce_put_be16(p + 16, e->ethertype);
	} else {
		uroce_put_be16(p + 12, e->ethertype);
	}
	return n;
}
