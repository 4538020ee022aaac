/* SPDX-License-Identifier: MIT */
/*
 * pcap-check in-process (uroce_pcap_check_buf), where thousands of inputs cost little:
 * - every golden capture passes, every packet RoCE with a good ICRC, the tally consistent;
 * - a pcapng rewrite of a capture (written here, with a nanosecond interface and a block the
 *   reader must skip) prints the same packet lines as the classic file;
 * - every truncation of a classic and a pcapng capture gives status 0 exactly when the cut falls
 *   on a record boundary, else 2, with the packets before the cut counted;
 * - random byte corruptions (seeded, reproducible) never crash and keep the tally consistent.
 * The shell test pcap_check.sh covers the command itself; run this under ASan for the rest.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "cmd.h"
#include "host/io/pcap.h"
#include "wire/bytes.h"

static const char *const captures[] = {
	"ib_atomic_bw_fadd.pcap", "ib_read_bw.pcap",	  "ib_send_bw.pcap",
	"ib_send_bw_ud.pcap",	  "ib_write_bw.pcap",	  "ib_write_bw_rdmacm.pcap",
	"ibv_rc_pingpong.pcap",	  "ibv_uc_pingpong.pcap", "ibv_ud_pingpong.pcap",
	"rping.pcap",		  "ucmatose.pcap",
};

#define NCAPTURES (sizeof(captures) / sizeof(captures[0]))

static FILE *devnull;

static int run(const uint8_t *buf, size_t len, struct uroce_pcap_tally *t)
{
	return uroce_pcap_check_buf(devnull, devnull, "x", buf, len, false, t);
}

/* What must hold of any run, whatever the input. */
static void check_consistent(const struct uroce_pcap_tally *t, int st, const char *what)
{
	uint64_t failed = t->icrc_bad + t->malformed + t->cut;

	CHECKF(st >= 0 && st <= 2, "%s: status %d", what, st);
	CHECKF(t->roce == t->icrc_ok + failed, "%s: RoCE count", what);
	CHECKF(t->packets == t->roce + t->skipped, "%s: packet count", what);
	CHECKF(t->not_eth <= t->skipped, "%s: not-Ethernet count", what);
	if (st == 0)
		CHECKF(failed == 0, "%s: status 0 with failed packets", what);
	if (st == 1)
		CHECKF(failed > 0, "%s: status 1 without failed packets", what);
}

/* A growable byte buffer for the pcapng writer. */
struct bytes {
	uint8_t *p;
	size_t len, cap;
};

static void bytes_put(struct bytes *b, const void *src, size_t n)
{
	if (b->len + n > b->cap) {
		b->cap = (b->len + n) * 2;
		b->p = realloc(b->p, b->cap);
		if (!b->p)
			abort();
	}
	memcpy(b->p + b->len, src, n);
	b->len += n;
}

static void bytes_le32(struct bytes *b, uint32_t v)
{
	uint8_t x[4];

	uroce_put_le32(x, v);
	bytes_put(b, x, 4);
}

/*
 * Rewrite a classic capture as little-endian pcapng: SHB, an IDB with if_tsresol = 10^-9, a name
 * resolution block (skipped by readers), then one EPB per packet. *ends collects the offset where
 * each block ends, the clean places to cut the file.
 */
static struct bytes to_pcapng(const uint8_t *buf, size_t len, size_t *ends, size_t *nends)
{
	struct bytes b = { 0 };
	struct uroce_pcap_rd r;
	struct uroce_pcap_pkt p;
	static const uint8_t zero[4];

	*nends = 0;
	/* SHB: version 1.0, section length unknown. */
	bytes_le32(&b, 0x0A0D0D0A);
	bytes_le32(&b, 28);
	bytes_le32(&b, 0x1A2B3C4D);
	bytes_le32(&b, 1);
	bytes_le32(&b, 0xFFFFFFFF);
	bytes_le32(&b, 0xFFFFFFFF);
	bytes_le32(&b, 28);
	ends[(*nends)++] = b.len;
	/* IDB: Ethernet, snaplen 0, option if_tsresol (code 9, length 1) = 9, end of options. */
	bytes_le32(&b, 1);
	bytes_le32(&b, 32);
	bytes_le32(&b, 1);
	bytes_le32(&b, 0);
	bytes_le32(&b, 9 | 1u << 16);
	bytes_le32(&b, 9);
	bytes_le32(&b, 0);
	bytes_le32(&b, 32);
	ends[(*nends)++] = b.len;
	/* NRB with only the end-of-records record. */
	bytes_le32(&b, 4);
	bytes_le32(&b, 16);
	bytes_le32(&b, 0);
	bytes_le32(&b, 16);
	ends[(*nends)++] = b.len;

	if (uroce_pcap_open(&r, buf, len) < 0)
		abort();
	while (uroce_pcap_next(&r, &p) == 1) {
		uint32_t padded = (p.caplen + 3) & ~3u;
		uint32_t blen = 32 + padded;

		bytes_le32(&b, 6);
		bytes_le32(&b, blen);
		bytes_le32(&b, 0);
		bytes_le32(&b, (uint32_t)(p.ts_ns >> 32));
		bytes_le32(&b, (uint32_t)p.ts_ns);
		bytes_le32(&b, p.caplen);
		bytes_le32(&b, p.origlen);
		bytes_put(&b, p.data, p.caplen);
		bytes_put(&b, zero, padded - p.caplen);
		bytes_le32(&b, blen);
		ends[(*nends)++] = b.len;
	}
	return b;
}

/* Length of the first line, newline included (the heading, which names the format). */
static size_t heading_len(const char *s)
{
	size_t n = strcspn(s, "\n");

	return s[n] ? n + 1 : n;
}

static char *output_of(const uint8_t *buf, size_t len, int *st)
{
	char *s = NULL;
	size_t n = 0;
	FILE *m = open_memstream(&s, &n);
	struct uroce_pcap_tally t;

	if (!m)
		abort();
	*st = uroce_pcap_check_buf(m, devnull, "x", buf, len, false, &t);
	fclose(m);
	return s;
}

/* Cut buf at every length: status 0 exactly at a block boundary, 2 elsewhere. */
static void sweep_truncations(const char *name, const uint8_t *buf, size_t len, const size_t *ends,
			      size_t nends, size_t first_pkt_end)
{
	size_t e = 0;

	for (size_t cut = 0; cut <= len; cut++) {
		struct uroce_pcap_tally t;
		char what[96];
		int st;

		/* Copy so that ASan sees a read past the cut as an overflow. */
		uint8_t *c = malloc(cut ? cut : 1);

		if (!c)
			abort();
		memcpy(c, buf, cut);
		st = run(c, cut, &t);
		free(c);
		while (e < nends && ends[e] < cut)
			e++;
		bool boundary = e < nends && ends[e] == cut;
		/* Whole packets before the cut: packet boundaries at or before it. */
		uint64_t pkts = 0;

		for (size_t i = 0; i < nends; i++) {
			if (ends[i] >= first_pkt_end && ends[i] <= cut)
				pkts++;
		}
		snprintf(what, sizeof(what), "%s cut at %zu", name, cut);
		check_consistent(&t, st, what);
		CHECKF(st == (boundary ? 0 : 2), "%s: status %d", what, st);
		CHECKF(t.packets == pkts, "%s: %llu packets, expected %llu", what,
		       (unsigned long long)t.packets, (unsigned long long)pkts);
		CHECK_BAIL();
	}
}

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;

static uint64_t rng(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

/* Corrupt 1..4 random bytes (half the time within the first 128, where the structure is). */
static void sweep_corruptions(const char *name, const uint8_t *buf, size_t len, int rounds)
{
	uint8_t *c = malloc(len);

	if (!c)
		abort();
	for (int i = 0; i < rounds; i++) {
		struct uroce_pcap_tally t;
		char what[96];
		int nbytes = 1 + (int)(rng() % 4);

		memcpy(c, buf, len);
		for (int k = 0; k < nbytes; k++) {
			size_t span = rng() % 2 && len > 128 ? 128 : len;

			c[rng() % span] = (uint8_t)rng();
		}
		snprintf(what, sizeof(what), "%s corruption %d", name, i);
		check_consistent(&t, run(c, len, &t), what);
		CHECK_BAIL();
	}
	free(c);
}

int main(int argc, char **argv)
{
	const char *dir = argc > 1 ? argv[1] : "tests/vectors";

	devnull = fopen("/dev/null", "w");
	if (!devnull)
		return 1;
	for (size_t i = 0; i < NCAPTURES; i++) {
		char path[512];
		uint8_t *buf;
		size_t len;

		snprintf(path, sizeof(path), "%s/%s", dir, captures[i]);
		int rc = uroce_file_load(path, &buf, &len);

		CHECKF(rc == 0, "load %s: %d", path, rc);
		if (rc)
			continue;

		/* The capture as it is. */
		struct uroce_pcap_tally t;
		int st = run(buf, len, &t);

		check_consistent(&t, st, captures[i]);
		CHECKF(st == 0, "%s: status %d", captures[i], st);
		CHECKF(t.packets > 0 && t.roce == t.packets && t.icrc_ok == t.roce,
		       "%s: %llu packets, %llu RoCE, %llu ICRC ok", captures[i],
		       (unsigned long long)t.packets, (unsigned long long)t.roce,
		       (unsigned long long)t.icrc_ok);

		/* Its pcapng rewrite prints the same packet lines and summary. */
		size_t *ng_ends = malloc((t.packets + 3) * sizeof(*ng_ends));
		size_t ng_nends;

		if (!ng_ends)
			abort();
		struct bytes ng = to_pcapng(buf, len, ng_ends, &ng_nends);
		int st1, st2;
		char *o1 = output_of(buf, len, &st1);
		char *o2 = output_of(ng.p, ng.len, &st2);

		CHECKF(st1 == 0 && st2 == 0, "%s: status %d, as pcapng %d", captures[i], st1, st2);
		CHECKF(strncmp(o2, "x: pcapng\n", 10) == 0, "%s: pcapng heading", captures[i]);
		CHECKF(strcmp(o1 + heading_len(o1), o2 + heading_len(o2)) == 0,
		       "%s: pcapng output differs", captures[i]);
		free(o1);
		free(o2);

		/* Truncations and corruptions, on the smaller captures (the sweep is quadratic). */
		if (len < 8000) {
			size_t *ends = malloc((t.packets + 1) * sizeof(*ends));
			size_t nends = 0;
			struct uroce_pcap_rd r;
			struct uroce_pcap_pkt p;

			if (!ends)
				abort();
			ends[nends++] = 24;
			uroce_pcap_open(&r, buf, len);
			while (uroce_pcap_next(&r, &p) == 1)
				ends[nends++] = r.off;
			sweep_truncations(captures[i], buf, len, ends, nends,
					  nends > 1 ? ends[1] : len + 1);
			sweep_truncations("pcapng", ng.p, ng.len, ng_ends, ng_nends,
					  ng_nends > 3 ? ng_ends[3] : ng.len + 1);
			free(ends);
		}
		sweep_corruptions(captures[i], buf, len, 300);
		sweep_corruptions("pcapng", ng.p, ng.len, 300);
		free(ng.p);
		free(ng_ends);
		free(buf);
	}
	fclose(devnull);
	return check_exit("test_pcap_check");
}
