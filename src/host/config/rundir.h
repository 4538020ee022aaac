/* SPDX-License-Identifier: MIT */
/*
 * The run-time directory: where device definitions, default RoCE modes and counters live.
 *
 * Design notes
 * - Location: $UROCE_RUNDIR when set and non-empty; else /run/uroce for root; else
 *   $XDG_RUNTIME_DIR/uroce. Both defaults are tmpfs on a systemd host, so like configfs and
 *   `rdma link add` everything here is gone after a reboot.
 * - Directories are created on demand with mode 0755 when running as root (other users may read
 *   the definitions and counters) and 0700 otherwise (a private directory, like
 *   $XDG_RUNTIME_DIR itself). The process umask still applies.
 * - Every file is written atomically: the content goes to a temporary file in the same
 *   directory (named ".tmp.*", a name no device can have) and is renamed (or linked, for
 *   exclusive creation) into place, so a concurrent reader sees the old or the new content,
 *   never a part. No fsync: the directory is a tmpfs and does not outlive a reboot anyway.
 * - No global state: every call takes the directory path.
 */
#ifndef UROCE_HOST_RUNDIR_H
#define UROCE_HOST_RUNDIR_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define UROCE_RUNDIR_ENV "UROCE_RUNDIR"
#define UROCE_RUNDIR_ROOT "/run/uroce"

/*
 * The run-time directory's path, into buf[cap]. Does not create it.
 * Returns 0; -ENOENT when not root, UROCE_RUNDIR is unset and XDG_RUNTIME_DIR is unset or empty
 * (set one of them); -ENAMETOOLONG when the path does not fit in cap.
 */
int uroce_rundir_path(char *buf, size_t cap);

/* Mode for the directories this module creates: 0755 as root, 0700 otherwise. */
mode_t uroce_rundir_dir_mode(void);

/*
 * Create directory dir and its missing parents (mkdir -p) with uroce_rundir_dir_mode().
 * Returns 0 (also when it exists), -ENOTDIR when a component is a file, or mkdir's errno.
 */
int uroce_rundir_mkdirs(const char *dir);

/*
 * Write data[0..len) to path atomically, creating the parent directories.
 * With exclusive, fail with -EEXIST if path exists (the check and the creation are one atomic
 * link()); without, replace it (rename()). Files get mode 0644 (less the umask).
 * Returns 0 or a negative errno (-EEXIST, -EACCES, -ENOSPC, ...). On failure no temporary file
 * is left behind.
 */
int uroce_rundir_write(const char *path, const void *data, size_t len, bool exclusive);

/*
 * Read a small file into buf[cap] and NUL-terminate it; *len (optional) gets its length.
 * Returns 0, -ENOENT when absent, -EFBIG when it holds cap bytes or more, or read's errno.
 */
int uroce_rundir_read(const char *path, char *buf, size_t cap, size_t *len);

/*
 * Join: snprintf(buf, cap, fmt, ...) that reports truncation.
 * Returns 0 or -ENAMETOOLONG.
 */
int uroce_rundir_join(char *buf, size_t cap, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/*
 * Remove path and then its parent directories up to (not including) top while they are
 * empty. Returns 0, -ENOENT when path does not exist, or unlink's errno.
 */
int uroce_rundir_remove(const char *path, const char *top);

#endif
