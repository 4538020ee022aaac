/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for the wire decoders. One input is tried as:
 *  1. an Ethernet frame (uroce_frame_decode). When it decodes: the ICRC, then re-encoding. The
 *     encoder recomputes the lengths, the Ethertype, the IPv4 protocol and header checksum, the
 *     IPv6/GRH next header, the pad count (from the payload length), zero pad bytes and the ICRC.
 *     When the input already agrees on all of those, encoding gives back its first f.len bytes
 *     exactly; otherwise decoding the encoding gives the same fields, a valid ICRC and agreeing
 *     recomputed fields;
 *  2. a bare transport packet (uroce_tpkt_decode), re-encoded the same way;
 *  3. a MAD header (uroce_mad_hdr_decode), re-encoded;
 *  4. a whole capture file (uroce_pcap_open / uroce_pcap_next), each packet decoded as a frame.
 * Any broken invariant aborts with a message (a crash for libFuzzer, a failure for the replay).
 *
 * Built as a libFuzzer binary with UROCE_FUZZ, and into fuzz_replay (replay.c) in every build.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host/io/pcap.h"
#include "wire/icrc.h"
#include "wire/mad.h"
#include "wire/packet.h"
#include "wire_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_ASSERT(cond)                                                                    \
	do {                                                                                 \
		if (!(cond)) {                                                               \
			fprintf(stderr, "%s:%d: invariant broken: %s\n", __FILE__, __LINE__, \
				#cond);                                                      \
			abort();                                                             \
		}                                                                            \
	} while (0)

/* Bytes of the L3/L4 headers between Ethernet and the BTH. */
static size_t l3l4_len(enum uroce_encap e)
{
	return frame_hdr_len(e, false) - UROCE_ETH_LEN;
}

/* Does the largest length field allow a transport packet of roce_len bytes? */
static bool fits(enum uroce_encap e, size_t roce_len)
{
	switch (e) {
	case UROCE_ENCAP_V1:
		return roce_len <= 0xFFFF; /* GRH PayLen */
	case UROCE_ENCAP_V2_IPV4:
		return roce_len + UROCE_IPV4_LEN + UROCE_UDP_LEN <= 0xFFFF; /* total length */
	case UROCE_ENCAP_V2_IPV6:
		return roce_len + UROCE_UDP_LEN <= 0xFFFF; /* UDP length = IPv6 PayLen */
	case UROCE_ENCAP_NONE:
		break;
	}
	return false;
}

/* The pad bytes (between payload and ICRC) of a decoded transport packet are all zero. */
static bool pad_zero(const struct uroce_tpkt *t)
{
	return all_bytes(t->payload + t->payload_len, t->bth.pad, 0);
}

static void check_frame(const uint8_t *data, size_t size)
{
	struct uroce_frame f;
	int rc = uroce_frame_decode(&f, data, size);

	FUZZ_ASSERT(rc == 0 || rc == -ENOENT || rc == -EBADMSG);
	if (rc == -ENOENT)
		FUZZ_ASSERT(f.encap == UROCE_ENCAP_NONE);
	if (rc == -EBADMSG)
		FUZZ_ASSERT(f.err != NULL && f.encap != UROCE_ENCAP_NONE);
	/* Even a rejected frame's transport pointer stays inside the input. */
	if (rc == -EBADMSG && f.roce)
		FUZZ_ASSERT(f.roce > data && f.roce_len <= size &&
			    (size_t)(f.roce - data) <= size - f.roce_len);
	if (rc)
		return;

	/* Everything points inside the input. */
	size_t eth = (size_t)uroce_eth_len(&f.eth);
	size_t hdr = eth + l3l4_len(f.encap);

	FUZZ_ASSERT(f.err == NULL && f.len <= size && f.l3 == data + eth);
	FUZZ_ASSERT(f.roce == data + hdr && hdr + f.roce_len == f.len);
	FUZZ_ASSERT(f.roce_len >= (size_t)uroce_opinfo[f.t.bth.opcode].hdr_len + UROCE_ICRC_LEN);
	FUZZ_ASSERT(f.t.payload >= f.roce &&
		    f.t.payload + f.t.payload_len + f.t.bth.pad + UROCE_ICRC_LEN ==
			    f.roce + f.roce_len);
	if (f.encap == UROCE_ENCAP_V2_IPV4)
		FUZZ_ASSERT(f.ip4.ihl == 5 && !(f.ip4.frag & 0x3FFF) &&
			    f.udp.dport == UROCE_UDP_PORT);
	if (f.encap == UROCE_ENCAP_V2_IPV6)
		FUZZ_ASSERT(f.udp.dport == UROCE_UDP_PORT);

	uint32_t icrc = uroce_frame_icrc(&f);
	bool icrc_ok = icrc == f.t.icrc;
	bool csum_ok = f.encap != UROCE_ENCAP_V2_IPV4 || uroce_ipv4_csum(f.l3) == f.ip4.csum;
	bool pad_count_ok = f.t.bth.pad == uroce_pad_len(f.t.payload_len);
	bool pad_ok = pad_count_ok && pad_zero(&f.t);

	/* Re-encode. A recomputed pad count can make it up to 3 bytes longer. */
	size_t cap = f.len + 3;
	size_t new_roce = (size_t)uroce_opinfo[f.t.bth.opcode].hdr_len + f.t.payload_len +
			  uroce_pad_len(f.t.payload_len) + UROCE_ICRC_LEN;
	uint8_t *out = malloc(cap);
	ssize_t n = uroce_frame_encode(out, cap, &f);

	if (!fits(f.encap, new_roce)) {
		FUZZ_ASSERT(n < 0 && n != -ENOSPC);
		free(out);
		return;
	}
	if (n < 0)
		fprintf(stderr, "frame re-encode failed: %zd (encap %d, transport %zu bytes)\n", n,
			f.encap, new_roce);
	FUZZ_ASSERT(n == (ssize_t)(hdr + new_roce));
	if (icrc_ok && csum_ok && pad_ok) {
		FUZZ_ASSERT(memcmp(out, data, f.len) == 0);
	} else {
		struct uroce_frame g;

		FUZZ_ASSERT(uroce_frame_decode(&g, out, (size_t)n) == 0);
		FUZZ_ASSERT(frame_fields_eq(&f, &g, pad_count_ok));
		FUZZ_ASSERT(uroce_frame_icrc(&g) == g.t.icrc);
		FUZZ_ASSERT(g.t.bth.pad == uroce_pad_len(g.t.payload_len) && pad_zero(&g.t));
		if (g.encap == UROCE_ENCAP_V2_IPV4)
			FUZZ_ASSERT(uroce_ipv4_csum(g.l3) == g.ip4.csum);
		/* Same bytes everywhere the encoder copies rather than computes. */
		FUZZ_ASSERT(memcmp(out, data, eth) == 0);
		if (pad_ok)
			FUZZ_ASSERT(memcmp(out + hdr, data + hdr, f.roce_len - UROCE_ICRC_LEN) ==
				    0);
		if (pad_ok && icrc_ok)
			FUZZ_ASSERT(memcmp(out + hdr, data + hdr, f.roce_len) == 0);
	}
	free(out);
}

static void check_tpkt(const uint8_t *data, size_t size)
{
	struct uroce_tpkt t;
	const char *err = "unset";
	int rc = uroce_tpkt_decode(&t, data, size, &err);

	FUZZ_ASSERT(rc == 0 || rc == -EBADMSG);
	FUZZ_ASSERT(rc == 0 ? err == NULL : err != NULL);
	if (rc)
		return;
	const struct uroce_opinfo *oi = &uroce_opinfo[t.bth.opcode];

	FUZZ_ASSERT(oi->name && t.payload == data + oi->hdr_len);
	FUZZ_ASSERT((size_t)oi->hdr_len + t.payload_len + t.bth.pad + UROCE_ICRC_LEN == size);
	FUZZ_ASSERT(t.payload_len == 0 || (oi->flags & UROCE_OPF_PAYLOAD));

	size_t cap = size + 3;
	uint8_t *out = malloc(cap);
	ssize_t n = uroce_tpkt_encode(out, cap, &t);
	size_t want = (size_t)oi->hdr_len + t.payload_len + uroce_pad_len(t.payload_len);

	FUZZ_ASSERT(n == (ssize_t)want);
	if (t.bth.pad == uroce_pad_len(t.payload_len) && pad_zero(&t)) {
		FUZZ_ASSERT(memcmp(out, data, want) == 0);
	} else {
		struct uroce_tpkt u;

		/* Headers and payload as decoded; the pad recomputed. */
		memset(out + want, 0, UROCE_ICRC_LEN);
		FUZZ_ASSERT(uroce_tpkt_decode(&u, out, want + UROCE_ICRC_LEN, &err) == 0);
		FUZZ_ASSERT(tpkt_hdrs_eq(&t, &u, false) && tpkt_payload_eq(&t, &u));
	}
	/* Header encoding with every short capacity fails cleanly. */
	for (size_t c = 0; c < oi->hdr_len; c++)
		FUZZ_ASSERT(uroce_tpkt_hdr_encode(out, c, &t) == -ENOSPC);
	free(out);
}

static void check_mad(const uint8_t *data, size_t size)
{
	struct uroce_mad_hdr h;
	int rc = uroce_mad_hdr_decode(&h, data, size);

	FUZZ_ASSERT(rc == (size < UROCE_MAD_HDR_LEN ? -EBADMSG : UROCE_MAD_HDR_LEN));
	if (rc < 0)
		return;
	uint8_t out[UROCE_MAD_HDR_LEN];

	FUZZ_ASSERT(uroce_mad_hdr_encode(out, sizeof(out), &h) == UROCE_MAD_HDR_LEN);
	FUZZ_ASSERT(memcmp(out, data, UROCE_MAD_HDR_LEN) == 0);
	const char *name = uroce_cm_attr_name(h.attr_id);

	FUZZ_ASSERT(!name == !uroce_cm_attr_short(h.attr_id));
}

static void check_pcap(const uint8_t *data, size_t size)
{
	struct uroce_pcap_rd r;
	struct uroce_pcap_pkt p;
	int rc = uroce_pcap_open(&r, data, size);

	FUZZ_ASSERT(rc == 0 || (rc == -EBADMSG && r.err));
	if (rc)
		return;
	/* Every block is at least 12 bytes (pcapng) or 16 (pcap): the loop ends. */
	for (size_t k = 0; k <= size; k++) {
		rc = uroce_pcap_next(&r, &p);
		FUZZ_ASSERT(rc == 1 || rc == 0 || (rc == -EBADMSG && r.err));
		if (rc != 1)
			return;
		FUZZ_ASSERT(p.data >= data && p.caplen <= size &&
			    (size_t)(p.data - data) <= size - p.caplen);
		FUZZ_ASSERT(r.off <= size);
		check_frame(p.data, p.caplen);
	}
	fprintf(stderr, "pcap reader: more packets than bytes\n");
	abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	check_frame(data, size);
	check_tpkt(data, size);
	check_mad(data, size);
	check_pcap(data, size);
	return 0;
}
