/* SPDX-License-Identifier: MIT */
/*
 * The kernel's view of uroce's devices for a program that `uroce run` starts: a private mount
 * namespace in which /sys/class/infiniband and /sys/class/infiniband_verbs hold the files the
 * kernel shows for an RDMA device (host/config/sysfs_tree.h), made from uroce's devices as they
 * are when the program starts, and /dev/infiniband holds uverbsN (one per device) and rdma_cm as
 * character devices that open for reading and writing (/dev/null bound at each name: uroce's
 * libraries never use them). Programs that look there (pyverbs' tests for a device's
 * interface, UCX for GID types and device nodes) find uroce's devices as they would find a
 * kernel device's.
 *
 * How: unshare(CLONE_NEWNS) (as root), or unshare(CLONE_NEWUSER | CLONE_NEWNS) with the caller's
 * own uid and gid mapped to themselves (as an ordinary user, where the kernel allows
 * unprivileged user namespaces; the program keeps its identity and has no capabilities after
 * the exec). Mount events stop propagating out (MS_SLAVE); a tmpfs goes over /sys/class, every
 * directory of the real /sys/class is bind-mounted back into it at its own name, and the
 * infiniband classes are written into it; the tmpfs is then made read-only. /dev/infiniband,
 * when it exists, is covered by an empty tmpfs; when it does not, a tmpfs covers /dev with every
 * old entry bound (or, for symbolic links, copied) back, and infiniband is made in it.
 *
 * rdma_cm's configfs (uroce_run_view_configfs, run_configfs.h): FUSE mounted at
 * /sys/kernel/config, where the kernel's configfs would be, serving rdma_cm/ for uroce's devices.
 * When /sys/kernel has no config directory (no configfs in the kernel), a tmpfs covers
 * /sys/kernel with every old entry bound back, config is made in it, and it is made read-only;
 * when it has one, FUSE covers it (a configfs mounted there is hidden from the program: it shows
 * rdma_cm only). Without FUSE (/dev/fuse, libfuse3) /sys/kernel is left as it is.
 *
 * Only the calling process (and what it execs and forks) sees the view: the rest of the system
 * is untouched, and nothing is left to clean up when the program exits (the configfs server
 * exits with the program).
 */
#ifndef UROCE_TOOLS_RUN_VIEW_H
#define UROCE_TOOLS_RUN_VIEW_H

#include <stddef.h>

/*
 * Enter the view (see above) for the devices of the run-time directory rundir. Returns 0, or a
 * negative errno with why[] saying which step failed (the process may then be in a new mount
 * namespace without the view; it is still usable as it was).
 */
int uroce_run_view_enter(const char *rundir, char *why, size_t cap);

/*
 * Then, in that namespace, rdma_cm's configfs at /sys/kernel/config (run_configfs.h) for the
 * devices of rundir, served until the calling process (the program, after its exec) ends.
 * Returns 0, or a negative errno with why[] saying which step failed (no server runs then, and
 * /sys/kernel is as before, or holds an empty config directory).
 */
int uroce_run_view_configfs(const char *rundir, char *why, size_t cap);

#endif
