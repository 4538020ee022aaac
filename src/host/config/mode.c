/* SPDX-License-Identifier: MIT */
/* Default RoCE mode files, the run-time directory's stand-in for rdma_cm's configfs. */
#include "host/config/mode.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "host/config/device.h"
#include "host/config/rundir.h"

const char *uroce_mode_str(int version)
{
	/* The kernel's gid_type_str[] for IB_GID_TYPE_ROCE and IB_GID_TYPE_ROCE_UDP_ENCAP. */
	switch (version) {
	case 1:
		return UROCE_MODE_V1_STR;
	case 2:
		return UROCE_MODE_V2_STR;
	default:
		return NULL;
	}
}

int uroce_mode_path(const char *rundir, const char *dev, int port, char *buf, size_t cap)
{
	return uroce_rundir_join(buf, cap, "%s/rdma_cm/%s/ports/%d/default_roce_mode", rundir, dev,
				 port);
}

static int default_version(unsigned roce)
{
	return (roce & UROCE_ROCE_V2) ? 2 : 1;
}

static bool supports(unsigned roce, int version)
{
	return (version == 1 && (roce & UROCE_ROCE_V1)) || (version == 2 && (roce & UROCE_ROCE_V2));
}

int uroce_mode_parse(const char *text, size_t len)
{
	if (len > 0 && text[len - 1] == '\n')
		len--;
	for (int v = 1; v <= 2; v++) {
		const char *s = uroce_mode_str(v);

		if (len == strlen(s) && !memcmp(text, s, len))
			return v;
	}
	return 0;
}

/* The device and the port, checked. */
static int lookup(const char *rundir, const char *dev, int port, struct uroce_devdef *d)
{
	int err = uroce_dev_find(rundir, dev, d);

	if (err)
		return err;
	return port == UROCE_DEV_PORT ? 0 : -EINVAL;
}

int uroce_mode_get(const char *rundir, const char *dev, int port, int *version)
{
	struct uroce_devdef d;
	char path[PATH_MAX], text[64];
	size_t len;
	int err, v;

	err = lookup(rundir, dev, port, &d);
	if (err)
		return err;
	err = uroce_mode_path(rundir, dev, port, path, sizeof(path));
	if (err)
		return err;
	err = uroce_rundir_read(path, text, sizeof(text), &len);
	if (err == -ENOENT) {
		*version = default_version(d.roce);
		return 0;
	}
	if (err == -EFBIG)
		return -EBADMSG;
	if (err)
		return err;
	v = uroce_mode_parse(text, len);
	if (!v)
		return -EBADMSG;
	*version = supports(d.roce, v) ? v : default_version(d.roce);
	return 0;
}

int uroce_mode_set(const char *rundir, const char *dev, int port, int version)
{
	struct uroce_devdef d;
	char path[PATH_MAX], text[64];
	int err, len;

	err = lookup(rundir, dev, port, &d);
	if (err)
		return err;
	if (!supports(d.roce, version))
		return -EINVAL; /* also a version other than 1 or 2 */
	err = uroce_mode_path(rundir, dev, port, path, sizeof(path));
	if (err)
		return err;
	len = snprintf(text, sizeof(text), "%s\n", uroce_mode_str(version));
	return uroce_rundir_write(path, text, (size_t)len, false);
}
