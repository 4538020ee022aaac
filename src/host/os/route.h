/* SPDX-License-Identifier: MIT */
/*
 * Route lookup for the connection manager's address resolution (roce-reference.md 2.7; the
 * kernel's core/addr.c): which source address and interface the kernel would use to reach a
 * destination, whether the route goes through a gateway (then RoCE v2 is forced: v1 cannot be
 * routed) and the hop limit. Read with rtnetlink RTM_GETROUTE in the calling thread's network
 * namespace; each call opens and closes its own netlink socket. Not called per packet.
 */
#ifndef UROCE_HOST_ROUTE_H
#define UROCE_HOST_ROUTE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

struct uroce_route {
	int ifindex;		     /* outgoing interface; for a local destination, the interface
				      * that holds the destination address */
	struct sockaddr_storage src; /* source address (port 0), AF_INET or AF_INET6 */
	bool gateway;		     /* the route has a gateway (RTA_GATEWAY / RTA_VIA) */
	bool local;		     /* the destination is an address of this host */
	uint8_t hop_limit;	     /* RTAX_HOPLIMIT of the route, else the namespace's default
				      * (net.ipv4.ip_default_ttl / IPv6 hop_limit of the interface) */
	uint32_t mtu;		     /* the route's MTU metric, else the interface's MTU */
};

/*
 * Look up the route to dst (AF_INET or AF_INET6; an IPv6 link-local dst uses sin6_scope_id as
 * the outgoing interface). When src is not NULL (a bound source address), the lookup is made
 * from it (and must be a local address). Returns 0 with *out filled; -EAFNOSUPPORT; -EINVAL
 * (unspecified or multicast dst, src family differing from dst); -ENETUNREACH, -EHOSTUNREACH
 * (no route, unreachable or prohibit route); -EADDRNOTAVAIL (src is not local); or a netlink
 * errno.
 *
 * Details: a v4-mapped IPv6 dst or src (::ffff:a.b.c.d) is IPv4, and out->src is then AF_INET.
 * An unspecified src (0.0.0.0, ::) is the same as NULL. An IPv6 link-local dst without a scope id
 * takes the scope id of a link-local src, else is -EINVAL (which link?); a link-local out->src
 * carries out->ifindex as its scope id. A blackhole route is -EHOSTUNREACH like a prohibit one.
 * For a local destination, src is the destination itself (when no src is given), and mtu and
 * hop_limit are those of the interface that holds it.
 */
int uroce_route_lookup(const struct sockaddr *dst, const struct sockaddr *src,
		       struct uroce_route *out);

#endif
