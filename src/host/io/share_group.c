/* SPDX-License-Identifier: MIT */
/* Joining, leaving and following the groups of processes on a shared device (share_group.h). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/file.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "host/config/rundir.h"
#include "host/io/locked_file.h"
#include "host/io/share_group.h"
#include "host/io/share_members.h"
#include "host/io/share_prog.h"
#include "host/os/nocancel.h"

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
	int epfd; /* the file watch and the pidfds */
	int ino;  /* the file watch: an inotify instance, or a timer (file_watch) */
	bool timer;	   /* ino is a timer */
	uint64_t seen_gen; /* the generation, and the file, of our last read or write */
	dev_t seen_dev;
	ino_t seen_ino;
	struct watch w[UROCE_SHARE_MAX_MEMBERS];
	int nw;
	int members; /* in the file when it was last read (join, check) */
};

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
 * A descriptor that becomes readable when the file at path may have changed: an inotify
 * instance watching it, or, when the user has no instance left (fs.inotify.max_user_instances,
 * 128 by default for all of a user's processes: 64 processes with two addresses each reach it),
 * a timer that fires every SHARE_POLL_MS, and uroce_share_check reads the file each time. -1
 * with errno when neither can be had.
 */
#define SHARE_POLL_MS 100

static int file_watch(const char *path, bool *timer)
{
	int fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);

	*timer = false;
	if (fd >= 0 && inotify_add_watch(fd, path, IN_MODIFY | IN_DELETE_SELF) >= 0)
		return fd;
	if (fd >= 0)
		close(fd);
	*timer = true;
	fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (fd < 0)
		return -1;
	const struct timespec t = {.tv_nsec = SHARE_POLL_MS * 1000000L};

	if (timerfd_settime(fd, 0, &(struct itimerspec){.it_interval = t, .it_value = t}, NULL)) {
		int e = errno;

		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

/* Remember generation gen of the file open (and locked) as lk: what a timer tick compares. */
static void saw(struct uroce_share_group *g, int lk, uint64_t gen)
{
	struct stat st;

	g->seen_gen = gen;
	if (fstat(lk, &st) == 0) {
		g->seen_dev = st.st_dev;
		g->seen_ino = st.st_ino;
	}
}

/*
 * A timer tick and nothing else: has the file changed since we last read or wrote it? Its
 * first line is read without the lock; a line caught mid-write differs and costs a full
 * check, and a write the read misses is seen at the next tick. So 64 processes polling do not
 * take the lock and read every member's /proc entry ten times a second each.
 */
static bool file_changed(const struct uroce_share_group *g)
{
	char buf[40] = {0};
	struct stat st;
	uint64_t gen;
	int fd = open(g->path, O_RDONLY | O_CLOEXEC);
	bool same;

	if (fd < 0)
		return true;
	same = fstat(fd, &st) == 0 && st.st_dev == g->seen_dev && st.st_ino == g->seen_ino &&
	       pread(fd, buf, sizeof(buf) - 1, 0) > 0 &&
	       sscanf(buf, "gen %" SCNu64, &gen) == 1 && gen == g->seen_gen;
	close(fd);
	return !same;
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
		lk = uroce_locked_file_open(g->path, LOCK_EX, true);
		r = lk < 0 ? lk : 0;
	}
	if (r == 0) {
		g->epfd = epoll_create1(EPOLL_CLOEXEC);
		g->ino = file_watch(g->path, &g->timer);
		if (g->epfd < 0 || g->ino < 0 ||
		    epoll_ctl(g->epfd, EPOLL_CTL_ADD, g->ino,
			      &(struct epoll_event){.events = EPOLLIN, .data.fd = g->ino}) < 0)
			r = -errno;
	}
	n = r ? r : uroce_share_members_load(lk, &gen, m);
	if (r || n < 0) {
		r = -ENOTRECOVERABLE; /* no usable file: the caller may bind alone */
		goto fail;
	}
	n = uroce_share_prune(m, n);
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
	r = r ? r : uroce_share_members_store(lk, gen + 1, m, n);
	if (r)
		goto fail; /* the caller closes fd; we were last, so nothing moves */
	g->v1_gen = gen + 1;
	saw(g, lk, gen + 1);
	watch_members(g, m, n);
	uroce_locked_file_close(lk);
	free(m);
	*out = g;
	return 0;
fail:
	if (lk >= 0)
		uroce_locked_file_close(lk);
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
	int lk = m ? uroce_locked_file_open(g->path, LOCK_EX, false) : -ENOMEM;
	uint64_t gen;
	int n = lk >= 0 ? uroce_share_members_load(lk, &gen, m) : -1;

	if (n >= 0) {
		n = uroce_share_prune(m, n);
		int me = self_index(g, m, n);

		if (me >= 0)
			n = uroce_share_compact(m, n, me);
		if (n > 0) {
			/* The program for the order after our close, attached while our socket is
			 * still in the group (any member may attach the group's program). A v1
			 * member's filter is its own: the others rebuild theirs. */
			if (!g->v1)
				attach(g, fd, m, n);
			uroce_share_members_store(lk, gen + 1, m, n);
		} else {
			unlink(g->path); /* a process waiting for the lock sees the inode change */
		}
	}
	close(fd); /* the kernel moves the last socket into our place */
	if (lk >= 0)
		uroce_locked_file_close(lk);
	free(m);
	group_free(g);
}

void uroce_share_forget(struct uroce_share_group *g)
{
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

/* A member joined, left or died: the file and the program follow. */
static int recheck(struct uroce_share_group *g, int fd, const struct epoll_event *ev, int k)
{
	char buf[4096];
	uint64_t gen;
	int lk, n, n0, r = 0;

	bool pidfd = false; /* a member exited */

	for (int i = 0; i < k; i++)
		pidfd = pidfd || ev[i].data.fd != g->ino;
	while (read(g->ino, buf, sizeof(buf)) > 0) {
	}
	if (g->timer && !pidfd && !file_changed(g))
		return 0;
	struct uroce_share_member *m = malloc(sizeof(*m) * UROCE_SHARE_MAX_MEMBERS);

	if (!m)
		return -ENOMEM;
	lk = uroce_locked_file_open(g->path, LOCK_EX, false);
	n0 = n = lk >= 0 ? uroce_share_members_load(lk, &gen, m) : lk;
	if (n >= 0) {
		n = uroce_share_prune(m, n);
		if (n != n0) {
			gen++;
			r = attach(g, fd, m, n);
			r = r ? r : uroce_share_members_store(lk, gen, m, n);
			r = r ? r : 1;
		} else if (g->v1 && gen != g->v1_gen) {
			/* Another member joined, left or claimed: our filter follows. */
			r = attach(g, fd, m, n);
			r = r ? r : 1;
		}
		if (r == 1)
			g->v1_gen = gen;
		saw(g, lk, gen);
		watch_members(g, m, n);
	} else {
		r = n;
	}
	if (lk >= 0)
		uroce_locked_file_close(lk);
	free(m);
	return r;
}

int uroce_share_check(struct uroce_share_group *g, int fd)
{
	struct epoll_event ev[8];
	int k = uroce_epoll_ready(g->epfd, ev, 8), r, cs;

	if (k <= 0)
		return k < 0 && errno != EINTR ? -errno : 0;
	/* Inside a poll, with the device's lock held: the file's open, reads and writes must not
	 * end the thread (host/os/nocancel.h). */
	cs = uroce_cancel_off();
	r = recheck(g, fd, ev, k);
	uroce_cancel_restore(cs);
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
	lk = uroce_locked_file_open(g->path, LOCK_EX, false);
	n = lk >= 0 ? uroce_share_members_load(lk, &gen, m) : lk;
	r = n < 0 ? n : 0;
	if (r == 0) {
		n = uroce_share_prune(m, n);
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
			r = uroce_share_members_store(lk, gen + 1, m, n);
			if (r) {
				m[me] = old; /* the file is unchanged: so is the program */
				attach(g, fd, m, n);
			} else {
				g->v1_gen = gen + 1;
				saw(g, lk, gen + 1);
			}
		}
	}
	if (lk >= 0)
		uroce_locked_file_close(lk);
	free(m);
	return r;
}
