/* SPDX-License-Identifier: MIT */
/*
 * Golden captures from Linux Soft-RoCE (tests/vectors/ (*.pcap)): every RoCE packet decodes, has a
 * valid ICRC, re-encodes to the same bytes; every single-byte corruption outside the masked
 * fields is detected, and corruptions of masked fields are not.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "host/io/pcap.h"
#include "wire/icrc.h"
#include "wire/packet.h"

static const char *const captures[] = {
	"ib_atomic_bw_fadd.pcap", "ib_read_bw.pcap",	 "ib_send_bw.pcap",
	"ib_send_bw_ud.pcap",	  "ib_write_bw.pcap",	 "ib_write_bw_rdmacm.pcap",
	"ibv_rc_pingpong.pcap",	  "ibv_uc_pingpong.pcap", "ibv_ud_pingpong.pcap",
	"rping.pcap",		  "ucmatose.pcap",
};

/* Is byte i of a v2/IPv4 frame (Ethernet without tag) masked out of the ICRC? */
static bool masked_v2_ipv4(size_t i)
{
	size_t l3 = 14, udp = l3 + 20, bth = udp + 8;

	return i < 12 /* MACs; the Ethertype decides the decode */ || i == l3 + 1 || i == l3 + 8 || i == l3 + 10 || i == l3 + 11 ||
	       i == udp + 6 || i == udp + 7 || i == bth + 4;
}

static unsigned opcodes_seen[256];

static void check_packet(const char *file, unsigned idx, const uint8_t *data, uint32_t len)
{
	struct uroce_frame f;
	int rc = uroce_frame_decode(&f, data, len);

	CHECKF(rc == 0, "%s #%u: decode %d (%s)", file, idx, rc, f.err ? f.err : "");
	if (rc)
		return;
	CHECKF(f.encap == UROCE_ENCAP_V2_IPV4, "%s #%u: encap %d", file, idx, f.encap);
	CHECKF(uroce_frame_icrc(&f) == f.t.icrc, "%s #%u: ICRC %08x, carried %08x", file, idx,
	       uroce_frame_icrc(&f), f.t.icrc);
	opcodes_seen[f.t.bth.opcode]++;

	/* Re-encode from the decoded fields: identical bytes. */
	uint8_t out[10000];
	ssize_t n = uroce_frame_encode(out, sizeof(out), &f);

	CHECKF(n == (ssize_t)f.len && memcmp(out, data, f.len) == 0,
	       "%s #%u: re-encode differs (len %zd vs %u)", file, idx, n, f.len);

	/* A short buffer is refused, never overrun. */
	CHECK_EQ(uroce_frame_encode(out, f.len - 1, &f), -ENOSPC);

	/* Every single-byte corruption of a covered byte fails the ICRC; masked bytes do not. */
	uint8_t bad[10000];

	memcpy(bad, data, f.len);
	for (size_t i = 0; i < f.len; i++) {
		bad[i] ^= 0x5A;
		struct uroce_frame g;
		int r2 = uroce_frame_decode(&g, bad, f.len);
		bool ok = r2 == 0 && uroce_frame_icrc(&g) == g.t.icrc;

		if (masked_v2_ipv4(i))
			CHECKF(ok, "%s #%u: masked byte %zu changed the ICRC", file, idx, i);
		else
			CHECKF(!ok, "%s #%u: corruption at byte %zu not detected", file, idx, i);
		bad[i] = data[i];
		CHECK_BAIL();
	}
}

int main(int argc, char **argv)
{
	const char *dir = argc > 1 ? argv[1] : "tests/vectors";
	unsigned total = 0;

	for (size_t c = 0; c < sizeof(captures) / sizeof(captures[0]); c++) {
		char path[512];
		uint8_t *buf;
		size_t len;

		snprintf(path, sizeof(path), "%s/%s", dir, captures[c]);
		int rc = uroce_file_load(path, &buf, &len);

		CHECKF(rc == 0, "load %s: %d", path, rc);
		if (rc)
			continue;
		struct uroce_pcap_rd r;
		struct uroce_pcap_pkt p;
		unsigned n = 0;

		CHECK_EQ(uroce_pcap_open(&r, buf, len), 0);
		while ((rc = uroce_pcap_next(&r, &p)) == 1) {
			check_packet(captures[c], n++, p.data, p.caplen);
		}
		CHECKF(rc == 0, "%s: %s", path, r.err);
		CHECKF(n > 0, "%s: no packets", path);
		total += n;
		free(buf);
	}
	/* The captures hold these opcodes; all must have been seen and checked. */
	static const uint8_t expect[] = { 0x00, 0x01, 0x02, 0x04, 0x06, 0x07, 0x08, 0x0A,
					  0x0C, 0x0D, 0x0E, 0x0F, 0x10, 0x11, 0x12, 0x14,
					  0x20, 0x21, 0x22, 0x64 };
	for (size_t i = 0; i < sizeof(expect); i++)
		CHECKF(opcodes_seen[expect[i]] > 0, "opcode 0x%02x not in the captures", expect[i]);
	printf("golden: %u packets\n", total);
	return check_exit("test_golden");
}
