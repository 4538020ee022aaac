/* SPDX-License-Identifier: MIT */
/*
 * Removing a device: its definition and what is kept for it under its name (default RoCE mode
 * and TOS, counters). Apart from device.c, which mode.c, tos.c and stats.c build on, so that
 * they do not depend on each other in a circle.
 */
#include <errno.h>
#include <limits.h>
#include <unistd.h>

#include "host/config/device.h"
#include "host/config/device_del.h"
#include "host/config/mode.h"
#include "host/config/rundir.h"
#include "host/config/stats.h"
#include "host/config/tos.h"

int uroce_dev_del(const char *rundir, const char *name)
{
	char path[PATH_MAX], top[PATH_MAX];
	int err;

	if (uroce_dev_name_check(name))
		return -EINVAL;
	err = uroce_dev_path(rundir, name, path, sizeof(path));
	if (err)
		return err;
	if (unlink(path) != 0)
		return errno == ENOENT ? -ENODEV : -errno;
	/* Best effort: the device is gone whether or not these existed. Each removal takes the
	 * directories it leaves empty, so whichever of the two files goes last takes the port's. */
	if (!uroce_rundir_join(top, sizeof(top), "%s/rdma_cm", rundir)) {
		if (!uroce_tos_path(rundir, name, UROCE_DEV_PORT, path, sizeof(path)))
			uroce_rundir_remove(path, top);
		if (!uroce_mode_path(rundir, name, UROCE_DEV_PORT, path, sizeof(path)))
			uroce_rundir_remove(path, top);
	}
	if (!uroce_stats_path(rundir, name, path, sizeof(path)))
		unlink(path);
	return 0;
}
