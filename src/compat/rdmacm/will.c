/* SPDX-License-Identifier: MIT */
/*
 * The CM's last will (will.h): the table of CM messages (DREQ, DREP, REJ) and the watchdog that
 * sends them when this process is gone.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <netinet/in.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "compat/rdmacm/addr.h"
#include "compat/rdmacm/rdmacm.h"
#include "compat/rdmacm/will.h"
#include "host/config/gid.h"
#include "host/config/udp_port.h"
#include "host/os/neigh.h"
#include "host/os/v4mapped.h"
#include "wire/mad.h"

extern char **environ;

static struct cma_will_table *table; /* NULL: no will (the watchdog could not start) */
static int pipe_wr = -1;
static bool will_v1; /* the watchdog holds a packet socket: RoCE v1 connections get a will */
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

int cma_will_start(bool v1)
{
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	char path[PATH_MAX];
	char *argv[] = {will_exe, NULL};
	int p[2], mfd, err, pfd = -1;
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
	/* Protocol 0, never bound: it only sends (will.h). Without CAP_NET_RAW there is none,
	 * and RoCE v1 connections go without a will. */
	if (v1)
		pfd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);
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
	if (pfd >= 0)
		posix_spawn_file_actions_adddup2(&fa, pfd, CMA_WILL_PACKET_FD);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
	posix_spawn_file_actions_addclosefrom_np(&fa, pfd >= 0 ? CMA_WILL_PACKET_FD + 1
							   : CMA_WILL_PIPE_FD + 1);
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
	will_v1 = pfd >= 0;
out:
	close(p[0]);
	if (p[1] >= 0)
		close(p[1]);
	if (pfd >= 0)
		close(pfd);
	close(mfd);
	return err;
}

void cma_will_forget(void)
{
	if (pipe_wr >= 0)
		close(pipe_wr);
	pipe_wr = -1;
	if (table)
		munmap(table, sizeof(*table));
	table = NULL;
}

/*
 * RoCE v1: the interface of id's source GID and the destination MAC, as the device's transmit
 * path finds it (host/ctx.c v1_dmac): direct for link-local and multicast GIDs, the interface's
 * own for a GID of this device, else the kernel's neighbour table.
 */
static int build_v1(struct cma_id *id, struct cma_will_slot *s)
{
	struct ibv_gid_entry ge;
	int err;

	if (ibv_query_gid_ex(id->dev->verbs, 1, (uint32_t)id->gid_index, &ge, 0))
		return -errno;
	if (!ge.ndev_ifindex)
		return -ENODEV;
	s->ifindex = (int32_t)ge.ndev_ifindex;
	memcpy(s->src, ge.gid.raw, 16); /* the GID the connection's QP1 frames carry */
	s->dmac_own = false;
	if (uroce_neigh_direct(id->dgid, s->dmac) == 0)
		return 0;
	if (cma_gid_find(id->dev->verbs, id->dgid, -1) >= 0) {
		s->dmac_own = true;
		return 0;
	}
	err = uroce_neigh_lookup((int)ge.ndev_ifindex, id->dgid, s->dmac);
	return err;
}

/* The addresses of id's connection, into s (the MAD is the caller's). */
static int build(struct cma_id *id, struct cma_will_slot *s, uint16_t port)
{
	bool v4 = uroce_gid_is_v4(id->sgid);
	int err;

	if (id->gid_type == IBV_GID_TYPE_ROCE_V1) {
		err = build_v1(id, s);
		if (err)
			return err;
		s->family = AF_PACKET;
		s->tos = id->tos;
		s->hop_limit = id->hop_limit ? id->hop_limit : 64;
		memcpy(s->dst, id->dgid, 16);
		return 0;
	}
	s->family = v4 ? AF_INET : AF_INET6;
	s->port = port;
	s->tos = id->tos;
	memset(s->src, 0, 16);
	memset(s->dst, 0, 16);
	memcpy(s->src, v4 ? id->sgid + 12 : id->sgid, v4 ? 4 : 16);
	memcpy(s->dst, v4 ? id->dgid + 12 : id->dgid, v4 ? 4 : 16);
	return 0;
}

void cma_will_sync(struct cma_id *id)
{
	uint8_t mad[UROCE_MAD_LEN];
	struct cma_will_slot *s;

	if (!table)
		return;
	/* What the kernel's CM would send if this process died now (ibcm.h uroce_ibcm_will_mad). */
	if (!id->conn || uroce_ibcm_will_mad(id->conn, mad)) {
		cma_will_disarm(id);
		return;
	}
	if (id->will_slot >= 0) {
		s = &table->s[id->will_slot];
		if (memcmp(s->mad, mad, sizeof(mad)) == 0)
			return;
		/* Disarmed while it changes: the watchdog never sends a half-written MAD. */
		atomic_store(&s->armed, 0);
		memcpy(s->mad, mad, sizeof(mad));
		atomic_store(&s->armed, 1);
		return;
	}
	if (id->gid_type != IBV_GID_TYPE_ROCE_V2 && (id->gid_type != IBV_GID_TYPE_ROCE_V1 || !will_v1))
		return;
	for (int i = 0; i < CMA_WILL_SLOTS; i++) {
		s = &table->s[i];
		if (atomic_load(&s->armed))
			continue;
		if (build(id, s, uroce_udp_port_env()))
			return;
		memcpy(s->mad, mad, sizeof(mad));
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
