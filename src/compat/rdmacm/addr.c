/* SPDX-License-Identifier: MIT */
/*
 * Addresses to devices and GIDs (roce-reference.md 2.6, 2.7): which device holds an IP address,
 * which GID index a connection uses (the device's default RoCE mode, RoCE v2 when the route
 * has a gateway), and the ports of the RDMA CM port spaces.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "compat/rdmacm/addr.h"
#include "host/config/gid.h"
#include "host/config/mode.h"
#include "host/config/rundir.h"
#include "host/config/tos.h"
#include "host/os/v4mapped.h"

void cma_gid_of_sa(const struct sockaddr *sa, uint8_t gid[16])
{
	memset(gid, 0, 16);
	if (sa->sa_family == AF_INET)
		uroce_gid_from_v4(gid, &((const struct sockaddr_in *)(const void *)sa)->sin_addr);
	else if (sa->sa_family == AF_INET6)
		memcpy(gid, &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr, 16);
}

bool cma_sa_any(const struct sockaddr *sa)
{
	static const uint8_t zero[16];

	if (sa->sa_family == AF_INET)
		return ((const struct sockaddr_in *)(const void *)sa)->sin_addr.s_addr == 0;
	if (sa->sa_family == AF_INET6)
		return !memcmp(&((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr, zero,
			       16);
	return true;
}

bool cma_sa_wildcard(const struct sockaddr *sa)
{
	static const struct in6_addr loop6 = IN6ADDR_LOOPBACK_INIT;

	if (sa->sa_family == AF_INET)
		return cma_sa_any(sa) ||
		       (ntohl(((const struct sockaddr_in *)(const void *)sa)->sin_addr.s_addr) >>
			24) == 127;
	if (sa->sa_family == AF_INET6)
		return cma_sa_any(sa) ||
		       !memcmp(&((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr, &loop6,
			       16);
	return true;
}

bool cma_sa_mcast(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return IN_MULTICAST(ntohl(((const struct sockaddr_in *)(const void *)sa)->sin_addr.s_addr));
	if (sa->sa_family == AF_INET6)
		return IN6_IS_ADDR_MULTICAST(&((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr);
	return false;
}

uint16_t cma_sa_port(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return ntohs(((const struct sockaddr_in *)(const void *)sa)->sin_port);
	if (sa->sa_family == AF_INET6)
		return ntohs(((const struct sockaddr_in6 *)(const void *)sa)->sin6_port);
	return 0;
}

void cma_sa_set_port(struct sockaddr *sa, uint16_t port)
{
	if (sa->sa_family == AF_INET)
		((struct sockaddr_in *)(void *)sa)->sin_port = htons(port);
	else if (sa->sa_family == AF_INET6)
		((struct sockaddr_in6 *)(void *)sa)->sin6_port = htons(port);
}

socklen_t cma_sa_len(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return sizeof(struct sockaddr_in);
	if (sa->sa_family == AF_INET6)
		return sizeof(struct sockaddr_in6);
	return 0;
}

int cma_gid_find(struct ibv_context *verbs, const uint8_t gid[16], int type)
{
	struct ibv_gid_entry e[64];
	ssize_t n = ibv_query_gid_table(verbs, e, 64, 0);

	for (ssize_t i = 0; i < n; i++)
		if (!memcmp(e[i].gid.raw, gid, 16) && (type < 0 || (int)e[i].gid_type == type))
			return (int)e[i].gid_index;
	return -ENOENT;
}

int cma_default_gid_type(const char *dev)
{
	char rundir[256];
	int v = 2;

	if (uroce_rundir_path(rundir, sizeof(rundir)) == 0 &&
	    uroce_mode_get(rundir, dev, 1, &v) == 0 && v == 1)
		return IBV_GID_TYPE_ROCE_V1;
	return IBV_GID_TYPE_ROCE_V2;
}

int cma_default_tos(const char *dev)
{
	char rundir[256];
	int tos = 0;

	if (uroce_rundir_path(rundir, sizeof(rundir)) == 0 &&
	    uroce_tos_get(rundir, dev, 1, &tos) == 0)
		return tos;
	return 0;
}
