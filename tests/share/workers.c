/* SPDX-License-Identifier: MIT */
/* Worker processes on one device, driven over a socketpair (workers.h). */
#include <errno.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "workers.h"
#include "../wr.h"
#include "host/config/io_counters.h"
#include "host/io/share_members.h"

void workers_checks(long *count, int *failures)
{
	*count = check_count;
	*failures = check_failures;
}

struct worker *W;
const char *w_dev = "uroce_lo";
enum uroce_gid_type w_gtype = UROCE_GID_V2;

static void on_event(void *arg, const struct uroce_event *ev)
{
	uint64_t one = 1;

	(void)arg;
	if (ev->type == UROCE_EVENT_COMP && write(W->evfd, &one, 8) != 8)
		abort();
}

static void fill(uint8_t *p, uint32_t len, uint32_t seed)
{
	for (uint32_t i = 0; i < len; i++)
		p[i] = (uint8_t)(i * 131 + seed * 7 + (i >> 8));
}

int same(const uint8_t *p, uint32_t len, uint32_t seed)
{
	for (uint32_t i = 0; i < len; i++)
		if (p[i] != (uint8_t)(i * 131 + seed * 7 + (i >> 8)))
			return 0;
	return 1;
}

int wait_wc(struct uroce_ctx *c, struct uroce_cq *cq, uint32_t *blen)
{
	for (int i = 0; i < 50; i++) {
		struct uroce_wc wc;

		uroce_ctx_lock(c);
		int n = uroce_cq_poll(cq, 1, &wc);

		if (n == 0) {
			uroce_cq_req_notify(cq, false);
			n = uroce_cq_poll(cq, 1, &wc);
		}
		uroce_ctx_unlock(c);
		if (n == 1) {
			if (blen)
				*blen = wc.byte_len;
			return (int)wc.status;
		}
		struct pollfd p = {.fd = W->evfd, .events = POLLIN};
		uint64_t v;

		if (poll(&p, 1, 100) > 0 && read(W->evfd, &v, 8) != 8)
			return -EIO;
	}
	return -ETIMEDOUT;
}

int w_open(int k)
{
	struct uroce_ctx_cfg cfg = {.on_event = on_event};
	struct uroce_gid_entry g[64];
	int rc = uroce_ctx_open(w_dev, &cfg, &W->ctx[k]);

	if (rc)
		return rc;
	int n = uroce_ctx_gids(W->ctx[k], g, 64);

	W->gid_idx[k] = -1;
	for (int i = 0; i < n; i++)
		if (g[i].ipv4 && g[i].type == w_gtype) {
			W->gid_idx[k] = i;
			memcpy(W->gid[k], g[i].gid, 16);
		}
	if (W->gid_idx[k] < 0)
		return -EADDRNOTAVAIL;
	uroce_ctx_lock(W->ctx[k]);
	rc = uroce_pd_alloc(uroce_ctx_eng(W->ctx[k]), &W->pd[k]);
	uroce_ctx_unlock(W->ctx[k]);
	return rc;
}

int w_qp(int k, int c, struct rep *r)
{
	struct uroce_ctx *x = W->ctx[c];
	struct uroce_eng *e = uroce_ctx_eng(x);
	int rc;

	W->q[k].c = c;
	uroce_ctx_lock(x);
	rc = uroce_cq_create(e, 64, NULL, &W->q[k].scq);
	rc = rc ? rc : uroce_cq_create(e, 64, NULL, &W->q[k].rcq);
	rc = rc ? rc
		: uroce_mr_reg(W->pd[c], W->mem[k], WMEM, (uintptr_t)W->mem[k], 15, &W->q[k].mr);
	if (rc == 0) {
		struct uroce_qp_init init = {.type = UROCE_QPT_RC,
					     .send_cq = W->q[k].scq,
					     .recv_cq = W->q[k].rcq,
					     .cap = {16, 16, 1, 1, 0}};

		rc = uroce_qp_create(W->pd[c], &init, &W->q[k].qp);
	}
	if (rc == 0) {
		r->qpn = uroce_qp_num(W->q[k].qp);
		r->rkey = uroce_mr_rkey(W->q[k].mr);
		r->addr = (uintptr_t)W->mem[k];
	}
	uroce_ctx_unlock(x);
	return rc;
}

int w_connect(int k, uint32_t dqpn)
{
	int c = W->q[k].c;
	struct uroce_ctx *x = W->ctx[c];
	struct uroce_qp *qp = W->q[k].qp;
	struct uroce_qp_attr a = {.qp_state = UROCE_QPS_INIT, .port_num = 1, .qp_access_flags = 15};
	int rc;

	uroce_ctx_lock(x);
	rc = uroce_qp_modify(qp, &a,
			     UROCE_QP_STATE | UROCE_QP_PKEY_INDEX | UROCE_QP_PORT |
				     UROCE_QP_ACCESS_FLAGS);
	a.qp_state = UROCE_QPS_RTR;
	a.path_mtu = UROCE_MTU_1024;
	a.dest_qp_num = dqpn;
	a.rq_psn = 100;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 1;
	a.av.is_global = true;
	a.av.sgid_index = (uint8_t)W->gid_idx[c];
	a.av.hop_limit = 1;
	memcpy(a.av.dgid, W->gid[c], 16); /* the peer is on this host, this address */
	rc = rc ? rc
		: uroce_qp_modify(qp, &a,
				  UROCE_QP_STATE | UROCE_QP_AV | UROCE_QP_PATH_MTU |
					  UROCE_QP_DEST_QPN | UROCE_QP_RQ_PSN |
					  UROCE_QP_MAX_DEST_RD_ATOMIC | UROCE_QP_MIN_RNR_TIMER);
	a.qp_state = UROCE_QPS_RTS;
	a.sq_psn = 100;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 1;
	rc = rc ? rc
		: uroce_qp_modify(qp, &a,
				  UROCE_QP_STATE | UROCE_QP_SQ_PSN | UROCE_QP_TIMEOUT |
					  UROCE_QP_RETRY_CNT | UROCE_QP_RNR_RETRY |
					  UROCE_QP_MAX_QP_RD_ATOMIC);
	uroce_ctx_unlock(x);
	return rc;
}

int w_post(const struct cmd *m)
{
	int k = m->qp;
	struct uroce_ctx *x = W->ctx[W->q[k].c];
	int rc;

	if (m->op == OP_RECV) {
		struct uroce_sge s = wr_sge((uintptr_t)W->mem[k] + RX_OFF, m->len,
					    uroce_mr_lkey(W->q[k].mr));
		struct uroce_recv_wr wr = wr_recv(1, &s, 1), *bad;

		memset(W->mem[k] + RX_OFF, 0, m->len);
		uroce_ctx_lock(x);
		rc = uroce_post_recv(W->q[k].qp, &wr, &bad);
		uroce_ctx_unlock(x);
		return rc;
	}
	uint32_t off = m->op == OP_SEND ? TX_OFF : WS_OFF;
	struct uroce_sge s = wr_sge((uintptr_t)W->mem[k] + off, m->len, uroce_mr_lkey(W->q[k].mr));
	struct uroce_send_wr wr = m->op == OP_SEND
					  ? wr_send(2, &s, 1, UROCE_SEND_SIGNALED)
					  : wr_write(2, &s, 1, m->raddr, m->rkey, UROCE_SEND_SIGNALED),
			     *bad;
	fill(W->mem[k] + off, m->len, m->seed);
	uroce_ctx_lock(x);
	rc = uroce_post_send(W->q[k].qp, &wr, &bad);
	uroce_ctx_unlock(x);
	if (rc)
		return rc;
	uroce_ctx_kick(x);
	return wait_wc(x, W->q[k].scq, NULL);
}

static void worker_main(int sk)
{
	struct cmd m;
	struct rep r;

	W = calloc(1, sizeof(*W));
	W->evfd = eventfd(0, EFD_NONBLOCK);
	while (read(sk, &m, sizeof(m)) == (ssize_t)sizeof(m)) {
		memset(&r, 0, sizeof(r));
		switch (m.op) {
		case OP_OPEN:
			r.rc = w_open(m.c);
			break;
		case OP_QP:
			r.rc = w_qp(m.qp, m.c, &r);
			break;
		case OP_CONNECT:
			r.rc = w_connect(m.qp, m.qpn);
			break;
		case OP_RECV:
		case OP_SEND:
		case OP_WRITE:
			r.rc = w_post(&m);
			break;
		case OP_WAIT_RECV: {
			uint32_t blen = 0;

			r.rc = wait_wc(W->ctx[W->q[m.qp].c], W->q[m.qp].rcq, &blen);
			if (r.rc == 0 &&
			    (blen != m.len || !same(W->mem[m.qp] + RX_OFF, m.len, m.seed)))
				r.rc = -EBADMSG;
			break;
		}
		case OP_CHECK:
			r.rc = same(W->mem[m.qp] + WR_OFF, m.len, m.seed) ? 0 : -EBADMSG;
			break;
		case OP_STEER: {
			uint64_t many[UROCE_SHARE_MAX_CLAIMS + 1];

			for (int i = 0; i < UROCE_SHARE_MAX_CLAIMS + 1; i++)
				many[i] = 0x7700000000000000ull + (uint64_t)i;
			r.rc = uroce_ctx_gsi_steer(W->ctx[0], m.nids > 4 ? many : m.ids, m.nids);
			break;
		}
		case OP_IO:
			/* Crafted MADs carry a bad ICRC: counted, never passed to the engine. */
			for (int k = UROCE_IO_RX_PKTS; k <= UROCE_IO_RX_DROP_NOT_FOR_US; k++)
				if (k != UROCE_IO_RX_BYTES)
					r.io_rx += uroce_ctx_io_counter(W->ctx[0],
									(enum uroce_io_counter)k);
			r.slot = uroce_ctx_slot(W->ctx[0]);
			break;
		case OP_CNT:
			for (int c = 0; c < 2; c++) {
				if (!W->ctx[c])
					continue;
				uroce_ctx_lock(W->ctx[c]);
				struct uroce_eng *e = uroce_ctx_eng(W->ctx[c]);

				r.drop_no_qp += uroce_eng_counter(e, UROCE_CNT_DROP_NO_QP);
				r.rcvd += uroce_eng_counter(e, UROCE_CNT_RCVD_PKTS);
				r.retrans += uroce_eng_counter(e, UROCE_CNT_RETRANSMITTED_PKTS);
				uroce_ctx_unlock(W->ctx[c]);
				r.gro += uroce_ctx_io_counter(W->ctx[c], UROCE_IO_RX_GRO);
			}
			break;
		case OP_EXIT:
			for (int k = 0; k < WQ; k++) {
				if (!W->q[k].qp)
					continue;
				struct uroce_ctx *x = W->ctx[W->q[k].c];

				uroce_ctx_lock(x);
				uroce_qp_destroy(W->q[k].qp);
				uroce_ctx_unlock(x);
			}
			for (int c = 0; c < 2; c++)
				uroce_ctx_close(W->ctx[c]);
			if (write(sk, &r, sizeof(r)) != (ssize_t)sizeof(r))
				_exit(3);
			_exit(0);
		}
		if (write(sk, &r, sizeof(r)) != (ssize_t)sizeof(r))
			_exit(3);
	}
	_exit(2);
}

struct rep call(struct proc *p, struct cmd m)
{
	struct rep r = {.rc = -EPIPE};
	struct pollfd pf = {.fd = p->sk, .events = POLLIN};

	if (write(p->sk, &m, sizeof(m)) != (ssize_t)sizeof(m) || poll(&pf, 1, 20000) != 1 ||
	    read(p->sk, &r, sizeof(r)) != (ssize_t)sizeof(r))
		r.rc = -EPIPE;
	return r;
}

struct proc spawn(char name)
{
	struct proc p = {.name = name, .sk = -1};
	int sv[2];

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		return p;
	p.pid = fork();
	if (p.pid == 0) {
		close(sv[0]);
		worker_main(sv[1]);
	}
	close(sv[1]);
	p.sk = sv[0];
	struct rep r = call(&p, (struct cmd){.op = OP_OPEN, .c = 0});

	CHECKF(r.rc == 0, "%c: open uroce_lo: %d", name, r.rc);
	return p;
}

int bye(struct proc *p)
{
	int st = -1;

	CHECK(call(p, (struct cmd){.op = OP_EXIT}).rc == 0);
	CHECK(waitpid(p->pid, &st, 0) == p->pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
	close(p->sk);
	return st;
}

static int lo_up(void)
{
	struct ifreq ifr = {0};
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), rc = -1;

	strcpy(ifr.ifr_name, "lo");
	if (s >= 0 && ioctl(s, SIOCGIFFLAGS, &ifr) == 0) {
		ifr.ifr_flags |= IFF_UP;
		rc = ioctl(s, SIOCSIFFLAGS, &ifr);
	}
	if (s >= 0)
		close(s);
	return rc;
}

unsigned net_setup(void)
{
	if (geteuid() == 0 && unshare(CLONE_NEWNET) == 0 && lo_up() == 0) {
		unsetenv("UROCE_PORT");
		fprintf(stderr, "a network namespace of its own, port 4791\n");
		return 4791;
	}
	setenv("UROCE_PORT", "24797", 1);
	fprintf(stderr, "no network namespace: the host's loopback, port 24797\n");
	return 24797;
}
