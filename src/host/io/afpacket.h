/* SPDX-License-Identifier: MIT */
/*
 * The RoCE v1 (and v2) backend over AF_PACKET: needs root or CAP_NET_RAW. Each process's
 * receive socket filters its own QPNs in the kernel (share_prog.h). The design notes are at the
 * top of afpacket.c.
 */
#ifndef UROCE_HOST_IO_AFPACKET_H
#define UROCE_HOST_IO_AFPACKET_H

#include "host/io/backend.h"
#include "host/io/share_group.h"

extern const struct uroce_backend_ops uroce_packet_ops;

/* What uroce_backend_strerror says for -EPERM (or -EACCES) from uroce_packet_ops.open. */
#define UROCE_PACKET_EPERM_MSG \
	"RoCE v1 needs raw sockets: run as root or grant CAP_NET_RAW (setcap cap_net_raw+ep)"

/*
 * The RoCE v1 AF_PACKET backend listed in its interface's v1 membership file, its filter
 * following the file (uroce_packet_ops.open filters by cfg's QPN range and takes every QP1
 * frame). Without a usable file it behaves as uroce_packet_ops.open.
 */
int uroce_packet_open_shared(const struct uroce_backend_cfg *cfg,
			     const struct uroce_share_cfg *share, struct uroce_backend **out);

/*
 * Apply share's GSI claims (uroce_share_set_gsi) to every group of b, a backend opened by
 * uroce_udp_open_shared (resp. uroce_packet_open_shared), wrappers allowed. Sockets bound alone
 * need nothing. Stops at the first error and returns it (groups before it are updated: the
 * caller applies its previous claims again to undo), -EINVAL when b is not of that kind.
 */
int uroce_packet_share_gsi(struct uroce_backend *b, const struct uroce_share_cfg *share);

/*
 * A thread is about to receive because b's fd (uroce_backend_fd) polled readable: a burst that
 * then finds no frame looks at the membership file's watch. b: wrappers allowed; not an
 * AF_PACKET backend: nothing.
 */
void uroce_packet_woken(struct uroce_backend *b);

#endif
