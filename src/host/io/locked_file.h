/* SPDX-License-Identifier: MIT */
/*
 * Small files in the run-time directory that several processes read and rewrite in place under
 * an flock (the sharing groups' membership files, the QPN slots file). Errors: 0 or a negative
 * errno.
 */
#ifndef UROCE_HOST_IO_LOCKED_FILE_H
#define UROCE_HOST_IO_LOCKED_FILE_H

#include <stdbool.h>
#include <stddef.h>

/*
 * Open path and flock it (op: LOCK_EX or LOCK_SH). A file unlinked by its last user between our
 * open and our lock is stale: it is opened again. Returns the fd, or -errno (-ENOENT when path
 * does not exist and create is false; -EAGAIN when it kept being replaced).
 */
int uroce_locked_file_open(const char *path, int op, bool create);

/* Unlock and close an fd from uroce_locked_file_open. */
void uroce_locked_file_close(int fd);

/* Read the whole file into buf[0..cap), NUL-terminated. Returns 0, -EFBIG (cap - 1 bytes or
 * more), or the read's errno. */
int uroce_locked_file_read(int fd, char *buf, size_t cap);

/* Replace the whole file by buf[0..len). Returns 0 or the errno of truncating or writing. */
int uroce_locked_file_write(int fd, const char *buf, size_t len);

#endif
