/* SPDX-License-Identifier: MIT */
/*
 * Neighbour lookup over rtnetlink (RTM_GETNEIGH with NDA_DST: one entry, kernel >= 4.20) and
 * resolution by sending one UDP datagram (see neigh.h). Mirrors the kernel's
 * ib_resolve_eth_dmac: direct mappings first, then the neighbour table.
 */
#include <errno.h>
#include <linux/neighbour.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "host/os/neigh.h"
#include "host/os/rtnl.h"
#include "host/os/v4mapped.h"

int uroce_neigh_direct(const uint8_t gid[16], uint8_t mac[6])
{
	if (uroce_gid_is_v4(gid)) {
		if ((gid[12] & 0xF0) == 0xE0) { /* 224.0.0.0/4: RFC 1112 mapping */
			mac[0] = 0x01;
			mac[1] = 0x00;
			mac[2] = 0x5E;
			mac[3] = gid[13] & 0x7F;
			mac[4] = gid[14];
			mac[5] = gid[15];
			return 0;
		}
		if (gid[12] == 255 && gid[13] == 255 && gid[14] == 255 && gid[15] == 255) {
			memset(mac, 0xFF, 6);
			return 0;
		}
		return -ENOENT;
	}
	if (gid[0] == 0xFF) { /* IPv6 multicast: RFC 2464 */
		mac[0] = 0x33;
		mac[1] = 0x33;
		memcpy(mac + 2, gid + 12, 4);
		return 0;
	}
	/* fe80::/64 with a MAC-derived EUI-64 (roce-reference 1.11, the default GID). */
	static const uint8_t ll[8] = {0xFE, 0x80, 0, 0, 0, 0, 0, 0};

	if (memcmp(gid, ll, 8) == 0 && gid[11] == 0xFF && gid[12] == 0xFE) {
		mac[0] = gid[8] ^ 0x02;
		mac[1] = gid[9];
		mac[2] = gid[10];
		mac[3] = gid[13];
		mac[4] = gid[14];
		mac[5] = gid[15];
		return 0;
	}
	return -ENOENT;
}

static bool gid_unspecified(const uint8_t gid[16])
{
	static const uint8_t zero[16];

	return memcmp(gid, zero, 16) == 0 ||
	       (uroce_gid_is_v4(gid) && !(gid[12] | gid[13] | gid[14] | gid[15]));
}

int uroce_neigh_trigger(int ifindex, const uint8_t gid[16])
{
	bool v4 = uroce_gid_is_v4(gid);
	char ifname[IF_NAMESIZE];
	union {
		struct sockaddr sa;
		struct sockaddr_in in;
		struct sockaddr_in6 in6;
	} a;
	socklen_t alen;
	int r = 0;

	if (gid_unspecified(gid))
		return -EINVAL;
	if (!if_indextoname((unsigned)ifindex, ifname))
		return -ENODEV;
	int fd = socket(v4 ? AF_INET : AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

	if (fd < 0)
		return -errno;
	/* Leave by this interface, whatever the routing table prefers. */
	if (setsockopt(fd, SOL_SOCKET, SO_BINDTODEVICE, ifname, (socklen_t)strlen(ifname)) < 0) {
		int idx = ifindex;

		if (v4) {
			uint32_t nidx = htonl((uint32_t)idx);

			setsockopt(fd, IPPROTO_IP, IP_UNICAST_IF, &nidx, sizeof(nidx));
		} else {
			setsockopt(fd, IPPROTO_IPV6, IPV6_UNICAST_IF, &idx, sizeof(idx));
		}
	}
	memset(&a, 0, sizeof(a));
	if (v4) {
		a.in.sin_family = AF_INET;
		a.in.sin_port = htons(9); /* discard */
		memcpy(&a.in.sin_addr, gid + 12, 4);
		alen = sizeof(a.in);
	} else {
		a.in6.sin6_family = AF_INET6;
		a.in6.sin6_port = htons(9);
		memcpy(&a.in6.sin6_addr, gid, 16);
		if (IN6_IS_ADDR_LINKLOCAL(&a.in6.sin6_addr))
			a.in6.sin6_scope_id = (uint32_t)ifindex;
		alen = sizeof(a.in6);
	}
	/* The kernel queues the datagram on the incomplete neighbour entry and solicits. */
	if (sendto(fd, "", 0, MSG_DONTWAIT, &a.sa, alen) < 0 && errno != EAGAIN)
		r = -errno;
	close(fd);
	return r;
}

/* The answer to RTM_GETNEIGH: the entry's state and, when it has one, its MAC. */
struct neigh_reply {
	uint8_t *mac;
	uint16_t state;
	bool seen, have_ll;
};

static int neigh_cb(const struct nlmsghdr *h, void *arg)
{
	struct neigh_reply *r = arg;
	const struct rtattr *tb[NDA_MAX + 1];
	struct ndmsg nd;

	if (h->nlmsg_type != RTM_NEWNEIGH || h->nlmsg_len < NLMSG_LENGTH(sizeof(nd)))
		return 0;
	memcpy(&nd, uroce_rtnl_msg_data(h), sizeof(nd));
	r->seen = true;
	r->state = nd.ndm_state;
	uroce_rtnl_msg_attrs(tb, NDA_MAX, h, sizeof(nd));
	if (tb[NDA_LLADDR] && uroce_rtnl_attr_len(tb[NDA_LLADDR]) == 6) {
		memcpy(r->mac, uroce_rtnl_attr_data(tb[NDA_LLADDR]), 6);
		r->have_ll = true;
	}
	return 0;
}

/*
 * The neighbour entry of gid on ifindex: 0 with mac and *state, 1 for an entry without an
 * address (incomplete), the kernel's error (-ENOENT: no entry), -EBADMSG, or -ETIMEDOUT.
 */
static int query(int ifindex, const uint8_t gid[16], uint8_t mac[6], uint16_t *state)
{
	bool v4 = uroce_gid_is_v4(gid);
	struct neigh_reply rep = {.mac = mac};
	struct uroce_rtnl_req req;
	struct uroce_rtnl nl;
	struct ndmsg *nd;
	int r = uroce_rtnl_open(&nl, 1000);

	if (r)
		return r;
	nd = uroce_rtnl_req_init(&req, RTM_GETNEIGH, 0, sizeof(*nd));
	nd->ndm_family = v4 ? AF_INET : AF_INET6;
	nd->ndm_ifindex = ifindex;
	uroce_rtnl_req_attr(&req, NDA_DST, v4 ? gid + 12 : gid, v4 ? 4 : 16);
	r = uroce_rtnl_talk(&nl, &req, neigh_cb, &rep);
	uroce_rtnl_close(&nl);
	if (r)
		return r;
	if (!rep.seen)
		return -EBADMSG;
	*state = rep.state;
	return rep.have_ll ? 0 : 1;
}

int uroce_neigh_lookup(int ifindex, const uint8_t gid[16], uint8_t mac[6])
{
	uint16_t state = 0;
	int r;

	if (gid_unspecified(gid))
		return -EINVAL;
	if (uroce_neigh_direct(gid, mac) == 0)
		return 0;
	r = query(ifindex, gid, mac, &state);
	if (r < 0 && r != -ENOENT)
		return r;
	if (r == 0 && (state & (NUD_REACHABLE | NUD_STALE | NUD_DELAY | NUD_PROBE | NUD_PERMANENT |
				NUD_NOARP)))
		return 0; /* STALE and friends are usable, as the kernel uses them */
	/* Missing, incomplete or failed: (re)start resolution. */
	int t = uroce_neigh_trigger(ifindex, gid);

	if (t < 0 && t != -ECONNREFUSED)
		return t;
	return r == 0 && (state & NUD_FAILED) ? -EHOSTUNREACH : -EAGAIN;
}

int uroce_neigh_monitor_open(void)
{
	int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_ROUTE);

	if (fd < 0)
		return -errno;
	struct sockaddr_nl sa = {.nl_family = AF_NETLINK, .nl_groups = RTMGRP_NEIGH};

	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int r = -errno;

		close(fd);
		return r;
	}
	return fd;
}

int uroce_neigh_monitor_drain(int fd)
{
	uint8_t buf[8192];
	int n = 0;

	for (;;) {
		ssize_t r = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);

		if (r < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return n;
			if (errno == ENOBUFS) /* overrun: the caller re-queries anyway */
				continue;
			return n ? n : -errno;
		}
		n++;
	}
}
