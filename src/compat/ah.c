/* SPDX-License-Identifier: MIT */
/* Address handles, address vectors, and the AH of a received UD packet (its GRH slot). */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <stdlib.h>
#include <string.h>

#include "compat/compat.h"
#include "host/config/gid.h"
#include "host/os/v4mapped.h"
#include "wire/bytes.h"
#include "wire/hdr.h"

#define COMPAT_IB_NEXT_HDR 0x1b /* GRH next header of RoCE v1 (IBTA 8.3.1) */

int uroce_compat_av_from_ah_attr(struct ibv_context *c, const struct ibv_ah_attr *a,
				 struct uroce_av *av)
{
	struct uroce_gid_entry e;

	/* RoCE addresses by GID: an AH without a GRH is refused, as the kernel does for RoCE
	 * ports (rdma_check_ah_attr: "RoCE requires GRH"). */
	if (!a->is_global)
		return -EINVAL;
	if (a->port_num && a->port_num != UROCE_DEV_PORT)
		return -EINVAL;
	if (uroce_compat_gid(c, UROCE_DEV_PORT, a->grh.sgid_index, &e))
		return -EINVAL;
	memset(av, 0, sizeof(*av));
	memcpy(av->dgid, a->grh.dgid.raw, sizeof(av->dgid));
	av->flow_label = a->grh.flow_label;
	av->sgid_index = a->grh.sgid_index;
	av->hop_limit = a->grh.hop_limit;
	av->traffic_class = a->grh.traffic_class;
	av->sl = a->sl;
	av->port_num = UROCE_DEV_PORT;
	av->is_global = true;
	return 0;
}

void uroce_compat_ah_attr_from_av(const struct uroce_av *av, struct ibv_ah_attr *a)
{
	memset(a, 0, sizeof(*a));
	memcpy(a->grh.dgid.raw, av->dgid, sizeof(a->grh.dgid.raw));
	a->grh.flow_label = av->flow_label;
	a->grh.sgid_index = av->sgid_index;
	a->grh.hop_limit = av->hop_limit;
	a->grh.traffic_class = av->traffic_class;
	a->sl = av->sl;
	a->is_global = av->is_global;
	a->port_num = av->port_num;
}

struct ibv_ah *ibv_create_ah(struct ibv_pd *ibpd, struct ibv_ah_attr *attr)
{
	struct compat_pd *pd;
	struct uroce_ctx *uc;
	struct compat_ah *ah;
	struct uroce_av av;
	int err;

	if (!ibpd || !attr) {
		errno = EINVAL;
		return NULL;
	}
	pd = compat_container_of(ibpd, struct compat_pd, pd);
	uc = compat_uc(ibpd->context);
	err = uroce_compat_av_from_ah_attr(ibpd->context, attr, &av);
	if (err) {
		errno = -err;
		return NULL;
	}
	ah = calloc(1, sizeof(*ah));
	if (!ah) {
		errno = ENOMEM;
		return NULL;
	}
	uroce_ctx_lock(uc);
	err = uroce_ah_create(pd->epd, &av, &ah->eah);
	uroce_ctx_unlock(uc);
	if (err) {
		free(ah);
		errno = -err;
		return NULL;
	}
	ah->ah.context = ibpd->context;
	ah->ah.pd = ibpd;
	return &ah->ah;
}

int ibv_destroy_ah(struct ibv_ah *ibah)
{
	struct compat_ah *ah = compat_container_of(ibah, struct compat_ah, ah);
	struct uroce_ctx *uc = compat_uc(ibah->context);
	int err;

	uroce_ctx_lock(uc);
	err = uroce_ah_destroy(ah->eah);
	uroce_ctx_unlock(uc);
	if (err)
		return -err;
	free(ah);
	return 0;
}

/* The index of gid with a type in the table, or -1 with errno (rdma-core's ibv_find_gid_index). */
static int find_gid_index(struct ibv_context *c, const uint8_t gid[16], enum uroce_gid_type type)
{
	struct uroce_gid_entry *tab = calloc(UROCE_GID_TABLE_MAX, sizeof(*tab));
	int n, found = -1;

	if (!tab) {
		errno = ENOMEM;
		return -1;
	}
	n = uroce_ctx_gids(compat_uc(c), tab, UROCE_GID_TABLE_MAX);
	for (int i = 0; i < n && found < 0; i++)
		if (tab[i].type == type && !memcmp(tab[i].gid, gid, 16))
			found = i;
	free(tab);
	if (found < 0)
		errno = ENOENT;
	return found;
}

/*
 * The GRH slot holds an IPv4 header in its last 20 bytes (RoCE v2 over IPv4), or a 40-byte
 * IPv6 header or GRH. As rdma-core: an IPv4 header is believed when its checksum is valid.
 */
static int grh_version(const struct ibv_grh *grh)
{
	const uint8_t *ip4 = (const uint8_t *)grh + 20;
	int v6 = (int)(ntohl(grh->version_tclass_flow) >> 28) & 0xf;

	if (v6 != 6)
		return (ip4[0] >> 4) == 4 ? 4 : -1;
	if ((ip4[0] & 0xf) != 5)
		return 6;
	return uroce_ipv4_csum(ip4) == uroce_get_be16(ip4 + 10) ? 4 : 6;
}

int ibv_init_ah_from_wc(struct ibv_context *context, uint8_t port_num, struct ibv_wc *wc,
			struct ibv_grh *grh, struct ibv_ah_attr *ah_attr)
{
	int idx;

	memset(ah_attr, 0, sizeof(*ah_attr));
	ah_attr->grh.flow_label = ntohl(grh->version_tclass_flow) & 0xFFFFF;
	ah_attr->dlid = wc->slid;
	ah_attr->sl = wc->sl;
	ah_attr->src_path_bits = wc->dlid_path_bits;
	ah_attr->port_num = port_num;
	if (!(wc->wc_flags & IBV_WC_GRH))
		return 0;
	ah_attr->is_global = 1;
	switch (grh_version(grh)) {
	case 4: {
		struct iphdr ip;
		uint8_t dgid[16];

		memcpy(&ip, (const uint8_t *)grh + 20, sizeof(ip));
		if (IN_CLASSD(ntohl(ip.daddr))) {
			errno = EINVAL;
			return -1;
		}
		uroce_gid_from_v4(dgid, &ip.daddr);
		idx = find_gid_index(context, dgid, UROCE_GID_V2);
		if (idx < 0)
			return -1;
		uroce_gid_from_v4(ah_attr->grh.dgid.raw, &ip.saddr);
		ah_attr->grh.sgid_index = (uint8_t)idx;
		ah_attr->grh.hop_limit = ip.ttl;
		ah_attr->grh.traffic_class = ip.tos;
		return 0;
	}
	case 6: {
		enum uroce_gid_type type;

		if (grh->dgid.raw[0] == 0xff) {
			errno = EINVAL;
			return -1;
		}
		if (grh->next_hdr == IPPROTO_UDP) {
			type = UROCE_GID_V2;
		} else if (grh->next_hdr == COMPAT_IB_NEXT_HDR) {
			type = UROCE_GID_V1;
		} else {
			errno = EPROTONOSUPPORT;
			return -1;
		}
		idx = find_gid_index(context, grh->dgid.raw, type);
		if (idx < 0)
			return -1;
		ah_attr->grh.dgid = grh->sgid;
		ah_attr->grh.sgid_index = (uint8_t)idx;
		ah_attr->grh.hop_limit = grh->hop_limit;
		ah_attr->grh.traffic_class = (uint8_t)(ntohl(grh->version_tclass_flow) >> 20);
		return 0;
	}
	default:
		errno = EPROTONOSUPPORT;
		return -1;
	}
}

struct ibv_ah *ibv_create_ah_from_wc(struct ibv_pd *pd, struct ibv_wc *wc, struct ibv_grh *grh,
				     uint8_t port_num)
{
	struct ibv_ah_attr attr;

	if (ibv_init_ah_from_wc(pd->context, port_num, wc, grh, &attr))
		return NULL;
	return ibv_create_ah(pd, &attr);
}
