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
 * - After posting, the application sends in its own thread what the engine has to send
 *   (uroce_ctx_post_tx, as a NIC's doorbell starts the send at once; a busy poller's burst of
 *   posts is sent together), and wakes the progress
 *   thread through an eventfd (uroce_ctx_kick) only when that thread must plan again: work left
 *   to send, or a timer due before the time it sleeps until. No wake-up per post.
 * - The progress thread sleeps in ppoll() on the backend fds, the kick eventfd and the interface
 *   watch, with the engine's next deadline as the timeout (CLOCK_MONOTONIC, ns).
 * - While an application thread busy-polls a CQ (ibv_poll_cq on an empty CQ runs a progress
 *   round in that thread: uroce_ctx_poll_progress), the progress thread leaves the sockets to it
 *   and sleeps on timers only, so that the two do not race for every packet and the lock (on a
 *   small machine, a progress thread woken per packet preempts the spinning application).
 *   It takes the sockets back UROCE_CTX_POLL_LEASE_NS after the last such round (the lease ends
 *   when the application stops polling: ib_write_lat spins on its buffer's last byte, waiting
 *   for an RDMA WRITE that makes no completion, and only the progress thread can receive it),
 *   or at once when the application arms a completion channel to sleep (uroce_ctx_app_sleeps).
 *   Posting extends the lease a little (UROCE_CTX_POST_RENEW_NS). The progress thread reads
 *   the lease without the lock, which the polling thread holds most of the time: waiting for
 *   it cost that thread a futex wake-up per look (about 5 % of its CPU).
 * - After answering a peer's RDMA READ or atomic (which no application thread polls for), or
 *   reporting a completion to a thread that sleeps on a completion channel, the progress
 *   thread polls its sockets for UROCE_CTX_SPIN_NS before sleeping, while that pays
 *   (uroce_ctx_spin_step): waking a halted vCPU was half of a READ's round trip.
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

#include "host/config/device.h"
#include "host/config/gid.h"
#include "host/config/io_counters.h"
#include "transport/engine.h"

struct uroce_ctx;

/* Called with the context lock held, for every engine event. */
typedef void (*uroce_ctx_event_fn)(void *arg, const struct uroce_event *ev);

struct uroce_ctx_cfg {
	uroce_ctx_event_fn on_event;
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
void uroce_ctx_close(struct uroce_ctx *c);

void uroce_ctx_lock(struct uroce_ctx *c);
void uroce_ctx_unlock(struct uroce_ctx *c);
/* Wake the progress thread (after posting work). Lock not needed. */
void uroce_ctx_kick(struct uroce_ctx *c);
/*
 * How long after an application thread's last poll round its lease lasts. While it polls, the
 * progress thread wakes about this often to look (plus the kernel's 50 us timer slack: a few %
 * of a CPU); an application that stops polling waits about that long for what it did not poll
 * for. It was 2 ms: ib_write_lat took 0.5 to 1 ms per message. Shorter, or with 1 us of timer
 * slack, the wake-ups slow ib_send_lat (6.5 -> 9-10 us on 2 vCPUs) without helping
 * ib_write_lat (about 30 us: the progress thread waits for a CPU that two spinning
 * applications hold).
 */
#define UROCE_CTX_POLL_LEASE_NS 30000ull /* 30 us */

/*
 * Posting extends the lease of a thread that polls, within this long after its last poll round:
 * sending a 64 KiB message takes about as long as a lease, and a progress thread that took the
 * sockets back meanwhile would wait for the lock. Posts alone do not keep it: a thread that only
 * posts does not receive, the progress thread must. It was 1 ms: perftest's bandwidth loop posts
 * up to its send queue depth on every QP between two polls, and with 8 QPs of 4 KiB SENDs that
 * took 1 to 4 ms; the lease lapsed in every such burst, the progress thread took over and was
 * woken by the posts (ib_send_bw 4 KiB, 8 QPs, MTU 9000: 6.3 -> 16.7 Gbit/s in paired runs).
 */
#define UROCE_CTX_POST_RENEW_NS 4000000ull /* 4 ms */

/*
 * When a lease ends, from the last poll round's time (0: no lease) and the last post's: a
 * pure function, for the progress thread and the tests.
 */
static inline uint64_t uroce_ctx_lease_end(uint64_t polled, uint64_t posted)
{
	if (!polled)
		return 0;
	if (posted > polled + UROCE_CTX_POST_RENEW_NS)
		posted = polled + UROCE_CTX_POST_RENEW_NS;
	return (posted > polled ? posted : polled) + UROCE_CTX_POLL_LEASE_NS;
}

/*
 * How long the progress thread sleeps without looking at the sockets or taking the lock, from
 * the lease's end (uroce_ctx_lease_end), the time, and how many application threads wait for
 * the lock; 0: it plans its sleep under the lock. Through a lease; and, once a polling
 * thread's lease has lapsed, for another lease's time while such a thread waits for the lock
 * that a round of the progress thread held: the mutex is not fair, and the progress thread
 * would take it again at once, for round after round (8 QPs in ib_write_bw: milliseconds
 * while the application waited and its lease lapsed; every post and poll waited for the lock).
 */
static inline uint64_t uroce_ctx_hold_off(uint64_t lease_end, uint64_t now, unsigned waiters)
{
	if (lease_end > now)
		return lease_end - now;
	return lease_end && waiters ? UROCE_CTX_POLL_LEASE_NS : 0;
}

/*
 * Posts in a burst: a post by a thread that holds the lease, within UROCE_CTX_POST_BURST_NS of
 * the previous post's end, is held back (queued in its QP, not sent) until the thread's next
 * empty poll, a post that is not held, its arming a completion channel, or the lease's end
 * (the progress thread). A post held with others since the last send brings them to
 * UROCE_CTX_POST_BURST_BYTES, a full GSO send's worth, goes with them. 4 KiB WRITEs in
 * ib_write_bw at MTU 9000 went one datagram per post, 4.3 Gbit/s; held and sent together,
 * 16 to a GSO send, 14 to 20. A post that follows a round trip (a ping-pong: ib_write_lat waits
 * for the peer's WRITE by watching memory, not polling) comes later than that and goes at once.
 */
#define UROCE_CTX_POST_BURST_NS	   1000ull /* 1 us */
#define UROCE_CTX_POST_BURST_BYTES 65536ull

/* Is a post at now held back (above)? From the lease's end, when the last post ended, and the
 * bytes held with it. A pure function, for the context and the tests. */
static inline bool uroce_ctx_post_holds(uint64_t now, uint64_t lease_end, uint64_t last_post,
					uint64_t held)
{
	return now < lease_end && now - last_post < UROCE_CTX_POST_BURST_NS &&
	       held < UROCE_CTX_POST_BURST_BYTES;
}

/*
 * ACKs wait for the next post. When all a thread that busy-polls (it took a lease and has not
 * armed a completion channel since) and posts (its last post within UROCE_CTX_POST_RENEW_NS)
 * has to send is ACKs, they wait up to
 * UROCE_CTX_REPLY_HOLD_NS after the round that made them for its next post, which sends them behind
 * what it posts; once the time is up, its next poll sends them, or the progress thread. This covers
 * the ACKs its own poll rounds make and those of the progress thread receiving for it once its
 * lease lapsed (ib_write_lat watches memory for the peer's RDMA WRITE, not polling). Sent at once,
 * an ACK ran ahead of the thread's next WRITE: the peer, polling for that ACK, took it and went
 * back to watching memory, and the WRITE that came a moment later waited for the peer's lease to
 * lapse and its progress thread to run. Both sides settled in that pattern (RoCE v1 always,
 * RoCE v2 in some runs): ib_write_lat took 53 us over RoCE v1 at 2 vCPUs. A thread that only
 * receives (ib_send_bw's server) has no post to wait for: its ACKs go as before.
 */
#define UROCE_CTX_REPLY_HOLD_NS 10000ull /* 10 us */

/* Are the ACKs made at now kept for the application thread (above)? From the time of that
 * thread's lease-taking poll (0: none, or it sleeps on a channel), of its last post (0: none)
 * and the end of a hold already running (0: none). A pure function, for the context and the
 * tests. */
static inline bool uroce_ctx_reply_holds(uint64_t app_polled, uint64_t last_post, uint64_t hold_end,
					 uint64_t now)
{
	return app_polled && last_post && now - last_post < UROCE_CTX_POST_RENEW_NS &&
	       (!hold_end || now < hold_end);
}

/*
 * The progress thread answers a peer's RDMA READ or atomic by itself (no completion, so no
 * application thread polls for it), and waking it costs: an idle vCPU halts, and its wake-up
 * took about half of ib_read_lat's 30 us round trip at 2 vCPUs (13 to 15 us with the thread
 * spinning). The same holds for the messages of an application that sleeps on a completion
 * channel (ib_send_lat -e: 31 to 63 us, 23 to 24 with the spin). So after a round that
 * received packets and answered a READ or an atomic, or reported a completion (to a thread
 * that armed its CQ), it polls its sockets without sleeping for UROCE_CTX_SPIN_NS, as long as
 * that pays: a spin that ends with nothing received stops the spinning, and a sleep that a
 * packet ended within UROCE_CTX_SPIN_NS (a spin would have caught it) allows it again. A
 * thread answering now and then spins once, a spin's time, and then sleeps as before.
 * UROCE_SPIN=0 in the environment turns it off (the CPU it costs, against the latency).
 */
#define UROCE_CTX_SPIN_NS 50000ull /* 50 us */

struct uroce_ctx_spin {
	uint64_t until;	   /* spin until then (0: not spinning) */
	uint64_t slept_at; /* when the thread last went to sleep (0: it has not since its round) */
	bool ok;	   /* spinning pays (the last spin, or a sleep, says so) */
	bool caught;	   /* the spin under way has received something */
	uint64_t begun;	   /* spins begun (a spin extended by a round that answers again is one) */
};

/*
 * One progress round at now by the progress thread: got packets received, responds: it
 * answered a READ or an atomic, or reported a completion. Updates s; returns whether the
 * thread polls again without sleeping. A pure function, for the context and the tests.
 */
static inline bool uroce_ctx_spin_step(struct uroce_ctx_spin *s, uint64_t now, int got,
				       bool responds)
{
	if (got > 0 && s->slept_at && now - s->slept_at < UROCE_CTX_SPIN_NS)
		s->ok = true; /* it slept through what a spin would have caught */
	s->slept_at = 0;
	if (s->until) {
		s->caught = s->caught || got > 0;
		if (now >= s->until) {
			s->ok = s->caught; /* a spin for nothing: no more until a sleep says so */
			s->until = 0;
		}
	}
	if (got > 0 && responds && s->ok) {
		s->begun += !s->until;
		s->until = now + UROCE_CTX_SPIN_NS;
		s->caught = false;
	}
	return s->until != 0;
}

/* The progress thread's spin state (a copy), for the tests. Lock held. */
struct uroce_ctx_spin uroce_ctx_spin_state(struct uroce_ctx *c);

/*
 * A progress round (receive, timers, transmit) for an application thread polling an empty CQ
 * (ibv_poll_cq), in that thread; once the thread is seen polling in a loop, the progress thread
 * leaves the sockets to it for UROCE_CTX_POLL_LEASE_NS, and the round's packets to send wait for
 * its next call (the ACKs of what it receives go out after it has seen the completions). When the
 * CQ is still empty after the round, call uroce_ctx_poll_empty(), which sends them, unless they
 * are ACKs held for the thread's next post (uroce_ctx_reply_holds). Lock held.
 */
void uroce_ctx_poll_progress(struct uroce_ctx *c);
void uroce_ctx_poll_empty(struct uroce_ctx *c);
/*
 * A poll that found completions counts toward the streak that takes the lease, and renews a
 * lease the thread holds: while completions keep coming, its polls find some every time and
 * run no round. Without the renewal the lease lapsed for good, the progress thread doing the
 * receiving beside it (8 QPs of 4 KiB WRITEs in ib_write_bw); with empty polls alone counted, a
 * thread that never saw its CQ empty never took one, and every post went out alone (8 QPs of
 * 4 KiB SENDs in ib_send_bw: 2.5 Gbit/s in a third of the runs, 15 to 17 in the others).
 * Lock held.
 */
void uroce_ctx_poll_found(struct uroce_ctx *c);
/* Send what the thread's rounds held back, ACKs included. Lock held. */
void uroce_ctx_poll_idle(struct uroce_ctx *c);

/*
 * The application is about to sleep on a completion channel (ibv_req_notify_cq): what waits is
 * sent, and the progress thread takes the sockets back now. Lock held; returns whether to
 * uroce_ctx_kick() after unlocking.
 */
bool uroce_ctx_app_sleeps(struct uroce_ctx *c);

/*
 * After posting work of this many bytes (lock held): send what the engine has to send now, in
 * the caller's thread, unless the post is held back (uroce_ctx_post_holds). Returns whether the
 * progress thread must be woken (uroce_ctx_kick() after unlocking): packets are left to send, or
 * the engine's next deadline comes before the time it sleeps until.
 */
bool uroce_ctx_post_tx(struct uroce_ctx *c, size_t bytes);

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

/* This process's QPN slot on the device (io/share_slots.h), 0..4095: the prefix of its CM comm
 * IDs. */
uint32_t uroce_ctx_slot(const struct uroce_ctx *c);

#endif
