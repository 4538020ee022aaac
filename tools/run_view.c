/* SPDX-License-Identifier: MIT */
/* `uroce run`'s private view of /sys/class with uroce's devices in it (run_view.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "host/config/device.h"
#include "host/config/gid.h"
#include "host/config/sysfs_tree.h"
#include "host/os/netif.h"
#include "run_configfs.h"
#include "run_view.h"

#define CLASS_DIR "/sys/class"
#define DEV_IB_DIR "/dev/infiniband"
#define KERNEL_DIR "/sys/kernel"
#define CONFIG_DIR KERNEL_DIR "/config"

static int fail(char *why, size_t cap, int err, const char *step)
{
	snprintf(why, cap, "%s: %s", step, strerror(err));
	return -err;
}

/* Write one line into /proc/self/<file> (the user namespace maps). */
static int write_proc(const char *file, const char *text)
{
	char path[64];
	int fd, err = 0;
	size_t len = strlen(text);

	snprintf(path, sizeof(path), "/proc/self/%s", file);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (write(fd, text, len) != (ssize_t)len)
		err = -errno;
	close(fd);
	return err;
}

/* A mount namespace of our own; as an ordinary user inside a user namespace that maps the
 * caller's uid and gid to themselves. */
static int new_namespace(char *why, size_t cap)
{
	char map[64];
	uid_t uid = geteuid();
	gid_t gid = getegid();
	int err;

	if (uid == 0) {
		if (unshare(CLONE_NEWNS))
			return fail(why, cap, errno, "unshare(CLONE_NEWNS)");
		return 0;
	}
	if (unshare(CLONE_NEWUSER | CLONE_NEWNS))
		return fail(why, cap, errno, "unshare(CLONE_NEWUSER|CLONE_NEWNS)");
	snprintf(map, sizeof(map), "%u %u 1\n", (unsigned)uid, (unsigned)uid);
	err = write_proc("uid_map", map);
	if (!err)
		err = write_proc("setgroups", "deny\n");
	if (!err) {
		snprintf(map, sizeof(map), "%u %u 1\n", (unsigned)gid, (unsigned)gid);
		err = write_proc("gid_map", map);
	}
	return err ? fail(why, cap, -err, "user namespace id maps") : 0;
}

/* Make dst (a new, empty entry of a tmpfs) stand for the entry src of the covered directory:
 * directories and other files are bind-mounted (device nodes keep working, mounts below them
 * come along), symbolic links are copied. */
static int rebind_entry(const char *src, const char *dst)
{
	struct stat st;
	char target[PATH_MAX];
	ssize_t n;
	int fd;

	if (lstat(src, &st))
		return -errno;
	if (S_ISLNK(st.st_mode)) {
		n = readlink(src, target, sizeof(target) - 1);
		if (n < 0)
			return -errno;
		target[n] = '\0';
		return symlink(target, dst) ? -errno : 0;
	}
	if (S_ISDIR(st.st_mode)) {
		if (mkdir(dst, st.st_mode & 07777))
			return -errno;
	} else {
		fd = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		if (fd < 0)
			return -errno;
		close(fd);
	}
	return mount(src, dst, NULL, MS_BIND | MS_REC, NULL) ? -errno : 0;
}

/* Put a tmpfs over dir and bring back the entries of the old dir that keep() accepts (none when
 * keep is NULL). Returns a descriptor of the new dir, or a negative errno with why[] set. */
static int cover_dir(const char *dir, bool (*keep)(const char *name), char *why, size_t cap)
{
	char src[64 + 256], dst[PATH_MAX];
	struct dirent *de;
	DIR *entries;
	int old, err = 0, fd;

	old = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (old < 0)
		return fail(why, cap, errno, dir);
	fd = dup(old);
	entries = fd >= 0 ? fdopendir(fd) : NULL;
	if (!entries) {
		err = fail(why, cap, errno, dir);
		if (fd >= 0)
			close(fd);
		close(old);
		return err;
	}
	if (mount("uroce", dir, "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=0755")) {
		snprintf(dst, sizeof(dst), "mount a tmpfs on %s", dir);
		err = fail(why, cap, errno, dst);
	}
	while (!err && (de = readdir(entries))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") || !keep ||
		    !keep(de->d_name))
			continue;
		snprintf(src, sizeof(src), "/proc/self/fd/%d/%s", old, de->d_name);
		if (snprintf(dst, sizeof(dst), "%s/%s", dir, de->d_name) >= (int)sizeof(dst))
			continue;
		err = rebind_entry(src, dst);
		if (err == -ENOENT) /* gone since readdir (a device node, a pty): not shown */
			err = 0;
		if (err)
			fail(why, cap, -err, dst);
	}
	closedir(entries);
	close(old);
	if (err)
		return err;
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	return fd < 0 ? fail(why, cap, errno, dir) : fd;
}

struct writer {
	int root; /* the new /sys/class */
};

static int write_entry(void *arg, enum uroce_sysfs_kind kind, const char *path, const char *text)
{
	struct writer *wr = arg;
	int fd;
	ssize_t len;

	switch (kind) {
	case UROCE_SYSFS_DIR:
		return mkdirat(wr->root, path, 0755) && errno != EEXIST ? -errno : 0;
	case UROCE_SYSFS_LINK:
		return symlinkat(text, wr->root, path) ? -errno : 0;
	case UROCE_SYSFS_FILE:
		fd = openat(wr->root, path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0444);
		if (fd < 0)
			return -errno;
		len = (ssize_t)strlen(text);
		if (write(fd, text, (size_t)len) != len) {
			int err = errno ? errno : EIO;

			close(fd);
			return -err;
		}
		close(fd);
		return 0;
	}
	return -EINVAL;
}

/* Write the infiniband classes for the devices that exist now; returns how many there are. */
static int write_devices(int root, const char *rundir, char *why, size_t cap)
{
	struct writer wr = {.root = root};
	struct uroce_netif_list ifs;
	struct uroce_devdef *devs = NULL;
	struct uroce_gid_entry *gids;
	int n = 0, err;

	err = uroce_netif_scan(&ifs);
	if (err)
		return fail(why, cap, -err, "list the interfaces");
	gids = calloc(UROCE_GID_TABLE_MAX, sizeof(*gids));
	err = gids ? uroce_dev_list(rundir, &ifs, &devs, &n) : -ENOMEM;
	if (err) {
		fail(why, cap, -err, "list the devices");
		goto out;
	}
	err = uroce_sysfs_classes(write_entry, &wr);
	for (int i = 0; i < n && !err; i++) {
		struct uroce_devinfo info;
		const struct uroce_netif *nif = uroce_netif_find(&ifs, devs[i].netdev);
		int ng = nif ? uroce_gid_table_from_netif(nif, devs[i].roce, gids,
							  UROCE_GID_TABLE_MAX)
			     : 0;

		if (ng == -ENOSPC)
			ng = UROCE_GID_TABLE_MAX;
		if (ng < 0)
			ng = 0;
		uroce_dev_info(&devs[i], &ifs, &info);
		struct uroce_sysfs_dev d = {
			.def = &devs[i], .info = &info, .gids = gids, .n_gids = ng, .index = i};
		err = uroce_sysfs_device(&d, write_entry, &wr);
	}
	if (err)
		fail(why, cap, -err, "write the infiniband class files");
out:
	free(devs);
	free(gids);
	uroce_netif_list_free(&ifs);
	return err ? err : n;
}

static bool not_ours(const char *name)
{
	return strcmp(name, "infiniband") != 0 && strcmp(name, "infiniband_verbs") != 0;
}

static bool not_infiniband(const char *name)
{
	return strcmp(name, "infiniband") != 0;
}

/*
 * /dev/infiniband/uverbsN for each device (and rdma_cm), as character devices that open for
 * reading and writing: /dev/null bound at each name, since uroce's libraries never use them and
 * programs (UCX) only check that they exist and open. When /dev has no infiniband directory, a
 * tmpfs covers /dev with its old entries brought back, so the real /dev stays untouched.
 */
static int write_dev_nodes(int n_devs, char *why, size_t cap)
{
	char name[32], path[64];
	struct stat st;
	int ib, err = 0;

	if (!stat(DEV_IB_DIR, &st)) {
		ib = cover_dir(DEV_IB_DIR, NULL, why, cap);
		if (ib < 0)
			return ib;
	} else {
		int dev = cover_dir("/dev", not_infiniband, why, cap);

		if (dev < 0)
			return dev;
		if (mkdirat(dev, "infiniband", 0755)) {
			close(dev);
			return fail(why, cap, errno, "mkdir " DEV_IB_DIR);
		}
		close(dev);
		ib = open(DEV_IB_DIR, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (ib < 0)
			return fail(why, cap, errno, DEV_IB_DIR);
	}
	for (int i = -1; i < n_devs && !err; i++) {
		int fd;

		if (i < 0)
			snprintf(name, sizeof(name), "rdma_cm");
		else
			snprintf(name, sizeof(name), "uverbs%d", i);
		fd = openat(ib, name, O_WRONLY | O_CREAT | O_CLOEXEC, 0666);
		if (fd < 0) {
			err = fail(why, cap, errno, name);
			break;
		}
		close(fd);
		snprintf(path, sizeof(path), DEV_IB_DIR "/%s", name);
		if (mount("/dev/null", path, NULL, MS_BIND, NULL))
			err = fail(why, cap, errno, path);
	}
	close(ib);
	return err;
}

int uroce_run_view_enter(const char *rundir, char *why, size_t cap)
{
	int root, n_devs, err;

	err = new_namespace(why, cap);
	if (err)
		return err;
	/* Our mounts must not reach the namespace we came from. */
	if (mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL))
		return fail(why, cap, errno, "make / a slave mount");
	root = cover_dir(CLASS_DIR, not_ours, why, cap);
	if (root < 0)
		return root;
	n_devs = write_devices(root, rundir, why, cap);
	close(root);
	if (n_devs < 0)
		return n_devs;
	if (mount(NULL, CLASS_DIR, NULL, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NOEXEC, NULL))
		return fail(why, cap, errno, "make " CLASS_DIR " read-only");
	return write_dev_nodes(n_devs, why, cap);
}

static bool any(const char *name)
{
	(void)name;
	return true;
}

int uroce_run_view_configfs(const char *rundir, char *why, size_t cap)
{
	struct stat st;
	bool made = false;
	int fd, err = 0;

	/* No FUSE, no cover: /sys/kernel stays as it is. */
	fd = uroce_configfs_open(why, cap);
	if (fd < 0)
		return fd;
	if (stat(CONFIG_DIR, &st) || !S_ISDIR(st.st_mode)) {
		int kdir = cover_dir(KERNEL_DIR, any, why, cap);

		if (kdir < 0) {
			close(fd);
			return kdir;
		}
		if (mkdirat(kdir, "config", 0755))
			err = fail(why, cap, errno, "mkdir " CONFIG_DIR);
		close(kdir);
		made = true;
	}
	if (!err)
		err = uroce_configfs_mount(fd, CONFIG_DIR, why, cap);
	if (made) {
		/* The tmpfs is read-only, as the real /sys/kernel is to the program; an empty
		 * config stands for a configfs that is not mounted when ours could not be. */
		if (err)
			rmdir(CONFIG_DIR);
		if (mount(NULL, KERNEL_DIR, NULL, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NOEXEC,
			  NULL) &&
		    !err) {
			err = fail(why, cap, errno, "make " KERNEL_DIR " read-only");
			umount2(CONFIG_DIR, MNT_DETACH);
		}
	}
	if (!err) {
		err = uroce_configfs_serve(fd, rundir, why, cap);
		if (err)
			umount2(CONFIG_DIR, MNT_DETACH); /* no server: accesses would wait forever */
	}
	close(fd);
	return err;
}
