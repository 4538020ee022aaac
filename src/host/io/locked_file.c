/* SPDX-License-Identifier: MIT */
/* Files read and rewritten in place under an flock (locked_file.h). */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "host/io/locked_file.h"
#include "host/os/mono_clock.h"

static atomic_int held; /* locked files open in this process */

int uroce_locked_file_open(const char *path, int op, bool create)
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
		    a.st_dev == b.st_dev) {
			atomic_fetch_add(&held, 1);
			return fd;
		}
		close(fd);
	}
	return -EAGAIN;
}

void uroce_locked_file_close(int fd)
{
	flock(fd, LOCK_UN);
	close(fd);
	atomic_fetch_sub(&held, 1);
}

bool uroce_locked_files_released_by(uint64_t deadline_ns)
{
	/* Another thread's join or leave ends within milliseconds; an interrupted one never. */
	while (atomic_load(&held) > 0) {
		if (uroce_mono_ns() >= deadline_ns)
			return false;
		sched_yield();
	}
	return true;
}

void uroce_locked_files_forget(void)
{
	atomic_store(&held, 0);
}

int uroce_locked_file_read(int fd, char *buf, size_t cap)
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

int uroce_locked_file_write(int fd, const char *buf, size_t len)
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
