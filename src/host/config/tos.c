/* SPDX-License-Identifier: MIT */
/* Default RoCE TOS files, next to the default RoCE mode files (tos.h). */
#include "host/config/tos.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>

#include "host/config/device.h"
#include "host/config/rundir.h"

int uroce_tos_path(const char *rundir, const char *dev, int port, char *buf, size_t cap)
{
	return uroce_rundir_join(buf, cap, "%s/rdma_cm/%s/ports/%d/default_roce_tos", rundir, dev,
				 port);
}

/* The device and the port, checked. */
static int lookup(const char *rundir, const char *dev, int port)
{
	struct uroce_devdef d;
	int err = uroce_dev_find(rundir, dev, &d);

	if (err)
		return err;
	return port == UROCE_DEV_PORT ? 0 : -EINVAL;
}

/* "0".."255" with at most one trailing newline, as the file holds it; -1 otherwise. */
static int parse_tos(const char *text, size_t len)
{
	int v = 0;

	if (len > 0 && text[len - 1] == '\n')
		len--;
	if (len == 0 || len > 3)
		return -1;
	for (size_t i = 0; i < len; i++) {
		if (text[i] < '0' || text[i] > '9')
			return -1;
		v = v * 10 + (text[i] - '0');
	}
	return v <= 255 ? v : -1;
}

int uroce_tos_get(const char *rundir, const char *dev, int port, int *tos)
{
	char path[PATH_MAX], text[16];
	size_t len;
	int err, v;

	err = lookup(rundir, dev, port);
	if (err)
		return err;
	err = uroce_tos_path(rundir, dev, port, path, sizeof(path));
	if (err)
		return err;
	err = uroce_rundir_read(path, text, sizeof(text), &len);
	if (err == -ENOENT) {
		*tos = 0;
		return 0;
	}
	if (err == -EFBIG)
		return -EBADMSG;
	if (err)
		return err;
	v = parse_tos(text, len);
	if (v < 0)
		return -EBADMSG;
	*tos = v;
	return 0;
}

int uroce_tos_set(const char *rundir, const char *dev, int port, int tos)
{
	char path[PATH_MAX], text[16];
	int err, len;

	err = lookup(rundir, dev, port);
	if (err)
		return err;
	if (tos < 0 || tos > 255)
		return -EINVAL;
	err = uroce_tos_path(rundir, dev, port, path, sizeof(path));
	if (err)
		return err;
	len = snprintf(text, sizeof(text), "%d\n", tos);
	return uroce_rundir_write(path, text, (size_t)len, false);
}
