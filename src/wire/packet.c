/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <string.h>

#include "wire/bytes.h"
#include "wire/icrc.h"
#include "wire/packet.h"

int uroce_tpkt_decode(struct uroce_tpkt *t, const uint8_t *p, size_t len, const char **err)
{
	const uint8_t *end = p + len;
	const uint8_t *q = p;

	if (len < UROCE_BTH_LEN + UROCE_ICRC_LEN) {
		*err = "too short for a BTH and an ICRC";
		return -EBADMSG;
	}
	uroce_bth_decode(&t->bth, q, len);
	const struct uroce_opinfo *oi = &uroce_opinfo[t->bth.opcode];

	if (!oi->name) {
		*err = "unknown opcode";
		return -EBADMSG;
	}
	if (len < (size_t)oi->hdr_len + UROCE_ICRC_LEN) {
		*err = "truncated extension header";
		return -EBADMSG;
	}
	q += UROCE_BTH_LEN;
	/* The length was checked once above; each header is read in wire order. */
	if (oi->hdrs & UROCE_HDR_DETH)
		q += uroce_deth_decode(&t->deth, q, (size_t)(end - q));
	if (oi->hdrs & UROCE_HDR_FETH)
		q += uroce_be32_decode(&t->feth, q, (size_t)(end - q));
	if (oi->hdrs & UROCE_HDR_RETH)
		q += uroce_reth_decode(&t->reth, q, (size_t)(end - q));
	if (oi->hdrs & UROCE_HDR_ATMETH)
		q += uroce_atmeth_decode(&t->atmeth, q, (size_t)(end - q));
	if (oi->hdrs & UROCE_HDR_AETH)
		q += uroce_aeth_decode(&t->aeth, q, (size_t)(end - q));
	if (oi->hdrs & UROCE_HDR_ATMACK)
		q += uroce_be64_decode(&t->atmack, q, (size_t)(end - q));
	if (oi->hdrs & UROCE_HDR_IMMDT)
		q += uroce_be32_decode(&t->imm, q, (size_t)(end - q));
	if (oi->hdrs & UROCE_HDR_IETH)
		q += uroce_be32_decode(&t->ieth, q, (size_t)(end - q));
	if (oi->hdrs & UROCE_HDR_CNP) {
		memcpy(t->cnp_resv, q, UROCE_CNP_LEN);
		q += UROCE_CNP_LEN;
	}

	size_t padded = (size_t)(end - q) - UROCE_ICRC_LEN;

	if (t->bth.pad > padded) {
		*err = "pad count larger than payload";
		return -EBADMSG;
	}
	if (padded && !(oi->flags & UROCE_OPF_PAYLOAD)) {
		*err = "payload on an opcode that carries none";
		return -EBADMSG;
	}
	t->payload = q;
	t->payload_len = (uint32_t)(padded - t->bth.pad);
	t->icrc = uroce_get_le32(end - UROCE_ICRC_LEN);
	*err = NULL;
	return 0;
}

int uroce_tpkt_hdr_encode(uint8_t *p, size_t cap, const struct uroce_tpkt *t)
{
	const struct uroce_opinfo *oi = &uroce_opinfo[t->bth.opcode];

	if (!oi->name)
		return -EINVAL;
	if (cap < oi->hdr_len)
		return -ENOSPC;

	struct uroce_bth bth = t->bth;
	uint8_t *q = p;
	uint8_t *end = p + oi->hdr_len;

	bth.pad = uroce_pad_len(t->payload_len);
	q += uroce_bth_encode(q, (size_t)(end - q), &bth);
	if (oi->hdrs & UROCE_HDR_DETH)
		q += uroce_deth_encode(q, (size_t)(end - q), &t->deth);
	if (oi->hdrs & UROCE_HDR_FETH)
		q += uroce_be32_encode(q, (size_t)(end - q), t->feth);
	if (oi->hdrs & UROCE_HDR_RETH)
		q += uroce_reth_encode(q, (size_t)(end - q), &t->reth);
	if (oi->hdrs & UROCE_HDR_ATMETH)
		q += uroce_atmeth_encode(q, (size_t)(end - q), &t->atmeth);
	if (oi->hdrs & UROCE_HDR_AETH)
		q += uroce_aeth_encode(q, (size_t)(end - q), &t->aeth);
	if (oi->hdrs & UROCE_HDR_ATMACK)
		q += uroce_be64_encode(q, (size_t)(end - q), t->atmack);
	if (oi->hdrs & UROCE_HDR_IMMDT)
		q += uroce_be32_encode(q, (size_t)(end - q), t->imm);
	if (oi->hdrs & UROCE_HDR_IETH)
		q += uroce_be32_encode(q, (size_t)(end - q), t->ieth);
	if (oi->hdrs & UROCE_HDR_CNP) {
		memcpy(q, t->cnp_resv, UROCE_CNP_LEN);
		q += UROCE_CNP_LEN;
	}
	return (int)(q - p);
}

ssize_t uroce_tpkt_encode(uint8_t *p, size_t cap, const struct uroce_tpkt *t)
{
	int h = uroce_tpkt_hdr_encode(p, cap, t);

	if (h < 0)
		return h;
	size_t pad = uroce_pad_len(t->payload_len);
	size_t n = (size_t)h + t->payload_len + pad;

	if (n > cap)
		return -ENOSPC;
	if (t->payload_len)
		memcpy(p + h, t->payload, t->payload_len);
	memset(p + h + t->payload_len, 0, pad);
	return (ssize_t)n;
}

static int frame_bad(struct uroce_frame *f, const char *why)
{
	f->err = why;
	return -EBADMSG;
}

/* The transport packet of a frame whose L3 said it is roce_len bytes long. */
static int frame_tpkt(struct uroce_frame *f, const uint8_t *roce, size_t roce_len)
{
	f->roce = roce;
	f->roce_len = (uint32_t)roce_len;
	f->len = (uint32_t)(roce + roce_len - (f->l3 - uroce_eth_len(&f->eth)));
	return uroce_tpkt_decode(&f->t, roce, roce_len, &f->err) ? -EBADMSG : 0;
}

static int frame_v1(struct uroce_frame *f, const uint8_t *p, size_t len)
{
	f->encap = UROCE_ENCAP_V1;
	if (uroce_ip6_decode(&f->ip6, p, len) < 0)
		return frame_bad(f, len < UROCE_GRH_LEN ? "truncated GRH" : "GRH IPVer is not 6");
	if (f->ip6.next_hdr != UROCE_GRH_NEXT_HDR)
		return frame_bad(f, "GRH next header is not 0x1B (BTH)");
	if (f->ip6.paylen > len - UROCE_GRH_LEN)
		return frame_bad(f, "GRH payload length beyond the frame");
	return frame_tpkt(f, p + UROCE_GRH_LEN, f->ip6.paylen);
}

static int frame_udp(struct uroce_frame *f, const uint8_t *p, size_t l4_len)
{
	if (uroce_udp_decode(&f->udp, p, l4_len) < 0)
		return -ENOENT; /* too short to tell: not recognisably RoCE */
	if (f->udp.dport != UROCE_UDP_PORT)
		return -ENOENT;
	f->encap = f->ip4.ihl ? UROCE_ENCAP_V2_IPV4 : UROCE_ENCAP_V2_IPV6;
	if (f->udp.len != l4_len)
		return frame_bad(f, "UDP length disagrees with the IP length");
	return frame_tpkt(f, p + UROCE_UDP_LEN, l4_len - UROCE_UDP_LEN);
}

static int frame_ipv4(struct uroce_frame *f, const uint8_t *p, size_t len)
{
	int hl = uroce_ipv4_decode(&f->ip4, p, len);

	if (hl < 0 || f->ip4.proto != UROCE_IPPROTO_UDP) {
		f->ip4.ihl = 0;
		return -ENOENT;
	}
	if (f->ip4.tot_len > len) {
		/* Enough to see a UDP header to port 4791? Then it is a truncated RoCE packet. */
		if (len >= (size_t)hl + UROCE_UDP_LEN &&
		    uroce_get_be16(p + hl + 2) == UROCE_UDP_PORT) {
			f->encap = UROCE_ENCAP_V2_IPV4;
			return frame_bad(f, "IPv4 total length beyond the frame");
		}
		return -ENOENT;
	}
	const uint8_t *l4 = p + hl;
	size_t l4_len = f->ip4.tot_len - (size_t)hl;
	int rc = frame_udp(f, l4, l4_len);

	if (rc == -ENOENT)
		return rc;
	if (hl != UROCE_IPV4_LEN)
		return frame_bad(f, "IPv4 options on a RoCE v2 packet");
	if (f->ip4.frag & 0x3FFF)
		return frame_bad(f, "fragmented IPv4 RoCE v2 packet");
	return rc;
}

static int frame_ipv6(struct uroce_frame *f, const uint8_t *p, size_t len)
{
	if (uroce_ip6_decode(&f->ip6, p, len) < 0 || f->ip6.next_hdr != UROCE_IPPROTO_UDP)
		return -ENOENT;
	if (f->ip6.paylen > len - UROCE_IPV6_LEN) {
		if (len >= UROCE_IPV6_LEN + UROCE_UDP_LEN &&
		    uroce_get_be16(p + UROCE_IPV6_LEN + 2) == UROCE_UDP_PORT) {
			f->encap = UROCE_ENCAP_V2_IPV6;
			return frame_bad(f, "IPv6 payload length beyond the frame");
		}
		return -ENOENT;
	}
	return frame_udp(f, p + UROCE_IPV6_LEN, f->ip6.paylen);
}

int uroce_frame_decode(struct uroce_frame *f, const uint8_t *buf, size_t len)
{
	int hl;

	f->encap = UROCE_ENCAP_NONE;
	f->err = NULL;
	f->ip4.ihl = 0;
	f->l3 = NULL;
	f->roce = NULL;
	f->roce_len = 0;
	f->len = 0;
	hl = uroce_eth_decode(&f->eth, buf, len);
	if (hl < 0)
		return -ENOENT;
	f->l3 = buf + hl;
	len -= (size_t)hl;
	switch (f->eth.ethertype) {
	case UROCE_ETHERTYPE_ROCE:
		return frame_v1(f, f->l3, len);
	case UROCE_ETHERTYPE_IPV4:
		return frame_ipv4(f, f->l3, len);
	case UROCE_ETHERTYPE_IPV6:
		return frame_ipv6(f, f->l3, len);
	default:
		return -ENOENT;
	}
}

uint32_t uroce_frame_icrc(const struct uroce_frame *f)
{
	return uroce_icrc(f->encap, f->l3, f->roce, f->roce_len - UROCE_ICRC_LEN);
}

ssize_t uroce_frame_encode(uint8_t *buf, size_t cap, const struct uroce_frame *f)
{
	struct uroce_eth eth = f->eth;
	size_t l3_len;

	switch (f->encap) {
	case UROCE_ENCAP_V1:
		eth.ethertype = UROCE_ETHERTYPE_ROCE;
		l3_len = UROCE_GRH_LEN;
		break;
	case UROCE_ENCAP_V2_IPV4:
		if (f->ip4.ihl != 5)
			return -EINVAL;
		eth.ethertype = UROCE_ETHERTYPE_IPV4;
		l3_len = UROCE_IPV4_LEN + UROCE_UDP_LEN;
		break;
	case UROCE_ENCAP_V2_IPV6:
		eth.ethertype = UROCE_ETHERTYPE_IPV6;
		l3_len = UROCE_IPV6_LEN + UROCE_UDP_LEN;
		break;
	case UROCE_ENCAP_NONE:
	default:
		return -EINVAL;
	}

	int el = uroce_eth_encode(buf, cap, &eth);

	if (el < 0)
		return el;
	if ((size_t)el + l3_len > cap)
		return -ENOSPC;
	uint8_t *l3 = buf + el;
	uint8_t *roce = l3 + l3_len;
	ssize_t tl = uroce_tpkt_encode(roce, cap - (size_t)el - l3_len, &f->t);

	if (tl < 0)
		return tl;
	if ((size_t)el + l3_len + (size_t)tl + UROCE_ICRC_LEN > cap)
		return -ENOSPC;
	size_t roce_len = (size_t)tl + UROCE_ICRC_LEN;

	/* The L3 length fields: IPv4 counts its header and UDP; IPv6 and the GRH count what follows
	 * their 40 bytes. */
	size_t l3_counted = f->encap == UROCE_ENCAP_V2_IPV4 ? l3_len
			    : f->encap == UROCE_ENCAP_V2_IPV6 ? UROCE_UDP_LEN
							      : 0;

	if (roce_len + l3_counted > 0xFFFF)
		return -EMSGSIZE;

	if (f->encap == UROCE_ENCAP_V1) {
		struct uroce_ip6 grh = f->ip6;

		grh.next_hdr = UROCE_GRH_NEXT_HDR;
		grh.paylen = (uint16_t)roce_len;
		uroce_ip6_encode(l3, UROCE_GRH_LEN, &grh);
	} else {
		struct uroce_udp udp = f->udp;
		size_t ip_len = f->encap == UROCE_ENCAP_V2_IPV4 ? UROCE_IPV4_LEN : UROCE_IPV6_LEN;

		udp.len = (uint16_t)(UROCE_UDP_LEN + roce_len);
		uroce_udp_encode(l3 + ip_len, UROCE_UDP_LEN, &udp);
		if (f->encap == UROCE_ENCAP_V2_IPV4) {
			struct uroce_ipv4 ip = f->ip4;

			ip.proto = UROCE_IPPROTO_UDP;
			ip.tot_len = (uint16_t)(UROCE_IPV4_LEN + udp.len);
			uroce_ipv4_encode(l3, UROCE_IPV4_LEN, &ip);
			uroce_put_be16(l3 + 10, uroce_ipv4_csum(l3));
		} else {
			struct uroce_ip6 ip6 = f->ip6;

			ip6.next_hdr = UROCE_IPPROTO_UDP;
			ip6.paylen = udp.len;
			uroce_ip6_encode(l3, UROCE_IPV6_LEN, &ip6);
		}
	}
	uroce_put_le32(roce + tl, uroce_icrc(f->encap, l3, roce, (size_t)tl));
	return (ssize_t)((size_t)el + l3_len + roce_len);
}
