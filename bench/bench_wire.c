/* SPDX-License-Identifier: MIT */
/*
 * Wire-layer microbenchmark: ns per packet for RoCE v2/IPv4 RC RDMA WRITE ONLY frames with 64 B,
 * 1 KiB and 4 KiB payloads:
 *   decode         uroce_frame_decode (Ethernet .. ICRC fields; no ICRC check)
 *   icrc           uroce_frame_icrc on a decoded frame
 *   decode+icrc    both: what a receiver does per packet
 *   encode+icrc    uroce_frame_encode (headers, payload copy, ICRC)
 *   ipid init      uroce_ipid_solver_init (once per transport length)
 *   ipid solve     uroce_ipid_solve (per packet, given the two ICRCs)
 *   ipid rx        ICRC with ID 0 + solve: a UDP-socket receiver's per-packet cost
 *
 * usage: bench_wire [SECONDS_PER_CASE]   (default 0.5). Build with -DCMAKE_BUILD_TYPE=Release.
 * Not a test: it never runs under ctest. The clock is read here only, never in the library.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "wire/bytes.h"
#include "wire/icrc.h"
#include "wire/packet.h"

/* Results go here, so no computation is dead. */
static volatile uint64_t sink;

/* Make the compiler assume *p was read and changed: no hoisting work out of the loop. */
#define CLOBBER(p) __asm__ volatile("" : : "r"(p) : "memory")

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static double budget_ns = 0.5e9;

/*
 * Run `expr` (which adds to the uint64_t acc) in batches until the time budget is spent, after a
 * short warm-up; print ns per iteration and the bytes-per-second rate over `bytes`.
 */
#define BENCH(label, size, bytes, expr)                                                         \
	do {                                                                                    \
		uint64_t acc = 0;                                                               \
		long iters = 0;                                                                 \
		for (int w_ = 0; w_ < 1000; w_++) {                                             \
			expr;                                                                   \
		}                                                                               \
		double t0 = now_ns(), t1;                                                       \
		do {                                                                            \
			for (int b_ = 0; b_ < 1024; b_++) {                                     \
				expr;                                                           \
			}                                                                       \
			iters += 1024;                                                          \
			t1 = now_ns();                                                          \
		} while (t1 - t0 < budget_ns);                                                  \
		sink += acc;                                                                    \
		double ns = (t1 - t0) / (double)iters;                                          \
		printf("%-12s %6u  %9.1f ns  %7.2f GB/s  %10ld\n", label, (unsigned)(size), ns, \
		       (bytes) ? (double)(bytes) / ns : 0.0, iters);                            \
	} while (0)

static void build(uint8_t *buf, size_t cap, uint32_t payload_len, const uint8_t *payload,
		  struct uroce_frame *f, size_t *len)
{
	memset(f, 0, sizeof(*f));
	f->encap = UROCE_ENCAP_V2_IPV4;
	memcpy(f->eth.dst, (const uint8_t[]){0x02, 0, 0, 0, 0, 2}, 6);
	memcpy(f->eth.src, (const uint8_t[]){0x02, 0, 0, 0, 0, 3}, 6);
	f->ip4.ihl = 5;
	f->ip4.id = 0x4D2;
	f->ip4.frag = 0x4000;
	f->ip4.ttl = 64;
	memcpy(f->ip4.src, (const uint8_t[]){198, 18, 0, 3}, 4);
	memcpy(f->ip4.dst, (const uint8_t[]){198, 18, 0, 2}, 4);
	f->udp.sport = 0xC0DE;
	f->udp.dport = UROCE_UDP_PORT;
	f->t.bth.opcode = UROCE_OP_RC_WRITE_ONLY;
	f->t.bth.pkey = 0xFFFF;
	f->t.bth.dqpn = 0x11;
	f->t.bth.psn = 0x123456;
	f->t.bth.ackreq = true;
	f->t.reth.va = 0x7F0000001000ull;
	f->t.reth.rkey = 0x1234;
	f->t.reth.len = payload_len;
	f->t.payload = payload;
	f->t.payload_len = payload_len;
	ssize_t n = uroce_frame_encode(buf, cap, f);

	if (n < 0) {
		fprintf(stderr, "encode: %zd\n", n);
		exit(1);
	}
	*len = (size_t)n;
}

int main(int argc, char **argv)
{
	static const uint32_t sizes[] = {64, 1024, 4096};
	static uint8_t payload[4096], buf[4096 + 256], out[4096 + 256];

	if (argc > 1)
		budget_ns = atof(argv[1]) * 1e9;
	for (size_t i = 0; i < sizeof(payload); i++)
		payload[i] = (uint8_t)(i * 131 + 7);

	printf("uroce wire microbenchmark: RoCE v2/IPv4 RC RDMA WRITE ONLY, %.2f s per case\n",
	       budget_ns / 1e9);
	printf("%-12s %6s  %12s  %12s  %10s\n", "case", "payld", "per packet", "rate",
	       "iterations");
	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		struct uroce_frame f, g;
		size_t len;
		uint32_t sz = sizes[s];

		build(buf, sizeof(buf), sz, payload, &f, &len);
		if (uroce_frame_decode(&g, buf, len) != 0 || uroce_frame_icrc(&g) != g.t.icrc) {
			fprintf(stderr, "self-check failed\n");
			return 1;
		}
		BENCH("decode", sz, len, {
			CLOBBER(buf);
			acc += (uint64_t)uroce_frame_decode(&g, buf, len) + g.t.bth.psn;
		});
		BENCH("icrc", sz, g.roce_len, {
			CLOBBER(buf);
			acc += uroce_frame_icrc(&g);
		});
		BENCH("decode+icrc", sz, len, {
			CLOBBER(buf);
			int rc_ = uroce_frame_decode(&g, buf, len);
			acc += (uint64_t)rc_ + (uroce_frame_icrc(&g) == g.t.icrc);
		});
		BENCH("encode+icrc", sz, len, {
			CLOBBER(out);
			ssize_t n_ = uroce_frame_encode(out, sizeof(out), &f);
			acc += (uint64_t)n_ + out[n_ - 1];
		});

		/* IPv4 ID recovery. */
		struct uroce_ipid_solver solver;
		uint8_t h0[UROCE_IPV4_LEN + UROCE_UDP_LEN];
		uint16_t id = 0;

		memcpy(h0, g.l3, sizeof(h0));
		uroce_put_be16(h0 + 4, 0);
		uint32_t icrc0 = uroce_icrc(UROCE_ENCAP_V2_IPV4, h0, g.roce, g.roce_len - 4);

		BENCH("ipid init", sz, 0, {
			CLOBBER(&solver);
			uroce_ipid_solver_init(&solver, g.roce_len);
			acc += solver.col[15];
		});
		if (uroce_ipid_solve(&solver, icrc0, g.t.icrc, &id) != 0 || id != f.ip4.id) {
			fprintf(stderr, "ipid self-check failed\n");
			return 1;
		}
		BENCH("ipid solve", sz, 0, {
			CLOBBER(&solver);
			acc += (uint64_t)uroce_ipid_solve(&solver, icrc0, g.t.icrc, &id) + id;
		});
		BENCH("ipid rx", sz, g.roce_len, {
			CLOBBER(buf);
			uint32_t c_ = uroce_icrc(UROCE_ENCAP_V2_IPV4, h0, g.roce, g.roce_len - 4);
			acc += (uint64_t)uroce_ipid_solve(&solver, c_, g.t.icrc, &id) + id;
		});
	}
	return 0;
}
