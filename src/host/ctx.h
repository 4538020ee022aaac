/* SPDX-License-Identifier: MIT */
/*
 * An opened device: what `ibv_open_device` gives a process. It joins one transport engine, the
 * device's GID table, its I/O backends (UDP sockets for RoCE v2, AF_PACKET for RoCE v1) and a
 * progress thread that plays the NIC: it receives, runs the engine, sends, fires timers and
 * reports events, so one-sided operations and ACKs proceed while the application sleeps.
 *
 * Design notes
 * - One mutex per context serialises every engine call. Application threads take it around
 *   verbs (post, poll, create, modify) with uroce_ctx_lock/unlock; the progress thread takes it
 *   for each round (receive burst, timers, transmit burst) and sends while holding it, because the
 *   engine's transmit descriptors point into QP state and bounce buffers that the next engine
 *   call may change.
 * - Pacing (pace/pace.h) decides when the work is done by the application's thread and when by
 *   the progress thread; the context feeds it the events of the verbs and of its rounds, with
 *   their times and the engine's state, and does what it decides. After posting, the application
 *   sends in its own thread what the engine has to send (uroce_ctx_post_tx, as a NIC's doorbell
 *   starts the send at once; a busy poller's burst of posts is sent together), and wakes the
 *   progress thread through an eventfd (uroce_ctx_kick) only when that thread must plan again:
 *   work left to send, or a timer due before the time it sleeps until. No wake-up per post.
 * - The progress thread sleeps in ppoll() on the backend fds, the kick eventfd and the interface
 *   watch, with the engine's next deadline as the timeout (CLOCK_MONOTONIC, ns).
 * - While an application thread busy-polls a CQ (ibv_poll_cq on an empty CQ runs a progress
 *   round in that thread: uroce_ctx_polled), it leases the sockets: the progress thread leaves
 *   them to it and sleeps on timers only, so that the two do not race for every packet and the
 *   lock (on a small machine, a progress thread woken per packet preempts the spinning
 *   application). The lease ends UROCE_PACE_LEASE_NS after the thread stops polling, or at once
 *   when it arms a completion channel to sleep (uroce_ctx_app_sleeps). The progress thread reads
 *   the lease without the lock, which the polling thread holds most of the time: waiting for it
 *   would cost that thread a futex wake-up per look.
 * - After answering a peer's RDMA READ or atomic (which no application thread polls for), or
 *   reporting a completion to a thread that sleeps on a completion channel, the progress thread
 *   polls its sockets for UROCE_PACE_SPIN_NS before sleeping, while that pays
 *   (uroce_pace_spin_step): waking a halted vCPU costs a large part of a READ's round trip.
 *   UROCE_SPIN=0 in the environment turns it off.
 * - Busy-poll mode (UROCE_BUSY_POLL=1): the progress thread does not sleep, for latency.
 * - Engine events (completion notifications, async errors) are handed to the callback given at
 *   open, from the progress thread or from the thread that made the engine call, with the lock
 *   held: the callback must not call back into the context (it writes to an fd and returns).
 * - Address vectors are resolved to paths with the GID table: sgid_index gives the source
 *   address and the encapsulation (v1 or v2 by the entry's type); the destination GID gives the
 *   destination address (v4-mapped GIDs are IPv4). RoCE v1 needs the peer's MAC from the
 *   neighbour table; while it is being resolved the packet waits (the engine retransmits).
 * - Received packets are matched to a GID table index by (destination address, encapsulation);
 *   a packet for an address or version the device does not have is a counted drop.
 */
#ifndef UROCE_HOST_CTX_H
#define UROCE_HOST_CTX_H

#include <stdbool.h>
#include <stdint.h>

#include "host/config/cm_counters.h"
#include "host/config/device.h"
#include "host/config/gid.h"
#include "host/config/io_counters.h"
#include "pace/pace.h"
#include "transport/engine.h"

struct uroce_ctx;

/* Called with the context lock held, for every engine event. */
typedef void (*uroce_ctx_event_fn)(void *arg, const struct uroce_event *ev);

struct uroce_ctx_cfg {
	uroce_ctx_event_fn on_event;
	/* Called by the progress thread after each of its rounds, with the lock held (NULL:
	 * nothing): what the layer above leaves for it (events a waiting thread left uncounted,
	 * compat's channels). It runs at the latest a lease's time after an application thread
	 * last slept on a channel or polled. */
	void (*on_round)(void *arg);
	void *arg;
	uint32_t qpn_base; /* 0: derived from the process id, so processes do not collide */
};

/*
 * Open the device called name (as `uroce link show` lists it). Returns 0, -ENODEV for an unknown
 * device, -ENETDOWN when its interface is gone, or an error from the backends (-EPERM for RoCE
 * v1 without CAP_NET_RAW is not fatal: the v1 GIDs then drop what they receive and fail sends,
 * and a warning is printed once).
 */
int uroce_ctx_open(const char *name, const struct uroce_ctx_cfg *cfg, struct uroce_ctx **out);
/*
 * fork(): the engine reaches registered memory by virtual address, so the parent goes on with
 * the pages its regions name (copy-on-write gives the child copies), as the kernel's copy-on-fork
 * of pinned pages does: no MADV_DONTFORK is needed. The child inherits copies of the opened
 * devices, each an orphan: no progress thread, and no I/O, since the sockets, eventfds and
 * files are the parent's (a packet the child took or sent would be missing from, or forged
 * into, the parent's connections); the child's copies of their descriptors are closed at the
 * fork (ctx.c, "fork"). Verbs on an orphan act on the child's copy only: posts are queued and
 * never sent, polls find nothing new, steering and multicast changes do nothing, events are not
 * reported (the completion channels' and async eventfds are shared with the parent: the child
 * must not wait on them either), and uroce_ctx_close frees the copy and leaves the parent's group
 * membership, QPN slot and capture file alone. The child may open the device again (a new
 * context, a new member of the device).
 */
void uroce_ctx_close(struct uroce_ctx *c);

void uroce_ctx_lock(struct uroce_ctx *c);
void uroce_ctx_unlock(struct uroce_ctx *c);
/*
 * For the libraries' exit handlers (librdmacm's, sending the CM's last messages; this library's,
 * leaving the share groups): whether every open context's lock comes within UROCE_EXIT_LOCK_NS
 * (host/os/exit_lock.h), each taken and released again. False when a thread holds one (this one
 * included, interrupted by the signal whose handler calls exit()): it may also hold what the
 * contexts share (a share group's file lock, the capture file), so the handler then leaves them
 * all to the kernel. Also false when a share group's file lock is still held after as long
 * (io/locked_file.h: a thread interrupted inside a device's open, before its context exists).
 * A context whose progress thread is the caller is not looked at (exit() from a callback
 * there).
 */
bool uroce_ctxs_lockable_at_exit(void);
/* Wake the progress thread (after posting work). Lock not needed. */
void uroce_ctx_kick(struct uroce_ctx *c);

/* The progress thread's spin state (a copy), for the tests. Lock held. */
struct uroce_pace_spin uroce_ctx_spin_state(struct uroce_ctx *c);

/* What an application thread's poll of a CQ (ibv_poll_cq) found. */
enum uroce_ctx_poll {
	UROCE_CTX_POLL_FOUND,	   /* completions */
	UROCE_CTX_POLL_EMPTY,	   /* none: a progress round may bring some */
	UROCE_CTX_POLL_STILL_EMPTY /* none after the round */
};

/*
 * One poll of a CQ by an application thread, for the pacing (pace/pace.h). Lock held.
 * - FOUND: the poll counts toward the streak that takes the lease and renews a lease the thread
 *   holds; no round runs. Returns false.
 * - EMPTY: a progress round (receive, timers, transmit) in the caller's thread; while the thread
 *   holds the lease, what the round makes to send waits for its next call (the ACKs of what it
 *   receives go out after it has seen the completions). Returns true: poll the CQ again, then
 *   call with FOUND or STILL_EMPTY.
 * - STILL_EMPTY: what the round held back is sent, unless it is ACKs held for the thread's next
 *   post (uroce_pace_reply_holds). Returns false.
 */
bool uroce_ctx_polled(struct uroce_ctx *c, enum uroce_ctx_poll what);

/* Send what the thread's rounds held back, ACKs and held posts included. Lock held. */
void uroce_ctx_poll_idle(struct uroce_ctx *c);

/*
 * The application is about to sleep on a completion channel (ibv_req_notify_cq): what waits is
 * sent, and the lease ends, so the progress thread watches the sockets again; a channel's lease
 * (uroce_ctx_channel_wait) goes on instead, and ACKs kept for the thread's next post wait on.
 * Lock held; returns whether a lease ended, and so whether to uroce_ctx_kick() after unlocking.
 */
bool uroce_ctx_app_sleeps(struct uroce_ctx *c);
/* The same, then uroce_ctx_unlock() and the kick it needs: the end of ibv_req_notify_cq. Lock
 * held on entry, released on return. */
void uroce_ctx_arm_unlock(struct uroce_ctx *c);

/*
 * One sleep of an application thread that would block reading a completion channel's fd
 * (ibv_get_cq_event): it watches the device's sockets too and runs the progress round for what
 * they receive itself, under a channel's lease (uroce_pace_channel_sleeps), so that a packet
 * that makes a completion wakes one thread, the one that waits for it, not the progress thread
 * and then this one. The progress thread keeps to the timers while the lease holds. Returns 0
 * once fd is readable or a round ran (its events may be for another channel: the caller looks,
 * and calls again); 1 at once in busy-poll mode (the progress thread receives) and in a
 * forked child (nothing does), and when fd is not one (closed); -errno when ppoll fails (-EINTR: a
 * signal came). After anything but 0 the caller blocks on the fd as it would without uroce. Lock
 * not held.
 */
int uroce_ctx_channel_wait(struct uroce_ctx *c, int fd);

/*
 * After posting work of this many bytes (lock held): send what the engine has to send now, in
 * the caller's thread, unless the post is held back for its burst (uroce_pace_post_holds).
 * Returns whether the progress thread must be woken (uroce_ctx_kick() after unlocking): packets
 * are left to send, the engine's next deadline comes before the time it sleeps until, or it
 * sleeps beyond the lease's end with a post held.
 */
bool uroce_ctx_post_tx(struct uroce_ctx *c, size_t bytes);
/* The same, then uroce_ctx_unlock() and the kick it needs: the end of a post verb. Lock held on
 * entry, released on return. */
void uroce_ctx_post_unlock(struct uroce_ctx *c, size_t bytes);

/* The engine; call it only with the lock held. */
struct uroce_eng *uroce_ctx_eng(struct uroce_ctx *c);

const struct uroce_devdef *uroce_ctx_devdef(const struct uroce_ctx *c);
/* Port state, MTUs, MAC, node GUID as of now. */
void uroce_ctx_devinfo(struct uroce_ctx *c, struct uroce_devinfo *out);
/* A copy of the current GID table. Returns the number of entries (at most max). */
int uroce_ctx_gids(struct uroce_ctx *c, struct uroce_gid_entry *out, int max);

/*
 * An I/O counter (host/config/io_counters.h: packets dropped for a bad ICRC, malformed, not
 * for us, ...) summed over the context's backends (RoCE v2 and v1) and their wrappers. Takes
 * the lock: call it without.
 */
uint64_t uroce_ctx_io_counter(struct uroce_ctx *c, enum uroce_io_counter k);

/*
 * Connection-manager steering: this process runs a CM on the device (librdmacm's CM thread).
 * From now on the QP1 MADs that reach the device's addresses come to this process when
 * - a REQ or SIDR_REQ names a service ID in ids[0..n) (the ports it listens on);
 * - any other CM MAD names one of its comm IDs: the top 12 bits of the remote comm ID (CM
 *   message offset 4: REP, REJ, MRA, RTU, DREQ, DREP) or of the SIDR_REP request ID (offset 0)
 *   are uroce_ctx_slot();
 * - a REQ or SIDR_REQ whose service ID no member claims goes to a member that runs a CM, so that
 *   one answers REJ INVALID_SERVICE_ID as the kernel does.
 * Each call replaces the previous list; n = 0 claims no service but still marks a CM. A process
 * that never calls this gets no CM MAD once another process on the device runs a CM
 * (io/share_prog.h).
 * The list is kept: sockets opened again after an address change join with it.
 * Returns 0; -EADDRINUSE when another live process sharing an address already claims one of
 * ids; -ENOSPC when ids is too long (more than UROCE_SHARE_MAX_CLAIMS, or more than the
 * kernel's program limit leaves room for); -EINVAL for n < 0 or ids NULL with n > 0; or a file
 * or setsockopt errno. On error the previous list stays in force. Takes the lock: call it
 * without.
 */
int uroce_ctx_gsi_steer(struct uroce_ctx *c, const uint64_t *ids, int n);

/*
 * Multicast: make the device's IP multicast memberships follow the engine's groups
 * (uroce_mcast_groups): the RoCE v2 sockets join each group that has QPs attached (an MGID
 * ::ffff:a.b.c.d is the IPv4 group a.b.c.d, any other the IPv6 group of that address;
 * uroce_udp_mcast_join) and leave those that have none left. Call it after attaching,
 * detaching or destroying a UD QP, lock held. Each process that shares the device joins for its
 * own QPs: every member gets the group's packets. Returns 0, or the first join's error (the
 * group is tried again at the next call). Multicast goes over RoCE v2 only: on a RoCE v1-only
 * device, -EOPNOTSUPP while any group has QPs (RoCE v1 would need the AF_PACKET socket's
 * membership of the group's MAC and its filter to take QPN 0xFFFFFF: not done).
 */
int uroce_ctx_mcast_sync(struct uroce_ctx *c);

/* This process's QPN slot on the device (io/share_slots.h), 0..4095: the prefix of its CM comm
 * IDs. */
uint32_t uroce_ctx_slot(const struct uroce_ctx *c);

/* Add delta (this process's connection-manager counts since the last call) to the device's
 * counter file (config/stats.h). Atomic adds, no lock: any thread. Nothing when the context
 * has no counter file (a read-only run-time directory). */
void uroce_ctx_count_cm(struct uroce_ctx *c, const uint64_t delta[UROCE_CM_CNT_MAX]);

#endif
