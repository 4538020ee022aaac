/* SPDX-License-Identifier: MIT */
/*
 * Default RoCE type of service per device and port: the IPv4 TOS / IPv6 traffic class byte that
 * rdma_cm gives a connection whose id has none set (RDMA_OPTION_ID_TOS). The kernel keeps it in
 * configfs, /sys/kernel/config/rdma_cm/<dev>/ports/<port>/default_roce_tos; we keep it next to
 * the default RoCE mode (mode.h), in <rundir>/rdma_cm/<dev>/ports/<port>/default_roce_tos.
 *
 * Design notes
 * - File content: what the kernel's show function prints, the value in decimal and a newline
 *   ("0\n" .. "255\n"). Reading accepts it with or without the newline.
 * - No file means 0, the kernel's default (cma_add_one leaves default_roce_tos zeroed).
 * - Written atomically (rundir.h). `uroce link del` removes it with the device (device_del.h).
 * - Only port 1 exists.
 */
#ifndef UROCE_HOST_CONFIG_TOS_H
#define UROCE_HOST_CONFIG_TOS_H

#include <stddef.h>

/* <rundir>/rdma_cm/<dev>/ports/<port>/default_roce_tos into buf. 0 or -ENAMETOOLONG. */
int uroce_tos_path(const char *rundir, const char *dev, int port, char *buf, size_t cap);

/*
 * The default TOS (0..255) of dev's port into *tos. Returns 0; -ENODEV when no device dev exists
 * (uroce_dev_find); -EINVAL for a port other than 1; -EBADMSG when the file holds something other
 * than a decimal number 0..255 and an optional newline; or a read error.
 */
int uroce_tos_get(const char *rundir, const char *dev, int port, int *tos);

/*
 * Set it. Returns 0; -ENODEV unknown device; -EINVAL for a port other than 1 or a tos outside
 * 0..255; or a write error (-EACCES, ...).
 */
int uroce_tos_set(const char *rundir, const char *dev, int port, int tos);

#endif
