/* SPDX-License-Identifier: MIT */
/*
 * Membership files of the groups of processes that share a device (share_group.h): the members
 * of a group in the kernel's group order, with their QPNs and CM claims.
 *
 * Design notes
 * - Membership file, one per group: <rundir>/share/net<netns inode>/<address>-<port> (the
 *   network namespace is part of the name: 127.0.0.1 of two namespaces are two groups). It lists
 *   the members in the kernel's group order, one "pid start qpn_lo qpn_hi" line each, after a
 *   "gen N" line bumped at every change. `start` is the process's start time (/proc/PID/stat
 *   field 22), so that a recycled pid is not taken for the member that died. A member that runs
 *   a CM (uroce_share_set_gsi) has " cm" and its claimed service IDs (" 0x..." each, at most
 *   UROCE_SHARE_MAX_CLAIMS) after those four fields; a line with only the four is a member
 *   without a CM.
 * - A member is alive while a process with its pid and start time runs; the dead are pruned as
 *   the kernel removed their sockets when they closed (uroce_share_compact).
 * - Files are read and rewritten under an flock (locked_file.h). Errors are 0 or a negative
 *   errno. Nothing here is called per packet.
 */
#ifndef UROCE_HOST_IO_SHARE_MEMBERS_H
#define UROCE_HOST_IO_SHARE_MEMBERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#define UROCE_SHARE_SLOTS	   4096
#define UROCE_SHARE_SLOT_QPNS	   2048
#define UROCE_SHARE_QPN_BASE(slot) (0x100u + ((uint32_t)(slot) << 11))
/* A process takes this many consecutive slots per opened device, the first a multiple of it
 * (share_slots.h): 16384 QPNs. */
#define UROCE_SHARE_PROC_SLOTS 8
#define UROCE_SHARE_PROC_QPNS  (UROCE_SHARE_PROC_SLOTS * UROCE_SHARE_SLOT_QPNS)
/* The slot of a QPN range that starts at a slot's base (the prefix of its CM comm IDs). */
#define UROCE_SHARE_SLOT_OF(qpn_lo) ((((uint32_t)(qpn_lo)-0x100u) >> 11) & 0xFFFu)
#define UROCE_SHARE_MAX_MEMBERS	    256
#define UROCE_SHARE_MAX_CLAIMS	    64 /* service IDs per member */

struct uroce_share_member {
	int32_t pid;
	uint64_t start; /* /proc/PID/stat starttime (clock ticks after boot) */
	uint32_t qpn_lo, qpn_hi;
	bool cm;  /* runs a connection manager */
	int nids; /* claimed service IDs: REQs and SIDR_REQs naming one come to this member */
	uint64_t ids[UROCE_SHARE_MAX_CLAIMS];
};

/*
 * Remove member idx as the kernel does when its socket closes: the last member moves into its
 * place. Returns the new count (n - 1), or -EINVAL for a bad idx.
 */
int uroce_share_compact(struct uroce_share_member *m, int n, int idx);

/* Format "gen N\n" then one line per member. Returns the length, or -ENOSPC. */
int uroce_share_format(char *buf, size_t cap, uint64_t gen, const struct uroce_share_member *m,
		       int n);
/*
 * Parse what uroce_share_format wrote (an empty text is generation 0, no member; lines without
 * " cm" are members without a CM or claims).
 * Returns the member count, or -EBADMSG (a malformed line, more than UROCE_SHARE_MAX_CLAIMS
 * claims), -ENOSPC (more than max).
 */
int uroce_share_parse(const char *text, uint64_t *gen, struct uroce_share_member *m, int max);

/* The start time of pid into *start. Returns 0, or -ESRCH when pid is gone or a zombie. */
int uroce_share_proc_start(pid_t pid, uint64_t *start);

/* Whether m's process still runs (same pid, same start time). */
bool uroce_share_alive(const struct uroce_share_member *m);

/* Drop the members of m[0..n) that are gone, as the kernel did when their sockets closed.
 * Returns the new count. */
int uroce_share_prune(struct uroce_share_member *m, int n);

/*
 * The membership file of the group of (a, port) in this network namespace, into buf[cap].
 * a is an AF_INET or AF_INET6 address (the port is taken from it). Returns 0, -ENAMETOOLONG,
 * -EAFNOSUPPORT, or the errno of reading /proc/self/ns/net.
 */
int uroce_share_path(char *buf, size_t cap, const char *rundir, const struct sockaddr *a);
/* The RoCE v1 membership file of interface ifindex in this network namespace. As above. */
int uroce_share_v1_path(char *buf, size_t cap, const char *rundir, int ifindex);

/*
 * Read the members of fd, a membership file the caller has locked (locked_file.h), into
 * m[0..UROCE_SHARE_MAX_MEMBERS). Returns the count with *gen set, or -ENOMEM, -EFBIG,
 * -EBADMSG, -ENOSPC, or the read's errno.
 */
int uroce_share_members_load(int fd, uint64_t *gen, struct uroce_share_member *m);
/* Replace the content of fd (locked) by generation gen and m[0..n). 0 or a negative errno. */
int uroce_share_members_store(int fd, uint64_t gen, const struct uroce_share_member *m, int n);

/*
 * Read a membership file (for tests and tools). Returns the member count with *gen set, 0 for
 * an absent file, or -EBADMSG, -ENOSPC, or the read's errno. Takes the lock shared.
 */
int uroce_share_read(const char *path, uint64_t *gen, struct uroce_share_member *m, int max);

#endif
