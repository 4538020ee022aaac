/* SPDX-License-Identifier: MIT */
/* GID tables from interface addresses (see gid.h for the layout and why). */
#include "host/config/gid.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

void uroce_gid_str(const uint8_t gid[16], char buf[UROCE_GID_STR_LEN])
{
	snprintf(buf, UROCE_GID_STR_LEN,
		 "%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x", gid[0],
		 gid[1], gid[2], gid[3], gid[4], gid[5], gid[6], gid[7], gid[8], gid[9], gid[10],
		 gid[11], gid[12], gid[13], gid[14], gid[15]);
}

const char *uroce_gid_type_str(enum uroce_gid_type t)
{
	switch (t) {
	case UROCE_GID_V1:
		return "v1";
	case UROCE_GID_V2:
		return "v2";
	}
	return "?";
}

struct builder {
	const struct uroce_netif *nif;
	unsigned roce;
	struct uroce_gid_entry *out;
	int max;
	int n;	       /* entries wanted so far (may exceed max) */
};

/* Add gid once per supported type, v1 first; skip a (gid, type) already present. */
static void add(struct builder *b, const uint8_t gid[16], bool ipv4)
{
	static const enum uroce_gid_type types[] = { UROCE_GID_V1, UROCE_GID_V2 };

	for (size_t t = 0; t < 2; t++) {
		bool dup = false;

		if (!(b->roce & (1u << t)))
			continue;
		for (int i = 0; i < b->n && i < b->max; i++) {
			if (b->out[i].type == types[t] && !memcmp(b->out[i].gid, gid, 16)) {
				dup = true;
				break;
			}
		}
		if (dup)
			continue;
		if (b->n < b->max) {
			struct uroce_gid_entry *e = &b->out[b->n];

			memset(e, 0, sizeof(*e));
			memcpy(e->gid, gid, 16);
			e->type = types[t];
			e->ifindex = b->nif->ifindex;
			snprintf(e->netdev, sizeof(e->netdev), "%s", b->nif->name);
			e->ipv4 = ipv4;
		}
		b->n++;
	}
}

int uroce_gid_table_from_netif(const struct uroce_netif *nif, unsigned roce,
			       struct uroce_gid_entry *out, int max)
{
	struct builder b = { .nif = nif, .roce = roce, .out = out, .max = max < 0 ? 0 : max };
	uint8_t gid[16] = { 0xfe, 0x80 };

	_Static_assert(UROCE_ROCE_V1 == 1u << 0 && UROCE_ROCE_V2 == 1u << 1, "mask bit per type");
	uroce_eui64(nif->mac, gid + 8);
	add(&b, gid, false);
	for (int i = 0; i < nif->naddrs; i++) {
		if (nif->addrs[i].family != AF_INET)
			continue;
		memset(gid, 0, 10);
		gid[10] = 0xff;
		gid[11] = 0xff;
		memcpy(gid + 12, nif->addrs[i].addr, 4);
		add(&b, gid, true);
	}
	for (int i = 0; i < nif->naddrs; i++) {
		if (nif->addrs[i].family == AF_INET6)
			add(&b, nif->addrs[i].addr, false);
	}
	return b.n > b.max ? -ENOSPC : b.n;
}

int uroce_gid_table_build(const struct uroce_devdef *dev, struct uroce_gid_entry *out, int max)
{
	struct uroce_netif_list ifs;
	const struct uroce_netif *nif;
	int ret;

	ret = uroce_netif_scan(&ifs);
	if (ret)
		return ret;
	nif = uroce_netif_find(&ifs, dev->netdev);
	ret = nif ? uroce_gid_table_from_netif(nif, dev->roce, out, max) : -ENODEV;
	uroce_netif_list_free(&ifs);
	return ret;
}
