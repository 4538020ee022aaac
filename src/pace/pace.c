/* SPDX-License-Identifier: MIT */
/* Pacing: the latency policy of an opened device, sans-I/O (see pace.h). */
#include "pace/pace.h"

uint64_t uroce_pace_lease_until(uint64_t polled, uint64_t posted)
{
	if (!polled)
		return 0;
	if (posted > polled + UROCE_PACE_POST_RENEW_NS)
		posted = polled + UROCE_PACE_POST_RENEW_NS;
	return (posted > polled ? posted : polled) + UROCE_PACE_LEASE_NS;
}

uint64_t uroce_pace_hold_off_ns(uint64_t lease_end, uint64_t now, unsigned waiters)
{
	if (lease_end > now)
		return lease_end - now;
	return lease_end && waiters ? UROCE_PACE_LEASE_NS : 0;
}

uint64_t uroce_pace_timer_moves_to(uint64_t lease_end, uint64_t now, uint64_t at)
{
	if (!at || at <= now || lease_end <= at || at - now >= UROCE_PACE_LEASE_NS / 2)
		return 0;
	return lease_end;
}

bool uroce_pace_post_holds(uint64_t now, uint64_t lease_end, uint64_t last_post, uint64_t held)
{
	return now < lease_end && now - last_post < UROCE_PACE_POST_BURST_NS &&
	       held < UROCE_PACE_POST_BURST_BYTES;
}

bool uroce_pace_reply_holds(uint64_t app_polled, uint64_t last_post, uint64_t hold_end,
			    uint64_t now)
{
	/* The post is measured from the thread's last poll when that came after it: a thread that
	 * stopped polling after its post's completion (to watch memory) still replies. */
	uint64_t ref = app_polled > last_post ? app_polled : now;

	return app_polled && last_post && ref - last_post < UROCE_PACE_REPLY_POSTER_NS &&
	       (!hold_end || now < hold_end);
}

bool uroce_pace_spin_step(struct uroce_pace_spin *s, uint64_t now, int got, bool responds)
{
	if (got > 0 && s->slept_at && now - s->slept_at < UROCE_PACE_SPIN_NS)
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
		s->until = now + UROCE_PACE_SPIN_NS;
		s->caught = false;
	}
	return s->until != 0;
}

void uroce_pace_init(struct uroce_pace *p, bool busy_poll, bool spin)
{
	*p = (struct uroce_pace){.busy_poll = busy_poll, .no_spin = !spin};
	atomic_init(&p->app_polled, 0);
	atomic_init(&p->app_posted, 0);
}

/* The leased thread's last poll: relaxed, as every access to the lease (the progress thread
 * reads it without the lock; a stale value costs one look more or less, never a lost packet). */
static uint64_t app_polled(const struct uroce_pace *p)
{
	return atomic_load_explicit(&p->app_polled, memory_order_relaxed);
}

uint64_t uroce_pace_lease_end(const struct uroce_pace *p)
{
	return uroce_pace_lease_until(app_polled(p),
				      atomic_load_explicit(&p->app_posted, memory_order_relaxed));
}

bool uroce_pace_leased(const struct uroce_pace *p, uint64_t now)
{
	return uroce_pace_lease_end(p) > now;
}

uint64_t uroce_pace_hold_off(const struct uroce_pace *p, uint64_t now, unsigned waiters)
{
	return p->busy_poll ? 0 : uroce_pace_hold_off_ns(uroce_pace_lease_end(p), now, waiters);
}

bool uroce_pace_acks_wait(const struct uroce_pace *p, uint64_t now, bool acks_only)
{
	return p->reply_hold && now < p->reply_hold && acks_only;
}

bool uroce_pace_poll_round_sends(const struct uroce_pace *p, uint64_t now, bool pending,
				 bool acks_only)
{
	/* What is still pending now was held back by the last round, since every other path sends
	 * what it makes: hold it one round at most, but ACKs alone until their hold ends. */
	return !(now < uroce_pace_lease_end(p) &&
		 (!pending || uroce_pace_acks_wait(p, now, acks_only)));
}

bool uroce_pace_reply_holds_now(const struct uroce_pace *p, uint64_t now)
{
	return uroce_pace_reply_holds(app_polled(p), p->last_post, p->reply_hold, now);
}

void uroce_pace_kept(struct uroce_pace *p, uint64_t now, bool acks_only)
{
	/* The thread's next post can come no sooner than the round's end. */
	if (!p->reply_hold && uroce_pace_reply_holds_now(p, now) && acks_only) {
		p->reply_hold = now + (p->answered ? UROCE_PACE_REPLY_ANSWERED_NS
						   : UROCE_PACE_REPLY_HOLD_NS);
		p->answered = false;
	}
}

/* A poll from start to end: the streak goes on or starts again. Returns whether it is long
 * enough for the lease. */
static bool streak_step(struct uroce_pace *p, uint64_t start, uint64_t end)
{
	uint64_t last = p->last_post > p->last_poll ? p->last_post : p->last_poll;

	if (start - last < UROCE_PACE_POLL_GAP_NS) {
		if (p->poll_streak < UROCE_PACE_POLL_STREAK)
			p->poll_streak++;
	} else {
		p->poll_streak = 0;
	}
	p->last_poll = end;
	return p->poll_streak >= UROCE_PACE_POLL_STREAK;
}

void uroce_pace_poll_ended(struct uroce_pace *p, uint64_t start, uint64_t end)
{
	if (streak_step(p, start, end))
		atomic_store_explicit(&p->app_polled, p->last_poll, memory_order_relaxed);
	p->found = 0; /* the drain's time runs from the first completions after this round */
}

uint64_t uroce_pace_move_timer(struct uroce_pace *p, uint64_t now, uint64_t at)
{
	uint64_t to = uroce_pace_timer_moves_to(uroce_pace_lease_end(p), now, at);

	if (to && p->sleep_until)
		p->sleep_until = to;
	return to;
}

void uroce_pace_poll_found(struct uroce_pace *p, uint64_t now)
{
	/* The drain's time starts at the first completions after a round or a pause in polling. */
	if (!p->found || now - p->last_poll >= UROCE_PACE_DRAIN_NS)
		p->found = now;
	if (streak_step(p, now, now) || app_polled(p))
		atomic_store_explicit(&p->app_polled, now, memory_order_relaxed);
}

bool uroce_pace_poll_drains(const struct uroce_pace *p, uint64_t now)
{
	return p->found && now - p->found < UROCE_PACE_DRAIN_NS;
}

void uroce_pace_sent(struct uroce_pace *p)
{
	p->held = 0;
	p->reply_hold = 0;
}

void uroce_pace_channel_sleeps(struct uroce_pace *p, uint64_t now)
{
	atomic_store_explicit(&p->app_polled, now, memory_order_relaxed);
	p->chan_at = now;
}

bool uroce_pace_channel_leased(const struct uroce_pace *p, uint64_t now)
{
	return p->chan_at && now - p->chan_at < UROCE_PACE_CHANNEL_NS;
}

bool uroce_pace_app_sleeps(struct uroce_pace *p, uint64_t now)
{
	if (uroce_pace_channel_leased(p, now))
		return false;
	p->chan_at = 0;
	bool leased = atomic_load(&p->app_polled) != 0;

	atomic_store_explicit(&p->app_polled, 0, memory_order_relaxed);
	p->poll_streak = 0;
	return leased;
}

bool uroce_pace_post(struct uroce_pace *p, uint64_t now, size_t bytes)
{
	if (p->reply_hold && now < p->reply_hold)
		p->answered = true; /* it carries the held ACKs */
	if (!uroce_pace_post_holds(now, uroce_pace_lease_end(p), p->last_post, p->held + bytes))
		return false;
	p->held += bytes;
	return true;
}

bool uroce_pace_posted(struct uroce_pace *p, uint64_t now, bool held, bool pending,
		       uint64_t deadline)
{
	p->last_post = now;
	if (app_polled(p)) /* a post extends the lease (uroce_pace_lease_until) */
		atomic_store_explicit(&p->app_posted, now, memory_order_relaxed);
	/* What is held goes with the poller's next call, or else when the lease ends: a progress
	 * thread that sleeps beyond that (it planned before the lease began) plans again. */
	if (held)
		return p->sleep_until > uroce_pace_lease_end(p);
	return pending || (p->sleep_until && deadline < p->sleep_until);
}

struct uroce_pace_sleep uroce_pace_plan_sleep(struct uroce_pace *p, uint64_t now, uint64_t deadline,
					      bool pending, bool rx_more, unsigned waiters)
{
	struct uroce_pace_sleep s = {.ns = 0, .sockets = true};
	uint64_t le = uroce_pace_lease_end(p), until = deadline;

	if (p->busy_poll || (pending && now >= p->reply_hold) || rx_more ||
	    (p->spin.until && now >= le && !waiters))
		return s;
	if (pending && until > p->reply_hold)
		until = p->reply_hold;
	if (now < le) {
		/* An application thread polls: the sockets are its until the lease ends. */
		s.sockets = false;
		if (until > le)
			until = le;
	}
	if (until > now + UROCE_PACE_SLEEP_MAX_NS)
		until = now + UROCE_PACE_SLEEP_MAX_NS;
	if (until <= now)
		return s;
	p->sleep_until = until;
	p->spin.until = 0; /* a spin given up (a lease, a thread waiting for the lock) ends */
	if (s.sockets)
		p->spin.slept_at = now;
	s.ns = until - now;
	return s;
}

void uroce_pace_woken(struct uroce_pace *p)
{
	p->sleep_until = 0;
}

bool uroce_pace_asleep(const struct uroce_pace *p)
{
	return p->sleep_until != 0;
}

enum uroce_pace_send uroce_pace_round_sends(bool hold, bool pending, bool acks_only)
{
	if (hold && acks_only)
		return UROCE_PACE_KEEP_ACKS;
	if (!hold || pending)
		return UROCE_PACE_SEND; /* requests, READ responses: now */
	return UROCE_PACE_NOTHING;
}

bool uroce_pace_round_ended(struct uroce_pace *p, uint64_t now, int got, bool answered)
{
	return uroce_pace_spin_step(&p->spin, now, got, !p->no_spin && answered);
}
