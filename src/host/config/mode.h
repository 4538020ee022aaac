/* SPDX-License-Identifier: MIT */
/*
 * Default RoCE mode per device and port: what rdma_cm uses to pick the GID type (v1 or v2) when
 * the route has no gateway. The kernel keeps it in configfs,
 * /sys/kernel/config/rdma_cm/<dev>/ports/<port>/default_roce_mode; we keep it in
 * <rundir>/rdma_cm/<dev>/ports/<port>/default_roce_mode, with the same strings.
 *
 * Design notes
 * - File content: exactly what the kernel's show function prints, the GID type string and a
 *   newline: "IB/RoCE v1\n" or "RoCE v2\n". Reading accepts it with or without the newline
 *   (configfs stores take either).
 * - No file means the default: RoCE v2 (CMA_PREFERRED_ROCE_GID_TYPE since Linux 4.13), or v1 on
 *   a device that supports only v1. A stored mode the device no longer supports (the file was
 *   edited by hand) also reads as the default.
 * - Setting a mode the device does not support fails with -EINVAL, as the configfs store does
 *   (cma_set_default_gid_type), and leaves the file unchanged. Only port 1 exists.
 * - Written atomically (rundir.h), so a concurrent reader sees the old or the new mode.
 */
#ifndef UROCE_HOST_MODE_H
#define UROCE_HOST_MODE_H

#include <stddef.h>

#define UROCE_MODE_V1_STR "IB/RoCE v1"
#define UROCE_MODE_V2_STR "RoCE v2"

/* "IB/RoCE v1" for 1, "RoCE v2" for 2, NULL otherwise. */
const char *uroce_mode_str(int version);

/*
 * The version (1 or 2) a mode string names: text[0..len) is "IB/RoCE v1" or "RoCE v2" with at
 * most one trailing newline, as the kernel's ib_cache_gid_parse_type_str takes it; 0 otherwise.
 */
int uroce_mode_parse(const char *text, size_t len);

/* <rundir>/rdma_cm/<dev>/ports/<port>/default_roce_mode into buf. 0 or -ENAMETOOLONG. */
int uroce_mode_path(const char *rundir, const char *dev, int port, char *buf, size_t cap);

/*
 * The default RoCE mode (1 or 2) of dev's port into *version. Returns 0; -ENODEV when no device
 * dev exists (uroce_dev_find); -EINVAL for a port other than 1; -EBADMSG when the file holds
 * something other than the two mode strings; or a read error.
 */
int uroce_mode_get(const char *rundir, const char *dev, int port, int *version);

/*
 * Set it. Returns 0; -ENODEV unknown device; -EINVAL for a port other than 1, a version other
 * than 1 or 2, or a version the device does not support; or a write error (-EACCES, ...).
 */
int uroce_mode_set(const char *rundir, const char *dev, int port, int version);

#endif
