/* SPDX-License-Identifier: MIT */
/*
 * The C side of the oracle tests (scapy_oracle.py, tshark_oracle.py): our encoder and decoder
 * driven from the command line, with everything they produce written out for an independent
 * tool to check.
 *
 *   gen_packets gen SEED PER_OP ENCAP OUT.pcap OUT.jsonl [resv] [vlan]
 *	ENCAP is v1, v2-ipv4 or v2-ipv6. For every opcode of uroce_opinfo, PER_OP frames with
 *	random header fields, every extension header the opcode carries and a random payload
 *	(0..1100 bytes, more often 0..8 to cover every pad count; exactly 8 for ATOMIC_WRITE; none
 *	where the opcode carries no payload), built with uroce_frame_encode(). OUT.pcap gets the
 *	frames, OUT.jsonl one JSON object per frame with the fields we chose (the encoder's input,
 *	not a decode of its output) and the ICRC the encoder wrote.
 *	"resv" also randomises the fields that valid senders leave 0: BTH TVer, resv6, resv7, the
 *	DETH reserved byte, the AETH reserved bit, the reserved FETH bits and the CNP bytes.
 *	"vlan" puts an 802.1Q tag on about a quarter of the frames.
 *	About half of the v2 frames carry a correct UDP checksum, the rest 0 (what rxe sends).
 *
 *   gen_packets decode IN.pcap
 *	Our decode of every frame of IN.pcap (e.g. written by scapy), one JSON object per line on
 *	stdout: the same keys as the gen output plus the fields the encoder computes (lengths,
 *	IPv4 checksum, next header, pad count), "rc" and "err" from uroce_frame_decode(), and
 *	"icrc_ok" / "icrc_calc" from uroce_frame_icrc().
 *
 * JSON keys (a header's keys appear only when the frame has it):
 *   i, encap ("v1" | "v2-ipv4" | "v2-ipv6" | "none"), frame_len,
 *   eth_dst, eth_src ("aa:bb:cc:dd:ee:ff"), vlan, vlan_tpid, vlan_tci,
 *   ip_tos, ip_id, ip_frag, ip_ttl, ip_src, ip_dst ("a.b.c.d")   [+ ip_ihl ip_tot_len ip_proto
 *   ip_csum], ip6_tclass, ip6_flow, ip6_hop, ip6_src, ip6_dst (32 hex digits; the GRH for v1)
 *   [+ ip6_paylen ip6_next], udp_sport, udp_dport, udp_csum [+ udp_len],
 *   opcode, se, mig, tver, pkey, fecn, becn, resv6, dqpn, ackreq, resv7, psn [+ pad],
 *   deth_qkey deth_resv deth_srcqp, feth, reth_va reth_rkey reth_len,
 *   atm_va atm_rkey atm_swap atm_cmp, aeth_syn aeth_msn, atmack, imm, ieth, cnp (hex),
 *   payload_len, payload (hex, without the pad), icrc (hex, the 4 ICRC bytes in wire order).
 * Integers are decimal (64-bit values included), booleans true/false.
 *
 * Exit status: 0; 1 with a message on stderr (I/O or encoder error); 2 for bad arguments.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host/io/pcap.h"
#include "wire/bytes.h"
#include "wire/packet.h"

#define MAX_PAYLOAD 1100
#define FRAME_CAP   2048

/* splitmix64: small, seedable, the same sequence on every platform. */
static uint64_t rng_state;

static uint64_t rnd64(void)
{
	uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);

	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

static uint32_t rnd32(void)
{
	return (uint32_t)(rnd64() >> 32);
}

/* Uniform enough in [0, n) for test data. */
static uint32_t rnd_below(uint32_t n)
{
	return (uint32_t)(((rnd64() >> 32) * n) >> 32);
}

static bool rnd_bool(void)
{
	return rnd64() >> 63;
}

static void rnd_bytes(uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(rnd64() >> 56);
}

static const char *encap_name(enum uroce_encap e)
{
	switch (e) {
	case UROCE_ENCAP_V1:
		return "v1";
	case UROCE_ENCAP_V2_IPV4:
		return "v2-ipv4";
	case UROCE_ENCAP_V2_IPV6:
		return "v2-ipv6";
	case UROCE_ENCAP_NONE:
		return "none";
	}
	return "none";
}

static void put_hex(FILE *o, const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		fprintf(o, "%02x", p[i]);
}

static void put_mac(FILE *o, const char *key, const uint8_t *m)
{
	fprintf(o, ",\"%s\":\"%02x:%02x:%02x:%02x:%02x:%02x\"", key, m[0], m[1], m[2], m[3], m[4],
		m[5]);
}

static void put_bool(FILE *o, const char *key, bool v)
{
	fprintf(o, ",\"%s\":%s", key, v ? "true" : "false");
}

static void put_uint(FILE *o, const char *key, uint64_t v)
{
	fprintf(o, ",\"%s\":%llu", key, (unsigned long long)v);
}

static void put_hexkey(FILE *o, const char *key, const uint8_t *p, size_t n)
{
	fprintf(o, ",\"%s\":\"", key);
	put_hex(o, p, n);
	fputc('"', o);
}

/*
 * One frame as a JSON object. decoded: f comes from uroce_frame_decode() and the fields the
 * encoder computes are printed too; otherwise f is the encoder's input.
 */
static void put_frame(FILE *o, const struct uroce_frame *f, bool decoded)
{
	const struct uroce_tpkt *t = &f->t;
	const struct uroce_opinfo *oi = &uroce_opinfo[t->bth.opcode];

	put_mac(o, "eth_dst", f->eth.dst);
	put_mac(o, "eth_src", f->eth.src);
	put_bool(o, "vlan", f->eth.vlan);
	if (f->eth.vlan) {
		put_uint(o, "vlan_tpid", f->eth.tpid);
		put_uint(o, "vlan_tci", f->eth.tci);
	}
	if (f->encap == UROCE_ENCAP_V2_IPV4) {
		const struct uroce_ipv4 *ip = &f->ip4;

		put_uint(o, "ip_tos", ip->tos);
		put_uint(o, "ip_id", ip->id);
		put_uint(o, "ip_frag", ip->frag);
		put_uint(o, "ip_ttl", ip->ttl);
		fprintf(o, ",\"ip_src\":\"%u.%u.%u.%u\",\"ip_dst\":\"%u.%u.%u.%u\"", ip->src[0],
			ip->src[1], ip->src[2], ip->src[3], ip->dst[0], ip->dst[1], ip->dst[2],
			ip->dst[3]);
		if (decoded) {
			put_uint(o, "ip_ihl", ip->ihl);
			put_uint(o, "ip_tot_len", ip->tot_len);
			put_uint(o, "ip_proto", ip->proto);
			put_uint(o, "ip_csum", ip->csum);
		}
	} else {
		const struct uroce_ip6 *ip = &f->ip6;

		put_uint(o, "ip6_tclass", ip->tclass);
		put_uint(o, "ip6_flow", ip->flow);
		put_uint(o, "ip6_hop", ip->hop_limit);
		put_hexkey(o, "ip6_src", ip->src, 16);
		put_hexkey(o, "ip6_dst", ip->dst, 16);
		if (decoded) {
			put_uint(o, "ip6_paylen", ip->paylen);
			put_uint(o, "ip6_next", ip->next_hdr);
		}
	}
	if (f->encap != UROCE_ENCAP_V1) {
		put_uint(o, "udp_sport", f->udp.sport);
		put_uint(o, "udp_dport", f->udp.dport);
		put_uint(o, "udp_csum", f->udp.csum);
		if (decoded)
			put_uint(o, "udp_len", f->udp.len);
	}

	put_uint(o, "opcode", t->bth.opcode);
	put_bool(o, "se", t->bth.se);
	put_bool(o, "mig", t->bth.mig);
	put_uint(o, "tver", t->bth.tver);
	put_uint(o, "pkey", t->bth.pkey);
	put_bool(o, "fecn", t->bth.fecn);
	put_bool(o, "becn", t->bth.becn);
	put_uint(o, "resv6", t->bth.resv6);
	put_uint(o, "dqpn", t->bth.dqpn);
	put_bool(o, "ackreq", t->bth.ackreq);
	put_uint(o, "resv7", t->bth.resv7);
	put_uint(o, "psn", t->bth.psn);
	if (decoded)
		put_uint(o, "pad", t->bth.pad);

	if (oi->hdrs & UROCE_HDR_DETH) {
		put_uint(o, "deth_qkey", t->deth.qkey);
		put_uint(o, "deth_resv", t->deth.resv);
		put_uint(o, "deth_srcqp", t->deth.src_qp);
	}
	if (oi->hdrs & UROCE_HDR_FETH)
		put_uint(o, "feth", t->feth);
	if (oi->hdrs & UROCE_HDR_RETH) {
		put_uint(o, "reth_va", t->reth.va);
		put_uint(o, "reth_rkey", t->reth.rkey);
		put_uint(o, "reth_len", t->reth.len);
	}
	if (oi->hdrs & UROCE_HDR_ATMETH) {
		put_uint(o, "atm_va", t->atmeth.va);
		put_uint(o, "atm_rkey", t->atmeth.rkey);
		put_uint(o, "atm_swap", t->atmeth.swap_add);
		put_uint(o, "atm_cmp", t->atmeth.compare);
	}
	if (oi->hdrs & UROCE_HDR_AETH) {
		put_uint(o, "aeth_syn", t->aeth.syndrome);
		put_uint(o, "aeth_msn", t->aeth.msn);
	}
	if (oi->hdrs & UROCE_HDR_ATMACK)
		put_uint(o, "atmack", t->atmack);
	if (oi->hdrs & UROCE_HDR_IMMDT)
		put_uint(o, "imm", t->imm);
	if (oi->hdrs & UROCE_HDR_IETH)
		put_uint(o, "ieth", t->ieth);
	if (oi->hdrs & UROCE_HDR_CNP)
		put_hexkey(o, "cnp", t->cnp_resv, UROCE_CNP_LEN);
	put_uint(o, "payload_len", t->payload_len);
	put_hexkey(o, "payload", t->payload_len ? t->payload : (const uint8_t *)"", t->payload_len);
}

/* RFC 768 / RFC 8200 UDP checksum of the v2 frame's UDP datagram (checksum field taken as 0). */
static uint16_t udp_csum(const uint8_t *l3, enum uroce_encap encap)
{
	bool v4 = encap == UROCE_ENCAP_V2_IPV4;
	const uint8_t *udp = l3 + (v4 ? UROCE_IPV4_LEN : UROCE_IPV6_LEN);
	uint32_t ulen = uroce_get_be16(udp + 4);
	uint64_t sum = UROCE_IPPROTO_UDP + ulen;

	/* Pseudo-header addresses: IPv4 bytes 12..19, IPv6 bytes 8..39. */
	for (size_t i = v4 ? 12 : 8; i < (v4 ? 20u : 40u); i += 2)
		sum += uroce_get_be16(l3 + i);
	for (uint32_t i = 0; i < ulen; i += 2) {
		if (i == 6)
			continue;
		sum += (uint32_t)udp[i] << 8 | (i + 1 < ulen ? udp[i + 1] : 0);
	}
	while (sum >> 16)
		sum = (sum & 0xFFFF) + (sum >> 16);
	uint16_t c = (uint16_t)~sum;

	return c ? c : 0xFFFF;
}

struct gen_opts {
	enum uroce_encap encap;
	bool resv;
	bool vlan;
};

/* Random but valid input for one frame of opcode op. payload must hold MAX_PAYLOAD bytes. */
static void gen_frame(struct uroce_frame *f, uint8_t op, uint8_t *payload, const struct gen_opts *g)
{
	const struct uroce_opinfo *oi = &uroce_opinfo[op];
	struct uroce_tpkt *t = &f->t;

	memset(f, 0, sizeof(*f));
	f->encap = g->encap;

	rnd_bytes(f->eth.dst, 6);
	rnd_bytes(f->eth.src, 6);
	f->eth.src[0] &= 0xFE; /* a unicast source */
	if (g->vlan && rnd_below(4) == 0) {
		f->eth.vlan = true;
		f->eth.tpid = UROCE_ETHERTYPE_VLAN;
		f->eth.tci = (uint16_t)rnd32();
	}

	switch (g->encap) {
	case UROCE_ENCAP_V2_IPV4:
		f->ip4.ihl = 5;
		f->ip4.tos = (uint8_t)rnd32();
		f->ip4.id = (uint16_t)rnd32();
		f->ip4.frag = 0x4000; /* DF, as rxe sends */
		f->ip4.ttl = (uint8_t)(1 + rnd_below(255));
		rnd_bytes(f->ip4.src, 4);
		rnd_bytes(f->ip4.dst, 4);
		break;
	case UROCE_ENCAP_V2_IPV6:
	case UROCE_ENCAP_V1:
		f->ip6.version = 6;
		f->ip6.tclass = (uint8_t)rnd32();
		f->ip6.flow = rnd32() & 0xFFFFF;
		f->ip6.hop_limit = (uint8_t)(1 + rnd_below(255));
		rnd_bytes(f->ip6.src, 16);
		rnd_bytes(f->ip6.dst, 16);
		break;
	case UROCE_ENCAP_NONE:
		break;
	}
	f->udp.sport = (uint16_t)(0xC000 | rnd32());
	f->udp.dport = UROCE_UDP_PORT;

	t->bth.opcode = op;
	t->bth.se = rnd_bool();
	t->bth.mig = rnd_bool();
	t->bth.pkey = (uint16_t)rnd32();
	t->bth.fecn = rnd_bool();
	t->bth.becn = rnd_bool();
	t->bth.dqpn = rnd32() & 0xFFFFFF;
	t->bth.ackreq = rnd_bool();
	t->bth.psn = rnd32() & 0xFFFFFF;
	if (g->resv) {
		t->bth.tver = (uint8_t)(rnd32() & 0x0F);
		t->bth.resv6 = (uint8_t)(rnd32() & 0x3F);
		t->bth.resv7 = (uint8_t)(rnd32() & 0x7F);
	}

	t->deth.qkey = rnd32();
	t->deth.resv = g->resv ? (uint8_t)rnd32() : 0;
	t->deth.src_qp = rnd32() & 0xFFFFFF;
	t->feth = g->resv ? rnd32() : rnd32() & 0x3F; /* SEL bits 5-4, PLT bits 3-0 */
	t->reth.va = rnd64();
	t->reth.rkey = rnd32();
	t->reth.len = rnd32();
	t->atmeth.va = rnd64();
	t->atmeth.rkey = rnd32();
	t->atmeth.swap_add = rnd64();
	t->atmeth.compare = rnd64();
	t->aeth.syndrome = (uint8_t)(g->resv ? rnd32() : rnd32() & 0x7F);
	t->aeth.msn = rnd32() & 0xFFFFFF;
	t->atmack = rnd64();
	t->imm = rnd32();
	t->ieth = rnd32();
	if (g->resv)
		rnd_bytes(t->cnp_resv, UROCE_CNP_LEN);

	uint32_t plen = 0;

	if (oi->flags & UROCE_OPF_ATOMIC_WRITE)
		plen = 8;
	else if (oi->flags & UROCE_OPF_PAYLOAD)
		plen = rnd_below(4) == 0 ? rnd_below(9) : rnd_below(MAX_PAYLOAD + 1);
	rnd_bytes(payload, plen);
	t->payload = payload;
	t->payload_len = plen;
}

/* Build one frame of opcode op, append it to the pcap and its fields to the JSON lines. */
static int gen_one(FILE *pcap, FILE *js, unsigned idx, uint8_t op, const struct gen_opts *g)
{
	static uint8_t payload[MAX_PAYLOAD];
	uint8_t buf[FRAME_CAP];
	struct uroce_frame f;

	gen_frame(&f, op, payload, g);
	ssize_t len = uroce_frame_encode(buf, sizeof(buf), &f);

	if (len < 0) {
		fprintf(stderr, "gen_packets: encode opcode 0x%02x: %zd\n", op, len);
		return (int)len;
	}
	/*
	 * A correct UDP checksum on about half of the v2 frames; then encode again so that the
	 * bytes written are the encoder's own, ICRC included.
	 */
	if (g->encap != UROCE_ENCAP_V1 && rnd_bool()) {
		f.udp.csum = udp_csum(buf + uroce_eth_len(&f.eth), g->encap);
		len = uroce_frame_encode(buf, sizeof(buf), &f);
		if (len < 0)
			return (int)len;
	}
	int rc = uroce_pcap_write_packet(pcap, 1700000000000000000ull + idx * 1000ull, buf,
					 (uint32_t)len);

	fprintf(js, "{\"i\":%u,\"encap\":\"%s\",\"frame_len\":%zd", idx, encap_name(f.encap), len);
	put_frame(js, &f, false);
	put_hexkey(js, "icrc", buf + len - UROCE_ICRC_LEN, UROCE_ICRC_LEN);
	fputs("}\n", js);
	return rc;
}

static int die(const char *what, int err)
{
	fprintf(stderr, "gen_packets: %s: %s\n", what, strerror(err < 0 ? -err : err));
	return 1;
}

static int parse_encap(const char *s, enum uroce_encap *e)
{
	if (!strcmp(s, "v1"))
		*e = UROCE_ENCAP_V1;
	else if (!strcmp(s, "v2-ipv4"))
		*e = UROCE_ENCAP_V2_IPV4;
	else if (!strcmp(s, "v2-ipv6"))
		*e = UROCE_ENCAP_V2_IPV6;
	else
		return -EINVAL;
	return 0;
}

static int cmd_gen(int argc, char **argv)
{
	struct gen_opts g = {0};
	char *end;

	if (argc < 7)
		return -EINVAL;
	rng_state = strtoull(argv[2], &end, 0);
	if (*end)
		return -EINVAL;
	unsigned long per_op = strtoul(argv[3], &end, 0);

	if (*end || per_op == 0 || per_op > 100000)
		return -EINVAL;
	if (parse_encap(argv[4], &g.encap))
		return -EINVAL;
	for (int i = 7; i < argc; i++) {
		if (!strcmp(argv[i], "resv"))
			g.resv = true;
		else if (!strcmp(argv[i], "vlan"))
			g.vlan = true;
		else
			return -EINVAL;
	}

	FILE *pcap = fopen(argv[5], "wb");

	if (!pcap)
		return die(argv[5], errno);
	FILE *js = fopen(argv[6], "w");

	if (!js) {
		fclose(pcap);
		return die(argv[6], errno);
	}
	int rc = uroce_pcap_write_header(pcap);
	unsigned idx = 0;

	for (unsigned long n = 0; rc == 0 && n < per_op; n++) {
		for (unsigned op = 0; rc == 0 && op < 256; op++) {
			if (uroce_op_valid((uint8_t)op))
				rc = gen_one(pcap, js, idx++, (uint8_t)op, &g);
		}
	}
	if (fclose(js) && rc == 0)
		rc = -errno;
	if (fclose(pcap) && rc == 0)
		rc = -errno;
	if (rc)
		return die("gen", rc);
	return 0;
}

static int cmd_decode(const char *path)
{
	uint8_t *buf;
	size_t len;
	int rc = uroce_file_load(path, &buf, &len);

	if (rc)
		return die(path, rc);

	struct uroce_pcap_rd r;
	struct uroce_pcap_pkt p;
	unsigned idx = 0;

	if (uroce_pcap_open(&r, buf, len)) {
		fprintf(stderr, "gen_packets: %s: %s\n", path, r.err);
		free(buf);
		return 1;
	}
	while ((rc = uroce_pcap_next(&r, &p)) == 1) {
		struct uroce_frame f;
		int drc = uroce_frame_decode(&f, p.data, p.caplen);

		printf("{\"i\":%u,\"rc\":%d,\"encap\":\"%s\"", idx++, drc, encap_name(f.encap));
		if (drc) {
			printf(",\"err\":\"%s\"}\n", f.err ? f.err : "");
			continue;
		}
		uint8_t calc[UROCE_ICRC_LEN];

		uroce_put_le32(calc, uroce_frame_icrc(&f));
		printf(",\"frame_len\":%u", f.len);
		put_frame(stdout, &f, true);
		/* The carried ICRC, back in wire byte order. */
		uint8_t wire[UROCE_ICRC_LEN];

		uroce_put_le32(wire, f.t.icrc);
		put_hexkey(stdout, "icrc", wire, UROCE_ICRC_LEN);
		put_hexkey(stdout, "icrc_calc", calc, UROCE_ICRC_LEN);
		put_bool(stdout, "icrc_ok", f.t.icrc == uroce_frame_icrc(&f));
		fputs("}\n", stdout);
	}
	free(buf);
	if (rc < 0) {
		fprintf(stderr, "gen_packets: %s: %s\n", path, r.err);
		return 1;
	}
	return fflush(stdout) ? die("stdout", errno) : 0;
}

int main(int argc, char **argv)
{
	if (argc >= 2 && !strcmp(argv[1], "gen")) {
		int rc = cmd_gen(argc, argv);

		if (rc != -EINVAL)
			return rc ? 1 : 0;
	} else if (argc == 3 && !strcmp(argv[1], "decode")) {
		return cmd_decode(argv[2]);
	}
	fprintf(stderr, "usage: gen_packets gen SEED PER_OP v1|v2-ipv4|v2-ipv6 OUT.pcap "
			"OUT.jsonl [resv] [vlan]\n"
			"       gen_packets decode IN.pcap\n");
	return 2;
}
