/* SPDX-License-Identifier: MIT */
/*
 * Network interfaces as the host layer needs them: name, index, flags, MTU, MAC and addresses,
 * and a way to notice when they change.
 *
 * Design notes
 * - One snapshot per call: uroce_netif_scan() reads everything with getifaddrs() (one
 *   RTM_GETLINK and one RTM_GETADDR dump), the MTU with SIOCGIFMTU and the link speed with
 *   SIOCETHTOOL, in the caller's network namespace. It is cheap enough to call again
 *   whenever something may have changed.
 * - Change notification: uroce_netif_watch_open() returns a non-blocking rtnetlink socket joined
 *   to the link and address groups; a progress loop polls it and calls
 *   uroce_netif_watch_drain(), which says whether anything changed, then scans again. The kernel
 *   queues the notification before the `ip addr add` that caused it returns, so a test can
 *   check it without sleeping.
 * - Address order is the kernel's, the order of its RTM_GETADDR dump (what `ip addr` shows):
 *   IPv4 in the order added, primary before secondary; IPv6 by scope (global before
 *   link-local), newest first within a scope. IPv6 addresses include link-local and tentative
 *   ones, as the kernel's RoCE GID code sees them.
 * - Ownership: a list owns its interfaces and their address arrays; free it with
 *   uroce_netif_list_free().
 */
#ifndef UROCE_HOST_NETIF_H
#define UROCE_HOST_NETIF_H

#include <net/if.h>
#include <stdbool.h>
#include <stdint.h>

struct uroce_netif_addr {
	int family;	  /* AF_INET or AF_INET6 */
	uint8_t addr[16]; /* IPv4 in the first 4 bytes, network order */
	uint8_t prefixlen;
};

struct uroce_netif {
	char name[IF_NAMESIZE];
	unsigned ifindex;
	unsigned flags;	       /* IFF_* as getifaddrs reports (IFF_UP, IFF_RUNNING, ...) */
	unsigned mtu;	       /* 0 when it could not be read */
	unsigned speed_mbps;   /* link speed from ethtool (host/os/ethtool.h), 0 when none */
	uint8_t mac[6];	       /* all zero when the interface has none (loopback, tun) */
	unsigned short arphrd; /* ARPHRD_* link type */
	int naddrs;
	struct uroce_netif_addr *addrs;
};

struct uroce_netif_list {
	int n;
	struct uroce_netif *ifs;
};

/* Snapshot of every interface. Returns 0 or a negative errno (-ENOMEM, getifaddrs' errno). */
int uroce_netif_scan(struct uroce_netif_list *l);
void uroce_netif_list_free(struct uroce_netif_list *l);

/* The interface called name in l, or NULL. */
const struct uroce_netif *uroce_netif_find(const struct uroce_netif_list *l, const char *name);

/* The IFF_* flags of interface ifindex alone (no scan). Returns 0, or -ENODEV or an ioctl
 * error. */
int uroce_netif_flags(unsigned ifindex, unsigned *flags);

/* Up (IFF_UP) and running (IFF_RUNNING: carrier, operational): what rxe calls port ACTIVE. */
bool uroce_netif_active(const struct uroce_netif *nif);

/*
 * A non-blocking, close-on-exec rtnetlink socket that receives link and IPv4/IPv6 address
 * notifications of the caller's network namespace. Returns the fd (the caller closes it) or a
 * negative errno.
 */
int uroce_netif_watch_open(void);

/*
 * Read every queued notification. Returns 1 when a link or address changed (or the socket
 * overflowed, so changes may have been lost: scan again), 0 when nothing was queued, or a
 * negative errno.
 */
int uroce_netif_watch_drain(int fd);

#endif
