/* SPDX-License-Identifier: MIT */
/*
 * rdma_cm's configfs directory as a model, with no I/O: what `uroce run` serves at
 * /sys/kernel/config through FUSE (tools/run_configfs.c), so that the documented procedure
 *   mkdir /sys/kernel/config/rdma_cm/<dev>
 *   cat /sys/kernel/config/rdma_cm/<dev>/ports/1/default_roce_mode         -> RoCE v2
 *   echo "IB/RoCE v1" > /sys/kernel/config/rdma_cm/<dev>/ports/1/default_roce_mode
 *   rmdir /sys/kernel/config/rdma_cm/<dev>
 * changes uroce's default RoCE mode as it changes the kernel's.
 *
 * The tree (the kernel's drivers/infiniband/core/cma_configfs.c on configfs):
 *   /                           the configfs root (the mount point): holds rdma_cm only
 *   rdma_cm/                    the subsystem: holds the device groups made by mkdir
 *   rdma_cm/<dev>/              a device group, made by mkdir (and gone with rmdir)
 *   rdma_cm/<dev>/ports/        made with the group, as are its port directories
 *   rdma_cm/<dev>/ports/1/      uroce's devices have one port
 *   .../ports/1/default_roce_mode   0644: "IB/RoCE v1\n" or "RoCE v2\n"
 *   .../ports/1/default_roce_tos    0644: "0\n" .. "255\n"
 *
 * Design notes
 * - Which groups exist belongs to one instance (a mount); the settings behind the two files are
 *   the caller's, reached through the ops (struct uroce_cfs_ops): `uroce run` passes
 *   uroce_mode_get/set and uroce_tos_get/set on the run-time directory, so every process sees a
 *   change, and a setting outlives the group's rmdir, as the kernel keeps it in its cma_device.
 * - Node numbers are the FUSE inode numbers: 1 the root, 2 rdma_cm, and for the n-th group made
 *   (n counts up from 1 and is never reused, so a number never names two things) 8n + 0..4: the
 *   group, ports, ports/1, default_roce_mode, default_roce_tos. A node of a removed group is
 *   gone (-ENOENT).
 * - Errors are the kernel's, from configfs (fs/configfs/dir.c) and the VFS above it:
 *   mkdir in rdma_cm of a name that is no device: -ENODEV (make_cma_dev); mkdir anywhere else:
 *   -EPERM (no make_group); mkdir of a name that exists: -EEXIST; rmdir of rdma_cm, ports or
 *   ports/1: -EPERM (the subsystem and default groups); rmdir of a file: -ENOTDIR; creating a
 *   file: -EACCES (configfs directories have no create); unlink of an attribute, mknod, symlink,
 *   hard link and rename: -EPERM.
 * - Reads: the show text, as the kernel prints it. A show error (the device was deleted since
 *   mkdir: -ENODEV) is the read's error.
 * - Writes are stores, one per write call, whatever the file offset (configfs_write_iter): the
 *   data up to its first NUL and at most 4095 bytes (SIMPLE_ATTR_SIZE - 1) is parsed; on
 *   success the store consumed that many bytes (strnlen, so a write past a NUL is short).
 *   default_roce_mode takes "IB/RoCE v1" or "RoCE v2" with at most one trailing newline, else
 *   -EINVAL; a mode the device does not support is the set op's -EINVAL. default_roce_tos takes
 *   what kstrtou8(buf, 0) takes: an optional '+', decimal, 0x hex or 0 octal, at most one
 *   trailing newline; -ERANGE above 255, -EINVAL for anything else.
 * - Truncating an attribute succeeds and changes nothing (configfs_setattr), so a shell's
 *   `echo ... >` (O_TRUNC) works.
 * - Attribute files report size 4096 (a page, as configfs's do); directories 0.
 * - Not thread-safe: one caller at a time (the FUSE server is single-threaded).
 */
#ifndef UROCE_HOST_CONFIG_CMA_CONFIGFS_H
#define UROCE_HOST_CONFIG_CMA_CONFIGFS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define UROCE_CFS_ROOT 1u    /* the configfs root, FUSE's root inode */
#define UROCE_CFS_RDMA_CM 2u /* rdma_cm */
#define UROCE_CFS_NAME_MAX 63 /* the longest device name (IB_DEVICE_NAME_MAX - 1) */
#define UROCE_CFS_GROUPS_MAX 128 /* groups at once in one instance; one more mkdir: -ENOSPC */
#define UROCE_CFS_STORE_MAX 4095 /* bytes one store parses (SIMPLE_ATTR_SIZE - 1) */
#define UROCE_CFS_SHOW_MAX 64	 /* room for any show text */
#define UROCE_CFS_FILE_SIZE 4096 /* size attribute files report */

/*
 * The settings behind the attribute files, for device dev and port (always 1). Each returns 0
 * or a negative errno, which the file operation returns as it is.
 *   dev_check  0 when dev is a device, else -ENODEV (mkdir)
 *   mode_get   the default RoCE mode, 1 or 2
 *   mode_set   set it; -EINVAL when the device does not support it
 *   tos_get    the default TOS, 0..255
 *   tos_set    set it
 */
struct uroce_cfs_ops {
	int (*dev_check)(void *arg, const char *dev);
	int (*mode_get)(void *arg, const char *dev, int port, int *version);
	int (*mode_set)(void *arg, const char *dev, int port, int version);
	int (*tos_get)(void *arg, const char *dev, int port, int *tos);
	int (*tos_set)(void *arg, const char *dev, int port, int tos);
};

struct uroce_cfs_group {
	char name[UROCE_CFS_NAME_MAX + 1];
	uint64_t serial; /* n: its nodes are 8n + 0..4 */
};

struct uroce_cfs {
	const struct uroce_cfs_ops *ops;
	void *arg;
	struct uroce_cfs_group groups[UROCE_CFS_GROUPS_MAX]; /* in order of creation */
	int n_groups;
	uint64_t next_serial;
};

struct uroce_cfs_attr {
	uint64_t node;
	bool dir;
	unsigned perm;	 /* 0755 for directories, 0644 for the attribute files */
	unsigned nlink;	 /* 2 + subdirectories for a directory, 1 for a file */
	uint64_t size;
};

struct uroce_cfs_dirent {
	char name[UROCE_CFS_NAME_MAX + 1];
	uint64_t node;
	bool dir;
};

/* An empty instance (only the root and rdma_cm) on ops (kept, with arg, for its lifetime). */
void uroce_cfs_init(struct uroce_cfs *fs, const struct uroce_cfs_ops *ops, void *arg);

/* The attributes of node. Returns 0 or -ENOENT (no such node, or its group was removed). */
int uroce_cfs_getattr(const struct uroce_cfs *fs, uint64_t node, struct uroce_cfs_attr *out);

/* The entry name of directory parent. Returns 0, -ENOENT, or -ENOTDIR when parent is a file. */
int uroce_cfs_lookup(const struct uroce_cfs *fs, uint64_t parent, const char *name,
		     struct uroce_cfs_attr *out);

/*
 * Entry number index of directory node: "." and ".." first, then its children (a group's
 * directory lists in creation order). Returns 1 with *out filled, 0 past the last entry,
 * -ENOENT or -ENOTDIR.
 */
int uroce_cfs_readdir(const struct uroce_cfs *fs, uint64_t node, size_t index,
		      struct uroce_cfs_dirent *out);

/*
 * mkdir parent/name. Only rdma_cm/<dev> can be made: 0 with *out the new group's attributes;
 * -ENODEV when dev_check says dev is no device (or the name is longer than any device's);
 * -EEXIST when the entry exists; -EPERM in any other directory; -ENOENT/-ENOTDIR for a bad
 * parent; -ENOSPC with UROCE_CFS_GROUPS_MAX groups.
 */
int uroce_cfs_mkdir(struct uroce_cfs *fs, uint64_t parent, const char *name,
		    struct uroce_cfs_attr *out);

/*
 * rmdir parent/name. Returns 0 for a group (its nodes are gone; the settings stay); -EPERM for
 * rdma_cm, ports and ports/<n>; -ENOTDIR for an attribute file; -ENOENT when absent.
 */
int uroce_cfs_rmdir(struct uroce_cfs *fs, uint64_t parent, const char *name);

/*
 * What the file-system calls that configfs refuses return for parent/name: create (open with
 * O_CREAT of a new name) -EACCES; unlink -EPERM (-EISDIR for a directory); mknod, symlink, link
 * and rename -EPERM. Each returns -ENOENT/-ENOTDIR first when parent is not a directory, and
 * create returns -EEXIST when the entry exists, unlink -ENOENT when it does not.
 */
int uroce_cfs_create(const struct uroce_cfs *fs, uint64_t parent, const char *name);
int uroce_cfs_unlink(const struct uroce_cfs *fs, uint64_t parent, const char *name);
int uroce_cfs_refuse(const struct uroce_cfs *fs, uint64_t parent);

/* Opening node: 0 for an attribute file, -EISDIR for a directory, -ENOENT when gone. */
int uroce_cfs_open(const struct uroce_cfs *fs, uint64_t node);

/*
 * The show text of attribute node into buf[cap] (not NUL-terminated): its length; -ENOENT,
 * -EISDIR, -ENOSPC when cap < UROCE_CFS_SHOW_MAX, or the get op's error.
 */
ssize_t uroce_cfs_show(const struct uroce_cfs *fs, uint64_t node, char *buf, size_t cap);

/*
 * A store of data[0..len) into attribute node (see the design notes): the bytes it consumed, or
 * -EINVAL/-ERANGE for text it does not take, -ENOENT, -EISDIR, or the set op's error.
 */
ssize_t uroce_cfs_store(const struct uroce_cfs *fs, uint64_t node, const char *data, size_t len);

/* Truncating node to size: 0 for an attribute (nothing changes), -EISDIR, -ENOENT. */
int uroce_cfs_truncate(const struct uroce_cfs *fs, uint64_t node, uint64_t size);

/*
 * The kernel's kstrtou8(s, 0, &v) on the NUL-terminated s: 0 with *v set, -ERANGE above 255,
 * -EINVAL when s is not a number in that syntax.
 */
int uroce_cfs_parse_u8(const char *s, unsigned *v);

#endif
