/* SPDX-License-Identifier: MIT */
#include <arpa/inet.h>
#include <inttypes.h>
#include <stdbool.h>
#include <sys/socket.h>

#include "frame_print.h"
#include "wire/mad.h"
#include "wire/opcode.h"

enum uroce_frame_verdict uroce_frame_check(const struct uroce_frame *f, uint32_t *computed)
{
	if (f->err || !f->roce)
		return UROCE_VERDICT_MALFORMED;
	uint32_t icrc = uroce_frame_icrc(f);

	if (computed)
		*computed = icrc;
	return icrc == f->t.icrc ? UROCE_VERDICT_OK : UROCE_VERDICT_ICRC_BAD;
}

static const char *encap_name(enum uroce_encap e)
{
	switch (e) {
	case UROCE_ENCAP_V1:
		return "v1";
	case UROCE_ENCAP_V2_IPV4:
		return "v2/IPv4";
	case UROCE_ENCAP_V2_IPV6:
		return "v2/IPv6";
	case UROCE_ENCAP_NONE:
		return "not-RoCE";
	}
	return "?";
}

void uroce_frame_print_route(FILE *out, const struct uroce_frame *f)
{
	char src[INET6_ADDRSTRLEN] = "?", dst[INET6_ADDRSTRLEN] = "?";
	bool addrs = false;

	switch (f->encap) {
	case UROCE_ENCAP_V2_IPV4:
		/* The decoder names a frame v2 only after its IP header decoded. */
		inet_ntop(AF_INET, f->ip4.src, src, sizeof(src));
		inet_ntop(AF_INET, f->ip4.dst, dst, sizeof(dst));
		addrs = true;
		break;
	case UROCE_ENCAP_V2_IPV6:
		inet_ntop(AF_INET6, f->ip6.src, src, sizeof(src));
		inet_ntop(AF_INET6, f->ip6.dst, dst, sizeof(dst));
		addrs = true;
		break;
	case UROCE_ENCAP_V1:
		/* v1 is known from the Ethertype; the GRH is valid only if a BTH was reached. */
		if (f->roce) {
			inet_ntop(AF_INET6, f->ip6.src, src, sizeof(src));
			inet_ntop(AF_INET6, f->ip6.dst, dst, sizeof(dst));
			addrs = true;
		}
		break;
	case UROCE_ENCAP_NONE:
		break;
	}
	fputs(encap_name(f->encap), out);
	if (f->eth.vlan)
		fprintf(out, " vlan %u pcp %u", f->eth.tci & 0xFFFu, (unsigned)f->eth.tci >> 13);
	if (addrs)
		fprintf(out, " %s > %s", src, dst);
}

/*
 * End-to-end credits in an ACK's AETH (IBTA vol. 1 ch. 9, credit count encoding): codes 0..4 are
 * the count itself, then the counts go 6, 8, 12, 16, ... (alternately 3 * 2^k and 2^k) up to
 * 32768 for code 30; 31 means the responder does not report credits (rxe's AETH_ACK_UNLIMITED).
 */
static unsigned ack_credits(unsigned code)
{
	if (code <= 4)
		return code;
	return code % 2 ? 3u << (code - 3) / 2 : 1u << code / 2;
}

/* The RNR NAK timer field in microseconds (the kernel's IB_RNR_TIMER_* values). */
static const uint32_t rnr_timer_us[32] = {
	655360, 10,    20,    30,    40,    60,    80,     120,    160,	 240,	 320,
	480,	640,   960,   1280,  1920,  2560,  3840,   5120,   7680,	 10240,	 15360,
	20480,	30720, 40960, 61440, 81920, 122880, 163840, 245760, 327680, 491520,
};

static const char *nak_name(unsigned code)
{
	switch (code) {
	case UROCE_NAK_PSN_SEQ_ERR & UROCE_AETH_VALUE_MASK:
		return "PSN sequence error";
	case UROCE_NAK_INVALID_REQ & UROCE_AETH_VALUE_MASK:
		return "invalid request";
	case UROCE_NAK_REM_ACCESS & UROCE_AETH_VALUE_MASK:
		return "remote access error";
	case UROCE_NAK_REM_OP_ERR & UROCE_AETH_VALUE_MASK:
		return "remote operational error";
	case UROCE_NAK_INV_RD_REQ & UROCE_AETH_VALUE_MASK:
		return "invalid RD request";
	default:
		return "reserved";
	}
}

static void print_aeth(FILE *out, const struct uroce_aeth *a)
{
	unsigned v = a->syndrome & UROCE_AETH_VALUE_MASK;

	fputs(" AETH(", out);
	switch (a->syndrome & UROCE_AETH_TYPE_MASK) {
	case UROCE_AETH_ACK:
		if (v == UROCE_AETH_ACK_UNLIMITED)
			fputs("ACK credits=unlimited", out);
		else
			fprintf(out, "ACK credits=%u", ack_credits(v));
		break;
	case UROCE_AETH_RNR_NAK:
		fprintf(out, "RNR NAK timer=%u (%" PRIu32 ".%02" PRIu32 " ms)", v,
			rnr_timer_us[v] / 1000, rnr_timer_us[v] % 1000 / 10);
		break;
	case UROCE_AETH_NAK:
		fprintf(out, "NAK code=%u (%s)", v, nak_name(v));
		break;
	default:
		fprintf(out, "reserved syndrome=0x%02x", a->syndrome);
		break;
	}
	fprintf(out, " msn=%" PRIu32 ")", a->msn);
}

/*
 * A MAD on QP1 (the GSI): UD SEND Only to QP 1 whose payload holds at least a MAD header.
 * Connection manager MADs are named, other classes shown by number.
 */
static void print_mad(FILE *out, const struct uroce_tpkt *t)
{
	struct uroce_mad_hdr h;

	if (t->bth.dqpn != UROCE_GSI_QPN || t->bth.opcode != UROCE_OP_UD_SEND_ONLY ||
	    uroce_mad_hdr_decode(&h, t->payload, t->payload_len) < 0)
		return;
	if (h.mgmt_class != UROCE_MGMT_CLASS_CM) {
		fprintf(out, " MAD class=0x%02x attr=0x%04x", h.mgmt_class, h.attr_id);
		return;
	}
	const char *name = uroce_cm_attr_name(h.attr_id);
	const char *abbr = uroce_cm_attr_short(h.attr_id);

	if (name && abbr)
		fprintf(out, " CM %s (%s)", name, abbr);
	else
		fprintf(out, " CM attr=0x%04x", h.attr_id);
}

static void print_tpkt(FILE *out, const struct uroce_tpkt *t)
{
	const struct uroce_bth *b = &t->bth;
	const struct uroce_opinfo *oi = &uroce_opinfo[b->opcode];

	fprintf(out, " %s QP=0x%06" PRIx32 " PSN=%" PRIu32, oi->name, b->dqpn, b->psn);
	if (b->se)
		fputs(" SE", out);
	if (b->ackreq)
		fputs(" AckReq", out);
	if (b->fecn)
		fputs(" FECN", out);
	if (b->becn)
		fputs(" BECN", out);
	if (b->pkey != 0xFFFF)
		fprintf(out, " pkey=0x%04x", b->pkey);
	if (b->tver)
		fprintf(out, " tver=%u", b->tver);

	/* Extension headers in wire order (opcode.h). */
	if (oi->hdrs & UROCE_HDR_DETH)
		fprintf(out, " DETH(qkey=0x%08" PRIx32 " srcqp=0x%06" PRIx32 ")", t->deth.qkey,
			t->deth.src_qp);
	if (oi->hdrs & UROCE_HDR_FETH)
		fprintf(out, " FETH(0x%08" PRIx32 ")", t->feth);
	if (oi->hdrs & UROCE_HDR_RETH)
		fprintf(out, " RETH(va=0x%016" PRIx64 " rkey=0x%08" PRIx32 " len=%" PRIu32 ")",
			t->reth.va, t->reth.rkey, t->reth.len);
	if (oi->hdrs & UROCE_HDR_ATMETH) {
		fprintf(out, " AtomicETH(va=0x%016" PRIx64 " rkey=0x%08" PRIx32, t->atmeth.va,
			t->atmeth.rkey);
		if (b->opcode == UROCE_OP_RC_CMP_SWAP)
			fprintf(out, " swap=0x%016" PRIx64 " compare=0x%016" PRIx64 ")",
				t->atmeth.swap_add, t->atmeth.compare);
		else
			fprintf(out, " add=0x%016" PRIx64 ")", t->atmeth.swap_add);
	}
	if (oi->hdrs & UROCE_HDR_AETH)
		print_aeth(out, &t->aeth);
	if (oi->hdrs & UROCE_HDR_ATMACK)
		fprintf(out, " AtomicAckETH(orig=0x%016" PRIx64 ")", t->atmack);
	if (oi->hdrs & UROCE_HDR_IMMDT)
		fprintf(out, " ImmDt(0x%08" PRIx32 ")", t->imm);
	if (oi->hdrs & UROCE_HDR_IETH)
		fprintf(out, " IETH(rkey=0x%08" PRIx32 ")", t->ieth);
	if (oi->flags & UROCE_OPF_PAYLOAD)
		fprintf(out, " payload=%" PRIu32, t->payload_len);
	print_mad(out, t);
}

enum uroce_frame_verdict uroce_frame_print(FILE *out, const struct uroce_frame *f)
{
	uint32_t computed = 0;
	enum uroce_frame_verdict v = uroce_frame_check(f, &computed);

	uroce_frame_print_route(out, f);
	switch (v) {
	case UROCE_VERDICT_MALFORMED:
		fprintf(out, " MALFORMED: %s\n", f->err ? f->err : "not decoded");
		break;
	case UROCE_VERDICT_OK:
		print_tpkt(out, &f->t);
		fputs(" ICRC ok\n", out);
		break;
	case UROCE_VERDICT_ICRC_BAD:
		print_tpkt(out, &f->t);
		fprintf(out, " ICRC BAD (carried %08" PRIx32 ", computed %08" PRIx32 ")\n",
			f->t.icrc, computed);
		break;
	}
	return v;
}
