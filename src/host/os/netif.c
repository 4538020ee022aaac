/* SPDX-License-Identifier: MIT */
/* Interface snapshot (getifaddrs, SIOCGIFMTU, SIOCETHTOOL) and an rtnetlink change watch. */
#include "host/os/netif.h"

#include <errno.h>
#include <ifaddrs.h>
#include <linux/if_packet.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if_arp.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "host/os/ethtool.h"

void uroce_netif_list_free(struct uroce_netif_list *l)
{
	for (int i = 0; i < l->n; i++)
		free(l->ifs[i].addrs);
	free(l->ifs);
	l->ifs = NULL;
	l->n = 0;
}

const struct uroce_netif *uroce_netif_find(const struct uroce_netif_list *l, const char *name)
{
	for (int i = 0; i < l->n; i++) {
		if (!strcmp(l->ifs[i].name, name))
			return &l->ifs[i];
	}
	return NULL;
}

bool uroce_netif_active(const struct uroce_netif *nif)
{
	return (nif->flags & IFF_UP) && (nif->flags & IFF_RUNNING);
}

/* The entry for name, appended if new. NULL on allocation failure. */
static struct uroce_netif *get_if(struct uroce_netif_list *l, const char *name)
{
	struct uroce_netif *n;

	for (int i = 0; i < l->n; i++) {
		if (!strcmp(l->ifs[i].name, name))
			return &l->ifs[i];
	}
	n = realloc(l->ifs, (size_t)(l->n + 1) * sizeof(*n));
	if (!n)
		return NULL;
	l->ifs = n;
	n = &l->ifs[l->n++];
	memset(n, 0, sizeof(*n));
	snprintf(n->name, sizeof(n->name), "%s", name);
	return n;
}

static int prefix_len(const struct sockaddr *mask)
{
	const uint8_t *p;
	size_t len;
	int bits = 0;

	if (!mask)
		return 0;
	if (mask->sa_family == AF_INET) {
		p = (const uint8_t *)&((const struct sockaddr_in *)(const void *)mask)->sin_addr;
		len = 4;
	} else {
		p = ((const struct sockaddr_in6 *)(const void *)mask)->sin6_addr.s6_addr;
		len = 16;
	}
	for (size_t i = 0; i < len; i++)
		bits += __builtin_popcount(p[i]);
	return bits;
}

static int add_addr(struct uroce_netif *nif, const struct ifaddrs *ifa)
{
	struct uroce_netif_addr *a;
	int fam = ifa->ifa_addr->sa_family;

	a = realloc(nif->addrs, (size_t)(nif->naddrs + 1) * sizeof(*a));
	if (!a)
		return -ENOMEM;
	nif->addrs = a;
	a = &nif->addrs[nif->naddrs++];
	memset(a, 0, sizeof(*a));
	a->family = fam;
	if (fam == AF_INET)
		memcpy(a->addr,
		       &((const struct sockaddr_in *)(const void *)ifa->ifa_addr)->sin_addr, 4);
	else
		memcpy(a->addr,
		       ((const struct sockaddr_in6 *)(const void *)ifa->ifa_addr)
			       ->sin6_addr.s6_addr,
		       16);
	a->prefixlen = (uint8_t)prefix_len(ifa->ifa_netmask);
	return 0;
}

/* A socket for the interface ioctls (any serves; IPv6 too in case IPv4 is compiled out), or
 * -1. */
static int ioctl_socket(void)
{
	int sock = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	return sock >= 0 ? sock : socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0);
}

/* ioctl req on the interface called name, into *ifr. Returns 0, or -1 (errno set). */
static int if_ioctl(int sock, const char *name, unsigned long req, struct ifreq *ifr)
{
	if (sock < 0)
		return -1;
	memset(ifr, 0, sizeof(*ifr));
	snprintf(ifr->ifr_name, sizeof(ifr->ifr_name), "%s", name);
	return ioctl(sock, req, ifr);
}

static unsigned read_mtu(int sock, const char *name)
{
	struct ifreq ifr;

	if (if_ioctl(sock, name, SIOCGIFMTU, &ifr) != 0 || ifr.ifr_mtu < 0)
		return 0;
	return (unsigned)ifr.ifr_mtu;
}

/* The link type (ARPHRD_*) of an interface, ARPHRD_VOID when it cannot be read. */
static unsigned short read_hwtype(int sock, const char *name)
{
	struct ifreq ifr;

	if (if_ioctl(sock, name, SIOCGIFHWADDR, &ifr) != 0)
		return ARPHRD_VOID;
	return (unsigned short)ifr.ifr_hwaddr.sa_family;
}

int uroce_netif_scan(struct uroce_netif_list *l)
{
	struct ifaddrs *all, *ifa;
	int err = 0, sock;

	l->n = 0;
	l->ifs = NULL;
	if (getifaddrs(&all) != 0)
		return -errno;
	for (ifa = all; ifa && !err; ifa = ifa->ifa_next) {
		struct uroce_netif *nif;
		int fam;

		/* A link without a link-layer address (a tun device) comes without one: its type
		 * and index are read below. */
		fam = ifa->ifa_addr ? ifa->ifa_addr->sa_family : AF_PACKET;
		if (fam != AF_PACKET && fam != AF_INET && fam != AF_INET6)
			continue;
		nif = get_if(l, ifa->ifa_name);
		if (!nif) {
			err = -ENOMEM;
			break;
		}
		nif->flags = ifa->ifa_flags;
		if (!ifa->ifa_addr)
			continue;
		if (fam == AF_PACKET) {
			const struct sockaddr_ll *ll =
				(const struct sockaddr_ll *)(const void *)ifa->ifa_addr;

			nif->ifindex = (unsigned)ll->sll_ifindex;
			nif->arphrd = ll->sll_hatype;
			if (ll->sll_halen == 6)
				memcpy(nif->mac, ll->sll_addr, 6);
		} else {
			err = add_addr(nif, ifa);
		}
	}
	freeifaddrs(all);
	if (err) {
		uroce_netif_list_free(l);
		return err;
	}
	sock = ioctl_socket();
	for (int i = 0; i < l->n; i++) {
		l->ifs[i].mtu = read_mtu(sock, l->ifs[i].name);
		if (sock < 0 || uroce_ethtool_speed(sock, l->ifs[i].name, &l->ifs[i].speed_mbps))
			l->ifs[i].speed_mbps = 0;
		if (!l->ifs[i].ifindex) { /* no link-layer address */
			l->ifs[i].ifindex = if_nametoindex(l->ifs[i].name);
			l->ifs[i].arphrd = read_hwtype(sock, l->ifs[i].name);
		}
	}
	if (sock >= 0)
		close(sock);
	return 0;
}

int uroce_netif_flags(unsigned ifindex, unsigned *flags)
{
	char name[IF_NAMESIZE];
	struct ifreq ifr;
	int r = 0;

	if (!if_indextoname(ifindex, name))
		return -ENODEV;
	int sock = ioctl_socket();

	if (sock < 0)
		return -errno;
	if (if_ioctl(sock, name, SIOCGIFFLAGS, &ifr) != 0)
		r = -errno;
	else
		*flags = (unsigned short)ifr.ifr_flags;
	close(sock);
	return r;
}

int uroce_netif_watch_open(void)
{
	struct sockaddr_nl sa;
	int fd;

	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, NETLINK_ROUTE);
	if (fd < 0)
		return -errno;
	memset(&sa, 0, sizeof(sa));
	sa.nl_family = AF_NETLINK;
	sa.nl_groups = RTMGRP_LINK | RTMGRP_IPV4_IFADDR | RTMGRP_IPV6_IFADDR;
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		int e = -errno;

		close(fd);
		return e;
	}
	return fd;
}

int uroce_netif_watch_drain(int fd)
{
	/* Aligned for struct nlmsghdr; one datagram holds one or more messages. */
	union {
		struct nlmsghdr h;
		char b[16384];
	} buf;
	int changed = 0;

	for (;;) {
		ssize_t n = recv(fd, &buf, sizeof(buf), MSG_DONTWAIT);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return changed;
			if (errno == ENOBUFS) { /* overflow: notifications were lost */
				changed = 1;
				continue;
			}
			return -errno;
		}
		if (n == 0)
			return changed;
		size_t left = (size_t)n;

		for (struct nlmsghdr *h = &buf.h; NLMSG_OK(h, left); h = NLMSG_NEXT(h, left)) {
			switch (h->nlmsg_type) {
			case RTM_NEWLINK:
			case RTM_DELLINK:
			case RTM_NEWADDR:
			case RTM_DELADDR:
				changed = 1;
				break;
			default:
				break;
			}
		}
	}
}
