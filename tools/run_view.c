/* SPDX-License-Identifier: MIT */
/* `uroce run`'s private view of /sys/class with uroce's devices in it (run_view.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
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
#include "run_view.h"

#define CLASS_DIR "/sys/class"

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

static bool is_ours(const char *name)
{
	return !strcmp(name, "infiniband") || !strcmp(name, "infiniband_verbs");
}

/* Bind every directory of the old /sys/class (old, a readable directory fd) back into the new
 * one at its own name. */
static int rebind_classes(int old, char *why, size_t cap)
{
	int dup_fd = dup(old);
	DIR *dir = dup_fd >= 0 ? fdopendir(dup_fd) : NULL;
	struct dirent *de;
	char src[64 + 256], dst[sizeof(CLASS_DIR) + 256];
	int err = 0;

	if (!dir) {
		err = errno;
		if (dup_fd >= 0)
			close(dup_fd);
		return fail(why, cap, err, "read " CLASS_DIR);
	}
	while (!err && (de = readdir(dir))) {
		if (de->d_name[0] == '.' || is_ours(de->d_name))
			continue;
		snprintf(src, sizeof(src), "/proc/self/fd/%d/%s", old, de->d_name);
		snprintf(dst, sizeof(dst), CLASS_DIR "/%s", de->d_name);
		if (mkdir(dst, 0755) || mount(src, dst, NULL, MS_BIND | MS_REC, NULL)) {
			err = errno;
			fail(why, cap, err, dst);
		}
	}
	closedir(dir);
	return -err;
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

/* Write the infiniband classes for the devices that exist now. */
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
	return err;
}

int uroce_run_view_enter(const char *rundir, char *why, size_t cap)
{
	int old, root, err;

	err = new_namespace(why, cap);
	if (err)
		return err;
	/* Our mounts must not reach the namespace we came from. */
	if (mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL))
		return fail(why, cap, errno, "make / a slave mount");
	old = open(CLASS_DIR, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (old < 0)
		return fail(why, cap, errno, "open " CLASS_DIR);
	if (mount("uroce", CLASS_DIR, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=0755")) {
		err = fail(why, cap, errno, "mount a tmpfs on " CLASS_DIR);
		close(old);
		return err;
	}
	err = rebind_classes(old, why, cap);
	close(old);
	if (err)
		return err;
	root = open(CLASS_DIR, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (root < 0)
		return fail(why, cap, errno, "open the new " CLASS_DIR);
	err = write_devices(root, rundir, why, cap);
	close(root);
	if (err)
		return err;
	if (mount(NULL, CLASS_DIR, NULL, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
		  NULL))
		return fail(why, cap, errno, "make " CLASS_DIR " read-only");
	return 0;
}
