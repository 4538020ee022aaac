/* SPDX-License-Identifier: MIT */
/*
 * uroce-cm-will: the watchdog of will.h. Started by librdmacm with the table on fd 3 and the
 * read end of a pipe on fd 4; sends the armed DREQs when the pipe reaches end of file.
 */
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "compat/rdmacm/will.h"

static void send_slot(const struct cma_will_slot *s)
{
	struct sockaddr_storage src = {0}, dst = {0};
	socklen_t len;
	int one = 1, fd;

	if (s->family == AF_INET) {
		struct sockaddr_in *a = (struct sockaddr_in *)&src, *b = (struct sockaddr_in *)&dst;

		a->sin_family = b->sin_family = AF_INET;
		a->sin_port = b->sin_port = htons(s->port);
		memcpy(&a->sin_addr, s->src, 4);
		memcpy(&b->sin_addr, s->dst, 4);
		len = sizeof(*a);
	} else {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)&src, *b = (struct sockaddr_in6 *)&dst;

		a->sin6_family = b->sin6_family = AF_INET6;
		a->sin6_port = b->sin6_port = htons(s->port);
		memcpy(&a->sin6_addr, s->src, 16);
		memcpy(&b->sin6_addr, s->dst, 16);
		len = sizeof(*a);
	}
	fd = socket(s->family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return;
	setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one));
	if (s->family == AF_INET) {
		int pmtu = IP_PMTUDISC_DO;

		setsockopt(fd, IPPROTO_IP, IP_MTU_DISCOVER, &pmtu, sizeof(pmtu));
	}
	if (bind(fd, (struct sockaddr *)&src, len) == 0) {
		/* Twice: a lost DREQ is not retried by anyone. */
		for (int i = 0; i < 2; i++)
			sendto(fd, s->pkt, s->len, 0, (struct sockaddr *)&dst, len);
	}
	close(fd);
}

int main(void)
{
	const struct cma_will_table *t;
	pid_t p;
	char c;

	/* Not the application's child: the first process exits at once (librdmacm reaps it). */
	p = fork();
	if (p != 0)
		return p < 0 ? 1 : 0;
	setsid();
	t = mmap(NULL, sizeof(*t), PROT_READ, MAP_SHARED, CMA_WILL_TABLE_FD, 0);
	if (t == MAP_FAILED || t->magic != CMA_WILL_MAGIC)
		return 1;
	close(CMA_WILL_TABLE_FD);
	for (;;) {
		ssize_t n = read(CMA_WILL_PIPE_FD, &c, 1);

		if (n == 0)
			break;
		if (n < 0 && errno != EINTR)
			break;
	}
	for (uint32_t i = 0; i < t->nslots && i < CMA_WILL_SLOTS; i++)
		if (atomic_load(&t->s[i].armed) && t->s[i].len <= CMA_WILL_PKT)
			send_slot(&t->s[i]);
	return 0;
}
