/* SPDX-License-Identifier: MIT */
/*
 * Several processes on one device (DESIGN.md "Several processes share one device on one host").
 *
 * Every process that opens a device binds its own UDP socket to (address, 4791). The sockets of
 * one address form a kernel SO_REUSEPORT group, and a classic BPF program attached to the group
 * (SO_ATTACH_REUSEPORT_CBPF, no privilege needed) picks, for each datagram, the socket of the
 * process that owns the BTH destination QP, or for QP1 (GSI) the process whose connection
 * manager (CM) the MAD is for. The kernel delivers the datagram straight to that socket: no copy
 * and no hop is added to the data path, and nothing but the kernel runs per packet.
 *
 * Design notes
 * - The kernel's group order: a socket joins at the end when it binds; when one closes, the last
 *   one moves into its place (reuseport_detach_sock). Every change is made under an exclusive
 *   flock of the membership file, by the process making it, which then attaches a new program
 *   built from the whole file (so it carries every member's claims):
 *     join:  prune dead members, bind (the socket becomes index n), append, attach;
 *     leave: remove self as the kernel will (last into the hole), attach, then close, all while
 *            holding the lock; the moved member's packets in the microseconds between attach
 *            and close reach the leaving socket and are lost (RC retransmits them);
 *     claim: uroce_share_set_gsi rewrites the member's own line and attaches;
 *     death: a process killed without leaving has its sockets closed by the kernel. Every
 *            member watches every other member's pidfd (and the file, with inotify, or when
 *            the user has no inotify instance left, by reading it every 100 ms) through
 *            the fd uroce_share_fd() returns; the first survivor to notice prunes the dead in
 *            file order, attaches, and writes the file; the others then find nothing to do.
 *            Until then packets for the moved member go astray (counted DROP_NO_QP by whoever
 *            receives them; RC retransmits).
 * - RoCE v1 (afpacket.c) has no group: each process's AF_PACKET socket carries its own filter
 *   (uroce_v1_filter_prog). The processes with a RoCE v1 device open on an interface are listed
 *   in <rundir>/share/net<netns inode>/v1-if<ifindex>, in the same format, with the same locking,
 *   pruning and watching (uroce_share_v1_join); every member re-attaches its own filter when the
 *   file changes (uroce_share_check). Its QP1 rules are the program's, seen from one member: it
 *   takes what the program would give its index, with d = the first CM member in file order.
 *   Between a change and the moment the others re-attach (their progress thread wakes on the
 *   inotify event: milliseconds), a CM MAD may reach two processes or none; the CM retransmits.
 * - fork(): the child closes its copies of the sockets at once (host/ctx.c), so a socket's last
 *   reference stays its owner's and it leaves the group when its owner dies.
 * - Limits (not handled): members that die together before a survivor notices are pruned in
 *   file order, which may differ from the order in which the kernel closed their sockets; a
 *   process that execs keeps its pid and start time while the kernel closes its sockets
 *   (SOCK_CLOEXEC), so the others keep it in the file and the member moved into its place is
 *   steered to the wrong index until the next change; all processes of a group must use the
 *   same run-time directory and the same user (the kernel refuses a socket of another user:
 *   EADDRINUSE), and see each other's pids (one pid namespace).
 * - Errors are 0 or a negative errno. Nothing here is called per packet.
 */
#ifndef UROCE_HOST_IO_SHARE_GROUP_H
#define UROCE_HOST_IO_SHARE_GROUP_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "host/io/share_members.h"

struct uroce_share_cfg {
	const char *rundir;
	uint32_t qpn_lo, qpn_hi; /* this process's QPNs on the device (QP1 aside) */
	/* This process's GSI claims, written into every group it joins or updates. */
	bool cm;  /* runs a connection manager */
	int nids; /* 0..UROCE_SHARE_MAX_CLAIMS */
	uint64_t ids[UROCE_SHARE_MAX_CLAIMS];
};

struct uroce_share_group;

/*
 * Bind fd (an unbound UDP socket) to a as a member of the group: sets SO_REUSEPORT, binds, and
 * attaches the new steering program, all under the file lock. On success *out is the member.
 * The member's line carries cfg's CM flag and those of its claims no other member holds (and
 * none when they would not fit: uroce_share_prog_fits).
 * Errors: bind's (-EADDRINUSE: a socket of another user or one without SO_REUSEPORT holds the
 * port); -EEXIST when cfg's QPN range overlaps a live member's; -ENOSPC when the group is full;
 * -ENOTRECOVERABLE when the file or the watch could not be set up (fd is then unbound: the
 * caller may bind it alone); or setsockopt's errno.
 */
int uroce_share_join(const struct uroce_share_cfg *cfg, int fd, const struct sockaddr *a,
		     socklen_t alen, struct uroce_share_group **out);

/*
 * RoCE v1: list this process in the v1 membership file of interface ifindex and attach its
 * filter (uroce_v1_filter_prog, SO_ATTACH_FILTER) to fd, an AF_PACKET socket not bound yet.
 * Claims as uroce_share_join. Errors: -EEXIST, -ENOSPC, -ENOTRECOVERABLE (no file: the caller
 * attaches a filter without a list), or setsockopt's errno.
 */
int uroce_share_v1_join(const struct uroce_share_cfg *cfg, int fd, int ifindex,
			struct uroce_share_group **out);

/*
 * Leave the group: re-attach the program for the others (v2), then close fd. Frees g.
 * v1: remove our line (the others re-attach their filters when they see the file change).
 */
/* In a forked child: free g and close the child's copies of its watch descriptors, changing
 * nothing in the group's files (the member is the parent). The socket is the caller's. */
void uroce_share_forget(struct uroce_share_group *g);
void uroce_share_leave(struct uroce_share_group *g, int fd);

/* An fd that poll() reports readable when the group may have changed (for an epoll set). */
int uroce_share_fd(const struct uroce_share_group *g);

/*
 * Handle what uroce_share_fd() reported, without blocking: prune members that died (re-attach
 * through fd, the member's socket) and follow joins and leaves; v1: re-attach our own filter
 * when the file changed since we last did. Returns 1 when this call attached a program, 0 when
 * there was nothing to do, or a negative errno.
 */
int uroce_share_check(struct uroce_share_group *g, int fd);

/*
 * How many sockets the group had (this one included) when the membership file was last read:
 * at join and at each uroce_share_check() that found a change. The udp backend turns UDP GRO
 * off while it is above 1: the kernel's GRO may merge datagrams for several members' QPs into
 * one, which the steering program (it sees the first) would hand to one member.
 */
int uroce_share_members(const struct uroce_share_group *g);

/*
 * Replace this member's GSI claims by cfg's (cm, ids[0..nids)) under the file lock, then attach
 * the new program (v2) or our filter (v1) through fd and write the file; the other members
 * follow (v2: the program is the group's; v1: through uroce_share_check).
 * Returns 0; -EADDRINUSE when another live member claims one of the ids; -ENOSPC when the
 * program (or a member's v1 filter) would no longer fit; -EINVAL for nids out of range; -ENOENT
 * when our line has gone from the file; or a file or setsockopt errno. On error nothing changed.
 */
int uroce_share_set_gsi(struct uroce_share_group *g, int fd, const struct uroce_share_cfg *cfg);

#endif
