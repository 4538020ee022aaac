/* SPDX-License-Identifier: MIT */
/*
 * Writes the seed corpus of fuzz_decode (run by make_corpus.sh):
 *   golden-<capture>-<n>   every packet of tests/vectors/(*).pcap, one file each;
 *   op-<xx>-<encap>        for each valid opcode, a frame: the first captured packet with that
 *                          opcode re-encoded as v1 and as v2/IPv6 (with a VLAN tag on one), or
 *                          for opcodes the captures lack, a frame built here as v2/IPv4 and v1;
 *   tpkt-<xx>              the bare transport packet (BTH..ICRC) of each of those;
 *   vector-cnp             the ConnectX-4 Lx CNP of roce-reference.md 1.7;
 *   odd-*                  frames that decode but disagree with what the encoder computes
 *                          (IPv4 checksum, ICRC, pad bytes, pad count), or are refused
 *                          (fragment, UDP length disagreeing with IPv4's: ICRC valid);
 *   pcap-*                 small capture files: classic pcap in both byte orders and both
 *                          timestamp units, pcapng in both byte orders with IDB options, EPB, SPB
 *                          and a block the reader skips; each also cut short twice (-cut-*).
 * Deterministic: the same inputs give the same files.
 *
 * usage: fuzz_make_corpus VECTORS_DIR OUT_DIR
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host/io/pcap.h"
#include "wire/bytes.h"
#include "wire/icrc.h"
#include "wire/packet.h"

static const char *outdir;
static unsigned files;
static size_t bytes;

static void emit(const char *name, const uint8_t *p, size_t n)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", outdir, name);
	f = fopen(path, "wb");
	if (!f || (n && fwrite(p, n, 1, f) != 1) || fclose(f) != 0) {
		perror(path);
		exit(1);
	}
	files++;
	bytes += n;
}

/* --- capture-file writers, either byte order --- */

struct w {
	uint8_t b[8192];
	size_t n;
	int be;
};

static void w32(struct w *w, uint32_t v)
{
	if (w->be)
		uroce_put_be32(w->b + w->n, v);
	else
		uroce_put_le32(w->b + w->n, v);
	w->n += 4;
}

static void w16(struct w *w, uint16_t v)
{
	if (w->be) {
		uroce_put_be16(w->b + w->n, v);
	} else {
		w->b[w->n] = (uint8_t)v;
		w->b[w->n + 1] = (uint8_t)(v >> 8);
	}
	w->n += 2;
}

static void wbytes(struct w *w, const uint8_t *p, size_t n, int pad4)
{
	memcpy(w->b + w->n, p, n);
	w->n += n;
	while (pad4 && w->n % 4)
		w->b[w->n++] = 0;
}

/* The file cut inside its last record / block, and inside the first one. */
static void emit_cut(const char *name, const struct w *w)
{
	char cut[128];

	snprintf(cut, sizeof(cut), "%s-cut-end", name);
	emit(cut, w->b, w->n - 5);
	snprintf(cut, sizeof(cut), "%s-cut-first", name);
	emit(cut, w->b, 40);
}

static void classic(const char *name, int be, int ns, const uint8_t *const *pk, const uint32_t *len,
		    unsigned k)
{
	struct w w = {.be = be};

	w32(&w, ns ? 0xA1B23C4D : 0xA1B2C3D4);
	w16(&w, 2);
	w16(&w, 4);
	w32(&w, 0);
	w32(&w, 0);
	w32(&w, 65535);
	w32(&w, 1);
	for (unsigned i = 0; i < k; i++) {
		w32(&w, 1700000000 + i);
		w32(&w, ns ? 123456789 : 123456);
		w32(&w, len[i]);
		w32(&w, len[i] + 4); /* origlen: as if the FCS was cut */
		wbytes(&w, pk[i], len[i], 0);
	}
	emit(name, w.b, w.n);
	emit_cut(name, &w);
}

/* One pcapng block: type, total length, body (padded), total length. */
static void ng_block(struct w *w, uint32_t type, const struct w *body)
{
	uint32_t total = (uint32_t)(12 + ((body->n + 3) & ~(size_t)3));

	w32(w, type);
	w32(w, total);
	wbytes(w, body->b, body->n, 1);
	w32(w, total);
}

static void pcapng(const char *name, int be, const uint8_t *const *pk, const uint32_t *len,
		   unsigned k)
{
	struct w w = {.be = be}, body = {.be = be};

	/* SHB: byte-order magic, version 1.0, section length unknown. */
	w32(&body, 0x1A2B3C4D);
	w16(&body, 1);
	w16(&body, 0);
	w32(&body, 0xFFFFFFFF);
	w32(&body, 0xFFFFFFFF);
	ng_block(&w, 0x0A0D0D0A, &body);
	/* IDB: Ethernet, with if_tsresol = 9 (nanoseconds) and the end-of-options marker. */
	body.n = 0;
	w16(&body, 1);
	w16(&body, 0);
	w32(&body, 65535);
	w16(&body, 9);
	w16(&body, 1);
	wbytes(&body, (const uint8_t[]){9, 0, 0, 0}, 4, 0); /* the value, then padding */
	w16(&body, 0);
	w16(&body, 0);
	ng_block(&w, 1, &body);
	for (unsigned i = 0; i < k; i++) {
		body.n = 0;
		if (i % 2 == 0) {
			/* EPB */
			w32(&body, 0);
			w32(&body, 0x00179B2E);
			w32(&body, 0x8C000000u + i);
			w32(&body, len[i]);
			w32(&body, len[i]);
			wbytes(&body, pk[i], len[i], 1);
			ng_block(&w, 6, &body);
		} else {
			/* SPB */
			w32(&body, len[i]);
			wbytes(&body, pk[i], len[i], 1);
			ng_block(&w, 3, &body);
		}
		/* A custom block the reader skips. */
		body.n = 0;
		w32(&body, 0x0000DEAD);
		ng_block(&w, 0x00000BAD, &body);
	}
	emit(name, w.b, w.n);
	emit_cut(name, &w);
}

/* --- frames --- */

struct pkt {
	uint8_t *data;
	uint32_t len;
};

static struct pkt first_of[256];
static struct pkt small_pkts[4];
static unsigned nsmall;

static void emit_variants(uint8_t op, const struct uroce_frame *in, bool from_capture)
{
	static const struct {
		enum uroce_encap e;
		const char *tag;
	} v[] = {{UROCE_ENCAP_V1, "v1"}, {UROCE_ENCAP_V2_IPV6, "v6"}, {UROCE_ENCAP_V2_IPV4, "v4"}};
	uint8_t buf[4096 + 256];

	for (size_t i = 0; i < 3; i++) {
		struct uroce_frame f = *in;
		char name[64];

		/* Captured packets are v2/IPv4 already. */
		if (from_capture && v[i].e == UROCE_ENCAP_V2_IPV4)
			continue;
		if (!from_capture && v[i].e == UROCE_ENCAP_V2_IPV6)
			continue;
		f.encap = v[i].e;
		f.eth.vlan = i == 1;
		f.eth.tpid = f.eth.vlan ? UROCE_ETHERTYPE_VLAN : 0;
		f.eth.tci = f.eth.vlan ? 0x6064 : 0;
		f.ip4.ihl = 5;
		f.ip6.version = 6;
		f.ip6.tclass = 0x02;
		f.ip6.flow = op;
		f.ip6.hop_limit = 64;
		/* IPv6 / GRH addresses: the v4-mapped GIDs of the IPv4 ones. */
		memset(f.ip6.src, 0, 16);
		memset(f.ip6.dst, 0, 16);
		f.ip6.src[10] = f.ip6.src[11] = f.ip6.dst[10] = f.ip6.dst[11] = 0xFF;
		memcpy(f.ip6.src + 12, f.ip4.src, 4);
		memcpy(f.ip6.dst + 12, f.ip4.dst, 4);
		ssize_t n = uroce_frame_encode(buf, sizeof(buf), &f);

		if (n < 0) {
			fprintf(stderr, "opcode 0x%02x: encode %zd\n", op, n);
			exit(1);
		}
		snprintf(name, sizeof(name), "op-%02x-%s%s", op, v[i].tag,
			 f.eth.vlan ? "-vlan" : "");
		emit(name, buf, (size_t)n);
		if (i == 0) {
			size_t hdr = (size_t)uroce_eth_len(&f.eth) + UROCE_GRH_LEN;

			snprintf(name, sizeof(name), "tpkt-%02x", op);
			emit(name, buf + hdr, (size_t)n - hdr);
		}
	}
}

/* Fixed field values for frames built here. */
static void base_frame(uint8_t op, struct uroce_frame *f)
{
	static const uint8_t payload[8] = {'u', 'r', 'o', 'c', 'e', '!', 0x00, 0xFF};

	memset(f, 0, sizeof(*f));
	f->encap = UROCE_ENCAP_V2_IPV4;
	memcpy(f->eth.dst, (const uint8_t[]){0x02, 0, 0, 0, 0, 2}, 6);
	memcpy(f->eth.src, (const uint8_t[]){0x02, 0, 0, 0, 0, 3}, 6);
	f->ip4.ihl = 5;
	f->ip4.id = 0x1234;
	f->ip4.frag = 0x4000;
	f->ip4.ttl = 64;
	memcpy(f->ip4.src, (const uint8_t[]){198, 18, 0, 3}, 4);
	memcpy(f->ip4.dst, (const uint8_t[]){198, 18, 0, 2}, 4);
	f->udp.sport = 0xC123;
	f->udp.dport = UROCE_UDP_PORT;
	f->t.bth.opcode = op;
	f->t.bth.pkey = 0xFFFF;
	f->t.bth.dqpn = 0x000011;
	f->t.bth.psn = 0xFFFFFE;
	f->t.bth.ackreq = (uroce_opinfo[op].flags & UROCE_OPF_NEEDS_ACK) != 0;
	f->t.bth.becn = op == UROCE_OP_CNP;
	f->t.deth.qkey = 0x11111111;
	f->t.deth.src_qp = 0x12;
	f->t.feth = 0x31;
	f->t.reth.va = 0x7F0000001000ull;
	f->t.reth.rkey = 0x1234;
	f->t.reth.len = 8;
	f->t.atmeth.va = 0x7F0000002000ull;
	f->t.atmeth.rkey = 0x5678;
	f->t.atmeth.swap_add = 1;
	f->t.atmeth.compare = 2;
	f->t.aeth.syndrome = 0x1F;
	f->t.aeth.msn = 7;
	f->t.atmack = 0x42;
	f->t.imm = 0xDEADBEEF;
	f->t.ieth = 0x4321;
	if (uroce_opinfo[op].flags & UROCE_OPF_PAYLOAD) {
		f->t.payload = payload;
		f->t.payload_len = op == UROCE_OP_RC_ATOMIC_WRITE ? 8 : 7;
	}
}

/* A frame for an opcode the captures do not hold. */
static void synth(uint8_t op)
{
	struct uroce_frame f;

	base_frame(op, &f);
	emit_variants(op, &f, false);
}

/* Recompute the ICRC of a v2/IPv4 frame (no VLAN) of n bytes after editing it. */
static void fix_icrc(uint8_t *b, size_t n)
{
	uint8_t *l3 = b + UROCE_ETH_LEN, *roce = l3 + UROCE_IPV4_LEN + UROCE_UDP_LEN;
	size_t tl = (size_t)(b + n - roce) - UROCE_ICRC_LEN;

	uroce_put_le32(roce + tl, uroce_icrc(UROCE_ENCAP_V2_IPV4, l3, roce, tl));
}

/*
 * Frames that decode but disagree with what the encoder computes, so the replay runs the
 * fuzz target's "re-encode differs" branch: a wrong IPv4 checksum, a wrong ICRC, non-zero pad
 * bytes, a pad count that disagrees with the length, Ethernet padding after the frame.
 */
static void odd(void)
{
	struct uroce_frame f;
	uint8_t b[256];
	ssize_t n;
	size_t roce = UROCE_ETH_LEN + UROCE_IPV4_LEN + UROCE_UDP_LEN;

	base_frame(UROCE_OP_UC_SEND_ONLY, &f); /* 7-byte payload, pad 1 */
	n = uroce_frame_encode(b, sizeof(b), &f);
	b[UROCE_ETH_LEN + 10] ^= 0x80;
	emit("odd-ipv4-csum", b, (size_t)n);

	n = uroce_frame_encode(b, sizeof(b), &f);
	b[n - 1] ^= 0x01;
	emit("odd-icrc", b, (size_t)n);

	n = uroce_frame_encode(b, sizeof(b), &f);
	b[n - UROCE_ICRC_LEN - 1] = 0xAA; /* the pad byte */
	fix_icrc(b, (size_t)n);
	emit("odd-pad-bytes", b, (size_t)n);

	n = uroce_frame_encode(b, sizeof(b), &f);
	b[roce + 1] = (uint8_t)((b[roce + 1] & ~0x30) | 0x30); /* pad count 3, not 1 */
	fix_icrc(b, (size_t)n);
	emit("odd-pad-count", b, (size_t)n);

	n = uroce_frame_encode(b, sizeof(b), &f);
	memset(b + n, 0, 24);
	emit("odd-eth-padding", b, (size_t)n + 24);

	n = uroce_frame_encode(b, sizeof(b), &f);
	b[UROCE_ETH_LEN + 6] = 0x20; /* more fragments */
	emit("odd-ipv4-fragment", b, (size_t)n);

	n = uroce_frame_encode(b, sizeof(b), &f);
	uroce_put_be16(b + roce - 4, (uint16_t)(uroce_get_be16(b + roce - 4) - 4)); /* UDP length */
	fix_icrc(b, (size_t)n);
	emit("odd-udp-len", b, (size_t)n);
}

static int is_pcap(const struct dirent *d)
{
	size_t n = strlen(d->d_name);

	return n > 5 && strcmp(d->d_name + n - 5, ".pcap") == 0;
}

int main(int argc, char **argv)
{
	struct dirent **ents;
	char path[4096], name[256];

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
		uint8_t *buf;
		size_t len;
		struct uroce_pcap_rd r;
		struct uroce_pcap_pkt p;
		unsigned idx = 0;
		char stem[128];

		snprintf(path, sizeof(path), "%s/%s", argv[1], ents[c]->d_name);
		snprintf(stem, sizeof(stem), "%.*s", (int)strlen(ents[c]->d_name) - 5,
			 ents[c]->d_name);
		if (uroce_file_load(path, &buf, &len) || uroce_pcap_open(&r, buf, len)) {
			fprintf(stderr, "%s: cannot read\n", path);
			return 1;
		}
		while (uroce_pcap_next(&r, &p) == 1) {
			struct uroce_frame f;

			snprintf(name, sizeof(name), "golden-%s-%03u", stem, idx++);
			emit(name, p.data, p.caplen);
			if (uroce_frame_decode(&f, p.data, p.caplen) != 0)
				continue;
			uint8_t op = f.t.bth.opcode;

			if (!first_of[op].data) {
				first_of[op].data = malloc(p.caplen);
				memcpy(first_of[op].data, p.data, p.caplen);
				first_of[op].len = p.caplen;
			}
			if (op == UROCE_OP_RC_ACK && nsmall < 4) {
				small_pkts[nsmall].data = malloc(p.caplen);
				memcpy(small_pkts[nsmall].data, p.data, p.caplen);
				small_pkts[nsmall++].len = p.caplen;
			}
		}
		free(buf);
		free(ents[c]);
	}
	free(ents);

	for (unsigned op = 0; op < 256; op++) {
		if (!uroce_op_valid((uint8_t)op))
			continue;
		if (first_of[op].data) {
			struct uroce_frame f;

			uroce_frame_decode(&f, first_of[op].data, first_of[op].len);
			emit_variants((uint8_t)op, &f, true);
		} else {
			synth((uint8_t)op);
		}
	}

	odd();

	uint8_t cnp[74];
	static const char hex[] = "e41d2dab2bc27cfe90643b320800"
				  "45c2003c718c400040119161"
				  "0a0011010a001201"
				  "000012b700280000"
				  "8100ffff4000011800000000"
				  "00000000000000000000000000000000"
				  "82fd002a";

	for (size_t i = 0; i < sizeof(cnp); i++)
		sscanf(hex + 2 * i, "%2hhx", &cnp[i]);
	emit("vector-cnp", cnp, sizeof(cnp));

	if (nsmall < 4) {
		fprintf(stderr, "fewer than 4 ACKs in the captures\n");
		return 1;
	}
	const uint8_t *pk[4];
	uint32_t pl[4];

	for (unsigned i = 0; i < 4; i++) {
		pk[i] = small_pkts[i].data;
		pl[i] = small_pkts[i].len;
	}
	/* The CNP rides along as the last packet. */
	pk[3] = cnp;
	pl[3] = sizeof(cnp);
	classic("pcap-classic-us-le", 0, 0, pk, pl, 4);
	classic("pcap-classic-ns-be", 1, 1, pk, pl, 2);
	pcapng("pcap-ng-le", 0, pk, pl, 4);
	pcapng("pcap-ng-be", 1, pk, pl, 2);
	printf("%u files, %zu bytes\n", files, bytes);
	return 0;
}
