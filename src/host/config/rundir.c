/* SPDX-License-Identifier: MIT */
/* The run-time directory: location, directories, atomic small-file writes. */
#include "host/config/rundir.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int uroce_rundir_join(char *buf, size_t cap, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, cap, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= cap)
		return -ENAMETOOLONG;
	return 0;
}

int uroce_rundir_path(char *buf, size_t cap)
{
	const char *env = getenv(UROCE_RUNDIR_ENV);

	if (env && *env)
		return uroce_rundir_join(buf, cap, "%s", env);
	if (geteuid() == 0)
		return uroce_rundir_join(buf, cap, "%s", UROCE_RUNDIR_ROOT);
	env = getenv("XDG_RUNTIME_DIR");
	if (!env || !*env)
		return -ENOENT;
	return uroce_rundir_join(buf, cap, "%s/uroce", env);
}

mode_t uroce_rundir_dir_mode(void)
{
	return geteuid() == 0 ? 0755 : 0700;
}

int uroce_rundir_mkdirs(const char *dir)
{
	char p[PATH_MAX];
	size_t n = strlen(dir);
	struct stat st;

	if (n == 0)
		return -EINVAL;
	if (n >= sizeof(p))
		return -ENAMETOOLONG;
	memcpy(p, dir, n + 1);
	while (n > 1 && p[n - 1] == '/')
		p[--n] = '\0';
	/* Create each prefix in turn; an existing one is fine if it is a directory. */
	for (size_t i = 1; i <= n; i++) {
		if (p[i] != '/' && p[i] != '\0')
			continue;
		char c = p[i];

		p[i] = '\0';
		if (mkdir(p, uroce_rundir_dir_mode()) != 0) {
			int e = errno;

			if (e != EEXIST) {
				/* Not allowed to create an existing parent (e.g. /run): fine. */
				if (stat(p, &st) != 0)
					return -e;
			} else if (stat(p, &st) != 0) {
				return -errno;
			}
			if (!S_ISDIR(st.st_mode))
				return -ENOTDIR;
		}
		p[i] = c;
	}
	return 0;
}

/* Parent directory of path into dir[cap] ("." when there is no slash). */
static int parent_of(const char *path, char *dir, size_t cap)
{
	const char *slash = strrchr(path, '/');

	if (!slash)
		return uroce_rundir_join(dir, cap, ".");
	if (slash == path)
		return uroce_rundir_join(dir, cap, "/");
	return uroce_rundir_join(dir, cap, "%.*s", (int)(slash - path), path);
}

static int write_all(int fd, const void *data, size_t len)
{
	const char *p = data;

	while (len > 0) {
		ssize_t w = write(fd, p, len);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += w;
		len -= (size_t)w;
	}
	return 0;
}

int uroce_rundir_write(const char *path, const void *data, size_t len, bool exclusive)
{
	char dir[PATH_MAX], tmp[PATH_MAX];
	int fd = -1, err;

	err = parent_of(path, dir, sizeof(dir));
	if (err)
		return err;
	err = uroce_rundir_mkdirs(dir);
	if (err)
		return err;
	/* The pid and a retry counter make the name unique among concurrent writers. */
	for (unsigned i = 0; fd < 0 && i < 100; i++) {
		err = uroce_rundir_join(tmp, sizeof(tmp), "%s/.tmp.%ld.%u", dir, (long)getpid(), i);
		if (err)
			return err;
		fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
		if (fd < 0 && errno != EEXIST)
			return -errno;
	}
	if (fd < 0)
		return -EEXIST;
	err = write_all(fd, data, len);
	if (close(fd) != 0 && !err)
		err = -errno;
	if (!err) {
		if (exclusive) {
			/* link() fails with EEXIST if path exists: check and create in one step. */
			if (link(tmp, path) != 0)
				err = -errno;
		} else if (rename(tmp, path) != 0) {
			err = -errno;
		}
	}
	if (err || exclusive)
		unlink(tmp);
	return err;
}

int uroce_rundir_read(const char *path, char *buf, size_t cap, size_t *len)
{
	size_t n = 0;
	int fd, err = 0;

	if (cap == 0)
		return -EINVAL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	for (;;) {
		ssize_t r = read(fd, buf + n, cap - n);

		if (r < 0) {
			if (errno == EINTR)
				continue;
			err = -errno;
			break;
		}
		if (r == 0)
			break;
		n += (size_t)r;
		if (n == cap) {
			err = -EFBIG;
			break;
		}
	}
	close(fd);
	if (err)
		return err;
	buf[n] = '\0';
	if (len)
		*len = n;
	return 0;
}

int uroce_rundir_remove(const char *path, const char *top)
{
	char dir[PATH_MAX];
	size_t topn = strlen(top);

	if (unlink(path) != 0)
		return -errno;
	if (uroce_rundir_join(dir, sizeof(dir), "%s", path))
		return 0;
	/* rmdir fails on a non-empty directory, which ends the walk. */
	for (;;) {
		char *slash = strrchr(dir, '/');

		if (!slash)
			break;
		*slash = '\0';
		if (strlen(dir) <= topn || strncmp(dir, top, topn) != 0 || dir[topn] != '/')
			break;
		if (rmdir(dir) != 0)
			break;
	}
	return 0;
}
