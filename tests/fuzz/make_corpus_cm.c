/* SPDX-License-Identifier: MIT */
/*
 * Writes the seed corpus of fuzz_cm (run by make_corpus.sh): step sequences in the format of
 * fuzz_cm.h that take the engine through whole connections.
 *   cap-<capture>-passive  the capture's CM exchange with the engine as its passive side: each
 *                          MAD of the active side received (its field naming the passive side's
 *                          connection, and a DREQ's QPN, patched to the engine's), each MAD of
 *                          the passive side made by the matching application call (REP: accept,
 *                          REJ, MRA, DREQ, DREP, SIDR_REP), with the capture's time between;
 *   cap-<capture>-active   the same with the engine as the active side (REQ: connect, RTU, ...);
 *   self-<path>            the engine connected to itself: each MAD it sends received back, so
 *                          that both sides of a connection are its own (connect, accept, RTU,
 *                          DREQ, DREP, time-wait; REJ; MRA of REQ and REP; SIDR; duplicates;
 *                          timeouts; a destroy in each phase; the handler answering by itself;
 *                          a time-wait of 0 ms; MADs received from inside the callback).
 * A capture's active side is the sender of its first REQ or SIDR_REQ; its connections are
 * numbered by the comm ID of that side (a REQ's or RTU's local comm ID, a REP's remote one),
 * in order of their first REQ, as the engine's slots are. A message repeated by the side the
 * application plays (a resend) is made once. Deterministic: the same captures give the same
 * files.
 *
 * usage: fuzz_make_corpus_cm VECTORS_DIR OUT_DIR
 */
#include <dirent.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cm/msg.h"
#include "fuzz_cm.h"
#include "host/io/pcap.h"
#include "wire/bytes.h"
#include "wire/packet.h"

#define MAX_MADS  256
#define MAX_STEPS 16384

static const char *outdir;
static unsigned files;

struct seq {
	uint8_t b[MAX_STEPS];
	size_t n;
};

static void put(struct seq *q, unsigned kind, unsigned f, unsigned arg)
{
	if (q->n + 2 > sizeof(q->b)) {
		fprintf(stderr, "seed too long\n");
		exit(1);
	}
	q->b[q->n++] = FCM_OP(kind, f);
	q->b[q->n++] = (uint8_t)arg;
}

static void put_mad(struct seq *q, unsigned f, unsigned slot, const uint8_t *mad)
{
	put(q, FCM_MAD, f, slot);
	if (q->n + FCM_MAD_LEN > sizeof(q->b)) {
		fprintf(stderr, "seed too long\n");
		exit(1);
	}
	memcpy(q->b + q->n, mad, FCM_MAD_LEN);
	q->n += FCM_MAD_LEN;
}

/* ADVANCE steps that add up to about ns: (arg + 1) << 3f each. */
static void put_time(struct seq *q, uint64_t ns)
{
	while (ns) {
		unsigned f = 0;

		while (f < 15 && ns >> (3 * (f + 1)) >= 1)
			f++;
		uint64_t unit = 1ull << (3 * f), k = ns / unit;

		if (k > 256)
			k = 256;
		put(q, FCM_ADVANCE, f, (unsigned)(k - 1));
		ns -= k * unit;
		if (ns < unit)
			break; /* the rest is below the step's unit: close enough */
	}
}

static void emit(const char *name, const struct seq *q)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", outdir, name);
	f = fopen(path, "wb");
	if (!f || (q->n && fwrite(q->b, q->n, 1, f) != 1) || fclose(f) != 0) {
		perror(path);
		exit(1);
	}
	files++;
}

/* ---- a capture's CM exchange ------------------------------------------------------------- */

struct cap_mad {
	uint64_t t_ns;
	bool from_active;
	uint8_t raw[UROCE_MAD_LEN];
	struct uroce_cm_mad m;
};

static struct cap_mad mads[MAX_MADS];
static unsigned nmads;

/* The active side's comm ID a message carries: its own as sender, the peer's as receiver. */
static uint32_t active_id(const struct cap_mad *c)
{
	const struct uroce_cm_mad *m = &c->m;

	switch (m->hdr.attr_id) {
	case UROCE_CM_ATTR_REQ:
		return m->u.req.local_comm_id;
	case UROCE_CM_ATTR_REP:
		return m->u.rep.remote_comm_id;
	case UROCE_CM_ATTR_MRA:
		return c->from_active ? m->u.mra.local_comm_id : m->u.mra.remote_comm_id;
	case UROCE_CM_ATTR_REJ:
		return c->from_active ? m->u.rej.local_comm_id : m->u.rej.remote_comm_id;
	case UROCE_CM_ATTR_RTU:
		return m->u.rtu.local_comm_id;
	case UROCE_CM_ATTR_DREQ:
		return c->from_active ? m->u.dreq.local_comm_id : m->u.dreq.remote_comm_id;
	case UROCE_CM_ATTR_DREP:
		return c->from_active ? m->u.drep.local_comm_id : m->u.drep.remote_comm_id;
	case UROCE_CM_ATTR_SIDR_REQ:
		return m->u.sidr_req.request_id;
	case UROCE_CM_ATTR_SIDR_REP:
		return m->u.sidr_rep.request_id;
	default:
		return 0;
	}
}

/* The field of m naming the receiver's connection, when m has one and it is set. */
static bool names_receiver(const struct uroce_cm_mad *m)
{
	switch (m->hdr.attr_id) {
	case UROCE_CM_ATTR_REP:
		return m->u.rep.remote_comm_id != 0;
	case UROCE_CM_ATTR_MRA:
		return m->u.mra.remote_comm_id != 0;
	case UROCE_CM_ATTR_REJ:
		return m->u.rej.remote_comm_id != 0;
	case UROCE_CM_ATTR_RTU:
		return m->u.rtu.remote_comm_id != 0;
	case UROCE_CM_ATTR_DREQ:
		return m->u.dreq.remote_comm_id != 0;
	case UROCE_CM_ATTR_DREP:
		return m->u.drep.remote_comm_id != 0;
	case UROCE_CM_ATTR_SIDR_REP:
		return true;
	default:
		return false;
	}
}

/* The REJECT reason index (fcm_rej_reason) nearest to reason: itself, or consumer defined. */
static unsigned rej_f(uint16_t reason)
{
	for (unsigned f = 0; f < 8; f++)
		if (fcm_rej_reason(f) == reason)
			return f;
	return 0;
}

/* The application call that sends m (from the side the engine plays), into q. */
static void put_call(struct seq *q, const struct uroce_cm_mad *m, unsigned slot)
{
	switch (m->hdr.attr_id) {
	case UROCE_CM_ATTR_REQ:
		put(q, FCM_CONNECT, 0xE, slot & 0x7F);
		break;
	case UROCE_CM_ATTR_REP:
		put(q, FCM_ACCEPT, 0xE, slot);
		break;
	case UROCE_CM_ATTR_RTU:
		put(q, FCM_RTU, 0, slot);
		break;
	case UROCE_CM_ATTR_REJ:
		put(q, FCM_REJECT, rej_f(m->u.rej.reason) | (m->u.rej.reject_info_len ? 8 : 0),
		    slot);
		break;
	case UROCE_CM_ATTR_MRA:
		put(q, FCM_MRA, (m->u.mra.service_timeout / 4) & 7, slot);
		break;
	case UROCE_CM_ATTR_DREQ:
		put(q, FCM_DREQ, 0, slot);
		break;
	case UROCE_CM_ATTR_DREP:
		put(q, FCM_DREP, 0, slot);
		break;
	case UROCE_CM_ATTR_SIDR_REQ:
		put(q, FCM_SIDR_REQ, 0xE, 0);
		break;
	case UROCE_CM_ATTR_SIDR_REP:
		put(q, FCM_SIDR_REP, m->u.sidr_rep.status & 0xF, slot);
		break;
	default:
		break;
	}
}

/* The capture replayed with the engine as its active (active = true) or passive side. */
static void replay(const char *stem, bool active)
{
	uint32_t ids[FCM_SLOTS];
	bool done[FCM_SLOTS][32];
	unsigned nids = 0;
	uint64_t t = 0;
	struct seq *q = calloc(1, sizeof(*q));
	char name[256];

	memset(done, 0, sizeof(done));
	for (unsigned i = 0; i < nmads; i++) {
		const struct cap_mad *c = &mads[i];
		uint32_t id = active_id(c);
		unsigned slot = 0;
		uint16_t attr = c->m.hdr.attr_id;

		while (slot < nids && ids[slot] != id)
			slot++;
		if (slot == nids) {
			if (attr != UROCE_CM_ATTR_REQ && attr != UROCE_CM_ATTR_SIDR_REQ)
				continue; /* a connection begun before the capture */
			if (nids == FCM_SLOTS)
				continue;
			ids[nids++] = id;
		}
		if (t && c->t_ns > t)
			put_time(q, c->t_ns - t);
		t = c->t_ns;
		if (c->from_active == active) {
			/* The engine's own message: the application's call makes it, once. */
			unsigned k = attr & 31;

			if (!done[slot][k])
				put_call(q, &c->m, slot);
			done[slot][k] = true;
		} else {
			unsigned f = names_receiver(&c->m) ? FCM_P_OURS : 0;

			if (attr == UROCE_CM_ATTR_DREQ)
				f |= FCM_P_QPN;
			put_mad(q, f, slot, c->raw);
		}
	}
	snprintf(name, sizeof(name), "cap-%s-%s", stem, active ? "active" : "passive");
	emit(name, q);
	free(q);
}

static int is_pcap(const struct dirent *d)
{
	size_t n = strlen(d->d_name);

	return n > 5 && strcmp(d->d_name + n - 5, ".pcap") == 0;
}

/* The CM MADs of one capture, the side of each; false when it has no REQ or SIDR_REQ. */
static bool load(const char *path)
{
	uint8_t *buf;
	size_t len;
	struct uroce_pcap_rd r;
	struct uroce_pcap_pkt p;
	uint8_t active_ip[16];
	bool have_active = false;

	nmads = 0;
	if (uroce_file_load(path, &buf, &len) || uroce_pcap_open(&r, buf, len)) {
		fprintf(stderr, "%s: cannot read\n", path);
		exit(1);
	}
	while (uroce_pcap_next(&r, &p) == 1 && nmads < MAX_MADS) {
		struct uroce_frame f;
		struct cap_mad *c = &mads[nmads];
		uint8_t src[16];

		if (uroce_frame_decode(&f, p.data, p.caplen) != 0 ||
		    f.t.bth.opcode != UROCE_OP_UD_SEND_ONLY || f.t.bth.dqpn != UROCE_GSI_QPN ||
		    uroce_cm_mad_decode(&c->m, f.t.payload, f.t.payload_len) != UROCE_MAD_LEN)
			continue;
		memset(src, 0, sizeof(src));
		if (f.encap == UROCE_ENCAP_V2_IPV4)
			memcpy(src, f.ip4.src, 4);
		else
			memcpy(src, f.ip6.src, 16);
		if (!have_active && (c->m.hdr.attr_id == UROCE_CM_ATTR_REQ ||
				     c->m.hdr.attr_id == UROCE_CM_ATTR_SIDR_REQ)) {
			memcpy(active_ip, src, 16);
			have_active = true;
		}
		c->from_active = have_active && !memcmp(src, active_ip, 16);
		c->t_ns = p.ts_ns;
		memcpy(c->raw, f.t.payload, UROCE_MAD_LEN);
		nmads++;
	}
	free(buf);
	return have_active;
}

/* ---- the engine connected to itself ------------------------------------------------------ */

/* The MAD the engine sent `back` sends before its latest, received back. */
#define R(q, back) put(q, FCM_REFLECT, 0, back)

static void self_paths(void)
{
	struct seq q;

	/* Connect, accept, RTU, DREQ from the active side, DREP, time-wait: slot 0 active,
	 * slot 1 passive. */
	memset(&q, 0, sizeof(q));
	put(&q, FCM_CONNECT, 0xE, 1);
	R(&q, 0); /* REQ: slot 1 */
	put(&q, FCM_ACCEPT, 0xE, 1);
	R(&q, 0); /* REP */
	put(&q, FCM_RTU, 0, 0);
	R(&q, 0); /* RTU: both ESTABLISHED */
	put(&q, FCM_DREQ, 0, 0);
	R(&q, 0); /* DREQ */
	put(&q, FCM_DREP, 0, 1);
	R(&q, 0); /* DREP: both in time-wait */
	R(&q, 1); /* the DREQ again: the DREP resent */
	put(&q, FCM_ADVANCE, 7, 255);
	emit("self-connect-disconnect", &q);

	/* The same, the passive side disconnecting, established by data (no RTU). */
	memset(&q, 0, sizeof(q));
	put(&q, FCM_CONNECT, 0x5, 2);
	R(&q, 0);
	put(&q, FCM_ACCEPT, 0x5, 1);
	R(&q, 0);
	put(&q, FCM_ESTABLISH, 0, 1); /* first data before the RTU */
	put(&q, FCM_RTU, 0, 0);
	R(&q, 0); /* RTU after: a duplicate */
	R(&q, 1); /* the REP again: the RTU resent */
	put(&q, FCM_DREQ, 0x1, 1);
	R(&q, 0);
	put(&q, FCM_DREP, 0, 0);
	R(&q, 0);
	put(&q, FCM_NEXT, 0, 0);
	emit("self-passive-disconnect", &q);

	/* Both sides disconnect at once. */
	memset(&q, 0, sizeof(q));
	put(&q, FCM_POLICY, 0, FCM_AUTO_ACCEPT | FCM_AUTO_RTU);
	put(&q, FCM_CONNECT, 0x6, 3);
	R(&q, 0); /* REQ: accepted by the handler */
	R(&q, 0); /* REP: RTU by the handler */
	R(&q, 0); /* RTU */
	put(&q, FCM_DREQ, 0, 0);
	put(&q, FCM_DREQ, 0, 1);
	R(&q, 1); /* the active side's DREQ to the passive */
	R(&q, 0); /* the passive side's DREQ to the active */
	put(&q, FCM_DREP, 0, 0);
	R(&q, 0);		 /* DREP_RECEIVED in DREQ_RCVD: time-wait */
	put(&q, FCM_DREP, 0, 1); /* refused there */
	emit("self-both-disconnect", &q);

	/* The handler does everything; the active side destroyed when established. */
	memset(&q, 0, sizeof(q));
	put(&q, FCM_POLICY, 0, FCM_AUTO_ACCEPT | FCM_AUTO_RTU | FCM_AUTO_DREP | FCM_EARLY_DESTROY);
	put(&q, FCM_CONNECT, 0xE, 4);
	R(&q, 0);
	R(&q, 0);
	R(&q, 0);
	put(&q, FCM_DESTROY, 0, 0); /* sends the DREQ */
	R(&q, 0);		    /* answered with a DREP by the handler */
	R(&q, 0);
	emit("self-auto-destroy", &q);

	/* The passive side rejects the REQ; the REJ received back. */
	memset(&q, 0, sizeof(q));
	put(&q, FCM_CONNECT, 0x2, 5);
	R(&q, 0);
	put(&q, FCM_REJECT, 0, 1);
	R(&q, 0);
	R(&q, 1); /* the REQ again: a new connection */
	emit("self-reject", &q);

	/* The active side rejects the REP (stale connection: time-wait on both sides). */
	memset(&q, 0, sizeof(q));
	put(&q, FCM_CONNECT, 0x2, 6);
	R(&q, 0);
	put(&q, FCM_ACCEPT, 0x2, 1);
	R(&q, 0);
	put(&q, FCM_REJECT, 1, 0);
	R(&q, 0);
	put(&q, FCM_ADVANCE, 7, 10);
	emit("self-reject-rep", &q);

	/* MRA for the REQ and for the REP, one delayed; then connected. */
	memset(&q, 0, sizeof(q));
	put(&q, FCM_CONNECT, 0xD, 7);
	R(&q, 0);
	put(&q, FCM_MRA, 3, 1);
	R(&q, 0);		 /* MRA: the active side waits longer */
	put(&q, FCM_NEXT, 0, 0); /* the REQ resent */
	R(&q, 0);		 /* a duplicate REQ: the MRA resent */
	R(&q, 0);		 /* a duplicate MRA */
	put(&q, FCM_ACCEPT, 0xD, 1);
	R(&q, 0);		    /* REP */
	put(&q, FCM_MRA, 8 | 2, 0); /* delayed: sent only for a repeated REP */
	put(&q, FCM_NEXT, 0, 0);    /* the REP resent */
	R(&q, 0);		    /* answered with the MRA */
	R(&q, 0);		    /* MRA of the REP */
	put(&q, FCM_RTU, 0, 0);
	R(&q, 0);
	emit("self-mra", &q);

	/* Timeouts: the REQ, then a REP, then a DREQ never answered. */
	memset(&q, 0, sizeof(q));
	put(&q, FCM_CONNECT, 0x4, 8);
	put(&q, FCM_NEXT, 0, 0);
	put(&q, FCM_NEXT, 0, 0);
	put(&q, FCM_CONNECT, 0x4, 9);
	R(&q, 0);
	put(&q, FCM_ACCEPT, 0x4, 2);
	put(&q, FCM_ADVANCE, 8, 0);
	put(&q, FCM_CONNECT, 0x4, 10);
	R(&q, 0);
	put(&q, FCM_ACCEPT, 0x4, 4);
	R(&q, 0);
	put(&q, FCM_RTU, 0, 3);
	R(&q, 0);
	put(&q, FCM_DREQ, 0x4, 3);
	put(&q, FCM_ADVANCE, 8, 0);
	emit("self-timeouts", &q);

	/* A destroy in each phase of a connection. */
	memset(&q, 0, sizeof(q));
	put(&q, FCM_CONNECT, 0xE, 11);
	put(&q, FCM_DESTROY, 0, 0); /* REQ_SENT: REJ timeout */
	R(&q, 1);		    /* its REQ arrives after */
	R(&q, 0);		    /* and the REJ, found by the CA GUID */
	put(&q, FCM_CONNECT, 0xE, 12);
	R(&q, 0);
	put(&q, FCM_DESTROY, 0, 3); /* REQ_RCVD: REJ */
	R(&q, 0);
	put(&q, FCM_CONNECT, 0xE, 13);
	R(&q, 0);
	put(&q, FCM_ACCEPT, 0xE, 5);
	R(&q, 0);
	put(&q, FCM_DESTROY, 0, 4); /* REP_RCVD: REJ */
	R(&q, 0);
	put(&q, FCM_CONNECT, 0xE, 14);
	R(&q, 0);
	put(&q, FCM_ACCEPT, 0xE, 7);
	R(&q, 0);
	put(&q, FCM_RTU, 0, 6);
	R(&q, 0);
	put(&q, FCM_DREQ, 0, 6);
	R(&q, 0);
	put(&q, FCM_DESTROY, 0, 7); /* DREQ_RCVD: DREP */
	R(&q, 0);
	put(&q, FCM_DESTROY, 0, 6); /* TIMEWAIT: lingers */
	emit("self-destroy", &q);

	/* A second REQ from the QP of an established connection: stale. */
	memset(&q, 0, sizeof(q));
	put(&q, FCM_POLICY, 0, FCM_AUTO_ACCEPT | FCM_AUTO_RTU | FCM_AUTO_DREP);
	put(&q, FCM_CONNECT, 0xE, 15);
	R(&q, 0);
	R(&q, 0);
	R(&q, 0);		       /* established */
	put(&q, FCM_CONNECT, 0xE, 15); /* the same QP again */
	R(&q, 0);		       /* REJ stale, DREQ to the old one */
	R(&q, 1);		       /* the REJ: the new one in time-wait */
	R(&q, 0);		       /* the DREQ: answered by the handler */
	R(&q, 0);		       /* the DREP */
	emit("self-stale", &q);

	/* Time-wait of 0 ms: a disconnect, a DREQ repeated after it, a REQ on the same IDs. */
	memset(&q, 0, sizeof(q));
	put(&q, FCM_POLICY, 0, FCM_TIMEWAIT_0 | FCM_AUTO_ACCEPT | FCM_AUTO_RTU | FCM_AUTO_DREP);
	put(&q, FCM_CONNECT, 0xE, 16);
	R(&q, 0);
	R(&q, 0);
	R(&q, 0); /* established */
	put(&q, FCM_DREQ, 0, 0);
	R(&q, 0);		    /* DREQ: answered */
	R(&q, 0);		    /* DREP: time-wait */
	put(&q, FCM_ADVANCE, 0, 0); /* and out of it */
	R(&q, 1);		    /* the DREQ again: no connection, a DREP */
	R(&q, 5);		    /* the REQ again: a new passive connection */
	emit("self-timewait-0", &q);

	/* The handler answers and gives each answer back to the engine from inside the callback:
	 * one REFLECT connects, one disconnects. */
	memset(&q, 0, sizeof(q));
	put(&q, FCM_POLICY, 0,
	    FCM_AUTO_ACCEPT | FCM_AUTO_RTU | FCM_AUTO_DREP | FCM_REFLECT_IN_EVENT);
	put(&q, FCM_CONNECT, 0xE, 17);
	R(&q, 0); /* REQ; REP, RTU inside */
	put(&q, FCM_DREQ, 0, 1);
	R(&q, 0); /* DREQ; DREP inside */
	emit("self-reentrant", &q);

	/* SIDR: answered, then answered by the handler, then timed out. */
	memset(&q, 0, sizeof(q));
	put(&q, FCM_SIDR_REQ, 0x1, 0);
	R(&q, 0);
	R(&q, 0); /* a duplicate */
	put(&q, FCM_SIDR_REP, 0, 1);
	R(&q, 0);
	put(&q, FCM_POLICY, 0, FCM_AUTO_SIDR);
	put(&q, FCM_SIDR_REQ, 0x1, 0x80);
	R(&q, 0);
	R(&q, 0);
	put(&q, FCM_SIDR_REQ, 0x4, 0);
	put(&q, FCM_NEXT, 0, 0);
	put(&q, FCM_NEXT, 0, 0);
	emit("self-sidr", &q);
}

int main(int argc, char **argv)
{
	struct dirent **ents;
	char path[4096];

	if (argc != 3) {
		fprintf(stderr, "usage: %s VECTORS_DIR OUT_DIR\n", argv[0]);
		return 2;
	}
	outdir = argv[2];
	int k = scandir(argv[1], &ents, is_pcap, alphasort);

	if (k <= 0) {
		fprintf(stderr, "%s: no captures\n", argv[1]);
		return 1;
	}
	for (int c = 0; c < k; c++) {
		char stem[128];

		snprintf(path, sizeof(path), "%s/%s", argv[1], ents[c]->d_name);
		snprintf(stem, sizeof(stem), "%.*s", (int)strlen(ents[c]->d_name) - 5,
			 ents[c]->d_name);
		if (load(path)) {
			replay(stem, false);
			replay(stem, true);
		}
		free(ents[c]);
	}
	free(ents);
	self_paths();
	printf("%u files\n", files);
	return 0;
}
