/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for the transport engine: arbitrary packet sequences (format in
 * fuzz_engine.h) fed to the responder and the completer of an RC QP pair in RTS that has work
 * outstanding (and to a UC pair and a UD QP beside it), interleaved with transmission and
 * timers. Registered regions sit between guard areas (poisoned under ASan, canary-checked
 * always); any write outside them, any crash, a nonsensical completion, or a QP that no longer
 * answers its legitimate peer (liveness.h) aborts.
 */
#include "fuzz_engine.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "liveness.h"
#include "simenv.h"
#include "wire/bytes.h"
#include "wire/opcode.h"

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FUZZ_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define FUZZ_ASAN 1
#endif
#ifdef FUZZ_ASAN
#include <sanitizer/asan_interface.h>
#define POISON(p, n)   ASAN_POISON_MEMORY_REGION(p, n)
#define UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION(p, n)
#else
#define POISON(p, n)   ((void)(p), (void)(n))
#define UNPOISON(p, n) ((void)(p), (void)(n))
#endif

#define A	 0
#define B	 1
#define MR_LEN	 (64 * 1024)
#define MAX_PKT	 8192
#define RECV_LEN 4096
#define NRECV	 8
#define NSIGNALED 6 /* A's signaled work requests, wr_id 1 .. 6 */
/* Where the liveness probes write and receive, at the end of each RC/UC region. */
#define PROBE_RC      (MR_LEN - 64)
#define PROBE_UC      (MR_LEN - 48)
#define PROBE_RC_RECV (MR_LEN - 32)
#define PROBE_UC_RECV (MR_LEN - 16)

struct fz {
	struct simenv s;
	struct simqp_cfg c;
	struct simqp q[2]; /* RC pair */
	struct simqp ud;   /* UD QP on B */
	struct simqp uc[2]; /* UC pair */
	struct simmr m[2];
	struct simmr mud;
	struct live_set live;
	unsigned a_done; /* bit i: A's wr_id i completed */
};

static void fz_abort(const char *why)
{
	fprintf(stderr, "fuzz_engine: %s\n", why);
	abort();
}

static void links(struct fz *f, bool up)
{
	f->s.net.cfg[A][B].down = !up;
	f->s.net.cfg[B][A].down = !up;
}

static void guard_poison(struct simmr *m, bool on)
{
	if (on) {
		POISON(m->base, SIMMR_GUARD);
		POISON(m->buf + m->len, SIMMR_GUARD);
	} else {
		UNPOISON(m->base, SIMMR_GUARD);
		UNPOISON(m->buf + m->len, SIMMR_GUARD);
	}
}

static void check_wc(struct fz *f, const struct uroce_wc *wc);

static void live_wc(void *arg, const struct uroce_wc *wc)
{
	check_wc(arg, wc);
}

/* The QPs the liveness invariant watches: RC on both nodes, UC and UD on B. */
static void live_setup(struct fz *f)
{
	live_init(&f->live, &f->s.net);
	f->live.on_wc = live_wc;
	f->live.on_wc_arg = f;
	for (int i = 0; i < 2; i++)
		live_add_conn(&f->live, &f->q[i], &f->m[i], PROBE_RC, PROBE_RC_RECV);
	live_add_conn(&f->live, &f->uc[B], &f->m[B], PROBE_UC, PROBE_UC_RECV);
	live_add_ud(&f->live, &f->ud, 0x99, &f->mud);
}

/* The pair, its regions, receives on B, and work outstanding on A. */
static int fz_setup(struct fz *f, bool up)
{
	struct simqp_cfg uc, ucc;
	struct uroce_qp_attr a;

	memset(f, 0, sizeof(*f));
	if (simenv_init(&f->s, 1, 512, 4200))
		return -ENOMEM;
	links(f, up);
	simqp_cfg_default(&f->c, UROCE_QPT_RC);
	f->c.timeout = 8;
	f->c.max_rd_atomic = 4;
	f->c.cap.max_send_wr = 32;
	f->c.cap.max_recv_wr = 32;
	f->c.cap.max_inline_data = 64;
	for (int i = 0; i < 2; i++) {
		if (simqp_create(&f->s, i, &f->c, 64, NULL, &f->q[i]) ||
		    simmr_reg(&f->s, i, MR_LEN, f->c.access, &f->m[i]))
			return -ENOMEM;
		sim_pattern(f->m[i].buf, MR_LEN, (uint64_t)i + 1);
	}
	if (simqp_connect(&f->s, &f->q[A], &f->q[B], &f->c))
		return -EINVAL;
	simqp_cfg_default(&ucc, UROCE_QPT_UC);
	ucc.cap = f->c.cap;
	ucc.access = UROCE_ACCESS_LOCAL_WRITE | UROCE_ACCESS_REMOTE_WRITE;
	for (int i = 0; i < 2; i++)
		if (simqp_create(&f->s, i, &ucc, 64, NULL, &f->uc[i]))
			return -ENOMEM;
	if (simqp_connect(&f->s, &f->uc[A], &f->uc[B], &ucc))
		return -EINVAL;
	for (int i = 0; i < 4; i++)
		sim_post_recv1(f->uc[B].qp, 300 + (uint64_t)i, &f->m[B],
			       (size_t)(NRECV + i) * RECV_LEN, RECV_LEN);
	simqp_cfg_default(&uc, UROCE_QPT_UD);
	uc.cap = f->c.cap;
	if (simqp_create(&f->s, B, &uc, 64, NULL, &f->ud) ||
	    simmr_reg(&f->s, B, 4 * (RECV_LEN + 40), UROCE_ACCESS_LOCAL_WRITE, &f->mud))
		return -ENOMEM;
	if (simqp_to_init(&f->ud, &uc))
		return -EINVAL;
	memset(&a, 0, sizeof(a));
	a.qp_state = UROCE_QPS_RTR;
	if (uroce_qp_modify(f->ud.qp, &a, UROCE_QP_STATE))
		return -EINVAL;
	if (simqp_to_rts(&f->ud, 0x42, &uc))
		return -EINVAL;
	for (int i = 0; i < 4; i++)
		sim_post_recv1(f->ud.qp, 200 + (uint64_t)i, &f->mud, (size_t)i * (RECV_LEN + 40),
			       RECV_LEN + 40);
	for (int i = 0; i < NRECV; i++)
		sim_post_recv1(f->q[B].qp, 100 + (uint64_t)i, &f->m[B], (size_t)i * RECV_LEN,
			       RECV_LEN);
	/* A: one of each operation, so responses to A have something to complete */
	sim_post_send1(f->q[A].qp, 1, UROCE_WR_SEND, &f->m[A], 0, 3000, UROCE_SEND_SIGNALED);
	sim_post_write(f->q[A].qp, 2, UROCE_WR_RDMA_WRITE, &f->m[A], 100, 2000,
		       simmr_va(&f->m[B], 40000), f->m[B].rkey, UROCE_SEND_SIGNALED, 0);
	sim_post_write(f->q[A].qp, 3, UROCE_WR_RDMA_READ, &f->m[A], 8192, 5000,
		       simmr_va(&f->m[B], 50000), f->m[B].rkey, UROCE_SEND_SIGNALED, 0);
	sim_post_atomic(f->q[A].qp, 4, UROCE_WR_ATOMIC_FETCH_AND_ADD, &f->m[A], 16384,
			simmr_va(&f->m[B], 60000), f->m[B].rkey, 5, 0, UROCE_SEND_SIGNALED);
	sim_post_atomic(f->q[A].qp, 5, UROCE_WR_ATOMIC_CMP_AND_SWP, &f->m[A], 16392,
			simmr_va(&f->m[B], 60008), f->m[B].rkey, 0, 7, UROCE_SEND_SIGNALED);
	sim_post_write(f->q[A].qp, 6, UROCE_WR_RDMA_WRITE_WITH_IMM, &f->m[A], 200, 1500,
		       simmr_va(&f->m[B], 30000), f->m[B].rkey, UROCE_SEND_SIGNALED, 0x99);
	sim_post_send1(f->q[A].qp, 7, UROCE_WR_SEND_WITH_IMM, &f->m[A], 0, 10, 0);
	for (int i = 0; i < 2; i++)
		guard_poison(&f->m[i], true);
	guard_poison(&f->mud, true);
	live_setup(f);
	return 0;
}

static void check_wc(struct fz *f, const struct uroce_wc *wc)
{
	if (getenv("UROCE_FUZZ_VERBOSE"))
		fprintf(stderr, "  wc qp %#x wr_id %llu status %s opcode %d len %u\n", wc->qp_num,
			(unsigned long long)wc->wr_id, sim_wc_status_name(wc->status), wc->opcode,
			wc->byte_len);
	if ((unsigned)wc->status > UROCE_WC_GENERAL_ERR)
		fz_abort("completion with an unknown status");
	if (wc->status == UROCE_WC_SUCCESS && (wc->opcode & UROCE_WC_RECV) &&
	    wc->opcode != UROCE_WC_RECV_RDMA_WITH_IMM && wc->byte_len > RECV_LEN + 40)
		fz_abort("receive longer than its buffer");
	for (int i = 0; i < f->live.n; i++)
		if (wc->status != UROCE_WC_SUCCESS && wc->qp_num == uroce_qp_num(f->live.q[i].qp))
			f->live.q[i].err_wc_seen = true;
	if (f->q[A].qp && wc->qp_num == uroce_qp_num(f->q[A].qp) && !(wc->opcode & UROCE_WC_RECV) &&
	    wc->wr_id >= 1 && wc->wr_id <= 7) {
		if (f->a_done & 1u << wc->wr_id)
			fz_abort("a work request completed twice");
		f->a_done |= 1u << wc->wr_id;
	}
}

static void check_cq(struct fz *f, struct uroce_cq *cq)
{
	struct uroce_wc wc[16];
	int n;

	while ((n = uroce_cq_poll(cq, 16, wc)) > 0)
		for (int i = 0; i < n; i++)
			check_wc(f, &wc[i]);
}

static void check_all_cqs(struct fz *f)
{
	for (int i = 0; i < 2; i++) {
		if (f->q[i].qp) {
			check_cq(f, f->q[i].scq);
			check_cq(f, f->q[i].rcq);
		}
		if (f->uc[i].qp) {
			check_cq(f, f->uc[i].scq);
			check_cq(f, f->uc[i].rcq);
		}
	}
	if (f->ud.qp)
		check_cq(f, f->ud.rcq);
}

/*
 * The invariant after the records and after the timers: every watched QP answers its peer
 * (liveness.h), and A's requester, while a signaled request of it has not completed, has a
 * packet to send or a timer running (its retries are infinite, retry_cnt 7, and the links are
 * down: it must keep trying).
 */
static void check_live(struct fz *f, const char *when)
{
	char why[256];

	check_all_cqs(f);
	if (live_check(&f->live, why, sizeof(why))) {
		fprintf(stderr, "fuzz_engine: %s: %s\n", when, why);
		fz_abort("a QP no longer answers its peer");
	}
	check_all_cqs(f);
	unsigned all = ((1u << NSIGNALED) - 1) << 1;

	if (uroce_qp_state(f->q[A].qp) == UROCE_QPS_RTS && (f->a_done & all) != all &&
	    !uroce_eng_tx_pending(f->s.eng[A]) &&
	    uroce_eng_next_deadline(f->s.eng[A]) == UROCE_NEVER) {
		fprintf(stderr, "fuzz_engine: %s: completed %#x\n", when, f->a_done);
		fz_abort("the requester has work outstanding and no timer");
	}
}

static void fz_teardown(struct fz *f)
{
	for (int i = 0; i < 2; i++)
		guard_poison(&f->m[i], false);
	guard_poison(&f->mud, false);
	for (int i = 0; i < 2; i++)
		if (!simmr_guard_ok(&f->m[i]))
			fz_abort("write outside a registered region");
	if (!simmr_guard_ok(&f->mud))
		fz_abort("write outside the UD region");
	check_all_cqs(f);
	simqp_destroy(&f->q[A]);
	simqp_destroy(&f->q[B]);
	simqp_destroy(&f->ud);
	simqp_destroy(&f->uc[A]);
	simqp_destroy(&f->uc[B]);
	simmr_free(&f->m[A]);
	simmr_free(&f->m[B]);
	simmr_free(&f->mud);
	simenv_fini(&f->s);
}

/* Where the RETH or AtomicETH of an opcode starts, or 0. */
static uint32_t va_hdr_off(uint8_t op)
{
	unsigned h = uroce_opinfo[op].hdrs;

	if (!(h & (UROCE_HDR_RETH | UROCE_HDR_ATMETH)))
		return 0;
	return UROCE_BTH_LEN + (h & UROCE_HDR_DETH ? UROCE_DETH_LEN : 0) +
	       (h & UROCE_HDR_FETH ? UROCE_FETH_LEN : 0);
}

static void feed(struct fz *f, uint8_t ctl, uint8_t *p, uint32_t len)
{
	int to = ctl & FUZZ_TO_A ? A : B;
	int from = !to;
	struct uroce_qp *qp = to == B && (ctl & FUZZ_UD) ? f->ud.qp
			      : ctl & FUZZ_UC		 ? f->uc[to].qp
							 : f->q[to].qp;
	struct simmr *m = &f->m[to];
	struct uroce_rx_pkt rx;

	if (len >= UROCE_BTH_LEN) {
		if (ctl & FUZZ_FIX_QPN)
			uroce_put_be24(p + 5, uroce_qp_num(qp));
		if (ctl & FUZZ_FIX_PSN) {
			/* A expects responses from its own first PSN; B requests from A's */
			uint32_t base = f->c.psn[0];

			uroce_put_be24(p + 9, (base + uroce_get_be24(p + 9) % 8) & 0xFFFFFF);
		}
		uint32_t off = va_hdr_off(p[0]);

		if ((ctl & FUZZ_FIX_RKEY) && off && len >= off + 12) {
			uint64_t va = uroce_get_be64(p + off);

			uroce_put_be64(p + off, m->iova + va % m->len);
			uroce_put_be32(p + off + 8, m->rkey);
		}
	}
	memset(&rx, 0, sizeof(rx));
	rx.data = p;
	rx.len = len;
	rx.encap = UROCE_ENCAP_V2_IPV4;
	sim_node_gid(&f->s.net, from, rx.sgid);
	sim_node_gid(&f->s.net, to, rx.dgid);
	rx.grh[20] = 0x45;
	rx.grh[29] = 17;
	memcpy(rx.grh + 32, rx.sgid + 12, 4);
	memcpy(rx.grh + 36, rx.dgid + 12, 4);
	rx.sgid_index = SIM_GID_INDEX;
	rx.ecn_ce = ctl & FUZZ_ECN;
	uroce_eng_rx(f->s.eng[to], f->s.net.now, &rx);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz *f = malloc(sizeof(*f));

	if (!f)
		return 0;
	if (fz_setup(f, false)) {
		fz_teardown(f);
		free(f);
		return 0;
	}
	sim_run_for(&f->s.net, 0); /* A's requests go out (and are lost) */
	for (int rec = 0; size >= 4 && rec < 256; rec++) {
		uint8_t ctl = data[0], dt = data[1];
		uint32_t len = (uint32_t)data[2] | (uint32_t)data[3] << 8;

		data += 4;
		size -= 4;
		if (len > size)
			len = (uint32_t)size;
		if (len > MAX_PKT)
			len = MAX_PKT;
		/* an exact-size copy: ASan catches any read past the packet */
		uint8_t *p = malloc(len ? len : 1);

		if (len)
			memcpy(p, data, len);
		data += len;
		size -= len;
		feed(f, ctl, p, len);
		free(p);
		if (ctl & FUZZ_LOOPBACK) {
			links(f, true);
			sim_run_for(&f->s.net, 100000);
			links(f, false);
		} else {
			sim_run_for(&f->s.net, (uint64_t)dt << 10);
		}
		check_all_cqs(f);
	}
	check_live(f, "after the records");
	/* every timer: retries and RNR waits, their packets lost */
	sim_run_for(&f->s.net, 50000000);
	check_live(f, "after the timers");
	fz_teardown(f);
	free(f);
	return 0;
}

/* ---- seed corpus ------------------------------------------------------------------------ */

struct capture {
	struct fz *f;
	uint8_t *buf;
	size_t len, cap;
	int only_to; /* -1: both */
};

/* Record every frame as an input record, RETH/AtomicETH VAs made offsets (FUZZ_FIX_RKEY). */
static void cap_tap(void *arg, const struct sim_pkt_info *pi)
{
	struct capture *c = arg;
	const uint8_t *roce = pi->frame + UROCE_ETH_LEN + UROCE_IPV4_LEN + UROCE_UDP_LEN;
	uint32_t len = pi->len - (uint32_t)(roce - pi->frame);
	uint8_t ctl = (uint8_t)(pi->dst == A ? FUZZ_TO_A : 0);
	uint32_t off = va_hdr_off(roce[0]);

	if (c->only_to >= 0 && pi->dst != c->only_to)
		return;
	if (c->len + 4 + len > c->cap)
		return;
	uint8_t *r = c->buf + c->len;

	r[0] = ctl;
	r[1] = 1;
	r[2] = (uint8_t)len;
	r[3] = (uint8_t)(len >> 8);
	memcpy(r + 4, roce, len);
	if (off) {
		const struct simmr *m = &c->f->m[pi->dst];

		r[0] |= FUZZ_FIX_RKEY;
		uroce_put_be64(r + 4 + off, uroce_get_be64(r + 4 + off) - m->iova);
	}
	c->len += 4 + len;
}

static int write_file(const char *dir, const char *name, const uint8_t *p, size_t n)
{
	char path[1024];
	FILE *fp;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fp = fopen(path, "wb");
	if (!fp)
		return -errno;
	if (fwrite(p, 1, n, fp) != n) {
		fclose(fp);
		return -EIO;
	}
	return fclose(fp) ? -EIO : 0;
}

#define MAXREC 512

/* Capture one lossless exchange, then write variants of it: subsets, one record dropped or
 * duplicated. Engine behaviour under loss is then the replaying engine's own. */
static int capture_variants(const char *dir)
{
	struct fz *f = malloc(sizeof(*f));
	struct capture c = {.f = f, .cap = 1 << 20, .only_to = -1};
	size_t off[MAXREC], rl[MAXREC];
	int nrec = 0, rc = 0, n = 0;
	uint8_t *out;

	c.buf = malloc(c.cap);
	out = malloc(c.cap * 2);
	if (!f || !c.buf || !out || fz_setup(f, true)) {
		free(c.buf);
		free(out);
		free(f);
		return -ENOMEM;
	}
	f->s.net.tap = cap_tap;
	f->s.net.tap_arg = &c;
	sim_run_for(&f->s.net, 20000000);
	f->s.net.tap = NULL;
	for (size_t o = 0; o + 4 <= c.len && nrec < MAXREC; nrec++) {
		off[nrec] = o;
		rl[nrec] = 4 + ((size_t)c.buf[o + 2] | (size_t)c.buf[o + 3] << 8);
		o += rl[nrec];
	}
	/* variant: which records, each written dup + 1 times (0: dropped) */
	struct {
		const char *name;
		int to;	     /* -1 both, else only records to this node */
		int drop_op; /* drop the first record with this opcode */
		int dup_op;  /* duplicate the first record with this opcode */
	} v[] = {
		{"rc-all-ops", -1, -1, -1},
		{"rc-requests-only", B, -1, -1},
		{"rc-responses-only", A, -1, -1},
		{"rc-lost-send-middle", -1, UROCE_OP_RC_SEND_MIDDLE, -1},
		{"rc-lost-read-middle", -1, UROCE_OP_RC_READ_RESP_MIDDLE, -1},
		{"rc-lost-ack", -1, UROCE_OP_RC_ACK, -1},
		{"rc-dup-fetch-add", -1, -1, UROCE_OP_RC_FETCH_ADD},
		{"rc-dup-write-first", -1, -1, UROCE_OP_RC_WRITE_FIRST},
	};
	for (size_t k = 0; k < sizeof(v) / sizeof(v[0]) && !rc; k++) {
		size_t len = 0;
		bool dropped = false, duped = false;

		for (int i = 0; i < nrec; i++) {
			const uint8_t *r = c.buf + off[i];
			int dst = r[0] & FUZZ_TO_A ? A : B;
			int op = r[4];
			int times = 1;

			if (v[k].to >= 0 && dst != v[k].to)
				times = 0;
			if (!dropped && op == v[k].drop_op) {
				dropped = true;
				times = 0;
			}
			if (!duped && op == v[k].dup_op) {
				duped = true;
				times = 2;
			}
			for (int t = 0; t < times; t++) {
				memcpy(out + len, r, rl[i]);
				len += rl[i];
			}
		}
		rc = write_file(dir, v[k].name, out, len);
		n++;
	}
	fz_teardown(f);
	free(f);
	free(c.buf);
	free(out);
	return rc ? rc : n;
}

static int ud_file(const char *dir)
{
	struct uroce_tpkt t;
	uint8_t buf[256];
	size_t n = 0;

	for (int i = 0; i < 3; i++) {
		uint8_t *r = buf + n;
		int hl;

		memset(&t, 0, sizeof(t));
		t.bth.opcode = i == 1 ? UROCE_OP_UD_SEND_ONLY_IMM : UROCE_OP_UD_SEND_ONLY;
		t.bth.pkey = 0xFFFF;
		t.bth.psn = (uint32_t)i;
		t.deth.qkey = i == 2 ? 0x22222222 : 0x11111111; /* the last one: wrong Q_Key */
		t.deth.src_qp = 0x99;
		t.imm = 0x12345678;
		t.payload_len = 20;
		hl = uroce_tpkt_hdr_encode(r + 4, sizeof(buf) - n - 4, &t);
		if (hl < 0)
			return hl;
		memset(r + 4 + hl, 0x5A, 20);
		memset(r + 4 + hl + 20, 0, 4); /* ICRC (not checked by the engine) */
		r[0] = FUZZ_UD | FUZZ_FIX_QPN;
		r[1] = 1;
		r[2] = (uint8_t)(hl + 24);
		r[3] = 0;
		n += 4 + (size_t)hl + 24;
	}
	return write_file(dir, "ud-sends", buf, n);
}

int fuzz_engine_make_corpus(const char *dir)
{
	int rc, n = 0;

	rc = capture_variants(dir);
	if (rc < 0)
		return rc;
	n = rc;
	rc = ud_file(dir);
	if (rc)
		return rc;
	n++;
	return n;
}
