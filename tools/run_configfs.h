/* SPDX-License-Identifier: MIT */
/*
 * rdma_cm's configfs for a program that `uroce run` starts: a FUSE file system at
 * /sys/kernel/config that serves host/config/cma_configfs.h's model, with the default RoCE mode
 * and TOS read and written through uroce_mode_get/set and uroce_tos_get/set on the run-time
 * directory (the functions `uroce mode` and rdma_cm use), so a change made there is seen by
 * rdma_cm in every process, as `uroce mode` makes it.
 *
 * The three steps, called by run_view.c in the program's mount namespace before the exec:
 * open /dev/fuse, mount it (the kernel's FUSE mount, options default_permissions and
 * allow_other, owned by the caller's ids, so the kernel checks the 0644/0755 modes as configfs
 * does), and start the server. The server is a process of its own (forked twice, in a session of
 * its own, stdin and stdout on /dev/null, stderr kept for libfuse's and a sanitizer's reports):
 * not the program's child, so the program never waits for it; it watches the program's process
 * id (a pidfd) next to the FUSE descriptor and exits when the program ends. It is single-threaded, and answers only after
 * its FUSE session exists: the program's first access waits for the server's answer to the
 * kernel's INIT.
 *
 * Built without libfuse3 (pkg-config found none), uroce_configfs_open fails with -ENOTSUP.
 */
#ifndef UROCE_TOOLS_RUN_CONFIGFS_H
#define UROCE_TOOLS_RUN_CONFIGFS_H

#include <stddef.h>

/* /dev/fuse, opened close-on-exec: the descriptor, or a negative errno with why[] set. */
int uroce_configfs_open(char *why, size_t cap);

/* Mount FUSE descriptor fd at dir (a directory). Returns 0 or a negative errno with why[] set. */
int uroce_configfs_mount(int fd, const char *dir, char *why, size_t cap);

/*
 * Start the server on fd (mounted) for the devices of rundir, watching the calling process (which
 * then execs the program). Returns 0 once the server is serving, or a negative errno with why[]
 * set (no server runs then: unmount the directory). The caller closes fd afterwards either way.
 */
int uroce_configfs_serve(int fd, const char *rundir, char *why, size_t cap);

#endif
