/* SPDX-License-Identifier: MIT */
/*
 * The opcode table (wire/opcode.h) against an expected table written here from
 * roce-reference.md 1.3 (header sizes and layouts) and 1.4 (opcode list), independently of the
 * X-macro: validity of all 256 opcodes, the extension headers of each, hdr_len, class bits, the
 * property flags, RC/UC symmetry, and the wire order of the extension headers (a hand-laid packet
 * per opcode decodes into the right fields).
 */
#include <errno.h>
#include <string.h>

#include "check.h"
#include "wire/bytes.h"
#include "wire/opcode.h"
#include "wire/packet.h"
#include "wire_util.h"

/* Header sizes from roce-reference.md 1.3 (and 1.10 for the CNP's 16 reserved bytes). */
enum {
	DETH = 8,
	FETH = 4,
	RETH = 16,
	ATMETH = 28,
	AETH = 4,
	ATMACK = 8,
	IMMDT = 4,
	IETH = 4,
	CNPR = 16
};

enum pos { F, M, L, O };
enum kind { SEND, WRITE, READ_REQ, READ_RESP, ACK, ATOMIC_ACK, ATOMIC, FLUSH, ATOMIC_WRITE, CNP };

struct exp_op {
	uint8_t op;
	unsigned hdrs;	/* enum uroce_hdr_bit set, as the doc's "Headers after BTH" column */
	unsigned bytes; /* the sum of those headers' sizes, from the doc's size column */
	enum pos pos;
	enum kind kind;
	bool payload;
	bool imm, inv;
};

/* clang-format off: one row per opcode reads better than the formatter's layout. */
#define H_IMM  UROCE_HDR_IMMDT
#define H_RETH UROCE_HDR_RETH

/* The RC/UC SEND and WRITE rows of 1.4 (low 5 bits 0x00-0x0B), for class prefix c. */
#define SEND_WRITE_ROWS(c)                                                          \
	{c | 0x00, 0, 0, F, SEND, true, false, false},                              \
		{c | 0x01, 0, 0, M, SEND, true, false, false},                      \
		{c | 0x02, 0, 0, L, SEND, true, false, false},                      \
		{c | 0x03, H_IMM, IMMDT, L, SEND, true, true, false},               \
		{c | 0x04, 0, 0, O, SEND, true, false, false},                      \
		{c | 0x05, H_IMM, IMMDT, O, SEND, true, true, false},               \
		{c | 0x06, H_RETH, RETH, F, WRITE, true, false, false},             \
		{c | 0x07, 0, 0, M, WRITE, true, false, false},                     \
		{c | 0x08, 0, 0, L, WRITE, true, false, false},                     \
		{c | 0x09, H_IMM, IMMDT, L, WRITE, true, true, false},              \
		{c | 0x0A, H_RETH, RETH, O, WRITE, true, false, false},             \
	{                                                                           \
		c | 0x0B, H_RETH | H_IMM, RETH + IMMDT, O, WRITE, true, true, false \
	}

static const struct exp_op expected[] = {
	SEND_WRITE_ROWS(0x00),
	{0x0C, H_RETH, RETH, O, READ_REQ, false, false, false},
	{0x0D, UROCE_HDR_AETH, AETH, F, READ_RESP, true, false, false},
	{0x0E, 0, 0, M, READ_RESP, true, false, false},
	{0x0F, UROCE_HDR_AETH, AETH, L, READ_RESP, true, false, false},
	{0x10, UROCE_HDR_AETH, AETH, O, READ_RESP, true, false, false},
	{0x11, UROCE_HDR_AETH, AETH, O, ACK, false, false, false},
	{0x12, UROCE_HDR_AETH | UROCE_HDR_ATMACK, AETH + ATMACK, O, ATOMIC_ACK, false, false,
	 false},
	{0x13, UROCE_HDR_ATMETH, ATMETH, O, ATOMIC, false, false, false},
	{0x14, UROCE_HDR_ATMETH, ATMETH, O, ATOMIC, false, false, false},
	/* 0x15 reserved (old RESYNC) */
	{0x16, UROCE_HDR_IETH, IETH, L, SEND, true, false, true},
	{0x17, UROCE_HDR_IETH, IETH, O, SEND, true, false, true},
	{0x1C, UROCE_HDR_FETH | H_RETH, FETH + RETH, O, FLUSH, false, false, false},
	{0x1D, H_RETH, RETH, O, ATOMIC_WRITE, true, false, false},
	SEND_WRITE_ROWS(0x20),
	{0x64, UROCE_HDR_DETH, DETH, O, SEND, true, false, false},
	{0x65, UROCE_HDR_DETH | H_IMM, DETH + IMMDT, O, SEND, true, true, false},
	{0x81, UROCE_HDR_CNP, CNPR, O, CNP, false, false, false},
};
/* clang-format on */
#define NEXPECTED (sizeof(expected) / sizeof(expected[0]))

static const struct exp_op *find_expected(unsigned op)
{
	for (size_t i = 0; i < NEXPECTED; i++) {
		if (expected[i].op == op)
			return &expected[i];
	}
	return NULL;
}

/* The flags an expected row implies (opcode.h's enum uroce_op_flag). */
static unsigned expected_flags(const struct exp_op *e)
{
	static const unsigned posf[] = {[F] = UROCE_OPF_FIRST,
					[M] = UROCE_OPF_MIDDLE,
					[L] = UROCE_OPF_LAST,
					[O] = UROCE_OPF_FIRST | UROCE_OPF_LAST};
	unsigned f = posf[e->pos];
	bool rc = (e->op & 0xE0) == 0x00;

	if (e->payload)
		f |= UROCE_OPF_PAYLOAD;
	if (e->imm)
		f |= UROCE_OPF_IMM;
	if (e->inv)
		f |= UROCE_OPF_INV;
	switch (e->kind) {
	case SEND:
		f |= UROCE_OPF_SEND | UROCE_OPF_REQ;
		break;
	case WRITE:
		f |= UROCE_OPF_WRITE | UROCE_OPF_REQ;
		break;
	case READ_REQ:
		f |= UROCE_OPF_READ | UROCE_OPF_REQ;
		break;
	case READ_RESP:
		f |= UROCE_OPF_READ | UROCE_OPF_RESP;
		break;
	case ACK:
		f |= UROCE_OPF_RESP;
		break;
	case ATOMIC_ACK:
		f |= UROCE_OPF_ATOMIC | UROCE_OPF_RESP;
		break;
	case ATOMIC:
		f |= UROCE_OPF_ATOMIC | UROCE_OPF_REQ;
		break;
	case FLUSH:
		f |= UROCE_OPF_FLUSH | UROCE_OPF_REQ;
		break;
	case ATOMIC_WRITE:
		f |= UROCE_OPF_ATOMIC_WRITE | UROCE_OPF_REQ;
		break;
	case CNP:
		break;
	}
	/* Every RC request is answered (ACK or response); UC and UD never are. */
	if (rc && (f & UROCE_OPF_REQ))
		f |= UROCE_OPF_NEEDS_ACK;
	return f;
}

static void test_sizes(void)
{
	CHECK(UROCE_BTH_LEN == 12 && UROCE_ICRC_LEN == 4);
	CHECK(UROCE_DETH_LEN == DETH && UROCE_FETH_LEN == FETH && UROCE_RETH_LEN == RETH);
	CHECK(UROCE_ATMETH_LEN == ATMETH && UROCE_AETH_LEN == AETH && UROCE_ATMACK_LEN == ATMACK);
	CHECK(UROCE_IMMDT_LEN == IMMDT && UROCE_IETH_LEN == IETH && UROCE_CNP_LEN == CNPR);

	static const struct {
		unsigned bit, len;
	} one[] = {{UROCE_HDR_DETH, DETH},     {UROCE_HDR_FETH, FETH}, {UROCE_HDR_RETH, RETH},
		   {UROCE_HDR_ATMETH, ATMETH}, {UROCE_HDR_AETH, AETH}, {UROCE_HDR_ATMACK, ATMACK},
		   {UROCE_HDR_IMMDT, IMMDT},   {UROCE_HDR_IETH, IETH}, {UROCE_HDR_CNP, CNPR}};
	unsigned all = 0, sum = 0;

	for (size_t i = 0; i < sizeof(one) / sizeof(one[0]); i++) {
		CHECKF(uroce_hdrs_len(one[i].bit) == one[i].len, "hdrs_len(%#x)", one[i].bit);
		all |= one[i].bit;
		sum += one[i].len;
	}
	CHECK_EQ(uroce_hdrs_len(0), 0);
	CHECK_EQ(uroce_hdrs_len(all), sum);
}

static void test_table(void)
{
	unsigned nvalid = 0;

	for (unsigned op = 0; op < 256; op++) {
		const struct uroce_opinfo *oi = &uroce_opinfo[op];
		const struct exp_op *e = find_expected(op);

		CHECK_EQ(uroce_op_class((uint8_t)op), (enum uroce_opclass)(op & 0xE0));
		if (!e) {
			CHECKF(!uroce_op_valid((uint8_t)op) && oi->name == NULL,
			       "opcode 0x%02x is not in roce-reference.md 1.4 but valid (%s)", op,
			       oi->name);
			CHECKF(oi->hdrs == 0 && oi->flags == 0 && oi->hdr_len == 0,
			       "invalid opcode 0x%02x has properties", op);
			continue;
		}
		nvalid++;
		CHECKF(uroce_op_valid((uint8_t)op) && oi->name, "opcode 0x%02x missing", op);
		if (!oi->name)
			continue;
		CHECKF(oi->hdrs == e->hdrs, "0x%02x (%s): headers %#x, want %#x", op, oi->name,
		       oi->hdrs, e->hdrs);
		CHECKF(oi->hdr_len == UROCE_BTH_LEN + e->bytes, "0x%02x (%s): hdr_len %u, want %u",
		       op, oi->name, oi->hdr_len, UROCE_BTH_LEN + e->bytes);
		CHECKF(oi->hdr_len == UROCE_BTH_LEN + uroce_hdrs_len(oi->hdrs),
		       "0x%02x: hdr_len disagrees with uroce_hdrs_len", op);
		CHECKF(oi->flags == expected_flags(e), "0x%02x (%s): flags %#x, want %#x", op,
		       oi->name, oi->flags, expected_flags(e));
		/* A request is never a response; a message position is exactly one of four. */
		CHECK(!((oi->flags & UROCE_OPF_REQ) && (oi->flags & UROCE_OPF_RESP)));
		unsigned p = oi->flags & (UROCE_OPF_FIRST | UROCE_OPF_MIDDLE | UROCE_OPF_LAST);

		CHECKF(p == UROCE_OPF_FIRST || p == UROCE_OPF_MIDDLE || p == UROCE_OPF_LAST ||
			       p == UROCE_OPF_ONLY,
		       "0x%02x: position bits %#x", op, p);
		/* Labels carry the transport class. */
		static const char *const prefix[8] = {"RC ", "UC ", "RD ", "UD ", "CNP", "XRC"};
		const char *want = prefix[op >> 5];

		CHECKF(want && strncmp(oi->name, want, strlen(want)) == 0, "0x%02x label '%s'", op,
		       oi->name);
		CHECK_BAIL();
	}
	CHECKF(nvalid == NEXPECTED, "%u valid opcodes, want %zu", nvalid, NEXPECTED);

	/* Labels are unique. */
	for (unsigned a = 0; a < 256; a++) {
		for (unsigned b = a + 1; b < 256; b++) {
			if (uroce_opinfo[a].name && uroce_opinfo[b].name)
				CHECKF(strcmp(uroce_opinfo[a].name, uroce_opinfo[b].name) != 0,
				       "0x%02x and 0x%02x share a label", a, b);
		}
	}

	/* The enum names carry the values of 1.4. */
	CHECK(UROCE_OP_RC_SEND_FIRST == 0x00 && UROCE_OP_RC_WRITE_ONLY_IMM == 0x0B);
	CHECK(UROCE_OP_RC_READ_REQ == 0x0C && UROCE_OP_RC_ACK == 0x11);
	CHECK(UROCE_OP_RC_ATOMIC_ACK == 0x12 && UROCE_OP_RC_FETCH_ADD == 0x14);
	CHECK(UROCE_OP_RC_SEND_ONLY_INV == 0x17 && UROCE_OP_RC_FLUSH == 0x1C);
	CHECK(UROCE_OP_RC_ATOMIC_WRITE == 0x1D && UROCE_OP_UC_SEND_FIRST == 0x20);
	CHECK(UROCE_OP_UC_WRITE_ONLY_IMM == 0x2B && UROCE_OP_UD_SEND_ONLY == 0x64);
	CHECK(UROCE_OP_UD_SEND_ONLY_IMM == 0x65 && UROCE_OP_CNP == 0x81);
	CHECK(UROCE_OPCLASS_RC == 0x00 && UROCE_OPCLASS_UC == 0x20 && UROCE_OPCLASS_RD == 0x40);
	CHECK(UROCE_OPCLASS_UD == 0x60 && UROCE_OPCLASS_CNP == 0x80 && UROCE_OPCLASS_XRC == 0xA0);
}

/* RC and UC SEND/WRITE entries differ only in the class bits, the label and NEEDS_ACK. */
static void test_rc_uc_symmetry(void)
{
	for (unsigned low = 0; low <= 0x0B; low++) {
		const struct uroce_opinfo *rc = &uroce_opinfo[low], *uc = &uroce_opinfo[0x20 | low];

		CHECKF(rc->name && uc->name, "0x%02x / 0x%02x", low, 0x20 | low);
		if (!rc->name || !uc->name)
			continue;
		CHECKF(rc->hdrs == uc->hdrs && rc->hdr_len == uc->hdr_len, "low 0x%02x", low);
		CHECKF(uc->flags == (rc->flags & ~(unsigned)UROCE_OPF_NEEDS_ACK),
		       "low 0x%02x: RC flags %#x, UC flags %#x", low, rc->flags, uc->flags);
		CHECKF(rc->flags & UROCE_OPF_NEEDS_ACK, "RC 0x%02x lacks NEEDS_ACK", low);
		CHECKF(strcmp(rc->name + 2, uc->name + 2) == 0, "'%s' vs '%s'", rc->name, uc->name);
	}
	/* UC has nothing beyond the SEND/WRITE rows. */
	for (unsigned op = 0x2C; op < 0x40; op++)
		CHECKF(!uroce_op_valid((uint8_t)op), "UC opcode 0x%02x", op);
}

/*
 * Lay out a transport packet by hand from the byte layouts of roce-reference.md 1.2/1.3, with
 * a distinct value in every field, and check the decoder puts each value in its field: this pins
 * the wire order of the extension headers independently of the table.
 */
static void test_layout(void)
{
	for (size_t i = 0; i < NEXPECTED; i++) {
		const struct exp_op *e = &expected[i];
		uint8_t b[256];
		size_t n = 0;
		uint32_t plen = e->payload ? 5 : 0; /* 5 bytes, pad 3 */
		uint8_t pad = e->payload ? 3 : 0;

		b[n++] = e->op;
		b[n++] = (uint8_t)(0x80 | pad << 4);	     /* SE, pad */
		b[n++] = 0xAB, b[n++] = 0xCD;		     /* P_Key */
		b[n++] = 0x40;				     /* BECN */
		b[n++] = 0x12, b[n++] = 0x34, b[n++] = 0x56; /* DestQP */
		b[n++] = 0x80;				     /* AckReq */
		b[n++] = 0xFE, b[n++] = 0xDC, b[n++] = 0xBA; /* PSN */
		/* Extension headers in the order the 1.4 "Headers" column lists them. */
		if (e->hdrs & UROCE_HDR_DETH) {
			uroce_put_be32(b + n, 0x80010000), n += 4; /* Q_Key */
			b[n++] = 0x77;				   /* resv */
			uroce_put_be24(b + n, 0x000001), n += 3;   /* SrcQP */
		}
		if (e->hdrs & UROCE_HDR_FETH)
			uroce_put_be32(b + n, 0x00000031), n += 4;
		if (e->hdrs & UROCE_HDR_RETH) {
			uroce_put_be64(b + n, 0x1122334455667788ull), n += 8;
			uroce_put_be32(b + n, 0x99AABBCC), n += 4;
			uroce_put_be32(b + n, 0x00001000), n += 4;
		}
		if (e->hdrs & UROCE_HDR_ATMETH) {
			uroce_put_be64(b + n, 0x0102030405060708ull), n += 8;
			uroce_put_be32(b + n, 0x0A0B0C0D), n += 4;
			uroce_put_be64(b + n, 0x1112131415161718ull), n += 8;
			uroce_put_be64(b + n, 0x2122232425262728ull), n += 8;
		}
		if (e->hdrs & UROCE_HDR_AETH) {
			b[n++] = 0x1F;
			uroce_put_be24(b + n, 0xA5A5A5), n += 3;
		}
		if (e->hdrs & UROCE_HDR_ATMACK)
			uroce_put_be64(b + n, 0xCAFEF00DDEADBEEFull), n += 8;
		if (e->hdrs & UROCE_HDR_IMMDT)
			uroce_put_be32(b + n, 0x494D4D21), n += 4;
		if (e->hdrs & UROCE_HDR_IETH)
			uroce_put_be32(b + n, 0x1E7B1E7B), n += 4;
		if (e->hdrs & UROCE_HDR_CNP) {
			for (int k = 0; k < 16; k++)
				b[n++] = (uint8_t)(0xC0 + k);
		}
		CHECKF(n == UROCE_BTH_LEN + e->bytes, "0x%02x: laid %zu bytes", e->op, n);
		for (uint32_t k = 0; k < plen + pad; k++)
			b[n++] = k < plen ? (uint8_t)('a' + k) : 0;
		uroce_put_le32(b + n, 0x01020304), n += 4;

		struct uroce_tpkt t;
		const char *err = "unset";
		int rc = uroce_tpkt_decode(&t, b, n, &err);

		CHECKF(rc == 0 && err == NULL, "0x%02x: decode %d (%s)", e->op, rc, err);
		if (rc)
			continue;
		CHECK(t.bth.opcode == e->op && t.bth.se && !t.bth.mig && t.bth.pad == pad);
		CHECK(t.bth.tver == 0 && t.bth.pkey == 0xABCD && !t.bth.fecn && t.bth.becn);
		CHECK(t.bth.resv6 == 0 && t.bth.dqpn == 0x123456 && t.bth.ackreq);
		CHECK(t.bth.resv7 == 0 && t.bth.psn == 0xFEDCBA);
		if (e->hdrs & UROCE_HDR_DETH)
			CHECKF(t.deth.qkey == 0x80010000 && t.deth.resv == 0x77 &&
				       t.deth.src_qp == 1,
			       "0x%02x DETH", e->op);
		if (e->hdrs & UROCE_HDR_FETH)
			CHECKF(t.feth == 0x31, "0x%02x FETH", e->op);
		if (e->hdrs & UROCE_HDR_RETH)
			CHECKF(t.reth.va == 0x1122334455667788ull && t.reth.rkey == 0x99AABBCC &&
				       t.reth.len == 0x1000,
			       "0x%02x RETH", e->op);
		if (e->hdrs & UROCE_HDR_ATMETH)
			CHECKF(t.atmeth.va == 0x0102030405060708ull &&
				       t.atmeth.rkey == 0x0A0B0C0D &&
				       t.atmeth.swap_add == 0x1112131415161718ull &&
				       t.atmeth.compare == 0x2122232425262728ull,
			       "0x%02x AtomicETH", e->op);
		if (e->hdrs & UROCE_HDR_AETH)
			CHECKF(t.aeth.syndrome == 0x1F && t.aeth.msn == 0xA5A5A5, "0x%02x AETH",
			       e->op);
		if (e->hdrs & UROCE_HDR_ATMACK)
			CHECKF(t.atmack == 0xCAFEF00DDEADBEEFull, "0x%02x AtomicAckETH", e->op);
		if (e->hdrs & UROCE_HDR_IMMDT)
			CHECKF(t.imm == 0x494D4D21, "0x%02x ImmDt", e->op);
		if (e->hdrs & UROCE_HDR_IETH)
			CHECKF(t.ieth == 0x1E7B1E7B, "0x%02x IETH", e->op);
		if (e->hdrs & UROCE_HDR_CNP)
			CHECKF(t.cnp_resv[0] == 0xC0 && t.cnp_resv[15] == 0xCF, "0x%02x CNP",
			       e->op);
		CHECKF(t.payload == b + UROCE_BTH_LEN + e->bytes && t.payload_len == plen,
		       "0x%02x payload", e->op);
		CHECK_EQ(t.icrc, 0x01020304);

		/* And the encoder lays out the same bytes (without the ICRC). */
		uint8_t out[256];
		ssize_t m = uroce_tpkt_encode(out, sizeof(out), &t);

		CHECKF(m == (ssize_t)n - 4 && memcmp(out, b, n - 4) == 0, "0x%02x: re-encode",
		       e->op);

		/* A payload on an opcode that carries none is refused. */
		if (!e->payload) {
			uint8_t c[256];

			memcpy(c, b, n - 4);
			memset(c + n - 4, 0, 4);
			uroce_put_le32(c + n, 0);
			rc = uroce_tpkt_decode(&t, c, n + 4, &err);
			CHECKF(rc == -EBADMSG && err, "0x%02x: payload accepted", e->op);
		}
		CHECK_BAIL();
	}
}

int main(void)
{
	test_sizes();
	test_table();
	test_rc_uc_symmetry();
	test_layout();
	return check_exit("test_opcode");
}
