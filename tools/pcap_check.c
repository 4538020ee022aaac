/* SPDX-License-Identifier: MIT */
/*
 * `uroce pcap-check FILE...`: decode every RoCE packet of pcap/pcapng captures and verify its
 * ICRC. Wireshark decodes RoCE but does not check the ICRC; this is the check.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "frame_print.h"
#include "host/io/pcap.h"
#include "wire/packet.h"

#define USAGE_LINE "usage: uroce pcap-check [-q] FILE...\n"
#define USAGE_HINT "Run 'uroce help pcap-check' for more.\n"

static const char usage_text[] =
	USAGE_LINE
	"\n"
	"Decode the RoCE packets (v1, v2 over IPv4 and IPv6) in classic pcap or pcapng\n"
	"captures of Ethernet frames, print one line per packet and verify its ICRC. Other\n"
	"packets are counted and skipped. A FILE of - is standard input.\n"
	"\n"
	"  -q, --quiet  print only the packets that fail, and the summaries\n"
	"  -h, --help   print this help\n"
	"\n"
	"Exit status: 0 every RoCE packet is well formed and carries the right ICRC;\n"
	"1 a RoCE packet has a bad ICRC, is malformed, or was cut short by the capture's snap\n"
	"length (so it could not be checked); 2 wrong arguments, or a file that cannot be read or\n"
	"is not a valid capture (the other files are still checked). The worst status wins.\n";

static const char *linktype_name(uint32_t lt)
{
	switch (lt) {
	case 0:
		return "BSD loopback";
	case 101:
		return "raw IP";
	case 105:
		return "IEEE 802.11";
	case 113:
		return "Linux cooked capture";
	case 127:
		return "802.11 radiotap";
	case 228:
		return "raw IPv4";
	case 229:
		return "raw IPv6";
	case 276:
		return "Linux cooked capture v2";
	default:
		return "unsupported";
	}
}

/* Time relative to the first packet of the file, "seconds.microseconds"; negative if earlier. */
static void fmt_reltime(char *s, size_t n, uint64_t ts, uint64_t t0)
{
	uint64_t d = ts >= t0 ? ts - t0 : t0 - ts;

	snprintf(s, n, "%s%" PRIu64 ".%06" PRIu64, ts >= t0 ? "" : "-", d / 1000000000u,
		 d % 1000000000u / 1000u);
}

static void print_tally(FILE *out, const struct uroce_pcap_tally *t)
{
	fprintf(out,
		"%" PRIu64 " packets, %" PRIu64 " RoCE (%" PRIu64 " ICRC ok, %" PRIu64
		" ICRC bad, %" PRIu64 " malformed",
		t->packets, t->roce, t->icrc_ok, t->icrc_bad, t->malformed);
	if (t->cut)
		fprintf(out, ", %" PRIu64 " cut short by the capture, not checked", t->cut);
	fprintf(out, "), %" PRIu64 " non-RoCE skipped", t->skipped);
	if (t->not_eth)
		fprintf(out, " (%" PRIu64 " not Ethernet)", t->not_eth);
}

static void tally_add(struct uroce_pcap_tally *sum, const struct uroce_pcap_tally *t)
{
	sum->packets += t->packets;
	sum->roce += t->roce;
	sum->icrc_ok += t->icrc_ok;
	sum->icrc_bad += t->icrc_bad;
	sum->malformed += t->malformed;
	sum->cut += t->cut;
	sum->skipped += t->skipped;
	sum->not_eth += t->not_eth;
}

/* Note the first packet of each non-Ethernet link type, once per file (up to 8 types). */
struct linktype_seen {
	uint32_t type[8];
	unsigned n;
};

static bool linktype_first(struct linktype_seen *s, uint32_t lt)
{
	for (unsigned i = 0; i < s->n; i++) {
		if (s->type[i] == lt)
			return false;
	}
	if (s->n == sizeof(s->type) / sizeof(s->type[0]))
		return false;
	s->type[s->n++] = lt;
	return true;
}

static void note_linktype(FILE *out, const char *prefix, uint32_t lt)
{
	/* tcpdump -i any writes Linux cooked headers instead of the Ethernet ones. */
	bool cooked = lt == 113 || lt == 276;

	fprintf(out, "%slink type %" PRIu32 " (%s) is not Ethernet: its packets are skipped%s\n",
		prefix, lt, linktype_name(lt),
		cooked ? " (capture on the interface, not on \"any\")" : "");
}

/* One RoCE frame: count it and print its line (quiet: only if it fails). Returns the status. */
static int check_frame(FILE *out, const struct uroce_frame *f, int rc,
		       const struct uroce_pcap_pkt *p, const char *prefix, bool quiet,
		       struct uroce_pcap_tally *t)
{
	t->roce++;
	if (rc < 0 && p->caplen < p->origlen) {
		/* Snap length: the decoder sees a frame shorter than its IP header says. */
		t->cut++;
		fputs(prefix, out);
		uroce_frame_print_route(out, f);
		fprintf(out, " CUT: %" PRIu32 " of %" PRIu32 " bytes captured, not checked\n",
			p->caplen, p->origlen);
		return UROCE_EXIT_FAIL;
	}

	enum uroce_frame_verdict v = uroce_frame_check(f, NULL);

	if (!quiet || v != UROCE_VERDICT_OK) {
		fputs(prefix, out);
		uroce_frame_print(out, f);
	}
	switch (v) {
	case UROCE_VERDICT_OK:
		t->icrc_ok++;
		return UROCE_EXIT_OK;
	case UROCE_VERDICT_ICRC_BAD:
		t->icrc_bad++;
		return UROCE_EXIT_FAIL;
	case UROCE_VERDICT_MALFORMED:
		t->malformed++;
		return UROCE_EXIT_FAIL;
	}
	return UROCE_EXIT_FAIL;
}

static int worst(int a, int b)
{
	return a > b ? a : b;
}

int uroce_pcap_check_buf(FILE *out, FILE *err, const char *name, const uint8_t *buf, size_t len,
			 bool quiet, struct uroce_pcap_tally *t)
{
	struct uroce_pcap_rd r;
	struct uroce_pcap_pkt p;
	struct uroce_frame f;
	struct linktype_seen seen = { .n = 0 };
	uint64_t t0 = 0;
	int status = UROCE_EXIT_OK;
	int rc;

	memset(t, 0, sizeof(*t));
	memset(&f, 0, sizeof(f));
	if (len == 0) {
		fflush(out);
		fprintf(err, "uroce: %s: empty file, not a capture\n", name);
		return UROCE_EXIT_ERROR;
	}
	if (uroce_pcap_open(&r, buf, len) < 0) {
		fflush(out);
		fprintf(err, "uroce: %s: %s\n", name, r.err);
		return UROCE_EXIT_ERROR;
	}
	fprintf(out, "%s: %s\n", name, r.ng ? "pcapng" : "pcap");
	while ((rc = uroce_pcap_next(&r, &p)) == 1) {
		char prefix[64], when[32];

		if (t->packets++ == 0)
			t0 = p.ts_ns;
		fmt_reltime(when, sizeof(when), p.ts_ns, t0);
		snprintf(prefix, sizeof(prefix), "%11s #%-6" PRIu64 " ", when, t->packets);
		if (p.linktype != UROCE_LINKTYPE_ETHERNET) {
			t->skipped++;
			t->not_eth++;
			if (linktype_first(&seen, p.linktype))
				note_linktype(out, prefix, p.linktype);
			continue;
		}
		rc = uroce_frame_decode(&f, p.data, p.caplen);
		if (rc == -ENOENT || f.encap == UROCE_ENCAP_NONE) {
			t->skipped++;
			continue;
		}
		status = worst(status, check_frame(out, &f, rc, &p, prefix, quiet, t));
	}
	fprintf(out, "%s: ", name);
	print_tally(out, t);
	fputs(rc < 0 ? ", incomplete\n" : "\n", out);
	if (rc < 0) {
		fflush(out);
		fprintf(err, "uroce: %s: %s (after packet %" PRIu64 ")\n", name, r.err, t->packets);
		return UROCE_EXIT_ERROR;
	}
	return status;
}

static int check_file(const char *path, bool quiet, struct uroce_pcap_tally *t)
{
	uint8_t *buf = NULL;
	size_t len = 0;
	/* "-" is standard input, so that `tcpdump -w - ... | uroce pcap-check -` works. */
	int rc = uroce_file_load(strcmp(path, "-") ? path : "/dev/stdin", &buf, &len);

	if (rc < 0) {
		memset(t, 0, sizeof(*t));
		fflush(stdout);
		fprintf(stderr, "uroce: %s: %s\n", path, strerror(-rc));
		return UROCE_EXIT_ERROR;
	}
	rc = uroce_pcap_check_buf(stdout, stderr, path, buf, len, quiet, t);
	free(buf);
	return rc;
}

int uroce_cmd_pcap_check(int argc, char **argv)
{
	bool quiet = false;
	int i;

	for (i = 1; i < argc && argv[i][0] == '-' && argv[i][1] != '\0'; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "--")) {
			i++;
			break;
		}
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			fputs(usage_text, stdout);
			return UROCE_EXIT_OK;
		}
		if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) {
			quiet = true;
			continue;
		}
		fprintf(stderr, "uroce pcap-check: unknown option '%s'\n" USAGE_LINE USAGE_HINT, a);
		return UROCE_EXIT_ERROR;
	}
	if (i == argc) {
		fputs("uroce pcap-check: no capture file given\n" USAGE_LINE USAGE_HINT, stderr);
		return UROCE_EXIT_ERROR;
	}

	struct uroce_pcap_tally total = { 0 }, one;
	int nfiles = argc - i, unreadable = 0, status = UROCE_EXIT_OK;

	for (; i < argc; i++) {
		int rc = check_file(argv[i], quiet, &one);

		tally_add(&total, &one);
		if (rc == UROCE_EXIT_ERROR)
			unreadable++;
		status = worst(status, rc);
	}
	if (nfiles > 1) {
		printf("total: %d files", nfiles);
		if (unreadable)
			printf(" (%d unreadable or incomplete)", unreadable);
		printf(", ");
		print_tally(stdout, &total);
		putchar('\n');
	}
	return status;
}
