/* SPDX-License-Identifier: MIT */
/* `uroce gids [NAME]`: the GID tables, in the layout of NVIDIA's show_gids script. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "host/config/device.h"
#include "host/config/gid.h"
#include "host/os/netif.h"

#define USAGE_LINE "usage: uroce gids [NAME]\n"

static const char usage_text[] =
	USAGE_LINE
	"\n"
	"Print the GID table of every device (or of device NAME) as show_gids does: one\n"
	"line per GID, DEV PORT INDEX GID IPv4 VER NETDEV, tab-separated, then\n"
	"n_gids_found=N. Index 0 is the link-local GID from the interface's MAC (fe80::/64 +\n"
	"EUI-64), then come the IPv4 addresses (as ::ffff:a.b.c.d) and the IPv6 addresses.\n"
	"A v1,v2 device lists each address as a v1 and a v2 entry (as mlx5: 0 fe80 v1,\n"
	"1 fe80 v2, 2 IPv4 v1, 3 IPv4 v2); a v2 device (as rxe) or a v1 device lists each\n"
	"address once. The table follows the interface's addresses: it is rebuilt whenever\n"
	"they change.\n"
	"\n"
	"Exit status: 0 done; 1 no such device, or its interface does not exist; 2 wrong\n"
	"arguments.\n";

static int print_dev(const struct uroce_devdef *d, struct uroce_netif_list *ifs,
		     struct uroce_gid_entry *tab, int *total, bool named)
{
	const struct uroce_netif *nif = uroce_netif_find(ifs, d->netdev);
	int n;

	if (!nif) {
		if (named) {
			fprintf(stderr,
				"uroce: gids: interface '%s' of device '%s' does not exist, "
				"so it has no GIDs\n",
				d->netdev, d->name);
			return UROCE_EXIT_FAIL;
		}
		return UROCE_EXIT_OK;
	}
	n = uroce_gid_table_from_netif(nif, d->roce, tab, UROCE_GID_TABLE_MAX);
	if (n == -ENOSPC) {
		fprintf(stderr, "uroce: gids: %s: more than %d GIDs, the rest not shown\n", d->name,
			UROCE_GID_TABLE_MAX);
		n = UROCE_GID_TABLE_MAX;
	}
	for (int i = 0; i < n; i++) {
		const struct uroce_gid_entry *e = &tab[i];
		char gs[UROCE_GID_STR_LEN];

		uroce_gid_str(e->gid, gs);
		if (e->ipv4)
			printf("%s\t%d\t%d\t%s\t%u.%u.%u.%u \t%s\t%s\n", d->name, UROCE_DEV_PORT, i,
			       gs, e->gid[12], e->gid[13], e->gid[14], e->gid[15],
			       uroce_gid_type_str(e->type), e->netdev);
		else
			printf("%s\t%d\t%d\t%s\t\t\t%s\t%s\n", d->name, UROCE_DEV_PORT, i, gs,
			       uroce_gid_type_str(e->type), e->netdev);
	}
	*total += n;
	return UROCE_EXIT_OK;
}

int uroce_cmd_gids(int argc, char **argv)
{
	struct uroce_gid_entry *tab;
	struct uroce_netif_list ifs;
	struct uroce_devdef *v;
	char rundir[4096];
	const char *only = NULL;
	int n, err, total = 0, status = UROCE_EXIT_OK;
	bool found = false;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			fputs(usage_text, stdout);
			return UROCE_EXIT_OK;
		}
		if (argv[i][0] == '-' || only) {
			fprintf(stderr, "uroce: gids: unexpected argument '%s'\n" USAGE_LINE,
				argv[i]);
			return UROCE_EXIT_ERROR;
		}
		only = argv[i];
	}
	if (uroce_cmd_rundir("gids", rundir, sizeof(rundir)))
		return UROCE_EXIT_FAIL;
	err = uroce_netif_scan(&ifs);
	if (err) {
		fprintf(stderr, "uroce: gids: cannot list the interfaces: %s\n", strerror(-err));
		return UROCE_EXIT_FAIL;
	}
	err = uroce_dev_list(rundir, &ifs, &v, &n);
	tab = calloc(UROCE_GID_TABLE_MAX, sizeof(*tab));
	if (err || !tab) {
		uroce_cmd_rundir_error("gids", rundir, err ? err : -ENOMEM);
		free(tab);
		if (!err)
			free(v);
		uroce_netif_list_free(&ifs);
		return UROCE_EXIT_FAIL;
	}
	if (only) {
		for (int i = 0; i < n && !found; i++)
			found = !strcmp(v[i].name, only);
		if (!found) {
			fprintf(stderr,
				"uroce: gids: no device '%s'; "
				"'uroce link show' lists the devices\n",
				only);
			status = UROCE_EXIT_FAIL;
			goto out;
		}
	}
	fputs("DEV\tPORT\tINDEX\tGID\t\t\t\t\tIPv4 \t\tVER\tNETDEV\n"
	      "---\t----\t-----\t---\t\t\t\t\t------------ \t---\t------\n",
	      stdout);
	for (int i = 0; i < n; i++) {
		if (only && strcmp(v[i].name, only))
			continue;
		int st = print_dev(&v[i], &ifs, tab, &total, only != NULL);

		if (st > status)
			status = st;
	}
	printf("n_gids_found=%d\n", total);
out:
	free(tab);
	free(v);
	uroce_netif_list_free(&ifs);
	return status;
}
