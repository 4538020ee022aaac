/* SPDX-License-Identifier: MIT */
/*
 * The UDP (RoCE v2) backend on loopback, with the pcap tap on both ends (run by loopback.sh):
 * every opcode over 127.0.0.1 and ::1 both ways, TOS, TTL and ECN; UDP GSO and GRO; a bad GRO
 * datagram; which sockets a receive looks at; address changes (uroce_udp_rebind); paths the
 * backend does not serve; corrupted and short datagrams from plain sockets; the IPv4 ID solver
 * (socket- and raw-sent IDs).
 *
 *   test_io_loopback PCAP [PORT]   PCAP gets the tap capture (loopback.sh checks it with
 *                                  uroce pcap-check and scapy); PORT 0 or none: the first free
 *                                  port from 14791, printed as "loopback: port N"
 *
 * Waiting is poll() with a deadline; nothing sleeps.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "io_kit.h"
#include "host/config/io_counters.h"
#include "host/io/pcap_sink.h"
#include "host/io/pcap_tap.h"
#include "host/io/share_members.h"
#include "host/io/udp.h"
#include "wire/bytes.h"

/*
 * UDP GSO and GRO: 250 RDMA WRITE packets, runs of 49 MIDDLEs of mid bytes then a shorter LAST
 * (mid 1 KiB: ICRCs in pieces; mid 64: in one call over a copy, a segment's pseudo-header from
 * its own headers).
 * The second half of each run goes to another QP: in the first four runs one of the same QPN
 * slot (one process of a shared device), so each of those runs leaves as one GSO send (the
 * kernel's 64-segment limit and 64 KiB allow it); in the last run one of another slot, whose
 * packets must not join the first half's send (steering sees a send's first segment only).
 * Segment k of a send has IPv4 ID k (ICRC computed so; the receiver recovers exactly k), and a
 * send arrives whole over loopback (b has UDP_GRO), where b splits it into its packets again.
 */
static void gso_burst(struct uroce_backend *a, struct uroce_backend *b,
		      const struct uroce_path *path, uint32_t mid, const char *what)
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
			    3000u + (unsigned)i, last ? mid / 2 : mid, qpn);
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
	 * thread then sleeps on the socket: packets kept inside the backend would wait for the
	 * next datagram, perhaps the peer's retransmission after its ACK timeout.
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

/* What each packet of mixed_values() must arrive with, by PSN. */
struct want_values {
	int n;
	int bad;
	uint8_t tos[32], ttl[32];
};

static void on_values(const struct uroce_rx_desc *d, void *ctx)
{
	struct want_values *w = ctx;
	uint32_t psn = uroce_get_be24(d->pkt.data + 9);

	if (psn >= 32 || d->tclass != w->tos[psn] || d->hop_limit != w->ttl[psn]) {
		printf("  packet PSN %u: TOS 0x%x TTL %u\n", psn, d->tclass, d->hop_limit);
		w->bad++;
	}
	w->n++;
}

/*
 * A socket sends a steady path's TOS and TTL as its own, without control messages: sends
 * whose paths change within a call, after it took one path's values, must still leave with
 * their own. Three paths from a to b (0xBB/7, 0x02/default, 0x10/200) in a pattern of runs and
 * alternations, 16 packets per call, single packets per call too.
 */
static void mixed_values(struct uroce_backend *a, struct uroce_backend *b,
			 const struct uroce_path *base)
{
	struct uroce_path p[3] = {*base, *base, *base};
	static const char pattern[] = "0000111101022221"
				      "1120020111000222";
	static struct sent s[32];
	static struct uroce_tx_desc d[32];
	static uint16_t ids[32];
	struct want_values w = {0};

	p[0].traffic_class = 0xBB;
	p[0].hop_limit = 7;
	p[1].traffic_class = 0x02;
	p[1].hop_limit = 0;
	p[2].traffic_class = 0x10;
	p[2].hop_limit = 200;
	for (int i = 0; i < 32; i++) {
		const struct uroce_path *pi = &p[pattern[i] - '0'];

		/* Lengths differ from packet to packet: no two go in one GSO send. */
		make_pkt(&s[i], UROCE_OP_RC_WRITE_MIDDLE, (uint32_t)i,
			 64u + 4u * (uint32_t)(i % 2));
		d[i] = (struct uroce_tx_desc){&s[i].pkt, pi, 0};
		w.tos[i] = pi->traffic_class;
		w.ttl[i] = pi->hop_limit ? pi->hop_limit : 64;
	}
	send_burst(a, d, 16, ids, NULL, NULL, "mixed TOS/TTL, one call");
	for (int i = 16; i < 32; i++)
		send_burst(a, d + i, 1, ids, NULL, NULL, "mixed TOS/TTL, a call each");
	rx_until(b, 32, on_values, &w, 3000, NULL);
	CHECKF(w.n == 32 && w.bad == 0, "mixed TOS/TTL: %d received, %d with wrong values", w.n,
	       w.bad);
	printf("mixed TOS/TTL per send: %d packets, each with its path's\n", w.n);
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

/*
 * A receiver with two sockets looks at the one that had the last datagram alone for a while
 * (sweeps of both far apart while only it gets traffic); a thread woken because the backend's
 * fd polled readable (uroce_udp_woken) looks at both at once: a datagram on the quiet socket is
 * in its very next receive call. a: 127.0.0.1 and ::1; to_a: b -> a over IPv4; self6: a -> a
 * over ::1.
 */
static void woken_sweeps(struct uroce_backend *a, struct uroce_backend *b,
			 const struct uroce_path *to_a, const struct uroce_path *self6)
{
	struct count_ctx cc = {.last_psn = -1};

	for (int i = 0; i < 200; i++) {
		send_n(b, to_a, 1, 100u + (unsigned)i, "sweeps: IPv4 traffic");
		rx_until(a, 1, on_count, &cc, 3000, NULL);
	}
	CHECKF(cc.n == 200, "sweeps: IPv4 traffic: received %d of 200", cc.n);
	send_n(a, self6, 1, 900, "sweeps: one on ::1");
	struct pollfd p = {.fd = uroce_backend_fd(a), .events = POLLIN};

	CHECKF(poll(&p, 1, 3000) == 1, "sweeps: a's fd not readable for its ::1 datagram");
	uroce_udp_woken(a);

	struct uroce_rx_desc out[UROCE_BACKEND_BATCH];
	int r = uroce_backend_rx(a, out, UROCE_BACKEND_BATCH);

	bool at_once = r == 1 && uroce_get_be24(out[0].pkt.data + 9) == 900;

	CHECKF(at_once, "sweeps: woken, the next receive got %d packets, want the one on ::1", r);
	if (at_once)
		printf("sweeps: a woken receiver found the quiet socket's datagram at once\n");
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
		return check_exit_with("io_loopback", io_kit_checks);
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
	mixed_values(a, b, &p4);
	/* Back to the defaults after the socket sent others as its own. */
	p4.traffic_class = 0;
	p4.hop_limit = 0;
	every_opcode(a, b, &p4, 64, "v2/IPv4 TOS 0, default TTL again");
	p4.traffic_class = 0x03 | 0xB8;
	p4.hop_limit = 7;

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
	woken_sweeps(a, b, &p4r, &p6);

	/* Segmentation offload both ways, IPv4 and IPv6. */
	struct uroce_path g4 = p4;

	g4.traffic_class = 0x02;
	g4.hop_limit = 0;
	gso_burst(a, b, &g4, 1024, "GSO/GRO v2/IPv4");
	gso_burst(a, a, &p6, 1024, "GSO/GRO v2/IPv6");
	gso_burst(a, b, &g4, 64, "GSO/GRO v2/IPv4, short packets");
	gso_burst(a, a, &p6, 64, "GSO/GRO v2/IPv6, short packets");
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
	return check_exit_with("io_loopback", io_kit_checks);
}

int main(int argc, char **argv)
{
	if (argc < 2 || argc > 3) {
		fprintf(stderr, "usage: test_io_loopback PCAP [PORT]\n");
		return 2;
	}
	io_kit_init();
	return test_loopback(argv[1], argc == 3 ? atoi(argv[2]) : 0);
}
