/* SPDX-License-Identifier: MIT */
/*
 * Several processes on one device (DESIGN.md "Several processes share one device on one host").
 *
 * Every process that opens a device binds its own UDP socket to (address, 4791). The sockets of
 * one address form a kernel SO_REUSEPORT group, and a classic BPF program attached to the group
 * (SO_ATTACH_REUSEPORT_CBPF, no privilege needed) picks, for each datagram, the socket of the
 * process that owns the BTH destination QP. The kernel delivers the datagram straight to that
 * socket: no copy and no hop is added to the data path, and nothing but the kernel runs per
 * packet.
 *
 * Design notes
 * - QPN slots. A process's QPNs are one slot of UROCE_SHARE_SLOT_QPNS numbers:
 *   UROCE_SHARE_QPN_BASE(slot) = 0x100 + (slot << 11), slot 0..4095, preferring
 *   slot = pid & 0xFFF. The slots in use are listed in <rundir>/share/slots ("slot pid start"
 *   lines, flock'd); a slot held by a dead process is free again, and a collision (two pids
 *   equal modulo 4096, or two devices opened by one process) takes the next free slot.
 * - Membership file, one per group: <rundir>/share/net<netns inode>/<address>-<port> (the
 *   network namespace is part of the name: 127.0.0.1 of two namespaces are two groups). It lists
 *   the members in the kernel's group order, one "pid start qpn_lo qpn_hi" line each, after a
 *   "gen N" line bumped at every change. `start` is the process's start time (/proc/PID/stat
 *   field 22), so that a recycled pid is not taken for the member that died.
 * - The kernel's group order: a socket joins at the end when it binds; when one closes, the last
 *   one moves into its place (reuseport_detach_sock). Every change is made under an exclusive
 *   flock of the membership file, by the process making it, which then attaches a new program:
 *     join:  prune dead members, bind (the socket becomes index n), append, attach;
 *     leave: remove self as the kernel will (last into the hole), attach, then close, all while
 *            holding the lock; the moved member's packets in the microseconds between attach
 *            and close reach the leaving socket and are lost (RC retransmits them);
 *     death: a process killed without leaving has its sockets closed by the kernel. Every
 *            member watches every other member's pidfd (and the file, with inotify) through
 *            the fd uroce_share_fd() returns; the first survivor to notice prunes the dead in
 *            file order, attaches, and writes the file; the others then find nothing to do.
 *            Until then packets for the moved member go astray (counted DROP_NO_QP by whoever
 *            receives them; RC retransmits).
 * - The program: A = BTH bytes 4..7 & 0xFFFFFF (the UDP payload is at offset 0), then for each
 *   member "qpn_lo <= A <= qpn_hi: return its index", three instructions per member (no jump
 *   is longer than 2, whatever the member count), and last the default index 0 for QP1, for QPNs
 *   of no member, and for datagrams shorter than 8 bytes (a failed load returns 0).
 * - GSI (QP1) is steered to index 0 for now. HOOK (connection-manager issue): CM REQs must go to
 *   the process listening on the REQ's service ID (payload offset 52 = BTH 12 + DETH 8 + MAD
 *   header 24 + 8), later CM messages to the owner of their communication ID. The place for
 *   those instructions is marked "GSI HOOK" in share.c (uroce_share_prog()); the membership
 *   lines will then carry each member's service IDs and comm-ID range.
 * - Limits (not handled): members that die together before a survivor notices are pruned in
 *   file order, which may differ from the order in which the kernel closed their sockets; a
 *   socket inherited over fork() outlives its owner's pid and stays in the group while the file
 *   says it is gone; all processes of a group must use the same run-time directory and the same
 *   user (the kernel refuses a socket of another user: EADDRINUSE), and see each other's pids
 *   (one pid namespace).
 * - Errors are 0 or a negative errno. Nothing here is called per packet.
 */
#ifndef UROCE_HOST_SHARE_H
#define UROCE_HOST_SHARE_H

#include <linux/filter.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "host/backend.h"

#define UROCE_SHARE_SLOTS	   4096
#define UROCE_SHARE_SLOT_QPNS	   2048
#define UROCE_SHARE_QPN_BASE(slot) (0x100u + ((uint32_t)(slot) << 11))
#define UROCE_SHARE_MAX_MEMBERS	   256
/* Program length for n members: load, mask, 3 per member, default. */
#define UROCE_SHARE_PROG_LEN(n) (3 + 3 * (n))

struct uroce_share_member {
	int32_t pid;
	uint64_t start; /* /proc/PID/stat starttime (clock ticks after boot) */
	uint32_t qpn_lo, qpn_hi;
};

/* ---- pure helpers (unit-tested) --------------------------------------------------------- */

/*
 * Remove member idx as the kernel does when its socket closes: the last member moves into its
 * place. Returns the new count (n - 1), or -EINVAL for a bad idx.
 */
int uroce_share_compact(struct uroce_share_member *m, int n, int idx);

/*
 * Build the steering program for members m[0..n) (index i = m[i]) into out[0..cap).
 * Returns the instruction count, or -ENOSPC (cap too small), -EINVAL (n out of
 * 0..UROCE_SHARE_MAX_MEMBERS).
 */
int uroce_share_prog(struct sock_filter *out, int cap, const struct uroce_share_member *m, int n);

/*
 * RoCE v1 (AF_PACKET, packet.c): the socket filter that keeps a process's frames only. It accepts
 * a frame with Ethertype 0x8915 (after an optional 802.1Q tag) whose BTH destination QP
 * (Ethernet 14 [+ 4] + GRH 40, BTH bytes 5..7) is in [lo, hi] or is 1 (QP1: every process gets
 * it for now, the GSI HOOK), and drops anything else in the kernel, including frames too short
 * to hold the QPN. Returns the instruction count (UROCE_V1_FILTER_LEN), or -ENOSPC, -EINVAL
 * (lo > hi or hi beyond 24 bits).
 */
#define UROCE_V1_FILTER_LEN 13
int uroce_v1_filter_prog(struct sock_filter *out, int cap, uint32_t lo, uint32_t hi);

/* Format "gen N\n" then one line per member. Returns the length, or -ENOSPC. */
int uroce_share_format(char *buf, size_t cap, uint64_t gen, const struct uroce_share_member *m,
		       int n);
/*
 * Parse what uroce_share_format wrote (an empty text is generation 0, no member).
 * Returns the member count, or -EBADMSG (a malformed line), -ENOSPC (more than max).
 */
int uroce_share_parse(const char *text, uint64_t *gen, struct uroce_share_member *m, int max);

/* ---- process identity ------------------------------------------------------------------- */

/* The start time of pid into *start. Returns 0, or -ESRCH when pid is gone or a zombie. */
int uroce_share_proc_start(pid_t pid, uint64_t *start);

/* ---- QPN slots ---------------------------------------------------------------------------- */

/*
 * Reserve a QPN slot in <rundir>/share/slots for this process: pid & 0xFFF when free, else the
 * next free one. Returns 0 with *slot set, -EBUSY when all 4096 are taken by live processes, or
 * a file error (the caller may then fall back to the pid-derived slot, unshared).
 */
int uroce_share_slot_take(const char *rundir, int *slot);
/* Release a slot taken by this process. Errors are ignored (a dead holder is pruned anyway). */
void uroce_share_slot_put(const char *rundir, int slot);

/* ---- groups ------------------------------------------------------------------------------ */

struct uroce_share_cfg {
	const char *rundir;
	uint32_t qpn_lo, qpn_hi; /* this process's QPNs on the device (QP1 aside) */
};

struct uroce_share_group;

/*
 * The membership file of the group of (a, port) in this network namespace, into buf[cap].
 * a is an AF_INET or AF_INET6 address (the port is taken from it). Returns 0, -ENAMETOOLONG,
 * -EAFNOSUPPORT, or the errno of reading /proc/self/ns/net.
 */
int uroce_share_path(char *buf, size_t cap, const char *rundir, const struct sockaddr *a);

/*
 * Bind fd (an unbound UDP socket) to a as a member of the group: sets SO_REUSEPORT, binds, and
 * attaches the new steering program, all under the file lock. On success *out is the member.
 * Errors: bind's (-EADDRINUSE: a socket of another user or one without SO_REUSEPORT holds the
 * port); -EEXIST when cfg's QPN range overlaps a live member's; -ENOSPC when the group is full;
 * -ENOTRECOVERABLE when the file or the watch could not be set up (fd is then unbound: the
 * caller may bind it alone); or setsockopt's errno.
 */
int uroce_share_join(const struct uroce_share_cfg *cfg, int fd, const struct sockaddr *a,
		     socklen_t alen, struct uroce_share_group **out);

/* Leave the group: re-attach the program for the others, then close fd. Frees g. */
void uroce_share_leave(struct uroce_share_group *g, int fd);

/* An fd that poll() reports readable when the group may have changed (for an epoll set). */
int uroce_share_fd(const struct uroce_share_group *g);

/*
 * Handle what uroce_share_fd() reported, without blocking: prune members that died (re-attach
 * through fd, the member's socket) and follow joins and leaves. Returns 1 when this call changed
 * the group's program, 0 when there was nothing to do, or a negative errno.
 */
int uroce_share_check(struct uroce_share_group *g, int fd);

/*
 * Read a membership file (for tests and tools). Returns the member count with *gen set, 0 for
 * an absent file, or -EBADMSG, -ENOSPC, or the read's errno. Takes the lock shared.
 */
int uroce_share_read(const char *path, uint64_t *gen, struct uroce_share_member *m, int max);

/*
 * The RoCE v2 UDP backend with its sockets in shared groups (uroce_udp_ops.open binds them
 * alone). Implemented in udp.c. When the run-time directory cannot hold the membership files,
 * the sockets are bound alone, as uroce_udp_ops.open does.
 */
int uroce_udp_open_shared(const struct uroce_backend_cfg *cfg, const struct uroce_share_cfg *share,
			  struct uroce_backend **out);

#endif
