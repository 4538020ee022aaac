/* SPDX-License-Identifier: MIT */
/* Removing a defined device (`uroce link del`); definitions are in device.h. */
#ifndef UROCE_HOST_CONFIG_DEVICE_DEL_H
#define UROCE_HOST_CONFIG_DEVICE_DEL_H

/*
 * Remove a defined device, its default RoCE mode and TOS and its counters. Returns 0, -EINVAL for a bad
 * name, -ENODEV when no device of that name is defined, or an unlink error.
 */
int uroce_dev_del(const char *rundir, const char *name);

#endif
