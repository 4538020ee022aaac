/* SPDX-License-Identifier: MIT */
/* Fault injection on transmit (faults.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host/config/io_counters.h"
#include "host/io/backend.h"
#include "host/io/faults.h"

int uroce_faults_parse(struct uroce_faults *f, const char *spec, char *err, size_t errlen)
{
	char item[64];

	memset(f, 0, sizeof(*f));
	if (!spec)
		return 0;
	const char *p = spec;

	while (*p) {
		const char *end = strchr(p, ',');
		size_t n = end ? (size_t)(end - p) : strlen(p);

		if (n == 0 || n >= sizeof(item)) {
			snprintf(err, errlen,
				 "UROCE_FAULTS: bad item '%.*s' in '%s' (expected "
				 "NAME=VALUE[,...], names loss, dup, reorder, corrupt, seed)",
				 (int)(n > 40 ? 40 : n), p, spec);
			return -EINVAL;
		}
		memcpy(item, p, n);
		item[n] = 0;
		char *eq = strchr(item, '=');

		if (!eq || eq == item || !eq[1]) {
			snprintf(err, errlen,
				 "UROCE_FAULTS: '%s' is not NAME=VALUE (names: loss, "
				 "dup, reorder, corrupt, seed)",
				 item);
			return -EINVAL;
		}
		*eq = 0;
		const char *val = eq + 1;
		char *vend;

		errno = 0;
		if (strcmp(item, "seed") == 0) {
			unsigned long long s = strtoull(val, &vend, 0);

			if (errno || *vend || val[0] == '-') {
				snprintf(err, errlen,
					 "UROCE_FAULTS: seed '%s' is not an unsigned "
					 "integer",
					 val);
				return -EINVAL;
			}
			f->seed = s;
		} else {
			double *dst = strcmp(item, "loss") == 0	     ? &f->loss
				      : strcmp(item, "dup") == 0     ? &f->dup
				      : strcmp(item, "reorder") == 0 ? &f->reorder
				      : strcmp(item, "corrupt") == 0 ? &f->corrupt
								     : NULL;

			if (!dst) {
				snprintf(err, errlen,
					 "UROCE_FAULTS: unknown fault '%s' (known: loss, "
					 "dup, reorder, corrupt, seed)",
					 item);
				return -EINVAL;
			}
			double v = strtod(val, &vend);

			if (errno || *vend || !(v >= 0.0 && v <= 1.0)) {
				snprintf(err, errlen,
					 "UROCE_FAULTS: %s=%s is not a probability "
					 "between 0 and 1",
					 item, val);
				return -EINVAL;
			}
			*dst = v;
		}
		p += n;
		if (*p == ',' && *++p == 0) {
			snprintf(err, errlen, "UROCE_FAULTS: '%s' ends with a comma", spec);
			return -EINVAL;
		}
	}
	return 0;
}

#define FAULT_CHUNK   64
#define FAULT_HOLDMAX 16384

struct faults_be {
	struct uroce_backend b;
	struct uroce_faults f;
	uint64_t seq; /* originals consumed: the per-packet random draws are hash(seed, seq) */
	/* the held (reordered) packet */
	bool held;
	struct uroce_tx_pkt hpkt;
	struct uroce_path hpath;
	uint32_t hxor;
	uint8_t hbuf[FAULT_HOLDMAX];
	/* per chunk */
	struct uroce_tx_desc out[2 * FAULT_CHUNK + 1];
	int first[FAULT_CHUNK]; /* first out entry of each original, -1 when none */
	int rel[FAULT_CHUNK];	/* held originals: the out entry that releases them, or -1 */
	uint32_t hold_xor[FAULT_CHUNK];
	uint8_t act[FAULT_CHUNK];
};

enum { ACT_SEND = 1, ACT_LOST = 2, ACT_DUP = 4, ACT_CORRUPT = 8, ACT_HOLD = 16 };

static uint64_t splitmix(uint64_t x)
{
	x += 0x9E3779B97F4A7C15ull;
	x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
	x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
	return x ^ (x >> 31);
}

/* The k-th uniform draw in [0, 1) for packet number seq. */
static double draw(const struct faults_be *w, uint64_t seq, unsigned k)
{
	uint64_t x = splitmix(splitmix(w->f.seed ^ 0x5EEDull) ^ (seq * 8 + k));

	return (double)(x >> 11) * (1.0 / 9007199254740992.0);
}

static void hold_copy(struct faults_be *w, const struct uroce_tx_desc *d, uint32_t xor_)
{
	w->hpkt = *d->pkt;
	w->hpath = *d->path;
	if (d->pkt->payload_len)
		memcpy(w->hbuf, d->pkt->payload, d->pkt->payload_len);
	w->hpkt.payload = w->hbuf;
	w->hpkt.av = NULL;
	w->hxor = xor_;
	w->held = true;
}

/*
 * One chunk, in two phases: plan every original's fate (drawn from its sequence number, so a
 * retry of an unsent packet draws the same), send the plan, then commit only what the inner
 * backend took. A packet held in this chunk and released later in it is sent from the caller's
 * descriptor; only a held packet whose release did not go out needs the single hold slot.
 */
static int faults_tx_chunk(struct faults_be *w, const struct uroce_tx_desc *d, int n)
{
	int m = 0, cur = -1, x_rel = -1; /* cur: original held in the plan; -2: the slot's */

	if (w->held)
		cur = -2;
	for (int i = 0; i < n; i++) {
		uint64_t seq = w->seq + (uint64_t)i;
		uint8_t a = 0;
		uint32_t xr = 0;

		w->first[i] = -1;
		w->rel[i] = -1;
		if (draw(w, seq, 0) < w->f.loss) {
			w->act[i] = ACT_LOST;
			continue;
		}
		if (draw(w, seq, 1) < w->f.corrupt) {
			a |= ACT_CORRUPT;
			xr = 1u << (splitmix(w->f.seed + seq) % 32);
		}
		if (cur == -1 && draw(w, seq, 2) < w->f.reorder &&
		    d[i].pkt->payload_len <= FAULT_HOLDMAX) {
			w->act[i] = a | ACT_HOLD;
			w->hold_xor[i] = d[i].icrc_xor ^ xr;
			cur = i;
			continue;
		}
		a |= ACT_SEND;
		w->first[i] = m;
		w->out[m] = d[i];
		w->out[m++].icrc_xor = d[i].icrc_xor ^ xr;
		if (draw(w, seq, 3) < w->f.dup) {
			a |= ACT_DUP;
			w->out[m] = w->out[m - 1];
			m++;
		}
		w->act[i] = a;
		if (cur == -2) { /* release the slot's packet after this one */
			w->out[m] = (struct uroce_tx_desc){&w->hpkt, &w->hpath, w->hxor};
			x_rel = m++;
		} else if (cur >= 0) {
			w->out[m] = d[cur];
			w->out[m].icrc_xor = w->hold_xor[cur];
			w->rel[cur] = m++;
		}
		cur = -1;
	}

	int k = m ? w->b.inner->ops->tx_burst(w->b.inner, w->out, m) : 0;

	if (k < 0)
		return k;
	/* r: originals consumed = those before the first one whose first entry was not taken. */
	int r = n;

	for (int i = 0; i < n; i++) {
		if (w->first[i] >= k) {
			r = i;
			break;
		}
	}
	/* The slot: still taken when its packet's release did not go out. */
	bool slot_busy = w->held && !(x_rel >= 0 && x_rel < k);

	for (int i = 0; i < r; i++) {
		if (!(w->act[i] & ACT_HOLD) || (w->rel[i] >= 0 && w->rel[i] < k))
			continue;
		/* Held, consumed, not yet sent: it needs the slot, or it is not consumed after all.
		 */
		if (slot_busy) {
			r = i;
			break;
		}
		hold_copy(w, &d[i], w->hold_xor[i]);
		slot_busy = true;
	}
	w->held = slot_busy;
	for (int i = 0; i < r; i++) {
		uint8_t a = w->act[i];

		w->b.cnt[UROCE_IO_FAULT_LOST] += !!(a & ACT_LOST);
		w->b.cnt[UROCE_IO_FAULT_CORRUPTED] += !!(a & ACT_CORRUPT);
		w->b.cnt[UROCE_IO_FAULT_REORDERED] += !!(a & ACT_HOLD);
		w->b.cnt[UROCE_IO_FAULT_DUP] += (a & ACT_DUP) && w->first[i] + 1 < k;
	}
	w->seq += (uint64_t)r;
	return r;
}

static int faults_tx(struct uroce_backend *b, const struct uroce_tx_desc *d, int n)
{
	struct faults_be *w = (struct faults_be *)b;
	int done = 0;

	b->tx_refused_n = 0; /* the inner backend's indices refer to our plan, not to d */
	while (done < n) {
		int c = n - done < FAULT_CHUNK ? n - done : FAULT_CHUNK;
		int r = faults_tx_chunk(w, d + done, c);

		if (r < 0)
			return done ? done : r;
		done += r;
		if (r < c)
			break;
	}
	return done;
}

static int faults_rx(struct uroce_backend *b, struct uroce_rx_desc *out, int n)
{
	struct faults_be *w = (struct faults_be *)b;

	if (w->held) {
		/* Nothing followed the held packet for a while: let it go now. */
		const struct uroce_tx_desc hd = {&w->hpkt, &w->hpath, w->hxor};

		if (w->b.inner->ops->tx_burst(w->b.inner, &hd, 1) == 1)
			w->held = false;
	}
	return w->b.inner->ops->rx_burst(w->b.inner, out, n);
}

static void faults_close(struct uroce_backend *b)
{
	uroce_backend_close(b->inner);
	free(b);
}

static const struct uroce_backend_ops faults_ops = {
	.name = "faults",
	.open = NULL,
	.close = faults_close,
	.tx_burst = faults_tx,
	.rx_burst = faults_rx,
	.fd = uroce_backend_inner_fd,
};

int uroce_faults_wrap(struct uroce_backend **b, const struct uroce_faults *f)
{
	struct faults_be *w = calloc(1, sizeof(*w));

	if (!w)
		return -ENOMEM;
	w->b.ops = &faults_ops;
	w->b.inner = *b;
	w->b.port = (*b)->port;
	w->b.fixed_sport = (*b)->fixed_sport;
	memcpy(w->b.mac, (*b)->mac, 6);
	w->f = *f;
	*b = &w->b;
	return 0;
}
