/* SPDX-License-Identifier: MIT */
/* Framing of transmit descriptors and received packets (frame.h). */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "host/io/backend.h"
#include "host/io/frame.h"
#include "wire/bytes.h"

/* Can p be framed: headers of a BTH up to UROCE_TX_HDR_MAX, pad 0-3, a payload if any? */
static bool pkt_ok(const struct uroce_tx_pkt *p)
{
	return p->hdr_len >= UROCE_BTH_LEN && p->hdr_len <= UROCE_TX_HDR_MAX && p->pad <= 3 &&
	       (!p->payload_len || p->payload);
}

/* The tail: pad, then the ICRC crc (XORed with the descriptor's fault). */
static void put_tail(struct uroce_txframe *f, const struct uroce_tx_desc *d, uint32_t crc)
{
	const struct uroce_tx_pkt *p = d->pkt;

	memset(f->tail, 0, p->pad);
	uroce_put_le32(f->tail + p->pad, crc ^ d->icrc_xor);
	f->tail_len = (uint8_t)(p->pad + UROCE_ICRC_LEN);
}

/*
 * Is a packet of roce_len bytes (BTH..ICRC) short enough for one CRC call over a copy
 * (UROCE_ICRC_ONE_CALL_MAX)? The segments of a GSO send share one length, so a frame and the
 * ones built after it (uroce_txframe_next) all take the same way.
 */
static bool one_call(uint64_t roce_len)
{
	return roce_len - UROCE_ICRC_LEN <= UROCE_ICRC_ONE_CALL_MAX;
}

/* The ICRC in one CRC call over a copy of the pseudo-header (l3: the frame's L3 header),
 * headers, payload and pad; the tail. f->pseudo_crc is not computed. */
static void finish_one_call(struct uroce_txframe *f, const struct uroce_tx_desc *d,
			    enum uroce_encap encap, const uint8_t *l3)
{
	const struct uroce_tx_pkt *p = d->pkt;
	uint8_t b[UROCE_ICRC_PSEUDO_MAX + UROCE_ICRC_ONE_CALL_MAX];
	size_t n = uroce_icrc_bytes(encap, l3, p->hdr, p->hdr_len, b);

	if (p->payload_len)
		memcpy(b + n, p->payload, p->payload_len);
	n += p->payload_len;
	memset(b + n, 0, p->pad);
	n += p->pad;
	put_tail(f, d, uroce_icrc_update(0, b, n));
}

/* The ICRC from f->pseudo_crc over the BTH, extension headers, payload and pad; the tail. */
static void finish(struct uroce_txframe *f, const struct uroce_tx_desc *d)
{
	static const uint8_t zeros[4];
	const struct uroce_tx_pkt *p = d->pkt;
	uint32_t crc = uroce_icrc_bth(f->pseudo_crc, p->hdr);

	/* No call for nothing: ISA-L takes about 4 ns to return from an empty one, and most
	 * packets (MIDDLEs of a multiple of 4 bytes) have no extension header and no pad. */
	if (p->hdr_len > UROCE_BTH_LEN)
		crc = uroce_icrc_update(crc, p->hdr + UROCE_BTH_LEN, p->hdr_len - UROCE_BTH_LEN);
	if (p->payload_len)
		crc = uroce_icrc_update(crc, p->payload, p->payload_len);
	if (p->pad)
		crc = uroce_icrc_update(crc, zeros, p->pad);
	put_tail(f, d, crc);
}

int uroce_txframe_build(struct uroce_txframe *f, const struct uroce_tx_desc *d,
			const uint8_t smac[6], uint16_t dport, uint16_t ip_id)
{
	const struct uroce_tx_pkt *p = d->pkt;
	const struct uroce_path *path = d->path;
	uint8_t *h = f->head;
	uint16_t ethertype;
	uint8_t hop = path->hop_limit ? path->hop_limit : 64;

	if (!pkt_ok(p))
		return -EINVAL;
	uint64_t roce_len = uroce_tx_pkt_len(p);

	memcpy(h, path->dmac, 6);
	memcpy(h + 6, smac, 6);
	f->l3_off = UROCE_ETH_LEN;
	uint8_t *l3 = h + UROCE_ETH_LEN;

	switch (path->encap) {
	case UROCE_ENCAP_V2_IPV4:
		if (roce_len + UROCE_IPV4_LEN + UROCE_UDP_LEN > 0xFFFF)
			return -EMSGSIZE;
		ethertype = UROCE_ETHERTYPE_IPV4;
		l3[0] = 0x45;
		l3[1] = path->traffic_class;
		uroce_put_be16(l3 + 2, (uint16_t)(roce_len + UROCE_IPV4_LEN + UROCE_UDP_LEN));
		uroce_put_be16(l3 + 4, ip_id);
		uroce_put_be16(l3 + 6, 0x4000); /* DF */
		l3[8] = hop;
		l3[9] = UROCE_IPPROTO_UDP;
		memcpy(l3 + 12, path->sgid + 12, 4);
		memcpy(l3 + 16, path->dgid + 12, 4);
		uroce_put_be16(l3 + 10, 0); /* uroce_txframe_csum; the ICRC masks it */
		f->t_off = UROCE_ETH_LEN + UROCE_IPV4_LEN + UROCE_UDP_LEN;
		break;
	case UROCE_ENCAP_V2_IPV6:
	case UROCE_ENCAP_V1: {
		bool v1 = path->encap == UROCE_ENCAP_V1;
		uint32_t fl = v1 ? path->flow_label & 0xFFFFF : 0;
		uint64_t paylen = roce_len + (v1 ? 0 : UROCE_UDP_LEN);

		if (paylen > 0xFFFF)
			return -EMSGSIZE;
		ethertype = v1 ? UROCE_ETHERTYPE_ROCE : UROCE_ETHERTYPE_IPV6;
		uroce_put_be32(l3, 6u << 28 | (uint32_t)path->traffic_class << 20 | fl);
		uroce_put_be16(l3 + 4, (uint16_t)paylen);
		l3[6] = v1 ? UROCE_GRH_NEXT_HDR : UROCE_IPPROTO_UDP;
		l3[7] = hop;
		memcpy(l3 + 8, path->sgid, 16);
		memcpy(l3 + 24, path->dgid, 16);
		f->t_off = (uint16_t)(UROCE_ETH_LEN + UROCE_IPV6_LEN + (v1 ? 0 : UROCE_UDP_LEN));
		break;
	}
	case UROCE_ENCAP_NONE:
	default:
		return -EINVAL;
	}
	uroce_put_be16(h + 12, ethertype);
	if (path->encap != UROCE_ENCAP_V1) {
		uint8_t *u = h + f->t_off - UROCE_UDP_LEN;

		uroce_put_be16(u, path->sport);
		uroce_put_be16(u + 2, dport);
		uroce_put_be16(u + 4, (uint16_t)(roce_len + UROCE_UDP_LEN));
		uroce_put_be16(u + 6, 0);
	}
	memcpy(h + f->t_off, p->hdr, p->hdr_len);
	f->head_len = (uint16_t)(f->t_off + p->hdr_len);
	f->roce_len = (uint32_t)roce_len;

	/* ICRC over the pseudo-header the receiver will see, the headers, payload and pad. */
	if (one_call(roce_len)) {
		finish_one_call(f, d, path->encap, l3);
		return 0;
	}
	f->pseudo_crc = uroce_icrc_pseudo(path->encap, l3);
	finish(f, d);
	return 0;
}

int uroce_txframe_next(struct uroce_txframe *f, const struct uroce_txframe *prev, uint16_t prev_id,
		       const struct uroce_tx_desc *d, uint16_t ip_id)
{
	const struct uroce_tx_pkt *p = d->pkt;

	if (d->path->encap != UROCE_ENCAP_V2_IPV4 || prev->l3_off != UROCE_ETH_LEN ||
	    prev->t_off != UROCE_ETH_LEN + UROCE_IPV4_LEN + UROCE_UDP_LEN || !pkt_ok(p) ||
	    uroce_tx_pkt_len(p) != prev->roce_len)
		return -EINVAL;
	memcpy(f->head, prev->head, prev->t_off);
	uroce_put_be16(f->head + UROCE_ETH_LEN + 4, ip_id);
	f->l3_off = prev->l3_off;
	f->t_off = prev->t_off;
	memcpy(f->head + f->t_off, p->hdr, p->hdr_len);
	f->head_len = (uint16_t)(f->t_off + p->hdr_len);
	f->roce_len = prev->roce_len;
	if (one_call(f->roce_len)) {
		finish_one_call(f, d, UROCE_ENCAP_V2_IPV4, f->head + f->l3_off);
		return 0;
	}
	f->pseudo_crc = uroce_icrc_pseudo_v4_id(prev->pseudo_crc, prev_id ^ ip_id);
	finish(f, d);
	return 0;
}

/* Internet checksum over pieces that may start at odd offsets of the summed stream. */
struct csum {
	uint64_t sum;
	bool odd;
};

static void csum_add(struct csum *c, const uint8_t *p, size_t len)
{
	size_t i = 0;

	if (c->odd && len) {
		c->sum += p[0];
		i = 1;
		c->odd = false;
	}
	for (; i + 1 < len; i += 2)
		c->sum += (uint32_t)p[i] << 8 | p[i + 1];
	if (i < len) {
		c->sum += (uint32_t)p[i] << 8;
		c->odd = true;
	}
}

static uint16_t csum_fold(const struct csum *c)
{
	uint64_t s = c->sum;

	while (s >> 16)
		s = (s & 0xFFFF) + (s >> 16);
	return (uint16_t)~s;
}

/* UDP checksum (RFC 768 / RFC 8200 8.1) for the header at udp, L3 header at l3. */
static uint16_t udp_csum(bool v6, const uint8_t *l3, const uint8_t *udp, const uint8_t *p1,
			 size_t n1, const uint8_t *p2, size_t n2, const uint8_t *p3, size_t n3)
{
	struct csum c = {0, false};
	uint8_t ph[8] = {0};
	uint16_t ulen = uroce_get_be16(udp + 4);

	if (v6)
		csum_add(&c, l3 + 8, 32);
	else
		csum_add(&c, l3 + 12, 8);
	ph[5] = UROCE_IPPROTO_UDP;
	uroce_put_be16(ph + 6, ulen);
	csum_add(&c, ph + 4, 4);
	csum_add(&c, udp, 6); /* checksum field taken as zero */
	csum_add(&c, p1, n1);
	csum_add(&c, p2, n2);
	csum_add(&c, p3, n3);
	uint16_t s = csum_fold(&c);

	return s ? s : 0xFFFF;
}

void uroce_txframe_csum(struct uroce_txframe *f, const uint8_t *payload, uint32_t payload_len)
{
	uint8_t *l3 = f->head + f->l3_off;
	bool v6 = (l3[0] >> 4) == 6;
	uint8_t *udp = f->head + f->t_off - UROCE_UDP_LEN;

	if (uroce_get_be16(f->head + 12) == UROCE_ETHERTYPE_ROCE)
		return;
	if (!v6)
		uroce_put_be16(l3 + 10, uroce_ipv4_csum(l3));
	uroce_put_be16(udp + 6, udp_csum(v6, l3, udp, f->head + f->t_off, f->head_len - f->t_off,
					 payload, payload_len, f->tail, f->tail_len));
}

ssize_t uroce_txframe_flatten(uint8_t *buf, size_t cap, const struct uroce_txframe *f,
			      const uint8_t *payload, uint32_t payload_len)
{
	size_t n = (size_t)f->head_len + payload_len + f->tail_len;

	if (n > cap)
		return -ENOSPC;
	memcpy(buf, f->head, f->head_len);
	if (payload_len)
		memcpy(buf + f->head_len, payload, payload_len);
	memcpy(buf + f->head_len + payload_len, f->tail, f->tail_len);
	return (ssize_t)n;
}

ssize_t uroce_rxframe_build(uint8_t *buf, size_t cap, const struct uroce_rx_desc *d)
{
	const struct uroce_rx_pkt *p = &d->pkt;
	size_t l3len, l4len;
	uint16_t ethertype;
	const uint8_t *l3src;

	switch (p->encap) {
	case UROCE_ENCAP_V2_IPV4:
		ethertype = UROCE_ETHERTYPE_IPV4;
		l3src = p->grh + 20;
		l3len = UROCE_IPV4_LEN;
		l4len = UROCE_UDP_LEN;
		break;
	case UROCE_ENCAP_V2_IPV6:
		ethertype = UROCE_ETHERTYPE_IPV6;
		l3src = p->grh;
		l3len = UROCE_IPV6_LEN;
		l4len = UROCE_UDP_LEN;
		break;
	case UROCE_ENCAP_V1:
		ethertype = UROCE_ETHERTYPE_ROCE;
		l3src = p->grh;
		l3len = UROCE_GRH_LEN;
		l4len = 0;
		break;
	case UROCE_ENCAP_NONE:
	default:
		return -EINVAL;
	}
	size_t n = UROCE_ETH_LEN + l3len + l4len + p->len;

	if (n > cap)
		return -ENOSPC;
	memcpy(buf, d->dmac, 6);
	memcpy(buf + 6, d->smac, 6);
	uroce_put_be16(buf + 12, ethertype);
	uint8_t *l3 = buf + UROCE_ETH_LEN;

	memcpy(l3, l3src, l3len);
	uint8_t *u = l3 + l3len;

	memcpy(u + l4len, p->data, p->len);
	if (l4len) {
		uroce_put_be16(u, d->sport);
		uroce_put_be16(u + 2, d->dport);
		uroce_put_be16(u + 4, (uint16_t)(p->len + UROCE_UDP_LEN));
		uroce_put_be16(u + 6, udp_csum(ethertype == UROCE_ETHERTYPE_IPV6, l3, u, p->data,
					       p->len, NULL, 0, NULL, 0));
	}
	return (ssize_t)n;
}
