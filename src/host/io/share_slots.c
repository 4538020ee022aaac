/* SPDX-License-Identifier: MIT */
/* QPN slots of the processes on shared devices (share_slots.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/file.h>
#include <unistd.h>

#include "host/config/rundir.h"
#include "host/io/locked_file.h"
#include "host/io/share_members.h"
#include "host/io/share_slots.h"

#define SLOTS_MAX (128 << 10) /* the slots file: at most 4096 short lines */
#define BLOCKS	  (UROCE_SHARE_SLOTS / UROCE_SHARE_PROC_SLOTS)
#define PATH_MAX_ 512

struct slot_line {
	int slot;
	struct uroce_share_member who; /* pid and start */
};

static int slots_path(char *buf, size_t cap, const char *rundir)
{
	return uroce_rundir_join(buf, cap, "%s/share/slots", rundir);
}

/* Read the live slot holders into s (at most UROCE_SHARE_SLOTS). Returns the count. */
static int slots_read(int fd, struct slot_line *s)
{
	char *buf = malloc(SLOTS_MAX), *p;
	int n = 0, r;

	if (!buf)
		return -ENOMEM;
	r = uroce_locked_file_read(fd, buf, SLOTS_MAX);
	for (p = buf; r == 0 && *p && n < UROCE_SHARE_SLOTS;) {
		struct slot_line x;
		int used;

		if (sscanf(p, "%d %" SCNd32 " %" SCNu64 "%n", &x.slot, &x.who.pid, &x.who.start,
			   &used) != 3 ||
		    p[used] != '\n')
			break; /* a damaged tail: forget it (holders are only a preference) */
		p += used + 1;
		if (x.slot >= 0 && x.slot < UROCE_SHARE_SLOTS && uroce_share_alive(&x.who))
			s[n++] = x;
	}
	free(buf);
	return r < 0 ? r : n;
}

static int slots_write(int fd, const struct slot_line *s, int n)
{
	char *buf = malloc(SLOTS_MAX);
	size_t len = 0;
	int r = 0;

	if (!buf)
		return -ENOMEM;
	for (int i = 0; i < n; i++)
		len += (size_t)snprintf(buf + len, SLOTS_MAX - len, "%d %" PRId32 " %" PRIu64 "\n",
					s[i].slot, s[i].who.pid, s[i].who.start);
	r = uroce_locked_file_write(fd, buf, len);
	free(buf);
	return r;
}

int uroce_share_slot_take(const char *rundir, int *slot)
{
	char path[PATH_MAX_], dir[PATH_MAX_];
	struct slot_line *s = malloc(sizeof(*s) * (UROCE_SHARE_SLOTS + 1));
	struct slot_line me = {.who.pid = getpid()};
	int fd, n, r;

	if (!s)
		return -ENOMEM;
	r = uroce_share_proc_start(me.who.pid, &me.who.start);
	r = r ? r : uroce_rundir_join(dir, sizeof(dir), "%s/share", rundir);
	r = r ? r : slots_path(path, sizeof(path), rundir);
	r = r ? r : uroce_rundir_mkdirs(dir);
	if (r)
		goto out;
	fd = uroce_locked_file_open(path, LOCK_EX, true);
	if (fd < 0) {
		r = fd;
		goto out;
	}
	n = slots_read(fd, s);
	if (n < 0) {
		r = n;
		goto unlock;
	}
	r = -EBUSY;
	for (int k = 0; k < BLOCKS; k++) {
		int want = (int)(((uint32_t)me.who.pid + (uint32_t)k) & (BLOCKS - 1)) *
			   UROCE_SHARE_PROC_SLOTS;
		bool used = false;

		for (int i = 0; i < n && !used; i++)
			used = s[i].slot / UROCE_SHARE_PROC_SLOTS == want / UROCE_SHARE_PROC_SLOTS;
		if (!used) {
			me.slot = want;
			r = 0;
			break;
		}
	}
	if (r == 0) {
		s[n++] = me;
		r = slots_write(fd, s, n);
		if (r == 0)
			*slot = me.slot;
	}
unlock:
	uroce_locked_file_close(fd);
out:
	free(s);
	return r;
}

void uroce_share_slot_put(const char *rundir, int slot)
{
	char path[PATH_MAX_];
	struct slot_line *s;
	pid_t me = getpid();
	int fd, n;

	if (slots_path(path, sizeof(path), rundir))
		return;
	s = malloc(sizeof(*s) * UROCE_SHARE_SLOTS);
	if (!s)
		return;
	fd = uroce_locked_file_open(path, LOCK_EX, false);
	if (fd >= 0) {
		n = slots_read(fd, s);
		for (int i = 0; i < n; i++) {
			if (s[i].slot == slot && s[i].who.pid == me) {
				s[i] = s[--n];
				slots_write(fd, s, n);
				break;
			}
		}
		uroce_locked_file_close(fd);
	}
	free(s);
}
