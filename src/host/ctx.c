/* SPDX-License-Identifier: MIT */
/* An opened device: engine, GID table, backends and the progress thread (see ctx.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "host/config/io_counters.h"
#include "host/config/rundir.h"
#include "host/config/stats.h"
#include "host/ctx.h"
#include "host/io/afpacket.h"
#include "host/io/backend.h"
#include "host/io/locked_file.h"
#include "host/io/pcap_sink.h"
#include "host/io/share_group.h"
#include "host/io/share_members.h"
#include "host/io/share_prog.h"
#include "host/io/share_slots.h"
#include "host/io/udp.h"
#include "host/io/wrap_env.h"
#include "host/mem_guard.h"
#include "host/os/exit_lock.h"
#include "host/os/mono_clock.h"
#include "host/os/neigh.h"
#include "host/os/nocancel.h"
#include "host/os/netif.h"
#include "host/os/v4mapped.h"
#include "wire/bytes.h"
#include "wire/mad.h"
#include "wire/opcode.h"

#define CTX_BURST     256 /* packets per engine call: a few UDP GSO sends' worth */
#define CTX_NEIGH_MAX 64
#define STATS_PERIOD  1000000000ull /* flush counters to the shared file every second */

struct neigh_entry {
	uint8_t gid[16];
	uint8_t mac[6];
	bool valid;
};

struct uroce_ctx {
	struct uroce_devdef def;
	struct uroce_ctx *next_open; /* the process's open contexts (fork handling) */
	/* A context of the parent, seen in a forked child: no progress thread, no descriptors;
	 * the child does no I/O with it, reports no events (the eventfds are the parent's), and
	 * closing it frees memory only. */
	bool orphan;
	char rundir[256];
	struct uroce_eng *eng;
	pthread_mutex_t lock;
	_Atomic unsigned lock_waiters; /* application threads waiting for the lock */
	uroce_ctx_event_fn on_event;
	void (*on_round)(void *arg);
	void *arg;
	/* The pacing (pace/pace.h): under the lock, but for the lease, which the progress thread
	 * reads without it. */
	struct uroce_pace pace;
	uint64_t round_end; /* when the last poll round ended */

	/* The progress thread and what its rounds leave for the next. */
	struct {
		pthread_t thread;
		bool started;
		atomic_bool stop;
		int kick_fd;
		int watch_fd;	      /* the interface's address watch (os/netif.h), -1: none */
		int timer_fd;	      /* its sleep's end (timerfd), -1: ppoll's timeout instead */
		_Atomic uint64_t timer_at; /* when timer_fd is set to fire (0: not set) */
		bool rx_more;	      /* the last round left received packets for the next (do_rx) */
		int rx_got;	      /* packets the last round received */
		uint64_t comp_events; /* completion notifications reported (an application sleeps) */
	} prog;

	/* The I/O: the backends, sharing the device with other processes. */
	int slot; /* QPN slot taken in the run-time directory, -1: none */
	/* The backends' groups (io/share_group.h), with our GSI claims (uroce_ctx_gsi_steer):
	 * sockets opened again after an address change join with them. */
	struct uroce_share_cfg share;
	struct uroce_backend *v2; /* UDP: RoCE v2 */
	struct uroce_backend *v1; /* AF_PACKET: RoCE v1 */
	uint64_t version_reqs;	  /* RoCE v2 CM requests to a v1-only device (version_drop) */

	/* The interface as last seen (refresh): GID table, addresses, port state. */
	struct {
		struct uroce_gid_entry gids[UROCE_GID_TABLE_MAX];
		int ngids;
		uint8_t addrs[UROCE_BACKEND_MAX_ADDRS][16]; /* the interface's addresses, as GIDs */
		int naddrs;
		uint8_t bound[UROCE_BACKEND_MAX_ADDRS][16]; /* those the RoCE v2 sockets are bound to */
		int nbound;
		struct uroce_devinfo info;
	} ifc;

	/* The IP multicast groups the RoCE v2 sockets joined: the engine's groups with QPs
	 * (uroce_ctx_mcast_sync). */
	struct {
		uint8_t gid[UROCE_UDP_MAX_GROUPS][16];
		int n;
	} mcast;

	/* RoCE v1 destination MACs, a small cache in front of the neighbour table. */
	struct {
		struct neigh_entry e[CTX_NEIGH_MAX];
		unsigned next;
	} neigh;

	/* The shared counter file and what was last added to it. */
	struct {
		struct uroce_stats *file;
		uint64_t eng_sent[UROCE_CNT_MAX];
		uint64_t io_sent[UROCE_IO_CNT_MAX]; /* the backends' counts at the last flush */
		uint64_t at;
	} stats;

	/* Scratch for one round. */
	struct {
		struct uroce_tx_pkt txp[CTX_BURST];
		struct uroce_path path[CTX_BURST];
		struct uroce_tx_desc d1[CTX_BURST], d2[CTX_BURST];
		struct uroce_rx_desc rxd[CTX_BURST];
	} burst;
};

/* Set the progress thread's timer to fire at `at` (CLOCK_MONOTONIC ns). */
static void set_timer(struct uroce_ctx *c, uint64_t at)
{
	struct itimerspec its = {.it_value = {.tv_sec = (time_t)(at / 1000000000u),
					      .tv_nsec = (long)(at % 1000000000u)}};

	if (timerfd_settime(c->prog.timer_fd, TFD_TIMER_ABSTIME, &its, NULL) == 0)
		atomic_store_explicit(&c->prog.timer_at, at, memory_order_relaxed);
}

/* ---- GID table and device state --------------------------------------------------------- */

static void refresh(struct uroce_ctx *c)
{
	struct uroce_netif_list ifs;

	if (uroce_netif_scan(&ifs) == 0) {
		uroce_dev_info(&c->def, &ifs, &c->ifc.info);
		if (c->eng)
			uroce_eng_set_port_mtu(c->eng, uroce_mtu_enum(c->ifc.info.active_mtu));
		const struct uroce_netif *nif = uroce_netif_find(&ifs, c->def.netdev);
		int n = nif ? uroce_gid_table_from_netif(nif, c->def.roce, c->ifc.gids,
							 UROCE_GID_TABLE_MAX)
			    : 0;

		c->ifc.ngids = n < 0 ? (n == -ENOSPC ? UROCE_GID_TABLE_MAX : 0) : n;
		/* The addresses the RoCE v2 sockets bind to: the interface's own (the default
		 * GID made from the MAC is not necessarily one of them). */
		c->ifc.naddrs = 0;
		for (int i = 0; nif && i < nif->naddrs && c->ifc.naddrs < UROCE_BACKEND_MAX_ADDRS; i++) {
			uint8_t *g = c->ifc.addrs[c->ifc.naddrs];

			if (nif->addrs[i].family == AF_INET)
				uroce_gid_from_v4(g, nif->addrs[i].addr);
			else
				memcpy(g, nif->addrs[i].addr, 16);
			c->ifc.naddrs++;
		}
		uroce_netif_list_free(&ifs);
	}
}

static void rebind_v2(struct uroce_ctx *c);

/* ---- transmit ------------------------------------------------------------------------------ */

/* The MAC of a v1 destination: direct for link-local GIDs, else the neighbour table. */
static int v1_dmac(struct uroce_ctx *c, const uint8_t gid[16], uint8_t mac[6])
{
	if (uroce_neigh_direct(gid, mac) == 0)
		return 0;
	/* One of this device's own addresses: the frame goes to the interface's own MAC (and back
	 * up to the process that owns the QP, as a NIC loops it back). */
	for (int i = 0; i < c->ifc.ngids; i++) {
		if (memcmp(c->ifc.gids[i].gid, gid, 16) == 0) {
			memcpy(mac, c->ifc.info.mac, 6);
			return 0;
		}
	}
	for (unsigned i = 0; i < CTX_NEIGH_MAX; i++) {
		if (c->neigh.e[i].valid && memcmp(c->neigh.e[i].gid, gid, 16) == 0) {
			memcpy(mac, c->neigh.e[i].mac, 6);
			return 0;
		}
	}
	/* Netlink, inside a post or a poll: no cancellation point there (host/os/nocancel.h). */
	int cs = uroce_cancel_off();
	int rc = uroce_neigh_lookup((int)c->ifc.info.ifindex, gid, mac);

	uroce_cancel_restore(cs);
	if (rc == 0) {
		struct neigh_entry *e = &c->neigh.e[c->neigh.next++ % CTX_NEIGH_MAX];

		memcpy(e->gid, gid, 16);
		memcpy(e->mac, mac, 6);
		e->valid = true;
	}
	return rc;
}

/* Resolve an engine packet's address vector into a path. Returns 0, or -errno to drop it. */
static int resolve(struct uroce_ctx *c, const struct uroce_tx_pkt *t, struct uroce_path *p)
{
	const struct uroce_av *av = t->av;

	if (av->sgid_index >= c->ifc.ngids)
		return -EINVAL;
	const struct uroce_gid_entry *g = &c->ifc.gids[av->sgid_index];

	memset(p, 0, sizeof(*p));
	memcpy(p->sgid, g->gid, 16);
	memcpy(p->dgid, av->dgid, 16);
	p->traffic_class = av->traffic_class;
	p->hop_limit = av->hop_limit;
	p->flow_label = av->flow_label;
	if (g->type == UROCE_GID_V1) {
		p->encap = UROCE_ENCAP_V1;
		return v1_dmac(c, av->dgid, p->dmac);
	}
	p->encap = uroce_gid_is_v4(g->gid) ? UROCE_ENCAP_V2_IPV4 : UROCE_ENCAP_V2_IPV6;
	p->sport = uroce_udp_sport(t->src_qpn, t->dst_qpn, av->flow_label);
	return 0;
}

/* Hand descriptors to a backend; a full socket buffer gets a few more chances. */
static void send_all(struct uroce_backend *b, struct uroce_tx_desc *d, int n)
{
	int done = 0;

	for (int tries = 0; done < n && tries < 64; tries++) {
		int k = uroce_backend_tx(b, d + done, n - done);

		if (k < 0)
			return;
		if (k == 0) {
			struct pollfd pfd = { .fd = uroce_backend_fd(b), .events = POLLOUT };

			poll(&pfd, 1, 1);
		}
		done += k;
	}
}

static void do_tx(struct uroce_ctx *c, uint64_t now)
{
	if (c->orphan)
		return; /* the parent's sockets: nothing of the child's copy goes out */
	uroce_pace_sent(&c->pace);
	/* Under a channel's lease, ACKs kept for the reply go ahead of it (see below). */
	bool resp_first = uroce_pace_channel_leased(&c->pace, now);

	for (int round = 0; round < 64; round++) {
		int n = uroce_eng_tx(c->eng, now, c->burst.txp, CTX_BURST), n1 = 0, n2 = 0;

		if (n <= 0)
			return;
		/*
		 * Requests first, then responses (ACKs, read and atomic responses), each in the
		 * engine's order: the two are independent streams, and an ACK sent ahead of the
		 * request that answers the peer (a ping-pong's next message) would delay it by a
		 * trip through the kernel; nor do ACKs split runs of data packets (GSO). A thread
		 * that sleeps on a completion channel is the exception: programs that take one
		 * event and then poll one CQ (perftest -e) count on the completion of their send
		 * coming before the reply's, as it does from a peer that ACKs at once.
		 */
		for (int pass = 0; pass < 2; pass++) {
			/* The last packet resolved: a message's packets share its path. */
			int prev = -1;

			for (int i = 0; i < n; i++) {
				const struct uroce_tx_pkt *t = &c->burst.txp[i];
				bool resp = uroce_opinfo[t->hdr[0]].flags & UROCE_OPF_RESP;

				if (resp != (pass == (resp_first ? 0 : 1)))
					continue;
				if (prev >= 0 && t->av == c->burst.txp[prev].av &&
				    t->src_qpn == c->burst.txp[prev].src_qpn &&
				    t->dst_qpn == c->burst.txp[prev].dst_qpn)
					c->burst.path[i] = c->burst.path[prev];
				else if (resolve(c, t, &c->burst.path[i]))
					continue; /* unresolvable: dropped; RC retransmits */
				prev = i;
				struct uroce_tx_desc *d = c->burst.path[i].encap == UROCE_ENCAP_V1
								  ? &c->burst.d1[n1++]
								  : &c->burst.d2[n2++];

				d->pkt = &c->burst.txp[i];
				d->path = &c->burst.path[i];
				d->icrc_xor = 0;
			}
		}
		if (n1 && c->v1)
			send_all(c->v1, c->burst.d1, n1);
		if (n2 && c->v2)
			send_all(c->v2, c->burst.d2, n2);
	}
}

/* After a round that kept what it made to send: ACKs alone may wait for the application's next
 * post (uroce_pace_kept). Lock held. */
static void keep_acks(struct uroce_ctx *c, uint64_t now)
{
	uroce_pace_kept(&c->pace, now, uroce_eng_tx_acks_only(c->eng));
}

/* ---- receive ------------------------------------------------------------------------------- */

static int gid_index(const struct uroce_ctx *c, const uint8_t gid[16], enum uroce_encap encap)
{
	enum uroce_gid_type want = encap == UROCE_ENCAP_V1 ? UROCE_GID_V1 : UROCE_GID_V2;

	for (int i = 0; i < c->ifc.ngids; i++)
		if (c->ifc.gids[i].type == want && memcmp(c->ifc.gids[i].gid, gid, 16) == 0)
			return i;
	return -1;
}

/*
 * A RoCE v2 packet reached a device that supports only RoCE v1 (its sockets listen on the
 * RoCE v2 port for this purpose only): a counted drop, as on a v1-only NIC, which never sees it.
 * A connection request among them is what a v2 client of a v1-only server sends: say so once
 * per power of two, with the fix, because the client only sees a timeout.
 */
static void version_drop(struct uroce_ctx *c, struct uroce_backend *b, const struct uroce_rx_pkt *p)
{
	const uint8_t *d = p->data;
	uint64_t n = ++b->cnt[UROCE_IO_RX_DROP_VERSION];
	char from[INET6_ADDRSTRLEN] = "?";

	/* BTH opcode UD SEND_ONLY to QP1, then DETH, then a CM MAD (class 7) with attribute REQ. */
	if (p->len < 12 + 8 + UROCE_MAD_HDR_LEN || d[0] != UROCE_OP_UD_SEND_ONLY ||
	    uroce_get_be24(d + 5) != UROCE_GSI_QPN ||
	    d[UROCE_SHARE_OFF_CLASS] != UROCE_MGMT_CLASS_CM ||
	    uroce_get_be16(d + UROCE_SHARE_OFF_ATTR) != UROCE_CM_ATTR_REQ)
		return;
	c->version_reqs++;
	if (c->version_reqs & (c->version_reqs - 1))
		return;
	if (uroce_gid_is_v4(p->sgid))
		inet_ntop(AF_INET, p->sgid + 12, from, sizeof(from));
	else
		inet_ntop(AF_INET6, p->sgid, from, sizeof(from));
	fprintf(stderr,
		"uroce: %s: ignored a RoCE v2 connection request from %s (%llu so far; %llu RoCE v2 "
		"packets dropped): this device supports RoCE v1 only. Connect over RoCE v1: set the "
		"client device's default RoCE mode with `uroce mode -d <device> -p 1 -m 1`\n",
		c->def.name, from, (unsigned long long)c->version_reqs, (unsigned long long)n);
}

/*
 * The GID index a multicast packet arrived on: the first of the device's GIDs of its RoCE
 * version and address family (a group address is no GID of ours; rxe_chk_dgid lets multicast
 * through the same way).
 */
static int mcast_gid_index(const struct uroce_ctx *c, const struct uroce_rx_pkt *p)
{
	enum uroce_gid_type want = p->encap == UROCE_ENCAP_V1 ? UROCE_GID_V1 : UROCE_GID_V2;
	bool v4 = p->encap == UROCE_ENCAP_V2_IPV4;

	for (int i = 0; i < c->ifc.ngids; i++)
		if (c->ifc.gids[i].type == want &&
		    (want == UROCE_GID_V1 || uroce_gid_is_v4(c->ifc.gids[i].gid) == v4))
			return i;
	return -1;
}

/* Receive one burst from b into the engine; returns how many packets came (<= 0: none). */
static int rx_burst(struct uroce_ctx *c, struct uroce_backend *b, uint64_t now)
{
	int n = uroce_backend_rx(b, c->burst.rxd, CTX_BURST);

	for (int i = 0; i < n; i++) {
		struct uroce_rx_pkt *p = &c->burst.rxd[i].pkt;
		int idx = uroce_gid_is_mcast(p->dgid) ? mcast_gid_index(c, p)
						      : gid_index(c, p->dgid, p->encap);

		if (idx < 0) {
			/* Not an address (or RoCE version) of this device, like rxe's
			 * rxe_match_dgid. */
			if (p->encap != UROCE_ENCAP_V1 && !(c->def.roce & UROCE_ROCE_V2))
				version_drop(c, b, p);
			else
				b->cnt[UROCE_IO_RX_DROP_NOT_FOR_US]++;
			continue;
		}
		p->sgid_index = (uint8_t)idx;
		uroce_eng_rx(c->eng, now, p);
	}
	return n;
}

/* Receive and process up to 16 bursts (counted in rx_got); returns whether more may be
 * waiting. */
static bool do_rx(struct uroce_ctx *c, struct uroce_backend *b, uint64_t now)
{
	if (!b || c->orphan)
		return false; /* the parent's sockets: the child takes none of its packets */
	for (int round = 0; round < 16; round++) {
		int n = rx_burst(c, b, now);

		if (n > 0)
			c->prog.rx_got += n;
		if (n < CTX_BURST)
			return false;
	}
	/* A backend may hold packets it already took from the kernel (the rest of a GRO
	 * datagram): the sockets need not be readable for them, so the next round must not wait. */
	return true;
}

static void drain_events(struct uroce_ctx *c)
{
	struct uroce_event ev;

	while (uroce_eng_poll_event(c->eng, &ev) == 1) {
		c->prog.comp_events += ev.type == UROCE_EVENT_COMP;
		/* An orphan's events are not reported: the callback's eventfds are the
		 * parent's. */
		if (c->on_event && !c->orphan)
			c->on_event(c->arg, &ev);
	}
}

/* I/O counter k summed over the context's backends. Lock held. */
static uint64_t io_count(const struct uroce_ctx *c, enum uroce_io_counter k)
{
	return (c->v2 ? uroce_backend_counter(c->v2, k) : 0) +
	       (c->v1 ? uroce_backend_counter(c->v1, k) : 0);
}

static void stats_flush(struct uroce_ctx *c)
{
	uint64_t delta[UROCE_CNT_MAX];

	if (!c->stats.file)
		return;
	for (int i = 0; i < UROCE_CNT_MAX; i++) {
		uint64_t v = uroce_eng_counter(c->eng, (enum uroce_counter)i);

		delta[i] = v - c->stats.eng_sent[i];
		c->stats.eng_sent[i] = v;
	}
	uroce_stats_add_all(c->stats.file, delta);

	uint64_t io[UROCE_IO_CNT_MAX];

	for (int k = 0; k < UROCE_IO_CNT_MAX; k++) {
		uint64_t v = io_count(c, (enum uroce_io_counter)k);

		io[k] = v - c->stats.io_sent[k]; /* a backend closed took its counts out (rebind_v2) */
		c->stats.io_sent[k] = v;
	}
	uroce_stats_add_io(c->stats.file, io);
}

/* Receive and timers: a round's first half. */
static void round_rx(struct uroce_ctx *c, uint64_t now)
{
	c->prog.rx_got = 0;
	bool more = do_rx(c, c->v2, now);

	c->prog.rx_more = do_rx(c, c->v1, now) || more;
	uroce_eng_advance(c->eng, now);
}

/* Events and counters: a round's last part. */
static void round_end(struct uroce_ctx *c, uint64_t now)
{
	drain_events(c);
	if (now - c->stats.at > STATS_PERIOD) {
		c->stats.at = now;
		stats_flush(c);
	}
}

/* Receive, timers, transmit (unless tx is false: the packets wait for the next round). */
static void round_at(struct uroce_ctx *c, uint64_t now, bool tx)
{
	round_rx(c, now);
	if (tx)
		do_tx(c, now);
	round_end(c, now);
}

/* The lease renewed at now: the progress thread's timer goes on before it wakes for nothing.
 * Lock held. */
static void lease_timer_follows(struct uroce_ctx *c, uint64_t now)
{
	if (c->prog.timer_fd < 0)
		return;
	uint64_t to = uroce_pace_move_timer(
		&c->pace, now, atomic_load_explicit(&c->prog.timer_at, memory_order_relaxed));

	if (to)
		set_timer(c, to);
}

/* An application thread's poll round: receive, timers, and transmit unless the pacing keeps
 * what the round makes for the thread's next call (uroce_pace_poll_round_sends). Lock held. */
static uint64_t poll_round(struct uroce_ctx *c, uint64_t now)
{
	bool pending = uroce_eng_tx_pending(c->eng);
	bool tx = uroce_pace_poll_round_sends(&c->pace, now, pending,
					      pending && uroce_eng_tx_acks_only(c->eng));

	round_at(c, now, tx);
	uint64_t end = uroce_mono_ns();

	if (!tx)
		keep_acks(c, end);
	uroce_pace_poll_ended(&c->pace, now, end);
	lease_timer_follows(c, end);
	return end;
}

/* An empty poll at now that runs no round: ACKs waiting for the thread's next post wait on;
 * anything else to send goes now. Lock held. */
static void poll_no_round(struct uroce_ctx *c, uint64_t now)
{
	if (uroce_pace_acks_wait(&c->pace, now, uroce_eng_tx_acks_only(c->eng)))
		drain_events(c);
	else
		uroce_ctx_poll_idle(c);
}

bool uroce_ctx_polled(struct uroce_ctx *c, enum uroce_ctx_poll what)
{
	if (c->orphan)
		return false;
	switch (what) {
	case UROCE_CTX_POLL_FOUND:
		uroce_pace_poll_found(&c->pace, uroce_mono_ns());
		return false;
	case UROCE_CTX_POLL_EMPTY: {
		uint64_t now = uroce_mono_ns();

		if (uroce_pace_poll_drains(&c->pace, now)) {
			poll_no_round(c, now);
			return false;
		}
		c->round_end = poll_round(c, now);
		return true;
	}
	case UROCE_CTX_POLL_STILL_EMPTY:
		/* The CQ was polled again right after the round: the round's end is the time. */
		poll_no_round(c, c->round_end);
		return false;
	}
	return false;
}

void uroce_ctx_poll_idle(struct uroce_ctx *c)
{
	if (!c->orphan && uroce_eng_tx_pending(c->eng))
		do_tx(c, uroce_mono_ns());
	else if (!c->orphan)
		uroce_pace_sent(&c->pace); /* nothing held, nothing waits */
	drain_events(c);
}

bool uroce_ctx_app_sleeps(struct uroce_ctx *c)
{
	/* What the lease held back; under a channel's lease, ACKs kept for the thread's next post
	 * wait on (the thread's channel wait sends them when their hold ends). */
	uint64_t now = uroce_mono_ns();

	if (uroce_pace_channel_leased(&c->pace, now))
		poll_no_round(c, now);
	else
		uroce_ctx_poll_idle(c);
	return uroce_pace_app_sleeps(&c->pace, now);
}

void uroce_ctx_arm_unlock(struct uroce_ctx *c)
{
	bool kick = uroce_ctx_app_sleeps(c);

	uroce_ctx_unlock(c);
	if (kick)
		uroce_ctx_kick(c);
}

bool uroce_ctx_post_tx(struct uroce_ctx *c, size_t bytes)
{
	if (c->orphan)
		return false;
	uint64_t now = uroce_mono_ns();
	bool held = uroce_pace_post(&c->pace, now, bytes);

	if (held)
		return uroce_pace_posted(&c->pace, now, true, false, UROCE_NEVER);
	uroce_ctx_poll_idle(c);
	now = uroce_mono_ns(); /* the post ends after its send */
	bool pending = uroce_eng_tx_pending(c->eng);
	uint64_t deadline = !pending && uroce_pace_asleep(&c->pace) ? uroce_eng_next_deadline(c->eng)
								    : UROCE_NEVER;

	return uroce_pace_posted(&c->pace, now, false, pending, deadline);
}

void uroce_ctx_post_unlock(struct uroce_ctx *c, size_t bytes)
{
	bool kick = uroce_ctx_post_tx(c, bytes);

	uroce_ctx_unlock(c);
	if (kick)
		uroce_ctx_kick(c);
}

/* The progress thread's round: what it makes to send after receiving may wait for a polling
 * application thread's next post (uroce_pace_round_sends); after answering a READ or an atomic,
 * or reporting a completion, it may spin (uroce_pace_round_ended). Lock held. */
static void reply_round(struct uroce_ctx *c, uint64_t now)
{
	bool hold = uroce_pace_reply_holds_now(&c->pace, now);
	uint64_t events = c->prog.comp_events;

	round_rx(c, now);
	bool responds = c->prog.rx_got > 0 && uroce_eng_tx_responds(c->eng);
	bool pending = uroce_eng_tx_pending(c->eng);

	switch (uroce_pace_round_sends(hold, pending, pending && uroce_eng_tx_acks_only(c->eng))) {
	case UROCE_PACE_SEND:
		do_tx(c, now);
		break;
	case UROCE_PACE_KEEP_ACKS:
		keep_acks(c, uroce_mono_ns());
		break;
	case UROCE_PACE_NOTHING:
		break;
	}
	round_end(c, now);
	uroce_pace_round_ended(&c->pace, now, c->prog.rx_got, responds || c->prog.comp_events != events);
}

/* The device's sockets: where in pfd[] a sleep watches them (-1: not), and which woke it. */
struct sock_watch {
	int v2_at, v1_at;
};

/* Append the sockets' pollfds to pfd[*n]. Lock held, or in the progress thread (the one that
 * replaces c->v2, rebind_v2). */
static struct sock_watch watch_sockets(struct uroce_ctx *c, struct pollfd *pfd, int *n)
{
	struct sock_watch w = {-1, -1};

	if (c->v2) {
		w.v2_at = *n;
		pfd[(*n)++] = (struct pollfd){.fd = uroce_backend_fd(c->v2), .events = POLLIN};
	}
	if (c->v1) {
		w.v1_at = *n;
		pfd[(*n)++] = (struct pollfd){.fd = uroce_backend_fd(c->v1), .events = POLLIN};
	}
	return w;
}

/* Tell each backend whether its socket woke the sleep (uroce_udp_woken, uroce_packet_woken).
 * Lock held. */
static void sockets_woken(struct uroce_ctx *c, const struct pollfd *pfd, struct sock_watch w)
{
	if (w.v2_at >= 0 && (pfd[w.v2_at].revents & POLLIN))
		uroce_udp_woken(c->v2);
	if (w.v1_at >= 0 && (pfd[w.v1_at].revents & POLLIN))
		uroce_packet_woken(c->v1);
}

int uroce_ctx_channel_wait(struct uroce_ctx *c, int fd)
{
	if (c->orphan || c->pace.busy_poll)
		return 1;
	struct pollfd pfd[3] = {{.fd = fd, .events = POLLIN}};
	int n = 1;

	pthread_mutex_lock(&c->lock);
	uint64_t now = uroce_mono_ns();

	uroce_pace_channel_sleeps(&c->pace, now);
	lease_timer_follows(c, now);
	/* ACKs kept for this thread's next post go when their hold ends. */
	struct timespec ts = {0, 0}, *tsp = NULL;

	if (uroce_eng_tx_pending(c->eng)) {
		uint64_t ns = uroce_pace_acks_wait(&c->pace, now, uroce_eng_tx_acks_only(c->eng))
				      ? c->pace.reply_hold - now
				      : 0;

		ts = (struct timespec){.tv_sec = (time_t)(ns / 1000000000u),
				       .tv_nsec = (long)(ns % 1000000000u)};
		tsp = &ts;
	}
	struct sock_watch w = watch_sockets(c, pfd, &n);

	pthread_mutex_unlock(&c->lock);
	if (ppoll(pfd, (nfds_t)n, tsp, NULL) < 0)
		return -errno;
	pthread_mutex_lock(&c->lock);
	uroce_pace_channel_sleeps(&c->pace, uroce_mono_ns()); /* it woke */
	if (pfd[0].revents) {
		pthread_mutex_unlock(&c->lock);
		return pfd[0].revents & POLLIN ? 0 : 1; /* POLLNVAL: the fd was closed */
	}
	sockets_woken(c, pfd, w);
	reply_round(c, uroce_mono_ns());
	pthread_mutex_unlock(&c->lock);
	return 0;
}

struct uroce_pace_spin uroce_ctx_spin_state(struct uroce_ctx *c)
{
	return c->pace.spin;
}

static void *progress_main(void *arg)
{
	struct uroce_ctx *c = arg;
	struct pollfd pfd[5];

	while (!atomic_load(&c->prog.stop)) {
		int n = 0;
		uint64_t ns = uroce_pace_hold_off(&c->pace, uroce_mono_ns(),
						  atomic_load(&c->lock_waiters));
		bool sockets = false;

		if (!ns) {
			pthread_mutex_lock(&c->lock);
			uint64_t now = uroce_mono_ns();
			struct uroce_pace_sleep sl = uroce_pace_plan_sleep(
				&c->pace, now, uroce_eng_next_deadline(c->eng),
				uroce_eng_tx_pending(c->eng), c->prog.rx_more,
				atomic_load_explicit(&c->lock_waiters, memory_order_relaxed));

			pthread_mutex_unlock(&c->lock);
			ns = sl.ns;
			sockets = sl.sockets;
		}
		pfd[n++] = (struct pollfd){ .fd = c->prog.kick_fd, .events = POLLIN };
		if (c->prog.watch_fd >= 0)
			pfd[n++] = (struct pollfd){ .fd = c->prog.watch_fd, .events = POLLIN };
		struct sock_watch w =
			sockets ? watch_sockets(c, pfd, &n) : (struct sock_watch){-1, -1};

		/* A sleep through a lease (the sockets are not watched) ends on the timer, which
		 * the leased thread moves on (poll_round); any other sleep on ppoll's timeout, one
		 * system call. */
		struct timespec ts = { .tv_sec = (time_t)(ns / 1000000000u),
				       .tv_nsec = (long)(ns % 1000000000u) };
		bool timed = ns && !sockets && c->prog.timer_fd >= 0;

		if (timed) {
			set_timer(c, uroce_mono_ns() + ns);
			pfd[n++] = (struct pollfd){.fd = c->prog.timer_fd, .events = POLLIN};
		}
		if (ppoll(pfd, (nfds_t)n, timed ? NULL : &ts, NULL) < 0 && errno != EINTR)
			break;
		bool kicked = pfd[0].revents & POLLIN;
		bool watch = c->prog.watch_fd >= 0 && (pfd[1].revents & POLLIN);

		if (timed && (pfd[n - 1].revents & POLLIN)) {
			uint64_t v;

			if (read(c->prog.timer_fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
				break;
		}

		if (kicked) {
			uint64_t v;

			if (read(c->prog.kick_fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
				break;
		}
		/* A lease still held (the application polled since we planned): its rounds do the
		 * work, timers included; look again when it may have ended. */
		if (!sockets && !kicked && !watch && uroce_pace_leased(&c->pace, uroce_mono_ns()))
			continue;
		pthread_mutex_lock(&c->lock);
		uroce_pace_woken(&c->pace);
		sockets_woken(c, pfd, w);
		if (watch && uroce_netif_watch_drain(c->prog.watch_fd) > 0) {
			refresh(c);
			rebind_v2(c);
		}
		reply_round(c, uroce_mono_ns());
		if (c->on_round)
			c->on_round(c->arg);
		pthread_mutex_unlock(&c->lock);
	}
	return NULL;
}

/* ---- open and close ------------------------------------------------------------------------ */

/*
 * UROCE_PCAP names one capture file per process: every device a process opens writes into it,
 * and it stays open (flushed at each close) until the process exits, so that opening a second
 * device, or the same one again, does not truncate what the first wrote.
 */
static pthread_mutex_t sink_lock = PTHREAD_MUTEX_INITIALIZER;
static struct uroce_pcap_sink *process_sink;

/* ---- fork ---------------------------------------------------------------------------------- */

/*
 * fork(): the child has the parent's memory, but neither its progress threads nor a right to its
 * sockets, QPN slots and counters, which stay the parent's. Before the fork the forking thread
 * takes every context's lock (so the child's copies are consistent: no round half done); in the
 * child each context becomes an orphan: its descriptors closed (the sockets, whose last
 * reference is the parent's, stay the device's share group's members, untold), its lock free, no
 * I/O, no events and no counters from it, and closing it frees memory only. The child opens devices of its own as any process does. As with
 * rdma-core, the parent's objects are of no use in the child: a poll finds nothing new and a post
 * goes nowhere.
 *
 * Lock order: the CM (librdmacm) takes its lock before a context's, and registers its own fork
 * handlers after these (its library loads after this one), so its prepare handler runs first.
 */
static pthread_mutex_t open_lock = PTHREAD_MUTEX_INITIALIZER;
static struct uroce_ctx *open_ctxs; /* under open_lock */

static void fork_prepare(void)
{
	pthread_mutex_lock(&open_lock);
	for (struct uroce_ctx *c = open_ctxs; c; c = c->next_open)
		pthread_mutex_lock(&c->lock);
	pthread_mutex_lock(&sink_lock);
}

static void fork_parent(void)
{
	pthread_mutex_unlock(&sink_lock);
	for (struct uroce_ctx *c = open_ctxs; c; c = c->next_open)
		pthread_mutex_unlock(&c->lock);
	pthread_mutex_unlock(&open_lock);
}

static void fork_child(void)
{
	pthread_mutex_unlock(&sink_lock);
	for (struct uroce_ctx *c = open_ctxs; c; c = c->next_open) {
		c->orphan = true;
		c->prog.started = false; /* the thread stayed in the parent */
		atomic_store_explicit(&c->lock_waiters, 0, memory_order_relaxed);
		uroce_backend_forget(c->v2);
		uroce_backend_forget(c->v1);
		if (c->prog.kick_fd >= 0)
			close(c->prog.kick_fd);
		if (c->prog.watch_fd >= 0)
			close(c->prog.watch_fd);
		if (c->prog.timer_fd >= 0)
			close(c->prog.timer_fd);
		c->prog.kick_fd = c->prog.watch_fd = c->prog.timer_fd = -1;
		c->slot = -1; /* the parent's */
		pthread_mutex_unlock(&c->lock);
	}
	open_ctxs = NULL;
	uroce_locked_files_forget(); /* a join another thread was in stayed in the parent */
	pthread_mutex_unlock(&open_lock);
}

static void __attribute__((constructor)) fork_handlers(void)
{
	pthread_atfork(fork_prepare, fork_parent, fork_child);
}

static void open_list_add(struct uroce_ctx *c)
{
	pthread_mutex_lock(&open_lock);
	c->next_open = open_ctxs;
	open_ctxs = c;
	pthread_mutex_unlock(&open_lock);
}

static void open_list_del(struct uroce_ctx *c)
{
	pthread_mutex_lock(&open_lock);
	for (struct uroce_ctx **pp = &open_ctxs; *pp; pp = &(*pp)->next_open)
		if (*pp == c) {
			*pp = c->next_open;
			break;
		}
	pthread_mutex_unlock(&open_lock);
}

/*
 * Can a UDP socket bind to this address now? A tentative IPv6 address (duplicate address
 * detection still running) or one that just went away cannot: such addresses are skipped rather
 * than failing the whole device.
 */
static bool addr_bindable(const uint8_t gid[16], unsigned ifindex)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int fd;

	memset(&ss, 0, sizeof(ss));
	if (uroce_gid_is_v4(gid)) {
		struct sockaddr_in *a = (struct sockaddr_in *)&ss;

		a->sin_family = AF_INET;
		memcpy(&a->sin_addr, gid + 12, 4);
		len = sizeof(*a);
	} else {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;

		a->sin6_family = AF_INET6;
		memcpy(&a->sin6_addr, gid, 16);
		if (gid[0] == 0xFE && (gid[1] & 0xC0) == 0x80)
			a->sin6_scope_id = ifindex;
		len = sizeof(*a);
	}
	fd = socket(ss.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return false;
	bool ok = bind(fd, (struct sockaddr *)&ss, len) == 0;

	close(fd);
	return ok;
}

/* The addresses a RoCE v2 socket can be bound to now. */
static int bindable_addrs(struct uroce_ctx *c, uint8_t out[][16])
{
	int n = 0;

	for (int i = 0; i < c->ifc.naddrs; i++)
		if (addr_bindable(c->ifc.addrs[i], c->ifc.info.ifindex))
			memcpy(out[n++], c->ifc.addrs[i], 16);
	return n;
}

/* An on/off setting: off only when the variable is "0". */
static bool env_off(const char *name)
{
	const char *v = getenv(name);

	return v && strcmp(v, "0") == 0;
}

/* The RoCE v2 backend's configuration: the addresses bindable now, the environment's options. */
static void v2_cfg(struct uroce_ctx *c, struct uroce_backend_cfg *cfg, char *err, size_t errlen)
{
	*cfg = (struct uroce_backend_cfg){ .ifname = c->def.netdev, .err = err, .errlen = errlen };
	cfg->port = uroce_udp_port_env();
	cfg->no_gso = env_off("UROCE_GSO");
	cfg->no_gro = env_off("UROCE_GRO");
	cfg->n_addrs = bindable_addrs(c, cfg->addrs);
}

/*
 * Open the RoCE v2 sockets on the addresses that can be bound now, recorded in bound[0..*nbound)
 * (*out stays NULL when there is none). Errors are printed when loud.
 */
static int open_v2(struct uroce_ctx *c, struct uroce_backend **out, uint8_t bound[][16],
		   int *nbound, bool loud)
{
	char err[256] = "";
	struct uroce_backend_cfg cfg;
	int rc;

	v2_cfg(c, &cfg, err, sizeof(err));
	*nbound = cfg.n_addrs;
	memcpy(bound, cfg.addrs, sizeof(cfg.addrs));
	*out = NULL;
	if (!cfg.n_addrs)
		return 0;
	rc = uroce_udp_open_shared(&cfg, &c->share, out);
	if (rc) {
		if (loud)
			fprintf(stderr, "uroce: %s: RoCE v2 sockets: %s\n", c->def.name,
				err[0] ? err : strerror(-rc));
		*out = NULL;
		return rc;
	}
	pthread_mutex_lock(&sink_lock);
	rc = uroce_backend_wrap_env(out, &process_sink, err, sizeof(err));
	pthread_mutex_unlock(&sink_lock);
	if (rc) {
		if (loud)
			fprintf(stderr, "uroce: %s\n", err[0] ? err : strerror(-rc));
		uroce_backend_close(*out);
		*out = NULL;
	}
	return rc;
}

/*
 * The interface's addresses changed: when the set the sockets can bind differs from the bound
 * one, the backend keeps the sockets of the addresses still there (with what they hold: a
 * window of packets lost here would cost the peer an ACK timeout), closes the others and opens
 * the new ones. A tentative IPv6 address becomes bindable when duplicate address detection ends,
 * which the interface watch reports too. Without a backend, or when that fails, every socket is
 * opened again: the old ones close first, since this process may hold each (address, port) in
 * its sharing group only once, and what they hold is received first.
 */
static void rebind_v2(struct uroce_ctx *c)
{
	char err[256] = "";
	struct uroce_backend_cfg cfg;

	v2_cfg(c, &cfg, err, sizeof(err));
	if (cfg.n_addrs == c->ifc.nbound && memcmp(cfg.addrs, c->ifc.bound, (size_t)cfg.n_addrs * 16) == 0)
		return;
	if (c->v2 && cfg.n_addrs && uroce_udp_rebind(c->v2, &cfg, &c->share) == 0) {
		c->ifc.nbound = cfg.n_addrs;
		memcpy(c->ifc.bound, cfg.addrs, sizeof(cfg.addrs));
		return;
	}
	if (c->v2) {
		uint64_t t = uroce_mono_ns();

		for (int i = 0; i < 64 && rx_burst(c, c->v2, t) > 0; i++)
			;
		stats_flush(c); /* its counts, before they go with it */
		for (int k = 0; k < UROCE_IO_CNT_MAX; k++)
			c->stats.io_sent[k] -= uroce_backend_counter(c->v2, (enum uroce_io_counter)k);
		uroce_backend_close(c->v2);
	}
	c->v2 = NULL;
	c->mcast.n = 0; /* the groups' sockets went with the backend */
	if (open_v2(c, &c->v2, c->ifc.bound, &c->ifc.nbound, (c->def.roce & UROCE_ROCE_V2) != 0) &&
	    (c->def.roce & UROCE_ROCE_V2))
		fprintf(stderr, "uroce: %s: no RoCE v2 sockets until the next address change\n",
			c->def.name);
	else if (uroce_ctx_mcast_sync(c))
		fprintf(stderr, "uroce: %s: could not join the multicast groups again\n",
			c->def.name);
}

static int open_backends(struct uroce_ctx *c)
{
	char err[256] = "";
	int rc;

	if (c->def.roce & UROCE_ROCE_V2) {
		rc = open_v2(c, &c->v2, c->ifc.bound, &c->ifc.nbound, true);
		if (rc)
			return rc;
	} else {
		/* A v1-only device listens on the RoCE v2 port too, only to count and explain
		 * the RoCE v2 requests it cannot serve (version_drop). Best effort. */
		open_v2(c, &c->v2, c->ifc.bound, &c->ifc.nbound, false);
	}
	if (c->def.roce & UROCE_ROCE_V1) {
		struct uroce_backend_cfg cfg = { .ifname = c->def.netdev, .err = err,
						 .errlen = sizeof(err), .qpn_lo = c->share.qpn_lo,
						 .qpn_hi = c->share.qpn_hi };

		rc = uroce_packet_open_shared(&cfg, &c->share, &c->v1);
		if (rc == -EPERM) {
			/* Not fatal: v2 still works; v1 GIDs cannot send. */
			fprintf(stderr, "uroce: %s: %s\n", c->def.name, UROCE_PACKET_EPERM_MSG);
			c->v1 = NULL;
		} else if (rc) {
			fprintf(stderr, "uroce: %s: RoCE v1 socket: %s\n", c->def.name,
				err[0] ? err : strerror(-rc));
			return rc;
		} else {
			pthread_mutex_lock(&sink_lock);
			rc = uroce_backend_wrap_env(&c->v1, &process_sink, err, sizeof(err));
			pthread_mutex_unlock(&sink_lock);
			if (rc) {
				fprintf(stderr, "uroce: %s\n", err[0] ? err : strerror(-rc));
				return rc;
			}
		}
	}
	return 0;
}

int uroce_ctx_open(const char *name, const struct uroce_ctx_cfg *cfg, struct uroce_ctx **out)
{
	struct uroce_ctx *c = calloc(1, sizeof(*c));
	int rc;

	if (!c)
		return -ENOMEM;
	c->prog.kick_fd = -1;
	c->prog.watch_fd = -1;
	c->prog.timer_fd = -1;
	c->slot = -1;
	pthread_mutex_init(&c->lock, NULL);
	rc = uroce_rundir_path(c->rundir, sizeof(c->rundir));
	if (rc)
		goto fail;
	rc = uroce_dev_find(c->rundir, name, &c->def);
	if (rc)
		goto fail;
	refresh(c);
	if (!c->ifc.info.netdev_present) {
		rc = -ENETDOWN;
		goto fail;
	}
	c->on_event = cfg ? cfg->on_event : NULL;
	c->on_round = cfg ? cfg->on_round : NULL;
	c->arg = cfg ? cfg->arg : NULL;
	const char *bp = getenv("UROCE_BUSY_POLL");

	uroce_pace_init(&c->pace, bp && bp[0] == '1', !env_off("UROCE_SPIN"));

	struct uroce_eng_cfg ecfg;

	uroce_eng_cfg_default(&ecfg);
	ecfg.port_mtu = (uint8_t)uroce_mtu_enum(c->ifc.info.active_mtu);
	/* QPNs: a block of slots of the run-time directory's registry, pid-derived when free
	 * (io/share_slots.h). A QP takes a CQ or two, and often a region or an address handle:
	 * those tables are as large (pointers, paged in as they fill). */
	if (cfg && cfg->qpn_base)
		ecfg.qpn_base = cfg->qpn_base;
	else if (uroce_share_slot_take(c->rundir, &c->slot) == 0)
		ecfg.qpn_base = UROCE_SHARE_QPN_BASE(c->slot);
	else
		ecfg.qpn_base = UROCE_SHARE_QPN_BASE(
			((uint32_t)getpid() * UROCE_SHARE_PROC_SLOTS) & (UROCE_SHARE_SLOTS - 1));
	ecfg.max_qp = UROCE_SHARE_PROC_QPNS;
	ecfg.max_cq = UROCE_SHARE_PROC_QPNS;
	ecfg.max_mr = UROCE_SHARE_PROC_QPNS;
	ecfg.max_ah = UROCE_SHARE_PROC_QPNS;
	c->share = (struct uroce_share_cfg){ .rundir = c->rundir, .qpn_lo = ecfg.qpn_base,
					     .qpn_hi = ecfg.qpn_base + ecfg.max_qp - 1 };
	rc = uroce_eng_create(&c->eng, &ecfg);
	if (rc)
		goto fail;
	/* Memory the application lost under a registration is an access error, not a signal
	 * (mem_guard.h); UROCE_MEM_GUARD=0 leaves faults to the process. */
	if (!env_off("UROCE_MEM_GUARD") && uroce_mem_guard_install() == 0)
		uroce_eng_set_mem_guard(c->eng, uroce_mem_guard, NULL);
	rc = open_backends(c);
	if (rc)
		goto fail;
	c->prog.kick_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (c->prog.kick_fd < 0) {
		rc = -errno;
		goto fail;
	}
	c->prog.watch_fd = uroce_netif_watch_open();
	c->prog.timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (uroce_stats_open(c->rundir, c->def.name, &c->stats.file))
		c->stats.file = NULL; /* counters are best effort (read-only run-time directory) */
	c->stats.at = uroce_mono_ns();
	rc = -pthread_create(&c->prog.thread, NULL, progress_main, c);
	if (rc)
		goto fail;
	c->prog.started = true;
	open_list_add(c);
	*out = c;
	return 0;
fail:
	uroce_ctx_close(c);
	return rc;
}

/* Stop c's progress thread (c's lock not held). */
static void stop_progress(struct uroce_ctx *c)
{
	if (c->prog.started) {
		atomic_store(&c->prog.stop, true);
		uroce_ctx_kick(c);
		pthread_join(c->prog.thread, NULL);
		c->prog.started = false;
	}
}

/* What c holds outside this process's memory, given back (the progress thread stopped): what
 * is queued goes out first (a last ACK, a DREQ), then the counters, the sockets (leaving the
 * device's share groups in order), the capture's buffer and the QPN slot. */
static void release_io(struct uroce_ctx *c)
{
	if (c->eng) {
		round_at(c, uroce_mono_ns(), true);
		stats_flush(c);
	}
	uroce_backend_close(c->v2);
	uroce_backend_close(c->v1);
	c->v2 = c->v1 = NULL;
	pthread_mutex_lock(&sink_lock);
	if (process_sink)
		uroce_pcap_sink_flush(process_sink);
	pthread_mutex_unlock(&sink_lock);
	if (c->slot >= 0)
		uroce_share_slot_put(c->rundir, c->slot);
	c->slot = -1;
}

static bool on_own_progress_thread(const struct uroce_ctx *c)
{
	return c->prog.started && pthread_equal(c->prog.thread, pthread_self());
}

/* uroce_ctxs_lockable_at_exit, open_lock held. */
static bool all_lockable_at_exit(void)
{
	for (struct uroce_ctx *c = open_ctxs; c; c = c->next_open) {
		if (on_own_progress_thread(c))
			continue;
		if (!uroce_exit_lock(&c->lock))
			return false;
		pthread_mutex_unlock(&c->lock);
	}
	/* A device's open joins its share groups under their file locks before the context
	 * exists: a thread interrupted there holds one outside every context's lock. */
	return uroce_locked_files_released_by(uroce_mono_ns() + UROCE_EXIT_LOCK_NS);
}

bool uroce_ctxs_lockable_at_exit(void)
{
	if (!uroce_exit_lock(&open_lock))
		return false;
	bool ok = all_lockable_at_exit();

	pthread_mutex_unlock(&open_lock);
	return ok;
}

/*
 * At exit, every context still open leaves its share groups, as a close would: the kernel's
 * closing of a dead process's sockets moves other members' sockets in an order the survivors
 * can only guess when several die together (io/share_group.h), while a leave keeps the group's
 * order known. Programs rarely close their devices before they exit, and librdmacm's CM never
 * does. The context stays in memory as an orphan (threads of the program may still call verbs
 * on it while the process exits: they find no I/O). librdmacm's exit handler, which sends the
 * CM's last messages through these contexts, runs before this one.
 */
static void __attribute__((destructor)) leave_at_exit(void)
{
	/* exit() from a signal handler may have interrupted a thread inside a context's lock
	 * (uroce_ctxs_lockable_at_exit): then the kernel closes everything. */
	if (!uroce_exit_lock(&open_lock))
		return;
	if (!all_lockable_at_exit()) {
		pthread_mutex_unlock(&open_lock);
		return;
	}
	for (struct uroce_ctx *c = open_ctxs; c; c = c->next_open) {
		if (on_own_progress_thread(c))
			continue; /* exit() called from a callback on the progress thread */
		stop_progress(c);
		pthread_mutex_lock(&c->lock);
		release_io(c);
		c->orphan = true;
		pthread_mutex_unlock(&c->lock);
	}
	open_ctxs = NULL;
	pthread_mutex_unlock(&open_lock);
}

void uroce_ctx_close(struct uroce_ctx *c)
{
	if (!c)
		return;
	/* An orphan (a forked child's copy, or a context left at exit) has no thread and no I/O of
	 * its own: its memory and its own descriptors go, nothing else. */
	if (!c->orphan) {
		open_list_del(c);
		stop_progress(c);
		release_io(c);
	}
	uroce_backend_close(c->v2); /* an orphan's: memory only (forgotten at the fork) */
	uroce_backend_close(c->v1);
	uroce_stats_close(c->stats.file);
	uroce_eng_destroy(c->eng);
	if (c->prog.kick_fd >= 0)
		close(c->prog.kick_fd);
	if (c->prog.watch_fd >= 0)
		close(c->prog.watch_fd);
	if (c->prog.timer_fd >= 0)
		close(c->prog.timer_fd);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

void uroce_ctx_lock(struct uroce_ctx *c)
{
	if (pthread_mutex_trylock(&c->lock) == 0)
		return;
	atomic_fetch_add_explicit(&c->lock_waiters, 1, memory_order_relaxed);
	pthread_mutex_lock(&c->lock);
	atomic_fetch_sub_explicit(&c->lock_waiters, 1, memory_order_relaxed);
}

void uroce_ctx_unlock(struct uroce_ctx *c)
{
	/* Events the caller's engine calls raised (a flush completion, say) are reported now. */
	drain_events(c);
	pthread_mutex_unlock(&c->lock);
}

void uroce_ctx_kick(struct uroce_ctx *c)
{
	uint64_t one = 1;

	if (c->orphan)
		return; /* the eventfd is shared with the parent's progress thread */
	if (uroce_write(c->prog.kick_fd, &one, sizeof(one)) < 0) {
		/* EAGAIN: the counter is already non-zero, the thread will wake. */
	}
}

struct uroce_eng *uroce_ctx_eng(struct uroce_ctx *c)
{
	return c->eng;
}

const struct uroce_devdef *uroce_ctx_devdef(const struct uroce_ctx *c)
{
	return &c->def;
}

void uroce_ctx_devinfo(struct uroce_ctx *c, struct uroce_devinfo *out)
{
	pthread_mutex_lock(&c->lock);
	*out = c->ifc.info;
	pthread_mutex_unlock(&c->lock);
}

int uroce_ctx_gids(struct uroce_ctx *c, struct uroce_gid_entry *out, int max)
{
	pthread_mutex_lock(&c->lock);
	int n = c->ifc.ngids < max ? c->ifc.ngids : max;

	memcpy(out, c->ifc.gids, (size_t)n * sizeof(*out));
	pthread_mutex_unlock(&c->lock);
	return n;
}

uint64_t uroce_ctx_io_counter(struct uroce_ctx *c, enum uroce_io_counter k)
{
	uint64_t v;

	pthread_mutex_lock(&c->lock);
	v = io_count(c, k);
	pthread_mutex_unlock(&c->lock);
	return v;
}

/* Apply c->share's claims to both backends' groups. */
static int gsi_apply(struct uroce_ctx *c)
{
	int r = c->v2 ? uroce_udp_share_gsi(c->v2, &c->share) : 0;

	return r ? r : c->v1 ? uroce_packet_share_gsi(c->v1, &c->share) : 0;
}

int uroce_ctx_gsi_steer(struct uroce_ctx *c, const uint64_t *ids, int n)
{
	struct uroce_share_cfg old;
	int r;

	if (n < 0 || (n > 0 && !ids))
		return -EINVAL;
	if (n > UROCE_SHARE_MAX_CLAIMS)
		return -ENOSPC;
	if (c->orphan)
		return 0; /* the steering is the parent's */
	pthread_mutex_lock(&c->lock);
	old = c->share;
	c->share.cm = true;
	c->share.nids = n;
	if (n)
		memcpy(c->share.ids, ids, sizeof(ids[0]) * (size_t)n);
	r = gsi_apply(c);
	if (r) {
		/* Groups updated before the failing one get the old claims back, which no other
		 * member can have taken meanwhile (they were ours). */
		c->share = old;
		gsi_apply(c);
	}
	pthread_mutex_unlock(&c->lock);
	return r;
}

uint32_t uroce_ctx_slot(const struct uroce_ctx *c)
{
	return UROCE_SHARE_SLOT_OF(c->share.qpn_lo);
}

void uroce_ctx_count_cm(struct uroce_ctx *c, const uint64_t delta[UROCE_CM_CNT_MAX])
{
	if (c->stats.file)
		uroce_stats_add_cm(c->stats.file, delta);
}

/* Is gid among list[0..n)? */
static int gid_in(const uint8_t (*list)[16], int n, const uint8_t gid[16])
{
	for (int i = 0; i < n; i++)
		if (memcmp(list[i], gid, 16) == 0)
			return i;
	return -1;
}

int uroce_ctx_mcast_sync(struct uroce_ctx *c)
{
	uint8_t want[UROCE_MAX_MCAST_GRP][16];
	int n = uroce_mcast_groups(c->eng, want, UROCE_MAX_MCAST_GRP), rc = 0;

	if (c->orphan)
		return 0; /* the memberships are the parent's sockets' */
	if (n > UROCE_MAX_MCAST_GRP)
		n = UROCE_MAX_MCAST_GRP;
	for (int i = 0; i < c->mcast.n;) {
		if (gid_in((const uint8_t(*)[16])want, n, c->mcast.gid[i]) >= 0) {
			i++;
			continue;
		}
		if (c->v2)
			uroce_udp_mcast_leave(c->v2, c->mcast.gid[i]);
		memcpy(c->mcast.gid[i], c->mcast.gid[--c->mcast.n], 16);
	}
	if (!(c->def.roce & UROCE_ROCE_V2))
		return n ? -EOPNOTSUPP : 0; /* no RoCE v1 multicast (AF_PACKET membership): say so */
	if (!c->v2)
		return 0; /* no address bound yet: joined when the sockets open (rebind_v2) */
	for (int i = 0; i < n; i++) {
		if (gid_in((const uint8_t(*)[16])c->mcast.gid, c->mcast.n, want[i]) >= 0)
			continue;
		int r = c->mcast.n == UROCE_UDP_MAX_GROUPS ? -ENOSPC
							    : uroce_udp_mcast_join(c->v2, want[i]);

		if (r) {
			rc = rc ? rc : r;
			continue;
		}
		memcpy(c->mcast.gid[c->mcast.n++], want[i], 16);
	}
	return rc;
}
