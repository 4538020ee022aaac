/* SPDX-License-Identifier: MIT */
/* `uroce mode -d DEV [-p PORT] [-m 1|2]`: show or set the default RoCE mode (cma_roce_mode). */
#include <errno.h>
#include <stdarg.h>
#include <getopt.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "host/config/device.h"
#include "host/config/mode.h"

#define USAGE_LINE "usage: uroce mode -d DEV [-p PORT] [-m 1|2]\n"
#define USAGE_HINT "Run 'uroce help mode' for more.\n"

static const char usage_text[] =
	USAGE_LINE
	"\n"
	"Show, or with -m set, the default RoCE mode of a device's port: the RoCE version\n"
	"rdma_cm uses unless the route has a gateway (then it uses v2). Like MLNX_OFED's\n"
	"cma_roce_mode, over <rundir>/rdma_cm/DEV/ports/PORT/default_roce_mode instead of\n"
	"configfs; the file holds the kernel's strings, 'IB/RoCE v1' or 'RoCE v2'. Prints the\n"
	"mode (after setting it). The default is RoCE v2, or IB/RoCE v1 on a device that\n"
	"supports only v1; it is gone after a reboot, like configfs.\n"
	"\n"
	"  -d, --device DEV  the device ('uroce link show' lists them)\n"
	"  -p, --port PORT   the port: 1, the only one (default 1)\n"
	"  -m, --mode 1|2    set the mode: 1 = IB/RoCE v1, 2 = RoCE v2\n"
	"  -h, --help        print this help\n"
	"\n"
	"Exit status: 0 done; 1 no such device or port, or the device does not support the mode\n"
	"(as the kernel's EINVAL); 2 wrong arguments.\n";

__attribute__((format(printf, 1, 2))) static int usage_error(const char *fmt, ...)
{
	va_list ap;

	fputs("uroce: mode: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs("\n" USAGE_LINE USAGE_HINT, stderr);
	return UROCE_EXIT_ERROR;
}

static int parse_num(const char *s, long *v)
{
	char *end;

	errno = 0;
	*v = strtol(s, &end, 10);
	return (errno || end == s || *end || *v < 0 || *v > INT_MAX) ? -EINVAL : 0;
}

int uroce_cmd_mode(int argc, char **argv)
{
	static const struct option opts[] = {
		{"device", required_argument, NULL, 'd'},
		{"port", required_argument, NULL, 'p'},
		{"mode", required_argument, NULL, 'm'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct uroce_devdef d;
	const char *dev = NULL;
	char rundir[4096];
	long port = UROCE_DEV_PORT, mode = 0;
	int c, err, version;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+d:p:m:h", opts, NULL)) != -1) {
		switch (c) {
		case 'd':
			dev = optarg;
			break;
		case 'p':
			if (parse_num(optarg, &port))
				return usage_error("invalid port '%s': ports are numbered from 1",
						   optarg);
			break;
		case 'm':
			if (parse_num(optarg, &mode) || (mode != 1 && mode != 2))
				return usage_error(
					"invalid mode '%s': use 1 (IB/RoCE v1) or 2 (RoCE v2)",
					optarg);
			break;
		case 'h':
			fputs(usage_text, stdout);
			return UROCE_EXIT_OK;
		default:
			return usage_error("invalid option or missing value: '%s'",
					   argv[optind - 1]);
		}
	}
	if (optind < argc)
		return usage_error("unexpected argument '%s'", argv[optind]);
	if (!dev)
		return usage_error("%s", "missing -d DEV");
	if (uroce_cmd_rundir("mode", rundir, sizeof(rundir)))
		return UROCE_EXIT_FAIL;
	err = uroce_dev_find(rundir, dev, &d);
	if (err == -ENODEV) {
		fprintf(stderr,
			"uroce: mode: no device '%s'; 'uroce link show' lists the devices\n", dev);
		return UROCE_EXIT_FAIL;
	}
	if (!err && port != UROCE_DEV_PORT) {
		fprintf(stderr, "uroce: mode: device %s has no port %ld: it has one port, 1\n", dev,
			port);
		return UROCE_EXIT_FAIL;
	}
	if (!err && mode) {
		err = uroce_mode_set(rundir, dev, (int)port, (int)mode);
		if (err == -EINVAL) {
			fprintf(stderr,
				"uroce: mode: device %s supports only RoCE %s (%s); cannot set "
				"%s\n",
				dev, uroce_roce_str(d.roce), uroce_mode_str(mode == 1 ? 2 : 1),
				uroce_mode_str((int)mode));
			return UROCE_EXIT_FAIL;
		}
	}
	if (!err)
		err = uroce_mode_get(rundir, dev, (int)port, &version);
	if (err == -EBADMSG) {
		fprintf(stderr,
			"uroce: mode: %s/rdma_cm/%s/ports/%ld/default_roce_mode holds "
			"neither '%s' nor '%s'; set the mode again with -m\n",
			rundir, dev, port, UROCE_MODE_V1_STR, UROCE_MODE_V2_STR);
		return UROCE_EXIT_FAIL;
	}
	if (err) {
		uroce_cmd_rundir_error("mode", rundir, err);
		return UROCE_EXIT_FAIL;
	}
	printf("%s\n", uroce_mode_str(version));
	return UROCE_EXIT_OK;
}
