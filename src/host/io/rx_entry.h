/* SPDX-License-Identifier: MIT */
/*
 * One entry of a backend's recvmmsg ring (udp.c, afpacket.c): set up once when the backend
 * opens, with its buffer, its address space and its control space (none: ctl NULL, ctllen 0).
 * recvmmsg writes back the lengths of the address and the control data and the flags of each
 * entry it fills; uroce_rx_entry_reset restores them after the entry has been read, so an empty
 * receive (most of a busy poller's) costs no set-up.
 */
#ifndef UROCE_HOST_IO_RX_ENTRY_H
#define UROCE_HOST_IO_RX_ENTRY_H

#include <stddef.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>

static inline void uroce_rx_entry_reset(struct mmsghdr *m, socklen_t namelen, size_t ctllen)
{
	m->msg_hdr.msg_namelen = namelen;
	m->msg_hdr.msg_controllen = ctllen;
	m->msg_hdr.msg_flags = 0;
}

static inline void uroce_rx_entry_init(struct mmsghdr *m, struct iovec *iov, void *buf,
				       size_t len, void *name, socklen_t namelen, void *ctl,
				       size_t ctllen)
{
	iov->iov_base = buf;
	iov->iov_len = len;
	memset(m, 0, sizeof(*m));
	m->msg_hdr.msg_iov = iov;
	m->msg_hdr.msg_iovlen = 1;
	m->msg_hdr.msg_name = name;
	m->msg_hdr.msg_control = ctl;
	uroce_rx_entry_reset(m, namelen, ctllen);
}

#endif
