/* SPDX-License-Identifier: MIT */
/* The simulated network: see simlink.h. */
#include "simlink.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "wire/bytes.h"
#include "wire/hdr.h"
#include "wire/icrc.h"
#include "wire/opcode.h"

#define L2_LEN	  UROCE_ETH_LEN
#define L3_OFF	  UROCE_ETH_LEN
#define L4_OFF	  (UROCE_ETH_LEN + UROCE_IPV4_LEN)
#define BTH_OFF	  (UROCE_ETH_LEN + UROCE_IPV4_LEN + UROCE_UDP_LEN)
#define MIN_FRAME (BTH_OFF + UROCE_BTH_LEN + UROCE_ICRC_LEN)

struct sim_frame {
	uint64_t at;
	uint64_t seq;
	int src, dst;
	uint32_t len;
	bool corrupted;
	bool covered; /* a flipped bit is covered by the ICRC */
	uint8_t *buf;
};

/* ---- PRNG ---------------------------------------------------------------------------- */

static uint64_t splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9E3779B97F4A7C15ull);

	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

void sim_rng_seed(struct sim_rng *r, uint64_t seed)
{
	uint64_t x = seed;

	for (int i = 0; i < 4; i++)
		r->s[i] = splitmix64(&x);
}

static uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

uint64_t sim_rng_next(struct sim_rng *r)
{
	uint64_t *s = r->s;
	uint64_t out = rotl(s[1] * 5, 7) * 9;
	uint64_t t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return out;
}

uint64_t sim_rng_below(struct sim_rng *r, uint64_t n)
{
	/* Rejection sampling keeps it unbiased. */
	uint64_t lim = UINT64_MAX - UINT64_MAX % n;
	uint64_t v;

	do
		v = sim_rng_next(r);
	while (v >= lim);
	return v % n;
}

bool sim_rng_ppm(struct sim_rng *r, uint32_t ppm)
{
	if (!ppm)
		return false;
	return sim_rng_below(r, 1000000) < ppm;
}

void sim_rng_fill(struct sim_rng *r, void *buf, size_t len)
{
	uint8_t *p = buf;

	while (len) {
		uint64_t v = sim_rng_next(r);
		size_t n = len < 8 ? len : 8;

		memcpy(p, &v, n);
		p += n;
		len -= n;
	}
}

/* ---- set-up ---------------------------------------------------------------------------- */

void sim_link_cfg_default(struct sim_link_cfg *c)
{
	memset(c, 0, sizeof(*c));
	c->delay_ns = 1000;
	c->mtu = 1500;
	c->corrupt_max_bits = 3;
	c->reorder_max_ns = 10000;
}

int sim_net_init(struct sim_net *n, uint64_t seed, uint32_t cap, uint32_t max_ip)
{
	struct sim_link_cfg c;

	memset(n, 0, sizeof(*n));
	sim_rng_seed(&n->rng, seed);
	if (!max_ip)
		max_ip = 9000;
	if (!cap)
		cap = 4096;
	n->cap = cap;
	n->slot_size = L2_LEN + max_ip;
	n->slots = calloc(cap, sizeof(*n->slots));
	n->bufs = malloc((size_t)cap * n->slot_size);
	n->heap = calloc(cap, sizeof(*n->heap));
	n->free = calloc(cap, sizeof(*n->free));
	n->scratch = malloc(SIM_SCRATCH);
	if (!n->slots || !n->bufs || !n->heap || !n->free || !n->scratch) {
		sim_net_free(n);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < cap; i++) {
		n->slots[i].buf = n->bufs + (size_t)i * n->slot_size;
		n->free[cap - 1 - i] = &n->slots[i];
	}
	n->nfree = cap;
	n->ip_id = 1;
	sim_link_cfg_default(&c);
	for (int a = 0; a < SIM_MAX_NODES; a++)
		for (int b = 0; b < SIM_MAX_NODES; b++)
			n->cfg[a][b] = c;
	return 0;
}

void sim_net_free(struct sim_net *n)
{
	free(n->slots);
	free(n->bufs);
	free(n->heap);
	free(n->free);
	free(n->scratch);
	n->scratch = NULL;
	n->slots = NULL;
	n->bufs = NULL;
	n->heap = NULL;
	n->free = NULL;
	n->nheap = n->nfree = 0;
}

int sim_node_add(struct sim_net *n, struct uroce_eng *eng, uint8_t sgid_index)
{
	struct sim_node *nd;
	int i = n->nnodes;

	if (i >= SIM_MAX_NODES)
		return -ENOSPC;
	nd = &n->node[i];
	memset(nd, 0, sizeof(*nd));
	nd->eng = eng;
	nd->ip[0] = 198;
	nd->ip[1] = 18;
	nd->ip[3] = (uint8_t)(i + 1);
	nd->mac[0] = 0x02;
	nd->mac[5] = (uint8_t)(i + 1);
	nd->sgid_index = sgid_index;
	n->nnodes++;
	return i;
}

static void gid_v4(uint8_t gid[16], const uint8_t ip[4])
{
	memset(gid, 0, 10);
	gid[10] = gid[11] = 0xFF;
	memcpy(gid + 12, ip, 4);
}

void sim_node_gid(const struct sim_net *n, int node, uint8_t gid[16])
{
	gid_v4(gid, n->node[node].ip);
}

void sim_av(const struct sim_net *n, int a, int b, struct uroce_av *av)
{
	memset(av, 0, sizeof(*av));
	sim_node_gid(n, b, av->dgid);
	av->sgid_index = n->node[a].sgid_index;
	av->hop_limit = 64;
	av->port_num = 1;
	av->is_global = true;
	memcpy(av->dmac, n->node[b].mac, 6);
}

void sim_link_set_all(struct sim_net *n, const struct sim_link_cfg *c)
{
	for (int a = 0; a < SIM_MAX_NODES; a++)
		for (int b = 0; b < SIM_MAX_NODES; b++)
			n->cfg[a][b] = *c;
}

void sim_link_set(struct sim_net *n, int src, int dst, const struct sim_link_cfg *c)
{
	n->cfg[src][dst] = *c;
}

int sim_rule_add(struct sim_net *n, const struct sim_rule *r)
{
	if (n->nrules >= SIM_MAX_RULES)
		return -ENOSPC;
	n->rule[n->nrules] = *r;
	n->rule[n->nrules].seen = 0;
	n->rule[n->nrules].hits = 0;
	return n->nrules++;
}

int sim_rule_nth(struct sim_net *n, int src, int opcode, uint32_t nth, enum sim_verdict v)
{
	struct sim_rule r = {
		.src = src,
		.dst = -1,
		.opcode = opcode,
		.nth = nth,
		.count = 1,
		.verdict = v,
	};

	return sim_rule_add(n, &r);
}

void sim_rules_clear(struct sim_net *n)
{
	n->nrules = 0;
}

/* ---- the in-flight heap ------------------------------------------------------------- */

static bool frame_less(const struct sim_frame *a, const struct sim_frame *b)
{
	return a->at < b->at || (a->at == b->at && a->seq < b->seq);
}

static void heap_push(struct sim_net *n, struct sim_frame *f)
{
	uint32_t i = n->nheap++;

	while (i) {
		uint32_t p = (i - 1) / 2;

		if (!frame_less(f, n->heap[p]))
			break;
		n->heap[i] = n->heap[p];
		i = p;
	}
	n->heap[i] = f;
}

static struct sim_frame *heap_pop(struct sim_net *n)
{
	struct sim_frame *top = n->heap[0];
	struct sim_frame *last = n->heap[--n->nheap];
	uint32_t i = 0;

	for (;;) {
		uint32_t c = 2 * i + 1;

		if (c >= n->nheap)
			break;
		if (c + 1 < n->nheap && frame_less(n->heap[c + 1], n->heap[c]))
			c++;
		if (!frame_less(n->heap[c], last))
			break;
		n->heap[i] = n->heap[c];
		i = c;
	}
	if (n->nheap)
		n->heap[i] = last;
	return top;
}

uint32_t sim_in_flight(const struct sim_net *n)
{
	return n->nheap;
}

static struct sim_frame *frame_alloc(struct sim_net *n)
{
	if (!n->nfree)
		return NULL;
	return n->free[--n->nfree];
}

static void frame_release(struct sim_net *n, struct sim_frame *f)
{
	n->free[n->nfree++] = f;
}

/* ---- sending ---------------------------------------------------------------------------- */

static int node_by_ip(const struct sim_net *n, const uint8_t ip[4])
{
	for (int i = 0; i < n->nnodes; i++)
		if (!memcmp(n->node[i].ip, ip, 4))
			return i;
	return -1;
}

/* include/rdma/ib_verbs.h rdma_get_udp_sport with no flow label (roce-reference 1.9). */
static uint16_t udp_sport(uint32_t lqpn, uint32_t rqpn)
{
	uint64_t fl = (uint64_t)lqpn * rqpn;

	fl ^= fl >> 20;
	fl ^= fl >> 40;
	fl &= 0xFFFFF;
	return (uint16_t)(((fl & 0x3FFF) ^ ((fl & 0xFC000) >> 14)) | 0xC000);
}

/* Is frame byte i covered by the ICRC (v2/IPv4, no VLAN)? */
static bool icrc_covers(uint32_t i)
{
	if (i < L3_OFF)
		return false;
	if (i == L3_OFF + 1 || i == L3_OFF + 8 || i == L3_OFF + 10 || i == L3_OFF + 11)
		return false; /* TOS, TTL, header checksum */
	if (i == L4_OFF + 6 || i == L4_OFF + 7)
		return false; /* UDP checksum */
	if (i == BTH_OFF + 4)
		return false; /* FECN, BECN, resv6 */
	return true;
}

static void trace_add(struct sim_net *n, const struct sim_pkt_info *pi, char fate)
{
	struct sim_trace *t = &n->trace[n->ntrace++ % SIM_TRACE_LEN];

	t->at = pi->now;
	t->src = pi->src;
	t->dst = pi->dst;
	t->opcode = pi->t->bth.opcode;
	t->psn = pi->t->bth.psn;
	t->dqpn = pi->t->bth.dqpn;
	t->len = pi->len;
	t->fate = fate;
}

static enum sim_verdict rules_apply(struct sim_net *n, const struct sim_pkt_info *pi,
				    uint64_t *delay)
{
	enum sim_verdict v = SIM_PASS;
	bool decided = false;

	/* Every rule counts its matches; the first whose window holds the frame decides. */
	for (int i = 0; i < n->nrules; i++) {
		struct sim_rule *r = &n->rule[i];

		if (r->src >= 0 && r->src != pi->src)
			continue;
		if (r->dst >= 0 && r->dst != pi->dst)
			continue;
		if (r->opcode >= 0 && r->opcode != pi->t->bth.opcode)
			continue;
		if (r->dqpn && r->dqpn != pi->t->bth.dqpn)
			continue;
		r->seen++;
		if (r->seen < r->nth || (r->count && r->seen >= r->nth + r->count))
			continue;
		if (v == SIM_PASS && !decided) {
			r->hits++;
			*delay = r->delay_ns;
			v = r->verdict;
			decided = true;
		}
	}
	return v;
}

static int enqueue(struct sim_net *n, int src, int dst, uint64_t at, const uint8_t *frame,
		   uint32_t len, bool corrupt, bool covered)
{
	struct sim_frame *f = frame_alloc(n);

	if (!f)
		return -ENOSPC;
	memcpy(f->buf, frame, len);
	f->at = at;
	f->seq = n->seq++;
	f->src = src;
	f->dst = dst;
	f->len = len;
	f->corrupted = corrupt;
	f->covered = covered;
	heap_push(n, f);
	return 0;
}

static void flip_bit(uint8_t *frame, uint32_t pos, bool *covered)
{
	frame[pos / 8] ^= (uint8_t)(1u << (pos % 8));
	if (icrc_covers(pos / 8))
		*covered = true;
}

int sim_send(struct sim_net *n, int src, const struct uroce_av *av, const uint8_t *hdr,
	     uint32_t hdr_len, const uint8_t *payload, uint32_t payload_len, uint8_t pad,
	     uint32_t src_qpn, uint32_t dst_qpn)
{
	struct sim_node *sn = &n->node[src];
	uint8_t *fr;
	uint32_t len, ip_len;
	int dst;
	struct uroce_ipv4 ip;
	struct uroce_udp udp;
	struct uroce_eth eth;
	struct uroce_tpkt t;
	const char *err;
	uint32_t crc;
	struct sim_pkt_info pi;
	struct sim_link_cfg *c;
	struct sim_link_stats *st;
	enum sim_verdict v;
	uint64_t extra = 0, start, at;
	bool corrupt = false, covered = false;

	if (!av || av->dgid[10] != 0xFF || av->dgid[11] != 0xFF ||
	    (dst = node_by_ip(n, av->dgid + 12)) < 0) {
		sn->bad_av++;
		return -EHOSTUNREACH;
	}
	if (av->sgid_index != sn->sgid_index)
		sn->bad_sgid++;
	len = BTH_OFF + hdr_len + payload_len + pad + UROCE_ICRC_LEN;
	ip_len = len - L2_LEN;
	if (hdr_len < UROCE_BTH_LEN || hdr_len > UROCE_TX_HDR_MAX || pad > 3 || len > SIM_SCRATCH) {
		sn->tx_malformed++;
		return -EBADMSG;
	}
	fr = n->scratch;
	memset(&eth, 0, sizeof(eth));
	memcpy(eth.dst, n->node[dst].mac, 6);
	memcpy(eth.src, sn->mac, 6);
	eth.ethertype = UROCE_ETHERTYPE_IPV4;
	uroce_eth_encode(fr, L2_LEN, &eth);
	memset(&ip, 0, sizeof(ip));
	ip.ihl = 5;
	ip.tos = av->traffic_class;
	ip.tot_len = (uint16_t)ip_len;
	ip.id = n->ip_id++;
	if (!n->ip_id)
		n->ip_id = 1;
	ip.frag = 0x4000; /* DF */
	ip.ttl = av->hop_limit ? av->hop_limit : 64;
	ip.proto = UROCE_IPPROTO_UDP;
	memcpy(ip.src, sn->ip, 4);
	memcpy(ip.dst, av->dgid + 12, 4);
	uroce_ipv4_encode(fr + L3_OFF, UROCE_IPV4_LEN, &ip);
	uroce_put_be16(fr + L3_OFF + 10, uroce_ipv4_csum(fr + L3_OFF));
	udp.sport = udp_sport(src_qpn, dst_qpn);
	udp.dport = UROCE_UDP_PORT;
	udp.len = (uint16_t)(ip_len - UROCE_IPV4_LEN);
	udp.csum = 0;
	uroce_udp_encode(fr + L4_OFF, UROCE_UDP_LEN, &udp);
	memcpy(fr + BTH_OFF, hdr, hdr_len);
	if (payload_len)
		memcpy(fr + BTH_OFF + hdr_len, payload, payload_len);
	memset(fr + BTH_OFF + hdr_len + payload_len, 0, pad);
	crc = uroce_icrc_begin(UROCE_ENCAP_V2_IPV4, fr + L3_OFF, fr + BTH_OFF);
	crc = uroce_icrc_update(crc, fr + BTH_OFF + UROCE_BTH_LEN,
				hdr_len - UROCE_BTH_LEN + payload_len + pad);
	uroce_put_le32(fr + len - UROCE_ICRC_LEN, crc);

	/* The engine's packet must be well formed. */
	if (uroce_tpkt_decode(&t, fr + BTH_OFF, len - BTH_OFF, &err) < 0 || t.bth.pad != pad ||
	    t.payload_len != payload_len) {
		sn->tx_malformed++;
		return -EBADMSG;
	}

	c = &n->cfg[src][dst];
	st = &n->st[src][dst];
	pi.src = src;
	pi.dst = dst;
	pi.now = n->now;
	pi.seq = n->seq;
	pi.t = &t;
	pi.frame = fr;
	pi.len = len;
	if (n->tap)
		n->tap(n->tap_arg, &pi);
	st->sent++;
	st->bytes += len;
	n->frames_sent++;
	if (len > n->slot_size) {
		st->queue_drops++;
		trace_add(n, &pi, 'Q');
		return -EMSGSIZE;
	}
	if (ip_len > c->mtu) {
		st->mtu_drops++;
		trace_add(n, &pi, 'M');
		return 0;
	}
	start = n->now > n->busy_until[src][dst] ? n->now : n->busy_until[src][dst];
	if (c->bandwidth_bps)
		start += (uint64_t)len * 8 * 1000000000ull / c->bandwidth_bps;
	n->busy_until[src][dst] = start;
	at = start + c->delay_ns;

	v = rules_apply(n, &pi, &extra);
	switch (v) {
	case SIM_PASS:
		break;
	case SIM_DROP:
		st->filtered++;
		trace_add(n, &pi, 'F');
		return 0;
	case SIM_DUP:
		st->duplicated++;
		enqueue(n, src, dst, at, fr, len, false, false);
		break;
	case SIM_CORRUPT: {
		uint32_t pos = BTH_OFF + (uint32_t)sim_rng_below(&n->rng, len - BTH_OFF);

		if (pos == BTH_OFF + 4)
			pos++;
		flip_bit(fr, pos * 8 + (uint32_t)sim_rng_below(&n->rng, 8), &covered);
		corrupt = true;
		st->corrupted++;
		break;
	}
	case SIM_DELAY:
		at += extra;
		st->reordered++;
		break;
	}
	if (c->down || sim_rng_ppm(&n->rng, c->loss_ppm)) {
		st->lost++;
		trace_add(n, &pi, 'L');
		return 0;
	}
	if (sim_rng_ppm(&n->rng, c->dup_ppm)) {
		uint64_t at2 = at;

		if (c->reorder_max_ns)
			at2 += sim_rng_below(&n->rng, c->reorder_max_ns);
		st->duplicated++;
		if (enqueue(n, src, dst, at2, fr, len, false, false) < 0)
			st->queue_drops++;
	}
	if (sim_rng_ppm(&n->rng, c->reorder_ppm)) {
		at += 1 + sim_rng_below(&n->rng, c->reorder_max_ns ? c->reorder_max_ns : 1);
		st->reordered++;
	}
	if (sim_rng_ppm(&n->rng, c->corrupt_ppm)) {
		uint32_t k = 1 + (uint32_t)sim_rng_below(
					 &n->rng, c->corrupt_max_bits ? c->corrupt_max_bits : 1);

		for (uint32_t i = 0; i < k; i++)
			flip_bit(fr, (uint32_t)sim_rng_below(&n->rng, (uint64_t)len * 8), &covered);
		if (!corrupt)
			st->corrupted++;
		corrupt = true;
	}
	if (covered)
		st->corrupt_covered++;
	trace_add(n, &pi,
		  corrupt		     ? 'C'
		  : v == SIM_DUP	     ? 'D'
		  : at > start + c->delay_ns ? 'R'
					     : 'S');
	if (enqueue(n, src, dst, at, fr, len, corrupt, covered) < 0)
		st->queue_drops++;
	return 0;
}

int sim_inject_frame(struct sim_net *n, int src, int dst, uint64_t at, const uint8_t *frame,
		     uint32_t len)
{
	if (len > n->slot_size)
		return -EMSGSIZE;
	return enqueue(n, src, dst, at, frame, len, false, false);
}

/* ---- receiving --------------------------------------------------------------------------- */

static void deliver(struct sim_net *n, struct sim_frame *fr)
{
	struct sim_node *nd = &n->node[fr->dst];
	struct sim_link_stats *st = &n->st[fr->src][fr->dst];
	const uint8_t *b = fr->buf;
	struct uroce_frame f;
	struct uroce_rx_pkt rx;
	uint32_t crc;
	int rc;

	if (fr->len < MIN_FRAME) {
		st->hdr_drops++;
		return;
	}
	/* The ICRC over the received bytes, first: a flip anywhere it covers must show here. */
	crc = uroce_icrc(UROCE_ENCAP_V2_IPV4, b + L3_OFF, b + BTH_OFF,
			 fr->len - BTH_OFF - UROCE_ICRC_LEN);
	if (crc != uroce_get_le32(b + fr->len - UROCE_ICRC_LEN)) {
		st->icrc_drops++;
		return;
	}
	if (uroce_frame_decode(&f, b, fr->len) != 0 || f.encap != UROCE_ENCAP_V2_IPV4 ||
	    f.len != fr->len || memcmp(f.eth.dst, nd->mac, 6) || f.eth.vlan ||
	    uroce_ipv4_csum(f.l3) != f.ip4.csum || memcmp(f.ip4.dst, nd->ip, 4) ||
	    f.udp.csum != 0 || f.udp.dport != UROCE_UDP_PORT) {
		st->hdr_drops++;
		return;
	}
	if (uroce_frame_icrc(&f) != f.t.icrc) { /* the wire layer's view must agree */
		st->icrc_drops++;
		return;
	}
	if (fr->corrupted) {
		/* Only flips the ICRC does not cover may get here (BTH byte 4, source MAC). */
		st->corrupt_accepted++;
	}
	memset(&rx, 0, sizeof(rx));
	rx.data = f.roce;
	rx.len = f.roce_len;
	rx.encap = UROCE_ENCAP_V2_IPV4;
	gid_v4(rx.sgid, f.ip4.src);
	gid_v4(rx.dgid, f.ip4.dst);
	memcpy(rx.grh + 20, f.l3, UROCE_IPV4_LEN);
	rx.sgid_index = nd->sgid_index;
	rx.ecn_ce = (f.ip4.tos & 3) == 3;
	st->delivered++;
	if (!nd->eng) {
		if (nd->rx_hook)
			nd->rx_hook(nd->rx_hook_arg, fr->dst, &rx);
		return;
	}
	rc = uroce_eng_rx(nd->eng, n->now, &rx);
	if (rc < 0) {
		st->rx_rejected++;
		nd->rx_err[rc == -ENOENT ? 0 : rc == -EBADMSG ? 1 : rc == -EPROTO ? 2 : 3]++;
	}
}

/* ---- the driver --------------------------------------------------------------------------- */

static bool pump_tx(struct sim_net *n, int i)
{
	struct sim_node *nd = &n->node[i];
	struct uroce_tx_pkt pk[16];
	bool any = false;
	int k;

	if (!nd->eng)
		return false;
	for (int guard = 0; guard < 100000; guard++) {
		k = uroce_eng_tx(nd->eng, n->now, pk, 16);
		if (k <= 0)
			break;
		any = true;
		/* Everything in pk is valid until the next engine call: copy it all now. */
		for (int j = 0; j < k; j++)
			sim_send(n, i, pk[j].av, pk[j].hdr, pk[j].hdr_len, pk[j].payload,
				 pk[j].payload_len, pk[j].pad, pk[j].src_qpn, pk[j].dst_qpn);
	}
	return any;
}

enum sim_result sim_run(struct sim_net *n, uint64_t until)
{
	uint32_t spin = 0;

	n->stuck_reason = NULL;
	if (until < n->now)
		return SIM_TIME_LIMIT;
	for (;;) {
		bool work = false, pending = false;
		uint64_t next = UROCE_NEVER;

		n->steps++;
		if (n->frame_budget && n->frames_sent > n->frame_budget) {
			n->stuck_reason = "frame budget spent (a retransmission storm?)";
			return SIM_STUCK;
		}
		for (int i = 0; i < n->nnodes; i++)
			work |= pump_tx(n, i);
		while (n->nheap && n->heap[0]->at <= n->now) {
			struct sim_frame *f = heap_pop(n);

			deliver(n, f);
			frame_release(n, f);
			work = true;
		}
		for (int i = 0; i < n->nnodes; i++)
			if (n->node[i].eng)
				uroce_eng_advance(n->node[i].eng, n->now);
		if (n->step)
			n->step(n->step_arg, n->now);

		for (int i = 0; i < n->nnodes; i++) {
			if (!n->node[i].eng)
				continue;
			if (uroce_eng_tx_pending(n->node[i].eng))
				pending = true;
			uint64_t d = uroce_eng_next_deadline(n->node[i].eng);

			if (d < next)
				next = d;
		}
		if (n->nheap && n->heap[0]->at < next)
			next = n->heap[0]->at;
		if (pending || next <= n->now) {
			if (work) {
				spin = 0;
			} else if (++spin > 1000) {
				n->stuck_reason =
					pending ? "tx_pending but uroce_eng_tx gives nothing"
						: "deadline at or before now after advance";
				return SIM_STUCK;
			}
			if (!pending && next <= n->now && !(n->nheap && n->heap[0]->at <= n->now))
				n->stale_deadlines++;
			continue;
		}
		spin = 0;
		if (next == UROCE_NEVER)
			return SIM_QUIESCENT;
		if (next > until) {
			n->now = until;
			return SIM_TIME_LIMIT;
		}
		n->now = next;
	}
}

enum sim_result sim_run_for(struct sim_net *n, uint64_t dt)
{
	return sim_run(n, n->now + dt);
}

/* ---- reporting --------------------------------------------------------------------------- */

void sim_stats_total(const struct sim_net *n, struct sim_link_stats *out)
{
	memset(out, 0, sizeof(*out));
	for (int a = 0; a < SIM_MAX_NODES; a++)
		for (int b = 0; b < SIM_MAX_NODES; b++) {
#define SIM_STAT_ADD(name) out->name += n->st[a][b].name;
			SIM_LINK_STATS(SIM_STAT_ADD)
#undef SIM_STAT_ADD
		}
}

void sim_stats_print(const struct sim_net *n, FILE *f)
{
	for (int a = 0; a < n->nnodes; a++)
		for (int b = 0; b < n->nnodes; b++) {
			const struct sim_link_stats *s = &n->st[a][b];

			if (!s->sent && !s->delivered)
				continue;
			fprintf(f, "  link %d->%d:", a, b);
#define SIM_STAT_PRINT(name) \
	if (s->name)         \
		fprintf(f, " " #name "=%llu", (unsigned long long)s->name);
			SIM_LINK_STATS(SIM_STAT_PRINT)
#undef SIM_STAT_PRINT
			fputc('\n', f);
		}
}

void sim_trace_print(const struct sim_net *n, FILE *f)
{
	uint64_t first = n->ntrace > SIM_TRACE_LEN ? n->ntrace - SIM_TRACE_LEN : 0;

	for (uint64_t i = first; i < n->ntrace; i++) {
		const struct sim_trace *t = &n->trace[i % SIM_TRACE_LEN];
		const char *name = uroce_opinfo[t->opcode].name;

		fprintf(f, "  %12llu ns %d->%d %c %-30s qp %u psn %u len %u\n",
			(unsigned long long)t->at, t->src, t->dst, t->fate, name ? name : "?",
			t->dqpn, t->psn, t->len);
	}
}

const char *sim_result_name(enum sim_result r)
{
	switch (r) {
	case SIM_QUIESCENT:
		return "quiescent";
	case SIM_TIME_LIMIT:
		return "time limit";
	case SIM_STUCK:
		return "stuck";
	}
	return "?";
}
