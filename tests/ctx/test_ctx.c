/* SPDX-License-Identifier: MIT */
/*
 * An opened device end to end: two RC QPs of one context exchange SEND and RDMA READ through real
 * UDP sockets, the progress thread doing the work while the test waits on completion
 * notifications (bounded waits, no sleeps); then, on loopback, a thread that holds the poll lease
 * and only posts still has WRITEs received (lease_ends), a busy poller's posts go out together
 * (burst_together, found_renews), its ACKs wait for its next post (replies_wait,
 * acks_wait_polls), polls that find completions take the lease (found_takes), and the progress
 * thread spins after answering (reads_spin, sends_spin). The pacing rules themselves are
 * tests/pace's.
 * Run with UROCE_RUNDIR set to an empty directory (automatic devices) and UROCE_PORT.
 *   test_ctx                 on uroce_lo, 127.0.0.1
 *   test_ctx addr DEV CMD    on DEV: first over its IPv4 address, then runs CMD (which adds the
 *                            IPv4 address 198.18.60.2), waits for the GID table to show it and
 *                            talks over the new address, then over the first again: the
 *                            sockets follow address changes, and the first one is kept.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <stdbool.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "../check.h"
#include "../wr.h"
#include "host/config/io_counters.h"
#include "host/ctx.h"
#include "host/os/netif.h"

static int evfd;

static void on_event(void *arg, const struct uroce_event *ev)
{
	uint64_t one = 1;

	(void)arg;
	if (ev->type == UROCE_EVENT_COMP && write(evfd, &one, 8) != 8)
		abort();
}

/* Wait (at most 5 s of real time) for one completion on cq. */
static int wait_wc(struct uroce_ctx *c, struct uroce_cq *cq, struct uroce_wc *wc)
{
	for (int i = 0; i < 50; i++) {
		uroce_ctx_lock(c);
		int n = uroce_cq_poll(cq, 1, wc);

		if (n == 0)
			uroce_cq_req_notify(cq, false);
		/* Poll again after arming: a completion between the two is not lost. */
		if (n == 0)
			n = uroce_cq_poll(cq, 1, wc);
		uroce_ctx_unlock(c);
		if (n)
			return n;
		struct pollfd p = { .fd = evfd, .events = POLLIN };
		uint64_t v;

		if (poll(&p, 1, 100) > 0 && read(evfd, &v, 8) != 8)
			return -1;
	}
	return 0;
}

static uint8_t mem[2][1 << 16];

/* The GID index of IPv4 address a.b.c.d (v2), or -1. */
static int v4_index(struct uroce_ctx *c, const uint8_t ip[4])
{
	struct uroce_gid_entry gids[64];
	int n = uroce_ctx_gids(c, gids, 64);

	for (int i = 0; i < n; i++)
		if (gids[i].ipv4 && gids[i].type == UROCE_GID_V2 &&
		    memcmp(gids[i].gid + 12, ip, 4) == 0)
			return i;
	return -1;
}

static void exchange(struct uroce_ctx *c, int idx);
static void lease_ends(struct uroce_ctx *c, int idx);
static void burst_together(struct uroce_ctx *c, int idx);
static void found_renews(struct uroce_ctx *c, int idx);
static void replies_wait(struct uroce_ctx *c, int idx);
static void acks_wait_polls(struct uroce_ctx *c, int idx);
static void found_takes(struct uroce_ctx *c, int idx);
static void reads_spin(struct uroce_ctx *c, int idx);
static void sends_spin(struct uroce_ctx *c, int idx);

/* Tries for a case whose hold a preemption (or, under a sanitizer in the machine's slow
 * minutes, a post slower than the 1 us of a burst) can defeat: 5 failed now and then. */
#define HOLD_TRIES 20

static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

int main(int argc, char **argv)
{
	struct uroce_ctx *c;
	struct uroce_ctx_cfg cfg = { .on_event = on_event };
	bool addr = argc == 4 && strcmp(argv[1], "addr") == 0;
	const char *dev = addr ? argv[2] : "uroce_lo";
	const uint8_t lo[4] = { 127, 0, 0, 1 }, first[4] = { 198, 18, 60, 1 },
		      second[4] = { 198, 18, 60, 2 };

	if (!getenv("UROCE_RUNDIR")) {
		fprintf(stderr, "set UROCE_RUNDIR\n");
		return 2;
	}
	evfd = eventfd(0, EFD_NONBLOCK);
	int rc = uroce_ctx_open(dev, &cfg, &c);

	CHECKF(rc == 0, "open %s: %d", dev, rc);
	if (rc)
		return check_exit("ctx");
	int idx = v4_index(c, addr ? first : lo);

	CHECKF(idx >= 0, "no IPv4 v2 GID on %s", dev);
	if (idx >= 0)
		exchange(c, idx);
	if (idx >= 0 && !addr) {
		lease_ends(c, idx);
		burst_together(c, idx);
		found_renews(c, idx);
		replies_wait(c, idx);
		acks_wait_polls(c, idx);
		found_takes(c, idx);
		reads_spin(c, idx);
		sends_spin(c, idx);
	}
	if (addr) {
		uint64_t sent = uroce_ctx_io_counter(c, UROCE_IO_TX_PKTS);

		CHECK(sent > 0);
		CHECK(system(argv[3]) == 0);
		/* The progress thread sees the address through the interface watch; wait for it
		 * (bounded), then talk over it. */
		int watch = uroce_netif_watch_open();

		for (int i = 0; i < 50 && (idx = v4_index(c, second)) < 0; i++) {
			struct pollfd p = { .fd = watch, .events = POLLIN };

			if (poll(&p, 1, 100) > 0)
				uroce_netif_watch_drain(watch);
		}
		close(watch);
		CHECKF(idx >= 0, "198.18.60.2 never appeared in the GID table");
		if (idx >= 0)
			exchange(c, idx);
		/* The first address's socket was kept (uroce_udp_rebind), not opened again: its
		 * counts go on from the first exchange, and it still carries traffic. */
		idx = v4_index(c, first);
		CHECKF(idx >= 0, "198.18.60.1 left the GID table");
		if (idx >= 0)
			exchange(c, idx);
		uint64_t now_sent = uroce_ctx_io_counter(c, UROCE_IO_TX_PKTS);

		CHECKF(now_sent >= 2 * sent + sent / 2,
		       "sent %llu packets in three exchanges, %llu in the first: "
		       "were the sockets opened again?", (unsigned long long)now_sent,
		       (unsigned long long)sent);
	}
	uroce_ctx_close(c);
	close(evfd);
	return check_exit("ctx");
}

struct pair {
	struct uroce_pd *pd;
	struct uroce_cq *cq[2];
	struct uroce_mr *mr[2];
	struct uroce_qp *qp[2];
};

/* Two RC QPs of context c connected to each other over GID idx. Lock not held. */
static void make_pair(struct uroce_ctx *c, int idx, struct pair *p)
{
	struct uroce_gid_entry gids[64];

	uroce_ctx_gids(c, gids, 64);
	uroce_ctx_lock(c);
	struct uroce_eng *e = uroce_ctx_eng(c);

	CHECK(uroce_pd_alloc(e, &p->pd) == 0);
	for (int k = 0; k < 2; k++) {
		CHECK(uroce_cq_create(e, 64, NULL, &p->cq[k]) == 0);
		CHECK(uroce_mr_reg(p->pd, mem[k], sizeof(mem[k]), (uintptr_t)mem[k], 15,
				   &p->mr[k]) == 0);
		struct uroce_qp_init init = {.type = UROCE_QPT_RC,
					     .send_cq = p->cq[k],
					     .recv_cq = p->cq[k],
					     .cap = {16, 16, 1, 1, 0}};

		CHECK(uroce_qp_create(p->pd, &init, &p->qp[k]) == 0);
	}
	for (int k = 0; k < 2; k++) {
		struct uroce_qp_attr a = { .qp_state = UROCE_QPS_INIT, .port_num = 1,
					   .qp_access_flags = 15 };

		CHECK(uroce_qp_modify(p->qp[k], &a,
				      UROCE_QP_STATE | UROCE_QP_PKEY_INDEX | UROCE_QP_PORT |
					      UROCE_QP_ACCESS_FLAGS) == 0);
		a.qp_state = UROCE_QPS_RTR;
		a.path_mtu = UROCE_MTU_1024;
		a.dest_qp_num = uroce_qp_num(p->qp[!k]);
		a.rq_psn = 100;
		a.max_dest_rd_atomic = 1;
		a.min_rnr_timer = 12;
		a.av.is_global = true;
		a.av.sgid_index = (uint8_t)idx;
		a.av.hop_limit = 1;
		memcpy(a.av.dgid, gids[idx].gid, 16);
		CHECK(uroce_qp_modify(p->qp[k], &a,
				      UROCE_QP_STATE | UROCE_QP_AV | UROCE_QP_PATH_MTU |
					      UROCE_QP_DEST_QPN | UROCE_QP_RQ_PSN |
					      UROCE_QP_MAX_DEST_RD_ATOMIC |
					      UROCE_QP_MIN_RNR_TIMER) == 0);
		a.qp_state = UROCE_QPS_RTS;
		a.sq_psn = 100;
		a.timeout = 14;
		a.retry_cnt = 7;
		a.rnr_retry = 7;
		a.max_rd_atomic = 1;
		CHECK(uroce_qp_modify(p->qp[k], &a,
				      UROCE_QP_STATE | UROCE_QP_SQ_PSN | UROCE_QP_TIMEOUT |
					      UROCE_QP_RETRY_CNT | UROCE_QP_RNR_RETRY |
					      UROCE_QP_MAX_QP_RD_ATOMIC) == 0);
	}
	uroce_ctx_unlock(c);
}

/* Lock held. */
static void free_pair(struct pair *p)
{
	for (int k = 0; k < 2; k++) {
		CHECK(uroce_qp_destroy(p->qp[k]) == 0);
		CHECK(uroce_mr_dereg(p->mr[k]) == 0);
		CHECK(uroce_cq_destroy(p->cq[k]) == 0);
	}
	CHECK(uroce_pd_free(p->pd) == 0);
}

/* Post an RDMA WRITE of len bytes from qp[0]'s memory at src to qp[1]'s at dst. Lock held. */
static int post_write(struct pair *p, size_t src, size_t dst, uint32_t len, uint64_t id,
		      bool signaled)
{
	struct uroce_sge ss = wr_sge((uintptr_t)mem[0] + src, len, uroce_mr_lkey(p->mr[0]));
	struct uroce_send_wr swr = wr_write(id, &ss, 1, (uintptr_t)mem[1] + dst,
					    uroce_mr_rkey(p->mr[1]),
					    signaled ? UROCE_SEND_SIGNALED : 0),
			     *sbad;

	return uroce_post_send(p->qp[0], &swr, &sbad);
}

/* A streak of empty polls of qp[0]'s CQ, each a round as ibv_poll_cq makes it: the lease. Lock
 * held. */
static void take_lease(struct uroce_ctx *c, struct pair *p)
{
	struct uroce_wc wc;

	for (int i = 0; i < 16; i++) {
		CHECK(uroce_cq_poll(p->cq[0], 1, &wc) == 0);
		uroce_ctx_polled(c, UROCE_CTX_POLL_EMPTY);
		uroce_ctx_polled(c, UROCE_CTX_POLL_STILL_EMPTY);
	}
}

/* Post an 8-byte signaled WRITE of seq from qp[0]'s memory at off to qp[1]'s, and the doorbell.
 * Lock held. */
static void post_seq(struct uroce_ctx *c, struct pair *p, size_t off, uint64_t seq)
{
	memcpy(mem[0] + off, &seq, 8);
	CHECK(post_write(p, off, off, 8, seq, true) == 0);
	uroce_ctx_post_tx(c, 8);
}

/* The local ACK timeouts so far (a WRITE sent again). Lock held. */
static uint64_t ack_timeouts(struct uroce_ctx *c)
{
	return uroce_eng_counter(uroce_ctx_eng(c), UROCE_CNT_LOCAL_ACK_TIMEOUT_ERR);
}

/* Rounds for 100 ms, so that what is still in flight completes, then the lease given up (the
 * next case starts without one), the pair freed and the lock released. Lock held. */
static void settle_free(struct uroce_ctx *c, struct pair *p)
{
	for (uint64_t t0 = mono_ms(); mono_ms() - t0 < 100;) {
		uroce_ctx_polled(c, UROCE_CTX_POLL_EMPTY);
		uroce_ctx_poll_idle(c);
	}
	uroce_ctx_app_sleeps(c);
	free_pair(p);
	uroce_ctx_unlock(c);
}

/* Two RC QPs on GID idx: SEND and RDMA READ, with the data checked. */
static void exchange(struct uroce_ctx *c, int idx)
{
	struct pair p;

	make_pair(c, idx, &p);
	uroce_ctx_lock(c);
	for (int i = 0; i < 8192; i++)
		mem[0][i] = (uint8_t)(i * 31 + 7);
	struct uroce_sge rs = wr_sge((uintptr_t)mem[1], 8192, uroce_mr_lkey(p.mr[1]));
	struct uroce_recv_wr rwr = wr_recv(5, &rs, 1), *rbad;
	struct uroce_sge ss = wr_sge((uintptr_t)mem[0], 5000, uroce_mr_lkey(p.mr[0]));
	struct uroce_send_wr swr = wr_send(6, &ss, 1, UROCE_SEND_SIGNALED), *sbad;

	CHECK(uroce_post_recv(p.qp[1], &rwr, &rbad) == 0);
	CHECK(uroce_post_send(p.qp[0], &swr, &sbad) == 0);
	uroce_ctx_unlock(c);
	uroce_ctx_kick(c);

	struct uroce_wc wc;

	CHECK(wait_wc(c, p.cq[0], &wc) == 1 && wc.wr_id == 6 && wc.status == UROCE_WC_SUCCESS);
	CHECK(wait_wc(c, p.cq[1], &wc) == 1 && wc.wr_id == 5 && wc.status == UROCE_WC_SUCCESS &&
	      wc.byte_len == 5000);
	CHECK(memcmp(mem[0], mem[1], 5000) == 0);

	/* RDMA READ of 3000 bytes back from qp[1]'s memory into qp[0]'s at 20000. */
	uroce_ctx_lock(c);
	swr.opcode = UROCE_WR_RDMA_READ;
	swr.wr_id = 7;
	ss.addr = (uintptr_t)mem[0] + 20000;
	ss.length = 3000;
	swr.wr.rdma.remote_addr = (uintptr_t)mem[1] + 1000;
	swr.wr.rdma.rkey = uroce_mr_rkey(p.mr[1]);
	CHECK(uroce_post_send(p.qp[0], &swr, &sbad) == 0);
	uroce_ctx_unlock(c);
	uroce_ctx_kick(c);
	CHECK(wait_wc(c, p.cq[0], &wc) == 1 && wc.wr_id == 7 && wc.status == UROCE_WC_SUCCESS);
	CHECK(memcmp(mem[0] + 20000, mem[1] + 1000, 3000) == 0);

	uroce_ctx_lock(c);
	free_pair(&p);
	uroce_ctx_unlock(c);
}

/*
 * A thread that polled in a loop holds the sockets (its lease); when it goes on posting without
 * polling (an RDMA WRITE it waits for by watching memory, as ib_write_lat), the progress thread
 * must take them back and receive: each post extends the lease only within a bound (4 ms after
 * the last poll). The thread posts 8-byte WRITEs of a growing sequence number from qp[0] to
 * qp[1]'s memory, with no poll, until one posted 6 ms after its last poll has landed (at most 5 s
 * of real time). A kick may let the progress thread receive the first few while leased, and the
 * lease also ends whenever the posting thread is preempted for longer than a lease, so this
 * shows that receiving goes on, not the bound itself (tests/pace does).
 */
static void lease_ends(struct uroce_ctx *c, int idx)
{
	struct pair p;

	make_pair(c, idx, &p);
	uroce_ctx_lock(c);
	memset(mem[1], 0, 64);
	take_lease(c, &p);
	uroce_ctx_unlock(c);

	uint64_t seq = 0, want = 0, got = 0, t0 = mono_ms();

	while ((!want || got < want) && mono_ms() - t0 < 5000) {
		uroce_ctx_lock(c);
		seq++;
		memcpy(mem[0] + 30000, &seq, 8);
		if (post_write(&p, 30000, 0, 8, 9, false) == 0 && !want && mono_ms() - t0 >= 6)
			want = seq; /* ENOMEM while the send queue is full */
		bool kick = uroce_ctx_post_tx(c, 8);

		memcpy(&got, mem[1], 8);
		uroce_ctx_unlock(c);
		if (kick)
			uroce_ctx_kick(c);
	}
	CHECKF(want && got >= want,
	       "RDMA WRITEs to a context whose thread posts without polling stopped landing at "
	       "%llu (want %llu): the progress thread did not take the sockets back",
	       (unsigned long long)got, (unsigned long long)want);
	uroce_ctx_lock(c);
	free_pair(&p);
	uroce_ctx_unlock(c);
}

/*
 * A thread that holds the lease posts 12 WRITEs of 1 KiB (one packet each at MTU 1024) one by
 * one, as fast as it can, then polls for the last one's completion as ibv_poll_cq does: the
 * posts after the first are held and go out together, in GSO sends (the same length, to one
 * QP), where each post alone would be a datagram of its own. The data is checked.
 */
static void burst_together(struct uroce_ctx *c, int idx)
{
	enum { N = 12, LEN = 1024, OFF = 40000 };
	struct pair p;
	struct uroce_wc wc;
	int n = 0;

	make_pair(c, idx, &p);
	uint64_t pkts = uroce_ctx_io_counter(c, UROCE_IO_TX_PKTS),
		 gso = uroce_ctx_io_counter(c, UROCE_IO_TX_GSO);

	uroce_ctx_lock(c);
	take_lease(c, &p);
	for (int i = 0; i < N * LEN; i++)
		mem[0][OFF + i] = (uint8_t)(i * 13 + 5);
	memset(mem[1] + OFF, 0, N * LEN);
	for (int i = 0; i < N; i++) {
		CHECK(post_write(&p, OFF + (size_t)i * LEN, OFF + (size_t)i * LEN, LEN, (uint64_t)i,
				 i == N - 1) == 0);
		uroce_ctx_post_tx(c, LEN); /* no kick: the lease is held */
	}
	for (uint64_t t0 = mono_ms(); !n && mono_ms() - t0 < 5000;) {
		n = uroce_cq_poll(p.cq[0], 1, &wc);
		if (!n) {
			uroce_ctx_polled(c, UROCE_CTX_POLL_EMPTY);
			n = uroce_cq_poll(p.cq[0], 1, &wc);
		}
		if (!n)
			uroce_ctx_poll_idle(c);
	}
	CHECKF(n == 1 && wc.wr_id == N - 1 && wc.status == UROCE_WC_SUCCESS,
	       "the burst's last WRITE did not complete");
	CHECK(memcmp(mem[0] + OFF, mem[1] + OFF, N * LEN) == 0);
	free_pair(&p);
	uroce_ctx_unlock(c);
	pkts = uroce_ctx_io_counter(c, UROCE_IO_TX_PKTS) - pkts;
	gso = uroce_ctx_io_counter(c, UROCE_IO_TX_GSO) - gso;
	CHECKF(pkts >= N && gso >= 1,
	       "a burst of %d posts went as %llu packets in %llu GSO sends: not sent together", N,
	       (unsigned long long)pkts, (unsigned long long)gso);
}

/* An 8-byte WRITE, and the doorbell. Lock held. */
static void write8(struct uroce_ctx *c, struct pair *p, uint64_t id, bool signaled)
{
	CHECK(post_write(p, 50000, 50000, 8, id, signaled) == 0);
	uroce_ctx_post_tx(c, 8);
}

/*
 * A poll that finds completions renews a lease that lapsed (UROCE_CTX_POLL_FOUND): a thread
 * that took the lease, then stopped calling for 2 ms, polls a completion and posts two WRITEs
 * back to back; the second is held for the burst (uroce_pace_post_holds needs the lease). Five
 * tries, since a preemption between the two posts also sends the second at once; without the
 * renewal none is held.
 */
static void found_renews(struct uroce_ctx *c, int idx)
{
	struct pair p;
	struct uroce_wc wc;
	bool held = false;

	make_pair(c, idx, &p);
	uroce_ctx_lock(c);
	for (int i = 0; i < 5; i++)
		write8(c, &p, (uint64_t)i, true);
	/* Rounds enough to complete them and take the lease, then 2 ms without a call. */
	for (uint64_t t0 = mono_ms(); mono_ms() - t0 < 3;) {
		uroce_ctx_polled(c, UROCE_CTX_POLL_EMPTY);
		uroce_ctx_poll_idle(c);
	}
	for (uint64_t t0 = mono_ms(); mono_ms() - t0 < 3;)
		;
	for (int i = 0; i < 5 && !held; i++) {
		CHECK(uroce_cq_poll(p.cq[0], 1, &wc) == 1 && wc.status == UROCE_WC_SUCCESS);
		uroce_ctx_polled(c, UROCE_CTX_POLL_FOUND);
		write8(c, &p, 100, false);
		write8(c, &p, 101, false);
		held = uroce_eng_tx_pending(uroce_ctx_eng(c));
		uroce_ctx_poll_idle(c); /* send it */
	}
	CHECKF(held, "a poll that found a completion did not renew the lapsed lease: no post was "
		     "held in 5 bursts of two");
	settle_free(c, &p);
}

/*
 * ACKs wait for the next post (uroce_pace_reply_holds): a thread takes the lease, posts an
 * 8-byte WRITE and watches memory for it instead of polling, as ib_write_lat does; once the
 * lease lapsed the progress thread receives the WRITE, and its ACK waits for the thread's next
 * call. HOLD_TRIES tries (a thread that comes back later than the hold finds it sent); without the
 * hold, none is seen. Then the held ACK goes by itself while the thread only waits on the
 * completion channel: the WRITE completes.
 */
static void replies_wait(struct uroce_ctx *c, int idx)
{
	struct pair p;
	struct uroce_wc wc;
	bool held = false;
	uint64_t seq = 0;

	make_pair(c, idx, &p);
	uroce_ctx_lock(c);
	uint64_t timeouts = ack_timeouts(c);

	uroce_ctx_unlock(c);
	for (int i = 0; i < HOLD_TRIES && !held; i++) {
		uint8_t want[8];
		bool landed = false;

		uroce_ctx_lock(c);
		take_lease(c, &p);
		seq = 7000 + (uint64_t)i;
		post_seq(c, &p, 60000, seq);
		uroce_ctx_unlock(c);
		memcpy(want, &seq, 8);
		/* Watch memory, byte by byte through volatile reads, with no call into uroce. */
		for (uint64_t t0 = mono_ms(); !landed && mono_ms() - t0 < 5000;) {
			landed = true;
			for (int k = 0; k < 8; k++)
				if (((volatile uint8_t *)mem[1])[60000 + k] != want[k])
					landed = false;
		}
		CHECKF(landed, "the WRITE never landed");
		uroce_ctx_lock(c);
		held = uroce_eng_tx_acks_only(uroce_ctx_eng(c));
		uroce_ctx_unlock(c);
		if (!held) /* sent: its completion is there or on the way */
			CHECK(wait_wc(c, p.cq[0], &wc) == 1 && wc.wr_id == seq &&
			      wc.status == UROCE_WC_SUCCESS);
	}
	CHECKF(held, "the ACK of a WRITE the progress thread received for a thread that polls was "
		     "sent at once in every try, not held for that thread's next call");
	CHECKF(wait_wc(c, p.cq[0], &wc) == 1 && wc.wr_id == seq && wc.status == UROCE_WC_SUCCESS,
	       "a held ACK never went out by itself");
	uroce_ctx_lock(c);
	CHECKF(ack_timeouts(c) == timeouts,
	       "a held ACK went out only after the WRITE was sent again");
	settle_free(c, &p);
}

/*
 * The same for the thread's own rounds: it posts an 8-byte WRITE and polls for its completion
 * as ibv_poll_cq does (a round, then UROCE_CTX_POLL_STILL_EMPTY while the CQ is empty); its round
 * receives the WRITE (both QPs are in this context), and the empty poll keeps the WRITE's ACK
 * for the thread's next post instead of sending it. HOLD_TRIES tries (a thread preempted for longer
 * than the hold between the two finds it sent). Polling on, the hold ends and the WRITE
 * completes.
 */
static void acks_wait_polls(struct uroce_ctx *c, int idx)
{
	struct pair p;
	struct uroce_wc wc;
	bool held = false;

	make_pair(c, idx, &p);
	uroce_ctx_lock(c);
	uint64_t timeouts = ack_timeouts(c);

	for (int i = 0; i < HOLD_TRIES && !held; i++) {
		uint64_t seq = 8000 + (uint64_t)i;
		int n = 0;

		take_lease(c, &p);
		post_seq(c, &p, 61000, seq);
		for (uint64_t t0 = mono_ms(); mono_ms() - t0 < 5000;) {
			uroce_ctx_polled(c, UROCE_CTX_POLL_EMPTY);
			if (memcmp(mem[1] + 61000, &seq, 8) == 0) { /* this round received it */
				uroce_ctx_polled(c, UROCE_CTX_POLL_STILL_EMPTY);
				held = uroce_eng_tx_acks_only(uroce_ctx_eng(c));
				break;
			}
			uroce_ctx_polled(c, UROCE_CTX_POLL_STILL_EMPTY);
		}
		for (uint64_t t0 = mono_ms(); !n && mono_ms() - t0 < 5000;) {
			n = uroce_cq_poll(p.cq[0], 1, &wc);
			if (!n) {
				uroce_ctx_polled(c, UROCE_CTX_POLL_EMPTY);
				n = uroce_cq_poll(p.cq[0], 1, &wc);
			}
			if (!n)
				uroce_ctx_polled(c, UROCE_CTX_POLL_STILL_EMPTY);
		}
		CHECKF(n == 1 && wc.wr_id == seq && wc.status == UROCE_WC_SUCCESS,
		       "a WRITE whose ACK was held never completed for a thread polling on");
		CHECKF(ack_timeouts(c) == timeouts,
		       "a WRITE whose ACK was held completed only once it was sent again");
	}
	CHECKF(held,
	       "the ACK a polling thread's round made was sent by its empty poll in every try, "
	       "not held for its next post");
	settle_free(c, &p);
}

/*
 * Polls that find completions take the lease too (UROCE_CTX_POLL_FOUND): a thread that has no
 * lease makes 9 polls in a row that each find a completion (the test collects the completions
 * of 8 WRITEs first), and then holds the lease (uroce_ctx_app_sleeps says so as it ends it).
 * HOLD_TRIES tries, since a preemption between two polls longer than the streak's gap starts
 * the streak again; with empty polls alone counted, it never does. The lease is read from
 * uroce_ctx_app_sleeps rather than from a post held for its burst, which needs the second post
 * within 1 us of the first, more than a sanitizer build on a busy machine can promise.
 */
static void found_takes(struct uroce_ctx *c, int idx)
{
	struct pair p;
	struct uroce_wc wc;
	bool held = false;

	make_pair(c, idx, &p);
	uroce_ctx_lock(c);
	for (int i = 0; i < HOLD_TRIES && !held; i++) {
		uroce_ctx_app_sleeps(c); /* no lease, no streak */
		for (int k = 0; k < 8; k++)
			write8(c, &p, (uint64_t)k, true);
		for (int k = 0, n = 0; k < 8; k++, n = 0) { /* the progress thread completes them */
			for (uint64_t t0 = mono_ms(); !n && mono_ms() - t0 < 5000;) {
				uroce_ctx_unlock(c);
				uroce_ctx_lock(c);
				n = uroce_cq_poll(p.cq[0], 1, &wc);
			}
			CHECK(n == 1 && wc.status == UROCE_WC_SUCCESS);
		}
		/* As 8 polls in a row that each found one, after a first one: collecting the
		 * completions may take longer than the streak's gap after the last post, and then
		 * the first poll starts the streak (streak_step) rather than counting in it. */
		for (int k = 0; k < 9; k++)
			uroce_ctx_polled(c, UROCE_CTX_POLL_FOUND);
		held = uroce_ctx_app_sleeps(c); /* it held a lease */
	}
	CHECKF(held, "9 polls that found completions did not take the lease");
	settle_free(c, &p);
}

/* The progress thread's spin state now. */
static struct uroce_pace_spin spin_now(struct uroce_ctx *c)
{
	uroce_ctx_lock(c);
	struct uroce_pace_spin st = uroce_ctx_spin_state(c);

	uroce_ctx_unlock(c);
	return st;
}

/* Run with UROCE_SPIN=0 (ctx_loopback_nospin): the progress thread must never spin. */
static bool spin_off(void)
{
	const char *v = getenv("UROCE_SPIN");

	return v && strcmp(v, "0") == 0;
}

/* Does the progress thread stop spinning within 1 s of real time? */
static bool spin_ends(struct uroce_ctx *c)
{
	for (int i = 0; i < 100; i++) {
		if (!spin_now(c).until)
			return true;
		struct pollfd none = {.fd = -1};

		poll(&none, 1, 10);
	}
	return false;
}

/*
 * RDMA READs, one after the other, by a thread that waits for each completion on the channel
 * (no lease: the progress thread receives both the requests and the responses): the progress
 * thread answers them and, once that pays, spins instead of sleeping (uroce_pace_spin_step). When
 * the READs stop, the spin ends: within 1 s of real time the thread no longer spins.
 */
static void reads_spin(struct uroce_ctx *c, int idx)
{
	struct pair p;
	struct uroce_wc wc;
	struct uroce_pace_spin st = {0};

	make_pair(c, idx, &p);
	for (int i = 0; i < 2000 && st.begun == 0; i++) {
		uroce_ctx_lock(c);
		struct uroce_sge ss = wr_sge((uintptr_t)mem[0] + 30000, 64, uroce_mr_lkey(p.mr[0]));
		struct uroce_send_wr swr = wr_read(9000 + (uint64_t)i, &ss, 1,
						   (uintptr_t)mem[1] + 30000, uroce_mr_rkey(p.mr[1]),
						   UROCE_SEND_SIGNALED),
				     *sbad;

		memset(mem[1] + 30000, i & 0xFF, 64);
		CHECK(uroce_post_send(p.qp[0], &swr, &sbad) == 0);
		uroce_ctx_post_tx(c, 0);
		uroce_ctx_unlock(c);
		uroce_ctx_kick(c);
		CHECK(wait_wc(c, p.cq[0], &wc) == 1 && wc.wr_id == 9000 + (uint64_t)i &&
		      wc.status == UROCE_WC_SUCCESS);
		CHECK(mem[0][30000] == (uint8_t)(i & 0xFF) && mem[0][30063] == (uint8_t)(i & 0xFF));
		st = spin_now(c);
	}
	if (spin_off()) /* all 2000 went by */
		CHECKF(st.begun == 0, "UROCE_SPIN=0 and the progress thread spun");
	else
		CHECKF(st.begun > 0, "2000 READs back to back and the progress thread never spun");
	CHECKF(spin_ends(c), "the progress thread still spins 1 s after the last READ");
	uroce_ctx_lock(c);
	free_pair(&p);
	uroce_ctx_unlock(c);
}

/*
 * SENDs, one after the other, to a thread that waits for each on the completion channel: the
 * progress thread reports the receive completions (the CQ armed) and, once that pays, spins
 * instead of sleeping; the spinning ends after the last.
 */
static void sends_spin(struct uroce_ctx *c, int idx)
{
	struct pair p;
	struct uroce_wc wc;
	struct uroce_pace_spin st, before;

	make_pair(c, idx, &p);
	before = spin_now(c);
	st = before;
	for (int i = 0; i < 2000 && st.begun == before.begun; i++) {
		uroce_ctx_lock(c);
		struct uroce_sge rs = wr_sge((uintptr_t)mem[1] + 40000, 64, uroce_mr_lkey(p.mr[1]));
		struct uroce_recv_wr rwr = wr_recv(500 + (uint64_t)i, &rs, 1), *rbad;
		struct uroce_sge ss = wr_sge((uintptr_t)mem[0] + 40000, 64, uroce_mr_lkey(p.mr[0]));
		struct uroce_send_wr swr = wr_send(600 + (uint64_t)i, &ss, 1, UROCE_SEND_SIGNALED),
				     *sbad;

		memset(mem[0] + 40000, (i + 1) & 0xFF, 64);
		CHECK(uroce_post_recv(p.qp[1], &rwr, &rbad) == 0);
		CHECK(uroce_post_send(p.qp[0], &swr, &sbad) == 0);
		uroce_ctx_post_tx(c, 64);
		uroce_ctx_unlock(c);
		uroce_ctx_kick(c);
		CHECK(wait_wc(c, p.cq[1], &wc) == 1 && wc.wr_id == 500 + (uint64_t)i &&
		      wc.status == UROCE_WC_SUCCESS && wc.byte_len == 64);
		CHECK(mem[1][40000] == (uint8_t)((i + 1) & 0xFF));
		CHECK(wait_wc(c, p.cq[0], &wc) == 1 && wc.wr_id == 600 + (uint64_t)i &&
		      wc.status == UROCE_WC_SUCCESS);
		st = spin_now(c);
	}
	if (spin_off())
		CHECKF(st.begun == before.begun, "UROCE_SPIN=0 and the progress thread spun");
	else
		CHECKF(st.begun > before.begun,
		       "2000 SENDs to a thread on the channel and the progress thread never spun");
	CHECKF(spin_ends(c), "the progress thread still spins 1 s after the last SEND");
	uroce_ctx_lock(c);
	free_pair(&p);
	uroce_ctx_unlock(c);
}
