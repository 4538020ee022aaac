/* SPDX-License-Identifier: MIT */
/*
 * What every backend shares: counters, framing of a tx descriptor into wire pieces, the v2
 * receive check (with the IPv4 ID solver, roce-reference 1.12), and the two wrappers: fault
 * injection and the pcap tap.
 */
#include <errno.h>
#include <stdarg.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "host/io/backend.h"
#include "host/config/gid.h"
#include "host/io/pcap.h"
#include "wire/bytes.h"

const char *const uroce_io_counter_names[UROCE_IO_CNT_MAX] = {
#define UROCE_IO_CNT_NAME(id, name) [UROCE_IO_##id] = name,
	UROCE_IO_COUNTERS(UROCE_IO_CNT_NAME)
#undef UROCE_IO_CNT_NAME
};

uint16_t uroce_udp_sport(uint32_t lqpn, uint32_t rqpn, uint32_t flow_label)
{
	uint32_t fl = flow_label & 0xFFFFF;

	if (!fl) {
		/* rdma_calc_flow_label() */
		uint64_t v = (uint64_t)lqpn * rqpn;

		v ^= v >> 20;
		v ^= v >> 40;
		fl = (uint32_t)(v & 0xFFFFF);
	}
	/* rdma_flow_label_to_udp_sport() */
	return (uint16_t)(((fl & 0x3FFF) ^ ((fl & 0xFC000) >> 14)) | 0xC000);
}

void uroce_backend_seterr(const struct uroce_backend_cfg *cfg, const char *fmt, ...)
{
	va_list ap;

	if (!cfg->err || !cfg->errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(cfg->err, cfg->errlen, fmt, ap);
	va_end(ap);
}

void uroce_backend_close(struct uroce_backend *b)
{
	if (b)
		b->ops->close(b); /* wrappers close their inner backend */
}

uint64_t uroce_backend_counter(const struct uroce_backend *b, enum uroce_io_counter c)
{
	uint64_t v = 0;

	for (; b; b = b->inner)
		v += b->cnt[c];
	return v;
}

struct uroce_backend *uroce_backend_base(struct uroce_backend *b)
{
	while (b && b->inner)
		b = b->inner;
	return b;
}

const char *uroce_backend_strerror(const struct uroce_backend_ops *ops, int err)
{
	if (ops == &uroce_packet_ops && (err == -EPERM || err == -EACCES))
		return UROCE_PACKET_EPERM_MSG;
	return strerror(err < 0 ? -err : err);
}

/* ---- framing ------------------------------------------------------------------------------ */

/* Can p be framed: headers of a BTH up to UROCE_TX_HDR_MAX, pad 0-3, a payload if any? */
static bool pkt_ok(const struct uroce_tx_pkt *p)
{
	return p->hdr_len >= UROCE_BTH_LEN && p->hdr_len <= UROCE_TX_HDR_MAX && p->pad <= 3 &&
	       (!p->payload_len || p->payload);
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
	memset(f->tail, 0, p->pad);
	uroce_put_le32(f->tail + p->pad, crc ^ d->icrc_xor);
	f->tail_len = (uint8_t)(p->pad + UROCE_ICRC_LEN);
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

/* ---- v2 receive check ---------------------------------------------------------------------- */

int uroce_v2_rx_verify(struct uroce_rx_desc *d, struct uroce_ipid_cache *cache,
		       const struct uroce_v2_rx_in *in)
{
	uint8_t l3l4[UROCE_IPV6_LEN + UROCE_UDP_LEN];
	uint8_t *u;
	bool v4 = in->encap == UROCE_ENCAP_V2_IPV4;

	if (in->encap != UROCE_ENCAP_V2_IPV4 && in->encap != UROCE_ENCAP_V2_IPV6)
		return -EINVAL;
	if (in->len < UROCE_BTH_LEN + UROCE_ICRC_LEN || in->len > 0xFFFF - 48)
		return -EBADMSG;

	memset(l3l4, 0, sizeof(l3l4));
	if (v4) {
		/* What the sender's kernel wrote, as far as a socket can tell (1.12): DF, ID 0. */
		l3l4[0] = 0x45;
		l3l4[1] = in->tos;
		uroce_put_be16(l3l4 + 2, (uint16_t)(in->len + UROCE_IPV4_LEN + UROCE_UDP_LEN));
		uroce_put_be16(l3l4 + 6, 0x4000);
		l3l4[8] = in->ttl;
		l3l4[9] = UROCE_IPPROTO_UDP;
		memcpy(l3l4 + 12, in->src + 12, 4);
		memcpy(l3l4 + 16, in->dst + 12, 4);
		u = l3l4 + UROCE_IPV4_LEN;
	} else {
		uroce_put_be32(l3l4, 6u << 28 | (uint32_t)in->tos << 20);
		uroce_put_be16(l3l4 + 4, (uint16_t)(in->len + UROCE_UDP_LEN));
		l3l4[6] = UROCE_IPPROTO_UDP;
		l3l4[7] = in->ttl;
		memcpy(l3l4 + 8, in->src, 16);
		memcpy(l3l4 + 24, in->dst, 16);
		u = l3l4 + UROCE_IPV6_LEN;
	}
	uroce_put_be16(u, in->sport);
	uroce_put_be16(u + 2, in->dport);
	uroce_put_be16(u + 4, (uint16_t)(in->len + UROCE_UDP_LEN));

	uint32_t crc = uroce_icrc(in->encap, l3l4, in->data, in->len - UROCE_ICRC_LEN);
	uint32_t wire = uroce_get_le32(in->data + in->len - UROCE_ICRC_LEN);
	uint16_t id = 0;

	if (crc != wire) {
		if (!v4)
			return -EILSEQ;
		/* Solve for the ID: it both recovers the ID and verifies the packet. */
		struct uroce_ipid_solver local, *s = &local;

		if (cache) {
			s = &cache->s[in->len % UROCE_IPID_CACHE];
			if (s->roce_len != in->len)
				uroce_ipid_solver_init(s, in->len);
		} else {
			uroce_ipid_solver_init(s, in->len);
		}
		if (uroce_ipid_solve(s, crc, wire, &id) < 0)
			return -EILSEQ;
	}

	struct uroce_rx_pkt *p = &d->pkt;
	static const struct uroce_rx_desc zero; /* not memset: rep stos, slow at this size */

	*d = zero;
	p->data = in->data;
	p->len = in->len;
	p->encap = in->encap;
	if (v4) {
		uroce_gid_from_v4(p->sgid, in->src + 12);
		uroce_gid_from_v4(p->dgid, in->dst + 12);
		/* GRH slot: 20 undefined (zero) bytes, then the IPv4 header (roce-reference 1.1).
		 */
		uroce_put_be16(l3l4 + 4, id);
		uroce_put_be16(l3l4 + 10, uroce_ipv4_csum(l3l4));
		memcpy(p->grh + 20, l3l4, UROCE_IPV4_LEN);
	} else {
		memcpy(p->sgid, in->src, 16);
		memcpy(p->dgid, in->dst, 16);
		memcpy(p->grh, l3l4, UROCE_IPV6_LEN);
	}
	p->ecn_ce = (in->tos & 3) == 3;
	d->ifindex = in->ifindex;
	d->sport = in->sport;
	d->dport = in->dport;
	d->ip_id = id;
	d->tclass = in->tos;
	d->hop_limit = in->ttl;
	return 0;
}

/* ---- fault injection ---------------------------------------------------------------------- */

int uroce_faults_parse(struct uroce_faults *f, const char *spec, char *err, size_t errlen)
{
	char item[64];

	memset(f, 0, sizeof(*f));
	if (!spec)
		return 0;
	const char *p = spec;

	while (*p) {
		const char *end = strchr(p, ',');
		size_t n = end ? (size_t)(end - p) : strlen(p);

		if (n == 0 || n >= sizeof(item)) {
			snprintf(err, errlen,
				 "UROCE_FAULTS: bad item '%.*s' in '%s' (expected "
				 "NAME=VALUE[,...], names loss, dup, reorder, corrupt, seed)",
				 (int)(n > 40 ? 40 : n), p, spec);
			return -EINVAL;
		}
		memcpy(item, p, n);
		item[n] = 0;
		char *eq = strchr(item, '=');

		if (!eq || eq == item || !eq[1]) {
			snprintf(err, errlen,
				 "UROCE_FAULTS: '%s' is not NAME=VALUE (names: loss, "
				 "dup, reorder, corrupt, seed)",
				 item);
			return -EINVAL;
		}
		*eq = 0;
		const char *val = eq + 1;
		char *vend;

		errno = 0;
		if (strcmp(item, "seed") == 0) {
			unsigned long long s = strtoull(val, &vend, 0);

			if (errno || *vend || val[0] == '-') {
				snprintf(err, errlen,
					 "UROCE_FAULTS: seed '%s' is not an unsigned "
					 "integer",
					 val);
				return -EINVAL;
			}
			f->seed = s;
		} else {
			double *dst = strcmp(item, "loss") == 0	     ? &f->loss
				      : strcmp(item, "dup") == 0     ? &f->dup
				      : strcmp(item, "reorder") == 0 ? &f->reorder
				      : strcmp(item, "corrupt") == 0 ? &f->corrupt
								     : NULL;

			if (!dst) {
				snprintf(err, errlen,
					 "UROCE_FAULTS: unknown fault '%s' (known: loss, "
					 "dup, reorder, corrupt, seed)",
					 item);
				return -EINVAL;
			}
			double v = strtod(val, &vend);

			if (errno || *vend || !(v >= 0.0 && v <= 1.0)) {
				snprintf(err, errlen,
					 "UROCE_FAULTS: %s=%s is not a probability "
					 "between 0 and 1",
					 item, val);
				return -EINVAL;
			}
			*dst = v;
		}
		p += n;
		if (*p == ',' && *++p == 0) {
			snprintf(err, errlen, "UROCE_FAULTS: '%s' ends with a comma", spec);
			return -EINVAL;
		}
	}
	return 0;
}

#define FAULT_CHUNK   64
#define FAULT_HOLDMAX 16384

struct faults_be {
	struct uroce_backend b;
	struct uroce_faults f;
	uint64_t seq; /* originals consumed: the per-packet random draws are hash(seed, seq) */
	/* the held (reordered) packet */
	bool held;
	struct uroce_tx_pkt hpkt;
	struct uroce_path hpath;
	uint32_t hxor;
	uint8_t hbuf[FAULT_HOLDMAX];
	/* per chunk */
	struct uroce_tx_desc out[2 * FAULT_CHUNK + 1];
	int first[FAULT_CHUNK]; /* first out entry of each original, -1 when none */
	int rel[FAULT_CHUNK];	/* held originals: the out entry that releases them, or -1 */
	uint32_t hold_xor[FAULT_CHUNK];
	uint8_t act[FAULT_CHUNK];
};

enum { ACT_SEND = 1, ACT_LOST = 2, ACT_DUP = 4, ACT_CORRUPT = 8, ACT_HOLD = 16 };

static uint64_t splitmix(uint64_t x)
{
	x += 0x9E3779B97F4A7C15ull;
	x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
	x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
	return x ^ (x >> 31);
}

/* The k-th uniform draw in [0, 1) for packet number seq. */
static double draw(const struct faults_be *w, uint64_t seq, unsigned k)
{
	uint64_t x = splitmix(splitmix(w->f.seed ^ 0x5EEDull) ^ (seq * 8 + k));

	return (double)(x >> 11) * (1.0 / 9007199254740992.0);
}

static void hold_copy(struct faults_be *w, const struct uroce_tx_desc *d, uint32_t xor_)
{
	w->hpkt = *d->pkt;
	w->hpath = *d->path;
	if (d->pkt->payload_len)
		memcpy(w->hbuf, d->pkt->payload, d->pkt->payload_len);
	w->hpkt.payload = w->hbuf;
	w->hpkt.av = NULL;
	w->hxor = xor_;
	w->held = true;
}

/*
 * One chunk, in two phases: plan every original's fate (drawn from its sequence number, so a
 * retry of an unsent packet draws the same), send the plan, then commit only what the inner
 * backend took. A packet held in this chunk and released later in it is sent from the caller's
 * descriptor; only a held packet whose release did not go out needs the single hold slot.
 */
static int faults_tx_chunk(struct faults_be *w, const struct uroce_tx_desc *d, int n)
{
	int m = 0, cur = -1, x_rel = -1; /* cur: original held in the plan; -2: the slot's */

	if (w->held)
		cur = -2;
	for (int i = 0; i < n; i++) {
		uint64_t seq = w->seq + (uint64_t)i;
		uint8_t a = 0;
		uint32_t xr = 0;

		w->first[i] = -1;
		w->rel[i] = -1;
		if (draw(w, seq, 0) < w->f.loss) {
			w->act[i] = ACT_LOST;
			continue;
		}
		if (draw(w, seq, 1) < w->f.corrupt) {
			a |= ACT_CORRUPT;
			xr = 1u << (splitmix(w->f.seed + seq) % 32);
		}
		if (cur == -1 && draw(w, seq, 2) < w->f.reorder &&
		    d[i].pkt->payload_len <= FAULT_HOLDMAX) {
			w->act[i] = a | ACT_HOLD;
			w->hold_xor[i] = d[i].icrc_xor ^ xr;
			cur = i;
			continue;
		}
		a |= ACT_SEND;
		w->first[i] = m;
		w->out[m] = d[i];
		w->out[m++].icrc_xor = d[i].icrc_xor ^ xr;
		if (draw(w, seq, 3) < w->f.dup) {
			a |= ACT_DUP;
			w->out[m] = w->out[m - 1];
			m++;
		}
		w->act[i] = a;
		if (cur == -2) { /* release the slot's packet after this one */
			w->out[m] = (struct uroce_tx_desc){&w->hpkt, &w->hpath, w->hxor};
			x_rel = m++;
		} else if (cur >= 0) {
			w->out[m] = d[cur];
			w->out[m].icrc_xor = w->hold_xor[cur];
			w->rel[cur] = m++;
		}
		cur = -1;
	}

	int k = m ? w->b.inner->ops->tx_burst(w->b.inner, w->out, m) : 0;

	if (k < 0)
		return k;
	/* r: originals consumed = those before the first one whose first entry was not taken. */
	int r = n;

	for (int i = 0; i < n; i++) {
		if (w->first[i] >= k) {
			r = i;
			break;
		}
	}
	/* The slot: still taken when its packet's release did not go out. */
	bool slot_busy = w->held && !(x_rel >= 0 && x_rel < k);

	for (int i = 0; i < r; i++) {
		if (!(w->act[i] & ACT_HOLD) || (w->rel[i] >= 0 && w->rel[i] < k))
			continue;
		/* Held, consumed, not yet sent: it needs the slot, or it is not consumed after all.
		 */
		if (slot_busy) {
			r = i;
			break;
		}
		hold_copy(w, &d[i], w->hold_xor[i]);
		slot_busy = true;
	}
	w->held = slot_busy;
	for (int i = 0; i < r; i++) {
		uint8_t a = w->act[i];

		w->b.cnt[UROCE_IO_FAULT_LOST] += !!(a & ACT_LOST);
		w->b.cnt[UROCE_IO_FAULT_CORRUPTED] += !!(a & ACT_CORRUPT);
		w->b.cnt[UROCE_IO_FAULT_REORDERED] += !!(a & ACT_HOLD);
		w->b.cnt[UROCE_IO_FAULT_DUP] += (a & ACT_DUP) && w->first[i] + 1 < k;
	}
	w->seq += (uint64_t)r;
	return r;
}

static int faults_tx(struct uroce_backend *b, const struct uroce_tx_desc *d, int n)
{
	struct faults_be *w = (struct faults_be *)b;
	int done = 0;

	b->tx_refused_n = 0; /* the inner backend's indices refer to our plan, not to d */
	while (done < n) {
		int c = n - done < FAULT_CHUNK ? n - done : FAULT_CHUNK;
		int r = faults_tx_chunk(w, d + done, c);

		if (r < 0)
			return done ? done : r;
		done += r;
		if (r < c)
			break;
	}
	return done;
}

static int faults_rx(struct uroce_backend *b, struct uroce_rx_desc *out, int n)
{
	struct faults_be *w = (struct faults_be *)b;

	if (w->held) {
		/* Nothing followed the held packet for a while: let it go now. */
		const struct uroce_tx_desc hd = {&w->hpkt, &w->hpath, w->hxor};

		if (w->b.inner->ops->tx_burst(w->b.inner, &hd, 1) == 1)
			w->held = false;
	}
	return w->b.inner->ops->rx_burst(w->b.inner, out, n);
}

static int wrap_fd(const struct uroce_backend *b)
{
	return b->inner->ops->fd(b->inner);
}

static void faults_close(struct uroce_backend *b)
{
	uroce_backend_close(b->inner);
	free(b);
}

static const struct uroce_backend_ops faults_ops = {
	.name = "faults",
	.open = NULL,
	.close = faults_close,
	.tx_burst = faults_tx,
	.rx_burst = faults_rx,
	.fd = wrap_fd,
};

int uroce_faults_wrap(struct uroce_backend **b, const struct uroce_faults *f)
{
	struct faults_be *w = calloc(1, sizeof(*w));

	if (!w)
		return -ENOMEM;
	w->b.ops = &faults_ops;
	w->b.inner = *b;
	w->b.port = (*b)->port;
	w->b.fixed_sport = (*b)->fixed_sport;
	memcpy(w->b.mac, (*b)->mac, 6);
	w->f = *f;
	*b = &w->b;
	return 0;
}

/* ---- pcap tap ------------------------------------------------------------------------------ */

/*
 * The file's buffer is written out only at record boundaries (a record that would not fit
 * flushes what is buffered first), so that the file always holds whole records: a process
 * killed while capturing (a test stopping a peer that retransmits for ever) leaves a capture
 * that reads to its end, short of what was still buffered.
 */
#define SINK_BUF (1u << 20)

struct uroce_pcap_sink {
	pthread_mutex_t lock;
	FILE *f;
	size_t buffered; /* bytes written to f since it was last flushed */
	int refs;
	char buf[SINK_BUF]; /* f's (glibc sizes a buffer it allocates itself by the file's block) */
};

int uroce_pcap_sink_open(struct uroce_pcap_sink **out, const char *path)
{
	struct uroce_pcap_sink *s = calloc(1, sizeof(*s));

	if (!s)
		return -ENOMEM;
	s->f = fopen(path, "wbe");
	if (!s->f) {
		int e = -errno;

		free(s);
		return e;
	}
	if (setvbuf(s->f, s->buf, _IOFBF, SINK_BUF) != 0 || uroce_pcap_write_header(s->f) < 0 ||
	    fflush(s->f) != 0) {
		fclose(s->f);
		free(s);
		return -EIO;
	}
	pthread_mutex_init(&s->lock, NULL);
	s->refs = 1;
	*out = s;
	return 0;
}

static void sink_get(struct uroce_pcap_sink *s)
{
	pthread_mutex_lock(&s->lock);
	s->refs++;
	pthread_mutex_unlock(&s->lock);
}

void uroce_pcap_sink_put(struct uroce_pcap_sink *s)
{
	if (!s)
		return;
	pthread_mutex_lock(&s->lock);
	int left = --s->refs;

	pthread_mutex_unlock(&s->lock);
	if (left)
		return;
	fclose(s->f);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

int uroce_pcap_sink_flush(struct uroce_pcap_sink *s)
{
	pthread_mutex_lock(&s->lock);
	int r = fflush(s->f) ? -EIO : 0;

	s->buffered = 0;
	pthread_mutex_unlock(&s->lock);
	return r;
}

int uroce_pcap_sink_write(struct uroce_pcap_sink *s, uint64_t ts_ns, const uint8_t *data,
			  uint32_t len)
{
	size_t need = 16 + (size_t)len;
	int r = 0;

	if (need >= SINK_BUF)
		return -EMSGSIZE;
	pthread_mutex_lock(&s->lock);
	if (s->buffered + need >= SINK_BUF) {
		r = fflush(s->f) ? -EIO : 0;
		s->buffered = 0;
	}
	if (r == 0)
		r = uroce_pcap_write_packet(s->f, ts_ns, data, len);
	s->buffered += need;
	pthread_mutex_unlock(&s->lock);
	return r;
}

#define TAP_BUF (UROCE_FRAME_HEAD_MAX + 65536 + 8)

struct tap_be {
	struct uroce_backend b;
	struct uroce_pcap_sink *sink;
	struct uroce_txframe tf;
	uint8_t buf[TAP_BUF];
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void tap_write(struct tap_be *t, uint64_t ts, const uint8_t *p, ssize_t len,
		      enum uroce_io_counter ok)
{
	int r = -EINVAL;

	if (len > 0)
		r = uroce_pcap_sink_write(t->sink, ts, p, (uint32_t)len);
	t->b.cnt[r == 0 ? ok : UROCE_IO_PCAP_ERR]++;
}

static int tap_tx(struct uroce_backend *b, const struct uroce_tx_desc *d, int n)
{
	struct tap_be *t = (struct tap_be *)b;
	int k = b->inner->ops->tx_burst(b->inner, d, n);
	uint64_t ts = now_ns();
	int nref = b->inner->tx_refused_n < UROCE_TX_REFUSED_MAX ? b->inner->tx_refused_n
								 : UROCE_TX_REFUSED_MAX;
	int ri = 0;

	b->tx_refused_n = b->inner->tx_refused_n;
	memcpy(b->tx_refused, b->inner->tx_refused, sizeof(b->tx_refused));
	for (int i = 0; i < k; i++) {
		const struct uroce_tx_pkt *p = d[i].pkt;

		/* The refused indices are in increasing order. */
		if (ri < nref && b->inner->tx_refused[ri] == i) {
			ri++;
			continue;
		}
		struct uroce_path path = *d[i].path;
		struct uroce_tx_desc x = {p, &path, d[i].icrc_xor};
		ssize_t len = -EINVAL;

		if (b->fixed_sport)
			path.sport = b->fixed_sport;
		/* The ID it left with: 0 from an IP_PMTUDISC_DO socket (and our AF_PACKET framing),
		 * k for segment k of a GSO send. */
		uint16_t id = i < UROCE_TX_BURST_MAX ? b->inner->tx_ip_id[i] : 0;

		if (uroce_txframe_build(&t->tf, &x, b->mac, b->port, id) == 0) {
			uroce_txframe_csum(&t->tf, p->payload, p->payload_len);
			len = uroce_txframe_flatten(t->buf, sizeof(t->buf), &t->tf, p->payload,
						    p->payload_len);
		}
		tap_write(t, ts, t->buf, len, UROCE_IO_PCAP_TX);
	}
	return k;
}

static int tap_rx(struct uroce_backend *b, struct uroce_rx_desc *out, int n)
{
	struct tap_be *t = (struct tap_be *)b;
	int k = b->inner->ops->rx_burst(b->inner, out, n);
	uint64_t ts = now_ns();

	for (int i = 0; i < k; i++)
		tap_write(t, ts, t->buf, uroce_rxframe_build(t->buf, sizeof(t->buf), &out[i]),
			  UROCE_IO_PCAP_RX);
	return k;
}

static void tap_close(struct uroce_backend *b)
{
	struct tap_be *t = (struct tap_be *)b;

	uroce_backend_close(b->inner);
	uroce_pcap_sink_flush(t->sink);
	uroce_pcap_sink_put(t->sink);
	free(t);
}

static const struct uroce_backend_ops tap_ops = {
	.name = "pcap",
	.open = NULL,
	.close = tap_close,
	.tx_burst = tap_tx,
	.rx_burst = tap_rx,
	.fd = wrap_fd,
};

int uroce_pcap_tap_wrap(struct uroce_backend **b, struct uroce_pcap_sink *sink)
{
	struct tap_be *t = calloc(1, sizeof(*t));

	if (!t)
		return -ENOMEM;
	t->b.ops = &tap_ops;
	t->b.inner = *b;
	t->b.port = (*b)->port;
	t->b.fixed_sport = (*b)->fixed_sport;
	memcpy(t->b.mac, (*b)->mac, 6);
	t->sink = sink;
	sink_get(sink);
	*b = &t->b;
	return 0;
}

int uroce_backend_wrap_env(struct uroce_backend **b, struct uroce_pcap_sink **sink, char *err,
			   size_t errlen)
{
	const char *faults = getenv("UROCE_FAULTS");
	const char *pcap = getenv("UROCE_PCAP");
	struct uroce_faults f;
	int r;

	/* Parse first so that a bad spec changes nothing. */
	if (faults && *faults) {
		r = uroce_faults_parse(&f, faults, err, errlen);
		if (r < 0)
			return r;
	}
	if (pcap && *pcap) {
		if (!*sink) {
			r = uroce_pcap_sink_open(sink, pcap);
			if (r < 0) {
				snprintf(err, errlen, "UROCE_PCAP: cannot write '%s': %s", pcap,
					 strerror(-r));
				return r;
			}
		}
		r = uroce_pcap_tap_wrap(b, *sink);
		if (r < 0)
			return r;
	}
	if (faults && *faults) {
		r = uroce_faults_wrap(b, &f);
		if (r < 0)
			return r;
	}
	return 0;
}
