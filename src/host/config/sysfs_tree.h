/* SPDX-License-Identifier: MIT */
/*
 * The files the Linux kernel shows under /sys/class for an RDMA device, for a uroce device:
 * what rdma-core's consumers read there (pyverbs' tests, UCX, show_gids, ibdev2netdev).
 *
 * This module only says which entries exist and what they hold; it does no I/O. A caller
 * materialises them (`uroce run` writes them into a private mount namespace, tools/run_view.c).
 *
 * Entries, paths relative to /sys/class, parents before children, for the device at position
 * N of the device list (the libibverbs device index, so uverbsN is the device ibv_get_device_list
 * returns at N):
 *   infiniband/DEV/                      node_type "1: CA", node_guid, sys_image_guid,
 *                                        node_desc, fw_ver
 *   infiniband/DEV/ports/1/              state, phys_state, link_layer "Ethernet", rate,
 *                                        lid, sm_lid, lid_mask_count, sm_sl, cap_mask,
 *                                        pkeys/0
 *   infiniband/DEV/ports/1/gids/I        every slot of the table (gid_tbl_len), empty ones zero
 *   infiniband/DEV/ports/1/gid_attrs/types/I, ndevs/I   the occupied slots only (the kernel's
 *                                        read of an empty slot fails)
 *   infiniband/DEV/device/net/IFNAME     a link to /sys/class/net/IFNAME: the interface
 *                                        behind the device, as pyverbs and UCX find it
 *   infiniband_verbs/uverbsN/            ibdev (the device name), abi_version
 *   infiniband_verbs/abi_version         (uroce_sysfs_classes)
 * The values are those ibv_query_device/ibv_query_port report (same GUID, state, rate, GIDs).
 */
#ifndef UROCE_HOST_SYSFS_TREE_H
#define UROCE_HOST_SYSFS_TREE_H

#include "host/config/device.h"
#include "host/config/gid.h"

enum uroce_sysfs_kind {
	UROCE_SYSFS_DIR,
	UROCE_SYSFS_FILE, /* text: the contents, newline-terminated as sysfs prints them */
	UROCE_SYSFS_LINK, /* text: the link's target, an absolute path */
};

/* Called for each entry; path is relative to /sys/class. A non-zero return stops the walk and
 * is returned by it. */
typedef int (*uroce_sysfs_emit_fn)(void *arg, enum uroce_sysfs_kind kind, const char *path,
				   const char *text);

struct uroce_sysfs_dev {
	const struct uroce_devdef *def;
	const struct uroce_devinfo *info;
	const struct uroce_gid_entry *gids; /* the table, n_gids entries (0 when no netdev) */
	int n_gids;
	int index; /* position in the device list: uverbs<index> */
};

/* IB link width and speed codes of a port (ibv_port_attr active_width/active_speed) as sysfs's
 * rate file prints them, "2.5 Gb/sec (1X SDR)", into buf. Returns buf. */
const char *uroce_sysfs_rate(unsigned width, unsigned speed, char *buf, size_t cap);

/* Emit one device's entries. Returns 0 or what emit returned. */
int uroce_sysfs_device(const struct uroce_sysfs_dev *d, uroce_sysfs_emit_fn emit, void *arg);

/* Emit the class-level entries (the directories infiniband/ and infiniband_verbs/ and the
 * latter's abi_version). Returns 0 or what emit returned. */
int uroce_sysfs_classes(uroce_sysfs_emit_fn emit, void *arg);

#endif
