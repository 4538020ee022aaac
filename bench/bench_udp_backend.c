/* SPDX-License-Identifier: MIT */
/*
 * The UDP (RoCE v2) backend alone, no engine: packets/s and Gbit/s of payload for RDMA WRITE
 * MIDDLE packets with 4 KiB payloads from one backend on 127.0.0.1 to another on 127.0.0.2
 * (same port, the first free one from 16791), through tx_burst and rx_burst in batches of
 * UROCE_BACKEND_BATCH: the ICRC computed on send, the IPv4 ID recovered and the ICRC checked on
 * receive, with the kernel's UDP GSO and GRO where the backend uses them. One thread sends and
 * receives, so the figure is "per core"; ICRC drops are printed (they should be 0).
 *
 * Usage: bench_udp_backend [SECONDS]   (default 2)
 */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "host/config/io_counters.h"
#include "host/io/backend.h"
#include "host/io/udp.h"
#include "wire/packet.h"

#define PAYLOAD 4096

static uint8_t payload[PAYLOAD]; /* stands in for registered memory */

static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* g = the GID of IPv4 address s (v4-mapped). */
static void gid4(uint8_t g[16], const char *s)
{
	memset(g, 0, 16);
	g[10] = g[11] = 0xFF;
	if (inet_pton(AF_INET, s, g + 12) != 1)
		abort();
}

/* A UDP backend on lo bound to the address of GID gid on port; NULL if it fails. */
static struct uroce_backend *open_udp(const uint8_t gid[16], uint16_t port)
{
	struct uroce_backend_cfg cfg;
	struct uroce_backend *b = NULL;
	char err[256] = "";

	memset(&cfg, 0, sizeof(cfg));
	memcpy(cfg.addrs[0], gid, 16);
	cfg.n_addrs = 1;
	cfg.port = port;
	cfg.ifname = "lo";
	cfg.err = err;
	cfg.errlen = sizeof(err);
	int r = uroce_udp_ops.open(&cfg, &b);

	if (r < 0 && r != -EADDRINUSE)
		fprintf(stderr, "open udp port %u: %s (%s)\n", port, strerror(-r), err);
	return r < 0 ? NULL : b;
}

/* An RDMA WRITE MIDDLE packet to QPN 0x123 with PSN psn and the whole payload. */
static int make_write_middle(struct uroce_tx_pkt *p, uint32_t psn)
{
	struct uroce_tpkt t;

	memset(&t, 0, sizeof(t));
	memset(p, 0, sizeof(*p));
	t.bth.opcode = UROCE_OP_RC_WRITE_MIDDLE;
	t.bth.pkey = 0xFFFF;
	t.bth.dqpn = 0x123;
	t.bth.psn = psn;
	t.payload = payload;
	t.payload_len = PAYLOAD;
	int h = uroce_tpkt_hdr_encode(p->hdr, sizeof(p->hdr), &t);

	if (h < 0)
		return h;
	p->hdr_len = (uint16_t)h;
	p->payload = payload;
	p->payload_len = PAYLOAD;
	p->src_qpn = 0x42;
	p->dst_qpn = 0x123;
	return 0;
}

/* Take in everything b has now; return how many packets. */
static long drain(struct uroce_backend *b)
{
	struct uroce_rx_desc out[UROCE_BACKEND_BATCH];
	long n = 0;
	int r;

	while ((r = uroce_backend_rx(b, out, UROCE_BACKEND_BATCH)) > 0)
		n += r;
	return n;
}

int main(int argc, char **argv)
{
	double seconds = argc >= 2 ? atof(argv[1]) : 2.0;
	uint8_t a4[16], b4[16];
	struct uroce_backend *a = NULL, *b = NULL;

	gid4(a4, "127.0.0.1");
	gid4(b4, "127.0.0.2");
	for (uint16_t port = 16791; port < 16891 && !b; port++) {
		a = open_udp(a4, port);
		if (a && !(b = open_udp(b4, port))) {
			uroce_backend_close(a);
			a = NULL;
		}
	}
	if (!a || !b) {
		fprintf(stderr, "no free port pair from 16791\n");
		return 1;
	}
	static struct uroce_tx_pkt pkt[UROCE_BACKEND_BATCH];
	struct uroce_tx_desc d[UROCE_BACKEND_BATCH];
	struct uroce_path path = {.encap = UROCE_ENCAP_V2_IPV4, .sport = 0xC000};

	memcpy(path.sgid, a4, 16);
	memcpy(path.dgid, b4, 16);
	for (int i = 0; i < PAYLOAD; i++)
		payload[i] = (uint8_t)(i * 13 + 1);
	for (int i = 0; i < UROCE_BACKEND_BATCH; i++) {
		if (make_write_middle(&pkt[i], (uint32_t)i) < 0)
			return 1;
		d[i] = (struct uroce_tx_desc){&pkt[i], &path, 0};
	}
	long rx = 0, tx = 0;
	uint64_t t0 = mono_ms(), end = t0 + (uint64_t)(seconds * 1000);

	while (mono_ms() < end) {
		int r = uroce_backend_tx(a, d, UROCE_BACKEND_BATCH);

		if (r > 0)
			tx += r;
		rx += drain(b);
		if (r < UROCE_BACKEND_BATCH) {
			/* The socket buffer is full: give the receiver a moment to catch up. */
			struct pollfd pf = {.fd = uroce_backend_fd(b), .events = POLLIN};

			poll(&pf, 1, 1);
			rx += drain(b);
		}
	}
	double dt = (double)(mono_ms() - t0) / 1000.0;

	printf("udp backend: 4 KiB payload, batch %d, one thread: tx %.0f pkt/s, rx %.0f pkt/s "
	       "(%.2f Gbit/s payload), ICRC drops %llu\n",
	       UROCE_BACKEND_BATCH, (double)tx / dt, (double)rx / dt,
	       (double)rx * PAYLOAD * 8 / dt / 1e9,
	       (unsigned long long)uroce_backend_counter(b, UROCE_IO_RX_DROP_ICRC));
	uroce_backend_close(a);
	uroce_backend_close(b);
	return 0;
}
