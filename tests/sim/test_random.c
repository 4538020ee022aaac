/* SPDX-License-Identifier: MIT */
/*
 * Randomised simulation: seeded mixed workloads (every RC operation, sizes 0 B - 1 MiB favouring
 * small ones, several QPs per engine pair, traffic both ways, unsignaled WRs, lazily posted
 * receives that provoke RNR) over a link with 0 %, 1 %, 5 % and 20 % loss plus duplication,
 * reordering and corruption. Checked: every WR completes exactly once, in order per QP, with
 * SUCCESS; received data byte-exact; remote memory byte-exact after writes and untouched
 * elsewhere; FETCH_ADDs on one counter linearisable; CMP_SWAP chains.
 *
 * UROCE_SIM_SEEDS=n    run seeds 1..n (default 20), each at every loss rate
 * UROCE_SIM_SEED=s     run only seed s (every loss rate, or UROCE_SIM_LOSS=pct only)
 * UROCE_SIM_VERBOSE=1  print a line per run
 * UROCE_SIM_OPS=n      at most n operations per direction (debugging)
 * UROCE_SIM_TRACE=n    print the first n frames of each run (debugging)
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../check.h"
#include "../wr.h"
#include "simenv.h"

#define MAXQP	 3
#define SRC_LEN	 (2u << 20)
#define ATOM_LEN 4096
#define SEC	 1000000000ull

enum kind { K_SEND, K_SEND_IMM, K_WRITE, K_WRITE_IMM, K_READ, K_FADD, K_CSWAP, K_NKINDS };

struct op {
	enum kind kind;
	uint32_t len;
	uint64_t src_off; /* sender's src MR (SEND/WRITE), or the responder's src MR (READ) */
	uint64_t dst_off; /* landing: receiver's sink (SEND/WRITE), requester's sink (READ, atomics)
			   */
	bool signaled;
	bool inl;
	uint64_t add, compare, swap, expect; /* atomics; expect: CMP_SWAP original */
	uint32_t imm;
	int recv_idx; /* receive it consumes, or -1 */
	bool done;
	uint64_t result;
};

/* One direction of one QP pair: requests from side `from` to side !from. */
struct dir {
	int qpi, from;
	struct op *ops;
	int nops;
	int next_post; /* next op to post */
	int retired;   /* ops [0, retired) completed (implicitly for unsignaled) */
	int *rmsg;     /* receive-consuming ops in order: op index */
	int nrmsg;
	int recv_posted; /* receives posted on the responder for this direction */
	int recv_done;
	uint32_t *recv_slack;
	uint64_t cas_word; /* offset of this direction's CMP_SWAP word in the responder's atom MR */
	uint64_t cas_value;
};

struct run {
	uint64_t seed;
	uint32_t loss_ppm;
	struct sim_rng rng;
	struct simenv s;
	struct simqp_cfg c;
	int nqp;
	struct simqp q[MAXQP][2];
	struct simmr src[2], sink[2], atom[2];
	size_t sink_len[2], sink_used[2];
	struct dir d[MAXQP][2];
	bool lazy_recv;
	int fails;
	char why[256];
	uint64_t fa_sum[2]; /* sum of FETCH_ADDs aimed at side i's counter */
	uint64_t *fa_res[2], *fa_add[2];
	int nfa[2];
};

static uint64_t fa_init[2] = {1000, 5000000};

static void fail(struct run *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void fail(struct run *r, const char *fmt, ...)
{
	va_list ap;

	if (!r->fails++) {
		va_start(ap, fmt);
		vsnprintf(r->why, sizeof(r->why), fmt, ap);
		va_end(ap);
	}
}

static uint32_t pick_size(struct run *r, uint32_t max)
{
	uint64_t b = sim_rng_below(&r->rng, 100);
	uint32_t v;

	if (b < 45)
		v = (uint32_t)sim_rng_below(&r->rng, 65);
	else if (b < 75)
		v = 65 + (uint32_t)sim_rng_below(&r->rng, 4096 - 64);
	else if (b < 92)
		v = 4096 + (uint32_t)sim_rng_below(&r->rng, 65536 - 4096 + 1);
	else if (b < 98)
		v = 65536 + (uint32_t)sim_rng_below(&r->rng, 262144 - 65536 + 1);
	else
		v = 262144 + (uint32_t)sim_rng_below(&r->rng, (1u << 20) - 262144 + 1);
	return v < max ? v : max;
}

static size_t sink_alloc(struct run *r, int side, size_t len)
{
	size_t off = r->sink_used[side];

	r->sink_used[side] += (len + 16 + 7) & ~(size_t)7; /* 8-byte gap, aligned */
	return off;
}

/* Generate the workload of one direction; sizes the sinks as it goes. */
static void gen_dir(struct run *r, struct dir *d, int nops, uint32_t maxsize)
{
	int unsig_run = 0;
	int to = !d->from;

	d->ops = calloc((size_t)nops, sizeof(*d->ops));
	d->rmsg = calloc((size_t)nops, sizeof(int));
	d->recv_slack = calloc((size_t)nops, sizeof(uint32_t));
	d->nops = nops;
	for (int i = 0; i < nops; i++) {
		struct op *o = &d->ops[i];
		uint64_t k = sim_rng_below(&r->rng, 100);

		o->kind = k < 30   ? K_SEND
			  : k < 38 ? K_SEND_IMM
			  : k < 60 ? K_WRITE
			  : k < 66 ? K_WRITE_IMM
			  : k < 84 ? K_READ
			  : k < 94 ? K_FADD
				   : K_CSWAP;
		o->recv_idx = -1;
		if (o->kind == K_FADD || o->kind == K_CSWAP) {
			o->len = 8;
			o->dst_off = sink_alloc(r, d->from, 8);
		} else {
			o->len = pick_size(r, maxsize);
			o->src_off = sim_rng_below(&r->rng, SRC_LEN - o->len + 1);
			o->dst_off = sink_alloc(r, o->kind == K_READ ? d->from : to, o->len);
		}
		o->imm = (uint32_t)sim_rng_next(&r->rng);
		o->inl = (o->kind == K_SEND || o->kind == K_WRITE) &&
			 o->len <= r->c.cap.max_inline_data && sim_rng_below(&r->rng, 4) == 0;
		if (o->kind == K_SEND || o->kind == K_SEND_IMM || o->kind == K_WRITE_IMM) {
			o->recv_idx = d->nrmsg;
			d->recv_slack[d->nrmsg] = (uint32_t)sim_rng_below(&r->rng, 2) * 8;
			d->rmsg[d->nrmsg++] = i;
		}
		if (o->kind == K_FADD) {
			o->add = 1 + sim_rng_below(&r->rng, 1000);
			r->fa_sum[to] += o->add;
		}
		if (o->kind == K_CSWAP) {
			/* mostly a chain that succeeds; sometimes a compare that must fail */
			uint64_t next = sim_rng_next(&r->rng);

			if (sim_rng_below(&r->rng, 5) == 0) {
				o->compare = d->cas_value ^ 0x8000000000000000ull;
				o->swap = next;
			} else {
				o->compare = d->cas_value;
				o->swap = next;
			}
			o->expect = d->cas_value;
			if (o->compare == d->cas_value)
				d->cas_value = next;
		}
		o->signaled = sim_rng_below(&r->rng, 10) < 6 || unsig_run >= 6 || i == nops - 1;
		unsig_run = o->signaled ? 0 : unsig_run + 1;
	}
}

static int post_op(struct run *r, struct dir *d, int i)
{
	struct op *o = &d->ops[i];
	int from = d->from, to = !d->from;
	struct uroce_qp *qp = r->q[d->qpi][from].qp;
	struct uroce_sge sge[3];
	struct uroce_send_wr wr = {0}, *bad;
	unsigned flags = o->signaled ? UROCE_SEND_SIGNALED : 0;
	uint8_t *inl_copy = NULL;

	switch (o->kind) {
	case K_SEND:
	case K_SEND_IMM:
	case K_WRITE:
	case K_WRITE_IMM: {
		/* up to three SGEs over the source */
		int n = o->len == 0 ? 0 : o->len < 3 ? 1 : 1 + (int)(o->src_off % 3);
		uint32_t left = o->len;

		for (int k = 0; k < n; k++) {
			uint32_t piece = k == n - 1 ? left : o->len / (uint32_t)n;

			sge[k] = wr_sge(simmr_va(&r->src[from], o->src_off + (o->len - left)), piece,
					r->src[from].lkey);
			left -= piece;
		}
		if (o->inl) {
			flags |= UROCE_SEND_INLINE;
			/* inline: host addresses, and the buffer may change after posting */
			inl_copy = malloc(o->len + 1);
			memcpy(inl_copy, r->src[from].buf + o->src_off, o->len);
			sge[0].addr = (uint64_t)(uintptr_t)inl_copy;
			sge[0].length = o->len;
			n = o->len ? 1 : 0;
		}
		/* a SEND ignores the remote address and key */
		wr = wr_rdma(o->kind == K_SEND	     ? UROCE_WR_SEND
			     : o->kind == K_SEND_IMM ? UROCE_WR_SEND_WITH_IMM
			     : o->kind == K_WRITE    ? UROCE_WR_RDMA_WRITE
						     : UROCE_WR_RDMA_WRITE_WITH_IMM,
			     (uint64_t)i, sge, n, simmr_va(&r->sink[to], o->dst_off),
			     r->sink[to].rkey, flags);
		break;
	}
	case K_READ: {
		int n = o->len == 0 ? 0 : o->len < 2 ? 1 : 2;
		uint32_t first = n == 2 ? o->len / 2 : o->len;
		uint64_t at = simmr_va(&r->sink[from], o->dst_off);

		sge[0] = wr_sge(at, first, r->sink[from].lkey);
		sge[1] = wr_sge(at + first, o->len - first, r->sink[from].lkey);
		wr = wr_read((uint64_t)i, sge, n, simmr_va(&r->src[to], o->src_off), r->src[to].rkey,
			     flags);
		break;
	}
	case K_FADD:
	case K_CSWAP:
		sge[0] = wr_sge(simmr_va(&r->sink[from], o->dst_off), 8, r->sink[from].lkey);
		wr = wr_atomic(o->kind == K_FADD ? UROCE_WR_ATOMIC_FETCH_AND_ADD
						 : UROCE_WR_ATOMIC_CMP_AND_SWP,
			       (uint64_t)i, sge,
			       simmr_va(&r->atom[to], o->kind == K_FADD ? 0 : d->cas_word),
			       r->atom[to].rkey, o->kind == K_FADD ? o->add : o->compare, o->swap,
			       flags);
		break;
	case K_NKINDS:
		break;
	}
	wr.imm_data = o->imm;
	int rc = uroce_post_send(qp, &wr, &bad);

	free(inl_copy);
	return rc;
}

static void post_recv(struct run *r, struct dir *d)
{
	int to = !d->from;
	int ri = d->recv_posted;
	struct op *o = &d->ops[d->rmsg[ri]];
	struct uroce_sge sge[2];
	struct uroce_recv_wr wr, *bad;
	uint32_t total = o->len + d->recv_slack[ri];

	int n = 0;

	/* a WRITE_IMM's data goes where the RETH says; its receive needs no buffer */
	if (o->kind != K_WRITE_IMM && total) {
		/* two SGEs: the landing area, then up to 8 bytes of slack, inside the gap
		 * after the area that nothing may write */
		uint64_t at = simmr_va(&r->sink[to], o->dst_off);

		sge[0] = wr_sge(at, total / 2, r->sink[to].lkey);
		sge[1] = wr_sge(at + total / 2, total - total / 2, r->sink[to].lkey);
		n = 2;
	}
	wr = wr_recv((uint64_t)ri, sge, n);
	if (uroce_post_recv(r->q[d->qpi][to].qp, &wr, &bad) == 0)
		d->recv_posted++;
	else
		fail(r, "post_recv qp %d side %d failed", d->qpi, to);
}

static void check_send_wc(struct run *r, struct dir *d, const struct uroce_wc *w)
{
	static const enum uroce_wc_opcode wop[] = {
		UROCE_WC_SEND,	    UROCE_WC_SEND,	UROCE_WC_RDMA_WRITE, UROCE_WC_RDMA_WRITE,
		UROCE_WC_RDMA_READ, UROCE_WC_FETCH_ADD, UROCE_WC_COMP_SWAP};
	int i = (int)w->wr_id;
	int from = d->from;

	if (w->status != UROCE_WC_SUCCESS) {
		fail(r, "qp %d dir %d: wr %d (%d of %d) completed with %s", d->qpi, from, i, i,
		     d->nops, sim_wc_status_name(w->status));
		return;
	}
	if (i < d->retired || i >= d->next_post) {
		fail(r, "qp %d dir %d: completion for wr %d out of order (retired %d, posted %d)",
		     d->qpi, from, i, d->retired, d->next_post);
		return;
	}
	for (int k = d->retired; k < i; k++)
		if (d->ops[k].signaled) {
			fail(r, "qp %d dir %d: wr %d completed before signaled wr %d", d->qpi, from,
			     i, k);
			return;
		}
	struct op *o = &d->ops[i];

	if (!o->signaled)
		fail(r, "qp %d dir %d: completion for unsignaled wr %d", d->qpi, from, i);
	if (w->opcode != wop[o->kind])
		fail(r, "qp %d dir %d: wr %d opcode %d", d->qpi, from, i, w->opcode);
	if (w->qp_num != uroce_qp_num(r->q[d->qpi][from].qp))
		fail(r, "qp %d dir %d: wr %d qp_num", d->qpi, from, i);
	for (int k = d->retired; k <= i; k++) {
		struct op *p = &d->ops[k];

		p->done = true;
		if (p->kind == K_READ &&
		    memcmp(r->sink[from].buf + p->dst_off, r->src[!from].buf + p->src_off, p->len))
			fail(r, "qp %d dir %d: READ wr %d (%u bytes) data differs", d->qpi, from, k,
			     p->len);
		if (p->kind == K_FADD || p->kind == K_CSWAP)
			memcpy(&p->result, r->sink[from].buf + p->dst_off, 8);
		if (p->kind == K_CSWAP && p->result != p->expect)
			fail(r, "qp %d dir %d: CMP_SWAP wr %d returned %#llx, expected %#llx",
			     d->qpi, from, k, (unsigned long long)p->result,
			     (unsigned long long)p->expect);
		if (p->kind == K_FADD) {
			int to = !from;

			r->fa_res[to][r->nfa[to]] = p->result;
			r->fa_add[to][r->nfa[to]++] = p->add;
		}
	}
	d->retired = i + 1;
}

static void check_recv_wc(struct run *r, struct dir *d, const struct uroce_wc *w)
{
	int to = !d->from;
	int ri = (int)w->wr_id;

	if (w->status != UROCE_WC_SUCCESS) {
		fail(r, "qp %d side %d: receive %d completed with %s", d->qpi, to, ri,
		     sim_wc_status_name(w->status));
		return;
	}
	if (ri != d->recv_done) {
		fail(r, "qp %d side %d: receive %d completed, expected %d", d->qpi, to, ri,
		     d->recv_done);
		return;
	}
	d->recv_done++;
	struct op *o = &d->ops[d->rmsg[ri]];
	bool imm = o->kind != K_SEND;
	enum uroce_wc_opcode want =
		o->kind == K_WRITE_IMM ? UROCE_WC_RECV_RDMA_WITH_IMM : UROCE_WC_RECV;

	if (w->opcode != want || w->byte_len != o->len ||
	    !!(w->wc_flags & UROCE_WC_WITH_IMM) != imm || (imm && w->imm_data != o->imm))
		fail(r, "qp %d side %d: receive %d: opcode %d len %u (want %u) flags %#x imm %#x",
		     d->qpi, to, ri, w->opcode, w->byte_len, o->len, w->wc_flags, w->imm_data);
	if (memcmp(r->sink[to].buf + o->dst_off, r->src[d->from].buf + o->src_off, o->len))
		fail(r, "qp %d side %d: receive %d (%s, %u bytes) data differs", d->qpi, to, ri,
		     o->kind == K_WRITE_IMM ? "WRITE_IMM" : "SEND", o->len);
}

static void step(void *arg, uint64_t now)
{
	struct run *r = arg;
	struct uroce_wc wc[32];

	(void)now;
	for (int qi = 0; qi < r->nqp; qi++) {
		for (int side = 0; side < 2; side++) {
			struct simqp *q = &r->q[qi][side];
			struct dir *out = &r->d[qi][side], *in = &r->d[qi][!side];
			int n;

			while ((n = uroce_cq_poll(q->scq, 32, wc)) > 0)
				for (int k = 0; k < n; k++)
					check_send_wc(r, out, &wc[k]);
			while ((n = uroce_cq_poll(q->rcq, 32, wc)) > 0)
				for (int k = 0; k < n; k++)
					check_recv_wc(r, in, &wc[k]);
			/* receives for what the peer will send */
			while (in->recv_posted < in->nrmsg &&
			       in->recv_posted - in->recv_done < (int)r->c.cap.max_recv_wr &&
			       (!r->lazy_recv || sim_rng_below(&r->rng, 4) == 0))
				post_recv(r, in);
			/* more requests while the send queue has room */
			while (out->next_post < out->nops &&
			       out->next_post - out->retired < (int)r->c.cap.max_send_wr) {
				int rc = post_op(r, out, out->next_post);

				if (rc) {
					fail(r, "qp %d side %d: post of wr %d failed: %d", qi, side,
					     out->next_post, rc);
					out->next_post = out->nops;
					break;
				}
				out->next_post++;
			}
		}
	}
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void final_checks(struct run *r)
{
	for (int side = 0; side < 2; side++) {
		/* FETCH_ADD linearisable: sorted originals chain from the initial value */
		uint64_t fin, *pairs = calloc((size_t)r->nfa[side] * 2 + 2, sizeof(uint64_t));
		int n = r->nfa[side];

		memcpy(&fin, r->atom[side].buf, 8);
		if (fin != fa_init[side] + r->fa_sum[side])
			fail(r, "side %d: FETCH_ADD counter %llu, expected %llu", side,
			     (unsigned long long)fin,
			     (unsigned long long)(fa_init[side] + r->fa_sum[side]));
		for (int i = 0; i < n; i++) {
			pairs[2 * i] = r->fa_res[side][i];
			pairs[2 * i + 1] = r->fa_add[side][i];
		}
		qsort(pairs, (size_t)n, 2 * sizeof(uint64_t), cmp_u64);
		uint64_t v = fa_init[side];

		for (int i = 0; i < n; i++) {
			if (pairs[2 * i] != v) {
				fail(r,
				     "side %d: FETCH_ADD results not linearisable at %d: %llu, "
				     "expected %llu",
				     side, i, (unsigned long long)pairs[2 * i],
				     (unsigned long long)v);
				break;
			}
			v += pairs[2 * i + 1];
		}
		free(pairs);
	}
	for (int qi = 0; qi < r->nqp; qi++) {
		for (int side = 0; side < 2; side++) {
			struct dir *d = &r->d[qi][side];
			int to = !side;
			uint64_t cas;

			if (d->retired != d->nops)
				fail(r, "qp %d dir %d: %d of %d WRs completed (posted %d)", qi,
				     side, d->retired, d->nops, d->next_post);
			if (d->recv_done != d->nrmsg)
				fail(r, "qp %d dir %d: %d of %d receives completed (posted %d)", qi,
				     side, d->recv_done, d->nrmsg, d->recv_posted);
			memcpy(&cas, r->atom[to].buf + d->cas_word, 8);
			if (cas != d->cas_value)
				fail(r, "qp %d dir %d: CMP_SWAP word %#llx, expected %#llx", qi,
				     side, (unsigned long long)cas,
				     (unsigned long long)d->cas_value);
			for (int i = 0; i < d->nops; i++) {
				struct op *o = &d->ops[i];

				if ((o->kind == K_WRITE || o->kind == K_WRITE_IMM) &&
				    memcmp(r->sink[to].buf + o->dst_off,
					   r->src[side].buf + o->src_off, o->len))
					fail(r, "qp %d dir %d: WRITE wr %d (%u bytes) data differs",
					     qi, side, i, o->len);
			}
			if (uroce_qp_state(r->q[qi][side].qp) != UROCE_QPS_RTS)
				fail(r, "qp %d side %d: state %d at the end", qi, side,
				     uroce_qp_state(r->q[qi][side].qp));
		}
	}
	for (int side = 0; side < 2; side++) {
		if (!simmr_guard_ok(&r->src[side]) || !simmr_guard_ok(&r->sink[side]) ||
		    !simmr_guard_ok(&r->atom[side]))
			fail(r, "side %d: write outside a registered region", side);
		if (!sim_pattern_ok(r->src[side].buf, SRC_LEN, 100 + (uint64_t)side))
			fail(r, "side %d: source region changed", side);
		if (r->s.net.node[side].tx_malformed || r->s.net.node[side].bad_av)
			fail(r, "side %d: %llu malformed packets, %llu without route", side,
			     (unsigned long long)r->s.net.node[side].tx_malformed,
			     (unsigned long long)r->s.net.node[side].bad_av);
	}
}

/* The gaps between landing areas must hold the fill byte (nothing wrote outside a target). */
static void check_gaps(struct run *r)
{
	for (int qi = 0; qi < r->nqp; qi++)
		for (int side = 0; side < 2; side++) {
			struct dir *d = &r->d[qi][side];

			for (int i = 0; i < d->nops; i++) {
				struct op *o = &d->ops[i];
				int s = o->kind == K_READ || o->kind == K_FADD || o->kind == K_CSWAP
						? side
						: !side;
				const uint8_t *g = r->sink[s].buf + o->dst_off + o->len;

				for (int k = 0; k < 16; k++)
					if (g[k] != 0xEE) {
						fail(r,
						     "qp %d dir %d: bytes after wr %d's target "
						     "written",
						     qi, side, i);
						break;
					}
			}
		}
}

/* UROCE_SIM_TRACE=n prints the first n frames entering a link (debugging a failed seed). */
static long trace_left;

static void trace_tap(void *arg, const struct sim_pkt_info *pi)
{
	const struct uroce_tpkt *t = pi->t;
	const char *name = uroce_opinfo[t->bth.opcode].name;

	(void)arg;
	if (trace_left <= 0)
		return;
	trace_left--;
	printf("  %10llu ns %d->%d %-32s qp %#x psn %u%s", (unsigned long long)pi->now, pi->src,
	       pi->dst, name ? name : "?", t->bth.dqpn, t->bth.psn, t->bth.ackreq ? " A" : "");
	if (uroce_opinfo[t->bth.opcode].hdrs & UROCE_HDR_AETH)
		printf(" syn %#x msn %u", t->aeth.syndrome, t->aeth.msn);
	if (uroce_opinfo[t->bth.opcode].hdrs & UROCE_HDR_RETH)
		printf(" va %#llx len %u", (unsigned long long)t->reth.va, t->reth.len);
	printf(" payload %u\n", t->payload_len);
}

static int one_run(uint64_t seed, uint32_t loss_ppm, bool verbose)
{
	struct run *r = calloc(1, sizeof(*r));
	struct sim_link_cfg lc;
	int nops;
	uint32_t maxsize;
	enum sim_result res;
	struct timespec t0, t1;

	clock_gettime(CLOCK_MONOTONIC, &t0); /* test bookkeeping only; the simulation is virtual */
	r->seed = seed;
	r->loss_ppm = loss_ppm;
	sim_rng_seed(&r->rng, seed * 1000003 + loss_ppm);
	simqp_cfg_default(&r->c, UROCE_QPT_RC);
	r->c.timeout = 10;
	r->c.retry_cnt = 7;
	r->c.rnr_retry = 7;
	r->c.min_rnr_timer = (uint8_t)(1 + sim_rng_below(&r->rng, 4));
	r->c.mtu = sim_rng_below(&r->rng, 3) ? UROCE_MTU_1024 : UROCE_MTU_4096;
	r->c.cap.max_send_wr = 64 + (uint32_t)sim_rng_below(&r->rng, 3) * 96;
	r->c.cap.max_recv_wr = 64;
	r->c.psn[0] = (uint32_t)sim_rng_below(&r->rng, 1u << 24);
	r->c.psn[1] = 0xFFFFFF - (uint32_t)sim_rng_below(&r->rng, 64); /* wraps */
	r->lazy_recv = sim_rng_below(&r->rng, 3) == 0;
	r->nqp = 1 + (int)sim_rng_below(&r->rng, MAXQP);
	if (loss_ppm >= 200000) {
		nops = 20 + (int)sim_rng_below(&r->rng, 30);
		maxsize = 65536;
	} else if (loss_ppm >= 50000) {
		nops = 30 + (int)sim_rng_below(&r->rng, 50);
		maxsize = 256 * 1024;
	} else {
		nops = 40 + (int)sim_rng_below(&r->rng, 80);
		maxsize = 1u << 20;
	}

	if (getenv("UROCE_SIM_OPS") && atoi(getenv("UROCE_SIM_OPS")) < nops)
		nops = atoi(getenv("UROCE_SIM_OPS")); /* debugging: a shorter workload */
	if (simenv_init(&r->s, seed ^ 0x5EED, 16384, 9000)) {
		fail(r, "simenv_init");
		goto out;
	}
	sim_link_cfg_default(&lc);
	lc.mtu = 9000;
	lc.delay_ns = 2000;
	lc.bandwidth_bps = 25000000000ull;
	lc.loss_ppm = loss_ppm;
	lc.dup_ppm = loss_ppm ? 5000 : 0;
	lc.reorder_ppm = loss_ppm ? 5000 : 0;
	lc.reorder_max_ns = 20000;
	lc.corrupt_ppm = loss_ppm ? 2000 : 0;
	sim_link_set_all(&r->s.net, &lc);

	for (int qi = 0; qi < r->nqp; qi++)
		for (int side = 0; side < 2; side++) {
			struct dir *d = &r->d[qi][side];

			d->qpi = qi;
			d->from = side;
			d->cas_word = 8 + 8 * (uint64_t)(qi * 2 + side);
			d->cas_value = 0x1000 + (uint64_t)qi * 16 + (uint64_t)side;
		}
	for (int qi = 0; qi < r->nqp; qi++)
		for (int side = 0; side < 2; side++)
			gen_dir(r, &r->d[qi][side], nops, maxsize);
	for (int side = 0; side < 2; side++) {
		unsigned acc = UROCE_ACCESS_LOCAL_WRITE | UROCE_ACCESS_REMOTE_WRITE |
			       UROCE_ACCESS_REMOTE_READ | UROCE_ACCESS_REMOTE_ATOMIC;

		r->sink_len[side] = r->sink_used[side] + 64;
		if (simmr_reg(&r->s, side, SRC_LEN, acc, &r->src[side]) ||
		    simmr_reg(&r->s, side, r->sink_len[side], acc, &r->sink[side]) ||
		    simmr_reg(&r->s, side, ATOM_LEN, acc, &r->atom[side])) {
			fail(r, "memory registration");
			goto out;
		}
		sim_pattern(r->src[side].buf, SRC_LEN, 100 + (uint64_t)side);
		memset(r->sink[side].buf, 0xEE, r->sink_len[side]);
		memset(r->atom[side].buf, 0, ATOM_LEN);
		memcpy(r->atom[side].buf, &fa_init[side], 8);
		r->fa_res[side] = calloc((size_t)nops * MAXQP + 1, 8);
		r->fa_add[side] = calloc((size_t)nops * MAXQP + 1, 8);
	}
	for (int qi = 0; qi < r->nqp; qi++)
		for (int side = 0; side < 2; side++) {
			struct dir *d = &r->d[qi][side];

			memcpy(r->atom[!side].buf + d->cas_word,
			       &(uint64_t){0x1000 + (uint64_t)qi * 16 + (uint64_t)side}, 8);
		}
	for (int qi = 0; qi < r->nqp; qi++) {
		for (int side = 0; side < 2; side++)
			if (simqp_create(&r->s, side, &r->c, 1024, NULL, &r->q[qi][side])) {
				fail(r, "QP creation");
				goto out;
			}
		if (simqp_connect(&r->s, &r->q[qi][0], &r->q[qi][1], &r->c)) {
			fail(r, "QP connection");
			goto out;
		}
	}
	if (getenv("UROCE_SIM_TRACE")) {
		trace_left = strtol(getenv("UROCE_SIM_TRACE"), NULL, 0);
		r->s.net.tap = trace_tap;
	}
	/* A generous frame budget (healthy runs use at most about a quarter of it): go-back-N at
	 * 20 % loss resends a 64-packet message some 16 times over; a storm needs far more. */
	uint64_t pkts = 0;

	for (int qi = 0; qi < r->nqp; qi++)
		for (int side = 0; side < 2; side++)
			for (int i = 0; i < r->d[qi][side].nops; i++)
				pkts += 2 + r->d[qi][side].ops[i].len / 1024;
	r->s.net.frame_budget = 250 * pkts + 50000;
	r->s.net.step = step;
	r->s.net.step_arg = r;
	res = sim_run(&r->s.net, 600 * SEC);
	if (res != SIM_QUIESCENT)
		fail(r, "simulation ended %s at %llu ns%s%s", sim_result_name(res),
		     (unsigned long long)r->s.net.now, r->s.net.stuck_reason ? ": " : "",
		     r->s.net.stuck_reason ? r->s.net.stuck_reason : "");
	final_checks(r);
	check_gaps(r);
out:;
	struct sim_link_stats st;

	sim_stats_total(&r->s.net, &st);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	double ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;

	if (verbose || r->fails)
		printf("seed %llu loss %.1f%%: %d QPs, %d ops/dir, mtu %u, %s: %llu frames, %llu "
		       "lost, "
		       "%llu dup, %llu corrupt, %.0f%% of the frame budget, virtual %.3f ms, real "
		       "%.0f ms%s%s\n",
		       (unsigned long long)seed, loss_ppm / 1e4, r->nqp, nops,
		       uroce_mtu_bytes(r->c.mtu), r->lazy_recv ? "lazy receives" : "receives ahead",
		       (unsigned long long)st.sent, (unsigned long long)(st.lost + st.filtered),
		       (unsigned long long)st.duplicated, (unsigned long long)st.corrupted,
		       r->s.net.frame_budget
			       ? 100.0 * (double)st.sent / (double)r->s.net.frame_budget
			       : 0.0,
		       (double)r->s.net.now / 1e6, ms, r->fails ? " FAIL: " : "",
		       r->fails ? r->why : "");
	if (r->fails) {
		printf("  replay: UROCE_SIM_SEED=%llu UROCE_SIM_LOSS=%g (%d failures)\n",
		       (unsigned long long)seed, loss_ppm / 1e4, r->fails);
		sim_stats_print(&r->s.net, stdout);
		if (getenv("UROCE_SIM_VERBOSE"))
			sim_trace_print(&r->s.net, stdout);
	}
	if (st.corrupt_accepted > st.corrupted - st.corrupt_covered)
		fail(r, "a corrupted frame the ICRC covers was accepted");
	int fails = r->fails;

	for (int qi = 0; qi < r->nqp; qi++)
		for (int side = 0; side < 2; side++) {
			simqp_destroy(&r->q[qi][side]);
			free(r->d[qi][side].ops);
			free(r->d[qi][side].rmsg);
			free(r->d[qi][side].recv_slack);
		}
	for (int side = 0; side < 2; side++) {
		simmr_free(&r->src[side]);
		simmr_free(&r->sink[side]);
		simmr_free(&r->atom[side]);
		free(r->fa_res[side]);
		free(r->fa_add[side]);
	}
	simenv_fini(&r->s);
	free(r);
	return fails;
}

int main(void)
{
	static const uint32_t losses[] = {0, 10000, 50000, 200000};
	const char *e_seed = getenv("UROCE_SIM_SEED");
	const char *e_seeds = getenv("UROCE_SIM_SEEDS");
	const char *e_loss = getenv("UROCE_SIM_LOSS");
	bool verbose = getenv("UROCE_SIM_VERBOSE") != NULL;
	uint64_t first = 1, last = e_seeds ? strtoull(e_seeds, NULL, 0) : 20;
	int failed_runs = 0, runs = 0;

	if (e_seed)
		first = last = strtoull(e_seed, NULL, 0);
	for (uint64_t seed = first; seed <= last; seed++) {
		for (size_t li = 0; li < sizeof(losses) / sizeof(losses[0]); li++) {
			uint32_t loss = losses[li];

			if (e_loss && (uint32_t)(strtod(e_loss, NULL) * 1e4 + 0.5) != loss)
				continue;
			runs++;
			int f = one_run(seed, loss, verbose);

			CHECKF(f == 0, "seed %llu loss %g%%", (unsigned long long)seed, loss / 1e4);
			if (f)
				failed_runs++;
		}
	}
	printf("sim_random: %d runs, %d failed\n", runs, failed_runs);
	return check_exit("sim_random");
}
