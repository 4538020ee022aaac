/* SPDX-License-Identifier: MIT */
/* The kernel's /sys/class entries of an RDMA device, for a uroce device (sysfs_tree.h). */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "host/config/sysfs_tree.h"

#define PATH_CAP 192
#define TEXT_CAP 96

/* The ABI versions the kernel's uverbs shows: the class's (/sys/class/infiniband_verbs/
 * abi_version, IB_USER_VERBS_ABI_VERSION) and each device's (the uverbs ABI of its driver;
 * rxe's is 1, as most drivers'). */
#define SYSFS_UVERBS_ABI "6\n"
#define SYSFS_DEV_ABI	 "1\n"

struct walk {
	uroce_sysfs_emit_fn emit;
	void *arg;
	char path[PATH_CAP];
	char text[TEXT_CAP];
};

static int put(struct walk *w, enum uroce_sysfs_kind kind, const char *text, const char *fmt,
	       ...) __attribute__((format(printf, 4, 5)));

/* Emit an entry whose path is fmt... and whose text is text (NULL for a directory). */
static int put(struct walk *w, enum uroce_sysfs_kind kind, const char *text, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(w->path, sizeof(w->path), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(w->path))
		return -ENAMETOOLONG;
	return w->emit(w->arg, kind, w->path, text);
}

/* Emit, or return the error (in a function with `int err` and `struct walk *w`). */
#define PUT(kind, text, ...)                                   \
	do {                                                   \
		err = put(w, kind, text, __VA_ARGS__);         \
		if (err)                                       \
			return err;                            \
	} while (0)

static const char *guid_text(const uint8_t g[8], char *buf, size_t cap)
{
	snprintf(buf, cap, "%02x%02x:%02x%02x:%02x%02x:%02x%02x\n", g[0], g[1], g[2], g[3], g[4],
		 g[5], g[6], g[7]);
	return buf;
}

const char *uroce_sysfs_rate(unsigned width, unsigned speed, char *buf, size_t cap)
{
	/* The kernel's rate_show(): tenths of Gb/s per lane, times the lanes. */
	static const struct {
		unsigned code, tenths;
		const char *name;
	} speeds[] = {
		{2, 50, " DDR"},    {4, 100, " QDR"},	{8, 100, " FDR10"}, {16, 140, " FDR"},
		{32, 250, " EDR"},  {64, 500, " HDR"},	{128, 1000, " NDR"},
	};
	static const struct {
		unsigned code, lanes;
	} widths[] = {{1, 1}, {2, 4}, {4, 8}, {8, 12}, {16, 2}};
	unsigned tenths = 25, lanes = 1;
	const char *name = " SDR"; /* SDR, and any code the table lacks (as the kernel) */

	for (size_t i = 0; i < sizeof(speeds) / sizeof(speeds[0]); i++)
		if (speeds[i].code == speed) {
			tenths = speeds[i].tenths;
			name = speeds[i].name;
		}
	for (size_t i = 0; i < sizeof(widths) / sizeof(widths[0]); i++)
		if (widths[i].code == width)
			lanes = widths[i].lanes;
	tenths *= lanes;
	snprintf(buf, cap, "%u%s Gb/sec (%uX%s)\n", tenths / 10, tenths % 10 ? ".5" : "", lanes,
		 name);
	return buf;
}

static int port_files(struct walk *w, const struct uroce_sysfs_dev *d)
{
	const char *dev = d->def->name;
	const struct uroce_devinfo *info = d->info;
	bool up = info->netdev_present && info->active;
	char gid[UROCE_GID_STR_LEN];
	static const uint8_t zero[16];
	int err;

	PUT(UROCE_SYSFS_DIR, NULL, "infiniband/%s/ports", dev);
	PUT(UROCE_SYSFS_DIR, NULL, "infiniband/%s/ports/%d", dev, UROCE_DEV_PORT);
	PUT(UROCE_SYSFS_FILE, up ? "4: ACTIVE\n" : "1: DOWN\n", "infiniband/%s/ports/%d/state",
	    dev, UROCE_DEV_PORT);
	PUT(UROCE_SYSFS_FILE, up ? "5: LinkUp\n" : "3: Disabled\n",
	    "infiniband/%s/ports/%d/phys_state", dev, UROCE_DEV_PORT);
	PUT(UROCE_SYSFS_FILE, "Ethernet\n", "infiniband/%s/ports/%d/link_layer", dev,
	    UROCE_DEV_PORT);
	uroce_sysfs_rate(info->netdev_present ? info->ib_width : 1,
			 info->netdev_present ? info->ib_speed : 1, w->text, sizeof(w->text));
	PUT(UROCE_SYSFS_FILE, w->text, "infiniband/%s/ports/%d/rate", dev, UROCE_DEV_PORT);
	PUT(UROCE_SYSFS_FILE, "0x0\n", "infiniband/%s/ports/%d/lid", dev, UROCE_DEV_PORT);
	PUT(UROCE_SYSFS_FILE, "0x0\n", "infiniband/%s/ports/%d/sm_lid", dev, UROCE_DEV_PORT);
	PUT(UROCE_SYSFS_FILE, "0\n", "infiniband/%s/ports/%d/lid_mask_count", dev, UROCE_DEV_PORT);
	PUT(UROCE_SYSFS_FILE, "0\n", "infiniband/%s/ports/%d/sm_sl", dev, UROCE_DEV_PORT);
	/* IB_PORT_CM_SUP | IB_PORT_IP_BASED_GIDS, as ibv_query_port's port_cap_flags */
	PUT(UROCE_SYSFS_FILE, "0x04010000\n", "infiniband/%s/ports/%d/cap_mask", dev,
	    UROCE_DEV_PORT);
	PUT(UROCE_SYSFS_DIR, NULL, "infiniband/%s/ports/%d/pkeys", dev, UROCE_DEV_PORT);
	PUT(UROCE_SYSFS_FILE, "0xffff\n", "infiniband/%s/ports/%d/pkeys/0", dev, UROCE_DEV_PORT);

	PUT(UROCE_SYSFS_DIR, NULL, "infiniband/%s/ports/%d/gids", dev, UROCE_DEV_PORT);
	for (int i = 0; i < UROCE_GID_TABLE_MAX; i++) {
		uroce_gid_str(i < d->n_gids ? d->gids[i].gid : zero, gid);
		snprintf(w->text, sizeof(w->text), "%s\n", gid);
		PUT(UROCE_SYSFS_FILE, w->text, "infiniband/%s/ports/%d/gids/%d", dev,
		    UROCE_DEV_PORT, i);
	}
	PUT(UROCE_SYSFS_DIR, NULL, "infiniband/%s/ports/%d/gid_attrs", dev, UROCE_DEV_PORT);
	PUT(UROCE_SYSFS_DIR, NULL, "infiniband/%s/ports/%d/gid_attrs/types", dev, UROCE_DEV_PORT);
	PUT(UROCE_SYSFS_DIR, NULL, "infiniband/%s/ports/%d/gid_attrs/ndevs", dev, UROCE_DEV_PORT);
	for (int i = 0; i < d->n_gids; i++) {
		/* The kernel's names: "IB/RoCE v1" and "RoCE v2" (ib_cache_gid_type_str) */
		PUT(UROCE_SYSFS_FILE,
		    d->gids[i].type == UROCE_GID_V2 ? "RoCE v2\n" : "IB/RoCE v1\n",
		    "infiniband/%s/ports/%d/gid_attrs/types/%d", dev, UROCE_DEV_PORT, i);
		snprintf(w->text, sizeof(w->text), "%s\n", d->gids[i].netdev);
		PUT(UROCE_SYSFS_FILE, w->text, "infiniband/%s/ports/%d/gid_attrs/ndevs/%d", dev,
		    UROCE_DEV_PORT, i);
	}
	return 0;
}

int uroce_sysfs_device(const struct uroce_sysfs_dev *d, uroce_sysfs_emit_fn emit, void *arg)
{
	struct walk wk = {.emit = emit, .arg = arg}, *w = &wk;
	const char *dev = d->def->name;
	char guid[24];
	int err;

	PUT(UROCE_SYSFS_DIR, NULL, "infiniband/%s", dev);
	PUT(UROCE_SYSFS_FILE, "1: CA\n", "infiniband/%s/node_type", dev);
	guid_text(d->info->node_guid, guid, sizeof(guid));
	PUT(UROCE_SYSFS_FILE, guid, "infiniband/%s/node_guid", dev);
	PUT(UROCE_SYSFS_FILE, guid, "infiniband/%s/sys_image_guid", dev);
	snprintf(w->text, sizeof(w->text), "uroce %s\n", d->def->netdev);
	PUT(UROCE_SYSFS_FILE, w->text, "infiniband/%s/node_desc", dev);
	PUT(UROCE_SYSFS_FILE, "0.0.0\n", "infiniband/%s/fw_ver", dev);
	err = port_files(w, d);
	if (err)
		return err;
	PUT(UROCE_SYSFS_DIR, NULL, "infiniband/%s/device", dev);
	PUT(UROCE_SYSFS_DIR, NULL, "infiniband/%s/device/net", dev);
	if (d->info->netdev_present) {
		snprintf(w->text, sizeof(w->text), "/sys/class/net/%s", d->def->netdev);
		PUT(UROCE_SYSFS_LINK, w->text, "infiniband/%s/device/net/%s", dev, d->def->netdev);
	}
	PUT(UROCE_SYSFS_DIR, NULL, "infiniband_verbs/uverbs%d", d->index);
	snprintf(w->text, sizeof(w->text), "%s\n", dev);
	PUT(UROCE_SYSFS_FILE, w->text, "infiniband_verbs/uverbs%d/ibdev", d->index);
	PUT(UROCE_SYSFS_FILE, SYSFS_DEV_ABI, "infiniband_verbs/uverbs%d/abi_version", d->index);
	return 0;
}

int uroce_sysfs_classes(uroce_sysfs_emit_fn emit, void *arg)
{
	struct walk wk = {.emit = emit, .arg = arg}, *w = &wk;
	int err;

	PUT(UROCE_SYSFS_DIR, NULL, "infiniband");
	PUT(UROCE_SYSFS_DIR, NULL, "infiniband_verbs");
	PUT(UROCE_SYSFS_FILE, SYSFS_UVERBS_ABI, "infiniband_verbs/abi_version");
	return 0;
}
