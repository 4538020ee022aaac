/* SPDX-License-Identifier: MIT */
/*
 * The pacing rules (pace/pace.h), table by table: first each rule as a pure function (a row: its
 * inputs and what it decides), then scenarios, each a script of events with their times and the
 * decision expected after each (a lease taken by a streak of polls and lost to a gap, posts held
 * for their burst, ACKs held for the next post, the progress thread's hold-off, sleep and spin,
 * a thread asleep on a completion channel).
 * Virtual times only: nothing here reads a clock or waits.
 */
#include <stdbool.h>
#include <stdint.h>

#include "../check.h"
#include "pace/pace.h"

#define T     1000000000ull /* the scenarios' start */
#define US    1000ull
#define MS    1000000ull
#define L     UROCE_PACE_LEASE_NS
#define R     UROCE_PACE_POST_RENEW_NS
#define B     UROCE_PACE_POST_BURST_NS
#define G     UROCE_PACE_POST_BURST_BYTES
#define H     UROCE_PACE_REPLY_HOLD_NS
#define A     UROCE_PACE_REPLY_ANSWERED_NS
#define P     UROCE_PACE_REPLY_POSTER_NS
#define S     UROCE_PACE_SPIN_NS
#define C     UROCE_PACE_CHANNEL_NS
#define NEVER UINT64_MAX

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

/* ---- the rules as pure functions ------------------------------------------------------------ */

/* The lease lasts L after the poll, or after a post within R of it. */
static void lease_until(void)
{
	static const struct {
		uint64_t polled, posted, end;
		const char *why;
	} rows[] = {
		{0, T, 0, "never polled: no lease"},
		{T, 0, T + L, "no post"},
		{T, T - 5, T + L, "a post before the poll"},
		{T, T + 500, T + 500 + L, "a post extends it"},
		{T, T + R, T + R + L, "a post R after the poll still does"},
		{T, T + 50 * R, T + R + L, "posting alone does not keep it"},
	};

	for (size_t i = 0; i < N_OF(rows); i++)
		CHECKF(uroce_pace_lease_until(rows[i].polled, rows[i].posted) == rows[i].end,
		       "lease_until row %zu: %s", i, rows[i].why);
}

/* The progress thread keeps off the lock through a lease, and for a lease's time after it
 * lapsed while a polling thread waits for the lock (not when no thread polls, nor none waits). */
static void hold_off_ns(void)
{
	static const struct {
		uint64_t lease_end, now;
		unsigned waiters;
		uint64_t ns;
		const char *why;
	} rows[] = {
		{T + 500, T, 0, 500, "leased"},
		{T + 500, T, 1, 500, "leased, a thread waits"},
		{T - 500, T, 0, 0, "lapsed: it plans"},
		{T - 500, T, 1, L, "lapsed, the poller waits: it goes first"},
		{T - 500, T, 3, L, "lapsed, three wait"},
		{0, T, 1, 0, "no poller: a waiter does not hold it off"},
		{0, T, 0, 0, "nothing"},
	};

	for (size_t i = 0; i < N_OF(rows); i++)
		CHECKF(uroce_pace_hold_off_ns(rows[i].lease_end, rows[i].now, rows[i].waiters) ==
			       rows[i].ns,
		       "hold_off_ns row %zu: %s", i, rows[i].why);
}

/* The lease's timer moves to the lease's end when it would fire before it and within half a
 * lease; a timer due, unset, far off or after the lease stays. */
static void timer_moves_to(void)
{
	static const struct {
		uint64_t lease_end, now, at, to;
		const char *why;
	} rows[] = {
		{T + L, T, T + L / 2 - 1, T + L, "half a lease away, the lease renewed: it moves"},
		{T + L, T, T + L / 2, 0, "half a lease or more away: not yet (no call per round)"},
		{T + L, T, T + 10 * US, T + L, "about to fire for a lease since renewed"},
		{T + L, T, T, 0, "due: it fires, the thread sets it again"},
		{T + L, T, T - US, 0, "past"},
		{T + L, T, 0, 0, "not set"},
		{T + L, T, T + L, 0, "at the lease's end already"},
		{T + L / 4, T, T + L / 2 - US, 0, "set beyond the lease: it stays"},
		{0, T, T + US, 0, "no lease: the thread's own sleep"},
		{T - US, T, T + US, 0, "the lease lapsed: the timer fires"},
	};

	for (size_t i = 0; i < N_OF(rows); i++)
		CHECKF(uroce_pace_timer_moves_to(rows[i].lease_end, rows[i].now, rows[i].at) ==
			       rows[i].to,
		       "timer_moves_to row %zu: %s", i, rows[i].why);
}

/* A post is held for its burst: a lease, soon after the last post, less than a GSO send's worth
 * with the others. */
static void post_holds(void)
{
	static const struct {
		uint64_t now, lease_end, last_post, held;
		bool holds;
		const char *why;
	} rows[] = {
		{T, T + 10, T - 100, 4096, true, "leased, in a burst"},
		{T, 0, T - 100, 4096, false, "no lease"},
		{T, T - 10, T - 100, 4096, false, "the lease lapsed"},
		{T, T + 10, T - B, 4096, false, "not in a burst"},
		{T, T + 10, T - 100, G, false, "a GSO send's worth"},
		{T, T + 10, T - B + 1, G - 1, true, "just within both"},
	};

	for (size_t i = 0; i < N_OF(rows); i++)
		CHECKF(uroce_pace_post_holds(rows[i].now, rows[i].lease_end, rows[i].last_post,
					     rows[i].held) == rows[i].holds,
		       "post_holds row %zu: %s", i, rows[i].why);
}

/* ACKs wait for the application when it polls (took a lease, sleeps on no channel) and posts,
 * within the hold once one runs. */
static void reply_holds(void)
{
	static const struct {
		uint64_t app_polled, last_post, hold_end, now;
		bool holds;
		const char *why;
	} rows[] = {
		{T - 500, T - 900, 0, T, true, "a poller that posts: held"},
		{0, T - 900, 0, T, false, "none polls: sent at once"},
		{T - 500, 0, 0, T, false, "it never posted"},
		{T - 500, T - P - 500, 0, T, false, "nor lately: P before its last poll"},
		{T - 500, T - P - 499, 0, T, true, "its last post just within P of its last poll"},
		{T - 500, T - 400, 0, T + P - 401, true, "a post after its last poll, within P"},
		{T - 500, T - 400, 0, T + P - 400, false, "... and P after it"},
		{T - 5 * MS, T - 5 * MS - 20 * US, 0, T, true,
		 "it stopped polling after its post's completion (it watches memory)"},
		{T - 5 * MS, T - 5 * MS - 300 * US, 0, T, false, "... but a grant 300 us before that"},
		{T - 500, T - 300 * US, 0, T, false, "a receiver's grant 300 us ago"},
		{T - 500, T - 900, T + H - 1, T, true, "within a hold"},
		{T - 500, T - 900, T, T, false, "the hold is over"},
		{0, T - 900, T + H, T, false, "a hold, but none polls"},
	};

	for (size_t i = 0; i < N_OF(rows); i++)
		CHECKF(uroce_pace_reply_holds(rows[i].app_polled, rows[i].last_post,
					      rows[i].hold_end, rows[i].now) == rows[i].holds,
		       "reply_holds row %zu: %s", i, rows[i].why);
}

/*
 * The progress thread's spin, one round a row (slept_at: a sleep that began then, before the
 * round; 0: none): when it begins, goes on and ends, and when it stops and starts paying again.
 */
static void spin_step(void)
{
	static const struct {
		uint64_t slept_at, now;
		int got;
		bool responds;
		bool spins;
		uint64_t until;
		bool ok;
		uint64_t begun;
		const char *why;
	} rows[] = {
		{0, T, 1, true, false, 0, false, 0, "nothing says it pays yet"},
		{T + 100, T + 100 + S - 1, 1, false, false, 0, true, 0,
		 "a packet ended a sleep a spin would have caught: it pays"},
		{0, T + 2 * S, 0, true, false, 0, true, 0, "nothing received: no answer"},
		{0, T + 3 * S, 2, true, true, T + 4 * S, true, 1, "a READ answered: it spins"},
		{0, T + 3 * S + 10, 0, false, true, T + 4 * S, true, 1, "spinning, nothing yet"},
		{0, T + 3 * S + 20, 1, true, true, T + 4 * S + 20, true, 1,
		 "another READ: the same spin goes on"},
		{0, T + 3 * S + 30, 1, false, true, T + 4 * S + 20, true, 1, "an ACK caught"},
		{0, T + 4 * S + 20, 0, false, false, 0, true, 1, "over; it paid"},
		{0, T + 5 * S, 1, true, true, T + 6 * S, true, 2, "a second spin"},
		{0, T + 6 * S, 0, false, false, 0, false, 2, "a spin for nothing: no more"},
		{0, T + 7 * S, 1, true, false, 0, false, 2, "a READ, but spinning does not pay"},
		{T + 8 * S, T + 9 * S, 1, true, false, 0, false, 2,
		 "a sleep a spin would not have caught"},
		{T + 10 * S, T + 10 * S + 5, 1, true, true, T + 11 * S + 5, true, 3,
		 "one it would have: it spins again"},
	};
	struct uroce_pace_spin s = {0};

	for (size_t i = 0; i < N_OF(rows); i++) {
		if (rows[i].slept_at)
			s.slept_at = rows[i].slept_at;
		bool spins = uroce_pace_spin_step(&s, rows[i].now, rows[i].got, rows[i].responds);

		CHECKF(spins == rows[i].spins && s.until == rows[i].until && s.ok == rows[i].ok &&
			       s.begun == rows[i].begun && !s.slept_at,
		       "spin_step row %zu: %s (spins %d until %llu ok %d begun %llu)", i,
		       rows[i].why, spins, (unsigned long long)s.until, s.ok,
		       (unsigned long long)s.begun);
	}
}

/* ---- scenarios: events with their times, and the decisions ------------------------------------
 */

enum op {
	OP_POLL,       /* an application poll round from t to t2: want the lease's end after */
	OP_FOUND,      /* a poll at t found completions: want the lease's end after */
	OP_POST,       /* a post of n bytes at t: want whether it is held */
	OP_POSTED,     /* the post ended at t (a: held, b: pending, n: deadline): want a kick */
	OP_ARM,	       /* the application arms a channel at t: want whether a lease ended */
	OP_CHANNEL,    /* a thread sleeps on a channel, or wakes, at t: want the lease's end */
	OP_SENT,       /* everything pending was sent: want the hold's end after (0) */
	OP_POLL_SENDS, /* a poll round at t (a: pending, b: acks only): want whether it sends */
	OP_KEPT, /* a round ending at t kept what it made (a: acks only): want the hold's end */
	OP_ACKS_WAIT,	/* the CQ still empty at t (a: acks only): want whether they wait */
	OP_HOLD_OFF,	/* the progress thread at t, n threads waiting for the lock: want ns */
	OP_PLAN,	/* it plans at t (n: deadline, a: pending, b: rx_more): want ns, sockets */
	OP_PLAN_WAIT,	/* the same with a thread waiting for the lock */
	OP_WOKEN,	/* it woke: want 0 */
	OP_ASLEEP,	/* want whether it sleeps (a post must then ask the engine's deadline) */
	OP_ROUND_SENDS, /* its round at t (a: pending, b: acks only after receiving): want the
			 * enum uroce_pace_send */
	OP_ROUND_ENDED, /* its round at t ended, n received, a: answered: want whether it spins */
	OP_DRAINS,	/* an empty poll at t: want whether it runs no round (the drain) */
};

struct step {
	enum op op;
	uint64_t t, t2, n;
	bool a, b;
	uint64_t want;
	int sockets; /* OP_PLAN: want the sockets watched (1) or not (0) */
};

#define POLL(t, lease_end)                                                  \
	{                                                                   \
		OP_POLL, (t), (t) + 1 * US, 0, false, false, (lease_end), 0 \
	}
#define FOUND(t, lease_end)                                       \
	{                                                         \
		OP_FOUND, (t), 0, 0, false, false, (lease_end), 0 \
	}
#define POST(t, bytes, held)                                      \
	{                                                         \
		OP_POST, (t), 0, (bytes), false, false, (held), 0 \
	}
#define POSTED(t, held, pend, dl, kick)                            \
	{                                                          \
		OP_POSTED, (t), 0, (dl), (held), (pend), (kick), 0 \
	}
#define ARM(leased)                                        \
	{                                                  \
		OP_ARM, 0, 0, 0, false, false, (leased), 0 \
	}
#define ARM_AT(t, ended)                                    \
	{                                                   \
		OP_ARM, (t), 0, 0, false, false, (ended), 0 \
	}
#define CHANNEL(t, lease_end)                                       \
	{                                                           \
		OP_CHANNEL, (t), 0, 0, false, false, (lease_end), 0 \
	}
#define SENT()                                       \
	{                                            \
		OP_SENT, 0, 0, 0, false, false, 0, 0 \
	}
#define POLL_SENDS(t, pend, acks, sends)                             \
	{                                                            \
		OP_POLL_SENDS, (t), 0, 0, (pend), (acks), (sends), 0 \
	}
#define KEPT(t, acks, hold_end)                                  \
	{                                                        \
		OP_KEPT, (t), 0, 0, (acks), false, (hold_end), 0 \
	}
#define ACKS_WAIT(t, acks, waits)                                  \
	{                                                          \
		OP_ACKS_WAIT, (t), 0, 0, (acks), false, (waits), 0 \
	}
#define HOLD_OFF(t, waiters, ns)                                      \
	{                                                             \
		OP_HOLD_OFF, (t), 0, (waiters), false, false, (ns), 0 \
	}
#define PLAN(t, dl, pend, rx_more, ns, sockets)                           \
	{                                                                 \
		OP_PLAN, (t), 0, (dl), (pend), (rx_more), (ns), (sockets) \
	}
#define PLAN_WAIT(t, dl, ns, sockets)                                     \
	{                                                                 \
		OP_PLAN_WAIT, (t), 0, (dl), false, false, (ns), (sockets) \
	}
#define WOKEN()                                       \
	{                                             \
		OP_WOKEN, 0, 0, 0, false, false, 0, 0 \
	}
#define ASLEEP(yes)                                       \
	{                                                 \
		OP_ASLEEP, 0, 0, 0, false, false, (yes), 0 \
	}
#define ROUND_SENDS(t, pend, acks, what)                             \
	{                                                            \
		OP_ROUND_SENDS, (t), 0, 0, (pend), (acks), (what), 0 \
	}
#define ROUND_ENDED(t, got, answered, spins)                                 \
	{                                                                    \
		OP_ROUND_ENDED, (t), 0, (got), (answered), false, (spins), 0 \
	}

#define DRAINS(t, yes)                                       \
	{                                                    \
		OP_DRAINS, (t), 0, 0, false, false, (yes), 0 \
	}

/* A streak of 9 poll rounds 10 us apart from t0 (the first starts it, 8 more make it): the
 * lease, from the last round's end. */
#define TAKE_LEASE(t0)                                                                            \
	POLL((t0), 0), POLL((t0) + 10 * US, 0), POLL((t0) + 20 * US, 0), POLL((t0) + 30 * US, 0), \
		POLL((t0) + 40 * US, 0), POLL((t0) + 50 * US, 0), POLL((t0) + 60 * US, 0),        \
		POLL((t0) + 70 * US, 0), POLL((t0) + 80 * US, (t0) + 81 * US + L)

struct scenario {
	const char *name;
	bool busy_poll, spin;
	const struct step *steps;
	size_t n;
};

static const struct step streak[] = {
	TAKE_LEASE(T),
	FOUND(T + 90 * US, T + 90 * US + L),	/* a poll that finds completions renews it */
	HOLD_OFF(T + 100 * US, 0, L - 10 * US), /* the progress thread sleeps through it */
	HOLD_OFF(T + 90 * US + L, 0, 0),	/* lapsed: it plans */
	HOLD_OFF(T + 90 * US + L, 1, L),	/* lapsed, but the poller waits for the lock */
	FOUND(T + 110 * US + L, T + 110 * US + 2 * L), /* the thread polls again: it takes it back */
	ARM(true),				       /* arming a channel ends it */
	HOLD_OFF(T + 120 * US + L, 1, 0),
	FOUND(T + 130 * US + L, 0), /* and the streak starts again */
	ARM(false),
};

static const struct step gap[] = {
	POLL(T, 0),
	POLL(T + 10 * US, 0),
	POLL(T + 20 * US, 0),
	POLL(T + 30 * US, 0),
	POLL(T + 40 * US, 0),
	POLL(T + 141 * US, 0), /* 100 us after the last round's end: the streak starts again */
	POLL(T + 150 * US, 0),
	POLL(T + 160 * US, 0),
	POLL(T + 170 * US, 0),
	POLL(T + 180 * US, 0),
	POLL(T + 190 * US, 0),
	POLL(T + 200 * US, 0),
	POLL(T + 210 * US, 0),
	POLL(T + 220 * US, T + 221 * US + L), /* the eighth after the new start */
	POST(T + 222 * US, 8, false),
	POSTED(T + 223 * US, false, false, NEVER, false),
	POLL(T + 320 * US, T + 321 * US + L), /* the gap runs from the post's end */
	POLL(T + 422 * US, T + 321 * US + L), /* a gap breaks the streak, not the lease */
	HOLD_OFF(T + 422 * US, 0, L - 101 * US),
};

static const struct step burst[] = {
	TAKE_LEASE(T),
	POST(T + 82 * US, 4096, false), /* the first post goes at once */
	POSTED(T + 83 * US, false, false, NEVER, false),
	POST(T + 83 * US + 500, 4096, true), /* within 1 us of the last: held */
	POSTED(T + 83 * US + 500, true, false, NEVER, false),
	POST(T + 83 * US + 900, 60000, true),
	POSTED(T + 83 * US + 900, true, false, NEVER, false),
	POST(T + 84 * US, 2000, false), /* 64 KiB with the held ones: they go together */
	SENT(),
	POSTED(T + 84 * US + 500, false, false, NEVER, false),
	POST(T + 85 * US, 4096, true),
	POSTED(T + 85 * US, true, false, NEVER, false),
	POST(T + 86 * US + 1, 4096, false), /* more than 1 us after the last: at once */
	SENT(),
	POSTED(T + 87 * US, false, false, NEVER, false),
	ARM(true),
	POST(T + 87 * US + 100, 8, false), /* no lease: at once */
	POSTED(T + 88 * US, false, false, NEVER, false),
};

static const struct step kicks[] = {
	PLAN(T, T + 500 * MS, false, false, 500 * MS, 1), /* asleep until a timer, on the sockets */
	TAKE_LEASE(T + 1 * MS),
	POST(T + 1 * MS + 82 * US, 8, false),
	POSTED(T + 1 * MS + 83 * US, false, false, NEVER, false), /* sent, nothing due earlier */
	POST(T + 1 * MS + 83 * US + 100, 8, true),
	POSTED(T + 1 * MS + 83 * US + 100, true, false, NEVER, true), /* held, and it sleeps past
									 the lease: it must plan */
	POST(T + 1 * MS + 90 * US, 8, false),
	POSTED(T + 1 * MS + 91 * US, false, true, NEVER, true), /* packets left to send */
	POST(T + 1 * MS + 95 * US, 8, false),
	POSTED(T + 1 * MS + 96 * US, false, false, T + 2 * MS, true), /* a timer before it wakes */
	WOKEN(),
	POST(T + 1 * MS + 99 * US, 8, false),
	POSTED(T + 1 * MS + 100 * US, false, false, T + 2 * MS, false), /* awake: it plans anyway */
};

static const struct step sleeps[] = {
	ASLEEP(false),
	PLAN(T, NEVER, false, false, UROCE_PACE_SLEEP_MAX_NS, 1), /* idle: the counters' period */
	ASLEEP(true),
	WOKEN(),
	ASLEEP(false),
	PLAN(T, T + 5 * MS, false, false, 5 * MS, 1),		  /* until the next timer */
	PLAN(T, T - 1, false, false, 0, 1),			  /* a timer due: a round now */
	PLAN(T, NEVER, true, false, 0, 1),			  /* packets to send */
	PLAN(T, NEVER, false, true, 0, 1),			  /* packets left to receive */
	TAKE_LEASE(T),
	PLAN(T + 90 * US, NEVER, false, false, L - 9 * US, 0), /* leased: timers only, to its end */
	PLAN(T + 90 * US, T + 100 * US, false, false, 10 * US, 0), /* or an earlier timer */
	PLAN(T + 81 * US + L, NEVER, false, false, UROCE_PACE_SLEEP_MAX_NS, 1), /* lapsed */
};

static const struct step busy[] = {
	PLAN(T, NEVER, false, false, 0, 1), /* busy-poll mode: never asleep */
	TAKE_LEASE(T),
	HOLD_OFF(T + 90 * US, 0, 0), /* nor kept off the lock by a lease */
	PLAN(T + 90 * US, NEVER, false, false, 0, 1),
};

static const struct step acks[] = {
	TAKE_LEASE(T),
	KEPT(T + 81 * US, true, 0), /* it has not posted: its ACKs are not held */
	POST(T + 82 * US, 8, false),
	POSTED(T + 82 * US + 500, false, false, NEVER, false),
	POLL_SENDS(T + 90 * US, false, false, false), /* leased: the round keeps what it makes */
	KEPT(T + 91 * US, true, T + 91 * US + H),     /* ACKs alone: they wait for the next post */
	KEPT(T + 92 * US, true, T + 91 * US + H),     /* a hold runs: it is not moved */
	ACKS_WAIT(T + 95 * US, true, true),
	ACKS_WAIT(T + 95 * US, false, false), /* a request among them: all go */
	POLL_SENDS(T + 95 * US, true, true, false),
	POLL_SENDS(T + 95 * US, true, false, true), /* held by the last round: one round at most */
	PLAN(T + 92 * US, NEVER, true, false, 9 * US, 0), /* the progress thread: until the hold */
	ROUND_SENDS(T + 95 * US, true, true, UROCE_PACE_KEEP_ACKS),
	ROUND_SENDS(T + 95 * US, true, false, UROCE_PACE_SEND),
	ROUND_SENDS(T + 95 * US, false, false, UROCE_PACE_NOTHING),
	ACKS_WAIT(T + 101 * US, true, false), /* the hold is over */
	POLL_SENDS(T + 101 * US, true, true, true),
	PLAN(T + 101 * US, NEVER, true, false, 0, 1),
	ROUND_SENDS(T + 102 * US, true, true, UROCE_PACE_SEND),
	SENT(),
	ACKS_WAIT(T + 103 * US, true, false),
	ARM(true),
	ROUND_SENDS(T + 103 * US, true, true, UROCE_PACE_SEND), /* it sleeps on a channel */
	KEPT(T + 104 * US, true, 0),
};

/* The hold is the long one for a thread whose last hold ended in its post (a ping-pong), the
 * short one again after a hold that ran out (a receiver that posts now and then). */
#define T1 (T + 100 * US)
static const struct step answers[] = {
	TAKE_LEASE(T),
	POST(T1, 8, false),
	POSTED(T1 + 1 * US, false, false, NEVER, false),
	KEPT(T1 + 10 * US, true, T1 + 10 * US + H), /* no hold answered yet: the short one */
	POST(T1 + 14 * US, 8, false),		    /* within it: the post carries the ACKs */
	SENT(),
	POSTED(T1 + 15 * US, false, false, NEVER, false),
	KEPT(T1 + 30 * US, true, T1 + 30 * US + A), /* it answered: the long one */
	ACKS_WAIT(T1 + 30 * US + H, true, true),    /* past the short one, still held */
	ACKS_WAIT(T1 + 30 * US + A, true, false),
	SENT(),				  /* ran out: its next poll sent them */
	POST(T1 + 200 * US, 8, false), /* no hold runs: it answers none */
	SENT(),
	POSTED(T1 + 201 * US, false, false, NEVER, false),
	KEPT(T1 + 210 * US, true, T1 + 210 * US + H), /* the short one again */
};
#undef T1

static const struct step spins[] = {
	PLAN(T, NEVER, false, false, UROCE_PACE_SLEEP_MAX_NS, 1),
	WOKEN(),
	ROUND_ENDED(T + 10 * US, 1, true, true), /* a READ that a spin would have caught: spin */
	PLAN(T + 11 * US, NEVER, false, false, 0, 1),
	ROUND_ENDED(T + 20 * US, 0, false, true),
	PLAN_WAIT(T + 21 * US, NEVER, UROCE_PACE_SLEEP_MAX_NS, 1), /* a thread waits for the lock:
								      it gives the spin up */
	WOKEN(),
	ROUND_ENDED(T + 30 * US, 0, false, false),
	PLAN(T + 31 * US, NEVER, false, false, UROCE_PACE_SLEEP_MAX_NS, 1),
};

static const struct step no_spin[] = {
	PLAN(T, NEVER, false, false, UROCE_PACE_SLEEP_MAX_NS, 1),
	WOKEN(),
	ROUND_ENDED(T + 10 * US, 1, true, false), /* spinning is off */
	PLAN(T + 11 * US, NEVER, false, false, UROCE_PACE_SLEEP_MAX_NS, 1),
};

/* Every empty poll within UROCE_PACE_DRAIN_NS of the first poll since the last round that found
 * completions runs no round; one that comes later does. Completions found again without a round
 * (a UD send's, made by its post) leave that time as it is, so that a thread that also waits for
 * a receive runs a round soon; after a pause in polling it starts again. */
static const struct step drain[] = {
	FOUND(T, 0),		  /* completions */
	DRAINS(T + 1 * US, true), /* the drain right after them */
	DRAINS(T + 1 * US, true), /* the caller's own poll as well (rxm over verbs) */
	DRAINS(T + UROCE_PACE_DRAIN_NS - 1, true),	     /* still within the time */
	DRAINS(T + UROCE_PACE_DRAIN_NS, false),		     /* the time is up: a round */
	POLL(T + UROCE_PACE_DRAIN_NS, 0),		     /* that round */
	FOUND(T + 10 * US, 0),				     /* completions after it */
	FOUND(T + 11 * US, 0),				     /* again, without a round */
	DRAINS(T + 10 * US + UROCE_PACE_DRAIN_NS - 1, true), /* the time is the first's */
	DRAINS(T + 10 * US + UROCE_PACE_DRAIN_NS, false),    /* so this one runs a round */
	POLL(T + 10 * US + UROCE_PACE_DRAIN_NS, 0),	     /* that round */
	FOUND(T + 20 * US, 0),				     /* completions after it */
	DRAINS(T + 20 * US + UROCE_PACE_DRAIN_NS, false),    /* too late to be the drain */
	DRAINS(T + 30 * US, false),			     /* no completions since */
	FOUND(T + 40 * US, 0),	   /* completions after a pause in polling, no round between */
	DRAINS(T + 41 * US, true), /* the time starts again at them */
};

/* A thread that sleeps on a completion channel watching the sockets itself holds a channel's
 * lease: the progress thread keeps to the timers, and arming the channel right after a wake
 * (the thread is about to sleep again) does not end it; arming later does. */
static const struct step channel[] = {
	CHANNEL(T, T + L),				      /* asleep on the channel */
	PLAN(T + 1 * US, NEVER, false, false, L - 1 * US, 0), /* timers only, to the lease's end */
	CHANNEL(T + 20 * US, T + 20 * US + L),		      /* it woke: renewed */
	ARM_AT(T + 25 * US, false),			      /* at once: it goes on, no kick */
	PLAN(T + 26 * US, NEVER, false, false, L - 6 * US, 0),
	ARM_AT(T + 20 * US + C, true), /* armed long after its wake: the lease ends */
	PLAN(T + 21 * US + C, NEVER, false, false, UROCE_PACE_SLEEP_MAX_NS, 1),
	CHANNEL(T + 200 * US, T + 200 * US + L),
	ARM_AT(T + 200 * US + C - 1, false),
	ARM_AT(T + 200 * US + C - 1, false), /* a second CQ's event: still on */
};

static const struct scenario scenarios[] = {
	{"a streak of polls takes the lease", false, true, streak, N_OF(streak)},
	{"a gap starts the streak again", false, true, gap, N_OF(gap)},
	{"posts in a burst are held", false, true, burst, N_OF(burst)},
	{"a post wakes the progress thread when it must plan", false, true, kicks, N_OF(kicks)},
	{"the progress thread's sleep", false, true, sleeps, N_OF(sleeps)},
	{"busy-poll mode", true, true, busy, N_OF(busy)},
	{"ACKs wait for the next post", false, true, acks, N_OF(acks)},
	{"a thread that answers its holds gets the long one", false, true, answers, N_OF(answers)},
	{"the progress thread spins after answering", false, true, spins, N_OF(spins)},
	{"the spin turned off", false, false, no_spin, N_OF(no_spin)},
	{"the drain after completions runs no round", false, true, drain, N_OF(drain)},
	{"a thread asleep on a channel holds the lease", false, true, channel, N_OF(channel)},
};

/* Run one step on p; returns the decision (and *sockets for a plan). */
static uint64_t run_step(struct uroce_pace *p, const struct step *s, int *sockets)
{
	struct uroce_pace_sleep sl;

	*sockets = 0;
	switch (s->op) {
	case OP_POLL:
		uroce_pace_poll_ended(p, s->t, s->t2);
		return uroce_pace_lease_end(p);
	case OP_FOUND:
		uroce_pace_poll_found(p, s->t);
		return uroce_pace_lease_end(p);
	case OP_POST:
		return uroce_pace_post(p, s->t, (size_t)s->n);
	case OP_POSTED:
		return uroce_pace_posted(p, s->t, s->a, s->b, s->n);
	case OP_ARM:
		return uroce_pace_app_sleeps(p, s->t);
	case OP_CHANNEL:
		uroce_pace_channel_sleeps(p, s->t);
		return uroce_pace_lease_end(p);
	case OP_SENT:
		uroce_pace_sent(p);
		return p->reply_hold;
	case OP_POLL_SENDS:
		return uroce_pace_poll_round_sends(p, s->t, s->a, s->b);
	case OP_KEPT:
		uroce_pace_kept(p, s->t, s->a);
		return p->reply_hold;
	case OP_ACKS_WAIT:
		return uroce_pace_acks_wait(p, s->t, s->a);
	case OP_HOLD_OFF:
		return uroce_pace_hold_off(p, s->t, (unsigned)s->n);
	case OP_PLAN:
	case OP_PLAN_WAIT:
		sl = uroce_pace_plan_sleep(p, s->t, s->n, s->a, s->b, s->op == OP_PLAN_WAIT);
		*sockets = sl.sockets;
		return sl.ns;
	case OP_WOKEN:
		uroce_pace_woken(p);
		return 0;
	case OP_ASLEEP:
		return uroce_pace_asleep(p);
	case OP_ROUND_SENDS:
		return uroce_pace_round_sends(uroce_pace_reply_holds_now(p, s->t), s->a, s->b);
	case OP_ROUND_ENDED:
		return uroce_pace_round_ended(p, s->t, (int)s->n, s->a);
	case OP_DRAINS:
		return uroce_pace_poll_drains(p, s->t);
	}
	return 0;
}

static void run_scenarios(void)
{
	for (size_t k = 0; k < N_OF(scenarios); k++) {
		const struct scenario *sc = &scenarios[k];
		struct uroce_pace p;

		uroce_pace_init(&p, sc->busy_poll, sc->spin);
		for (size_t i = 0; i < sc->n; i++) {
			const struct step *s = &sc->steps[i];
			int sockets;
			uint64_t got = run_step(&p, s, &sockets);

			CHECKF(got == s->want, "%s, step %zu: got %llu, want %llu", sc->name, i,
			       (unsigned long long)got, (unsigned long long)s->want);
			if (s->op == OP_PLAN || s->op == OP_PLAN_WAIT)
				CHECKF(sockets == s->sockets, "%s, step %zu: sockets %d, want %d",
				       sc->name, i, sockets, s->sockets);
		}
	}
}

int main(void)
{
	lease_until();
	hold_off_ns();
	timer_moves_to();
	post_holds();
	reply_holds();
	spin_step();
	run_scenarios();
	return check_exit("test_pace");
}
