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
#include <stdint.h>

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

/*
 * For the exit handlers: true once no thread of this process holds a locked file (none opened
 * and not yet closed), false if one is still held at deadline_ns (host/os/mono_clock.h), as by
 * a thread that a signal interrupted inside a join (its exit() then runs the handlers): taking
 * that file's lock again, on another descriptor, would wait forever.
 */
bool uroce_locked_files_released_by(uint64_t deadline_ns);

/* In a forked child: what the parent's other threads held is theirs to release (their unlock
 * releases the child's copy of the descriptor too); the child's count starts from none. */
void uroce_locked_files_forget(void);

#endif
