/* SPDX-License-Identifier: MIT */
/*
 * rdma_getaddrinfo / rdma_freeaddrinfo, as rdma-core v44 behaves (librdmacm/addrinfo.c) on a
 * host without ibacm, which is every RoCE host:
 *
 * - Names and services go through getaddrinfo(3), with hints derived from the rdma hints:
 *   RAI_PASSIVE -> AI_PASSIVE, RAI_NUMERICHOST -> AI_NUMERICHOST, ai_family as given (AF_IB
 *   becomes AF_UNSPEC), ai_qp_type RC/UC/XRC -> SOCK_STREAM and UD -> SOCK_DGRAM, ai_port_space
 *   TCP -> IPPROTO_TCP, UDP/IPOIB -> IPPROTO_UDP, IB -> by the socket type. A NULL hints
 *   pointer passes NULL hints (glibc's defaults). Conflicting hints (UD over RDMA_PS_TCP) fail
 *   in getaddrinfo with EAI_SOCKTYPE.
 * - Only the first getaddrinfo result is used: one rdma_addrinfo, ai_next NULL.
 * - Passive: the address (the wildcard for a NULL node) is ai_src_addr, ai_flags RAI_PASSIVE.
 *   Active: the address is ai_dst_addr, ai_flags 0 (RAI_NUMERICHOST etc. are not kept).
 * - ai_qp_type and ai_port_space are the hints' when non-zero, else derived from the result's
 *   socket type (STREAM -> RC, DGRAM -> UD) and protocol (TCP -> RDMA_PS_TCP, UDP -> RDMA_PS_UDP).
 * - Neither node nor service: nothing is resolved; flags, family, qp type and port space are
 *   the hints', and hints->ai_dst_addr is copied.
 * - hints->ai_src_addr is copied as the source whenever the result has none (so an active
 *   request keeps the caller's source). No source is chosen otherwise: rdma-core leaves that to
 *   ibacm (ucma_ib_resolve, a no-op without the daemon) and to rdma_resolve_addr.
 * - ai_connect, ai_route and the canonical names stay NULL (ibacm and AI_CANONNAME only).
 *
 * Errors: getaddrinfo's EAI_* code as it is; anything else is -1 with errno set (rdma-core's
 * ERR()), which gai_strerror prints as EAI_BADFLAGS: no node, service or hints (EINVAL), no
 * memory (ENOMEM). Differences from rdma-core, both on purpose:
 * - rdma-core first initialises its device list and fails with -1/ENODEV without an RDMA
 *   device; resolving a name needs no device, so uroce does not.
 * - RAI_FAMILY with ai_family AF_IB asks for AF_IB addresses (sockaddr_ib, IB only): uroce is
 *   RoCE only and returns EAI_FAMILY. rdma-core converts a numeric IPv6 result into one.
 * A NULL res is -1/EINVAL (rdma-core would crash).
 */
#include <errno.h>
#include <netdb.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <rdma/rdma_cma.h>

/* rdma-core's ERR(): the ABI's -1 with errno. */
static int abi_error(int neg_errno)
{
	errno = -neg_errno;
	return -1;
}

static int copy_addr(struct sockaddr **dst, socklen_t *dst_len, const struct sockaddr *src,
		     socklen_t len)
{
	*dst = malloc(len);
	if (!*dst)
		return -ENOMEM;
	memcpy(*dst, src, len);
	*dst_len = len;
	return 0;
}

/* The getaddrinfo hints for rdma hints (rdma-core's ucma_convert_to_ai). */
static void hints_to_ai(struct addrinfo *ai, const struct rdma_addrinfo *hints)
{
	memset(ai, 0, sizeof(*ai));
	if (hints->ai_flags & RAI_PASSIVE)
		ai->ai_flags |= AI_PASSIVE;
	if (hints->ai_flags & RAI_NUMERICHOST)
		ai->ai_flags |= AI_NUMERICHOST;
	if (hints->ai_family != AF_IB)
		ai->ai_family = hints->ai_family;

	switch (hints->ai_qp_type) {
	case IBV_QPT_RC:
	case IBV_QPT_UC:
	case IBV_QPT_XRC_SEND:
	case IBV_QPT_XRC_RECV:
		ai->ai_socktype = SOCK_STREAM;
		break;
	case IBV_QPT_UD:
		ai->ai_socktype = SOCK_DGRAM;
		break;
	default: /* 0: any; other types are left to the port space */
		break;
	}

	switch (hints->ai_port_space) {
	case RDMA_PS_TCP:
		ai->ai_protocol = IPPROTO_TCP;
		break;
	case RDMA_PS_UDP:
	case RDMA_PS_IPOIB:
		ai->ai_protocol = IPPROTO_UDP;
		break;
	case RDMA_PS_IB:
		if (ai->ai_socktype == SOCK_STREAM)
			ai->ai_protocol = IPPROTO_TCP;
		else if (ai->ai_socktype == SOCK_DGRAM)
			ai->ai_protocol = IPPROTO_UDP;
		break;
	default: /* 0: any */
		break;
	}
}

/* Fill rai from getaddrinfo's first result (rdma-core's ucma_convert_to_rai). */
static int ai_to_rai(struct rdma_addrinfo *rai, const struct rdma_addrinfo *hints,
		     const struct addrinfo *ai)
{
	if (hints->ai_qp_type)
		rai->ai_qp_type = hints->ai_qp_type;
	else if (ai->ai_socktype == SOCK_STREAM)
		rai->ai_qp_type = IBV_QPT_RC;
	else if (ai->ai_socktype == SOCK_DGRAM)
		rai->ai_qp_type = IBV_QPT_UD;

	if (hints->ai_port_space)
		rai->ai_port_space = hints->ai_port_space;
	else if (ai->ai_protocol == IPPROTO_TCP)
		rai->ai_port_space = RDMA_PS_TCP;
	else if (ai->ai_protocol == IPPROTO_UDP)
		rai->ai_port_space = RDMA_PS_UDP;

	rai->ai_family = ai->ai_family;
	/* rdma-core tests the result's AI_PASSIVE, which glibc copies from the hints. */
	if (hints->ai_flags & RAI_PASSIVE) {
		rai->ai_flags = RAI_PASSIVE;
		return copy_addr(&rai->ai_src_addr, &rai->ai_src_len, ai->ai_addr, ai->ai_addrlen);
	}
	rai->ai_flags = 0;
	return copy_addr(&rai->ai_dst_addr, &rai->ai_dst_len, ai->ai_addr, ai->ai_addrlen);
}

int rdma_getaddrinfo(const char *node, const char *service, const struct rdma_addrinfo *hints,
		     struct rdma_addrinfo **res)
{
	static const struct rdma_addrinfo no_hints;
	const struct rdma_addrinfo *h = hints ? hints : &no_hints;
	struct rdma_addrinfo *rai;
	int ret = 0;

	if ((!node && !service && !hints) || !res)
		return abi_error(-EINVAL);
	if ((h->ai_flags & RAI_FAMILY) && h->ai_family == AF_IB)
		return EAI_FAMILY;

	rai = calloc(1, sizeof(*rai));
	if (!rai)
		return abi_error(-ENOMEM);

	if (node || service) {
		struct addrinfo ai_hints, *ai;
		int gai;

		if (hints) {
			hints_to_ai(&ai_hints, hints);
			gai = getaddrinfo(node, service, &ai_hints, &ai);
		} else {
			gai = getaddrinfo(node, service, NULL, &ai);
		}
		if (gai) {
			free(rai);
			return gai;
		}
		ret = ai_to_rai(rai, h, ai);
		freeaddrinfo(ai);
	} else {
		rai->ai_flags = h->ai_flags;
		rai->ai_family = h->ai_family;
		rai->ai_qp_type = h->ai_qp_type;
		rai->ai_port_space = h->ai_port_space;
		if (h->ai_dst_len)
			ret = copy_addr(&rai->ai_dst_addr, &rai->ai_dst_len, h->ai_dst_addr,
					h->ai_dst_len);
	}
	if (!ret && !rai->ai_src_len && h->ai_src_len)
		ret = copy_addr(&rai->ai_src_addr, &rai->ai_src_len, h->ai_src_addr, h->ai_src_len);
	if (ret) {
		rdma_freeaddrinfo(rai);
		return abi_error(ret);
	}
	*res = rai;
	return 0;
}

/* Frees the whole ai_next chain and every pointer field, as rdma-core does: a caller that
 * builds or edits a result must use malloc'd memory for them. */
void rdma_freeaddrinfo(struct rdma_addrinfo *res)
{
	while (res) {
		struct rdma_addrinfo *next = res->ai_next;

		free(res->ai_src_addr);
		free(res->ai_dst_addr);
		free(res->ai_src_canonname);
		free(res->ai_dst_canonname);
		free(res->ai_route);
		free(res->ai_connect);
		free(res);
		res = next;
	}
}
