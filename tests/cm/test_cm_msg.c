/* SPDX-License-Identifier: MIT */
/*
 * cm/msg.h and cm/cma.h without captures: reserved bits of every message against the
 * roce-reference.md 2.2 tables, hand-laid fields, random round trips (wire -> struct -> wire and
 * struct -> wire -> struct) for every message, the whole-MAD tagged union, every truncated length
 * and capacity, REJ reason names, RDMA CM service IDs and the cma_hdr.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "cm/cma.h"
#include "cm/msg.h"
#include "wire/bytes.h"

#define N UROCE_CM_MSG_LEN

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;

static uint64_t rnd(void)
{
	uint64_t x = rng_state;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return rng_state = x;
}

static void rnd_fill(uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)rnd();
}

static unsigned zero_bits(const uint8_t *p, size_t n)
{
	unsigned z = 0;

	for (size_t i = 0; i < n; i++)
		z += 8 - (unsigned)__builtin_popcount(p[i]);
	return z;
}

/*
 * Per message: the wire mask of its fields (encode a struct of all ones: every field saturates
 * to its width, reserved bits stay zero), and the reserved bits the reference lists.
 */
struct msg_ops {
	const char *name;
	uint16_t attr;
	size_t size;
	int (*dec)(void *out, const uint8_t *p, size_t len);
	int (*enc)(uint8_t *p, size_t cap, const void *in);
	unsigned reserved_bits;
};

#define GLUE(NAME, name)                                                                          \
	static int dec_##name(void *out, const uint8_t *p, size_t len)                            \
	{                                                                                         \
		return uroce_cm_##name##_decode(out, p, len);                                     \
	}                                                                                         \
	static int enc_##name(uint8_t *p, size_t cap, const void *in)                             \
	{                                                                                         \
		return uroce_cm_##name##_encode(p, cap, in);                                      \
	}
UROCE_CM_MSGS(GLUE)
#undef GLUE

static const struct msg_ops msgs[] = {
	/* REQ: 4-7, 24-27, and per path 6 (flow word) + 3 (SL byte) + 3 (ACK timeout byte). */
	{"REQ", 0x10, sizeof(struct uroce_cm_req), dec_req, enc_req, 32 + 32 + 2 * 12},
	{"MRA", 0x11, sizeof(struct uroce_cm_mra), dec_mra, enc_mra, 6 + 3},
	{"REJ", 0x12, sizeof(struct uroce_cm_rej), dec_rej, enc_rej, 6 + 1},
	{"REP", 0x13, sizeof(struct uroce_cm_rep), dec_rep, enc_rep, 8 + 8 + 8 + 4},
	{"RTU", 0x14, sizeof(struct uroce_cm_rtu), dec_rtu, enc_rtu, 0},
	{"DREQ", 0x15, sizeof(struct uroce_cm_dreq), dec_dreq, enc_dreq, 8},
	{"DREP", 0x16, sizeof(struct uroce_cm_drep), dec_drep, enc_drep, 0},
	{"SIDR_REQ", 0x17, sizeof(struct uroce_cm_sidr_req), dec_sidr_req, enc_sidr_req, 16},
	{"SIDR_REP", 0x18, sizeof(struct uroce_cm_sidr_rep), dec_sidr_rep, enc_sidr_rep, 16 + 8},
};
#define NMSGS (sizeof(msgs) / sizeof(msgs[0]))

static union {
	struct uroce_cm_req req;
	struct uroce_cm_mra mra;
	struct uroce_cm_rej rej;
	struct uroce_cm_rep rep;
	struct uroce_cm_rtu rtu;
	struct uroce_cm_dreq dreq;
	struct uroce_cm_drep drep;
	struct uroce_cm_sidr_req sidr_req;
	struct uroce_cm_sidr_rep sidr_rep;
} s1, s2;

static void msg_mask(const struct msg_ops *m, uint8_t *mask)
{
	memset(&s1, 0xFF, sizeof(s1));
	memset(mask, 0, N);
	CHECK_EQ(m->enc(mask, N, &s1), N);
}

static void test_reserved(void)
{
	for (size_t i = 0; i < NMSGS; i++) {
		uint8_t mask[N];

		msg_mask(&msgs[i], mask);
		CHECKF(zero_bits(mask, N) == msgs[i].reserved_bits, "%s: %u reserved bits, want %u",
		       msgs[i].name, zero_bits(mask, N), msgs[i].reserved_bits);
	}
}

/* Field positions laid by hand from the tables (REQ/REP/RTU/DREQ/DREP are also in the captures). */
static void test_layout(void)
{
	uint8_t b[N] = {0};
	struct uroce_cm_req req;
	struct uroce_cm_mra mra;
	struct uroce_cm_rej rej;
	struct uroce_cm_rep rep;
	struct uroce_cm_sidr_req sq;
	struct uroce_cm_sidr_rep sp;

	/* REQ 40: remote EECN, CM resp timeout 5, transport 2, E2E 1; 50: MTU 4, RDC 1, RNR 3. */
	uroce_put_be32(b + 40, 0xABCDEF00u | 0x9Du); /* 10011 10 1 */
	b[50] = 0x3D;				     /* 0011 1 101 */
	b[51] = 0xF2;				     /* 1111 0 010 */
	b[94] = 0xA8;				     /* SL 1010, subnet local 1 */
	b[95] = 0x98;				     /* ACK timeout 10011 */
	uroce_put_be32(b + 88, 0x12345000u | 0x2A);  /* flow label 0x12345, rate 42 */
	uroce_put_be32(b + 132, 0xFFFFF000u);	     /* alternate flow label all ones */
	CHECK_EQ(uroce_cm_req_decode(&req, b, N), N);
	CHECK(req.remote_eecn == 0xABCDEF && req.remote_cm_resp_timeout == 0x13);
	CHECK(req.transport_type == 2 && req.e2e_flow_control == 1);
	CHECK(req.path_mtu == 3 && req.rdc_exists == 1 && req.rnr_retry_count == 5);
	CHECK(req.max_cm_retries == 15 && req.srq == 0 && req.ext_transport_type == 2);
	CHECK(req.primary.sl == 10 && req.primary.subnet_local == 1);
	CHECK_EQ(req.primary.local_ack_timeout, 0x13);
	CHECK(req.primary.flow_label == 0x12345 && req.primary.packet_rate == 42);
	CHECK(req.alternate.flow_label == 0xFFFFF && req.alternate.packet_rate == 0);

	/* MRA: 8 message MRAed (2 MSBs), 9 service timeout (5 MSBs). */
	memset(b, 0, N);
	b[8] = 0x80;
	b[9] = 0xF8;
	b[10] = 0x5A;
	CHECK_EQ(uroce_cm_mra_decode(&mra, b, N), N);
	CHECK(mra.msg_mraed == 2 && mra.service_timeout == 31 && mra.private_data[0] == 0x5A);

	/* REJ: 8 message rejected (2), 9 info length (7), 10 reason, 12 ARI, 84 private data. */
	memset(b, 0, N);
	b[8] = 0x40;
	b[9] = 0x0A; /* length 5 */
	uroce_put_be16(b + 10, UROCE_CM_REJ_CONSUMER_DEFINED);
	b[12] = 0x11;
	b[83] = 0x22;
	b[84] = 0x33;
	CHECK_EQ(uroce_cm_rej_decode(&rej, b, N), N);
	CHECK(rej.msg_rejected == 1 && rej.reject_info_len == 5 && rej.reason == 28);
	CHECK(rej.ari[0] == 0x11 && rej.ari[71] == 0x22 && rej.private_data[0] == 0x33);

	/* REP 26: target ACK delay 5, failover 2, E2E 1; 27: RNR retry 3, SRQ 1. */
	memset(b, 0, N);
	b[26] = 0x8B; /* 10001 01 1 */
	b[27] = 0xD0; /* 110 1 */
	uroce_put_be64(b + 28, 0x0102030405060708ull);
	CHECK_EQ(uroce_cm_rep_decode(&rep, b, N), N);
	CHECK(rep.target_ack_delay == 17 && rep.failover_accepted == 1 && rep.e2e_flow_control == 1);
	CHECK(rep.rnr_retry_count == 6 && rep.srq == 1 && rep.local_ca_guid == 0x0102030405060708ull);

	/* SIDR_REQ / SIDR_REP. */
	memset(b, 0, N);
	uroce_put_be32(b, 0xCAFEF00Du);
	uroce_put_be16(b + 4, 0xFFFF);
	uroce_put_be64(b + 8, 0x0000000001110000ull | 4711);
	CHECK_EQ(uroce_cm_sidr_req_decode(&sq, b, N), N);
	CHECK(sq.request_id == 0xCAFEF00Du && sq.pkey == 0xFFFF && sq.service_id == 0x1111267ull);
	memset(b, 0, N);
	b[4] = 2;
	b[5] = 9;
	uroce_put_be24(b + 8, 0x123456);
	uroce_put_be64(b + 12, 0x1111267ull);
	uroce_put_be32(b + 20, UROCE_RDMA_UDP_QKEY);
	b[24] = 0x77;
	b[96] = 0x88;
	CHECK_EQ(uroce_cm_sidr_rep_decode(&sp, b, N), N);
	CHECK(sp.status == 2 && sp.info_len == 9 && sp.qpn == 0x123456);
	CHECK(sp.service_id == 0x1111267ull && sp.qkey == 0x01234567u);
	CHECK(sp.info[0] == 0x77 && sp.private_data[0] == 0x88);
}

/* Random wire bytes (reserved bits cleared) survive decode+encode; the struct survives too. */
static void test_round_trip(void)
{
	for (size_t i = 0; i < NMSGS; i++) {
		const struct msg_ops *m = &msgs[i];
		uint8_t mask[N];

		msg_mask(m, mask);
		for (int iter = 0; iter < 2000; iter++) {
			uint8_t w[N], e[N], e2[N];

			rnd_fill(w, N);
			for (size_t k = 0; k < N; k++)
				w[k] &= mask[k];
			memset(&s1, 0, sizeof(s1));
			memset(&s2, 0, sizeof(s2));
			memset(e, 0xA5, N);
			CHECK_EQ(m->dec(&s1, w, N), N);
			CHECK_EQ(m->enc(e, N, &s1), N);
			CHECKF(memcmp(e, w, N) == 0, "%s: wire round trip", m->name);
			CHECK_EQ(m->dec(&s2, e, N), N);
			CHECKF(memcmp(&s1, &s2, m->size) == 0, "%s: struct round trip", m->name);
			/* Reserved bits are ignored on decode and written as zero. */
			for (size_t k = 0; k < N; k++)
				w[k] |= (uint8_t)(~mask[k] & rnd());
			memset(&s2, 0, sizeof(s2));
			CHECK_EQ(m->dec(&s2, w, N), N);
			CHECK_EQ(memcmp(&s1, &s2, m->size), 0);
			memset(e2, 0x5A, N);
			CHECK(m->enc(e2, N, &s2) == N && memcmp(e2, e, N) == 0);
			CHECK_BAIL();
		}
	}
}

/* Field values wider than their fields are masked: they never spill into a neighbour. */
static void test_masking(void)
{
	struct uroce_cm_rep rep;
	uint8_t b[N];

	memset(&rep, 0, sizeof(rep));
	rep.local_qpn = 0xFF000001u;
	rep.target_ack_delay = 0xFF;
	CHECK_EQ(uroce_cm_rep_encode(b, N, &rep), N);
	CHECK(uroce_get_be32(b + 12) == 0x00000100u && b[26] == 0xF8 && b[27] == 0);
}

static void test_truncation(void)
{
	for (size_t i = 0; i < NMSGS; i++) {
		const struct msg_ops *m = &msgs[i];

		memset(&s1, 0x3C, sizeof(s1));
		for (size_t len = 0; len < N; len++) {
			/* Exactly len bytes on the heap, so ASan sees any read past them. */
			uint8_t *p = malloc(len ? len : 1);

			rnd_fill(p, len ? len : 1);
			CHECKF(m->dec(&s2, p, len) == -EBADMSG, "%s len %zu", m->name, len);
			free(p);
		}
		for (size_t cap = 0; cap < N; cap++) {
			uint8_t buf[N + 16];
			int ok = 1;

			memset(buf, 0xA5, sizeof(buf));
			CHECKF(m->enc(buf, cap, &s1) == -ENOSPC, "%s cap %zu", m->name, cap);
			for (size_t k = 0; k < sizeof(buf); k++)
				ok &= buf[k] == 0xA5;
			CHECKF(ok, "%s cap %zu: canary", m->name, cap);
		}
		CHECK_BAIL();
	}
}

static void test_mad(void)
{
	static struct uroce_cm_mad m, m2;
	uint8_t mad[UROCE_MAD_LEN], e[UROCE_MAD_LEN + 16];

	for (size_t i = 0; i < NMSGS; i++) {
		uint8_t mask[N];

		msg_mask(&msgs[i], mask);
		rnd_fill(mad, sizeof(mad));
		mad[1] = UROCE_MGMT_CLASS_CM;
		uroce_put_be16(mad + 16, msgs[i].attr);
		for (size_t k = 0; k < N; k++)
			mad[24 + k] &= mask[k];
		memset(&m, 0, sizeof(m));
		CHECK_EQ(uroce_cm_mad_decode(&m, mad, sizeof(mad)), UROCE_MAD_LEN);
		CHECK(m.hdr.attr_id == msgs[i].attr && m.hdr.tid == uroce_get_be64(mad + 8));
		memset(&s1, 0, sizeof(s1));
		CHECK_EQ(msgs[i].dec(&s1, mad + 24, N), N);
		CHECKF(memcmp(&m.u, &s1, msgs[i].size) == 0, "%s: union member", msgs[i].name);
		CHECK_EQ(uroce_cm_mad_encode(e, sizeof(e), &m), UROCE_MAD_LEN);
		CHECKF(memcmp(e, mad, sizeof(mad)) == 0, "%s: MAD round trip", msgs[i].name);
		for (size_t len = 0; len < UROCE_MAD_LEN; len++) {
			uint8_t *p = malloc(len ? len : 1);

			memcpy(p, mad, len);
			CHECK_EQ(uroce_cm_mad_decode(&m2, p, len), -EBADMSG);
			free(p);
		}
		for (size_t cap = 0; cap < UROCE_MAD_LEN; cap++) {
			int ok = 1;

			memset(e, 0xA5, sizeof(e));
			CHECK_EQ(uroce_cm_mad_encode(e, cap, &m), -ENOSPC);
			for (size_t k = 0; k < sizeof(e); k++)
				ok &= e[k] == 0xA5;
			CHECKF(ok, "%s cap %zu: canary", msgs[i].name, cap);
		}
	}
	/* Not CM, and CM attributes without a codec. */
	mad[1] = 0x04;
	CHECK_EQ(uroce_cm_mad_decode(&m, mad, sizeof(mad)), -EPROTO);
	mad[1] = UROCE_MGMT_CLASS_CM;
	static const uint16_t nocodec[] = {0x0001, 0x0019, 0x001A, 0x0000, 0x0020, 0xFFFF};

	for (size_t i = 0; i < sizeof(nocodec) / sizeof(nocodec[0]); i++) {
		uroce_put_be16(mad + 16, nocodec[i]);
		CHECK_EQ(uroce_cm_mad_decode(&m, mad, sizeof(mad)), -EOPNOTSUPP);
		CHECK_EQ(m.hdr.attr_id, nocodec[i]);
		memset(e, 0xA5, sizeof(e));
		CHECK(uroce_cm_mad_encode(e, sizeof(e), &m) == -EOPNOTSUPP && e[0] == 0xA5);
	}
}

static void test_rej_names(void)
{
	unsigned named = 0;

	CHECK_EQ(strcmp(uroce_cm_rej_reason_name(8), "INVALID_SERVICE_ID"), 0);
	CHECK_EQ(strcmp(uroce_cm_rej_reason_name(28), "CONSUMER_DEFINED"), 0);
	CHECK_EQ(strcmp(uroce_cm_rej_reason_name(26), "INVALID_MTU"), 0);
	CHECK_EQ(strcmp(uroce_cm_rej_reason_name(10), "STALE_CONN"), 0);
	for (unsigned r = 0; r < 0x10000; r++)
		named += uroce_cm_rej_reason_name((uint16_t)r) != NULL;
	CHECK_EQ(named, 34); /* 1..33 and 35 */
	CHECK(!uroce_cm_rej_reason_name(0) && !uroce_cm_rej_reason_name(34));
}

static void test_service_id(void)
{
	uint16_t ps, port;

	CHECK_EQ(uroce_cma_service_id(UROCE_RDMA_PS_TCP, 7174), 0x0000000001061C06ull);
	CHECK_EQ(uroce_cma_service_id(UROCE_RDMA_PS_UDP, 0), UROCE_RDMA_IB_IP_PS_UDP);
	CHECK_EQ(uroce_cma_service_id(UROCE_RDMA_PS_IB, 0xFFFF), 0x00000000013FFFFFull);
	CHECK((uroce_cma_service_id(UROCE_RDMA_PS_TCP, 1) & UROCE_RDMA_IB_IP_PS_MASK) ==
	      UROCE_RDMA_IB_IP_PS_TCP);
	for (int i = 0; i < 1000; i++) {
		static const uint16_t pss[] = {UROCE_RDMA_PS_TCP, UROCE_RDMA_PS_UDP, UROCE_RDMA_PS_IB};
		uint16_t want_ps = pss[rnd() % 3], want_port = (uint16_t)rnd();
		uint64_t sid = uroce_cma_service_id(want_ps, want_port);

		CHECK_EQ((sid & UROCE_IB_CMA_SERVICE_ID_MASK), UROCE_IB_CMA_SERVICE_ID);
		CHECK_EQ(uroce_cma_service_id_split(sid, &ps, &port), 0);
		CHECK(ps == want_ps && port == want_port);
	}
	CHECK_EQ(uroce_cma_service_id_split(0x0000000001061C06ull, NULL, NULL), 0);
	CHECK_EQ(uroce_cma_service_id_split(0x0000000002061C06ull, &ps, &port), -EINVAL);
	CHECK_EQ(uroce_cma_service_id_split(0x1000000001061C06ull, &ps, &port), -EINVAL);
	CHECK_EQ(uroce_cma_service_id_split(0, &ps, &port), -EINVAL);
}

static void test_cma_hdr(void)
{
	/* rping's: version 0, IPv4, port 0xb699, 198.18.0.3 -> 198.18.0.2. */
	static const uint8_t v4[36] = {0x00, 0x40, 0xB6, 0x99, [14] = 0, [15] = 0,
				       [16] = 0xC6, 0x12, 0x00, 0x03, [32] = 0xC6, 0x12, 0x00, 0x02};
	struct uroce_cma_hdr h, h2;
	uint8_t e[36 + 16];

	CHECK_EQ(uroce_cma_hdr_decode(&h, v4, sizeof(v4)), 36);
	CHECK(h.ip_version == 4 && h.port == 0xB699);
	CHECK(h.src.ip4 == 0xC6120003u && h.dst.ip4 == 0xC6120002u);
	memset(e, 0xEE, sizeof(e));
	CHECK(uroce_cma_hdr_encode(e, sizeof(e), &h) == 36 && memcmp(e, v4, 36) == 0);
	CHECK_EQ(e[36], 0xEE);

	/* IPv6: addresses verbatim; the reserved low nibble is ignored. */
	uint8_t v6[36];

	rnd_fill(v6, sizeof(v6));
	v6[0] = 0;
	v6[1] = 0x6F;
	CHECK_EQ(uroce_cma_hdr_decode(&h, v6, sizeof(v6)), 36);
	CHECK(h.ip_version == 6 && h.port == uroce_get_be16(v6 + 2));
	CHECK(memcmp(h.src.ip6, v6 + 4, 16) == 0 && memcmp(h.dst.ip6, v6 + 20, 16) == 0);
	CHECK(uroce_cma_hdr_encode(e, sizeof(e), &h) == 36 && e[1] == 0x60);
	CHECK_MEM_EQ(e + 2, v6 + 2, 34);
	CHECK(uroce_cma_hdr_decode(&h2, e, 36) == 36 && memcmp(&h2, &h, sizeof(h)) == 0);

	/* Validation. */
	uint8_t bad[36];

	memcpy(bad, v4, 36);
	bad[0] = 1;
	CHECK_EQ(uroce_cma_hdr_decode(&h, bad, 36), -EINVAL);
	for (unsigned ipv = 0; ipv < 16; ipv++) {
		memcpy(bad, v4, 36);
		bad[1] = (uint8_t)(ipv << 4);
		CHECK(uroce_cma_hdr_decode(&h, bad, 36) == ((ipv == 4 || ipv == 6) ? 36 : -EINVAL));
		h.ip_version = (uint8_t)ipv;
		memset(e, 0xA5, sizeof(e));
		CHECK(uroce_cma_hdr_encode(e, sizeof(e), &h) ==
		      ((ipv == 4 || ipv == 6) ? 36 : -EINVAL));
		if (ipv != 4 && ipv != 6)
			CHECK_EQ(e[0], 0xA5);
	}
	/* Truncation. */
	h.ip_version = 4;
	for (size_t len = 0; len < 36; len++) {
		uint8_t *p = malloc(len ? len : 1);
		int ok = 1;

		memcpy(p, v4, len);
		CHECK_EQ(uroce_cma_hdr_decode(&h2, p, len), -EBADMSG);
		free(p);
		memset(e, 0xA5, sizeof(e));
		CHECK_EQ(uroce_cma_hdr_encode(e, len, &h), -ENOSPC);
		for (size_t k = 0; k < sizeof(e); k++)
			ok &= e[k] == 0xA5;
		CHECKF(ok, "cma_hdr cap %zu: canary", len);
	}
}

int main(void)
{
	test_reserved();
	test_layout();
	test_round_trip();
	test_masking();
	test_truncation();
	test_mad();
	test_rej_names();
	test_service_id();
	test_cma_hdr();
	return check_exit("test_cm_msg");
}
