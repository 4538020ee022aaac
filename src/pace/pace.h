/* SPDX-License-Identifier: MIT */
/*
 * Pacing: when an opened device's work is done by the application's own thread and when by the
 * progress thread, when packets go out at once and when they wait to go out together, and how
 * the progress thread waits for work. Sans-I/O like the transport engine: the context (host/ctx)
 * feeds events with their times (a poll round, a poll that found completions, a post of N bytes,
 * a channel armed, a progress round's result) and the engine's state (what there is to send,
 * its next deadline), and acts on the decisions it gets back (hold or send now, wake the
 * progress thread or not, spin, or sleep until T watching the sockets or not). No clock, lock,
 * thread or I/O here; every time is CLOCK_MONOTONIC ns as the caller reads it.
 *
 * The rules
 * - The lease. An application thread seen busy-polling its CQ (UROCE_PACE_POLL_STREAK polls,
 *   each within UROCE_PACE_POLL_GAP_NS of the last) leases the sockets: its poll rounds receive,
 *   run the timers and send, and the progress thread sleeps on timers only, so that the two do
 *   not race for every packet and for the lock. The lease lasts UROCE_PACE_LEASE_NS after the
 *   thread's last poll, or after its last post within UROCE_PACE_POST_RENEW_NS of that poll;
 *   arming a completion channel ends it.
 * - The channel's lease. A thread that sleeps in ibv_get_cq_event watches the sockets itself and
 *   holds the lease as a poller does (uroce_pace_channel_sleeps): a packet wakes the one thread
 *   that waits for its completion. Arming right after a wake does not end it.
 * - Posts in a burst. A leased thread's post within UROCE_PACE_POST_BURST_NS of its previous one
 *   is held (queued, not sent) and goes out with the rest of the burst, in full GSO sends.
 * - ACKs wait for the next post. A leased thread that posts gets the ACKs made for it held for
 *   up to UROCE_PACE_REPLY_HOLD_NS, to go out behind its next request.
 * - The lease's timer. The progress thread sleeps through a lease on a timer for its end, which
 *   the leased thread's poll rounds move on as the lease is renewed, before it fires: a thread
 *   that polls continuously is not preempted by a wake-up that only finds the lease held.
 * - The progress thread's hold-off and spin. It keeps off the lock through a lease and for a
 *   lease's time after one lapsed while a polling thread waits for the lock; after answering a
 *   READ or an atomic, or reporting a completion, it polls its sockets for UROCE_PACE_SPIN_NS
 *   instead of sleeping, while that pays.
 *
 * Concurrency: the caller serialises every call on a struct uroce_pace (the context's lock),
 * except uroce_pace_lease_end, uroce_pace_leased and uroce_pace_hold_off, which read the lease
 * with relaxed atomic loads and may run concurrently with the calls that write it: the progress
 * thread looks at the lease without the lock, which the polling thread holds most of the time.
 */
#ifndef UROCE_PACE_PACE_H
#define UROCE_PACE_PACE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * How long after an application thread's last poll round its lease lasts. While it polls, the
 * progress thread wakes about this often to look whether the lease still holds (plus the
 * kernel's timer slack); an application that stops polling waits about this long for what it
 * did not poll for. Each such wake-up takes a CPU from a busy-polling thread (two polling
 * processes on two CPUs: one of them stops for it), so it is long: a program that polls its
 * CQs continuously (UCX, MPI, perftest) then receives everything itself. A program that polls
 * for its completion and then watches memory for the peer's RDMA WRITE (ib_write_lat) gets that
 * WRITE in its next poll, behind the ACK its peer holds for its next post
 * (UROCE_PACE_REPLY_HOLD_NS); only a program that stops polling for good waits this long, and
 * one that sleeps on a completion channel ends its lease when it arms it.
 */
#define UROCE_PACE_LEASE_NS 1000000ull /* 1 ms */

/*
 * Posting extends the lease of a thread that polls, within this long after its last poll round:
 * sending a large message takes about a lease, and perftest's bandwidth loop posts up to its
 * send queue depth on every QP between two polls; a progress thread that took the sockets back
 * meanwhile would wait for the lock and be woken by the posts. Posts alone do not keep the lease:
 * a thread that only posts does not receive, so the progress thread must.
 */
#define UROCE_PACE_POST_RENEW_NS 4000000ull /* 4 ms */

/*
 * Posts in a burst: a post by a thread that holds the lease, within UROCE_PACE_POST_BURST_NS of
 * the previous post's end, is held back (queued in its QP, not sent) until the thread's next
 * empty poll, a post that is not held, its arming a completion channel, or the lease's end (the
 * progress thread). A post that brings what is held since the last send to
 * UROCE_PACE_POST_BURST_BYTES, a full GSO send's worth, goes with the rest. Small messages
 * posted one by one thus fill GSO sends instead of going one datagram per post; a post that
 * follows a round trip (a ping-pong) comes later than the burst's gap and goes at once.
 */
#define UROCE_PACE_POST_BURST_NS    1000ull /* 1 us */
#define UROCE_PACE_POST_BURST_BYTES 65536ull

/*
 * ACKs wait for the next post. When all a thread that busy-polls (it took a lease and has not
 * armed a completion channel since) and posts (its last post within UROCE_PACE_REPLY_POSTER_NS)
 * has to send is ACKs, they wait for its next post, which sends them behind what it posts; once
 * the hold is over, its next poll sends them, or the progress thread. This covers the ACKs its
 * own poll rounds make and those of the progress thread receiving for it once its lease lapsed.
 * An ACK sent alone runs ahead of the thread's next request: a peer polling for that ACK takes
 * it and goes back to watching memory (perftest's write_lat), and the request that follows waits
 * for the peer's lease to lapse and its progress thread to run; the peer's ACK then goes alone
 * the same way, round trip after round trip, a lease's length each. A thread that only receives
 * has no post to carry its ACKs: they are not held.
 *
 * The hold lasts UROCE_PACE_REPLY_HOLD_NS after the round that made the ACKs, or
 * UROCE_PACE_REPLY_ANSWERED_NS when the thread's last hold ended in its post: a thread that
 * answers each message (a ping-pong) may take longer than the short hold to see one and post
 * (it watches memory, or the progress thread that received for it has its CPU), while a
 * receiver that posts now and then (UCX's flow-control grants on a stream) lets its holds run
 * out and its sender, waiting on those ACKs, loses no more than the short hold each time.
 */
#define UROCE_PACE_REPLY_HOLD_NS     10000ull  /* 10 us */
#define UROCE_PACE_REPLY_ANSWERED_NS 100000ull /* 100 us */
/*
 * A thread posts, for the hold above, when its last post is this recent (from its last poll,
 * when it polled after posting, else from now): a ping-pong's round trip. A receiver that posts
 * now and then (UCX's flow-control grants on a stream, every few hundred microseconds) is a
 * receiver: its sender waits for those ACKs to complete its sends.
 */
#define UROCE_PACE_REPLY_POSTER_NS 100000ull /* 100 us */

/*
 * The progress thread's spin. It answers a peer's RDMA READ or atomic by itself (no completion,
 * so no application thread polls for it), and so it does the receiving for an application that
 * sleeps on a completion channel; waking it from a halted vCPU costs a large part of such a round
 * trip. So after a round that received packets and answered a READ or an atomic, or reported a
 * completion, it polls its sockets without sleeping for UROCE_PACE_SPIN_NS, as long as that
 * pays: a spin that ends with nothing received stops the spinning, and a sleep that a packet
 * ended within UROCE_PACE_SPIN_NS (a spin would have caught it) allows it again. A thread
 * answering now and then spins once and then sleeps. It can be turned off (the CPU it costs,
 * against the latency).
 */
#define UROCE_PACE_SPIN_NS 50000ull /* 50 us */

/*
 * The streak that takes a lease. A thread that busy-polls comes back within microseconds, again
 * and again; one that drains its CQ before sleeping on a completion channel polls a few times
 * and arms the channel, which ends a lease. Only UROCE_PACE_POLL_STREAK polls in a row, empty or
 * not, each within UROCE_PACE_POLL_GAP_NS of the end of the last poll or post, take it.
 */
#define UROCE_PACE_POLL_STREAK 8u
#define UROCE_PACE_POLL_GAP_NS 100000ull /* 100 us */

/*
 * The drain after completions. Software that drains its CQ (libfabric's verbs provider reads
 * until the CQ is empty) polls again after taking the completions a round made, before it acts
 * on them; software layered on it polls more than once there (libfabric's rxm polls its verbs
 * CQ from its own progress, and again for each completion its caller reads). A round for such
 * a poll is receive calls between a request's arrival and the reply, on every round trip. So
 * an empty poll within UROCE_PACE_DRAIN_NS of the first poll since the last round that found
 * completions runs no round: a packet that came since is taken by the first poll after that
 * time. Completions found without a round (a UD send's, made by its post) do not move that
 * time on while the thread keeps polling: a thread that polls one CQ with those and another
 * for a receive runs a round at least that often. After a pause in polling (a sleep on a
 * completion channel) the time starts again at the completions found.
 */
#define UROCE_PACE_DRAIN_NS 2000ull /* 2 us */

/*
 * A channel's lease (uroce_pace_channel_sleeps). A thread that sleeps on a completion channel
 * in ibv_get_cq_event arms the channel again within microseconds of waking (perftest -e: wake,
 * ack, arm, poll, post, sleep; once per CQ with an event); arming this soon after its last
 * sleep or wake is such a thread's. A thread that sleeps elsewhere (on the channel's fd in its
 * own poll) arms later, and its arming ends the lease as any other.
 */
#define UROCE_PACE_CHANNEL_NS 100000ull /* 100 us */

/* The progress thread sleeps at most this long, so that the counters are flushed now and then. */
#define UROCE_PACE_SLEEP_MAX_NS 1000000000ull /* 1 s */

/* ---- the rules, as pure functions -------------------------------------------------------- */

/*
 * When a lease ends, from the last poll round's time that took or renewed it (0: no lease) and
 * the last post's (0: none): UROCE_PACE_LEASE_NS after the later of the two, a post counting at
 * most UROCE_PACE_POST_RENEW_NS after the poll. Returns 0 for no lease.
 */
uint64_t uroce_pace_lease_until(uint64_t polled, uint64_t posted);

/*
 * How long the progress thread keeps off the lock without planning, from the lease's end
 * (uroce_pace_lease_until), the time, and how many application threads wait for the lock:
 * through a lease; and, once a lease has lapsed, for another UROCE_PACE_LEASE_NS while such a
 * thread waits for the lock (the mutex is not fair, and the progress thread would take it again
 * at once, round after round, while the polling thread waits). Returns ns; 0: it plans now.
 */
uint64_t uroce_pace_hold_off_ns(uint64_t lease_end, uint64_t now, unsigned waiters);

/*
 * The lease's timer: when a timer set to fire at `at` (0: none) should fire instead, from the
 * lease's end and the time; 0: leave it. A timer due before the lease ends moves to the lease's
 * end once it is less than half a lease away (a system call on about one poll round in a
 * thousand, not one per round); one already due (at <= now) is left to fire. The progress thread,
 * woken by a timer whose lease was renewed meanwhile, sets it again.
 */
uint64_t uroce_pace_timer_moves_to(uint64_t lease_end, uint64_t now, uint64_t at);

/* Is a post at now held back for its burst? From the lease's end, when the last post ended, and
 * the bytes held with this one included. */
bool uroce_pace_post_holds(uint64_t now, uint64_t lease_end, uint64_t last_post, uint64_t held);

/*
 * Are the ACKs made at now kept for the application thread? From the time of that thread's
 * last poll that took or renewed its lease (0: none, or it sleeps on a channel), of its last
 * post (0: none; counted from that poll when the poll came after it, else from now) and the
 * end of a hold already running (0: none).
 */
bool uroce_pace_reply_holds(uint64_t app_polled, uint64_t last_post, uint64_t hold_end,
			    uint64_t now);

/* The progress thread's spin. */
struct uroce_pace_spin {
	uint64_t until;	   /* spin until then (0: not spinning) */
	uint64_t slept_at; /* when the thread last went to sleep (0: it has not since its round) */
	bool ok;	   /* spinning pays (the last spin, or a sleep, says so) */
	bool caught;	   /* the spin under way has received something */
	uint64_t begun;	   /* spins begun (a spin extended by a round that answers again is one) */
};

/*
 * One progress round at now: got packets received; responds: it answered a READ or an atomic,
 * or reported a completion. Updates s; returns whether the thread polls again without sleeping.
 */
bool uroce_pace_spin_step(struct uroce_pace_spin *s, uint64_t now, int got, bool responds);

/* ---- the state of one context ------------------------------------------------------------ */

struct uroce_pace {
	bool busy_poll; /* the progress thread never sleeps */
	bool no_spin;	/* the progress thread never spins */
	/* The lease: when the leased thread's last poll and last post were (0: no lease, no
	 * post since it took it). Written by the serialised calls, read without serialisation
	 * (relaxed) by uroce_pace_lease_end. */
	_Atomic uint64_t app_polled, app_posted;
	uint64_t last_poll;   /* when the last poll (its round) ended */
	unsigned poll_streak; /* polls in a row, at most UROCE_PACE_POLL_STREAK */
	uint64_t last_post;   /* when the last post ended (0: none) */
	uint64_t held;	      /* bytes of the posts held back since the last send */
	uint64_t reply_hold;  /* ACKs wait for the application's next post until then (0: not) */
	bool answered;	      /* a post came within the last hold */
	uint64_t sleep_until; /* when the sleeping progress thread wakes at the latest (0: awake) */
	uint64_t found;	      /* when the drain's time starts (uroce_pace_poll_drains), 0: none */
	uint64_t chan_at;     /* a channel sleeper's last sleep or wake (0: none since arming) */
	struct uroce_pace_spin spin;
};

/* A context's pacing state, nothing leased, held or planned. busy_poll: the progress thread
 * never sleeps; spin: it may spin (uroce_pace_spin_step). */
void uroce_pace_init(struct uroce_pace *p, bool busy_poll, bool spin);

/* When the lease ends (0: no lease). Safe without the caller's serialisation. */
uint64_t uroce_pace_lease_end(const struct uroce_pace *p);
/* Does a lease hold at now? Safe without the caller's serialisation. */
bool uroce_pace_leased(const struct uroce_pace *p, uint64_t now);
/* How long the progress thread sleeps without taking the lock or watching the sockets
 * (uroce_pace_hold_off_ns; 0 in busy-poll mode). Safe without the caller's serialisation. */
uint64_t uroce_pace_hold_off(const struct uroce_pace *p, uint64_t now, unsigned waiters);

/* ---- an application thread's calls -------------------------------------------------------- */

/*
 * An application thread polled an empty CQ at now and is about to run a progress round. Returns
 * whether the round sends what it makes: not while the thread holds a lease, whose poll rounds
 * keep what they make for its next call (the ACKs of what it receives go out after it has seen
 * the completions), for one round at most (pending: there are packets to send before the round,
 * held back by the last one), unless those are all ACKs (acks_only) and a hold for its next post
 * runs. After a round that did not send, call uroce_pace_kept.
 */
bool uroce_pace_poll_round_sends(const struct uroce_pace *p, uint64_t now, bool pending,
				 bool acks_only);

/*
 * A round ending at now kept what it made to send; acks_only: that is ACKs alone. ACKs alone
 * start a hold for the thread's next post (uroce_pace_reply_holds), from the round's end.
 */
void uroce_pace_kept(struct uroce_pace *p, uint64_t now, bool acks_only);

/*
 * A poll of an application thread that ran a round from start to end: it counts toward the
 * streak or breaks it, and a streak long enough takes or renews the lease from end. The gap runs
 * from the end of the last poll or post to the poll's start: a round that sends a burst of posts
 * may take longer than the gap, and so may the posts between two polls (one post may send up to
 * a window).
 */
void uroce_pace_poll_ended(struct uroce_pace *p, uint64_t start, uint64_t end);

/*
 * The progress thread sleeps on a timer set to fire at `at` (0: none), and the thread holding the
 * lease polled at now: where the timer should go (uroce_pace_timer_moves_to), 0: leave it.
 * Records the new time as the progress thread's wake-up.
 */
uint64_t uroce_pace_move_timer(struct uroce_pace *p, uint64_t now, uint64_t at);

/*
 * A poll at now found completions (and ran no round): it counts toward the streak, and renews a
 * lease the thread holds. While completions keep coming, the polls find some every time; without
 * this, the lease would lapse for good under a steady stream, and a thread that never sees its
 * CQ empty would never take one.
 */
void uroce_pace_poll_found(struct uroce_pace *p, uint64_t now);

/*
 * An application thread polled an empty CQ at now: is it the drain after a poll that found
 * completions (within UROCE_PACE_DRAIN_NS of the first such poll since the last round or a pause
 * in polling), which runs no round?
 */
bool uroce_pace_poll_drains(const struct uroce_pace *p, uint64_t now);

/*
 * The CQ is still empty after the round: do the packets to send wait for the thread's next post
 * (a hold runs until after now, and they are all ACKs, acks_only)? If not, send them now.
 */
bool uroce_pace_acks_wait(const struct uroce_pace *p, uint64_t now, bool acks_only);

/*
 * Everything pending was just sent (or there was nothing): no post is held, no ACK waits.
 */
void uroce_pace_sent(struct uroce_pace *p);

/*
 * The application arms a completion channel at now to sleep: the lease and the streak end (send
 * what waits first), unless it is a channel's lease (uroce_pace_channel_leased), which goes on.
 * Returns whether a lease ended: the progress thread then sleeps on timers only and must be
 * woken to watch the sockets again.
 */
bool uroce_pace_app_sleeps(struct uroce_pace *p, uint64_t now);

/*
 * An application thread sleeps on a completion channel watching the sockets itself
 * (uroce_ctx_channel_wait), and went to sleep or woke at now: it receives, runs its rounds and
 * reports its completions without the progress thread, so it takes or renews the lease, a
 * channel's lease. Arming a channel within UROCE_PACE_CHANNEL_NS of that does not end it
 * (uroce_pace_app_sleeps): the thread is about to sleep on the sockets again. It lapses
 * UROCE_PACE_LEASE_NS after the thread's last sleep, poll or post, as any lease.
 */
void uroce_pace_channel_sleeps(struct uroce_pace *p, uint64_t now);
/* Is the lease at now a channel's (uroce_pace_channel_sleeps within UROCE_PACE_CHANNEL_NS)? */
bool uroce_pace_channel_leased(const struct uroce_pace *p, uint64_t now);

/*
 * A post of bytes at now: returns whether it is held for its burst (uroce_pace_post_holds),
 * counting its bytes as held; if not, send what there is to send, then call uroce_pace_posted
 * with the time after the send.
 */
bool uroce_pace_post(struct uroce_pace *p, uint64_t now, size_t bytes);

/*
 * The post ended at now (held: uroce_pace_post held it), which extends a lease the thread holds.
 * Returns whether the progress thread must be woken to plan again: for a held post, when it
 * sleeps beyond the lease's end (what is held goes with the poller's next call, or else when
 * the lease ends); for a post that sent, when packets are left to send (pending) or the engine's
 * next deadline comes before the time it sleeps until (ignored for a held post, with pending,
 * and unless uroce_pace_asleep: pass UINT64_MAX then).
 */
bool uroce_pace_posted(struct uroce_pace *p, uint64_t now, bool held, bool pending,
		       uint64_t deadline);

/* ---- the progress thread's calls ------------------------------------------------------------ */

/* What the progress thread does until its next round. */
struct uroce_pace_sleep {
	uint64_t ns;  /* sleep this long (0: not at all, run a round now) */
	bool sockets; /* watch the sockets meanwhile (not while an application thread holds the
		       * lease: the sockets are its own until the lease ends) */
};

/*
 * Plan the progress thread's sleep at now, from the engine's next deadline (UINT64_MAX: none),
 * whether it has packets to send (pending), whether the last round left received packets for
 * the next (rx_more) and how many application threads wait for the lock. It does not sleep in
 * busy-poll mode, with packets to send (unless ACKs wait for the application's next post, until
 * that hold ends), with packets still to receive, or while it spins (uroce_pace_spin_step), but
 * it does not spin into a lease nor while an application thread waits for the lock (the mutex is
 * not fair). Otherwise it sleeps until the earliest of the deadline, a hold's end, the lease's
 * end and UROCE_PACE_SLEEP_MAX_NS; a planned sleep ends a spin given up and, watching the
 * sockets, records when the thread went to sleep (uroce_pace_spin_step).
 */
struct uroce_pace_sleep uroce_pace_plan_sleep(struct uroce_pace *p, uint64_t now, uint64_t deadline,
					      bool pending, bool rx_more, unsigned waiters);

/* The progress thread woke and is about to run a round: it plans again before sleeping. */
void uroce_pace_woken(struct uroce_pace *p);

/*
 * Does the progress thread sleep (it planned a sleep and has not woken since)? Only then does a
 * post's answer depend on the engine's next deadline (uroce_pace_posted), which the caller may
 * leave uncomputed otherwise: the engine finds it by looking at every QP.
 */
bool uroce_pace_asleep(const struct uroce_pace *p);

/*
 * Are ACKs that the progress thread's round at now makes kept for a polling application thread
 * (uroce_pace_reply_holds, with this context's lease, last post and hold)? Ask before the round
 * receives.
 */
bool uroce_pace_reply_holds_now(const struct uroce_pace *p, uint64_t now);

/* What a progress round does with what it has to send after receiving. */
enum uroce_pace_send {
	UROCE_PACE_SEND,      /* send what there is now */
	UROCE_PACE_KEEP_ACKS, /* keep it: ACKs alone that wait (call uroce_pace_kept) */
	UROCE_PACE_NOTHING,   /* nothing to send: leave what is held as it is */
};

/*
 * From hold (uroce_pace_reply_holds_now before the round received), and what there is to send
 * after it received (pending; acks_only: all of it is ACKs): ACKs alone wait when held; anything
 * else goes now; with a hold and nothing to send, nothing happens.
 */
enum uroce_pace_send uroce_pace_round_sends(bool hold, bool pending, bool acks_only);

/*
 * The progress thread's round at now ended: got packets received, answered: it answered a READ
 * or an atomic, or reported a completion. Returns whether it polls again without sleeping
 * (uroce_pace_spin_step; never when spinning is off).
 */
bool uroce_pace_round_ended(struct uroce_pace *p, uint64_t now, int got, bool answered);

#endif
