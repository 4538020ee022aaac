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
 * - QPN slots. A process's QPNs are one slot of UROCE_SHARE_SLOT_QPNS numbers:
 *   UROCE_SHARE_QPN_BASE(slot) = 0x100 + (slot << 11), slot 0..4095, preferring
 *   slot = pid & 0xFFF. The slots in use are listed in <rundir>/share/slots ("slot pid start"
 *   lines, flock'd); a slot held by a dead process is free again, and a collision (two pids
 *   equal modulo 4096, or two devices opened by one process) takes the next free slot. A
 *   member's slot is UROCE_SHARE_SLOT_OF(qpn_lo); its CM puts it in the top 12 bits of every
 *   communication ID it issues, so that replies find their way back.
 * - Membership file, one per group: <rundir>/share/net<netns inode>/<address>-<port> (the
 *   network namespace is part of the name: 127.0.0.1 of two namespaces are two groups). It lists
 *   the members in the kernel's group order, one "pid start qpn_lo qpn_hi" line each, after a
 *   "gen N" line bumped at every change. `start` is the process's start time (/proc/PID/stat
 *   field 22), so that a recycled pid is not taken for the member that died. A member that runs
 *   a CM (uroce_share_set_gsi) has " cm" and its claimed service IDs (" 0x..." each, at most
 *   UROCE_SHARE_MAX_CLAIMS) after those four fields; other lines are as before.
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
 *            member watches every other member's pidfd (and the file, with inotify) through
 *            the fd uroce_share_fd() returns; the first survivor to notice prunes the dead in
 *            file order, attaches, and writes the file; the others then find nothing to do.
 *            Until then packets for the moved member go astray (counted DROP_NO_QP by whoever
 *            receives them; RC retransmits).
 * - The program (uroce_share_prog; d = the index of the first member that runs a CM, else 0):
 *     A = BTH bytes 4..7 & 0xFFFFFF (the UDP payload is at offset 0), then for each member
 *     "qpn_lo <= A <= qpn_hi: return its index" (3 instructions each), then A != 1: return 0.
 *     QP1: management class (payload 21) not CM (0x07): return d. Switch on the attribute ID
 *     (payload 36):
 *       REQ 0x10, SIDR_REQ 0x17: the service ID (payload 52 = BTH 12 + DETH 8 + MAD header 24
 *         + 8) against each member's claims, grouped by its high word: "A = word 52;
 *         A == high: A = word 56; A == low_1: return i; ... A == low_c: return i" (4 + c
 *         instructions for c claims that share a high word, as RDMA CM's do); none: return d;
 *       REP, REJ, MRA, RTU, DREQ, DREP (0x11..0x16): A = remote comm ID (payload 48) >> 20;
 *         SIDR_REP 0x18: A = request ID (payload 44) >> 20; then for each member that runs a CM
 *         "A == its slot: return i" (2 instructions each); none: return d;
 *       anything else (LAP, APR, ClassPortInfo, ...): return d.
 *     Unconditional jumps (BPF_JA, 32-bit offsets) link the blocks, so no conditional jump is
 *     longer than 2 + UROCE_SHARE_MAX_CLAIMS whatever the member count. A load beyond the
 *     datagram's end makes the kernel return index 0: datagrams shorter than 8 bytes, and QP1
 *     datagrams too short for the field switched on, go to member 0. The program must fit in
 *     BPF_MAXINSNS (4096): a claim is refused (-ENOSPC) unless the program would still fit
 *     with UROCE_SHARE_MAX_MEMBERS members (uroce_share_prog_fits), so joins never fail on
 *     length. In practice that is about 2700 claims per address.
 * - A process that never claimed (a verbs program without CM) gets no CM MAD once some member
 *   runs a CM; while none does, QP1 goes to index 0 as before.
 * - RoCE v1 (packet.c) has no group: each process's AF_PACKET socket carries its own filter
 *   (uroce_v1_filter_prog). The processes with a RoCE v1 device open on an interface are listed
 *   in <rundir>/share/net<netns inode>/v1-if<ifindex>, in the same format, with the same locking,
 *   pruning and watching (uroce_share_v1_join); every member re-attaches its own filter when the
 *   file changes (uroce_share_check). Its QP1 rules are the program's, seen from one member: it
 *   takes what the program would give its index, with d = the first CM member in file order.
 *   Between a change and the moment the others re-attach (their progress thread wakes on the
 *   inotify event: milliseconds), a CM MAD may reach two processes or none; the CM retransmits.
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
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "host/io/backend.h"

#define UROCE_SHARE_SLOTS	   4096
#define UROCE_SHARE_SLOT_QPNS	   2048
#define UROCE_SHARE_QPN_BASE(slot) (0x100u + ((uint32_t)(slot) << 11))
/* The slot of a QPN range that starts at a slot's base (the prefix of its CM comm IDs). */
#define UROCE_SHARE_SLOT_OF(qpn_lo) ((((uint32_t)(qpn_lo)-0x100u) >> 11) & 0xFFFu)
#define UROCE_SHARE_MAX_MEMBERS	    256
#define UROCE_SHARE_MAX_CLAIMS	    64 /* service IDs per member */

/*
 * QP1 MAD fields, as offsets into the RoCE v2 UDP payload (BTH 12, DETH 8, then the MAD; the
 * CM message follows the 24-byte MAD header). RoCE v1 frames have them UROCE_SHARE_V1_MAD_SHIFT
 * bytes further (Ethernet 14 + GRH 40; + 4 with an 802.1Q tag).
 */
#define UROCE_SHARE_OFF_CLASS	 21 /* MAD management class, 0x07: CM */
#define UROCE_SHARE_OFF_ATTR	 36 /* attribute ID, 16 bits */
#define UROCE_SHARE_OFF_REQ_ID	 44 /* SIDR_REP request ID (CM offset 0) */
#define UROCE_SHARE_OFF_REMOTE	 48 /* REP..DREP remote comm ID (CM offset 4) */
#define UROCE_SHARE_OFF_SID	 52 /* REQ, SIDR_REQ service ID, 64 bits (CM offset 8) */
#define UROCE_SHARE_V1_MAD_SHIFT 54

struct uroce_share_member {
	int32_t pid;
	uint64_t start; /* /proc/PID/stat starttime (clock ticks after boot) */
	uint32_t qpn_lo, qpn_hi;
	bool cm;  /* runs a connection manager */
	int nids; /* claimed service IDs: REQs and SIDR_REQs naming one come to this member */
	uint64_t ids[UROCE_SHARE_MAX_CLAIMS];
};

/* ---- pure helpers (unit-tested) --------------------------------------------------------- */

/*
 * Remove member idx as the kernel does when its socket closes: the last member moves into its
 * place. Returns the new count (n - 1), or -EINVAL for a bad idx.
 */
int uroce_share_compact(struct uroce_share_member *m, int n, int idx);

/*
 * The length of the steering program for members m[0..n) (it may exceed BPF_MAXINSNS), or
 * -EINVAL (n out of 0..UROCE_SHARE_MAX_MEMBERS, or a member's nids out of
 * 0..UROCE_SHARE_MAX_CLAIMS).
 */
int uroce_share_prog_len(const struct uroce_share_member *m, int n);

/*
 * Whether the program for m[0..n) leaves room, within BPF_MAXINSNS, for members joining up to
 * UROCE_SHARE_MAX_MEMBERS and running a CM without claims. Claims are refused unless it does.
 */
bool uroce_share_prog_fits(const struct uroce_share_member *m, int n);

/*
 * Build the steering program for members m[0..n) (index i = m[i]) into out[0..cap).
 * Returns the instruction count (uroce_share_prog_len), or -ENOSPC (cap too small), -E2BIG
 * (longer than BPF_MAXINSNS), -EINVAL (as uroce_share_prog_len).
 */
int uroce_share_prog(struct sock_filter *out, int cap, const struct uroce_share_member *m, int n);

/*
 * RoCE v1 (AF_PACKET, packet.c): the socket filter that keeps a process's frames only. It accepts
 * a frame with Ethertype 0x8915 (after an optional 802.1Q tag) whose BTH destination QP
 * (Ethernet 14 [+ 4] + GRH 40, BTH bytes 5..7) is in [lo, hi], and drops anything else in the
 * kernel, including frames too short to hold the QPN. QP1 frames, with m[0..n) the v1 members
 * of the interface and self this process's index in it:
 * - self < 0 (no membership list), or no member runs a CM: accepted (every process gets them);
 * - m[self] does not run a CM: dropped;
 * - m[self] runs a CM: what uroce_share_prog would steer to index self, with d the first member
 *   that runs a CM (the designated one; it also takes non-CM classes and unknown attributes).
 *   Frames too short for the field looked at are dropped.
 * Returns the instruction count (uroce_v1_filter_len; UROCE_V1_FILTER_LEN unless m[self] runs a
 * CM), or -ENOSPC (cap), -E2BIG (beyond BPF_MAXINSNS), -EINVAL (lo > hi, hi beyond 24 bits,
 * self >= n, n or a nids out of range).
 */
#define UROCE_V1_FILTER_LEN 13
int uroce_v1_filter_len(const struct uroce_share_member *m, int n, int self);
int uroce_v1_filter_prog(struct sock_filter *out, int cap, uint32_t lo, uint32_t hi,
			 const struct uroce_share_member *m, int n, int self);

/* Format "gen N\n" then one line per member. Returns the length, or -ENOSPC. */
int uroce_share_format(char *buf, size_t cap, uint64_t gen, const struct uroce_share_member *m,
		       int n);
/*
 * Parse what uroce_share_format wrote (an empty text is generation 0, no member; lines without
 * " cm" are members without a CM or claims, as files written before claims existed).
 * Returns the member count, or -EBADMSG (a malformed line, more than UROCE_SHARE_MAX_CLAIMS
 * claims), -ENOSPC (more than max).
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
	/* This process's GSI claims, written into every group it joins or updates. */
	bool cm;  /* runs a connection manager */
	int nids; /* 0..UROCE_SHARE_MAX_CLAIMS */
	uint64_t ids[UROCE_SHARE_MAX_CLAIMS];
};

struct uroce_share_group;

/*
 * The membership file of the group of (a, port) in this network namespace, into buf[cap].
 * a is an AF_INET or AF_INET6 address (the port is taken from it). Returns 0, -ENAMETOOLONG,
 * -EAFNOSUPPORT, or the errno of reading /proc/self/ns/net.
 */
int uroce_share_path(char *buf, size_t cap, const char *rundir, const struct sockaddr *a);
/* The RoCE v1 membership file of interface ifindex in this network namespace. As above. */
int uroce_share_v1_path(char *buf, size_t cap, const char *rundir, int ifindex);

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

/*
 * Read a membership file (for tests and tools). Returns the member count with *gen set, 0 for
 * an absent file, or -EBADMSG, -ENOSPC, or the read's errno. Takes the lock shared.
 */
int uroce_share_read(const char *path, uint64_t *gen, struct uroce_share_member *m, int max);

/*
 * The RoCE v2 UDP backend with its sockets in shared groups (uroce_udp_ops.open binds them
 * alone). Implemented in udp.c. When the run-time directory cannot hold the membership files,
 * the sockets are bound alone, as uroce_udp_ops.open does. share must outlive the backend's
 * open call only.
 */
int uroce_udp_open_shared(const struct uroce_backend_cfg *cfg, const struct uroce_share_cfg *share,
			  struct uroce_backend **out);
/*
 * The interface's addresses changed: make b (opened by uroce_udp_open_shared or
 * uroce_udp_ops.open, wrappers allowed) bound to cfg->addrs exactly. The sockets of addresses
 * still there are kept, with what they hold (the kernel's queue, the rest of a GRO datagram);
 * those of addresses gone are closed; new addresses get sockets opened as by open (share may be
 * NULL: bound alone). Returns 0; -EINVAL when b is not of that kind or cfg->n_addrs is out of
 * 1..UROCE_BACKEND_MAX_ADDRS (nothing changed); or the error of an address that could not be
 * bound, with cfg->err set (the sockets bound before it stay).
 */
int uroce_udp_rebind(struct uroce_backend *b, const struct uroce_backend_cfg *cfg,
		     const struct uroce_share_cfg *share);

/*
 * The RoCE v1 AF_PACKET backend listed in its interface's v1 membership file, its filter
 * following the file (uroce_packet_ops.open filters by cfg's QPN range and takes every QP1
 * frame). Implemented in packet.c. Without a usable file it behaves as uroce_packet_ops.open.
 */
int uroce_packet_open_shared(const struct uroce_backend_cfg *cfg,
			     const struct uroce_share_cfg *share, struct uroce_backend **out);

/*
 * Apply share's GSI claims (uroce_share_set_gsi) to every group of b, a backend opened by
 * uroce_udp_open_shared (resp. uroce_packet_open_shared), wrappers allowed. Sockets bound alone
 * need nothing. Stops at the first error and returns it (groups before it are updated: the
 * caller applies its previous claims again to undo), -EINVAL when b is not of that kind.
 */
int uroce_udp_share_gsi(struct uroce_backend *b, const struct uroce_share_cfg *share);
int uroce_packet_share_gsi(struct uroce_backend *b, const struct uroce_share_cfg *share);

#endif
