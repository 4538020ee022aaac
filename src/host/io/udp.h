/* SPDX-License-Identifier: MIT */
/*
 * The RoCE v2 backend over kernel UDP sockets (IPv4 and IPv6), no privileges needed: one socket
 * per local address, UDP GSO on send and GRO on receive, sharing through SO_REUSEPORT groups
 * (share_group.h). The design notes are at the top of udp.c.
 */
#ifndef UROCE_HOST_IO_UDP_H
#define UROCE_HOST_IO_UDP_H

#include <stdint.h>

#include "host/config/udp_port.h"
#include "host/io/backend.h"
#include "host/io/share_group.h"

extern const struct uroce_backend_ops uroce_udp_ops;

/*
 * The RoCE v2 UDP backend with its sockets in shared groups (uroce_udp_ops.open binds them
 * alone). When the run-time directory cannot hold the membership files,
 * the sockets are bound alone, as uroce_udp_ops.open does. share must outlive the backend's
 * open call only.
 */
int uroce_udp_open_shared(const struct uroce_backend_cfg *cfg, const struct uroce_share_cfg *share,
			  struct uroce_backend **out);
/*
 * The interface's addresses changed: make b (opened by uroce_udp_open_shared or
 * uroce_udp_ops.open, wrappers allowed) bound to cfg->addrs exactly. The sockets of addresses
 * still there are kept, with what they hold (the kernel's queue, the rest of a GRO datagram);
 * those of addresses gone are closed; new addresses get sockets opened as by open (share may be
 * NULL: bound alone). Returns 0; -EINVAL when b is not of that kind or cfg->n_addrs is out of
 * 1..UROCE_BACKEND_MAX_ADDRS (nothing changed); or the error of an address that could not be
 * bound, with cfg->err set (the sockets bound before it stay).
 */
int uroce_udp_rebind(struct uroce_backend *b, const struct uroce_backend_cfg *cfg,
		     const struct uroce_share_cfg *share);

/*
 * Apply share's GSI claims (uroce_share_set_gsi) to every group of b, a backend opened by
 * uroce_udp_open_shared (resp. uroce_packet_open_shared), wrappers allowed. Sockets bound alone
 * need nothing. Stops at the first error and returns it (groups before it are updated: the
 * caller applies its previous claims again to undo), -EINVAL when b is not of that kind.
 */
int uroce_udp_share_gsi(struct uroce_backend *b, const struct uroce_share_cfg *share);

/*
 * A thread is about to receive because b's fd (uroce_backend_fd) polled readable: its next
 * receive looks at the socket that had the last datagram, and at every socket when nothing is
 * there or when UDP_HOT_WAKES wakes in a row looked at that one alone. b: wrappers allowed; not a
 * udp backend: nothing.
 */
void uroce_udp_woken(struct uroce_backend *b);

/*
 * IP multicast groups (RoCE v2 multicast, uroce_ctx's attached MGIDs): join group (an IPv4
 * group as a v4-mapped GID, or an IPv6 group) on the backend's interface, with a socket bound to
 * (group, port) that receives the group's packets (IGMP or MLD membership while it is open;
 * every process that joins gets each packet). Sends to the group leave by the interface from
 * the address sockets (IP_MULTICAST_IF) and loop back to this host's members. Joining a group
 * already joined does nothing. Errors: -EINVAL when b (wrappers allowed) is not a udp backend
 * opened with an interface, or group is not multicast; -ENOSPC beyond UROCE_UDP_MAX_GROUPS; or
 * the socket call's errno.
 * Leaving: 0, -ENOENT when not joined, -EINVAL when b is not a udp backend.
 */
#define UROCE_UDP_MAX_GROUPS 16
int uroce_udp_mcast_join(struct uroce_backend *b, const uint8_t group[16]);
int uroce_udp_mcast_leave(struct uroce_backend *b, const uint8_t group[16]);

#endif
