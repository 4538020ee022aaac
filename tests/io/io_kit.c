/* SPDX-License-Identifier: MIT */
/*
 * The I/O test kit (io_kit.h): packets of every opcode with known contents, receiving with a
 * deadline, and checking each arrival against what was sent, for the I/O backend test programs.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "io_kit.h"
#include "host/config/io_counters.h"
#include "host/io/udp.h"
#include "wire/bytes.h"
#include "wire/icrc.h"

uint8_t payload_mem[MAXPAY + 64];

void io_kit_init(void)
{
	for (int i = 0; i < MAXPAY + 64; i++)
		payload_mem[i] = (uint8_t)(i * 13 + 1);
}

void io_kit_checks(long *count, int *failures)
{
	*count = check_count;
	*failures = check_failures;
}

uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

void gid4(uint8_t g[16], const char *s)
{
	memset(g, 0, 16);
	g[10] = g[11] = 0xFF;
	if (inet_pton(AF_INET, s, g + 12) != 1)
		abort();
}

void gid6(uint8_t g[16], const char *s)
{
	if (inet_pton(AF_INET6, s, g) != 1)
		abort();
}

static uint32_t pay_len_for(uint8_t op, unsigned salt)
{
	const struct uroce_opinfo *oi = &uroce_opinfo[op];

	if (oi->flags & UROCE_OPF_ATOMIC_WRITE)
		return 8;
	if (!(oi->flags & UROCE_OPF_PAYLOAD))
		return 0;
	return (op * 37u + salt * 11u) % 301u; /* odd and even lengths, pads 0..3, and 0 */
}

void make_pkt_to(struct sent *s, uint8_t op, uint32_t psn, uint32_t plen, uint32_t dqpn)
{
	struct uroce_tpkt *t = &s->t;

	memset(s, 0, sizeof(*s));
	t->bth.opcode = op;
	t->bth.pkey = 0xFFFF;
	t->bth.dqpn = dqpn;
	t->bth.psn = psn & 0xFFFFFF;
	t->bth.ackreq = (psn & 1) != 0;
	t->bth.se = (psn & 2) != 0;
	t->bth.becn = op == UROCE_OP_CNP;
	t->deth.qkey = 0x80010000u;
	t->deth.src_qp = 0x42;
	t->feth = 1;
	t->reth.va = 0x1122334455667788ull;
	t->reth.rkey = 0xA1B2C3D4u;
	t->reth.len = plen;
	t->atmeth.va = 0x1000;
	t->atmeth.rkey = 0x77;
	t->atmeth.swap_add = 5;
	t->atmeth.compare = 6;
	t->aeth.syndrome = 0x1F;
	t->aeth.msn = psn & 0xFFFFFF;
	t->atmack = 0xCAFEF00Dull;
	t->imm = 0xDEADBEEFu;
	t->ieth = 0x5555;
	t->payload = payload_mem + (psn % 64);
	t->payload_len = plen;
	int h = uroce_tpkt_hdr_encode(s->pkt.hdr, sizeof(s->pkt.hdr), t);

	if (h < 0)
		abort();
	s->pkt.hdr_len = (uint16_t)h;
	s->pkt.pad = uroce_pad_len(plen);
	s->pkt.payload = t->payload;
	s->pkt.payload_len = plen;
	s->pkt.src_qpn = 0x42;
	s->pkt.dst_qpn = dqpn;
}

void make_pkt(struct sent *s, uint8_t op, uint32_t psn, uint32_t plen)
{
	make_pkt_to(s, op, psn, plen, 0x123);
}

/* The ICRC our independent frame encoder computes for what d says arrived, with IP ID id. */
static uint32_t expect_icrc(const struct uroce_rx_desc *d, const struct sent *s)
{
	static uint8_t buf[MAXPAY + 256];
	struct uroce_frame f;

	memset(&f, 0, sizeof(f));
	f.encap = d->pkt.encap;
	f.t = s->t;
	switch (d->pkt.encap) {
	case UROCE_ENCAP_V2_IPV4:
		f.ip4.ihl = 5;
		f.ip4.tos = d->tclass;
		f.ip4.id = d->ip_id;
		f.ip4.frag = 0x4000;
		f.ip4.ttl = d->hop_limit;
		memcpy(f.ip4.src, d->pkt.sgid + 12, 4);
		memcpy(f.ip4.dst, d->pkt.dgid + 12, 4);
		f.udp.sport = d->sport;
		f.udp.dport = d->dport;
		break;
	case UROCE_ENCAP_V2_IPV6:
	case UROCE_ENCAP_V1:
		f.ip6.version = 6;
		f.ip6.tclass = d->tclass;
		f.ip6.hop_limit = d->hop_limit;
		memcpy(f.ip6.src, d->pkt.sgid, 16);
		memcpy(f.ip6.dst, d->pkt.dgid, 16);
		f.udp.sport = d->sport;
		f.udp.dport = d->dport;
		break;
	case UROCE_ENCAP_NONE:
		return 0;
	}
	ssize_t n = uroce_frame_encode(buf, sizeof(buf), &f);

	if (n < 4)
		return 0;
	return uroce_get_le32(buf + n - 4);
}

/* Check one received packet against what was sent. */
static void check_rx(const struct uroce_rx_desc *d, const struct sent *s, enum uroce_encap encap,
		     const uint8_t *sgid, const uint8_t *dgid)
{
	const struct uroce_tx_pkt *p = &s->pkt;
	uint32_t len = p->hdr_len + p->payload_len + p->pad + 4u;
	static const uint8_t zeros[4];

	CHECKF(d->pkt.len == len, "op 0x%02x len %u want %u", p->hdr[0], d->pkt.len, len);
	if (d->pkt.len != len)
		return;
	CHECK(memcmp(d->pkt.data, p->hdr, p->hdr_len) == 0);
	CHECK(p->payload_len == 0 ||
	      memcmp(d->pkt.data + p->hdr_len, p->payload, p->payload_len) == 0);
	CHECK(memcmp(d->pkt.data + p->hdr_len + p->payload_len, zeros, p->pad) == 0);
	CHECK(d->pkt.encap == encap);
	CHECK(memcmp(d->pkt.sgid, sgid, 16) == 0);
	CHECK(memcmp(d->pkt.dgid, dgid, 16) == 0);
	CHECKF(uroce_get_le32(d->pkt.data + len - 4) == expect_icrc(d, s),
	       "op 0x%02x: ICRC differs from uroce_frame_encode's", p->hdr[0]);
	struct uroce_tpkt t;
	const char *err;

	CHECK(uroce_tpkt_decode(&t, d->pkt.data, d->pkt.len, &err) == 0);
	CHECK(t.bth.psn == s->t.bth.psn && t.bth.opcode == s->t.bth.opcode);

	const uint8_t *g = d->pkt.grh;

	if (encap == UROCE_ENCAP_V2_IPV4) {
		static const uint8_t z20[20];

		CHECK(memcmp(g, z20, 20) == 0);
		CHECK(g[20] == 0x45 && g[29] == 17);
		CHECK(uroce_get_be16(g + 22) == len + 28);
		CHECK(uroce_get_be16(g + 24) == d->ip_id);
		CHECK(uroce_get_be16(g + 26) == 0x4000);
		CHECK(g[21] == d->tclass && g[28] == d->hop_limit);
		CHECK(uroce_get_be16(g + 30) == uroce_ipv4_csum(g + 20));
		CHECK(memcmp(g + 32, sgid + 12, 4) == 0 && memcmp(g + 36, dgid + 12, 4) == 0);
	} else {
		CHECK(g[0] >> 4 == 6);
		CHECK(memcmp(g + 8, sgid, 16) == 0 && memcmp(g + 24, dgid, 16) == 0);
		CHECK(g[7] == d->hop_limit);
		if (encap == UROCE_ENCAP_V1) {
			CHECK(g[6] == UROCE_GRH_NEXT_HDR && uroce_get_be16(g + 4) == len);
		} else {
			CHECK(g[6] == 17 && uroce_get_be16(g + 4) == len + 8);
		}
	}
}

/* Receive until want packets were handed to fn or done() says so, or timeout_ms passes. */
int rx_until(struct uroce_backend *b, int want, rx_fn fn, void *ctx, int timeout_ms,
	     int (*more)(struct uroce_backend *, void *))
{
	struct uroce_rx_desc out[UROCE_BACKEND_BATCH];
	uint64_t deadline = mono_ms() + (uint64_t)timeout_ms;
	int got = 0;

	for (;;) {
		int r = uroce_backend_rx(b, out, UROCE_BACKEND_BATCH);

		CHECKF(r >= 0, "rx_burst: %s", strerror(-r));
		if (r < 0)
			return got;
		for (int i = 0; i < r; i++)
			fn(&out[i], ctx);
		got += r;
		if (want >= 0 && got >= want)
			return got;
		if (more && !more(b, ctx))
			return got;
		if (r > 0)
			continue;
		uint64_t now = mono_ms();

		if (now >= deadline)
			return got;
		struct pollfd p = {.fd = uroce_backend_fd(b), .events = POLLIN};

		poll(&p, 1, (int)(deadline - now));
	}
}

void on_collect(const struct uroce_rx_desc *d, void *ctx)
{
	struct collect *c = ctx;

	CHECKF(c->idx < c->n, "more packets than sent");
	if (c->idx >= c->n)
		return;
	check_rx(d, &c->sent[c->idx], c->encap, c->sgid, c->dgid);
	if (c->encap != UROCE_ENCAP_V1) {
		CHECK(d->sport == c->want_sport);
		CHECK(d->dport == c->want_dport);
	}
	if (c->want_hop >= 0)
		CHECKF(d->hop_limit == c->want_hop, "hop %u want %d", d->hop_limit, c->want_hop);
	CHECKF(d->tclass == c->want_tclass, "tclass 0x%x want 0x%x", d->tclass, c->want_tclass);
	/* IP_PMTUDISC_DO: the kernel sends ID 0, and our ICRC was made with 0 (1.12); segment k of
	 * a GSO send has ID k. */
	uint16_t want_id = c->want_ids ? c->want_ids[c->idx] : 0;

	CHECKF(d->ip_id == want_id, "IPv4 ID 0x%x recovered for our own packet %d, want 0x%x",
	       d->ip_id, c->idx, want_id);
	c->ce += d->pkt.ecn_ce;
	c->idx++;
	CHECK_BAIL();
}

/*
 * Send d[0..n) from a (3 s at most), recording in ids[] the IPv4 ID each packet left with (packets
 * of one length back to back may leave as one GSO send: IDs 0, 1, ...). With c, packets are
 * received on b as they go, so that its receive buffer never overflows.
 */
void send_burst(struct uroce_backend *a, const struct uroce_tx_desc *d, int n, uint16_t *ids,
		struct uroce_backend *b, struct collect *c, const char *what)
{
	uint64_t deadline = mono_ms() + 3000;
	int done = 0;

	while (done < n && mono_ms() < deadline) {
		int r = uroce_backend_tx(a, d + done, n - done);

		CHECKF(r >= 0, "%s: tx_burst: %s", what, strerror(-r));
		if (r < 0)
			break;
		memcpy(ids + done, uroce_backend_base(a)->tx_ip_id, (size_t)r * sizeof(ids[0]));
		done += r;
		if (c)
			rx_until(b, -1, on_collect, c, 0, NULL);
	}
	CHECKF(done == n, "%s: sent %d of %d", what, done, n);
}

/* Send one packet of every opcode from a to b over path and check each on arrival. */
void every_opcode(struct uroce_backend *a, struct uroce_backend *b, const struct uroce_path *path,
		  int want_hop, const char *what)
{
	static struct sent sent[256];
	static struct uroce_tx_desc d[256];
	int n = 0;

	for (int op = 0; op < 256; op++) {
		if (!uroce_op_valid((uint8_t)op))
			continue;
		make_pkt(&sent[n], (uint8_t)op, 1000u + (unsigned)n, pay_len_for((uint8_t)op, 1));
		d[n].pkt = &sent[n].pkt;
		d[n].path = path;
		d[n].icrc_xor = 0;
		n++;
	}
	/* Larger than a batch (and a 4 KiB payload) to cross sendmmsg boundaries. */
	make_pkt(&sent[n], UROCE_OP_RC_SEND_ONLY, 1000u + (unsigned)n, MAXPAY);
	d[n].pkt = &sent[n].pkt;
	d[n].path = path;
	d[n].icrc_xor = 0;
	n++;

	static uint16_t ids[256];
	struct collect c = {sent,
			    n,
			    0,
			    path->encap,
			    path->sgid,
			    path->dgid,
			    a->fixed_sport ? a->fixed_sport : path->sport,
			    b->port,
			    want_hop,
			    path->traffic_class,
			    0,
			    ids};
	send_burst(a, d, n, ids, b, &c, what);
	rx_until(b, n - c.idx, on_collect, &c, 3000, NULL);
	CHECKF(c.idx == n, "%s: received %d of %d", what, c.idx, n);
	CHECKF(c.ce == ((path->traffic_class & 3) == 3 ? n : 0), "%s: %d ECN CE marks", what, c.ce);
	printf("%s: %d packets of every opcode ok\n", what, c.idx);
}

/* Open a UDP backend on the first free port from *port (tests may run in parallel). */
struct uroce_backend *open_udp(const uint8_t (*addrs)[16], int n, uint16_t port)
{
	struct uroce_backend_cfg cfg;
	struct uroce_backend *b = NULL;
	char err[256] = "";

	memset(&cfg, 0, sizeof(cfg));
	memcpy(cfg.addrs, addrs, (size_t)n * 16);
	cfg.n_addrs = n;
	cfg.port = port;
	cfg.ifname = "lo";
	cfg.err = err;
	cfg.errlen = sizeof(err);
	int r = uroce_udp_ops.open(&cfg, &b);

	if (r < 0) {
		if (r != -EADDRINUSE)
			fprintf(stderr, "open udp: %s (%s)\n", strerror(-r), err);
		return NULL;
	}
	return b;
}

void on_count(const struct uroce_rx_desc *d, void *ctx)
{
	struct count_ctx *c = ctx;
	uint32_t psn = uroce_get_be24(d->pkt.data + 9);

	c->n++;
	c->last_id = d->ip_id;
	c->last_len = d->pkt.len;
	if (psn < 1024) {
		if (c->bitmap[psn / 8] & (1u << (psn % 8)))
			c->dups++;
		c->bitmap[psn / 8] |= (uint8_t)(1u << (psn % 8));
	}
	if ((int)psn < c->last_psn)
		c->inversions++;
	c->last_psn = (int)psn;
}

/* The transport bytes of s, with the ICRC for an IPv4 pseudo-header with the given ID. */
size_t v4_datagram(uint8_t *out, const struct sent *s, const uint8_t *src, const uint8_t *dst,
		   uint16_t sport, uint16_t dport, uint16_t id, uint8_t *frame, size_t *frame_len)
{
	static uint8_t buf[MAXPAY + 256];
	struct uroce_frame f;

	memset(&f, 0, sizeof(f));
	f.encap = UROCE_ENCAP_V2_IPV4;
	f.t = s->t;
	f.ip4.ihl = 5;
	f.ip4.id = id;
	f.ip4.frag = 0x4000;
	f.ip4.ttl = 64;
	memcpy(f.ip4.src, src + 12, 4);
	memcpy(f.ip4.dst, dst + 12, 4);
	f.udp.sport = sport;
	f.udp.dport = dport;
	ssize_t n = uroce_frame_encode(buf, sizeof(buf), &f);

	if (n < 42)
		abort();
	memcpy(out, buf + 42, (size_t)n - 42);
	if (frame) {
		memcpy(frame, buf + 14, (size_t)n - 14);
		*frame_len = (size_t)n - 14;
	}
	return (size_t)n - 42;
}
