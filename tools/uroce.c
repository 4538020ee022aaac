/* SPDX-License-Identifier: MIT */
/*
 * The `uroce` command: `uroce SUBCOMMAND [ARGS...]`, dispatched through one table.
 * Statuses as in cmd.h: usage errors are 2, as in most command-line tools.
 */
#include <errno.h>
#include <string.h>

#include "cmd.h"

#ifndef UROCE_VERSION
#define UROCE_VERSION "unknown"
#endif

static const struct uroce_cmd cmds[] = {
	{ "link", "add|del|show ...", "define, delete and list devices (uroce help link)",
	  uroce_cmd_link },
	{ "gids", "[NAME]", "print GID tables, as show_gids", uroce_cmd_gids },
	{ "mode", "-d DEV [-m 1|2]", "show or set the default RoCE mode",
	  uroce_cmd_mode },
	{ "stats", "[NAME]", "print device counters", uroce_cmd_stats },
	{ "run", "-- PROGRAM [ARGS...]",
	  "run an rdma-core program over uroce (uroce help run)", uroce_cmd_run },
	{ "pcap-check", "[-q] FILE...",
	  "decode the RoCE packets in pcap/pcapng captures, verify every ICRC",
	  uroce_cmd_pcap_check },
};

#define NCMDS (sizeof(cmds) / sizeof(cmds[0]))

static void usage(FILE *out)
{
	fputs("usage: uroce COMMAND [ARGS...]\n"
	      "       uroce help [COMMAND] | --help | --version\n"
	      "\n"
	      "Commands:\n",
	      out);
	for (size_t i = 0; i < NCMDS; i++) {
		char syn[64];

		snprintf(syn, sizeof(syn), "%s %s", cmds[i].name, cmds[i].args);
		fprintf(out, "  %-26s %s\n", syn, cmds[i].summary);
	}
	fputs("\nRun 'uroce help COMMAND' for a command's options.\n", out);
}

static const struct uroce_cmd *find_cmd(const char *name)
{
	for (size_t i = 0; i < NCMDS; i++) {
		if (!strcmp(cmds[i].name, name))
			return &cmds[i];
	}
	return NULL;
}

static int unknown_cmd(const char *name)
{
	fprintf(stderr,
		"uroce: '%s' is not a uroce command\n"
		"Run 'uroce --help' for the list of commands.\n",
		name);
	return UROCE_EXIT_ERROR;
}

static int dispatch(int argc, char **argv)
{
	static char help_opt[] = "--help";
	const char *a;
	const struct uroce_cmd *c;

	if (argc < 2) {
		usage(stderr);
		return UROCE_EXIT_ERROR;
	}
	a = argv[1];
	if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
		usage(stdout);
		return UROCE_EXIT_OK;
	}
	if (!strcmp(a, "-V") || !strcmp(a, "--version")) {
		printf("uroce %s\n", UROCE_VERSION);
		return UROCE_EXIT_OK;
	}
	if (!strcmp(a, "help")) {
		if (argc == 2) {
			usage(stdout);
			return UROCE_EXIT_OK;
		}
		c = find_cmd(argv[2]);
		if (!c)
			return unknown_cmd(argv[2]);
		char *hargv[] = { argv[2], help_opt, NULL };

		return c->run(2, hargv);
	}
	if (a[0] == '-') {
		fprintf(stderr, "uroce: unknown option '%s'\nRun 'uroce --help' for usage.\n", a);
		return UROCE_EXIT_ERROR;
	}
	c = find_cmd(a);
	if (!c)
		return unknown_cmd(a);
	return c->run(argc - 1, argv + 1);
}

int main(int argc, char **argv)
{
	int status = dispatch(argc, argv);

	/* Output that did not reach its destination (a full disk, a closed pipe) is a failure. */
	if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, "uroce: error writing the output: %s\n", strerror(errno));
		return UROCE_EXIT_ERROR;
	}
	return status;
}
