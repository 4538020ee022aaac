/* SPDX-License-Identifier: MIT */
/*
 * The RoCE v2 receive check fed directly (uroce_v2_rx_verify, no socket): the IPv4 ID solver
 * recovers every single ID bit and IDs with many bits at payload lengths 0 to 4096, every
 * single-bit error in the transport bytes or the ICRC is rejected, IPv6 gets the full check; a
 * stream's lengths keep their solvers; then the IDs of the Linux Soft-RoCE captures.
 *
 *   test_io_solver [VECTORS]   VECTORS: the directory of the Soft-RoCE captures (tests/vectors)
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io_kit.h"
#include "host/io/pcap.h"
#include "host/io/v2_rx.h"

/*
 * Linux Soft-RoCE captures (tests/vectors): every v2/IPv4 packet, with its IP header hidden as a
 * UDP socket hides it, must verify, give back the ID rxe sent (non-zero, incrementing), and a
 * GRH slot whose IPv4 header is the captured one byte for byte.
 */
static void golden_ids(const char *dir)
{
	DIR *dp = opendir(dir);
	long pkts = 0, nonzero = 0;

	CHECKF(dp != NULL, "%s: %s", dir, strerror(errno));
	if (!dp)
		return;
	struct uroce_ipid_cache *cache = calloc(1, sizeof(*cache));
	struct dirent *de;

	while ((de = readdir(dp))) {
		size_t nl = strlen(de->d_name);
		char path[4096];
		uint8_t *buf;
		size_t len;
		struct uroce_pcap_rd rd;
		struct uroce_pcap_pkt pk;

		if (nl < 5 || strcmp(de->d_name + nl - 5, ".pcap") != 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (uroce_file_load(path, &buf, &len) != 0)
			continue;
		CHECK(uroce_pcap_open(&rd, buf, len) == 0);
		while (uroce_pcap_next(&rd, &pk) == 1) {
			struct uroce_frame f;
			struct uroce_v2_rx_in in;
			struct uroce_rx_desc d;

			if (uroce_frame_decode(&f, pk.data, pk.caplen) != 0 ||
			    f.encap != UROCE_ENCAP_V2_IPV4)
				continue;
			memset(&in, 0, sizeof(in));
			in.encap = f.encap;
			in.data = f.roce;
			in.len = f.roce_len;
			gid4(in.src, "0.0.0.1");
			gid4(in.dst, "0.0.0.1");
			memcpy(in.src + 12, f.ip4.src, 4);
			memcpy(in.dst + 12, f.ip4.dst, 4);
			in.sport = f.udp.sport;
			in.dport = f.udp.dport;
			in.tos = f.ip4.tos;
			in.ttl = f.ip4.ttl;
			int r = uroce_v2_rx_verify(&d, cache, &in);

			CHECKF(r == 0 && d.ip_id == f.ip4.id,
			       "%s: packet %ld: r %d ID 0x%x want 0x%x", de->d_name, pkts, r,
			       d.ip_id, f.ip4.id);
			CHECKF(memcmp(d.pkt.grh + 20, f.l3, 20) == 0, "%s: GRH slot differs",
			       de->d_name);
			pkts++;
			nonzero += f.ip4.id != 0;
			CHECK_BAIL();
		}
		free(buf);
	}
	closedir(dp);
	free(cache);
	printf("solver: %ld Soft-RoCE IPv4 packets (%ld with a non-zero ID): IDs recovered\n", pkts,
	       nonzero);
	CHECK(pkts > 100 && nonzero > 100);
}

/*
 * A stream's lengths stay cached: the segments after the first of a GSO send (IDs 1, 2, ...)
 * all need the solver, and a stream of 8256-byte sends at MTU 4096 alternates full packets
 * (4112 bytes) and last ones (80), with READ responses (4116), ACKs (20) and WRITE firsts
 * (4128) between them. Each length's solver is built once.
 */
static void stream_lengths(void)
{
	struct uroce_ipid_cache *cache = calloc(1, sizeof(*cache));
	const struct {
		uint8_t op;
		uint32_t plen;
	} pkts[] = {
		{UROCE_OP_RC_SEND_FIRST, 4096},
		{UROCE_OP_RC_SEND_LAST, 64},
		{UROCE_OP_RC_READ_RESP_FIRST, 4096},
		{UROCE_OP_RC_ACK, 0},
		{UROCE_OP_RC_WRITE_FIRST, 4096},
		{UROCE_OP_RC_SEND_MIDDLE, 4096},
	};
	const int n = (int)(sizeof(pkts) / sizeof(pkts[0]));
	uint8_t src[16], dst[16];
	static uint8_t dg[MAXPAY + 64];
	int ok = 0;

	gid4(src, "198.18.0.1");
	gid4(dst, "198.18.0.2");
	for (int i = 0; i < 1000; i++) {
		struct sent s;
		struct uroce_v2_rx_in in;
		struct uroce_rx_desc d;
		uint16_t id = (uint16_t)(1 + i % 15);

		make_pkt(&s, pkts[i % n].op, (uint32_t)i, pkts[i % n].plen);
		memset(&in, 0, sizeof(in));
		in.encap = UROCE_ENCAP_V2_IPV4;
		in.data = dg;
		in.len = (uint32_t)v4_datagram(dg, &s, src, dst, 4791, 4791, id, NULL, NULL);
		memcpy(in.src, src, 16);
		memcpy(in.dst, dst, 16);
		in.sport = 4791;
		in.dport = 4791;
		in.ttl = 64;
		ok += uroce_v2_rx_verify(&d, cache, &in) == 0 && d.ip_id == id;
	}
	printf("solver: 1000 packets of a stream's five lengths verified, %llu solvers built\n",
	       (unsigned long long)cache->builds);
	CHECK(ok == 1000);
	/* SEND_FIRST and SEND_MIDDLE share a length: five lengths, five solvers. */
	CHECKF(cache->builds == 5, "%llu solvers built for five lengths",
	       (unsigned long long)cache->builds);
	free(cache);
}

static int test_solver(const char *vectors)
{
	struct uroce_ipid_cache *cache = calloc(1, sizeof(*cache));
	struct uroce_v2_rx_in in;
	struct uroce_rx_desc d;
	uint8_t src[16], dst[16];
	static uint8_t dg[MAXPAY + 64];
	long solved = 0, rejected = 0;

	gid4(src, "198.18.0.1");
	gid4(dst, "198.18.0.2");
	for (int i = 0; i < MAXPAY + 64; i++)
		payload_mem[i] = (uint8_t)(i * 7 + 3);
	const uint32_t lens[] = {0, 1, 2, 3, 4, 255, 1024, 1500, 4095, MAXPAY};

	for (size_t li = 0; li < sizeof(lens) / sizeof(lens[0]); li++) {
		struct sent s;

		make_pkt(&s, UROCE_OP_UC_SEND_ONLY, (uint32_t)li, lens[li]);
		/* Every single ID bit, and a few IDs with many bits. */
		uint16_t ids[20];
		int nid = 0;

		for (int bit = 0; bit < 16; bit++)
			ids[nid++] = (uint16_t)(1u << bit);
		ids[nid++] = 0;
		ids[nid++] = 0xFFFF;
		ids[nid++] = 0xA5C3;
		ids[nid++] = (uint16_t)(0x1357 + li);
		for (int k = 0; k < nid; k++) {
			size_t n = v4_datagram(dg, &s, src, dst, 0xC000 | (uint16_t)k, 4791, ids[k],
					       NULL, NULL);

			memset(&in, 0, sizeof(in));
			in.encap = UROCE_ENCAP_V2_IPV4;
			in.data = dg;
			in.len = (uint32_t)n;
			memcpy(in.src, src, 16);
			memcpy(in.dst, dst, 16);
			in.sport = 0xC000 | (uint16_t)k;
			in.dport = 4791;
			in.tos = 0x5A; /* masked: any value */
			in.ttl = 3;
			int r = uroce_v2_rx_verify(&d, (k & 1) ? cache : NULL, &in);

			CHECKF(r == 0 && d.ip_id == ids[k], "len %u id 0x%x: r %d id 0x%x",
			       lens[li], ids[k], r, d.ip_id);
			solved += r == 0;
			/* Every single-bit error in the transport bytes or ICRC is detected. */
			for (size_t bit = 0; bit < n * 8; bit += (n > 64 ? 61 : 1)) {
				if (bit / 8 == 4) /* BTH byte 4 is masked (FECN, BECN) */
					continue;
				dg[bit / 8] ^= (uint8_t)(1u << (bit % 8));
				r = uroce_v2_rx_verify(&d, cache, &in);
				CHECKF(r == -EILSEQ, "len %u id 0x%x bit %zu: accepted", lens[li],
				       ids[k], bit);
				rejected += r == -EILSEQ;
				dg[bit / 8] ^= (uint8_t)(1u << (bit % 8));
			}
			for (int bit = 0; bit < 32; bit++) {
				dg[n - 4 + bit / 8] ^= (uint8_t)(1u << (bit % 8));
				r = uroce_v2_rx_verify(&d, cache, &in);
				CHECKF(r == -EILSEQ, "ICRC bit %d accepted", bit);
				dg[n - 4 + bit / 8] ^= (uint8_t)(1u << (bit % 8));
			}
			/* A different source port changes the pseudo-header: rejected. */
			in.sport ^= 1;
			CHECK(uroce_v2_rx_verify(&d, cache, &in) == -EILSEQ);
			in.sport ^= 1;
			CHECK_BAIL();
		}
	}
	/* IPv6: no ID to solve; full-strength check. */
	{
		struct sent s;
		uint8_t s6[16], d6[16];
		struct uroce_frame f;
		static uint8_t buf[MAXPAY + 256];

		gid6(s6, "fd00:198:18::1");
		gid6(d6, "fd00:198:18::2");
		make_pkt(&s, UROCE_OP_RC_WRITE_ONLY_IMM, 77, 999);
		memset(&f, 0, sizeof(f));
		f.encap = UROCE_ENCAP_V2_IPV6;
		f.t = s.t;
		f.ip6.version = 6;
		f.ip6.hop_limit = 64;
		f.ip6.flow = 0x12345; /* masked */
		memcpy(f.ip6.src, s6, 16);
		memcpy(f.ip6.dst, d6, 16);
		f.udp.sport = 0xC123;
		f.udp.dport = 4791;
		ssize_t n = uroce_frame_encode(buf, sizeof(buf), &f);

		CHECK(n > 62);
		memset(&in, 0, sizeof(in));
		in.encap = UROCE_ENCAP_V2_IPV6;
		in.data = buf + 62;
		in.len = (uint32_t)(n - 62);
		memcpy(in.src, s6, 16);
		memcpy(in.dst, d6, 16);
		in.sport = 0xC123;
		in.dport = 4791;
		in.tos = 3;
		in.ttl = 1;
		CHECK(uroce_v2_rx_verify(&d, cache, &in) == 0);
		CHECK(d.pkt.ecn_ce && d.pkt.encap == UROCE_ENCAP_V2_IPV6);
		CHECK(memcmp(d.pkt.grh + 8, s6, 16) == 0 && d.pkt.grh[7] == 1);
		buf[62 + 20] ^= 1;
		CHECK(uroce_v2_rx_verify(&d, cache, &in) == -EILSEQ);
		buf[62 + 20] ^= 1;
		in.len = 15;
		CHECK(uroce_v2_rx_verify(&d, cache, &in) == -EBADMSG);
	}
	printf("solver: %ld IDs recovered, %ld corruptions rejected\n", solved, rejected);
	stream_lengths();
	if (vectors)
		golden_ids(vectors);
	free(cache);
	return check_exit_with("io_solver", io_kit_checks);
}

int main(int argc, char **argv)
{
	if (argc > 2) {
		fprintf(stderr, "usage: test_io_solver [VECTORS]\n");
		return 2;
	}
	io_kit_init();
	return test_solver(argc == 2 ? argv[1] : NULL);
}
