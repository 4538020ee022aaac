/* SPDX-License-Identifier: MIT */
/* `uroce stats [NAME]`: the counters that processes using a device have added up. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "host/config/device.h"
#include "host/config/stats.h"

#define USAGE_LINE "usage: uroce stats [NAME]\n"

static const char usage_text[] =
	USAGE_LINE
	"\n"
	"Print the counters of every device (or of device NAME): what the processes that used it\n"
	"counted (packets, ACKs, NAKs, retries, drops, with rxe's counter names; then io_*: what\n"
	"its sockets sent, received and dropped, such as io_rx_drop_icrc), from\n"
	"<rundir>/stats/NAME. A device no process has used yet has no counters. The counts last\n"
	"until the device is deleted or the host reboots.\n"
	"\n"
	"Exit status: 0 done; 1 no such device, or its counter file is unreadable; 2 wrong\n"
	"arguments.\n";

static int print_dev(const char *rundir, const char *dev)
{
	struct uroce_stat *v;
	int n, err;

	err = uroce_stats_read(rundir, dev, &v, &n);
	if (err == -ENOENT) {
		printf("%s: no counters yet\n", dev);
		return UROCE_EXIT_OK;
	}
	if (err) {
		fprintf(stderr, "uroce: stats: %s/stats/%s: %s\n", rundir, dev,
			err == -EPROTO	  ? "not a counter file of this uroce version"
			: err == -EBADMSG ? "damaged counter file"
					  : strerror(-err));
		return UROCE_EXIT_FAIL;
	}
	printf("%s port %d:\n", dev, UROCE_DEV_PORT);
	for (int i = 0; i < n; i++)
		printf("  %-24s %" PRIu64 "\n", v[i].name, v[i].value);
	free(v);
	return UROCE_EXIT_OK;
}

int uroce_cmd_stats(int argc, char **argv)
{
	struct uroce_devdef *v;
	char rundir[4096];
	const char *only = NULL;
	int n, err, status = UROCE_EXIT_OK;
	bool found = false;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			fputs(usage_text, stdout);
			return UROCE_EXIT_OK;
		}
		if (argv[i][0] == '-' || only) {
			fprintf(stderr, "uroce: stats: unexpected argument '%s'\n" USAGE_LINE,
				argv[i]);
			return UROCE_EXIT_ERROR;
		}
		only = argv[i];
	}
	if (uroce_cmd_rundir("stats", rundir, sizeof(rundir)))
		return UROCE_EXIT_FAIL;
	err = uroce_dev_list(rundir, NULL, &v, &n);
	if (err) {
		uroce_cmd_rundir_error("stats", rundir, err);
		return UROCE_EXIT_FAIL;
	}
	for (int i = 0; i < n; i++) {
		if (only && strcmp(v[i].name, only))
			continue;
		found = true;
		int st = print_dev(rundir, v[i].name);

		if (st > status)
			status = st;
	}
	free(v);
	if (only && !found) {
		fprintf(stderr,
			"uroce: stats: no device '%s'; 'uroce link show' lists the devices\n",
			only);
		return UROCE_EXIT_FAIL;
	}
	return status;
}
