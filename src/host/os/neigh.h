/* SPDX-License-Identifier: MIT */
/*
 * Destination MACs for RoCE v1 (and v2 over AF_PACKET): the kernel's neighbour table, read with
 * rtnetlink RTM_GETNEIGH, as the kernel's ib_resolve_eth_dmac does (roce-reference 1.11).
 *
 * Link-local GIDs whose interface ID is a MAC-derived EUI-64 (fe80::xxxx:xxff:fexx:xxxx) and
 * multicast GIDs (IPv6 ff00::/8, v4-mapped 224.0.0.0/4) map to a MAC directly. Everything else is
 * looked up; when the entry is missing or incomplete, resolution is started by sending one UDP
 * datagram to the address's discard port (9) from a socket bound to the interface (no privilege
 * needed: the kernel then does ARP or neighbour discovery), and the caller is told to retry.
 *
 * Each call opens and closes its own netlink socket in the calling thread's network namespace.
 */
#ifndef UROCE_HOST_NEIGH_H
#define UROCE_HOST_NEIGH_H

#include <stdint.h>

/*
 * The MAC for gid (IPv6 address or v4-mapped IPv4) on ifindex.
 * Returns 0 with mac filled; -EAGAIN when resolution was started (retry later, e.g. when the
 * monitor fd is readable); -EHOSTUNREACH when the last resolution failed (a new one was started);
 * -EINVAL for an unusable GID (unspecified); or a netlink/socket errno.
 */
int uroce_neigh_lookup(int ifindex, const uint8_t gid[16], uint8_t mac[6]);

/* Only the direct mappings: 0 with mac filled, -ENOENT when gid needs the neighbour table. */
int uroce_neigh_direct(const uint8_t gid[16], uint8_t mac[6]);

/* Start resolution of gid on ifindex (the UDP discard-port datagram). Returns 0 or -errno. */
int uroce_neigh_trigger(int ifindex, const uint8_t gid[16]);

/*
 * A non-blocking rtnetlink socket subscribed to neighbour changes: poll() it while waiting for a
 * resolution, uroce_neigh_monitor_drain() it, then call uroce_neigh_lookup() again.
 * Returns the fd (close it with close()) or -errno.
 */
int uroce_neigh_monitor_open(void);
/* Read and discard pending notifications. Returns how many messages were read, or -errno. */
int uroce_neigh_monitor_drain(int fd);

#endif
