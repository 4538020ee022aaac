/* SPDX-License-Identifier: MIT */
/*
 * `uroce link add|del|show`: define devices in the run-time directory, like
 * `rdma link add NAME type rxe netdev IFNAME`. Also the run-time directory look-up shared by
 * the device subcommands (uroce_cmd_rundir, cmd.h).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "host/config/device.h"
#include "host/config/device_del.h"
#include "host/config/mode.h"
#include "host/os/netif.h"
#include "host/config/rundir.h"
#include "host/config/sysfs_tree.h"

#define USAGE_LINES                                                                               \
	"usage: uroce link add NAME netdev IFNAME [roce v1|v2|v1,v2]\n"                           \
	"       uroce link del NAME\n"                                                            \
	"       uroce link show [-d] [NAME]\n"
#define USAGE_HINT "Run 'uroce help link' for more.\n"

static const char usage_text[] = USAGE_LINES
	"\n"
	"Define uroce devices, one port each, on network interfaces (like 'rdma link add\n"
	"NAME type rxe netdev IFNAME'). Definitions live in the run-time directory\n"
	"($UROCE_RUNDIR, else /run/uroce as root, else $XDG_RUNTIME_DIR/uroce), so they are\n"
	"gone after a reboot.\n"
	"\n"
	"  add NAME netdev IFNAME [roce V]\n"
	"      define device NAME (1 to 63 of A-Z a-z 0-9 _ . -, not starting with '.') on\n"
	"      interface IFNAME, which must exist and carry no other device. roce V: the RoCE\n"
	"      versions it speaks: v2 (UDP port 4791; the default, as rxe), v1 (Ethertype 0x8915,\n"
	"      needs CAP_NET_RAW and an Ethernet or loopback interface) or v1,v2 (each address\n"
	"      is a v1 and a v2 GID, as on mlx5)\n"
	"  del NAME\n"
	"      delete a defined device, with its default RoCE mode and its counters\n"
	"  show [-d] [NAME]\n"
	"      list the devices: DEVICE, NETDEV, STATE (ACTIVE when the interface is up and\n"
	"      running, else DOWN), ROCE versions, MTU (active MTU as rxe computes it: interface\n"
	"      MTU - 80 rounded down to 256, 512, 1024, 2048 or 4096) and ORIGIN (configured, or\n"
	"      auto). -d adds the node GUID, the rdma_cm path MTU, the port rate (from the\n"
	"      interface's ethtool speed; 4X EDR, 100 Gb/sec, for lo and veth), the MAC, the\n"
	"      interface index and the default RoCE mode.\n"
	"      The order is the device index of every listing (ibv_get_device_list, uverbsN,\n"
	"      uroce gids): devices on loopback interfaces last, the others by interface index\n"
	"      (automatic) or by name (defined).\n"
	"\n"
	"Automatic devices: while no device is defined, every interface that is up and has an\n"
	"address (loopback included) has a device named uroce_IFNAME (uroce_lo, uroce_eth0),\n"
	"RoCE v2. Once any device is defined, only the defined devices exist; delete them all to\n"
	"get the automatic ones back.\n"
	"\n"
	"Exit status: 0 done; 1 the operation failed (unknown interface or device, duplicate,\n"
	"RoCE v1 on an interface without Ethernet frames, run-time directory not writable);\n"
	"2 wrong arguments.\n";

int uroce_cmd_rundir(const char *cmd, char *buf, size_t cap)
{
	int err = uroce_rundir_path(buf, cap);

	if (err == -ENOENT)
		fprintf(stderr,
			"uroce: %s: no run-time directory: XDG_RUNTIME_DIR is not set; set "
			"UROCE_RUNDIR to a directory of yours (or run as root for /run/uroce)\n",
			cmd);
	else if (err)
		fprintf(stderr, "uroce: %s: run-time directory path too long; set UROCE_RUNDIR\n",
			cmd);
	return err;
}

void uroce_cmd_rundir_error(const char *cmd, const char *rundir, int err)
{
	fprintf(stderr, "uroce: %s: run-time directory %s: %s", cmd, rundir, strerror(-err));
	if (err == -EACCES || err == -EPERM || err == -EROFS)
		fputs(" (run as root, or set UROCE_RUNDIR to a writable directory)", stderr);
	fputc('\n', stderr);
}

__attribute__((format(printf, 1, 2))) static int usage_error(const char *fmt, ...)
{
	va_list ap;

	fputs("uroce: link: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs("\n" USAGE_LINES USAGE_HINT, stderr);
	return UROCE_EXIT_ERROR;
}

static int link_add(const char *rundir, int argc, char **argv)
{
	struct uroce_devdef d;
	char other[UROCE_DEV_NAME_MAX + 1] = "";
	bool have_netdev = false, have_roce = false;
	int err;

	if (argc < 1)
		return usage_error("%s", "add: missing NAME");
	memset(&d, 0, sizeof(d));
	if (uroce_dev_name_check(argv[0]))
		return usage_error("invalid device name '%s': use 1 to 63 of A-Z a-z 0-9 _ . - "
				   "(not starting with '.')",
				   argv[0]);
	snprintf(d.name, sizeof(d.name), "%s", argv[0]);
	d.roce = UROCE_ROCE_V2;
	for (int i = 1; i < argc; i += 2) {
		const char *key = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;

		if (strcmp(key, "netdev") && strcmp(key, "roce"))
			return usage_error("add: unknown keyword '%s' (expected netdev or roce)",
					   key);
		if (!val)
			return usage_error("add: '%s' needs a value", key);
		if (!strcmp(key, "netdev")) {
			if (have_netdev)
				return usage_error("add: '%s' given twice", key);
			if (!*val || strlen(val) >= sizeof(d.netdev) || strchr(val, '/'))
				return usage_error("add: invalid interface name '%s'", val);
			snprintf(d.netdev, sizeof(d.netdev), "%s", val);
			have_netdev = true;
		} else {
			if (have_roce)
				return usage_error("add: '%s' given twice", key);
			if (uroce_roce_parse(val, &d.roce))
				return usage_error(
					"invalid RoCE versions '%s': use v1, v2 or v1,v2", val);
			have_roce = true;
		}
	}
	if (!have_netdev)
		return usage_error("%s", "add: missing 'netdev IFNAME'");
	err = uroce_dev_add(rundir, &d, other);
	switch (err) {
	case 0:
		return UROCE_EXIT_OK;
	case -ENODEV:
		fprintf(stderr,
			"uroce: link: interface '%s' does not exist; 'ip link show' lists the "
			"interfaces\n",
			d.netdev);
		return UROCE_EXIT_FAIL;
	case -EPFNOSUPPORT:
		fprintf(stderr,
			"uroce: link: RoCE v1 needs an Ethernet (or loopback) interface, and '%s' "
			"is neither: use 'roce v2'\n",
			d.netdev);
		return UROCE_EXIT_FAIL;
	case -EEXIST:
		fprintf(stderr,
			"uroce: link: device '%s' already exists; delete it first with "
			"'uroce link del %s'\n",
			d.name, d.name);
		return UROCE_EXIT_FAIL;
	case -EBUSY:
		fprintf(stderr,
			"uroce: link: interface '%s' already carries device '%s' (one device per "
			"interface); delete it first with 'uroce link del %s'\n",
			d.netdev, other, other);
		return UROCE_EXIT_FAIL;
	default:
		uroce_cmd_rundir_error("link", rundir, err);
		return UROCE_EXIT_FAIL;
	}
}

static int link_del(const char *rundir, int argc, char **argv)
{
	struct uroce_devdef d;
	int err;

	if (argc != 1)
		return usage_error("%s",
				   argc < 1 ? "del: missing NAME" : "del: too many arguments");
	if (uroce_dev_name_check(argv[0]))
		return usage_error("invalid device name '%s'", argv[0]);
	err = uroce_dev_del(rundir, argv[0]);
	if (!err)
		return UROCE_EXIT_OK;
	if (err != -ENODEV) {
		uroce_cmd_rundir_error("link", rundir, err);
		return UROCE_EXIT_FAIL;
	}
	if (uroce_dev_any_defined(rundir) == 0 && uroce_dev_find(rundir, argv[0], &d) == 0)
		fprintf(stderr,
			"uroce: link: '%s' is an automatic device (no device is defined); "
			"it exists while interface '%s' is up with an address and cannot be "
			"deleted\n",
			argv[0], d.netdev);
	else
		fprintf(stderr,
			"uroce: link: no device '%s' is defined; 'uroce link show' lists the "
			"devices\n",
			argv[0]);
	return UROCE_EXIT_FAIL;
}

static void fmt_mac(char s[18], const uint8_t m[6])
{
	snprintf(s, 18, "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4], m[5]);
}

static void show_details(const char *rundir, const struct uroce_devdef *d,
			 const struct uroce_devinfo *in)
{
	const uint8_t *g = in->node_guid;
	char mac[18], rate[48];
	int mode;

	if (!in->netdev_present) {
		printf("    interface %s does not exist\n", d->netdev);
		return;
	}
	printf("    node_guid %02x%02x:%02x%02x:%02x%02x:%02x%02x%s\n", g[0], g[1], g[2], g[3],
	       g[4], g[5], g[6], g[7],
	       in->guid_from_name ? " (the interface has no MAC: hashed from the device name)"
				  : "");
	printf("    mtu %u (interface), active %d%s, ", in->eth_mtu, in->active_mtu,
	       in->mtu_too_small ? " (as rxe; the interface MTU is below 336: too small)" : "");
	if (in->path_mtu > 0)
		printf("path %d (rdma_cm)\n", in->path_mtu);
	else
		printf("path none (rdma_cm: the interface MTU is below 352)\n");
	uroce_sysfs_rate(in->ib_width, in->ib_speed, rate, sizeof(rate));
	rate[strcspn(rate, "\n")] = '\0';
	if (in->eth_speed_mbps)
		printf("    rate %s, interface speed %u Mb/s\n", rate, in->eth_speed_mbps);
	else
		printf("    rate %s, the interface reports no link speed (lo, veth): "
		       "taken as %u Mb/s\n",
		       rate, UROCE_ETH_SPEED_DEFAULT);
	fmt_mac(mac, in->mac);
	printf("    mac %s ifindex %u\n", mac, in->ifindex);
	if (uroce_mode_get(rundir, d->name, UROCE_DEV_PORT, &mode) == 0)
		printf("    default_roce_mode %s\n", uroce_mode_str(mode));
}

static int link_show(const char *rundir, int argc, char **argv)
{
	struct uroce_netif_list ifs;
	struct uroce_devdef *v;
	const char *only = NULL;
	bool details = false, found = false;
	int n, err;

	for (int i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "-d") || !strcmp(argv[i], "--details"))
			details = true;
		else if (argv[i][0] == '-')
			return usage_error("show: unknown option '%s'", argv[i]);
		else if (only)
			return usage_error("show: too many arguments ('%s')", argv[i]);
		else
			only = argv[i];
	}
	err = uroce_netif_scan(&ifs);
	if (err) {
		fprintf(stderr, "uroce: link: cannot list the interfaces: %s\n", strerror(-err));
		return UROCE_EXIT_FAIL;
	}
	err = uroce_dev_list(rundir, &ifs, &v, &n);
	if (err) {
		uroce_netif_list_free(&ifs);
		uroce_cmd_rundir_error("link", rundir, err);
		return UROCE_EXIT_FAIL;
	}
	printf("%-16s %-15s %-7s %-6s %-5s %s\n", "DEVICE", "NETDEV", "STATE", "ROCE", "MTU",
	       "ORIGIN");
	for (int i = 0; i < n; i++) {
		struct uroce_devinfo in;
		char mtu[16] = "-";

		if (only && strcmp(only, v[i].name))
			continue;
		found = true;
		uroce_dev_info(&v[i], &ifs, &in);
		if (in.netdev_present)
			snprintf(mtu, sizeof(mtu), "%d", in.active_mtu);
		printf("%-16s %-15s %-7s %-6s %-5s %s\n", v[i].name, v[i].netdev,
		       in.active ? "ACTIVE" : "DOWN", uroce_roce_str(v[i].roce), mtu,
		       v[i].automatic ? "auto" : "configured");
		if (details)
			show_details(rundir, &v[i], &in);
	}
	free(v);
	uroce_netif_list_free(&ifs);
	if (only && !found) {
		fprintf(stderr,
			"uroce: link: no device '%s'; 'uroce link show' lists the devices\n", only);
		return UROCE_EXIT_FAIL;
	}
	return UROCE_EXIT_OK;
}

int uroce_cmd_link(int argc, char **argv)
{
	char rundir[4096];
	const char *sub;

	if (argc < 2)
		return usage_error("%s", "missing subcommand (add, del or show)");
	sub = argv[1];
	if (!strcmp(sub, "-h") || !strcmp(sub, "--help") || !strcmp(sub, "help")) {
		fputs(usage_text, stdout);
		return UROCE_EXIT_OK;
	}
	if (strcmp(sub, "add") && strcmp(sub, "del") && strcmp(sub, "show") && strcmp(sub, "list"))
		return usage_error("unknown subcommand '%s' (expected add, del or show)", sub);
	if (uroce_cmd_rundir("link", rundir, sizeof(rundir)))
		return UROCE_EXIT_FAIL;
	if (!strcmp(sub, "add"))
		return link_add(rundir, argc - 2, argv + 2);
	if (!strcmp(sub, "del"))
		return link_del(rundir, argc - 2, argv + 2);
	return link_show(rundir, argc - 2, argv + 2);
}
