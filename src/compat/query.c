/* SPDX-License-Identifier: MIT */
/* Device, port, GID and P_Key queries. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compat/compat.h"
#include "compat/rdma_core_driver.h"

#ifndef UROCE_VERSION
#define UROCE_VERSION "0"
#endif

/* rdma-core's Ethernet/RoCE values, as rxe reports them. */
#define COMPAT_VENDOR_ID	   0xFFFFFF /* matches no entry of perftest's table: old post-send path */
#define COMPAT_VENDOR_PART_ID	   0
#define COMPAT_PAGE_SIZE_CAP	   0xfffff000u
#define COMPAT_LOCAL_CA_ACK_DELAY  15
#define COMPAT_PHYS_STATE_LINK_UP  5
#define COMPAT_PHYS_STATE_DISABLED 3
#define COMPAT_WIDTH_1X		   1
#define COMPAT_SPEED_SDR	   1

_Static_assert(sizeof(struct ibv_port_attr) == 52, "rdma-core v44 struct ibv_port_attr");
_Static_assert(sizeof(struct ibv_device_attr) == 232, "rdma-core v44 struct ibv_device_attr");
_Static_assert(sizeof(struct ibv_device_attr_ex) == 400, "rdma-core v44 ibv_device_attr_ex");
_Static_assert(sizeof(struct ibv_gid_entry) == 32, "rdma-core v44 struct ibv_gid_entry");
_Static_assert(IBV_GID_TYPE_ROCE_V1 == (int)UROCE_GID_V1 &&
		       IBV_GID_TYPE_ROCE_V2 == (int)UROCE_GID_V2,
	       "GID types");
_Static_assert(IBV_MTU_256 == (int)UROCE_MTU_256 && IBV_MTU_4096 == (int)UROCE_MTU_4096, "MTUs");

/* The legacy ibv_query_port@1.1 writes rdma-core's 48-byte struct: everything before
 * port_cap_flags2. */
#define COMPAT_PORT_ATTR_LEGACY_LEN offsetof(struct ibv_port_attr, port_cap_flags2)

static void fill_device_attr(struct compat_ctx *ctx, struct ibv_device_attr *a)
{
	struct uroce_eng_cfg cfg;

	uroce_eng_cfg_default(&cfg); /* the limits the host layer creates its engines with */
	memset(a, 0, sizeof(*a));
	snprintf(a->fw_ver, sizeof(a->fw_ver), "uroce %s", UROCE_VERSION);
	memcpy(&a->node_guid, ctx->dev->node_guid, sizeof(a->node_guid));
	a->sys_image_guid = a->node_guid;
	a->max_mr_size = UINT64_MAX;
	a->page_size_cap = COMPAT_PAGE_SIZE_CAP;
	a->vendor_id = COMPAT_VENDOR_ID;
	a->vendor_part_id = COMPAT_VENDOR_PART_ID;
	a->hw_ver = 0;
	a->max_qp = (int)cfg.max_qp;
	a->max_qp_wr = UROCE_MAX_QP_WR;
	/* No PORT_ACTIVE_EVENT: interface changes do not raise port events (yet). */
	/* Memory windows: type 1 and type 2B (bound to a QP), as rxe. */
	a->device_cap_flags = IBV_DEVICE_RC_RNR_NAK_GEN | IBV_DEVICE_SYS_IMAGE_GUID |
			      IBV_DEVICE_MEM_WINDOW | IBV_DEVICE_MEM_WINDOW_TYPE_2B;
	a->max_sge = UROCE_MAX_SGE;
	a->max_sge_rd = UROCE_MAX_SGE;
	a->max_cq = (int)cfg.max_cq;
	a->max_cqe = UROCE_MAX_CQE;
	a->max_mr = (int)cfg.max_mr;
	a->max_mw = (int)cfg.max_mw;
	a->max_pd = (int)cfg.max_pd;
	a->max_qp_rd_atom = UROCE_MAX_RD_ATOMIC;
	a->max_ee_rd_atom = 0;
	a->max_res_rd_atom = UROCE_MAX_RD_ATOMIC * (int)cfg.max_qp;
	a->max_qp_init_rd_atom = UROCE_MAX_RD_ATOMIC;
	a->max_ee_init_rd_atom = 0;
	a->atomic_cap = IBV_ATOMIC_HCA;
	a->max_ah = (int)cfg.max_ah;
	a->max_srq = (int)cfg.max_srq;
	a->max_srq_wr = UROCE_MAX_QP_WR;
	a->max_srq_sge = UROCE_MAX_SGE;
	a->max_pkeys = UROCE_MAX_PKEYS;
	a->max_mcast_grp = UROCE_MAX_MCAST_GRP;
	a->max_mcast_qp_attach = UROCE_MAX_MCAST_QP_ATTACH;
	a->max_total_mcast_qp_attach = UROCE_MAX_TOTAL_MCAST_QP_ATTACH;
	a->local_ca_ack_delay = COMPAT_LOCAL_CA_ACK_DELAY;
	a->phys_port_cnt = 1;
}

int ibv_query_device(struct ibv_context *context, struct ibv_device_attr *device_attr)
{
	fill_device_attr(compat_ctx_of(context), device_attr);
	return 0;
}

int uroce_compat_query_device_ex_op(struct ibv_context *c,
				    const struct ibv_query_device_ex_input *input,
				    struct ibv_device_attr_ex *attr, size_t attr_size)
{
	struct ibv_device_attr_ex ex;

	if (input && input->comp_mask)
		return EINVAL;
	if (attr_size < sizeof(ex.orig_attr))
		return EINVAL;
	memset(&ex, 0, sizeof(ex));
	fill_device_attr(compat_ctx_of(c), &ex.orig_attr);
	ex.device_cap_flags_ex = ex.orig_attr.device_cap_flags;
	ex.phys_port_cnt_ex = ex.orig_attr.phys_port_cnt;
	/* Every region is pageable process memory reached by virtual address: on-demand paging,
	 * implicit regions included, works for every operation a transport has (no XRC). */
	ex.odp_caps.general_caps = IBV_ODP_SUPPORT | IBV_ODP_SUPPORT_IMPLICIT;
	ex.odp_caps.per_transport_caps.rc_odp_caps =
		IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV | IBV_ODP_SUPPORT_WRITE |
		IBV_ODP_SUPPORT_READ | IBV_ODP_SUPPORT_ATOMIC | IBV_ODP_SUPPORT_SRQ_RECV;
	ex.odp_caps.per_transport_caps.uc_odp_caps = IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV |
						     IBV_ODP_SUPPORT_WRITE |
						     IBV_ODP_SUPPORT_SRQ_RECV;
	ex.odp_caps.per_transport_caps.ud_odp_caps = IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV |
						     IBV_ODP_SUPPORT_SRQ_RECV;
	/* An application built against newer headers passes a larger struct: zero the rest. */
	if (attr_size > sizeof(ex)) {
		memset((char *)attr + sizeof(ex), 0, attr_size - sizeof(ex));
		attr_size = sizeof(ex);
	}
	memcpy(attr, &ex, attr_size);
	return 0;
}

static int port_attr(struct ibv_context *c, uint8_t port, struct ibv_port_attr *a)
{
	struct uroce_devinfo info;
	int mtu;

	if (port != UROCE_DEV_PORT)
		return EINVAL;
	uroce_ctx_devinfo(compat_uc(c), &info);
	memset(a, 0, sizeof(*a));
	a->state = info.netdev_present && info.active ? IBV_PORT_ACTIVE : IBV_PORT_DOWN;
	a->phys_state = a->state == IBV_PORT_ACTIVE ? COMPAT_PHYS_STATE_LINK_UP
						    : COMPAT_PHYS_STATE_DISABLED;
	a->max_mtu = IBV_MTU_4096; /* as rxe: the active MTU follows the interface */
	mtu = info.netdev_present ? uroce_mtu_enum(info.active_mtu) : 0;
	a->active_mtu = mtu ? (enum ibv_mtu)mtu : IBV_MTU_256;
	a->gid_tbl_len = UROCE_GID_TABLE_MAX;
	a->port_cap_flags = IBV_PORT_CM_SUP | IBV_PORT_IP_BASED_GIDS;
	a->max_msg_sz = UROCE_MAX_MSG;
	a->pkey_tbl_len = UROCE_MAX_PKEYS;
	a->lid = 0;
	a->max_vl_num = 1;
	a->active_width = info.netdev_present ? info.ib_width : COMPAT_WIDTH_1X;
	a->active_speed = info.netdev_present ? info.ib_speed : COMPAT_SPEED_SDR;
	a->link_layer = IBV_LINK_LAYER_ETHERNET;
	return 0;
}

int uroce_compat_query_port_op(struct ibv_context *c, uint8_t port, struct ibv_port_attr *attr,
			       size_t len)
{
	struct ibv_port_attr a;
	int err = port_attr(c, port, &a);

	if (err)
		return err;
	if (len > sizeof(a)) {
		memset((char *)attr + sizeof(a), 0, len - sizeof(a));
		len = sizeof(a);
	}
	memcpy(attr, &a, len);
	return 0;
}

#undef ibv_query_port
int ibv_query_port(struct ibv_context *context, uint8_t port_num,
		   struct _compat_ibv_port_attr *port_attr_out)
{
	return uroce_compat_query_port_op(context, port_num, (struct ibv_port_attr *)port_attr_out,
					  COMPAT_PORT_ATTR_LEGACY_LEN);
}

/* ---- GIDs ---------------------------------------------------------------------------------- */

int uroce_compat_gid(struct ibv_context *c, uint32_t port, uint32_t idx,
		     struct uroce_gid_entry *out)
{
	struct uroce_gid_entry small[8], *tab = small;
	int n, err = 0;

	if (port != UROCE_DEV_PORT || idx >= UROCE_GID_TABLE_MAX)
		return -EINVAL;
	if (idx >= sizeof(small) / sizeof(small[0])) {
		tab = calloc(idx + 1, sizeof(*tab));
		if (!tab)
			return -ENOMEM;
	}
	n = uroce_ctx_gids(compat_uc(c), tab, (int)idx + 1);
	if (n < 0)
		err = n;
	else if ((uint32_t)n <= idx)
		err = -ENODATA;
	else
		*out = tab[idx];
	if (tab != small)
		free(tab);
	return err;
}

int ibv_query_gid(struct ibv_context *context, uint8_t port_num, int index, union ibv_gid *gid)
{
	struct uroce_gid_entry e;
	int err;

	if (index < 0) {
		errno = EINVAL;
		return -1;
	}
	err = uroce_compat_gid(context, port_num, (uint32_t)index, &e);
	if (err == -ENODATA) {
		/* An empty slot reads as the zero GID, as rdma-core does. */
		memset(gid, 0, sizeof(*gid));
		return 0;
	}
	if (err) {
		errno = -err;
		return -1;
	}
	memcpy(gid->raw, e.gid, sizeof(gid->raw));
	return 0;
}

static void gid_entry(const struct uroce_gid_entry *e, uint32_t idx, struct ibv_gid_entry *out)
{
	memset(out, 0, sizeof(*out));
	memcpy(out->gid.raw, e->gid, sizeof(out->gid.raw));
	out->gid_index = idx;
	out->port_num = UROCE_DEV_PORT;
	out->gid_type = e->type == UROCE_GID_V1 ? IBV_GID_TYPE_ROCE_V1 : IBV_GID_TYPE_ROCE_V2;
	out->ndev_ifindex = e->ifindex;
}

int _ibv_query_gid_ex(struct ibv_context *context, uint32_t port_num, uint32_t gid_index,
		      struct ibv_gid_entry *entry, uint32_t flags, size_t entry_size)
{
	struct uroce_gid_entry e;
	struct ibv_gid_entry out;
	int err;

	if (flags || entry_size < sizeof(out))
		return EINVAL;
	err = uroce_compat_gid(context, port_num, gid_index, &e);
	if (err)
		return -err;
	gid_entry(&e, gid_index, &out);
	memcpy(entry, &out, sizeof(out));
	memset((char *)entry + sizeof(out), 0, entry_size - sizeof(out));
	return 0;
}

ssize_t _ibv_query_gid_table(struct ibv_context *context, struct ibv_gid_entry *entries,
			     size_t max_entries, uint32_t flags, size_t entry_size)
{
	struct uroce_gid_entry *tab;
	int n;

	if (flags || entry_size < sizeof(struct ibv_gid_entry))
		return -EINVAL;
	tab = calloc(UROCE_GID_TABLE_MAX, sizeof(*tab));
	if (!tab)
		return -ENOMEM;
	n = uroce_ctx_gids(compat_uc(context), tab, UROCE_GID_TABLE_MAX);
	if (n < 0) {
		free(tab);
		return n;
	}
	if ((size_t)n > max_entries) {
		free(tab);
		return -EINVAL; /* as rdma-core: the array must hold the whole table */
	}
	for (int i = 0; i < n; i++) {
		char *slot = (char *)entries + (size_t)i * entry_size;
		struct ibv_gid_entry out;

		gid_entry(&tab[i], (uint32_t)i, &out);
		memcpy(slot, &out, sizeof(out));
		memset(slot + sizeof(out), 0, entry_size - sizeof(out));
	}
	free(tab);
	return n;
}

int ibv_query_gid_type(struct ibv_context *context, uint8_t port_num, unsigned int index,
		       enum ibv_gid_type_sysfs *type)
{
	struct uroce_gid_entry e;
	int err = uroce_compat_gid(context, port_num, index, &e);

	/* rdma-core: an empty slot reads as IB/RoCE v1 (ibv_devinfo asks for every slot). */
	if (err == -ENODATA) {
		*type = IBV_GID_TYPE_SYSFS_IB_ROCE_V1;
		return 0;
	}
	if (err) {
		errno = -err;
		return -1;
	}
	*type = e.type == UROCE_GID_V1 ? IBV_GID_TYPE_SYSFS_IB_ROCE_V1 : IBV_GID_TYPE_SYSFS_ROCE_V2;
	return 0;
}

/* ---- P_Keys: one, the default ---------------------------------------------------------------- */

int ibv_query_pkey(struct ibv_context *context, uint8_t port_num, int index, __be16 *pkey)
{
	(void)context;
	if (port_num != UROCE_DEV_PORT || index < 0 || index >= UROCE_MAX_PKEYS) {
		errno = EINVAL;
		return -1;
	}
	*pkey = htons(UROCE_DEFAULT_PKEY);
	return 0;
}

int ibv_get_pkey_index(struct ibv_context *context, uint8_t port_num, __be16 pkey)
{
	(void)context;
	if (port_num != UROCE_DEV_PORT || ntohs(pkey) != UROCE_DEFAULT_PKEY) {
		errno = ENOENT;
		return -1;
	}
	return 0;
}
