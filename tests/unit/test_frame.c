/* SPDX-License-Identifier: MIT */
/*
 * uroce_frame_decode's classification of malformed frames (wire/packet.h): one field of a valid
 * frame changed at a time, each case with the result the contract gives: -ENOENT (not RoCE:
 * other Ethertype, IP protocol or UDP port, or too short to tell), -EBADMSG with f->err (RoCE,
 * but lengths disagree, IPv4 options or fragments, bad GRH, bad transport packet), or 0.
 */
#include <errno.h>
#include <string.h>

#include "check.h"
#include "wire/bytes.h"
#include "wire/icrc.h"
#include "wire/packet.h"
#include "wire_util.h"

/* Offsets in an untagged frame. */
#define L3   UROCE_ETH_LEN
#define UDP4 (L3 + UROCE_IPV4_LEN)
#define UDP6 (L3 + UROCE_IPV6_LEN)
#define BTH4 (UDP4 + UROCE_UDP_LEN)
#define BTH6 (UDP6 + UROCE_UDP_LEN)
#define BTH1 (L3 + UROCE_GRH_LEN)

struct frame {
	uint8_t b[512];
	size_t n;
};

static void build(struct frame *fr, enum uroce_encap e, uint8_t op, uint32_t plen)
{
	static const uint8_t payload[16] = "0123456789abcdef";
	struct rng r = {0xF7A3E + e};
	struct uroce_frame f;

	random_frame(&r, &f, e, false, op, payload, plen);
	f.ip4.frag = 0x4000;
	ssize_t n = uroce_frame_encode(fr->b, sizeof(fr->b), &f);

	CHECK_GT(n, 0);
	fr->n = n > 0 ? (size_t)n : 0;
}

static void add16(uint8_t *p, int d)
{
	uroce_put_be16(p, (uint16_t)(uroce_get_be16(p) + d));
}

/* Decode and check the result; for 0, also whether the ICRC holds. */
static void expect(const char *what, const struct frame *fr, int want, enum uroce_encap encap,
		   int icrc_ok)
{
	struct uroce_frame f;
	int rc = uroce_frame_decode(&f, fr->b, fr->n);

	CHECKF(rc == want, "%s: %d, want %d (%s)", what, rc, want, f.err ? f.err : "");
	if (rc == -EBADMSG)
		CHECKF(f.err && f.encap == encap, "%s: err %s, encap %d", what, f.err, f.encap);
	if (rc == -ENOENT)
		CHECKF(f.encap == UROCE_ENCAP_NONE, "%s: encap %d", what, f.encap);
	if (rc == 0) {
		CHECKF(f.err == NULL && f.encap == encap, "%s: encap %d", what, f.encap);
		CHECKF((uroce_frame_icrc(&f) == f.t.icrc) == icrc_ok, "%s: ICRC", what);
	}
}

static void test_ipv4(void)
{
	const enum uroce_encap e = UROCE_ENCAP_V2_IPV4;
	struct frame v, m;

	build(&v, e, UROCE_OP_RC_SEND_ONLY, 8);
	expect("valid", &v, 0, e, 1);

	m = v, uroce_put_be16(m.b + 12, 0x0806);
	expect("Ethertype ARP", &m, -ENOENT, e, 0);
	m = v, m.b[L3] = 0x65;
	expect("IP version 6 in an IPv4 Ethertype", &m, -ENOENT, e, 0);
	m = v, m.b[L3] = 0x44;
	expect("IHL 4", &m, -ENOENT, e, 0);
	m = v, m.b[L3 + 9] = 6;
	expect("protocol TCP", &m, -ENOENT, e, 0);
	m = v, uroce_put_be16(m.b + UDP4 + 2, 4790);
	expect("UDP port 4790", &m, -ENOENT, e, 0);
	m = v, uroce_put_be16(m.b + L3 + 2, 24);
	expect("total length without room for UDP", &m, -ENOENT, e, 0);
	m = v, add16(m.b + UDP4 + 4, 4);
	expect("UDP length longer than IP's", &m, -EBADMSG, e, 0);
	m = v, add16(m.b + UDP4 + 4, -4);
	expect("UDP length shorter than IP's", &m, -EBADMSG, e, 0);
	m = v, add16(m.b + L3 + 2, 4);
	expect("total length beyond the frame", &m, -EBADMSG, e, 0);
	m = v, add16(m.b + L3 + 2, -4);
	expect("total length shorter than UDP's", &m, -EBADMSG, e, 0);
	/* Both lengths 4 shorter: a shorter packet followed by Ethernet padding. It decodes; the
	 * ICRC (now the last payload word) does not hold. */
	m = v, add16(m.b + L3 + 2, -4), add16(m.b + UDP4 + 4, -4);
	expect("both lengths shorter", &m, 0, e, 0);
	m = v, uroce_put_be16(m.b + L3 + 6, 0x2000);
	expect("more fragments", &m, -EBADMSG, e, 0);
	m = v, uroce_put_be16(m.b + L3 + 6, 0x4001);
	expect("fragment offset 1", &m, -EBADMSG, e, 0);
	m = v, uroce_put_be16(m.b + L3 + 6, 0x0000);
	expect("DF clear", &m, 0, e, 0); /* decodes; the flags are covered by the ICRC */

	/* IPv4 options: 4 bytes of NOPs after the header. */
	m = v;
	memmove(m.b + UDP4 + 4, m.b + UDP4, v.n - UDP4);
	memset(m.b + UDP4, 1, 4);
	m.b[L3] = 0x46;
	add16(m.b + L3 + 2, 4);
	m.n += 4;
	expect("IPv4 options", &m, -EBADMSG, e, 0);

	/* Transport: unknown opcode, pad beyond the payload, payload on an ACK. */
	m = v, m.b[BTH4] = 0x15;
	expect("opcode 0x15", &m, -EBADMSG, e, 0);
	build(&m, e, UROCE_OP_RC_SEND_ONLY, 0);
	m.b[BTH4 + 1] |= 0x10;
	expect("pad 1 without payload", &m, -EBADMSG, e, 0);
	build(&m, e, UROCE_OP_RC_ACK, 0);
	memmove(m.b + m.n, m.b + m.n - 4, 4);
	memset(m.b + m.n - 4, 0, 4);
	m.n += 4;
	add16(m.b + L3 + 2, 4), add16(m.b + UDP4 + 4, 4);
	expect("payload on an ACK", &m, -EBADMSG, e, 0);
	/* Receiver policy is not the decoder's: TVer 1 and reserved bits decode. */
	m = v, m.b[BTH4 + 1] |= 0x01, m.b[BTH4 + 8] |= 0x7F, m.b[BTH4 + 4] |= 0x3F;
	expect("TVer 1, reserved bits", &m, 0, e, 0);
}

static void test_ipv6(void)
{
	const enum uroce_encap e = UROCE_ENCAP_V2_IPV6;
	struct frame v, m;

	build(&v, e, UROCE_OP_UD_SEND_ONLY, 16);
	expect("valid", &v, 0, e, 1);
	m = v, m.b[L3] = 0x40;
	expect("IP version 4 in an IPv6 Ethertype", &m, -ENOENT, e, 0);
	m = v, m.b[L3 + 6] = 6;
	expect("next header TCP", &m, -ENOENT, e, 0);
	m = v, uroce_put_be16(m.b + UDP6 + 2, 4792);
	expect("UDP port 4792", &m, -ENOENT, e, 0);
	m = v, uroce_put_be16(m.b + L3 + 4, 4);
	expect("payload length without room for UDP", &m, -ENOENT, e, 0);
	m = v, add16(m.b + L3 + 4, 4);
	expect("payload length beyond the frame", &m, -EBADMSG, e, 0);
	m = v, add16(m.b + UDP6 + 4, 4);
	expect("UDP length longer than IPv6's", &m, -EBADMSG, e, 0);
	m = v, add16(m.b + L3 + 4, -4);
	expect("payload length shorter than UDP's", &m, -EBADMSG, e, 0);
	m = v, m.b[L3 + 1] ^= 0xFF, m.b[L3 + 7] ^= 0xFF;
	expect("traffic class, flow label, hop limit", &m, 0, e, 1);
}

static void test_v1(void)
{
	const enum uroce_encap e = UROCE_ENCAP_V1;
	struct frame v, m;

	build(&v, e, UROCE_OP_RC_WRITE_FIRST, 12);
	expect("valid", &v, 0, e, 1);
	m = v, m.b[L3] = 0x40;
	expect("GRH IPVer 4", &m, -EBADMSG, e, 0);
	m = v, m.b[L3 + 6] = UROCE_IPPROTO_UDP;
	expect("GRH next header UDP", &m, -EBADMSG, e, 0);
	m = v, add16(m.b + L3 + 4, 4);
	expect("GRH payload length beyond the frame", &m, -EBADMSG, e, 0);
	/* No second length to disagree with: a shorter PayLen cuts the packet. */
	m = v, add16(m.b + L3 + 4, -4);
	expect("GRH payload length shorter", &m, 0, e, 0);
	m = v, uroce_put_be16(m.b + L3 + 4, 15);
	expect("GRH payload length under BTH + ICRC", &m, -EBADMSG, e, 0);
	m = v, m.n = BTH1 - 1;
	expect("frame cut in the GRH", &m, -EBADMSG, e, 0);
}

static void test_vlan(void)
{
	struct frame v, m;
	struct rng r = {0x8100};
	struct uroce_frame f;
	static const uint8_t payload[4] = "abcd";

	random_frame(&r, &f, UROCE_ENCAP_V2_IPV4, true, UROCE_OP_RC_SEND_ONLY, payload, 4);
	f.eth.tpid = UROCE_ETHERTYPE_QINQ;
	ssize_t n = uroce_frame_encode(v.b, sizeof(v.b), &f);

	v.n = n > 0 ? (size_t)n : 0;
	expect("802.1ad tag", &v, 0, UROCE_ENCAP_V2_IPV4, 1);
	/* Two tags (802.1ad outer, 802.1Q inner) are not recognised. */
	memcpy(m.b, v.b, 16);
	uroce_put_be16(m.b + 16, UROCE_ETHERTYPE_VLAN);
	uroce_put_be16(m.b + 18, 0x0005);
	memcpy(m.b + 20, v.b + 16, v.n - 16);
	m.n = v.n + 4;
	expect("two VLAN tags", &m, -ENOENT, UROCE_ENCAP_NONE, 0);
}

int main(void)
{
	test_ipv4();
	test_ipv6();
	test_v1();
	test_vlan();
	return check_exit("test_frame");
}
