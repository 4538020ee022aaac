/* SPDX-License-Identifier: MIT */
/*
 * I/O backend tests: the UDP (RoCE v2) backend on loopback, the AF_PACKET (RoCE v1) backend and
 * v2 across a veth pair in network namespaces (netns.sh creates them), fault injection, the pcap
 * tap, and the privilege error. One binary, one mode per ctest test:
 *
 *   test_io loopback PCAP [PORT]  every opcode over 127.0.0.1 and ::1; ECN; corrupted and short
 *                             datagrams; the IPv4 ID solver (socket- and raw-sent IDs); PCAP gets
 *                             the tap capture (checked by loopback.sh with uroce pcap-check, scapy)
 *   test_io solver [VECTORS]  uroce_v2_rx_verify fed directly: every ID bit, bit flips, lengths;
 *                             the IDs of the Soft-RoCE captures in VECTORS
 *   test_io faults            UROCE_FAULTS parsing and the injector on loopback
 *   test_io eperm             AF_PACKET without CAP_NET_RAW: -EPERM and the message
 *   test_io netns NSA NSB IFA IFB PCAP   across the veth pair (run by netns.sh as root)
 *   test_io blast [SECONDS]   throughput of 4 KiB packets over loopback (not a ctest test)
 *
 * Waiting is poll() with a deadline; nothing sleeps.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "host/config/io_counters.h"
#include "host/io/afpacket.h"
#include "host/io/backend.h"
#include "host/io/faults.h"
#include "host/io/pcap.h"
#include "host/io/pcap_sink.h"
#include "host/io/pcap_tap.h"
#include "host/io/share_members.h"
#include "host/io/udp.h"
#include "host/io/v2_rx.h"
#include "host/io/wrap_env.h"
#include "host/os/neigh.h"
#include "wire/bytes.h"
#include "wire/icrc.h"
#include "wire/packet.h"

#define MAXPAY 4096

static uint8_t payload_mem[MAXPAY + 64]; /* stands in for registered memory */

static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void gid4(uint8_t g[16], const char *s)
{
	memset(g, 0, 16);
	g[10] = g[11] = 0xFF;
	if (inet_pton(AF_INET, s, g + 12) != 1)
		abort();
}

static void gid6(uint8_t g[16], const char *s)
{
	if (inet_pton(AF_INET6, s, g) != 1)
		abort();
}

/* ---- packets ---------------------------------------------------------------------------- */

struct sent {
	struct uroce_tx_pkt pkt;
	struct uroce_tpkt t;
};

static uint32_t pay_len_for(uint8_t op, unsigned salt)
{
	const struct uroce_opinfo *oi = &uroce_opinfo[op];

	if (oi->flags & UROCE_OPF_ATOMIC_WRITE)
		return 8;
	if (!(oi->flags & UROCE_OPF_PAYLOAD))
		return 0;
	return (op * 37u + salt * 11u) % 301u; /* odd and even lengths, pads 0..3, and 0 */
}

/* A packet to QPN dqpn. */
static void make_pkt_to(struct sent *s, uint8_t op, uint32_t psn, uint32_t plen, uint32_t dqpn)
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

static void make_pkt(struct sent *s, uint8_t op, uint32_t psn, uint32_t plen)
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

/* ---- receiving ---------------------------------------------------------------------------- */

typedef void (*rx_fn)(const struct uroce_rx_desc *d, void *ctx);

/* Receive until want packets were handed to fn or done() says so, or timeout_ms passes. */
static int rx_until(struct uroce_backend *b, int want, rx_fn fn, void *ctx, int timeout_ms,
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

struct collect {
	struct sent *sent;
	int n;
	int idx;
	enum uroce_encap encap;
	const uint8_t *sgid, *dgid;
	uint16_t want_sport;
	uint16_t want_dport;
	int want_hop;
	uint8_t want_tclass;
	int ce;
	const uint16_t *want_ids; /* the IPv4 ID of each packet; NULL: all 0 */
};

static void on_collect(const struct uroce_rx_desc *d, void *ctx)
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
static void send_burst(struct uroce_backend *a, const struct uroce_tx_desc *d, int n,
		       uint16_t *ids, struct uroce_backend *b, struct collect *c, const char *what)
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
static void every_opcode(struct uroce_backend *a, struct uroce_backend *b,
			 const struct uroce_path *path, int want_hop, const char *what)
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

/*
 * UDP GSO and GRO: 250 RDMA WRITE packets, runs of 49 MIDDLEs of 1 KiB then a shorter LAST.
 * The second half of each run goes to another QP: in the first four runs one of the same QPN
 * slot (one process of a shared device), so each of those runs leaves as one GSO send (the
 * kernel's 64-segment limit and 64 KiB allow it); in the last run one of another slot, whose
 * packets must not join the first half's send (steering sees a send's first segment only).
 * Segment k of a send has IPv4 ID k (ICRC computed so; the receiver recovers exactly k), and a
 * send arrives whole over loopback (b has UDP_GRO), where b splits it into its packets again.
 */
static void gso_burst(struct uroce_backend *a, struct uroce_backend *b,
		      const struct uroce_path *path, const char *what)
{
	enum { N = 250, RUN = 50, HALF = RUN / 2, SENDS = N / RUN + 1 };
	static struct sent sent[N];
	static struct uroce_tx_desc d[N];
	static uint16_t ids[N];
	bool v4 = path->encap == UROCE_ENCAP_V2_IPV4;

	for (int i = 0; i < N; i++) {
		bool last = i % RUN == RUN - 1, last_run = i >= N - RUN;
		uint32_t qpn = i % RUN < HALF ? 0x123
			       : last_run     ? 0x123 + UROCE_SHARE_SLOT_QPNS
					      : 0x124;

		make_pkt_to(&sent[i], last ? UROCE_OP_RC_WRITE_LAST : UROCE_OP_RC_WRITE_MIDDLE,
			    3000u + (unsigned)i, last ? 100 : 1024, qpn);
		d[i] = (struct uroce_tx_desc){&sent[i].pkt, path, 0};
	}
	uint64_t gso0 = uroce_backend_counter(a, UROCE_IO_TX_GSO);
	uint64_t gro0 = uroce_backend_counter(b, UROCE_IO_RX_GRO);
	struct collect c = {sent, N, 0, path->encap, path->sgid, path->dgid,
			    a->fixed_sport ? a->fixed_sport : path->sport, b->port, -1,
			    path->traffic_class, 0, ids};
	send_burst(a, d, N, ids, NULL, NULL, what);
	uint64_t sends = uroce_backend_counter(a, UROCE_IO_TX_GSO) - gso0;

	/* One send per run, two for the last: IDs 0..49 in each, 0..24 twice (IPv6: no ID, 0). */
	CHECKF(sends == SENDS, "%s: %llu GSO sends, want %d", what, (unsigned long long)sends,
	       SENDS);
	for (int i = 0; i < N; i++) {
		int k = i >= N - RUN ? i % HALF : i % RUN;

		CHECKF(ids[i] == (v4 ? k : 0), "%s: packet %d left with IPv4 ID %u", what, i,
		       ids[i]);
	}
	/*
	 * One burst asking for more packets than the backend's batch of datagrams (32): whole
	 * datagrams come out. Fewer than asked must mean nothing is held back, since the progress
	 * thread then sleeps on the socket (a burst cut to the batch held the rest of the GRO
	 * datagrams until the peer's ACK timeout woke it).
	 */
	static struct uroce_rx_desc big[256];
	struct pollfd pf = {.fd = uroce_backend_fd(b), .events = POLLIN};

	CHECKF(poll(&pf, 1, 3000) == 1, "%s: nothing to receive", what);
	int first = uroce_backend_rx(b, big, 256);

	bool whole = first >= RUN && (first % RUN == 0 || first == N - HALF);

	CHECKF(whole, "%s: a burst of 256 gave %d packets, not whole datagrams", what, first);
	for (int i = 0; i < first; i++)
		on_collect(&big[i], &c);
	rx_until(b, N - c.idx, on_collect, &c, 3000, NULL);
	CHECKF(c.idx == N, "%s: received %d of %d", what, c.idx, N);
	uint64_t gro = uroce_backend_counter(b, UROCE_IO_RX_GRO) - gro0;

	CHECKF(gro >= 1, "%s: no GRO datagram received", what);
	printf("%s: %d packets in %llu GSO sends, %llu GRO datagrams received, ok\n", what, c.idx,
	       (unsigned long long)sends, (unsigned long long)gro);
}

/* ---- loopback ----------------------------------------------------------------------------- */

/* Open a UDP backend on the first free port from *port (tests may run in parallel). */
static struct uroce_backend *open_udp(const uint8_t (*addrs)[16], int n, uint16_t port)
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

struct count_ctx {
	int n;
	uint16_t last_id;
	uint32_t last_len;
	uint8_t bitmap[1024 / 8];
	int dups;
	int inversions;
	int last_psn;
};

static void on_count(const struct uroce_rx_desc *d, void *ctx)
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

/* Send a datagram to (dst, port) from a plain UDP socket. */
static void raw_udp_send(int family, const uint8_t *dst, uint16_t port, const void *buf, size_t len)
{
	int fd = socket(family, SOCK_DGRAM, 0);
	union {
		struct sockaddr sa;
		struct sockaddr_in in;
		struct sockaddr_in6 in6;
	} a;

	memset(&a, 0, sizeof(a));
	if (family == AF_INET) {
		a.in.sin_family = AF_INET;
		a.in.sin_port = htons(port);
		memcpy(&a.in.sin_addr, dst + 12, 4);
	} else {
		a.in6.sin6_family = AF_INET6;
		a.in6.sin6_port = htons(port);
		memcpy(&a.in6.sin6_addr, dst, 16);
	}
	CHECK(fd >= 0);
	CHECK(sendto(fd, buf, len, 0, &a.sa, family == AF_INET ? sizeof(a.in) : sizeof(a.in6)) ==
	      (ssize_t)len);
	close(fd);
}

/* The transport bytes of s, with the ICRC for an IPv4 pseudo-header with the given ID. */
static size_t v4_datagram(uint8_t *out, const struct sent *s, const uint8_t *src,
			  const uint8_t *dst, uint16_t sport, uint16_t dport, uint16_t id,
			  uint8_t *frame, size_t *frame_len)
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

/*
 * Bad GRO datagrams, from a plain socket with UDP_SEGMENT (arriving whole at b, which has
 * UDP_GRO): 1 KiB WRITE MIDDLE segments, the second with a broken ICRC, then a 5-byte tail.
 * The good ones are delivered, the broken one is an ICRC drop, the tail a malformed drop.
 */
static void gro_bad(struct uroce_backend *b, const uint8_t *a4, const uint8_t *b4, uint16_t port)
{
	static uint8_t buf[4 * 1100];
	struct sent s;
	size_t len = 0, seg = 0;
	struct sockaddr_in from = {.sin_family = AF_INET}, to = {.sin_family = AF_INET};
	socklen_t fl = sizeof(from);
	int fd = socket(AF_INET, SOCK_DGRAM, 0);

	CHECK(fd >= 0);
	memcpy(&from.sin_addr, a4 + 12, 4);
	CHECK(bind(fd, (struct sockaddr *)&from, sizeof(from)) == 0);
	CHECK(getsockname(fd, (struct sockaddr *)&from, &fl) == 0);
	for (int k = 0; k < 3; k++) {
		make_pkt(&s, UROCE_OP_RC_WRITE_MIDDLE, 5000u + (unsigned)k, 1024);
		seg = v4_datagram(buf + len, &s, a4, b4, ntohs(from.sin_port), port, (uint16_t)k,
				  NULL, NULL);
		if (k == 1)
			buf[len + seg - 1] ^= 0x40; /* the ICRC */
		len += seg;
	}
	memcpy(buf + len, "short", 5);
	len += 5;

	uint16_t gs = (uint16_t)seg;
	uint8_t ctl[CMSG_SPACE(sizeof(gs))];
	struct iovec iov = {buf, len};
	struct msghdr m = {.msg_name = &to, .msg_namelen = sizeof(to), .msg_iov = &iov,
			   .msg_iovlen = 1, .msg_control = ctl, .msg_controllen = sizeof(ctl)};
	struct cmsghdr *c = CMSG_FIRSTHDR(&m);

	memset(ctl, 0, sizeof(ctl));
	c->cmsg_level = IPPROTO_UDP;
	c->cmsg_type = 103; /* UDP_SEGMENT */
	c->cmsg_len = CMSG_LEN(sizeof(gs));
	memcpy(CMSG_DATA(c), &gs, sizeof(gs));
	to.sin_port = htons(port);
	memcpy(&to.sin_addr, b4 + 12, 4);

	uint64_t icrc0 = uroce_backend_counter(b, UROCE_IO_RX_DROP_ICRC);
	uint64_t mal0 = uroce_backend_counter(b, UROCE_IO_RX_DROP_MALFORMED);
	uint64_t gro0 = uroce_backend_counter(b, UROCE_IO_RX_GRO);
	struct count_ctx cc;

	CHECKF(sendmsg(fd, &m, 0) == (ssize_t)len, "sendmsg with UDP_SEGMENT: %s", strerror(errno));
	close(fd);
	memset(&cc, 0, sizeof(cc));
	cc.last_psn = -1;
	uint64_t deadline = mono_ms() + 2000;

	while (uroce_backend_counter(b, UROCE_IO_RX_DROP_MALFORMED) == mal0 && mono_ms() < deadline)
		rx_until(b, -1, on_count, &cc, 50, NULL);
	CHECKF(cc.n == 2, "bad GRO datagram: %d packets delivered, want 2", cc.n);
	CHECK(uroce_backend_counter(b, UROCE_IO_RX_DROP_ICRC) == icrc0 + 1);
	CHECK(uroce_backend_counter(b, UROCE_IO_RX_DROP_MALFORMED) == mal0 + 1);
	CHECK(uroce_backend_counter(b, UROCE_IO_RX_GRO) == gro0 + 1);
	printf("GRO datagram of 3 packets and a tail, one ICRC broken: %d delivered, 1 ICRC drop, "
	       "1 malformed\n", cc.n);
}

/* Send n RDMA WRITE MIDDLEs of 256 bytes from a over path (PSNs from psn). */
static void send_n(struct uroce_backend *a, const struct uroce_path *path, int n, uint32_t psn,
		   const char *what)
{
	static struct sent s[64];
	static struct uroce_tx_desc d[64];
	static uint16_t ids[64];

	CHECKF(n <= 64, "%s: send_n takes 64 packets at most, not %d", what, n);
	if (n > 64)
		return;
	for (int i = 0; i < n; i++) {
		make_pkt(&s[i], UROCE_OP_RC_WRITE_MIDDLE, psn + (uint32_t)i, 256);
		d[i] = (struct uroce_tx_desc){&s[i].pkt, path, 0};
	}
	send_burst(a, d, n, ids, NULL, NULL, what);
}

/* Send 5 packets from a over path and count them in on b. */
static void five_more(struct uroce_backend *a, const struct uroce_path *path, uint32_t psn,
		      struct uroce_backend *b, struct count_ctx *cc, const char *what)
{
	int before = cc->n;

	send_n(a, path, 5, psn, what);
	rx_until(b, 5, on_count, cc, 3000, NULL);
	CHECKF(cc->n == before + 5, "rebind: %s: received %d of 5", what, cc->n - before);
}

/* Rebind b to the one address gid. */
static void rebind_one(struct uroce_backend *b, struct uroce_backend_cfg *cfg, const uint8_t *gid)
{
	memcpy(cfg->addrs[0], gid, 16);
	cfg->n_addrs = 1;
	CHECKF(uroce_udp_rebind(b, cfg, NULL) == 0, "rebind to one address: %s", cfg->err);
}

/*
 * b's addresses change (uroce_udp_rebind): what its kept socket already holds is still
 * received; a new address receives; a socket moved in the array (the one before it gone)
 * still wakes the backend's fd.
 */
static void rebind_keeps(struct uroce_backend *a, struct uroce_backend *b, const uint8_t *a4,
			 const uint8_t *b4, uint16_t port)
{
	struct uroce_backend_cfg cfg;
	char err[256] = "";
	uint8_t c4[16];
	struct uroce_path to_b = {.encap = UROCE_ENCAP_V2_IPV4}, to_c;
	struct count_ctx cc;

	gid4(c4, "127.0.0.3");
	memcpy(to_b.sgid, a4, 16);
	memcpy(to_b.dgid, b4, 16);
	to_c = to_b;
	memcpy(to_c.dgid, c4, 16);
	memset(&cfg, 0, sizeof(cfg));
	cfg.port = port;
	cfg.ifname = "lo";
	cfg.err = err;
	cfg.errlen = sizeof(err);

	/* 20 packets wait in b's socket for 127.0.0.2 while 127.0.0.3 is added. */
	send_n(a, &to_b, 20, 100, "rebind: to 127.0.0.2");
	memcpy(cfg.addrs[0], b4, 16);
	memcpy(cfg.addrs[1], c4, 16);
	cfg.n_addrs = 2;
	CHECKF(uroce_udp_rebind(b, &cfg, NULL) == 0, "rebind to .2 and .3: %s", err);
	memset(&cc, 0, sizeof(cc));
	cc.last_psn = -1;
	rx_until(b, 20, on_count, &cc, 3000, NULL);
	CHECKF(cc.n == 20, "rebind: %d of the 20 packets queued before it received", cc.n);
	five_more(a, &to_c, 200, b, &cc, "the new address 127.0.0.3");

	/* 127.0.0.2 goes: 127.0.0.3's socket moves to the first place. */
	rebind_one(b, &cfg, c4);
	five_more(a, &to_c, 300, b, &cc, "127.0.0.3 moved");

	/* Back to 127.0.0.2 alone, as the later tests expect; a bad set changes nothing. */
	cfg.n_addrs = 0;
	CHECK(uroce_udp_rebind(b, &cfg, NULL) == -EINVAL);
	rebind_one(b, &cfg, b4);
	five_more(a, &to_b, 400, b, &cc, "back on 127.0.0.2");
	printf("rebind: queued packets kept, new address and moved socket receive, ok\n");
}

static int test_loopback(const char *pcap, int fixed_port)
{
	uint8_t a4[16], b4[16], l6[16];
	uint8_t addrs_a[2][16], addrs_b[1][16];
	struct uroce_backend *a = NULL, *b = NULL;
	uint16_t port;

	gid4(a4, "127.0.0.1");
	gid4(b4, "127.0.0.2");
	gid6(l6, "::1");
	memcpy(addrs_a[0], a4, 16);
	memcpy(addrs_a[1], l6, 16);
	memcpy(addrs_b[0], b4, 16);
	for (port = fixed_port ? (uint16_t)fixed_port : 14791;
	     port < (fixed_port ? fixed_port + 1 : 14891); port++) {
		a = open_udp((const uint8_t(*)[16])addrs_a, 2, port);
		if (!a)
			continue;
		b = open_udp((const uint8_t(*)[16])addrs_b, 1, port);
		if (b)
			break;
		uroce_backend_close(a);
		a = NULL;
	}
	CHECK(a && b);
	if (!a || !b)
		return check_exit("io_loopback");
	printf("loopback: port %u\n", port);

	struct uroce_pcap_sink *sink = NULL;

	CHECK(uroce_pcap_sink_open(&sink, pcap) == 0);
	CHECK(uroce_pcap_tap_wrap(&a, sink) == 0);
	CHECK(uroce_pcap_tap_wrap(&b, sink) == 0);
	uroce_pcap_sink_put(sink); /* the taps hold it */

	struct uroce_path p4 = {.encap = UROCE_ENCAP_V2_IPV4, .traffic_class = 0, .hop_limit = 0};

	memcpy(p4.sgid, a4, 16);
	memcpy(p4.dgid, b4, 16);
	p4.sport = uroce_udp_sport(0x42, 0x123, 0);
	every_opcode(a, b, &p4, 64, "v2/IPv4 127.0.0.1 -> 127.0.0.2");

	/* TOS and TTL per packet; CE marks reported. */
	p4.traffic_class = 0x03 | 0xB8;
	p4.hop_limit = 7;
	every_opcode(a, b, &p4, 7, "v2/IPv4 TOS 0xBB (CE), TTL 7");

	/* The reverse direction. */
	struct uroce_path p4r = p4;

	memcpy(p4r.sgid, b4, 16);
	memcpy(p4r.dgid, a4, 16);
	p4r.traffic_class = 0x02;
	p4r.hop_limit = 0;
	every_opcode(b, a, &p4r, 64, "v2/IPv4 127.0.0.2 -> 127.0.0.1");

	/* IPv6: a sends to itself on ::1 (no second unprivileged IPv6 loopback address). */
	struct uroce_path p6 = {
		.encap = UROCE_ENCAP_V2_IPV6, .traffic_class = 0x12, .hop_limit = 9};

	memcpy(p6.sgid, l6, 16);
	memcpy(p6.dgid, l6, 16);
	p6.sport = uroce_udp_sport(0x42, 0x123, 0xABCDE);
	CHECK(p6.sport == 0xFCF4);
	CHECK(uroce_udp_sport(0x11, 0x12, 0) == 0xC132);
	every_opcode(a, a, &p6, 9, "v2/IPv6 ::1 -> ::1");

	/* Segmentation offload both ways, IPv4 and IPv6. */
	struct uroce_path g4 = p4;

	g4.traffic_class = 0x02;
	g4.hop_limit = 0;
	gso_burst(a, b, &g4, "GSO/GRO v2/IPv4");
	gso_burst(a, a, &p6, "GSO/GRO v2/IPv6");
	gro_bad(b, a4, b4, port);
	rebind_keeps(a, b, a4, b4, port);

	/* A path the backend does not serve: counted, consumed. */
	{
		struct sent s;
		struct uroce_path bad = p4;
		struct uroce_tx_desc d = {&s.pkt, &bad, 0};

		make_pkt(&s, UROCE_OP_RC_ACK, 1, 0);
		gid4(bad.sgid, "127.0.0.9");
		uint64_t before = uroce_backend_counter(a, UROCE_IO_TX_NO_SRC);

		CHECK(uroce_backend_tx(a, &d, 1) == 1);
		CHECK(uroce_backend_counter(a, UROCE_IO_TX_NO_SRC) == before + 1);
		bad = p4;
		bad.encap = UROCE_ENCAP_V1;
		CHECK(uroce_backend_tx(a, &d, 1) == 1);
		CHECK(uroce_backend_counter(a, UROCE_IO_TX_NO_SRC) == before + 2);
	}

	/* Datagrams from plain sockets: bad ICRC, too short, and the ID solver (ID != 0). */
	{
		struct sent s;
		uint8_t dg[MAXPAY + 64];
		struct count_ctx c;
		uint64_t icrc0 = uroce_backend_counter(b, UROCE_IO_RX_DROP_ICRC);
		uint64_t mal0 = uroce_backend_counter(b, UROCE_IO_RX_DROP_MALFORMED);

		make_pkt(&s, UROCE_OP_RC_SEND_ONLY, 7, 33);
		/* The kernel's UDP socket picks a source port we learn only on receipt: send from a
		 * bound one so the ICRC (which covers the port) can be computed in advance. */
		int fd = socket(AF_INET, SOCK_DGRAM, 0);
		struct sockaddr_in me = {.sin_family = AF_INET, .sin_port = 0};
		struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = htons(port)};
		socklen_t ml = sizeof(me);

		memcpy(&me.sin_addr, a4 + 12, 4);
		memcpy(&to.sin_addr, b4 + 12, 4);
		int one = IP_PMTUDISC_DO;

		CHECK(setsockopt(fd, IPPROTO_IP, IP_MTU_DISCOVER, &one, sizeof(one)) == 0);
		CHECK(bind(fd, (struct sockaddr *)&me, sizeof(me)) == 0);
		CHECK(getsockname(fd, (struct sockaddr *)&me, &ml) == 0);
		uint16_t sp = ntohs(me.sin_port);
		const uint16_t ids[] = {0x1234, 1, 0x8000, 0xFFFF};

		for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
			/* ICRC made for ID ids[i]; the kernel sends ID 0; the receiver must solve.
			 */
			size_t n = v4_datagram(dg, &s, a4, b4, sp, port, ids[i], NULL, NULL);

			CHECK(sendto(fd, dg, n, 0, (struct sockaddr *)&to, sizeof(to)) ==
			      (ssize_t)n);
			memset(&c, 0, sizeof(c));
			rx_until(b, 1, on_count, &c, 2000, NULL);
			CHECKF(c.n == 1 && c.last_id == ids[i], "solved ID 0x%x want 0x%x",
			       c.last_id, ids[i]);
		}
		CHECK(uroce_backend_counter(b, UROCE_IO_RX_IPID_SOLVED) >= 4);

		/* Wrong ICRC: every bit flip of it. */
		size_t n = v4_datagram(dg, &s, a4, b4, sp, port, 0, NULL, NULL);

		for (int bit = 0; bit < 32; bit++) {
			dg[n - 4 + bit / 8] ^= (uint8_t)(1u << (bit % 8));
			CHECK(sendto(fd, dg, n, 0, (struct sockaddr *)&to, sizeof(to)) ==
			      (ssize_t)n);
			dg[n - 4 + bit / 8] ^= (uint8_t)(1u << (bit % 8));
		}
		/* A payload byte changed. */
		dg[20] ^= 0x40;
		CHECK(sendto(fd, dg, n, 0, (struct sockaddr *)&to, sizeof(to)) == (ssize_t)n);
		dg[20] ^= 0x40;
		close(fd);
		/* Too short to be RoCE, from any socket. */
		raw_udp_send(AF_INET, b4, port, "short", 5);
		raw_udp_send(AF_INET6, l6, port, "", 0);
		memset(&c, 0, sizeof(c));
		uint64_t deadline = mono_ms() + 2000;

		while (uroce_backend_counter(b, UROCE_IO_RX_DROP_ICRC) < icrc0 + 33 &&
		       mono_ms() < deadline)
			rx_until(b, 1, on_count, &c, 50, NULL);
		deadline = mono_ms() + 2000;
		while (uroce_backend_counter(a, UROCE_IO_RX_DROP_MALFORMED) < 1 &&
		       mono_ms() < deadline)
			rx_until(a, 1, on_count, &c, 50, NULL);
		CHECKF(c.n == 0, "%d corrupt datagrams accepted", c.n);
		CHECKF(uroce_backend_counter(b, UROCE_IO_RX_DROP_ICRC) == icrc0 + 33,
		       "icrc drops %llu",
		       (unsigned long long)(uroce_backend_counter(b, UROCE_IO_RX_DROP_ICRC) -
					    icrc0));
		CHECK(uroce_backend_counter(b, UROCE_IO_RX_DROP_MALFORMED) == mal0 + 1);
		CHECK(uroce_backend_counter(a, UROCE_IO_RX_DROP_MALFORMED) == 1);
	}

	/* A real non-zero ID on the wire, from a raw socket (root only). */
	{
		int fd = socket(AF_INET, SOCK_RAW, IPPROTO_RAW);

		if (fd < 0) {
			printf("loopback: no raw socket (%s): real-ID case skipped\n",
			       strerror(errno));
		} else {
			struct sent s;
			uint8_t dg[MAXPAY + 64], frame[MAXPAY + 128];
			size_t flen;
			struct count_ctx c;
			struct sockaddr_in to = {.sin_family = AF_INET};

			memcpy(&to.sin_addr, b4 + 12, 4);
			make_pkt(&s, UROCE_OP_UD_SEND_ONLY, 9, 101);
			v4_datagram(dg, &s, a4, b4, 0xC001, port, 0xBEEF, frame, &flen);
			CHECK(sendto(fd, frame, flen, 0, (struct sockaddr *)&to, sizeof(to)) ==
			      (ssize_t)flen);
			memset(&c, 0, sizeof(c));
			rx_until(b, 1, on_count, &c, 2000, NULL);
			CHECKF(c.n == 1 && c.last_id == 0xBEEF, "raw: got %d, ID 0x%x", c.n,
			       c.last_id);
			close(fd);
			printf("loopback: IPv4 ID 0xBEEF sent raw, recovered 0x%x\n", c.last_id);
		}
	}

	/* poll() on the backend fd: nothing pending now, so it times out at once. */
	{
		struct pollfd p = {.fd = uroce_backend_fd(a), .events = POLLIN};

		CHECK(poll(&p, 1, 0) == 0);
	}
	CHECK(uroce_backend_counter(a, UROCE_IO_PCAP_ERR) == 0);
	/* The tap recorded what left, not what was refused (TX_NO_SRC above). */
	CHECK(uroce_backend_counter(a, UROCE_IO_PCAP_TX) ==
	      uroce_backend_counter(a, UROCE_IO_TX_PKTS));
	CHECK(uroce_backend_counter(b, UROCE_IO_PCAP_TX) ==
	      uroce_backend_counter(b, UROCE_IO_TX_PKTS));
	CHECK(uroce_backend_counter(a, UROCE_IO_PCAP_TX) > 0);
	CHECK(uroce_backend_counter(b, UROCE_IO_PCAP_RX) > 0);
	printf("loopback: a tx %llu rx %llu, b tx %llu rx %llu, pcap tx %llu rx %llu\n",
	       (unsigned long long)uroce_backend_counter(a, UROCE_IO_TX_PKTS),
	       (unsigned long long)uroce_backend_counter(a, UROCE_IO_RX_PKTS),
	       (unsigned long long)uroce_backend_counter(b, UROCE_IO_TX_PKTS),
	       (unsigned long long)uroce_backend_counter(b, UROCE_IO_RX_PKTS),
	       (unsigned long long)(uroce_backend_counter(a, UROCE_IO_PCAP_TX) +
				    uroce_backend_counter(b, UROCE_IO_PCAP_TX)),
	       (unsigned long long)(uroce_backend_counter(a, UROCE_IO_PCAP_RX) +
				    uroce_backend_counter(b, UROCE_IO_PCAP_RX)));
	uroce_backend_close(a);
	uroce_backend_close(b);
	return check_exit("io_loopback");
}

/* ---- the receive check, fed directly -------------------------------------------------------- */

/*
 * Linux Soft-RoCE captures (tests/vectors): every v2/IPv4 packet, with its IP header hidden as a
 * UDP socket hides it, must verify, give back the ID rxe sent (non-zero, incrementing), and a
 * GRH slot whose IPv4 header is the captured one byte for byte.
 */
static void golden_ids(const char *dir)
{
	DIR *dp = opendir(dir);
	long pkts = 0, nonzero = 0;

	CHECKF(dp != NULL, "%s: %s", dir, strerror(errno));
	if (!dp)
		return;
	struct uroce_ipid_cache *cache = calloc(1, sizeof(*cache));
	struct dirent *de;

	while ((de = readdir(dp))) {
		size_t nl = strlen(de->d_name);
		char path[4096];
		uint8_t *buf;
		size_t len;
		struct uroce_pcap_rd rd;
		struct uroce_pcap_pkt pk;

		if (nl < 5 || strcmp(de->d_name + nl - 5, ".pcap") != 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (uroce_file_load(path, &buf, &len) != 0)
			continue;
		CHECK(uroce_pcap_open(&rd, buf, len) == 0);
		while (uroce_pcap_next(&rd, &pk) == 1) {
			struct uroce_frame f;
			struct uroce_v2_rx_in in;
			struct uroce_rx_desc d;

			if (uroce_frame_decode(&f, pk.data, pk.caplen) != 0 ||
			    f.encap != UROCE_ENCAP_V2_IPV4)
				continue;
			memset(&in, 0, sizeof(in));
			in.encap = f.encap;
			in.data = f.roce;
			in.len = f.roce_len;
			gid4(in.src, "0.0.0.1");
			gid4(in.dst, "0.0.0.1");
			memcpy(in.src + 12, f.ip4.src, 4);
			memcpy(in.dst + 12, f.ip4.dst, 4);
			in.sport = f.udp.sport;
			in.dport = f.udp.dport;
			in.tos = f.ip4.tos;
			in.ttl = f.ip4.ttl;
			int r = uroce_v2_rx_verify(&d, cache, &in);

			CHECKF(r == 0 && d.ip_id == f.ip4.id,
			       "%s: packet %ld: r %d ID 0x%x want 0x%x", de->d_name, pkts, r,
			       d.ip_id, f.ip4.id);
			CHECKF(memcmp(d.pkt.grh + 20, f.l3, 20) == 0, "%s: GRH slot differs",
			       de->d_name);
			pkts++;
			nonzero += f.ip4.id != 0;
			CHECK_BAIL();
		}
		free(buf);
	}
	closedir(dp);
	free(cache);
	printf("solver: %ld Soft-RoCE IPv4 packets (%ld with a non-zero ID): IDs recovered\n", pkts,
	       nonzero);
	CHECK(pkts > 100 && nonzero > 100);
}

static int test_solver(const char *vectors)
{
	struct uroce_ipid_cache *cache = calloc(1, sizeof(*cache));
	struct uroce_v2_rx_in in;
	struct uroce_rx_desc d;
	uint8_t src[16], dst[16];
	static uint8_t dg[MAXPAY + 64];
	long solved = 0, rejected = 0;

	gid4(src, "198.18.0.1");
	gid4(dst, "198.18.0.2");
	for (int i = 0; i < MAXPAY + 64; i++)
		payload_mem[i] = (uint8_t)(i * 7 + 3);
	const uint32_t lens[] = {0, 1, 2, 3, 4, 255, 1024, 1500, 4095, MAXPAY};

	for (size_t li = 0; li < sizeof(lens) / sizeof(lens[0]); li++) {
		struct sent s;

		make_pkt(&s, UROCE_OP_UC_SEND_ONLY, (uint32_t)li, lens[li]);
		/* Every single ID bit, and a few IDs with many bits. */
		uint16_t ids[20];
		int nid = 0;

		for (int bit = 0; bit < 16; bit++)
			ids[nid++] = (uint16_t)(1u << bit);
		ids[nid++] = 0;
		ids[nid++] = 0xFFFF;
		ids[nid++] = 0xA5C3;
		ids[nid++] = (uint16_t)(0x1357 + li);
		for (int k = 0; k < nid; k++) {
			size_t n = v4_datagram(dg, &s, src, dst, 0xC000 | (uint16_t)k, 4791, ids[k],
					       NULL, NULL);

			memset(&in, 0, sizeof(in));
			in.encap = UROCE_ENCAP_V2_IPV4;
			in.data = dg;
			in.len = (uint32_t)n;
			memcpy(in.src, src, 16);
			memcpy(in.dst, dst, 16);
			in.sport = 0xC000 | (uint16_t)k;
			in.dport = 4791;
			in.tos = 0x5A; /* masked: any value */
			in.ttl = 3;
			int r = uroce_v2_rx_verify(&d, (k & 1) ? cache : NULL, &in);

			CHECKF(r == 0 && d.ip_id == ids[k], "len %u id 0x%x: r %d id 0x%x",
			       lens[li], ids[k], r, d.ip_id);
			solved += r == 0;
			/* Every single-bit error in the transport bytes or ICRC is detected. */
			for (size_t bit = 0; bit < n * 8; bit += (n > 64 ? 61 : 1)) {
				if (bit / 8 == 4) /* BTH byte 4 is masked (FECN, BECN) */
					continue;
				dg[bit / 8] ^= (uint8_t)(1u << (bit % 8));
				r = uroce_v2_rx_verify(&d, cache, &in);
				CHECKF(r == -EILSEQ, "len %u id 0x%x bit %zu: accepted", lens[li],
				       ids[k], bit);
				rejected += r == -EILSEQ;
				dg[bit / 8] ^= (uint8_t)(1u << (bit % 8));
			}
			for (int bit = 0; bit < 32; bit++) {
				dg[n - 4 + bit / 8] ^= (uint8_t)(1u << (bit % 8));
				r = uroce_v2_rx_verify(&d, cache, &in);
				CHECKF(r == -EILSEQ, "ICRC bit %d accepted", bit);
				dg[n - 4 + bit / 8] ^= (uint8_t)(1u << (bit % 8));
			}
			/* A different source port changes the pseudo-header: rejected. */
			in.sport ^= 1;
			CHECK(uroce_v2_rx_verify(&d, cache, &in) == -EILSEQ);
			in.sport ^= 1;
			CHECK_BAIL();
		}
	}
	/* IPv6: no ID to solve; full-strength check. */
	{
		struct sent s;
		uint8_t s6[16], d6[16];
		struct uroce_frame f;
		static uint8_t buf[MAXPAY + 256];

		gid6(s6, "fd00:198:18::1");
		gid6(d6, "fd00:198:18::2");
		make_pkt(&s, UROCE_OP_RC_WRITE_ONLY_IMM, 77, 999);
		memset(&f, 0, sizeof(f));
		f.encap = UROCE_ENCAP_V2_IPV6;
		f.t = s.t;
		f.ip6.version = 6;
		f.ip6.hop_limit = 64;
		f.ip6.flow = 0x12345; /* masked */
		memcpy(f.ip6.src, s6, 16);
		memcpy(f.ip6.dst, d6, 16);
		f.udp.sport = 0xC123;
		f.udp.dport = 4791;
		ssize_t n = uroce_frame_encode(buf, sizeof(buf), &f);

		CHECK(n > 62);
		memset(&in, 0, sizeof(in));
		in.encap = UROCE_ENCAP_V2_IPV6;
		in.data = buf + 62;
		in.len = (uint32_t)(n - 62);
		memcpy(in.src, s6, 16);
		memcpy(in.dst, d6, 16);
		in.sport = 0xC123;
		in.dport = 4791;
		in.tos = 3;
		in.ttl = 1;
		CHECK(uroce_v2_rx_verify(&d, cache, &in) == 0);
		CHECK(d.pkt.ecn_ce && d.pkt.encap == UROCE_ENCAP_V2_IPV6);
		CHECK(memcmp(d.pkt.grh + 8, s6, 16) == 0 && d.pkt.grh[7] == 1);
		buf[62 + 20] ^= 1;
		CHECK(uroce_v2_rx_verify(&d, cache, &in) == -EILSEQ);
		buf[62 + 20] ^= 1;
		in.len = 15;
		CHECK(uroce_v2_rx_verify(&d, cache, &in) == -EBADMSG);
	}
	printf("solver: %ld IDs recovered, %ld corruptions rejected\n", solved, rejected);
	if (vectors)
		golden_ids(vectors);
	free(cache);
	return check_exit("io_solver");
}

/* ---- fault injection ---------------------------------------------------------------------- */

static int more_until_accounted(struct uroce_backend *b, void *ctx)
{
	(void)ctx;
	(void)b;
	return 1;
}

/* Send n packets from a to b through faults f; count what arrives. */
static void fault_run(struct uroce_backend *a_base, struct uroce_backend *b, const char *spec,
		      int n, struct count_ctx *c, uint64_t *lost)
{
	struct uroce_faults f;
	char err[256];
	struct uroce_backend *a = a_base;
	static struct sent sent[1024];
	static struct uroce_tx_desc d[1024];
	struct uroce_path p = {.encap = UROCE_ENCAP_V2_IPV4};

	CHECK(uroce_faults_parse(&f, spec, err, sizeof(err)) == 0);
	CHECK(uroce_faults_wrap(&a, &f) == 0);
	gid4(p.sgid, "127.0.0.1");
	gid4(p.dgid, "127.0.0.2");
	p.sport = 0xC000;
	for (int i = 0; i < n; i++) {
		make_pkt(&sent[i], UROCE_OP_UC_SEND_ONLY, (uint32_t)i, 64);
		d[i].pkt = &sent[i].pkt;
		d[i].path = &p;
		d[i].icrc_xor = 0;
	}
	memset(c, 0, sizeof(*c));
	c->last_psn = -1;
	uint64_t rx0 = uroce_backend_counter(b, UROCE_IO_RX_PKTS) +
		       uroce_backend_counter(b, UROCE_IO_RX_DROP_ICRC);
	uint64_t tx0 = uroce_backend_counter(a, UROCE_IO_TX_PKTS);
	int done = 0;
	uint64_t deadline = mono_ms() + 5000;

	while (done < n && mono_ms() < deadline) {
		int k = n - done < 32 ? n - done : 32;
		int r = uroce_backend_tx(a, d + done, k);

		CHECK(r >= 0);
		if (r < 0)
			break;
		done += r;
		/* Receive everything sent so far (plus a held packet a later rx lets go). */
		uint64_t want = uroce_backend_counter(a, UROCE_IO_TX_PKTS) - tx0;
		uint64_t until = mono_ms() + 2000;

		while (uroce_backend_counter(b, UROCE_IO_RX_PKTS) +
				       uroce_backend_counter(b, UROCE_IO_RX_DROP_ICRC) - rx0 <
			       want &&
		       mono_ms() < until)
			rx_until(b, 1, on_count, c, 100, more_until_accounted);
	}
	/* Let a held (reordered) packet go, then collect it. */
	{
		struct uroce_rx_desc o[4];

		uroce_backend_rx(a, o, 4);
		uint64_t want = uroce_backend_counter(a, UROCE_IO_TX_PKTS) - tx0;
		uint64_t until = mono_ms() + 2000;

		while (uroce_backend_counter(b, UROCE_IO_RX_PKTS) +
				       uroce_backend_counter(b, UROCE_IO_RX_DROP_ICRC) - rx0 <
			       want &&
		       mono_ms() < until)
			rx_until(b, 1, on_count, c, 100, NULL);
	}
	CHECKF(done == n, "%s: %d of %d consumed", spec, done, n);
	if (getenv("IO_DEBUG"))
		for (int i = 0; i < UROCE_IO_CNT_MAX; i++)
			fprintf(stderr, "  %s: a %llu b %llu\n", uroce_io_counter_names[i],
				(unsigned long long)uroce_backend_counter(a, i),
				(unsigned long long)uroce_backend_counter(b, i));
	*lost = uroce_backend_counter(a, UROCE_IO_FAULT_LOST);
	/* Unwrap: keep the real backend for the next run. */
	a->inner = NULL;
	uroce_backend_close(a);
}

/* A fake inner backend that takes at most `limit` packets per call and records their PSNs. */
struct fake_be {
	struct uroce_backend b;
	uint32_t seen[4096];
	int n;
	unsigned limit_seed;
	bool throttle;
};

static int fake_tx(struct uroce_backend *bb, const struct uroce_tx_desc *d, int n)
{
	struct fake_be *f = (struct fake_be *)bb;
	int k = n;

	if (f->throttle) {
		f->limit_seed = f->limit_seed * 1103515245u + 12345u;
		k = (int)((f->limit_seed >> 16) % 6); /* 0..5, often fewer than offered */
		if (k > n)
			k = n;
	}
	for (int i = 0; i < k && f->n < 4096; i++)
		f->seen[f->n++] =
			uroce_get_be24(d[i].pkt->hdr + 9) | (d[i].icrc_xor ? 0x80000000u : 0);
	return k;
}

static int fake_rx(struct uroce_backend *bb, struct uroce_rx_desc *out, int n)
{
	(void)bb;
	(void)out;
	(void)n;
	return 0;
}

static int fake_fd(const struct uroce_backend *bb)
{
	(void)bb;
	return -1;
}

static void fake_close(struct uroce_backend *bb)
{
	(void)bb;
}

static const struct uroce_backend_ops fake_ops = {
	.name = "fake",
	.close = fake_close,
	.tx_burst = fake_tx,
	.rx_burst = fake_rx,
	.fd = fake_fd,
};

/* The injector's decisions do not depend on how much the inner backend takes per call. */
static void fault_backpressure(const char *spec)
{
	static struct fake_be f1, f2;
	static struct sent sent[1000];
	static struct uroce_tx_desc d[1000];
	struct uroce_path p = {.encap = UROCE_ENCAP_V2_IPV4};
	struct uroce_faults f;
	char err[256];
	uint64_t lost[2];

	CHECK(uroce_faults_parse(&f, spec, err, sizeof(err)) == 0);
	for (int i = 0; i < 1000; i++) {
		make_pkt(&sent[i], UROCE_OP_UC_SEND_ONLY, (uint32_t)i, 16);
		d[i] = (struct uroce_tx_desc){&sent[i].pkt, &p, 0};
	}
	memset(&f1, 0, sizeof(f1));
	memset(&f2, 0, sizeof(f2));
	f1.b.ops = f2.b.ops = &fake_ops;
	f2.throttle = true;
	f2.limit_seed = 99;
	struct fake_be *fk[2] = {&f1, &f2};

	for (int run = 0; run < 2; run++) {
		struct uroce_backend *w = &fk[run]->b;
		struct uroce_rx_desc o[1];
		int done = 0, calls = 0;

		CHECK(uroce_faults_wrap(&w, &f) == 0);
		while (done < 1000 && calls++ < 100000) {
			int r = uroce_backend_tx(w, d + done, 1000 - done);

			CHECK(r >= 0 && r <= 1000 - done);
			done += r;
		}
		fk[run]->throttle = false;
		uroce_backend_rx(w, o, 1); /* releases a held packet */
		CHECK(done == 1000);
		lost[run] = uroce_backend_counter(w, UROCE_IO_FAULT_LOST);
		w->inner = NULL;
		uroce_backend_close(w);
	}
	/*
	 * Same packets lost and corrupted with or without backpressure (the order may differ: a
	 * held packet whose release was cut off goes after a later packet; a cut-off duplicate is
	 * not sent again).
	 */
	static uint8_t seen[2][1000];

	memset(seen, 0, sizeof(seen));
	for (int run = 0; run < 2; run++)
		for (int i = 0; i < fk[run]->n; i++)
			seen[run][(fk[run]->seen[i] & 0xFFFFFF) % 1000] |=
				(uint8_t)(1 | (fk[run]->seen[i] >> 31) << 1);
	CHECKF(memcmp(seen[0], seen[1], 1000) == 0, "%s: different packets or corruption", spec);
	CHECK(lost[0] == lost[1] && f2.n <= f1.n);
	int distinct = 0;

	for (int i = 0; i < 1000; i++)
		distinct += seen[1][i] & 1;
	CHECKF((uint64_t)distinct == 1000 - lost[1], "%s: %d distinct, %llu lost", spec, distinct,
	       (unsigned long long)lost[1]);
}

static int test_faults(void)
{
	struct uroce_faults f;
	char err[256];

	/* Parsing. */
	CHECK(uroce_faults_parse(&f, "loss=0.05,dup=0.01,reorder=0.02,corrupt=0.001,seed=7", err,
				 sizeof(err)) == 0);
	CHECK(f.loss == 0.05 && f.dup == 0.01 && f.reorder == 0.02 && f.corrupt == 0.001 &&
	      f.seed == 7);
	CHECK(uroce_faults_parse(&f, "", err, sizeof(err)) == 0 && f.loss == 0);
	CHECK(uroce_faults_parse(&f, "corrupt=1", err, sizeof(err)) == 0 && f.corrupt == 1.0);
	const char *bad[] = {
		"loss=2",    "loss=-0.1", "foo=1",    "loss",	     "loss=",
		"=0.1",	     "loss=abc",  "seed=-1",  "seed=x",	     "loss=0.1,,dup=0.1",
		"loss=0.1,", "dup=1e9",	  "loss=nan", "reorder=0.5x"};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = 0;
		int r = uroce_faults_parse(&f, bad[i], err, sizeof(err));

		CHECKF(r == -EINVAL && strstr(err, "UROCE_FAULTS"), "'%s': %d '%s'", bad[i], r,
		       err);
	}
	printf("faults: e.g. %s\n", err);
	{
		struct uroce_backend *x = (struct uroce_backend *)&f; /* never used: parse fails */
		struct uroce_pcap_sink *sink = NULL;

		setenv("UROCE_FAULTS", "loss=0.1,bogus=1", 1);
		CHECK(uroce_backend_wrap_env(&x, &sink, err, sizeof(err)) == -EINVAL);
		CHECK(x == (struct uroce_backend *)&f && sink == NULL && strstr(err, "bogus"));
		unsetenv("UROCE_FAULTS");
	}

	/* UROCE_FAULTS and UROCE_PCAP from the environment: faults over a tap over the backend. */
	{
		static struct fake_be fk;
		struct uroce_backend *w = &fk.b;
		struct uroce_pcap_sink *sink = NULL;
		char tmpl[] = "/tmp/uroce_io_env_XXXXXX";
		int tfd = mkstemp(tmpl);
		static struct sent s10[10];
		struct uroce_tx_desc d10[10];
		struct uroce_path p = {.encap = UROCE_ENCAP_V2_IPV4};

		CHECK(tfd >= 0);
		close(tfd);
		memset(&fk, 0, sizeof(fk));
		fk.b.ops = &fake_ops;
		fk.b.port = 4791;
		setenv("UROCE_FAULTS", "dup=1", 1);
		setenv("UROCE_PCAP", tmpl, 1);
		CHECK(uroce_backend_wrap_env(&w, &sink, err, sizeof(err)) == 0);
		unsetenv("UROCE_FAULTS");
		unsetenv("UROCE_PCAP");
		CHECK(strcmp(w->ops->name, "faults") == 0 && w->inner &&
		      strcmp(w->inner->ops->name, "pcap") == 0 && w->inner->inner == &fk.b);
		for (int i = 0; i < 10; i++) {
			make_pkt(&s10[i], UROCE_OP_RC_SEND_ONLY, (uint32_t)i, (uint32_t)i);
			d10[i] = (struct uroce_tx_desc){&s10[i].pkt, &p, 0};
		}
		CHECK(uroce_backend_tx(w, d10, 10) == 10);
		CHECK(uroce_backend_counter(w, UROCE_IO_PCAP_TX) == 20 && fk.n == 20);
		uroce_backend_close(w);
		uroce_pcap_sink_put(sink);
		uint8_t *buf;
		size_t len;
		struct uroce_pcap_rd rd;
		struct uroce_pcap_pkt pk;
		int frames = 0;

		CHECK(uroce_file_load(tmpl, &buf, &len) == 0);
		CHECK(uroce_pcap_open(&rd, buf, len) == 0);
		while (uroce_pcap_next(&rd, &pk) == 1) {
			struct uroce_frame fr;

			CHECK(uroce_frame_decode(&fr, pk.data, pk.caplen) == 0);
			CHECK(uroce_frame_icrc(&fr) == fr.t.icrc);
			frames++;
		}
		CHECK(frames == 20);
		free(buf);
		unlink(tmpl);
	}
	fault_backpressure("reorder=0.3,seed=9");
	fault_backpressure("loss=0.2,dup=0.2,reorder=0.5,corrupt=0.2,seed=4");
	fault_backpressure("reorder=1");

	/* The injector over loopback. */
	uint8_t a4[16], b4[16];
	struct uroce_backend *a = NULL, *b = NULL;

	gid4(a4, "127.0.0.1");
	gid4(b4, "127.0.0.2");
	for (uint16_t port = 15791; port < 15891 && !b; port++) {
		a = open_udp((const uint8_t(*)[16])a4, 1, port);
		if (!a)
			continue;
		b = open_udp((const uint8_t(*)[16])b4, 1, port);
		if (!b) {
			uroce_backend_close(a);
			a = NULL;
		}
	}
	CHECK(a && b);
	if (!a || !b)
		return check_exit("io_faults");

	struct count_ctx c1, c2;
	uint64_t lost;

	fault_run(a, b, "loss=0.5,seed=1", 1000, &c1, &lost);
	printf("faults: loss=0.5,seed=1: %d of 1000 arrived (%llu lost)\n", c1.n,
	       (unsigned long long)lost);
	CHECK(c1.n >= 400 && c1.n <= 600);
	CHECK((uint64_t)c1.n == 1000 - lost);
	fault_run(a, b, "loss=0.5,seed=1", 1000, &c2, &lost);
	CHECK(c2.n == c1.n && memcmp(c1.bitmap, c2.bitmap, sizeof(c1.bitmap)) == 0);
	fault_run(a, b, "loss=0.5,seed=2", 1000, &c2, &lost);
	CHECK(memcmp(c1.bitmap, c2.bitmap, sizeof(c1.bitmap)) != 0);

	uint64_t icrc0 = uroce_backend_counter(b, UROCE_IO_RX_DROP_ICRC);

	fault_run(a, b, "corrupt=1", 300, &c1, &lost);
	CHECKF(c1.n == 0, "corrupt=1: %d accepted", c1.n);
	CHECK(uroce_backend_counter(b, UROCE_IO_RX_DROP_ICRC) - icrc0 == 300);

	fault_run(a, b, "dup=1", 100, &c1, &lost);
	CHECK(c1.n == 200 && c1.dups == 100);

	fault_run(a, b, "reorder=0.3,seed=5", 500, &c1, &lost);
	printf("faults: reorder=0.3: %d arrived, %d inversions\n", c1.n, c1.inversions);
	CHECK(c1.n == 500 && c1.dups == 0 && c1.inversions > 50);

	fault_run(a, b, "loss=0.1,dup=0.1,reorder=0.1,corrupt=0.1,seed=3", 1000, &c1, &lost);
	printf("faults: all at 0.1: %d arrived\n", c1.n);
	CHECK(c1.n > 700 && c1.n < 1000);

	uroce_backend_close(a);
	uroce_backend_close(b);
	return check_exit("io_faults");
}

/* ---- privileges ----------------------------------------------------------------------------- */

static int test_eperm(void)
{
	struct uroce_backend_cfg cfg;
	struct uroce_backend *b = NULL;
	char err[256] = "";

	memset(&cfg, 0, sizeof(cfg));
	cfg.ifname = "lo";
	cfg.err = err;
	cfg.errlen = sizeof(err);
	int r = uroce_packet_ops.open(&cfg, &b);

	printf("eperm: open: %d: %s\n", r, err);
	CHECKF(r == -EPERM, "AF_PACKET open gave %d (running with CAP_NET_RAW?)", r);
	CHECK(strcmp(err, UROCE_PACKET_EPERM_MSG) == 0);
	CHECK(strcmp(uroce_backend_strerror(&uroce_packet_ops, r), UROCE_PACKET_EPERM_MSG) == 0);
	CHECK(strstr(uroce_backend_strerror(&uroce_packet_ops, r), "setcap cap_net_raw+ep"));
	if (r == 0)
		uroce_backend_close(b);
	return check_exit("io_eperm");
}

/* ---- network namespaces ------------------------------------------------------------------- */

static void enter_ns(const char *ns)
{
	char path[256];

	snprintf(path, sizeof(path), "/var/run/netns/%s", ns);
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0 || setns(fd, CLONE_NEWNET) < 0) {
		perror(path);
		exit(1);
	}
	close(fd);
}

/* Resolve gid's MAC on ifindex: the first lookup starts resolution, later ones succeed. */
static int resolve(int ifindex, const uint8_t gid[16], uint8_t mac[6], int *eagain)
{
	int mon = uroce_neigh_monitor_open();

	CHECK(mon >= 0);
	int r = -EAGAIN;

	for (int tries = 0; tries < 20; tries++) {
		r = uroce_neigh_lookup(ifindex, gid, mac);
		if (r != -EAGAIN)
			break;
		(*eagain)++;
		struct pollfd p = {.fd = mon, .events = POLLIN};

		poll(&p, 1, 1000); /* a neighbour update, or a bounded wait */
		uroce_neigh_monitor_drain(mon);
	}
	close(mon);
	return r;
}

static struct uroce_backend *open_in(const char *ns, const struct uroce_backend_ops *ops,
				     const char *ifname, const uint8_t (*addrs)[16], int n)
{
	struct uroce_backend_cfg cfg;
	struct uroce_backend *b = NULL;
	char err[256] = "";

	enter_ns(ns);
	memset(&cfg, 0, sizeof(cfg));
	cfg.ifname = ifname;
	if (n)
		memcpy(cfg.addrs, addrs, (size_t)n * 16);
	cfg.n_addrs = n;
	cfg.err = err;
	cfg.errlen = sizeof(err);
	int r = ops->open(&cfg, &b);

	CHECKF(r == 0, "open %s in %s: %d %s", ops->name, ns, r, err);
	return r == 0 ? b : NULL;
}

static int test_netns(const char *nsa, const char *nsb, const char *ifa, const char *ifb,
		      const char *pcap)
{
	uint8_t a4[16], b4[16], a6[16], b6[16];
	uint8_t aa[2][16], ba[2][16];

	gid4(a4, "198.18.0.1");
	gid4(b4, "198.18.0.2");
	gid6(a6, "fd00:198:18::1");
	gid6(b6, "fd00:198:18::2");
	memcpy(aa[0], a4, 16);
	memcpy(aa[1], a6, 16);
	memcpy(ba[0], b4, 16);
	memcpy(ba[1], b6, 16);

	struct uroce_backend *pa = open_in(nsa, &uroce_packet_ops, ifa, NULL, 0);
	int ifindex_a = (int)if_nametoindex(ifa);
	struct uroce_backend *pb = open_in(nsb, &uroce_packet_ops, ifb, NULL, 0);

	if (!pa || !pb)
		return check_exit("io_netns");

	/* v1 first, while the neighbour tables are empty: resolution must be triggered. */
	uint8_t mac4[6], mac6[6], macll[6], ll_b[16];
	int eagain4 = 0, eagain6 = 0;

	enter_ns(nsa);
	CHECK(resolve(ifindex_a, b4, mac4, &eagain4) == 0);
	CHECK(resolve(ifindex_a, b6, mac6, &eagain6) == 0);
	printf("netns: neighbour resolution: IPv4 after %d EAGAIN, IPv6 after %d\n", eagain4,
	       eagain6);
	CHECK(eagain4 >= 1 && eagain6 >= 1); /* the first lookup found nothing */
	CHECK(memcmp(mac4, pb->mac, 6) == 0 && memcmp(mac6, pb->mac, 6) == 0);
	/* A second lookup is immediate. */
	CHECK(uroce_neigh_lookup(ifindex_a, b4, mac4) == 0);
	/* Link-local GID from the MAC (EUI-64): direct, no lookup. */
	memset(ll_b, 0, 16);
	ll_b[0] = 0xFE;
	ll_b[1] = 0x80;
	ll_b[8] = pb->mac[0] ^ 2;
	ll_b[9] = pb->mac[1];
	ll_b[10] = pb->mac[2];
	ll_b[11] = 0xFF;
	ll_b[12] = 0xFE;
	ll_b[13] = pb->mac[3];
	ll_b[14] = pb->mac[4];
	ll_b[15] = pb->mac[5];
	CHECK(uroce_neigh_direct(ll_b, macll) == 0 && memcmp(macll, pb->mac, 6) == 0);
	{
		uint8_t mc[16], m[6];

		gid6(mc, "ff02::1:ff00:2");
		CHECK(uroce_neigh_direct(mc, m) == 0 && m[0] == 0x33 && m[5] == 0x02);
		gid4(mc, "239.1.2.3");
		CHECK(uroce_neigh_direct(mc, m) == 0 && m[0] == 1 && m[2] == 0x5E && m[3] == 1);
		CHECK(uroce_neigh_direct(b4, m) == -ENOENT);
	}

	struct uroce_pcap_sink *sink = NULL;

	CHECK(uroce_pcap_sink_open(&sink, pcap) == 0);
	CHECK(uroce_pcap_tap_wrap(&pa, sink) == 0);
	CHECK(uroce_pcap_tap_wrap(&pb, sink) == 0);
	uroce_pcap_sink_put(sink);

	struct uroce_path v1 = {.encap = UROCE_ENCAP_V1,
				.traffic_class = 0x20,
				.hop_limit = 1,
				.flow_label = 0x12345};

	memcpy(v1.sgid, a4, 16); /* an IPv4 RoCE v1 GID, as mlx5 index 2 */
	memcpy(v1.dgid, b4, 16);
	memcpy(v1.dmac, mac4, 6);
	every_opcode(pa, pb, &v1, 1, "v1 AF_PACKET, IPv4 GIDs, veth");
	memcpy(v1.sgid, a6, 16);
	memcpy(v1.dgid, b6, 16);
	memcpy(v1.dmac, mac6, 6);
	v1.hop_limit = 0;
	every_opcode(pa, pb, &v1, 64, "v1 AF_PACKET, IPv6 GIDs, veth");
	/* And back, with the MAC the frames came from. */
	{
		struct uroce_path r1 = v1;

		memcpy(r1.sgid, b6, 16);
		memcpy(r1.dgid, a6, 16);
		memcpy(r1.dmac, pa->mac, 6);
		every_opcode(pb, pa, &r1, 64, "v1 AF_PACKET, back");
	}
	/* A frame larger than the MTU is refused and counted, not fatal. */
	{
		static struct sent big;
		static uint8_t bigpay[9600]; /* beyond the veth MTU of 9000 */
		struct uroce_tx_desc d = {&big.pkt, &v1, 0};

		make_pkt(&big, UROCE_OP_RC_SEND_ONLY, 1, 0);
		big.pkt.payload = bigpay;
		big.pkt.payload_len = sizeof(bigpay);
		uint64_t e0 = uroce_backend_counter(pa, UROCE_IO_TX_ERR);

		CHECK(uroce_backend_tx(pa, &d, 1) == 1);
		CHECK(uroce_backend_counter(pa, UROCE_IO_TX_ERR) == e0 + 1);
		CHECK(pa->tx_refused_n == 1 && pa->tx_refused[0] == 0);
		CHECK(uroce_backend_counter(pa, UROCE_IO_PCAP_TX) ==
		      uroce_backend_counter(pa, UROCE_IO_TX_PKTS));
	}
	uroce_backend_close(pa);
	uroce_backend_close(pb);

	/* v2 across the namespaces, IPv4 and IPv6. */
	struct uroce_backend *ua = open_in(nsa, &uroce_udp_ops, ifa, (const uint8_t(*)[16])aa, 2);
	struct uroce_backend *ub = open_in(nsb, &uroce_udp_ops, ifb, (const uint8_t(*)[16])ba, 2);

	if (!ua || !ub)
		return check_exit("io_netns");
	struct uroce_path p = {.encap = UROCE_ENCAP_V2_IPV4, .traffic_class = 0x02};

	memcpy(p.sgid, a4, 16);
	memcpy(p.dgid, b4, 16);
	p.sport = uroce_udp_sport(5, 6, 0);
	every_opcode(ua, ub, &p, 64, "v2/IPv4 across netns");
	p.encap = UROCE_ENCAP_V2_IPV6;
	memcpy(p.sgid, b6, 16);
	memcpy(p.dgid, a6, 16);
	p.hop_limit = 5;
	every_opcode(ub, ua, &p, 5, "v2/IPv6 across netns");
	uroce_backend_close(ua);
	uroce_backend_close(ub);
	return check_exit("io_netns");
}

/* ---- throughput --------------------------------------------------------------------------- */

static void on_nothing(const struct uroce_rx_desc *d, void *ctx)
{
	(void)d;
	(*(long *)ctx)++;
}

static int blast(double seconds)
{
	uint8_t a4[16], b4[16];
	struct uroce_backend *a = NULL, *b = NULL;

	gid4(a4, "127.0.0.1");
	gid4(b4, "127.0.0.2");
	for (uint16_t port = 16791; port < 16891 && !b; port++) {
		a = open_udp((const uint8_t(*)[16])a4, 1, port);
		if (a && !(b = open_udp((const uint8_t(*)[16])b4, 1, port))) {
			uroce_backend_close(a);
			a = NULL;
		}
	}
	if (!a || !b)
		return 1;
	static struct sent s[UROCE_BACKEND_BATCH];
	struct uroce_tx_desc d[UROCE_BACKEND_BATCH];
	struct uroce_path p = {.encap = UROCE_ENCAP_V2_IPV4};

	memcpy(p.sgid, a4, 16);
	memcpy(p.dgid, b4, 16);
	p.sport = 0xC000;
	for (int i = 0; i < UROCE_BACKEND_BATCH; i++) {
		make_pkt(&s[i], UROCE_OP_RC_WRITE_MIDDLE, (uint32_t)i, MAXPAY);
		d[i] = (struct uroce_tx_desc){&s[i].pkt, &p, 0};
	}
	long rx = 0, tx = 0;
	uint64_t t0 = mono_ms(), end = t0 + (uint64_t)(seconds * 1000);

	while (mono_ms() < end) {
		int r = uroce_backend_tx(a, d, UROCE_BACKEND_BATCH);

		if (r > 0)
			tx += r;
		rx_until(b, -1, on_nothing, &rx, 0, NULL);
		if (r < UROCE_BACKEND_BATCH) {
			struct pollfd pf = {.fd = uroce_backend_fd(b), .events = POLLIN};

			poll(&pf, 1, 1);
			rx_until(b, -1, on_nothing, &rx, 0, NULL);
		}
	}
	double dt = (double)(mono_ms() - t0) / 1000.0;

	printf("blast: 4 KiB payload, batch %d, one thread: tx %.0f pkt/s, rx %.0f pkt/s "
	       "(%.2f Gbit/s payload), ICRC drops %llu\n",
	       UROCE_BACKEND_BATCH, (double)tx / dt, (double)rx / dt,
	       (double)rx * MAXPAY * 8 / dt / 1e9,
	       (unsigned long long)uroce_backend_counter(b, UROCE_IO_RX_DROP_ICRC));
	uroce_backend_close(a);
	uroce_backend_close(b);
	return 0;
}

/*
 * The pcap sink writes its file at record boundaries only: 300 frames of 60 to 9060 bytes
 * (several times its buffer), the file's size after each is the header plus a whole number
 * of records, and it grows on the way (not all at close); after the last reference goes, all
 * 300 read back in order.
 */
static int test_sink(void)
{
	enum { N = 300 };
	static uint8_t frame[9100];
	static size_t ends[N + 1];
	char path[] = "/tmp/uroce-sink-XXXXXX";
	int fd = mkstemp(path), grew = 0;
	struct uroce_pcap_sink *sink;

	CHECK(fd >= 0);
	if (fd < 0)
		return check_exit("io sink");
	close(fd);
	CHECK(uroce_pcap_sink_open(&sink, path) == 0);
	ends[0] = 24;
	for (int i = 0; i < N; i++) {
		uint32_t len = 60 + (uint32_t)(i * 7919 % 9001);
		struct stat st;
		int k = 0;

		memset(frame, i & 0xFF, len);
		CHECK(uroce_pcap_sink_write(sink, 1700000000000000000ull + (uint64_t)i, frame,
					    len) == 0);
		ends[i + 1] = ends[i] + 16 + len;
		CHECK(stat(path, &st) == 0);
		while (k <= i + 1 && ends[k] < (size_t)st.st_size)
			k++;
		CHECKF(k <= i + 1 && ends[k] == (size_t)st.st_size,
		       "after frame %d the file is %lld bytes, not at a record's end", i,
		       (long long)st.st_size);
		if (k > i + 1 || ends[k] != (size_t)st.st_size)
			break;
		grew += st.st_size > 24;
	}
	CHECKF(grew > 0, "the file grew only at close");
	CHECK(uroce_pcap_sink_write(sink, 0, frame, 1u << 20) == -EMSGSIZE);
	uroce_pcap_sink_put(sink);

	uint8_t *buf;
	size_t len;
	struct uroce_pcap_rd r;
	struct uroce_pcap_pkt pk;
	int n = 0;

	CHECK(uroce_file_load(path, &buf, &len) == 0 && len == ends[N]);
	CHECK(uroce_pcap_open(&r, buf, len) == 0);
	while (uroce_pcap_next(&r, &pk) == 1) {
		CHECK(pk.caplen == 60 + (uint32_t)(n * 7919 % 9001) && pk.data[0] == (n & 0xFF));
		n++;
	}
	CHECKF(n == N, "read back %d frames of %d", n, N);
	free(buf);
	unlink(path);
	return check_exit("io sink");
}

int main(int argc, char **argv)
{
	for (int i = 0; i < MAXPAY + 64; i++)
		payload_mem[i] = (uint8_t)(i * 13 + 1);
	if (argc >= 3 && strcmp(argv[1], "loopback") == 0)
		return test_loopback(argv[2], argc >= 4 ? atoi(argv[3]) : 0);
	if (argc >= 2 && strcmp(argv[1], "solver") == 0)
		return test_solver(argc >= 3 ? argv[2] : NULL);
	if (argc >= 2 && strcmp(argv[1], "faults") == 0)
		return test_faults();
	if (argc >= 2 && strcmp(argv[1], "eperm") == 0)
		return test_eperm();
	if (argc >= 2 && strcmp(argv[1], "sink") == 0)
		return test_sink();
	if (argc >= 7 && strcmp(argv[1], "netns") == 0)
		return test_netns(argv[2], argv[3], argv[4], argv[5], argv[6]);
	if (argc >= 2 && strcmp(argv[1], "blast") == 0)
		return blast(argc >= 3 ? atof(argv[2]) : 2.0);
	fprintf(stderr, "usage: test_io loopback PCAP | solver | faults | eperm | sink | "
			"netns NSA NSB IFA IFB PCAP | blast [SECONDS]\n");
	return 2;
}
