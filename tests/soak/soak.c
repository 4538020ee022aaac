/* SPDX-License-Identifier: MIT */
/*
 * soak: one process of the soak (tests/soak/soak.sh, scripts/soak). N processes (ids 0..N-1,
 * up to SOAK_MAX) each talk to every other over the verbs with every transport at once:
 *   RC  one QP per peer, SENDs: every message must arrive, in order, its bytes intact;
 *   UC  one QP per peer, SENDs: what arrives must be intact; losses are counted;
 *   UD  one QP, SENDs to every peer in turn through an address handle per peer: the same.
 * Every message is MSG_HDR bytes of header (magic, source, destination, transport, sequence
 * number, length) and a payload drawn from a generator seeded by those, so the receiver checks
 * each byte it gets against what the sender must have sent; lengths vary per message (up to
 * 16 KiB for RC and UC, which go as several 1024-byte packets; up to 2 KiB for UD).
 *
 *   soak -i ID -n N -d DEVICE -a IPV4 -D DIR -t SECONDS
 *
 * DEVICE is the uroce device this process uses (processes share it), IPV4 its address (the RoCE
 * v2 GID used is the one of that address). DIR is a directory all N processes see: the
 * out-of-band exchange and the phase barriers are files there, each written whole under a
 * temporary name and renamed into place:
 *   ID.info   GID, UD QPN and the RC and UC QPNs this process made for each peer;
 *   ID.ready  every QP is in RTS and its receives are posted (traffic starts when all are);
 *   ID.sent   this process sent for SECONDS and every one of its sends completed: per peer, the
 *             number of RC, UC and UD messages it sent there;
 *   ID.done   it received every RC message its peers' ID.sent files announce.
 * A process tears down only once every ID.done exists, so each stays to acknowledge its peers'
 * last messages. Start PSNs are a function of (sender, receiver, transport), so both ends
 * compute them.
 *
 * Waits are poll() on the completion channel with a short timeout, looking at the barrier files
 * in between; the whole run is bounded (SECONDS + LIMIT_EXTRA_S), and a phase not done by then is
 * a failure that names it. The process samples its own resident set size and open descriptors
 * once warmed up (an eighth of the run, at most 30 s in) and again when its traffic ends, and
 * prints them with its counts on one line:
 *   result id=ID rc_sent=.. rc_recv=.. uc_sent=.. uc_recv=.. uc_lost=.. uc_dup=.. uc_reord=..
 *     ud_sent=.. ud_recv=.. ud_lost=.. ud_dup=.. ud_reord=.. recv_wc=.. bytes_sent=.. bytes_recv=..
 *     rss_kb_start=.. rss_kb_end=.. fd_start=.. fd_end=..
 * (recv_wc: successful receive completions, duplicates included; *_recv: distinct messages;
 * *_dup: a message that arrived again; *_reord: one that arrived after a later one). Exits 0
 * when every check passed, 1 after a line naming the first that failed.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#define SOAK_MAX 16
#define MSG_HDR	 32
#define MSG_MAGIC 0x4b414f53u /* "SOAK" */
#define CM_MAX	 16384	      /* RC and UC message bytes at most */
#define UD_MAX	 2048	      /* UD message bytes at most */
#define GRH_LEN	 40
#define SWIN	 8   /* sends in flight per RC and UC QP */
#define UD_SWIN	 16  /* sends in flight on the UD QP */
#define RDEPTH	 16  /* receives posted per RC and UC QP */
#define UD_RDEPTH 128 /* receives posted on the UD QP */
#define QKEY	 0x50a50a5u
#define WIN	 4096 /* UC and UD: sequence numbers remembered below the highest, for duplicates */
#define LIMIT_EXTRA_S 120
#define POLL_MS	 20
#define REPORT_MS 10000 /* a line on stderr with the resident set and descriptors */

enum { T_RC, T_UC, T_UD, T_N };
static const char *const tname[T_N] = {"rc", "uc", "ud"};

/* What one process sends to one peer on one transport. */
struct tx {
	uint64_t next;	/* the next sequence number to post */
	uint64_t done;	/* sends completed */
	uint64_t bytes; /* bytes of completed sends */
	int inflight;
};

/* What one process received from one peer on one transport. */
struct rx {
	uint64_t recv;	/* distinct messages */
	uint64_t wc;	/* completions */
	uint64_t bytes; /* bytes of distinct messages */
	uint64_t dup, reord;
	uint64_t hi; /* the highest sequence number seen, plus one */
	uint64_t seen[WIN / 64]; /* bit (seq % WIN) for the sequence numbers in [hi - WIN, hi) */
};

struct peer {
	union ibv_gid gid;
	uint32_t ud_qpn;
	uint32_t qpn[2]; /* its RC and UC QPs towards us */
	struct ibv_qp *qp[2]; /* our RC and UC QPs towards it */
	struct ibv_ah *ah;
	struct tx tx[T_N];
	struct rx rx[T_N];
	uint64_t announced[T_N]; /* what its ID.sent says it sent us */
};

static struct {
	int id, n;
	const char *dev, *addr, *dir;
	int secs;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_comp_channel *ch;
	struct ibv_cq *scq, *rcq;
	struct ibv_mr *mr;
	uint8_t *buf;
	size_t buflen;
	struct ibv_qp *ud;
	int gidx;
	union ibv_gid gid;
	struct peer p[SOAK_MAX];
	int ud_inflight, ud_next_peer;
	uint64_t ud_posted;
	bool failed;
} S;

/* ---- the message generator ------------------------------------------------------------- */

static uint64_t mix(uint64_t x)
{
	x += 0x9E3779B97F4A7C15ull;
	x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
	x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
	return x ^ (x >> 31);
}

static uint64_t msg_key(int src, int dst, int t, uint64_t seq)
{
	return mix(mix(((uint64_t)src << 16) | ((uint64_t)dst << 8) | (uint64_t)t) ^ seq);
}

/* A message's length: a quarter short (up to 256 bytes), the rest up to the transport's most. */
static uint32_t msg_len(int src, int dst, int t, uint64_t seq)
{
	uint64_t k = mix(msg_key(src, dst, t, seq));
	uint32_t most = t == T_UD ? UD_MAX : CM_MAX;

	if ((k & 3) == 0)
		most = 256;
	return MSG_HDR + (uint32_t)((k >> 8) % (most - MSG_HDR + 1));
}

static uint32_t psn_of(int src, int dst, int t)
{
	return (uint32_t)(mix(msg_key(src, dst, t, ~0ull)) & 0xFFFFFF);
}

static void put32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, 4);
}

static void put64(uint8_t *p, uint64_t v)
{
	memcpy(p, &v, 8);
}

static uint32_t get32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return v;
}

static uint64_t get64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

static void msg_fill(uint8_t *p, int src, int dst, int t, uint64_t seq, uint32_t len)
{
	uint64_t x = msg_key(src, dst, t, seq) | 1;

	memset(p, 0, MSG_HDR);
	put32(p, MSG_MAGIC);
	p[4] = (uint8_t)src;
	p[5] = (uint8_t)dst;
	p[6] = (uint8_t)t;
	put64(p + 8, seq);
	put32(p + 16, len);
	for (uint32_t i = MSG_HDR; i < len; i += 8) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		memcpy(p + i, &x, len - i < 8 ? len - i : 8);
	}
}

/* The first byte of p[0, len) that differs from message (src, dst, t, seq), or -1. */
static long msg_diff(const uint8_t *p, uint32_t len, int src, int dst, int t, uint64_t seq)
{
	uint8_t h[MSG_HDR] = {0};
	uint64_t x = msg_key(src, dst, t, seq) | 1;

	put32(h, MSG_MAGIC);
	h[4] = (uint8_t)src;
	h[5] = (uint8_t)dst;
	h[6] = (uint8_t)t;
	put64(h + 8, seq);
	put32(h + 16, len);
	for (uint32_t i = 0; i < MSG_HDR; i++)
		if (p[i] != h[i])
			return i;
	for (uint32_t i = MSG_HDR; i < len; i += 8) {
		uint32_t n = len - i < 8 ? len - i : 8;

		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		if (memcmp(p + i, &x, n))
			for (uint32_t j = 0; j < n; j++)
				if (p[i + j] != ((const uint8_t *)&x)[j])
					return i + j;
	}
	return -1;
}

/* ---- small helpers ----------------------------------------------------------------------- */

__attribute__((format(printf, 1, 2))) static void failf(const char *fmt, ...)
{
	va_list ap;

	if (S.failed)
		return;
	S.failed = true;
	fprintf(stderr, "FAIL: soak %d: ", S.id);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static long rss_kb(void)
{
	long pages = -1, rss = -1;
	FILE *f = fopen("/proc/self/statm", "r");

	if (f) {
		if (fscanf(f, "%ld %ld", &pages, &rss) != 2)
			rss = -1;
		fclose(f);
	}
	return rss < 0 ? -1 : rss * (sysconf(_SC_PAGESIZE) / 1024);
}

/* Open descriptors, the directory stream's own not counted. */
static int fd_count(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n - 1;
}

static void path_of(char *buf, size_t cap, int id, const char *what)
{
	snprintf(buf, cap, "%s/%d.%s", S.dir, id, what);
}

/* Write text as DIR/ID.what, whole: under a temporary name, then renamed. 0 or -1. */
static int file_put(const char *what, const char *text)
{
	char tmp[4096], dst[4096];
	FILE *f;

	snprintf(tmp, sizeof(tmp), "%s/.%d.%s.tmp", S.dir, S.id, what);
	path_of(dst, sizeof(dst), S.id, what);
	f = fopen(tmp, "w");
	if (!f || fputs(text, f) < 0 || fclose(f) || rename(tmp, dst)) {
		failf("writing %s: %s", dst, strerror(errno));
		return -1;
	}
	return 0;
}

static bool file_exists(int id, const char *what)
{
	char p[4096];

	path_of(p, sizeof(p), id, what);
	return access(p, F_OK) == 0;
}

static bool all_exist(const char *what)
{
	for (int i = 0; i < S.n; i++)
		if (!file_exists(i, what))
			return false;
	return true;
}

/* ---- set-up ------------------------------------------------------------------------------- */

static int find_gid(void)
{
	struct ibv_port_attr pa;
	uint8_t want[16] = {[10] = 0xff, [11] = 0xff};

	if (inet_pton(AF_INET, S.addr, want + 12) != 1) {
		failf("'%s' is not an IPv4 address", S.addr);
		return -1;
	}
	if (ibv_query_port(S.ctx, 1, &pa)) {
		failf("ibv_query_port: %s", strerror(errno));
		return -1;
	}
	for (int i = 0; i < pa.gid_tbl_len; i++) {
		struct ibv_gid_entry e;

		if (ibv_query_gid_ex(S.ctx, 1, (uint32_t)i, &e, 0))
			break;
		if (e.gid_type == IBV_GID_TYPE_ROCE_V2 && !memcmp(e.gid.raw, want, 16)) {
			S.gidx = i;
			S.gid = e.gid;
			return 0;
		}
	}
	failf("%s has no RoCE v2 GID for %s", S.dev, S.addr);
	return -1;
}

/* The buffer: per peer, RC then UC, SWIN send slots then RDEPTH receive slots of CM_MAX; then
 * UD_SWIN send slots of UD_MAX and UD_RDEPTH receive slots of GRH_LEN + UD_MAX. */
#define CM_SLOTS (SWIN + RDEPTH)
#define UD_SSLOT (UD_MAX)
#define UD_RSLOT (GRH_LEN + UD_MAX)

static uint8_t *cm_send_slot(int peer, int t, int k)
{
	return S.buf + ((size_t)(peer * 2 + t) * CM_SLOTS + (size_t)k) * CM_MAX;
}

static uint8_t *cm_recv_slot(int peer, int t, int k)
{
	return cm_send_slot(peer, t, SWIN + k);
}

static uint8_t *ud_area(void)
{
	return S.buf + (size_t)SOAK_MAX * 2 * CM_SLOTS * CM_MAX;
}

static uint8_t *ud_send_slot(int k)
{
	return ud_area() + (size_t)k * UD_SSLOT;
}

static uint8_t *ud_recv_slot(int k)
{
	return ud_area() + (size_t)UD_SWIN * UD_SSLOT + (size_t)k * UD_RSLOT;
}

/* wr_id: transport, peer and slot. */
static uint64_t wrid(int t, int peer, int k)
{
	return ((uint64_t)t << 56) | ((uint64_t)peer << 48) | (uint64_t)k;
}

static int post_recv(int t, int peer, int k)
{
	struct ibv_sge sge = {.lkey = S.mr->lkey};
	struct ibv_recv_wr wr = {.wr_id = wrid(t, peer, k), .sg_list = &sge, .num_sge = 1}, *bad;
	struct ibv_qp *qp;
	int err;

	if (t == T_UD) {
		sge.addr = (uintptr_t)ud_recv_slot(k);
		sge.length = UD_RSLOT;
		qp = S.ud;
	} else {
		sge.addr = (uintptr_t)cm_recv_slot(peer, t, k);
		sge.length = CM_MAX;
		qp = S.p[peer].qp[t];
	}
	err = ibv_post_recv(qp, &wr, &bad);
	if (err)
		failf("ibv_post_recv (%s, peer %d): %s", tname[t], peer, strerror(err));
	return err ? -1 : 0;
}

static struct ibv_qp *make_qp(enum ibv_qp_type type, int swr, int rwr)
{
	struct ibv_qp_init_attr a = {
		.send_cq = S.scq,
		.recv_cq = S.rcq,
		.cap = {.max_send_wr = (uint32_t)swr, .max_recv_wr = (uint32_t)rwr,
			.max_send_sge = 1, .max_recv_sge = 1},
		.qp_type = type,
	};
	struct ibv_qp *qp = ibv_create_qp(S.pd, &a);

	if (!qp)
		failf("ibv_create_qp (type %d): %s", (int)type, strerror(errno));
	return qp;
}

static int setup(void)
{
	struct ibv_device **list;
	char text[4096];
	size_t off = 0;
	int n;

	list = ibv_get_device_list(&n);
	if (!list) {
		failf("ibv_get_device_list: %s", strerror(errno));
		return -1;
	}
	for (int i = 0; i < n && !S.ctx; i++)
		if (!strcmp(ibv_get_device_name(list[i]), S.dev))
			S.ctx = ibv_open_device(list[i]);
	ibv_free_device_list(list);
	if (!S.ctx) {
		failf("cannot open device %s", S.dev);
		return -1;
	}
	if (find_gid())
		return -1;
	S.buflen = (size_t)SOAK_MAX * 2 * CM_SLOTS * CM_MAX + (size_t)UD_SWIN * UD_SSLOT +
		   (size_t)UD_RDEPTH * UD_RSLOT;
	/* Touched whole now, so that the resident set counts the buffer from the start and its
	 * growth later is the stack's, not this program's first use of its pages. */
	S.buf = malloc(S.buflen);
	if (S.buf)
		memset(S.buf, 0, S.buflen);
	S.pd = ibv_alloc_pd(S.ctx);
	S.ch = ibv_create_comp_channel(S.ctx);
	if (!S.buf || !S.pd || !S.ch) {
		failf("buffer, PD or completion channel: %s", strerror(errno));
		return -1;
	}
	S.mr = ibv_reg_mr(S.pd, S.buf, S.buflen, IBV_ACCESS_LOCAL_WRITE);
	S.scq = ibv_create_cq(S.ctx, 2 * SOAK_MAX * SWIN + UD_SWIN, NULL, S.ch, 0);
	S.rcq = ibv_create_cq(S.ctx, 2 * SOAK_MAX * RDEPTH + UD_RDEPTH, NULL, S.ch, 0);
	if (!S.mr || !S.scq || !S.rcq) {
		failf("MR or CQs: %s", strerror(errno));
		return -1;
	}
	S.ud = make_qp(IBV_QPT_UD, UD_SWIN, UD_RDEPTH);
	if (!S.ud)
		return -1;
	for (int j = 0; j < S.n; j++) {
		if (j == S.id)
			continue;
		for (int t = T_RC; t <= T_UC; t++) {
			S.p[j].qp[t] = make_qp(t == T_RC ? IBV_QPT_RC : IBV_QPT_UC, SWIN, RDEPTH);
			if (!S.p[j].qp[t])
				return -1;
		}
	}

	off += (size_t)snprintf(text + off, sizeof(text) - off, "gid");
	for (int i = 0; i < 16; i++)
		off += (size_t)snprintf(text + off, sizeof(text) - off, " %u", S.gid.raw[i]);
	off += (size_t)snprintf(text + off, sizeof(text) - off, "\nud %u\n", S.ud->qp_num);
	for (int j = 0; j < S.n; j++)
		if (j != S.id)
			off += (size_t)snprintf(text + off, sizeof(text) - off, "qp %d %u %u\n", j,
						S.p[j].qp[T_RC]->qp_num, S.p[j].qp[T_UC]->qp_num);
	return file_put("info", text);
}

static int read_info(int j)
{
	char p[4096], line[256];
	struct peer *pe = &S.p[j];
	bool have_gid = false, have_ud = false, have_qp = false;
	FILE *f;

	path_of(p, sizeof(p), j, "info");
	f = fopen(p, "r");
	if (!f) {
		failf("%s: %s", p, strerror(errno));
		return -1;
	}
	while (fgets(line, sizeof(line), f)) {
		unsigned g[16], a, b;
		int k;

		if (sscanf(line,
			   "gid %u %u %u %u %u %u %u %u %u %u %u %u %u %u %u %u", &g[0], &g[1],
			   &g[2], &g[3], &g[4], &g[5], &g[6], &g[7], &g[8], &g[9], &g[10], &g[11],
			   &g[12], &g[13], &g[14], &g[15]) == 16) {
			for (int i = 0; i < 16; i++)
				pe->gid.raw[i] = (uint8_t)g[i];
			have_gid = true;
		} else if (sscanf(line, "ud %u", &a) == 1) {
			pe->ud_qpn = a;
			have_ud = true;
		} else if (sscanf(line, "qp %d %u %u", &k, &a, &b) == 3 && k == S.id) {
			pe->qpn[T_RC] = a;
			pe->qpn[T_UC] = b;
			have_qp = true;
		}
	}
	fclose(f);
	if (!have_gid || !have_ud || !have_qp) {
		failf("%s: incomplete", p);
		return -1;
	}
	return 0;
}

static int modify(struct ibv_qp *qp, struct ibv_qp_attr *a, int mask, const char *what, int j)
{
	int err = ibv_modify_qp(qp, a, mask);

	if (err)
		failf("ibv_modify_qp %s (peer %d): %s", what, j, strerror(err));
	return err ? -1 : 0;
}

static int connect_peer(int j)
{
	struct peer *pe = &S.p[j];
	struct ibv_ah_attr ah = {
		.is_global = 1,
		.grh = {.dgid = pe->gid, .sgid_index = (uint8_t)S.gidx, .hop_limit = 64},
		.port_num = 1,
	};

	for (int t = T_RC; t <= T_UC; t++) {
		struct ibv_qp *qp = pe->qp[t];
		struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT, .port_num = 1};
		int rtr = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			  IBV_QP_RQ_PSN;
		int rts = IBV_QP_STATE | IBV_QP_SQ_PSN;

		if (modify(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
					   IBV_QP_ACCESS_FLAGS, "INIT", j))
			return -1;
		a = (struct ibv_qp_attr){
			.qp_state = IBV_QPS_RTR,
			.path_mtu = IBV_MTU_1024,
			.dest_qp_num = pe->qpn[t],
			.rq_psn = psn_of(j, S.id, t),
			.ah_attr = ah,
			.max_dest_rd_atomic = 1,
			.min_rnr_timer = 1,
		};
		if (t == T_RC)
			rtr |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
		if (modify(qp, &a, rtr, "RTR", j))
			return -1;
		/* RC: local ACK timeout 14 (67 ms), retries and RNR retries 7 (unbounded). */
		a = (struct ibv_qp_attr){
			.qp_state = IBV_QPS_RTS,
			.sq_psn = psn_of(S.id, j, t),
			.timeout = 14,
			.retry_cnt = 7,
			.rnr_retry = 7,
			.max_rd_atomic = 1,
		};
		if (t == T_RC)
			rts |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			       IBV_QP_MAX_QP_RD_ATOMIC;
		if (modify(qp, &a, rts, "RTS", j))
			return -1;
		for (int k = 0; k < RDEPTH; k++)
			if (post_recv(t, j, k))
				return -1;
	}
	pe->ah = ibv_create_ah(S.pd, &ah);
	if (!pe->ah) {
		failf("ibv_create_ah (peer %d): %s", j, strerror(errno));
		return -1;
	}
	return 0;
}

static int connect_all(void)
{
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT, .port_num = 1, .qkey = QKEY};

	if (modify(S.ud, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY,
		   "UD INIT", -1))
		return -1;
	a.qp_state = IBV_QPS_RTR;
	if (modify(S.ud, &a, IBV_QP_STATE, "UD RTR", -1))
		return -1;
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = psn_of(S.id, S.id, T_UD);
	if (modify(S.ud, &a, IBV_QP_STATE | IBV_QP_SQ_PSN, "UD RTS", -1))
		return -1;
	for (int k = 0; k < UD_RDEPTH; k++)
		if (post_recv(T_UD, 0, k))
			return -1;
	for (int j = 0; j < S.n; j++)
		if (j != S.id && (read_info(j) || connect_peer(j)))
			return -1;
	return 0;
}

/* ---- traffic ------------------------------------------------------------------------------ */

static int post_send(int t, int j)
{
	struct peer *pe = &S.p[j];
	struct tx *tx = &pe->tx[t];
	uint32_t len = msg_len(S.id, j, t, tx->next);
	struct ibv_sge sge = {.length = len, .lkey = S.mr->lkey};
	struct ibv_send_wr wr = {
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = IBV_WR_SEND,
		.send_flags = IBV_SEND_SIGNALED,
	}, *bad;
	struct ibv_qp *qp;
	uint8_t *p;
	int k, err;

	if (t == T_UD) {
		k = (int)(S.ud_posted % UD_SWIN);
		p = ud_send_slot(k);
		qp = S.ud;
		wr.wr.ud.ah = pe->ah;
		wr.wr.ud.remote_qpn = pe->ud_qpn;
		wr.wr.ud.remote_qkey = QKEY;
	} else {
		k = (int)(tx->next % SWIN);
		p = cm_send_slot(j, t, k);
		qp = pe->qp[t];
	}
	msg_fill(p, S.id, j, t, tx->next, len);
	sge.addr = (uintptr_t)p;
	wr.wr_id = wrid(t, j, k);
	err = ibv_post_send(qp, &wr, &bad);
	if (err) {
		failf("ibv_post_send (%s, peer %d): %s", tname[t], j, strerror(err));
		return -1;
	}
	tx->next++;
	tx->inflight++;
	if (t == T_UD) {
		S.ud_posted++;
		S.ud_inflight++;
	}
	return 0;
}

/*
 * UC and UD complete when sent, so unpaced they would go as fast as the CPU lets them and leave
 * RC's retransmissions little of it: a peer gets a UC or UD message only while fewer than
 * PACE_MUL per RC message completed towards it (plus PACE_ADD) went before.
 */
#define PACE_MUL 4
#define PACE_ADD 64

static bool paced(int t, int j)
{
	return S.p[j].tx[t].next < PACE_MUL * S.p[j].tx[T_RC].done + PACE_ADD;
}

static void post_sends(void)
{
	int tries = S.n;

	for (int j = 0; j < S.n && !S.failed; j++) {
		if (j == S.id)
			continue;
		while (S.p[j].tx[T_RC].inflight < SWIN && !S.failed)
			if (post_send(T_RC, j))
				return;
		while (S.p[j].tx[T_UC].inflight < SWIN && paced(T_UC, j) && !S.failed)
			if (post_send(T_UC, j))
				return;
	}
	/* UD: to the peers in turn, skipping those at their pace, until the window is full. */
	while (S.ud_inflight < UD_SWIN && tries > 0 && !S.failed) {
		int j = S.ud_next_peer;

		S.ud_next_peer = (j + 1) % S.n;
		if (j == S.id || !paced(T_UD, j)) {
			tries--;
			continue;
		}
		tries = S.n;
		if (post_send(T_UD, j))
			return;
	}
}

/* Remember seq in r's window; false when it is a duplicate. */
static bool rx_note(struct rx *r, uint64_t seq)
{
	uint64_t *w = r->seen;

	if (seq >= r->hi) {
		if (seq - r->hi >= WIN)
			memset(r->seen, 0, sizeof(r->seen));
		else
			for (uint64_t s = r->hi; s < seq; s++)
				w[(s % WIN) / 64] &= ~(1ull << (s % 64));
		w[(seq % WIN) / 64] |= 1ull << (seq % 64);
		r->hi = seq + 1;
		return true;
	}
	if (r->hi - seq > WIN) { /* older than the window: cannot tell, counted as reordered */
		r->reord++;
		return true;
	}
	if (w[(seq % WIN) / 64] & (1ull << (seq % 64)))
		return false;
	w[(seq % WIN) / 64] |= 1ull << (seq % 64);
	r->reord++;
	return true;
}

static void on_recv(const struct ibv_wc *wc)
{
	int t = (int)(wc->wr_id >> 56), k = (int)(wc->wr_id & 0xFFFF), j;
	const uint8_t *p;
	uint32_t len = wc->byte_len;
	uint64_t seq;
	long bad;
	struct rx *r;

	if (t == T_UD) {
		p = ud_recv_slot(k) + GRH_LEN;
		if (len < GRH_LEN + MSG_HDR) {
			failf("ud: a %u-byte message (GRH included)", len);
			return;
		}
		len -= GRH_LEN;
		j = p[4];
		if (j >= S.n || j == S.id || wc->src_qp != S.p[j].ud_qpn) {
			failf("ud: a message from source %d, QPN %u", j, wc->src_qp);
			return;
		}
	} else {
		j = (int)((wc->wr_id >> 48) & 0xFF);
		p = cm_recv_slot(j, t, k);
		if (len < MSG_HDR) {
			failf("%s: a %u-byte message from %d", tname[t], len, j);
			return;
		}
	}
	r = &S.p[j].rx[t];
	seq = get64(p + 8);
	if (get32(p) != MSG_MAGIC || seq > (1ull << 40) || len != msg_len(j, S.id, t, seq)) {
		failf("%s: from %d, a message of %u bytes with header magic %#x, sequence %" PRIu64
		      " (%" PRIu64 " expected next)",
		      tname[t], j, len, get32(p), seq, r->hi);
		return;
	}
	bad = msg_diff(p, len, j, S.id, t, seq);
	if (bad >= 0) {
		failf("%s: from %d, message %" PRIu64 " (%u bytes): byte %ld is %#x, not what was sent",
		      tname[t], j, seq, len, bad, p[bad]);
		return;
	}
	r->wc++;
	if (t == T_RC) {
		if (seq != r->recv) {
			failf("rc: from %d, message %" PRIu64 " where %" PRIu64 " was next", j, seq,
			      r->recv);
			return;
		}
		r->recv++;
		r->hi = seq + 1;
		r->bytes += len;
	} else if (rx_note(r, seq)) {
		r->recv++;
		r->bytes += len;
	} else {
		r->dup++;
	}
	post_recv(t, t == T_UD ? 0 : j, k);
}

static void on_send(const struct ibv_wc *wc)
{
	int t = (int)(wc->wr_id >> 56), j;
	struct tx *tx;

	if (t == T_UD) {
		const uint8_t *p = ud_send_slot((int)(wc->wr_id & 0xFFFF));

		j = p[5];
		S.ud_inflight--;
	} else {
		j = (int)((wc->wr_id >> 48) & 0xFF);
	}
	tx = &S.p[j].tx[t];
	tx->bytes += msg_len(S.id, j, t, tx->done);
	tx->done++;
	tx->inflight--;
}

/* Take every completion there is. Returns how many. */
static int progress(void)
{
	struct ibv_wc wc[32];
	int total = 0, n;

	while ((n = ibv_poll_cq(S.rcq, 32, wc)) > 0) {
		for (int i = 0; i < n; i++) {
			if (wc[i].status != IBV_WC_SUCCESS) {
				failf("receive completion: %s (wr_id %#" PRIx64 ")",
				      ibv_wc_status_str(wc[i].status), wc[i].wr_id);
				return -1;
			}
			on_recv(&wc[i]);
		}
		total += n;
	}
	if (n < 0) {
		failf("ibv_poll_cq (receive): %d", n);
		return -1;
	}
	while ((n = ibv_poll_cq(S.scq, 32, wc)) > 0) {
		for (int i = 0; i < n; i++) {
			if (wc[i].status != IBV_WC_SUCCESS) {
				failf("send completion: %s (wr_id %#" PRIx64 ")",
				      ibv_wc_status_str(wc[i].status), wc[i].wr_id);
				return -1;
			}
			on_send(&wc[i]);
		}
		total += n;
	}
	if (n < 0) {
		failf("ibv_poll_cq (send): %d", n);
		return -1;
	}
	return total;
}

/* Nothing to do: arm both CQs and wait up to POLL_MS for a completion event. */
static void idle(void)
{
	struct pollfd pfd = {.fd = S.ch->fd, .events = POLLIN};
	struct ibv_cq *cq;
	void *cctx;

	if (ibv_req_notify_cq(S.scq, 0) || ibv_req_notify_cq(S.rcq, 0)) {
		failf("ibv_req_notify_cq: %s", strerror(errno));
		return;
	}
	if (progress() != 0)
		return;
	/* Each event is acknowledged on its own CQ at once: ibv_destroy_cq waits for them. */
	if (poll(&pfd, 1, POLL_MS) > 0 && ibv_get_cq_event(S.ch, &cq, &cctx) == 0)
		ibv_ack_cq_events(cq, 1);
}

static bool rc_all_in(void)
{
	for (int j = 0; j < S.n; j++)
		if (j != S.id && S.p[j].rx[T_RC].recv < S.p[j].announced[T_RC])
			return false;
	return true;
}

static int read_sent(int j)
{
	char p[4096], line[256];
	bool have = false;
	FILE *f;

	path_of(p, sizeof(p), j, "sent");
	f = fopen(p, "r");
	if (!f) {
		failf("%s: %s", p, strerror(errno));
		return -1;
	}
	while (fgets(line, sizeof(line), f)) {
		uint64_t a, b, c;
		int k;

		if (sscanf(line, "%d %" SCNu64 " %" SCNu64 " %" SCNu64, &k, &a, &b, &c) == 4 &&
		    k == S.id) {
			S.p[j].announced[T_RC] = a;
			S.p[j].announced[T_UC] = b;
			S.p[j].announced[T_UD] = c;
			have = true;
		}
	}
	fclose(f);
	if (!have)
		failf("%s: nothing for %d", p, S.id);
	return have ? 0 : -1;
}

enum phase { P_READY, P_TRAFFIC, P_DRAIN, P_SENT, P_DONE, P_END };
static const char *const phase_name[] = {"waiting for every process's ready",
					 "traffic", "waiting for its sends to complete",
					 "waiting for every RC message announced",
					 "waiting for every process to be done", "end"};

struct sample {
	long rss;
	int fds;
};

static int run(struct sample *start, struct sample *end)
{
	uint64_t t0 = now_ms(), limit = t0 + ((uint64_t)S.secs + LIMIT_EXTRA_S) * 1000;
	uint64_t t_start = 0, t_stop = 0, t_warm = 0, t_report = 0, warm;
	enum phase ph = P_READY;
	bool sampled = false, announced = false;

	warm = (uint64_t)S.secs * 1000 / 8;
	if (warm > 30000)
		warm = 30000;
	while (ph != P_END && !S.failed) {
		uint64_t now = now_ms();
		int got;

		if (now > limit) {
			failf("still %s %d s after the start", phase_name[ph],
			      (int)((now - t0) / 1000));
			break;
		}
		switch (ph) {
		case P_READY:
			if (all_exist("ready")) {
				ph = P_TRAFFIC;
				t_start = now;
				t_warm = now + warm;
				t_stop = now + (uint64_t)S.secs * 1000;
				t_report = now + REPORT_MS;
			}
			break;
		case P_TRAFFIC:
			if (!sampled && now >= t_warm) {
				start->rss = rss_kb();
				start->fds = fd_count();
				sampled = true;
			}
			if (now >= t_report) {
				fprintf(stderr, "soak %d: %" PRIu64 " s, rss %ld kB, %d fds\n", S.id,
					(now - t_start) / 1000, rss_kb(), fd_count());
				t_report += REPORT_MS;
			}
			if (now >= t_stop) {
				/* Every process is still running: its peers stop at about
				 * the same time, and leave only after the last barrier. */
				end->rss = rss_kb();
				end->fds = fd_count();
				ph = P_DRAIN;
				break;
			}
			post_sends();
			break;
		case P_DRAIN: {
			bool idle_q = S.ud_inflight == 0;
			char text[4096];
			size_t off = 0;

			for (int j = 0; j < S.n; j++)
				for (int t = T_RC; t <= T_UC; t++)
					if (j != S.id && S.p[j].tx[t].inflight)
						idle_q = false;
			if (!idle_q)
				break;
			for (int j = 0; j < S.n; j++)
				if (j != S.id)
					off += (size_t)snprintf(
						text + off, sizeof(text) - off,
						"%d %" PRIu64 " %" PRIu64 " %" PRIu64 "\n", j,
						S.p[j].tx[T_RC].done, S.p[j].tx[T_UC].done,
						S.p[j].tx[T_UD].done);
			if (file_put("sent", text))
				return -1;
			ph = P_SENT;
			break;
		}
		case P_SENT:
			if (!announced) {
				if (!all_exist("sent"))
					break;
				for (int j = 0; j < S.n; j++)
					if (j != S.id && read_sent(j))
						return -1;
				announced = true;
			}
			if (!rc_all_in())
				break;
			if (file_put("done", "done\n"))
				return -1;
			ph = P_DONE;
			break;
		case P_DONE:
			if (all_exist("done"))
				ph = P_END;
			break;
		case P_END:
			break;
		}
		got = progress();
		if (got == 0 && ph != P_END)
			idle();
	}
	return S.failed ? -1 : 0;
}

/* ---- the verdict and tear-down ------------------------------------------------------------ */

static void verdict(const struct sample *start, const struct sample *end)
{
	uint64_t sent[T_N] = {0}, recv[T_N] = {0}, lost[T_N] = {0}, dup[T_N] = {0},
		 reord[T_N] = {0}, wc = 0, bsent = 0, brecv = 0;

	for (int j = 0; j < S.n; j++) {
		struct peer *pe = &S.p[j];

		if (j == S.id)
			continue;
		for (int t = 0; t < T_N; t++) {
			struct rx *r = &pe->rx[t];

			if (t == T_RC && r->recv != pe->announced[t])
				failf("rc: %" PRIu64 " messages from %d, which sent %" PRIu64, r->recv,
				      j, pe->announced[t]);
			if (r->hi > pe->announced[t] || r->recv > pe->announced[t])
				failf("%s: from %d, message %" PRIu64 " arrived (%" PRIu64
				      " distinct) but it sent %" PRIu64,
				      tname[t], j, r->hi - 1, r->recv, pe->announced[t]);
			sent[t] += pe->tx[t].done;
			recv[t] += r->recv;
			lost[t] += pe->announced[t] - r->recv;
			dup[t] += r->dup;
			reord[t] += r->reord;
			wc += r->wc;
			bsent += pe->tx[t].bytes;
			brecv += r->bytes;
		}
	}
	printf("result id=%d", S.id);
	for (int t = 0; t < T_N; t++) {
		printf(" %s_sent=%" PRIu64 " %s_recv=%" PRIu64, tname[t], sent[t], tname[t], recv[t]);
		if (t != T_RC)
			printf(" %s_lost=%" PRIu64 " %s_dup=%" PRIu64 " %s_reord=%" PRIu64, tname[t],
			       lost[t], tname[t], dup[t], tname[t], reord[t]);
	}
	printf(" recv_wc=%" PRIu64 " bytes_sent=%" PRIu64 " bytes_recv=%" PRIu64
	       " rss_kb_start=%ld rss_kb_end=%ld fd_start=%d fd_end=%d\n",
	       wc, bsent, brecv, start->rss, end->rss, start->fds, end->fds);
	fflush(stdout);
}

static void teardown(void)
{
	for (int j = 0; j < S.n; j++) {
		for (int t = T_RC; t <= T_UC; t++)
			if (S.p[j].qp[t] && ibv_destroy_qp(S.p[j].qp[t]))
				failf("ibv_destroy_qp (peer %d)", j);
		if (S.p[j].ah && ibv_destroy_ah(S.p[j].ah))
			failf("ibv_destroy_ah (peer %d)", j);
	}
	if (S.ud && ibv_destroy_qp(S.ud))
		failf("ibv_destroy_qp (UD)");
	if ((S.scq && ibv_destroy_cq(S.scq)) || (S.rcq && ibv_destroy_cq(S.rcq)))
		failf("ibv_destroy_cq: %s", strerror(errno));
	if (S.mr && ibv_dereg_mr(S.mr))
		failf("ibv_dereg_mr");
	if (S.ch && ibv_destroy_comp_channel(S.ch))
		failf("ibv_destroy_comp_channel: %s", strerror(errno));
	if (S.pd && ibv_dealloc_pd(S.pd))
		failf("ibv_dealloc_pd");
	if (S.ctx && ibv_close_device(S.ctx))
		failf("ibv_close_device");
	free(S.buf);
}

static int usage(void)
{
	fprintf(stderr, "usage: soak -i ID -n N -d DEVICE -a IPV4 -D DIR -t SECONDS\n");
	return 2;
}

int main(int argc, char **argv)
{
	struct sample start = {-1, -1}, end = {-1, -1};
	int c;

	S.id = -1;
	while ((c = getopt(argc, argv, "i:n:d:a:D:t:")) != -1) {
		switch (c) {
		case 'i': S.id = atoi(optarg); break;
		case 'n': S.n = atoi(optarg); break;
		case 'd': S.dev = optarg; break;
		case 'a': S.addr = optarg; break;
		case 'D': S.dir = optarg; break;
		case 't': S.secs = atoi(optarg); break;
		default: return usage();
		}
	}
	if (optind != argc || S.n < 2 || S.n > SOAK_MAX || S.id < 0 || S.id >= S.n || !S.dev ||
	    !S.addr || !S.dir || S.secs < 1)
		return usage();
	setvbuf(stderr, NULL, _IOLBF, 0);
	if (setup() == 0) {
		uint64_t limit = now_ms() + LIMIT_EXTRA_S * 1000;

		/* Every process's info, then our QPs to RTS and receives posted, then ready. */
		while (!all_exist("info") && now_ms() < limit) {
			struct pollfd none = {.fd = -1};

			poll(&none, 1, POLL_MS);
		}
		if (!all_exist("info"))
			failf("not every process wrote its info within %d s", LIMIT_EXTRA_S);
		else if (connect_all() == 0 && file_put("ready", "ready\n") == 0 &&
			 run(&start, &end) == 0)
			verdict(&start, &end);
	}
	teardown();
	return S.failed ? 1 : 0;
}
