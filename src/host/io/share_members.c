/* SPDX-License-Identifier: MIT */
/* Membership files: format, liveness, paths, reading and writing under the lock (share_members.h). */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "host/config/rundir.h"
#include "host/io/locked_file.h"
#include "host/io/share_members.h"

/*
 * A membership file: 256 lines of about 60 bytes, and claims of 19 bytes each, which the
 * program's limit keeps below 4096 (a claim costs at least one instruction): under 100 KiB.
 */
#define FILE_MAX (128 << 10)

int uroce_share_compact(struct uroce_share_member *m, int n, int idx)
{
	if (idx < 0 || idx >= n)
		return -EINVAL;
	/* reuseport_detach_sock(): socks[i] = socks[num_socks - 1]; num_socks--. */
	m[idx] = m[n - 1];
	return n - 1;
}

int uroce_share_format(char *buf, size_t cap, uint64_t gen, const struct uroce_share_member *m,
		       int n)
{
	size_t len = 0;
	int w = snprintf(buf, cap, "gen %" PRIu64 "\n", gen);

	if (w < 0 || (size_t)w >= cap)
		return -ENOSPC;
	len = (size_t)w;
	for (int i = 0; i < n; i++) {
		w = snprintf(buf + len, cap - len, "%" PRId32 " %" PRIu64 " %" PRIu32 " %" PRIu32,
			     m[i].pid, m[i].start, m[i].qpn_lo, m[i].qpn_hi);
		if (w < 0 || (size_t)w >= cap - len)
			return -ENOSPC;
		len += (size_t)w;
		/* A member without a CM keeps the line of files written before claims. */
		for (int j = m[i].cm ? -1 : m[i].nids; j < m[i].nids; j++) {
			if (j < 0)
				w = snprintf(buf + len, cap - len, " cm");
			else
				w = snprintf(buf + len, cap - len, " 0x%" PRIx64, m[i].ids[j]);
			if (w < 0 || (size_t)w >= cap - len)
				return -ENOSPC;
			len += (size_t)w;
		}
		if (len + 1 >= cap)
			return -ENOSPC;
		buf[len++] = '\n';
		buf[len] = 0;
	}
	return (int)len;
}

/* " 0x" and 1 to 16 hex digits at *p: the value, *p moved past it. Returns 0 or -EBADMSG. */
static int parse_id(const char **p, uint64_t *v)
{
	const char *s = *p;
	int k = 0;

	if (strncmp(s, " 0x", 3) != 0)
		return -EBADMSG;
	s += 3;
	*v = 0;
	for (; k < 17 && isxdigit((unsigned char)s[k]); k++)
		*v = *v << 4 | (uint64_t)(isdigit((unsigned char)s[k])
						  ? s[k] - '0'
						  : (tolower((unsigned char)s[k]) - 'a' + 10));
	if (k < 1 || k > 16)
		return -EBADMSG;
	*p = s + k;
	return 0;
}

int uroce_share_parse(const char *text, uint64_t *gen, struct uroce_share_member *m, int max)
{
	const char *p = text;
	int n = 0, used;

	*gen = 0;
	if (!*p)
		return 0;
	if (sscanf(p, "gen %" SCNu64 "%n", gen, &used) != 1 || p[used] != '\n')
		return -EBADMSG;
	p += used + 1;
	while (*p) {
		struct uroce_share_member x = {0};

		if (sscanf(p, "%" SCNd32 " %" SCNu64 " %" SCNu32 " %" SCNu32 "%n", &x.pid, &x.start,
			   &x.qpn_lo, &x.qpn_hi, &used) != 4 ||
		    x.pid <= 0 || x.qpn_lo > x.qpn_hi)
			return -EBADMSG;
		p += used;
		if (strncmp(p, " cm", 3) == 0 && (p[3] == ' ' || p[3] == '\n')) {
			x.cm = true;
			p += 3;
			while (*p == ' ') {
				if (x.nids == UROCE_SHARE_MAX_CLAIMS ||
				    parse_id(&p, &x.ids[x.nids]) < 0)
					return -EBADMSG;
				x.nids++;
			}
		}
		if (*p != '\n')
			return -EBADMSG;
		if (n >= max)
			return -ENOSPC;
		m[n++] = x;
		p++;
	}
	return n;
}

/* ---- process identity ------------------------------------------------------------------- */

int uroce_share_proc_start(pid_t pid, uint64_t *start)
{
	char path[64], buf[1024];
	int fd;
	ssize_t len;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -ESRCH;
	len = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (len <= 0)
		return -ESRCH;
	buf[len] = 0;
	/* "pid (comm) state ppid ...": comm may hold anything, so start after the last ')'. */
	char *p = strrchr(buf, ')');

	if (!p || p[1] != ' ' || p[2] == 'Z' || p[2] == 'X')
		return -ESRCH; /* a zombie's sockets are closed already */
	p += 2;
	for (int field = 3; field < 22; field++) {
		p = strchr(p, ' ');
		if (!p)
			return -ESRCH;
		p++;
	}
	*start = strtoull(p, NULL, 10);
	return 0;
}

bool uroce_share_alive(const struct uroce_share_member *m)
{
	uint64_t s;

	return uroce_share_proc_start(m->pid, &s) == 0 && s == m->start;
}

/* Drop members that are gone, as the kernel did when their sockets closed. */
int uroce_share_prune(struct uroce_share_member *m, int n)
{
	for (int i = 0; i < n;)
		if (uroce_share_alive(&m[i]))
			i++;
		else
			n = uroce_share_compact(m, n, i);
	return n;
}

int uroce_share_members_load(int fd, uint64_t *gen, struct uroce_share_member *m)
{
	char *buf = malloc(FILE_MAX);
	int r;

	if (!buf)
		return -ENOMEM;
	r = uroce_locked_file_read(fd, buf, FILE_MAX);
	if (r == 0)
		r = uroce_share_parse(buf, gen, m, UROCE_SHARE_MAX_MEMBERS);
	free(buf);
	return r;
}

int uroce_share_members_store(int fd, uint64_t gen, const struct uroce_share_member *m, int n)
{
	char *buf = malloc(FILE_MAX);
	int r;

	if (!buf)
		return -ENOMEM;
	r = uroce_share_format(buf, FILE_MAX, gen, m, n);
	if (r >= 0)
		r = uroce_locked_file_write(fd, buf, (size_t)r);
	free(buf);
	return r;
}

int uroce_share_path(char *buf, size_t cap, const char *rundir, const struct sockaddr *a)
{
	char as[INET6_ADDRSTRLEN + 16];
	struct stat ns;
	unsigned port;

	if (stat("/proc/self/ns/net", &ns) < 0)
		return -errno;
	if (a->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)a;

		inet_ntop(AF_INET, &in->sin_addr, as, sizeof(as));
		port = ntohs(in->sin_port);
	} else if (a->sa_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)a;

		inet_ntop(AF_INET6, &in6->sin6_addr, as, INET6_ADDRSTRLEN);
		if (in6->sin6_scope_id)
			snprintf(as + strlen(as), 16, "%%%u", (unsigned)in6->sin6_scope_id);
		port = ntohs(in6->sin6_port);
	} else {
		return -EAFNOSUPPORT;
	}
	return uroce_rundir_join(buf, cap, "%s/share/net%llu/%s-%u", rundir,
				 (unsigned long long)ns.st_ino, as, port);
}

int uroce_share_v1_path(char *buf, size_t cap, const char *rundir, int ifindex)
{
	struct stat ns;

	if (stat("/proc/self/ns/net", &ns) < 0)
		return -errno;
	return uroce_rundir_join(buf, cap, "%s/share/net%llu/v1-if%d", rundir,
				 (unsigned long long)ns.st_ino, ifindex);
}

int uroce_share_read(const char *path, uint64_t *gen, struct uroce_share_member *m, int max)
{
	struct uroce_share_member *all = malloc(sizeof(*all) * UROCE_SHARE_MAX_MEMBERS);
	int fd, n;

	*gen = 0;
	if (!all)
		return -ENOMEM;
	fd = uroce_locked_file_open(path, LOCK_SH, false);
	if (fd < 0) {
		free(all);
		return fd == -ENOENT ? 0 : fd;
	}
	n = uroce_share_members_load(fd, gen, all);
	uroce_locked_file_close(fd);
	if (n > max)
		n = -ENOSPC;
	if (n > 0)
		memcpy(m, all, sizeof(*m) * (size_t)n);
	free(all);
	return n;
}
