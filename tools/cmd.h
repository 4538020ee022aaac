/* SPDX-License-Identifier: MIT */
/*
 * The `uroce` command's subcommands, and what they share: the exit statuses and the table entry
 * that main() dispatches on.
 *
 * A subcommand is called as run(argc, argv) with argv[0] its own name ("pcap-check") and
 * argv[argc] == NULL. It answers "-h" and "--help" with its usage on stdout and status 0, prints
 * errors to stderr as "uroce: THING: what is wrong", and returns an enum uroce_exit value.
 */
#ifndef UROCE_TOOLS_CMD_H
#define UROCE_TOOLS_CMD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum uroce_exit {
	UROCE_EXIT_OK = 0,    /* done, nothing wrong found */
	UROCE_EXIT_FAIL = 1,  /* done, and what was checked is wrong (a bad ICRC, ...) */
	UROCE_EXIT_ERROR = 2, /* wrong usage, or an input could not be read */
};

struct uroce_cmd {
	const char *name;     /* "pcap-check" */
	const char *args;     /* synopsis of the arguments: "[-q] FILE..." */
	const char *summary;  /* one line for `uroce --help` */
	int (*run)(int argc, char **argv);
};

/* `uroce pcap-check [-q] FILE...` */
int uroce_cmd_pcap_check(int argc, char **argv);

/* Device subcommands (link.c, gids.c, mode.c, stats.c): UROCE_EXIT_FAIL (1) when the operation
 * fails (unknown device, unsupported mode, ...), UROCE_EXIT_ERROR (2) for wrong arguments. */
int uroce_cmd_link(int argc, char **argv);  /* `uroce link add|del|show ...` */
int uroce_cmd_gids(int argc, char **argv);  /* `uroce gids [NAME]` */
int uroce_cmd_mode(int argc, char **argv);  /* `uroce mode -d DEV [-p PORT] [-m 1|2]` */
int uroce_cmd_stats(int argc, char **argv); /* `uroce stats [NAME]` */

/*
 * `uroce run [--pcap FILE] [--faults SPEC] [--busy-poll] -- PROGRAM [ARGS...]` (run.c): execs
 * PROGRAM with uroce's libibverbs.so.1 first on LD_LIBRARY_PATH. Returns only on failure, with
 * the statuses of env(1): 125 its own error (usage, library not found, bad SPEC, FILE not
 * writable), 126 PROGRAM not executable, 127 PROGRAM not found; 0 for --help.
 */
int uroce_cmd_run(int argc, char **argv);

/* The run-time directory into buf[cap] (host/rundir.h); on failure prints why, as
 * "uroce: CMD: ...", and returns a negative errno. */
int uroce_cmd_rundir(const char *cmd, char *buf, size_t cap);
/* Print "uroce: CMD: run-time directory RUNDIR: reason" (with a hint for permissions). */
void uroce_cmd_rundir_error(const char *cmd, const char *rundir, int err);

/* What pcap-check counted in one capture (or, summed, in all of them). */
struct uroce_pcap_tally {
	uint64_t packets;   /* records read */
	uint64_t roce;	    /* RoCE frames: icrc_ok + icrc_bad + malformed + cut */
	uint64_t icrc_ok;
	uint64_t icrc_bad;
	uint64_t malformed; /* RoCE (v1 Ethertype or UDP port 4791) but undecodable */
	uint64_t cut;	    /* RoCE, cut short by the capture's snap length: not checked */
	uint64_t skipped;   /* not RoCE, including every frame of a non-Ethernet link type */
	uint64_t not_eth;   /* of skipped: frames of a non-Ethernet link type */
};

/*
 * Check one capture held in memory, buf[0..len), named name in messages. Prints to out a heading,
 * a line per RoCE packet (with quiet, only the packets that fail) and a summary line
 * "NAME: N packets, N RoCE (N ICRC ok, N ICRC bad, N malformed), N non-RoCE skipped"; prints a
 * structural error to err as "uroce: NAME: reason" (after the summary of the packets read before
 * it). Fills *tally (zeroed first). Returns UROCE_EXIT_OK, UROCE_EXIT_FAIL when a RoCE packet
 * is bad, malformed or cut, or UROCE_EXIT_ERROR when the capture is not readable (from the start or
 * part way). Never reads outside buf.
 */
int uroce_pcap_check_buf(FILE *out, FILE *err, const char *name, const uint8_t *buf, size_t len,
			 bool quiet, struct uroce_pcap_tally *tally);

#endif
