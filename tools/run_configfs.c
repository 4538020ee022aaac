/* SPDX-License-Identifier: MIT */
/* `uroce run`'s rdma_cm configfs: a FUSE server for cma_configfs.h's model (run_configfs.h). */
#include "run_configfs.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#ifdef UROCE_HAVE_FUSE3

#define FUSE_USE_VERSION 312
#include <dirent.h>
#include <fuse_lowlevel.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>

#include "host/config/cma_configfs.h"
#include "host/config/device.h"
#include "host/config/mode.h"
#include "host/config/tos.h"

static int fail(char *why, size_t cap, int err, const char *step)
{
	snprintf(why, cap, "%s: %s", step, strerror(err));
	return -err;
}

int uroce_configfs_open(char *why, size_t cap)
{
	int fd = open("/dev/fuse", O_RDWR | O_CLOEXEC);

	return fd < 0 ? fail(why, cap, errno, "open /dev/fuse") : fd;
}

int uroce_configfs_mount(int fd, const char *dir, char *why, size_t cap)
{
	char opts[160], step[64 + PATH_MAX];

	/* rootmode: a directory; user_id/group_id: who owns the files and may use the mount
	 * without allow_other, which lets the program's other identities in too (as root). */
	snprintf(opts, sizeof(opts),
		 "fd=%d,rootmode=40000,user_id=%u,group_id=%u,default_permissions,allow_other", fd,
		 (unsigned)geteuid(), (unsigned)getegid());
	if (mount("uroce", dir, "fuse", MS_NOSUID | MS_NODEV | MS_NOEXEC, opts)) {
		snprintf(step, sizeof(step), "mount FUSE on %s", dir);
		return fail(why, cap, errno, step);
	}
	return 0;
}

/* The server's state: the model and where the settings live. */
struct server {
	struct uroce_cfs fs;
	const char *rundir;
	uid_t uid;
	gid_t gid;
	struct timespec born; /* every node's times */
};

/* An open attribute file: the show text, made at the first read after the open or a write, as
 * configfs fills its buffer (needs_read_fill). */
struct handle {
	bool filled;
	size_t len;
	char text[UROCE_CFS_SHOW_MAX];
};

static int cfs_dev_check(void *arg, const char *dev)
{
	const struct server *s = arg;
	struct uroce_devdef d;

	return uroce_dev_find(s->rundir, dev, &d);
}

static int cfs_mode_get(void *arg, const char *dev, int port, int *version)
{
	return uroce_mode_get(((const struct server *)arg)->rundir, dev, port, version);
}

static int cfs_mode_set(void *arg, const char *dev, int port, int version)
{
	return uroce_mode_set(((const struct server *)arg)->rundir, dev, port, version);
}

static int cfs_tos_get(void *arg, const char *dev, int port, int *tos)
{
	return uroce_tos_get(((const struct server *)arg)->rundir, dev, port, tos);
}

static int cfs_tos_set(void *arg, const char *dev, int port, int tos)
{
	return uroce_tos_set(((const struct server *)arg)->rundir, dev, port, tos);
}

static const struct uroce_cfs_ops cfs_ops = {
	.dev_check = cfs_dev_check,
	.mode_get = cfs_mode_get,
	.mode_set = cfs_mode_set,
	.tos_get = cfs_tos_get,
	.tos_set = cfs_tos_set,
};

static struct server *srv(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

static void to_stat(const struct server *s, const struct uroce_cfs_attr *a, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = (ino_t)a->node;
	st->st_mode = (a->dir ? S_IFDIR : S_IFREG) | a->perm;
	st->st_nlink = a->nlink;
	st->st_uid = s->uid;
	st->st_gid = s->gid;
	st->st_size = (off_t)a->size;
	st->st_blksize = 4096;
	st->st_atim = st->st_mtim = st->st_ctim = s->born;
}

/* Nothing is cached by the kernel (timeouts 0): another process's mkdir or rmdir in the same
 * mount, and a mode changed by `uroce mode`, show at once. */
static void reply_entry(fuse_req_t req, const struct uroce_cfs_attr *a)
{
	struct fuse_entry_param e;

	memset(&e, 0, sizeof(e));
	e.ino = a->node;
	e.generation = 1;
	to_stat(srv(req), a, &e.attr);
	fuse_reply_entry(req, &e);
}

static void reply_attr(fuse_req_t req, const struct uroce_cfs_attr *a)
{
	struct stat st;

	to_stat(srv(req), a, &st);
	fuse_reply_attr(req, &st, 0);
}

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct uroce_cfs_attr a;
	int err = uroce_cfs_lookup(&srv(req)->fs, parent, name, &a);

	if (err)
		fuse_reply_err(req, -err);
	else
		reply_entry(req, &a);
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct uroce_cfs_attr a;
	int err = uroce_cfs_getattr(&srv(req)->fs, ino, &a);

	(void)fi;
	if (err)
		fuse_reply_err(req, -err);
	else
		reply_attr(req, &a);
}

/* Truncation is accepted and changes nothing (configfs_setattr); times are accepted and not
 * kept; a change of mode or owner is refused (configfs keeps those: a departure). */
static void op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
		       struct fuse_file_info *fi)
{
	struct uroce_cfs_attr a;
	int err;

	(void)fi;
	if (to_set & (FUSE_SET_ATTR_MODE | FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID)) {
		fuse_reply_err(req, EPERM);
		return;
	}
	err = uroce_cfs_getattr(&srv(req)->fs, ino, &a);
	if (!err && (to_set & FUSE_SET_ATTR_SIZE))
		err = uroce_cfs_truncate(&srv(req)->fs, ino, (uint64_t)attr->st_size);
	if (err)
		fuse_reply_err(req, -err);
	else
		reply_attr(req, &a);
}

static void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	char buf[4096];
	size_t cap = size < sizeof(buf) ? size : sizeof(buf), used = 0;
	struct uroce_cfs_dirent de;

	(void)fi;
	for (size_t i = off > 0 ? (size_t)off : 0;; i++) {
		int r = uroce_cfs_readdir(&srv(req)->fs, ino, i, &de);
		struct stat st;
		size_t need;

		if (r < 0 && used == 0) {
			fuse_reply_err(req, -r);
			return;
		}
		if (r != 1)
			break;
		memset(&st, 0, sizeof(st));
		st.st_ino = (ino_t)de.node;
		st.st_mode = de.dir ? S_IFDIR : S_IFREG;
		/* the offset of an entry is where the next listing starts */
		need = fuse_add_direntry(req, buf + used, cap - used, de.name, &st, (off_t)(i + 1));
		if (need > cap - used)
			break;
		used += need;
	}
	fuse_reply_buf(req, buf, used);
}

static void op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	struct uroce_cfs_attr a;
	int err = uroce_cfs_mkdir(&srv(req)->fs, parent, name, &a);

	(void)mode;
	if (err)
		fuse_reply_err(req, -err);
	else
		reply_entry(req, &a);
}

static void op_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	fuse_reply_err(req, -uroce_cfs_rmdir(&srv(req)->fs, parent, name));
}

static void op_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	fuse_reply_err(req, -uroce_cfs_unlink(&srv(req)->fs, parent, name));
}

static void op_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		      struct fuse_file_info *fi)
{
	(void)mode;
	(void)fi;
	fuse_reply_err(req, -uroce_cfs_create(&srv(req)->fs, parent, name));
}

static void op_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		     dev_t rdev)
{
	(void)name;
	(void)mode;
	(void)rdev;
	fuse_reply_err(req, -uroce_cfs_refuse(&srv(req)->fs, parent));
}

static void op_symlink(fuse_req_t req, const char *link, fuse_ino_t parent, const char *name)
{
	(void)link;
	(void)name;
	fuse_reply_err(req, -uroce_cfs_refuse(&srv(req)->fs, parent));
}

static void op_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char *newname)
{
	(void)ino;
	(void)newname;
	fuse_reply_err(req, -uroce_cfs_refuse(&srv(req)->fs, newparent));
}

static void op_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
		      const char *newname, unsigned int flags)
{
	(void)name;
	(void)newparent;
	(void)newname;
	(void)flags;
	fuse_reply_err(req, -uroce_cfs_refuse(&srv(req)->fs, parent));
}

static void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	int err = uroce_cfs_open(&srv(req)->fs, ino);
	struct handle *h;

	if (err) {
		fuse_reply_err(req, -err);
		return;
	}
	h = calloc(1, sizeof(*h));
	if (!h) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	fi->fh = (uint64_t)(uintptr_t)h;
	fi->direct_io = 1; /* every read and write comes here, none from the page cache */
	fi->keep_cache = 0;
	if (fuse_reply_open(req, fi))
		free(h);
}

static void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	struct handle *h = (struct handle *)(uintptr_t)fi->fh;

	if (!h->filled) {
		ssize_t n = uroce_cfs_show(&srv(req)->fs, ino, h->text, sizeof(h->text));

		if (n < 0) {
			fuse_reply_err(req, (int)-n);
			return;
		}
		h->len = (size_t)n;
		h->filled = true;
	}
	if (off < 0 || (size_t)off >= h->len) {
		fuse_reply_buf(req, NULL, 0);
		return;
	}
	if (size > h->len - (size_t)off)
		size = h->len - (size_t)off;
	fuse_reply_buf(req, h->text + off, size);
}

static void op_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
		     struct fuse_file_info *fi)
{
	struct handle *h = (struct handle *)(uintptr_t)fi->fh;
	ssize_t n = uroce_cfs_store(&srv(req)->fs, ino, buf, size);

	(void)off; /* every write is a store of its own, wherever the offset is */
	h->filled = false;
	if (n < 0)
		fuse_reply_err(req, (int)-n);
	else
		fuse_reply_write(req, (size_t)n);
}

static void op_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	free((void *)(uintptr_t)fi->fh);
	fuse_reply_err(req, 0);
}

static const struct fuse_lowlevel_ops fuse_ops = {
	.lookup = op_lookup,
	.getattr = op_getattr,
	.setattr = op_setattr,
	.readdir = op_readdir,
	.mkdir = op_mkdir,
	.rmdir = op_rmdir,
	.unlink = op_unlink,
	.create = op_create,
	.mknod = op_mknod,
	.symlink = op_symlink,
	.link = op_link,
	.rename = op_rename,
	.open = op_open,
	.read = op_read,
	.write = op_write,
	.release = op_release,
};

/* What the server tells `uroce run` once it serves, or why it cannot. */
struct ready {
	int err; /* 0 or a positive errno */
	char why[120];
};

static void report(int fd, int err, const char *step)
{
	struct ready r = {.err = err};

	if (step)
		snprintf(r.why, sizeof(r.why), "%s: %s", step, strerror(err));
	if (write(fd, &r, sizeof(r)) != (ssize_t)sizeof(r))
		return; /* `uroce run` sees the pipe close and says the server did not start */
}

/* Close every descriptor but the three the server keeps and stderr (where libfuse's and a
 * sanitizer's reports go), and put stdin and stdout on /dev/null. */
static void tidy_fds(int keep1, int keep2, int keep3)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	int null = open("/dev/null", O_RDWR | O_CLOEXEC);

	if (null >= 0) {
		for (int i = 0; i < 2; i++)
			if (i != null)
				dup2(null, i);
		if (null > 2)
			close(null);
	}
	if (!d)
		return;
	while ((de = readdir(d))) {
		int fd = atoi(de->d_name);

		if (fd > 2 && fd != dirfd(d) && fd != keep1 && fd != keep2 && fd != keep3)
			close(fd);
	}
	closedir(d);
}

/* The server process: serves until the program (pidfd) ends or the mount goes away. */
static __attribute__((noreturn)) void serve(int fd, int pidfd, int ready, const char *rundir)
{
	static struct server s; /* static: the model holds the groups' table */
	static char name[] = "uroce";
	char *argv[] = {name, NULL};
	struct fuse_args args = FUSE_ARGS_INIT(1, argv);
	struct fuse_buf buf = {.mem = NULL};
	struct fuse_session *se;
	char mnt[32];

	setsid(); /* the terminal's signals are for the program */
	if (chdir("/"))
		(void)0; /* the server opens nothing by a relative path */
	tidy_fds(fd, pidfd, ready);
	signal(SIGPIPE, SIG_IGN);
	s.rundir = rundir;
	s.uid = geteuid();
	s.gid = getegid();
	clock_gettime(CLOCK_REALTIME, &s.born);
	uroce_cfs_init(&s.fs, &cfs_ops, &s);
	se = fuse_session_new(&args, &fuse_ops, sizeof(fuse_ops), &s);
	if (!se) {
		report(ready, EINVAL, "fuse_session_new");
		_exit(1);
	}
	/* "/dev/fd/N": libfuse takes the descriptor already mounted instead of mounting. */
	snprintf(mnt, sizeof(mnt), "/dev/fd/%d", fd);
	if (fuse_session_mount(se, mnt)) {
		report(ready, EINVAL, "fuse_session_mount /dev/fd/N");
		_exit(1);
	}
	/* Never block in a read: a request the kernel withdraws between poll and read would
	 * otherwise hold the server past the program's end. */
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	report(ready, 0, NULL);
	close(ready);

	struct pollfd p[2] = {{.fd = fd, .events = POLLIN}, {.fd = pidfd, .events = POLLIN}};

	while (!fuse_session_exited(se)) {
		int n = poll(p, 2, -1);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 || p[1].revents)
			break; /* the program ended */
		if (p[0].revents & POLLIN) {
			n = fuse_session_receive_buf(se, &buf);
			if (n == -EINTR || n == -EAGAIN || n == -ENOENT)
				continue;
			if (n <= 0)
				break;
			fuse_session_process_buf(se, &buf);
		} else if (p[0].revents & (POLLERR | POLLHUP | POLLNVAL)) {
			break; /* unmounted or aborted */
		}
	}
	/* The mount goes with the program's mount namespace; closing the descriptor (at exit)
	 * ends the connection, so anything left in the namespace gets ENOTCONN. */
	_exit(0);
}

int uroce_configfs_serve(int fd, const char *rundir, char *why, size_t cap)
{
	pid_t prog = getpid(), mid;
	int pipefd[2], status = 0;
	struct ready r;
	ssize_t n;

	if (pipe2(pipefd, O_CLOEXEC))
		return fail(why, cap, errno, "pipe");
	fflush(NULL); /* nothing buffered is written twice */
	mid = fork();
	if (mid < 0) {
		int err = errno;

		close(pipefd[0]);
		close(pipefd[1]);
		return fail(why, cap, err, "fork");
	}
	if (mid == 0) {
		/* The middle process: the program (prog) waits for it, so prog is alive and its
		 * pidfd names it; the server, its child, is then adopted by init (or the nearest
		 * subreaper) when it exits, and is never the program's child. */
		int pidfd = (int)syscall(SYS_pidfd_open, prog, 0);
		pid_t s;

		close(pipefd[0]);
		if (pidfd < 0) {
			report(pipefd[1], errno, "pidfd_open");
			_exit(1);
		}
		s = fork();
		if (s == 0)
			serve(fd, pidfd, pipefd[1], rundir);
		if (s < 0)
			report(pipefd[1], errno, "fork the server");
		_exit(s < 0);
	}
	close(pipefd[1]);
	while (waitpid(mid, &status, 0) < 0 && errno == EINTR)
		;
	do
		n = read(pipefd[0], &r, sizeof(r));
	while (n < 0 && errno == EINTR);
	close(pipefd[0]);
	if (n != (ssize_t)sizeof(r)) {
		snprintf(why, cap, "the configfs server did not start");
		return -ECHILD;
	}
	if (r.err) {
		snprintf(why, cap, "configfs server: %s", r.why);
		return -r.err;
	}
	return 0;
}

#else /* !UROCE_HAVE_FUSE3 */

int uroce_configfs_open(char *why, size_t cap)
{
	snprintf(why, cap, "this uroce was built without libfuse3 (install libfuse3-dev)");
	return -ENOTSUP;
}

int uroce_configfs_mount(int fd, const char *dir, char *why, size_t cap)
{
	(void)fd;
	(void)dir;
	return uroce_configfs_open(why, cap);
}

int uroce_configfs_serve(int fd, const char *rundir, char *why, size_t cap)
{
	(void)fd;
	(void)rundir;
	return uroce_configfs_open(why, cap);
}

#endif
