/* SPDX-License-Identifier: MIT */
/*
 * The CM's last will (will.h): the table of DREQs and the watchdog that sends them when this
 * process is gone.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <netinet/in.h>
#include <pthread.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "compat/rdmacm/rdmacm.h"
#include "compat/rdmacm/will.h"
#include "host/config/gid.h"
#include "host/config/udp_port.h"
#include "host/os/v4mapped.h"

extern char **environ;

static struct cma_will_table *table; /* NULL: no will (the watchdog could not start) */
static int pipe_wr = -1;
static char will_exe[] = CMA_WILL_EXE;

/* The watchdog lives next to this library (build/<preset>/lib, or <libdir>/uroce). */
static int will_path(char *buf, size_t cap)
{
	Dl_info info;
	char tmp[PATH_MAX];

	/* Any object of this library names it; a data address avoids casting a function. */
	if (!dladdr(&table, &info) || !info.dli_fname)
		return -ENOENT;
	snprintf(tmp, sizeof(tmp), "%s", info.dli_fname);
	if (snprintf(buf, cap, "%s/%s", dirname(tmp), CMA_WILL_EXE) >= (int)cap)
		return -ENAMETOOLONG;
	return access(buf, X_OK) == 0 ? 0 : -errno;
}

/*
 * A child of fork() has no will of its own: the parent's pipe, held open by the child, would
 * keep the watchdog from seeing the parent die, and the table is the parent's (MAP_SHARED), which
 * the child's copies of the ids must not disarm. The child closes the one and unmaps the other.
 */
static void will_forget(void)
{
	if (table)
		munmap(table, sizeof(*table));
	table = NULL;
	if (pipe_wr >= 0)
		close(pipe_wr);
	pipe_wr = -1;
}

static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

static void atfork_register(void)
{
	pthread_atfork(NULL, NULL, will_forget);
}

int cma_will_start(void)
{
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	char path[PATH_MAX];
	char *argv[] = {will_exe, NULL};
	int p[2], mfd, err;
	pid_t pid;

	err = will_path(path, sizeof(path));
	if (err)
		return err;
	mfd = memfd_create("uroce-cm-will", MFD_CLOEXEC);
	if (mfd < 0)
		return -errno;
	if (ftruncate(mfd, sizeof(*table)) < 0 || pipe2(p, O_CLOEXEC) < 0) {
		err = -errno;
		close(mfd);
		return err;
	}
	table = mmap(NULL, sizeof(*table), PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0);
	if (table == MAP_FAILED) {
		err = -errno;
		table = NULL;
		goto out;
	}
	table->magic = CMA_WILL_MAGIC;
	table->nslots = CMA_WILL_SLOTS;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, mfd, CMA_WILL_TABLE_FD);
	posix_spawn_file_actions_adddup2(&fa, p[0], CMA_WILL_PIPE_FD);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
	posix_spawn_file_actions_addclosefrom_np(&fa, CMA_WILL_PIPE_FD + 1);
	posix_spawnattr_init(&at);
	posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSID);
	err = -posix_spawn(&pid, path, &fa, &at, argv, environ);
	posix_spawnattr_destroy(&at);
	posix_spawn_file_actions_destroy(&fa);
	if (!err)
		waitpid(pid, NULL, 0); /* it forked the watchdog and exited */
	if (err) {
		munmap(table, sizeof(*table));
		table = NULL;
		goto out;
	}
	pipe_wr = p[1];
	p[1] = -1;
	pthread_once(&atfork_once, atfork_register);
out:
	close(p[0]);
	if (p[1] >= 0)
		close(p[1]);
	close(mfd);
	return err;
}

/* The DREQ MAD for id's connection (the IB CM engine's) and its addresses, into s. */
static int build(struct cma_id *id, struct cma_will_slot *s, uint16_t port)
{
	bool v4 = uroce_gid_is_v4(id->sgid);
	int err = uroce_ibcm_dreq_mad(id->conn, s->mad);

	if (err)
		return err;
	s->family = v4 ? AF_INET : AF_INET6;
	s->port = port;
	s->tos = id->tos;
	memset(s->src, 0, 16);
	memset(s->dst, 0, 16);
	memcpy(s->src, v4 ? id->sgid + 12 : id->sgid, v4 ? 4 : 16);
	memcpy(s->dst, v4 ? id->dgid + 12 : id->dgid, v4 ? 4 : 16);
	return 0;
}

void cma_will_arm(struct cma_id *id)
{
	if (!table || !id->conn || id->will_slot >= 0 || id->gid_type != IBV_GID_TYPE_ROCE_V2)
		return;
	for (int i = 0; i < CMA_WILL_SLOTS; i++) {
		struct cma_will_slot *s = &table->s[i];

		if (atomic_load(&s->armed))
			continue;
		if (build(id, s, uroce_udp_port_env()))
			return;
		atomic_store(&s->armed, 1);
		id->will_slot = i;
		return;
	}
}

void cma_will_disarm(struct cma_id *id)
{
	if (!table || id->will_slot < 0)
		return;
	atomic_store(&table->s[id->will_slot].armed, 0);
	id->will_slot = -1;
}
