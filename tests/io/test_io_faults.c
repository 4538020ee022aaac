/* SPDX-License-Identifier: MIT */
/*
 * Fault injection (host/io/faults.h): UROCE_FAULTS parsing, the wrappers UROCE_FAULTS and
 * UROCE_PCAP put around a backend, the injector's decisions under backpressure (a fake inner
 * backend), and loss, duplication, reordering and corruption between two UDP backends on
 * loopback, repeatable by seed.
 *
 *   test_io_faults      (IO_DEBUG=1 prints every counter of each run)
 *
 * Waiting is poll() with a deadline; nothing sleeps.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io_kit.h"
#include "host/config/io_counters.h"
#include "host/io/faults.h"
#include "host/io/pcap.h"
#include "host/io/pcap_sink.h"
#include "host/io/wrap_env.h"
#include "wire/bytes.h"

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
		return check_exit_with("io_faults", io_kit_checks);

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
	return check_exit_with("io_faults", io_kit_checks);
}

int main(void)
{
	io_kit_init();
	return test_faults();
}
