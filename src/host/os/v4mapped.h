/* SPDX-License-Identifier: MIT */
/*
 * IPv4 addresses as v4-mapped IPv6 addresses (::ffff:a.b.c.d): the form RoCE GIDs give IPv4
 * addresses (rdma_ip2gid), used wherever a 16-byte address may hold either family.
 */
#ifndef UROCE_HOST_OS_V4MAPPED_H
#define UROCE_HOST_OS_V4MAPPED_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>


/* Is gid an IPv4 address, ::ffff:a.b.c.d (v4-mapped, as rdma_ip2gid makes it)? */
static inline bool uroce_gid_is_v4(const uint8_t gid[16])
{
	static const uint8_t pfx[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF };

	return memcmp(gid, pfx, 12) == 0;
}

/* gid = ::ffff:ip (ip: 4 bytes, network order). */
static inline void uroce_gid_from_v4(uint8_t gid[16], const void *ip)
{
	memset(gid, 0, 10);
	gid[10] = gid[11] = 0xFF;
	memcpy(gid + 12, ip, 4);
}

#endif
