/* SPDX-License-Identifier: MIT */
/* Several processes on one device: QPN slots, membership files, steering programs (share.h). */
#include <arpa/inet.h>
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

#include "host/rundir.h"
#include "host/share.h"

#define FILE_MAX  32768 /* a membership or slots file: 256 members, 4096 slots of short lines */
#define PATH_MAX_ 512

struct watch {
	pid_t pid;
	int fd; /* pidfd */
};

struct uroce_share_group {
	char path[PATH_MAX_];
	uint32_t qpn_lo, qpn_hi;
	pid_t pid;
	uint64_t start;
	int epfd; /* the inotify fd and the pidfds */
	int ino;
	struct watch w[UROCE_SHARE_MAX_MEMBERS];
	int nw;
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

int uroce_share_prog(struct sock_filter *out, int cap, const struct uroce_share_member *m, int n)
{
	int k = 0;

	if (n < 0 || n > UROCE_SHARE_MAX_MEMBERS)
		return -EINVAL;
	if (cap < UROCE_SHARE_PROG_LEN(n))
		return -ENOSPC;
	/* The UDP payload starts with the BTH; its bytes 5..7 are the destination QP. */
	out[k++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, 4);
	out[k++] = (struct sock_filter)BPF_STMT(BPF_ALU | BPF_AND | BPF_K, 0xFFFFFF);
	for (int i = 0; i < n; i++) {
		out[k++] =
			(struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, m[i].qpn_lo, 0, 2);
		out[k++] =
			(struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JGT | BPF_K, m[i].qpn_hi, 1, 0);
		out[k++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, (uint32_t)i);
	}
	/*
	 * GSI HOOK (connection-manager issue): QP1 (A == 1) lands here. CM REQs are to be steered
	 * by service ID (a 64-bit load at payload offset 52) to the listening member, later CM
	 * messages by communication ID. Until then QP1 and QPNs of no member go to index 0.
	 */
	out[k++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, 0);
	return k;
}

int uroce_v1_filter_prog(struct sock_filter *out, int cap, uint32_t lo, uint32_t hi)
{
	/* Ethernet 14 (+ 802.1Q 4 in X), GRH 40, then BTH bytes 4..7: reserved, destination QP. */
	const uint32_t bth4 = 14 + 40 + 4;
	int k = 0;

	if (lo > hi || hi > 0xFFFFFF)
		return -EINVAL;
	if (cap < UROCE_V1_FILTER_LEN)
		return -ENOSPC;
	out[k++] = (struct sock_filter)BPF_STMT(BPF_LDX | BPF_W | BPF_IMM, 0);
	out[k++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_H | BPF_ABS, 12);
	out[k++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0x8100, 0, 2);
	out[k++] = (struct sock_filter)BPF_STMT(BPF_LDX | BPF_W | BPF_IMM, 4);
	out[k++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_H | BPF_ABS, 16);
	/* 4: A = the Ethertype after the tag, if any */
	out[k++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0x8915, 0, 6);
	out[k++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_IND, bth4);
	out[k++] = (struct sock_filter)BPF_STMT(BPF_ALU | BPF_AND | BPF_K, 0xFFFFFF);
	/*
	 * GSI HOOK (connection-manager issue): QP1 goes to every process for now; CM is to be
	 * steered to the listening process (service ID) and then by communication ID, as
	 * uroce_share_prog()'s GSI HOOK.
	 */
	out[k++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 1, 2, 0);
	out[k++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, lo, 0, 2);
	out[k++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JGT | BPF_K, hi, 1, 0);
	out[k++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, 0xFFFFFFFF); /* whole frame */
	out[k++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, 0);	      /* drop */
	return k;
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
		w = snprintf(buf + len, cap - len,
			     "%" PRId32 " %" PRIu64 " %" PRIu32 " %" PRIu32 "\n", m[i].pid,
			     m[i].start, m[i].qpn_lo, m[i].qpn_hi);
		if (w < 0 || (size_t)w >= cap - len)
			return -ENOSPC;
		len += (size_t)w;
	}
	return (int)len;
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
		struct uroce_share_member x;

		if (sscanf(p, "%" SCNd32 " %" SCNu64 " %" SCNu32 " %" SCNu32 "%n", &x.pid, &x.start,
			   &x.qpn_lo, &x.qpn_hi, &used) != 4 ||
		    p[used] != '\n' || x.pid <= 0 || x.qpn_lo > x.qpn_hi)
			return -EBADMSG;
		if (n >= max)
			return -ENOSPC;
		m[n++] = x;
		p += used + 1;
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
	char *buf = malloc(FILE_MAX * 4), *p;
	int n = 0, r;

	if (!buf)
		return -ENOMEM;
	r = read_all(fd, buf, FILE_MAX * 4);
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
	char *buf = malloc(FILE_MAX * 4);
	size_t len = 0;
	int r = 0;

	if (!buf)
		return -ENOMEM;
	for (int i = 0; i < n; i++)
		len += (size_t)snprintf(buf + len, FILE_MAX * 4 - len,
					"%d %" PRId32 " %" PRIu64 "\n", s[i].slot, s[i].who.pid,
					s[i].who.start);
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

static int attach(int fd, const struct uroce_share_member *m, int n)
{
	struct sock_filter prog[UROCE_SHARE_PROG_LEN(UROCE_SHARE_MAX_MEMBERS)];
	int len = uroce_share_prog(prog, (int)(sizeof(prog) / sizeof(prog[0])), m, n);

	if (len < 0)
		return len;
	struct sock_fprog fp = {.len = (unsigned short)len, .filter = prog};

	return setsockopt(fd, SOL_SOCKET, SO_ATTACH_REUSEPORT_CBPF, &fp, sizeof(fp)) < 0 ? -errno
											 : 0;
}

/* Watch the pid of every other member: its pidfd is readable once it has exited. */
static void watch_members(struct uroce_share_group *g, const struct uroce_share_member *m, int n)
{
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

int uroce_share_join(const struct uroce_share_cfg *cfg, int fd, const struct sockaddr *a,
		     socklen_t alen, struct uroce_share_group **out)
{
	struct uroce_share_member *m = NULL;
	struct uroce_share_group *g = calloc(1, sizeof(*g));
	char dir[PATH_MAX_];
	uint64_t gen;
	int lk = -1, n, r;

	if (!g)
		return -ENOMEM;
	g->epfd = g->ino = -1;
	g->qpn_lo = cfg->qpn_lo;
	g->qpn_hi = cfg->qpn_hi;
	g->pid = getpid();
	m = malloc(sizeof(*m) * UROCE_SHARE_MAX_MEMBERS);
	r = m ? 0 : -ENOMEM;
	r = r ? r : uroce_share_proc_start(g->pid, &g->start);
	r = r ? r : uroce_share_path(g->path, sizeof(g->path), cfg->rundir, a);
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

	if (setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) < 0 ||
	    bind(fd, a, alen) < 0) {
		r = -errno;
		goto fail;
	}
	/* Our socket is now the group's last: index n. */
	m[n++] = (struct uroce_share_member){
		.pid = g->pid, .start = g->start, .qpn_lo = cfg->qpn_lo, .qpn_hi = cfg->qpn_hi};
	r = attach(fd, m, n);
	r = r ? r : write_members(lk, gen + 1, m, n);
	if (r)
		goto fail; /* the caller closes fd; we were last, so nothing moves */
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

static int self_index(const struct uroce_share_group *g, const struct uroce_share_member *m, int n)
{
	for (int i = 0; i < n; i++)
		if (m[i].pid == g->pid && m[i].qpn_lo == g->qpn_lo)
			return i;
	return -1;
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
			 * still in the group (any member may attach the group's program). */
			attach(fd, m, n);
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
			r = attach(fd, m, n);
			r = r ? r : write_members(lk, gen + 1, m, n);
			r = r ? r : 1;
		}
		watch_members(g, m, n);
	} else {
		r = n;
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
