/* SPDX-License-Identifier: MIT */
/*
 * The CM agents (QP1 of every device) and the CM thread (rdmacm.h).
 *
 * QP1 buffers: UROCE_CMA_RECVS receive slots of 40 (GRH) + 256 bytes, then UROCE_CMA_SENDS send
 * slots of 256 bytes, in one registered region. A send slot holds its address handle until the
 * send completes (wr_id = slot index | SEND_TAG).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "compat/rdmacm/rdmacm.h"
#include "compat/ibverbs_for_rdmacm.h"
#include "compat/rdmacm/addr.h"
#include "host/config/device.h"
#include "host/config/gid.h"
#include "host/config/rundir.h"
#include "host/os/exit_lock.h"
#include "host/os/mono_clock.h"
#include "wire/mad.h"

#define UROCE_CMA_RECVS 64
#define UROCE_CMA_SENDS 64
#define RECV_SLOT	(40 + UROCE_MAD_LEN)
#define SEND_TAG	(1ull << 32)

/* The kernel's rdma_cm values for RoCE (roce-reference.md 2.4, 2.5): a 20 CM response timeout
 * and packet lifetime 16 give 2 x 2^(16-8) + 2^(20-8) ms per try, 15 retries. */
#define CMA_KERNEL_TIMEOUT_MS (2 * (1u << 8) + (1u << 12))
#define CMA_KERNEL_RETRIES    15

pthread_mutex_t cma_lock = PTHREAD_MUTEX_INITIALIZER;

static struct {
	pthread_once_t once;
	int err;
	int ndev;
	struct cma_dev *devs;
	struct ibv_device **list;
	int epfd, wakefd;
	bool started; /* the CM thread and the will */
	pthread_t thread;
	pid_t pid; /* the process that opened the devices (not a forked child) */
} g = {.once = PTHREAD_ONCE_INIT};

uint64_t cma_now(void)
{
	return uroce_mono_ns();
}

static unsigned env_uint(const char *name, unsigned dflt, unsigned max)
{
	const char *s = getenv(name);
	char *end;
	unsigned long v;

	if (!s || !*s)
		return dflt;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || v > max) {
		fprintf(stderr, "uroce: ignoring %s=%s (not a number up to %u)\n", name, s, max);
		return dflt;
	}
	return (unsigned)v;
}

void cma_timing(struct uroce_ibcm_timing *t)
{
	t->timeout_ms = env_uint("UROCE_CM_TIMEOUT_MS", CMA_KERNEL_TIMEOUT_MS, 3600000);
	if (t->timeout_ms == 0)
		t->timeout_ms = 1;
	t->max_retries = (uint8_t)env_uint("UROCE_CM_RETRIES", CMA_KERNEL_RETRIES, 15);
}

int cma_ndevs(void)
{
	return g.ndev;
}

struct cma_dev *cma_devs(int i)
{
	return &g.devs[i];
}

struct cma_dev *cma_dev_of_verbs(struct ibv_context *verbs)
{
	for (int i = 0; i < g.ndev; i++)
		if (g.devs[i].verbs == verbs)
			return &g.devs[i];
	return NULL;
}

void cma_kick(void)
{
	uint64_t one = 1;

	if (write(g.wakefd, &one, sizeof(one)) < 0) {
		/* the counter is saturated: the thread is awake anyway */
	}
}

/* ---- QP1 ------------------------------------------------------------------------------------ */

static int post_recv(struct cma_dev *d, unsigned slot)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)(d->buf + (size_t)slot * RECV_SLOT),
		.length = RECV_SLOT,
		.lkey = d->mr->lkey,
	};
	struct ibv_recv_wr wr = {.wr_id = slot, .sg_list = &sge, .num_sge = 1}, *bad;

	return -ibv_post_recv(d->qp1, &wr, &bad);
}

static uint8_t *send_buf(struct cma_dev *d, unsigned slot)
{
	return d->buf + (size_t)UROCE_CMA_RECVS * RECV_SLOT + (size_t)slot * UROCE_MAD_LEN;
}

static void handle_wc(struct cma_dev *d, const struct ibv_wc *wc)
{
	if (wc->wr_id & SEND_TAG) {
		unsigned slot = (unsigned)(wc->wr_id & 0xFFFF);

		if (slot < UROCE_CMA_SENDS && d->send_ah[slot]) {
			ibv_destroy_ah(d->send_ah[slot]);
			d->send_ah[slot] = NULL;
		}
		return;
	}
	if (wc->wr_id >= UROCE_CMA_RECVS)
		return;
	if (wc->status == IBV_WC_SUCCESS && wc->byte_len >= 40 + UROCE_MAD_LEN) {
		uint8_t *p = d->buf + (size_t)wc->wr_id * RECV_SLOT;
		struct ibv_ah_attr ah;
		struct ibv_wc w = *wc;

		if (ibv_init_ah_from_wc(d->verbs, 1, &w, (struct ibv_grh *)p, &ah) == 0) {
			struct uroce_ibcm_addr from = {
				.sgid_index = ah.grh.sgid_index,
				.hop_limit = 64,
				.traffic_class = ah.grh.traffic_class,
				.flow_label = ah.grh.flow_label,
			};

			memcpy(from.dgid, ah.grh.dgid.raw, 16);
			uroce_ibcm_recv(d->cm, &from, p + 40, UROCE_MAD_LEN, cma_now());
		}
	}
	if (wc->status != IBV_WC_WR_FLUSH_ERR)
		post_recv(d, (unsigned)wc->wr_id);
}

static void poll_dev(struct cma_dev *d)
{
	struct ibv_wc wc[16];
	int n;

	if (!d->gsi_ready)
		return;
	while ((n = ibv_poll_cq(d->cq, 16, wc)) > 0)
		for (int i = 0; i < n; i++)
			handle_wc(d, &wc[i]);
}

static int ibcm_send(void *arg, const struct uroce_ibcm_addr *to, const uint8_t *mad)
{
	struct cma_dev *d = arg;
	struct ibv_ah_attr a = {
		.is_global = 1,
		.port_num = 1,
		.grh = {.sgid_index = to->sgid_index,
			.hop_limit = to->hop_limit ? to->hop_limit : 64,
			.traffic_class = to->traffic_class,
			.flow_label = to->flow_label},
	};
	struct ibv_sge sge;
	struct ibv_send_wr wr = {0}, *bad;
	unsigned slot;
	int err;

	poll_dev(d); /* reclaim finished sends */
	for (slot = 0; slot < UROCE_CMA_SENDS && d->send_ah[slot]; slot++)
		;
	if (slot == UROCE_CMA_SENDS)
		return -ENOBUFS;
	memcpy(a.grh.dgid.raw, to->dgid, 16);
	d->send_ah[slot] = ibv_create_ah(d->pd, &a);
	if (!d->send_ah[slot])
		return -errno;
	memcpy(send_buf(d, slot), mad, UROCE_MAD_LEN);
	sge.addr = (uintptr_t)send_buf(d, slot);
	sge.length = UROCE_MAD_LEN;
	sge.lkey = d->mr->lkey;
	wr.wr_id = SEND_TAG | slot;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.ud.ah = d->send_ah[slot];
	wr.wr.ud.remote_qpn = UROCE_GSI_QPN;
	wr.wr.ud.remote_qkey = UROCE_GSI_QKEY;
	err = ibv_post_send(d->qp1, &wr, &bad);
	if (err) {
		ibv_destroy_ah(d->send_ah[slot]);
		d->send_ah[slot] = NULL;
		return -err;
	}
	return 0;
}

/*
 * Wait (bounded: 200 ms) until every MAD posted on d's QP1 has left, polling its completions.
 * The kernel's CM delivers what rdma_disconnect or rdma_destroy_id queued even when the process
 * exits right after; ours is in the process, so the calls that may be the last (disconnect,
 * reject, destroy) wait for their MADs to be sent. Lock held; released while waiting.
 */
void cma_dev_flush(struct cma_dev *d)
{
	uint64_t end = cma_now() + 200000000ull;

	for (;;) {
		bool busy = false;

		poll_dev(d);
		for (unsigned i = 0; i < UROCE_CMA_SENDS && !busy; i++)
			busy = d->send_ah[i] != NULL;
		if (!busy || cma_now() > end)
			return;
		pthread_mutex_unlock(&cma_lock);
		sched_yield();
		pthread_mutex_lock(&cma_lock);
	}
}

/* Add what d's CM engine counted since the last call to the device's counter file (`uroce
 * stats`). Lock held. */
_Static_assert((int)UROCE_IBCM_C_COUNT == (int)UROCE_CM_CNT_MAX, "one counter list");
static void cm_stats_flush(struct cma_dev *d)
{
	uint64_t delta[UROCE_IBCM_C_COUNT];
	bool any = false;

	for (int k = 0; k < UROCE_IBCM_C_COUNT; k++) {
		uint64_t v = uroce_ibcm_counter(d->cm, (enum uroce_ibcm_counter)k);

		delta[k] = v - d->cm_counted[k];
		d->cm_counted[k] = v;
		any = any || delta[k];
	}
	if (any)
		uroce_ibv_count_cm(d->verbs, delta);
}

/*
 * At exit: what the kernel would do for a process's connections (DREQ for the established
 * ones), sent before the process is gone. exit() from a signal handler may have interrupted a
 * thread inside cma_lock or a context's lock (host/os/exit_lock.h,
 * uroce_ctxs_lockable_at_exit): then nothing is sent; the wills send the DREQs once the process
 * is gone.
 */
static void __attribute__((destructor)) cma_at_exit(void)
{
	if (!g.ndev || getpid() != g.pid)
		return; /* nothing opened, or a forked child: the connections are the parent's */
	if (!uroce_exit_lock(&cma_lock))
		return;
	if (!uroce_ibv_lockable_at_exit()) {
		pthread_mutex_unlock(&cma_lock);
		return;
	}
	cma_close_all();
	for (int i = 0; i < g.ndev; i++) {
		if (g.devs[i].gsi_ready) {
			cma_dev_flush(&g.devs[i]);
			cm_stats_flush(&g.devs[i]);
		}
	}
	pthread_mutex_unlock(&cma_lock);
}

/*
 * fork(): the child starts without a CM. The parent's (its devices' agents, thread, ids,
 * channels, will) stays the parent's: the child forgets it, leaving its memory alone, and its
 * first rdma_cm call opens the devices anew, as a new process would. The forking thread holds
 * cma_lock across the fork, so the child's copy is consistent; libibverbs's handlers (taking
 * each context's lock, cma_lock's inner lock) run after this prepare and before this child.
 */
static void fork_prepare(void)
{
	pthread_mutex_lock(&cma_lock);
}

static void fork_parent(void)
{
	pthread_mutex_unlock(&cma_lock);
}

static void fork_child(void)
{
	/* The child's copy of the device list holds a reference to each device: dropped (contexts
	 * opened from it hold their own). */
	if (g.list)
		ibv_free_device_list(g.list);
	if (g.pid) {
		if (g.epfd >= 0)
			close(g.epfd);
		if (g.wakefd >= 0)
			close(g.wakefd);
	}
	memset(&g, 0, sizeof(g));
	g.once = (pthread_once_t)PTHREAD_ONCE_INIT;
	cma_ids_forget();
	cma_chans_forget();
	cma_will_forget();
	pthread_mutex_unlock(&cma_lock);
}

static void __attribute__((constructor)) fork_handlers(void)
{
	pthread_atfork(fork_prepare, fork_parent, fork_child);
}

static const struct uroce_ibcm_ops ibcm_ops = {
	.send = ibcm_send,
	.event = cma_on_ibcm_event,
};

static int qp1_to_rts(struct cma_dev *d)
{
	struct ibv_qp_attr a = {0};
	int rc;

	a.qp_state = IBV_QPS_INIT;
	a.pkey_index = 0;
	a.port_num = 1;
	a.qkey = UROCE_GSI_QKEY;
	rc = ibv_modify_qp(d->qp1, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_QKEY);
	if (rc)
		return -rc;
	a.qp_state = IBV_QPS_RTR;
	rc = ibv_modify_qp(d->qp1, &a, IBV_QP_STATE);
	if (rc)
		return -rc;
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0;
	return -ibv_modify_qp(d->qp1, &a, IBV_QP_STATE | IBV_QP_SQ_PSN);
}

/* Set up QP1 and the CM engine of an opened device. */
static int agent_open(struct cma_dev *d)
{
	struct ibv_qp_init_attr qa = {0};
	struct ibv_port_attr pa;
	struct uroce_ibcm_cfg cfg = {0};
	size_t len = (size_t)UROCE_CMA_RECVS * RECV_SLOT + (size_t)UROCE_CMA_SENDS * UROCE_MAD_LEN;
	int err;

	snprintf(d->name, sizeof(d->name), "%s", ibv_get_device_name(d->verbs->device));
	if (ibv_query_device(d->verbs, &d->attr) || ibv_query_port(d->verbs, 1, &pa))
		return -EIO;
	d->active_mtu = (uint8_t)pa.active_mtu;
	d->node_guid = be64toh(d->attr.node_guid);
	d->pd = ibv_alloc_pd(d->verbs);
	d->cch = ibv_create_comp_channel(d->verbs);
	if (!d->pd || !d->cch)
		return -ENOMEM;
	d->cq = ibv_create_cq(d->verbs, UROCE_CMA_RECVS + UROCE_CMA_SENDS, d, d->cch, 0);
	d->buf = calloc(1, len);
	d->send_ah = calloc(UROCE_CMA_SENDS, sizeof(*d->send_ah));
	if (!d->cq || !d->buf || !d->send_ah)
		return -ENOMEM;
	d->mr = ibv_reg_mr(d->pd, d->buf, len, IBV_ACCESS_LOCAL_WRITE);
	if (!d->mr)
		return -errno;
	qa.send_cq = d->cq;
	qa.recv_cq = d->cq;
	qa.qp_type = IBV_QPT_UD;
	qa.cap.max_send_wr = UROCE_CMA_SENDS;
	qa.cap.max_recv_wr = UROCE_CMA_RECVS;
	qa.cap.max_send_sge = 1;
	qa.cap.max_recv_sge = 1;
	d->qp1 = uroce_ibv_create_gsi_qp(d->pd, &qa);
	if (!d->qp1)
		return -errno;
	err = qp1_to_rts(d);
	if (err)
		return err;
	for (unsigned i = 0; i < UROCE_CMA_RECVS; i++) {
		err = post_recv(d, i);
		if (err)
			return err;
	}
	cfg.ops = &ibcm_ops;
	cfg.arg = d;
	cfg.comm_id_prefix = uroce_ibv_slot(d->verbs) & 0xFFF;
	cfg.ca_guid = d->node_guid;
	cfg.hi_tid = (uint32_t)getpid() ^ (uint32_t)cma_now();
	cfg.timewait_ms = env_uint("UROCE_CM_TIMEWAIT_MS", 1000, 3600000);
	cfg.seed = (uint32_t)(cma_now() >> 10) ^ (uint32_t)getpid() << 8;
	err = uroce_ibcm_create(&cfg, &d->cm);
	if (err)
		return err;
	if (fcntl(d->cch->fd, F_SETFL, fcntl(d->cch->fd, F_GETFL) | O_NONBLOCK) < 0)
		return -errno;
	if (ibv_req_notify_cq(d->cq, 0))
		return -EIO;
	d->gsi_ready = true;
	return 0;
}

/* ---- the CM thread ---------------------------------------------------------------------- */

static void *cm_thread(void *arg)
{
	(void)arg;
	for (;;) {
		struct epoll_event ev[8];
		uint64_t now, next = UINT64_MAX;
		int n, timeout;

		pthread_mutex_lock(&cma_lock);
		now = cma_now();
		for (int i = 0; i < g.ndev; i++) {
			struct cma_dev *d = &g.devs[i];

			if (!d->gsi_ready)
				continue;
			poll_dev(d);
			ibv_req_notify_cq(d->cq, 0);
			poll_dev(d); /* what arrived before the notification was armed */
			uroce_ibcm_advance(d->cm, now);
			cm_stats_flush(d);
			if (uroce_ibcm_next_deadline(d->cm) < next)
				next = uroce_ibcm_next_deadline(d->cm);
		}
		pthread_mutex_unlock(&cma_lock);
		if (next == UINT64_MAX)
			timeout = -1;
		else if (next <= now)
			timeout = 0;
		else
			timeout = (int)((next - now + 999999) / 1000000);
		n = epoll_wait(g.epfd, ev, 8, timeout);
		for (int i = 0; i < n; i++) {
			struct cma_dev *d = ev[i].data.ptr;

			if (!d) {
				uint64_t v;

				if (read(g.wakefd, &v, sizeof(v)) < 0) {
					/* nothing to read: woken twice */
				}
				continue;
			}
			for (;;) {
				struct ibv_cq *cq;
				void *ctx;

				if (ibv_get_cq_event(d->cch, &cq, &ctx))
					break;
				ibv_ack_cq_events(cq, 1);
			}
		}
	}
	return NULL;
}

/* d's definition (host/config/device.h), read without opening it. 0 or a negative errno. */
static int dev_def(const struct cma_dev *d, struct uroce_devdef *def)
{
	char rundir[256];

	if (uroce_rundir_path(rundir, sizeof(rundir)))
		return -ENOENT;
	return uroce_dev_find(rundir, ibv_get_device_name(d->ibdev), def);
}

/* Whether a device may carry RoCE v1 connections (its definition has v1), which then need a
 * RoCE v1 will. */
static bool any_v1(void)
{
	for (int i = 0; i < g.ndev; i++) {
		struct uroce_devdef def;

		if (dev_def(&g.devs[i], &def) == 0 && (def.roce & UROCE_ROCE_V1))
			return true;
	}
	return false;
}

/* The CM thread and the last will, with the first device opened. Lock held. */
static void start_thread(void)
{
	struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL};
	pthread_attr_t at;

	g.started = true;
	/* A watchdog sends our DREQs if this process dies (will.h); without it, peers learn
	 * of a dead process from their own timeouts only. */
	cma_will_start(any_v1());
	epoll_ctl(g.epfd, EPOLL_CTL_ADD, g.wakefd, &ev);
	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&g.thread, &at, cm_thread, NULL))
		fprintf(stderr, "uroce: no connection manager thread: %s\n", strerror(errno));
	pthread_attr_destroy(&at);
}

/* Open d if it was not tried yet (lock held): its context (d->verbs, NULL when the device
 * would not open), its agent (gsi_ready when it came up), and with the first device the CM
 * thread and the will. */
static void dev_open(struct cma_dev *d)
{
	struct epoll_event ev = {.events = EPOLLIN, .data.ptr = d};
	int err;

	if (d->opened)
		return;
	d->opened = true;
	d->verbs = ibv_open_device(d->ibdev);
	if (!d->verbs)
		return;
	if (!g.started)
		start_thread();
	err = agent_open(d);
	if (err) {
		fprintf(stderr, "uroce: %s: no connection manager on this device: %s\n", d->name,
			strerror(-err));
		return;
	}
	epoll_ctl(g.epfd, EPOLL_CTL_ADD, d->cch->fd, &ev);
	cma_steer_update(); /* the listens made before it was opened */
}

void cma_dev_open_all(void)
{
	for (int i = 0; i < g.ndev; i++)
		dev_open(&g.devs[i]);
}

/* Whether the unopened device d's table, built from its interface, holds gid: 1 or 0, or -1
 * when its definition cannot be read (the caller then opens it to look). */
static int table_has(const struct cma_dev *d, const uint8_t gid[16])
{
	static struct uroce_gid_entry e[UROCE_GID_TABLE_MAX];
	struct uroce_devdef def;
	int n;

	if (dev_def(d, &def))
		return -1;
	n = uroce_gid_table_build(&def, e, UROCE_GID_TABLE_MAX);
	for (int i = 0; i < n; i++)
		if (!memcmp(e[i].gid, gid, 16))
			return 1;
	return 0;
}

struct cma_dev *cma_dev_with_gid(const uint8_t gid[16])
{
	for (int i = 0; i < g.ndev; i++) {
		struct cma_dev *d = &g.devs[i];

		if (!d->opened && table_has(d, gid) != 0)
			dev_open(d);
		if (d->verbs && cma_gid_find(d->verbs, gid, -1) >= 0)
			return d;
	}
	return NULL;
}

static void init_once(void)
{
	int n = 0;

	g.pid = getpid();
	/* The contexts opened later keep their devices: the list stays (as rdma-core's). */
	g.list = ibv_get_device_list(&n);
	if (!g.list || n == 0) {
		g.err = -ENODEV;
		return;
	}
	g.devs = calloc((size_t)n, sizeof(*g.devs));
	g.epfd = epoll_create1(EPOLL_CLOEXEC);
	g.wakefd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (!g.devs || g.epfd < 0 || g.wakefd < 0) {
		g.err = -ENOMEM;
		return;
	}
	for (int i = 0; i < n; i++)
		g.devs[i].ibdev = g.list[i];
	g.ndev = n;
}

int cma_init(void)
{
	pthread_once(&g.once, init_once);
	return g.err;
}

struct ibv_context **rdma_get_devices(int *num_devices)
{
	struct ibv_context **v;
	int n = 0, err = cma_init();

	if (err) {
		if (num_devices)
			*num_devices = 0;
		errno = -err;
		return NULL;
	}
	v = calloc((size_t)g.ndev + 1, sizeof(*v));
	if (!v) {
		errno = ENOMEM;
		return NULL;
	}
	pthread_mutex_lock(&cma_lock);
	cma_dev_open_all();
	for (int i = 0; i < g.ndev; i++)
		if (g.devs[i].verbs)
			v[n++] = g.devs[i].verbs;
	pthread_mutex_unlock(&cma_lock);
	if (num_devices)
		*num_devices = n;
	return v;
}

void rdma_free_devices(struct ibv_context **list)
{
	free(list);
}
