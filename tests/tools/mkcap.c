/* SPDX-License-Identifier: MIT */
/*
 * Test helper for pcap_check.sh: writes the captures the shell tests feed to `uroce pcap-check`.
 *
 *   mkcap synth OUT        well-formed RoCE frames of every encapsulation and header kind the
 *                          vectors lack (v1 with a VLAN tag, v2/IPv6, NAK, RNR NAK, CmpSwap,
 *                          ImmDt, IETH, CNP, MADs), and non-RoCE frames in between
 *   mkcap malformed OUT    one good RoCE packet, then three malformed ones: v2/IPv4 UDP 4791
 *                          with a 6-byte payload (truncated BTH), v2/IPv6 with an unknown opcode,
 *                          v1 with a truncated GRH
 *   mkcap linktype OUT LT  a classic pcap of link type LT holding two raw IPv4 RoCE v2 packets
 *   mkcap flip IN OUT      copy IN to OUT with the first payload byte of the first RoCE packet
 *                          that has payload inverted; prints that packet's number (1-based)
 *
 * Frames are built with the wire layer's encoder, whose output the golden test has checked
 * against Linux Soft-RoCE's bytes; tshark is the independent decoder in pcap_check.sh.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host/io/pcap.h"
#include "wire/bytes.h"
#include "wire/mad.h"
#include "wire/packet.h"

static const uint8_t mac_a[6] = { 0x52, 0x54, 0x00, 0x00, 0x00, 0x0a };
static const uint8_t mac_b[6] = { 0x52, 0x54, 0x00, 0x00, 0x00, 0x0b };

static _Noreturn void die(const char *what)
{
	fprintf(stderr, "mkcap: %s\n", what);
	exit(2);
}

static uint64_t ts_ns = 1700000000ull * 1000000000ull;

static void put(FILE *out, const uint8_t *b, size_t n)
{
	ts_ns += 1500; /* 1.5 us apart: the relative times are exact in microseconds */
	if (uroce_pcap_write_packet(out, ts_ns, b, (uint32_t)n) < 0)
		die("write failed");
}

static void base_v4(struct uroce_frame *f)
{
	memset(f, 0, sizeof(*f));
	f->encap = UROCE_ENCAP_V2_IPV4;
	memcpy(f->eth.dst, mac_b, 6);
	memcpy(f->eth.src, mac_a, 6);
	f->ip4.ihl = 5;
	f->ip4.ttl = 64;
	f->ip4.frag = 0x4000;
	memcpy(f->ip4.src, (const uint8_t[]){ 198, 18, 0, 1 }, 4);
	memcpy(f->ip4.dst, (const uint8_t[]){ 198, 18, 0, 2 }, 4);
	f->udp.sport = 49152;
	f->udp.dport = UROCE_UDP_PORT;
	f->t.bth.pkey = 0xFFFF;
}

static void base_v6(struct uroce_frame *f, enum uroce_encap encap, uint8_t last_src,
		    uint8_t last_dst, bool link_local)
{
	memset(f, 0, sizeof(*f));
	f->encap = encap;
	memcpy(f->eth.dst, mac_b, 6);
	memcpy(f->eth.src, mac_a, 6);
	f->ip6.version = 6;
	f->ip6.hop_limit = 64;
	uint8_t pfx[4] = { 0x20, 0x01, 0x0d, 0xb8 }; /* 2001:db8::/32 */

	if (link_local) {
		pfx[0] = 0xfe;
		pfx[1] = 0x80;
		pfx[2] = pfx[3] = 0;
	}
	memcpy(f->ip6.src, pfx, 4);
	memcpy(f->ip6.dst, pfx, 4);
	f->ip6.src[15] = last_src;
	f->ip6.dst[15] = last_dst;
	f->udp.sport = 49153;
	f->udp.dport = UROCE_UDP_PORT;
	f->t.bth.pkey = 0xFFFF;
}

static void emit(FILE *out, const struct uroce_frame *f)
{
	uint8_t b[2048];
	ssize_t n = uroce_frame_encode(b, sizeof(b), f);

	if (n < 0)
		die("frame_encode failed");
	put(out, b, (size_t)n);
}

/* A QP1 MAD: UD SEND Only to QP 1 with Q_Key 0x80010000 and a 256-byte MAD. */
static void emit_mad(FILE *out, uint8_t mgmt_class, uint16_t attr_id)
{
	static uint8_t mad[UROCE_MAD_LEN];
	struct uroce_mad_hdr h = { .base_version = 1,
				   .mgmt_class = mgmt_class,
				   .class_version = 2,
				   .method = 0x03,
				   .tid = 0x1234,
				   .attr_id = attr_id };
	struct uroce_frame f;

	memset(mad, 0, sizeof(mad));
	uroce_mad_hdr_encode(mad, sizeof(mad), &h);
	base_v4(&f);
	f.t.bth.opcode = UROCE_OP_UD_SEND_ONLY;
	f.t.bth.dqpn = UROCE_GSI_QPN;
	f.t.bth.psn = 1;
	f.t.deth.qkey = UROCE_GSI_QKEY;
	f.t.deth.src_qp = UROCE_GSI_QPN;
	f.t.payload = mad;
	f.t.payload_len = sizeof(mad);
	emit(out, &f);
}

static void emit_ack(FILE *out, uint8_t syndrome, uint32_t msn)
{
	struct uroce_frame f;

	base_v4(&f);
	f.t.bth.opcode = UROCE_OP_RC_ACK;
	f.t.bth.dqpn = 0x11;
	f.t.bth.psn = 500;
	f.t.aeth.syndrome = syndrome;
	f.t.aeth.msn = msn;
	emit(out, &f);
}

/* Ethernet + IPv4 + UDP header for a hand-made datagram of plen payload bytes. */
static size_t udp4_hdrs(uint8_t *b, uint16_t dport, size_t plen)
{
	struct uroce_eth e = { .ethertype = UROCE_ETHERTYPE_IPV4 };
	struct uroce_ipv4 ip = { .ihl = 5,
				 .ttl = 64,
				 .proto = UROCE_IPPROTO_UDP,
				 .tot_len = (uint16_t)(UROCE_IPV4_LEN + UROCE_UDP_LEN + plen),
				 .src = { 198, 18, 0, 1 },
				 .dst = { 198, 18, 0, 2 } };
	struct uroce_udp u = { .sport = 40000, .dport = dport,
			       .len = (uint16_t)(UROCE_UDP_LEN + plen) };

	memcpy(e.dst, mac_b, 6);
	memcpy(e.src, mac_a, 6);
	uroce_eth_encode(b, UROCE_ETH_LEN, &e);
	uroce_ipv4_encode(b + UROCE_ETH_LEN, UROCE_IPV4_LEN, &ip);
	uroce_put_be16(b + UROCE_ETH_LEN + 10, uroce_ipv4_csum(b + UROCE_ETH_LEN));
	uroce_udp_encode(b + UROCE_ETH_LEN + UROCE_IPV4_LEN, UROCE_UDP_LEN, &u);
	return UROCE_ETH_LEN + UROCE_IPV4_LEN + UROCE_UDP_LEN;
}

static void emit_non_roce(FILE *out)
{
	uint8_t b[128];

	/* ARP request. */
	memset(b, 0, sizeof(b));
	memset(b, 0xFF, 6);
	memcpy(b + 6, mac_a, 6);
	uroce_put_be16(b + 12, 0x0806);
	put(out, b, 60);

	/* DNS-ish UDP datagram to port 53. */
	size_t h = udp4_hdrs(b, 53, 20);

	memset(b + h, 0xAB, 20);
	put(out, b, h + 20);

	/* IPv6 TCP segment (next header 6). */
	struct uroce_eth e = { .ethertype = UROCE_ETHERTYPE_IPV6 };
	struct uroce_ip6 ip6 = { .version = 6, .paylen = 20, .next_hdr = 6, .hop_limit = 64 };

	memcpy(e.dst, mac_b, 6);
	memcpy(e.src, mac_a, 6);
	memset(b, 0, sizeof(b));
	uroce_eth_encode(b, UROCE_ETH_LEN, &e);
	uroce_ip6_encode(b + UROCE_ETH_LEN, UROCE_IPV6_LEN, &ip6);
	put(out, b, UROCE_ETH_LEN + UROCE_IPV6_LEN + 20);
}

static void synth(FILE *out)
{
	static const uint8_t data[64] = "uroce pcap-check synthetic payload";
	struct uroce_frame f;

	emit_non_roce(out); /* packets 1-3 */

	/* 4: RoCE v1 behind a VLAN tag, link-local GIDs, SE, 5 bytes of payload (pad 3). */
	base_v6(&f, UROCE_ENCAP_V1, 1, 2, true);
	f.eth.vlan = true;
	f.eth.tpid = UROCE_ETHERTYPE_VLAN;
	f.eth.tci = 3 << 13 | 100;
	f.t.bth.opcode = UROCE_OP_RC_SEND_ONLY;
	f.t.bth.se = true;
	f.t.bth.dqpn = 0x12;
	f.t.bth.psn = 100;
	f.t.payload = data;
	f.t.payload_len = 5;
	emit(out, &f);

	/* 5: v2/IPv6 NAK, invalid request. */
	base_v6(&f, UROCE_ENCAP_V2_IPV6, 1, 2, false);
	f.t.bth.opcode = UROCE_OP_RC_ACK;
	f.t.bth.dqpn = 0x13;
	f.t.bth.psn = 200;
	f.t.aeth.syndrome = UROCE_NAK_INVALID_REQ;
	f.t.aeth.msn = 7;
	emit(out, &f);

	/* 6-8: RNR NAK (timer 14 = 1.28 ms), ACK with credit code 5 (6 credits), PSN seq NAK. */
	emit_ack(out, UROCE_AETH_RNR_NAK | 14, 8);
	emit_ack(out, UROCE_AETH_ACK | 5, 9);
	emit_ack(out, UROCE_NAK_PSN_SEQ_ERR, 10);

	/* 9: CmpSwap. */
	base_v4(&f);
	f.t.bth.opcode = UROCE_OP_RC_CMP_SWAP;
	f.t.bth.dqpn = 0x14;
	f.t.bth.psn = 300;
	f.t.bth.ackreq = true;
	f.t.atmeth = (struct uroce_atmeth){ .va = 0x1000, .rkey = 0xabc, .swap_add = 2,
					    .compare = 1 };
	emit(out, &f);

	/* 10: Send Only Immediate. */
	base_v4(&f);
	f.t.bth.opcode = UROCE_OP_RC_SEND_ONLY_IMM;
	f.t.bth.dqpn = 0x15;
	f.t.bth.psn = 301;
	f.t.imm = 0xdeadbeef;
	f.t.payload = data;
	f.t.payload_len = 8;
	emit(out, &f);

	/* 11: Send Only Invalidate. */
	base_v4(&f);
	f.t.bth.opcode = UROCE_OP_RC_SEND_ONLY_INV;
	f.t.bth.dqpn = 0x15;
	f.t.bth.psn = 302;
	f.t.ieth = 0x1234;
	f.t.payload = data;
	f.t.payload_len = 4;
	emit(out, &f);

	/* 12: UC RDMA Write Only Immediate: RETH then ImmDt. */
	base_v4(&f);
	f.t.bth.opcode = UROCE_OP_UC_WRITE_ONLY_IMM;
	f.t.bth.dqpn = 0x16;
	f.t.bth.psn = 303;
	f.t.reth = (struct uroce_reth){ .va = 0x7f0000001000ull, .rkey = 0x42, .len = 64 };
	f.t.imm = 0x01020304;
	f.t.payload = data;
	f.t.payload_len = 64;
	emit(out, &f);

	/* 13: CNP with BECN, non-default P_Key. */
	base_v4(&f);
	f.t.bth.opcode = UROCE_OP_CNP;
	f.t.bth.becn = true;
	f.t.bth.pkey = 0x8001;
	f.t.bth.dqpn = 0x17;
	emit(out, &f);

	/* 14-16: MADs on QP1: CM DREQ, an SA MAD (class 0x03), a CM attribute nobody knows. */
	emit_mad(out, UROCE_MGMT_CLASS_CM, UROCE_CM_ATTR_DREQ);
	emit_mad(out, 0x03, 0x0011);
	emit_mad(out, UROCE_MGMT_CLASS_CM, 0x0099);

	/* 17: one more non-RoCE: UDP to 4792. */
	uint8_t b[128];
	size_t h = udp4_hdrs(b, UROCE_UDP_PORT + 1, 16);

	memset(b + h, 0, 16);
	put(out, b, h + 16);
}

static void malformed(FILE *out)
{
	static const uint8_t data[16] = "0123456789abcdef";
	struct uroce_frame f;
	uint8_t b[256];
	ssize_t n;

	/* 1: good. */
	base_v4(&f);
	f.t.bth.opcode = UROCE_OP_RC_SEND_ONLY;
	f.t.bth.dqpn = 0x21;
	f.t.bth.psn = 1;
	f.t.payload = data;
	f.t.payload_len = sizeof(data);
	emit(out, &f);

	/* 2: UDP 4791 with 6 bytes of payload: half a BTH. */
	size_t h = udp4_hdrs(b, UROCE_UDP_PORT, 6);

	memset(b + h, 0, 6);
	put(out, b, h + 6);

	/* 3: v2/IPv6 with opcode 0x1F, which IBTA leaves reserved. */
	base_v6(&f, UROCE_ENCAP_V2_IPV6, 1, 2, false);
	f.t.bth.opcode = UROCE_OP_RC_SEND_ONLY;
	f.t.bth.dqpn = 0x22;
	f.t.payload = data;
	f.t.payload_len = sizeof(data);
	n = uroce_frame_encode(b, sizeof(b), &f);
	if (n < 0)
		die("frame_encode failed");
	b[UROCE_ETH_LEN + UROCE_IPV6_LEN + UROCE_UDP_LEN] = 0x1F;
	put(out, b, (size_t)n);

	/* 4: v1 Ethertype with 20 bytes: half a GRH. */
	memset(b, 0, sizeof(b));
	memcpy(b, mac_b, 6);
	memcpy(b + 6, mac_a, 6);
	uroce_put_be16(b + 12, UROCE_ETHERTYPE_ROCE);
	b[14] = 0x60;
	put(out, b, UROCE_ETH_LEN + 20);
}

static void linktype(FILE *out, uint32_t lt)
{
	uint8_t hdr[24];
	struct uroce_frame f;
	uint8_t b[256];

	uroce_put_le32(hdr, 0xA1B2C3D4u);
	uroce_put_le32(hdr + 4, 2 | 4u << 16);
	uroce_put_le32(hdr + 8, 0);
	uroce_put_le32(hdr + 12, 0);
	uroce_put_le32(hdr + 16, 65535);
	uroce_put_le32(hdr + 20, lt);
	if (fwrite(hdr, sizeof(hdr), 1, out) != 1)
		die("write failed");
	base_v4(&f);
	f.t.bth.opcode = UROCE_OP_RC_ACK;
	f.t.bth.dqpn = 0x31;
	for (int i = 0; i < 2; i++) {
		ssize_t n = uroce_frame_encode(b, sizeof(b), &f);

		if (n < 0)
			die("frame_encode failed");
		/* Drop the Ethernet header: raw IP, as link type 101 carries. */
		size_t len = (size_t)n - UROCE_ETH_LEN;
		uint8_t rec[16];

		uroce_put_le32(rec, 1700000000u + (uint32_t)i);
		uroce_put_le32(rec + 4, 0);
		uroce_put_le32(rec + 8, (uint32_t)len);
		uroce_put_le32(rec + 12, (uint32_t)len);
		if (fwrite(rec, sizeof(rec), 1, out) != 1 ||
		    fwrite(b + UROCE_ETH_LEN, len, 1, out) != 1)
			die("write failed");
	}
}

static int flip(const char *in, const char *outpath)
{
	uint8_t *buf;
	size_t len;
	struct uroce_pcap_rd r;
	struct uroce_pcap_pkt p;
	unsigned idx = 0;

	if (uroce_file_load(in, &buf, &len) < 0 || uroce_pcap_open(&r, buf, len) < 0)
		die("cannot read the input capture");
	while (uroce_pcap_next(&r, &p) == 1) {
		struct uroce_frame f;

		idx++;
		if (uroce_frame_decode(&f, p.data, p.caplen) == 0 && f.t.payload_len > 0) {
			buf[f.t.payload - buf] ^= 0xFF;
			FILE *out = fopen(outpath, "wb");

			if (!out || fwrite(buf, len, 1, out) != 1 || fclose(out) != 0)
				die("cannot write the output capture");
			printf("%u\n", idx);
			free(buf);
			return 0;
		}
	}
	die("no RoCE packet with payload in the input");
}

int main(int argc, char **argv)
{
	if (argc == 4 && !strcmp(argv[1], "flip"))
		return flip(argv[2], argv[3]);

	bool ok = (argc == 3 && (!strcmp(argv[1], "synth") || !strcmp(argv[1], "malformed"))) ||
		  (argc == 4 && !strcmp(argv[1], "linktype"));

	if (!ok)
		die("usage: mkcap synth|malformed OUT | linktype OUT LT | flip IN OUT");
	FILE *out = fopen(argv[2], "wb");

	if (!out)
		die("cannot create the output file");
	if (!strcmp(argv[1], "linktype")) {
		linktype(out, (uint32_t)strtoul(argv[3], NULL, 0));
	} else {
		if (uroce_pcap_write_header(out) < 0)
			die("write failed");
		if (!strcmp(argv[1], "synth"))
			synth(out);
		else
			malformed(out);
	}
	if (fclose(out) != 0)
		die("write failed");
	return 0;
}
