/* SPDX-License-Identifier: MIT */
/* Several processes on one device: QPN slots, membership files, steering programs (share.h). */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/file.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "host/config/rundir.h"
#include "host/io/share.h"

/*
 * A membership file: 256 lines of about 60 bytes, and claims of 19 bytes each, which the
 * program's limit keeps below 4096 (a claim costs at least one instruction): under 100 KiB.
 */
#define FILE_MAX  (128 << 10)
#define SLOTS_MAX (128 << 10) /* the slots file: 4096 short lines */
#define PATH_MAX_ 512

struct watch {
	pid_t pid;
	int fd; /* pidfd */
};

struct uroce_share_group {
	char path[PATH_MAX_];
	bool v1;	 /* a RoCE v1 list: our own socket filter, no reuseport group */
	uint64_t v1_gen; /* v1: the file generation our filter was last built from */
	uint32_t qpn_lo, qpn_hi;
	pid_t pid;
	uint64_t start;
	int epfd; /* the inotify fd and the pidfds */
	int ino;
	struct watch w[UROCE_SHARE_MAX_MEMBERS];
	int nw;
	int members; /* in the file when it was last read (join, check) */
};

/* ---- pure helpers ------------------------------------------------------------------------ */

int uroce_share_compact(struct uroce_share_member *m, int n, int idx)
{
	if (idx < 0 || idx >= n)
		return -EINVAL;
	/* reuseport_detach_sock(): socks[i] = socks[num_socks - 1]; num_socks--. */
	m[idx] = m[n - 1];
	return n - 1;
}

#define ACCEPT 0xFFFFFFFFu /* socket filter: the whole frame */
#define DROP   0u

/* CM attribute IDs (IBTA 16.7.2.3). */
#define CM_CLASS    0x07
#define CM_REQ	    0x10
#define CM_MRA	    0x11 /* MRA, REJ, REP, RTU, DREQ, DREP: 0x11..0x16 */
#define CM_DREP	    0x16
#define CM_SIDR_REQ 0x17
#define CM_SIDR_REP 0x18

/*
 * An instruction sink that only counts when out is NULL (or full), so that one function gives
 * both a program's length and the program.
 */
struct emitter {
	struct sock_filter *out;
	int cap;
	int k;
};

static void emit(struct emitter *e, uint16_t code, uint8_t jt, uint8_t jf, uint32_t k)
{
	if (e->out && e->k < e->cap)
		e->out[e->k] = (struct sock_filter){.code = code, .jt = jt, .jf = jf, .k = k};
	e->k++;
}

static void stmt(struct emitter *e, uint16_t code, uint32_t k)
{
	emit(e, code, 0, 0, k);
}

/* Where the GSI fields are: the UDP payload (v2, absolute) or the frame + X (v1, indexed). */
struct gsi_at {
	uint32_t shift; /* 0 or UROCE_SHARE_V1_MAD_SHIFT */
	uint16_t mode;	/* BPF_ABS or BPF_IND */
};

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * "The service ID is one of m's claims: return r", falling through otherwise. The claims are
 * sorted so that those with one high word form one group (RDMA CM's all have 0 there):
 *   A = sid high; A != high: skip the group; A = sid low; A == low_1..low_c: return r.
 * c <= UROCE_SHARE_MAX_CLAIMS keeps every jump short.
 */
static void emit_claims(struct emitter *e, const struct gsi_at *at,
			const struct uroce_share_member *m, uint32_t r)
{
	uint64_t ids[UROCE_SHARE_MAX_CLAIMS];
	int n = m->nids;

	memcpy(ids, m->ids, sizeof(ids[0]) * (size_t)n);
	qsort(ids, (size_t)n, sizeof(ids[0]), cmp_u64);
	for (int i = 0; i < n;) {
		uint32_t hi = (uint32_t)(ids[i] >> 32);
		int c = 1;

		while (i + c < n && (uint32_t)(ids[i + c] >> 32) == hi)
			c++;
		stmt(e, BPF_LD | BPF_W | at->mode, at->shift + UROCE_SHARE_OFF_SID);
		emit(e, BPF_JMP | BPF_JEQ | BPF_K, 0, (uint8_t)(c + 2), hi);
		stmt(e, BPF_LD | BPF_W | at->mode, at->shift + UROCE_SHARE_OFF_SID + 4);
		for (int k = 1; k <= c; k++)
			emit(e, BPF_JMP | BPF_JEQ | BPF_K, (uint8_t)(c - k), k == c ? 1 : 0,
			     (uint32_t)ids[i + k - 1]);
		stmt(e, BPF_RET | BPF_K, r);
		i += c;
	}
}

/*
 * The QP1 part, entered with nothing assumed about A. Member i counts when use[i]; a MAD that
 * names it returns ret[i]; everything else returns dflt:
 *   g0  A = class           g5  A == SIDR_REQ ? g6 : g7    g10 A >= MRA ? g11 : g14
 *   g1  A == CM ? g3 : g2   g6  goto req                   g11 A > DREP ? g14 : g12
 *   g2  return dflt         g7  A == SIDR_REP ? g8 : g10   g12 A = remote comm ID
 *   g3  A = attribute       g8  A = request ID             g13 goto comm
 *   g4  A == REQ ? g6 : g5  g9  goto comm                  g14 return dflt
 *   comm: A >>= 20; each CM member: A == slot ? return ret; return dflt
 *   req:  each member's claims (emit_claims); return dflt
 */
static void emit_gsi(struct emitter *e, const struct gsi_at *at, const struct uroce_share_member *m,
		     int n, const bool *use, const uint32_t *ret, uint32_t dflt)
{
	int comm_len = 2;

	for (int i = 0; i < n; i++)
		if (use[i] && m[i].cm)
			comm_len += 2;
	stmt(e, BPF_LD | BPF_B | at->mode, at->shift + UROCE_SHARE_OFF_CLASS);
	emit(e, BPF_JMP | BPF_JEQ | BPF_K, 1, 0, CM_CLASS);
	stmt(e, BPF_RET | BPF_K, dflt);
	stmt(e, BPF_LD | BPF_H | at->mode, at->shift + UROCE_SHARE_OFF_ATTR);
	emit(e, BPF_JMP | BPF_JEQ | BPF_K, 1, 0, CM_REQ);
	emit(e, BPF_JMP | BPF_JEQ | BPF_K, 0, 1, CM_SIDR_REQ);
	stmt(e, BPF_JMP | BPF_JA, (uint32_t)(8 + comm_len)); /* g6 -> req */
	emit(e, BPF_JMP | BPF_JEQ | BPF_K, 0, 2, CM_SIDR_REP);
	stmt(e, BPF_LD | BPF_W | at->mode, at->shift + UROCE_SHARE_OFF_REQ_ID);
	stmt(e, BPF_JMP | BPF_JA, 5); /* g9 -> comm */
	emit(e, BPF_JMP | BPF_JGE | BPF_K, 0, 3, CM_MRA);
	emit(e, BPF_JMP | BPF_JGT | BPF_K, 2, 0, CM_DREP);
	stmt(e, BPF_LD | BPF_W | at->mode, at->shift + UROCE_SHARE_OFF_REMOTE);
	stmt(e, BPF_JMP | BPF_JA, 1); /* g13 -> comm */
	stmt(e, BPF_RET | BPF_K, dflt);
	/* comm: the comm ID's top 12 bits are its issuer's QPN slot. */
	stmt(e, BPF_ALU | BPF_RSH | BPF_K, 20);
	for (int i = 0; i < n; i++) {
		if (!use[i] || !m[i].cm)
			continue;
		emit(e, BPF_JMP | BPF_JEQ | BPF_K, 0, 1, UROCE_SHARE_SLOT_OF(m[i].qpn_lo));
		stmt(e, BPF_RET | BPF_K, ret[i]);
	}
	stmt(e, BPF_RET | BPF_K, dflt);
	/* req */
	for (int i = 0; i < n; i++)
		if (use[i])
			emit_claims(e, at, &m[i], ret[i]);
	stmt(e, BPF_RET | BPF_K, dflt);
}

static bool members_ok(const struct uroce_share_member *m, int n)
{
	if (n < 0 || n > UROCE_SHARE_MAX_MEMBERS)
		return false;
	for (int i = 0; i < n; i++)
		if (m[i].nids < 0 || m[i].nids > UROCE_SHARE_MAX_CLAIMS)
			return false;
	return true;
}

/* The first member that runs a CM, or -1. */
static int first_cm(const struct uroce_share_member *m, int n)
{
	for (int i = 0; i < n; i++)
		if (m[i].cm)
			return i;
	return -1;
}

static void build_prog(struct emitter *e, const struct uroce_share_member *m, int n)
{
	static const struct gsi_at v2 = {.shift = 0, .mode = BPF_ABS};
	bool use[UROCE_SHARE_MAX_MEMBERS];
	uint32_t ret[UROCE_SHARE_MAX_MEMBERS];
	int d = first_cm(m, n);

	/* The UDP payload starts with the BTH; its bytes 5..7 are the destination QP. */
	stmt(e, BPF_LD | BPF_W | BPF_ABS, 4);
	stmt(e, BPF_ALU | BPF_AND | BPF_K, 0xFFFFFF);
	for (int i = 0; i < n; i++) {
		emit(e, BPF_JMP | BPF_JGE | BPF_K, 0, 2, m[i].qpn_lo);
		emit(e, BPF_JMP | BPF_JGT | BPF_K, 1, 0, m[i].qpn_hi);
		stmt(e, BPF_RET | BPF_K, (uint32_t)i);
	}
	/* QPNs of no member go to index 0, QP1 to its CM. */
	emit(e, BPF_JMP | BPF_JEQ | BPF_K, 1, 0, 1);
	stmt(e, BPF_RET | BPF_K, 0);
	for (int i = 0; i < n; i++) {
		use[i] = true;
		ret[i] = (uint32_t)i;
	}
	emit_gsi(e, &v2, m, n, use, ret, d < 0 ? 0 : (uint32_t)d);
}

int uroce_share_prog_len(const struct uroce_share_member *m, int n)
{
	struct emitter e = {0};

	if (!members_ok(m, n))
		return -EINVAL;
	build_prog(&e, m, n);
	return e.k;
}

/* What a member that joins later costs at most: its QPN test, and its slot once it runs a CM. */
#define MEMBER_INSNS 5

bool uroce_share_prog_fits(const struct uroce_share_member *m, int n)
{
	int len = uroce_share_prog_len(m, n);

	return len >= 0 && len + MEMBER_INSNS * (UROCE_SHARE_MAX_MEMBERS - n) <= BPF_MAXINSNS;
}

int uroce_share_prog(struct sock_filter *out, int cap, const struct uroce_share_member *m, int n)
{
	int len = uroce_share_prog_len(m, n);
	struct emitter e = {.out = out, .cap = cap};

	if (len < 0)
		return len;
	if (len > BPF_MAXINSNS)
		return -E2BIG;
	if (cap < len)
		return -ENOSPC;
	build_prog(&e, m, n);
	return e.k;
}

static void build_v1(struct emitter *e, uint32_t lo, uint32_t hi,
		     const struct uroce_share_member *m, int n, int self)
{
	/* Ethernet 14 (+ 802.1Q 4 in X), GRH 40, then BTH bytes 4..7: reserved, destination QP. */
	static const struct gsi_at v1 = {.shift = UROCE_SHARE_V1_MAD_SHIFT, .mode = BPF_IND};
	const uint32_t bth4 = 14 + 40 + 4;
	int d = first_cm(m, n);
	/* QP1: to every process (jump to the accept at 11), to none (the drop at 12), or ours. */
	uint8_t qp1 = d < 0 || self < 0 ? 2 : !m[self].cm ? 3 : 4;

	stmt(e, BPF_LDX | BPF_W | BPF_IMM, 0);
	stmt(e, BPF_LD | BPF_H | BPF_ABS, 12);
	emit(e, BPF_JMP | BPF_JEQ | BPF_K, 0, 2, 0x8100);
	stmt(e, BPF_LDX | BPF_W | BPF_IMM, 4);
	stmt(e, BPF_LD | BPF_H | BPF_ABS, 16);
	/* 5: A = the Ethertype after the tag, if any */
	emit(e, BPF_JMP | BPF_JEQ | BPF_K, 0, 6, 0x8915);
	stmt(e, BPF_LD | BPF_W | BPF_IND, bth4);
	stmt(e, BPF_ALU | BPF_AND | BPF_K, 0xFFFFFF);
	emit(e, BPF_JMP | BPF_JEQ | BPF_K, qp1, 0, 1);
	emit(e, BPF_JMP | BPF_JGE | BPF_K, 0, 2, lo);
	emit(e, BPF_JMP | BPF_JGT | BPF_K, 1, 0, hi);
	stmt(e, BPF_RET | BPF_K, ACCEPT); /* 11 */
	stmt(e, BPF_RET | BPF_K, DROP);	  /* 12 */
	if (qp1 != 4)
		return;
	/*
	 * The designated member (d) takes what names no other member; the others take what names
	 * them only.
	 */
	bool use[UROCE_SHARE_MAX_MEMBERS];
	uint32_t ret[UROCE_SHARE_MAX_MEMBERS];

	for (int i = 0; i < n; i++) {
		use[i] = d == self ? i != self : i == self;
		ret[i] = d == self ? DROP : ACCEPT;
	}
	emit_gsi(e, &v1, m, n, use, ret, d == self ? ACCEPT : DROP);
}

int uroce_v1_filter_len(const struct uroce_share_member *m, int n, int self)
{
	struct emitter e = {0};

	if (self >= n || !members_ok(m, n))
		return -EINVAL;
	build_v1(&e, 0, 0, m, n, self);
	return e.k;
}

int uroce_v1_filter_prog(struct sock_filter *out, int cap, uint32_t lo, uint32_t hi,
			 const struct uroce_share_member *m, int n, int self)
{
	struct emitter e = {.out = out, .cap = cap};
	int len = uroce_v1_filter_len(m, n, self);

	if (len < 0 || lo > hi || hi > 0xFFFFFF)
		return len < 0 ? len : -EINVAL;
	if (len > BPF_MAXINSNS)
		return -E2BIG;
	if (cap < len)
		return -ENOSPC;
	build_v1(&e, lo, hi, m, n, self);
	return e.k;
}

int uroce_share_format(char *buf, size_t cap, uint64_t gen, const struct uroce_share_member *m,
		       int n)
{
	size_t len = 0;
	int w = snprintf(buf, cap, "gen %" PRIu64 "\n", gen);

	if (w < 0 || (size_t)w >= cap)
		return -ENOSPC;
	len = (size_t)w;
	for (int i = 0; i < n; i++) {
		w = snprintf(buf + len, cap - len, "%" PRId32 " %" PRIu64 " %" PRIu32 " %" PRIu32,
			     m[i].pid, m[i].start, m[i].qpn_lo, m[i].qpn_hi);
		if (w < 0 || (size_t)w >= cap - len)
			return -ENOSPC;
		len += (size_t)w;
		/* A member without a CM keeps the line of files written before claims. */
		for (int j = m[i].cm ? -1 : m[i].nids; j < m[i].nids; j++) {
			if (j < 0)
				w = snprintf(buf + len, cap - len, " cm");
			else
				w = snprintf(buf + len, cap - len, " 0x%" PRIx64, m[i].ids[j]);
			if (w < 0 || (size_t)w >= cap - len)
				return -ENOSPC;
			len += (size_t)w;
		}
		if (len + 1 >= cap)
			return -ENOSPC;
		buf[len++] = '\n';
		buf[len] = 0;
	}
	return (int)len;
}

/* " 0x" and 1 to 16 hex digits at *p: the value, *p moved past it. Returns 0 or -EBADMSG. */
static int parse_id(const char **p, uint64_t *v)
{
	const char *s = *p;
	int k = 0;

	if (strncmp(s, " 0x", 3) != 0)
		return -EBADMSG;
	s += 3;
	*v = 0;
	for (; k < 17 && isxdigit((unsigned char)s[k]); k++)
		*v = *v << 4 | (uint64_t)(isdigit((unsigned char)s[k])
						  ? s[k] - '0'
						  : (tolower((unsigned char)s[k]) - 'a' + 10));
	if (k < 1 || k > 16)
		return -EBADMSG;
	*p = s + k;
	return 0;
}

int uroce_share_parse(const char *text, uint64_t *gen, struct uroce_share_member *m, int max)
{
	const char *p = text;
	int n = 0, used;

	*gen = 0;
	if (!*p)
		return 0;
	if (sscanf(p, "gen %" SCNu64 "%n", gen, &used) != 1 || p[used] != '\n')
		return -EBADMSG;
	p += used + 1;
	while (*p) {
		struct uroce_share_member x = {0};

		if (sscanf(p, "%" SCNd32 " %" SCNu64 " %" SCNu32 " %" SCNu32 "%n", &x.pid, &x.start,
			   &x.qpn_lo, &x.qpn_hi, &used) != 4 ||
		    x.pid <= 0 || x.qpn_lo > x.qpn_hi)
			return -EBADMSG;
		p += used;
		if (strncmp(p, " cm", 3) == 0 && (p[3] == ' ' || p[3] == '\n')) {
			x.cm = true;
			p += 3;
			while (*p == ' ') {
				if (x.nids == UROCE_SHARE_MAX_CLAIMS ||
				    parse_id(&p, &x.ids[x.nids]) < 0)
					return -EBADMSG;
				x.nids++;
			}
		}
		if (*p != '\n')
			return -EBADMSG;
		if (n >= max)
			return -ENOSPC;
		m[n++] = x;
		p++;
	}
	return n;
}

/* ---- process identity ------------------------------------------------------------------- */

int uroce_share_proc_start(pid_t pid, uint64_t *start)
{
	char path[64], buf[1024];
	int fd;
	ssize_t len;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -ESRCH;
	len = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (len <= 0)
		return -ESRCH;
	buf[len] = 0;
	/* "pid (comm) state ppid ...": comm may hold anything, so start after the last ')'. */
	char *p = strrchr(buf, ')');

	if (!p || p[1] != ' ' || p[2] == 'Z' || p[2] == 'X')
		return -ESRCH; /* a zombie's sockets are closed already */
	p += 2;
	for (int field = 3; field < 22; field++) {
		p = strchr(p, ' ');
		if (!p)
			return -ESRCH;
		p++;
	}
	*start = strtoull(p, NULL, 10);
	return 0;
}

static bool alive(const struct uroce_share_member *m)
{
	uint64_t s;

	return uroce_share_proc_start(m->pid, &s) == 0 && s == m->start;
}

/* Drop members that are gone, as the kernel did when their sockets closed. */
static int prune(struct uroce_share_member *m, int n)
{
	for (int i = 0; i < n;)
		if (alive(&m[i]))
			i++;
		else
			n = uroce_share_compact(m, n, i);
	return n;
}

/* ---- locked files ------------------------------------------------------------------------- */

/*
 * Open path and flock it (op). A file unlinked by its last member between our open and our
 * lock is stale: open again. Returns the fd, or -errno (-ENOENT without create).
 */
static int lock_open(const char *path, int op, bool create)
{
	for (int tries = 0; tries < 16; tries++) {
		int fd = open(path, O_RDWR | O_CLOEXEC | (create ? O_CREAT : 0), 0644);
		struct stat a, b;

		if (fd < 0)
			return -errno;
		if (flock(fd, op) < 0) {
			int r = -errno;

			close(fd);
			return r;
		}
		if (fstat(fd, &a) == 0 && stat(path, &b) == 0 && a.st_ino == b.st_ino &&
		    a.st_dev == b.st_dev)
			return fd;
		close(fd);
	}
	return -EAGAIN;
}

static void unlock_close(int fd)
{
	flock(fd, LOCK_UN);
	close(fd);
}

static int read_all(int fd, char *buf, size_t cap)
{
	size_t len = 0;

	for (;;) {
		ssize_t r = pread(fd, buf + len, cap - 1 - len, (off_t)len);

		if (r < 0)
			return -errno;
		if (r == 0)
			break;
		len += (size_t)r;
		if (len == cap - 1)
			return -EFBIG;
	}
	buf[len] = 0;
	return 0;
}

static int write_all(int fd, const char *buf, size_t len)
{
	if (ftruncate(fd, 0) < 0)
		return -errno;
	for (size_t off = 0; off < len;) {
		ssize_t w = pwrite(fd, buf + off, len - off, (off_t)off);

		if (w < 0)
			return -errno;
		off += (size_t)w;
	}
	return 0;
}

static int read_members(int fd, uint64_t *gen, struct uroce_share_member *m)
{
	char *buf = malloc(FILE_MAX);
	int r;

	if (!buf)
		return -ENOMEM;
	r = read_all(fd, buf, FILE_MAX);
	if (r == 0)
		r = uroce_share_parse(buf, gen, m, UROCE_SHARE_MAX_MEMBERS);
	free(buf);
	return r;
}

static int write_members(int fd, uint64_t gen, const struct uroce_share_member *m, int n)
{
	char *buf = malloc(FILE_MAX);
	int r;

	if (!buf)
		return -ENOMEM;
	r = uroce_share_format(buf, FILE_MAX, gen, m, n);
	if (r >= 0)
		r = write_all(fd, buf, (size_t)r);
	free(buf);
	return r;
}

/* ---- QPN slots ---------------------------------------------------------------------------- */

struct slot_line {
	int slot;
	struct uroce_share_member who; /* pid and start */
};

static int slots_path(char *buf, size_t cap, const char *rundir)
{
	return uroce_rundir_join(buf, cap, "%s/share/slots", rundir);
}

/* Read the live slot holders into s (at most UROCE_SHARE_SLOTS). Returns the count. */
static int slots_read(int fd, struct slot_line *s)
{
	char *buf = malloc(SLOTS_MAX), *p;
	int n = 0, r;

	if (!buf)
		return -ENOMEM;
	r = read_all(fd, buf, SLOTS_MAX);
	for (p = buf; r == 0 && *p && n < UROCE_SHARE_SLOTS;) {
		struct slot_line x;
		int used;

		if (sscanf(p, "%d %" SCNd32 " %" SCNu64 "%n", &x.slot, &x.who.pid, &x.who.start,
			   &used) != 3 ||
		    p[used] != '\n')
			break; /* a damaged tail: forget it (holders are only a preference) */
		p += used + 1;
		if (x.slot >= 0 && x.slot < UROCE_SHARE_SLOTS && alive(&x.who))
			s[n++] = x;
	}
	free(buf);
	return r < 0 ? r : n;
}

static int slots_write(int fd, const struct slot_line *s, int n)
{
	char *buf = malloc(SLOTS_MAX);
	size_t len = 0;
	int r = 0;

	if (!buf)
		return -ENOMEM;
	for (int i = 0; i < n; i++)
		len += (size_t)snprintf(buf + len, SLOTS_MAX - len, "%d %" PRId32 " %" PRIu64 "\n",
					s[i].slot, s[i].who.pid, s[i].who.start);
	r = write_all(fd, buf, len);
	free(buf);
	return r;
}

int uroce_share_slot_take(const char *rundir, int *slot)
{
	char path[PATH_MAX_], dir[PATH_MAX_];
	struct slot_line *s = malloc(sizeof(*s) * (UROCE_SHARE_SLOTS + 1));
	struct slot_line me = {.who.pid = getpid()};
	int fd, n, r;

	if (!s)
		return -ENOMEM;
	r = uroce_share_proc_start(me.who.pid, &me.who.start);
	r = r ? r : uroce_rundir_join(dir, sizeof(dir), "%s/share", rundir);
	r = r ? r : slots_path(path, sizeof(path), rundir);
	r = r ? r : uroce_rundir_mkdirs(dir);
	if (r)
		goto out;
	fd = lock_open(path, LOCK_EX, true);
	if (fd < 0) {
		r = fd;
		goto out;
	}
	n = slots_read(fd, s);
	if (n < 0) {
		r = n;
		goto unlock;
	}
	r = -EBUSY;
	for (int k = 0; k < UROCE_SHARE_SLOTS; k++) {
		int want = (int)(((uint32_t)me.who.pid + (uint32_t)k) & (UROCE_SHARE_SLOTS - 1));
		bool used = false;

		for (int i = 0; i < n && !used; i++)
			used = s[i].slot == want;
		if (!used) {
			me.slot = want;
			r = 0;
			break;
		}
	}
	if (r == 0) {
		s[n++] = me;
		r = slots_write(fd, s, n);
		if (r == 0)
			*slot = me.slot;
	}
unlock:
	unlock_close(fd);
out:
	free(s);
	return r;
}

void uroce_share_slot_put(const char *rundir, int slot)
{
	char path[PATH_MAX_];
	struct slot_line *s;
	pid_t me = getpid();
	int fd, n;

	if (slots_path(path, sizeof(path), rundir))
		return;
	s = malloc(sizeof(*s) * UROCE_SHARE_SLOTS);
	if (!s)
		return;
	fd = lock_open(path, LOCK_EX, false);
	if (fd >= 0) {
		n = slots_read(fd, s);
		for (int i = 0; i < n; i++) {
			if (s[i].slot == slot && s[i].who.pid == me) {
				s[i] = s[--n];
				slots_write(fd, s, n);
				break;
			}
		}
		unlock_close(fd);
	}
	free(s);
}

/* ---- groups ------------------------------------------------------------------------------ */

int uroce_share_path(char *buf, size_t cap, const char *rundir, const struct sockaddr *a)
{
	char as[INET6_ADDRSTRLEN + 16];
	struct stat ns;
	unsigned port;

	if (stat("/proc/self/ns/net", &ns) < 0)
		return -errno;
	if (a->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)a;

		inet_ntop(AF_INET, &in->sin_addr, as, sizeof(as));
		port = ntohs(in->sin_port);
	} else if (a->sa_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)a;

		inet_ntop(AF_INET6, &in6->sin6_addr, as, INET6_ADDRSTRLEN);
		if (in6->sin6_scope_id)
			snprintf(as + strlen(as), 16, "%%%u", (unsigned)in6->sin6_scope_id);
		port = ntohs(in6->sin6_port);
	} else {
		return -EAFNOSUPPORT;
	}
	return uroce_rundir_join(buf, cap, "%s/share/net%llu/%s-%u", rundir,
				 (unsigned long long)ns.st_ino, as, port);
}

int uroce_share_v1_path(char *buf, size_t cap, const char *rundir, int ifindex)
{
	struct stat ns;

	if (stat("/proc/self/ns/net", &ns) < 0)
		return -errno;
	return uroce_rundir_join(buf, cap, "%s/share/net%llu/v1-if%d", rundir,
				 (unsigned long long)ns.st_ino, ifindex);
}

static int self_index(const struct uroce_share_group *g, const struct uroce_share_member *m, int n)
{
	for (int i = 0; i < n; i++)
		if (m[i].pid == g->pid && m[i].qpn_lo == g->qpn_lo)
			return i;
	return -1;
}

/*
 * Make the kernel steer by m[0..n): the group's program (v2: any member's socket may attach
 * it), or our own socket filter (v1).
 */
static int attach(const struct uroce_share_group *g, int fd, const struct uroce_share_member *m,
		  int n)
{
	struct sock_filter *prog = malloc(sizeof(*prog) * BPF_MAXINSNS);
	int len, opt = g->v1 ? SO_ATTACH_FILTER : SO_ATTACH_REUSEPORT_CBPF;

	if (!prog)
		return -ENOMEM;
	if (g->v1)
		len = uroce_v1_filter_prog(prog, BPF_MAXINSNS, g->qpn_lo, g->qpn_hi, m, n,
					   self_index(g, m, n));
	else
		len = uroce_share_prog(prog, BPF_MAXINSNS, m, n);
	if (len >= 0) {
		struct sock_fprog fp = {.len = (unsigned short)len, .filter = prog};

		len = setsockopt(fd, SOL_SOCKET, opt, &fp, sizeof(fp)) < 0 ? -errno : 0;
	}
	free(prog);
	return len;
}

/* Whether the kernel can take the program (v2) or every member's filter (v1) for m[0..n). */
static bool fits(const struct uroce_share_group *g, const struct uroce_share_member *m, int n)
{
	if (!g->v1)
		return uroce_share_prog_fits(m, n);
	for (int i = 0; i < n; i++) {
		int len = uroce_v1_filter_len(m, n, i);

		if (len < 0 || len > BPF_MAXINSNS)
			return false;
	}
	return true;
}

/* Does a member other than m[self] claim id? */
static bool claimed_by_other(const struct uroce_share_member *m, int n, int self, uint64_t id)
{
	for (int i = 0; i < n; i++) {
		if (i == self)
			continue;
		for (int j = 0; j < m[i].nids; j++)
			if (m[i].ids[j] == id)
				return true;
	}
	return false;
}

/* Watch the pid of every other member: its pidfd is readable once it has exited. */
static void watch_members(struct uroce_share_group *g, const struct uroce_share_member *m, int n)
{
	g->members = n;
	for (int i = 0; i < g->nw;) {
		bool listed = false;

		for (int j = 0; j < n && !listed; j++)
			listed = m[j].pid == g->w[i].pid;
		if (listed) {
			i++;
			continue;
		}
		epoll_ctl(g->epfd, EPOLL_CTL_DEL, g->w[i].fd, NULL);
		close(g->w[i].fd);
		g->w[i] = g->w[--g->nw];
	}
	for (int j = 0; j < n; j++) {
		bool known = m[j].pid == g->pid;

		for (int i = 0; i < g->nw && !known; i++)
			known = g->w[i].pid == m[j].pid;
		if (known || g->nw >= UROCE_SHARE_MAX_MEMBERS)
			continue;
		int pfd = (int)syscall(SYS_pidfd_open, (pid_t)m[j].pid, 0);

		if (pfd < 0)
			continue; /* gone already: the next check prunes it */
		struct epoll_event ev = {.events = EPOLLIN, .data.fd = pfd};

		if (epoll_ctl(g->epfd, EPOLL_CTL_ADD, pfd, &ev) < 0) {
			close(pfd);
			continue;
		}
		g->w[g->nw++] = (struct watch){.pid = m[j].pid, .fd = pfd};
	}
}

static void group_free(struct uroce_share_group *g)
{
	for (int i = 0; i < g->nw; i++)
		close(g->w[i].fd);
	if (g->ino >= 0)
		close(g->ino);
	if (g->epfd >= 0)
		close(g->epfd);
	free(g);
}

/*
 * Our line for a group whose other members are m[0..n): cfg's QPNs and CM flag, and those of its
 * claims no other member holds; no claim at all if they would not fit (m[n] is scratch).
 */
static struct uroce_share_member me_line(const struct uroce_share_group *g,
					 const struct uroce_share_cfg *cfg,
					 struct uroce_share_member *m, int n)
{
	struct uroce_share_member me = {.pid = g->pid,
					.start = g->start,
					.qpn_lo = g->qpn_lo,
					.qpn_hi = g->qpn_hi,
					.cm = cfg->cm};

	for (int i = 0; i < cfg->nids && i < UROCE_SHARE_MAX_CLAIMS; i++)
		if (!claimed_by_other(m, n, -1, cfg->ids[i]))
			me.ids[me.nids++] = cfg->ids[i];
	m[n] = me;
	if (!fits(g, m, n + 1))
		me.nids = 0;
	return me;
}

/*
 * Join the group at path: a, alen: bind fd there (v2); a NULL: a v1 list (fd gets our filter).
 */
static int join(const struct uroce_share_cfg *cfg, int fd, const char *path,
		const struct sockaddr *a, socklen_t alen, struct uroce_share_group **out)
{
	struct uroce_share_member *m = NULL;
	struct uroce_share_group *g = calloc(1, sizeof(*g));
	char dir[PATH_MAX_];
	uint64_t gen;
	int lk = -1, n, r;

	if (!g)
		return -ENOMEM;
	g->epfd = g->ino = -1;
	g->v1 = !a;
	g->qpn_lo = cfg->qpn_lo;
	g->qpn_hi = cfg->qpn_hi;
	g->pid = getpid();
	m = malloc(sizeof(*m) * (UROCE_SHARE_MAX_MEMBERS + 1));
	r = m ? 0 : -ENOMEM;
	r = r ? r : uroce_share_proc_start(g->pid, &g->start);
	r = r ? r : uroce_rundir_join(g->path, sizeof(g->path), "%s", path);
	if (r == 0) {
		memcpy(dir, g->path, sizeof(dir));
		*strrchr(dir, '/') = 0;
		r = uroce_rundir_mkdirs(dir);
	}
	if (r == 0) {
		lk = lock_open(g->path, LOCK_EX, true);
		r = lk < 0 ? lk : 0;
	}
	if (r == 0) {
		g->epfd = epoll_create1(EPOLL_CLOEXEC);
		g->ino = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
		if (g->epfd < 0 || g->ino < 0 ||
		    inotify_add_watch(g->ino, g->path, IN_MODIFY | IN_DELETE_SELF) < 0 ||
		    epoll_ctl(g->epfd, EPOLL_CTL_ADD, g->ino,
			      &(struct epoll_event){.events = EPOLLIN, .data.fd = g->ino}) < 0)
			r = -errno;
	}
	n = r ? r : read_members(lk, &gen, m);
	if (r || n < 0) {
		r = -ENOTRECOVERABLE; /* no usable file: the caller may bind alone */
		goto fail;
	}
	n = prune(m, n);
	for (int i = 0; i < n; i++) {
		if (m[i].qpn_lo <= cfg->qpn_hi && cfg->qpn_lo <= m[i].qpn_hi) {
			r = -EEXIST;
			goto fail;
		}
	}
	if (n >= UROCE_SHARE_MAX_MEMBERS) {
		r = -ENOSPC;
		goto fail;
	}
	int one = 1;

	if (a && (setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) < 0 ||
		  bind(fd, a, alen) < 0)) {
		r = -errno;
		goto fail;
	}
	/* Our socket is now the group's last: index n. */
	m[n] = me_line(g, cfg, m, n);
	n++;
	r = attach(g, fd, m, n);
	r = r ? r : write_members(lk, gen + 1, m, n);
	if (r)
		goto fail; /* the caller closes fd; we were last, so nothing moves */
	g->v1_gen = gen + 1;
	watch_members(g, m, n);
	unlock_close(lk);
	free(m);
	*out = g;
	return 0;
fail:
	if (lk >= 0)
		unlock_close(lk);
	free(m);
	group_free(g);
	return r;
}

int uroce_share_join(const struct uroce_share_cfg *cfg, int fd, const struct sockaddr *a,
		     socklen_t alen, struct uroce_share_group **out)
{
	char path[PATH_MAX_];
	int r = uroce_share_path(path, sizeof(path), cfg->rundir, a);

	return r ? -ENOTRECOVERABLE : join(cfg, fd, path, a, alen, out);
}

int uroce_share_v1_join(const struct uroce_share_cfg *cfg, int fd, int ifindex,
			struct uroce_share_group **out)
{
	char path[PATH_MAX_];
	int r = uroce_share_v1_path(path, sizeof(path), cfg->rundir, ifindex);

	return r ? -ENOTRECOVERABLE : join(cfg, fd, path, NULL, 0, out);
}

void uroce_share_leave(struct uroce_share_group *g, int fd)
{
	struct uroce_share_member *m = malloc(sizeof(*m) * UROCE_SHARE_MAX_MEMBERS);
	int lk = m ? lock_open(g->path, LOCK_EX, false) : -ENOMEM;
	uint64_t gen;
	int n = lk >= 0 ? read_members(lk, &gen, m) : -1;

	if (n >= 0) {
		n = prune(m, n);
		int me = self_index(g, m, n);

		if (me >= 0)
			n = uroce_share_compact(m, n, me);
		if (n > 0) {
			/* The program for the order after our close, attached while our socket is
			 * still in the group (any member may attach the group's program). A v1
			 * member's filter is its own: the others rebuild theirs. */
			if (!g->v1)
				attach(g, fd, m, n);
			write_members(lk, gen + 1, m, n);
		} else {
			unlink(g->path); /* a process waiting for the lock sees the inode change */
		}
	}
	close(fd); /* the kernel moves the last socket into our place */
	if (lk >= 0)
		unlock_close(lk);
	free(m);
	group_free(g);
}

int uroce_share_fd(const struct uroce_share_group *g)
{
	return g->epfd;
}

int uroce_share_members(const struct uroce_share_group *g)
{
	return g->members;
}

int uroce_share_check(struct uroce_share_group *g, int fd)
{
	struct epoll_event ev[8];
	char buf[4096];
	uint64_t gen;
	int k = epoll_wait(g->epfd, ev, 8, 0), lk, n, n0, r = 0;

	if (k <= 0)
		return k < 0 && errno != EINTR ? -errno : 0;
	while (read(g->ino, buf, sizeof(buf)) > 0) {
	}
	struct uroce_share_member *m = malloc(sizeof(*m) * UROCE_SHARE_MAX_MEMBERS);

	if (!m)
		return -ENOMEM;
	lk = lock_open(g->path, LOCK_EX, false);
	n0 = n = lk >= 0 ? read_members(lk, &gen, m) : lk;
	if (n >= 0) {
		n = prune(m, n);
		if (n != n0) {
			gen++;
			r = attach(g, fd, m, n);
			r = r ? r : write_members(lk, gen, m, n);
			r = r ? r : 1;
		} else if (g->v1 && gen != g->v1_gen) {
			/* Another member joined, left or claimed: our filter follows. */
			r = attach(g, fd, m, n);
			r = r ? r : 1;
		}
		if (r == 1)
			g->v1_gen = gen;
		watch_members(g, m, n);
	} else {
		r = n;
	}
	if (lk >= 0)
		unlock_close(lk);
	free(m);
	return r;
}

int uroce_share_set_gsi(struct uroce_share_group *g, int fd, const struct uroce_share_cfg *cfg)
{
	struct uroce_share_member *m;
	uint64_t gen;
	int lk, n, me, r;

	if (cfg->nids < 0 || cfg->nids > UROCE_SHARE_MAX_CLAIMS)
		return -EINVAL;
	m = malloc(sizeof(*m) * UROCE_SHARE_MAX_MEMBERS);
	if (!m)
		return -ENOMEM;
	lk = lock_open(g->path, LOCK_EX, false);
	n = lk >= 0 ? read_members(lk, &gen, m) : lk;
	r = n < 0 ? n : 0;
	if (r == 0) {
		n = prune(m, n);
		me = self_index(g, m, n);
		r = me < 0 ? -ENOENT : 0;
	}
	for (int i = 0; r == 0 && i < cfg->nids; i++)
		if (claimed_by_other(m, n, me, cfg->ids[i]))
			r = -EADDRINUSE;
	if (r == 0) {
		struct uroce_share_member old = m[me];

		m[me].cm = cfg->cm;
		m[me].nids = cfg->nids;
		memcpy(m[me].ids, cfg->ids, sizeof(m[me].ids[0]) * (size_t)cfg->nids);
		r = fits(g, m, n) ? attach(g, fd, m, n) : -ENOSPC;
		if (r == 0) {
			r = write_members(lk, gen + 1, m, n);
			if (r) {
				m[me] = old; /* the file is unchanged: so is the program */
				attach(g, fd, m, n);
			} else {
				g->v1_gen = gen + 1;
			}
		}
	}
	if (lk >= 0)
		unlock_close(lk);
	free(m);
	return r;
}

int uroce_share_read(const char *path, uint64_t *gen, struct uroce_share_member *m, int max)
{
	struct uroce_share_member *all = malloc(sizeof(*all) * UROCE_SHARE_MAX_MEMBERS);
	int fd, n;

	*gen = 0;
	if (!all)
		return -ENOMEM;
	fd = lock_open(path, LOCK_SH, false);
	if (fd < 0) {
		free(all);
		return fd == -ENOENT ? 0 : fd;
	}
	n = read_members(fd, gen, all);
	unlock_close(fd);
	if (n > max)
		n = -ENOSPC;
	if (n > 0)
		memcpy(m, all, sizeof(*m) * (size_t)n);
	free(all);
	return n;
}
