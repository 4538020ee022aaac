/* SPDX-License-Identifier: MIT */
/*
 * A device's GID table (one port), built from its interface's addresses.
 *
 * Design notes
 * - Entries and order, for each RoCE version the device supports (v1 before v2, so a dual
 *   device has the mlx5/mlx4 layout and a v2-only device the rxe layout):
 *     1. the default GID: fe80::/64 + EUI-64 of the MAC (core/cache.c make_default_gid);
 *     2. each IPv4 address as ::ffff:a.b.c.d, in the kernel's address order;
 *     3. each IPv6 address, link-local ones included.
 *   So a dual device reads: 0 fe80 v1, 1 fe80 v2, 2 IPv4 v1, 3 IPv4 v2, ...
 * - Why link-local IPv6 addresses are included: the kernel's roce_gid_mgmt.c adds a GID for every
 *   address on the netdev's inet6 address list (enum_netdev_ipv6_ips walks in6_dev->addr_list
 *   without a scope or flag filter, tentative addresses included), and ib_cache_gid_add() skips
 *   an entry whose GID, type and netdev are already in the table. The usual link-local address
 *   is the EUI-64 one, equal to the default GID, so it adds nothing; a link-local address made
 *   otherwise (stable-privacy, random, or set by hand) gets its own entries. We do the same:
 *   every address, duplicates (of the same type) dropped.
 * - The table is a pure function of the interface's state at the time of the build, so every
 *   process and `uroce gids` agree on the indexes. To follow address changes while a program
 *   runs, poll uroce_netif_watch_open()'s fd and build again when uroce_netif_watch_drain()
 *   says something changed. Unlike the kernel's table, which leaves a hole where a deleted
 *   address was and puts a new address in the first free slot, a rebuilt table renumbers the
 *   entries after a removed address (and IPv6 entries after a new IPv4 one). Keeping the
 *   kernel's stable slots across processes would need a table shared through the run-time
 *   directory.
 * - A device whose netdev is missing has no table (-ENODEV), as the kernel removes an rxe
 *   device with its netdev.
 */
#ifndef UROCE_HOST_GID_H
#define UROCE_HOST_GID_H

#include <net/if.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "host/config/device.h"
#include "host/os/netif.h"

#define UROCE_GID_TABLE_MAX 1024 /* rxe's per-port table size (rxe_param.h) */
#define UROCE_GID_STR_LEN 40	 /* "xxxx:" x 8, less the last ':', plus NUL */

/* Values as enum ibv_gid_type's IBV_GID_TYPE_ROCE_V1 and _V2. */
enum uroce_gid_type {
	UROCE_GID_V1 = 1,
	UROCE_GID_V2 = 2,
};

struct uroce_gid_entry {
	uint8_t gid[16];
	enum uroce_gid_type type;
	unsigned ifindex;
	char netdev[IF_NAMESIZE];
	bool ipv4; /* gid is ::ffff:a.b.c.d made from an IPv4 address */
};

/*
 * Build dev's table from a fresh interface scan into out[0..max). Returns the number of entries;
 * -ENODEV when dev's netdev does not exist; -ENOSPC when there are more than max entries (out
 * then holds the first max); or a scan error.
 */
int uroce_gid_table_build(const struct uroce_devdef *dev, struct uroce_gid_entry *out, int max);

/* The same from an interface snapshot, for a caller that already has one (and for tests). */
int uroce_gid_table_from_netif(const struct uroce_netif *nif, unsigned roce,
			       struct uroce_gid_entry *out, int max);

/* GID as sysfs and show_gids print it: "fe80:0000:0000:0000:0200:00ff:fe00:0001". */
void uroce_gid_str(const uint8_t gid[16], char buf[UROCE_GID_STR_LEN]);

/* "v1" or "v2". */
const char *uroce_gid_type_str(enum uroce_gid_type t);

#endif
